"""The report's figures (matplotlib, Agg backend), one function each.

``trajectory``   how the selection was made: the start solver's progress (Frank-Wolfe's
                 iterations, stochastic greedy's picks), then objective, quality and
                 diversity over policy-gradient steps, with a caption in words
``cluster_heatmap``  clusters binned by mean quality x within-cluster diversity: share
                 of the corpus and of each selection in every cell
``token_lengths`` document length distribution, corpus vs selection(s)
``clusters``     share of rows per cluster (or domain), corpus vs selection(s)
``projection``   2-D projection (UMAP when installed, else PCA) of a sample,
                 selected documents highlighted, one panel per method
``pareto``       quality vs diversity per method (comparisons)

A figure whose data is absent (no token counts, no clusters, no history) is left out and
the page says why.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .data import ReportData
from .placement import annotate_apart

__all__ = ["FIGURES", "make_figures", "pareto_front", "pareto_plot", "project_2d", "trajectory_caption"]

FIGURES = ("trajectory", "pareto", "cluster_heatmap", "token_lengths", "clusters", "projection")
_CORPUS_COLOR = "0.55"
DPI = 110


# ---------------------------------------------------------------------- loading


# ---------------------------------------------------------------------- figures
def suptitle(fig, text: str):
    """A figure title wrapped to the figure's width: a one-panel figure is narrower than a
    sentence, and matplotlib clips a title wider than its figure."""
    import textwrap

    size = 12.0  # points, matplotlib's "large" for suptitle
    chars = max(20, int(fig.get_figwidth() * 72 / (0.6 * size)))
    return fig.suptitle(textwrap.fill(text, chars), fontsize=size)


def pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg",) and not _interactive():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _interactive():
    import sys

    return "ipykernel" in sys.modules


def _colors(methods):
    plt = pyplot()
    cmap = plt.get_cmap("tab10")
    return {m: cmap(i % 10) for i, m in enumerate(methods)}


def _phases(h: pd.DataFrame) -> pd.DataFrame:
    """The history with ``phase`` and ``start`` (an output of 0.2 has neither: all pg)."""
    h = h.copy()
    if "phase" not in h:
        h["phase"] = "pg"
    h["phase"] = h["phase"].fillna("pg")
    if "start" not in h:
        h["start"] = None
    return h


def trajectory_caption(h: pd.DataFrame) -> str:
    """In words, per method: the solver that made the start, what it reached and in how many
    iterations, and whether policy gradient's steps improved it (e.g. "Frank–Wolfe reached
    0.3747 in 100 iterations; 20 pg steps did not improve it")."""
    from ...core.provenance import START_NAMES

    h = _phases(h)
    parts = []
    for m, g in h.groupby("method", sort=False):
        splits = list(dict.fromkeys(g["split"]))
        n = len(splits)
        starts = [s for s in dict.fromkeys(g["start"]) if isinstance(s, str)]
        who = " / ".join(START_NAMES.get(s, s) for s in starts) or "the start"
        st, pg = g[g["phase"] == "start"], g[g["phase"] == "pg"]
        over = f" (mean of {n} splits)" if n > 1 else ""
        if len(st):
            ends = st.sort_values("step").groupby("split")
            reached = float(ends["objective"].last().mean())
            iters = int(ends["step"].max().max())
            unit = "picks" if "stochastic_greedy" in starts or "greedy" in starts else "iterations"
            text = f"{m}: {who} reached {reached:.4f}{over} in {'at most ' if n > 1 else ''}{iters} {unit}"
        elif len(pg):
            first = pg.sort_values("step").groupby("split")["objective"].first()
            text = f"{m}: {who} scored {float(first.mean()):.4f}{over} at step 0"
        else:
            continue
        if len(pg):
            by = pg.sort_values("step").groupby("split")
            steps = int(by["step"].max().max())
            gain = by["objective"].max() - by["objective"].first()
            better = int((gain > 1e-5 * by["objective"].first().abs()).sum())
            if steps == 0:
                text += "; no pg step was run"
            elif better == 0:
                text += (
                    f"; {steps:,} pg steps did not improve it"
                    if n == 1
                    else f"; up to {steps:,} pg steps did not improve it on any of the {n} splits"
                )
            else:
                best = float(by["objective"].max().mean())
                text += f"; {'up to ' if n > 1 else ''}{steps:,} pg steps raised it to {best:.4f}" + (
                    f" on {better} of {n} splits" if n > 1 else ""
                )
        elif starts and starts[0] not in ("greedy",):
            text += "; policy gradient did not run"
        parts.append(text)
    return ". ".join(parts) + "." if parts else ""


