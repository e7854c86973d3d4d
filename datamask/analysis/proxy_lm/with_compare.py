"""``compare --proxy-lm PRESET``: proxy-LM loss next to the objective metrics.

After ``compare`` has written its selections (and, with ``--holdout``, ``OUTPUT/holdout``),
:func:`add_proxy_lm` trains one proxy model per method into ``OUTPUT/proxy_lm`` (the same
run as ``datamask proxy-lm OUTPUT --eval OUTPUT/holdout OUTPUT/proxy_lm``), then adds
``proxy_loss`` and ``proxy_perplexity`` (held-out loss over all held-out documents) to
``compare.csv`` and redraws the Pareto plot with the loss in each label.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ...pipeline.holdout import HOLDOUT_DIR
from ...pipeline.io import write_json_atomic
from .config import ProxyLMConfig
from .runner import run_proxy_lm

__all__ = ["add_proxy_lm", "PROXY_DIR", "PROXY_COLUMNS"]

PROXY_DIR = "proxy_lm"
PROXY_COLUMNS = ("proxy_loss", "proxy_perplexity")


def add_proxy_lm(
    output, table, preset: str, seed: int = 0, text_column: str = "text", quiet: bool = False, **overrides
):
    """Run the proxy LM on every method of the compare output ``output``; returns the table
    with :data:`PROXY_COLUMNS` added (and rewrites ``compare.csv``, ``pareto.png``,
    ``compare.json``)."""
    from ..report.figures import pareto_plot

    out = Path(output)
    cfg = ProxyLMConfig(
        selections=[str(out)],
        eval=[str(out / HOLDOUT_DIR)],
        output=str(out / PROXY_DIR),
        preset=preset,
        seed=int(seed),
        text_column=text_column,
        quiet=quiet,
        no_report=True,
        **overrides,
    )
    manifest = run_proxy_lm(cfg)
    t = manifest["table"]
    overall = t[(t["domain"] == "all") & (t["selection"] != "untrained")].set_index("selection")
    table = table.copy()
    table["proxy_loss"] = [float(overall.loc[m, "loss"]) if m in overall.index else float("nan") for m in table.index]
    table["proxy_perplexity"] = [
        float(overall.loc[m, "perplexity"]) if m in overall.index else float("nan") for m in table.index
    ]
    tmp = out / f".compare.csv.tmp-{os.getpid()}"
    table.to_csv(tmp)
    os.replace(tmp, out / "compare.csv")
    pareto_plot(table, out / "pareto.png")
    meta = json.loads((out / "compare.json").read_text())
    meta["proxy_lm"] = {
        "output": PROXY_DIR,
        "preset": preset,
        "train_tokens": manifest["train_tokens"],
        "params": manifest["params"],
        "untrained_loss": float(t[(t["selection"] == "untrained") & (t["domain"] == "all")]["loss"].iloc[0]),
    }
    write_json_atomic(meta, out / "compare.json")
    return table
