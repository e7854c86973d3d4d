"""Facility location for a group of masks, fast enough to run every step.

For reference row x and mask U the value is ``max_{u in U} cos(e_x, e_u)``. Scanning x's
candidates from most to least similar, the first one that belongs to U is that maximum. So
each reference row keeps its ``n_neighbors`` most similar candidates (computed once, in
blocks), and a group of masks is scored by looking for the first member among them. Pairs
(mask, reference row) with no member in the list are scored exactly with one product, so
the value is exact, not an approximation.

That exact pass depends on which pairs missed, a value read back to the host. So on a GPU
(any array module but numpy), when the candidate-by-reference similarity matrix fits in
``DENSE_MAX_BYTES``, the scorer keeps that whole matrix instead and takes, for each mask,
the maximum over its rows: exact, with no value read back (a step can be captured as a
CUDA graph), at G * S * r gathers per step.
"""

from __future__ import annotations

import numpy as np

from .backend import get_namespace
from .metrics import BLOCK_ELEMENTS as _BLOCK_ELEMENTS

__all__ = ["FacilityGroups", "DENSE_MAX_BYTES"]

# Largest candidate-by-reference float32 similarity matrix kept for the dense method.
DENSE_MAX_BYTES = 1 << 32


class FacilityGroups:
    """Per-step facility-location scorer for candidates ``E`` (n, d), references ``R`` (r, d).

    ``method``: ``"neighbors"`` (the default on numpy), ``"dense"`` (the default elsewhere
    when the (n, r) matrix fits ``DENSE_MAX_BYTES``), or None for that default.
    ``cover`` (n,) float64: each candidate's ``sum_x (cos(e_x, e_i) + 1)`` over the reference
    rows, its facility gain over the empty selection, from the same pass over the
    similarities (greedy starts from it).
    """

    def __init__(self, E, R, n_neighbors=128, method=None):
        xp = get_namespace(E)
        self.xp = xp
        self.E, self.R = E, R
        n, r = E.shape[0], R.shape[0]
        if method is None:
            method = "dense" if xp is not np and 4 * n * r <= DENSE_MAX_BYTES else "neighbors"
        self.method = method
        if method == "dense":
            self.C = (E @ R.T).astype(xp.float32)  # (n, r)
            self.cover = self.C.sum(axis=1, dtype=xp.float64) + float(r)
            return
        self.cover = xp.full(n, 0.0, dtype=xp.float64)
        T = min(int(n_neighbors), n)
        self.nbr = xp.empty((r, T), dtype=xp.int64)
        self.sim = xp.empty((r, T), dtype=xp.float32)
        per = max(1, _BLOCK_ELEMENTS // max(1, n))
        for r0 in range(0, r, per):
            C = R[r0 : r0 + per] @ E.T  # (b, n)
            self.cover += C.sum(axis=0, dtype=xp.float64) + float(C.shape[0])
            top = xp.argpartition(-C, T - 1, axis=1)[:, :T] if T < n else xp.broadcast_to(xp.arange(n), C.shape)
            v = xp.take_along_axis(C, top, axis=1)
            o = xp.argsort(-v, axis=1)
            self.nbr[r0 : r0 + per] = xp.take_along_axis(top, o, axis=1)
            self.sim[r0 : r0 + per] = xp.take_along_axis(v, o, axis=1)

    @property
    def n_reference(self):
        return self.R.shape[0]

    def values(self, orders, ref=None):
        """Facility location of each mask in ``orders`` (G, S) over reference rows ``ref``."""
        xp = self.xp
        G, S = orders.shape
        if self.method == "dense":
            C = self.C if ref is None else xp.take(self.C, ref, axis=1)  # (n, r_b)
            out = xp.empty(G, dtype=xp.float64)
            per = max(1, _BLOCK_ELEMENTS // max(1, S * C.shape[1]))
            for g0 in range(0, G, per):
                best = C[orders[g0 : g0 + per]].max(axis=1)  # (g, r_b)
                out[g0 : g0 + per] = best.astype(xp.float64).mean(axis=1)
            return out
        n = self.E.shape[0]
        ref = xp.arange(self.R.shape[0]) if ref is None else ref
        M = xp.zeros((G, n), dtype=bool)
        M[xp.arange(G)[:, None], orders] = True
        nb, sim = self.nbr[ref], self.sim[ref]  # (r_b, T)
        hits = M[:, nb]  # (G, r_b, T)
        found = hits.any(axis=2)
        first = hits.argmax(axis=2)
        vals = sim[xp.arange(ref.shape[0])[None, :], first].astype(xp.float64)  # (G, r_b)
        if not bool(found.all()):
            gj, gx = xp.nonzero(~found)
            for j in map(int, xp.unique(gj)):
                xs = gx[gj == j]
                exact = (self.E[orders[j]] @ self.R[ref[xs]].T).max(axis=0)
                vals[j, xs] = exact.astype(xp.float64)
        return vals.mean(axis=1)
