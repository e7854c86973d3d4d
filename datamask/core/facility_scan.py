"""Compiled loops (numba) of the facility scorer's pass over the candidate-by-reference
similarities (:func:`datamask.core.facility_lists.threshold_lists`): from each block of
products, the pairs at or above their reference row's threshold, appended to the threshold
lists (CSR by candidate: ``ref``, ``sim``, each row's end in ``ends``).

:func:`scan_block` reads float32 cosines; :func:`screen_block` (bfloat16 bits) and
:func:`screen_block_int` (int8 products, rows rounded by :func:`quantize_rows`) read a cheaper
product first and compute the cosine of each pair that may reach its threshold again in
float32, so every kernel lists the same pairs: the screened pairs of a block are collected
first and their cosines computed a reference row at a time, four pairs at once (four sums in
flight; at 1M rows the pass rechecks about 32M pairs: 100 blocks 0.175 -> 0.153 s,
:func:`_screen_walk`). Each returns the new end of the lists, or -1 when ``ref`` is too short
(the caller grows it and scans the block again).

Compiled on first use in each process (cached on disk by numba afterwards).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

__all__ = ["scan_block", "screen_block", "screen_block_int", "quantize_rows", "stage_sums", "workspace"]


@njit(cache=True, fastmath=True)
def scan_block(C, theta, ref, sim, ends, pos, work):
    """Append each row's entries ``C[i, x] >= theta[x]`` of block ``C`` (c, r) to ``ref`` /
    ``sim`` from ``pos``, row by row, and each row's end to ``ends``; returns the new end,
    or -1 when ``ref`` is too short (nothing then counts: the caller grows it and rescans).
    ``work``: :func:`workspace`."""
    pi, px, val, _, _, flags = work
    n = _pairs(C, theta, pi, px, flags)
    for j in range(n):
        val[j] = C[pi[j], px[j]]
    return _listed(pi, px, val, n, C.shape[0], theta, ref, sim, ends, pos)


@njit(cache=True, fastmath=True)
def _pairs(C, key, pi, px, flags):
    """The pairs ``C[i, x] >= key[x]`` of block ``C`` (c, r), row by row, into ``pi`` / ``px``
    (their row and reference row); returns how many. Each row's comparisons are written as
    bytes first (a loop the compiler vectorises) and read back eight at a time, a pair at each
    set byte (its trailing zeros): one branch a pair, not one an entry (at 1M rows, 100 blocks
    of int8 products 0.081 -> 0.032 s; a branch per entry in runs of 16 mispredicted at the
    pairs). ``flags``: :func:`workspace`'s bytes, zero past ``r``."""
    c, r = C.shape
    words = flags.view(np.uint64)
    n = 0
    for i in range(c):
        row = C[i]
        for x in range(r):
            flags[x] = row[x] >= key[x]
        for w in range(words.shape[0]):
            m = words[w]
            while m != 0:
                pi[n] = i
                px[n] = (w << 3) + (trailing_zeros(m) >> 3)
                n += 1
                m &= m - np.uint64(1)
    return n


@njit(cache=True)
def _listed(pi, px, val, n, c, theta, ref, sim, ends, pos):
    """Append the pairs ``j < n`` (row by row, as :func:`_pairs` found them) whose cosine
    ``val[j]`` reaches ``theta[px[j]]``, and each of the ``c`` rows' end to ``ends``; returns
    the new end, or -1 when ``ref`` is too short."""
    j = 0
    for i in range(c):
        while j < n and pi[j] == i:
            x = px[j]
            if val[j] >= theta[x]:
                if pos >= ref.shape[0]:
                    return -1
                ref[pos] = x
                sim[pos] = val[j]
                pos += 1
            j += 1
        ends[i] = pos
    return pos


