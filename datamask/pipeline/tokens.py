"""Token counts and budgets, resolved here and nowhere else: where a split's token counts
come from, and each split's share of the corpus's budget (docs/tokens.md).

Every caller that needs a split's counts (``select``'s splits, the dataframe API, ``compare``)
gets them from :func:`split_lengths` (or :func:`known_lengths`) and hands them on: the
methods receive them in their :class:`~datamask.methods.registry.Budget` and never read a
column or count a text themselves. The budget's checks are :mod:`datamask.core.budget`'s.

Counts come from ``tokens_column``, else from the text column with ``--tokenizer`` when one
is given (a search's proxies then train in the same tokens), else from ``token_count`` when the
input has it (as FineWeb does) or ``n_tokens`` (``datamask score``'s whitespace words), else
counted as whitespace words. A budget of T
tokens gives split s the share ``T_s = floor(T * tokens_s / tokens)``, computed in one pass
over the corpus before any split is selected, so the result does not depend on how many
workers run or in which order, and the splits' shares (``split_tokens``) sum to at most T.

Under quality-aware pruning a split's share must stay below the tokens of the rows its pruning
leaves (:func:`~datamask.core.budget.check_tokens_left`). The same counting pass counts those
tokens, at the prunes checked and at every hundredth (:data:`PRUNE_GRID`), so ``select`` and
``search`` refuse a prune that leaves some split no more than its share before any split is
selected, naming the split and the largest prune that fits (:func:`check_prune_left`).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core.budget import check_corpus_tokens
from ..errors import ConfigError, DataError

__all__ = [
    "AUTO_TOKEN_COLUMNS",
    "tokens_column_of",
    "split_lengths",
    "known_lengths",
    "count_corpus_tokens",
    "left_after_pruning",
    "apportion",
    "token_totals",
    "PRUNE_GRID",
    "prunes_checked",
    "prune_grid",
    "split_left",
    "budget_given",
    "prune_shortfall",
    "check_prune_left",
]

# Token-count columns used when tokens_column is not given, in this order (FineWeb's, then
# datamask score's).
AUTO_TOKEN_COLUMNS = ("token_count", "n_tokens")


def tokens_column_of(cfg, names):
    """The token-count column: ``cfg.tokens_column`` when present, else the first of
    :data:`AUTO_TOKEN_COLUMNS` in ``names`` when no column was named and no ``tokenizer`` given
    (a tokenizer the user names counts over a column found by its name); None otherwise.

    .. versionchanged:: 0.3
       ``--tokenizer`` counts even where the input has ``token_count``/``n_tokens``.
    """
    col = getattr(cfg, "tokens_column", None)
    if col:
        return col if col in names else None
    if getattr(cfg, "tokenizer", None):
        return None
    return next((c for c in AUTO_TOKEN_COLUMNS if c in names), None)


def split_lengths(table: pa.Table, cfg, where: str, first_row: int = 0):
    """``(counts, source)``: the split's token counts (int64) and where they came from
    (``column NAME``, ``tokenizer PATH`` or ``whitespace words of NAME``)."""
    names = table.schema.names
    col = tokens_column_of(cfg, names)
    if col is None and cfg.tokens_column:
        raise DataError(f"{where}: missing column {cfg.tokens_column!r} (tokens_column); columns: {', '.join(names)}")
    if col is not None:
        return _checked_counts(table.column(col), where, col, first_row), f"column {col}"
    text = cfg.text_column
    if text not in names:
        raise DataError(
            f"{where}: no token counts: none of the columns {', '.join(AUTO_TOKEN_COLUMNS)} and no text column "
            f"{text!r} to count them from; pass --set tokens_column=NAME or --set text_column=NAME"
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
        raise DataError(f"{where}: column {name!r} holds {arr.type}, not token counts; pass --set tokens_column=NAME")
    v = arr.to_numpy(zero_copy_only=False).astype(np.float64)
    bad = ~np.isfinite(v) | (v < 0) | (v != np.floor(v))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{where} row {first_row + i}: column {name!r} is {v[i]:g}, not a token count (a non-negative integer)"
        )
    return v.astype(np.int64)


def _count_split(s, cfg, drops, cols, prunes=(), excluded=None):
    """One split's token total (after the dropped duplicates, the holdout and the excluded
    rows, as the selection sees it) as a one-row frame; ``prunes``: also ``where`` and ``left``, the tokens
    quality-aware pruning leaves at each (:func:`~datamask.estimator.estimator.tokens_after_pruning`)
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
    if excluded is not None:
        table = excluded.split(table, cols.id, cfg.text_column)[0]
    counts, source = split_lengths(table, cfg, s.where(), s.start)
    row = {"name": [s.name], "tokens": [int(counts.sum())], "source": [source]}
    if prunes:
        row["where"] = [s.where()]
        row["left"] = [json.dumps(left_after_pruning(table, cols, counts, prunes))]  # text: a string column
    return pd.DataFrame(row)


