"""Bucket records: the rows that the corpus-wide shuffle brings together, and their pairs.

Every kind of text duplicate is a set of buckets; documents in one bucket are a group
(exact) or candidate pairs (fuzzy). :func:`text_records` makes one batch's records for every
path: the ``dedup`` stage writes them as routed files per kind, the in-memory paths
(:class:`~datamask.dedup.Deduplicator`, ``datamask.dask.dedup``) as one frame
(:func:`records_frame`) shuffled on ``(kind, key, key2)``; :func:`records_pairs` turns one
partition of them into pairs with the same functions the stage's buckets pass runs.

* exact: one record per non-null text, its 128-bit key (``key``, ``key2``,
  :func:`~.normalize.exact_keys`) and quality; a bucket becomes a star around its kept
  member (:func:`~.pairs.exact_stars`);
* fuzzy: ``bands`` records per document with a word, one per LSH band, the band's 64-bit
  key (:func:`~.minhash.band_keys64`); a bucket becomes candidate pairs
  (:func:`~.pairs.band_pairs`), kept when their signatures agree (:func:`verify_pairs`).

Null texts, and for fuzzy texts without a word, get no record: they are never grouped.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .minhash import signatures, similar
from .normalize import exact_keys
from .pairs import KIND_CODE, band_pairs, exact_stars, unique_pairs

__all__ = ["text_records", "records_frame", "records_meta", "records_pairs", "pairs_meta", "verify_pairs"]


def text_records(texts, doc, quality, kinds, params):
    """The bucket records of ``texts`` by kind, and their MinHash signatures.

    Parameters
    ----------
    texts : array-like of str or None
    doc : (N,) int64 array
        Document numbers.
    quality : (N,) float array or None
        NaN (or None) where there is none.
    kinds : sequence of str
        The text kinds asked (``"exact"``, ``"fuzzy"``).
    params : LSHParams

    Returns
    -------
    records : dict
        ``{"exact": {key, key2, doc, quality}, "fuzzy": {key, doc}}`` (numpy columns; the
        kinds asked).
    sig : (N, num_perm) uint32 ndarray or None
        Without the fuzzy kind, None.
    """
    doc = np.asarray(doc, dtype=np.int64)
    q = np.full(doc.shape[0], np.nan) if quality is None else np.asarray(quality, dtype=np.float64)
    records, sig = {}, None
    if "exact" in kinds:
        keys, ok = exact_keys(texts)
        records["exact"] = {"key": keys[ok, 0], "key2": keys[ok, 1], "doc": doc[ok], "quality": q[ok]}
    if "fuzzy" in kinds:
        sig, has, bk = signatures(texts, params.ngram, params.num_perm, bands=params.bands, rows=params.rows)
        records["fuzzy"] = {"key": bk[has].reshape(-1), "doc": np.repeat(doc[has], params.bands)}
    return records, sig


def records_meta() -> pd.DataFrame:
    """An empty frame of :func:`records_frame` (the Dask meta)."""
    return pd.DataFrame(
        {
            "kind": np.zeros(0, np.int8),
            "key": np.zeros(0, np.uint64),
            "key2": np.zeros(0, np.uint64),
            "doc": np.zeros(0, np.int64),
            "quality": np.zeros(0, np.float64),
        }
    )


def records_frame(records) -> pd.DataFrame:
    """:func:`text_records`'s records as one frame (``kind`` a :data:`~.pairs.KIND_CODE`; a
    fuzzy record's ``key2`` 0 and ``quality`` NaN)."""
    frames = []
    for kind, cols in records.items():
        n = cols["doc"].shape[0]
        frame = {
            "kind": np.full(n, KIND_CODE[kind], np.int8),
            "key": cols["key"],
            "key2": cols.get("key2", np.zeros(n, np.uint64)),
            "doc": cols["doc"],
            "quality": cols.get("quality", np.full(n, np.nan)),
        }
        frames.append(pd.DataFrame(frame))
    return pd.concat(frames, ignore_index=True) if frames else records_meta()


def pairs_meta() -> pd.DataFrame:
    return pd.DataFrame({"kind": np.zeros(0, np.int8), "a": np.zeros(0, np.int64), "b": np.zeros(0, np.int64)})


def records_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """The pairs (``kind, a, b``) of one partition of records: each exact group as a star from
    its kept member ``a``, and the fuzzy candidates (not verified yet)."""
    out = []
    kind = df["kind"].to_numpy()
    exact, fuzzy = df[kind == KIND_CODE["exact"]], df[kind == KIND_CODE["fuzzy"]]
    if len(exact):
        cols = [exact[c].to_numpy() for c in ("key", "key2", "doc", "quality")]
        a, b = exact_stars(*cols)[:2]
        out.append(pd.DataFrame({"kind": np.full(a.shape[0], KIND_CODE["exact"], np.int8), "a": a, "b": b}))
    if len(fuzzy):
        a, b = band_pairs(fuzzy["key"].to_numpy(), fuzzy["doc"].to_numpy())
        out.append(pd.DataFrame({"kind": np.full(a.shape[0], KIND_CODE["fuzzy"], np.int8), "a": a, "b": b}))
    return pd.concat(out, ignore_index=True) if out else pairs_meta()


def verify_pairs(a, b, docs, sig, threshold: float):
    """Candidate pairs whose signature Jaccard estimate reaches ``threshold`` (in memory).

    Parameters
    ----------
    a, b : (P,) int64 arrays
        Candidate pairs (document numbers).
    docs : (V,) int64 array, sorted
        Document numbers whose signatures are given; must include every ``a`` and ``b``.
    sig : (V, num_perm) uint32 array
        Their signatures, in the order of ``docs``.
    threshold : float

    Returns
    -------
    a, b : int64 ndarrays
        The verified pairs, each once as ``(min, max)``.
    """
    a, b = unique_pairs(a, b)
    if a.shape[0] == 0:
        return a, b
    docs = np.asarray(docs, dtype=np.int64)
    ok = similar(sig, sig, threshold, np.searchsorted(docs, a), np.searchsorted(docs, b))
    return a[ok], b[ok]
