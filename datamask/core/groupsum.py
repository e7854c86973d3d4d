"""Row sums for a group of masks: the kernel of a pairwise ``pg`` step.

For candidate rows ``E`` (n, d) and masks ``idx`` (G, S) into a batch of them, the pairwise
objective needs ``s_g = sum of E[idx[g]]`` for every mask g. Two kernels give it:

``float32``
    The dense 0/1 selection matrix M (G, n_b) times the batch's rows: one GEMM (numpy or
    cupy). Every machine.
``int8``
    On a CPU with int8 matrix instructions (AMX or AVX-512 VNNI) when torch is installed.
    The unit rows are rounded to multiples of 2^-20 and split into three int8 digit planes,
    so ``torch._int_mm`` of an int8 M with the planes gives every sum exactly, in integers.
    The rounding moves an entry by at most 2^-21 (< 5e-7), far finer than the float16
    storage the pipeline reads (about 2^-12 of each entry); a sum of k rows moves by at
    most k * 2^-21 per entry. The planes take 3 bytes per entry, not 4; the two kernels'
    step times are in the row-sum kernel table of benchmarks/results/optimizer.md.

The kernel is chosen once per process (``kernel()``); ``DATAMASK_GROUPSUM=float32``
forces the portable one. Results differ between the kernels only by that rounding.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from .backend import get_namespace
from .cpu import int8_matmul
from .metrics import group_sums, selection_matrix
from .validate import unit_rows

__all__ = ["GroupSums", "kernel", "to_planes"]

SCALE_BITS = 20
# Rows converted at a time (the float32 and int32 temporaries stay near 12 MiB at d = 384).
_BLOCK = 8192


@functools.lru_cache(maxsize=1)
def kernel() -> str:
    """``"int8"`` when this CPU and torch can run the exact int8 kernel
    (:func:`~datamask.core.cpu.int8_matmul`), else ``"float32"``."""
    if os.environ.get("DATAMASK_GROUPSUM", "").lower() == "float32":
        return "float32"
    return "int8" if int8_matmul() else "float32"


def to_planes(rows):
    """float unit rows (k, d) -> int8 (k, 3d): high, middle and low base-128 digits.

    ``round(x * 2^20) = high * 2^14 + middle * 2^7 + low`` with low, middle in [0, 127] and
    high in [-64, 64], so every digit fits int8 and the sum of their products is exact.
    """
    k, d = rows.shape
    # Scaling by a power of two is exact in float32, and |x| * 2^20 <= 2^20 fits its mantissa.
    v = np.rint(np.asarray(rows, dtype=np.float32) * np.float32(1 << SCALE_BITS)).astype(np.int32)
    out = np.empty((k, 3 * d), dtype=np.int8)
    out[:, 2 * d :] = v & 127
    v >>= 7
    out[:, d : 2 * d] = v & 127
    v >>= 7
    out[:, :d] = v
    return out


class GroupSums:
    """The candidate rows of one fit, stored for the chosen kernel.

    Parameters
    ----------
    embeddings : (N, d) array, numpy or cupy (float16 storage is fine)
    rows : (n,) int array, the candidate rows
    norms : (N,) array or None, row norms when the rows are not unit (see ``unit_rows``)
    use : {"auto", "float32", "int8"}
        ``auto`` is :func:`kernel` on numpy input and float32 on cupy.
    """

    def __init__(self, embeddings, rows, norms=None, use="auto"):
        xp = get_namespace(embeddings)
        self.xp = xp
        self.kernel = ("int8" if xp is np and kernel() == "int8" else "float32") if use == "auto" else use
        self.n, self.d = int(rows.shape[0]), int(embeddings.shape[1])
        if self.kernel == "float32":
            self.data = unit_rows(embeddings, rows, norms)
        else:
            self.data = np.empty((self.n, 3 * self.d), dtype=np.int8)
            for i0 in range(0, self.n, _BLOCK):
                sel = rows[i0 : i0 + _BLOCK]
                self.data[i0 : i0 + _BLOCK] = to_planes(unit_rows(embeddings, sel, norms))

    def take(self, batch=None):
        """The stored rows of ``batch`` (indices into the candidates; None: all)."""
        return self.data if batch is None else self.data[batch]

    def sums(self, taken, idx):
        """(G, d) float64: for each row of ``idx`` (G, S), the sum of those rows of ``taken``."""
        if self.kernel == "float32":
            return group_sums(taken, idx)
        import torch

        M = selection_matrix(idx, taken.shape[0], np.int8)
        r = torch._int_mm(torch.from_numpy(M), torch.from_numpy(taken)).numpy().astype(np.float64)
        d = self.d
        total = r[:, :d] * float(1 << 14)  # integers below 2^53: exact in float64
        total += r[:, d : 2 * d] * float(1 << 7)
        total += r[:, 2 * d :]
        total *= 2.0**-SCALE_BITS
        return total
