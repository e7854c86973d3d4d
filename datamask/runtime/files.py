"""Files written whole or not at all, Parquet and JSONL read, on a local disk or an object store.

Locally a file is written under a temporary name and renamed when complete; on an object
store (no rename) it is one object, which appears only when its upload completes. Either
way a reader sees the whole file or none (:mod:`~datamask.runtime.storage`).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import DataError, OutputError
from .storage import Remote, is_url, location, open_file

__all__ = [
    "dictionary_columns",
    "write_parquet_atomic",
    "write_json_atomic",
    "parquet_rows",
    "count_rows",
    "read_parquet_table",
    "hive_path",
    "upload_tree",
    "split_row_groups",
    "read_parquet_rows",
    "READ_BATCH_BYTES",
    "READ_BUFFER_BYTES",
]


def _short(e) -> str:
    return str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:12]}")


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """Columns worth dictionary encoding: every one but vectors of floats (embeddings).

    An embedding's values never repeat, so a dictionary only costs: a float16 embedding
    column written with one reads back several times slower than without
    (``benchmarks/results/parquet_read.md``). Pass as ``use_dictionary`` to ``pyarrow.parquet.write_table``.
    """

    def vector(t):
        return (
            pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
        ) and pa.types.is_floating(t.value_type)

    return [f.name for f in schema if not vector(f.type)]


def write_parquet_atomic(table: pa.Table, path):
    """Write ``table`` so that ``path`` holds it whole or not at all: locally under a temporary
    name renamed when complete; on an object store as one object (no rename there: an upload
    appears only when it completes)."""
    path = location(path)
    try:
        if isinstance(path, Remote):
            with path.open("wb") as fh:
                pq.write_table(table, fh, use_dictionary=dictionary_columns(table.schema))
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _tmp(path)
        pq.write_table(table, tmp, use_dictionary=dictionary_columns(table.schema))
        os.replace(tmp, path)
    except OSError as e:
        raise OutputError(f"cannot write {path} ({_short(e)}); check space and permissions") from None


def write_json_atomic(obj, path):
    """A JSON file written whole or not at all (see :func:`write_parquet_atomic`)."""
    path = location(path)
    text = json.dumps(obj, indent=2, sort_keys=False, default=str)
    try:
        if isinstance(path, Remote):
            path.write_text(text)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _tmp(path)
        with open(tmp, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise OutputError(f"cannot write {path} ({_short(e)}); check space and permissions") from None


def read_parquet_table(path, **kw) -> pa.Table:
    """``pyarrow.parquet.read_table`` of a local path or a URL (through fsspec, with this
    process's storage options)."""
    if is_url(path):
        from .storage import filesystem

        fs, p = filesystem(str(path))
        return pq.read_table(p, filesystem=fs, **kw)
    return pq.read_table(str(path), **kw)


def parquet_rows(path) -> int | None:
    """Rows of a Parquet file from its footer, through this process's view of the storage;
    None when it is missing or unreadable."""
    try:
        with open_file(path, "rb") as fh:
            return pq.ParquetFile(fh).metadata.num_rows
    except (OSError, pa.ArrowInvalid, ValueError):
        return None


def _open_text(path):
    """A binary line reader of a (gzipped) JSONL file, local or a URL."""
    fh = open_file(path, "rb")
    return gzip.GzipFile(fileobj=fh) if str(path).lower().endswith(".gz") else fh


def jsonl_lines(path, rel):
    """``(line number, text)`` of a JSONL file's non-empty lines; a byte that is not UTF-8 is
    reported with its line number and column."""
    with _open_text(path) as fh:
        for i, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(
                    f"{rel}: line {i}: byte 0x{raw[e.start]:02x} at column {e.start + 1} is not "
                    "UTF-8; re-encode the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
                ) from None
            if line.strip():
                yield i, line


def count_rows(f) -> int:
    """Rows of one input file (an :class:`~datamask.pipeline.io.InputFile`): the Parquet
    footer, or the JSONL file's non-empty lines."""
    if f.fmt == "parquet":
        n = parquet_rows(f.path)
        if n is None:
            raise DataError(f"{f.rel}: not a readable Parquet file; replace or remove it")
        return n
    return sum(1 for _ in jsonl_lines(f.path, f.rel))


def hive_path(column: str, value) -> str:
    """``column=value`` directory name (Hive style, as pyarrow reads it back)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return f"{column}=__HIVE_DEFAULT_PARTITION__"
    from urllib.parse import quote

    return f"{column}={quote(str(value), safe='')}"


def upload_tree(local: Path, dest, last=()):
    """Copy every file under the local directory ``local`` to ``dest`` (a URL or a local
    path), each written whole (:func:`write_parquet_atomic`'s rule); the names in ``last``
    (e.g. the stage's marker) after all others, so a reader that finds them finds the rest."""
    dest = location(dest)
    files = sorted(
        (p for p in Path(local).rglob("*") if p.is_file()),
        key=lambda p: (p.relative_to(local).as_posix() in last, p.relative_to(local).as_posix()),
    )
    for p in files:
        target = dest / p.relative_to(local).as_posix()
        try:
            if isinstance(target, Remote):
                target.write_bytes(p.read_bytes())
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = _tmp(target)
                tmp.write_bytes(p.read_bytes())
                os.replace(tmp, target)
        except OSError as e:
            raise OutputError(f"cannot write {target} ({_short(e)}); check space and permissions") from None


def split_row_groups(pf, s):
    """The row groups of Parquet file ``pf`` that hold the rows ``[s.start, s.stop)`` of a
    split, and the file row where the first of them starts (None without one)."""
    groups, offset, first = [], 0, None
    for i in range(pf.metadata.num_row_groups):
        n = pf.metadata.row_group(i).num_rows
        if offset < s.stop and offset + n > s.start:
            groups.append(i)
            first = offset if first is None else first
        offset += n
    return groups, first


# A split's embedding is decoded this many bytes of values at a time (a batch of rows),
# through a buffered stream of this many bytes: neither a row group nor its column chunk is
# held whole (benchmarks/results/split_memory.md).
READ_BATCH_BYTES = 32 << 20
READ_BUFFER_BYTES = 1 << 20


def read_parquet_rows(fh, s, embedding=None) -> pa.Table:
    """Rows ``[s.start, s.stop)`` of the Parquet file open as ``fh``, the list column
    ``embedding`` landed in one (N, d) array that a ``fixed_size_list`` column wraps without
    a copy.

    Parquet stores an embedding as a nested list; decoding a whole row group at once holds
    repetition/definition levels and staging buffers of several times the values' size (a
    1M x 384 float16 split in one row group peaked at 6.4x its embedding bytes). Decoded in
    batches of :data:`READ_BATCH_BYTES` through a buffered stream, only the split's rows
    copied out, the peak is the array plus one batch. A ``list<float>`` of one width is read
    the same way and becomes a ``fixed_size_list`` (as ``normalize_embedding`` makes it);
    one with nulls or rows of other widths is read whole, for the schema checks to name the row.
    """
    pf = pq.ParquetFile(fh)
    groups, first = split_row_groups(pf, s)
    if not groups:
        return pf.schema_arrow.empty_table()
    schema, lo, n = pf.schema_arrow, s.start - first, s.stop - s.start
    field = schema.field(embedding) if embedding in schema.names else None
    emb = None
    if field is not None and _float_list(field.type):
        streamed = pq.ParquetFile(fh, metadata=pf.metadata, buffer_size=READ_BUFFER_BYTES, pre_buffer=False)
        emb = _read_vectors(streamed, groups, embedding, field.type, lo, n)
    if emb is None:
        return pf.read_row_groups(groups).slice(lo, n)
    rest = pf.read_row_groups(groups, columns=[c for c in schema.names if c != embedding]).slice(lo, n)
    table = rest.append_column(pa.field(embedding, emb.type, field.nullable, field.metadata), emb)
    pa.default_memory_pool().release_unused()  # hand the batches' staging back to the OS
    return table.select(schema.names)


def _float_list(t) -> bool:
    lists = pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t)
    return lists and pa.types.is_floating(t.value_type)


def _read_vectors(pf, groups, name, t, lo: int, n: int):
    """Rows ``[lo, lo + n)`` of the float list column ``name`` over ``groups`` as one
    ``FixedSizeListArray`` of the column's value type; None when a row is null or of
    another width than the first."""
    d = t.list_size if pa.types.is_fixed_size_list(t) else None
    per_row = (t.value_type.bit_width // 8) * (d or 1024)
    values, off, pos = None, 0, 0
    for batch in pf.iter_batches(
        batch_size=max(1, READ_BATCH_BYTES // max(per_row, 1)), row_groups=groups, columns=[name], use_threads=False
    ):
        a, b = max(lo - pos, 0), min(lo + n - pos, batch.num_rows)
        pos += batch.num_rows
        if b > a:
            col = batch.column(0).slice(a, b - a)
            if col.null_count:
                return None
            if d is None:  # list<float>: the first row's width, every row checked against it
                d = int(pc.list_value_length(col[:1]).to_numpy(zero_copy_only=False)[0])
            flat = col.flatten()  # honours the slice
            if flat.null_count or _widths_differ(col, d):
                return None
            if values is None:
                values = np.empty((n, d), dtype=t.value_type.to_pandas_dtype())
            values[off : off + len(col)] = flat.to_numpy(zero_copy_only=False).reshape(len(col), d)
            off += len(col)
        if pos >= lo + n:
            break
    if values is None or off != n:
        return None
    # the column's own value field (its name, e.g. parquet's "element"), so meta and data agree
    return pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), type=pa.list_(t.value_field, d))


def _widths_differ(col, d: int) -> bool:
    if pa.types.is_fixed_size_list(col.type):
        return False
    return bool(pc.any(pc.not_equal(pc.list_value_length(col), d)).as_py())
