"""``datamask select``: Parquet/JSONL in, the selected rows out as partitioned Parquet.

Stages (DESIGN.md section 4):

1. plan (client, cheap): find input files, read Parquet footers, check columns and widths,
   cut files into splits of at most ``split_size`` rows, check every split's budget;
2. output (client): refuse a directory that holds a different config, find finished
   splits (resume), record the config fingerprint;
3. ids (cluster): one pass over the id column for duplicates (error or ``--dedupe-ids``);
4. select (cluster): ``from_map`` reads each pending split, ``map_partitions`` validates it,
   runs the selection method with the split's own seed and writes its file(s) under a
   temporary name, renamed when complete, then a small record of the split;
5. manifest (client): every split's record, config, versions, totals, wall time.

A split is finished when its record exists; the record is written after its data files,
so a killed run leaves either a complete split or none, and a rerun recomputes only the
missing ones. Tasks are idempotent (same name, same content), so Dask may rerun one whose
worker died.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import __version__
from .backend import resolve_device
from .errors import ConfigError, DataError, OutputError
from .io import Split, discover, hive_path, inspect_file, make_splits, read_split, write_json_atomic, write_parquet_atomic
from .schema import LOGIT, SELECTED, Columns, check_table
from .optimizer import rows_after_pruning
from .selection import budget_for, prunes, score, select

__all__ = ["run_select", "run_stage", "Stage", "plan_run", "plan_splits", "resolve_io", "finish_split",
           "split_record", "Plan", "Output", "DATA_DIR", "STATE_DIR", "MANIFEST"]

DATA_DIR = "data"
STATE_DIR = "_datamask"
MANIFEST = "manifest.json"
PROGRESS_TOPIC = "datamask-progress"
_RECORD_META = pd.DataFrame({"name": pd.Series([], dtype=object), "record": pd.Series([], dtype=object)})


# ---------------------------------------------------------------------- 1. plan
@dataclass
class Plan:
    cfg: object
    device: str
    splits: list
    d: int | None
    n_files: int
    n_rows: int
    skipped_files: list = field(default_factory=list)  # files with 0 rows


def _device(cfg) -> str:
    try:
        return resolve_device(cfg.device)
    except ValueError as e:
        raise ConfigError(str(e)) from None


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


# ---------------------------------------------------------------------- 2. output
class Output:
    """The output directory: ``data/`` (Parquet), ``_datamask/`` (state), ``manifest.json``."""

    OWN = (DATA_DIR, STATE_DIR, MANIFEST, "report")  # report/: datamask report

    def __init__(self, path):
        self.root = Path(path)
        self.data = self.root / DATA_DIR
        self.state = self.root / STATE_DIR
        self.parts = self.state / "parts"
        self.created = False

    def check_writable(self):
        p = self.root.resolve()
        anc = p
        while not anc.exists():
            anc = anc.parent
        if not anc.is_dir():
            raise OutputError(f"output directory {self.root} is not writable: {anc} is a file; choose another OUTPUT")
        if not os.access(anc, os.W_OK | os.X_OK):
            raise OutputError(f"output directory {self.root} is not writable (no permission on {anc}); "
                              "choose another OUTPUT or fix its permissions")

    def inspect(self, cfg, fingerprint, splits):
        """Names of finished splits; refuses a directory holding another run."""
        cfg_file = self.state / "config.json"
        if not self.root.exists() or not any(self.root.iterdir()):
            return {}
        foreign = [p.name for p in self.root.iterdir() if p.name not in self.OWN]
        if not cfg_file.exists() or foreign:
            raise ConfigError(
                f"output directory {self.root} is not empty and was not written by datamask "
                f"(holds {', '.join(sorted(foreign)[:3]) or 'no config record'}); choose a new or empty OUTPUT"
            )
        if cfg.overwrite:
            return {}
        old = json.loads(cfg_file.read_text())
        if old.get("fingerprint") != fingerprint:
            new = dict(cfg.result_dict(), device=None)
            diff = [k for k in sorted(set(old.get("config", {})) | set(new))
                    if k != "device" and old.get("config", {}).get(k) != new.get(k)]
            shown = ", ".join(f"{k}: {old.get('config', {}).get(k)!r} -> {new.get(k)!r}" for k in diff[:4])
            if not shown:
                shown = f"device: {old.get('device')!r}"
            raise ConfigError(
                f"output directory {self.root} holds a run with a different config ({shown}); "
                "use another OUTPUT, the same settings, or --overwrite to start over"
            )
        done, wanted = {}, {s.name for s in splits}
        for rec_file in sorted(self.parts.glob("*.json")) if self.parts.exists() else []:
            rec = json.loads(rec_file.read_text())
            if rec["name"] not in wanted:
                raise ConfigError(
                    f"output directory {self.root} holds partition {rec['identity']} which is no longer in the "
                    "input (a file changed or disappeared); use --overwrite to start over"
                )
            if all((self.data / f).exists() for f in rec["files"]):
                done[rec["name"]] = rec
        return done

    def prepare(self, cfg, fingerprint, device):
        if cfg.overwrite and self.root.exists():
            for name in self.OWN:
                p = self.root / name
                if p.is_dir():
                    shutil.rmtree(p)
                elif p.exists():
                    p.unlink()
        try:
            self.created = not self.root.exists()
            self.parts.mkdir(parents=True, exist_ok=True)
            self.data.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"output directory {self.root} is not writable ({e.strerror}); choose another OUTPUT") from None
        write_json_atomic({"fingerprint": fingerprint, "device": device, "config": cfg.result_dict()},
                          self.state / "config.json")
        self.clean_temps()
        (self.root / MANIFEST).unlink(missing_ok=True)

    def clean_temps(self):
        for p in self.root.rglob(".*.tmp-*"):
            p.unlink(missing_ok=True)

    def remove_if_new_and_empty(self):
        if self.created and self.root.exists() and not any(self.parts.glob("*.json")):
            shutil.rmtree(self.root, ignore_errors=True)


# ---------------------------------------------------------------------- 3. ids
def _read_ids(s: Split, order: int, cols: Columns) -> pd.DataFrame:
    if s.fmt == "parquet":
        import pyarrow.parquet as pq

        ids = pq.read_table(s.path, columns=[cols.id]).column(0).slice(s.start, s.rows)
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


# ---------------------------------------------------------------------- 4. select
def _to_frame(table: pa.Table, device: str):
    if device == "gpu":
        import cudf

        return cudf.DataFrame.from_arrow(_gpu_compatible(table))
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def _gpu_compatible(table):
    """cudf holds no float16 and no fixed-size lists: variable lists of float32."""
    fields = [pa.field(f.name, pa.list_(pa.float32())) if pa.types.is_fixed_size_list(f.type) else f
              for f in table.schema]
    return table.cast(pa.schema(fields))


def _to_table(df) -> pa.Table:
    if type(df).__module__.split(".")[0] == "cudf":
        return df.to_arrow()
    # No pandas metadata: pandas cannot read back its ArrowDtype strings for fixed-size lists
    # ("fixed_size_list<...>[d]"), so .to_pandas() of the output would fail; Arrow types suffice.
    return pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(None)


def _read_frame(s: Split, cols: Columns, device: str):
    return _to_frame(read_split(s, cols), device)


def _write(table: pa.Table, data: Path, name: str, partition_on) -> list:
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


def _select_partition(df, partition_info=None, *, splits, cfg, device, d, out_root, drops, in_type):
    """One partition: validate, select, write the data file(s), then the record."""
    t0 = time.perf_counter()
    s = splits[partition_info["number"]]
    cols = Columns.from_config(cfg)
    table = _to_table(df)
    del df
    if device == "gpu":
        from .io import normalize_embedding

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
    rec = {"name": s.name, "identity": s.identity, "source": s.rel, "start": s.start, "stop": s.stop,
           "seed": s.seed(cfg.seed), "rows_in": table.num_rows, "duplicates_dropped": n_dupes}
    out = Output(out_root)
    if table.num_rows == 0:  # an empty partition is skipped, not an error
        rec.update(rows_out=0, files=[], skipped="empty", wall_seconds=time.perf_counter() - t0)
        write_json_atomic(rec, out.parts / f"{s.name}.json")
        return pd.DataFrame({"name": [s.name], "record": [json.dumps(rec)]})
    E, q = check_table(table, s.where(), cols, s.start, expect_d=d)
    if device == "gpu":
        import cupy

        E, q = cupy.asarray(E), cupy.asarray(q)
    seed = rec["seed"]
    if n_dupes:
        _check_budget(Split(s.path, s.rel, s.fmt, 0, table.num_rows), cfg)
    sel = select(E, q, cfg, seed, s.where(), callback=_progress_callback(s.name), table=table)
    before = _score_all(E, q, cfg, seed)
    del E, q
    if cfg.keep_all:
        logits = sel.logits if sel.logits is not None else np.full(table.num_rows, np.nan)
        result = table.append_column(SELECTED, pa.array(sel.mask)).append_column(LOGIT, pa.array(logits))
    else:
        result = table.filter(pa.array(sel.mask))
    files = _write(result, out.data, s.name, cfg.partition_on)
    rec.update(rows_out=int(sel.mask.sum()), budget=sel.budget, before=before, after=sel.objective,
               n_steps=sel.n_steps, select_seconds=round(sel.seconds, 3), files=files,
               wall_seconds=round(time.perf_counter() - t0, 3))
    if sel.history:  # the trajectory the report draws
        rec["history"] = sel.history
    write_json_atomic(rec, out.parts / f"{s.name}.json")
    return pd.DataFrame({"name": [s.name], "record": [json.dumps(rec)]})


def _run_pending(client, pending: list, cols, frame_device: str, partition, kwargs: dict, out_root: str,
                 on_done=None) -> dict:
    """Read each pending split (``from_map``), run ``partition`` on it (``map_partitions``,
    explicit meta) and collect the one-row record frames it returns, as they complete.

    ``partition(df, partition_info=None, *, splits, out_root, **kwargs)`` writes the split's
    output itself (atomically) and returns ``{"name", "record"}`` rows."""
    import dask
    import dask.dataframe as dd
    from distributed import as_completed

    with dask.config.set({"dataframe.convert-string": False}):
        first = pending[0]
        meta = _read_frame(Split(first.path, first.rel, first.fmt, first.start, first.start), cols, frame_device)
        frames = dd.from_map(_read_frame, pending, cols=cols, device=frame_device, meta=meta, enforce_metadata=False)
        records = frames.map_partitions(partition, splits=pending, out_root=out_root, meta=_RECORD_META,
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


class _Bars:
    """A bar over partitions and, when the method reports steps, one over steps."""

    def __init__(self, client, n_total, n_done, n_pending, quiet, steps_per=0, desc="partitions"):
        self.quiet = quiet
        self.client = client
        self.steps_per = int(steps_per)
        self.seen = {}
        if quiet:
            return
        from tqdm.auto import tqdm

        self.parts = tqdm(total=n_total, initial=n_done, desc=desc, unit="part")
        self.steps = None
        if self.steps_per and n_pending:
            self.steps = tqdm(total=self.steps_per * n_pending, desc="steps", unit="step", leave=False)
            client.subscribe_topic(PROGRESS_TOPIC, self._on_event)

    def _on_event(self, event):
        msg = event[1] if isinstance(event, tuple) else event
        name, step = msg["name"], msg["step"]
        last = self.seen.get(name, 0)
        if self.steps is not None and step > last:
            self.steps.update(step - last)
            self.seen[name] = step

    def partition_done(self, name):
        if self.quiet:
            return
        if self.steps is not None:
            last = self.seen.get(name, 0)
            self.steps.update(max(0, self.steps_per - last))
            self.seen[name] = self.steps_per
        self.parts.update(1)

    def close(self):
        if self.quiet:
            return
        if self.steps is not None:
            try:
                self.client.unsubscribe_topic(PROGRESS_TOPIC)
            except Exception:
                pass
            self.steps.close()
        self.parts.close()


# ---------------------------------------------------------------------- 5. manifest
def _versions():
    import dask
    import distributed

    return {"datamask": __version__, "numpy": np.__version__, "pandas": pd.__version__, "pyarrow": pa.__version__,
            "dask": dask.__version__, "distributed": distributed.__version__}


def _manifest(plan, fingerprint, records, computed, wall, stage="select", totals=None, extra=None):
    parts = sorted(records.values(), key=lambda r: (r["source"], r["start"]))
    cfg = plan.cfg
    m = {
        "status": "complete",
        "stage": stage,
        "fingerprint": fingerprint,
        "config": cfg.to_dict(),
        "device": plan.device,
        "seed": getattr(cfg, "seed", None),
        "versions": _versions(),
        "input": {"files": plan.n_files, "rows": plan.n_rows, "empty_files": plan.skipped_files},
        "totals": {
            "partitions": len(parts),
            "rows_in": int(sum(r["rows_in"] for r in parts)),
            "rows_out": int(sum(r["rows_out"] for r in parts)),
            "computed_this_run": len(computed),
            "resumed": len(parts) - len(computed),
        },
        "wall_seconds": round(wall, 3),
        "partitions": parts,
    }
    if totals is not None:
        m["totals"].update(totals(parts))
    if extra is not None:
        m.update(extra)
    return m


# ---------------------------------------------------------------------- the run
@dataclass
class Stage:
    """One per-split stage (select, embed, score) as :func:`run_stage` runs it.

    ``partition(df, partition_info=None, *, splits, out_root, **kwargs)`` handles one split:
    it writes the split's files under ``out_root/data`` atomically, then its record under
    ``out_root/_datamask/parts`` (see :func:`finish_split`), and returns the record frame.
    """

    name: str
    plan: Plan
    cols: object  # Columns or TextColumns: how splits are read and checked
    partition: Callable
    kwargs: dict = field(default_factory=dict)  # passed to ``partition`` (must pickle)
    frame_device: str = "cpu"  # partitions are read as pandas ("cpu") or cudf ("gpu")
    check: Callable | None = None  # (client, pending) -> kwargs; before the output dir is touched
    setup: Callable | None = None  # (client, pending, out) -> kwargs; after it is prepared
    steps_per: int = 0  # progress steps each split reports (select's policy gradient)
    totals: Callable | None = None  # (records) -> extra manifest totals
    extra: Callable | None = None  # (out) -> extra manifest keys


def resolve_io(cfg, command: str):
    """Validated ``cfg`` with an absolute input path; input and output are required."""
    cfg = cfg.validated()
    if not cfg.input or not cfg.output:
        raise ConfigError(f"both input and output are required (datamask {command} INPUT OUTPUT)")
    return cfg.replace(input=str(Path(cfg.input).resolve()) if not any(c in cfg.input for c in "*?[")
                       else os.path.abspath(cfg.input))


def plan_splits(cfg, cols, device=None, partition_on=None, on_file=None) -> Plan:
    """Input files and their splits, with ``cols``' checks on every file (footers / line 1).

    ``on_file(file, width)`` sees each file's embedding width (None without one)."""
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
    return Plan(cfg, device or _device(cfg), splits, None, len(files), total, empty)


