"""Rule-based text-quality scores as continuous values in [0, 1].

The rules are the well-known families used to filter web text (Gopher, C4, FineWeb,
RefinedWeb). Instead of a pass/fail threshold, each rule maps its statistic through a linear
ramp that is 1 where the published filters keep a document and 0 where they drop it, so the
scores rank documents and can be weighted like any other quality column.

======================  =============================================  ===================
column suffix           statistic                                      1 at ... 0 at
======================  =============================================  ===================
``word_count``          whitespace words (log scale)                   >= 80 ... <= 10;
                                                                       falls again above
                                                                       100k words
``mean_word_length``    mean characters per word                       3-10 ... <= 1.5, >= 15
``alpha_words``         words with a letter                            >= 0.8 ... <= 0.4
``symbol_ratio``        non-space chars that are not letters, digits   <= 0.02 ... >= 0.15
                        or sentence punctuation
``digit_ratio``         digits among non-space chars                   <= 0.05 ... >= 0.3
``caps_ratio``          upper-case among letters                       <= 0.1 ... >= 0.5
``url_ratio``           words that are URLs                            <= 0.02 ... >= 0.3
``line_punct``          lines ending in . ! ? or a closing quote       >= 0.6 ... <= 0.1
``dup_lines``           non-empty lines repeating an earlier line      <= 0.05 ... >= 0.3
``dup_5gram``           word chars inside repeated word 5-grams        <= 0.1 ... >= 0.3
``top_2gram``           word chars of the most frequent word 2-gram    <= 0.1 ... >= 0.3
``stop_words``          words that are English stop words              >= 0.25 ... <= 0.05
``bullet_lines``        lines starting with a bullet                   <= 0.3 ... >= 0.9
``ellipsis_lines``      lines ending with an ellipsis                  <= 0.1 ... >= 0.3
``boilerplate_lines``   lines with cookie/JavaScript/legal/login text  0 ... >= 0.4
======================  =============================================  ===================

The combined score ``quality_heuristics`` is the geometric mean of the components, each
floored at ``0.05`` (a soft AND: one failing rule pulls the score down without zeroing it);
``combine="mean"`` or ``"min"`` are the alternatives. Null and empty texts score 0 on every
column. The statistics are English-centric (stop words, letters); use them on English text.

Cost: char-class counts are vectorised with Arrow regex kernels; line and n-gram statistics
take one Python pass per document (several thousand documents per second per core).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .text import get_texts, like_input, to_pandas

__all__ = ["HEURISTICS", "heuristic_scores", "score_heuristics_frame", "heuristics_columns"]

HEURISTICS = (
    "word_count",
    "mean_word_length",
    "alpha_words",
    "symbol_ratio",
    "digit_ratio",
    "caps_ratio",
    "url_ratio",
    "line_punct",
    "dup_lines",
    "dup_5gram",
    "top_2gram",
    "stop_words",
    "bullet_lines",
    "ellipsis_lines",
    "boilerplate_lines",
)

STOP_WORDS = frozenset(
    [
        "the",
        "be",
        "to",
        "of",
        "and",
        "a",
        "in",
        "that",
        "have",
        "i",
        "it",
        "for",
        "not",
        "on",
        "with",
        "he",
        "as",
        "you",
        "do",
        "at",
        "this",
        "but",
        "his",
        "by",
        "from",
        "they",
        "we",
        "say",
        "her",
        "she",
        "or",
        "an",
        "will",
        "my",
        "one",
        "all",
        "would",
        "there",
        "their",
        "what",
        "so",
        "up",
        "out",
        "if",
        "about",
        "who",
        "get",
        "which",
        "go",
        "me",
        "when",
        "make",
        "can",
        "like",
        "time",
        "no",
        "just",
        "him",
        "know",
        "take",
        "is",
        "are",
        "was",
        "were",
        "been",
        "has",
        "had",
        "its",
        "than",
        "then",
        "them",
        "these",
        "those",
        "our",
        "your",
        "into",
        "over",
        "also",
        "more",
        "most",
        "some",
        "such",
        "only",
        "other",
    ]
)
_BOILERPLATE = re.compile(
    r"cookie|javascript|privacy policy|terms of (use|service)|terms and conditions|all rights reserved"
    r"|lorem ipsum|sign in|log in|login|subscribe|newsletter|skip to (main )?content|powered by",
    re.IGNORECASE,
)
_BULLETS = ("•", "·", "‣", "▪", "◦", "●", "- ", "* ", "– ", "> ")
_END_PUNCT = (".", "!", "?", '"', "'", "”", "’", ")")
_ELLIPSIS = ("...", "…")
_URL = re.compile(r"^(https?://|www\.)|\.(com|org|net|html?|php)(/|$)", re.IGNORECASE)

# statistic -> (bad, good): ramp from 0 at ``bad`` to 1 at ``good`` (either order)
_RAMPS = {
    "alpha_words": (0.4, 0.8),
    "symbol_ratio": (0.15, 0.02),
    "digit_ratio": (0.3, 0.05),
    "caps_ratio": (0.5, 0.1),
    "url_ratio": (0.3, 0.02),
    "line_punct": (0.1, 0.6),
    "dup_lines": (0.3, 0.05),
    "dup_5gram": (0.3, 0.1),
    "top_2gram": (0.3, 0.1),
    "stop_words": (0.05, 0.25),
    "bullet_lines": (0.9, 0.3),
    "ellipsis_lines": (0.3, 0.1),
    "boilerplate_lines": (0.4, 0.0),
}
_FLOOR = 0.05


def _ramp(x: np.ndarray, bad: float, good: float) -> np.ndarray:
    """Linear map with ``bad -> 0`` and ``good -> 1``, clipped to [0, 1]."""
    return np.clip((x - bad) / (good - bad), 0.0, 1.0)


def _doc_stats(text: str) -> tuple:
    """Word-, line- and n-gram-level statistics of one document (one Python pass)."""
    words = text.split()
    n = len(words)
    lens = [len(w) for w in words]
    word_chars = sum(lens)
    alpha = sum(1 for w in words if any(c.isalpha() for c in w))
    stops = sum(1 for w in words if w.lower().strip(".,;:!?\"'()") in STOP_WORDS)
    urls = sum(1 for w in words if _URL.search(w))
    lines = [ln.strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    n_lines = len(lines)
    seen: set[str] = set()
    dup_lines = punct = bullets = ellipsis = boiler = 0
    for ln in lines:
        if ln in seen:
            dup_lines += 1
        seen.add(ln)
        if ln.endswith(_ELLIPSIS):
            ellipsis += 1
        elif ln.endswith(_END_PUNCT):
            punct += 1
        if ln.startswith(_BULLETS):
            bullets += 1
        if _BOILERPLATE.search(ln):
            boiler += 1
    dup5 = top2 = 0.0
    if n >= 5 and word_chars:
        low = [w.lower() for w in words]
        grams = list(zip(low, low[1:], low[2:], low[3:], low[4:]))
        counts = Counter(grams)
        covered = np.zeros(n, dtype=bool)
        for i, g in enumerate(grams):
            if counts[g] > 1:
                covered[i : i + 5] = True
        dup5 = float(np.dot(covered, lens)) / word_chars
        pairs = Counter(zip(low, low[1:]))
        (a, b), c = pairs.most_common(1)[0]
        if c > 1:
            top2 = c * (len(a) + len(b)) / word_chars
    return (n, word_chars, alpha, stops, urls, n_lines, punct, dup_lines, bullets, ellipsis, boiler, dup5, top2)


def heuristic_scores(
    texts: Sequence[str], *, combine: str = "geometric", names: Sequence[str] | None = None
) -> pd.DataFrame:
    """Heuristic scores in [0, 1] for a list of texts.

    Parameters
    ----------
    texts : sequence of str
        The documents (``""`` scores 0 everywhere).
    combine : {"geometric", "mean", "min"}
        How the components are combined into ``heuristics`` (see module docstring).
    names : sequence of str, optional
        Subset of :data:`HEURISTICS` to compute and combine; default all.

    Returns
    -------
    pandas.DataFrame
        float32 columns ``<name>`` for each component and ``heuristics`` (the combination),
        one row per text, on a ``RangeIndex``.
    """
    names = tuple(HEURISTICS if names is None else names)
    unknown = [n for n in names if n not in HEURISTICS]
    if unknown:
        raise ValueError(f"unknown heuristics {unknown}; choose from {list(HEURISTICS)}")
    if combine not in ("geometric", "mean", "min"):
        raise ValueError(f"combine must be 'geometric', 'mean' or 'min', got {combine!r}")
    texts = list(texts)
    m = len(texts)
    arr = pa.array(texts, type=pa.large_string())

    def count(pattern: str) -> np.ndarray:
        return pc.count_substring_regex(arr, pattern).to_numpy(zero_copy_only=False).astype(np.float64)

    non_space = count(r"\S")
    letters = count(r"\p{L}")
    stats = np.array([_doc_stats(t) for t in texts], dtype=np.float64).reshape(m, 13)
    (n_words, word_chars, alpha, stops, urls, n_lines, punct, dup_lines, bullets, ellipsis, boiler, dup5, top2) = (
        stats.T
    )
    safe = lambda a, b: np.divide(a, b, out=np.zeros(m), where=b > 0)  # noqa: E731

    raw = {
        "alpha_words": safe(alpha, n_words),
        "symbol_ratio": safe(count(r"[^\p{L}\p{N}\s.,;:!?'\"()\-’‘“”]"), non_space),
        "digit_ratio": safe(count(r"\p{Nd}"), non_space),
        "caps_ratio": safe(count(r"\p{Lu}"), letters),
        "url_ratio": safe(urls, n_words),
        "line_punct": safe(punct, n_lines),
        "dup_lines": safe(dup_lines, n_lines),
        "dup_5gram": dup5,
        "top_2gram": top2,
        "stop_words": safe(stops, n_words),
        "bullet_lines": safe(bullets, n_lines),
        "ellipsis_lines": safe(ellipsis, n_lines),
        "boilerplate_lines": safe(boiler, n_lines),
    }
    out: dict[str, np.ndarray] = {}
    for name in names:
        if name == "word_count":
            lw = np.log10(np.maximum(n_words, 1))
            s = _ramp(lw, np.log10(10), np.log10(80)) * _ramp(lw, np.log10(1e6), np.log10(1e5))
        elif name == "mean_word_length":
            mwl = safe(word_chars, n_words)
            s = _ramp(mwl, 1.5, 3.0) * _ramp(mwl, 15.0, 10.0)
        else:
            s = _ramp(raw[name], *_RAMPS[name])
        out[name] = np.where(n_words > 0, s, 0.0)
    comps = np.stack([out[n] for n in names], axis=1) if names else np.zeros((m, 1))
    if combine == "geometric":
        comb = np.exp(np.log(np.maximum(comps, _FLOOR)).mean(axis=1))
        comb = (comb - _FLOOR) / (1 - _FLOOR)  # all components at the floor -> 0, all 1 -> 1
    elif combine == "mean":
        comb = comps.mean(axis=1)
    else:
        comb = comps.min(axis=1)
    out["heuristics"] = np.where(n_words > 0, np.clip(comb, 0.0, 1.0), 0.0)
    return pd.DataFrame({k: v.astype(np.float32) for k, v in out.items()})


def heuristics_columns(names: Sequence[str] | None = None, prefix: str = "quality_") -> list[str]:
    """Output column names of :func:`score_heuristics_frame` (combined score last)."""
    names = tuple(HEURISTICS if names is None else names)
    return [f"{prefix}heuristic_{n}" for n in names] + [f"{prefix}heuristics"]


def score_heuristics_frame(
    df,
    text_column: str = "text",
    *,
    combine: str = "geometric",
    names: Sequence[str] | None = None,
    components: bool = True,
    errors: str = "strict",
    prefix: str = "quality_",
):
    """Add heuristic quality columns to one partition.

    Adds ``quality_heuristics`` (the combination) and, with ``components=True``,
    ``quality_heuristic_<name>`` for each rule; all float32 in [0, 1]. Null/empty texts score 0
    and are kept. Returns the same library as ``df`` (pandas or cudf).
    """
    pdf = to_pandas(df)
    texts, usable = get_texts(pdf, text_column, errors=errors)
    scores = heuristic_scores([t if u else "" for t, u in zip(texts, usable)], combine=combine, names=names)
    out = pdf.copy()
    cols = heuristics_columns(names, prefix)
    for src, dst in zip(list(scores.columns), [c for c in cols]):
        if components or src == "heuristics":
            out[dst] = scores[src].to_numpy()
    return like_input(out, df)
