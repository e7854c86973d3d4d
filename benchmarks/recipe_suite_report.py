"""``recipe_suite.md`` from ``recipe_suite.json`` and ``recipe_suite_records.csv`` (recipe_suite.py).

One rule for every comparison, the search's: a difference between two arms is *beyond noise*
when its paired 95% t-interval over the verification seeds excludes zero
(:func:`datamask.analysis.search.noise.paired_t`). :func:`verdicts` counts, per regime and
target, in how many cells each arm beats each other beyond noise, loses, or is level.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from datamask.analysis.search.noise import LEVEL, paired_t

TARGETS = ("eval", "quality")
MIN_STEPS, MIN_MARGIN = 250, 0.3  # a proxy that learned more than token frequencies (the search's warning)
# the comparisons the verdict states, (a, b): "a beats b"
PAIRS = (
    ("default", "topk"),
    ("default", "random"),
    ("default", "paper"),
    ("default", "facility"),
    ("recommended", "default"),
    ("recommended", "topk"),
    ("paper", "topk"),
    ("topk", "random"),
)


def arms(records: pd.DataFrame, cell: dict) -> pd.DataFrame:
    """The verified models of one cell, the recommended arm added under its own name."""
    v = records[(records.kind == "verify") & (records.corpus == cell["corpus"]) & (records.regime == cell["regime"])]
    rec = cell["search"]["recommended"]["name"]
    return pd.concat([v, v[v.name == rec].assign(name="recommended")], ignore_index=True)


def wide(v: pd.DataFrame, target: str) -> pd.DataFrame:
    return v.pivot_table(index="seed", columns="name", values=f"loss.{target}", aggfunc="first").dropna()


def compare(v: pd.DataFrame, a: str, b: str, target: str) -> dict | None:
    """``a - b`` in loss on ``target``, paired by seed (negative: ``a`` is better)."""
    w = wide(v, target)
    if a not in w or b not in w:
        return None
    return paired_t(w[a].to_numpy(), w[b].to_numpy())


def outcome(d: dict | None) -> str:
    """'better' / 'worse' (the first arm's loss beyond noise below / above) or 'level'."""
    if d is None or not d.get("beyond"):
        return "level"
    return "better" if d["mean"] < 0 else "worse"


def verdicts(records: pd.DataFrame, cells: list) -> pd.DataFrame:
    """Per regime x target x pair: the cells where the first arm is better, level, worse."""
    rows = []
    for c in cells:
        v = arms(records, c)
        for t in TARGETS:
            for a, b in PAIRS:
                d = compare(v, a, b, t)
                rows.append({"regime": c["regime"], "target": t, "pair": f"{a} vs {b}", "corpus": c["corpus"],
                             "outcome": outcome(d), "mean": None if d is None else d["mean"],
                             "lo": None if d is None else d.get("lo"), "hi": None if d is None else d.get("hi")})  # fmt: skip
    return pd.DataFrame(rows)


def learned(records: pd.DataFrame) -> dict:
    """Every model's steps and unigram margins: the least of each, and how many models fall short."""
    margins = records[[f"unigram_margin.{t}" for t in TARGETS if f"unigram_margin.{t}" in records]]
    least = margins.min(axis=1)
    short = (records["steps"] < MIN_STEPS) | (least < MIN_MARGIN)
    where = records[short].groupby(["corpus", "regime", "name"], sort=True).size() if short.any() else {}
    return {
        "models": int(len(records)),
        "min_steps": int(records["steps"].min()),
        "min_margin": float(least.min()),
        "short": int(short.sum()),
        "short_where": [{"corpus": c, "regime": r, "arm": a, "models": int(n)} for (c, r, a), n in dict(where).items()],
    }


def _f(x, p=4):
    return "—" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{p}f}"


def _ci(d):
    if d is None or d.get("lo") is None:
        return "—"
    mark = " **beyond**" if d["beyond"] else ""
    return f"{d['mean']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}]{mark}"


def cell_lines(records: pd.DataFrame, c: dict) -> list:
    v = arms(records, c)
    s = c["search"]
    lines = [f"### {c['corpus']}, {c['regime']}", ""]
    lines.append(
        f"Budget {s['tokens']['budget']:,} tokens of {s['tokens']['corpus_tokens']:,}; regressor {s['regressor']} "
        f"(cross-validated Spearman {s['cv_spearman']:.2f} over {s['trials']} trials); recommended: "
        f"**{s['recommended']['name']}**. Load {c['load'][0]:.1f} -> {c['load'][1]:.1f}, {c['seconds'] / 60:.0f} min."
    )
    lines += ["", "| arm | loss eval | loss quality | − default, eval (95% CI) | − default, quality | steps | "
              "least unigram margin | selected tokens | passes |", "| --- |" + " --- |" * 8]  # fmt: skip
    order = ["chosen", "default", "topk", "random", *[n for n in v.name.unique() if n not in
             ("chosen", "default", "topk", "random", "recommended")], "recommended"]  # fmt: skip
    for n in [n for n in order if n in set(v.name)]:
        g = v[v.name == n]
        m = g[[f"unigram_margin.{t}" for t in TARGETS]].min(axis=1).min()
        cols = [f"{g[f'loss.{t}'].mean():.4f} ± {g[f'loss.{t}'].std(ddof=1):.4f}" for t in TARGETS]
        diff = [_ci(compare(v, n, "default", t)) if n != "default" else "" for t in TARGETS]
        lines.append(
            f"| {n} | {cols[0]} | {cols[1]} | {diff[0]} | {diff[1]} | {int(g.steps.min())} | {m:.2f} | "
            f"{int(g.selected_tokens.min()):,}-{int(g.selected_tokens.max()):,} | {g.passes.min():.2f}-{g.passes.max():.2f} |"
        )
    return lines + [""]


