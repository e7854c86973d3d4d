"""Verification: retrain the chosen recipe and three references on fresh seeds, and say what differs.

The references are the method's default recipe (DATAMASK: ``lam`` 0.5, ``pairwise``; QuaDMix:
its default sampling parameters and the input's quality), ``topk`` and ``random``, all at the
search's budget. Each is trained on ``verify`` proxy seeds no trial used (seeds shared by the
four, so their differences are paired). :func:`summarize` gives each recipe's mean and
spread and every reference's paired difference from the chosen recipe, with a sentence that
says whether the difference is larger than its noise (beyond two standard errors of the
paired difference) or within it. :func:`recommend` is the rule ``recipe.yaml`` follows: the chosen
recipe unless a reference beats it beyond noise, then the verified recipe of lowest mean loss (so
no verified recipe beats the recommended one beyond noise).
"""

from __future__ import annotations

import numpy as np

from .noise import paired_difference

__all__ = [
    "VERIFY_SEED_OFFSET",
    "REFERENCES",
    "verification_recipes",
    "early_references",
    "verification_seeds",
    "summarize",
    "recommend",
]

#: verification seeds start here (trials use ``seed .. seed + seeds - 1``)
VERIFY_SEED_OFFSET = 10_000
REFERENCES = ("default", "topk", "random")


def verification_recipes(method: str, chosen: dict, prune: float = 0.5) -> dict:
    """``{name: recipe}`` of the chosen recipe and the three references, at the chosen recipe's
    ``ratio`` when it has one (the default's ``prune``, the base recipe's, capped at ``1 - ratio``)."""
    default = (
        {"method": "quadmix"} if method == "quadmix" else {"method": "datamask", "lam": 0.5, "diversity": "pairwise"}
    )
    refs = {"default": default, "topk": {"method": "topk"}, "random": {"method": "random"}}
    if "ratio" in chosen:  # the references select as many rows as the chosen recipe
        for r in refs.values():
            r["ratio"] = float(chosen["ratio"])
        if method != "quadmix" and float(prune) > 1.0 - float(chosen["ratio"]):
            default["prune"] = 1.0 - float(chosen["ratio"])
    return {"chosen": dict(chosen), **refs}


def early_references(method: str, searched, prune: float = 0.5) -> dict | None:
    """``{name: recipe}`` of the references when no chosen recipe changes them (``ratio`` is not
    among the ``searched`` parameters), so they can train beside the trials; else None."""
    if "ratio" in set(searched):
        return None
    return {k: v for k, v in verification_recipes(method, {}, prune).items() if k != "chosen"}


def verification_seeds(seed: int, k: int) -> list:
    return [int(seed) + VERIFY_SEED_OFFSET + j for j in range(int(k))]


def _sentence(name: str, d: dict, unit: str) -> str:
    m = d["mean"]
    word = "lower" if m < 0 else "higher"
    head = f"chosen is {word} than {name} by {abs(m):.4f} {unit}"
    if d["se"] is None:
        return head + " on one seed: no spread to judge it by"
    if abs(m) > 2 * d["se"]:
        return head + f" (paired over {d['seeds']} seeds, sd {d['sd']:.4f}): larger than the noise"
    return (
        head + f", within noise (paired over {d['seeds']} seeds, sd {d['sd']:.4f}; 2 standard errors {2 * d['se']:.4f})"
    )


def summarize(frame, target: str = "loss") -> dict:
    """From verification records (``name``, ``seed``, ``loss``, ...; one row each): per recipe
    ``{"mean", "sd", "seeds"}``, and per reference ``{"mean", "sd", "se", "seeds", "spreads",
    "words"}`` of chosen minus reference (``spreads``: the difference in units of the
    recipes' pooled seed-to-seed sd)."""
    wide = frame.pivot_table(index="seed", columns="name", values=target, aggfunc="first").dropna()
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
    unit = "nats/token" if target.startswith("loss") else "bits/byte"
    if "chosen" in wide.columns:
        for ref in [r for r in REFERENCES if r in wide.columns]:
            d = paired_difference(wide["chosen"], wide[ref])
            d["spreads"] = d["mean"] / pooled if pooled else None
            d["words"] = _sentence(ref, d, unit)
            out["differences"][ref] = d
    return out


def _beats(d: dict) -> bool:
    """A reference beats the chosen recipe beyond noise: chosen minus it above two standard errors."""
    return d["se"] is not None and d["mean"] > 2 * d["se"]


def recommend(summary: dict | None, recipes: dict, unit: str = "nats/token") -> dict:
    """``{"name", "recipe", "why"}``: what ``recipe.yaml`` applies. ``chosen`` unless some reference
    beats it beyond noise in the verification ``summary`` (:func:`summarize`); then the verified
    recipe with the lowest mean loss. ``recipes``: :func:`verification_recipes`."""
    if summary is None or "chosen" not in summary["recipes"]:
        why = "not verified (--verify 0): the regressor's choice, unchecked against the references"
        return {"name": "chosen", "recipe": recipes["chosen"], "why": why}
    means = {n: r["mean"] for n, r in summary["recipes"].items()}
    listed = ", ".join(f"{n} {m:.4f}" for n, m in means.items())
    k = summary["recipes"]["chosen"]["seeds"]
    beaten = {n: d for n, d in summary["differences"].items() if _beats(d)}
    if not beaten:
        if k < 2:
            why = (
                f"verified on one seed, no spread to judge a difference by; the chosen recipe is kept ({listed} {unit})"
            )
        else:
            why = f"no reference beat the chosen recipe beyond noise over {k} paired seeds ({listed} {unit})"
        return {"name": "chosen", "recipe": recipes["chosen"], "why": why}
    best = min(means, key=means.get)
    by = "; ".join(
        f"{n} {means[n]:.4f} against chosen {means['chosen']:.4f} {unit}, paired difference {d['mean']:.4f} > "
        f"2 standard errors {2 * d['se']:.4f} over {d['seeds']} seeds"
        for n, d in beaten.items()
    )
    why = f"{' and '.join(beaten)} beat the chosen recipe beyond noise ({by}); {best} has the lowest verified loss"
    return {"name": best, "recipe": dict(recipes[best]), "why": why}
