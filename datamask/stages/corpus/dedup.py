"""``datamask dedup``: exact, fuzzy (MinHash-LSH) and semantic duplicates across the corpus.

A :class:`~datamask.stages.base.SplitStage`. Duplicates span splits and files, so
the groups are found once for the whole corpus, in :meth:`DedupStage.setup`, by resumable
passes of Dask tasks (:mod:`.dedup_groups`) that keep everything in ``_datamask/dedup/``; a
resumed run filters every split with the same groups. Then, per split (:meth:`DedupStage.process`,
which reads the split's ``removed/<split>.parquet``): the kept rows, or with ``keep_all``
every row and a ``duplicate_of`` column (the kept row's id; null for kept rows). The
manifest's ``dedup`` key holds, per kind, the groups found and the rows removed, what each
pass took, and a few example groups with their texts (shown by ``datamask report``).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from ...dedup.deduplicator import DUPLICATE_OF, apply_removed, parse_kinds
from ...dedup.minhash import lsh_params
from ...pipeline.io import read_parquet_table
from ..base import split_runs
from ..declared import Dedup
from .dedup_exchange import DedupColumns, doc_range, file_ranks
from .dedup_groups import DEDUP_DIR, REMOVED_DIR, SUMMARY_FILE, find_groups

__all__ = ["DedupStage", "run_dedup", "DUPLICATE_OF"]


class DedupStage(Dedup):  # name, config, help: .declared
    summed = ("null_texts",)

    removed_dir = None  # _datamask/dedup/removed (setup)

    def columns(self, cfg):  # id and text, and the embeddings for the semantic kind
        semantic = "semantic" in parse_kinds(cfg.kind)
        return DedupColumns(cfg.id_column, cfg.text_column, cfg.embedding_column if semantic else None)

    def prepare(self, cfg):
        super().prepare(cfg)
        self.kinds = parse_kinds(self.cfg.kind)
        self.params = lsh_params(self.cfg.ngram, self.cfg.num_perm, self.cfg.bands, self.cfg.threshold)
        self.ranks = file_ranks(self.plan_)

    def setup(self, client, pending, out):
        where = out.state / DEDUP_DIR
        if not (where / SUMMARY_FILE).exists():
            find_groups(
                client, self.plan_, self.cols, self.ranks, self.kinds, self.params, self.cfg, self.plan_.device, where
            )
        self.removed_dir = str(where / REMOVED_DIR)

    def process(self, table, split):
        cfg, n = self.cfg, table.num_rows
        g = read_parquet_table(f"{self.removed_dir}/{split.name}.parquet")
        rows = (g.column("doc").to_numpy() - doc_range(split, self.ranks)[0]).astype(np.int64)
        kinds = g.column("kind").to_pylist()
        own = {"removed": {k: kinds.count(k) for k in sorted(set(kinds))}}
        own["null_texts"] = int(table.column(cfg.text_column).null_count)
        got = apply_removed(n, rows, g.column("kept_id").to_pylist(), cfg.keep_all)
        if not cfg.keep_all:
            return table.filter(pa.array(got)), own
        if DUPLICATE_OF in table.schema.names:
            table = table.drop_columns([DUPLICATE_OF])
        own["rows_out"] = n - len(rows)
        return table.append_column(
            DUPLICATE_OF, pa.array(got.tolist(), type=table.schema.field(cfg.id_column).type)
        ), own

    def totals(self, records):
        removed = {}
        for r in records:
            for k, v in r.get("removed", {}).items():
                removed[k] = removed.get(k, 0) + v
        return {**super().totals(records), "removed": removed}

    def extra(self, out):
        return {"dedup": json.loads((out.state / DEDUP_DIR / SUMMARY_FILE).read_text())}

    def summary(self, manifest, out):
        t = manifest["totals"]
        kinds = ", ".join(
            f"{k} {v['removed']:,} in {v['groups']:,} groups" for k, v in manifest["dedup"]["kinds"].items()
        )
        return (
            f"datamask: deduplicated {t['rows_in']:,} rows to {t['rows_out']:,} (removed: {kinds or 'none'}; "
            f"{t['null_texts']:,} null texts kept) {split_runs(t, out)}"
        )


# ``datamask dedup``: ``cfg`` is a :class:`~datamask.pipeline.config.DedupConfig`; returns the manifest.
run_dedup = DedupStage().run
