"""Top-k quality: the ``S`` rows of highest quality (FineWeb-Edu / DCLM style filtering)."""

from __future__ import annotations

import numpy as np

from ..core.backend import to_numpy
from ..core.budget import check_rows
from .registry import register

__all__ = ["topk", "select_topk"]


def topk(quality, S: int):
    """Bool mask of the ``S`` rows of highest quality (ties: lower row index first)."""
    q = to_numpy(quality).astype(np.float64)
    n = q.shape[0]
    check_rows(S, n)
    return _top_rows(q, int(S))


def _top_rows(q, S: int):
    """The first ``S`` rows of a stable descending sort of ``q`` (float64, no NaN), by a
    partition: every row above the S-th largest value, then its ties by row index."""
    n = q.shape[0]
    mask = np.zeros(n, dtype=bool)
    if S >= n:
        mask[:] = True
        return mask
    cut = np.partition(q, n - S)[n - S]  # the S-th largest value
    mask[q > cut] = True
    ties = np.flatnonzero(q == cut)
    mask[ties[: S - int(mask.sum())]] = True
    return mask


@register("topk")
def select_topk(E, q, cfg, seed, budget):
    """The best rows while the budget takes them (ties: lower row index first)."""
    q = to_numpy(q).astype(np.float64)
    if budget.split_tokens is None:  # a row budget: a partition, not a sort
        return _top_rows(q, budget.rows)
    return budget.take(np.argsort(-q, kind="stable"))
