"""The per-split stage runner every stage shares (select, embed, score, dedup...).

:func:`run_stage` runs a per-split stage (a :class:`~datamask.stages.base.SplitStage` bound
to its config by ``stage.bind(cfg)``: the plan of splits, the columns and the hooks are the
stage's own attributes and methods) the same way for every stage:

1. output (client): refuse a directory that holds another config or foreign files, find
   finished splits (resume), record the config fingerprint;
2. run (Dask workers): ``from_map`` reads each pending split, ``map_partitions`` (explicit
   ``meta``) runs :func:`process_split` on it, which hands the split's table to
   ``stage.process``, writes the split's file(s) under a temporary name, renamed when
   complete, then a small record of the split;
3. manifest (client): every split's record, config, versions, totals, wall time; the
   ``finish`` hook (the command line's HTML report) runs on it first, and it is written last:
   an output without ``manifest.json`` is incomplete, and one with it holds everything it
   lists (the report too: an interrupted report leaves no manifest, and a rerun writes both).

A split is finished when its record exists; the record is written after its data files,
so a killed run leaves either a complete split or none, and a rerun recomputes only the
missing ones. Tasks are idempotent (same name, same content), so Dask may rerun one whose
worker died. On an object store (no rename) each file is one object, whole or absent, and
the same order holds.

Paths are resolved on the client before anything is sent to a worker (:func:`resolve_io`).
After each split the client checks, through its own view of the storage, that the split's
files are there with the rows its record names (:meth:`~.output.Output.verify`): a worker
that wrote to a disk the client cannot see stops the run. When a run stops, every split
still running is waited for before a new output without a finished split is removed, so
no split lands in a directory that was removed under it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ConfigError, DataError, OutputError
from ..runtime.gpu import Level, select_level
from ..runtime.progress import PROGRESS_TOPIC, ProgressBars
from ..runtime.storage import inside, is_url, parse_options, resolve, set_options
from ..runtime.storage_plugin import StorageOptionsPlugin
from .frames import read_frame
from .io import Split, discover, hive_path, write_json_atomic, write_parquet_atomic
from .manifest import build_manifest, public_config, throughput, versions  # noqa: F401
from .output import DATA_DIR, MANIFEST, SHARED_STORAGE, STATE_DIR, Output, listed_missing, n_splits  # noqa: F401
from .split_record import SplitRecord

__all__ = [
    "run_stage",
    "process_split",
    "resolve_io",
    "finish_split",
    "record_frame",
    "Output",
    "ProgressBars",
    "run_pending",
    "write_split_files",
    "versions",
    "DATA_DIR",
    "STATE_DIR",
    "MANIFEST",
    "PROGRESS_TOPIC",
]

_RECORD_META = pd.DataFrame({"name": pd.Series([], dtype=object), "record": pd.Series([], dtype=object)})


def stage_level(cfg, needs=("cupy",)) -> Level:
    """The run's GPU level for ``cfg.device``; a one-line ConfigError when ``gpu`` cannot run."""
    return select_level(cfg.device, needs)


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


def run_pending(
    client, pending: list, cols, frame_device: str, per_split, kwargs: dict, out_root: str, on_done=None, verify=None
) -> dict:
    """Read each pending split (``from_map``), run ``per_split`` on it (``map_partitions``,
    explicit meta) and collect the one-row record frames it returns, as they complete.

    ``per_split(df, partition_info=None, *, splits, out_root, **kwargs)`` writes the split's
    output itself (atomically) and returns :func:`record_frame` rows, ``{"name", "record"}``,
    the record a :class:`~.split_record.SplitRecord`; the results are their dicts. ``verify(record)``
    (the client's check of what the worker wrote) runs on each record as it arrives. The
    tasks run through :func:`~datamask.runtime.executor.run_tasks`: when anything fails,
    the remaining splits are cancelled and those already running are waited for before the
    error is raised."""
    import dask
    import dask.dataframe as dd

    from ..runtime.executor import run_tasks

    with dask.config.set({"dataframe.convert-string": False}):
        first = pending[0]
        meta = read_frame(Split(first.path, first.rel, first.fmt, first.start, first.start), cols, frame_device)
        frames = dd.from_map(read_frame, pending, cols=cols, device=frame_device, meta=meta, enforce_metadata=False)
        records = frames.map_partitions(
            per_split, splits=pending, out_root=out_root, meta=_RECORD_META, enforce_metadata=False, **kwargs
        )
        tasks = records.to_delayed()
    results = {}

    def landed(_, df):
        for name, rec in zip(df["name"], df["record"]):
            rec = rec.to_dict()  # a SplitRecord (pipeline.split_record); the manifest lists its dict
            if verify is not None:
                verify(rec)
            results[name] = rec
            if on_done is not None:
                on_done(name)

    run_tasks(client, tasks, landed, what="split(s)")
    return results