def fig_trajectory(data: ReportData):
    h = data.history
    if h is None or not len(h):
        return None, "no optimisation history (methods without steps, or an output without history)"
    h = _phases(h)
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.2), dpi=DPI)
    colors = _colors(list(dict.fromkeys(h["method"])))
    panels = (
        ("start", "objective", "start solver: iteration (Frank–Wolfe) or picks (greedy)", "1. the start"),
        ("pg", "objective", "policy-gradient step", "2. policy gradient: objective"),
        ("pg", "quality", "policy-gradient step", "quality (mean normalised, 0–1)"),
        ("pg", "diversity", "policy-gradient step", "diversity"),
    )
    for ax, (phase, key, xlabel, title) in zip(axes, panels):
        part = h[h["phase"] == phase]
        for (m, _split), g in part.groupby(["method", "split"], sort=False):
            g = g.sort_values("step").dropna(subset=[key])
            if not len(g):
                continue
            first = not any(line.get_label() == m for line in ax.get_lines())
            ax.plot(g["step"], g[key], "-o", ms=2.5, lw=1.2, alpha=0.8, color=colors[m], label=m if first else None)
        if not ax.get_lines():
            ax.text(0.5, 0.5, "no step in this phase", ha="center", va="center", transform=ax.transAxes, color="0.4")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("objective f = λ·quality + (1−λ)·diversity" if key == "objective" else key)
        ax.set_title(title)
        ax.grid(alpha=0.3)
    if axes[0].get_lines() or axes[1].get_lines():
        (axes[0] if axes[0].get_lines() else axes[1]).legend(
            fontsize=8, title="method (a line per split)", title_fontsize=8
        )
    caption = trajectory_caption(h)
    suptitle(fig, "How the selection was made (exact objective of the current selection). " + caption)
    fig.tight_layout()
    fig.caption = caption  # the page's caption (datamask.analysis.report.html)
    return fig, None


def fig_pareto(data: ReportData):
    t = data.table
    if t is not None and {"quality", "pairwise"} <= set(t.columns):
        t = t.dropna(subset=["quality", "pairwise"])  # select's whole-split row has no raw quality
    if t is None or not {"quality", "pairwise"} <= set(t.columns) or len(t) < 2:
        return None, "no side-by-side numbers (an output written before they were; run select or compare again)"
    return pareto_plot(t), None


#: why the cluster figures are not drawn, beside a corpus map that does group its sample
NO_CLUSTERS = (
    "the input has no cluster column: run datamask cluster first, or compare with SemDeDup/QuaDMix; "
    "the corpus map and the kept-and-dropped table group a sample by a k-means of their own"
)


def fig_cluster_heatmap(data: ReportData, bins=6):
    cs = data.cluster_stats
    if cs is None or "cluster" not in data.corpus or not (cs["size"] > 1).sum() > 1:
        return None, NO_CLUSTERS
    plt = pyplot()
    cs = cs[cs["size"] > 1].set_index("cluster")
    qe = np.linspace(cs["mean_quality"].min(), cs["mean_quality"].max() + 1e-9, bins + 1)
    de = np.linspace(cs["pairwise_diversity"].min(), cs["pairwise_diversity"].max() + 1e-9, bins + 1)
    qi = np.clip(np.digitize(cs["mean_quality"], qe) - 1, 0, bins - 1)
    di = np.clip(np.digitize(cs["pairwise_diversity"], de) - 1, 0, bins - 1)
    cell = pd.Series(di * bins + qi, index=cs.index)
    panels = [("corpus", data.corpus)] + [
        (m, data.selections[data.selections["method"] == m]) for m in data.methods[:5]
    ]
    n = len(panels)
    ncol = min(3, n)
    nrow = int(np.ceil(n / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.9 * nrow), dpi=DPI, squeeze=False)
    vmax = 0
    grids = []
    for _name, df in panels:
        lab = df["cluster"][df["cluster"].isin(cell.index)]
        share = np.bincount(cell.loc[lab].to_numpy(), minlength=bins * bins) / max(len(df), 1)
        grids.append(share.reshape(bins, bins))
        vmax = max(vmax, share.max())
    for ax, (name, _), g in zip(axes.flat, panels, grids):
        im = ax.imshow(
            g * 100,
            origin="lower",
            cmap="viridis",
            vmin=0,
            vmax=vmax * 100,
            aspect="auto",
            extent=(qe[0], qe[-1], de[0], de[-1]),
        )
        ax.set_title(name if name == "corpus" else f"selection: {name}")
        ax.set_xlabel("cluster mean quality")
        ax.set_ylabel("within-cluster diversity\n(−mean cosine)")
        fig.colorbar(im, ax=ax, label="% of documents")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    suptitle(fig, "Where documents come from: clusters binned by quality × diversity")
    fig.tight_layout()
    return fig, None


