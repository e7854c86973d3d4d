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
    "resolve_device",
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


def resolve_device(device: str) -> str:
    """Map ``"auto" | "cpu" | "gpu"`` to ``"cpu"`` or ``"gpu"``.

    Raises
    ------
    ValueError
        For an unknown name, or ``"gpu"`` on a machine where no CUDA device answers.
    """
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'gpu', got {device!r}")
    if device == "auto":
        return "gpu" if gpu_available() else "cpu"
    if device == "gpu" and not gpu_available():
        raise ValueError(
            "device='gpu' but no CUDA GPU is usable here (cupy missing or no driver/device); "
            "install the [gpu] extra on a GPU machine or use --device cpu"
        )
    return device


def to_numpy(x):
    """Return a numpy array (copying from the GPU when ``x`` is a cupy array)."""
    if is_cupy(x):
        return x.get()
    return np.asarray(x)


class _Random:
    """The few random draws the algorithms need, on numpy or cupy, from one seed."""

    def __init__(self, xp, seed):
        self.xp = xp
        if xp is np:
            # SFC64: the fastest of numpy's bit generators for bulk float draws here.
            self._g = np.random.Generator(np.random.SFC64(seed))
        else:  # cupy
            self._g = xp.random.default_rng(seed)

    def uniform(self, shape, dtype=np.float32):
        return self._g.random(size=shape, dtype=dtype)

    def bits32(self, count: int):
        """``count`` uniform random uint32 words (numpy only).

        Taken straight from the bit generator as uint64 words split in two, with none of
        ``Generator.random``'s per-draw conversion to float.
        """
        raw = self._g.bit_generator.random_raw((count + 1) // 2)
        return raw.view(np.uint32)[:count]

    def permutation(self, n: int):
        """A uniformly random permutation of ``range(n)``."""
        if self.xp is np:
            return self._g.permutation(n)
        return self.xp.argsort(self._g.random(size=n, dtype=np.float64))

    def subset(self, n: int, k: int):
        """``k`` distinct indices of ``range(n)``, uniformly at random, in random order."""
        if k >= n:
            return self.xp.arange(n)
        keys = self._g.random(size=n, dtype=np.float32)
        return self.xp.argpartition(keys, k - 1)[:k]


def default_rng(xp, seed) -> _Random:
    """A seeded random source that lives on the same device as ``xp``."""
    return _Random(xp, seed)
