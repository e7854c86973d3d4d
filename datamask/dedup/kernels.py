"""Compiled loops (numba) over the UTF-8 bytes of a text column: exact keys, word n-gram
keys and MinHash signatures, one pass per document, no Python object per word.

Every kernel reads an Arrow ``large_string`` array as its data bytes and offsets, after
Unicode lower-casing (``pc.utf8_lower``, done by the callers in :mod:`.minhash` and
:mod:`.normalize`). A *word* is a run of ASCII word characters ``[0-9a-z_]`` (what the
regular expression ``\\w`` of Arrow's RE2 means); every other byte, including every byte
of a non-ASCII character, separates words. Its 64-bit hash packs its bytes eight at a
time through MurmurHash3's finaliser (:func:`fmix64`, a bijection); a shingle's key mixes
its ``ngram`` word hashes the same way. MinHash position ``i`` of a shingle set is the
minimum over its keys of the top 32 bits of ``A[i] * key + B[i]`` (mod 2**64; ``A`` odd),
a multiply-shift hash per permutation (``benchmarks/dedup.py`` measures the estimate's
error against the ideal ``sqrt(J (1 - J) / num_perm)``).

The kernels are compiled on first use in each process (a few seconds; cached on disk by
numba afterwards).
"""

from __future__ import annotations

import numpy as np
from numba import njit, vectorize

__all__ = ["fmix64", "fmix64_array", "signature_kernel", "shingle_kernel", "exact_kernel", "repeated_keys", "EMPTY"]

EMPTY = np.uint32(0xFFFFFFFF)  # every position of the signature of a set with no shingle
_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xC2B2AE3D27D4EB4F)
_C3 = np.uint64(0x165667B19E3779F9)
_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)

# byte -> itself for a word byte [0-9a-z_] (A-Z -> a-z), 0 for a separator
_WORD = np.zeros(256, np.uint8)
for _c in b"0123456789abcdefghijklmnopqrstuvwxyz_":
    _WORD[_c] = _c
for _c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
    _WORD[_c] = _c + 32
# the whitespace that exact keys fold: RE2's \s, [\t\n\f\r ]
_SPACE = np.zeros(256, np.bool_)
for _c in b"\t\n\f\r ":
    _SPACE[_c] = True


@njit(inline="always")
def fmix64(x):
    """MurmurHash3's 64-bit finaliser: a bijective avalanche of one value."""
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return x


@vectorize(["uint64(uint64)"], cache=True)
def fmix64_array(x):
    """:func:`fmix64` of every element of a uint64 array (a numpy ufunc)."""
    return fmix64(x)


@njit(inline="always")
def _combine(ring, first, count):
    mask = ring.shape[0] - 1  # a power of two: no division per word
    acc = np.uint64(0)
    for k in range(count):
        acc = acc * _C1 + ring[(first + k) & mask]
    return fmix64(acc)


def _ring(ngram: int):
    """The last words' hashes: a power-of-two ring of at least ``ngram``."""
    return np.zeros(1 << max(int(ngram) - 1, 0).bit_length(), np.uint64)


@njit(cache=True, nogil=True)
def _doc_keys(data, lo, hi, ngram, ring, keys):
    """Shingle keys of the document ``data[lo:hi]`` into ``keys``; returns how many: one
    per word n-gram, or one holding every word of a document shorter than ``ngram``."""
    nw = 0
    nk = 0
    j = lo
    while j < hi:
        c = _WORD[data[j]]
        if c == 0:
            j += 1
            continue
        acc = np.uint64(0)
        h = np.uint64(0)
        length = 0
        while c != 0:
            h = (h << np.uint64(8)) | np.uint64(c)
            length += 1
            if length % 8 == 0:
                acc = fmix64(acc ^ h)
                h = np.uint64(0)
            j += 1
            c = _WORD[data[j]] if j < hi else np.uint8(0)
        ring[nw & (ring.shape[0] - 1)] = fmix64(acc ^ h ^ (np.uint64(length) * _C2))
        nw += 1
        if nw >= ngram:
            keys[nk] = _combine(ring, nw - ngram, ngram)
            nk += 1
    if 0 < nw < ngram:
        keys[0] = _combine(ring, 0, nw)
        nk = 1
    return nk


