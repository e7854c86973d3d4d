"""What every dataframe function needs from one partition: which split it is, and its rows
as the Arrow table the per-split functions take.

A partition read by :func:`datamask.dask.read` carries its split (file and rows) in
``DataFrame.attrs``, which pandas keeps through row filters and column changes: its identity
seeds it exactly as ``datamask select`` seeds that split. Any other partition is identified
by its number (``partition-3``), so its result depends on its rows, the seed and its index.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..pipeline.frames import SPLIT_ATTR, to_table
from ..pipeline.io import normalize_embedding

__all__ = [
    "PartSplit",
    "part_split",
    "part_table",
    "is_cudf",
    "keep_attrs",
    "RECORD_ATTR",
    "fixed_width",
    "check_not_strings",
]

# attrs key of an output partition's record (objective before/after, steps, seconds)
RECORD_ATTR = "datamask_record"


@dataclass
class PartSplit:
    number: int
    identity: str  # seeds the split
    where: str  # names it in errors
    first_row: int  # row number of its first row in errors


def is_cudf(df) -> bool:
    return type(df).__module__.split(".")[0] == "cudf"


def part_split(df, partition_info) -> PartSplit:
    """The split a partition is: from its attrs when :func:`datamask.dask.read` made it."""
    i = int(partition_info["number"]) if partition_info else 0
    info = getattr(df, "attrs", {}).get(SPLIT_ATTR) if not is_cudf(df) else None
    if info:
        whole = len(df) == int(info["rows"])  # rows filtered out: row numbers are the partition's own
        return PartSplit(i, info["identity"], f"split {i} ({info['where']})", int(info["start"]) if whole else 0)
    return PartSplit(i, f"partition-{i}", f"split {i}", 0)  # (the identity seeds it: unchanged since 0.2)


def part_table(df, cols, where: str, first_row: int = 0):
    """The partition as an Arrow table (cudf: its variable lists back to fixed-size)."""
    table = to_table(df)
    if is_cudf(df) and cols.embedding:  # never run here: RAPIDS is not installed on the test machines
        table = normalize_embedding(table, cols, where, first_row)
    return table


def keep_attrs(out, df, **extra):
    """``out`` with ``df``'s attrs (pandas) plus ``extra``; cudf frames are returned as they are."""
    if not is_cudf(out):
        out.attrs.update(getattr(df, "attrs", {}))
        out.attrs.update(extra)
    return out


def check_not_strings(meta, column: str):
    """Refuse an embedding column Dask turned into strings (``dataframe.convert-string``
    converts object columns, vectors included, when a frame is built from pandas)."""
    from ..errors import DataError

    if (
        column in getattr(meta, "columns", ())
        and pd.api.types.is_string_dtype(meta[column].dtype)
        and str(meta[column].dtype) != "object"
    ):
        raise DataError(
            f"column {column!r} holds strings ({meta[column].dtype}): Dask converted a column of "
            "vectors to text; build the frame inside dask.config.set({'dataframe.convert-string': "
            "False}) or read it with datamask.dask.read"
        )


def fixed_width(meta, column: str):
    """``d`` of a ``fixed_size_list`` embedding column in ``meta``, else None."""
    try:
        t = meta[column].dtype
    except KeyError:
        return None
    if isinstance(t, pd.ArrowDtype):
        import pyarrow as pa

        if pa.types.is_fixed_size_list(t.pyarrow_dtype):
            return t.pyarrow_dtype.list_size
    return None
