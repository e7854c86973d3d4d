"""``datamask dedup``: exact, fuzzy (MinHash-LSH) and semantic duplicates across the corpus.

Runs on :func:`~datamask.pipeline.runner.run_stage`. Duplicates span splits and files, so
the groups are found once for the whole corpus, in the stage's setup, by resumable passes
of Dask tasks (:mod:`.dedup_groups`) that keep everything in ``_datamask/dedup/``; a
resumed run filters every split with the same groups. Then, per split (the runner's
resumable pass, which reads the split's ``removed/<split>.parquet``): the kept rows,
or with ``keep_all`` every row and a ``duplicate_of`` column (the kept row's id; null for
kept rows). The manifest's ``dedup`` key holds, per kind, the groups found and the rows
removed, and a few example groups with their texts (shown by ``datamask report``).
"""

from __future__ import annotations

import json
import time

import numpy as np
import pyarrow as pa

from ...dedup.deduplicator import parse_kinds
from ...dedup.minhash import lsh_params
from ..io import read_parquet_table
from ..runner import StageRun, finish_split, plan_splits, resolve_io, split_record
from ..text_config import DedupConfig
from .base import Stage, split_runs
from .dedup_groups import DEDUP_DIR, REMOVED_DIR, SUMMARY_FILE, find_groups
from .dedup_read import DedupColumns, doc_range, file_ranks

__all__ = ["DedupStage", "run_dedup", "plan_dedup", "DUPLICATE_OF"]

DUPLICATE_OF = "duplicate_of"


# ---------------------------------------------------------------------- per split
def _dedup_partition(df, partition_info=None, *, splits, out_root, cfg, ranks, removed_dir):
    from ..frames import to_table

    t0 = time.perf_counter()
    s = splits[partition_info["number"]]
    table = to_table(df)
    del df
    g = read_parquet_table(f"{removed_dir}/{s.name}.parquet")
    rows = (g.column("doc").to_numpy() - doc_range(s, ranks)[0]).astype(np.int64)
    kinds = g.column("kind").to_pylist()
    n = table.num_rows
    if cfg.keep_all:
        id_type = table.schema.field(cfg.id_column).type
        vals = np.full(n, None, dtype=object)
        vals[rows] = g.column("kept_id").to_pylist()
        if DUPLICATE_OF in table.schema.names:
            table = table.drop_columns([DUPLICATE_OF])
        table = table.append_column(DUPLICATE_OF, pa.array(vals.tolist(), type=id_type))
    else:
        keep = np.ones(n, dtype=bool)
        keep[rows] = False
        table = table.filter(pa.array(keep))
    rec = split_record(s, n)
    rec.update(
        rows_out=table.num_rows if not cfg.keep_all else n - len(rows),
        removed={k: kinds.count(k) for k in sorted(set(kinds))},
        null_texts=int(table.column(cfg.text_column).null_count),
    )
    return finish_split(table, out_root, rec, t0=t0)


def _totals(parts):
    removed = {}
    for r in parts:
        for k, v in r.get("removed", {}).items():
            removed[k] = removed.get(k, 0) + v
    return {"removed": removed, "null_texts": int(sum(r.get("null_texts", 0) for r in parts))}


def plan_dedup(cfg) -> StageRun:
    """``datamask dedup`` of ``cfg`` (a :class:`~datamask.pipeline.text_config.DedupConfig`) as a :class:`StageRun`."""
    cfg = resolve_io(cfg, "dedup")
    kinds = parse_kinds(cfg.kind)
    params = lsh_params(cfg.ngram, cfg.num_perm, cfg.bands, cfg.threshold)
    cols = DedupColumns(cfg.id_column, cfg.text_column, cfg.embedding_column if "semantic" in kinds else None)
    plan = plan_splits(cfg, cols)
    ranks = file_ranks(plan)

    def setup(client, pending, out):
        where = out.state / DEDUP_DIR
        if not (where / SUMMARY_FILE).exists():
            find_groups(client, plan, cols, ranks, kinds, params, cfg, plan.device, where)
        return {"removed_dir": str(where / REMOVED_DIR)}

    return StageRun(
        "dedup",
        plan,
        cols,
        _dedup_partition,
        kwargs=dict(cfg=cfg, ranks=ranks, removed_dir=None),
        setup=setup,
        totals=_totals,
        extra=lambda out: {"dedup": json.loads((out.state / DEDUP_DIR / SUMMARY_FILE).read_text())},
    )


class DedupStage(Stage):
    name = "dedup"
    config = DedupConfig
    help = "remove exact, fuzzy (MinHash-LSH) and semantic duplicates across the whole corpus"
    description = (
        "Find duplicate groups across every file and split of INPUT and keep one row per group: the "
        "highest quality one when the quality column exists, else the first by path and row. --kind exact: "
        "equal text after folding case and whitespace; fuzzy: MinHash signatures of word n-grams (--ngram, "
        "--num-perm) and LSH bands (--bands, or chosen from --threshold), candidates verified against "
        "--threshold on their estimated Jaccard, groups as connected components; semantic: SemDeDup within "
        "clusters (the cluster column, or k-means), cosine above 1 - eps. Null texts are kept, counted, never "
        "grouped. With --keep-all every row is written with a duplicate_of column (the kept row's id)."
    )
    input_help = (
        "directory, file or glob of Parquet / JSONL / JSONL.gz with id and text columns, or the output "
        "directory of another datamask stage"
    )
    output_help = "output directory (data/, manifest.json, report/)"
    report = True

    plan = staticmethod(plan_dedup)

    def summary(self, manifest, out):
        t = manifest["totals"]
        kinds = ", ".join(
            f"{k} {v['removed']:,} in {v['groups']:,} groups" for k, v in manifest["dedup"]["kinds"].items()
        )
        return (
            f"datamask: deduplicated {t['rows_in']:,} rows to {t['rows_out']:,} (removed: {kinds or 'none'}; "
            f"{t['null_texts']:,} null texts kept) {split_runs(t, out)}"
        )


# ``datamask dedup``: ``cfg`` is a :class:`~datamask.pipeline.text_config.DedupConfig`; returns the manifest.
run_dedup = DedupStage().run
