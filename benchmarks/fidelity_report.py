"""``fidelity.md`` from ``fidelity.json`` (benchmarks/fidelity.py): what the small proxy's ranking is worth.

:func:`verdict` words a cell's agreement from its numbers, thresholds beside it: the small
proxies' ranking *agrees* with the stronger proxy's when Spearman's rho's bootstrap interval
lies above ``AGREES`` and decision accuracy is at least ``ACCURATE``; *disagrees* when the
interval lies below zero; else it is *inconclusive*.
"""

from __future__ import annotations

import json
from pathlib import Path

AGREES, ACCURATE = 0.5, 0.8


def verdict(f: dict) -> str:
    lo, hi = f["spearman_ci"]
    if lo > AGREES and f["accuracy"] >= ACCURATE:
        return "agrees"
    if hi < 0:
        return "disagrees"
    return "inconclusive"


def markdown(data: dict) -> str:
    m = data["meta"]
    lines = [
        "# Fidelity of the search's proxy (`benchmarks/fidelity.py`)",
        "",
        f"Rendered from `fidelity.json` by `benchmarks/fidelity_report.py`. Each recipe-suite cell's verified arms "
        f"re-selected as the search selected them and trained once more with a stronger proxy: {m['tokens']:,} "
        f"training tokens ({m['tokens'] / m['small_tokens']:g}x the small proxies') and `{m['proxy_options']}` "
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


def render(out: Path) -> None:
    data = json.loads((Path(out) / "fidelity.json").read_text())
    (Path(out) / "fidelity.md").write_text(markdown(data))
