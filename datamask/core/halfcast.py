"""float16 rows to float32 on the host, compiled (numba): the split's embeddings are stored as
float16, and numpy's cast runs one element at a time (about 1.65 ns an element on the
development host, 2.2 with a gather of rows), where this loop runs 0.35 (1.0 with the gather):
:func:`rows_into` backs :func:`~datamask.core.validate.unit_rows` and the input check's norms
on numpy.

The cast is exact, bit for bit numpy's, for every float16 that is not a NaN (a NaN stays a
NaN; tests/core/test_halfcast.py checks all 65,536 patterns). Its arithmetic never meets a
float32 subnormal (a subnormal float16 is built as a normal float32 less a power of two), so
a process that flushes subnormals to zero gets the same values.

Compiled on first use in each process (cached on disk by numba afterwards).
"""

from __future__ import annotations

import functools
import sys

import numpy as np

__all__ = ["MIN_ELEMENTS", "rows_into", "load"]

#: elements from which :func:`rows_into` runs the compiled loop (below: numpy's cast until the loop
#: has run in the process; its first call costs a few hundred milliseconds to load)
MIN_ELEMENTS = 1 << 18
# the compiled cast has run in this process (its first call loads its machine code, about 0.25 s
# on the development host): from then on a small block casts with it too
_ran = False


@functools.lru_cache(maxsize=1)
def _kernel():
    from numba import njit

    @njit(cache=True)
    def cast(src, rows, first, out, bits):
        """``out[i] = float32(src[rows[i]])`` (``rows`` empty: ``src[first + i]``); ``src`` the
        float16 bits (uint16), ``bits`` ``out`` viewed as uint32."""
        c, d = out.shape
        exp_mask = np.uint32(0x7C00 << 13)  # the float16 exponent, moved to float32's place
        for i in range(c):
            r = rows[i] if rows.shape[0] else first + i
            s, b, f = src[r], bits[i], out[i]
            for k in range(d):
                u = (np.uint32(s[k]) & np.uint32(0x7FFF)) << np.uint32(13)
                e = u & exp_mask
                # normal: the exponent rebiased; inf or NaN: the top exponent; zero or
                # subnormal: 2^-14 (1 + m 2^-10), less 2^-14 below (all normal float32)
                top = np.uint32((255 - 31) << 23) if e == exp_mask else np.uint32((127 - 15) << 23)
                b[k] = u + (np.uint32((1 + 127 - 15) << 23) if e == 0 else top)
            for k in range(d):
                if (np.uint32(s[k]) & np.uint32(0x7C00)) == 0:
                    f[k] -= np.float32(2.0**-14)
            for k in range(d):
                b[k] |= (np.uint32(s[k]) & np.uint32(0x8000)) << np.uint32(16)

    return cast


def load():
    """Load numba and the compiled cast now: for a process that runs compiled loops anyway (a
    facility fit on numpy), so that its input check casts with it (at 1M rows the check took
    0.71 s with numpy's cast, 0.21 s with this one)."""
    _kernel()


def rows_into(E, rows, out, first=0):
    """``out[:] = E[rows]`` cast to float32 (``rows`` None: ``E[first : first + len(out)]``) for
    a float16 numpy ``E`` and a float32 C-ordered ``out``; exact (numpy's cast, NaN aside).
    Small blocks (under :data:`MIN_ELEMENTS`) take numpy's cast until the compiled one has run
    in the process (400 of the 1M-row facility pass's 512-row blocks: 0.15 -> 0.03 s), and so does
    a process that has not loaded numba: loading it costs about 0.4 s and 100 MiB, more than the
    cast saves a process that casts once (top-k's input check at 100k rows: select 0.3 -> 0.7 s);
    the facility fit's kernels load it before its list pass and its redundancy filter."""
    idx = np.zeros(0, dtype=np.int64) if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
    outside = idx.shape[0] and (int(idx.min()) < 0 or int(idx.max()) >= E.shape[0])
    global _ran
    small = out.size < MIN_ELEMENTS and not _ran
    if small or outside or "numba" not in sys.modules:  # numpy's cast (and its errors)
        out[...] = E[first : first + out.shape[0]] if rows is None else E[rows]
        return out
    _kernel()(E.view(np.uint16), idx, int(first), out, out.view(np.uint32))
    _ran = True
    return out
