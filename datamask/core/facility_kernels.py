"""Compiled loops (numba) of stochastic greedy for facility location on the host: its picks
and its sample of the rows left. (The pass that builds the threshold lists the picks read is
:mod:`datamask.core.facility_scan`.)

**Threshold lists** (:mod:`datamask.core.facility_lists`): reference row x lists every
candidate i with ``C[i, x] >= theta[x]``, stored by candidate (CSR: ``start``, then each entry's
reference row and cosine). Once the picks' best cosine ``cur[x]`` reaches ``theta[x]``, x is
*saturated*: a candidate not in its list has ``C[i, x] < theta[x] <= cur[x]`` and gains
nothing from x. So a gain is exact from the candidate's own entries for the saturated rows,
plus products with the reference rows not yet saturated (all of them at first; none after
the first picks on the suite's corpora).

**Picks** (:func:`picks`): the loop of :func:`datamask.core.stochastic.stochastic_greedy_facility`
(a sample of ``k`` rows a pick, scored best bound first in blocks of :func:`block_size` rows
until no bound left beats the best exact gain), compiled, with the gains from the lists; the
first two blocks (the sample's head) are kept in one loop over the sample's bounds, and
only a pick that needs a third (2 in 100 at 1M rows) sorts the rest. It picks what the
Python loop picks from the same sample (ties in exact gain aside). In a fit's first run, once
every reference row is saturated, one pass over the lists sets every row's bound to its gain
then (:func:`_refresh`): the bounds of the rows scored in the first picks, far above their
gains by then, would each cost a score (at 1M rows the run's picks 4.5 -> 3.9 s).

**The sample**: drawn by :mod:`datamask.core.facility_pool` (the rows left and their sampler,
shared with the Python loop). The compiled loop keeps each place's bound beside it (``pub``),
so a draw reads one array at random places, not the rows and then their bounds.

**The two-part pool** (:func:`picks`, from :data:`TWO_PART_MIN` samples' worth of rows): a
sample of 6,400 rows a pick at 1M rows cost its draw and its bounds' reads (about 50 us of a
pick's 60) though the pick is decided by the few of largest bound. So the rows of the top
1 / :data:`TOP_SHARE` bounds come first (``rows[:h]``, every later row's bound at most
``tau``); a pick draws the sample's places among them (``facility_pool.sample_first``: how many
is hypergeometric, which ones uniform), and draws the rest (``sample_rest``) only when the
best gain among them is below ``tau``: the same uniform k-subset, whose later rows could not
have won. Bounds only fall, so the split stays true; a fallback repartitions. Which rows a
sample holds then depends on the bounds, which differ between the compiled loop (its lists'
bounds) and the Python loop (exact gains): on a large pool the two loops draw different, equally
uniform samples, and their picks differ as two seeds' would (on a pool below the threshold
they see the same samples and pick the same rows, ties aside).

The kernels are compiled on first use in each process (a few seconds; cached on disk by
numba afterwards).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from .facility_pool import _partition, _swap, sample, sample_first, sample_rest

__all__ = ["BLOCK", "MAX_BLOCK", "block_size", "picks"]

# Rows of a sample scored at a time: BLOCK in a pick's first two blocks, then twice as many
# each block up to MAX_BLOCK (a pick early on scores most of its sample, against reference
# rows not yet saturated: larger products run faster).
BLOCK, MAX_BLOCK = 16, 256
# The compiled loop's two-part pool (:func:`picks`): once the pool holds TWO_PART_MIN samples'
# worth of rows, about 1 / TOP_SHARE of them, those of largest bound, come first; a pick
# draws its sample's share of those and draws the rest only when that share's best gain
# does not beat every bound of the others. A fallback repartitions, at most every
# PARTITION_GAP picks.
TWO_PART_MIN, TOP_SHARE, PARTITION_GAP = 32, 16, 256


def _value(src, table, c, k):
    """Entry ``k`` of row ``c`` of a split's array as float32 (compiled: :func:`_value_impl`)."""
    raise NotImplementedError


