"""The search section of the report: the chosen recipe, the regressor, the noise, the
verification and the search's figures (drawn by the search into ``OUTPUT/figures``)."""

from __future__ import annotations

import base64
import html

import pandas as pd

__all__ = ["search_html"]

_FIGURES = {
    "loss_by_parameter": "Each trial's held-out loss (mean over its seeds, on the trials' evaluation tokens: see "
    "the predicted loss) against each searched parameter; the "
    "curve is the regressor's prediction along it with the other parameters at the chosen recipe, the dashed line "
    "the chosen value.",
    "verification": "The chosen recipe, the default one, top-k and random retrained on fresh seeds: mean loss, "
    "seed-to-seed sd (error bars) and every seed (dots). Lower is better.",
    "loss_tracks": "What the proxy loss follows: each trial's loss against its selection's mean quality, pairwise "
    "diversity, coverage (mean best cosine of every input row to the selection) and near-duplicate share.",
}


def _value(v) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_value(x)}" for k, x in v.items())
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _table(rows: list, columns: list) -> str:
    return pd.DataFrame(rows, columns=columns).to_html(
        float_format=lambda v: f"{v:.4g}", border=0, na_rep="–", index=False
    )


def _noise_rows(noise: dict) -> list:
    rows = []
    for source, sets in noise.items():
        for name, e in (sets or {}).items():
            rows.append(
                [
                    source,
                    name,
                    e["seeds"],
                    e["loss_sd"],
                    e["loss_sd_paired"],
                    e["bits_per_byte_sd"],
                    e["bits_per_byte_sd_paired"],
                ]
            )
    return rows


_NAMES = ("chosen", "default", "topk", "random")


def _verified_parts(v: dict, models) -> list:
    """Per evaluation set, each verified recipe's mean loss and the paired differences (the rule:
    a paired 95% t-interval), then what each recipe's models selected and trained on."""
    sets = v.get("sets") or {v.get("target"): {"recipes": {n: v[n] for n in _NAMES if n in v}, **v}}
    parts = [
        "<h2>Verification</h2><p>The chosen recipe and the references retrained on fresh seeds, paired; a "
        "difference is beyond noise when its paired 95% t-interval (t quantile at seeds - 1 degrees of freedom) "
        "excludes zero. Each evaluation set apart"
        + (f"; the recommendation reads <b>{html.escape(str(v['target']))}</b>" if v.get("target") else "")
        + ".</p>"
    ]
    for name, e in sets.items():
        rows = [
            [n, e["recipes"][n]["mean"], e["recipes"][n]["sd"], e["recipes"][n]["seeds"]]
            for n in _NAMES
            if n in e["recipes"]
        ]
        parts += [
            f"<h3>{html.escape(str(name or 'evaluation set'))}</h3>",
            _table(rows, ["recipe", "mean loss (nats/token)", "sd", "seeds"]),
            "<ul>" + "".join(f"<li>{html.escape(x['words'])}</li>" for x in e["differences"].values()) + "</ul>",
        ]
    return parts + _models_table(models)


def _models_table(f) -> list:
    """What every verified recipe's models selected and trained on (``f``: verify.parquet, or None)."""
    if f is None or not len(f):
        return []
    cols = {
        "selected_tokens": "selected tokens",
        "selection_tokens": "selection in proxy tokens",
        "tokens": "trained tokens",
        "passes": "passes",
        "steps": "optimiser steps",
    }
    margins = {
        c: f"unigram margin on {c[len('unigram_margin.') :]} (least)"
        for c in f.columns
        if c.startswith("unigram_margin.")
    }
    g = f.groupby("name", sort=False)
    rows = []
    for n in [x for x in _NAMES if x in set(f["name"])]:
        sub = g.get_group(n)
        rows.append([n, *(sub[c].iloc[0] if c in sub else None for c in cols), *(sub[c].min() for c in margins)])
    return [
        "<p>What each recipe's models selected and trained on (every seed of a recipe trains on its one selection); "
        "the unigram margin is the loss of a unigram model of a model's own training tokens minus the model's: under "
        "0.3 nats/token a model measured token frequencies, not content.</p>",
        _table(rows, ["recipe", *cols.values(), *margins.values()]),
    ]


