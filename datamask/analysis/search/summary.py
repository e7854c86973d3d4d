"""``search.json``: what a search found, assembled from its trials, its verification and its
recommendation, with the warnings a user must read first.

The first warning says when the proxies did not learn past token frequencies (a model under
:data:`~datamask.analysis.proxy_lm.baseline.MIN_STEPS` optimiser steps, or beating its unigram
baseline by less than :data:`~datamask.analysis.proxy_lm.baseline.MIN_MARGIN` nats/token on some
evaluation set); then a recommendation that is not the chosen recipe, a regressor that does not
rank, a fixed-pass regime whose steps follow each selection's size, a row ratio that mixes size
with content, and models trained in mixed precisions.
"""

from __future__ import annotations

from ..proxy_lm.baseline import learned_warning
from . import figures as figs
from .noise import LEVEL, noise_table
from .schedule import proxy_regime

__all__ = ["search_summary", "tracks", "WEAK_SPEARMAN", "target_set", "budget_words"]

#: below this cross-validated Spearman the regressor is said not to rank the trials
WEAK_SPEARMAN = 0.3


def target_set(cfg, prep) -> str:
    """The evaluation set the regressor fits and the recommendation judges: ``cfg.target``, else
    the first ``--eval``."""
    return cfg.target or prep["eval_sets"][0]["name"]


def tracks(means) -> dict:
    """Spearman of each :data:`~.figures.TRACKS` statistic with trial loss; "constant" where the
    statistic takes one value over the trials (no rank to correlate), None where under 3 trials have it."""
    return {col: figs.track(means[col], means["loss"]) for col in figs.TRACKS}


def _verified(vsum) -> dict | None:
    """Per recipe its mean, sd and seeds on the target set, the paired differences there (the rule:
    a paired 95% t-interval), and ``sets``: the same for every evaluation set."""
    if vsum is None:
        return None
    v = {n: {"mean": r["mean"], "sd": r["sd"], "seeds": r["seeds"]} for n, r in vsum["recipes"].items()}
    v.update(differences=vsum["differences"], pooled_sd=vsum["pooled_sd"], target=vsum["target"], level=LEVEL)
    v["sets"] = vsum["sets"] or {vsum["target"]: {k: vsum[k] for k in ("recipes", "differences", "pooled_sd")}}
    return v


def budget_words(cfg, token_info) -> str:
    """What every selection was budgeted in, for ``search.json``'s ``budget`` and the report."""
    if cfg.budget_unit == "rows":
        return (
            "a ratio of rows (--budget-unit rows): each recipe kept that share of the rows, whatever their length, so "
            "the selections differ in size and the proxies' loss mixes size with content"
        )
    if cfg.budget_in_tokens:
        return "the token budget given (--tokens/--token-ratio): every selection holds as many tokens, to one document"
    r = (token_info or {}).get("token_ratio")
    share = "each trial's searched ratio" if r == "searched" else f"the ratio {r:g}"
    return (
        f"{share} as a share of the corpus's tokens (--budget-unit tokens): every selection holds as many tokens, "
        "to one document"
    )


def _proxy(cfg, frame, vframe) -> dict:
    rows = frame.to_dict("records") + ([] if vframe is None else vframe.to_dict("records"))
    pc = cfg.proxy_config().resolved()
    return {
        "preset": cfg.proxy_preset,
        **proxy_regime(cfg.proxy_tokens, rows),
        "params": int(frame["params"].iloc[0]),
        "precision": _precisions(frame, vframe),
        "lr": float(pc.lr),
        "weight_decay": float(pc.weight_decay),
        "config": pc.to_dict(),
    }


def search_summary(cfg, space, prep, fit, frames, means, vsum, counts, files, recommended, token_info) -> dict:
    """``search.json``'s content (but ``recipe``, ``wall_seconds`` and ``cost``, added by the run);
    ``frames``: the trials' and the verification's records (``records_frame``; the latter None)."""
    frame, vframe = frames
    return {
        "kind": "search",
        "input": cfg.input,
        "eval": list(cfg.eval),
        "target": target_set(cfg, prep),
        "method": cfg.method,
        "space": space.describe(),
        "budget": {"unit": cfg.budget_unit, "words": budget_words(cfg, token_info)},
        "tokens": token_info,  # as select's manifest records it; None under a row budget
        "trials": int(frame["trial"].nunique()),
        "seeds": int(cfg.seeds),
        "proxy": _proxy(cfg, frame, vframe),
        "chosen": fit["recipe"],
        "predicted_loss": fit["predicted"],
        "regressor": fit["regressor"],
        "cv_spearman": fit["cv"][fit["regressor"]]["spearman"],
        "cv": fit["cv"],
        "candidates": fit["candidates"],
        "top": fit["top"],
        "noise": {
            "trials": noise_table(frame, by="trial") or None,
            "verification": noise_table(vframe) or None if vframe is not None else None,
        },
        "verified": _verified(vsum),
        "recommended": recommended,
        "tracks": tracks(means),
        "rows": prep["rows"],
        "leaks": prep["leaks"],
        "near_duplicate_rows": prep["near_duplicate_rows"],
        "domains": len(prep["domains"]),
        "trial_eval_tokens": cfg.trial_eval_cap(),
        "eval_sets": _eval_sets(prep, frame),
        "models": counts,
        "files": files,
        "warnings": _warnings(cfg, fit, recommended, frame, vframe),
    }


