"""The per-split stage runner every stage shares (select, embed, score, dedup...).

A per-split stage (:class:`~datamask.pipeline.stages.base.Stage`) plans a :class:`StageRun`: a
plan of splits and a ``per_split`` function that handles one split. :func:`run_stage` does the
rest, the same way for every stage:

1. output (client): refuse a directory that holds another config or foreign files, find
   finished splits (resume), record the config fingerprint;
2. run (Dask workers): ``from_map`` reads each pending split, ``map_partitions`` (explicit
   ``meta``) runs ``per_split`` on it, which writes the split's file(s) under a temporary
   name, renamed when complete, then a small record of the split;
3. manifest (client): every split's record, config, versions, totals, wall time. It is
   written last: an output without ``manifest.json`` is incomplete.

A split is finished when its record exists; the record is written after its data files,
so a killed run leaves either a complete split or none, and a rerun recomputes only the
missing ones. Tasks are idempotent (same name, same content), so Dask may rerun one whose
worker died.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import __version__
from ..errors import ConfigError, DataError
from .frames import read_frame
from .gpu import CPU, Level, select_level
from .io import Split, discover, hive_path, inspect_file, make_splits, write_json_atomic, write_parquet_atomic
from .output import DATA_DIR, MANIFEST, STATE_DIR, Output, n_splits  # noqa: F401
from .progress import PROGRESS_TOPIC, ProgressBars

__all__ = ["run_stage", "StageRun", "Stage", "plan_splits", "resolve_io", "finish_split", "split_record", "Plan", "Output",
           "ProgressBars", "run_pending", "write_split_files", "versions", "DATA_DIR", "STATE_DIR", "MANIFEST",
           "PROGRESS_TOPIC"]

_RECORD_META = pd.DataFrame({"name": pd.Series([], dtype=object), "record": pd.Series([], dtype=object)})


# ---------------------------------------------------------------------- 1. plan
@dataclass
class Plan:
    cfg: object
    device: str  # "cpu" | "gpu" (what the config fingerprint records)
    splits: list
    d: int | None
    n_files: int
    n_rows: int
    skipped_files: list = field(default_factory=list)  # files with 0 rows
    level: Level = CPU  # what runs: frame/array library, k-means, cluster (datamask.pipeline.gpu)


def stage_level(cfg, needs=("cupy",)) -> Level:
    """The run's GPU level for ``cfg.device``; a one-line ConfigError when ``gpu`` cannot run."""
    return select_level(cfg.device, needs)


def stage_device(cfg) -> str:
    return stage_level(cfg).device


# ---------------------------------------------------------------------- 2. output


# ---------------------------------------------------------------------- 3. ids


# ---------------------------------------------------------------------- 4. select


def write_split_files(table: pa.Table, data: Path, name: str, partition_on) -> list:
    if not partition_on:
        write_parquet_atomic(table, data / f"{name}.parquet")
        return [f"{name}.parquet"]
    files = []
    col = table.column(partition_on)
    for v in pc.unique(col).to_pylist():
        keep = pc.is_null(col) if v is None else pc.equal(col, pa.scalar(v, col.type))
        sub = table.filter(keep).drop_columns([partition_on])
        rel = f"{hive_path(partition_on, v)}/{name}.parquet"
        write_parquet_atomic(sub, data / rel)
        files.append(rel)
    return files


def run_pending(client, pending: list, cols, frame_device: str, per_split, kwargs: dict, out_root: str,
                on_done=None) -> dict:
    """Read each pending split (``from_map``), run ``per_split`` on it (``map_partitions``,
    explicit meta) and collect the one-row record frames it returns, as they complete.

    ``per_split(df, partition_info=None, *, splits, out_root, **kwargs)`` writes the split's
    output itself (atomically) and returns ``{"name", "record"}`` rows."""
    import dask
    import dask.dataframe as dd
    from distributed import as_completed

    with dask.config.set({"dataframe.convert-string": False}):
        first = pending[0]
        meta = read_frame(Split(first.path, first.rel, first.fmt, first.start, first.start), cols, frame_device)
        frames = dd.from_map(read_frame, pending, cols=cols, device=frame_device, meta=meta,
                             enforce_metadata=False)
        records = frames.map_partitions(per_split, splits=pending, out_root=out_root, meta=_RECORD_META,
                                        enforce_metadata=False, **kwargs)
        futures = client.compute(records.to_delayed())
    results = {}
    try:
        for fut in as_completed(futures, loop=client.loop):
            if fut.status == "error":
                exc = fut.exception()
                raise exc
            df = fut.result()
            for name, rec in zip(df["name"], df["record"]):
                results[name] = json.loads(rec)
                if on_done is not None:
                    on_done(name)
    except BaseException:
        client.cancel(futures)
        raise
    return results