def workspace(c, r):
    """The buffers of :func:`scan_block` and :func:`_screen_walk` for blocks of up to ``c``
    candidates against ``r`` reference rows (a block's pairs, at most ``c r``: 12 bytes each; a
    row's comparisons, ``r`` bytes rounded up to eight)."""
    m = c * r
    return (
        np.empty(m, dtype=np.int32),
        np.empty(m, dtype=np.int32),
        np.empty(m, dtype=np.float32),
        np.empty(r + 1, dtype=np.int64),
        np.empty(m, dtype=np.int32),
        np.zeros(-(-r // 8) * 8, dtype=np.uint8),
    )


@njit(cache=True, fastmath=True)
def _screen_walk(C, key, blk, R, theta, ref, sim, ends, pos, work):
    """A screen's pairs rechecked: the pairs ``C[i, x] >= key[x]`` collected row by row
    (:func:`_pairs`), their float32 cosines computed a reference row at a time, four pairs at
    once (four sums in flight instead of one latency-bound chain; at 1M rows, 100 blocks 0.175
    s one pair at a time, 0.167 s grouped, 0.150-0.165 s four at once), and the pairs reaching
    ``theta[x]`` then listed row by row (:func:`_listed`). ``work``: :func:`workspace`.
    Returns the new end, or -1 when ``ref`` is too short."""
    pi, px, val, cnt, perm, flags = work
    c, r = C.shape
    n = _pairs(C, key, pi, px, flags)
    cnt[:] = 0
    for j in range(n):
        cnt[px[j] + 1] += 1
    for x in range(r):
        cnt[x + 1] += cnt[x]
    for j in range(n):  # by reference row (a counting sort; row order kept within one)
        x = px[j]
        perm[cnt[x]] = j
        cnt[x] += 1
    lo = 0
    for x in range(r):  # cnt[x]: now the end of reference row x's pairs
        rx = R[x]
        q = lo
        while q + 4 <= cnt[x]:  # four pairs of one reference row at once: four sums in flight
            j0, j1, j2, j3 = perm[q], perm[q + 1], perm[q + 2], perm[q + 3]
            a0, a1, a2, a3 = blk[pi[j0]], blk[pi[j1]], blk[pi[j2]], blk[pi[j3]]
            v0 = v1 = v2 = v3 = np.float32(0.0)
            for k in range(rx.shape[0]):
                v0 += a0[k] * rx[k]
                v1 += a1[k] * rx[k]
                v2 += a2[k] * rx[k]
                v3 += a3[k] * rx[k]
            val[j0], val[j1], val[j2], val[j3] = v0, v1, v2, v3
            q += 4
        for t in range(q, cnt[x]):
            j = perm[t]
            a = blk[pi[j]]
            v = np.float32(0.0)
            for k in range(rx.shape[0]):
                v += a[k] * rx[k]
            val[j] = v
        lo = cnt[x]
    return _listed(pi, px, val, n, c, theta, ref, sim, ends, pos)


@njit(cache=True, fastmath=True)
def screen_block(B, key, blk, R, theta, ref, sim, ends, pos, work):
    """:func:`scan_block` from the block's bfloat16 cosines, their bits ``B`` (c, r) int16:
    a pair whose order key reaches ``key[x]`` (its threshold less the bfloat16 margin) has
    its cosine computed again in float32 from the rows ``blk`` (c, d) and ``R`` (r, d), and
    is listed when that reaches ``theta[x]``. Where every key is above zero's (thresholds
    above the margin: every reference row of the suite's corpora), a key is the bits
    themselves (a negative cosine never reaches it), so runs are counted on the int16 bits."""
    c, r = B.shape
    positive = True
    for x in range(r):
        if key[x] < 1:
            positive = False
    if positive:
        k16 = np.empty(r, dtype=np.int16)
        for x in range(r):
            k16[x] = min(key[x], 32767)
        return _screen_walk(B, k16, blk, R, theta, ref, sim, ends, pos, work)
    # a key at or below zero's: the bits' order keys (a negative value's bits count down)
    K = np.empty((c, r), dtype=np.int32)
    for i in range(c):
        for x in range(r):
            v = np.int32(B[i, x])
            K[i, x] = v if v >= 0 else -32768 - v
    return _screen_walk(K, key.astype(np.int32), blk, R, theta, ref, sim, ends, pos, work)


@njit(cache=True, fastmath=True)
def quantize_rows(X, scale, q):
    """Round the rows ``X`` (c, d) float32 to int8 on ``scale`` into ``q[:c]`` (``|x| <= 127
    scale``); returns the largest row error ``||x - scale q||`` (float64 sums of exact
    products in any order, so the loop vectorises: d roundings of 2^-53, far inside the
    2^-40 to spare, a bound; 200 blocks of the 1M-row pass 0.057 -> 0.025 s)."""
    inv = 1.0 / scale
    worst = 0.0
    for i in range(X.shape[0]):
        e = 0.0
        for k in range(X.shape[1]):
            x = np.float64(X[i, k])
            v = min(127.0, max(-127.0, np.rint(x * inv)))
            q[i, k] = np.int8(v)
            diff = x - v * scale
            e += diff * diff
        worst = max(worst, e)
    return np.sqrt(worst) * (1 + 2.0**-40) + 2.0**-40


@njit(cache=True, fastmath=True)
def screen_block_int(C, key, blk, R, theta, ref, sim, ends, pos, work):
    """:func:`screen_block` from the block's int8 products ``C`` (c, r) int32: a pair whose
    product reaches ``key[x]`` (:func:`~datamask.core.facility_lists.int8_keys`) has its cosine
    computed in float32 from the rows ``blk`` and ``R``, and is listed when that reaches
    ``theta[x]`` (the pairs found by :func:`_pairs`)."""
    k32 = np.empty(key.shape[0], dtype=np.int32)
    for x in range(key.shape[0]):
        k32[x] = max(-2147483647, min(2147483647, key[x]))
    return _screen_walk(C, k32, blk, R, theta, ref, sim, ends, pos, work)


@njit(cache=True, fastmath=True)
def stage_sums(C, scale, low, out):
    """``out[i]`` at least ``sum_x max(0, C[i, x] scale[x] - low[x])`` for block ``C`` (c, r),
    int32 products or float32 cosines (a stage's gain bounds,
    :func:`~datamask.core.facility_lists.threshold_lists`): float32 terms summed in any order,
    the total raised by the most that order can lose (``r`` roundings of 2^-24 each)."""
    c, r = C.shape
    grow = 1.0 + r * 2.0**-23
    for i in range(c):
        acc = np.float32(0.0)
        for x in range(r):
            acc += max(np.float32(C[i, x]) * scale[x] - low[x], np.float32(0.0))
        out[i] = np.float64(acc) * grow
