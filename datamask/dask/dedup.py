"""``dedup`` on a Dask DataFrame: exact and fuzzy duplicate groups across every partition.

One lazy graph: per partition the bucket records (:func:`~datamask.dedup.buckets.text_records`)
and each document's quality and MinHash signature; a shuffle on the bucket keys into
candidate pairs; one task that verifies them and takes connected components
(:func:`~datamask.dedup.deduplicator.groups_from_pairs`, highest quality kept); then a
``map_partitions`` that drops (or, ``keep_all``, marks) the duplicates. A document is
numbered by its partition and row, so groups span partitions. That one task holds every
candidate pair and every document's signature (512 bytes each): for a corpus beyond one
worker's memory, ``datamask dedup`` on files runs the same groups out of core. The
``semantic`` kind is the CLI's only (it clusters the whole corpus first).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ConfigError, DataError
from ..pipeline.config import DedupConfig
from .params import takes_config
from .partitions import keep_attrs, part_split

__all__ = ["dedup", "dedup_groups", "GROUPS_META"]

GROUPS_META = pd.DataFrame(
    {
        "id": pd.Series([], dtype=object),
        "kept_id": pd.Series([], dtype=object),
        "kind": pd.Series([], dtype=object),
        "group": pd.Series([], dtype="int64"),
    }
)


def _keys_part(df, partition_info, cfg, kinds, params):
    """(bucket records, per-document info: doc, id, quality, signature) of one partition."""
    import pyarrow as pa

    from ..dedup.buckets import records_frame, text_records
    from ..dedup.normalize import quality_values, read_texts
    from ..dedup.pairs import document_numbers

    p = part_split(df, partition_info)
    if cfg.text_column not in df.columns:
        raise DataError(
            f"{p.where}: missing column {cfg.text_column!r} (columns: {', '.join(map(str, df.columns))}); "
            "rename it or set the config's text_column=NAME"
        )
    texts = read_texts(pa.table({cfg.text_column: pa.array(df[cfg.text_column])}), cfg.text_column, p.where)
    has_q = cfg.quality_column in df.columns
    q = quality_values(df[cfg.quality_column]) if has_q else np.full(len(df), np.nan)
    doc = document_numbers(p.number, 0, len(df))
    recs, sig = text_records(texts, doc, q, kinds, params)
    info = pd.DataFrame({"doc": doc, "id": df[cfg.id_column].to_numpy(dtype=object), "quality": q})
    if sig is not None:
        info["sig"] = list(sig)
    return records_frame(recs), info


def _groups(pair_parts, info_parts, kinds, params):
    """``{partition: (rows removed, kept ids)}`` and the groups table, from every pair and
    every document's info (one task)."""
    from ..dedup.deduplicator import groups_from_pairs, resolve_kept
    from ..dedup.pairs import ROW_BITS

    pairs = pd.concat(pair_parts, ignore_index=True)
    info = pd.concat(info_parts, ignore_index=True).sort_values("doc", kind="stable")
    docs = info["doc"].to_numpy()
    sig = np.stack(info["sig"].to_numpy()) if "sig" in info and len(info) else None
    removed, kept, by, _ = groups_from_pairs(pairs, docs, info["quality"].to_numpy(), sig, kinds, params)
    order = np.argsort(removed, kind="stable")
    removed, kept, by = removed[order], kept[order], by[order]
    removed, kept = resolve_kept(removed, kept)
    ids = info["id"].to_numpy()
    rid, kid = ids[np.searchsorted(docs, removed)], ids[np.searchsorted(docs, kept)]
    per = {}
    for part in np.unique(removed >> ROW_BITS):
        sel = (removed >> ROW_BITS) == part
        per[int(part)] = (removed[sel] & ((1 << ROW_BITS) - 1), kid[sel])
    group = np.unique(kept, return_inverse=True)[1].reshape(-1).astype(np.int64)
    table = pd.DataFrame({"id": rid, "kept_id": kid, "kind": by, "group": group}).astype(GROUPS_META.dtypes.to_dict())
    return per, table


def _plan(ddf, cfg):
    import dask
    import dask.dataframe as dd

    from ..dedup.buckets import pairs_meta, records_meta, records_pairs
    from ..dedup.deduplicator import parse_kinds
    from ..dedup.minhash import lsh_params

    kinds = [k for k in parse_kinds(cfg.kind)]
    if "semantic" in kinds:
        raise ConfigError(
            "datamask.dask.dedup does kind exact and fuzzy; semantic needs the whole corpus "
            "clustered first: run datamask dedup --kind ...,semantic on files"
        )
    params = lsh_params(cfg.ngram, cfg.num_perm, cfg.bands, cfg.threshold)
    keys = [
        dask.delayed(_keys_part, pure=True, nout=2)(p, {"number": i}, cfg, kinds, params)
        for i, p in enumerate(ddf.to_delayed())
    ]
    with dask.config.set({"dataframe.convert-string": False}):
        recs = dd.from_delayed([k[0] for k in keys], meta=records_meta(), verify_meta=False)
        pairs = recs.shuffle(on=["kind", "key", "key2"], npartitions=recs.npartitions, shuffle_method="tasks")
        pairs = pairs.map_partitions(records_pairs, meta=pairs_meta(), enforce_metadata=False)
    return dask.delayed(_groups, pure=True, nout=2)(pairs.to_delayed(), [k[1] for k in keys], kinds, params)


def _apply_part(df, partition_info=None, *, per, cfg):
    from ..dedup.deduplicator import DUPLICATE_OF, apply_removed

    p = part_split(df, partition_info)
    rows, kept_ids = per.get(p.number, (np.zeros(0, np.int64), np.zeros(0, object)))
    got = apply_removed(len(df), rows, kept_ids, cfg.keep_all)
    return keep_attrs(df.assign(**{DUPLICATE_OF: got}) if cfg.keep_all else df.iloc[np.flatnonzero(got)], df)


@takes_config(DedupConfig)
def dedup(ddf, cfg=None):
    """Drop exact and near duplicates across the whole frame (lazy), keeping the
    highest-quality row of each group (the first without a quality column).

    ``keep_all=True`` keeps every row and adds ``duplicate_of`` (the kept row's id, None for
    kept rows). :func:`dedup_groups` with the same arguments gives the groups (``id``,
    ``kept_id``, ``kind``, ``group``); computed together, the groups are found once.
    """
    from ..dedup.deduplicator import DUPLICATE_OF

    per, _ = _plan(ddf, cfg)
    meta = ddf._meta.assign(**{DUPLICATE_OF: pd.Series([], dtype=object)}) if cfg.keep_all else ddf._meta
    return ddf.map_partitions(_apply_part, per=per, cfg=cfg, meta=meta, enforce_metadata=False)


@takes_config(DedupConfig)
def dedup_groups(ddf, cfg=None):
    """The duplicate groups :func:`dedup` removes, as a one-partition lazy frame: the removed
    row's ``id``, the ``kept_id`` kept in its place, the ``kind`` and the ``group`` number."""
    import dask.dataframe as dd

    _, table = _plan(ddf, cfg)
    return dd.from_delayed([table], meta=GROUPS_META, verify_meta=False)
