"""Partition frames: Arrow tables in and out of the frame library a worker computes with.

The frame adapter of the GPU levels (:mod:`datamask.runtime.gpu`): pandas (Arrow-backed)
on CPU and on the CUDA level (no RAPIDS), cudf on the RAPIDS level. Only :func:`to_frame` and
:func:`to_table` know about cudf, and they import it lazily. The runner passes the level's
frame library (``"cudf"`` or ``"pandas"``); ``"gpu"`` and ``"cpu"`` are read as those.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from .io import Split, read_split
from .schema import Columns

__all__ = [
    "to_frame",
    "gpu_compatible",
    "to_table",
    "read_frame",
    "text_frame",
    "pandas_table",
    "SPLIT_ATTR",
    "read_splits",
]

# ``DataFrame.attrs`` key of a partition read from a split: its identity (which seeds it) and
# where it came from. pandas carries attrs through row filters and column changes.
SPLIT_ATTR = "datamask_split"


def to_frame(table: pa.Table, device: str):
    """``table`` as a frame of the library ``device`` names: ``"cudf"`` (or ``"gpu"``), else pandas."""
    if device in ("cudf", "gpu"):
        import cudf

        return cudf.DataFrame.from_arrow(gpu_compatible(table))
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def gpu_compatible(table):
    """cudf holds no float16 and no fixed-size lists: variable lists of float32."""
    fields = [
        pa.field(f.name, pa.list_(pa.float32())) if pa.types.is_fixed_size_list(f.type) else f for f in table.schema
    ]
    return table.cast(pa.schema(fields))


def to_table(df) -> pa.Table:
    if type(df).__module__.split(".")[0] == "cudf":
        return df.to_arrow()
    # No pandas metadata: pandas cannot read back its ArrowDtype strings for fixed-size lists
    # ("fixed_size_list<...>[d]"), so .to_pandas() of the output would fail; Arrow types suffice.
    return pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(None)


def read_frame(s: Split, cols: Columns, device: str):
    df = to_frame(read_split(s, cols), device)
    if hasattr(df, "attrs"):  # pandas; cudf frames hold no attrs
        df.attrs[SPLIT_ATTR] = {"identity": s.identity, "where": s.where(), "start": s.start, "rows": s.rows}
    return df


class _ReadColumns(Columns):
    """Reading only: no column is required; the embedding column is normalised if present."""

    required = ()


def _read_selected(s: Split, cols: Columns, device: str, columns=None):
    df = read_frame(s, cols, device)
    if columns is not None:
        attrs = dict(getattr(df, "attrs", {}))
        df = df[list(columns)]
        if attrs:
            df.attrs.update(attrs)
    return df


def read_splits(
    path, split_size: int = 1_000_000, columns=None, embedding_column: str = "embedding", device: str = "cpu"
):
    """A lazy Dask DataFrame of a corpus (Parquet / JSONL file, directory or glob), one
    partition per split, cut exactly as ``datamask select`` cuts them (``split_size``), so a
    partition's seed (from its split identity) is the CLI's. Arrow types are kept (the
    embedding stays a ``fixed_size_list``); ``device="gpu"`` gives cudf partitions."""
    import dask
    import dask.dataframe as dd

    from ..errors import DataError
    from .split_job import file_splits

    cols = _ReadColumns(embedding=embedding_column)
    splits = file_splits(path, split_size)
    if not splits:
        raise DataError(f"empty input: {path!r} holds 0 rows")
    first = splits[0]
    with dask.config.set({"dataframe.convert-string": False}):
        meta = _read_selected(Split(first.path, first.rel, first.fmt, first.start, first.start), cols, device, columns)
        return dd.from_map(
            _read_selected, splits, cols=cols, device=device, columns=columns, meta=meta, enforce_metadata=False
        )


def text_frame(df, s, text_column):
    """The split (an Arrow table, or a pandas / cudf frame) as pandas, indexed by file row (so
    messages name the file's row). A binary text column becomes Python bytes, which the text
    reader decodes as UTF-8 row by row."""
    from ..features.text import to_pandas

    pdf = df.to_pandas(types_mapper=pd.ArrowDtype) if isinstance(df, pa.Table) else to_pandas(df)
    pdf.index = pd.RangeIndex(s.start, s.start + len(pdf))
    t = pdf[text_column].dtype
    if isinstance(t, pd.ArrowDtype) and (
        pa.types.is_binary(t.pyarrow_dtype) or pa.types.is_large_binary(t.pyarrow_dtype)
    ):
        pdf[text_column] = pdf[text_column].astype(object)
    return pdf


def pandas_table(pdf) -> pa.Table:
    # No pandas metadata: its ArrowDtype strings ("fixed_size_list<...>[384]") cannot be read back
    # by pandas, and the Arrow types alone round-trip.
    return pa.Table.from_pandas(pdf, preserve_index=False).replace_schema_metadata(None)
