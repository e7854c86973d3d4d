"""A stage's output directory: ``data/`` (Parquet), ``_datamask/`` (state), ``manifest.json``.

It refuses a directory that holds foreign files or a run with another config, finds the
splits a killed run finished (resume), checks through this process's own view of the storage
that a split a worker reported is really there (:meth:`Output.verify`), and removes a new
directory a failed run left without a finished split. The directory may be a local path or
a URL (:mod:`~datamask.runtime.storage`).
"""

from __future__ import annotations

import json
import os

from ..errors import ConfigError, DataError, OutputError
from ..runtime.storage import Remote, location, rmtree
from .holdout import HOLDOUT_DIR
from .io import parquet_rows, write_json_atomic

__all__ = [
    "Output",
    "DATA_DIR",
    "STATE_DIR",
    "MANIFEST",
    "SHARED_STORAGE",
    "split_records",
    "n_splits",
    "listed_missing",
]

DATA_DIR = "data"
STATE_DIR = "_datamask"
MANIFEST = "manifest.json"
SHARED_STORAGE = (
    "the output must be on storage every node shares (a shared mount or an object store such as "
    "s3://); see cluster/README.md"
)


def split_records(manifest: dict) -> list:
    """A manifest's per-split records (``splits``); a manifest without them (datamask 0.2
    wrote ``partitions``) is refused in one line."""
    if "splits" not in manifest:
        raise DataError(_OLD_MANIFEST)
    return manifest["splits"]


def n_splits(totals: dict) -> int:
    """The number of splits in a manifest's totals (refused, as :func:`split_records`, when absent)."""
    if "splits" not in totals:
        raise DataError(_OLD_MANIFEST)
    return int(totals["splits"])


_OLD_MANIFEST = (
    "manifest.json lists no 'splits' (an output of datamask 0.2, which 0.3 does not read); "
    "rerun the stage with --overwrite"
)


def listed_missing(manifest: dict, root) -> list:
    """What a manifest lists beside the splits that is not there: its ``report`` (a path,
    written before the manifest; None when no report was asked for or it could not be written)."""
    page = manifest.get("report")
    if not page:
        return []
    p = location(page) if "://" in str(page) or str(page).startswith("/") else location(root) / page
    here = location(root) / "report" / p.name  # the output moved since: its report moved with it
    return [] if p.exists() or here.exists() else [f"report {page}"]


