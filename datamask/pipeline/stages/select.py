"""``datamask select``: Parquet/JSONL in, the selected rows out as partitioned Parquet.

1. plan (client, cheap): find input files, read Parquet footers, check columns and widths,
   cut files into splits of at most ``split_size`` rows, check every split's budget;
2. ids (cluster): one pass over the id column for duplicates (error or ``--dedupe-ids``);
3. select (cluster, per split): validate on the host, run the selection method with the
   split's own seed (:mod:`datamask.methods`) on the run's arrays (numpy, or cupy on a GPU
   level: the embeddings go to the GPU once, one split per GPU at a time while the next split
   is read, :mod:`~datamask.pipeline.gpu_worker`), write the selected rows, then the
   split's record (with its device seconds and peak GPU memory);
4. the runner (:func:`~datamask.pipeline.runner.run_stage`) resumes, writes the manifest.
"""
from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pyarrow as pa

from ...core.estimator import rows_after_pruning
from ...errors import DataError
from ...methods import budget_for, prunes, score, select
from ..frames import to_table
from ..gpu_worker import DeviceWork, device_array
from ..holdout import split_off_holdout
from ..io import Split, normalize_embedding, read_split, write_json_atomic, write_parquet_atomic
from ..runner import PROGRESS_TOPIC, Output, Plan, Stage, plan_splits, resolve_io, run_stage, write_split_files
from ..schema import LOGIT, SELECTED, Columns, check_table, check_vectors

__all__ = ["run_select", "plan_run", "find_duplicates"]


def plan_run(cfg, device=None) -> Plan:
    """``select``'s plan: every file's splits, one embedding width, every split's budget."""
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

    plan = plan_splits(cfg, cols, device, partition_on=cfg.partition_on, on_file=same_width)
    for s in plan.splits:
        _check_budget(s, cfg)
    plan.d = next(iter(widths), None)
    return plan


def _check_budget(s: Split, cfg):
    S = budget_for(s.rows, cfg)
    if S > s.rows:
        raise DataError(
            f"{s.where()}: budget {S} is larger than the partition's {s.rows} rows; "
            "lower --budget or use --ratio"
        )
    if S < 1:
        raise DataError(f"{s.where()}: ratio {cfg.ratio} of {s.rows} rows rounds to 0; raise --ratio or --split-size")
    n_keep = rows_after_pruning(s.rows, cfg.prune)
    if prunes(cfg.method) and S > n_keep:
        raise DataError(
            f"{s.where()}: budget {S} is larger than the {n_keep} rows left after pruning "
            f"(prune {cfg.prune}); lower --prune, --ratio or --budget"
        )


def _read_ids(s: Split, order: int, cols: Columns) -> pd.DataFrame:
    if s.fmt == "parquet":
        from ..io import read_parquet_table

        ids = read_parquet_table(s.path, columns=[cols.id]).column(0).slice(s.start, s.rows)
    else:
        ids = read_split(s, cols).column(cols.id)
    return pd.DataFrame({"id": ids.to_pandas(), "order": np.int32(order),
                         "row": np.arange(s.start, s.stop, dtype=np.int64)})


def find_duplicates(client, plan: Plan, cols: Columns, dedupe: bool) -> dict:
    """``{split name: rows to drop}``; raises when ids repeat and ``dedupe`` is off."""
    import dask.dataframe as dd

    first = plan.splits[0]
    meta = _read_ids(Split(first.path, first.rel, first.fmt, first.start, first.start), 0, cols)
    ids = dd.from_map(_read_ids, plan.splits, list(range(len(plan.splits))), cols=cols, meta=meta,
                      enforce_metadata=False)
    counts = ids["id"].value_counts()
    dup = client.compute(counts[counts > 1]).result()
    if len(dup) == 0:
        return {}
    rows = client.compute(ids[ids["id"].isin(list(dup.index))]).result().sort_values(["order", "row"])
    if not dedupe:
        ex = rows[rows["id"] == rows["id"].iloc[0]].head(2)
        at = [f"{plan.splits[o].rel} row {r}" for o, r in zip(ex["order"], ex["row"])]
        raise DataError(
            f"column {cols.id!r} has duplicate ids ({len(dup)} values repeat, e.g. {ex['id'].iloc[0]!r} at "
            f"{' and '.join(at)}); deduplicate the input or pass --dedupe-ids to keep the first"
        )
    drop = rows[rows.duplicated("id", keep="first")]
    return {plan.splits[o].name: g["row"].to_numpy() for o, g in drop.groupby("order")}


def _progress_callback(name):
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return None

    def cb(est, rec):
        worker.log_event(PROGRESS_TOPIC, {"name": name, "step": int(rec["step"])})
        return False

    return cb


def _score_all(E, q, cfg, seed):
    """The objective of the whole partition ("before"), by the same ``evaluate`` as every
    selection (blockwise, so no full-size copy). Facility location is skipped: every row is
    its own nearest neighbour, so it is 1 by definition."""
    if cfg.diversity == "facility":
        return None
    return score(E, q, np.ones(E.shape[0], dtype=bool), cfg, seed)


