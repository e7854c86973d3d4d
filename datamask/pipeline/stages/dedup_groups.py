"""The corpus-wide part of ``datamask dedup``: duplicate groups across every split and file.

Run once, in the stage's setup; the result is stored in ``_datamask/dedup/`` (the groups
last, so their presence means complete) and a resumed run reuses it. Documents are named
by their numbers (:mod:`.dedup_read`).

1. records (per split): the exact key and the LSH band keys of every document
   (:mod:`datamask.dedup.buckets`); null texts get none;
2. pairs: a Dask shuffle on ``(kind, band, key, key2)`` brings equal keys of all splits
   together; each partition turns its buckets into candidate pairs, gathered;
3. lookup (per split, only the documents in a pair): quality, and MinHash signatures to
   verify the fuzzy candidates; on the client, connected components per kind, exact first
   then fuzzy on what exact kept; the kept member of a group is the highest-quality one;
4. semantic (when asked, :mod:`.dedup_semantic`): per split the embeddings of the rows still kept and their
   cluster (the cluster column, or k-means fitted on a sample of the corpus), a Dask
   shuffle on the cluster, the SemDeDup kernel per cluster, highest quality first;
5. ids and example texts of the groups (per split); groups and summary written.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pyarrow as pa

from ...dedup.buckets import empty_records, exact_records, fuzzy_records, verify_pairs
from ...dedup.deduplicator import represent, resolve_kept
from ...dedup.minhash import signatures
from ...dedup.pairs import bucket_pairs, duplicate_of
from ..io import Split, read_split, write_json_atomic, write_parquet_atomic
from .dedup_read import column_names, doc_range, document_numbers, gather, per_split, read_quality, read_texts
from .dedup_semantic import semantic_groups

__all__ = [
    "find_groups",
    "groups_from_pairs",
    "records_meta",
    "split_records",
    "pairs_partition",
    "pairs_meta",
    "DEDUP_DIR",
    "GROUPS_FILE",
    "REMOVED_FILE",
    "SUMMARY_FILE",
]

DEDUP_DIR = "dedup"
GROUPS_FILE = "groups.parquet"  # for the user: id, kept_id, kind, group of every removed row
REMOVED_FILE = "removed_docs.parquet"  # for the per-split pass: document numbers (doc), kept_id, kind
SUMMARY_FILE = "summary.json"
KIND_CODE = {"exact": 0, "fuzzy": 1}
N_EXAMPLES = 3  # example groups per kind shown in the report
EXAMPLE_CHARS = 600


# ---------------------------------------------------------------------- 1-2. records and pairs
def _records(s: Split, *, cols, ranks, kinds, params):
    table = read_split(s, cols)
    return split_records(read_texts(table, cols.text, s.where()), document_numbers(s, ranks), kinds, params)


def split_records(texts, doc, kinds, params):
    """One split's bucket records (``kind, band, key, key2, doc``): the exact key and the LSH
    band keys of its documents (numbered ``doc``); the per-split function of pass 1."""
    frames = []
    if "exact" in kinds:
        frames.append(exact_records(texts, doc).assign(kind=np.int8(KIND_CODE["exact"])))
    if "fuzzy" in kinds:
        sig, has = signatures(texts, params.ngram, params.num_perm)
        frames.append(fuzzy_records(sig, has, doc, params.bands, params.rows).assign(kind=np.int8(KIND_CODE["fuzzy"])))
    out = pd.concat(frames, ignore_index=True) if frames else records_meta()
    return out[list(records_meta().columns)]


def records_meta():
    return empty_records().assign(kind=np.zeros(0, np.int8))[["kind", "band", "key", "key2", "doc"]]


def pairs_meta():
    return pd.DataFrame({"kind": np.zeros(0, np.int8), "a": np.zeros(0, np.int64), "b": np.zeros(0, np.int64)})


def pairs_partition(df):
    out = []
    for code, g in df.groupby("kind", sort=True):
        a, b = bucket_pairs(g["band"].to_numpy(), g["key"].to_numpy(), g["key2"].to_numpy(), g["doc"].to_numpy())
        out.append(pd.DataFrame({"kind": np.full(a.shape[0], code, np.int8), "a": a, "b": b}))
    return pd.concat(out, ignore_index=True) if out else pairs_meta()


def _candidate_pairs(client, plan, cols, ranks, kinds, params, quiet):
    import dask
    import dask.dataframe as dd

    with dask.config.set({"dataframe.convert-string": False}):
        recs = dd.from_map(
            _records,
            plan.splits,
            cols=cols,
            ranks=ranks,
            kinds=kinds,
            params=params,
            meta=records_meta(),
            enforce_metadata=False,
        )
        n = recs.npartitions
        shuffled = recs.shuffle(on=["kind", "band", "key", "key2"], npartitions=n)
        pairs = shuffled.map_partitions(pairs_partition, meta=pairs_meta(), enforce_metadata=False)
        return gather(client, pairs, "dedup pairs", quiet, n)


# ---------------------------------------------------------------------- 3. lookup and groups
def _lookup(s: Split, docs, *, cols, ranks, quality_column, params, with_sig):
    """Quality (and signatures) of the given documents of split ``s``."""
    n_sig = params.num_perm if with_sig else 0
    if len(docs) == 0:
        return _lookup_meta(n_sig)
    table = read_split(s, cols)
    lo, _ = doc_range(s, ranks)
    rows = (np.asarray(docs) - lo).astype(np.int64)
    sub = table.take(pa.array(rows))
    q = read_quality(sub, quality_column)
    out = pd.DataFrame(
        {"doc": np.asarray(docs, np.int64), "quality": q if q is not None else np.full(rows.shape[0], np.nan)}
    )
    if with_sig:
        sig, _ = signatures(read_texts(sub, cols.text, s.where()), params.ngram, params.num_perm)
        out["sig"] = [row.tobytes() for row in sig]
    return out


def _lookup_meta(n_sig):
    m = pd.DataFrame({"doc": np.zeros(0, np.int64), "quality": np.zeros(0, np.float64)})
    if n_sig:
        m["sig"] = pd.Series([], dtype=object)
    return m


def _text_groups(client, plan, cols, ranks, kinds, params, cfg):
    """Removed documents, their kept ones and the stats of the exact and fuzzy kinds."""
    pairs = _candidate_pairs(client, plan, cols, ranks, kinds, params, cfg.quiet)
    if pairs is None or len(pairs) == 0:
        removed, kept = np.zeros(0, np.int64), np.zeros(0, np.int64)
        return removed, kept, np.zeros(0, object), {k: {"groups": 0, "removed": 0} for k in kinds}
    nodes = np.unique(np.concatenate([pairs["a"].to_numpy(), pairs["b"].to_numpy()]))
    with_sig = "fuzzy" in kinds
    info = gather(
        client,
        per_split(
            _lookup,
            plan,
            ranks,
            nodes,
            _lookup_meta(params.num_perm if with_sig else 0),
            cols=cols,
            quality_column=cfg.quality_column,
            params=params,
            with_sig=with_sig,
        ),
        "dedup lookup",
        cfg.quiet,
        len(plan.splits),
    ).sort_values("doc", kind="stable")
    sig = None
    if with_sig:
        sig = np.frombuffer(b"".join(info["sig"].tolist()), dtype=np.uint32).reshape(len(info), params.num_perm)
    return groups_from_pairs(pairs, info["doc"].to_numpy(), info["quality"].to_numpy(), sig, kinds, params)


def groups_from_pairs(pairs, docs, qual, sig, kinds, params):
    """``(removed, kept, kind, stats)`` of the exact and fuzzy kinds from the candidate pairs:
    fuzzy pairs verified on their signatures, connected components per kind (exact first,
    then fuzzy on what exact kept), the highest-quality member kept. ``docs`` (sorted) are
    the documents in a pair with their quality ``qual`` and signatures ``sig`` (rows of
    ``docs``). Shared by ``datamask dedup`` and :func:`datamask.dask.dedup`."""
    removed, kept = np.zeros(0, np.int64), np.zeros(0, np.int64)
    stats, by = {}, []

    def quality_of(x):
        return qual[np.searchsorted(docs, x)]

    for kind in kinds:
        sel = pairs["kind"].to_numpy() == KIND_CODE[kind]
        a, b = pairs["a"].to_numpy()[sel], pairs["b"].to_numpy()[sel]
        if kind == "fuzzy" and a.shape[0]:
            a, b = verify_pairs(a, b, docs, sig, params.threshold)
        a, b = represent(a, b, removed, kept)
        r, k, g = duplicate_of(a, b, quality_of)
        stats[kind] = {"groups": int(g), "removed": int(r.shape[0])}
        removed, kept = np.concatenate([removed, r]), np.concatenate([kept, k])
        by.extend([kind] * r.shape[0])
    return removed, kept, np.array(by, dtype=object), stats


# ---------------------------------------------------------------------- 5. ids, examples
def _ids_meta():
    return pd.DataFrame(
        {"doc": np.zeros(0, np.int64), "id": pd.Series([], dtype=object), "text": pd.Series([], dtype=object)}
    )


def _ids(s: Split, docs, *, cols, ranks, text_docs):
    if len(docs) == 0:
        return _ids_meta()
    table = read_split(s, cols)
    lo, _ = doc_range(s, ranks)
    sub = table.take(pa.array((np.asarray(docs) - lo).astype(np.int64)))
    want = np.isin(docs, text_docs)
    texts = read_texts(sub, cols.text, s.where()).to_pylist()
    return pd.DataFrame(
        {
            "doc": np.asarray(docs, np.int64),
            "id": sub.column(cols.id).to_pylist(),
            "text": [t[:EXAMPLE_CHARS] if w and t is not None else None for t, w in zip(texts, want)],
        }
    )


def _examples(removed, kept, by, kinds):
    """Up to N_EXAMPLES largest groups per kind: (kind, kept doc, up to 3 removed docs)."""
    out = []
    for kind in kinds:
        sel = by == kind
        if not sel.any():
            continue
        k, r = kept[sel], removed[sel]
        groups, sizes = np.unique(k, return_counts=True)
        for g in groups[np.lexsort((groups, -sizes))][:N_EXAMPLES]:
            out.append((kind, int(g), [int(x) for x in np.sort(r[k == g])[:3]]))
    return out


def find_groups(client, plan, cols, ranks, kinds, params, cfg, device, where):
    """Every duplicate group of the corpus; writes ``summary.json`` then ``groups.parquet``.

    Parameters
    ----------
    client : distributed.Client
    plan : Plan
        All splits of the input (not only the pending ones: groups span splits).
    cols : DedupColumns
    ranks : dict
        File rank of each input path (:func:`file_ranks`).
    kinds : tuple of str
        In canonical order (exact, fuzzy, semantic).
    params : LSHParams
    cfg : DedupConfig
    device : {"cpu", "gpu"}
        Where the semantic kernel runs.
    where : Path
        ``_datamask/dedup`` of the output.

    Notes
    -----
    ``groups.parquet`` holds one row per removed document: its ``id``, ``kept_id`` (the id of
    the row kept in its place), ``kind`` (the kind that removed it) and ``group`` (0, 1, ...:
    the rows removed in favour of one kept row). ``removed_docs.parquet`` holds the same rows
    by document number (``doc``, ``kept_id``, ``kind``) for the per-split pass.
    """
    t0 = time.perf_counter()
    text_kinds = [k for k in kinds if k != "semantic"]
    removed, kept = np.zeros(0, np.int64), np.zeros(0, np.int64)
    by = np.zeros(0, object)
    stats = {}
    if text_kinds:
        removed, kept, by, stats = _text_groups(client, plan, cols, ranks, text_kinds, params, cfg)
    if "semantic" in kinds:
        order = np.argsort(removed)
        r, k, g = semantic_groups(client, plan, cols, ranks, cfg, removed[order], device)
        stats["semantic"] = {"groups": g, "removed": int(r.shape[0])}
        removed, kept = np.concatenate([removed, r]), np.concatenate([kept, k])
        by = np.concatenate([by, np.array(["semantic"] * r.shape[0], dtype=object)])
    order = np.argsort(removed, kind="stable")
    removed, kept, by = removed[order], kept[order], by[order]
    removed, kept = resolve_kept(removed, kept)
    examples = _examples(removed, kept, by, kinds)
    text_docs = np.unique(np.array([d for _, g, rs in examples for d in [g] + rs], dtype=np.int64))
    need = np.unique(np.concatenate([kept, removed, text_docs]))
    look = (
        gather(
            client,
            per_split(_ids, plan, ranks, need, _ids_meta(), cols=cols, text_docs=text_docs),
            "dedup ids",
            cfg.quiet,
            len(plan.splits),
        )
        if need.shape[0]
        else None
    )
    id_of, text_of = {}, {}
    if look is not None:
        id_of = dict(zip(look["doc"].tolist(), look["id"].tolist()))
        text_of = dict(zip(look["doc"].tolist(), look["text"].tolist()))
    summary = {
        "kinds": {k: stats.get(k, {"groups": 0, "removed": 0}) for k in kinds},
        "removed": int(removed.shape[0]),
        "quality_column_used": cfg.quality_column in column_names(plan, cols),
        "lsh": {
            "ngram": params.ngram,
            "num_perm": params.num_perm,
            "bands": params.bands,
            "rows": params.rows,
            "threshold": params.threshold,
        }
        if "fuzzy" in kinds
        else None,
        "eps": float(cfg.eps) if "semantic" in kinds else None,
        "examples": [
            {
                "kind": kind,
                "kept": {"id": id_of.get(g), "text": text_of.get(g)},
                "duplicates": [{"id": id_of.get(r), "text": text_of.get(r)} for r in rs],
            }
            for kind, g, rs in examples
        ],
        "seconds": round(time.perf_counter() - t0, 3),
    }
    write_json_atomic(summary, where / SUMMARY_FILE)
    kept_ids = pa.array([id_of.get(int(k)) for k in kept])
    kind = pa.array(by.tolist(), type=pa.string())
    write_parquet_atomic(pa.table({"doc": removed, "kept_id": kept_ids, "kind": kind}), where / REMOVED_FILE)
    group = np.unique(kept, return_inverse=True)[1].astype(np.int64).reshape(-1)
    groups = pa.table(
        {"id": pa.array([id_of.get(int(r)) for r in removed]), "kept_id": kept_ids, "kind": kind, "group": group}
    )
    write_parquet_atomic(groups, where / GROUPS_FILE)  # last: its presence marks the groups complete
