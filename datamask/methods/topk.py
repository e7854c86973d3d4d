"""Top-k quality: the ``S`` rows of highest quality (FineWeb-Edu / DCLM style filtering)."""

from __future__ import annotations

import time

import numpy as np

from ..core.backend import to_numpy
from .registry import check_budget, fill_tokens, method_budget, register, selection_of

__all__ = ["topk", "select_topk"]


def topk(quality, S: int):
    """Bool mask of the ``S`` rows of highest quality (ties: lower row index first)."""
    q = to_numpy(quality).astype(np.float64)
    n = q.shape[0]
    check_budget(S, n)
    mask = np.zeros(n, dtype=bool)
    mask[np.argsort(-q, kind="stable")[:S]] = True
    return mask


@register("topk")
def select_topk(E, q, cfg, seed, callback=None, lengths=None, tokens=None):
    t0 = time.perf_counter()
    if tokens is not None:  # the best rows while they fit
        order = np.argsort(-to_numpy(q).astype(np.float64), kind="stable")
        return selection_of(fill_tokens(order, lengths, tokens), E, q, cfg, seed, t0)
    return selection_of(topk(q, method_budget(E, cfg)), E, q, cfg, seed, t0)
