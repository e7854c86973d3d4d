"""The C heap's block threshold while a task allocates large temporaries.

A Dask nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (distributed's
``nanny.pre-spawn-environ``), so that freed memory goes back to the operating system. Setting
any of glibc's ``MALLOC_*`` tunables turns off glibc's sliding mmap threshold: every block over
128 KiB is then a fresh ``mmap`` whose pages the kernel faults in and zeroes, and ``munmap``\\ s
on free. A proxy model's training step allocates dozens of such blocks (activations, logits,
gradients), so in a Dask worker the same step took 1.5-1.9x the CPU seconds it takes in a
plain process (benchmarks/results/search_cost.md, round 8); a split's selection allocates its
products and gathers block by block likewise (the redundancy filter, the facility scorer), so
each split's work runs inside it too (:mod:`datamask.pipeline.select_split`).
:func:`large_blocks` raises the threshold to glibc's ceiling for the duration of a task, so the
blocks are reused from the heap, then restores the threshold the process had and trims the
heap, so the worker still hands its memory back as distributed intends.

Only where it matters: on glibc, when the environment had switched the sliding threshold off
(a ``MALLOC_*`` tunable is set, as in every Dask worker); elsewhere a no-op.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import platform
import threading

__all__ = ["large_blocks", "raised", "MMAP_THRESHOLD_MAX"]

#: glibc's ceiling for ``M_MMAP_THRESHOLD`` on 64-bit (``DEFAULT_MMAP_THRESHOLD_MAX``): the
#: sliding threshold of a process without tunables grows to it, too
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
#: glibc's default threshold, what a tunable-pinned process keeps unless it sets its own
_MMAP_THRESHOLD_DEFAULT = 128 * 1024
_M_MMAP_THRESHOLD = -3
_M_TRIM_THRESHOLD = -1
_TUNABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")


def _libc():
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def _pinned() -> tuple | None:
    """The (mmap, trim) thresholds the environment pinned (glibc's defaults for those another
    tunable pinned), or None when the sliding thresholds are on."""
    if not any(k in os.environ for k in _TUNABLES):
        return None
    return (
        _env_int("MALLOC_MMAP_THRESHOLD_", _MMAP_THRESHOLD_DEFAULT),
        _env_int("MALLOC_TRIM_THRESHOLD_", 2 * _MMAP_THRESHOLD_DEFAULT),
    )


_raised = 0  # how many large_blocks() of this process hold the raised threshold now
_lock = threading.Lock()  # a worker's threads each run a split


def raised() -> bool:
    """True inside a :func:`large_blocks` that raised the threshold (a Dask worker on glibc)."""
    return _raised > 0


@contextlib.contextmanager
def large_blocks():
    """Blocks up to 32 MiB come from the heap inside the block; the process's threshold (and a
    trimmed heap) after it. A no-op off glibc or where glibc's sliding threshold is on. Nested
    or concurrent blocks (a worker's threads) keep the threshold raised until the last ends."""
    global _raised
    pinned = _pinned()
    libc = _libc() if pinned is not None else None
    ok = False
    if libc is not None:
        with _lock:
            ok = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX))
            if ok:
                libc.mallopt(_M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD_MAX)  # what the sliding threshold sets
                _raised += 1
    if not ok:
        yield
        return
    try:
        yield
    finally:
        with _lock:
            _raised -= 1
            if not _raised:
                libc.mallopt(_M_MMAP_THRESHOLD, pinned[0])
                libc.mallopt(_M_TRIM_THRESHOLD, pinned[1])
                libc.malloc_trim(0)