# config fields that name a local file or folder a worker opens (resolved with input and output)
PATH_FIELDS = ("model", "tokenizer", "fasttext", "quadmix_params")


def resolve_io(cfg, command: str):
    """Validated ``cfg`` with every path resolved on the client, before any is sent to a
    worker: input and output (absolute, or a URL), the model, tokenizer and parameter files;
    its storage options set for this process. An output inside the input, or an input
    inside the output, is refused."""
    cfg = cfg.validated()
    if not cfg.input or not cfg.output:
        raise ConfigError(f"both input and output are required (datamask {command} INPUT OUTPUT)")
    set_options(parse_options(getattr(cfg, "storage_options", None)))
    changes = {"input": resolve(cfg.input), "output": resolve(cfg.output)}
    for name in PATH_FIELDS:
        v = getattr(cfg, name, None)
        if isinstance(v, str) and v and not is_url(v) and os.path.exists(v):
            changes[name] = resolve(v)
    if not is_url(changes["input"]) and not any(c in changes["input"] for c in "*?["):
        changes["input"] = str(Path(changes["input"]).resolve())
    inp, out = changes["input"], changes["output"]
    if not is_url(out):
        out = str(Path(out).resolve())
    if inside(out, inp):
        raise ConfigError(
            f"output {cfg.output} is inside the input {cfg.input}: a rerun would read its own "
            "output as input; choose an OUTPUT outside the input"
        )
    if inside(inp, out):
        raise ConfigError(
            f"input {cfg.input} is inside the output {cfg.output}; choose an OUTPUT that does not contain the input"
        )
    if getattr(cfg, "exclude", None):
        changes["exclude"] = _resolve_sets(cfg.exclude, out)
    return cfg.replace(**changes)


def _resolve_sets(paths, out) -> list:
    """``--exclude``'s sets resolved (absolute, or URLs) and checked to exist, none inside OUTPUT."""
    sets = []
    for e in paths:
        r = resolve(e)
        if not is_url(r) and not any(c in r for c in "*?["):
            r = str(Path(r).resolve())
        if inside(r, out):
            raise ConfigError(f"exclude set {e} is inside the output; keep it outside OUTPUT")
        try:
            discover(r)
        except DataError as err:
            raise DataError(f"exclude set {e}: {err}") from None
        sets.append(r)
    return sets


def finish_split(table: pa.Table, out_root, rec: SplitRecord, partition_on=None, t0=None) -> pd.DataFrame:
    """Write one split's table (atomically), then its record (a :class:`SplitRecord`, or its
    dict); return the record frame, which holds the record itself."""
    out = Output(out_root)
    rec = rec if isinstance(rec, SplitRecord) else SplitRecord.from_dict(rec)
    rec.fields.setdefault("files", [])
    _check_kept(out, rec)
    rec.update(
        files=write_split_files(table, out.data, rec.name, partition_on) if table is not None else [],
        rows_written=int(table.num_rows) if table is not None else 0,
    )
    if t0 is not None:
        rec.update(wall_seconds=round(time.perf_counter() - t0, 3))
    write_json_atomic(rec.to_dict(), out.parts / f"{rec.name}.json")
    _check_kept(out, rec)
    return record_frame(rec)


def record_frame(rec: SplitRecord) -> pd.DataFrame:
    """The one-row frame a per-split task returns to :func:`run_pending`: the split's name and record."""
    return pd.DataFrame({"name": [rec.name], "record": [rec]})


def _check_kept(out: Output, rec: SplitRecord):
    """(worker) Raise when this worker does not see the output's config record, which the
    client writes before any split: the run stopped and the client removed the output while
    this split still ran (a cancelled task that started runs to its end), or the worker writes
    where the client cannot see. What the split wrote is taken back, so that no directory
    without a config record appears (a rerun would refuse it as not written by datamask)."""
    if out.holds_config():
        return
    out.take_back(rec.to_dict())
    raise OutputError(
        f"split {rec.name} was not written: {out.root}/{STATE_DIR}/config.json is missing here on the "
        f"worker (the run stopped and its output was removed, or {SHARED_STORAGE})"
    )


