"""Semantic duplicates: SemDeDup within k-means clusters, kept row by quality.

The kernel is the SemDeDup method's own
(:func:`datamask.methods.semdedup.nearest_kept`): within a cluster, visit the rows in a
given order and drop a row whose cosine to an earlier kept row exceeds ``1 - eps``. The
selection method visits rows by distance to the centroid (the SemDeDup paper's order);
deduplication visits them by quality, highest first, then by document number, so the
kept row of a group is its highest-quality member, as for the exact and fuzzy kinds.

A group is a kept row with the rows dropped because of it (each dropped row points to
its most similar earlier kept row).
"""

from __future__ import annotations

import numpy as np

from .pairs import order_quality

__all__ = ["visit_order", "semantic_duplicates"]


def visit_order(quality, doc):
    """Rank of each row when visited by quality (highest first, NaN last), then document
    number (the kept rule of every kind, :func:`~.pairs.order_quality`): the ``order_key``
    of the kernel."""
    doc = np.asarray(doc, dtype=np.int64)
    order = np.lexsort((doc, -order_quality(quality, doc.shape[0])))
    rank = np.empty(doc.shape[0], dtype=np.float64)
    rank[order] = np.arange(doc.shape[0])
    return rank


def semantic_duplicates(
    embeddings, cluster, quality, eps: float, doc=None, removed=None, n_clusters=None, seed=0, block=1024, chunk=8192
):
    """Semantic duplicate groups of one in-memory set of rows.

    Parameters
    ----------
    embeddings : (N, d) float array (numpy or cupy)
    cluster : (N,) int array, optional
        Cluster of each row; k-means with ``n_clusters`` (default
        :func:`~datamask.core.kmeans.default_n_clusters`) when None.
    quality : (N,) float array, optional
    eps : float
        A row whose cosine to a kept row of its cluster exceeds ``1 - eps`` is removed.
    doc : (N,) int64 array, optional
        Document numbers (default ``0..N-1``).
    removed : int64 array, optional
        Documents already removed by another kind: left out.
    n_clusters, seed : int
        k-means without ``cluster``.
    block, chunk : int
        Memory bounds of the kernel.

    Returns
    -------
    removed : (R,) int64 ndarray
        Document numbers removed, sorted.
    kept : (R,) int64 ndarray
        The kept document each one duplicates.
    n_groups : int
        Kept documents with at least one duplicate.
    """
    from ..core.backend import get_namespace, to_numpy
    from ..methods.semdedup import nearest_kept

    xp = get_namespace(embeddings)
    n = embeddings.shape[0]
    doc = np.arange(n, dtype=np.int64) if doc is None else np.asarray(doc, dtype=np.int64)
    live = np.ones(n, dtype=bool) if removed is None or len(removed) == 0 else ~np.isin(doc, removed)
    if not live.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    rows = np.flatnonzero(live)
    E = embeddings[xp.asarray(rows)] if not live.all() else embeddings
    if cluster is None:
        from ..core.kmeans import assign, default_n_clusters, fit_kmeans

        k = min(int(n_clusters or default_n_clusters(rows.shape[0])), rows.shape[0])
        centroids = fit_kmeans(E, k, seed=seed)
        cl = to_numpy(assign(E, centroids)[0]).astype(np.int64)
    else:
        _, cl = np.unique(np.asarray(cluster)[rows], return_inverse=True)
    q = None if quality is None else np.asarray(quality, dtype=np.float64)[rows]
    d = doc[rows]
    dup = nearest_kept(E, cl, visit_order(q, d), eps, block=block, chunk=chunk)
    gone = dup >= 0
    out_removed, out_kept = d[gone], d[dup[gone]]
    order = np.argsort(out_removed)
    return out_removed[order], out_kept[order], int(np.unique(out_kept).shape[0])