def _scratch(offsets):
    """Room for the keys of the longest document (a word and its separator take 2 bytes)."""
    longest = int(np.max(np.diff(offsets))) if offsets.shape[0] > 1 else 0
    return np.empty(longest // 2 + 2, np.uint64)


@njit(cache=True, nogil=True)
def _signatures(data, offsets, ngram, A, B, bands, rows, ring, keys, out, bkeys):
    n = offsets.shape[0] - 1
    P = A.shape[0]
    m = np.empty(P, np.uint64)
    count = np.empty(n, np.int64)
    for d in range(n):
        nk = _doc_keys(data, offsets[d], offsets[d + 1], ngram, ring, keys)
        count[d] = nk
        m[:] = _MAX
        for s in range(nk):
            x = keys[s]
            for i in range(P):
                m[i] = min(m[i], A[i] * x + B[i])
        for i in range(P):
            out[d, i] = np.uint32(m[i] >> np.uint64(32))
        for j in range(bands):  # the LSH band keys, as minhash.band_keys64 computes them
            acc = np.uint64(j) * _C2 + np.uint64(rows)
            for r in range(rows):
                acc = fmix64(acc * _C1 + np.uint64(out[d, j * rows + r]))
            bkeys[d, j] = acc
    return count


def signature_kernel(data, offsets, ngram: int, A, B, bands: int = 0, rows: int = 0):
    """``(N, P)`` uint32 MinHash signatures, ``(N,)`` shingle counts and ``(N, bands)``
    uint64 LSH band keys (:func:`~.minhash.band_keys64`'s) of lower-cased documents given as
    UTF-8 ``data`` bytes and ``offsets``; ``A`` (odd) and ``B``: the ``P`` permutations'
    uint64 multipliers and increments."""
    n = offsets.shape[0] - 1
    out = np.empty((n, A.shape[0]), np.uint32)
    bkeys = np.empty((n, int(bands)), np.uint64)
    count = _signatures(
        data, offsets, int(ngram), A, B, int(bands), int(rows), _ring(ngram), _scratch(offsets), out, bkeys
    )
    return out, count, bkeys


@njit(cache=True, nogil=True)
def _all_keys(data, offsets, ngram, ring, keys, key_offsets):
    n = offsets.shape[0] - 1
    pos = 0
    for d in range(n):
        key_offsets[d] = pos
        pos += _doc_keys(data, offsets[d], offsets[d + 1], ngram, ring, keys[pos:])
    key_offsets[n] = pos
    return pos


def shingle_kernel(data, offsets, ngram: int):
    """Every shingle key (``(K,)`` uint64, documents concatenated) and ``(N + 1,)`` offsets."""
    n = offsets.shape[0] - 1
    keys = np.empty(int(offsets[-1] - offsets[0]) // 2 + n + 1, np.uint64)
    key_offsets = np.empty(n + 1, np.int64)
    used = _all_keys(data, offsets, int(ngram), _ring(ngram), keys, key_offsets)
    return keys[:used].copy(), key_offsets


@njit(cache=True, nogil=True)
def _exact(data, offsets, seeds, out):
    n = offsets.shape[0] - 1
    for d in range(n):
        lo, hi = offsets[d], offsets[d + 1]
        h1, h2 = seeds[0], seeds[1]
        buf = np.uint64(0)
        nb = 0
        total = 0
        j = lo
        while j < hi:
            c = data[j]
            j += 1
            if _SPACE[c]:  # a run of whitespace is one space
                while j < hi and _SPACE[data[j]]:
                    j += 1
                c = np.uint8(32)
            buf |= np.uint64(c) << np.uint64(8 * nb)
            nb += 1
            total += 1
            if nb == 8:
                h1 = fmix64(h1 ^ (buf * _C1))
                h2 = fmix64((h2 + _C3) ^ (buf * _C2))
                buf = np.uint64(0)
                nb = 0
        t = np.uint64(total)
        out[d, 0] = fmix64(h1 ^ (buf * _C1) ^ (t * _C3))
        out[d, 1] = fmix64((h2 + _C3) ^ (buf * _C2) ^ (t * _C1))


def exact_kernel(data, offsets, seeds):
    """``(N, 2)`` uint64: a 128-bit hash of each document after folding every run of
    whitespace ``[\\t\\n\\f\\r ]`` into one space (two 64-bit lanes seeded by ``seeds``)."""
    out = np.empty((offsets.shape[0] - 1, 2), np.uint64)
    _exact(data, offsets, np.asarray(seeds, np.uint64), out)
    return out


@njit(cache=True, nogil=True)
def _repeated(keys, bits, slot_key, slot_count, out):
    n = keys.shape[0]
    mask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    for phase in range(2):  # count each key (up to 2), then look every record's key up
        for i in range(n):
            k = keys[i]
            h = (k * _C1) >> np.uint64(64 - bits)
            while slot_count[h] != 0 and slot_key[h] != k:
                h = (h + np.uint64(1)) & mask
            if phase == 0:
                slot_key[h] = k
                if slot_count[h] < 2:
                    slot_count[h] += 1
            else:
                out[i] = slot_count[h] >= 2


def repeated_keys(keys) -> np.ndarray:
    """``(N,)`` bool: whether each uint64 key occurs more than once (a hash table, no sort:
    most LSH band keys are a single document's)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    bits = max(4, int(2 * max(keys.shape[0], 1) - 1).bit_length())
    out = np.zeros(keys.shape[0], np.bool_)
    _repeated(keys, bits, np.zeros(1 << bits, np.uint64), np.zeros(1 << bits, np.uint8), out)
    return out
