"""The ``pg`` solver: DATAMASK's policy-gradient mask learning (docs/design.md, "DATAMASK, exactly").

Each step draws ``group_size`` masks from the Plackett-Luce distribution over the logits,
scores them all at once, and moves the logits along the REINFORCE estimate of the gradient
with group-normalised advantages. The paper's options are here: quality-aware
initialisation, batch updating (each step on a batch of the candidate rows, budget scaled;
reference rows for facility location), best-mask tracking and early stopping.

A step (:class:`Step`) is a function of device arrays only: its step counter and batch
index are device scalars, its random numbers come from a counter-based generator keyed by
(seed, step, mask, row), and its decisions (the zero-spread guard, the logit clamp) are
array operations, not ``if`` on a value read back. Only the evaluation points, every
``eval_every`` steps, read values back to the host. So on cupy the step is captured once
as a CUDA graph and replayed (:mod:`datamask.core.cuda_graph`), and a run draws the same masks with
or without the graph.
"""

from __future__ import annotations

import math

import numpy as np

from .backend import get_namespace
from .cuda_graph import CupyGraphs, StepRunner, capture_enabled
from .diversity import get_diversity
from .facility import FacilityGroups
from .facility_lists import HostRows
from .groupsum import GroupSums
from .policy import LOGIT_SPAN, policy_gradient, sample_masks
from .rng import CounterRNG
from .stopping import SOLVED_STARTS, start_patience
from .stopping import BestMask as _BestMask
from .tokens import fill, masked_mean, max_rows, prefix_lengths

__all__ = ["PolicyGradient", "Passes", "Step", "step_budget", "batch_rows", "candidate_rows", "facility_scorer"]

# Smallest candidate batch for batch updating: keeps S_b >= 2 on small partitions.
MIN_BATCH = 256
# Smallest reference batch for facility location.
MIN_REFERENCE_BATCH = 32
# Batch rows from which the int8 row-sum kernel is used (faster than float32 there: the
# row-sum kernel table in benchmarks/results/optimizer.md); smaller batches use float32.
INT8_MIN_ROWS = 512
# A group whose objectives spread less than this is skipped (all advantages 0).
MIN_SPREAD = 1e-12
# steps=None: enough steps for each candidate row to be drawn DRAWS_PER_ROW times on average
# (a step draws group_size masks of S_b rows), within [MIN_STEPS, MAX_STEPS].
DRAWS_PER_ROW, MIN_STEPS, MAX_STEPS = 2000, 5000, 50_000


def step_budget(steps, n, S_b, G):
    """``steps``, or for None the budget that scales with the problem (see the constants)."""
    if steps is not None:
        return int(steps)
    return int(min(MAX_STEPS, max(MIN_STEPS, math.ceil(DRAWS_PER_ROW * n / (G * max(1, S_b))))))


def candidate_rows(state, E, norms, use):
    """The fit's candidate rows in the form the step needs (:class:`GroupSums`), built once
    per fit and kept in ``state.cache`` (a pilot's runs and the start share them)."""
    key = ("rows", use)
    if key not in state.cache:
        state.cache[key] = GroupSums(E, state.cand, norms, use=use)
    return state.cache[key]


def facility_scorer(state, E, norms):
    """The fit's :class:`FacilityGroups` (built once: its pass over the similarities also
    gives stochastic greedy's first gains)."""
    if "facility" not in state.cache:
        xp = get_namespace(E)
        # numpy: read from the split's own array, no copy of the candidates (facility_lists.HostRows)
        rows = HostRows(E, state.cand, norms) if xp is np else candidate_rows(state, E, norms, "float32").take()
        state.cache["facility"] = FacilityGroups(rows, state.objective.rows(state.objective.reference))
    return state.cache["facility"]


