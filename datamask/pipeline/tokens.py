"""Token counts and budgets, resolved here and nowhere else: where a split's token counts
come from, and each split's share of the corpus's budget (docs/tokens.md).

Every caller that needs a split's counts (``select``'s splits, the dataframe API, ``compare``)
gets them from :func:`split_lengths` (or :func:`known_lengths`) and hands them on: the
methods receive them in their :class:`~datamask.methods.registry.Budget` and never read a
column or count a text themselves. The budget's checks are :mod:`datamask.core.budget`'s.

Counts come from ``--tokens-column`` (default ``token_count`` when the input has it, as
FineWeb does, else ``n_tokens`` from ``datamask score``); without such a column they are
counted from the text column with ``--tokenizer`` or as whitespace words. A budget of T
tokens gives split s the share ``T_s = floor(T * tokens_s / tokens)``, computed in one pass
over the corpus before any split is selected, so the result does not depend on how many
workers run or in which order, and the splits' budgets sum to at most T.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core.budget import check_corpus_tokens
from ..errors import DataError

__all__ = [
    "AUTO_TOKEN_COLUMNS",
    "tokens_column_of",
    "split_lengths",
    "known_lengths",
    "count_corpus_tokens",
    "apportion",
    "token_totals",
]

# Token-count columns used when --tokens-column is not given, in this order (FineWeb's, then
# datamask score's).
AUTO_TOKEN_COLUMNS = ("token_count", "n_tokens")


def tokens_column_of(cfg, names):
    """The token-count column: ``cfg.tokens_column`` when present, else the first of
    :data:`AUTO_TOKEN_COLUMNS` in ``names`` when no column was named; None otherwise."""
    col = getattr(cfg, "tokens_column", None)
    if col:
        return col if col in names else None
    return next((c for c in AUTO_TOKEN_COLUMNS if c in names), None)


def split_lengths(table: pa.Table, cfg, where: str, first_row: int = 0):
    """``(counts, source)``: the split's token counts (int64) and where they came from
    (``column NAME``, ``tokenizer PATH`` or ``whitespace words of NAME``)."""
    names = table.schema.names
    col = tokens_column_of(cfg, names)
    if col is None and cfg.tokens_column:
        raise DataError(f"{where}: missing column {cfg.tokens_column!r} (--tokens-column); columns: {', '.join(names)}")
    if col is not None:
        return _checked_counts(table.column(col), where, col, first_row), f"column {col}"
    text = cfg.text_column
    if text not in names:
        raise DataError(
            f"{where}: no token counts: none of the columns {', '.join(AUTO_TOKEN_COLUMNS)} and no text column "
            f"{text!r} to count them from; pass --tokens-column NAME or --text-column NAME"
        )
    from ..features.text import count_tokens

    texts = table.column(text).to_pylist()
    counts = count_tokens(["" if x is None else str(x) for x in texts], cfg.tokenizer).astype(np.int64)
    return counts, (f"tokenizer {cfg.tokenizer}" if cfg.tokenizer else f"whitespace words of {text}")


def known_lengths(table: pa.Table, cfg, where: str, first_row: int = 0, needed: bool = False):
    """``(counts, source)`` when the split has a token-count column or ``needed`` (a token
    budget: then counted from the text if need be), else ``(None, None)``."""
    if needed or tokens_column_of(cfg, table.schema.names) is not None:
        return split_lengths(table, cfg, where, first_row)
    return None, None


def _checked_counts(column, where: str, name: str, first_row: int) -> np.ndarray:
    """The column as int64; a null, negative, non-finite or fractional count is a DataError
    naming the file, row and column."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if arr.null_count:
        i = int(np.flatnonzero(~np.asarray(arr.is_valid()))[0])
        raise DataError(f"{where} row {first_row + i}: column {name!r} is null; every row needs a token count")
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        raise DataError(f"{where}: column {name!r} holds {arr.type}, not token counts; pass --tokens-column NAME")
    v = arr.to_numpy(zero_copy_only=False).astype(np.float64)
    bad = ~np.isfinite(v) | (v < 0) | (v != np.floor(v))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{where} row {first_row + i}: column {name!r} is {v[i]:g}, not a token count (a non-negative integer)"
        )
    return v.astype(np.int64)


