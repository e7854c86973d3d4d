"""Random: ``S`` rows uniformly at random, without replacement (seeded)."""

from __future__ import annotations

import numpy as np

from ..core.budget import check_rows
from .registry import register

__all__ = ["random_subset", "select_random"]


def random_subset(n: int, S: int, seed=0):
    """Bool mask of ``S`` of ``n`` rows drawn uniformly without replacement."""
    check_rows(S, n)
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).choice(n, size=S, replace=False)] = True
    return mask


@register("random")
def select_random(E, q, cfg, seed, budget):
    """Rows drawn uniformly (seeded) while the budget takes them."""
    if budget.split_tokens is None:
        return random_subset(E.shape[0], budget.rows, seed % 2**63)
    return budget.take(np.random.default_rng(seed % 2**63).permutation(E.shape[0]))
