"""A numpy-backed stand-in for cupy, so the CPU suite runs datamask's device branches.

``install(monkeypatch)`` puts this module in ``sys.modules`` as ``cupy``; arrays made with
``asarray`` are of a numpy subclass whose type lives in module ``cupy``, so
``datamask``'s ``get_namespace`` takes the cupy branch for them and every array operation
that follows runs here on numpy. What the stand-in copies from cupy, on purpose:

* results stay device arrays: reductions give 0-d arrays and indexing an element gives a
  0-d array, never a Python or numpy scalar;
* reading a value back to the host (``float``, ``int``, ``bool``, ``item``, ``tolist``,
  ``get``, iteration, ``asnumpy``) is a *synchronisation*: it is counted in ``SYNCS``, and
  inside ``strict()`` it raises :class:`SyncError`;
* ``random.default_rng`` draws like cupy's XORWOW generator does for float32: cuRAND's
  ``curand_uniform`` (``float(x) * 2^-32 + 2^-33`` for a 32-bit word x, in (0, 1]) with
  cupy's mapping of 1.0 to 0.0, so exactly 0.0 comes out with probability 2^-25. The
  words come from numpy (a different stream from cuRAND's); only the law is copied.

Nothing here is fast or complete: only what datamask calls.
"""

from __future__ import annotations

import contextlib
import sys
import types

import numpy as np

__all__ = ["install", "ndarray", "asarray", "strict", "SyncError", "SYNCS"]


class SyncError(RuntimeError):
    """A device value was read back to the host inside ``strict()``."""


SYNCS: list = []  # one entry (a short stack description) per host read-back
_STRICT = [False]


def _sync(what):
    import traceback

    frame = traceback.extract_stack(limit=6)[:-2]
    SYNCS.append((what, [f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno}" for f in frame]))
    if _STRICT[0]:
        raise SyncError(f"host read-back ({what}) inside a step: {SYNCS[-1][1]}")


@contextlib.contextmanager
def strict():
    """Raise :class:`SyncError` on any host read-back inside the block."""
    old = _STRICT[0]
    _STRICT[0] = True
    try:
        yield
    finally:
        _STRICT[0] = old


class ndarray(np.ndarray):
    """A numpy array that behaves like a cupy one where it matters (see the module doc)."""

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return np.asarray(arr).view(ndarray)

    def __getitem__(self, key):
        out = super().__getitem__(key)
        return out if isinstance(out, np.ndarray) else np.asarray(out).view(ndarray)

    def __float__(self):
        _sync("float")
        return float(np.asarray(self))

    def __int__(self):
        _sync("int")
        return int(np.asarray(self))

    def __index__(self):
        _sync("index")
        return int(np.asarray(self))

    def __bool__(self):
        _sync("bool")
        return bool(np.asarray(self))

    def __iter__(self):
        _sync("iter")
        return (np.asarray(x).view(ndarray) for x in np.asarray(self))

    def item(self, *args):
        _sync("item")
        return np.asarray(self).item(*args)

    def tolist(self):
        _sync("tolist")
        return np.asarray(self).tolist()

    def get(self, stream=None):
        _sync("get")
        return np.array(self, copy=True).view(np.ndarray)

    def __repr__(self):
        return "fake_cupy." + repr(np.asarray(self))


ndarray.__module__ = "cupy"


def _wrap(x):
    if isinstance(x, np.ndarray) and not isinstance(x, ndarray):
        return x.view(ndarray)
    if isinstance(x, (np.generic,)):
        return np.asarray(x).view(ndarray)
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    return x


class _Fn:
    """A numpy function whose array results come back as device arrays."""

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, *args, **kwargs):
        return _wrap(self._fn(*args, **kwargs))

    def __getattr__(self, name):  # ufunc.at, .reduce, ...
        attr = getattr(self._fn, name)
        return _Fn(attr) if callable(attr) else attr


def asarray(a, dtype=None):
    """A device copy of ``a`` (host -> device: not a synchronisation)."""
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    return np.array(a, dtype=dtype, copy=True).view(ndarray)


def asnumpy(a):
    if isinstance(a, ndarray):
        _sync("asnumpy")
    return np.array(a, copy=True).view(np.ndarray)


def get_array_module(*arrays):
    return sys.modules[__name__] if any(isinstance(a, ndarray) for a in arrays) else np


class _Generator:
    """cupy.random.Generator's law on numpy words (see the module doc)."""

    def __init__(self, seed):
        self._g = np.random.default_rng(seed)

    def random(self, size=None, dtype=np.float64, out=None):
        size = () if size is None else size
        if np.dtype(dtype) == np.float32:
            x = self._g.integers(0, 2**32, size=size, dtype=np.uint32)
            u = x.astype(np.float32) * np.float32(2.0**-32) + np.float32(2.0**-33)  # (0, 1]
            u[u >= np.float32(1.0)] = 0.0
        else:
            x = self._g.integers(0, 2**53, size=size, dtype=np.uint64)
            u = (x.astype(np.float64) + 0.5) * 2.0**-53
        return u.view(ndarray)


class _Random(types.ModuleType):
    def default_rng(self, seed=None):
        return _Generator(seed)


class _Cuda(types.ModuleType):
    def is_available(self):
        return False


class _Module(types.ModuleType):
    ndarray = ndarray
    asarray = staticmethod(asarray)
    array = staticmethod(asarray)
    asnumpy = staticmethod(asnumpy)
    get_array_module = staticmethod(get_array_module)

    def __getattr__(self, name):
        obj = getattr(np, name)
        if callable(obj) and not isinstance(obj, type):
            return _Fn(obj)
        return obj


def module():
    """A fresh fake ``cupy`` module object."""
    m = _Module("cupy", __doc__)
    m.random = _Random("cupy.random")
    m.cuda = _Cuda("cupy.cuda")
    m.SyncError = SyncError
    m.SYNCS = SYNCS
    m.strict = strict
    return m


def install(monkeypatch):
    """Make ``import cupy`` return the fake for the rest of the test; returns it."""
    m = module()
    monkeypatch.setitem(sys.modules, "cupy", m)
    SYNCS.clear()
    return m
