"""Facility location for a group of masks, fast enough to run every step.

For reference row x and mask U the value is ``max_{u in U} cos(e_x, e_u)``. Scanning x's
candidates from most to least similar, the first one that belongs to U is that maximum. So
each reference row keeps its ``n_neighbors`` most similar candidates, and a group of masks
is scored by looking for the first member among them. Pairs (mask, reference row) with no
member in the list are scored exactly with one product, so the value is exact, not an
approximation.

That exact pass depends on which pairs missed, a value read back to the host. So on a GPU
(any array module but numpy), when the candidate-by-reference similarity matrix fits in
``DENSE_MAX_BYTES``, the scorer keeps that whole matrix instead and takes, for each mask,
the maximum over its rows: exact, with no value read back (a step can be captured as a
CUDA graph), at G * S * r gathers per step.

On numpy the scorer reads the candidates from the split's own array (no copy of them,
:class:`~datamask.core.facility_lists.HostRows`); the first gains (:attr:`FacilityGroups.cover`)
come from one product with the reference rows' sum, and its one pass over the similarities
(:func:`~datamask.core.facility_lists.threshold_lists`, on first use: stochastic greedy runs it
after its first picks, with their stage bounds) keeps each reference row's *threshold list*,
every candidate above a threshold that about ``list_entries(n)`` / r of them pass, from which
stochastic greedy's gains are exact (:mod:`datamask.core.facility_kernels`). pg's sorted
neighbour lists are taken from them only if a step asks (a start returned as it is never does).
"""

from __future__ import annotations

import numpy as np

from . import facility_lists
from .backend import get_namespace
from .facility_lists import HostRows, as_host_rows, first_gains, sorted_lists, threshold_lists
from .metrics import BLOCK_ELEMENTS as _BLOCK_ELEMENTS

__all__ = ["FacilityGroups", "DENSE_MAX_BYTES", "top_neighbors"]

# Largest candidate-by-reference float32 similarity matrix kept for the dense method.
DENSE_MAX_BYTES = 1 << 32
# top_neighbors' threshold: the (OVERSAMPLE * T / stride)-th largest of every stride-th column,
# so about OVERSAMPLE * T entries of a row pass it (a row with fewer than T is redone exactly).
OVERSAMPLE = 2


