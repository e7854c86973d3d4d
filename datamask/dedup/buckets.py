"""Bucket records of one partition: the rows that the corpus-wide shuffle brings together.

Every kind of text duplicate is a set of buckets: a document goes into bucket
``(band, key, key2)`` and two documents in one bucket are a candidate pair.

* exact: one record per document, band 0, key = the 128-bit hash of its normalised text;
* fuzzy: ``bands`` records per document, one per LSH band of its MinHash signature.

Null texts, and for fuzzy texts without a word, get no record: they are never grouped.
Records are plain column dicts (``band`` int32, ``key``/``key2`` uint64, ``doc`` int64),
so they become a pandas partition of a Dask frame unchanged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .minhash import band_keys, jaccard_estimate, signatures
from .normalize import exact_keys
from .pairs import bucket_pairs, unique_pairs

__all__ = [
    "RECORD_COLUMNS",
    "KIND_CODE",
    "exact_records",
    "fuzzy_records",
    "empty_records",
    "verify_pairs",
    "text_records",
    "records_meta",
    "records_pairs",
    "pairs_meta",
]

RECORD_COLUMNS = ("band", "key", "key2", "doc")
KIND_CODE = {"exact": 0, "fuzzy": 1}


def empty_records() -> pd.DataFrame:
    """A record frame with no row (the Dask meta)."""
    return pd.DataFrame(
        {
            "band": np.zeros(0, np.int32),
            "key": np.zeros(0, np.uint64),
            "key2": np.zeros(0, np.uint64),
            "doc": np.zeros(0, np.int64),
        }
    )


def exact_records(texts, doc) -> pd.DataFrame:
    """One record per non-null text: its exact key (:func:`~.normalize.exact_keys`).

    Parameters
    ----------
    texts : array-like of str or None
    doc : (N,) int64 array
        Document numbers.
    """
    keys, valid = exact_keys(texts)
    doc = np.asarray(doc, dtype=np.int64)
    return pd.DataFrame(
        {"band": np.zeros(int(valid.sum()), np.int32), "key": keys[valid, 0], "key2": keys[valid, 1], "doc": doc[valid]}
    )


def fuzzy_records(sig, has_shingles, doc, bands: int, rows: int) -> pd.DataFrame:
    """``bands`` records per document with shingles: the keys of its LSH bands.

    Parameters
    ----------
    sig : (N, num_perm) uint32 array
    has_shingles : (N,) bool array
    doc : (N,) int64 array
    bands, rows : int
    """
    sig = np.asarray(sig)[has_shingles]
    doc = np.asarray(doc, dtype=np.int64)[has_shingles]
    keys = band_keys(sig, bands, rows)  # (n, bands, 2)
    n = doc.shape[0]
    return pd.DataFrame(
        {
            "band": np.tile(np.arange(bands, dtype=np.int32), n),
            "key": keys[:, :, 0].reshape(-1),
            "key2": keys[:, :, 1].reshape(-1),
            "doc": np.repeat(doc, bands),
        }
    )


def verify_pairs(a, b, docs, sig, threshold: float):
    """Candidate pairs whose signature Jaccard estimate reaches ``threshold``.

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
    ia, ib = np.searchsorted(docs, a), np.searchsorted(docs, b)
    ok = np.ones(a.shape[0], dtype=bool)
    for s in range(0, a.shape[0], 65536):  # bound the (chunk, num_perm) comparison
        ok[s : s + 65536] = jaccard_estimate(sig[ia[s : s + 65536]], sig[ib[s : s + 65536]]) >= threshold
    return a[ok], b[ok]


def records_meta() -> pd.DataFrame:
    """An empty frame of :func:`text_records` (the Dask meta)."""
    return empty_records().assign(kind=np.zeros(0, np.int8))[["kind", *RECORD_COLUMNS]]


def text_records(texts, doc, kinds, params):
    """The bucket records (``kind, band, key, key2, doc``) of the exact and fuzzy kinds of
    ``texts`` (numbered ``doc``), and their signatures (None without the fuzzy kind)."""
    frames, sig = [], None
    if "exact" in kinds:
        frames.append(exact_records(texts, doc).assign(kind=np.int8(KIND_CODE["exact"])))
    if "fuzzy" in kinds:
        sig, has = signatures(texts, params.ngram, params.num_perm)
        frames.append(fuzzy_records(sig, has, doc, params.bands, params.rows).assign(kind=np.int8(KIND_CODE["fuzzy"])))
    out = pd.concat(frames, ignore_index=True) if frames else records_meta()
    return out[list(records_meta().columns)], sig


def pairs_meta() -> pd.DataFrame:
    return pd.DataFrame({"kind": np.zeros(0, np.int8), "a": np.zeros(0, np.int64), "b": np.zeros(0, np.int64)})


def records_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """The candidate pairs (``kind, a, b``) of records that share a bucket."""
    out = []
    for code, g in df.groupby("kind", sort=True):
        a, b = bucket_pairs(g["band"].to_numpy(), g["key"].to_numpy(), g["key2"].to_numpy(), g["doc"].to_numpy())
        out.append(pd.DataFrame({"kind": np.full(a.shape[0], code, np.int8), "a": a, "b": b}))
    return pd.concat(out, ignore_index=True) if out else pairs_meta()