# ---------------------------------------------------------------------- 5. manifest
def versions():
    import dask
    import distributed

    return {"datamask": __version__, "numpy": np.__version__, "pandas": pd.__version__, "pyarrow": pa.__version__,
            "dask": dask.__version__, "distributed": distributed.__version__}


def build_manifest(plan, fingerprint, records, computed, wall, stage="select", totals=None, extra=None,
                   throughput=None):
    parts = sorted(records.values(), key=lambda r: (r["source"], r["start"]))
    cfg = plan.cfg
    m = {
        "status": "complete",
        "stage": stage,
        "fingerprint": fingerprint,
        "config": cfg.to_dict(),
        "device": plan.device,
        "seed": getattr(cfg, "seed", None),
        "versions": versions(),
        "input": {"files": plan.n_files, "rows": plan.n_rows, "empty_files": plan.skipped_files},
        "totals": {
            "splits": len(parts),
            "partitions": len(parts),  # its 0.2 name, read by older tools; dropped in 0.4
            "rows_in": int(sum(r["rows_in"] for r in parts)),
            "rows_out": int(sum(r["rows_out"] for r in parts)),
            "computed_this_run": len(computed),
            "resumed": len(parts) - len(computed),
        },
        "wall_seconds": round(wall, 3),
        "splits": parts,
    }
    if totals is not None:
        m["totals"].update(totals(parts))
    level = getattr(plan, "level", None)
    if level is not None:
        m["gpu"] = level.to_dict()
    if throughput is not None:
        m["throughput"] = throughput
    if extra is not None:
        m.update(extra)
    return m


def throughput(records: dict, computed: list, seconds: float, n_workers: int, level: Level) -> dict | None:
    """Rows per second of the splits computed this run, end to end (first read to last write,
    cluster start excluded), in all and per worker (per GPU on a GPU level), and each
    worker's share: splits, rows and seconds holding the device."""
    recs = [records[n] for n in computed if n in records]
    if not recs or seconds <= 0:
        return None
    rows = int(sum(r["rows_in"] for r in recs))
    per = "gpu" if level.device == "gpu" else "worker"
    workers: dict = {}
    for r in recs:
        w = workers.setdefault(r.get("worker", "?"), {"splits": 0, "rows": 0, "device_seconds": 0.0})
        w["splits"] += 1
        w["rows"] += int(r["rows_in"])
        w["device_seconds"] = round(w["device_seconds"] + float(r.get("device_seconds", 0.0)), 3)
    n = max(1, int(n_workers))
    out = {"rows": rows, "seconds": round(seconds, 3), "workers": n, "rows_per_second": round(rows / seconds, 1),
           f"rows_per_second_per_{per}": round(rows / seconds / n, 1), "per_worker": workers}
    peaks = [r["gpu_peak_bytes"] for r in recs if "gpu_peak_bytes" in r]
    if peaks:
        out["gpu_peak_bytes_max"] = int(max(peaks))
        ratios = [r["gpu_peak_ratio"] for r in recs if "gpu_peak_ratio" in r]
        if ratios:
            out["gpu_peak_ratio_max"] = float(max(ratios))
    return out


# ---------------------------------------------------------------------- the run
@dataclass
class StageRun:
    """One run of a per-split stage (select, embed, score, dedup), as :func:`run_stage` runs it.

    ``per_split(df, partition_info=None, *, splits, out_root, **kwargs)`` handles one split:
    it writes the split's files under ``out_root/data`` atomically, then its record under
    ``out_root/_datamask/parts`` (see :func:`finish_split`), and returns the record frame.
    """

    name: str
    plan: Plan
    cols: object  # Columns or TextColumns: how splits are read and checked
    per_split: Callable
    kwargs: dict = field(default_factory=dict)  # passed to ``per_split`` (must pickle)
    frame_device: str = "cpu"  # "gpu": partitions are cudf frames on the RAPIDS level, pandas otherwise
    check: Callable | None = None  # (client, pending) -> kwargs; before the output dir is touched
    setup: Callable | None = None  # (client, pending, out) -> kwargs; after it is prepared
    steps_per: int = 0  # progress steps each split reports (select's policy gradient)
    totals: Callable | None = None  # (records) -> extra manifest totals
    extra: Callable | None = None  # (out) -> extra manifest keys


# The 0.2 name of StageRun, for code written against it; dropped in 0.4.
Stage = StageRun


