"""Token budgets: keep rows whose token counts sum to at most ``T`` (docs/tokens.md).

Every solver keeps its objective f(U) and replaces "|U| = S" by "sum of t_i over U <= T".
This module holds the pieces they share, all on numpy or cupy (``xp``):

* :func:`check_lengths`: token counts are finite non-negative integers;
* :func:`fill`: rows in a priority order, each taken when it still fits (a row that does not
  fit is skipped, the scan goes on), so the remainder ``T - sum`` is smaller than every row
  left out: the budget is filled to within one document and never exceeded;
* :func:`prefix_lengths`: for a group of Plackett-Luce draws, how many leading rows fit;
* :func:`max_rows`: the most rows any selection within ``T`` tokens can hold;
* :func:`knapsack_vertex`: the linear step of Frank-Wolfe over
  ``{x in [0, 1]^n : sum t_i x_i = T}`` (a fractional knapsack);
* :func:`disf_prefix`: DiSF of masks of different sizes (the other metrics reuse their
  fixed-size kernels, see :class:`datamask.core.pg.Step`).
"""

from __future__ import annotations

import numpy as np

from .backend import get_namespace, to_numpy
from .budget import check_tokens_left

__all__ = [
    "check_lengths",
    "candidate_tokens",
    "fill",
    "prefix_lengths",
    "max_rows",
    "knapsack_vertex",
    "disf_prefix",
    "masked_mean",
]


def check_lengths(lengths, n: int, xp):
    """``lengths`` as a float64 array of ``n`` finite, non-negative integer token counts."""
    if lengths is None:
        raise ValueError("token_budget= needs the rows' token counts: fit(embeddings, quality, lengths=...)")
    t = xp.asarray(lengths)
    if getattr(t, "ndim", None) != 1 or t.shape[0] != n:
        raise ValueError(f"lengths must be a 1-D array of {n} token counts, got shape {getattr(t, 'shape', None)}")
    t = t.astype(xp.float64)
    bad = ~xp.isfinite(t) | (t < 0) | (t != xp.floor(t))
    if bool(bad.any()):
        i = int(to_numpy(xp.nonzero(bad)[0][0]))
        raise ValueError(f"lengths[{i}] = {float(t[i])!r} is not a non-negative integer token count")
    return t


def candidate_tokens(t, cand, qc, T, prune):
    """Token counts of the candidates and the rows the quality order keeps within ``T``
    (the expected size that scales greedy's gains and the relaxed objective)."""
    xp = get_namespace(t)
    tc = t[cand]
    check_tokens_left(T, int(tc.sum()), prune=prune, n_rows=int(t.shape[0]), total=int(t.sum()))
    return tc, int(fill(xp.argsort(-qc), tc, T).shape[0])


def fill(order, lengths, T):
    """The rows of ``order`` taken in that order while they fit ``T`` tokens, skipping a row
    that does not fit and going on. Returns the taken rows, in ``order``'s order.

    Each round takes the longest prefix of the rows still able to fit, then drops every
    row longer than what is left: the same rows a row-by-row scan takes, in a few
    vectorised rounds.
    """
    xp = get_namespace(order)
    tt = lengths[order]
    take = xp.zeros(order.shape[0], dtype=bool)
    left = float(T)
    while True:
        idx = xp.nonzero(~take & (tt <= left))[0]
        if idx.shape[0] == 0:
            break
        c = xp.cumsum(tt[idx])
        k = int(xp.searchsorted(c, left, side="right"))
        take[idx[:k]] = True
        left -= float(c[k - 1])
    return order[take]


def prefix_lengths(tokens_in_order, T):
    """(G,) int: rows at the head of each draw (G, M) whose token counts sum to at most ``T``
    (``T`` a float or a 0-d device array; nothing is read back)."""
    xp = get_namespace(tokens_in_order)
    c = xp.cumsum(tokens_in_order, axis=1)
    return (c <= T).sum(axis=1)


def max_rows(lengths, T) -> int:
    """The most rows that fit ``T`` tokens: the shortest rows first."""
    xp = get_namespace(lengths)
    c = xp.cumsum(xp.sort(lengths))
    return int(xp.searchsorted(c, float(T), side="right"))


def knapsack_vertex(g, lengths, T):
    """``argmax g.x`` over ``{x in [0, 1]^n : sum t_i x_i = min(T, sum t)}``.

    The fractional knapsack: rows by ``g_i / t_i`` (best first), each taken whole while it
    fits and the next one in part; rows of zero tokens are free and taken when ``g_i > 0``.
    Returns ``x`` (float64; at most one entry strictly between 0 and 1).
    """
    xp = get_namespace(g)
    n = g.shape[0]
    x = xp.zeros(n, dtype=xp.float64)
    free = lengths <= 0
    x[free & (g > 0)] = 1.0
    paid = xp.nonzero(~free)[0]
    if paid.shape[0] == 0:
        return x
    tp = lengths[paid]
    order = paid[xp.argsort(-(g[paid] / tp), kind="stable") if xp is np else xp.argsort(-(g[paid] / tp))]
    c = xp.cumsum(lengths[order])
    k = int(xp.searchsorted(c, float(T), side="right"))
    x[order[:k]] = 1.0
    if k < order.shape[0]:
        rest = float(T) - (float(c[k - 1]) if k else 0.0)
        x[order[k]] = max(0.0, rest / float(lengths[order[k]]))
    return x


def masked_mean(values, K):
    """Mean over the first ``K[g]`` entries of each row of ``values`` (G, M); 0 where K is 0."""
    xp = get_namespace(values)
    valid = xp.arange(values.shape[1])[None, :] < K[:, None]
    return xp.where(valid, values, 0.0).sum(axis=1) / xp.maximum(K, 1)


def disf_prefix(E, idx, K, block_elements=1 << 24):
    """DiSF of the first ``K[g]`` rows of each row of ``idx`` (G, M) into ``E`` (n, d).

    As :func:`datamask.core.metrics.disf_groups`, with the mean, the standard deviation
    and the normalisation taken over each mask's own rows (the others weigh 0).
    """
    xp = get_namespace(E)
    G, M = idx.shape
    d = E.shape[1]
    out = xp.empty(G, dtype=xp.float64)
    per = max(1, block_elements // max(1, M * d))
    pos = xp.arange(M)[None, :, None]
    for g0 in range(0, G, per):
        k = K[g0 : g0 + per].astype(xp.float32)
        kk = xp.maximum(k, 1.0)[:, None, None]
        w = (pos < K[g0 : g0 + per, None, None]).astype(xp.float32)
        blk = E[idx[g0 : g0 + per]].astype(xp.float32) * w
        blk -= blk.sum(axis=1, keepdims=True) / kk
        blk *= w
        sd = xp.sqrt((blk * blk).sum(axis=1, keepdims=True) / kk)
        live = sd > 1e-6
        blk *= xp.where(live, 1.0 / xp.where(live, sd, 1.0), 0.0).astype(xp.float32)
        if M < d:
            Gm = blk @ blk.transpose(0, 2, 1)
            fro2 = (Gm.astype(xp.float64) ** 2).sum(axis=(1, 2))
        else:
            C = blk.transpose(0, 2, 1) @ blk
            fro2 = (C.astype(xp.float64) ** 2).sum(axis=(1, 2))
        fro2 /= xp.maximum(k.astype(xp.float64), 1.0) ** 2
        diag2 = live.sum(axis=(1, 2))
        out[g0 : g0 + per] = -(fro2 - diag2) / (d * (d - 1.0))
    return out
