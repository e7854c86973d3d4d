"""From bucket keys to duplicate groups: candidate pairs, connected components, kept row.

Every path (the ``dedup`` stage out of core, :class:`~datamask.dedup.Deduplicator` and
``datamask.dask.dedup`` in memory) runs these array functions; only the connected components
differ, in memory (:func:`connected_components`) or by rounds over partitions (:func:`star_edges`).

Documents are named by an ``int64`` document number, ``base << ROW_BITS | row``
(:func:`document_numbers`; the stage's base is the file's rank by path, the dataframe API's
the partition), so the smallest number is the first document by path and row.

``exact_stars``
    The exact groups of records with equal 128-bit keys, each a star around its kept member.
``band_pairs``
    The LSH candidates: pairs of documents sharing a 64-bit band key (a star per key).
``connected_components`` / ``star_edges``
    Union of the pairs into groups, in memory (scipy), or one round of the partition-wise
    components (every local component becomes a star around its smallest node; repeated
    over re-partitioned stars until nothing changes).
``removed_of_groups``
    The kept member of each group (:func:`choose_kept`: the highest quality, ties and no
    quality to the smallest document number, :func:`order_quality`), every other member
    removed, as ``exact`` when an exact group removed it, else ``fuzzy``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "KINDS",
    "KIND_CODE",
    "ROW_BITS",
    "document_numbers",
    "unique_pairs",
    "connected_components",
    "choose_kept",
    "removed_of_groups",
    "order_quality",
    "exact_stars",
    "band_pairs",
    "star_edges",
]

KINDS = ("exact", "fuzzy", "semantic")  # the order they run in, each on what the earlier kept
KIND_CODE = {k: i for i, k in enumerate(KINDS)}  # a kind in an int8 column
ROW_BITS = 40  # document number = base << 40 | row: a file or partition of up to 2**40 rows


def document_numbers(base: int, start: int, stop: int) -> np.ndarray:
    """``(stop - start,)`` int64 numbers of rows ``start .. stop - 1`` of file or partition ``base``."""
    return (np.int64(base) << ROW_BITS) + np.arange(start, stop, dtype=np.int64)


def unique_pairs(a, b):
    """Pairs ordered as ``(min, max)``, self pairs dropped, each pair once, sorted."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    if not keep.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo, hi = lo[keep], hi[keep]
    order = np.lexsort((hi, lo))  # two stable passes: much cheaper than np.unique(axis=0)
    lo, hi = lo[order], hi[order]
    new = np.ones(lo.shape[0], dtype=bool)
    new[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    return lo[new], hi[new]


def connected_components(a, b):
    """Groups of the undirected graph with edges ``a[i] - b[i]``.

    Parameters
    ----------
    a, b : (P,) int64 arrays
        Document numbers (any values).

    Returns
    -------
    nodes : (V,) int64 ndarray
        Every document that is in a pair, sorted.
    labels : (V,) int64 ndarray
        Group number of each node, ``0..G-1``.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components as _cc

    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    nodes, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
    v = nodes.shape[0]
    if v == 0:
        return nodes, np.zeros(0, np.int64)
    p = a.shape[0]
    g = coo_matrix((np.ones(p, dtype=np.int8), (inv[:p], inv[p:])), shape=(v, v))
    _, labels = _cc(g, directed=False)
    return nodes, labels.astype(np.int64)


def choose_kept(labels, doc, quality=None):
    """The kept member of each group.

    Parameters
    ----------
    labels : (V,) int array
        Group of each member.
    doc : (V,) int64 array
        Document number of each member.
    quality : (V,) float array, optional
        Higher is better; NaN counts as lowest.

    Returns
    -------
    (V,) int64 ndarray
        For each member, the document number of its group's kept member.
    """
    labels, doc = np.asarray(labels, dtype=np.int64), np.asarray(doc, dtype=np.int64)
    if labels.shape[0] == 0:
        return np.zeros(0, np.int64)
    # by group, best quality, smallest number
    order = np.lexsort((doc, -order_quality(quality, labels.shape[0]), labels))
    first = np.ones(order.shape[0], dtype=bool)
    first[1:] = labels[order][1:] != labels[order][:-1]
    n_groups = int(labels.max()) + 1
    kept_of_group = np.empty(n_groups, dtype=np.int64)
    kept_of_group[labels[order][first]] = doc[order][first]
    return kept_of_group[labels]


def removed_of_groups(labels, doc, quality=None, exact=None):
    """Every removed member of the groups, the kept one it duplicates, and the kind that removed it.

    Parameters
    ----------
    labels : (V,) int array
        Group of each member (any values: equal values, one group).
    doc : (V,) int64 array
        Document number of each member.
    quality : (V,) float array, optional
        For :func:`choose_kept`.
    exact : (V,) bool array, optional
        Members that an exact group removed (the ``other`` end of :func:`exact_stars`).

    Returns
    -------
    removed, kept : (R,) int64 ndarrays
    kind : (R,) int8 ndarray
        ``KIND_CODE["exact"]`` where ``exact``, else ``KIND_CODE["fuzzy"]``.
    fuzzy_groups : int
        Groups with a member removed as fuzzy.
    """
    doc = np.asarray(doc, dtype=np.int64)
    dense = np.unique(np.asarray(labels), return_inverse=True)[1].reshape(-1)
    kept = choose_kept(dense, doc, quality)
    gone = kept != doc
    ex = np.zeros(int(gone.sum()), dtype=bool) if exact is None else np.asarray(exact, dtype=bool)[gone]
    kind = np.where(ex, KIND_CODE["exact"], KIND_CODE["fuzzy"]).astype(np.int8)
    fuzzy_groups = int(np.unique(dense[gone][kind == KIND_CODE["fuzzy"]]).shape[0])
    return doc[gone], kept[gone], kind, fuzzy_groups


def order_quality(quality, n: int):
    """Quality as a sort key (higher is better, NaN lowest); zeros without quality."""
    if quality is None:
        return np.zeros(n)
    q = np.asarray(quality, dtype=np.float64)
    return np.where(np.isnan(q), -np.inf, q)


def exact_stars(key, key2, doc, quality=None):
    """Exact groups of records with equal 128-bit keys ``(key, key2)``, as stars around
    each group's kept member (highest quality, then smallest number).

    Returns
    -------
    kept, other : (P,) int64 ndarrays
        One pair per removed member: ``other`` is an exact duplicate of ``kept``.
    q_kept, q_other : (P,) float64 ndarrays
        Their quality (NaN without one).
    n_groups : int
        Groups of two or more members.
    """
    key, key2, doc = np.asarray(key), np.asarray(key2), np.asarray(doc, dtype=np.int64)
    q = np.full(doc.shape[0], np.nan) if quality is None else np.asarray(quality, dtype=np.float64)
    order = np.lexsort((doc, -order_quality(q, doc.shape[0]), key2, key))
    key, key2, doc, q = key[order], key2[order], doc[order], q[order]
    new = np.ones(doc.shape[0], dtype=bool)
    new[1:] = (key[1:] != key[:-1]) | (key2[1:] != key2[:-1])
    head = np.flatnonzero(new)[np.cumsum(new) - 1]  # each record's group head (its kept member)
    member = ~new
    n_groups = int(np.unique(head[member]).shape[0])
    return doc[head[member]], doc[member], q[head[member]], q[member], n_groups


def band_pairs(key, doc):
    """Pairs ``(first, other)`` of the documents that share a 64-bit band key (a star per key
    around its first document in input order), each once as ``(min, max)``: the LSH
    candidates of one partition."""
    from .kernels import repeated_keys

    key, doc = np.asarray(key), np.asarray(doc, dtype=np.int64)
    if doc.shape[0] < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    shared = repeated_keys(key)  # the few keys of two or more documents, found without a sort
    key, doc = key[shared], doc[shared]
    order = np.argsort(key, kind="stable")  # equal keys keep their order: a star around the first
    key = key[order]
    new = np.ones(key.shape[0], dtype=bool)
    new[1:] = key[1:] != key[:-1]
    member = ~new
    if not member.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    doc = doc[order]
    first = doc[new][np.cumsum(new) - 1]
    member &= doc != first
    return unique_pairs(first[member], doc[member])


def star_edges(u, v):
    """One round of partition-wise connected components.

    Parameters
    ----------
    u, v : (E,) int64 arrays
        Edges (both directions may be given).

    Returns
    -------
    center, node : int64 ndarrays
        For each local component, an edge from its smallest node to every other node,
        sorted by ``(center, node)``.
    changed : bool
        Whether these edges differ from the input edges (as a set): when no partition
        changes anything, the graph is a forest of stars around each component's smallest
        node, i.e. the connected components are found.
    """
    a, b = unique_pairs(u, v)
    nodes, labels = connected_components(a, b)
    if nodes.shape[0] == 0:
        return a, b, False
    _, first = np.unique(labels, return_index=True)  # nodes are sorted: the first is the smallest
    center = nodes[first][labels]
    keep = center != nodes
    c, n = center[keep], nodes[keep]
    order = np.lexsort((n, c))
    c, n = c[order], n[order]
    changed = c.shape[0] != a.shape[0] or not (np.array_equal(c, a) and np.array_equal(n, b))
    return c, n, changed
