"""A stage's output directory: ``data/`` (Parquet), ``_datamask/`` (state), ``manifest.json``.

It refuses a directory that holds foreign files or a run with another config, finds the
splits a killed run finished (resume), and removes a new directory a failed run left empty.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..errors import ConfigError, OutputError
from .holdout import HOLDOUT_DIR
from .io import write_json_atomic

__all__ = ["Output", "DATA_DIR", "STATE_DIR", "MANIFEST", "split_records", "n_splits"]

DATA_DIR = "data"
STATE_DIR = "_datamask"
MANIFEST = "manifest.json"


def split_records(manifest: dict) -> list:
    """A manifest's per-split records (``splits``; ``partitions`` in manifests of 0.2)."""
    return manifest["splits"] if "splits" in manifest else manifest["partitions"]


def n_splits(totals: dict) -> int:
    """The number of splits in a manifest's totals (``partitions`` in manifests of 0.2)."""
    return int(totals["splits"] if "splits" in totals else totals["partitions"])


class Output:
    """The output directory: ``data/`` (Parquet), ``_datamask/`` (state), ``manifest.json``."""

    OWN = (DATA_DIR, STATE_DIR, MANIFEST, "report", HOLDOUT_DIR)  # report/: datamask report

    def __init__(self, path):
        self.root = Path(path)
        self.data = self.root / DATA_DIR
        self.state = self.root / STATE_DIR
        self.parts = self.state / "parts"
        self.holdout = self.root / HOLDOUT_DIR
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
            if all((self.data / f).exists() for f in rec["files"]) and \
                    all((self.holdout / f).exists() for f in rec.get("holdout_files", [])):
                done[rec["name"]] = rec
        return done

    def prepare(self, cfg, fingerprint, device, stage=None):
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
        write_json_atomic({"fingerprint": fingerprint, "device": device, "stage": stage, "config": cfg.result_dict()},
                          self.state / "config.json")
        self.clean_temps()
        (self.root / MANIFEST).unlink(missing_ok=True)

    def clean_temps(self):
        for p in self.root.rglob(".*.tmp-*"):
            p.unlink(missing_ok=True)

    def remove_if_new_and_empty(self):
        if self.created and self.root.exists() and not any(self.parts.glob("*.json")):
            shutil.rmtree(self.root, ignore_errors=True)
