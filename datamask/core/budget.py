"""The budget rule and its one check: how many rows, or how many tokens, a split keeps.

A **row budget** is ``budget`` rows, else ``round(ratio * n)`` of the split's ``n`` rows. It
is at least 1, at most ``n``, and, for a method that prunes, at most the rows left after
quality-aware pruning (``n - floor(prune * n)``). A **token budget** is a positive integer
and excludes a row budget; against the rows' token counts it must be below the tokens left
after pruning (a budget that covers every row keeps them all), and a corpus's budget is at
most the corpus's tokens.

Every caller checks through these functions, with these messages: ``DataMask`` (its
parameters), the methods' registry (:func:`datamask.methods.registry.split_budget`, before
any method runs), ``select``'s plan (every split, before anything is written) and each split
on its worker, and the corpus's token shares (:mod:`datamask.pipeline.tokens`). A message is
one line naming the option and the fix, spelled as the caller's user spells it: ``--budget``
on the command line (``flags=True``; the dataframe API takes the same names), ``budget`` for
the estimator.
"""

from __future__ import annotations

import math

__all__ = [
    "row_budget",
    "rows_after_pruning",
    "check_rows",
    "check_budget",
    "check_token_budget",
    "check_tokens_left",
    "check_corpus_tokens",
]


def _opt(name: str, flags: bool) -> str:
    """The option as its user spells it: ``--token-ratio`` or ``token_ratio``."""
    return "--" + name.replace("_", "-") if flags else name


def row_budget(n_rows: int, *, ratio=None, budget=None) -> int:
    """S for a split of ``n_rows``: ``budget``, else ``round(ratio * n_rows)``."""
    if budget is not None:
        return int(budget)
    return int(round(float(ratio) * n_rows))


def rows_after_pruning(n_rows: int, prune: float) -> int:
    """Rows left when quality-aware pruning drops ``prune`` of ``n_rows`` (floor)."""
    return n_rows - int(math.floor(float(prune) * n_rows))


def check_rows(S, n: int) -> None:
    """``1 <= S <= n`` (an integer), or a ValueError that says so: the check of a function
    that takes S rows of n directly (``topk``, ``random_subset``...)."""
    if int(S) != S or not 1 <= int(S) <= n:
        raise ValueError(f"budget must be an integer in [1, {n}] (the number of rows), got {S}")


def check_budget(
    n_rows: int, *, ratio=None, budget=None, tokens=None, prune=0.0, prunes=True, flags=False
) -> int | None:
    """The one check of a split's budget; returns S (None under a token budget ``tokens``,
    which is checked against the rows' counts by :func:`check_tokens_left`).

    ``prunes``: the method drops ``prune`` of the rows before choosing, so S must fit the
    rows left. A ValueError names the option and the fix (``flags``: as command-line flags).
    """
    if tokens is not None:
        check_token_budget(tokens, budget, flags=flags)
        return None
    o = {k: _opt(k, flags) for k in ("ratio", "budget", "prune")}
    S = row_budget(n_rows, ratio=ratio, budget=budget)
    if S > n_rows:
        raise ValueError(
            f"budget {S} is larger than the split's {n_rows} rows; lower {o['budget']} or use {o['ratio']}"
        )
    if S < 1:
        fix = f"raise {o['ratio']} or --split-size" if flags else "raise ratio or give budget"
        raise ValueError(f"ratio {ratio} of {n_rows} rows rounds to 0 rows; {fix}")
    n_keep = rows_after_pruning(n_rows, prune)
    if prunes and S > n_keep:
        raise ValueError(
            f"budget {S} is larger than the {n_keep} rows left after pruning (prune {prune} of {n_rows} rows); "
            f"lower {o['prune']}, {o['ratio']} or {o['budget']}"
        )
    return S


def check_token_budget(tokens, budget=None, *, flags=False) -> None:
    """A token budget is a positive integer, and excludes a row budget."""
    name = _opt("tokens", flags) if flags else "token_budget"
    if budget is not None:
        raise ValueError(
            f"give {_opt('budget', flags)} (rows) or {name} (tokens), not both (budget {budget}, tokens {tokens})"
        )
    if int(tokens) != tokens or int(tokens) < 1:
        example = "; e.g. --tokens 200k" if flags else ""
        raise ValueError(f"{name} must be a positive integer token budget, got {tokens}{example}")


def check_tokens_left(T: int, left: int, *, prune, n_rows: int, total: int) -> None:
    """A fit's token budget ``T`` (below the split's ``total`` tokens) must be below the
    ``left`` tokens of the rows left after pruning: otherwise every candidate is kept."""
    if T >= left:  # (raised in a fit, from Python or a split of select: worded for both)
        raise ValueError(
            f"token budget {T} is not below the {left} tokens left after pruning (prune {prune} "
            f"of {n_rows} rows, {total} tokens); lower prune or the token budget"
        )


def check_corpus_tokens(T: int, total: int, source: str | None = None) -> None:
    """A corpus's token budget is at most its tokens (``source``: where they were counted),
    as a row budget is at most a split's rows."""
    if T > total:
        counted = f" (counted from {source})" if source else ""
        raise ValueError(
            f"token budget {T:,} is larger than the corpus's {total:,} tokens{counted}; lower --tokens or "
            "use --token-ratio"
        )
