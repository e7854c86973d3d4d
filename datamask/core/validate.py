"""Checks on the arrays handed to the optimiser: each failure is one ValueError naming
the argument, the offending value and the fix."""

from __future__ import annotations

import numpy as np

from .backend import get_namespace, to_numpy
from .halfcast import rows_into

__all__ = ["check_inputs", "check_mask", "unit_rows", "needs_rescale", "NORM_TOLERANCE", "BLOCK_ROWS"]

# Rows whose norm is this far from 1 are renormalised; zero rows are rejected.
NORM_TOLERANCE = 1e-3
# Rows per block when a whole-partition pass would otherwise copy the embeddings.
BLOCK_ROWS = 65_536


def check_inputs(embeddings, quality):
    """Validate shapes and values of ``embeddings`` (N, d) and ``quality`` (N,)."""
    xp = get_namespace(embeddings)
    if getattr(embeddings, "ndim", None) != 2:
        raise ValueError(
            f"embeddings must be a 2-D array (N, d), got shape {getattr(embeddings, 'shape', None)}; "
            "reshape a single vector with .reshape(1, -1)"
        )
    if getattr(quality, "ndim", None) != 1:
        raise ValueError(f"quality must be a 1-D array (N,), got shape {getattr(quality, 'shape', None)}")
    n, d = embeddings.shape
    if quality.shape[0] != n:
        raise ValueError(
            f"embeddings and quality lengths differ: embeddings has {n} rows, quality has {quality.shape[0]}"
        )
    if n == 0:
        raise ValueError("embeddings is empty (0 rows): nothing to select from")
    if d < 2:
        raise ValueError(f"embeddings must have at least 2 dimensions, got d={d}")
    if not np.issubdtype(embeddings.dtype, np.floating):
        raise ValueError(f"embeddings must be floating point, got dtype {embeddings.dtype}")
    badq = ~xp.isfinite(quality)
    if bool(badq.any()):
        i = int(to_numpy(xp.nonzero(badq)[0][0]))
        raise ValueError(f"quality contains NaN or inf (first at row {i}); fill or drop those rows")
    # In row blocks, so the check never holds more than a block's float32 copy. NaN and
    # inf propagate into the squared norm, so one pass finds them; the rare block with a
    # non-finite norm is then searched row by row for the message.
    norms = xp.empty(n, dtype=xp.float32)
    half = xp is np and embeddings.dtype == np.float16  # the compiled cast (halfcast), a reused block
    buf = np.empty((min(n, BLOCK_ROWS), d), dtype=np.float32) if half else None
    for i0 in range(0, n, BLOCK_ROWS):
        if half:
            blk = rows_into(embeddings, None, buf[: min(BLOCK_ROWS, n - i0)], first=i0)
        else:
            blk = embeddings[i0 : i0 + BLOCK_ROWS].astype(xp.float32, copy=False)
        sq = xp.einsum("ij,ij->i", blk, blk)
        if not bool(xp.isfinite(sq).all()):
            bad = ~xp.isfinite(blk).all(axis=1)
            if not bool(bad.any()):
                i = i0 + int(to_numpy(xp.nonzero(~xp.isfinite(sq))[0][0]))
                raise ValueError(f"embeddings row {i} has a norm beyond float32 range; rescale the embeddings")
            i = i0 + int(to_numpy(xp.nonzero(bad)[0][0]))
            raise ValueError(f"embeddings contain NaN or inf (first at row {i}); drop or re-embed those rows")
        norms[i0 : i0 + BLOCK_ROWS] = xp.sqrt(sq)
    zero = norms < 1e-8
    if bool(zero.any()):
        i = int(to_numpy(xp.nonzero(zero)[0][0]))
        raise ValueError(
            f"embeddings has a zero-norm row (row {i}); such a row has no direction: drop it or re-embed it"
        )
    return norms


def unit_rows(embeddings, rows=None, norms=None):
    """``embeddings[rows]`` as float32 unit rows, built block by block.

    The input may be float16 (the storage type): only the output is a float32 copy, and
    ``norms`` (from :func:`check_inputs`; None when rows are already unit) rescales them.
    """
    xp = get_namespace(embeddings)
    n = embeddings.shape[0] if rows is None else int(rows.shape[0])
    out = xp.empty((n, embeddings.shape[1]), dtype=xp.float32)
    half = xp is np and embeddings.dtype == np.float16
    for i0 in range(0, n, BLOCK_ROWS):
        sel = slice(i0, i0 + BLOCK_ROWS) if rows is None else rows[i0 : i0 + BLOCK_ROWS]
        if half:  # numpy casts float16 an element at a time: the compiled cast, same values
            rows_into(embeddings, None if rows is None else sel, out[i0 : i0 + BLOCK_ROWS], first=i0)
        else:
            out[i0 : i0 + BLOCK_ROWS] = embeddings[sel]  # casts to float32 on assignment
        if norms is not None:
            out[i0 : i0 + BLOCK_ROWS] /= norms[sel][:, None]
    return out


def needs_rescale(norms):
    """True when some row's norm is more than ``NORM_TOLERANCE`` away from 1."""
    xp = get_namespace(norms)
    return bool((xp.abs(norms - 1.0) > NORM_TOLERANCE).any())


def check_mask(mask, n: int, xp):
    """Turn a bool mask (N,) or an index array into sorted unique row indices."""
    mask = xp.asarray(mask)
    if mask.dtype == bool:
        if mask.shape != (n,):
            raise ValueError(f"mask must have shape ({n},), got {mask.shape}")
        return xp.nonzero(mask)[0]
    if not np.issubdtype(mask.dtype, np.integer):
        raise ValueError(f"mask must be a bool mask or integer row indices, got dtype {mask.dtype}")
    rows = xp.unique(mask)
    if rows.shape[0] != mask.shape[0]:
        raise ValueError("mask indices contain duplicates")
    if rows.shape[0] and (int(rows[0]) < 0 or int(rows[-1]) >= n):
        raise ValueError(f"mask indices must lie in [0, {n})")
    return rows