def verdict_lines(vd: pd.DataFrame) -> list:
    lines = ["| regime | target | comparison | better | level | worse | cells better / worse |",
             "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for (regime, target, pair), g in vd.groupby(["regime", "target", "pair"], sort=False):
        n = g.outcome.value_counts()
        where = ", ".join(f"{r.corpus} {'+' if r.outcome == 'better' else '−'}" for r in g.itertuples()
                          if r.outcome != "level")  # fmt: skip
        lines.append(f"| {regime} | {target} | {pair} | {n.get('better', 0)} | {n.get('level', 0)} | "
                     f"{n.get('worse', 0)} | {where or '—'} |")  # fmt: skip
    return lines


def markdown(data: dict, records: pd.DataFrame) -> str:
    cells = data["cells"]
    vd = verdicts(records, cells)
    ln = learned(records)
    s = data["settings"]
    out = [
        "# Recipe suite (`benchmarks/recipe_suite.py`)",
        "",
        "Rendered from `recipe_suite.json` and `recipe_suite_records.csv` by `benchmarks/recipe_suite_report.py`. "
        f"{len(cells)} cells (corpus x regime); each a `datamask search` with {s['trials']} trials and "
        f"{s['verify']} paired verification seeds, every model trained on {s['proxy_tokens']:,} tokens, every arm "
        "selecting the same tokens (counted with the corpus's BPE-4096, the tokenizer the proxies train in). Arms beside the search's chosen, default, "
        f"top-k and random: {', '.join(f'{k} (`{v}`)' for k, v in data['meta']['arms'].items())}. A difference is "
        "beyond noise when its paired 95% t-interval excludes zero. Machine: " + data["meta"]["machine"] + ".",
        "",
        f"**Did the proxies learn?** {ln['models']} models; fewest optimiser steps {ln['min_steps']}; least margin "
        f"over a unigram model of its own training tokens {ln['min_margin']:.2f} nats/token; models under "
        f"{MIN_STEPS} steps or {MIN_MARGIN} nats/token of margin: {ln['short']}.",
        "",
        "## Corpora",
        "",
        "| corpus | documents | proxy tokens | eval tokens | quality-target tokens | Spearman(heuristic quality, classifier) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, c in data["corpora"].items():
        out.append(f"| {name} | {c['docs']:,} | {c['tokens']:,} | {c['eval_tokens']:,} | {c['quality_tokens']:,} | "
                   f"{c['quality_vs_classifier_spearman']:.2f} |")  # fmt: skip
    out += ["", "## Verdicts: cells where the first arm's loss is lower / level / higher, beyond noise", ""]
    out += verdict_lines(vd)
    out += ["", "## Every cell", ""]
    for c in cells:
        out += cell_lines(records, c)
    return "\n".join(out) + "\n"


def verdict_summary(data: dict, records: pd.DataFrame) -> dict:
    """What the docs quote (``recipe_suite_verdicts.json``): the cells run and those not, the
    settings, the proxies' learning, and per regime x target x pair the cells better / level / worse."""
    from benchmarks.recipe_suite import REGIMES
    from benchmarks.suite_corpora import CORPORA

    cells = data["cells"]
    vd = verdicts(records, cells)
    ran = [(c["corpus"], c["regime"]) for c in cells]
    rows = []
    for (regime, target, pair), g in vd.groupby(["regime", "target", "pair"], sort=False):
        rows.append({"regime": regime, "target": target, "pair": pair, "cells": int(len(g)),
                     **{o: sorted(g.corpus[g.outcome == o]) for o in ("better", "level", "worse")},
                     "intervals": {r.corpus: [float(r.mean), float(r.lo), float(r.hi)]
                                   for r in g.itertuples() if r.outcome != "level"}})  # fmt: skip
    v = records[records.kind == "verify"]
    return {
        "ran": [f"{c}:{r}" for c, r in ran],
        "not_run": [f"{c}:{r}" for c in CORPORA for r in REGIMES if (c, r) not in ran],
        "trials": int(data["settings"]["trials"]),
        "seeds": int(v.groupby(["corpus", "regime", "name"]).seed.nunique().min()) if len(v) else 0,
        "proxy_tokens": int(data["settings"]["proxy_tokens"]),
        "learned": learned(records),
        "cost": [
            {
                "cell": f"{c['corpus']}:{c['regime']}",
                "minutes": float(c["seconds"]) / 60,
                "documents": int(data["corpora"][c["corpus"]]["docs"]),
                "models": int(((records.corpus == c["corpus"]) & (records.regime == c["regime"])).sum()),
                "passes": [
                    float(f(v[(v.corpus == c["corpus"]) & (v.regime == c["regime"])].passes)) for f in (np.min, np.max)
                ],
            }
            for c in cells
        ],  # fmt: skip
        "verdicts": rows,
        "level": LEVEL,
    }


def write(out: Path) -> None:
    data = json.loads((Path(out) / "recipe_suite.json").read_text())
    records = pd.read_csv(Path(out) / "recipe_suite_records.csv")
    (Path(out) / "recipe_suite.md").write_text(markdown(data, records))
    summary = verdict_summary(data, records)
    (Path(out) / "recipe_suite_verdicts.json").write_text(json.dumps(summary, indent=1) + "\n")