def batch_rows(n, minimum, batch_ratio, batch_max):
    """Rows per batch-updating step out of ``n``: ``batch_ratio`` (at least ``minimum``),
    capped by ``batch_max``; None for either: no batching, no cap."""
    k = n if batch_ratio is None else max(minimum, math.ceil(float(batch_ratio) * n))
    if batch_max is not None:
        k = min(k, int(batch_max))
    return min(n, k)


class Passes:
    """Batches of ``k`` of ``n`` rows: consecutive slices of a fresh random permutation.

    Every row is in exactly one batch per pass (the ``n mod k`` rows at the end of a
    permutation wait for the next pass); each batch is sorted so its gathers run in order.
    The batches of a pass live on the device as one ``(per_pass, k)`` array, refreshed in
    place by :meth:`refresh` (pass ``p`` is keyed by the seed and ``p``), so a captured step
    can read batch ``j`` through a device index.
    """

    def __init__(self, n, k, rng):
        self.n, self.k, self.rng = n, k, rng
        self.per_pass = n // k if k < n else 0  # 0: every row, every step
        self.batches = None
        self.pass_no = 0

    def refresh(self):
        """Draw the next pass's batches (in place after the first)."""
        xp = self.rng.xp
        perm = self.rng.permutation(self.n, self.pass_no)[: self.per_pass * self.k]
        new = xp.sort(perm.reshape(self.per_pass, self.k), axis=1)
        if self.batches is None:
            self.batches = new
        else:
            self.batches[...] = new
        self.pass_no += 1
        return self.batches


class Step:
    """One ``pg`` step over device state: ``L`` (logits), ``t`` (step), ``j`` (batch).

    Calling the object performs one step and moves ``t`` and ``j`` on the device. It reads
    nothing back to the host, so it can be captured as a CUDA graph; everything it uses
    besides device arrays is fixed when it is built (shapes, S_b, G, lam, lr).
    """

    def __init__(
        self, *, xp, L, rows, qc, S_b, G, lam, lr, rng, diversity, passes=None, fac=None, cosine_steps=None, tokens=None
    ):
        self.xp, self.L, self.rows, self.qc = xp, L, rows, qc
        self.S_b, self.G, self.lam, self.lr, self.rng = int(S_b), int(G), float(lam), float(lr), rng
        self.div, self.passes, self.fac = get_diversity(diversity), passes, fac
        self.cosine_steps = cosine_steps
        self.tokens = tokens  # a TokenBudget: masks are the draws' prefixes that fit (S_b: draws)
        self.t = xp.ones((), dtype=xp.uint64)  # the step about to run (1-based)
        self.j = xp.zeros((), dtype=xp.int64)  # batch index within the pass

    def rate(self):
        """The step size at step ``t``: constant, or the cosine schedule (on the device)."""
        if self.cosine_steps is None:
            return self.lr
        xp = self.xp
        frac = (self.t.astype(xp.float64) - 1.0) / float(max(1, self.cosine_steps))
        return self.lr * 0.5 * (1.0 + xp.cos(math.pi * frac))

    def advantages(self, f):
        """``(f - mean) / (G std)``, or zeros when the group has no spread (no branch)."""
        xp = self.xp
        sd = f.std()
        scale = xp.where(sd > MIN_SPREAD, 1.0 / (self.G * xp.maximum(sd, MIN_SPREAD)), 0.0)
        return (f - f.mean()) * scale

    def objective(self, B, orders, ref):
        qB = self.qc if B is None else self.qc[B]
        div = self.div.groups(self, B, orders, ref)
        return self.lam * qB[orders].mean(axis=1) + (1.0 - self.lam) * div

    def objective_prefix(self, B, orders, ref, K):
        """The objective of the first ``K[j]`` rows of each draw (token budgets).

        The rows after the prefix are replaced by its first row: facility location takes
        a maximum and the pairwise row sums a 0/1 selection matrix, so neither counts the
        copies; DiSF standardises over each prefix (:func:`datamask.core.tokens.disf_prefix`). An
        empty prefix (the first row alone is over budget) scores as the group's worst.
        """
        xp = self.xp
        qB = self.qc if B is None else self.qc[B]
        valid = xp.arange(orders.shape[1])[None, :] < K[:, None]
        padded = xp.where(valid, orders, orders[:, :1])
        div = self.div.groups_prefix(self, B, orders, padded, ref, K)
        f = self.lam * masked_mean(qB[orders], K) + (1.0 - self.lam) * div
        worst = xp.where(K > 0, f, xp.inf).min()
        return xp.where(K > 0, f, xp.where(xp.isfinite(worst), worst, 0.0))

    def __call__(self):
        xp = self.xp
        batch = None
        if self.passes is not None and self.passes.per_pass:
            batch = xp.take(self.passes.batches, self.j, axis=0)
        by_reference = self.div.uses_reference  # facility location batches reference rows
        B = None if by_reference else batch
        LB = self.L if B is None else self.L[B]
        LB = xp.maximum(LB, LB.max() - LOGIT_SPAN)  # clamp: keys and 1/Z_k stay finite
        orders = sample_masks(LB, self.S_b, self.G, self.rng, step=self.t, log_keys=False)
        ref = batch if by_reference else None
        if self.tokens is None:
            f = self.objective(B, orders, ref)
            g = policy_gradient(LB, orders, self.advantages(f))
        else:
            tb, Tb = self.tokens.of_batch(B)
            K = prefix_lengths(tb[orders], Tb)
            if xp is np:  # on the host, score only as far as the longest draw went (no graph to keep)
                orders = orders[:, : min(orders.shape[1], int(K.max()) + 1)]
            f = self.objective_prefix(B, orders, ref, K)
            # the draw stops at the first row that does not fit: that row is part of it
            g = policy_gradient(LB, orders, self.advantages(f), lengths=xp.minimum(K + 1, orders.shape[1]))
        g *= self.rate()
        if B is None:
            self.L += g
        else:
            self.L[B] += g  # B holds distinct rows
        self.t += xp.uint64(1)
        self.j += 1