def _split_tokens(s, cfg, drops, cols, prunes=()):
    """One split's token total (after the dropped duplicates and the holdout, as the
    selection sees it) as a one-row frame; ``prunes``: also ``where`` and ``left``, the tokens
    quality-aware pruning leaves at each (:func:`~datamask.core.estimator.tokens_after_pruning`)
    as a JSON list (``null`` when the quality column is unusable: the selection's own check says why)."""
    from .holdout import holdout_mask
    from .io import read_split

    table = read_split(s, cols)
    if s.name in drops:
        keep = np.ones(table.num_rows, dtype=bool)
        keep[np.asarray(drops[s.name]) - s.start] = False
        table = table.filter(pa.array(keep))
    if cfg.holdout:
        table = table.filter(pa.array(~holdout_mask(table.num_rows, cfg.holdout, s.seed(cfg.seed))))
    counts, source = split_lengths(table, cfg, s.where(), s.start)
    row = {"name": [s.name], "tokens": [int(counts.sum())], "source": [source]}
    if prunes:
        row["where"] = [s.where()]
        row["left"] = [json.dumps(_left_after_pruning(table, cols, counts, prunes))]  # text: a string column
    return pd.DataFrame(row)


def _left_after_pruning(table, cols, counts, prunes):
    from ..core.estimator import tokens_after_pruning

    if cols.quality not in table.schema.names:
        return None
    q = table.column(cols.quality).to_numpy(zero_copy_only=False)
    if q.dtype.kind not in "fiu" or not np.isfinite(q.astype(np.float64)).all():
        return None
    return tokens_after_pruning(counts, q, prunes)


def count_corpus_tokens(client, splits, cfg, drops, cols, prunes=()) -> pd.DataFrame:
    """Every split's tokens, one task per split (``from_map``, explicit meta); ``prunes``:
    with each split's ``where`` and ``left`` (JSON), its tokens left after pruning each of them
    (in the same pass: a check of the budget against ``--prune`` needs no other read)."""
    import dask.dataframe as dd

    cols_meta = {"name": object, "tokens": np.int64, "source": object}
    if prunes:
        cols_meta.update(where=object, left=object)
    meta = pd.DataFrame({k: pd.Series(dtype=v) for k, v in cols_meta.items()})
    frames = dd.from_map(
        _split_tokens, splits, cfg=cfg, drops=drops, cols=cols, prunes=tuple(prunes), meta=meta, enforce_metadata=False
    )
    return client.compute(frames).result()


def apportion(per_split: dict, cfg, source: str | None = None) -> tuple[dict, dict]:
    """``({split: T_s}, summary)`` for the config's ``tokens`` or ``token_ratio``.

    A budget larger than the corpus's tokens is refused, as a row budget larger than a
    split's rows is (``source`` says where the counts came from, for the message)."""
    total = int(sum(per_split.values()))
    T = int(cfg.tokens) if cfg.tokens is not None else int(np.floor(float(cfg.token_ratio) * total))
    try:
        check_corpus_tokens(T, total, source)
    except ValueError as e:
        raise DataError(str(e)) from None
    covers = T == total
    budgets = {}
    for name, tok in per_split.items():
        budgets[name] = int(tok) if covers else (T * int(tok)) // max(total, 1)
    info = {"budget": T, "corpus_tokens": total, "covers_corpus": bool(covers)}
    return budgets, info


def token_totals(parts: list, info: dict) -> dict:
    """The manifest's token totals: budget, corpus, kept, and where the counts came from."""
    kept = int(sum(r.get("tokens_out", 0) for r in parts))
    sources = sorted({r["tokens_source"] for r in parts if r.get("tokens_source")})
    return {"tokens": dict(info, tokens_out=kept, source=", ".join(sources))}
