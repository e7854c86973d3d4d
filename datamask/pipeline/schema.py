"""Column names and checks of one input table, and the zero-copy embedding matrix.

Checks come in two kinds: ``check_schema`` looks at an Arrow schema only (run on the
client before any work starts, from Parquet footers), ``check_table`` looks at the values
of one partition (run inside the partition task). Every failure is a ``DataError`` whose
message names the file, the column, the value and the fix.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataError

__all__ = [
    "SELECTED",
    "LOGIT",
    "FLOAT_TYPES",
    "Columns",
    "embedding_width",
    "check_schema",
    "check_vectors",
    "embedding_matrix",
    "check_table",
    "TextColumns",
    "check_text_schema",
    "check_text_row",
]

# Columns the pipeline adds with --keep-all.
SELECTED = "selected"
LOGIT = "datamask_logit"
FLOAT_TYPES = (pa.float16(), pa.float32(), pa.float64())


class Columns:
    """The three column names the pipeline needs, from the config."""

    def __init__(self, id="id", embedding="embedding", quality="quality"):
        self.id, self.embedding, self.quality = id, embedding, quality

    @classmethod
    def from_config(cls, cfg):
        return cls(cfg.id_column, cfg.embedding_column, cfg.quality_column)

    @property
    def required(self):
        return (self.id, self.embedding, self.quality)


def embedding_width(t: pa.DataType):
    """``d`` for a fixed_size_list, ``None`` for a variable list; raises for anything else."""
    if pa.types.is_fixed_size_list(t):
        return t.list_size
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return None
    raise TypeError(str(t))


def check_schema(schema: pa.Schema, where: str, cols: Columns, partition_on=None):
    """Required columns exist with usable types. Returns ``d`` (None if not fixed)."""
    missing = [c for c in cols.required if c not in schema.names]
    if missing:
        raise DataError(
            f"{where}: missing column {missing[0]!r} (columns: {', '.join(schema.names)}); "
            f"rename it or pass --set {_flag(cols, missing[0])}=NAME"
        )
    if partition_on and partition_on not in schema.names:
        raise DataError(
            f"{where}: partition_on column {partition_on!r} is missing (columns: {', '.join(schema.names)})"
        )
    et = schema.field(cols.embedding).type
    try:
        d = embedding_width(et)
    except TypeError:
        raise DataError(
            f"{where}: column {cols.embedding!r} has type {et}; expected fixed_size_list<float16|float32>[d]"
        ) from None
    if et.value_type not in FLOAT_TYPES:
        raise DataError(f"{where}: column {cols.embedding!r} holds {et.value_type}, expected float16 or float32 values")
    qt = schema.field(cols.quality).type
    if not (pa.types.is_floating(qt) or pa.types.is_integer(qt)):
        raise DataError(f"{where}: column {cols.quality!r} has type {qt}; expected a float column")
    return d


def _flag(cols, name):
    return {cols.id: "id_column", cols.embedding: "embedding_column", cols.quality: "quality_column"}[name]


def _first(mask_np):
    return int(np.flatnonzero(mask_np)[0])


def embedding_matrix(arr, where: str, column: str, first_row: int = 0) -> np.ndarray:
    """(N, d) numpy view of an Arrow list column, without a per-row Python detour.

    A fixed_size_list without nulls is viewed in place (values buffer → reshape); a
    variable list is checked for one width first. float64 values are cast to float32.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    n = len(arr)
    if arr.null_count:
        i = _first(arr.is_null().to_numpy(zero_copy_only=False))
        raise DataError(f"{where}: column {column!r} is null at row {first_row + i}; drop or re-embed that row")
    if pa.types.is_fixed_size_list(arr.type):
        d = arr.type.list_size
    else:
        lengths = pc.list_value_length(arr).to_numpy(zero_copy_only=False)
        d = int(lengths[0]) if n else 0
        bad = lengths != d
        if bad.any():
            i = _first(bad)
            raise DataError(
                f"{where}: column {column!r} width differs between rows: row {first_row + i} has "
                f"{int(lengths[i])} values, row {first_row} has {d}; re-embed so every row has the same width"
            )
    values = arr.flatten()  # honours slice offsets
    if values.null_count:
        i = _first(values.is_null().to_numpy(zero_copy_only=False)) // max(d, 1)
        raise DataError(f"{where}: column {column!r} has a null value in row {first_row + i}; re-embed that row")
    if values.type == pa.float64():
        values = values.cast(pa.float32())
    elif values.type not in FLOAT_TYPES:
        raise DataError(f"{where}: column {column!r} holds {values.type}, expected float16 or float32 values")
    return values.to_numpy(zero_copy_only=True).reshape(n, d)


