"""In-memory deduplication of one table: the corpus-wide algorithm on a single process.

:class:`Deduplicator` runs the same functions as the ``dedup`` stage (records, bucket
pairs, verification, kept row), with the connected components in memory
(:func:`groups_from_pairs`, which ``datamask.dask.dedup`` runs too). Kinds run in the order
exact, fuzzy, semantic; a later kind works on the documents the earlier ones kept, and
``duplicate_of_`` always names a document that is finally kept. :func:`apply_removed` is what
the stage and the dataframe API do with a split's or partition's removed rows.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .buckets import records_frame, records_pairs, text_records, verify_pairs
from .minhash import lsh_params
from .pairs import KIND_CODE, KINDS, connected_components, removed_of_groups

__all__ = [
    "KINDS",
    "DUPLICATE_OF",
    "parse_kinds",
    "Deduplicator",
    "resolve_kept",
    "groups_from_pairs",
    "apply_removed",
]

DUPLICATE_OF = "duplicate_of"  # with keep_all: the kept row's id, null for kept rows


def parse_kinds(kinds) -> tuple:
    """``"exact,fuzzy"`` or a sequence -> the kinds in canonical order (ConfigError on an
    unknown or empty one)."""
    items = [k.strip() for k in kinds.split(",")] if isinstance(kinds, str) else [str(k).strip() for k in kinds]
    items = [k for k in items if k]
    bad = [k for k in items if k not in KINDS]
    if bad or not items:
        raise ConfigError(
            f"--kind {','.join(items) or repr('')}: choose one or more of {','.join(KINDS)}, comma-separated"
        )
    return tuple(k for k in KINDS if k in items)


def resolve_kept(removed, kept):
    """Follow chains (``a -> b`` then ``b -> c``) so that every target is finally kept."""
    order = np.argsort(removed)
    removed, kept = removed[order], kept[order].copy()
    for _ in range(len(KINDS) + 1):
        i = np.clip(np.searchsorted(removed, kept), 0, max(removed.shape[0] - 1, 0))
        hit = removed.shape[0] > 0 and (removed[i] == kept)
        if not np.any(hit):
            break
        kept = np.where(hit, kept[i], kept)
    return removed, kept


def groups_from_pairs(pairs, docs, qual, sig, kinds, params):
    """``(removed, kept, kind, stats)`` of the exact and fuzzy kinds from their pairs (``kind,
    a, b``: :func:`~.buckets.records_pairs`), in memory: the fuzzy candidates verified on
    their signatures, the connected components of every pair, the highest-quality member
    kept (:func:`~.pairs.removed_of_groups`, as the stage's out-of-core components do).
    ``docs`` (sorted) are the documents with their quality ``qual`` (or None) and signatures
    ``sig`` (rows of ``docs``)."""
    code, a, b = (pairs[c].to_numpy() for c in ("kind", "a", "b"))
    exact = code == KIND_CODE["exact"]
    fa, fb = a[~exact], b[~exact]
    if fa.shape[0]:
        fa, fb = verify_pairs(fa, fb, docs, sig, params.threshold)
    nodes, labels = connected_components(np.concatenate([a[exact], fa]), np.concatenate([b[exact], fb]))
    q = None if qual is None else qual[np.searchsorted(docs, nodes)]
    removed, kept, kind, fuzzy_groups = removed_of_groups(labels, nodes, q, np.isin(nodes, b[exact]))
    groups = {"exact": int(np.unique(a[exact]).shape[0]), "fuzzy": fuzzy_groups}
    stats = {k: {"groups": groups[k], "removed": int(np.sum(kind == KIND_CODE[k]))} for k in kinds}
    return removed, kept, np.array(KINDS, dtype=object)[kind], stats


def apply_removed(n: int, rows, kept_ids, keep_all: bool):
    """A split's or partition's ``n`` rows with the removed ones at positions ``rows`` (each a
    duplicate of the row ``kept_ids`` names): with ``keep_all``, the ``duplicate_of`` values
    (object array, None for kept rows); else the (n,) bool mask of the rows kept."""
    if keep_all:
        vals = np.full(n, None, dtype=object)
        vals[rows] = list(kept_ids)
        return vals
    keep = np.ones(n, dtype=bool)
    keep[rows] = False
    return keep


class Deduplicator:
    """Find duplicate groups in one table and keep one document per group.

    Parameters
    ----------
    kind : str or sequence
        ``"exact"``, ``"fuzzy"``, ``"semantic"``, comma-separated or a list.
    ngram, num_perm, bands, threshold :
        MinHash-LSH setting (:func:`~datamask.dedup.minhash.lsh_params`).
    eps : float
        Semantic: a document whose cosine to a kept one of its cluster exceeds
        ``1 - eps`` is removed.
    n_clusters : int, optional
        Semantic without ``cluster``: k-means clusters (default ``sqrt(N / 10)``).
    seed : int
        k-means seed.

    Attributes
    ----------
    duplicate_of_ : (N,) int64 ndarray
        Position of the kept document each removed one duplicates; -1 for kept rows.
    removed_by_ : (N,) object ndarray
        The kind that removed each row (None for kept rows).
    stats_ : dict
        ``{kind: {"groups": int, "removed": int}}``.
    n_null_ : int
        Null texts (kept, never grouped).
    """

    def __init__(
        self, kind="exact,fuzzy", ngram=5, num_perm=128, bands=None, threshold=0.7, eps=0.05, n_clusters=None, seed=0
    ):
        self.kind, self.ngram, self.num_perm, self.bands = kind, ngram, num_perm, bands
        self.threshold, self.eps, self.n_clusters, self.seed = threshold, eps, n_clusters, seed

    def fit(self, texts=None, quality=None, embeddings=None, cluster=None):
        """Find the duplicates.

        Parameters
        ----------
        texts : (N,) array-like of str or None
            Needed by the exact and fuzzy kinds.
        quality : (N,) float array, optional
            The kept document of a group is the highest quality one (ties, and without
            quality: the first row).
        embeddings : (N, d) float array, optional
            Needed by the semantic kind.
        cluster : (N,) int array, optional
            Semantic clusters; computed by k-means when absent.
        """
        kinds = parse_kinds(self.kind)
        params = lsh_params(self.ngram, self.num_perm, self.bands, self.threshold)
        n = len(texts) if texts is not None else len(embeddings)
        doc = np.arange(n, dtype=np.int64)
        q = None if quality is None else np.asarray(quality, dtype=np.float64)
        removed, kept = np.zeros(0, np.int64), np.zeros(0, np.int64)
        by = np.full(n, None, dtype=object)
        self.stats_ = {}
        null = np.zeros(0, np.int64)
        if texts is not None:
            from .normalize import as_string_array

            null = np.flatnonzero(np.asarray(as_string_array(texts).is_null().to_numpy(zero_copy_only=False)))
        self.n_null_ = int(null.shape[0])
        text_kinds = [k for k in kinds if k != "semantic"]
        if text_kinds:
            if texts is None:
                raise ConfigError(f"--kind {text_kinds[0]} needs a text column")
            rec, sig = text_records(texts, doc, q, text_kinds, params)
            pairs = records_pairs(records_frame(rec))
            removed, kept, kind_of, stats = groups_from_pairs(pairs, doc, q, sig, text_kinds, params)
            by[removed] = kind_of
            self.stats_.update(stats)
        if "semantic" in kinds:  # null texts are never grouped, by any kind
            r, k, groups = self._semantic(embeddings, cluster, q, np.union1d(removed, null))
            by[r] = "semantic"
            self.stats_["semantic"] = {"groups": int(groups), "removed": int(r.shape[0])}
            removed, kept = np.concatenate([removed, r]), np.concatenate([kept, k])
        removed, kept = resolve_kept(removed, kept)
        self.duplicate_of_ = np.full(n, -1, dtype=np.int64)
        self.duplicate_of_[removed] = kept
        self.removed_by_ = by
        return self

    def _semantic(self, embeddings, cluster, quality, removed):
        from .semantic import semantic_duplicates

        if embeddings is None:
            raise ConfigError("--kind semantic needs an embedding column")
        return semantic_duplicates(
            embeddings, cluster, quality, self.eps, removed=removed, n_clusters=self.n_clusters, seed=self.seed
        )

    @property
    def keep_mask_(self):
        """(N,) bool: True for the rows kept."""
        return self.duplicate_of_ < 0
