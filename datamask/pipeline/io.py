"""Finding input files, cutting them into splits, reading one split, writing atomically.

A split (one Dask partition) is identified by its source file's path relative to the input
root and its row range, never by its position in a listing: new files added to a growing
corpus get new splits, and the old ones keep their names and seeds.
"""

from __future__ import annotations

import glob
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq

from ..errors import DataError
from ..runtime.files import (
    dictionary_columns,
    hive_path,
    jsonl_lines,
    parquet_rows,
    read_parquet_rows,
    read_parquet_table,
    split_row_groups,
    write_json_atomic,
    write_parquet_atomic,
)
from ..runtime.storage import Remote, is_url, location, open_file
from .schema import Columns, TextColumns, check_schema, check_text_row, check_text_schema, embedding_matrix

__all__ = [
    "dictionary_columns",
    "InputFile",
    "Split",
    "split_seed",
    "discover",
    "inspect_file",
    "make_splits",
    "read_split",
    "split_row_groups",
    "normalize_embedding",
    "write_parquet_atomic",
    "write_json_atomic",
    "hive_path",
    "parquet_rows",
    "read_parquet_table",
    "finished_stage",
    "stage_output_data",
]

PARQUET_SUFFIXES = (".parquet", ".pq")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")
_MAGIC = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class InputFile:
    path: str  # absolute
    rel: str  # relative to the input root, with forward slashes
    fmt: str  # "parquet" | "jsonl"