def _eval_sets(prep, frame) -> list:
    """The evaluation sets as prepared, with the tokens a trial's model scored of each
    (``trial_tokens``: the first documents up to ``trial_eval_tokens``; the verification
    scores ``scored_tokens``)."""
    col = {e["name"]: f"eval_tokens.{e['name']}" for e in prep["eval_sets"]}
    return [
        dict(e, trial_tokens=int(frame[col[e["name"]]].max()) if col[e["name"]] in frame else None)
        for e in prep["eval_sets"]
    ]


def _precisions(frame, vframe) -> list:
    """The precisions the models trained in (``precision: auto`` resolves on each worker)."""
    used = set()
    for f in (frame, vframe):
        if f is not None and "precision" in f:
            used.update(f["precision"].dropna().astype(str))
    return sorted(used)


def _learned(frame, vframe) -> list:
    """The first warning: models that did not learn past token frequencies (:func:`learned_warning`)."""
    frames = [f for f in (frame, vframe) if f is not None]
    steps = [int(x) for f in frames for x in f["steps"]]
    sets = [c[len("unigram_margin.") :] for c in frame.columns if c.startswith("unigram_margin.")]
    margins = {s: [float(x) for f in frames for x in f[f"unigram_margin.{s}"]] for s in sets}
    w = learned_warning(steps, margins, "models")
    return [w] if w else []


#: verified arms whose passes over their selections differ by more than this share are not at
#: equal passes: their budget was not counted in the proxies' tokens
PASSES_SPREAD = 0.05


def _passes(cfg, vframe) -> list:
    """A token budget not counted in the proxies' tokens (a count column or whitespace words):
    the verified arms select equal counted tokens but unequal proxy tokens, so they train
    unequal passes over their selections (issue 48)."""
    if vframe is None or not len(vframe) or "passes" not in vframe or cfg.budget_unit == "rows":
        return []
    if cfg.tokenizer:
        return []
    per_arm = vframe.groupby("name")["passes"].mean()
    lo, hi = float(per_arm.min()), float(per_arm.max())
    if hi <= lo * (1.0 + PASSES_SPREAD):
        return []
    return [
        f"the verified arms trained {lo:.2f}-{hi:.2f} passes over their selections: the token budget was counted "
        "apart from the proxies' own tokenizer (a count column or whitespace words), so equal counted tokens are "
        "unequal proxy tokens; give --tokenizer (the proxies then train in it) for equal passes"
    ]


def _warnings(cfg, fit, recommended, frame, vframe) -> list:
    """What the user must read first, in that order: proxies that measured token frequencies, a
    reference that beat the chosen recipe, a regressor that does not rank, steps that follow each
    selection's size, a row ratio, mixed precisions."""
    out = _learned(frame, vframe)
    if recommended["name"] != "chosen":
        out.append(f"recipe.yaml applies {recommended['name']}, not the chosen recipe: {recommended['why']}")
    rho = fit["cv"][fit["regressor"]]["spearman"]
    if rho < WEAK_SPEARMAN:
        head = (
            f"the regressor ranks the trials poorly (cross-validated Spearman {rho:.2f} < {WEAK_SPEARMAN}): the chosen "
        )
        if recommended["name"] != "chosen":  # what recipe.yaml does, said once above
            out.append(head + f"recipe is weakly informed, and recipe.yaml applies {recommended['name']} instead")
        else:  # the same words as the line that says what recipe.yaml applies, and why
            out.append(
                head + "recipe is weakly informed; recipe.yaml applies it (why: below), so add --trials or "
                "--proxy-tokens before relying on it, or select with the default recipe instead (datamask select "
                "INPUT OUTPUT)"
            )
    if str(cfg.proxy_tokens).endswith("x"):
        lo, hi = int(frame["steps"].min()), int(frame["steps"].max())
        out.append(
            f"--proxy-tokens {cfg.proxy_tokens} trains each model for passes over its own selection, so its optimiser "
            f"steps follow the selection's size ({lo:,}-{hi:,} steps among the trials)"
        )
    if cfg.budget_unit == "rows":
        out.append(f"the selections were budgeted by {budget_words(cfg, None)}")
    out += _passes(cfg, vframe)
    used = _precisions(frame, vframe)
    if len(used) > 1:
        out.append(
            f"the models trained in {' and '.join(used)} (precision auto on workers whose CPUs differ): their losses "
            "differ by that rounding too (within 0.006 nats where measured); set --proxy-options precision=float32 "
            "for one precision everywhere"
        )
    return out
