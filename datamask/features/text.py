"""Reading the text column of a partition: validation, null/empty rows, UTF-8, token counts.

Every feature stage (embedding, heuristics, fastText, ``n_tokens``) takes its text through
:func:`get_texts`, so all of them treat bad input the same way:

* a missing text column is a :class:`ValueError` naming the column and the columns present;
* null, empty and whitespace-only texts are *unusable*: :func:`get_texts` returns a boolean
  mask of usable rows, and each stage says what it does with the others (the embedder drops
  them, the scorers give them score 0); the count is ``(~usable).sum()``;
* ``bytes`` values are decoded as UTF-8; bytes that are not valid UTF-8 (and ``str`` values
  holding lone surrogates, which is what ``errors="surrogateescape"`` readers produce) raise a
  one-line :class:`ValueError` with ``errors="strict"`` (the default), or are replaced by
  U+FFFD with ``errors="replace"``.

cudf partitions are accepted: the text column is brought to the host (text features run on
the CPU; only the embedding model itself uses the GPU).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["get_texts", "count_tokens", "add_n_tokens", "is_cudf", "to_pandas", "like_input"]


def is_cudf(df) -> bool:
    """True when ``df`` is a cudf object (checked without importing cudf)."""
    return type(df).__module__.split(".")[0] == "cudf"


def to_pandas(df) -> pd.DataFrame:
    """Return a pandas DataFrame (copying from the GPU when ``df`` is a cudf DataFrame)."""
    return df.to_pandas() if is_cudf(df) else df


def like_input(out: pd.DataFrame, template):
    """Return ``out`` as the same library as ``template`` (cudf in, cudf out)."""
    if is_cudf(template):
        import cudf  # lazy: only on GPU workers

        return cudf.DataFrame.from_arrow(pa.Table.from_pandas(out, preserve_index=False))
    return out


def _fix_utf8(value, row, column: str, errors: str):
    row = row.item() if hasattr(row, "item") else row  # numpy scalar -> plain number in messages
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as e:
            if errors == "replace":
                return bytes(value).decode("utf-8", errors="replace")
            raise ValueError(
                f"text column {column!r}, row {row!r}: bytes are not valid UTF-8 ({e.reason} at byte "
                f"{e.start}); re-encode the input as UTF-8 or pass errors='replace'"
            ) from None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError as e:
            if errors == "replace":
                return value.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
            raise ValueError(
                f"text column {column!r}, row {row!r}: text holds bytes that are not valid UTF-8 "
                f"(undecodable character at position {e.start}); re-encode the input as UTF-8 or "
                "pass errors='replace'"
            ) from None
    return value


def get_texts(df, column: str = "text", *, errors: str = "strict") -> tuple[list[str], np.ndarray]:
    """Validated texts of one partition.

    Parameters
    ----------
    df : pandas.DataFrame or cudf.DataFrame
        The partition.
    column : str
        Name of the text column.
    errors : {"strict", "replace"}
        What to do with text that is not valid UTF-8 (see the module docstring).

    Returns
    -------
    texts : list of str
        One string per row, in row order; ``""`` where the row is unusable.
    usable : numpy.ndarray of bool
        True where the text is non-null and not empty or whitespace-only.

    Raises
    ------
    ValueError
        When the column is missing, holds non-text values, or holds invalid UTF-8 with
        ``errors="strict"``.
    """
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors must be 'strict' or 'replace', got {errors!r}")
    if column not in df.columns:
        raise ValueError(
            f"text column {column!r} is missing; the input has columns {list(df.columns)} "
            "(pass the right name with --set text_column=NAME)"
        )
    s = to_pandas(df[column]) if is_cudf(df) else df[column]
    # Arrow-backed strings were validated as UTF-8 when the Arrow array was built.
    arrow_backed = isinstance(s.dtype, pd.ArrowDtype) or getattr(s.dtype, "storage", None) == "pyarrow"
    values = s.tolist()
    texts: list[str] = []
    usable = np.zeros(len(values), dtype=bool)
    index = s.index
    for i, v in enumerate(values):
        if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
            texts.append("")
            continue
        if not arrow_backed:
            v = _fix_utf8(v, index[i], column, errors)
            if not isinstance(v, str):
                raise ValueError(
                    f"text column {column!r}, row {index[i]!r}: expected a string, got "
                    f"{type(v).__name__}; the text column must hold strings"
                )
        texts.append(v)
        usable[i] = len(v) > 0 and not v.isspace()
    return texts, usable


def count_tokens(texts: Sequence[str], tokenizer: Callable | str | None = None) -> np.ndarray:
    """Token count per text, as int32.

    Parameters
    ----------
    texts : sequence of str
        The texts (``""`` counts 0).
    tokenizer : None, str or callable
        ``None``: whitespace-separated words (vectorised with Arrow). A ``str``: path of a
        local Hugging Face tokenizer (a ``tokenizer.json`` file or a folder holding one); the
        count excludes special tokens. A callable: ``tokenizer(list_of_texts)`` returning one
        sequence of token ids per text.

    Returns
    -------
    numpy.ndarray of int32
    """
    if tokenizer is None:
        arr = pa.array(list(texts), type=pa.large_string())
        return pc.count_substring_regex(arr, r"\S+").to_numpy(zero_copy_only=False).astype(np.int32)
    if isinstance(tokenizer, str):
        tokenizer = _load_tokenizer(tokenizer)
    ids = tokenizer(list(texts))
    return np.fromiter((len(x) for x in ids), dtype=np.int32, count=len(texts))


def _load_tokenizer(path: str) -> Callable:
    from pathlib import Path

    p = Path(path)
    f = p / "tokenizer.json" if p.is_dir() else p
    if not f.is_file():
        raise ValueError(f"tokenizer {path!r} not found: pass a tokenizer.json file or a folder holding one")
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(f))
    tok.no_truncation()
    tok.no_padding()

    def encode(batch):
        return [e.ids for e in tok.encode_batch(batch, add_special_tokens=False)]

    return encode


def add_n_tokens(
    df,
    text_column: str = "text",
    *,
    tokenizer: Callable | str | None = None,
    column: str = "n_tokens",
    errors: str = "strict",
):
    """Add ``n_tokens`` (int32; 0 for null/empty texts) to one partition (see :func:`count_tokens`)."""
    pdf = to_pandas(df)
    texts, usable = get_texts(pdf, text_column, errors=errors)
    out = pdf.copy()
    out[column] = count_tokens([t if u else "" for t, u in zip(texts, usable)], tokenizer)
    return like_input(out, df)
