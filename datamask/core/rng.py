"""Counter-based random numbers: the same words on numpy and cupy, keyed by position.

The ``pg`` loop needs random numbers that

* depend only on (seed, purpose, step, index), never on a generator state that a call
  advances, so a step captured once as a CUDA graph and replayed draws fresh numbers when
  its step counter (a device array) moves, and draws the same numbers as an uncaptured run;
* are the same on numpy and cupy, so a CPU and a GPU run of one seed draw the same masks
  (up to the rounding of ``log`` in float32);
* never give a uniform of exactly 0 or 1. cupy's float32 ``random`` returns exactly 0.0
  with probability 2^-25 (cuRAND's ``curand_uniform`` rounds the top 2^7 of its 2^32
  words to 1.0, which cupy maps to 0.0); the Gumbel key of that row is then infinite and
  the row is left out of the mask whatever its logit (see ``tests/core/test_collapse.py``).

The generator is Philox4x64-10 (Salmon et al., SC'11): block ``j`` of a draw is the
Philox function of the 256-bit counter ``(j + 1, step, purpose, 0)`` under a 128-bit key
derived from the seed, four 64-bit words per block, each split into two 32-bit words (low
half first). On numpy the words come from ``numpy.random.Philox`` (the same function in
C) with its counter set; elsewhere :func:`philox` computes them with ``xp`` integer
operations. The two agree bit for bit (``tests/core/test_rng.py``).

Uniforms use 23 random bits: ``U = (j + 1/2) / 2^23``, exact in float32, in
[2^-24, 1 - 2^-24].
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["CounterRNG", "philox", "seed_key", "uniform_from_words", "MASKS", "PASSES", "SUBSET"]

# Purposes: the third counter word, so the draws of different uses never overlap.
MASKS, PASSES, SUBSET = 1, 2, 3

_M0, _M1 = 0xD2E7470EE14C6C93, 0xCA5A826395121157  # Philox4x64 multipliers
_W0, _W1 = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B  # key schedule (Weyl) increments
_ROUNDS = 10
_MASK32 = 0xFFFFFFFF
_LITTLE = sys.byteorder == "little"


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return x ^ (x >> 31)


def seed_key(seed) -> tuple[int, int]:
    """The 128-bit Philox key (two Python ints) of an integer seed or a sequence of them."""
    parts = [int(s) for s in (seed if isinstance(seed, (list, tuple)) else [seed])]
    h = 0x243F6A8885A308D3
    for p in parts:
        if p < 0:
            raise ValueError(f"seed must be non-negative, got {p}")
        h = _splitmix64(h ^ (p & 0xFFFFFFFFFFFFFFFF))
        h = _splitmix64(h ^ (p >> 64))
    return h, _splitmix64(h ^ 0x13198A2E03707344)


def _mulhilo(xp, a, b):
    """``(lo, hi)`` 64-bit halves of the 128-bit product of uint64 ``a`` and constant ``b``."""
    u64 = xp.uint64
    m = u64(_MASK32)
    s = u64(32)
    b0, b1 = u64(b & _MASK32), u64(b >> 32)
    a0, a1 = a & m, a >> s
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s) + (p01 & m) + (p10 & m)  # < 3 * 2^32: no overflow
    hi = p11 + (p01 >> s) + (p10 >> s) + (mid >> s)
    lo = a * u64(b)  # wraps modulo 2^64
    return lo, hi


def philox(xp, key, c0, c1, c2, c3):
    """Philox4x64-10 of the counters ``(c0, c1, c2, c3)`` (uint64 arrays, broadcast).

    Returns the four uint64 output words as arrays. Plain ``xp`` integer operations: the
    reference that numpy's C generator is tested against, and the path for array modules
    without a fused kernel.
    """
    u64 = xp.uint64
    k0, k1 = int(key[0]), int(key[1])
    c0, c1, c2, c3 = (
        xp.asarray(c, dtype=u64).reshape(-1) for c in (c0, c1, c2, c3)
    )  # arrays: no scalar overflow warnings
    for r in range(_ROUNDS):
        if r:
            k0, k1 = (k0 + _W0) & 0xFFFFFFFFFFFFFFFF, (k1 + _W1) & 0xFFFFFFFFFFFFFFFF
        lo0, hi0 = _mulhilo(xp, c0, _M0)
        lo1, hi1 = _mulhilo(xp, c2, _M1)
        c0, c1, c2, c3 = hi1 ^ c1 ^ u64(k0), lo1, hi0 ^ c3 ^ u64(k1), lo0
    return c0, c1, c2, c3


def uniform_from_words(xp, words):
    """uint32 words -> float32 uniforms ``(j + 1/2) / 2^23`` from their top 23 bits."""
    u = (words >> xp.uint32(9)) | xp.uint32(0x3F800000)  # 1 + j / 2^23, in [1, 2)
    e = u.view(xp.float32)
    e -= xp.float32(1.0 - 2.0**-24)  # exact: (j + 1/2) / 2^23
    return e


class CounterRNG:
    """32-bit random words and uniforms keyed by (seed, purpose, step, index).

    Parameters
    ----------
    xp : module, numpy or cupy (or an array module that behaves like cupy)
    seed : int or sequence of int

    ``words(purpose, step, start, count)`` gives words ``start .. start + count - 1`` of
    the draw ``(purpose, step)``; ``step`` may be a 0-d device array on the generic path
    (a captured graph then reads it when it runs).
    """

    def __init__(self, xp, seed):
        self.xp = xp
        self.key = seed_key(seed)
        self._np = None
        if xp is np:
            self._np = np.random.Philox(key=np.array(self.key, dtype=np.uint64))
            self._state = self._np.state

    def words(self, purpose: int, step, start: int, count: int):
        """uint32 array of ``count`` words from flat index ``start`` of the draw."""
        first, skip = divmod(int(start), 8)  # 8 words per Philox block
        if self._np is not None:
            return self._numpy_words(purpose, int(step), first, skip, count)
        xp = self.xp
        n_blocks = (skip + count + 7) // 8
        j = xp.arange(first + 1, first + 1 + n_blocks, dtype=xp.uint64)
        step = xp.asarray(step, dtype=xp.uint64)
        out = philox(xp, self.key, j, step, xp.uint64(purpose), xp.uint64(0))
        w = xp.stack(out, axis=1)  # (blocks, 4) uint64
        lo = (w & xp.uint64(_MASK32)).astype(xp.uint32)
        hi = (w >> xp.uint64(32)).astype(xp.uint32)
        return xp.stack([lo, hi], axis=2).reshape(-1)[skip : skip + count]

    def _numpy_words(self, purpose, step, first, skip, count):
        st = self._state
        st["state"]["counter"][:] = (first, step, purpose, 0)  # next block: first + 1
        st["buffer_pos"] = 4
        self._np.state = st
        raw = self._np.random_raw((skip + count + 1) // 2)
        w = raw.view(np.uint32)
        if not _LITTLE:  # low half first, as on the generic path
            w = w.reshape(-1, 2)[:, ::-1].reshape(-1)
        return w[skip : skip + count]

    def uniform(self, purpose: int, step, count: int, start: int = 0):
        """float32 uniforms in (0, 1), never 0 or 1 (see :func:`uniform_from_words`)."""
        return uniform_from_words(self.xp, self.words(purpose, step, start, count))

    def permutation(self, n: int, step):
        """A random permutation of ``range(n)`` for draw ``(PASSES, step)``, on the device."""
        xp = self.xp
        keys = self.words(PASSES, step, 0, n).astype(xp.uint64)
        keys <<= xp.uint64(32)
        keys |= xp.arange(n, dtype=xp.uint64)  # distinct keys: no ties to break
        keys.sort()
        return (keys & xp.uint64(_MASK32)).astype(xp.int64)