def split_seed(base_seed: int, identity: str) -> int:
    """A 63-bit seed from a base seed and a split's identity (``file:start-stop``, or a
    frame partition's): the same split gets the same seed on any machine, in any stage."""
    digest = hashlib.sha256(f"{int(base_seed)}|{identity}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


@dataclass(frozen=True)
class Split:
    """Rows ``[start, stop)`` of one input file (``whole``: the split is the whole file)."""

    path: str
    rel: str
    fmt: str
    start: int
    stop: int
    whole: bool = field(default=False, compare=False)

    @property
    def identity(self) -> str:
        return f"{self.rel}:{self.start}-{self.stop}"

    @property
    def rows(self) -> int:
        return self.stop - self.start

    @property
    def name(self) -> str:
        """Output file stem: the source file's name and row range, ``NAME.rSTART-STOP``.

        It does not grow along a chain of stages: a whole file already named ``X.rA-B`` (the
        output of an earlier stage) keeps its name, and a split of rows ``[i, j)`` of it is
        ``X.r(A+i)-(A+j)``, so every stage's ``data/`` holds the same names."""
        stem = _stem(self.rel)
        m = _RANGE.match(stem)
        if m is not None:
            a, b = int(m.group(2)), int(m.group(3))
            if self.whole:
                return stem
            if a + self.stop <= b:
                return f"{m.group(1)}.r{a + self.start}-{a + self.stop}"
        return f"{stem}.r{self.start}-{self.stop}"

    def seed(self, base_seed: int) -> int:
        """A 63-bit seed from the config seed and the identity (stable across machines)."""
        return split_seed(base_seed, self.identity)

    def where(self) -> str:
        return f"{self.rel} (rows {self.start}-{self.stop})"


_RANGE = re.compile(r"^(.*)\.r(\d+)-(\d+)$")


def _stem(rel: str) -> str:
    """``rel`` as one file-name-safe stem without its format suffix (``a/b.jsonl.gz`` -> ``a__b``)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", rel.replace("/", "__"))
    low = stem.lower()
    for suf in sorted(PARQUET_SUFFIXES + JSONL_SUFFIXES, key=len, reverse=True):
        if low.endswith(suf):
            stem = stem[: -len(suf)]
            break
    return stem[:120]


def _fmt_of(name: str):
    low = name.lower()
    if low.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if low.endswith(JSONL_SUFFIXES):
        return "jsonl"
    return None


def _hidden(rel_parts) -> bool:
    return any(p.startswith((".", "_")) for p in rel_parts)


def finished_stage(p) -> str | None:
    """The stage whose finished output ``p`` is (``manifest.json``'s ``stage``), or None when
    it holds no finished output."""
    if (p / "manifest.json").exists():
        try:
            return json.loads((p / "manifest.json").read_text()).get("stage") or "select"
        except (OSError, ValueError):
            return None
    return None


def stage_output_data(path) -> Path | None:
    """``path/data`` when ``path`` is the output directory of a datamask stage, else None.

    An output that a stage started but did not finish (no ``manifest.json``) is refused:
    its ``data/`` holds only some splits.
    """
    p = location(path)
    state = p / "_datamask"
    stage = finished_stage(p)
    if stage is None and not state.is_dir():
        return None
    if stage == "compare":
        raise DataError(
            f"{p} is a datamask compare output: it holds scores, not corpus rows; pass the corpus "
            "it compared, or a select output"
        )
    if stage is None:
        stage = "the stage that wrote it"
        try:
            stage = f"datamask {json.loads((state / 'config.json').read_text())['stage']}"
        except (OSError, ValueError, KeyError):
            pass
        raise DataError(
            f"{p} is an incomplete datamask output (no manifest.json: the run stopped before "
            f"every split was written); rerun {stage} with the same arguments to finish it "
            f"(finished splits are kept), or see `datamask status {p}`"
        )
    data = p / "data"
    if not isinstance(p, Remote) and not data.is_dir():
        raise DataError(f"{p}: datamask output without its data/ directory; rerun the stage that wrote it")
    return data


def discover(spec: str) -> list[InputFile]:
    """Input files of a directory (recursively), a glob or a single file, sorted by path.

    Names starting with ``.`` or ``_`` (``_SUCCESS``, ``.crc``) are skipped in directories;
    any other file that is not Parquet or JSONL is an error. The output directory of a
    datamask stage reads as its ``data/`` (:func:`stage_output_data`), so stages chain by
    the directory each one prints.
    """
    if spec is None:
        raise DataError("no input given; pass INPUT (a directory, file or glob of Parquet/JSONL)")
    if is_url(spec):
        return _discover_remote(str(spec))
    if not _MAGIC.search(spec) and Path(spec).is_dir():
        data = stage_output_data(spec)
        if data is not None:
            spec = str(data)
    if _MAGIC.search(spec):
        parts = Path(spec).parts
        base_parts = []
        for p in parts:
            if _MAGIC.search(p):
                break
            base_parts.append(p)
        root = Path(*base_parts) if base_parts else Path(".")
        paths = [Path(p) for p in glob.glob(spec, recursive=True) if os.path.isfile(p)]
        if not paths:
            raise DataError(f"empty input: the pattern {spec!r} matches no file; check the path")
    else:
        p = Path(spec)
        if not p.exists():
            raise DataError(f"input {spec!r} does not exist; check the path")
        if p.is_dir():
            root = p
            paths = [q for q in p.rglob("*") if q.is_file() and not _hidden(q.relative_to(p).parts)]
        else:
            root, paths = p.parent, [p]
    found = [(str(q.resolve()), q.resolve().relative_to(root.resolve()).as_posix()) for q in sorted(paths)]
    return _input_files(found, spec)


def _input_files(found, spec) -> list[InputFile]:
    files = []
    for path, rel in sorted(found, key=lambda t: t[1]):
        fmt = _fmt_of(rel)
        if fmt is None:
            raise DataError(
                f"{path}: not a Parquet or JSONL file (expected .parquet, .jsonl or .jsonl.gz); "
                "move it out of the input or pass a glob that excludes it"
            )
        files.append(InputFile(path, rel, fmt))
    if not files:
        raise DataError(f"empty input: no .parquet, .jsonl or .jsonl.gz file under {spec!r}")
    return files


def _discover_remote(spec: str) -> list[InputFile]:
    """:func:`discover` for a URL (``s3://bucket/corpus``, a glob of one, one object)."""
    from ..runtime.storage import filesystem

    fs, path = filesystem(spec)
    proto = spec.split("://", 1)[0]

    def url(q):
        return f"{proto}://{q.lstrip('/')}" if not q.startswith(f"{proto}://") else q

    try:
        if _MAGIC.search(spec):
            base = path[: _MAGIC.search(path).start()].rsplit("/", 1)[0]
            hits = [q for q in fs.glob(path) if fs.isfile(q)]
            if not hits:
                raise DataError(f"empty input: the pattern {spec!r} matches no object; check the URL")
        elif fs.isdir(path):
            data = stage_output_data(spec)
            if data is not None:
                return _discover_remote(str(data))
            base = path.rstrip("/")
            hits = [q for q in fs.find(base) if not _hidden(q[len(base) :].strip("/").split("/"))]
        elif fs.isfile(path):
            base, hits = path.rsplit("/", 1)[0], [path]
        else:
            raise DataError(f"input {spec!r} does not exist; check the URL (and the storage credentials)")
    except DataError:
        raise
    except Exception as e:  # the backend's own errors (botocore's connection errors are not OSErrors)
        raise DataError(
            f"input {spec!r} cannot be listed ({type(e).__name__}: {_short(e)}); check the URL, "
            "the endpoint and the storage credentials"
        ) from None
    return _input_files([(url(q), q[len(base) :].strip("/")) for q in hits], spec)


def inspect_file(f: InputFile, cols: Columns, partition_on=None):
    """``(n_rows, d)`` from a Parquet footer or a pass over a JSONL file; checks the schema.

    ``d`` is None when the width is only known from the values (variable-length lists).
    """
    if f.fmt == "parquet":
        try:
            with open_file(f.path, "rb") as fh:
                pf = pq.ParquetFile(fh)
                schema, n = pf.schema_arrow, pf.metadata.num_rows
        except (pa.ArrowInvalid, OSError) as e:
            raise DataError(f"{f.rel}: not a readable Parquet file ({_short(e)}); replace or remove it") from None
        if isinstance(cols, TextColumns):  # embed/score: id + text, no embedding
            return n, check_text_schema(schema, f.rel, cols)
        d = check_schema(schema, f.rel, cols, partition_on)
        return n, d
    n, first = 0, None
    try:
        for _, line in jsonl_lines(f.path, f.rel):
            if first is None:
                first = line
            n += 1
        row = json.loads(first) if first is not None else None
    except DataError:
        raise
    except (OSError, EOFError, ValueError) as e:
        raise DataError(f"{f.rel}: not a readable JSONL file ({_short(e)}); replace or remove it") from None
    if row is None:
        return 0, None
    if not isinstance(row, dict):
        raise DataError(f"{f.rel}: line 1 is not a JSON object; each line must be one document")
    if isinstance(cols, TextColumns):
        return n, check_text_row(row, f.rel, cols)
    missing = [c for c in cols.required if c not in row]
    if missing:
        raise DataError(
            f"{f.rel}: missing column {missing[0]!r} (keys on line 1: {', '.join(row)}); rename it or pass "
            f"--{ {cols.id: 'id', cols.embedding: 'embedding', cols.quality: 'quality'}[missing[0]] }-column NAME"
        )
    if partition_on and partition_on not in row:
        raise DataError(f"{f.rel}: partition_on column {partition_on!r} is missing on line 1")
    emb = row[cols.embedding]
    if not isinstance(emb, list):
        raise DataError(f"{f.rel}: column {cols.embedding!r} on line 1 is not a list of floats")
    return n, len(emb)


def _short(e) -> str:
    return str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__


def make_splits(f: InputFile, n_rows: int, split_size: int) -> list[Split]:
    """Cut a file of ``n_rows`` into ``ceil(n/split_size)`` near-equal row ranges."""
    if n_rows <= 0:
        return []
    k = math.ceil(n_rows / split_size)
    bounds = [round(i * n_rows / k) for i in range(k + 1)]
    return [Split(f.path, f.rel, f.fmt, bounds[i], bounds[i + 1], whole=k == 1) for i in range(k)]


def read_split(s: Split, cols: Columns) -> pa.Table:
    """Rows ``[start, stop)`` of the split's file as an Arrow table, with the embedding
    column as ``fixed_size_list<float>[d]`` over one contiguous (N, d) buffer."""
    try:
        if s.fmt == "parquet":
            with open_file(s.path, "rb") as fh:
                table = read_parquet_rows(fh, s, cols.embedding)
        else:
            if is_url(s.path):
                with open_file(s.path, "rb") as fh:
                    table = pajson.read_json(
                        pa.input_stream(fh, compression="gzip" if s.path.lower().endswith(".gz") else None)
                    )
            else:
                table = pajson.read_json(pa.input_stream(s.path, compression="detect"))
            table = table.slice(s.start, s.rows)
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"{s.where()}: cannot read ({_short(e)}); replace or remove the file") from None
    if table.num_rows != s.rows:
        raise DataError(f"{s.where()}: file has {table.num_rows + s.start} rows now; it changed during the run")
    return normalize_embedding(table, cols, s.where(), s.start)


def normalize_embedding(table: pa.Table, cols: Columns, where: str, first_row: int = 0) -> pa.Table:
    """Turn a variable-length list embedding (JSONL) into ``fixed_size_list`` after checking
    every row has the same width. Fixed-size columns pass through untouched."""
    if cols.embedding not in table.schema.names:
        return table
    col = table.column(cols.embedding)
    if pa.types.is_fixed_size_list(col.type) or table.num_rows == 0:
        return table
    E = embedding_matrix(col, where, cols.embedding, first_row)
    arr = pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(E).reshape(-1)), E.shape[1])
    i = table.schema.get_field_index(cols.embedding)
    return table.set_column(i, cols.embedding, arr)
