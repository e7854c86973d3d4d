"""Text normalisation and exact-duplicate keys.

``normalize_exact`` defines when two texts are exact duplicates: after case folding
(Unicode lower case) and whitespace folding (every run of whitespace is one space, none at
either end) they are equal. Punctuation and everything else is kept. :func:`exact_keys`
hashes that normal form in one compiled pass (:mod:`.kernels`); the word tokens of the
fuzzy kind are :mod:`.minhash`'s.

Null texts are reported in a mask and never get a key: the dedup stage keeps and counts
them and never puts them in a group. :func:`read_texts` and :func:`read_quality` read the
two columns the same way for the stage and the dataframe API.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataError

__all__ = [
    "as_string_array",
    "read_texts",
    "read_quality",
    "quality_values",
    "normalize_exact",
    "utf8_buffers",
    "exact_keys",
]

# The seeds of the two 64-bit lanes of an exact key: a 128-bit key, because a 64-bit one
# would expect a false collision per ~4 billion documents (n**2 / 2**65 at corpus scale).
_SEEDS = np.array([0x6461746D61736B61, 0x2D64656475702D62], dtype=np.uint64)


def as_string_array(texts) -> pa.Array:
    """``texts`` (Arrow array or chunked array, pandas Series, list) as one Arrow
    ``large_string`` array; nulls stay null."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
    elif isinstance(texts, pd.Series):
        texts = pa.array(texts.astype(object).where(texts.notna(), None).tolist(), type=pa.large_string())
    elif not isinstance(texts, pa.Array):
        texts = pa.array(list(texts), type=pa.large_string())
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        raise TypeError(f"texts must be strings, got Arrow type {texts.type}")
    return texts.cast(pa.large_string())


def read_texts(table: pa.Table, column: str, where: str) -> pa.Array:
    """The text column as an Arrow string array (bytes decoded as UTF-8; nulls kept); ``where``
    names the file in the one-line error."""
    col = table.column(column)
    if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type):
        try:
            col = col.cast(pa.large_string())
        except pa.ArrowInvalid:
            raise DataError(
                f"{where}: text column {column!r} holds bytes that are not UTF-8; fix the encoding"
            ) from None
    elif pa.types.is_null(col.type):
        col = col.cast(pa.large_string())
    return as_string_array(col)


def read_quality(table: pa.Table, column: str):
    """The quality column as float64 (:func:`quality_values`), or None without one."""
    if column not in table.schema.names:
        return None
    return quality_values(table.column(column).to_pandas())


def quality_values(values: pd.Series) -> np.ndarray:
    """Quality scores as float64, NaN where not a number (such a row is kept last)."""
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def normalize_exact(texts) -> pa.Array:
    """Case- and whitespace-folded texts (module doc); nulls stay null.

    Examples
    --------
    >>> normalize_exact(["  Hello\\n  WORLD ", None]).to_pylist()
    ['hello world', None]
    """
    arr = as_string_array(texts)
    low = pc.utf8_lower(arr)
    spaced = pc.replace_substring_regex(low, r"\s+", " ")
    return pc.utf8_trim_whitespace(spaced)


def utf8_buffers(arr: pa.Array):
    """``(data, offsets)``: zero-copy uint8 and int64 views of a ``large_string`` array
    without nulls (offsets index ``data`` and need not start at 0)."""
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    return data, offsets


def exact_keys(texts):
    """128-bit key of each normalised text.

    Parameters
    ----------
    texts : array-like of str or None

    Returns
    -------
    keys : (N, 2) uint64 ndarray
        A 128-bit hash of :func:`normalize_exact`'s output (computed by
        :func:`~.kernels.exact_kernel` on the lower-cased, trimmed bytes, which folds the
        whitespace runs itself); rows of null texts are 0.
    valid : (N,) bool ndarray
        False for null texts.
    """
    from .kernels import exact_kernel

    arr = as_string_array(texts)
    valid = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if arr.null_count:
        arr = pc.fill_null(arr, "")
    data, offsets = utf8_buffers(pc.utf8_trim_whitespace(pc.utf8_lower(arr)))
    keys = exact_kernel(data, offsets, _SEEDS)
    keys[~valid] = 0
    return keys, valid
