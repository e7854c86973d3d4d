"""The per-partition half of the ``score`` stage: text-derived component columns.

The score stage is three steps; this module is the first, and :mod:`.aggregate` holds the
other two::

    parts = ddf.map_partitions(score_components_frame, ..., meta=components_meta(...))
    stats = compute_stats(parts, list(weights))          # one out-of-core pass
    out   = parts.map_partitions(aggregate_frame, weights, stats, ..., meta=...)

Component columns written here (all float32 in [0, 1] unless said otherwise):

- ``quality_heuristics`` (+ ``quality_heuristic_<rule>`` with ``heuristic_components=True``);
- ``quality_fasttext`` = P(positive) from a :class:`~.fasttext_quality.FastTextScorer`;
- ``n_tokens`` (int32): whitespace words, or tokens of a given tokenizer.

Null and empty texts are kept, score 0 and count 0 tokens; the number of such rows is
``(df[text_column].fillna("").str.strip() == "").sum()`` or, from here,
:func:`count_unusable`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from .fasttext_quality import FastTextScorer
from .heuristics import heuristic_scores, heuristics_columns
from .text import count_tokens, get_texts, like_input, to_pandas

__all__ = ["score_components_frame", "components_meta", "count_unusable"]


def score_components_frame(
    df,
    text_column: str = "text",
    *,
    heuristics: bool = True,
    heuristic_names: Sequence[str] | None = None,
    heuristic_components: bool = False,
    combine: str = "geometric",
    fasttext: FastTextScorer | None = None,
    tokenizer: Callable | str | None = None,
    n_tokens: bool = True,
    errors: str = "strict",
):
    """Add the text-derived quality components (and ``n_tokens``) to one partition.

    The text column is read and validated once for all components (see
    :func:`datamask.features.text.get_texts`). Returns the same library as ``df``.
    """
    pdf = to_pandas(df)
    texts, usable = get_texts(pdf, text_column, errors=errors)
    clean = [t if u else "" for t, u in zip(texts, usable)]
    out = pdf.copy()
    if heuristics:
        h = heuristic_scores(clean, combine=combine, names=heuristic_names)
        for src, dst in zip(h.columns, heuristics_columns(heuristic_names)):
            if heuristic_components or src == "heuristics":
                out[dst] = h[src].to_numpy()
    if fasttext is not None:
        out["quality_fasttext"] = fasttext.score(clean)
    if n_tokens:
        out["n_tokens"] = count_tokens(clean, tokenizer)
    return like_input(out, df)


def components_meta(meta, **kwargs) -> pd.DataFrame:
    """Empty frame with the columns :func:`score_components_frame` returns (Dask ``meta=``).

    Takes the same keyword arguments as :func:`score_components_frame` (the fastText
    model is not loaded).
    """
    out = to_pandas(meta).iloc[:0].copy()
    if kwargs.get("heuristics", True):
        cols = heuristics_columns(kwargs.get("heuristic_names"))
        if not kwargs.get("heuristic_components", False):
            cols = cols[-1:]
        for c in cols:
            out[c] = pd.Series(dtype=np.float32)
    if kwargs.get("fasttext") is not None:
        out["quality_fasttext"] = pd.Series(dtype=np.float32)
    if kwargs.get("n_tokens", True):
        out["n_tokens"] = pd.Series(dtype=np.int32)
    return out


def count_unusable(df, text_column: str = "text") -> int:
    """Number of rows whose text is null, empty or whitespace-only (for the manifest)."""
    _, usable = get_texts(to_pandas(df), text_column, errors="replace")
    return int((~usable).sum())
