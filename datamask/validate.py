"""Checks on the arrays handed to the optimiser: each failure is one ValueError naming
the argument, the offending value and the fix."""
from __future__ import annotations

import numpy as np

from .backend import get_namespace, to_numpy

__all__ = ["check_inputs", "check_mask", "NORM_TOLERANCE"]

# Rows whose norm is this far from 1 are renormalised; zero rows are rejected.
NORM_TOLERANCE = 1e-3


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
    bad = ~xp.isfinite(embeddings).all(axis=1)
    if bool(bad.any()):
        i = int(to_numpy(xp.nonzero(bad)[0][0]))
        raise ValueError(f"embeddings contain NaN or inf (first at row {i}); drop or re-embed those rows")
    badq = ~xp.isfinite(quality)
    if bool(badq.any()):
        i = int(to_numpy(xp.nonzero(badq)[0][0]))
        raise ValueError(f"quality contains NaN or inf (first at row {i}); fill or drop those rows")
    norms = xp.sqrt((embeddings.astype(xp.float32) ** 2).sum(axis=1))
    zero = norms < 1e-8
    if bool(zero.any()):
        i = int(to_numpy(xp.nonzero(zero)[0][0]))
        raise ValueError(
            f"embeddings has a zero-norm row (row {i}); such a row has no direction: drop it or re-embed it"
        )
    return norms


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
