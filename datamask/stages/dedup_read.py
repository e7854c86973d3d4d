"""Reading for ``datamask dedup``'s corpus-wide passes: document numbers, the columns a pass
needs, per-split tasks over sorted document lists, and gathering their results.

A document is named by its number ``file rank << ROW_BITS | row`` (files ranked by path,
:func:`~datamask.dedup.pairs.document_numbers`), so the smallest number is the first
document by path and row, and a split's documents are one contiguous range of numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..dedup.pairs import document_numbers as numbers
from ..errors import DataError
from ..pipeline.io import Split, read_split, split_row_groups
from ..pipeline.runner import ProgressBars
from ..pipeline.schema import TextColumns
from ..pipeline.storage import open_file

__all__ = [
    "DedupColumns",
    "file_ranks",
    "document_numbers",
    "doc_range",
    "column_names",
    "docs_in_split",
    "per_split",
    "gather",
    "iter_batches",
]


class DedupColumns(TextColumns):
    """Id and text, plus the embedding column for the semantic kind (None otherwise)."""

    def __init__(self, id="id", text="text", embedding=None):
        super().__init__(id, text, extra=(embedding,) if embedding else ())
        self.embedding = embedding

    def hint(self, name):
        if name not in (self.id, self.text):
            return "run datamask embed first, or pass --embedding-column NAME, or leave semantic out of --kind"
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


def docs_in_split(sorted_docs: np.ndarray, s: Split, ranks) -> np.ndarray:
    """The numbers of ``sorted_docs`` that belong to split ``s``."""
    lo, hi = doc_range(s, ranks)
    return sorted_docs[np.searchsorted(sorted_docs, lo) : np.searchsorted(sorted_docs, hi)]


def per_split(fn, plan, ranks, docs_sorted, meta, **kw):
    """A Dask frame of ``fn(split, its documents of docs_sorted, ranks=ranks, **kw)`` per
    split: each task carries only its own slice of the document list."""
    import dask
    import dask.dataframe as dd

    slices = [docs_in_split(docs_sorted, s, ranks) for s in plan.splits]
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(fn, plan.splits, slices, ranks=ranks, meta=meta, enforce_metadata=False, **kw)


def gather(client, frames, desc, quiet, n):
    """Compute a Dask frame partition by partition (a progress bar; through
    :func:`~datamask.pipeline.executor.run_tasks`), concatenated in partition order."""
    from ..pipeline.executor import run_tasks

    with ProgressBars(client, n, 0, n, quiet, desc=desc) as bars:
        parts = run_tasks(client, frames, lambda i, r: bars.split_done(None), what=f"{desc} task(s)")
    return pd.concat(parts, ignore_index=True) if parts else None


def iter_batches(s: Split, columns, batch_rows: int):
    """The split's rows ``batch_rows`` at a time, only ``columns`` (those present): a Parquet
    file is read row group by row group, so memory is one batch, whatever the split size."""
    import pyarrow.parquet as pq

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
