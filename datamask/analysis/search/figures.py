"""The search's figures, written as PNGs beside its results (the HTML report embeds them).

``loss_by_parameter.png``  each trial's loss (mean over seeds) against each searched parameter,
                           the regressor's prediction along it (the others at the chosen recipe)
                           and the chosen value;
``verification.png``       the verified recipes' mean loss as bars, the seed-to-seed sd as error
                           bars, every seed as a dot;
``loss_tracks.png``        trial loss against the selection's mean quality, pairwise diversity,
                           coverage and near-duplicate share, with Spearman's rho in each title.
"""

from __future__ import annotations

import io

import numpy as np

from ..report.figures import DPI, pyplot, suptitle
from .space import Choice, Range, Weights

__all__ = ["FIGURES", "loss_by_parameter", "verification_bars", "loss_tracks", "save_png", "track", "track_words"]

FIGURES = ("loss_by_parameter", "verification", "loss_tracks")
TRACKS = {
    "quality": "mean quality",
    "diversity_pairwise": "pairwise diversity",
    "coverage": "coverage (mean best cosine)",
    "near_duplicate_share": "near-duplicate share",
}


def track(x, y):
    """Spearman's rho of ``x`` with ``y`` over the finite ``x``: a float, "constant" when ``x`` (or
    ``y``) takes one value there (no ranks to correlate), None with fewer than 3 values."""
    from scipy.stats import spearmanr

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return None
    if np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return "constant"
    return float(spearmanr(x[ok], y[ok]).statistic)


def track_words(rho) -> str:
    """How the report writes one :func:`track`: ``Spearman +0.47``, ``constant`` or ``too few trials``."""
    if rho is None:
        return "too few trials"
    return rho if isinstance(rho, str) else f"Spearman {rho:+.2f}"


def save_png(fig, path) -> None:
    from .prepare import write_bytes_atomic

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    pyplot().close(fig)
    write_bytes_atomic(buf.getvalue(), path)


def _panels(space, means):
    """(title, x of each trial, categories or None, curve key, chosen-value getter) per panel."""
    out = []
    for p in space.params:
        if not p.width:
            continue
        if isinstance(p, Choice):
            out.append((p.name, means[p.name].to_numpy(), p.options, p.name))
        elif isinstance(p, Range):
            x = means[p.columns].to_numpy(dtype=float).mean(axis=1)
            title = f"{p.name} (mean over domains)" if p.domains is not None else p.name
            out.append((title, x, None, p.name))
        elif isinstance(p, Weights):
            for c in p.components:
                cols = [k for k in p.columns if k.endswith(f".{c}")]
                out.append((f"weight of {c}", means[cols].to_numpy(dtype=float).mean(axis=1), None, None))
    return out


def _colour_by(space, means):
    """Trials coloured by the first searched choice (the curves hold it at the chosen option)."""
    ch = next((p for p in space.params if isinstance(p, Choice) and p.width), None)
    if ch is None:
        return None, None
    return means[ch.name].map({o: f"C{i + 3}" for i, o in enumerate(ch.options)}).to_numpy(), ch


def loss_by_parameter(space, means, curves: dict, chosen: dict):
    """``means``: one row per trial (parameter columns and ``loss``)."""
    plt = pyplot()
    panels = _panels(space, means)
    colours, ch = _colour_by(space, means)
    n = max(1, len(panels))
    cols = min(n, 3)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.4 * rows), squeeze=False)
    y = means["loss"].to_numpy(dtype=float)
    for ax, (title, x, cats, key) in zip(axes.ravel(), panels):
        if cats is not None:
            pos = {c: i for i, c in enumerate(cats)}
            jitter = np.random.default_rng(0).uniform(-0.12, 0.12, len(x))
            ax.scatter([pos[v] + j for v, j in zip(x, jitter)], y, s=16, alpha=0.7, label="trials")
            if key in curves:
                ax.plot(range(len(cats)), curves[key][1], "s-", color="C1", label="predicted")
            ax.set_xticks(range(len(cats)), cats)
            ax.axvline(pos[chosen[key]], color="C2", ls="--", label="chosen")
        else:
            ax.scatter(x, y, s=16, alpha=0.7, c=colours if colours is not None else "C0")
            if ch is not None:
                for i, o in enumerate(ch.options):
                    ax.scatter([], [], s=16, color=f"C{i + 3}", label=f"trials, {ch.name} {o}")
            else:
                ax.scatter([], [], s=16, color="C0", label="trials")
            if key in curves:
                ax.plot(curves[key][0], curves[key][1], color="C1", label="predicted")
                v = chosen[key]
                ax.axvline(np.mean(list(v.values())) if isinstance(v, dict) else v, color="C2", ls="--", label="chosen")
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("held-out loss (nats/token)")
    for ax in axes.ravel()[len(panels) :]:
        ax.axis("off")
    for ax in axes.ravel()[: len(panels)]:
        ax.legend(fontsize=7)
    suptitle(fig, "Proxy loss of every trial against each searched parameter; the curve is the regressor's prediction")
    fig.tight_layout()
    return fig


def verification_bars(frame, summary: dict):
    """``frame``: verification records (``name``, ``seed``, ``loss``, ``loss.SET``); ``summary``:
    :func:`~.verify.summarize`'s (its ``target`` set's losses are drawn)."""
    plt = pyplot()
    target = summary.get("target")
    col = f"loss.{target}" if target and f"loss.{target}" in frame else "loss"
    names = [n for n in ("chosen", "default", "topk", "random") if n in summary["recipes"]]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    means = [summary["recipes"][n]["mean"] for n in names]
    sds = [summary["recipes"][n]["sd"] or 0.0 for n in names]
    ax.bar(range(len(names)), means, yerr=sds, capsize=6, color=[f"C{i}" for i in range(len(names))], alpha=0.6)
    for i, n in enumerate(names):
        v = frame.loc[frame["name"] == n, col].to_numpy()
        ax.scatter(np.full(len(v), i), v, color="k", s=14, zorder=3)
    lo, hi = min(means) - 3 * max(sds + [1e-3]), max(means) + 3 * max(sds + [1e-3])
    ax.set_ylim(lo, hi)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel(f"held-out loss on {target} (nats/token)" if col != "loss" else "held-out loss (nats/token)")
    suptitle(fig, "Verification on fresh seeds: mean loss, seed-to-seed sd (error bars) and every seed (dots)")
    fig.tight_layout()
    return fig


def loss_tracks(means):
    """``means``: one row per trial with ``loss`` and the :data:`TRACKS` columns."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(TRACKS), figsize=(4.0 * len(TRACKS), 3.4), squeeze=False)
    y = means["loss"].to_numpy(dtype=float)
    for ax, (col, label) in zip(axes[0], TRACKS.items()):
        x = means[col].to_numpy(dtype=float)
        rho = track(x, y)
        ax.scatter(x, y, s=16, alpha=0.7)
        ax.set_xlabel(label)
        ax.set_title(track_words(rho), fontsize=10)
    axes[0][0].set_ylabel("held-out loss (nats/token)")
    suptitle(fig, "What the proxy loss follows: each trial's loss against what its selection holds")
    fig.tight_layout()
    return fig
