"""Compiled loops (numba) of facility location on the host: stochastic greedy's picks, its
sample of the rows left, and the pass that builds the threshold lists.

**Threshold lists** (:func:`scan_block`, called by :func:`datamask.core.facility.threshold_lists`
on blocks of the candidate-by-reference similarities): reference row x lists every candidate
i with ``C[i, x] >= theta[x]``, stored by candidate (CSR: ``start``, then each entry's
reference row and cosine). Once the picks' best cosine ``cur[x]`` reaches ``theta[x]``, x is
*saturated*: a candidate not in its list has ``C[i, x] < theta[x] <= cur[x]`` and gains
nothing from x. So a gain is exact from the candidate's own entries for the saturated rows,
plus products with the reference rows not yet saturated (all of them at first; none after
the first picks on the suite's corpora).

**Picks** (:func:`picks`): the loop of :func:`datamask.core.stochastic.stochastic_greedy_facility`
(a sample of ``k`` rows a pick, scored best bound first a block of :data:`BLOCK` rows at a
time until no bound left beats the best exact gain), compiled, with the gains from the lists.
It picks what the Python loop over exact gains picks from the same sample (ties aside:
equal bounds are scored in sample order).

**The sample** (:func:`sample`, :func:`remove`): the rows left are ``rows[:left]`` with each
row's place in ``at``; a draw moves ``k`` of them, uniformly without replacement, to the
front by a partial Fisher-Yates shuffle on splitmix64 numbers (``state``, one uint64). The
Python loop (cupy, the dense scorer) draws through the same functions, so both loops see
the same samples for a seed.

The kernels are compiled on first use in each process (a few seconds; cached on disk by
numba afterwards).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["BLOCK", "sample", "remove", "seed_state", "scan_block", "picks"]

# Rows of a sample scored at a time (stochastic.SCORE_BLOCK).
BLOCK = 16
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MASK = (1 << 64) - 1


def seed_state(seed) -> np.ndarray:
    """The sampler's state for ``seed``: one uint64 (a different stream per seed)."""
    return np.array([(int(seed) * 0x9E3779B97F4A7C15 + 0x3C6EF372FE94F82B) & _MASK], dtype=np.uint64)


@njit(cache=True)
def _uniform(state):
    """A float64 in [0, 1) from splitmix64 (the state advances by one step)."""
    state[0] += _GOLDEN
    z = state[0]
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def sample(rows, at, left, k, state):
    """Move ``k`` rows drawn uniformly without replacement from ``rows[:left]`` to
    ``rows[:k]`` (``at`` follows); returns how many: ``left`` when ``k >= left`` (every
    row left, no draw)."""
    if k >= left:
        return left
    for j in range(k):
        t = j + int(_uniform(state) * (left - j))
        if t >= left:  # u < 1: never, but an index past the rows left would corrupt the pool
            t = left - 1
        a, b = rows[j], rows[t]
        rows[j], rows[t] = b, a
        at[b], at[a] = j, t
    return k


@njit(cache=True)
def remove(rows, at, left, i):
    """Take row ``i`` out of ``rows[:left]`` (swapped with the last row left); returns ``left - 1``."""
    j, left = at[i], left - 1
    last = rows[left]
    rows[j], at[last] = last, j
    rows[left], at[i] = i, left
    return left


@njit(cache=True)
def scan_block(C, theta, ref, sim, ends, pos):
    """Append each row's entries ``C[i, x] >= theta[x]`` of block ``C`` (c, r) to ``ref`` /
    ``sim`` from ``pos``, row by row, and each row's end to ``ends``; returns the new end,
    or -1 when ``ref`` is too short (nothing then counts: the caller grows it and rescans)."""
    c, r = C.shape
    cap = ref.shape[0]
    for i in range(c):
        for x in range(r):
            v = C[i, x]
            if v >= theta[x]:
                if pos >= cap:
                    return -1
                ref[pos] = x
                sim[pos] = v
                pos += 1
        ends[i] = pos
    return pos


@njit(cache=True)
def _next_block(bound, taken, m, blk):
    """The up to ``BLOCK`` untaken sample places of largest ``bound`` (ties: earlier place
    first) into ``blk``, largest first, marked taken; returns how many."""
    nb = 0
    for j in range(m):
        if taken[j]:
            continue
        v = bound[j]
        if nb == BLOCK and v <= bound[blk[nb - 1]]:
            continue
        p = nb if nb < BLOCK else BLOCK - 1
        while p > 0 and bound[blk[p - 1]] < v:
            blk[p] = blk[p - 1]
            p -= 1
        blk[p] = j
        if nb < BLOCK:
            nb += 1
    for b in range(nb):
        taken[blk[b]] = True
    return nb