@overload(_value)
def _value_impl(src, table, c, k):
    if isinstance(src.dtype, types.Integer):  # float16 storage, as its bits: through the table
        return lambda src, table, c, k: table[src[c, k]]
    return lambda src, table, c, k: np.float32(src[c, k])


@njit(cache=True)
def _load(rows, i, out):
    """Candidate ``i``'s float32 unit row into ``out``, as ``validate.unit_rows`` makes it
    (``rows``: the split's array, its float16 table, the candidates' rows, their norms or
    nothing; :class:`~datamask.core.facility_lists.HostRows`)."""
    src, table, cand, scale = rows
    c = cand[i]
    for k in range(out.shape[0]):
        out[k] = _value(src, table, c, k)
    if scale.shape[0]:
        s = scale[c]
        for k in range(out.shape[0]):
            out[k] /= s


@njit(cache=True)
def block_size(b):
    """Rows in a pick's block ``b`` (0, 1, ...): 16, 16, 32, 64, 128, 256, 256, ... (the
    shift capped: a pick that scores its whole sample of 50k rows reaches block 196, and
    ``16 << 59`` overflows int64)."""
    return min(MAX_BLOCK, BLOCK << min(max(0, b - 1), 8))


@njit(cache=True)
def _bounds_and_head(drawn, m, pub, bound, top):
    """Each sampled place's bound (``bound[j] = pub[drawn[j]]``), then, in one loop over them,
    the head of the sample: ``top`` the up to ``2 * BLOCK`` places of largest bound (ties:
    earlier place first), largest first, a pick's first two blocks. Returns how many are in
    ``top``."""
    K = top.shape[0]
    for j in range(m):  # the gather apart: a loop the compiler vectorises
        bound[j] = pub[drawn[j]]
    nt = 0
    low = -np.inf  # the bound a place must beat to enter a full head
    for j in range(m):
        v = bound[j]
        if nt == K and v <= low:
            continue
        p = nt if nt < K else K - 1
        while p > 0 and bound[top[p - 1]] < v:
            top[p] = top[p - 1]
            p -= 1
        top[p] = j
        if nt < K:
            nt += 1
        if nt == K:
            low = bound[top[K - 1]]
    return nt


@njit(cache=True)
def _gains(blk_rows, nb, scan, bar, Eb, out):
    """Gains ``sum_x max(0, C[i, x] - cur[x])`` of the candidates ``blk_rows[:nb]`` into
    ``out``, exact where it can matter: from each candidate's entries, plus for the
    reference rows not yet saturated either their threshold (a bound: an unlisted candidate
    is below it) or, for the candidates whose bound so beats the best gain so far (``bar``:
    it, the quality part and the weight), one product. The others' ``out`` is that bound:
    they cannot be the pick."""
    rows, cur, theta, start, lref, lsim, uidx, Ru, u, slack = scan
    best, lin, w = bar
    keep = np.empty(nb, dtype=np.int64)
    listed = np.empty(nb, dtype=np.float64)
    ns = 0
    for b in range(nb):
        i = blk_rows[b]
        g_sat, g, cut = 0.0, 0.0, 0.0
        for e in range(start[i], start[i + 1]):
            x = lref[e]
            c = cur[x]
            d = lsim[e] - c
            if c >= theta[x]:
                if d > 0:
                    g_sat += d
            else:  # not saturated: exact here, and out of the threshold bound below
                if d > 0:
                    g += d
                cut += theta[x] - c
        listed[b] = g_sat
        out[b] = g_sat + g + max(0.0, slack - cut) * (1.0 + 1e-9)  # a bound (rounding covered)
        if u > 0 and lin[i] + w * out[b] > best:
            keep[ns] = b
            ns += 1
    if ns == 0:
        return
    for s in range(ns):
        _load(rows, blk_rows[keep[s]], Eb[s])
    D = np.dot(Eb[:ns], Ru[:u].T)  # (ns, u): the rows not yet saturated
    for s in range(ns):
        g = listed[keep[s]]
        for j in range(u):
            x = uidx[j]
            c = cur[x]
            if c < theta[x] and D[s, j] > c:
                g += D[s, j] - c
        out[keep[s]] = g