class PolicyGradient:
    """One ``pg`` run over a fit's :class:`~datamask.core.state.FitState` (the estimator's
    parameters through ``state.est``).

    :meth:`start` (with :meth:`advance` and :meth:`finish`) copies the candidate rows
    ``E[cand]`` once, as unit rows in the form the step needs
    (:class:`datamask.core.groupsum.GroupSums`); :meth:`finish` returns the chosen candidate
    rows and sets ``L`` (the logits over the candidates), ``n_steps`` and ``stopped_by``.
    """

    def __init__(self, state):
        self.state, self.est = state, state.est

    # ----------------------------------------------------------------- set-up
    def batch_rows(self, n, minimum):
        """Rows per batch-updating step out of ``n`` (:func:`batch_rows` of the parameters)."""
        return batch_rows(n, minimum, self.est.solver_params_.batch_ratio, self.est.solver_params_.batch_max)

    def init_logits(self, qc, xp):
        state = self.state
        n = qc.shape[0]
        if state.init == "uniform":
            return xp.zeros(n, dtype=xp.float64)
        lo, hi = state.logit_range
        v = state.start_scores  # quality, or a solver's start (datamask.core.start)
        vmin, vmax = float(v.min()), float(v.max())
        if vmax <= vmin:
            return xp.full(n, lo, dtype=xp.float64)
        return (v - vmin) / (vmax - vmin) * (hi - lo) + lo

    def build(self, E, norms, qc, xp, L=None):
        """The :class:`Step` of this fit (its arrays allocated once, before any step) from
        the initial logits ``L`` (None: :meth:`init_logits`)."""
        est, state = self.est, self.state
        cand, S = state.cand, state.S
        n = int(cand.shape[0])
        rng = self._rng(xp)
        L = xp.array(self.init_logits(qc, xp), dtype=xp.float64) if L is None else L
        fac = None
        tok = None
        div = state.div
        if div.uses_reference:
            # Batch updating samples reference rows, not candidates (sampling candidates
            # pushes up near-duplicates). Its groups read the scorer only: no rows of its own.
            rows = None
            fac = facility_scorer(state, E, norms)
            k = self.batch_rows(fac.n_reference, MIN_REFERENCE_BATCH)
            passes = Passes(fac.n_reference, k, CounterRNG(xp, [int(est.seed), 2]))
            S_b = S
            if state.lengths is not None:
                tok = TokenBudget(state.lengths, state.token_budget)
                S_b = tok.M
        else:
            n_b = self.batch_rows(n, MIN_BATCH)
            S_b = min(n_b, max(1, int(round(S * n_b / n))))
            passes = Passes(n, n_b, CounterRNG(xp, [int(est.seed), 2]))
            if state.lengths is not None:
                tok = TokenBudget(state.lengths, state.token_budget, n_b if n_b < n else None)
                S_b = tok.M
            # pairwise steps only need row sums: the int8 kernel where it pays (large batches)
            use = "auto" if div.row_sums_only and n_b >= INT8_MIN_ROWS else "float32"
            rows = candidate_rows(state, E, norms, use)
        if passes.per_pass:
            passes.refresh()
        self.steps = self.known_budget()
        if self.steps is None:
            self.steps = step_budget(est.solver_params_.steps, n, S_b, int(est.solver_params_.group_size))
        cosine = self.steps if est.solver_params_.lr_schedule == "cosine" else None
        return Step(
            xp=xp,
            L=L,
            rows=rows,
            qc=qc,
            S_b=S_b,
            G=int(est.solver_params_.group_size),
            lam=float(est.lam),
            lr=state.lr,
            rng=rng,
            diversity=div,
            passes=passes,
            fac=fac,
            cosine_steps=cosine,
            tokens=tok,
        )

    # ----------------------------------------------------------------- loop
    def known_budget(self):
        """The step budget when it does not depend on the batch shape: ``steps``, or a
        solver's start's short polish; None otherwise (:meth:`build` chooses it)."""
        if self.est.solver_params_.steps is not None:
            return int(self.est.solver_params_.steps)
        if self.state.init in SOLVED_STARTS:  # a solver's answer: a short polish
            return int(self.state.div.start_steps)
        return None

    def _rng(self, xp):
        """The fit's counter-based generator (the same draws whoever makes it)."""
        return CounterRNG(xp, [int(self.est.seed), 1])

    def start(self, E, norms, qc, xp):
        """Evaluate step 0, then build the step unless step 0 already stopped the run with a
        budget known without it (a run that can be advanced in pieces)."""
        self.xp, self.S = xp, self.state.S
        # step 0 is the initial logits' top S: evaluated before the step's arrays are built,
        # so a callback (or a user watching the history) has the start's mask that much sooner
        L = xp.array(self.init_logits(qc, xp), dtype=xp.float64)
        self.tracker = _BestMask(self.state, self.S, xp)
        self.tracker.start_patience = start_patience(self.est, self.state.init, self.state.div)
        self.stopped = self.tracker.evaluate(0, L, None)
        self.L0, self.step, self.runner = L, None, None
        self.steps = self.known_budget()
        if not self.stopped or self.steps is None:  # a run stopped at step 0 needs no step's arrays
            # (but steps=None's budget comes from the batch shape the step is built with)
            self.step = self.build(E, norms, qc, xp, L=L)
            capturer = CupyGraphs() if xp is not np and capture_enabled() and _is_real_cupy(xp) else None
            self.runner = StepRunner(self.step, capturer)
        self.t, self.j = 0, 0  # steps run; host copy of the batch index (when to draw the next pass)
        self.bar = None
        self.open_bar()

    @property
    def logits(self):
        """The current logits (step 0's while no step was built)."""
        return self.L0 if self.step is None else self.step.L

    def open_bar(self):
        """The progress bar over steps when the estimator asks for one (from the steps run)."""
        if not self.state.progress or self.bar is not None:
            return
        from .progress import bar

        # at most self.steps: the fit stops when it stops improving, so no total and no time left
        self.bar = bar(None, initial=self.t, desc="datamask: policy-gradient steps", unit="step", leave=False)
        self.bar.set_postfix(objective=f"{self.tracker.values[-1]:.5f}")

    def advance(self, until):
        """Run steps up to step ``until`` (at most the budget) unless stopped; True once stopped."""
        if self.stopped:
            return True
        est, step, passes = self.est, self.step, self.step.passes
        steps = self.steps
        try:
            with self.runner.scope():
                while not self.stopped and self.t < min(until, steps):
                    if passes.per_pass and self.j == passes.per_pass:
                        passes.refresh()
                        step.j[...] = 0
                        self.j = 0
                    self.runner()
                    self.j += 1
                    self.t += 1
                    t = self.t
                    if self.bar is not None:
                        self.bar.update()
                    if t % int(est.solver_params_.eval_every) == 0 or t == steps or t == self.tracker.start_patience:
                        self.stopped = self.tracker.evaluate(t, step.L, self.bar)
                if not self.stopped and self.t >= steps:
                    self.stopped, self.tracker.stopped_by = True, "steps"
        except BaseException:
            self.close()
            raise
        return self.stopped

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    @property
    def stopped_by(self):
        """Why the run stopped: ``"steps"`` (the budget), ``"patience"``, ``"start"`` (it did
        not improve on its start) or ``"callback"``."""
        return self.tracker.stopped_by

    def finish(self):
        """The chosen candidate rows (sets ``L``, ``n_steps`` and ``graph_mode``)."""
        est, state, xp, S = self.est, self.state, self.xp, self.S
        self.close()
        self.n_steps = self.t
        self.L = self.logits
        self.graph_mode = self.runner.mode if self.runner is not None else "none"
        if est.solver_params_.final == "sample":
            # step 0 is never a training step: its draw is the final sample's own
            rng = self._rng(xp) if self.step is None else self.step.rng
            L = xp.maximum(self.L, self.L.max() - LOGIT_SPAN)
            if state.lengths is not None:
                draw = sample_masks(L, L.shape[0], 1, rng, step=0, log_keys=False)[0]
                return fill(draw, state.lengths, state.token_budget)
            return sample_masks(L, S, 1, rng, step=0, log_keys=False)[0]
        return self.tracker.best_rows