def left_after_pruning(table, cols, counts, prunes):
    """The tokens (``counts``, the table's rows') that pruning each of ``prunes`` leaves, by the
    table's quality column as a fit takes it; None when that column is missing or not finite
    numbers (the selection's own check says why)."""
    from ..estimator.estimator import tokens_after_pruning

    if cols.quality not in table.schema.names:
        return None
    q = table.column(cols.quality).to_numpy(zero_copy_only=False)
    if q.dtype.kind not in "fiu" or not np.isfinite(q.astype(np.float64)).all():
        return None
    return tokens_after_pruning(counts, q, prunes)


def count_corpus_tokens(client, splits, cfg, drops, cols, prunes=(), excluded=None) -> pd.DataFrame:
    """Every split's tokens, one task per split (``from_map``, explicit meta; ``client`` None:
    Dask's current scheduler), for :class:`~.split_job.SplitJob` only; ``prunes``:
    with each split's ``where`` and ``left`` (JSON), its tokens left after pruning each of them
    (in the same pass: a check of the budget against ``--prune`` needs no other read);
    ``excluded``: the rows kept out of the selection (:mod:`.exclude`), not counted."""
    import dask.dataframe as dd

    cols_meta = {"name": object, "tokens": np.int64, "source": object}
    if prunes:
        cols_meta.update(where=object, left=object)
    meta = pd.DataFrame({k: pd.Series(dtype=v) for k, v in cols_meta.items()})
    frames = dd.from_map(
        _count_split,
        splits,
        cfg=cfg,
        drops=drops,
        cols=cols,
        prunes=tuple(prunes),
        excluded=excluded,
        meta=meta,
        enforce_metadata=False,
    )
    return frames.compute() if client is None else client.compute(frames).result()


def apportion(per_split: dict, cfg, source: str | None = None) -> tuple[dict, dict]:
    """``(split_tokens, summary)``: ``{split: T_s}``, each split's share of the config's
    ``tokens`` or ``token_ratio``, and the corpus's budget (the manifest's ``tokens``). The rule;
    :class:`~.split_job.TokenCounts` is its one caller.

    A budget larger than the corpus's tokens is refused, as a row budget larger than a
    split's rows is (``source`` says where the counts came from, for the message)."""
    total = int(sum(per_split.values()))
    T = int(cfg.tokens) if cfg.tokens is not None else int(np.floor(float(cfg.token_ratio) * total))
    try:
        check_corpus_tokens(T, total, source)
    except ValueError as e:
        raise DataError(str(e)) from None
    covers = T == total
    split_tokens = {}
    for name, tok in per_split.items():
        split_tokens[name] = int(tok) if covers else (T * int(tok)) // max(total, 1)
    info = {"budget": T, "corpus_tokens": total, "covers_corpus": bool(covers)}
    return split_tokens, info


#: the prunes at which each split reports the tokens pruning leaves, beside the ones checked: the
#: largest that fits every split's share is the fix a refusal names
PRUNE_GRID = tuple(k / 100 for k in range(100))