def top_neighbors(C, T, xp):
    """``(idx, sim)``, each (b, T): the T largest entries of each row of ``C`` (b, n), largest
    first (ties by column), exactly.

    On numpy a threshold from a strided sample of the columns keeps about twice T entries
    of a row, which are then sorted: one comparison pass over ``C`` instead of an int64
    argpartition of all of it (its index array is 2x ``C``; on the suite's 50k-row facility
    fits the build was most of the fit). Rows where fewer than T entries pass are selected
    by argpartition, so the lists are those of a full selection whatever the column order.
    """
    b, n = C.shape
    if xp is not np or n <= 8 * T:
        top = xp.argpartition(-C, T - 1, axis=1)[:, :T] if T < n else xp.broadcast_to(xp.arange(n), C.shape)
        v = xp.take_along_axis(C, top, axis=1)
        o = xp.argsort(-v, axis=1, kind="stable")
        return xp.take_along_axis(top, o, axis=1), xp.take_along_axis(v, o, axis=1)
    stride = n // (4 * T)
    sub = C[:, ::stride]
    k = min(sub.shape[1], -(-OVERSAMPLE * T // stride))
    thr = np.partition(sub, sub.shape[1] - k, axis=1)[:, sub.shape[1] - k]
    keep = C >= thr[:, None]
    short = np.flatnonzero(keep.sum(axis=1) < T)
    if short.shape[0] == b:
        return top_neighbors_exact(C, T)
    keep[short] = False
    rr, cc = np.nonzero(keep)  # row-major: by row, then column
    counts = np.bincount(rr, minlength=b)
    pos = np.arange(rr.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    D = np.full((b, int(counts.max())), -np.inf, dtype=C.dtype)  # each row's kept entries, padded
    D[rr, pos] = C[rr, cc]
    J = np.zeros(D.shape, dtype=np.int64)
    J[rr, pos] = cc
    o = np.argsort(-D, axis=1, kind="stable")[:, :T]  # largest first; ties keep column order
    idx, sim = np.take_along_axis(J, o, axis=1), np.take_along_axis(D, o, axis=1)
    if short.shape[0]:
        idx[short], sim[short] = top_neighbors_exact(C[short], T)
    return idx, sim


def top_neighbors_exact(C, T):
    """:func:`top_neighbors` by an argpartition of every row (numpy)."""
    top = np.sort(np.argpartition(-C, T - 1, axis=1)[:, :T], axis=1)
    v = np.take_along_axis(C, top, axis=1)
    o = np.argsort(-v, axis=1, kind="stable")
    return np.take_along_axis(top, o, axis=1), np.take_along_axis(v, o, axis=1)


class FacilityGroups:
    """Per-step facility-location scorer for candidates ``E`` (n, d), references ``R`` (r, d).

    ``method``: ``"neighbors"`` (the default on numpy), ``"dense"`` (the default elsewhere
    when the (n, r) matrix fits ``DENSE_MAX_BYTES``), or None for that default.
    ``cover`` (n,) float64: each candidate's ``sum_x (cos(e_x, e_i) + 1)`` over the reference
    rows, its facility gain over the empty selection (greedy starts from it; on numpy one
    product with the reference rows' sum, elsewhere the pass over the similarities). On numpy
    with ``"neighbors"``, ``lists`` holds the :class:`ThresholdLists` of the pass (stochastic
    greedy's gains), run on first use or by :meth:`build_lists`.
    """

    def __init__(self, E, R, n_neighbors=128, method=None):
        xp = np if isinstance(E, HostRows) else get_namespace(E)
        self.xp = xp
        n, r = E.shape[0], R.shape[0]
        if method is None:
            method = "dense" if xp is not np and 4 * n * r <= DENSE_MAX_BYTES else "neighbors"
        self.method = method
        self.E = as_host_rows(E) if xp is np and method == "neighbors" else E
        self.R = R
        self.C = self._threshold = None  # (n, r) float32 similarities (dense); threshold lists (numpy)
        self._T, self._nbr, self._sim = min(int(n_neighbors), n), None, None
        if method == "dense":
            self.C = (self.rows() @ R.T).astype(xp.float32)  # (n, r)
            self.cover = self.C.sum(axis=1, dtype=xp.float64) + float(r)
            return
        if xp is np:  # the lists' pass waits for its first use (build_lists: stochastic greedy's stage)
            self._list_T = max(self._T, facility_lists.list_entries(n) // max(1, r))
            self.cover = first_gains(self.E, R)
            return
        self.cover = xp.full(n, 0.0, dtype=xp.float64)
        self._lists(lambda r0, r1: R[r0:r1] @ E.T, count=True)

    @property
    def lists(self):
        """The :class:`~datamask.core.facility_lists.ThresholdLists` (numpy, ``"neighbors"``;
        else None), from their pass on first use."""
        if self.pending:
            self.build_lists()
        return self._threshold

    @property
    def pending(self) -> bool:
        """True while the threshold lists' pass has not run (numpy, ``"neighbors"``)."""
        return self._threshold is None and self.xp is np and self.method == "neighbors"

    def build_lists(self, stage=None):
        """Run the threshold lists' pass (once); with ``stage`` (r,) float32, each reference
        row's best cosine to some picks, it also bounds every candidate's gain over them
        (:func:`~datamask.core.facility_lists.threshold_lists`): returns that bound (n,), or None."""
        if not self.pending:
            raise RuntimeError("the threshold lists are built already")
        self._threshold = threshold_lists(self.E, self.R, self._list_T, cover=self.cover, stage=stage)
        return self._threshold.bound

    def rows(self, idx=None):
        """(k, d) float32: the candidate rows ``idx`` (None: all)."""
        if isinstance(self.E, HostRows):
            return self.E.take(idx)
        return self.E if idx is None else self.E[idx]

    def _lists(self, block, count=False, rows=None):
        """The neighbour lists of reference ``rows`` (None: all) from ``block(r0, r1)``, the
        (b, n) similarities of the ``r0:r1`` of them (and, with ``count``, the cover from the
        same pass)."""
        xp, n, T = self.xp, self.E.shape[0], self._T
        r = self.R.shape[0] if rows is None else rows.shape[0]
        if self._nbr is None:
            self._nbr = xp.empty((self.R.shape[0], T), dtype=xp.int64)
            self._sim = xp.empty((self.R.shape[0], T), dtype=xp.float32)
        per = max(1, _BLOCK_ELEMENTS // max(1, n))
        for r0 in range(0, r, per):
            C = block(r0, r0 + per)  # (b, n)
            if count:
                self.cover += C.sum(axis=0, dtype=xp.float64) + float(C.shape[0])
            at = slice(r0, r0 + per) if rows is None else rows[r0 : r0 + per]
            self._nbr[at], self._sim[at] = top_neighbors(C, T, xp)

    def _by_reference(self, refs):
        """(len(refs), n) float32: the cosines of reference rows ``refs`` to every candidate,
        from blocks of candidates."""
        out = np.empty((refs.shape[0], self.E.shape[0]), dtype=np.float32)
        for i0, i1, blk in self.E.blocks():
            out[:, i0:i1] = (blk @ self.R[refs].T).T
        return out

    def _kept_lists(self):
        """The neighbour lists; on numpy taken from the threshold lists on first use."""
        if self._nbr is None:
            self._nbr, self._sim, short = sorted_lists(self.lists, self._T)
            if short.shape[0]:  # rows listing fewer than T candidates: a product of their own
                self._lists(lambda r0, r1: self._by_reference(short[r0:r1]), rows=short)
        return self._nbr, self._sim

    @property
    def nbr(self):
        """(r, T) int64: each reference row's ``T`` most similar candidates, most similar first."""
        return self._kept_lists()[0]

    @property
    def sim(self):
        """(r, T) float32: their cosines (``nbr``'s order)."""
        return self._kept_lists()[1]

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
                exact = (self.rows(orders[j]) @ self.R[ref[xs]].T).max(axis=0)
                vals[j, xs] = exact.astype(xp.float64)
        return vals.mean(axis=1)