class Output:
    """The output directory: ``data/`` (Parquet), ``_datamask/`` (state), ``manifest.json``."""

    OWN = (DATA_DIR, STATE_DIR, MANIFEST, "report", HOLDOUT_DIR)  # report/: datamask report

    def __init__(self, path, own=None):
        self.own = self.OWN if own is None else (STATE_DIR, MANIFEST, *own)  # what a stage writes there
        self.root = location(path)
        self.data = self.root / DATA_DIR
        self.state = self.root / STATE_DIR
        self.parts = self.state / "parts"
        self.holdout = self.root / HOLDOUT_DIR
        self.created = False

    @property
    def remote(self) -> bool:
        return isinstance(self.root, Remote)

    def check_writable(self):
        if self.remote:
            return  # the first write (the config record) says whether it can be written
        p = self.root.resolve()
        anc = p
        while not anc.exists():
            anc = anc.parent
        if not anc.is_dir():
            raise OutputError(f"output directory {self.root} is not writable: {anc} is a file; choose another OUTPUT")
        if not os.access(anc, os.W_OK | os.X_OK):
            raise OutputError(
                f"output directory {self.root} is not writable (no permission on {anc}); "
                "choose another OUTPUT or fix its permissions"
            )

    def _children(self):
        try:
            return list(self.root.iterdir()) if self.root.exists() else []
        except NotADirectoryError:
            raise OutputError(f"output {self.root} is a file; choose another OUTPUT") from None

    def records(self) -> dict:
        """Every split record under ``_datamask/parts`` (name -> record), as this process sees them."""
        out = {}
        for rec_file in sorted(self.parts.glob("*.json"), key=str) if self.parts.exists() else []:
            try:
                rec = json.loads(rec_file.read_text())
            except (OSError, ValueError):
                continue  # unreadable: the split is recomputed
            out[rec["name"]] = rec
        return out

    def check_owner(self, stage=None) -> bool:
        """False for a new or empty directory; True for one ``stage`` wrote (its config record
        there, nothing foreign). Refuses anything else in one line."""
        children = self._children()
        if not children:
            return False
        cfg_file = self.state / "config.json"
        old = json.loads(cfg_file.read_text()).get("stage") if cfg_file.exists() else None
        if stage is not None and old not in (None, stage):
            raise ConfigError(
                f"output directory {self.root} holds the output of datamask {old}; choose another OUTPUT for {stage}"
            )
        foreign = [p.name for p in children if p.name not in self.own]
        if not (self.state / "config.json").exists() or foreign:
            raise ConfigError(
                f"output directory {self.root} is not empty and was not written by datamask "
                f"(holds {', '.join(sorted(foreign)[:3]) or 'no config record'}); choose a new or empty OUTPUT"
            )
        return True

    def check_config(self, cfg, fingerprint, stage=None):
        """Refuses, in one line naming ``--overwrite``, a directory whose run had another config
        (or recorded none: an output of datamask 0.2)."""
        cfg_file = self.state / "config.json"
        if not cfg_file.exists():
            raise ConfigError(
                f"output directory {self.root} holds a {stage or 'datamask'} run without a config record (written "
                "by datamask 0.2); use another OUTPUT or --overwrite to replace it"
            )
        old = json.loads(cfg_file.read_text())
        if old.get("fingerprint") != fingerprint:
            new = dict(cfg.result_dict(), device=None)
            diff = [
                k
                for k in sorted(set(old.get("config", {})) | set(new))
                if k != "device" and old.get("config", {}).get(k) != new.get(k)
            ]
            shown = ", ".join(f"{k}: {old.get('config', {}).get(k)!r} -> {new.get(k)!r}" for k in diff[:4])
            if not shown:
                shown = f"device: {old.get('device')!r}"
            raise ConfigError(
                f"output directory {self.root} holds a run with a different config ({shown}); "
                "use another OUTPUT, the same settings, or --overwrite to start over"
            )

    def inspect(self, cfg, fingerprint, splits, stage=None):
        """Names of finished splits; refuses a directory holding another run."""
        if not self.check_owner(stage) or cfg.overwrite:
            return {}
        self.check_config(cfg, fingerprint)
        done, wanted = {}, {s.name for s in splits}
        for name, rec in self.records().items():
            if name not in wanted:
                raise ConfigError(
                    f"output directory {self.root} holds split {rec['identity']} which is no longer in the "
                    "input (a file changed or disappeared); use --overwrite to start over"
                )
            if not self.problems(rec):
                done[name] = rec
        return done

    def problems(self, rec) -> list:
        """What is wrong with a finished split's files, as this process sees them: ``[(file,
        "missing" | "unreadable" | "has N rows, its record says M")]``; empty when it is whole."""
        bad = []
        checks = [(self.data, f) for f in rec.get("files", [])] + [
            (self.holdout, f) for f in rec.get("holdout_files", [])
        ]
        rows = 0
        for base, f in checks:
            loc = base / f
            n = parquet_rows(loc)
            if n is None:
                bad.append((f"{base.name}/{f}", "missing" if not loc.exists() else "unreadable"))
            elif base is self.data:
                rows += n
        if not bad and "rows_written" in rec and rows != int(rec["rows_written"]):
            bad.append(
                (
                    f"{DATA_DIR}/{rec['files'][0] if rec.get('files') else rec['name']}",
                    f"has {rows} rows, its record says {rec['rows_written']}",
                )
            )
        return bad

    def verify(self, rec):
        """Raise a one-line OutputError when a split a worker reported finished is not here, as
        this process (the client) sees the storage: the worker wrote where the client cannot see."""
        bad = self.problems(rec)
        if not bad and not (self.parts / f"{rec['name']}.json").exists():
            bad = [(f"{STATE_DIR}/parts/{rec['name']}.json", "missing")]
        if bad:
            f, what = bad[0]
            who = f" by worker {rec['worker']}" if rec.get("worker") else ""
            what_split = f"{rec['source']} (rows {rec['start']}-{rec['stop']})" if "source" in rec else rec["name"]
            raise OutputError(
                f"split {what_split} was written{who}, but {self.root}/{f} is "
                f"{what} here on the client: {SHARED_STORAGE}"
            )

    def prepare(self, cfg, fingerprint, device, stage=None, remove=None, dirs=None):
        """Remove ``remove`` (default: everything the stage writes, with ``--overwrite``), create
        ``dirs`` (default: ``data/`` and the split records' folder), write the config record;
        ``manifest.json`` goes until the run writes it again, last."""
        if remove is None:
            remove = self.own if cfg.overwrite else ()
        if self.root.exists():
            for name in remove:
                p = self.root / name
                if p.is_dir():
                    rmtree(p)
                elif p.exists():
                    p.unlink()
        try:
            self.created = not self.root.exists()
            for d in (self.parts, self.data) if dirs is None else dirs:
                d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(
                f"output directory {self.root} is not writable ({e.strerror or e}); choose another OUTPUT"
            ) from None
        write_json_atomic(
            {"fingerprint": fingerprint, "device": device, "stage": stage, "config": cfg.result_dict()},
            self.state / "config.json",
        )
        self.clean_temps()
        (self.root / MANIFEST).unlink(missing_ok=True)

    def holds_config(self) -> bool:
        """Whether the config record is there: a worker writes a split only into an output that
        holds it (one the client removed after a stopped run must not come back without it)."""
        return (self.state / "config.json").exists()

    def take_back(self, rec):
        """(worker) Remove what a split wrote (its record, data and holdout files), then the
        folders left empty: the output was removed while the split was being written."""
        files = [self.parts / f"{rec['name']}.json"]
        files += [self.data / f for f in rec.get("files", [])] + [
            self.holdout / f for f in rec.get("holdout_files", [])
        ]
        for f in files:
            try:
                f.unlink(missing_ok=True)
            except OSError:
                pass
        dirs = {f.parent for f in files} | {self.parts, self.state, self.data, self.holdout, self.root}
        for d in sorted(dirs, key=lambda d: -len(str(d))):  # deepest first
            try:
                if d.exists() and not any(True for _ in d.iterdir()):
                    d.rmdir()
            except OSError:
                pass

    def clean_temps(self):
        if self.remote:
            return  # no temporary files there: each object is written whole
        for p in self.root.rglob(".*.tmp-*"):
            p.unlink(missing_ok=True)

    def remove_if_new_and_empty(self):
        """Remove a directory this run created when no split was finished in it. Call only
        after every split in flight has ended, or one may write into it afterwards."""
        if self.created and self.root.exists() and not any(True for _ in self.parts.glob("*.json")):
            rmtree(self.root)
