"""``datamask select``: Parquet/JSONL in, the selected rows out as partitioned Parquet.

1. plan (client, cheap): find input files, read Parquet footers, check columns and widths,
   cut files into splits of at most ``split_size`` rows, check every split's budget;
2. ids (Dask workers): one pass over the id column for duplicates (error or ``--set dedupe_ids=true``);
   under a token budget, one counting pass: every split's share, and the tokens ``--prune``
   leaves in it (a prune that leaves a split no more than its share is refused here);
3. select (cluster, per split): validate on the host, run the selection method with the
   split's own seed (:mod:`datamask.methods`) on the run's arrays (numpy, or cupy on a GPU
   level: the embeddings go to the GPU once, one split per GPU at a time while the next split
   is read, :mod:`~datamask.runtime.gpu_worker`), write the selected rows, then the
   split's record (with its device seconds and peak GPU memory);
4. the runner (:func:`~datamask.pipeline.runner.run_stage`) resumes, writes the manifest.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ...core.pg import MIN_STEPS
from ...errors import DataError
from ...pipeline.exclude import EXCLUDED_COUNTS, excluded_line, load_excluded
from ...pipeline.holdout import split_off_holdout
from ...pipeline.io import Split, normalize_embedding, read_split, write_parquet_atomic
from ...pipeline.output import n_splits, split_records
from ...pipeline.schema import Columns
from ...pipeline.select_split import duplicate_ids_message, select_split, selected_table
from ...pipeline.side_by_side import combine, coverage_warning, format_side_by_side, side_by_side_note
from ...pipeline.split_job import Plan, SplitJob
from ...pipeline.split_record import SplitRecord
from ...pipeline.tokens import token_totals
from ...runtime.progress import row_progress
from ..base import split_runs
from ..declared import Select

__all__ = ["SelectStage", "run_select", "plan_run", "find_duplicates"]


def plan_run(cfg, device=None) -> SplitJob:
    """``select``'s job: every file's splits, one embedding width, every split's row budget
    checked (a token budget is checked once the tokens are counted, :meth:`SelectStage.check`)."""
    cols = Columns.from_config(cfg)
    widths = {}

    def same_width(f, d):
        if d is None:
            return
        widths.setdefault(d, f.rel)
        if len(widths) > 1:
            (d0, f0), (d1, f1) = list(widths.items())[:2]
            raise DataError(
                f"column {cols.embedding!r} width differs between files: {f0} has {d0}, {f1} has {d1}; "
                "embed every file with the same model"
            )

    job = SplitJob.of_files(cfg, cols, device, partition_on=cfg.partition_on, on_file=same_width)
    job.plan.d = next(iter(widths), None)
    return job


def _read_ids(s: Split, order: int, cols: Columns) -> pd.DataFrame:
    if s.fmt == "parquet":
        from ...pipeline.io import read_parquet_table

        ids = read_parquet_table(s.path, columns=[cols.id]).column(0).slice(s.start, s.rows)
    else:
        ids = read_split(s, cols).column(cols.id)
    return pd.DataFrame(
        {"id": ids.to_pandas(), "order": np.int32(order), "row": np.arange(s.start, s.stop, dtype=np.int64)}
    )


def find_duplicates(client, plan: Plan, cols: Columns, dedupe: bool) -> dict:
    """``{split name: rows to drop}``; raises when ids repeat and ``dedupe`` is off."""
    import dask.dataframe as dd

    first = plan.splits[0]
    meta = _read_ids(Split(first.path, first.rel, first.fmt, first.start, first.start), 0, cols)
    ids = dd.from_map(
        _read_ids, plan.splits, list(range(len(plan.splits))), cols=cols, meta=meta, enforce_metadata=False
    )
    counts = ids["id"].value_counts()
    dup = client.compute(counts[counts > 1]).result()
    if len(dup) == 0:
        return {}
    rows = client.compute(ids[ids["id"].isin(list(dup.index))]).result().sort_values(["order", "row"])
    if not dedupe:
        ex = rows[rows["id"] == rows["id"].iloc[0]].head(2)
        at = [f"{plan.splits[o].rel} row {r}" for o, r in zip(ex["order"], ex["row"])]
        raise DataError(duplicate_ids_message(cols.id, len(dup), ex["id"].iloc[0], at))
    drop = rows[rows.duplicated("id", keep="first")]
    return {plan.splits[o].name: g["row"].to_numpy() for o, g in drop.groupby("order")}


def _progress_callback(name):
    """The estimator's callback that reports its steps to the client's bars (on a worker)."""
    report = row_progress(name)
    if report is None:
        return None

    def cb(est, rec):
        report(rec["step"])
        return False

    return cb


class SelectStage(Select):  # name, config, help: .declared
    gpu_frames = True

    drops: dict = {}  # split name -> rows of ids repeated across the corpus (check)
    excluded_ = None  # the evaluation and held-out rows kept out of the selection (prepare; --exclude)
    job_ = None  # the splits, and under --tokens every split's share and how it was shared (prepare, check)
    centroids_ = None  # the report's k-means of an input without clusters (setup; analysis.report.sample)

    def columns(self, cfg):
        return Columns.from_config(cfg)

    def prepare(self, cfg):
        from ...pipeline.runner import resolve_io

        self.cfg = resolve_io(cfg, "select")
        self.cols = self.columns(self.cfg)
        self.job_ = plan_run(self.cfg)
        self.plan_ = self.job_.plan
        self.excluded_ = load_excluded(self.cfg.exclude, self.cfg.text_column)
        self.in_type = None  # the embedding's type, restored after a cudf frame (no fixed-size lists)
        if self.plan_.level.frames == "cudf":
            first = self.plan_.splits[0]
            empty = Split(first.path, first.rel, first.fmt, first.start, first.start)
            self.in_type = read_split(empty, self.cols).schema.field(self.cols.embedding).type

    def check(self, client, pending):
        cfg = self.cfg
        self.drops = find_duplicates(client, self.plan_, self.cols, cfg.dedupe_ids)
        if cfg.budget_in_tokens:  # every split's share, from the whole corpus's tokens
            # the same pass counts the tokens --prune leaves: a split it leaves no more than its
            # share is refused here, before any split is selected or anything written
            self.job_.count_tokens(client, self.cols, drops=self.drops, excluded=self.excluded_)

    def setup(self, client, pending, out):
        """The report's clusters for an input without a ``cluster`` column: k-means fitted on
        its sample before any split (kept in ``_datamask/``), so each split's ``why`` counts
        its rows by the clusters the report's map names."""
        from ...analysis.report.sample import report_centroids

        self.centroids_ = report_centroids(self.cfg, self.cols, out.state)

    def steps_per_split(self):
        return (
            int(self.cfg.solver("steps") or MIN_STEPS) if self.cfg.method == "datamask" else 0
        )  # None: at least MIN_STEPS

    def process(self, table, split):
        """Drop the corpus-wide duplicate ids and the holdout, run
        :func:`~datamask.pipeline.select_split.select_split` (the same per-split function as
        :func:`datamask.dask.select`); the selected rows and the split's record."""
        cfg, s = self.cfg, split
        table, rec = self._set_aside(self._restore_types(table, s), s)
        sel, own = select_split(
            table,
            cfg,
            rec["seed"],
            s.where(),
            s.start,
            level=self.plan_.level,
            d=self.plan_.d,
            callback=_progress_callback(s.name),
            split_tokens=self.job_.share(s),
            centroids=self.centroids_,
        )
        rec = SplitRecord.from_dict(rec).update(own)  # the method's rows_in, rows_out, budget ... over the start
        return (None if table.num_rows == 0 else selected_table(table, sel, cfg.keep_all)), rec

    def _restore_types(self, table, s):
        """On the RAPIDS level: the embedding back to a fixed-size list of its input type."""
        if self.plan_.level.frames != "cudf":
            return table
        cols = self.cols
        table = normalize_embedding(table, cols, s.where(), s.start)
        if self.in_type is not None:
            i = table.schema.get_field_index(cols.embedding)
            table = table.set_column(i, cols.embedding, table.column(cols.embedding).cast(self.in_type))
        return table

    def _set_aside(self, table, s):
        """The split without its repeated ids, its holdout (written here) and the rows of the
        evaluation and held-out sets (``--exclude``); the record's start."""
        cfg = self.cfg
        n_dupes = 0
        if s.name in self.drops:
            keep = np.ones(table.num_rows, dtype=bool)
            keep[np.asarray(self.drops[s.name]) - s.start] = False
            n_dupes = int((~keep).sum())
            table = table.filter(pa.array(keep))
        held_files = []
        if cfg.holdout:  # set aside before the method sees the split (datamask.pipeline.holdout)
            table, held = split_off_holdout(table, cfg.holdout, s.seed(cfg.seed))
            held_files = [f"{s.name}.parquet"]
            write_parquet_atomic(held, self.output.holdout / held_files[0])
        rec = {
            "seed": s.seed(cfg.seed),
            "duplicates_dropped": n_dupes,
            "holdout_rows": s.rows - n_dupes - table.num_rows,
            "holdout_files": held_files,
        }
        if self.excluded_ is not None:  # after the holdout: the slice does not depend on the sets
            table, counts = self.excluded_.split(table, self.cols.id, cfg.text_column)
            rec.update(counts)
        rec["rows_in"] = table.num_rows
        return table, rec

    def totals(self, records):
        out = {"holdout_rows": int(sum(r.get("holdout_rows", 0) for r in records))} if self.cfg.holdout else {}
        if self.cfg.exclude:
            out.update({k: int(sum(r.get(k, 0) for r in records)) for k in EXCLUDED_COUNTS})
        out["pg_improved"] = pg_improved(records)
        out["pg_kept_start"] = int(sum((r.get("optimizer") or {}).get("stopped_by") == "start" for r in records))
        if self.cfg.budget_in_tokens:
            out.update(token_totals(records, self.job_.token_info))
        return out

    def summary(self, manifest, out):
        t = manifest["totals"]
        line = f"datamask: selected {t['rows_out']:,} of {t['rows_in']:,} rows {split_runs(t, out)}"
        excluded = excluded_line(t, manifest.get("config", {}).get("exclude"))
        if excluded:
            line = f"{excluded}\n{line}"
        if manifest["config"].get("method") == "datamask" and "pg_improved" in t:
            line += f"\ndatamask: policy gradient improved its start on {t['pg_improved']} of {n_splits(t)} splits"
            if t.get("pg_kept_start"):
                line += (
                    f"; {t['pg_kept_start']} returned their start, which pg's first steps did not improve on "
                    "(the start solved the objective: stopped_by 'start' in the manifest)"
                )
        tok = t.get("tokens")
        if tok:
            line += (
                f"\ndatamask: kept {tok['tokens_out']:,} of {tok['corpus_tokens']:,} tokens (budget "
                f"{tok['budget']:,}; counts from {tok['source'] or 'no split'})"
            )
            if tok["covers_corpus"]:
                line += "\ndatamask: the token budget is the corpus's tokens: every row is kept"
        cfg = manifest.get("config", {})
        table = combine(split_records(manifest), cfg.get("method", "datamask"))
        if table is not None:  # the report's table: the same numbers under the same labels
            line += f"\n{format_side_by_side(table)}\n({side_by_side_note(cfg.get('reference_size'))})"
            warning = coverage_warning(table, [table.index[0]])
            if warning:
                line += f"\ndatamask: warning: {warning}"
        return line


def pg_improved(records) -> int:
    """How many splits' selections policy gradient improved on its start (their ``optimizer``)."""
    return int(sum(bool((r.get("optimizer") or {}).get("pg_improved")) for r in records))


# Run the whole selection for ``cfg`` (a ``SelectConfig``); returns the manifest.
run_select = SelectStage().run