def check_table(table: pa.Table, where: str, cols: Columns, first_row: int = 0, expect_d=None, vectors: bool = True):
    """Values of one partition: returns (E numpy (N, d), q float array (N,)).

    Rejects a width other than ``expect_d``, NaN/inf in embeddings or quality, zero-norm
    embeddings and null ids/quality. ``vectors=False`` leaves the NaN/inf and zero-norm
    checks of the embeddings to the caller (:func:`check_vectors`, on the device the
    embeddings are moved to).
    """
    check_schema(table.schema, where, cols)
    E = embedding_matrix(table.column(cols.embedding), where, cols.embedding, first_row)
    if expect_d is not None and E.shape[0] and E.shape[1] != expect_d:
        raise DataError(
            f"{where}: column {cols.embedding!r} has width {E.shape[1]} but other inputs have {expect_d}; "
            "embed every file with the same model"
        )
    qcol = table.column(cols.quality)
    if qcol.null_count:
        i = _first(qcol.is_null().to_numpy(zero_copy_only=False))
        raise DataError(f"{where}: column {cols.quality!r} is null at row {first_row + i}; fill or drop those rows")
    q = qcol.to_numpy().astype(np.float64, copy=False)
    bad = ~np.isfinite(q)
    if bad.any():
        i = _first(bad)
        raise DataError(f"{where}: column {cols.quality!r} is {q[i]} at row {first_row + i}; fill or drop those rows")
    if table.column(cols.id).null_count:
        i = _first(table.column(cols.id).is_null().to_numpy(zero_copy_only=False))
        raise DataError(f"{where}: column {cols.id!r} is null at row {first_row + i}; every row needs an id")
    if vectors:
        check_vectors(E, where, cols.embedding, first_row)
    return E, q


VECTOR_BLOCK = 65536  # rows per float32 block of check_vectors (100 MB at d = 384)


def check_vectors(E, where: str, column: str, first_row: int = 0):
    """Reject NaN/inf and zero-norm rows of ``E`` (numpy or cupy, on its own device).

    Squared norms are taken in float32 blocks into one array, then checked once: on a GPU
    that is one read-back for the whole split, and the host is free to read the next one.
    The error names the first bad row.
    """
    from ..core.backend import get_namespace
    from ..core.validate import unit_rows

    xp = get_namespace(E)
    n = E.shape[0]
    sq = xp.empty(n, dtype=xp.float32)
    for i0 in range(0, n, VECTOR_BLOCK):
        blk = unit_rows(E[i0 : i0 + VECTOR_BLOCK])  # a float32 copy (float16 on the host: the compiled cast)
        sq[i0 : i0 + VECTOR_BLOCK] = xp.einsum("ij,ij->i", blk, blk)
    bad = ~xp.isfinite(sq)
    flagged = bad | (sq < 1e-16)
    if not bool(flagged.any()):
        return
    i = int(xp.argmax(flagged))
    if bool(bad[i]):
        raise DataError(f"{where}: column {column!r} has NaN or inf at row {first_row + i}; drop or re-embed that row")
    raise DataError(
        f"{where}: column {column!r} has a zero-norm embedding at row {first_row + i}; drop or re-embed that row"
    )


# ---------------------------------------------------------------------- text stages
class TextColumns:
    """The columns the text stages (embed, score) need: the id and the text. They have no
    embedding or quality requirement (``embedding``/``quality`` are None), and ``extra``
    names further columns a stage reads (score columns, a domain column)."""

    embedding = None
    quality = None

    def __init__(self, id="id", text="text", extra=()):
        self.id, self.text, self.extra = id, text, tuple(extra)

    @classmethod
    def from_config(cls, cfg, extra=()):
        return cls(cfg.id_column, cfg.text_column, extra)

    @property
    def required(self):
        return (self.id, self.text) + tuple(c for c in self.extra if c not in (self.id, self.text))

    def hint(self, name):
        if name in (self.id, self.text):
            return f"rename it or pass --set {'id' if name == self.id else 'text'}_column=NAME"
        return "add the column or fix the column names in --scores / --domain-weights / --domain-column"


def check_text_schema(schema: pa.Schema, where: str, cols: TextColumns):
    """Required columns exist and the text column holds strings (or bytes, decoded as UTF-8)."""
    missing = [c for c in cols.required if c not in schema.names]
    if missing:
        raise DataError(
            f"{where}: missing column {missing[0]!r} (columns: {', '.join(schema.names)}); {cols.hint(missing[0])}"
        )
    t = schema.field(cols.text).type
    if not (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_null(t)
    ):
        raise DataError(f"{where}: text column {cols.text!r} has type {t}; expected strings")
    return None


def check_text_row(row: dict, where: str, cols: TextColumns):
    """The same check on the first line of a JSONL file."""
    missing = [c for c in cols.required if c not in row]
    if missing:
        raise DataError(
            f"{where}: missing column {missing[0]!r} (keys on line 1: {', '.join(row)}); {cols.hint(missing[0])}"
        )
    v = row[cols.text]
    if v is not None and not isinstance(v, str):
        raise DataError(f"{where}: text column {cols.text!r} on line 1 is {type(v).__name__}; expected a string")
    return None
