"""Reading what the proxy LM trains and is judged on: selections and evaluation sets.

A *selection* argument is one of

* a ``datamask select`` output (``manifest.json`` + ``data/``): its rows (with ``--keep-all``,
  the rows whose ``selected`` is true);
* a ``datamask compare`` output (``compare.json``): one selection per method, the ids in
  ``selections.parquet`` joined back to the compared input's text, split by split;
* any Parquet / JSONL directory, file or glob: all its rows.

An *evaluation set* is any Parquet / JSONL directory, file or glob (e.g. ``OUTPUT/holdout``).
Null and empty texts are skipped and counted. Every problem is a one-line
:class:`~datamask.errors.DataError` naming the path and the column, raised before anything is
written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq

from ...errors import DataError
from ...pipeline.exclude import text_key
from ...pipeline.io import discover, stage_output_data
from ...pipeline.schema import SELECTED
from ...pipeline.split_job import cut

__all__ = ["TextSet", "load_selections", "load_eval_sets", "eval_set_names", "exclude_texts", "text_key"]


@dataclass
class TextSet:
    """Named documents: a selection's training text or an evaluation set."""

    name: str
    source: str
    texts: list
    domains: np.ndarray | None = None  # per text, evaluation sets only
    skipped: int = 0  # null / empty texts dropped
    excluded: int = 0  # rows dropped because an evaluation set holds the same text
    info: dict = field(default_factory=dict)


def _read_file(f, columns, where):
    """The named columns of one input file (``None`` for an absent optional column)."""
    try:
        if f.fmt == "parquet":
            names = pq.ParquetFile(f.path).schema_arrow.names
            return pq.read_table(f.path, columns=[c for c in columns if c in names]), names
        table = pajson.read_json(pa.input_stream(f.path, compression="detect"))
        return table.select([c for c in columns if c in table.schema.names]), table.schema.names
    except (pa.ArrowInvalid, OSError) as e:
        msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise DataError(f"{where}: cannot read ({msg}); replace or remove the file") from None


def _texts(col: pa.ChunkedArray, where: str, column: str):
    t = col.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)):
        raise DataError(f"{where}: text column {column!r} has type {t}; expected strings")
    vals = col.to_pylist()
    keep = np.array([v is not None and v.strip() != "" for v in vals], dtype=bool)
    return vals, keep


def _read_texts(spec: str, text_column: str, extra=(), role="selection", filter_selected=False):
    """``(texts, extra columns, skipped)`` of every file under ``spec``."""
    try:
        files = discover(spec)
    except DataError as e:
        raise DataError(f"{role} {spec}: {e}") from None
    texts, extras, skipped = [], {c: [] for c in extra}, 0
    for f in files:
        where = f"{role} {spec}: {f.rel}" if f.rel != Path(spec).name else f"{role} {spec}"
        cols = [text_column, *extra] + ([SELECTED] if filter_selected else [])
        table, names = _read_file(f, cols, where)
        if text_column not in names:
            raise DataError(
                f"{where}: no text column {text_column!r} (columns: {', '.join(names)}); pass --set text_column=NAME"
            )
        for c in extra:
            if c not in names:
                raise DataError(f"{where}: no column {c!r} (columns: {', '.join(names)}); pass --domain-column NAME")
        if filter_selected and SELECTED in names:
            table = table.filter(table.column(SELECTED).fill_null(False))
        vals, keep = _texts(table.column(text_column), where, text_column)
        skipped += int((~keep).sum())
        texts.extend(v for v, k in zip(vals, keep) if k)
        for c in extra:
            ev = table.column(c).to_pylist()
            extras[c].extend(v for v, k in zip(ev, keep) if k)
    return texts, extras, skipped


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name).strip("_") or "selection"


def _base_name(spec: str) -> str:
    p = Path(spec.rstrip("/"))
    name = p.name
    for suf in (".parquet", ".jsonl.gz", ".jsonl", ".json", ".pq"):
        if name.endswith(suf):
            return name[: -len(suf)]
    return name