def _select_partition(df, partition_info=None, *, splits, cfg, level, d, out_root, drops, in_type):
    """One partition: validate (host), select (the level's arrays, one split per GPU at a
    time), write the data file(s), then the record."""
    t0 = time.perf_counter()
    s = splits[partition_info["number"]]
    cols = Columns.from_config(cfg)
    table = to_table(df)
    del df
    if level.frames == "cudf":  # cudf holds no fixed-size lists and no float16
        table = normalize_embedding(table, cols, s.where(), s.start)
        if in_type is not None:
            table = table.set_column(table.schema.get_field_index(cols.embedding), cols.embedding,
                                     table.column(cols.embedding).cast(in_type))
    n_dupes = 0
    if s.name in drops:
        keep = np.ones(table.num_rows, dtype=bool)
        keep[np.asarray(drops[s.name]) - s.start] = False
        n_dupes = int((~keep).sum())
        table = table.filter(pa.array(keep))
    out = Output(out_root)
    held_files = []
    if cfg.holdout:  # set aside before the method sees the split (datamask.pipeline.holdout)
        table, held = split_off_holdout(table, cfg.holdout, s.seed(cfg.seed))
        held_files = [f"{s.name}.parquet"]
        write_parquet_atomic(held, out.holdout / held_files[0])
    rec = {"name": s.name, "identity": s.identity, "source": s.rel, "start": s.start, "stop": s.stop,
           "seed": s.seed(cfg.seed), "rows_in": table.num_rows, "duplicates_dropped": n_dupes,
           "holdout_rows": s.rows - n_dupes - table.num_rows, "holdout_files": held_files}
    if table.num_rows == 0:  # an empty partition is skipped, not an error
        rec.update(rows_out=0, files=[], rows_written=0, skipped="empty", wall_seconds=time.perf_counter() - t0)
        write_json_atomic(rec, out.parts / f"{s.name}.json")
        return pd.DataFrame({"name": [s.name], "record": [json.dumps(rec)]})
    E, q = check_table(table, s.where(), cols, s.start, expect_d=d, vectors=False)
    seed = rec["seed"]
    if n_dupes or held_files:
        _check_budget(Split(s.path, s.rel, s.fmt, 0, table.num_rows), cfg)
    with DeviceWork(level, s.where(), cfg.split_size, data_bytes=E.nbytes) as work:
        E, q = device_array(E, level), device_array(q, level)  # to the GPU once (cupy levels)
        check_vectors(E, s.where(), cols.embedding, s.start)  # there, not on the host
        sel = select(E, q, cfg, seed, s.where(), callback=_progress_callback(s.name), table=table)
        before = _score_all(E, q, cfg, seed)
        del E, q
    rec.update(work.record())
    if cfg.keep_all:
        logits = sel.logits if sel.logits is not None else np.full(table.num_rows, np.nan)
        result = table.append_column(SELECTED, pa.array(sel.mask)).append_column(LOGIT, pa.array(logits))
    else:
        result = table.filter(pa.array(sel.mask))
    files = write_split_files(result, out.data, s.name, cfg.partition_on)
    rec.update(rows_out=int(sel.mask.sum()), budget=sel.budget, before=before, after=sel.objective,
               n_steps=sel.n_steps, select_seconds=round(sel.seconds, 3), files=files, rows_written=result.num_rows,
               wall_seconds=round(time.perf_counter() - t0, 3))
    if sel.history:  # the trajectory the report draws
        rec["history"] = sel.history
    write_json_atomic(rec, out.parts / f"{s.name}.json")
    return pd.DataFrame({"name": [s.name], "record": [json.dumps(rec)]})


def run_select(cfg, client=None) -> dict:
    """Run the whole selection for ``cfg`` (a ``SelectConfig``); returns the manifest."""
    cfg = resolve_io(cfg, "select")
    plan = plan_run(cfg)
    cols = Columns.from_config(cfg)
    in_type = None
    if plan.level.frames == "cudf":
        first = plan.splits[0]
        in_type = read_split(Split(first.path, first.rel, first.fmt, first.start, first.start), cols)\
            .schema.field(cols.embedding).type
    stage = Stage(
        "select", plan, cols, _select_partition,
        kwargs=dict(cfg=cfg, level=plan.level, d=plan.d, drops={}, in_type=in_type),
        frame_device=plan.device,
        check=lambda client, pending: {"drops": find_duplicates(client, plan, cols, cfg.dedupe_ids)},
        steps_per=int(cfg.steps) if cfg.solver == "pg" else 0,
        totals=(lambda parts: {"holdout_rows": int(sum(r.get("holdout_rows", 0) for r in parts))})
        if cfg.holdout else None,
    )
    return run_stage(stage, client)