def process_split(df, partition_info=None, *, splits, out_root, stage):
    """One split of a bound :class:`~datamask.stages.base.SplitStage` on a worker: its
    table to ``stage.process``, the record started here and completed with what it returns,
    the table and then the record written (:func:`finish_split`), timed."""
    from .frames import to_table

    t0 = time.perf_counter()
    s = splits[partition_info["number"]]
    table = to_table(df)
    del df
    rec = SplitRecord.of_split(s, table.num_rows)
    _check_kept(Output(out_root), rec)  # a split that starts after its run stopped computes nothing
    out, own = stage.process(table, s)
    del table
    rec.update(rows_out=0 if out is None else out.num_rows).update(own)  # the stage's own rows_out first
    return finish_split(out, out_root, rec, partition_on=getattr(stage.cfg, "partition_on", None), t0=t0)


def share_storage_options(client):
    """This process's storage options on every worker of ``client`` (also those joining later)."""
    from ..runtime.storage import options

    opts = options()
    if opts:
        client.register_plugin(StorageOptionsPlugin(opts))


def _run_splits(stage, client, pending, out: Output, records: dict, n_done: int):
    """The pending splits on the workers (progress bars; each checked from here as it
    lands, into ``records``); the run's throughput."""
    plan = stage.plan_
    frames = "cudf" if stage.gpu_frames and plan.device == "gpu" and plan.level.frames == "cudf" else "pandas"
    t_run = time.perf_counter()
    n_all = len(plan.splits)
    rows = {s.name: s.rows for s in pending} if stage.progress_rows else None
    bars = ProgressBars(
        client,
        n_all,
        n_done,
        len(pending),
        plan.cfg.quiet,
        steps_per=stage.steps_per_split(),
        per_split=rows,
        unit="row" if rows else "step",
    )
    with bars:
        root = str(out.root)
        done = run_pending(
            client, pending, stage.cols, frames, process_split, {"stage": stage}, root, bars.split_done, out.verify
        )
        records.update(done)
    n_workers = len(client.scheduler_info().get("workers", {}))
    return throughput(records, [s.name for s in pending], time.perf_counter() - t_run, n_workers, plan.level)


def run_stage(stage, client=None, finish=None) -> dict:
    """Run ``stage`` (a :class:`~datamask.stages.base.SplitStage` bound to its config:
    ``stage.bind(cfg)``) over every split not finished yet; returns the manifest.

    Shared by every stage: output checks and config-fingerprint refusal, resume from the
    per-split records, the client, the stage's hooks (``check`` before the output is touched,
    ``setup`` after it is prepared, ``totals`` and ``extra`` for the manifest), progress bars,
    the client's check of every split a worker wrote, the manifest. ``finish(manifest)``
    (the report) runs before the manifest is written and returns it, with what it wrote listed;
    on a finished output it runs again only when something the manifest lists is missing
    (:func:`~.output.listed_missing`) or it lists no report. A failure leaves the output holding
    its config record (a rerun resumes), or removes it whole when it is new and no split was
    finished, once every split in flight has ended."""
    from ..runtime.client import close_client, get_client

    t0 = time.perf_counter()
    plan = stage.plan_
    cfg = plan.cfg
    fingerprint = cfg.fingerprint(plan.device)
    out = Output(cfg.output)
    out.check_writable()
    done = out.inspect(cfg, fingerprint, plan.splits, stage.name)
    pending = [s for s in plan.splits if s.name not in done]
    if not pending and (out.root / MANIFEST).exists():  # nothing to do: report, start nothing
        manifest = json.loads((out.root / MANIFEST).read_text())
        if finish is not None and (manifest.get("report") is None or listed_missing(manifest, out.root)):
            manifest = finish(manifest)  # a report asked for now, or one that went missing
            write_json_atomic(manifest, out.root / MANIFEST)
        manifest["totals"].update(computed_this_run=0, resumed=n_splits(manifest["totals"]))
        return manifest
    own = client is None
    records = dict(done)
    try:
        if own:
            client = get_client(cfg, plan.device, n_tasks=len(pending), level=plan.level)
        share_storage_options(client)
        if pending:
            stage.check(client, pending)
        out.prepare(cfg, fingerprint, plan.device, stage=stage.name)
        if pending:
            stage.setup(client, pending, out)
        rate = _run_splits(stage, client, pending, out, records, len(done)) if pending else None
        out.clean_temps()
        manifest = build_manifest(
            plan,
            fingerprint,
            records,
            [s.name for s in pending],
            time.perf_counter() - t0,
            stage=stage.name,
            totals=stage.totals,
            extra=stage.extra(out),
            throughput=rate,
        )
        if finish is not None:
            manifest = finish(manifest)
        write_json_atomic(manifest, out.root / MANIFEST)  # last: the output is complete
        return manifest
    except BaseException as e:
        if not getattr(e, "_datamask_unsettled", False):
            out.remove_if_new_and_empty()
        raise
    finally:
        if own and client is not None:
            close_client(client)
