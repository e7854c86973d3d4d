"""The ``DataMask`` estimator: choose S rows maximising quality + diversity.

``solver="pg"`` is DATAMASK (policy-gradient mask learning; docs/design.md, "DATAMASK, exactly");
``"greedy"`` and ``"relaxed"`` solve the same objective another way. All three share the
paper's quality-aware pruning, and report the chosen mask on the same exact objective.
"""

from __future__ import annotations

import math
import re
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions, validate_parameter_constraints

from .backend import default_rng, get_namespace
from .diversity import DIVERSITIES, Diversity, get_diversity
from .objectives import Objective, normalize_quality
from .relaxed import frank_wolfe
from .relaxed_tokens import frank_wolfe_tokens
from .start import check_logit_range, start_solver
from .tokens import candidate_tokens, check_lengths, check_token_budget
from .validate import check_inputs, needs_rescale, unit_rows

__all__ = ["DataMask", "SOLVERS", "rows_after_pruning", "check_params"]

SOLVERS = ("pg", "greedy", "relaxed")
# Default cap on the rows of one batch-updating step (the batch_max parameter).
BATCH_MAX = 512
# Step sizes and initial logit ranges used when lr=None / logit_range=None are each
# diversity's own (datamask.core.diversity: lr, default_logit_range(init)). These names are
# kept, with their 0.2 values, for code written against 0.2.
DEFAULT_LR, DEFAULT_LR_FACILITY = 3.0, 1.0
DEFAULT_LOGIT_RANGE, DEFAULT_LOGIT_RANGE_FACILITY = (0.0, 16.0), (0.0, 2.0)


def rows_after_pruning(n_rows: int, prune: float) -> int:
    """Rows left when quality-aware pruning drops ``prune`` of ``n_rows`` (floor)."""
    return n_rows - int(math.floor(float(prune) * n_rows))


def check_params(params: dict) -> None:
    """The one check of ``DataMask``'s parameters (also :class:`~datamask.pipeline.config.SelectConfig`'s):
    each against :attr:`DataMask._parameter_constraints`, then the ones that depend on each
    other. A ValueError names the parameter (``ratio must be ...``)."""
    try:
        validate_parameter_constraints(DataMask._parameter_constraints, params, caller_name="DataMask")
    except InvalidParameterError as e:
        m = re.fullmatch(r"The '(\w+)' parameter of DataMask must be (.*)\. Got (.*) instead\.", str(e), flags=re.S)
        raise ValueError(f"{m[1]} must be {m[2]}, got {m[3]}" if m else str(e)) from None
    div, tokens = get_diversity(params.get("diversity", "pairwise")), params.get("tokens") is not None
    if params.get("solver") == "relaxed":
        div.check_relaxed(tokens=tokens)
    if params.get("init") == "relaxed" and params.get("solver", "pg") == "pg":
        div.check_relaxed("init='relaxed'", tokens=tokens)
    check_logit_range(params.get("logit_range"))