def prunes_checked(cfg, methods=None) -> list:
    """The prunes a selection of ``cfg`` must leave room for under its token budget: ``[cfg.prune]``
    when its method (or one of ``methods``, compare's) prunes and the prune drops rows, else none."""
    from ..methods import prunes

    methods = [cfg.method] if methods is None else list(methods)
    return [float(cfg.prune)] if any(prunes(m) for m in methods) and cfg.prune > 0 else []


def prune_grid(prunes) -> tuple:
    """The prunes a counting pass reports the tokens left at: ``prunes`` and every
    :data:`PRUNE_GRID` value, sorted; () when no prune is checked."""
    prunes = {float(p) for p in prunes}
    return tuple(sorted(set(PRUNE_GRID) | prunes)) if prunes else ()


def split_left(where: str, tokens: int, share: int, left: str, grid) -> dict:
    """A split as :func:`check_prune_left` takes it: ``where``, its ``tokens``, its ``share`` and
    ``left``, ``{prune: tokens left}`` at every prune of ``grid`` (``left``: the counting pass's
    JSON list; None: the split's quality is unusable, which the selection itself reports)."""
    got = json.loads(left)
    by_prune = None if got is None else dict(zip(grid, (int(x) for x in got)))
    return {"where": where, "tokens": int(tokens), "share": int(share), "left": by_prune}


def budget_given(cfg, info: dict) -> str:
    """The token budget as the user gave it: ``--tokens 5000`` or ``--token-ratio 0.25 (5,358 tokens)``."""
    if cfg.tokens is not None:
        return f"--tokens {cfg.tokens}"
    return f"--token-ratio {cfg.token_ratio:g} ({info['budget']:,} tokens)"


def _fits(split: dict, p: float) -> bool:
    """A fit at prune ``p`` keeps the split's share below the tokens pruning leaves, as
    :func:`~datamask.core.budget.check_tokens_left` requires (a share of no token, or one that
    covers the split, prunes nothing; ``left`` None: unusable quality, reported by the selection)."""
    share, left = split["share"], split["left"]
    return left is None or not 1 <= share < split["tokens"] or share < left[p]


def prune_shortfall(splits: list, p: float, budget: str):
    """None when pruning ``p`` leaves every split of ``splits`` (:func:`split_left`) more tokens
    than its share of ``budget`` (:func:`budget_given`); else ``(head, room)``: the message's head,
    naming the split short by the most (``pruning 0.9 of the rows of F (rows 0-200) leaves 1,632
    tokens, not more than its 2,747-token share of --tokens 5000``), and the largest
    :data:`PRUNE_GRID` prune up to ``p`` that fits every split."""
    bad = [s for s in splits if not _fits(s, p)]
    if not bad:
        return None
    s = max(bad, key=lambda s: s["share"] - s["left"][p])
    room = max(g for g in PRUNE_GRID if g <= p and all(_fits(x, g) for x in splits))
    head = (
        f"pruning {p:g} of the rows of {s['where']} leaves {s['left'][p]:,} tokens, not more than its "
        f"{s['share']:,}-token share of {budget}"
    )
    return head, room


def check_prune_left(splits: list, prune: float, budget: str, whose: str = "") -> None:
    """Refuse ``--prune`` when it leaves some split of ``splits`` (:func:`split_left`) no more
    tokens than its share of the token budget ``budget`` (:func:`budget_given`): that split's
    selection would fail. One line naming the split and the largest prune that fits every split;
    ``whose``: said after the value (search's ``(the default recipe's, ...)``)."""
    hit = prune_shortfall(splits, prune, budget)
    if hit is not None:
        head, room = hit
        raise ConfigError(f"--prune {prune:g}{whose}: {head}; lower --prune to {room:g} or the token budget")


def token_totals(parts: list, info: dict) -> dict:
    """The manifest's token totals: budget, corpus, kept, and where the counts came from."""
    kept = int(sum(r.get("tokens_out", 0) for r in parts))
    sources = sorted({r["tokens_source"] for r in parts if r.get("tokens_source")})
    return {"tokens": dict(info, tokens_out=kept, source=", ".join(sources))}
