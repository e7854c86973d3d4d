"""Verification: retrain the chosen recipe and three references on fresh seeds, and say what differs.

The references are the method's default recipe (DATAMASK: ``lam`` 0.5, ``pairwise``; QuaDMix:
its default sampling parameters and the input's quality), ``topk`` and ``random``, all at the
search's budget. Each is trained on ``verify`` proxy seeds no trial used (seeds shared by the
four, so their differences are paired). :func:`summarize` gives each recipe's mean and
spread and every reference's paired difference from the chosen recipe, with a sentence that
says whether the difference is larger than its noise (beyond two standard errors of the
paired difference) or within it.
"""

from __future__ import annotations

import numpy as np

from .noise import paired_difference

__all__ = ["VERIFY_SEED_OFFSET", "REFERENCES", "verification_recipes", "verification_seeds", "summarize"]

#: verification seeds start here (trials use ``seed .. seed + seeds - 1``)
VERIFY_SEED_OFFSET = 10_000
REFERENCES = ("default", "topk", "random")


def verification_recipes(method: str, chosen: dict) -> dict:
    """``{name: recipe}`` of the chosen recipe and the three references."""
    default = (
        {"method": "quadmix"} if method == "quadmix" else {"method": "datamask", "lam": 0.5, "diversity": "pairwise"}
    )
    return {"chosen": dict(chosen), "default": default, "topk": {"method": "topk"}, "random": {"method": "random"}}


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
