"""A search's token budget: the corpus's tokens counted once, each split's share of a recipe's
budget, and the check that no ``prune`` the search will run leaves a split fewer tokens than its
share (docs/search.md).

A search counts tokens under ``--tokens``/``--token-ratio`` and, by default, under a ratio too
(``--budget-unit tokens``: ``--ratio``, or a searched ratio, is each trial's token ratio, so every
recipe selects as much text). One pass over the input, before anything is prepared or trained,
counts each split's tokens as ``datamask select`` counts them and, under DATAMASK's objective, the
tokens quality-aware pruning leaves at every hundredth; :class:`TokenCounts` keeps them, gives
each recipe's shares, ``split_tokens``, and the largest prune that fits a token ratio
(:meth:`~datamask.pipeline.split_job.TokenCounts.room`, the cap of a trial's ``prune``). The pass,
the shares and the refusals are ``select``'s own (:mod:`datamask.pipeline.split_job`).
"""

from __future__ import annotations

from ...errors import ConfigError
from ...pipeline.split_job import TokenCounts
from ...pipeline.tokens import PRUNE_GRID, budget_given, check_prune_left, prune_shortfall

__all__ = ["count_search_tokens", "prune_checks", "check_prune_tokens", "PRUNE_GRID"]


def count_search_tokens(client, cfg, splits) -> tuple:
    """``(counts, budget)``: every split's tokens (:class:`TokenCounts`, one counting task per
    split on the workers, ``select``'s pass: no document reaches the client) and the budget as
    ``select``'s manifest records it (``budget``, ``corpus_tokens``, ``covers_corpus``, ``source``;
    with a ratio in tokens also ``token_ratio``, ``budget`` None when the ratio is searched).
    ``(None, None)`` under a row budget. A search sets no holdout aside and drops no ids;
    the rows of its evaluation sets are not counted (no selection holds them, as ``select
    --exclude`` keeps them out of recipe.yaml's).

    Under DATAMASK's objective the same pass counts the tokens pruning leaves in each split, and a
    ``prune`` (the space's highest, the base recipe's) that leaves a split no more than its share is
    refused here, before anything is prepared or trained (:func:`check_prune_tokens`); under a
    ratio in tokens the space's ``prune`` is capped per trial instead (:meth:`TokenCounts.room`) and
    only a lowest one that no trial could run is refused."""
    if not cfg.counts_tokens:
        return None, None
    from ...methods import prunes
    from ...pipeline.exclude import load_excluded
    from ...pipeline.schema import Columns
    from ...pipeline.split_job import count_tokens
    from ...pipeline.tokens import prune_grid

    checks = prune_checks(cfg.items(), cfg.prune, cfg.verify) if prunes(cfg.method) else []
    grid = prune_grid([p for _, p in checks])
    excluded = load_excluded(cfg.excluded_sets(), cfg.text_column)
    counts = count_tokens(client, splits, cfg, Columns.from_config(cfg), excluded=excluded, grid=grid)
    if cfg.budget_in_tokens:
        info = counts.info(cfg)
        if checks:
            check_prune_tokens(checks, counts.splits_left(cfg), budget_given(cfg, info))
        return counts, info
    return counts, _ratio_budget(cfg, counts, checks)


def _ratio_budget(cfg, counts: TokenCounts, checks) -> dict:
    """The budget of a ratio counted in tokens, and its prune checks at the highest ratio a trial
    runs: the space's lowest ``prune`` must fit there (higher ones are capped per trial), and the
    base ``--prune`` too unless the space searches ``prune`` and the ratio (the default recipe's is
    then capped at the chosen ratio's room)."""
    items = {it.name: it for it in cfg.items()}
    r = items.get("ratio")
    top = float(r.hi) if r is not None else float(cfg.select_config().ratio)
    at_top = cfg.replace_unchecked(token_ratio=top, ratio=None)
    info = counts.info(at_top)
    info.update(token_ratio="searched" if r is not None else top, budget=None if r is not None else info["budget"])
    given = f"--ratio {top:g} in tokens ({counts.info(at_top)['budget']:,} tokens)"
    for item, p in checks:
        if item is not None:
            hit = prune_shortfall(counts.splits_left(at_top), float(item.lo), given)
            if hit is not None:
                raise ConfigError(
                    f"space {item.text()!r}: {hit[0]}; start the range at or below {hit[1]:g} (a trial's higher "
                    "prune is capped where it fits) or lower the ratio"
                )
        elif r is None or "prune" not in items:
            check_prune_left(counts.splits_left(at_top), p, given)
    return info


def prune_checks(items, prune: float, verify: int) -> list:
    """``(item, prune)``: the prunes a token budget must leave room for under DATAMASK's objective:
    the space's highest ``prune`` (``item``; no trial's is higher, and a token budget caps none) and
    the base recipe's ``--prune`` (``item`` None), which the trials take when the space has no
    ``prune`` and the default recipe takes when it is verified."""
    p = next((it for it in items if it.name == "prune"), None)
    out = [] if p is None else [(p, max(p.lo, p.hi))]
    if p is None or int(verify) > 0:
        out.append((None, float(prune)))
    return out


def check_prune_tokens(checks, splits: list, budget: str) -> None:
    """Refuse, before anything runs, a prune of :func:`prune_checks` that leaves some split fewer
    tokens than its share of the token budget (every selection at that prune would fail there).
    ``splits``: :func:`~datamask.pipeline.tokens.split_left` of each (``{"where", "tokens",
    "share", "left": {prune: tokens left}}``, ``left`` at every prune checked and every
    :data:`PRUNE_GRID` value); ``budget``: the budget as given (``--tokens 5000``). The message
    names the option, the value, the split and the largest prune of the grid that fits every split:
    ``select``'s (:func:`~datamask.pipeline.tokens.check_prune_left`) for ``--prune``."""
    for item, p in checks:
        if item is None:
            whose = " (the default recipe's, verified beside the chosen one)" if len(checks) > 1 else ""
            check_prune_left(splits, p, budget, whose)
            continue
        hit = prune_shortfall(splits, p, budget)
        if hit is None:
            continue
        head, room = hit
        if item.kind == "value" or room == 0:
            fix = f"{item.name}={room:g}"
        elif item.lo < room:
            fix = f"{item.name}={item.lo:g}:{room:g}" + (":log" if item.log else "")
        else:
            fix = f"{item.name}=0:{room:g}"
        raise ConfigError(
            f"space {item.text()!r}: {head}; keep prune <= {room:g} (e.g. {fix}) or lower the token budget"
        )
