"""Stochastic greedy for facility location: pg's start for it (``init="stochastic_greedy"``).

Greedy adds, S times, the row of best marginal gain among all the rows left. Stochastic
greedy (Mirzasoleiman et al., "Lazier than lazy greedy", AAAI 2015) adds the best of a
random sample of ``(n / S) ln(1 / eps)`` of them, which keeps ``1 - 1/e - eps`` of the
optimum in expectation for a monotone submodular objective such as quality + facility
location. That bound is loose: ``ln(1 / eps)`` = 5 (eps 0.01) kept 94-96% of greedy's gain
over a random selection on the suite's corpora, so the sample is :data:`SAMPLE_FACTOR`
times ``n / S`` rows, the factor the suite chose (docs/defaults.md). Within a sample the gains are found lazily, as lazy greedy does over all the rows
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

__all__ = ["stochastic_greedy_facility", "SAMPLE_FACTOR"]

# Rows per sample, in units of n / S (the ln(1 / eps) of the paper): the suite's choice by its
# worst case over its cases and 5 seeds (round 5, benchmarks/results/facility_seeds.md): 160 kept
# 99.314% of greedy's gain at worst (a seed other than the suite's), 320 99.556%, 640 99.720%,
# 1280 99.814% but 1.3x 640's time on 1M rows. At ratio <= 1/640 a sample is every row left.
SAMPLE_FACTOR = 640
# Rows of a sample scored against the reference at a time.
SCORE_BLOCK = 16
# Rows of a sample sorted by bound before the first is scored (the rest only if they matter).
HEAD = 256
# Points of stochastic greedy's trace (the objective as it picks): about one per S / TRACE_POINTS picks.
TRACE_POINTS = 50


class _Cover:
    """Exact facility-location gains of candidate rows given the picks so far (``cur``: each
    reference row's best cosine to them, -1 before any).

    With :class:`~datamask.core.facility.FacilityGroups`'s neighbour lists (each reference
    row's ``T`` most similar candidates, ``sim`` sorted) a reference row x whose ``cur[x]``
    has reached its T-th similarity (*saturated*) gains only from the candidates in its
    list: any other is no closer than that. So a candidate's gain is a sum over the lists it
    is in, for saturated rows, plus one product with the reference rows still unsaturated
    (all of them at first; few after the first picks). Exact, not an approximation. When
    the scorer kept its (n, r) similarities on the host (``fac.C``) a gain is a sum over one
    of its rows instead; on the dense scorer (a GPU) every gain is one product with all
    reference rows.
    """

    def __init__(self, fac, xp):
        self.xp, self.E, self.R = xp, fac.E, fac.R
        r = self.R.shape[0]
        self.cur = xp.full(r, -1.0, dtype=xp.float32)  # max over an empty set: cos >= -1
        host = fac.method == "neighbors" and xp is np
        self.C = fac.C if host else None  # host similarities (n, r), when kept beside the lists
        self.sparse = host and self.C is None
        if not self.sparse:
            return
        T = fac.nbr.shape[1]
        self.floor = fac.sim[:, -1]
        flat = fac.nbr.ravel()
        by = np.argsort(flat, kind="stable")  # inverted lists: candidate -> (reference row, cosine)
        self.ref_of, self.sim_of = by // T, fac.sim.ravel()[by]
        self.start = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=self.E.shape[0]))])
        self.unsat = np.arange(r)  # reference rows below their T-th similarity
        self.R_unsat = self.R

    def _lists(self, rows):
        """The flat positions of the inverted lists of ``rows`` and each one's row index."""
        a, b = self.start[rows], self.start[rows + 1]
        length = b - a
        owner = np.repeat(np.arange(rows.shape[0]), length)
        pos = np.arange(int(length.sum())) - np.repeat(np.cumsum(length) - length, length) + np.repeat(a, length)
        return pos, owner

    def gains(self, rows):
        """(b,) float64: ``sum_x max(0, cos(e_x, e_i) - cur[x])`` for each candidate i of ``rows``."""
        xp = self.xp
        if self.C is not None:
            D = self.C[rows]
            D -= self.cur
            np.maximum(D, 0.0, out=D)
            return D.sum(axis=1, dtype=np.float64)
        if not self.sparse:
            D = self.R @ self.E[rows].T
            D -= self.cur[:, None]
            xp.maximum(D, 0.0, out=D)
            return np.asarray(to_numpy(D.sum(axis=0, dtype=xp.float64)))
        out = np.zeros(rows.shape[0], dtype=np.float64)
        if self.unsat.shape[0]:
            D = self.R_unsat @ self.E[rows].T
            D -= self.cur[self.unsat, None]
            np.maximum(D, 0.0, out=D)
            out += D.sum(axis=0, dtype=np.float64)
        pos, owner = self._lists(rows)
        x = self.ref_of[pos]
        d = np.maximum(self.sim_of[pos] - self.cur[x], 0.0)
        d[self.cur[x] < self.floor[x]] = 0.0  # an unsaturated row: counted by the product above
        out += np.bincount(owner, weights=d, minlength=rows.shape[0])
        return out

    def add(self, i):
        """Take candidate ``i``: raise ``cur`` to its cosines."""
        xp = self.xp
        if self.C is not None:
            np.maximum(self.cur, self.C[i], out=self.cur)
            return
        if not self.sparse:
            xp.maximum(self.cur, self.R @ self.E[i], out=self.cur)
            return
        pos, _ = self._lists(np.asarray([i]))
        np.maximum.at(self.cur, self.ref_of[pos], self.sim_of[pos])
        if self.unsat.shape[0]:
            u = self.unsat
            self.cur[u] = np.maximum(self.cur[u], self.R_unsat @ self.E[i])
            still = self.cur[u] < self.floor[u]
            if not still.all():
                self.unsat = u[still]
                self.R_unsat = self.R[self.unsat]


class _Pool:
    """The rows not picked yet, for O(1) removal and uniform samples (host arrays)."""

    def __init__(self, n, seed):
        self.rows, self.at, self.left = np.arange(n), np.arange(n), n  # at[row]: its place in rows
        self.rng = np.random.default_rng([int(seed), 3])

    def sample(self, k):
        if k >= self.left:  # every row left: no draw
            return self.rows[: self.left]
        return self.rows[self.rng.choice(self.left, size=k, replace=False)]

    def remove(self, i):
        j, self.left = int(self.at[i]), self.left - 1
        last = int(self.rows[self.left])
        self.rows[j], self.at[last] = last, j
        self.rows[self.left], self.at[i] = i, self.left


def stochastic_greedy_facility(fac, q, S, lam, seed=0, factor=None, trace=None):
    """Stochastic greedy picks for quality + facility location, over ``fac``'s candidates
    and reference rows (a :class:`~datamask.core.facility.FacilityGroups`: pg's scorer,
    whose pass over the similarities gives the first gains, :attr:`cover`).

    The sample holds ``factor`` (None: :data:`SAMPLE_FACTOR`) times ``n / S`` rows. Returns
    ``(order, bounds)``: the S picked candidates in pick order, and each one's last
    computed gain (an upper bound on its gain given the picks; the first gain for a row
    never scored again), which pg's start uses to order the rows not picked.

    ``trace`` (a list, optional) is appended ``(picks, value)`` about every ``S / TRACE_POINTS``
    picks and at the last: the objective of the picks so far, as the sum of their gains
    (quality counted over S; the reference rows' cover starts at -1). Host floats the picks
    compute anyway.
    """
    xp = get_namespace(fac.E)
    n, r = fac.E.shape[0], fac.R.shape[0]
    lin = np.asarray(to_numpy(lam * q / S), dtype=np.float64)
    w = (1.0 - lam) / r
    ub = lin + w * np.asarray(to_numpy(fac.cover), dtype=np.float64)
    cover = _Cover(fac, xp)
    pool = _Pool(n, seed)
    k = max(1, math.ceil(n / S * float(SAMPLE_FACTOR if factor is None else factor)))
    order = []
    every, value = max(1, int(S) // TRACE_POINTS), -(1.0 - lam)  # f of no pick: every cover at -1
    if trace is not None:
        trace.append((0, value))
    for i in range(1, int(S) + 1):
        gain, pick = _best_of_sample(pool.sample(k), ub, lin, w, cover)
        value += gain
        if trace is not None and (i % every == 0 or i == S):
            trace.append((i, value))
        order.append(pick)
        pool.remove(pick)
        cover.add(pick)
    return xp.asarray(np.asarray(order, dtype=np.int64)), ub


def _best_of_sample(cands, ub, lin, w, cover):
    """``(gain, row)``: the sampled row of best exact gain, scoring rows best bound first, a block at a time,
    until no bound left beats the best gain found (the scored rows' bounds are updated).

    Only the head of the order is sorted (the ``HEAD`` best bounds, by one partition): a pick
    rarely scores more, and a whole sort of a large sample cost more than its gains did."""
    bound = ub[cands]
    k = cands.shape[0]
    head, rest = (np.arange(k), np.arange(0)) if k <= HEAD else np.split(np.argpartition(-bound, HEAD - 1), [HEAD])
    best, pick = -math.inf, None
    for part in (head, rest):  # the rest only when the head did not settle it (rare)
        if part.shape[0] == 0 or float(bound[part].max()) <= best:
            break
        by = part[np.argsort(-bound[part], kind="stable")]
        best, pick = _scan(cands[by], bound[by], lin, w, cover, ub, best, pick)
    return best, pick


def _scan(cands, bound, lin, w, cover, ub, best, pick):
    """Score ``cands`` (sorted by ``bound``, best first) a block at a time until no bound left
    beats ``best``; returns the best ``(gain, row)`` so far."""
    for b0 in range(0, cands.shape[0], SCORE_BLOCK):
        if bound[b0] <= best:  # no bound left beats the best exact gain
            break
        blk = cands[b0 : b0 + SCORE_BLOCK]
        g = lin[blk] + w * cover.gains(blk)
        ub[blk] = g
        j = int(g.argmax())
        if g[j] > best:
            best, pick = float(g[j]), int(blk[j])
    return best, pick
