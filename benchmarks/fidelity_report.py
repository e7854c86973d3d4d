"""``fidelity.md`` from the checks (benchmarks/fidelity.py): what the small proxy's ranking is worth.

``fidelity.json`` is the check with the same model on 8x the tokens; ``fidelity_large.json``, where it
exists, the one with a larger model (``CHECKS``); ``fidelity_cost.json`` the larger model's measured
time beside the small one's.

:func:`verdict` words a cell's agreement from its numbers, thresholds beside it: the small
proxies' ranking *agrees* with the stronger proxy's when Spearman's rho's bootstrap interval
lies above ``AGREES`` and decision accuracy is at least ``ACCURATE``; *disagrees* when the
interval lies below zero; else it is *inconclusive*.
"""

from __future__ import annotations

import json
from pathlib import Path

AGREES, ACCURATE = 0.5, 0.8


def _model(options: str) -> str:
    return f"`{options}`" if options else "the small proxies' own model (`tiny`)"


def verdict(f: dict) -> str:
    lo, hi = f["spearman_ci"]
    if lo > AGREES and f["accuracy"] >= ACCURATE:
        return "agrees"
    if hi < 0:
        return "disagrees"
    return "inconclusive"


CHECKS = {"fidelity.json": "# Fidelity of the search's proxy (`benchmarks/fidelity.py`)",
          "fidelity_large.json": "## The check with a larger model"}  # fmt: skip


def markdown(data: dict, name: str = "fidelity.json") -> str:
    m = data["meta"]
    lines = [
        CHECKS[name],
        "",
        f"Rendered from `{name}` by `benchmarks/fidelity_report.py`. Each recipe-suite cell's verified arms "
        f"re-selected as the search selected them and trained once more with a stronger proxy: {m['tokens']:,} "
        f"training tokens ({m['tokens'] / m['small_tokens']:g}x the small proxies') and "
        f"{_model(m['proxy_options'])} "
        f"(seed {m['seed']}), on the same tokenizer and evaluation windows. The small proxies' ranking is the mean of "
        "the search's paired verification seeds. Bootstrap intervals (95%) resample the small proxies' seeds and "
        f"the arms. A cell *agrees* when rho's interval lies above {AGREES} and decision accuracy is at least "
        f"{ACCURATE}; *disagrees* when rho's interval lies below 0; else *inconclusive*. Machine: {m['machine']}, "
        f"load {m['load'][0]:.1f} -> {m['load'][1]:.1f}, {m['seconds'] / 60:.0f} min.",
        "",
        "| cell | target | arms | Spearman (95% CI) | decision accuracy (95% CI) | pairs beyond noise: accuracy | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in data["cells"]:
        for t, f in c["fidelity"].items():
            beyond = "—" if f["accuracy_beyond"] is None else f"{f['accuracy_beyond']:.2f} of {f['pairs_beyond']}"
            lines.append(
                f"| {c['corpus']} {c['regime']} | {t} | {f['arms']} | {f['spearman']:+.2f} "
                f"[{f['spearman_ci'][0]:+.2f}, {f['spearman_ci'][1]:+.2f}] | {f['accuracy']:.2f} "
                f"[{f['accuracy_ci'][0]:.2f}, {f['accuracy_ci'][1]:.2f}] | {beyond} | {verdict(f)} |"
            )
    lines += ["", "## The losses", ""]
    for c in data["cells"]:
        for t, f in c["fidelity"].items():
            arms = sorted(f["strong"], key=f["strong"].get)
            lines.append(f"**{c['corpus']} {c['regime']}, {t}** (strong order): " + ", ".join(
                f"{a} {f['strong'][a]:.4f} (small {f['small'][a]:.4f})" for a in arms))  # fmt: skip
            lines.append("")
        ms = c["strong_models"].values()
        lines.append(
            f"Strong models of {c['corpus']} {c['regime']}: {min(x['steps'] for x in ms):,} steps, "
            f"{min(x['seconds'] for x in ms) / 60:.0f}-{max(x['seconds'] for x in ms) / 60:.0f} min each; least unigram "
            f"margin {min(min(e['unigram_margin'] for e in x['evals'].values()) for x in ms):.2f} nats/token."
        )
        lines.append("")
    return "\n".join(lines) + "\n"


def cost_markdown(data: dict, cells: int, arms: int) -> str:
    """The larger model's measured cost (``fidelity_cost.json``) and, from its rate, the check's."""
    m = data["meta"]
    by = {}
    for x in data["models"]:
        by.setdefault(x["options"], []).append(x)
    lines = [
        "## What a larger stronger proxy would cost",
        "",
        f"Measured (`benchmarks/fidelity.py --cost`): on {m['cell']}'s arms {', '.join(x['arm'] for x in by[''])}, "
        f"each model trained {m['tokens']:,} tokens, {m['jobs']} at a time, once with the search's model and once "
        f"with `{m['proxy_options']}`. Machine: {m['machine']}, load {m['load'][0]:.1f} -> {m['load'][1]:.1f}.",
        "",
        "| model | parameters | steps | seconds a model (measured) | minutes a model at "
        f"{m['check_tokens']:,} tokens (estimated, linear in tokens) |",
        "| --- | --- | --- | --- | --- |",
    ]
    per = {}
    for opts, xs in by.items():
        sec = sum(x["seconds"] for x in xs) / len(xs)
        per[opts] = sec / m["tokens"] * m["check_tokens"] / 60
        lines.append(f"| {_model(opts)} | {xs[0]['params']:,} | {xs[0]['steps']:,} | {sec:.0f} | {per[opts]:.0f} |")
    big = per[m["proxy_options"]]
    hours = big * cells * arms / m["jobs"] / 60
    lines += [
        "",
        f"The larger model is {per[m['proxy_options']] / per['']:.1f}x the search's model's time per token here. "
        f"The check above ({cells} cells x {arms} arms, {m['jobs']} models at a time) with it at "
        f"{m['check_tokens']:,} tokens: about **{hours:.1f} hours** of both cores (estimated from the measured "
        "rate).",
        "",
    ]
    return "\n".join(lines)


def render(out: Path) -> None:
    data = json.loads((Path(out) / "fidelity.json").read_text())
    text = markdown(data)
    cost = Path(out) / "fidelity_cost.json"
    if cost.exists():
        arms = max(c["fidelity"]["eval"]["arms"] for c in data["cells"])
        text += "\n" + cost_markdown(json.loads(cost.read_text()), len(data["cells"]), arms)
    for name in list(CHECKS)[1:]:
        if (Path(out) / name).exists():
            text += "\n" + markdown(json.loads((Path(out) / name).read_text()), name)
    (Path(out) / "fidelity.md").write_text(text)
