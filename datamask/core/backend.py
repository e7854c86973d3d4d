"""Array and dataframe backends: numpy/pandas on CPU, cupy/cudf on GPU.

GPU libraries are imported lazily, so ``import datamask`` works on a machine without CUDA.
Algorithms take ``xp = get_namespace(array)`` and use only functions that numpy and cupy
share, so one code path serves both devices.
"""

from __future__ import annotations

import functools
import types

import numpy as np

__all__ = [
    "get_namespace",
    "gpu_available",
    "is_cupy",
    "to_numpy",
    "default_rng",
    "smallest_keys",
]


def is_cupy(x) -> bool:
    """True when ``x`` is a cupy array (checked without importing cupy)."""
    return type(x).__module__.split(".")[0] == "cupy"


def get_namespace(*arrays) -> types.ModuleType:
    """Return ``cupy`` if any argument is a cupy array, else ``numpy``."""
    for a in arrays:
        if a is not None and is_cupy(a):
            import cupy

            return cupy
    return np


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """True when cupy imports *and* a CUDA device answers.

    Importing cupy succeeds on machines without a GPU or driver; only use fails. So the
    check asks the runtime, and any failure means "no GPU".
    """
    try:
        import cupy

        return bool(cupy.cuda.is_available()) and cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def to_numpy(x):
    """Return a numpy array (copying from the GPU when ``x`` is a cupy array)."""
    if is_cupy(x):
        return x.get()
    return np.asarray(x)


class _Random:
    """The seeded draws the solvers need outside the pg loop, the same on numpy and cupy.

    Built on :class:`datamask.rng.CounterRNG`, so a CPU and a GPU run of one seed draw the
    same rows.
    """

    def __init__(self, xp, seed):
        from .rng import CounterRNG

        self.xp = xp
        self._rng = CounterRNG(xp, seed)

    def keys(self, n: int):
        """(n,) uint64 sort keys of ``range(n)``: a random 32-bit word over the index, so
        distinct. :meth:`subset` takes the ``k`` smallest; the rows of any subset with the
        smallest keys are a uniform sample of it, and samples of overlapping subsets share
        the rows they can (coordinated samples)."""
        from .rng import SUBSET

        xp = self.xp
        keys = self._rng.words(SUBSET, 0, 0, n).astype(xp.uint64)
        keys <<= xp.uint64(32)
        keys |= xp.arange(n, dtype=xp.uint64)
        return keys

    def subset(self, n: int, k: int):
        """``k`` distinct indices of ``range(n)``, uniformly at random, in increasing order
        (so numpy and cupy, whose partitions order their output differently, give the same
        array, and gathers through it run in order)."""
        if k >= n:
            return self.xp.arange(n)
        return smallest_keys(self.keys(n), k)


def smallest_keys(keys, k: int):
    """The indices (low 32 bits, increasing) of the ``k`` smallest of ``keys`` (from
    :meth:`_Random.keys`, or a selection of them)."""
    xp = get_namespace(keys)
    return xp.sort((xp.partition(keys, k - 1)[:k] & xp.uint64(0xFFFFFFFF)).astype(xp.int64))


def default_rng(xp, seed) -> _Random:
    """A seeded random source that lives on the same device as ``xp``."""
    return _Random(xp, seed)
