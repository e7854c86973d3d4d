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

On numpy the loop is compiled (:func:`datamask.core.facility_kernels.picks`) and its gains
come from the scorer's threshold lists (exact; :mod:`datamask.core.facility_kernels`), whose pass
runs after the first :data:`STAGE_PICKS` picks and bounds every row's gain over them; on cupy
(the dense scorer) it is the Python loop here, each gain a gather from the device's similarity
matrix. Both draw their samples on the host with one compiled sampler keyed by the seed, so
a fit picks the same rows for a seed, on numpy and on cupy (ties aside), up to
:data:`~datamask.core.facility_kernels.TWO_PART_MIN` samples' worth of rows; on a larger pool
the compiled loop draws through its two-part pool (the same uniform samples, drawn where the
bounds say the pick is: :mod:`datamask.core.facility_kernels`), so the rows differ between the
two as between two seeds.
"""

from __future__ import annotations

import math

import numpy as np

from .backend import to_numpy

__all__ = ["stochastic_greedy_facility", "SAMPLE_FACTOR", "STAGE_PICKS"]

# Rows per sample, in units of n / S (the ln(1 / eps) of the paper): the suite's choice by its
# worst case over its cases and 5 seeds (round 5, benchmarks/results/facility_seeds.md): 160 kept
# 99.314% of greedy's gain at worst (a seed other than the suite's), 320 99.556%, 640 99.720%,
# 1280 99.814% but 1.3x 640's time on 1M rows. At ratio <= 1/640 a sample is every row left.
SAMPLE_FACTOR = 640
# Picks scored by products before the scorer's lists pass, which then bounds every row's gain
# over them (_compiled). Round 19, the default fit of generated splits (one process, alone, two
# runs each): 100k rows 4.9 / 4.9 s with 8, 5.0 / 5.0 with none, 5.5 / 5.4 with 16 (the early
# picks' products against every reference row cost more than the bound saves there); 1M rows
# 30.1 / 30.4 s with 8, 29.9 / 30.2 with 16, 32.0 with none. 8: the better worst case.
STAGE_PICKS = 8
# Points of stochastic greedy's trace (the objective as it picks): about one per S / TRACE_POINTS picks.
TRACE_POINTS = 50


class _Cover:
    """Exact facility-location gains of candidate rows given the picks so far (``cur``: each
    reference row's best cosine to them, -1 before any), for the Python loop: a sum over the
    scorer's kept (n, r) similarities (``fac.C``, the dense scorer), else one product with
    all reference rows. (numpy's scorer keeps threshold lists instead, which the compiled
    loop of :func:`datamask.core.facility_kernels.picks` reads.)
    """

    def __init__(self, fac, xp):
        self.xp, self.fac, self.R, self.C = xp, fac, fac.R, fac.C
        self.cur = xp.full(self.R.shape[0], -1.0, dtype=xp.float32)  # max over an empty set: cos >= -1

    def gains(self, rows):
        """(b,) float64: ``sum_x max(0, cos(e_x, e_i) - cur[x])`` for each candidate i of ``rows``."""
        xp = self.xp
        D = self.C[rows] if self.C is not None else (self.R @ self.fac.rows(rows).T).T
        D = D - self.cur
        xp.maximum(D, 0.0, out=D)
        return np.asarray(to_numpy(D.sum(axis=1, dtype=xp.float64)))

    def add(self, i):
        """Take candidate ``i``: raise ``cur`` to its cosines."""
        xp = self.xp
        xp.maximum(self.cur, self.C[i] if self.C is not None else self.R @ self.fac.rows(i), out=self.cur)

    def add_many(self, rows, block=4096):
        """Take the candidates ``rows`` (host ints), a block at a time."""
        xp = self.xp
        for i0 in range(0, len(rows), block):
            blk = xp.asarray(rows[i0 : i0 + block])
            D = self.C[blk] if self.C is not None else (self.R @ self.fac.rows(blk).T).T
            xp.maximum(self.cur, D.max(axis=0), out=self.cur)


class _Pool:
    """The rows not picked yet, for O(1) removal and uniform samples (host arrays; the
    compiled sampler of :mod:`datamask.core.facility_pool`, which the compiled loop shares)."""

    def __init__(self, n, seed, without=None):
        from .facility_pool import seed_state

        self.rows, self.left = np.arange(n), n
        if without is not None and len(without):  # rows out of the pool: placed after rows[:left]
            out = np.zeros(n, dtype=bool)
            out[np.asarray(without, dtype=np.int64)] = True
            self.rows = np.concatenate([np.flatnonzero(~out), np.flatnonzero(out)])
            self.left = n - int(out.sum())
        self.at = np.empty(n, dtype=np.int64)  # at[row]: its place in rows
        self.at[self.rows] = np.arange(n)
        self.state, self.mark = seed_state(seed), np.zeros(n, dtype=bool)  # mark: the draw's repeats

    def sample(self, k):
        from .facility_pool import sample

        out = np.empty(min(int(k), self.left), dtype=np.int64)
        return self.rows[out[: sample(self.left, int(k), self.state, self.mark, out)]]

    def remove(self, i):
        from .facility_pool import remove

        self.left = remove(self.rows, self.at, self.left, int(i))


def stochastic_greedy_facility(
    fac, q, S, lam, seed=0, factor=None, trace=None, value=None, *, first=None, without=None, bounds=None, budget=None
):
    """Stochastic greedy picks for quality + facility location, over ``fac``'s candidates
    and reference rows (a :class:`~datamask.core.facility.FacilityGroups`: pg's scorer,
    whose pass over the similarities gives the first gains, :attr:`cover`).

    The sample holds ``factor`` (None: :data:`SAMPLE_FACTOR`) times ``n / budget`` rows
    (``budget`` None: ``S``). Returns ``(order, bounds)``: the S picked candidates in pick
    order, and each one's last computed gain (an upper bound on its gain given the picks;
    the first gain for a row never scored again), which pg's start uses to order the rows
    not picked.

    A run can continue another (the redundancy filter's refill,
    :func:`~datamask.core.redundancy.picks_without_near_duplicates`):
    ``first`` (host int array) the candidates already chosen, whose cover the picks start
    from, ``without`` the candidates no pick may take (``first`` is out of the pool too),
    ``bounds`` the earlier run's bounds (else the first gains; a dropped pick's cover no longer
    counts, so a bound can fall a little short of a gain: the refill is lazier there than
    exact), ``budget`` its S (the sample's size and the weight of quality in a gain).

    ``trace`` (a list, optional) is appended ``(picks, value)`` about every ``S / TRACE_POINTS``
    picks and at the last: the objective of the picks so far, as the sum of their gains
    (quality counted over S; the reference rows' cover starts at -1). Host floats the picks
    compute anyway. ``value`` (a list, optional) is appended the picks' facility location
    over the reference rows (the mean of each one's best cosine to them, kept as it picks:
    the value :meth:`datamask.core.diversity.Facility.value` computes for them, from the
    same float32 cosines).
    """
    xp = fac.xp
    n, r, S = fac.E.shape[0], fac.R.shape[0], int(S)
    lin = np.asarray(to_numpy(lam * q / int(budget or S)), dtype=np.float64)
    w = (1.0 - lam) / r
    if bounds is None:
        ub = lin + w * np.asarray(to_numpy(fac.cover), dtype=np.float64)
    else:
        ub = np.array(bounds, dtype=np.float64)  # a copy: the caller's stay as they were
    first = np.zeros(0, dtype=np.int64) if first is None else np.asarray(first, dtype=np.int64)
    out = first if without is None else np.concatenate([first, np.asarray(without, dtype=np.int64)])
    pool = _Pool(n, seed, out)
    S = min(S, pool.left)
    k = max(1, math.ceil(n / int(budget or S or 1) * float(SAMPLE_FACTOR if factor is None else factor)))
    if fac.xp is np and fac.method == "neighbors":  # numpy's threshold lists: the compiled loop
        order, gains, cur = _compiled(fac, S, k, ub, lin, w, pool, first, bounds is None)
    else:
        order, gains, cur = _picks(fac, xp, S, k, ub, lin, w, pool, first)
    if value is not None:
        value.append(float(xp.asarray(cur).astype(xp.float64).mean()))
    if trace is not None:
        value = -(1.0 - lam) + np.concatenate([[0.0], np.cumsum(gains)])  # f of no pick: every cover at -1
        every = max(1, S // TRACE_POINTS)
        trace.extend((i, float(value[i])) for i in range(S + 1) if i % every == 0 or i == S)
    return xp.asarray(order), ub


def _compiled(fac, S, k, ub, lin, w, pool, first, refresh):
    """The compiled loop's picks (numpy's threshold lists): ``(order, gains, cur)``.

    Before the scorer's lists exist (a fit's first run), the first :data:`STAGE_PICKS` picks
    are scored against every reference row by products (lists of no entries, thresholds at
    infinity: no reference row saturates), and the lists' pass then also bounds each
    candidate's gain over those picks (``threshold_lists(stage=...)``), which every later gain
    is at most: early on every sampled row's stale bound is its first gain, far above any
    gain left, and the first hundred picks at 1M rows scored half the split by products
    (6.5 s of 14 s). The picks are the same (the sampler's stream runs on; ties aside): only
    which rows are scored changes (on a pool of the two parts' size, the samples follow the
    bounds: :mod:`datamask.core.facility_kernels`). ``refresh``: the run's own bounds (no
    ``bounds`` given), which the loop may lower to the gains from the lists."""
    from .facility_kernels import picks

    H = fac.E
    rows = (H.src, H.table, H.rows, H.scale)
    R = np.ascontiguousarray(fac.R, dtype=np.float32)
    n, r = H.shape[0], R.shape[0]
    head = STAGE_PICKS if fac.pending and S > STAGE_PICKS else 0
    parts = []
    if head:
        none = np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int16), np.zeros(0, dtype=np.float32)
        theta = np.full(r, np.inf, dtype=np.float32)
        o, g, cur = picks(
            rows, R, lin, w, ub, *none, theta, head, k, pool.rows, pool.at, pool.left, pool.state, pool.mark, first,
            False,
        )  # fmt: skip
        pool.left -= head
        parts.append((o, g))
        bound = fac.build_lists(stage=cur)
        np.minimum(ub, lin + w * bound, out=ub)
        first = np.concatenate([first, o])
    L = fac.lists
    o, g, cur = picks(
        rows, R, lin, w, ub, L.start, L.ref, L.sim, L.theta, S - head, k, pool.rows, pool.at, pool.left, pool.state,
        pool.mark, first, refresh,
    )  # fmt: skip
    parts.append((o, g))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), cur


def _picks(fac, xp, S, k, ub, lin, w, pool, first):
    """The picks' Python loop (the dense scorer, cupy): ``(order, gains, cur)``, the first
    two host arrays, ``cur`` each reference row's best cosine to the picks (and ``first``'s)."""
    cover = _Cover(fac, xp)
    cover.add_many(first)
    order, gains = np.empty(S, dtype=np.int64), np.empty(S, dtype=np.float64)
    for i in range(S):
        gains[i], order[i] = _best_of_sample(pool.sample(k), ub, lin, w, cover)
        pool.remove(order[i])
        cover.add(int(order[i]))
    return order, gains, cover.cur


def _best_of_sample(cands, ub, lin, w, cover):
    """``(gain, row)``: the sampled row of best exact gain, scoring rows best bound first (equal
    bounds in sample order) in blocks of :func:`~datamask.core.facility_kernels.block_size`
    rows, until no bound left beats the best gain found (the scored rows' bounds are
    updated): the rows the compiled loop scores."""
    from .facility_kernels import block_size

    bound = ub[cands]
    k = cands.shape[0]
    by = np.lexsort((np.arange(k), -bound))
    best, pick, b0, nblk = -math.inf, None, 0, 0
    while b0 < k and bound[by[b0]] > best:  # else no bound left beats the best exact gain
        blk = cands[by[b0 : b0 + block_size(nblk)]]
        g = lin[blk] + w * cover.gains(blk)
        ub[blk] = g
        j = int(g.argmax())
        if g[j] > best:
            best, pick = float(g[j]), int(blk[j])
        b0, nblk = b0 + blk.shape[0], nblk + 1
    return best, pick
