"""The pool of stochastic greedy's compiled loop (numba): the rows not picked yet and the
sampler that draws from them (:mod:`datamask.core.facility_kernels` picks from its samples; the
Python loop, :mod:`datamask.core.stochastic`, draws through the same functions).

**The sample** (:func:`sample`, :func:`remove`): the rows left are ``rows[:left]`` with each
row's place in ``at``; a draw takes ``k`` places uniformly without replacement, one at a
time on splitmix64 numbers (``state``, one uint64), a place drawn twice drawn again (a
uniform k-subset; at most about ``left ln(left)`` draws when k nears ``left``).

**The two parts** (:func:`sample_first`, :func:`sample_rest`, :func:`_partition`): the same
uniform k-subset drawn in two steps over a pool whose rows of largest bound come first
(``rows[:h]``): how many of its places fall among them is hypergeometric
(:func:`hypergeometric`), which ones uniform; then the rest, uniform among the others.

Compiled on first use in each process (cached on disk by numba afterwards).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["seed_state", "sample", "sample_first", "sample_rest", "hypergeometric", "remove"]

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
def _log_choose(a, b):
    return math.lgamma(a + 1.0) - math.lgamma(b + 1.0) - math.lgamma(a - b + 1.0)


@njit(cache=True)
def hypergeometric(state, good, bad, n):
    """How many of a uniform ``n``-subset of ``good + bad`` items are among the ``good``
    (hypergeometric), by inversion on one splitmix64 number: the probabilities from the mode
    outwards, up and down in turn (exact up to float64 rounding; O(its deviation) steps)."""
    lo, hi = max(0, n - bad), min(n, good)
    if lo == hi:
        return lo
    mode = min(hi, max(lo, int((n + 1.0) * (good + 1.0) / (good + bad + 2.0))))
    pm = math.exp(_log_choose(good, mode) + _log_choose(bad, n - mode) - _log_choose(good + bad, n))
    u = _uniform(state) - pm
    if u <= 0:
        return mode
    up, down, pu, pd = mode, mode, pm, pm
    while up < hi or down > lo:
        if up < hi:  # p(x + 1) / p(x)
            pu *= (good - up) * (n - up) / ((up + 1.0) * (bad - n + up + 1.0))
            up += 1
            u -= pu
            if u <= 0:
                return up
        if down > lo:  # p(x - 1) / p(x)
            pd *= down * (bad - n + down) / ((good - down + 1.0) * (n - down + 1.0))
            down -= 1
            u -= pd
            if u <= 0:
                return down
    return mode  # the mass ran out by rounding (u left of order 1e-15)


@njit(cache=True)
def _swap(rows, at, pub, p, q):
    """Exchange the pool's places ``p`` and ``q`` (their rows, each row's place, their bounds)."""
    if p != q:
        a, b = rows[p], rows[q]
        rows[p], rows[q] = b, a
        at[a], at[b] = q, p
        pub[p], pub[q] = pub[q], pub[p]


@njit(cache=True)
def _partition(rows, at, pub, left, share):
    """Put the pool's rows of bound above ``tau`` first, ``tau`` the bound that about
    ``left / share`` of them exceed; returns ``(h, tau)``, ``h`` how many come first (every
    row after them has a bound at most ``tau``)."""
    want = max(1, left // share)
    tau = np.partition(pub[:left].copy(), left - want)[left - want]
    h, q = 0, left - 1
    while True:
        while h <= q and pub[h] > tau:
            h += 1
        while q >= h and not pub[q] > tau:
            q -= 1
        if h >= q:
            return h, tau
        _swap(rows, at, pub, h, q)


@njit(cache=True)
def sample(left, k, state, mark, out):
    """``k`` places of the pool drawn uniformly without replacement from ``0 .. left - 1``
    into ``out`` (a draw that repeats a place is redrawn; ``mark``, one flag a place, all
    False between calls); returns how many: ``left`` when ``k >= left`` (every place, no
    draw). The rows are ``rows[out]``."""
    if k >= left:
        for j in range(left):
            out[j] = j
        return left
    for j in range(k):
        p = min(left - 1, int(_uniform(state) * left))
        while mark[p]:
            p = min(left - 1, int(_uniform(state) * left))
        mark[p] = True
        out[j] = p
    for j in range(k):
        mark[out[j]] = False
    return k


@njit(cache=True)
def sample_first(h, left, k, state, mark, out):
    """The places among ``0 .. h - 1`` of a uniform ``k``-subset of ``0 .. left - 1`` (``k <
    left``), into ``out``: how many is hypergeometric (:func:`hypergeometric`), which ones
    uniform (:func:`sample`). Returns how many; with :func:`sample_rest`, the whole subset."""
    return sample(h, hypergeometric(state, h, left - h, k), state, mark, out)


@njit(cache=True)
def sample_rest(h, left, k, m, state, mark, out):
    """The rest of :func:`sample_first`'s subset (``m`` places drawn): ``k - m`` places of
    ``h .. left - 1``, uniform, into ``out[m:]``; returns how many."""
    rest = out[m:]
    got = sample(left - h, k - m, state, mark[h:], rest)
    rest[:got] += h
    return got


@njit(cache=True)
def remove(rows, at, left, i):
    """Take row ``i`` out of ``rows[:left]`` (swapped with the last row left); returns ``left - 1``."""
    j, left = at[i], left - 1
    last = rows[left]
    rows[j], at[last] = last, j
    rows[left], at[i] = i, left
    return left