def _track(v) -> str:
    """A ``tracks`` value of search.json as the table shows it (a number, "constant", or too few trials)."""
    if v is None:
        return "too few trials"
    return v if isinstance(v, str) else f"{v:+.3f}"


def _recommended(s: dict) -> str:
    rec = s.get("recommended")
    if not rec:  # a search.json written before the recommendation: recipe.yaml holds the chosen recipe
        return f"<p>Apply the chosen recipe with <code>datamask run {html.escape(str(s['recipe']))}</code>.</p>"
    head = (
        "the chosen recipe" if rec["name"] == "chosen" else f"<b>{html.escape(rec['name'])}</b>, not the chosen recipe"
    )
    seeds = (rec.get("seeds") or {}).get("independent")
    said = "" if seeds is None else f" <b>Seeds:</b> {'independent' if seeds else 'not independent'}."
    budget = (s.get("budget") or {}).get("words")
    return (
        f"<h2>Recommended</h2><p><code>recipe.yaml</code> applies {head}: {html.escape(rec['why'])}.{said} Apply it "
        f"with <code>datamask run {html.escape(str(s['recipe']))}</code>.</p>"
        + (f"<p>Every selection was budgeted by {html.escape(budget)}.</p>" if budget else "")
        + _table([[k, _value(v)] for k, v in rec["recipe"].items()], ["parameter", "value"])
    )


def _figure(d, name: str, caption: str) -> str:
    src = d / "figures" / f"{name}.png"
    if not src.exists():
        return ""
    b64 = base64.b64encode(src.read_bytes()).decode()
    return (
        f"<figure><img src='data:image/png;base64,{b64}' alt='{name}' data-file='../figures/{name}.png'>"
        f"<figcaption>{html.escape(caption)} (<a href='../figures/{name}.png'>figures/{name}.png</a>)</figcaption></figure>"
    )


def _trial_scale(s: dict) -> str:
    """Where the trials scored fewer evaluation tokens than the verification: on which tokens the
    prediction is (the verified losses are on every scored token)."""
    cut = [e for e in s.get("eval_sets", ()) if e.get("trial_tokens") and e["trial_tokens"] < e["scored_tokens"]]
    if not cut:
        return ""
    parts = ", ".join(
        f"{e['trial_tokens']:,} of {e['scored_tokens']:,} tokens of {html.escape(e['name'])}" for e in cut
    )
    return (
        f", on the trials' evaluation ({parts}: the first documents of each set; the verification below scores "
        "them all, so its losses are on another scale)"
    )


def search_html(search: dict) -> str:
    """The HTML of a search output's section (``search``: ``{"dir", "summary"}`` and ``verify``, the
    verification's models: verify.parquet's frame, or None)."""
    s, d = search["summary"], search["dir"]
    parts = [
        *(f"<p class='missing'><b>Warning:</b> {html.escape(w)}.</p>" for w in s.get("warnings", ())),
        _recommended(s),
        "<h2>Chosen recipe</h2>",
        _table([[k, _value(v)] for k, v in s["chosen"].items()], ["parameter", "value"]),
        f"<p>Predicted loss {s['predicted_loss']:.4f}: the mean of the best {s['top']} of {s['candidates']:,} "
        f"sampled recipes under the {html.escape(s['regressor'])} regressor{_trial_scale(s)}.</p>",
        "<h2>Regressor</h2>",
        _table(
            [[k, v["spearman"], v["spearman_sd"], k == s["regressor"]] for k, v in s["cv"].items()],
            ["model", "cross-validated Spearman", "sd over repeats", "used"],
        ),
        "<h2>Noise</h2><p>Seed-to-seed sd of one recipe's loss, and what is left once the shared seed's effect is "
        "removed (paired: every recipe trained on the same seeds, the common random numbers).</p>",
        _table(
            _noise_rows(s["noise"]),
            ["from", "evaluation set", "seeds", "loss sd", "loss sd (paired)", "bits/byte sd", "bits/byte sd (paired)"],
        ),
    ]
    if s.get("verified"):
        parts += _verified_parts(s["verified"], search.get("verify"))
    parts.append("<h2>What the loss tracks</h2>")
    parts.append(
        _table([[k, _track(v)] for k, v in s["tracks"].items()], ["selection statistic", "Spearman with trial loss"])
    )
    for name, caption in _FIGURES.items():
        parts.append(_figure(d, name, caption))
    return "\n".join(p for p in parts if p)