class DataMask(BaseEstimator):
    """Select ``S`` of ``N`` rows that maximise ``lam * quality + (1 - lam) * diversity``.

    Parameters
    ----------
    ratio : float, default 0.1
        Fraction of rows to keep, in (0, 1); ``S = round(ratio * N)``. Ignored when
        ``budget`` is given.
    budget : int, optional
        Absolute number of rows to keep.
    tokens : int, optional
        Token budget T (instead of ``budget``; ``ratio`` ignored): keep rows whose ``lengths``
        (given to :meth:`fit`) sum to at most T, to within one row. See docs/tokens.md.
    lam : float, default 0.5
        Weight of quality (normalised to [0, 1] over the partition) against diversity.
    diversity : {"pairwise", "facility", "disf"}, default "pairwise"
        See :mod:`datamask.core.objectives`.
    solver : {"pg", "greedy", "relaxed"}, default "pg"
        ``pg``: DATAMASK's policy gradient. ``greedy``: best marginal gain, one row at a
        time. ``relaxed``: Frank-Wolfe on the concave relaxation (pairwise and DiSF only).
    group_size : int, default 128
        Masks sampled per step (G).
    lr : float or None, default None
        Step size of the logit update on group-normalised advantages. None picks 3 for
        pairwise and DiSF and 1 for facility location. The paper uses 10, which gets close
        fastest but then stalls short of the best objective (the lr sweep in
        benchmarks/results/optimizer.md). Facility location samples from every candidate
        each step (no batch updating) and takes the smaller step.
    steps : int or None, default None
        Maximum policy-gradient steps (``patience`` usually stops a run sooner). None
        scales the budget with the problem: enough steps for every candidate row to be
        drawn about 2,000 times (``steps * group_size * S_b / n_candidates``, S_b the rows
        of one batch's masks), at least 5,000 and at most 50,000. Small ratios (few
        selected rows per batch) and large splits need more steps than the 5,000 that
        suffice elsewhere (benchmarks/results/defaults.md); a step costs the same either way.
    batch_ratio : float or None, default 0.05
        Batch updating: each step samples masks from this fraction of the candidate rows,
        with the budget scaled to match (for facility location the fraction applies to the
        reference rows instead). ``None`` or 1 uses every row every step. The batches of
        one pass are disjoint slices of a random permutation, so every row is updated once
        per pass.
    batch_max : int or None, default 512
        Upper bound on the rows of one batch (``batch_ratio`` of a large partition is
        capped to it); None: no bound, the paper's recipe. A step costs time in proportion
        to its rows while the steps needed stay about the same (each row's update is less
        noisy in a smaller batch), so on CPU small batches reach a given objective sooner;
        see the batch-size table in benchmarks/results/optimizer.md.
    prune : float, default 0.5
        Quality-aware pruning: drop this fraction of rows with the lowest quality before
        optimising (every solver). 0 keeps all.
    init : {"relaxed", "quality", "uniform"} or None, default None
        Initial logits, mapped linearly onto ``logit_range``: ``"quality"`` (the paper's),
        ``"relaxed"`` (beyond the paper: the relaxed solution, averaged with its best
        rounding, so pg starts where ``solver="relaxed"`` ends and searches around it on
        the exact objective; pairwise and DiSF only; :mod:`datamask.core.start`), or
        ``"uniform"`` (equal). None picks ``"relaxed"`` for pairwise and DiSF, the choice of
        the default-selection suite by its worst case (docs/defaults.md), and ``"quality"``
        for facility location and any objective without a relaxation
        (:meth:`~datamask.core.diversity.Diversity.default_init`).

        .. versionchanged:: 0.3
           None (pairwise and DiSF: ``"relaxed"``) replaces the default ``"quality"``.
    logit_range : (float, float), "auto" or None, default None
        ``(l_min, l_max)`` the initial scores are mapped onto, or ``"auto"``: a short pilot
        (:mod:`datamask.core.start`) runs pg from (0, 2) and from (0, 16) and starts from
        the one whose top-S scores higher, then continues that run (the cost: the other
        range's pilot, at most 500 steps).
        None picks (0, 4) for ``init="relaxed"``; for ``init="quality"``, ``"auto"`` for
        pairwise, (0, 16) for DiSF and (0, 2) for facility location. A wide quality range
        starts the policy near the quality top-S (fast where the optimum is near it, no
        early dip with large batches), a narrow one leaves pg free to reach rows far below
        it; neither fixed range held on every corpus of the default-selection suite
        (benchmarks/results/defaults.md; DiSF and facility location were not in that
        suite: benchmarks/results/init_sweep.md).
    final : {"topk", "sample"}, default "topk"
        Final mask: the S largest logits (the best top-S mask seen at the evaluation
        points is kept), or one Plackett-Luce draw from the final logits.
    reference_size : int or None, default 2048
        Facility location: size of the fixed random reference sample (None: all rows).
    seed : int, default 0
    callback : callable, optional
        ``callback(estimator, record)`` after each evaluation point; return ``True`` to
        stop early.
    eval_every : int, default 100
        Steps between evaluations of the top-S mask on the exact objective (history,
        best-mask tracking, early stopping).
    patience : int or None, default 10
        Stop when the mean objective of the last ``patience`` evaluations is no more than
        ``tol`` times the gain over the start (the objective at step 0) above the mean of
        the ``patience`` before them. Window means, not the best so far, because a top-S mask
        that dipped early and is climbing back is still improving; the gain, not the
        objective's size, because with few selected rows per batch the rise per evaluation
        is tiny next to the objective yet steady. One rule for every diversity. None never
        stops early.
    tol : float, default 1e-5
    lr_schedule : {"constant", "cosine"}, default "constant"
    relaxed_iter : int, default 100
        Frank-Wolfe iteration cap for ``solver="relaxed"`` and for ``init="relaxed"``'s start.
    n_threads : int or None, default 1
        BLAS threads during ``fit``. One, because a Dask worker runs one partition per core;
        a single fit on an idle machine can use more for greedy and relaxed (a pg step gains
        little from more threads: see the threads table in benchmarks/results/optimizer.md).
        None leaves the library default.
    progress : bool, default False
        Show a progress bar over steps (or greedy picks).

    Attributes
    ----------
    mask_ : (N,) bool ndarray (numpy or cupy, like the input)
    logits_ : (N,) float array or None
        Learned logits (pg only); pruned rows are ``-inf``.
    objective_ : dict
        ``objective``, ``quality``, ``diversity`` of the final mask (see
        :func:`datamask.core.objectives.evaluate`).
    history_ : list of dict
        One record per evaluation point: ``step``, ``seconds``, ``objective``,
        ``quality``, ``diversity``.
    budget_ : int
        S (the rows kept, under a token budget).
    tokens_, covers_all_ : int or None, bool
        Tokens kept (when ``lengths`` were given); True when ``tokens`` kept every row.
    n_candidates_ : int
        Rows left after pruning.
    n_steps_ : int
        Steps run (pg) or iterations (relaxed) or picks (greedy).
    steps_ : int
        pg's step budget (``steps``, or the one ``steps=None`` chose).
    lr_, init_, logit_range_ : float, str, (float, float)
        The step size, start and initial logit range pg used (``lr``, ``init`` and
        ``logit_range``, or their per-diversity defaults when None; the pilot's choice for
        ``"auto"``); pg only.
    relaxed_iter_ : int
        ``init="relaxed"``: the Frank-Wolfe iterations of the start.
    pilot_ : dict or None
        ``"auto"`` only: each candidate range's top-S objective at the end of its pilot.
    fit_seconds_ : float
    """

    _parameter_constraints: dict = {
        "ratio": [Interval(Real, 0, 1, closed="neither"), None],  # None: with a token budget
        "budget": [Interval(Integral, 1, None, closed="left"), None],
        "tokens": "no_validation",  # checked against lengths in fit (datamask.core.tokens)
        "lam": [Interval(Real, 0, 1, closed="both")],
        "diversity": [StrOptions(set(DIVERSITIES)), Diversity],
        "solver": [StrOptions(set(SOLVERS))],
        "group_size": [Interval(Integral, 2, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither"), None],
        "steps": [Interval(Integral, 0, None, closed="left"), None],
        "batch_ratio": [Interval(Real, 0, 1, closed="right"), None],
        "batch_max": [Interval(Integral, 2, None, closed="left"), None],
        "prune": [Interval(Real, 0, 1, closed="left")],
        "init": [StrOptions({"quality", "uniform", "relaxed"}), None],
        "logit_range": "no_validation",  # check_logit_range: "auto", (l_min, l_max) or None
        "final": [StrOptions({"topk", "sample"})],
        "reference_size": [Interval(Integral, 1, None, closed="left"), None],
        "seed": [Integral],
        "callback": [callable, None],
        "eval_every": [Interval(Integral, 1, None, closed="left")],
        "patience": [Interval(Integral, 0, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "lr_schedule": [StrOptions({"constant", "cosine"})],
        "relaxed_iter": [Interval(Integral, 1, None, closed="left")],
        "n_threads": [Interval(Integral, 1, None, closed="left"), None],
        "progress": ["boolean"],
    }

    def __init__(
        self,
        ratio=0.1,
        *,
        budget=None,
        tokens=None,
        lam=0.5,
        diversity="pairwise",
        solver="pg",
        group_size=128,
        lr=None,
        steps=None,
        batch_ratio=0.05,
        batch_max=BATCH_MAX,
        prune=0.5,
        init=None,
        logit_range=None,
        final="topk",
        reference_size=2048,
        seed=0,
        callback=None,
        eval_every=100,
        patience=10,
        tol=1e-5,
        lr_schedule="constant",
        relaxed_iter=100,
        n_threads=1,
        progress=False,
    ):
        self.ratio = ratio
        self.budget = budget
        self.tokens = tokens
        self.lam = lam
        self.diversity = diversity
        self.solver = solver
        self.group_size = group_size
        self.lr = lr
        self.steps = steps
        self.batch_ratio = batch_ratio
        self.batch_max = batch_max
        self.prune = prune
        self.init = init
        self.logit_range = logit_range
        self.final = final
        self.reference_size = reference_size
        self.seed = seed
        self.callback = callback
        self.eval_every = eval_every
        self.patience = patience
        self.tol = tol
        self.lr_schedule = lr_schedule
        self.relaxed_iter = relaxed_iter
        self.n_threads = n_threads
        self.progress = progress

    def _check_params(self, n_rows):
        check_params(self.get_params(deep=False))
        if self.tokens is not None:
            check_token_budget(self.tokens, self.budget)
            return None, rows_after_pruning(n_rows, self.prune)
        if self.budget is not None:
            S = int(self.budget)
            if S > n_rows:
                raise ValueError(f"budget={S} is larger than the number of rows ({n_rows})")
        else:
            S = int(round(float(self.ratio) * n_rows))
            if S < 1:
                raise ValueError(f"ratio={self.ratio} of {n_rows} rows rounds to 0 rows; raise ratio or give budget")
        n_keep = rows_after_pruning(n_rows, self.prune)
        if S > n_keep:
            raise ValueError(
                f"budget S={S} is larger than the {n_keep} rows left after pruning "
                f"(prune={self.prune} of {n_rows}); lower prune, ratio or budget"
            )
        return S, n_keep

    # ------------------------------------------------------------------ fit
    def fit(self, embeddings, quality, lengths=None):
        """Learn the selection for one partition.

        Parameters
        ----------
        embeddings : (N, d) float array, numpy or cupy; rows are L2-normalised here if
            they are not already (a zero row is an error)
        quality : (N,) float array, higher is better
        lengths : (N,) array of non-negative integer token counts, optional
            Needed with ``tokens``; otherwise only counted into ``tokens_``.

        Returns
        -------
        self
        """
        if self.n_threads is None:
            return self._fit(embeddings, quality, lengths)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=int(self.n_threads)):
            return self._fit(embeddings, quality, lengths)

    def _fit(self, embeddings, quality, lengths=None):
        t0 = time.perf_counter()
        xp = get_namespace(embeddings)
        quality = xp.asarray(quality)
        norms = check_inputs(embeddings, quality)
        N = embeddings.shape[0]
        S, n_keep = self._check_params(N)
        t = None if self.tokens is None and lengths is None else check_lengths(lengths, N, xp)
        T = None if self.tokens is None else int(self.tokens)
        self.covers_all_ = T is not None and T >= float(t.sum())
        n_keep = N if self.covers_all_ else n_keep
        # Memory: the input stays as given (float16 storage is fine); the only copy is the
        # candidate rows below, float32 (or int8 planes, 3/4 of that, for a pairwise pg
        # step), half the partition with the default pruning.
        E = embeddings
        scale = norms if needs_rescale(norms) else None
        qn = normalize_quality(quality)

        # Quality-aware pruning: keep the n_keep best rows (ties broken by row order).
        if n_keep < N:
            # cupy's argsort is always stable and rejects numpy's `kind` names
            order = xp.argsort(-qn, kind="stable") if xp is np else xp.argsort(-qn)
            cand = xp.sort(order[:n_keep])
        else:
            cand = xp.arange(N)
        reference = None
        self._div = div = get_diversity(self.diversity)
        if div.uses_reference and self.reference_size is not None and self.reference_size < N:
            reference = default_rng(xp, self.seed).subset(N, int(self.reference_size))
        self._full = Objective(E, qn, self.lam, div, reference, norms=scale)
        self._cand = cand
        self.n_candidates_ = int(n_keep)
        self.history_ = []
        self.logits_ = None
        self._t0 = t0

        qc = qn[cand]
        self._lengths, self._token_budget = None, T
        if T is not None and not self.covers_all_:
            self._lengths, S = candidate_tokens(t, cand, qc, T, self.prune)
        if not S or S == n_keep:  # nothing to choose (S 0: no candidate fits the token budget)
            rows, self.n_steps_ = xp.arange(0 if S == 0 else n_keep), 0
        elif self.solver == "greedy":
            rows = self._fit_greedy(unit_rows(E, cand, scale), qc, S, xp)
        elif self.solver == "relaxed":
            rows = self._fit_relaxed(unit_rows(E, cand, scale), qc, S, xp)
        else:
            rows = self._fit_pg(E, cand, scale, qc, S, xp)

        chosen = cand[rows]
        mask = xp.zeros(N, dtype=bool)
        mask[chosen] = True
        self.mask_ = mask
        self.budget_ = int(rows.shape[0])
        self.tokens_ = None if t is None else int(t[mask].sum())
        self.objective_ = (
            self._full.evaluate_rows(xp.nonzero(mask)[0])
            if rows.shape[0]
            else dict.fromkeys(("objective", "quality", "diversity"), math.nan)
        )
        self.fit_seconds_ = time.perf_counter() - t0
        del self._full, self._cand, self._lengths, self._div
        self.__dict__.pop("_start_scores", None)  # pg's initial scores (datamask.core.start)
        return self

    def _record(self, step, rows):
        rec = {"step": int(step), "seconds": time.perf_counter() - self._t0}
        rec.update(self._full.evaluate_rows(self._cand[rows]))
        self.history_.append(rec)
        return rec

    def _fit_greedy(self, Ec, qc, S, xp):
        # under a token budget, the knapsack rule: the better of plain gain and gain per token
        kws = (
            [{}]
            if self._lengths is None
            else [{"cost": self._lengths, "tokens": self._token_budget, "per_token": p} for p in (False, True)]
        )
        R = self._full.rows(self._full.reference) if self._div.uses_reference else None
        runs = [self._div.greedy(Ec, qc, S, self.lam, R, self.progress, **kw) for kw in kws]
        order = max(runs, key=lambda o: self._full.evaluate_rows(self._cand[o])["objective"])
        self.n_steps_ = S = int(order.shape[0])
        self.order_ = self._cand[order]
        self._record(S, order)
        return order

    def _solve_relaxed(self, Ec, qc, S, xp):
        """``(x, rows, n_iter)``: Frank-Wolfe's relaxed mask over the candidates, and the
        better on the exact objective of its two roundings (filled to the token budget
        under one)."""
        t, T = self._lengths, self._token_budget
        if t is None:
            x, best, it = frank_wolfe(Ec, qc, S, self.lam, self._div.relaxed_terms, max_iter=int(self.relaxed_iter))
            picks = (best, xp.argpartition(-x, S - 1)[:S])
        else:
            x, top, last, it = frank_wolfe_tokens(
                Ec, qc, t, T, self.lam, self._div.relaxed_token_terms, int(self.relaxed_iter)
            )
            picks = (top, last)
        rows = max(picks, key=lambda r: self._full.evaluate_rows(self._cand[r])["objective"])
        return x, rows, it

    def _fit_relaxed(self, Ec, qc, S, xp):
        x, rows, self.n_steps_ = self._solve_relaxed(Ec, qc, S, xp)
        self.x_ = xp.full(self._full.E.shape[0], 0.0)
        self.x_[self._cand] = x
        self._record(self.n_steps_, rows)
        return rows

    def _fit_pg(self, E, cand, scale, qc, S, xp):
        self.lr_ = float(self.lr) if self.lr is not None else self._div.lr
        self.init_ = self.init if self.init is not None else self._div.default_init(self._lengths is not None)
        if self.init_ == "relaxed":  # the resolved start, checked against the objective
            self._div.check_relaxed("init='relaxed'", tokens=self._lengths is not None)
        solver, self.pilot_ = start_solver(self, E, cand, scale, qc, S, xp)
        solver.advance(solver.steps)
        rows = solver.finish()
        self.steps_ = solver.steps
        self.n_steps_ = solver.n_steps
        logits = xp.full(self._full.E.shape[0], -xp.inf)
        logits[self._cand] = solver.L
        self.logits_ = logits
        return rows