def resolve_io(cfg, command: str):
    """Validated ``cfg`` with an absolute input path; input and output are required."""
    cfg = cfg.validated()
    if not cfg.input or not cfg.output:
        raise ConfigError(f"both input and output are required (datamask {command} INPUT OUTPUT)")
    return cfg.replace(input=str(Path(cfg.input).resolve()) if not any(c in cfg.input for c in "*?[")
                       else os.path.abspath(cfg.input))


def plan_splits(cfg, cols, device=None, partition_on=None, on_file=None, needs=("cupy",)) -> Plan:
    """Input files and their splits, with ``cols``' checks on every file (footers / line 1).

    ``on_file(file, width)`` sees each file's embedding width (None without one). ``needs``:
    the GPU libraries the stage computes with on a GPU (see :func:`~datamask.pipeline.gpu.select_level`)."""
    files = discover(cfg.input)
    splits, empty, total = [], [], 0
    for f in files:
        n, d = inspect_file(f, cols, partition_on)
        if on_file is not None:
            on_file(f, d)
        if n == 0:
            empty.append(f.rel)
        total += n
        splits.extend(make_splits(f, n, int(cfg.split_size)))
    if total == 0:
        raise DataError(f"empty input: {len(files)} file(s) under {cfg.input!r} hold 0 rows")
    level = select_level(device, needs) if device is not None else stage_level(cfg, needs)
    return Plan(cfg, level.device, splits, None, len(files), total, empty, level)


def finish_split(table: pa.Table, out_root, rec: dict, partition_on=None, t0=None) -> pd.DataFrame:
    """Write one split's table (atomically), then its record; return the record frame."""
    out = Output(out_root)
    s_name = rec["name"]
    rec["files"] = write_split_files(table, out.data, s_name, partition_on) if table is not None else []
    if t0 is not None:
        rec["wall_seconds"] = round(time.perf_counter() - t0, 3)
    write_json_atomic(rec, out.parts / f"{s_name}.json")
    return pd.DataFrame({"name": [s_name], "record": [json.dumps(rec)]})


def split_record(s: Split, n_rows: int) -> dict:
    """The fields every split record starts with."""
    return {"name": s.name, "identity": s.identity, "source": s.rel, "start": s.start, "stop": s.stop,
            "rows_in": int(n_rows)}


def run_stage(stage: StageRun, client=None) -> dict:
    """Run ``stage`` over every split not finished yet; returns the manifest.

    Shared by every stage: output checks and config-fingerprint refusal, resume from the
    per-split records, the client, progress bars, the manifest. A failure leaves a new output
    directory removed when no split was finished."""
    from .client import close_client, get_client

    t0 = time.perf_counter()
    plan = stage.plan
    cfg = plan.cfg
    fingerprint = cfg.fingerprint(plan.device)
    out = Output(cfg.output)
    out.check_writable()
    done = out.inspect(cfg, fingerprint, plan.splits)
    pending = [s for s in plan.splits if s.name not in done]
    if not pending and (out.root / MANIFEST).exists():  # nothing to do: report, start nothing
        manifest = json.loads((out.root / MANIFEST).read_text())
        manifest["totals"].update(computed_this_run=0, resumed=n_splits(manifest["totals"]))
        return manifest
    own = client is None
    records = dict(done)
    try:
        if own:
            client = get_client(cfg, plan.device, n_tasks=len(pending), level=plan.level)
        kwargs = dict(stage.kwargs)
        if stage.check is not None and pending:
            kwargs.update(stage.check(client, pending))
        out.prepare(cfg, fingerprint, plan.device, stage=stage.name)
        if stage.setup is not None and pending:
            kwargs.update(stage.setup(client, pending, out))
        rate = None
        if pending:
            frames = "cudf" if stage.frame_device == "gpu" and plan.level.frames == "cudf" else "pandas"
            t_run = time.perf_counter()
            with ProgressBars(client, len(plan.splits), len(done), len(pending), cfg.quiet,
                              steps_per=stage.steps_per) as bars:
                records.update(run_pending(client, pending, stage.cols, frames, stage.per_split,
                                           kwargs, str(out.root), bars.partition_done))
            rate = throughput(records, [s.name for s in pending], time.perf_counter() - t_run,
                              len(client.scheduler_info().get("workers", {})), plan.level)
        out.clean_temps()
        manifest = build_manifest(plan, fingerprint, records, [s.name for s in pending], time.perf_counter() - t0,
                                  stage=stage.name, totals=stage.totals,
                                  extra=stage.extra(out) if stage.extra is not None else None, throughput=rate)
        write_json_atomic(manifest, out.root / MANIFEST)
        return manifest
    except BaseException:
        out.remove_if_new_and_empty()
        raise
    finally:
        if own and client is not None:
            close_client(client)


