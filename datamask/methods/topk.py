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
    mask = np.zeros(n, dtype=bool)
    mask[np.argsort(-q, kind="stable")[:S]] = True
    return mask


@register("topk")
def select_topk(E, q, cfg, seed, budget):
    """The best rows while the budget takes them (ties: lower row index first)."""
    return budget.take(np.argsort(-to_numpy(q).astype(np.float64), kind="stable"))
