"""Verification: retrain the chosen recipe and three references on fresh seeds, and say what differs.

The references are the method's default recipe (DATAMASK: ``lam`` 0.5, ``pairwise``; QuaDMix:
its default sampling parameters and the input's quality), ``topk`` and ``random``, all at the
search's budget. Each is trained on ``verify`` proxy seeds no trial used (seeds shared by the
four, so their differences are paired). :func:`summarize` gives, per evaluation set, each
recipe's mean and spread and every reference's paired difference from the chosen recipe, with a
sentence that says whether the difference is beyond noise: its paired 95% t-interval excludes
zero (:func:`~.noise.paired_t`, the one rule of the search, the suite and the report).
:func:`recommend` is the rule ``recipe.yaml`` follows, on the target set: the chosen recipe
unless a reference beats it beyond noise, then the verified recipe of lowest mean loss (so no
verified recipe beats the recommended one beyond noise); it says which seeds decided it and
whether those are the seeds its reported comparison uses.
"""

from __future__ import annotations

import numpy as np

from .noise import LEVEL, paired_t

__all__ = [
    "VERIFY_SEED_OFFSET",
    "REFERENCES",
    "verification_recipes",
    "early_references",
    "verification_seeds",
    "summarize",
    "recommend",
    "difference_words",
]

#: verification seeds start here (trials use ``seed .. seed + seeds - 1``)
VERIFY_SEED_OFFSET = 10_000
REFERENCES = ("default", "topk", "random")


def default_recipe(method: str) -> dict:
    """What ``datamask select --method METHOD`` runs with no other option, as a recipe: DATAMASK's
    defaults (every parameter a trial may set), or QuaDMix's."""
    if method == "quadmix":
        return {"method": "quadmix"}
    from ...estimator.params import DataMaskParams

    d = DataMaskParams()
    return {"method": "datamask", "lam": d.lam, "diversity": d.diversity, "prune": d.prune,
            "near_duplicate": d.near_duplicate}  # fmt: skip


def verification_recipes(method: str, chosen: dict, prune: float | None = None, cap=None, extra=None) -> dict:
    """``{name: recipe}`` of the chosen recipe, the three references and the ``extra`` recipes
    (``--references``), at the chosen recipe's ``ratio`` when it has one (a recipe's ``prune``
    capped at ``cap(ratio)``: the largest prune that leaves the ratio's rows, or its tokens under
    a token budget; default ``1 - ratio``). ``prune``: the default's (None: DATAMASK's default)."""
    default = default_recipe(method)
    if prune is not None and method != "quadmix":
        default["prune"] = float(prune)
    refs = {"default": default, "topk": {"method": "topk"}, "random": {"method": "random"}}
    refs.update({k: dict(v) for k, v in (extra or {}).items()})
    if "ratio" in chosen:  # the references select as much as the chosen recipe
        top = (1.0 - float(chosen["ratio"])) if cap is None else float(cap(float(chosen["ratio"])))
        for r in refs.values():
            r["ratio"] = float(chosen["ratio"])
            if "prune" in r and float(r["prune"]) > top:
                r["prune"] = top
    return {"chosen": dict(chosen), **refs}


def early_references(method: str, searched, prune: float | None = None, extra=None) -> dict | None:
    """``{name: recipe}`` of the references when no chosen recipe changes them (``ratio`` is not
    among the ``searched`` parameters), so they can train beside the trials; else None."""
    if "ratio" in set(searched):
        return None
    return {k: v for k, v in verification_recipes(method, {}, prune, extra=extra).items() if k != "chosen"}


def verification_seeds(seed: int, k: int) -> list:
    return [int(seed) + VERIFY_SEED_OFFSET + j for j in range(int(k))]


def difference_words(d: dict, unit: str) -> str:
    """``(paired over 5 seeds: 95% interval -0.0200 to -0.0046, t -3.10, p 0.036): beyond noise``."""
    if d["sd"] is None:
        return " on one seed: no spread to judge it by"
    pct = f"{100 * d['level']:g}%"
    inside = f"paired over {d['seeds']} seeds: {pct} interval {d['lo']:+.4f} to {d['hi']:+.4f} {unit}"
    if d["se"] == 0:
        inside += ", the same difference on every seed"
    else:
        inside += f", t {d['t']:.2f}, p {d['p']:.3g}"
    verdict = "beyond noise" if d["beyond"] else "within noise (the interval holds zero)"
    return f" ({inside}): {verdict}"


def _sentence(name: str, d: dict, unit: str, where: str) -> str:
    m = d["mean"]
    word = "lower" if m < 0 else "higher"
    return f"{where}chosen is {word} than {name} by {abs(m):.4f} {unit}" + difference_words(d, unit)


def _loss_sets(frame, target: str) -> dict:
    """``{set name: column}`` of the per-set columns (``loss.SET``) of ``frame``; ``{None: target}``
    when it has none (one unnamed set)."""
    got = {c[len(target) + 1 :]: c for c in frame.columns if str(c).startswith(f"{target}.")}
    return got or {None: target}