class TokenBudget:
    """A token budget inside ``pg``: candidate token counts ``t``, budget ``T``, draw length ``M``.

    With batch updating (``n_b`` rows a step) a batch gets ``T`` times its share of the
    candidates' tokens (computed on the device). ``M`` bounds the rows of any prefix that
    fits, plus one for the row that stops it, so every draw is long enough.
    """

    def __init__(self, t, T, n_b=None):
        xp = get_namespace(t)
        self.t, self.T, self.batched = t, float(T), n_b is not None
        self.total = float(t.sum())
        n = int(t.shape[0])
        cap = self.T
        if n_b is not None:  # the largest share any batch can get
            top = xp.sort(t)[n - n_b :]
            cap = min(self.T, self.T * float(top.sum()) / max(self.total, 1.0))
        rows = n if n_b is None else n_b
        self.M = max(1, min(rows, max_rows(t, cap) + 1))

    def of_batch(self, B):
        """Token counts of the batch ``B`` (None: every candidate) and its budget."""
        if B is None or not self.batched:
            return self.t, self.T
        tb = self.t[B]
        return tb, self.T * tb.sum() / self.total


def _is_real_cupy(xp):
    return getattr(xp, "__name__", "") == "cupy" and hasattr(xp, "ElementwiseKernel")