@njit(cache=True)
def _refresh(rows, at, left, ub, pub, lin, w, cur, start, lsim, lref):
    """Every pooled row's bound lowered to its exact gain now from the lists (every reference row
    saturated, so a row's gain is its entries' excess over ``cur``), ``pub`` kept beside it: one
    pass over the lists in candidate order."""
    for i in range(ub.shape[0]):
        p = at[i]
        if p >= left:
            continue
        g = 0.0
        for e in range(start[i], start[i + 1]):
            d = lsim[e] - cur[lref[e]]
            if d > 0:
                g += d
        b = lin[i] + w * g
        if b < ub[i]:
            ub[i] = b
        pub[p] = ub[i]


@njit(cache=True)
def _add(rows, R, i, cur, theta, start, lref, lsim, uidx, Ru, u, row):
    """Take candidate ``i``: raise ``cur`` to its cosines; returns the rows not yet
    saturated (``uidx[:u]``, ``Ru`` their rows; compacted once an eighth of them is)."""
    for e in range(start[i], start[i + 1]):
        x = lref[e]
        if lsim[e] > cur[x]:
            cur[x] = lsim[e]
    if u == 0:
        return 0
    _load(rows, i, row)
    dv = np.dot(Ru[:u], row)
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
def _order_rest(bound, taken, m):
    """The untaken sample places, by ``bound`` down (ties: earlier place first)."""
    rest = np.empty(m, dtype=np.int64)
    c = 0
    for j in range(m):
        if not taken[j]:
            rest[c] = j
            c += 1
    rest = rest[:c]
    return rest[np.argsort(-bound[rest], kind="mergesort")]


@njit(cache=True)
def _best_of_sample(drawn, m, nt, bound, taken, pool, lin, w, scan, buf):
    """``(gain, row)``: the sampled row (places ``drawn[:m]``, bounds ``bound``) of best exact
    gain, scored best bound first in blocks of :func:`block_size` rows until no bound left
    beats the best gain found; each scored row's bound (``ub``, and ``pub`` at its place)
    becomes its exact gain. The first two blocks are the head ``top[:nt]``
    (:func:`_bounds_and_head`); a pick that needs a third (2 in 100 at 1M rows) sorts the
    places left. ``pool`` is ``(rows, ub, pub)``, ``scan`` the lists' arrays (:func:`_gains`),
    ``buf`` the block buffers."""
    rows, ub, pub = pool
    top, blk, blk_rows, Eb, g = buf
    best, pick, nblk, at = -np.inf, -1, 0, 0
    rest = blk[:0]
    while True:
        size = block_size(nblk)
        if nblk < 2:  # the head: a pick rarely needs a third block
            nb = max(0, min(size, nt - at))
            blk[:nb] = top[at : at + nb]
            at += nb
        else:
            if nblk == 2:
                taken[:m] = False
                taken[top[:nt]] = True
                rest, at = _order_rest(bound, taken, m), 0
            nb = min(size, rest.shape[0] - at)
            blk[:nb] = rest[at : at + nb]
            at += nb
        if nb == 0 or bound[blk[0]] <= best:  # no bound left beats the best exact gain
            return best, pick
        for b in range(nb):
            blk_rows[b] = rows[drawn[blk[b]]]
        _gains(blk_rows, nb, scan, (best, lin, w), Eb, g)
        for b in range(nb):
            i = blk_rows[b]
            val = lin[i] + w * g[b]
            ub[i] = val
            pub[drawn[blk[b]]] = val
            if val > best:
                best, pick = val, i
        nblk += 1


