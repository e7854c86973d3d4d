"""What a stage's output directory holds: finished, or which splits are done and missing.

A run that stops (bad input found in a split, a killed job) keeps every split it finished
and writes no ``manifest.json``; a rerun with the same arguments resumes from those
splits. :func:`output_status` says where such a directory stands, for ``datamask status``.
It reads the files, not only the records: a split is done when its record is there and each
of its files is readable with the rows the record names; the output is complete when every
split of the plan is done, ``manifest.json`` is written (last, after the report) and what it
lists beside the splits (the report) is there. Local paths and URLs alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..errors import DataError
from ..pipeline.output import MANIFEST, STATE_DIR, Output, listed_missing, n_splits, split_records
from ..pipeline.split_job import file_splits
from .registry import STAGES

__all__ = ["OutputStatus", "output_status"]


@dataclass
class OutputStatus:
    """Where one output directory stands."""

    path: str
    stage: str | None
    complete: bool
    done: list = field(default_factory=list)  # finished splits, as "file (rows a-b)"
    missing: list = field(default_factory=list)  # splits of the input not finished
    broken: list = field(default_factory=list)  # "split: data/FILE missing" (a record without its file)
    manifest: bool = False
    input: str | None = None
    note: str = ""
    whole_corpus: bool = False  # a whole-corpus stage (cluster, compare): no split records
    splits: int | None = None  # how many splits it read (whole-corpus stages)
    absent: list = field(default_factory=list)  # what manifest.json lists that is not there (its report)

    def lines(self) -> list[str]:
        what = f"datamask {self.stage} output" if self.stage else "datamask output"
        total = len(self.done) + len(self.missing)
        if self.whole_corpus:
            return self._corpus_lines(what)
        if self.complete:
            return [f"{self.path}: {what}, complete ({_n(len(self.done), 'split')}; manifest.json written)"]
        if self.manifest and self.absent and not self.missing:
            return [
                f"{self.path}: {what}, INCOMPLETE: manifest.json lists {', '.join(self.absent)}, which is missing",
                f"  rerun `datamask {self.stage or '<stage>'}` with the same arguments to write it; "
                "finished splits are kept",
            ]
        why = "manifest.json written, but files are missing" if self.manifest else "no manifest.json"
        if not self.manifest and not self.missing and self.done:
            why = "no manifest.json: the run stopped after its splits, before its report and manifest"
        out = [
            f"{self.path}: {what}, INCOMPLETE: {len(self.done)} of {_n(total, 'split')} finished, "
            f"{len(self.missing)} missing ({why})"
        ]
        out += [f"  done:    {s}" for s in self.done]
        out += [f"  missing: {s}" for s in self.missing]
        if self.note:
            out.append(f"  {self.note}")
        out.append(
            f"  rerun `datamask {self.stage or '<stage>'}` with the same arguments to finish it; "
            "finished splits are kept"
        )
        return out

    def _corpus_lines(self, what) -> list[str]:
        if self.complete:
            read = f"{_n(self.splits, 'split')} read at once; " if self.splits is not None else ""
            return [f"{self.path}: {what}, complete ({read}manifest.json written)"]
        if self.manifest and self.absent:
            return [
                f"{self.path}: {what}, INCOMPLETE: manifest.json lists {', '.join(self.absent)}, which is missing",
                f"  rerun `datamask {self.stage}` with --overwrite and the same arguments to write it again, "
                f"or `datamask report {self.path}`",
            ]
        keeps = getattr(STAGES[self.stage], "keeps", ()) if self.stage in STAGES else ()
        again = (
            f"to finish it: what it keeps ({', '.join(f'{k}/' for k in keeps)}) is reused, the rest computed"
            if keeps
            else "to compute it again"
        )
        return [
            f"{self.path}: {what}, INCOMPLETE (no manifest.json: the run stopped before it finished)",
            f"  rerun `datamask {self.stage}` with the same arguments {again}",
        ]


def _n(n: int, word: str) -> str:
    """``1 split``, ``0 splits``, ``4 splits``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _label(rel, start, stop) -> str:
    return f"{rel} (rows {start}-{stop})"


def output_status(path) -> OutputStatus:
    """The status of a stage's output directory (see the module doc)."""
    out = Output(path)
    p = out.root
    if not p.exists() or (not str(p).count("://") and not p.is_dir()):
        raise DataError(f"output directory {p} does not exist; pass the OUTPUT a datamask stage wrote")
    cfg_file = p / STATE_DIR / "config.json"
    if not cfg_file.exists():
        raise DataError(
            f"{p} is not a datamask output (no {STATE_DIR}/config.json); pass the OUTPUT of a "
            f"datamask {', '.join(STAGES)} run"
        )
    state = json.loads(cfg_file.read_text())
    cfg = state.get("config", {})
    has_manifest = (p / MANIFEST).exists()
    if state.get("stage") in STAGES and STAGES[state["stage"]].whole_corpus:
        return _corpus_status(p, state["stage"], has_manifest)
    records, broken = {}, {}
    for name, rec in out.records().items():
        bad = out.problems(rec)
        if bad:
            broken[name] = ", ".join(f"{f} {what}" for f, what in bad)
        else:
            records[name] = rec
    st = OutputStatus(str(p), state.get("stage"), False, manifest=has_manifest, input=cfg.get("input"))

    plan = None  # [(name, label)] of every split the run has to write
    if has_manifest:
        try:
            m = json.loads((p / MANIFEST).read_text())
            plan = [(r["name"], _label(r["source"], r["start"], r["stop"])) for r in split_records(m)]
            st.absent = listed_missing(m, p)
        except (OSError, ValueError, KeyError):
            plan = None
    if plan is None:
        try:
            plan = [(s.name, s.where()) for s in file_splits(cfg["input"], cfg["split_size"])]
        except (DataError, KeyError, OSError) as e:  # the input moved: report what is on disk
            st.done = [_label(r["source"], r["start"], r["stop"]) for r in records.values()]
            st.missing = [f"{n}: {why}" for n, why in sorted(broken.items())]
            st.note = f"the input could not be read to list the missing splits ({e})"
            return st
    st.done = [label for name, label in plan if name in records]
    st.missing = [
        label + (f": {broken[name]}" if name in broken else "") for name, label in plan if name not in records
    ]
    st.broken = [f"{name}: {why}" for name, why in broken.items()]
    st.complete = has_manifest and not st.missing and not st.absent
    return st


def _corpus_status(p, stage, has_manifest) -> OutputStatus:
    """A whole-corpus stage's output: complete when its manifest is written (written last)."""
    splits, absent = None, []
    if has_manifest:
        try:
            m = json.loads((p / MANIFEST).read_text())
            splits, absent = n_splits(m["totals"]), listed_missing(m, p)
        except (OSError, ValueError, KeyError):
            has_manifest = False  # unreadable: as if it were not there
    return OutputStatus(
        str(p),
        stage,
        has_manifest and not absent,
        manifest=has_manifest,
        whole_corpus=True,
        splits=splits,
        absent=absent,
    )