def fig_token_lengths(data: ReportData):
    c = data.corpus
    if "n_tokens" not in c or c["n_tokens"].isna().all():
        return None, "no n_tokens column"
    plt = pyplot()
    tok = c["n_tokens"].dropna().to_numpy(float)
    tok = tok[tok > 0]
    edges = np.geomspace(max(tok.min(), 1), tok.max() * 1.0001, 40)
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=DPI)
    ax.hist(
        tok,
        bins=edges,
        weights=np.full(len(tok), 100 / len(tok)),
        color=_CORPUS_COLOR,
        alpha=0.45,
        label=f"corpus (median {np.median(tok):.0f})",
    )
    colors = _colors(data.methods)
    for m in data.methods:
        t = data.selections.loc[data.selections["method"] == m, "n_tokens"].dropna().to_numpy(float)
        if len(t):
            ax.hist(
                t,
                bins=edges,
                weights=np.full(len(t), 100 / len(t)),
                histtype="step",
                lw=1.8,
                color=colors[m],
                label=f"{m} (median {np.median(t):.0f})",
            )
    ax.set_xscale("log")
    ax.set_xlabel("document length (tokens, log scale)")
    ax.set_ylabel("% of documents")
    ax.set_title("Token-length distribution: corpus vs selection")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig, None


def fig_clusters(data: ReportData, top=50):
    c = data.corpus
    if "cluster" not in c or (c["cluster"] < 0).all():
        return None, NO_CLUSTERS
    plt = pyplot()
    share = c["cluster"].value_counts(normalize=True) * 100
    order = share.index[:top]
    x = np.arange(len(order))
    fig, ax = plt.subplots(figsize=(max(7.5, 0.22 * len(order) + 3), 4.5), dpi=DPI)
    ax.bar(x, share.loc[order].to_numpy(), color=_CORPUS_COLOR, alpha=0.5, label="corpus")
    colors = _colors(data.methods)
    for m in data.methods:
        s = data.selections.loc[data.selections["method"] == m, "cluster"].value_counts(normalize=True) * 100
        ax.plot(x, s.reindex(order).fillna(0).to_numpy(), "-o", ms=3, lw=1.3, color=colors[m], label=m)
    ax.set_xticks(x)
    ax.set_xticklabels([str(i) for i in order], rotation=90, fontsize=7)
    ax.set_xlabel("cluster / domain (sorted by corpus share" + (f", largest {top}" if len(share) > top else "") + ")")
    ax.set_ylabel("% of documents")
    ax.set_title("Cluster distribution: corpus vs selection")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig, None


