"""The ``pg`` solver: DATAMASK's policy-gradient mask learning (DESIGN.md section 5).

Each step draws ``group_size`` masks from the Plackett-Luce distribution over the logits,
scores them all at once, and moves the logits along the REINFORCE estimate of the gradient
with group-normalised advantages. The paper's options are here: quality-aware
initialisation, batch updating (each step on a batch of the candidate rows, budget scaled;
reference rows for facility location), best-mask tracking and early stopping.
"""
from __future__ import annotations

import math

from .backend import default_rng
from .facility import FacilityGroups
from .groupsum import GroupSums
from .objectives import disf_groups, pairwise_from_sums
from .policy import policy_gradient, sample_masks

__all__ = ["PolicyGradient", "Passes"]

# Smallest candidate batch for batch updating: keeps S_b >= 2 on small partitions.
MIN_BATCH = 256
# Smallest reference batch for facility location.
MIN_REFERENCE_BATCH = 32
# Logits are kept within this many nats of the largest: a row that far below is never
# drawn (probability < e^-60 relative), and the bound keeps 1/Z_k finite in float64.
LOGIT_SPAN = 60.0
# Batch rows from which the int8 row-sum kernel beats float32: the benchmark's kernel table
# has 1.50 vs 2.08 ms per step at 512 rows and 5.1 vs 6.7 at 2,500; at 256 rows float32 was
# the faster one when the threshold was chosen (0.88 vs 1.03 ms, a development timing).
INT8_MIN_ROWS = 512


class Passes:
    """Batches of ``k`` of ``n`` rows: consecutive slices of a fresh random permutation.

    Every row is in exactly one batch per pass (the ``n mod k`` rows at the end of a
    permutation wait for the next pass); each batch is sorted so its gathers run in order.
    ``next()`` returns None when ``k == n`` (every row, every step).
    """

    def __init__(self, n, k, rng):
        self.n, self.k, self.rng = n, k, rng
        self.perm, self.pos = None, n

    def next(self):
        if self.k >= self.n:
            return None
        if self.pos + self.k > self.n:
            self.perm, self.pos = self.rng.permutation(self.n), 0
        rows = self.perm[self.pos:self.pos + self.k]
        self.pos += self.k
        return rows[rows.argsort()]


class PolicyGradient:
    """One ``pg`` fit for a :class:`datamask.DataMask` estimator (its parameters and hooks).

    ``run(E, cand, norms, qc, S, xp)`` copies the candidate rows ``E[cand]`` once, as unit
    rows in the form the step needs (:class:`datamask.groupsum.GroupSums`), returns the
    chosen candidate rows and sets ``L`` (the logits over the candidates) and ``n_steps``.
    """

    def __init__(self, est):
        self.est = est

    # ----------------------------------------------------------------- set-up
    def batch_rows(self, n, minimum):
        """Rows per batch-updating step out of ``n``: ``batch_ratio``, capped by ``batch_max``."""
        est = self.est
        k = n if est.batch_ratio is None else max(minimum, math.ceil(float(est.batch_ratio) * n))
        if est.batch_max is not None:
            k = min(k, int(est.batch_max))
        return min(n, k)

    def init_logits(self, qc, xp):
        est = self.est
        n = qc.shape[0]
        if est.init == "uniform":
            return xp.zeros(n, dtype=xp.float64)
        lo, hi = (float(v) for v in est.logit_range)
        qmin, qmax = float(qc.min()), float(qc.max())
        if qmax <= qmin:
            return xp.full(n, lo, dtype=xp.float64)
        return (qc - qmin) / (qmax - qmin) * (hi - lo) + lo

    # ----------------------------------------------------------------- loop
    def run(self, E, cand, norms, qc, S, xp):
        est = self.est
        n = int(cand.shape[0])
        G = int(est.group_size)
        lam = float(est.lam)
        rng = default_rng(xp, [int(est.seed), 1])
        L = self.init_logits(qc, xp)
        facility = est.diversity == "facility"
        if facility:
            # Batch updating samples reference rows, not candidates (sampling candidates
            # pushes up near-duplicates, see the optimizer benchmark notes).
            rows = GroupSums(E, cand, norms, use="float32")
            fac = FacilityGroups(rows.take(), est._full.rows(est._full.reference))
            batches = Passes(fac.n_reference, self.batch_rows(fac.n_reference, MIN_REFERENCE_BATCH), rng)
            S_b = S
        else:
            n_b = self.batch_rows(n, MIN_BATCH)
            S_b = min(n_b, max(1, int(round(S * n_b / n))))
            batches = Passes(n, n_b, rng)
            # pairwise steps only need row sums: the int8 kernel where it pays (large batches)
            use = "auto" if est.diversity == "pairwise" and n_b >= INT8_MIN_ROWS else "float32"
            rows = GroupSums(E, cand, norms, use=use)
        pairwise = est.diversity == "pairwise"

        steps = int(est.steps)
        base_lr = est.lr_
        tracker = _BestMask(est, S, xp)
        bar = None
        if est.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=steps, desc="datamask", unit="step", leave=False)
        t = 0
        try:
            tracker.evaluate(0, L, bar)
            for t in range(1, steps + 1):
                lr = base_lr
                if est.lr_schedule == "cosine":
                    lr *= 0.5 * (1.0 + math.cos(math.pi * (t - 1) / max(1, steps)))
                B = None if facility else batches.next()
                ref = batches.next() if facility else None
                EB, qB, LB = rows.take(B), (qc if B is None else qc[B]), (L if B is None else L[B])
                orders = sample_masks(LB, S_b, G, rng)
                if facility:
                    div = fac.values(orders, ref)
                elif pairwise:
                    sums = rows.sums(EB, orders)
                    div = pairwise_from_sums((sums * sums).sum(axis=1), S_b)
                else:
                    div = disf_groups(EB, orders)
                f = lam * qB[orders].mean(axis=1) + (1.0 - lam) * div
                sd = float(f.std())
                if sd > 1e-12:
                    g = policy_gradient(LB, orders, (f - f.mean()) / (sd * G))
                    if B is None:
                        L += lr * g
                    else:
                        L[B] += lr * g
                    floor = float(L.max()) - LOGIT_SPAN
                    if float(L.min()) < floor:
                        xp.maximum(L, floor, out=L)
                if bar is not None:
                    bar.update()
                if t % int(est.eval_every) == 0 or t == steps:
                    if tracker.evaluate(t, L, bar):
                        break
        finally:
            if bar is not None:
                bar.close()
        self.n_steps = t if steps else 0
        self.L = L
        if est.final == "sample":
            return sample_masks(L, S, 1, rng)[0]
        return tracker.best_rows


class _BestMask:
    """Evaluation points: the top-S mask of the logits on the exact objective, best kept."""

    def __init__(self, est, S, xp):
        self.est, self.S, self.xp = est, S, xp
        self.best_val, self.best_rows, self.stale = -math.inf, None, 0

    def evaluate(self, step, L, bar):
        """Record one point; True when the run should stop (callback or patience)."""
        est = self.est
        rows = self.xp.argpartition(-L, self.S - 1)[:self.S]
        rec = est._record(step, rows)
        if rec["objective"] > self.best_val + est.tol * max(1.0, abs(self.best_val)):
            self.stale = 0
        else:
            self.stale += 1
        if rec["objective"] > self.best_val:
            self.best_val, self.best_rows = rec["objective"], rows
        if bar is not None:
            bar.set_postfix(objective=f"{rec['objective']:.5f}")
        stop = est.callback is not None and bool(est.callback(est, rec))
        return stop or (est.patience is not None and self.stale >= int(est.patience))
