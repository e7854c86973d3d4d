"""Compiled loops (numba) of the facility scorer's pass over the candidate-by-reference
similarities (:func:`datamask.core.facility_lists.threshold_lists`): from each block of
products, the pairs at or above their reference row's threshold, appended to the threshold
lists (CSR by candidate: ``ref``, ``sim``, each row's end in ``ends``).

:func:`scan_block` reads float32 cosines; :func:`screen_block` (bfloat16 bits) and
:func:`screen_block_int` (int8 products, rows rounded by :func:`quantize_rows`) read a cheaper
product first and compute the cosine of each pair that may reach its threshold again in
float32, so every kernel lists the same pairs. Each returns the new end of the lists, or -1
when ``ref`` is too short (the caller grows it and scans the block again).

Compiled on first use in each process (cached on disk by numba afterwards).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["scan_block", "screen_block", "screen_block_int", "quantize_rows"]


@njit(cache=True, fastmath=True)
def scan_block(C, theta, ref, sim, ends, pos):
    """Append each row's entries ``C[i, x] >= theta[x]`` of block ``C`` (c, r) to ``ref`` /
    ``sim`` from ``pos``, row by row, and each row's end to ``ends``; returns the new end,
    or -1 when ``ref`` is too short (nothing then counts: the caller grows it and rescans).
    Each run of 16 entries is counted first (a loop the compiler vectorises), and only a
    run with an entry at its threshold is walked."""
    c, r = C.shape
    cap = ref.shape[0]
    for i in range(c):
        row = C[i]
        for x0 in range(0, r + 15, 16):
            x1 = min(r, x0 + 16)
            if x1 - x0 == 16:
                hits = 0
                for x in range(x0, x0 + 16):
                    hits += row[x] >= theta[x]
                if hits == 0:
                    continue
            for x in range(x0, x1):
                v = row[x]
                if v >= theta[x]:
                    if pos >= cap:
                        return -1
                    ref[pos] = x
                    sim[pos] = v
                    pos += 1
        ends[i] = pos
    return pos


@njit(cache=True, fastmath=True)
def screen_block(B, key, blk, R, theta, ref, sim, ends, pos):
    """:func:`scan_block` from the block's bfloat16 cosines, their bits ``B`` (c, r) int16:
    a pair whose order key reaches ``key[x]`` (its threshold less the bfloat16 margin) has
    its cosine computed again in float32 from the rows ``blk`` (c, d) and ``R`` (r, d), and
    is listed when that reaches ``theta[x]``. Where every key is above zero's (thresholds
    above the margin: every reference row of the suite's corpora), a key is the bits
    themselves (a negative cosine never reaches it), so runs are counted on the int16 bits."""
    c, r = B.shape
    d = blk.shape[1]
    cap = ref.shape[0]
    positive = True
    for x in range(r):
        if key[x] < 1:
            positive = False
    k16 = np.empty(r, dtype=np.int16)
    for x in range(r):
        k16[x] = min(key[x], 32767) if positive else 0
    for i in range(c):
        row = B[i]
        for x0 in range(0, r, 32):
            x1 = min(r, x0 + 32)
            if x1 - x0 == 32:
                hits = 0
                if positive:
                    for x in range(x0, x0 + 32):
                        hits += row[x] >= k16[x]
                else:
                    for x in range(x0, x0 + 32):
                        b = np.int32(row[x])
                        hits += (b if b >= 0 else -32768 - b) >= key[x]
                if hits == 0:
                    continue
            for x in range(x0, x1):
                b = np.int32(row[x])
                if (b if b >= 0 else -32768 - b) < key[x]:
                    continue
                v = np.float32(0.0)
                for j in range(d):
                    v += blk[i, j] * R[x, j]
                if v >= theta[x]:
                    if pos >= cap:
                        return -1
                    ref[pos] = x
                    sim[pos] = v
                    pos += 1
        ends[i] = pos
    return pos


@njit(cache=True)
def quantize_rows(X, scale, q):
    """Round the rows ``X`` (c, d) float32 to int8 on ``scale`` into ``q[:c]`` (``|x| <= 127
    scale``); returns the largest row error ``||x - scale q||`` (float64 sums of exact
    products, 2^-40 to spare: a bound)."""
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
def screen_block_int(C, key, blk, R, theta, ref, sim, ends, pos):
    """:func:`screen_block` from the block's int8 products ``C`` (c, r) int32: a pair whose
    product reaches ``key[x]`` (:func:`~datamask.core.facility_lists.int8_keys`) has its cosine
    computed in float32 from the rows ``blk`` and ``R``, and is listed when that reaches
    ``theta[x]``. Runs of 16 are counted first, as in :func:`scan_block`."""
    c, r = C.shape
    d = blk.shape[1]
    cap = ref.shape[0]
    k32 = np.empty(r, dtype=np.int32)
    for x in range(r):
        k32[x] = max(-2147483647, min(2147483647, key[x]))
    for i in range(c):
        row = C[i]
        for x0 in range(0, r, 16):
            x1 = min(r, x0 + 16)
            if x1 - x0 == 16:
                hits = 0
                for x in range(x0, x0 + 16):
                    hits += row[x] >= k32[x]
                if hits == 0:
                    continue
            for x in range(x0, x1):
                if row[x] < k32[x]:
                    continue
                v = np.float32(0.0)
                for j in range(d):
                    v += blk[i, j] * R[x, j]
                if v >= theta[x]:
                    if pos >= cap:
                        return -1
                    ref[pos] = x
                    sim[pos] = v
                    pos += 1
        ends[i] = pos
    return pos
