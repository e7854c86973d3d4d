"""What this CPU and torch can multiply natively, asked once a process: the CPU's flags
(Linux ``/proc/cpuinfo``; none elsewhere) and whether torch's ``_int_mm`` multiplies int8
exactly (int32 sums) on a CPU with int8 dot products. The pairwise pg step's int8 row sums
(:mod:`datamask.core.groupsum`) and facility location's int8 screen
(:mod:`datamask.core.facility_lists`) both ask :func:`int8_matmul`; each keeps its own
environment variable to turn it off."""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["INT8_FLAGS", "cpu_flags", "int8_matmul"]

#: flags of CPUs with int8 dot-product instructions
INT8_FLAGS = ("amx_int8", "avx512_vnni", "avx_vnni")


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset:
    """The first CPU's flags (Linux ``/proc/cpuinfo``; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[-1].split())
    except OSError:
        pass
    return frozenset()


@functools.lru_cache(maxsize=1)
def int8_matmul() -> bool:
    """True when this CPU has int8 dot products and torch's ``_int_mm`` reproduces integer sums
    exactly on odd shapes (a self-test; False without torch)."""
    if not cpu_flags().intersection(INT8_FLAGS):
        return False
    try:
        import torch

        rng = np.random.default_rng(0)
        a = rng.integers(-128, 128, size=(7, 33), dtype=np.int8)
        b = rng.integers(-128, 128, size=(33, 19), dtype=np.int8)
        got = torch._int_mm(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    except Exception:  # no torch, no _int_mm, or a kernel that refuses these shapes
        return False
    return bool(np.array_equal(got, a.astype(np.int64) @ b.astype(np.int64)))