@njit(cache=True)
def _gains(E, blk_rows, nb, cur, theta, start, lref, lsim, uidx, Ru, u, Eb, out):
    """Facility gains ``sum_x max(0, C[i, x] - cur[x])`` of ``blk_rows[:nb]`` into ``out``:
    the saturated rows from each candidate's entries, the others from one product."""
    for b in range(nb):
        i = blk_rows[b]
        g = 0.0
        for e in range(start[i], start[i + 1]):
            x = lref[e]
            c = cur[x]
            if c >= theta[x] and lsim[e] > c:
                g += lsim[e] - c
        out[b] = g
    if u == 0:
        return
    for b in range(nb):
        Eb[b] = E[blk_rows[b]]
    D = np.dot(Eb[:nb], Ru[:u].T)  # (nb, u): the rows not yet saturated
    for b in range(nb):
        g = 0.0
        for j in range(u):
            x = uidx[j]
            c = cur[x]
            if c < theta[x] and D[b, j] > c:
                g += D[b, j] - c
        out[b] += g


@njit(cache=True)
def _add(E, R, i, cur, theta, start, lref, lsim, uidx, Ru, u):
    """Take candidate ``i``: raise ``cur`` to its cosines; returns the rows not yet
    saturated (``uidx[:u]``, ``Ru`` their rows; compacted once an eighth of them is)."""
    for e in range(start[i], start[i + 1]):
        x = lref[e]
        if lsim[e] > cur[x]:
            cur[x] = lsim[e]
    if u == 0:
        return 0
    dv = np.dot(Ru[:u], E[i])
    done = 0
    for j in range(u):
        x = uidx[j]
        if dv[j] > cur[x]:
            cur[x] = dv[j]
        if cur[x] >= theta[x]:
            done += 1
    if 8 * done < u:
        return u
    nu = 0
    for j in range(u):
        x = uidx[j]
        if cur[x] < theta[x]:
            uidx[nu] = x
            Ru[nu] = R[x]
            nu += 1
    return nu


@njit(cache=True)
def picks(E, R, lin, w, ub, start, lref, lsim, theta, S, k, rows, at, state):
    """Stochastic greedy's ``S`` picks over candidates ``E`` (n, d) and reference rows ``R``
    (r, d) with the threshold lists (``start``, ``lref``, ``lsim``, ``theta``); ``lin`` the
    quality part of each gain, ``w`` the weight of the facility part, ``ub`` (n,) the
    bounds (updated: each scored row's last exact gain), ``rows`` / ``at`` the pool.
    Returns ``(order, gains)``: the picks, and each one's gain when picked."""
    n = E.shape[0]
    r = R.shape[0]
    cur = np.full(r, -1.0, dtype=np.float32)  # max over an empty set: cos >= -1
    uidx = np.arange(r).astype(np.int64)
    Ru = R.copy()
    u = r
    bound = np.empty(k, dtype=np.float64)
    taken = np.empty(k, dtype=np.bool_)
    blk = np.empty(BLOCK, dtype=np.int64)
    blk_rows = np.empty(BLOCK, dtype=np.int64)
    Eb = np.empty((BLOCK, E.shape[1]), dtype=E.dtype)
    g = np.empty(BLOCK, dtype=np.float64)
    order = np.empty(S, dtype=np.int64)
    gains = np.empty(S, dtype=np.float64)
    left = n
    for t in range(S):
        m = sample(rows, at, left, k, state)
        for j in range(m):
            bound[j] = ub[rows[j]]
            taken[j] = False
        best, pick = -np.inf, -1
        while True:
            nb = _next_block(bound, taken, m, blk)
            if nb == 0 or bound[blk[0]] <= best:  # no bound left beats the best exact gain
                break
            for b in range(nb):
                blk_rows[b] = rows[blk[b]]
            _gains(E, blk_rows, nb, cur, theta, start, lref, lsim, uidx, Ru, u, Eb, g)
            for b in range(nb):
                i = blk_rows[b]
                val = lin[i] + w * g[b]
                ub[i] = val
                if val > best:
                    best, pick = val, i
        order[t], gains[t] = pick, best
        left = remove(rows, at, left, pick)
        u = _add(E, R, pick, cur, theta, start, lref, lsim, uidx, Ru, u)
    return order, gains