def _compare_selections(d: Path, text_column: str) -> list[TextSet]:
    """One :class:`TextSet` per method of a ``datamask compare`` output."""
    import pandas as pd

    meta = json.loads((d / "compare.json").read_text())
    sel = pd.read_parquet(d / "selections.parquet")[["method", "split", "id"]]
    cfg = meta.get("config", {})
    id_col, split_size = cfg.get("id_column", "id"), int(cfg.get("split_size", 1_000_000))
    src = meta["input"]
    try:
        files = discover(src)
    except DataError as e:
        raise DataError(
            f"selection {d}: the compared input {src} cannot be read ({e}); the text of the selections comes from it"
        ) from None
    wanted = {(p, i) for p, i in zip(sel["split"], sel["id"].tolist())}
    text_of = {}
    for f in files:
        where = f"selection {d}: compared input {f.rel}"
        table, names = _read_file(f, [id_col, text_column], where)
        if text_column not in names or id_col not in names:
            miss = text_column if text_column not in names else id_col
            raise DataError(
                f"{where}: no column {miss!r} (columns: {', '.join(names)}); the proxy LM needs the "
                f"text of the compared rows (pass --set text_column=NAME)"
            )
        ids = table.column(id_col).to_pylist()
        vals = table.column(text_column).to_pylist()
        for s in cut([(f, table.num_rows)], split_size):
            for i in range(s.start, s.stop):
                if (s.name, ids[i]) in wanted:
                    text_of[(s.name, ids[i])] = vals[i]
    out = []
    for m in meta["methods"]:
        rows = sel[sel["method"] == m]
        keys = list(zip(rows["split"], rows["id"].tolist()))
        missing = [k for k in keys if k not in text_of]
        if missing:
            raise DataError(
                f"selection {d}: {len(missing)} row(s) of method {m} (e.g. id {missing[0][1]!r}) are "
                f"no longer in the compared input {src}; rerun compare"
            )
        texts = [text_of[k] for k in keys]
        keep = [t for t in texts if t is not None and t.strip()]
        out.append(TextSet(m, f"{d}#{m}", keep, skipped=len(texts) - len(keep), info={"kind": "compare"}))
    return out


def load_selections(specs, text_column: str = "text") -> list[TextSet]:
    """Every selection named by ``specs``, with unique names; empty ones are an error."""
    sets: list[TextSet] = []
    for spec in specs:
        d = Path(spec)
        if d.is_dir() and (d / "compare.json").exists():
            got = _compare_selections(d, text_column)
        elif d.is_dir() and stage_output_data(d) is not None:  # select OUTPUT (--keep-all: its selected rows)
            texts, _, skipped = _read_texts(str(d), text_column, filter_selected=True)
            got = [TextSet(_base_name(spec), str(d), texts, skipped=skipped, info={"kind": "select"})]
        else:
            texts, _, skipped = _read_texts(spec, text_column)
            got = [TextSet(_base_name(spec), str(spec), texts, skipped=skipped, info={"kind": "corpus"})]
        for s in got:
            s.info["parent"] = _base_name(spec)
        sets.extend(got)
    names = [s.name for s in sets]
    for s in sets:  # the same name twice (two compare outputs): prefix the directory
        s.name = _safe(
            f"{s.info['parent']}.{s.name}" if names.count(s.name) > 1 and s.info["kind"] == "compare" else s.name
        )
    seen: dict = {}
    for s in sets:
        seen[s.name] = seen.get(s.name, 0) + 1
        if seen[s.name] > 1:
            s.name = f"{s.name}-{seen[s.name]}"
    for s in sets:
        if not s.texts:
            raise DataError(
                f"selection {s.source}: no usable text ({s.skipped} rows with null or empty "
                f"{text_column!r}); select some rows or pass the right --set text_column=NAME"
            )
    return sets


def load_eval_sets(specs, text_column: str = "text", domain_column: str | None = None) -> list[TextSet]:
    """Every evaluation set, with per-text domains (``domain_column``, else ``cluster`` if present)."""
    sets: list[TextSet] = []
    for spec in specs:
        column = domain_column
        if column is None:
            try:
                files = discover(spec)
            except DataError as e:
                raise DataError(f"evaluation set {spec}: {e}") from None
            first = files[0]
            has = first.fmt == "parquet" and "cluster" in pq.ParquetFile(first.path).schema_arrow.names
            column = "cluster" if has else None
        texts, extras, skipped = _read_texts(spec, text_column, (column,) if column else (), role="evaluation set")
        if not texts:
            raise DataError(
                f"evaluation set {spec}: no usable text ({skipped} rows with null or empty "
                f"{text_column!r}); pass a set with text or the right --set text_column=NAME"
            )
        dom = np.array([str(v) for v in extras[column]], dtype=object) if column else None
        sets.append(TextSet(spec, str(spec), texts, domains=dom, skipped=skipped, info={"domain_column": column}))
    for s, name in zip(sets, eval_set_names(specs)):
        s.name = name
    return sets


def eval_set_names(specs) -> list:
    """The names the evaluation sets ``specs`` go by (their folder or file name, made safe; a
    name given twice gets ``-2``, ``-3``): the ``SET`` of every per-set column and report row."""
    names, seen = [], {}
    for spec in specs:
        name = _safe(_base_name(str(spec)))
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return names


def exclude_texts(selections, eval_sets) -> None:
    """Drop from every selection each row whose exact text is in an evaluation set (counted)."""
    held = {text_key(t) for e in eval_sets for t in e.texts}
    for s in selections:
        keep = [t for t in s.texts if text_key(t) not in held]
        s.excluded = len(s.texts) - len(keep)
        s.texts = keep
        if not keep:
            raise DataError(
                f"selection {s.source}: every usable row is also in an evaluation set; nothing is left to train on"
            )