def _one_set(frame, column: str, unit: str, where: str, level: float) -> dict:
    wide = frame.pivot_table(index="seed", columns="name", values=column, aggfunc="first").dropna()
    out = {"recipes": {}, "differences": {}}
    for name in wide.columns:
        v = wide[name].to_numpy()
        out["recipes"][name] = {
            "mean": float(v.mean()),
            "sd": float(v.std(ddof=1)) if len(v) > 1 else None,
            "seeds": int(len(v)),
        }
    sds = [r["sd"] for r in out["recipes"].values() if r["sd"] is not None]
    pooled = float(np.sqrt(np.mean(np.square(sds)))) if sds else None
    out["pooled_sd"] = pooled
    if "chosen" in wide.columns:
        for ref in [r for r in wide.columns if r != "chosen"]:
            d = paired_t(wide["chosen"], wide[ref], level)
            d["spreads"] = d["mean"] / pooled if pooled else None
            d["words"] = _sentence(ref, d, unit, where)
            out["differences"][ref] = d
    return out


def summarize(frame, target_set: str | None = None, metric: str = "loss", level: float = LEVEL) -> dict:
    """From verification records (``name``, ``seed``, ``loss`` and per set ``loss.SET``; one row
    each): per evaluation set (``sets``) ``{"recipes", "differences", "pooled_sd"}``: per recipe
    ``{"mean", "sd", "seeds"}``, per reference the paired t-test of chosen minus it
    (:func:`~.noise.paired_t`) with ``spreads`` (the difference in units of the recipes' pooled
    seed-to-seed sd) and ``words``. The target set's (``target_set``, default the first) are
    also at the top level, with ``target`` its name."""
    unit = "nats/token" if metric.startswith("loss") else "bits/byte"
    cols = _loss_sets(frame, metric)
    named = len(cols) > 1 or None not in cols
    sets = {s: _one_set(frame, c, unit, f"on {s}, " if named else "", level) for s, c in cols.items()}
    target = target_set if target_set in sets else next(iter(sets))
    return {**sets[target], "target": target, "sets": sets if named else {}}


def _beats(d: dict) -> bool:
    """A reference beats the chosen recipe beyond noise: chosen minus it is positive and its
    paired t-interval excludes zero."""
    return bool(d["beyond"]) and d["mean"] > 0


def _seeds(name: str, k: int) -> dict:
    """Which seeds decided the recommendation and whether its reported comparison reuses them."""
    if name == "chosen":
        return {
            "decided_on": "trials",
            "compared_on": "verification" if k else None,
            "independent": True,
            "words": (
                f"the chosen recipe was picked on the trials' seeds; its comparison is on the {k} verification "
                "seeds, which no trial used: independent of the choice"
                if k
                else "the chosen recipe was picked on the trials' seeds and compared on none"
            ),
        }
    return {
        "decided_on": "verification",
        "compared_on": "verification",
        "independent": False,
        "words": (
            f"the {k} verification seeds that replaced the chosen recipe by {name} are the ones its comparison "
            "reports: not independent of the decision (its lead may be partly luck: confirm it on other seeds, "
            "e.g. another --seed)"
        ),
    }


def recommend(summary: dict | None, recipes: dict, unit: str = "nats/token") -> dict:
    """``{"name", "recipe", "why", "target", "seeds"}``: what ``recipe.yaml`` applies. ``chosen``
    unless some reference beats it beyond noise on the target set of the verification
    ``summary`` (:func:`summarize`); then the verified recipe with the lowest mean loss there.
    ``seeds``: which seeds decided it and whether its comparison reuses them (:func:`_seeds`).
    ``recipes``: :func:`verification_recipes`."""
    if summary is None or "chosen" not in summary["recipes"]:
        why = "not verified (--verify 0): the regressor's choice, unchecked against the references"
        return {"name": "chosen", "recipe": recipes["chosen"], "why": why, "target": None, "seeds": _seeds("chosen", 0)}
    target = summary.get("target")
    on = f" on {target}" if target else ""
    means = {n: r["mean"] for n, r in summary["recipes"].items()}
    listed = ", ".join(f"{n} {m:.4f}" for n, m in means.items())
    k = summary["recipes"]["chosen"]["seeds"]
    beaten = {n: d for n, d in summary["differences"].items() if _beats(d)}
    if not beaten:
        if k < 2:
            why = f"verified on one seed, no spread to judge a difference by; the chosen recipe is kept ({listed} {unit}{on})"
        else:
            why = (
                f"no reference beat the chosen recipe beyond noise{on} over {k} paired seeds (95% t-interval; "
                f"{listed} {unit})"
            )
        return _recommended("chosen", recipes, why, summary, k)
    best = min(means, key=means.get)
    by = "; ".join(
        f"{n} {means[n]:.4f} against chosen {means['chosen']:.4f} {unit}, paired difference {d['mean']:.4f}, "
        f"{100 * d['level']:g}% interval {d['lo']:+.4f} to {d['hi']:+.4f} over {d['seeds']} seeds"
        for n, d in beaten.items()
    )
    why = f"{' and '.join(beaten)} beat the chosen recipe beyond noise{on} ({by}); {best} has the lowest verified loss"
    return _recommended(best, recipes, why, summary, k)


def _recommended(name: str, recipes: dict, why: str, summary: dict, k: int) -> dict:
    """The recommendation with its seeds said and the other evaluation sets' verified means (not
    judged: the rule reads the target set) in ``why``."""
    seeds = _seeds(name, k)
    others = {s: v for s, v in (summary.get("sets") or {}).items() if s != summary.get("target")}
    for s, v in others.items():
        listed = ", ".join(f"{n} {r['mean']:.4f}" for n, r in v["recipes"].items())
        why += f"; on {s} (not judged): {listed}"
    why += f"; {seeds['words']}"
    return {"name": name, "recipe": dict(recipes[name]), "why": why, "target": summary.get("target"), "seeds": seeds}