@njit(cache=True)
def picks(E, R, lin, w, ub, start, lref, lsim, theta, S, k, rows, at, left, state, mark, first, refresh):
    """Stochastic greedy's ``S`` picks over the candidates ``E`` (their rows as :func:`_load`
    reads them) and reference rows ``R`` (r, d) with the threshold lists (``start``, ``lref``, ``lsim``, ``theta``); ``lin`` the
    quality part of each gain, ``w`` the weight of the facility part, ``ub`` (n,) the
    bounds (updated: each scored row's last exact gain), ``rows`` / ``at`` / ``left`` /
    ``state`` / ``mark`` the pool (``rows[:left]``) and its sampler; ``first``: rows already
    chosen (not in the pool), whose cover the picks start from; ``refresh``: a fit's first run
    with lists, whose bounds :func:`_refresh` resets once every reference row is saturated (a
    continued run's bounds are the caller's). Returns ``(order, gains, cur)``: the picks, each
    one's gain when picked, and each reference row's best cosine to the picks (``first``
    included)."""
    r = R.shape[0]
    cur = np.full(r, -1.0, dtype=np.float32)  # max over an empty set: cos >= -1
    uidx = np.arange(r).astype(np.int64)
    Ru = R.copy()
    u = r
    e = np.empty(R.shape[1], dtype=np.float32)
    for f in range(first.shape[0]):
        u = _add(E, R, first[f], cur, theta, start, lref, lsim, uidx, Ru, u, e)
    bound = np.empty(k, dtype=np.float64)
    taken = np.empty(k, dtype=np.bool_)
    drawn = np.empty(k, dtype=np.int64)
    buf = (
        np.empty(2 * BLOCK, dtype=np.int64),
        np.empty(MAX_BLOCK, dtype=np.int64),
        np.empty(MAX_BLOCK, dtype=np.int64),
        np.empty((MAX_BLOCK, R.shape[1]), dtype=np.float32),
        np.empty(MAX_BLOCK, dtype=np.float64),
    )
    order = np.empty(S, dtype=np.int64)
    gains = np.empty(S, dtype=np.float64)
    pub = ub[rows[:left]]  # each place's bound
    refreshed = False
    h, tau, since = 0, np.inf, PARTITION_GAP  # the pool's first part: rows[:h], every later bound <= tau
    for t in range(S):
        slack = 0.0  # sum over the rows not saturated of theta - cur: an unlisted candidate's most
        for j in range(u):
            x = uidx[j]
            if cur[x] < theta[x]:
                slack += theta[x] - cur[x]
        scan = (E, cur, theta, start, lref, lsim, uidx, Ru, u, slack)
        pool = (rows, ub, pub)
        if refresh and u == 0 and not refreshed:
            _refresh(rows, at, left, ub, pub, lin, w, cur, start, lsim, lref)
            refreshed, h = True, 0
            since = PARTITION_GAP
        if left < TWO_PART_MIN * k:
            h, tau = 0, np.inf  # a small pool: one part
        elif h == 0 and since >= PARTITION_GAP:
            h, tau = _partition(rows, at, pub, left, TOP_SHARE)
            since = 0
        since += 1
        if h == 0:
            m = sample(left, k, state, mark, drawn)
            nt = _bounds_and_head(drawn, m, pub, bound, buf[0])
            gains[t], order[t] = _best_of_sample(drawn, m, nt, bound, taken, pool, lin, w, scan, buf)
        else:  # the first part's share of the sample, then the rest only if a later row could win
            m = sample_first(h, left, k, state, mark, drawn)
            nt = _bounds_and_head(drawn, m, pub, bound, buf[0])
            best, pick = _best_of_sample(drawn, m, nt, bound, taken, pool, lin, w, scan, buf)
            if best < tau:
                m += sample_rest(h, left, k, m, state, mark, drawn)
                nt = _bounds_and_head(drawn, m, pub, bound, buf[0])
                best, pick = _best_of_sample(drawn, m, nt, bound, taken, pool, lin, w, scan, buf)
                if since >= PARTITION_GAP:
                    h = 0  # repartition at the next pick
            gains[t], order[t] = best, pick
        p = at[order[t]]
        if p < h:  # out of the first part: the first part's last row takes its place
            _swap(rows, at, pub, p, h - 1)
            p, h = h - 1, h - 1
        _swap(rows, at, pub, p, left - 1)
        left -= 1
        u = _add(E, R, order[t], cur, theta, start, lref, lsim, uidx, Ru, u, e)
    return order, gains, cur
