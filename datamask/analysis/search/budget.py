"""A search's token budget (``--tokens``/``--token-ratio``): each split's share, and the check that
no ``prune`` the search will run leaves a split fewer tokens than its share (docs/search.md).

Both come from one pass over the input, before anything is prepared or trained: the pass that
counts each split's tokens (as ``datamask select`` counts them) also counts, under DATAMASK's
objective, the tokens quality-aware pruning leaves at the prunes checked and at every hundredth,
so a refusal names the largest prune that fits. The pass and the check are ``select``'s own
(:mod:`datamask.pipeline.tokens`); the search adds the space's ``prune`` to what is checked.
"""

from __future__ import annotations

from ...errors import ConfigError
from ...pipeline.tokens import PRUNE_GRID, budget_given, check_prune_left, prune_shortfall

__all__ = ["split_token_budgets", "prune_checks", "check_prune_tokens", "PRUNE_GRID"]


def split_token_budgets(client, cfg, splits) -> tuple:
    """``(shares, budget)`` of a token budget (``--tokens``/``--token-ratio``): each split's share,
    in the order of ``splits``, shared out as ``datamask select`` shares it
    (:func:`~datamask.pipeline.tokens.share_tokens`: one counting task per split on the workers,
    then the shares on the client: one count per split, no document), and the budget as
    ``select``'s manifest records it (``budget``, ``corpus_tokens``, ``covers_corpus``,
    ``source``). ``(None, None)`` under a row budget. A search sets no holdout aside and drops no ids;
    the rows of its evaluation sets are not counted (no selection holds them, as ``select
    --exclude`` keeps them out of recipe.yaml's).

    Under DATAMASK's objective the same pass counts the tokens pruning leaves in each split, and a
    ``prune`` (the space's highest, the base recipe's) that leaves a split no more than its share is
    refused here, before anything is prepared or trained (:func:`check_prune_tokens`)."""
    if not cfg.token_budget:
        return None, None
    from ...methods import prunes
    from ...pipeline.exclude import load_excluded
    from ...pipeline.schema import Columns
    from ...pipeline.tokens import share_tokens

    checks = prune_checks(cfg.items(), cfg.prune, cfg.verify) if prunes(cfg.method) else []
    cols = Columns.from_config(cfg)
    excluded = load_excluded(cfg.excluded_sets(), cfg.text_column)
    budgets, info, left = share_tokens(client, splits, cfg, {}, cols, prunes=[p for _, p in checks], excluded=excluded)
    if checks:
        check_prune_tokens(checks, left, budget_given(cfg, info))
    return [int(budgets[s.name]) for s in splits], info


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