def project_2d(X, method="auto", seed=0):
    """(n, 2) coordinates and the method's name: ``auto`` is the corpus map's rule (UMAP when
    umap-learn is installed and the sample holds ``corpus_map.UMAP_FROM`` rows or more, else
    PCA by numpy SVD); ``umap``, ``tsne`` (scikit-learn) or ``pca`` ask."""
    from .corpus_map import _resolve

    X = np.asarray(X, dtype=np.float32)
    method = _resolve(method, len(X)) if method == "auto" else method
    if method == "umap":
        try:
            import umap

            return umap.UMAP(n_components=2, random_state=seed).fit_transform(X), "UMAP"
        except ImportError:
            pass
    if method == "tsne":
        from sklearn.manifold import TSNE

        return TSNE(2, random_state=seed, init="pca").fit_transform(X), "t-SNE"
    Xc = X - X.mean(axis=0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    return Xc @ Vt[:2].T, "PCA"


def fig_projection(data: ReportData, method="auto"):
    if data.sample is None or data.sample_embedding is None or not len(data.sample):
        return None, "no embedding sample"
    plt = pyplot()
    Y, name = project_2d(data.sample_embedding, method)
    cols = [c for c in data.sample.columns if c.startswith("selected_")][:6]
    n = max(1, len(cols))
    ncol = min(3, n)
    nrow = int(np.ceil(n / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 4.3 * nrow), dpi=DPI, squeeze=False)
    colors = _colors([c[len("selected_") :] for c in cols])
    for ax, c in zip(axes.flat, cols):
        m = c[len("selected_") :]
        sel = data.sample[c].to_numpy(bool)
        ax.scatter(Y[~sel, 0], Y[~sel, 1], s=4, color=_CORPUS_COLOR, alpha=0.35, label="not selected", rasterized=True)
        ax.scatter(
            Y[sel, 0],
            Y[sel, 1],
            s=10,
            color=colors[m],
            edgecolor="black",
            linewidth=0.3,
            label=f"selected ({sel.sum()} of {len(sel)})",
        )
        ax.set_title(m)
        ax.set_xlabel(f"{name} 1")
        ax.set_ylabel(f"{name} 2")
        ax.legend(fontsize=7, loc="best", markerscale=1.5)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    suptitle(fig, f"2-D {name} projection of a sample of the corpus; selected documents highlighted")
    fig.tight_layout()
    return fig, None


_MAKERS = {
    "trajectory": fig_trajectory,
    "pareto": fig_pareto,
    "cluster_heatmap": fig_cluster_heatmap,
    "token_lengths": fig_token_lengths,
    "clusters": fig_clusters,
    "projection": fig_projection,
}


def make_figures(data: ReportData, figures=FIGURES) -> tuple[dict, dict]:
    """``({name: Figure}, {name: why it is missing})``."""
    figs, missing = {}, {}
    for name in figures:
        fig, why = _MAKERS[name](data)
        if fig is None:
            missing[name] = why
        else:
            figs[name] = fig
    return figs, missing


# ---------------------------------------------------------------------- HTML


def pareto_front(table: pd.DataFrame, x="quality", y="pairwise") -> list:
    """Methods no other method beats on both ``x`` and ``y`` (higher is better)."""
    front = []
    for m, r in table.iterrows():
        dominated = ((table[x] >= r[x]) & (table[y] >= r[y]) & ((table[x] > r[x]) | (table[y] > r[y]))).any()
        if not dominated:
            front.append(m)
    return front


def pareto_plot(table: pd.DataFrame, path=None, x="quality", y="pairwise", ax=None):
    """Quality vs diversity, one labelled point per method, the Pareto front joined."""
    plt = pyplot()  # Agg, except in a notebook's kernel (its inline figures stay inline)

    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=110)
    front = table.loc[pareto_front(table, x, y)].sort_values(x)
    ax.plot(front[x], front[y], "-", color="0.6", lw=1.2, zorder=1, label="Pareto front")
    cmap = plt.get_cmap("tab10")
    names = []
    for i, (m, r) in enumerate(table.iterrows()):
        ax.scatter(r[x], r[y], s=70, color=cmap(i % 10), edgecolor="black", zorder=2, label=m)
        loss = r.get("proxy_loss", float("nan"))
        names.append(m if loss != loss else f"{m}\nproxy loss {loss:.3f}")  # NaN: no proxy-LM run
    ax.set_xlabel("mean quality, raw score (higher is better)")
    ax.set_ylabel("pairwise diversity (−mean cosine, higher is better)")
    ax.set_title(
        "Quality vs diversity at the same budget"
        + ("\n(labels: proxy-LM held-out loss, nats/token, lower is better)" if "proxy_loss" in table else "")
    )
    # room for the labels beside the points (two lines with a proxy-LM loss)
    ax.margins(x=0.2, y=0.2) if "proxy_loss" in table else ax.margins(x=0.15, y=0.1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    if own:
        fig.tight_layout()
    annotate_apart(ax, table[x].to_numpy(), table[y].to_numpy(), names)  # after the layout: boxes measured on it
    if own:
        if path is not None:
            fig.savefig(path)
            plt.close(fig)
        return fig
    return ax
