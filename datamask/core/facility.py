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

On numpy the scorer's one pass over the similarities (:func:`threshold_lists`: blocks of
candidate rows against every reference row, so each candidate row is read once) keeps the
first gains (:attr:`FacilityGroups.cover`) and each reference row's *threshold list*, every
candidate above a threshold that about :data:`LIST_ENTRIES` / r of them pass, from which
stochastic greedy's gains are exact (:mod:`datamask.core.facility_kernels`). pg's sorted
neighbour lists are taken from them only if a step asks (a start returned as it is never
does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .backend import get_namespace
from .metrics import BLOCK_ELEMENTS as _BLOCK_ELEMENTS

__all__ = ["FacilityGroups", "DENSE_MAX_BYTES", "LIST_ENTRIES", "ThresholdLists", "threshold_lists", "top_neighbors"]

# Largest candidate-by-reference float32 similarity matrix kept for the dense method.
DENSE_MAX_BYTES = 1 << 32
# Entries of the threshold lists, about (8 bytes each: 64 MiB): each reference row lists
# about LIST_ENTRIES / r candidates (4,096 of them against the default 2,048 reference rows).
LIST_ENTRIES = 1 << 23
# Candidate rows sampled to set each reference row's threshold (all of them below this).
THRESHOLD_SAMPLE = 16384
# Candidate rows per block of the threshold lists' pass (an 8 MiB block against 1,024 reference rows).
CANDIDATE_BLOCK = 2048
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


@dataclass
class ThresholdLists:
    """Each reference row x's candidates i with ``C[i, x] >= theta[x]``, stored by candidate:
    candidate i's entries are ``ref[start[i]:start[i + 1]]`` (reference rows, int32) and
    ``sim`` (their cosines, float32); ``cover`` (n,) float64 is each candidate's
    ``sum_x (C[i, x] + 1)``, its gain over the empty selection."""

    start: np.ndarray
    ref: np.ndarray
    sim: np.ndarray
    theta: np.ndarray
    cover: np.ndarray


def list_thresholds(E, R, T):
    """(r,) float32: for each reference row, the ``ceil(T m / n)``-th largest cosine to a
    fixed random sample of m = :data:`THRESHOLD_SAMPLE` candidates (all of them when fewer:
    the T-th largest), so about T candidates reach it; -inf when ``T >= n`` (every one)."""
    n, r = E.shape[0], R.shape[0]
    if T >= n:
        return np.full(r, -np.inf, dtype=np.float32)
    m = min(n, THRESHOLD_SAMPLE)
    rows = np.sort(np.random.default_rng(0).choice(n, m, replace=False)) if m < n else slice(None)
    Es, kth = E[rows], m - max(1, math.ceil(T * m / n))
    theta = np.empty(r, dtype=np.float32)
    per = max(1, _BLOCK_ELEMENTS // m)
    for r0 in range(0, r, per):
        theta[r0 : r0 + per] = np.partition(R[r0 : r0 + per] @ Es.T, kth, axis=1)[:, kth]
    return theta


def threshold_lists(E, R, T):
    """:class:`ThresholdLists` of candidates ``E`` (n, d) against reference rows ``R``
    (r, d), numpy, about ``T`` entries a reference row, from one pass over blocks of
    :data:`CANDIDATE_BLOCK` candidate rows (each row of ``E`` read once)."""
    from .facility_kernels import scan_block

    n, r = E.shape[0], R.shape[0]
    theta = list_thresholds(E, R, T)
    cover = np.empty(n, dtype=np.float64)
    start = np.zeros(n + 1, dtype=np.int64)
    cap = max(1024, int(1.25 * min(n, T) * r) + 1024)
    ref, sim = np.empty(cap, dtype=np.int32), np.empty(cap, dtype=np.float32)
    Rt, pos = np.ascontiguousarray(R.T), 0
    total = R.sum(axis=0, dtype=np.float64)  # sum_x (C[i, x] + 1) = e_i . sum_x r_x + r
    buf = np.empty((min(n, CANDIDATE_BLOCK), r), dtype=np.float32)
    for i0 in range(0, n, CANDIDATE_BLOCK):
        i1 = min(n, i0 + CANDIDATE_BLOCK)
        C = np.matmul(E[i0:i1], Rt, out=buf[: i1 - i0])
        cover[i0:i1] = E[i0:i1].astype(np.float64) @ total + float(r)
        while (end := scan_block(C, theta, ref, sim, start[i0 + 1 : i1 + 1], pos)) < 0:
            ref, sim = np.resize(ref, 2 * ref.shape[0]), np.resize(sim, 2 * sim.shape[0])  # rare: rescan
        pos = end
    return ThresholdLists(start, ref[:pos], sim[:pos], theta, cover)  # views: no second copy


def sorted_lists(lists, T):
    """``(nbr, sim, short)``: each reference row's ``T`` most similar candidates, most similar
    first (ties by candidate), and their cosines, from :class:`ThresholdLists`; ``short``: the
    reference rows that list fewer than T (their rows of ``nbr`` and ``sim`` left unset).
    A row listing at least T holds its T largest: all of them reach its threshold."""
    r, n = lists.theta.shape[0], lists.start.shape[0] - 1
    cand = np.repeat(np.arange(n), np.diff(lists.start))
    o = np.lexsort((cand, -lists.sim, lists.ref))  # by reference row, then cosine down, then candidate
    counts = np.bincount(lists.ref, minlength=r)
    first = np.cumsum(counts) - counts
    ok = counts >= T
    nbr = np.empty((r, T), dtype=np.int64)
    sim = np.empty((r, T), dtype=np.float32)
    at = o[first[ok][:, None] + np.arange(T)]
    nbr[ok], sim[ok] = cand[at], lists.sim[at]
    return nbr, sim, np.flatnonzero(~ok)


class FacilityGroups:
    """Per-step facility-location scorer for candidates ``E`` (n, d), references ``R`` (r, d).

    ``method``: ``"neighbors"`` (the default on numpy), ``"dense"`` (the default elsewhere
    when the (n, r) matrix fits ``DENSE_MAX_BYTES``), or None for that default.
    ``cover`` (n,) float64: each candidate's ``sum_x (cos(e_x, e_i) + 1)`` over the reference
    rows, its facility gain over the empty selection, from the same pass over the
    similarities (greedy starts from it). On numpy with ``"neighbors"``, ``lists`` holds the
    :class:`ThresholdLists` of that pass (stochastic greedy's gains).
    """

    def __init__(self, E, R, n_neighbors=128, method=None):
        xp = get_namespace(E)
        self.xp = xp
        self.E, self.R = E, R
        n, r = E.shape[0], R.shape[0]
        if method is None:
            method = "dense" if xp is not np and 4 * n * r <= DENSE_MAX_BYTES else "neighbors"
        self.method = method
        self.C = self.lists = None  # (n, r) float32 similarities (dense); threshold lists (numpy)
        self._T, self._nbr, self._sim = min(int(n_neighbors), n), None, None
        if method == "dense":
            self.C = (E @ R.T).astype(xp.float32)  # (n, r)
            self.cover = self.C.sum(axis=1, dtype=xp.float64) + float(r)
            return
        if xp is np:
            self.lists = threshold_lists(E, R, max(self._T, LIST_ENTRIES // max(1, r)))
            self.cover = self.lists.cover
            return
        self.cover = xp.full(n, 0.0, dtype=xp.float64)
        self._lists(lambda r0, r1: R[r0:r1] @ E.T, count=True)

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

    def _kept_lists(self):
        """The neighbour lists; on numpy taken from the threshold lists on first use."""
        if self._nbr is None:
            self._nbr, self._sim, short = sorted_lists(self.lists, self._T)
            if short.shape[0]:  # rows listing fewer than T candidates: a product of their own
                self._lists(lambda r0, r1: self.R[short[r0:r1]] @ self.E.T, rows=short)
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
                exact = (self.E[orders[j]] @ self.R[ref[xs]].T).max(axis=0)
                vals[j, xs] = exact.astype(xp.float64)
        return vals.mean(axis=1)
