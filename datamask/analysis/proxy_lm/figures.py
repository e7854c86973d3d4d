"""The proxy-LM figures (matplotlib, Agg): loss curves and final held-out losses.

Both functions take the ``proxy.csv`` table / per-selection results and return a figure;
:func:`save_atomic` writes it under a temporary name and renames it when complete.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

__all__ = ["loss_curve_figure", "final_loss_figure", "save_atomic"]

_DPI = 110


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def loss_curve_figure(runs: dict, untrained: dict):
    """Training loss and held-out loss (loss-curve sample of each set) against trained tokens.

    ``runs``: selection -> result dict (``train_curve``, ``curve``); ``untrained``: eval set ->
    loss of the initial weights on the same sample (the curves' first point).
    """
    plt = _plt()
    sets = list(untrained)
    n = 1 + len(sets)
    cols = min(n, 3)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), dpi=_DPI, squeeze=False)
    axes = axes.ravel()
    cmap = plt.get_cmap("tab10")
    for i, (name, r) in enumerate(runs.items()):
        c = cmap(i % 10)
        tc = np.asarray(r["train_curve"], dtype=float).reshape(-1, 2)
        axes[0].plot(tc[:, 0], tc[:, 1], color=c, lw=1.2, label=name)
        for j, s in enumerate(sets):
            pts = [(0, untrained[s])] + [(p["tokens"], p["losses"][s]) for p in r["curve"] if s in p["losses"]]
            xs, ys = zip(*pts)
            axes[1 + j].plot(xs, ys, "o-", color=c, ms=3, lw=1.2, label=name)
    axes[0].set_title("training loss")
    for j, s in enumerate(sets):
        axes[1 + j].set_title(f"held-out loss: {s}")
    from matplotlib.ticker import EngFormatter

    for ax in axes[:n]:
        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.set_xlabel("training tokens")
        ax.set_ylabel("loss (nats/token)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper right")
    for ax in axes[n:]:
        ax.axis("off")
    fig.suptitle("Proxy-LM loss curves (same model, seed and tokens for every selection)", fontsize=10)
    fig.tight_layout()
    return fig


def final_loss_figure(table):
    """Final held-out loss per selection, one panel per evaluation set, grouped by domain.

    ``table``: the ``proxy.csv`` frame. The y axis starts near the smallest loss, not at 0,
    so that differences between selections are visible; values are written on the bars.
    """
    plt = _plt()
    base = table[table["selection"] == "untrained"]
    t = table[table["selection"] != "untrained"]
    sets = list(dict.fromkeys(t["eval_set"]))
    sels = list(dict.fromkeys(t["selection"]))
    fig, axes = plt.subplots(
        1, len(sets), figsize=(max(5.0, 1.2 + 0.5 * len(sels) * 4) * len(sets) ** 0.5 + 1, 4.2), dpi=_DPI, squeeze=False
    )
    cmap = plt.get_cmap("tab10")
    for ax, s in zip(axes.ravel(), sets):
        ts = t[t["eval_set"] == s]
        doms = list(dict.fromkeys(ts["domain"]))[:12]
        width = 0.8 / max(1, len(sels))
        for i, sel in enumerate(sels):
            vals = [ts[(ts["selection"] == sel) & (ts["domain"] == d)]["loss"] for d in doms]
            vals = [float(v.iloc[0]) if len(v) else np.nan for v in vals]
            xs = np.arange(len(doms)) + (i - (len(sels) - 1) / 2) * width
            bars = ax.bar(xs, vals, width=width, color=cmap(i % 10), label=sel)
            if len(doms) <= 3:
                for b, v in zip(bars, vals):
                    ax.annotate(
                        f"{v:.3f}",
                        (b.get_x() + b.get_width() / 2, v),
                        ha="center",
                        va="bottom",
                        fontsize=7,
                        rotation=90 if len(sels) > 4 else 0,
                    )
        u = base[(base["eval_set"] == s) & (base["domain"] == "all")]["loss"]
        lo, hi = np.nanmin(ts["loss"]), np.nanmax(ts["loss"])
        if len(u):
            ax.axhline(float(u.iloc[0]), color="0.3", ls="--", lw=1, label="untrained (all)")
            lo, hi = min(lo, float(u.iloc[0])), max(hi, float(u.iloc[0]))
        ax.set_ylim(max(0.0, lo - 0.15 * (hi - lo + 0.05)), hi + 0.25 * (hi - lo + 0.05))
        ax.set_xticks(
            np.arange(len(doms)),
            doms,
            rotation=30 if len(doms) > 3 else 0,
            ha="right" if len(doms) > 3 else "center",
            fontsize=8,
        )
        ax.set_ylabel("held-out loss (nats/token, lower is better)")
        ax.set_title(f"{s} (y axis does not start at 0)", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes.ravel()[0].legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def save_atomic(fig, path) -> None:
    """Save ``fig`` as PNG under a temporary name, rename it when complete, close it."""
    plt = _plt()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        fig.savefig(tmp, format="png")
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if tmp.exists():
            tmp.unlink()
