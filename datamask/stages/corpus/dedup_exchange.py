"""The files ``datamask dedup`` exchanges between its corpus-wide passes, the passes
themselves, and how a pass reads its split.

A document is named by its number ``file rank << ROW_BITS | row`` (files ranked by path,
:func:`~datamask.dedup.pairs.document_numbers`), so the smallest number is the first
document by path and row, and a split's documents are one contiguous range of numbers
(:func:`doc_range`). A pass reads its split in batches (:func:`iter_batches`).

Every corpus-wide step of the stage is a *pass*: one Dask task per split or per partition,
each reading its inputs from Parquet under ``_datamask/dedup/`` and writing its outputs
there, and returning a small dict (counts) to the client. A pass that completed writes
``<pass>/_done.json`` with those dicts, so a rerun starts at the first pass without one
(:class:`Passes`); the client holds O(tasks), never a row.

Rows move between passes through *routed files* (a shuffle through the disk, as datatrove
does): a task writes one Parquet file whose row groups come in rounds of ``n_parts``, row
group ``r * n_parts + p`` holding the rows bound for partition ``p``
(:class:`RoutedWriter`); task ``p`` of the next pass reads those row groups of every file
(:func:`read_part`). Memory per task is one partition's rows, whatever the corpus size.
Measured against Dask's p2p shuffle in ``benchmarks/dedup_scale.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ...dedup.pairs import document_numbers as numbers
from ...errors import DataError, OutputError
from ...pipeline.io import Split, read_split, split_row_groups
from ...pipeline.runner import ProgressBars
from ...pipeline.schema import TextColumns
from ...runtime.files import write_json_atomic
from ...runtime.storage import Remote, location, open_file, rmtree

__all__ = [
    "DedupColumns",
    "file_ranks",
    "document_numbers",
    "doc_range",
    "column_names",
    "gather",
    "iter_batches",
    "take_docs",
    "RoutedWriter",
    "write_routed",
    "read_part",
    "take_rows",
    "hash_part",
    "split_of",
    "Passes",
    "FLUSH_ROWS",
]

FLUSH_ROWS = 4_000_000  # rows a RoutedWriter buffers before writing a round of row groups
DONE = "_done.json"


def hash_part(x, n_parts: int) -> np.ndarray:
    """Partition of each int64 value: a mix of its bits modulo ``n_parts``."""
    x = np.asarray(x).view(np.uint64) if np.asarray(x).dtype == np.int64 else np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = (x ^ (x >> np.uint64(31))) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    return (h % np.uint64(n_parts)).astype(np.int64)


def split_of(doc, bounds) -> np.ndarray:
    """Index of the split holding each document (``bounds``: each split's first number, sorted)."""
    return np.searchsorted(bounds, np.asarray(doc, dtype=np.int64), side="right") - 1


@contextlib.contextmanager
def _atomic(path):
    """A binary file object whose contents appear at ``path`` whole, or not at all."""
    loc = location(path)
    if isinstance(loc, Remote):
        with loc.open("wb") as fh:  # an object store shows an upload only when it completes
            yield fh
        return
    loc.parent.mkdir(parents=True, exist_ok=True)
    tmp = loc.with_name(f".{loc.name}.tmp-{uuid.uuid4().hex[:12]}")
    try:
        with open(tmp, "wb") as fh:
            yield fh
        os.replace(tmp, loc)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class RoutedWriter:
    """A routed file (module doc) written whole or not at all: ``add(table, part)`` buffers
    rows with their partition; every ``flush_rows`` rows, and at ``close``, a round of
    ``n_parts`` row groups is written (empty ones included)."""

    def __init__(self, path, schema: pa.Schema, n_parts: int, flush_rows: int = FLUSH_ROWS):
        self.path, self.schema, self.n_parts, self.flush_rows = path, schema, int(n_parts), flush_rows
        self._tables, self._parts, self._rows = [], [], 0
        self._cm = self._fh = self._writer = None

    def __enter__(self):
        self._cm = _atomic(self.path)
        self._fh = self._cm.__enter__()
        self._writer = pq.ParquetWriter(self._fh, self.schema, compression="none", use_dictionary=False)
        return self

    def add(self, table: pa.Table, part):
        self._tables.append(table.select(self.schema.names).cast(self.schema))
        self._parts.append(np.asarray(part, dtype=np.int64))
        self._rows += table.num_rows
        if self._rows >= self.flush_rows:
            self._flush()

    def _flush(self):
        table = pa.concat_tables(self._tables) if self._tables else self.schema.empty_table()
        part = np.concatenate(self._parts) if self._parts else np.zeros(0, np.int64)
        order = np.argsort(part, kind="stable")
        table = table.take(pa.array(order))
        ends = np.cumsum(np.bincount(part, minlength=self.n_parts))
        start = 0
        for p in range(self.n_parts):
            n = int(ends[p]) - start
            self._writer.write_table(table.slice(start, n), row_group_size=max(n, 1))
            start += n
        self._tables, self._parts, self._rows = [], [], 0

    def __exit__(self, kind, exc, tb):
        try:
            if kind is None:
                self._flush()
            self._writer.close()
        finally:
            try:
                self._cm.__exit__(kind, exc, tb)
            except OSError as e:
                raise OutputError(f"cannot write {self.path} ({e}); check space and permissions") from None
        return False


def write_routed(path, table: pa.Table, part, n_parts: int):
    """``table`` as a routed file of one round (``part``: each row's partition)."""
    with RoutedWriter(path, table.schema, n_parts, flush_rows=1 << 62) as w:
        w.add(table, part)


def read_part(paths, p: int, n_parts: int, schema: pa.Schema, columns=None) -> pa.Table:
    """The rows of partition ``p`` in the routed files ``paths``, in file order."""
    parts = []
    for path in paths:
        with open_file(path, "rb") as fh:
            pf = pq.ParquetFile(fh)
            groups = list(range(p, pf.metadata.num_row_groups, n_parts))
            if groups:
                parts.append(pf.read_row_groups(groups, columns=columns))
    if not parts:
        return pa.schema([schema.field(c) for c in (columns or schema.names)]).empty_table()
    return pa.concat_tables(parts)


def take_rows(path, rows, columns) -> pa.Table:
    """Rows ``rows`` (sorted, unique, 0-based) of a Parquet file, reading only the row groups
    that hold one."""
    rows = np.asarray(rows, dtype=np.int64)
    out = []
    with open_file(path, "rb") as fh:
        pf = pq.ParquetFile(fh)
        start = 0
        for g in range(pf.metadata.num_row_groups):
            n = pf.metadata.row_group(g).num_rows
            lo, hi = np.searchsorted(rows, [start, start + n])
            if hi > lo:
                out.append(pf.read_row_group(g, columns=columns).take(pa.array(rows[lo:hi] - start)))
            start += n
        schema = pf.schema_arrow
    if not out:
        return pa.schema([schema.field(c) for c in columns]).empty_table()
    return pa.concat_tables(out)


def take_docs(path, lo: int, docs, columns) -> pa.Table:
    """``columns`` of documents ``docs`` (any order, repeats allowed) from a split's file of
    one row per document (its first document numbered ``lo``), in the order of ``docs``."""
    rows, inv = np.unique(np.asarray(docs, dtype=np.int64) - int(lo), return_inverse=True)
    t = take_rows(path, rows, columns)
    return t.take(pa.array(inv.reshape(-1))) if len(inv) else t.slice(0, 0)


def _timed(item, fn, ctx):
    """``fn(item, ctx)`` and where and how long it ran: wall and CPU seconds of its worker
    process meanwhile (Arrow reads on threads of their own). On a worker with several threads
    the tasks running beside it are counted too, so a pass's ``cpu_seconds`` is exact only on
    single-threaded workers (the local cluster's); the per-task list is there to see that."""
    from distributed import get_worker

    t, c = time.perf_counter(), time.process_time()
    out = fn(item, ctx)
    return out, (time.process_time() - c, time.perf_counter() - t, get_worker().address)


class Passes:
    """The corpus-wide passes of one run, resumable at the first one not done.

    ``root``: ``_datamask/dedup``. :meth:`run` runs a pass (or, when its ``_done.json``
    exists and every earlier pass was reused, returns what it recorded); ``timings`` and
    ``reused`` say what this run did, for the manifest."""

    def __init__(self, client, root, quiet: bool):
        self.client, self.root, self.quiet = client, location(root), quiet
        self.reuse = True  # until a pass has to run: then every later pass runs too
        self.timings, self.cpu, self.reused = {}, {}, []

    def folder(self, name):
        return self.root / name

    def done(self, name):
        path = self.folder(name) / DONE
        return json.loads(path.read_text()) if path.exists() else None

    def run(self, name: str, fn, items, ctx, desc: str | None = None) -> list:
        """``fn(item, ctx)`` for every item, as Dask tasks (:func:`~datamask.runtime.executor.run_tasks`:
        the first error cancels the rest and waits for those running); their dicts, in item order."""
        from ...pipeline.runner import ProgressBars
        from ...runtime.executor import run_tasks

        got = self.done(name) if self.reuse else None
        if got is not None:
            self.reused.append(name)
            return got["results"]
        self.reuse = False
        rmtree(self.folder(name))
        t0 = time.perf_counter()
        items = list(items)
        token = uuid.uuid4().hex[:8]
        keys = [f"dedup-{name}-{i}-{token}" for i in range(len(items))]
        futures = self.client.map(_timed, items, fn=fn, ctx=ctx, key=keys)
        n = len(items)
        with ProgressBars(self.client, n, 0, n, self.quiet, desc=desc or f"dedup {name}") as bars:
            results = run_tasks(self.client, futures, lambda i, r: bars.split_done(None), what=f"dedup {name} task(s)")
        self.timings[name] = round(time.perf_counter() - t0, 3)
        self.cpu[name] = round(sum(c[0] for _, c in results), 3)
        tasks = [[round(c[0], 3), round(c[1], 3), c[2]] for _, c in results]
        results = [r for r, _ in results]
        record = {"results": results, "seconds": self.timings[name], "cpu_seconds": self.cpu[name], "tasks": tasks}
        write_json_atomic(record, self.folder(name) / DONE)
        return results

    def free(self, name: str):
        """Delete the files of a pass whose readers are all done, keeping its record (so a
        rerun still starts after it)."""
        for path in self.folder(name).iterdir():
            if path.name != DONE:
                rmtree(path) if path.is_dir() else path.unlink()

    def scatter(self, ctx):
        """``ctx`` sent to every worker once (each task receives it by reference)."""
        return self.client.scatter([ctx], broadcast=True, hash=False)[0]  # a list: a dict is one object


# ---------------------------------------------------------------------- reading a split
class DedupColumns(TextColumns):
    """Id and text, plus the embedding column for the semantic kind (None otherwise)."""

    def __init__(self, id="id", text="text", embedding=None):
        super().__init__(id, text, extra=(embedding,) if embedding else ())
        self.embedding = embedding

    def hint(self, name):
        if name not in (self.id, self.text):
            return "run datamask embed first, or pass --set embedding_column=NAME, or leave semantic out of --kind"
        return super().hint(name)


def file_ranks(plan) -> dict:
    """Rank of every input file (relative path), in path order."""
    return {rel: i for i, rel in enumerate(sorted({s.rel for s in plan.splits}))}


def document_numbers(s: Split, ranks) -> np.ndarray:
    """(rows,) int64 numbers of the split's documents (:func:`~datamask.dedup.pairs.document_numbers`)."""
    return numbers(ranks[s.rel], s.start, s.stop)


def doc_range(s: Split, ranks):
    """``[lo, hi)`` of the split's document numbers."""
    lo = numbers(ranks[s.rel], s.start, s.start + 1)[0]
    return lo, lo + s.rows


def column_names(plan, cols):
    """Column names of the first split (read with no row)."""
    first = plan.splits[0]
    return read_split(Split(first.path, first.rel, first.fmt, first.start, first.start), cols).schema.names


def gather(client, frames, desc, quiet, n):
    """Compute a Dask frame partition by partition (a progress bar; through
    :func:`~datamask.runtime.executor.run_tasks`), concatenated in partition order."""
    from ...runtime.executor import run_tasks

    with ProgressBars(client, n, 0, n, quiet, desc=desc) as bars:
        parts = run_tasks(client, frames, lambda i, r: bars.split_done(None), what=f"{desc} task(s)")
    return pd.concat(parts, ignore_index=True) if parts else None


def iter_batches(s: Split, columns, batch_rows: int):
    """The split's rows ``batch_rows`` at a time, only ``columns`` (those present): a Parquet
    file is read row group by row group, so memory is one batch, whatever the split size."""
    if s.fmt != "parquet":
        table = read_split(s, TextColumns(columns[0], columns[1]))
        table = table.select([c for c in columns if c in table.schema.names])
        for lo in range(0, table.num_rows, batch_rows):
            yield table.slice(lo, batch_rows)
        return
    try:
        with open_file(s.path, "rb") as fh:
            pf = pq.ParquetFile(fh)
            groups, first = split_row_groups(pf, s)
            names = [c for c in columns if c in pf.schema_arrow.names]
            pos, seen = first or 0, 0
            for batch in pf.iter_batches(batch_size=batch_rows, row_groups=groups, columns=names):
                lo, hi = max(s.start - pos, 0), min(s.stop - pos, batch.num_rows)
                pos += batch.num_rows
                if hi > lo:
                    seen += hi - lo
                    yield pa.Table.from_batches([batch.slice(lo, hi - lo)])
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(
            f"{s.where()}: cannot read ({str(e).strip().splitlines()[0][:200]}); replace or remove the file"
        ) from None
    if seen != s.rows:
        raise DataError(f"{s.where()}: file has changed during the run (read {seen + s.start} rows of {s.stop})")