def finish_split(table: pa.Table, out_root, rec: dict, partition_on=None, t0=None) -> pd.DataFrame:
    """Write one split's table (atomically), then its record; return the record frame."""
    out = Output(out_root)
    s_name = rec["name"]
    rec["files"] = _write(table, out.data, s_name, partition_on) if table is not None else []
    if t0 is not None:
        rec["wall_seconds"] = round(time.perf_counter() - t0, 3)
    write_json_atomic(rec, out.parts / f"{s_name}.json")
    return pd.DataFrame({"name": [s_name], "record": [json.dumps(rec)]})


def split_record(s: Split, n_rows: int) -> dict:
    """The fields every split record starts with."""
    return {"name": s.name, "identity": s.identity, "source": s.rel, "start": s.start, "stop": s.stop,
            "rows_in": int(n_rows)}


def run_stage(stage: Stage, client=None) -> dict:
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
        manifest["totals"].update(computed_this_run=0, resumed=manifest["totals"]["partitions"])
        return manifest
    own = client is None
    records = dict(done)
    try:
        if own:
            client = get_client(cfg, plan.device, n_tasks=len(pending))
        kwargs = dict(stage.kwargs)
        if stage.check is not None and pending:
            kwargs.update(stage.check(client, pending))
        out.prepare(cfg, fingerprint, plan.device)
        if stage.setup is not None and pending:
            kwargs.update(stage.setup(client, pending, out))
        if pending:
            bars = _Bars(client, len(plan.splits), len(done), len(pending), cfg.quiet, steps_per=stage.steps_per)
            try:
                records.update(_run_pending(client, pending, stage.cols, stage.frame_device, stage.partition,
                                            kwargs, str(out.root), bars.partition_done))
            finally:
                bars.close()
        out.clean_temps()
        manifest = _manifest(plan, fingerprint, records, [s.name for s in pending], time.perf_counter() - t0,
                             stage=stage.name, totals=stage.totals,
                             extra=stage.extra(out) if stage.extra is not None else None)
        write_json_atomic(manifest, out.root / MANIFEST)
        return manifest
    except BaseException:
        out.remove_if_new_and_empty()
        raise
    finally:
        if own and client is not None:
            close_client(client)


def run_select(cfg, client=None) -> dict:
    """Run the whole selection for ``cfg`` (a ``SelectConfig``); returns the manifest."""
    cfg = resolve_io(cfg, "select")
    plan = plan_run(cfg)
    cols = Columns.from_config(cfg)
    in_type = None
    if plan.device == "gpu":
        first = plan.splits[0]
        in_type = read_split(Split(first.path, first.rel, first.fmt, first.start, first.start), cols)\
            .schema.field(cols.embedding).type
    stage = Stage(
        "select", plan, cols, _select_partition,
        kwargs=dict(cfg=cfg, device=plan.device, d=plan.d, drops={}, in_type=in_type),
        frame_device=plan.device,
        check=lambda client, pending: {"drops": find_duplicates(client, plan, cols, cfg.dedupe_ids)},
        steps_per=int(cfg.steps) if cfg.solver == "pg" else 0,
    )
    return run_stage(stage, client)
