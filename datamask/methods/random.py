"""Random: ``S`` rows uniformly at random, without replacement (seeded)."""

from __future__ import annotations

import time

import numpy as np

from .registry import check_budget, fill_tokens, method_budget, register, selection_of

__all__ = ["random_subset", "select_random"]


def random_subset(n: int, S: int, seed=0):
    """Bool mask of ``S`` of ``n`` rows drawn uniformly without replacement."""
    check_budget(S, n)
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).choice(n, size=S, replace=False)] = True
    return mask


@register("random")
def select_random(E, q, cfg, seed, callback=None, lengths=None, tokens=None):
    t0 = time.perf_counter()
    if tokens is not None:  # rows in a random order while they fit
        order = np.random.default_rng(seed % 2**63).permutation(E.shape[0])
        return selection_of(fill_tokens(order, lengths, tokens), E, q, cfg, seed, t0)
    return selection_of(random_subset(E.shape[0], method_budget(E, cfg), seed % 2**63), E, q, cfg, seed, t0)
