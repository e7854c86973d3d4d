"""A search's token budget (``--tokens``/``--token-ratio``): each split's share, and the check that
no ``prune`` the search will run leaves a split fewer tokens than its share (docs/search.md).

Both come from one pass over the input, before anything is prepared or trained: the pass that
counts each split's tokens (as ``datamask select`` counts them) also counts, under DATAMASK's
objective, the tokens quality-aware pruning leaves at the prunes checked and at every hundredth,
so a refusal names the largest prune that fits.
"""

from __future__ import annotations

import json

from ...errors import ConfigError

__all__ = ["split_token_budgets", "prune_checks", "check_prune_tokens", "PRUNE_GRID"]


def split_token_budgets(client, cfg, splits) -> tuple:
    """``(shares, budget)`` of a token budget (``--tokens``/``--token-ratio``): each split's share,
    in the order of ``splits``, shared out as ``datamask select`` shares it (one counting task per
    split on the workers, then :func:`~datamask.pipeline.tokens.apportion` on the client: one count
    per split, no document), and the budget as ``select``'s manifest records it (``budget``,
    ``corpus_tokens``, ``covers_corpus``, ``source``). ``(None, None)`` under a row budget. A search
    sets no holdout aside and drops no ids.

    Under DATAMASK's objective the same pass counts the tokens pruning leaves in each split, and a
    ``prune`` (the space's highest, the base recipe's) that leaves a split no more than its share is
    refused here, before anything is prepared or trained (:func:`check_prune_tokens`)."""
    if not cfg.token_budget:
        return None, None
    from ...methods import prunes
    from ...pipeline.schema import Columns
    from ...pipeline.tokens import apportion, count_corpus_tokens

    checks = prune_checks(cfg.items(), cfg.prune, cfg.verify) if prunes(cfg.method) else []
    grid = sorted(set(PRUNE_GRID) | {p for _, p in checks}) if checks else ()
    counts = count_corpus_tokens(client, splits, cfg, {}, Columns.from_config(cfg), prunes=grid)
    source = ", ".join(sorted(set(counts["source"])))
    budgets, info = apportion(dict(zip(counts["name"], counts["tokens"])), cfg, source)
    shares = [int(budgets[s.name]) for s in splits]
    if checks:
        given = f"--tokens {cfg.tokens}"
        if cfg.tokens is None:
            given = f"--token-ratio {cfg.token_ratio:g} ({info['budget']:,} tokens)"
        rows = counts.set_index("name").loc[[s.name for s in splits]]
        check_prune_tokens(
            checks,
            [
                {"where": r.where, "tokens": int(r.tokens), "share": T, "left": _by_prune(grid, r.left)}
                for r, T in zip(rows.itertuples(), shares)
            ],
            given,
        )
    return shares, dict(info, source=source)


def _by_prune(grid, left: str):
    """``{prune: tokens left}`` of a split's ``left`` (count_corpus_tokens' JSON list; None: unusable quality)."""
    got = json.loads(left)
    return None if got is None else dict(zip(grid, (int(x) for x in got)))


#: the prunes at which each split reports the tokens pruning leaves under a token budget (beside
#: the ones checked): the largest that fits every split's share is the fix a refusal suggests
PRUNE_GRID = tuple(k / 100 for k in range(100))


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


def _fits(split: dict, p: float) -> bool:
    """A fit at prune ``p`` keeps the split's share below the tokens pruning leaves, as
    :func:`~datamask.core.budget.check_tokens_left` requires (a share of no token, or one that
    covers the split, prunes nothing; ``left`` None: the split's quality is unusable, which the
    selection itself reports)."""
    share, left = split["share"], split["left"]
    return left is None or not 1 <= share < split["tokens"] or share < left[p]


def check_prune_tokens(checks, splits: list, budget: str) -> None:
    """Refuse, before anything runs, a prune of :func:`prune_checks` that leaves some split fewer
    tokens than its share of the token budget (every selection at that prune would fail there).
    ``splits``: ``{"where", "tokens", "share", "left": {prune: tokens left}}`` with ``left`` at
    every prune checked and every :data:`PRUNE_GRID` value; ``budget``: the budget as given
    (``--tokens 5000``). The message names the option, the value, the split and the largest prune
    of the grid that fits every split."""
    for item, p in checks:
        bad = [s for s in splits if not _fits(s, p)]
        if not bad:
            continue
        s = max(bad, key=lambda s: s["share"] - s["left"][p])
        room = max(g for g in PRUNE_GRID if g <= p and all(_fits(x, g) for x in splits))
        head = (
            f"pruning {p:g} of the rows of {s['where']} leaves {s['left'][p]:,} tokens, not more than its "
            f"{s['share']:,}-token share of {budget}"
        )
        if item is None:
            whose = " (the default recipe's, verified beside the chosen one)" if len(checks) > 1 else ""
            raise ConfigError(f"--prune {p:g}{whose}: {head}; lower --prune to {room:g} or the token budget")
        if item.kind == "value" or room == 0:
            fix = f"{item.name}={room:g}"
        elif item.lo < room:
            fix = f"{item.name}={item.lo:g}:{room:g}" + (":log" if item.log else "")
        else:
            fix = f"{item.name}=0:{room:g}"
        raise ConfigError(
            f"space {item.text()!r}: {head}; keep prune <= {room:g} (e.g. {fix}) or lower the token budget"
        )
