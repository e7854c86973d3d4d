"""What a stage's output directory holds: finished, or which splits are done and missing.

A run that stops (bad input found in a split, a killed job) keeps every split it finished
and writes no ``manifest.json``; a rerun with the same arguments resumes from those
splits. :func:`output_status` says where such a directory stands, for ``datamask status``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataError
from .io import InputFile, discover, make_splits
from .output import DATA_DIR, MANIFEST, STATE_DIR

__all__ = ["OutputStatus", "output_status", "count_rows"]


@dataclass
class OutputStatus:
    """Where one output directory stands."""

    path: str
    stage: str | None
    complete: bool
    done: list = field(default_factory=list)  # finished splits, as "file (rows a-b)"
    missing: list = field(default_factory=list)  # splits of the input not finished
    input: str | None = None
    note: str = ""

    def lines(self) -> list[str]:
        what = f"datamask {self.stage} output" if self.stage else "datamask output"
        total = len(self.done) + len(self.missing)
        if self.complete:
            return [f"{self.path}: {what}, complete ({len(self.done)} splits; manifest.json written)"]
        out = [f"{self.path}: {what}, INCOMPLETE: {len(self.done)} of {total} splits finished, "
               f"{len(self.missing)} missing (no manifest.json)"]
        out += [f"  done:    {s}" for s in self.done]
        out += [f"  missing: {s}" for s in self.missing]
        if self.note:
            out.append(f"  {self.note}")
        out.append(f"  rerun `datamask {self.stage or '<stage>'}` with the same arguments to finish it; "
                   "finished splits are kept")
        return out


def count_rows(f: InputFile) -> int:
    """Rows of one input file: the Parquet footer, or the JSONL file's non-empty lines."""
    if f.fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(f.path).metadata.num_rows
    from .io import _open_text

    with _open_text(f.path) as fh:
        return sum(1 for line in fh if line.strip())


def output_status(path) -> OutputStatus:
    """The status of a stage's output directory (see the module doc)."""
    p = Path(path)
    if not p.is_dir():
        raise DataError(f"output directory {p} does not exist; pass the OUTPUT a datamask stage wrote")
    cfg_file = p / STATE_DIR / "config.json"
    if not cfg_file.exists():
        from .stages import STAGES, get_stage

        for name in STAGES:  # the whole-corpus stages write their own marker, all at once
            marker = get_stage(name).marker
            if marker != MANIFEST and (p / marker).exists():
                return OutputStatus(str(p), name, True)
        raise DataError(f"{p} is not a datamask output (no {STATE_DIR}/config.json); pass the OUTPUT of a "
                        "select, embed, score or dedup run")
    state = json.loads(cfg_file.read_text())
    cfg = state.get("config", {})
    parts_dir = p / STATE_DIR / "parts"
    records = {}
    for f in sorted(parts_dir.glob("*.json")) if parts_dir.exists() else []:
        rec = json.loads(f.read_text())
        if all((p / DATA_DIR / name).exists() for name in rec.get("files", [])):
            records[rec["name"]] = rec
    st = OutputStatus(str(p), state.get("stage"), (p / MANIFEST).exists(), input=cfg.get("input"))

    def label(s):
        return f"{s.rel} (rows {s.start}-{s.stop})"

    try:
        splits = [s for f in discover(cfg["input"]) for s in make_splits(f, count_rows(f), int(cfg["split_size"]))]
    except (DataError, KeyError, OSError) as e:  # the input moved: report what is on disk
        st.done = [f"{r['source']} (rows {r['start']}-{r['stop']})" for r in records.values()]
        st.note = f"the input could not be read to list the missing splits ({e})"
        return st
    st.done = [label(s) for s in splits if s.name in records]
    st.missing = [label(s) for s in splits if s.name not in records]
    return st
