"""Stochastic greedy for facility location: pg's start for it (``init="stochastic_greedy"``).

Greedy adds, S times, the row of best marginal gain among all the rows left. Stochastic
greedy (Mirzasoleiman et al., "Lazier than lazy greedy", AAAI 2015) adds the best of a
random sample of ``(n / S) ln(1 / eps)`` of them, which keeps ``1 - 1/e - eps`` of the
optimum in expectation for a monotone submodular objective such as quality + facility
location. Within a sample the gains are found lazily, as lazy greedy does over all the rows
(:func:`datamask.core.greedy.greedy_facility`): a stale gain bounds the current one from
above (gains only shrink), so the sample's rows are scored best bound first, a few at a
time, until the best exact gain beats every bound left. A pick then scores a handful of
rows against the reference instead of a block of the best bounds of all of them.

The sample is drawn on the host (``numpy.random.Generator`` keyed by the seed), so a fit
picks the same rows for a seed, on numpy and on cupy.
"""

from __future__ import annotations

import math

import numpy as np

from .backend import get_namespace, to_numpy

__all__ = ["stochastic_greedy_facility", "SAMPLE_EPS"]

# eps of the sample size (n / S) ln(1 / eps): the suite's choice (docs/defaults.md).
SAMPLE_EPS = 0.01
# Rows of a sample scored against the reference at a time.
SCORE_BLOCK = 8


def _first_gains(E, R, lin, w, xp):
    """Every row's gain over the empty selection, ``lin + w sum_x (C[x, i] + 1)``, in blocks."""
    n, r = E.shape[0], R.shape[0]
    ub = xp.empty(n, dtype=xp.float64)
    per = max(1, (1 << 24) // max(1, r))
    for i0 in range(0, n, per):
        C = R @ E[i0 : i0 + per].T
        ub[i0 : i0 + per] = lin[i0 : i0 + per] + w * (C + 1.0).astype(xp.float64).sum(axis=0)
    return ub


class _Pool:
    """The rows not picked yet, for O(1) removal and uniform samples (host arrays)."""

    def __init__(self, n, seed):
        self.rows, self.at, self.left = np.arange(n), np.arange(n), n  # at[row]: its place in rows
        self.rng = np.random.default_rng([int(seed), 3])

    def sample(self, k):
        pos = self.rng.choice(self.left, size=min(k, self.left), replace=False)
        return self.rows[pos]

    def remove(self, i):
        j, self.left = int(self.at[i]), self.left - 1
        last = int(self.rows[self.left])
        self.rows[j], self.at[last] = last, j
        self.rows[self.left], self.at[i] = i, self.left


def stochastic_greedy_facility(E, q, S, lam, R, seed=0, eps=SAMPLE_EPS):
    """Stochastic greedy picks for quality + facility location against reference rows ``R``.

    Returns ``(order, bounds)``: the S picked rows of ``E`` in pick order, and each row's
    last computed gain (an upper bound on its gain given the picks; the first gain for a
    row never scored again), which pg's start uses to order the rows not picked.
    """
    xp = get_namespace(E)
    n, r = E.shape[0], R.shape[0]
    lin = lam * q / S
    w = (1.0 - lam) / r
    ub_dev = _first_gains(E, R, lin, w, xp)
    ub = np.array(to_numpy(ub_dev), dtype=np.float64)
    lin_h = np.asarray(to_numpy(lin), dtype=np.float64)
    cur = xp.full(r, -1.0, dtype=xp.float32)  # max over an empty set: cos >= -1
    pool = _Pool(n, seed)
    k = max(1, math.ceil(n / S * math.log(1.0 / float(eps))))
    order = []
    for _ in range(int(S)):
        cands = pool.sample(k)
        cands = cands[np.argsort(-ub[cands], kind="stable")]
        best, pick = -math.inf, None
        for b0 in range(0, cands.shape[0], SCORE_BLOCK):
            if ub[cands[b0]] <= best:  # no bound left beats the best exact gain
                break
            blk = cands[b0 : b0 + SCORE_BLOCK]
            cover = xp.maximum(R @ E[blk].T - cur[:, None], 0.0).astype(xp.float64).sum(axis=0)
            g = lin_h[blk] + w * np.asarray(to_numpy(cover), dtype=np.float64)
            ub[blk] = g
            j = int(g.argmax())
            if g[j] > best:
                best, pick = float(g[j]), int(blk[j])
        order.append(pick)
        pool.remove(pick)
        cur = xp.maximum(cur, R @ E[pick])
    return xp.asarray(np.asarray(order, dtype=np.int64)), ub
