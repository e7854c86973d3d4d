"""Fused cupy kernels for the ``pg`` step (GPU only; never run by the CPU suite).

``sort_keys`` turns counters into the flat sort's (mask, key, row) words in one kernel:
Philox4x64-10 of the counter, the 23-bit uniform, ``log``, the key and the packing, the
same arithmetic as :func:`datamask.core.policy._sample_sort` does with ``xp`` operations (about
twenty kernel launches and their temporaries there). The two agree up to the last bit of
float32 ``log`` (``tests/core/test_policy.py::test_fused_keys_match_the_array_path``, marked
``gpu``). When the kernel cannot be built the caller falls back to the array path and says
so once.
"""

from __future__ import annotations

import functools

from .cuda_graph import warn_once

__all__ = ["sort_keys", "fused_sort_keys"]

_BROKEN: list = []

_SOURCE = r"""
const unsigned long long wid = (unsigned long long)i;
unsigned long long c0 = (wid >> 3) + 1ULL, c1 = t[0], c2 = PURPOSE, c3 = 0ULL;
unsigned long long k0 = key0, k1 = key1;
for (int r = 0; r < 10; ++r) {
    if (r) { k0 += 0x9E3779B97F4A7C15ULL; k1 += 0xBB67AE8584CAA73BULL; }
    const unsigned long long hi0 = __umul64hi(0xD2E7470EE14C6C93ULL, c0);
    const unsigned long long lo0 = 0xD2E7470EE14C6C93ULL * c0;
    const unsigned long long hi1 = __umul64hi(0xCA5A826395121157ULL, c2);
    const unsigned long long lo1 = 0xCA5A826395121157ULL * c2;
    const unsigned long long n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
}
const int lane = (int)((wid & 7ULL) >> 1);
const unsigned long long out = lane == 0 ? c0 : lane == 1 ? c1 : lane == 2 ? c2 : c3;
const unsigned int word = (wid & 1ULL) ? (unsigned int)(out >> 32) : (unsigned int)(out & 0xFFFFFFFFULL);
const float u = __uint_as_float((word >> 9) | 0x3F800000u) - 0.99999994039535522f;
const long long g = i / n, row = i % n;
float lu = logf(u);
float key = logk ? (logf(-lu) + w[row]) : (lu * w[row]);
unsigned long long kbits = (unsigned long long)__float_as_uint(key);
if (kb < 31) kbits >>= (31 - kb);
comp = ((unsigned long long)g << (kb + rb)) | (kbits << rb) | (unsigned long long)row;
"""


@functools.lru_cache(maxsize=4)
def _kernel(purpose: int):
    import cupy

    return cupy.ElementwiseKernel(
        "raw float32 w, raw uint64 t, uint64 key0, uint64 key1, int64 n, int32 kb, int32 rb, int32 logk",
        "uint64 comp",
        _SOURCE.replace("PURPOSE", f"{int(purpose)}ULL"),
        "datamask_sort_keys",
    )


def sort_keys(w, step, key, G, n, kb, rb, log_keys, purpose):
    """(G, n) uint64 flat-sort words for key weights ``w`` (float32, n) at device ``step``."""
    import cupy
    import numpy as np

    out = cupy.empty((G, n), dtype=cupy.uint64)
    t = step if isinstance(step, cupy.ndarray) else cupy.asarray(step, dtype=cupy.uint64)
    _kernel(purpose)(
        w,
        t.astype(cupy.uint64, copy=False).reshape(1),
        np.uint64(key[0]),
        np.uint64(key[1]),
        np.int64(n),
        np.int32(kb),
        np.int32(rb),
        np.int32(bool(log_keys)),
        out,
    )
    return out


def fused_sort_keys(xp, w, step, key, G, n, kb, rb, log_keys, purpose):
    """:func:`sort_keys` on cupy; None on other array modules or when the kernel failed."""
    if _BROKEN or getattr(xp, "__name__", "") != "cupy" or not hasattr(xp, "ElementwiseKernel"):
        return None
    try:
        return sort_keys(w, step, key, G, n, kb, rb, log_keys, purpose)
    except Exception as exc:  # noqa: BLE001 - no kernel: the array path does the same
        _BROKEN.append(exc)
        warn_once(
            "sort_keys", f"datamask: the fused key kernel failed ({type(exc).__name__}: {exc}); using array operations"
        )
        return None
