"""Partition frames: Arrow tables in and out of the frame library a worker computes with.

The frame adapter of the GPU levels (:mod:`datamask.pipeline.gpu`): pandas (Arrow-backed)
on CPU and on the CUDA level (no RAPIDS), cudf on the RAPIDS level. Only :func:`to_frame` and
:func:`to_table` know about cudf, and they import it lazily. The runner passes the level's
frame library (``"cudf"`` or ``"pandas"``); ``"gpu"`` and ``"cpu"`` are read as those.
"""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from .io import Split, read_split
from .schema import Columns

__all__ = ["to_frame", "gpu_compatible", "to_table", "read_frame", "text_frame", "pandas_table"]


def to_frame(table: pa.Table, device: str):
    """``table`` as a frame of the library ``device`` names: ``"cudf"`` (or ``"gpu"``), else pandas."""
    if device in ("cudf", "gpu"):
        import cudf

        return cudf.DataFrame.from_arrow(gpu_compatible(table))
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def gpu_compatible(table):
    """cudf holds no float16 and no fixed-size lists: variable lists of float32."""
    fields = [pa.field(f.name, pa.list_(pa.float32())) if pa.types.is_fixed_size_list(f.type) else f
              for f in table.schema]
    return table.cast(pa.schema(fields))


def to_table(df) -> pa.Table:
    if type(df).__module__.split(".")[0] == "cudf":
        return df.to_arrow()
    # No pandas metadata: pandas cannot read back its ArrowDtype strings for fixed-size lists
    # ("fixed_size_list<...>[d]"), so .to_pandas() of the output would fail; Arrow types suffice.
    return pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(None)


def read_frame(s: Split, cols: Columns, device: str):
    return to_frame(read_split(s, cols), device)


def text_frame(df, s, text_column):
    """The partition as pandas, indexed by file row (so messages name the file's row). A binary
    text column becomes Python bytes, which the text reader decodes as UTF-8 row by row."""
    from ..features.text import to_pandas

    pdf = to_pandas(df)
    pdf.index = pd.RangeIndex(s.start, s.start + len(pdf))
    t = pdf[text_column].dtype
    if isinstance(t, pd.ArrowDtype) and (pa.types.is_binary(t.pyarrow_dtype) or pa.types.is_large_binary(t.pyarrow_dtype)):
        pdf[text_column] = pdf[text_column].astype(object)
    return pdf


def pandas_table(pdf) -> pa.Table:
    # No pandas metadata: its ArrowDtype strings ("fixed_size_list<...>[384]") cannot be read back
    # by pandas, and the Arrow types alone round-trip.
    return pa.Table.from_pandas(pdf, preserve_index=False).replace_schema_metadata(None)
