"""Figures and a self-contained HTML report of a selection or a comparison.

``build_report(OUTPUT_DIR)`` reads what ``datamask compare`` (``compare.json`` and its
files) or ``datamask select`` (``manifest.json``, ``data/`` and the input it names) left
in a directory and writes ``OUTPUT_DIR/report/``: one PNG per figure and ``index.html``,
which embeds every PNG (base64, so the page is one file that can be mailed) and links the
PNG files next to it.

Figures (matplotlib, Agg backend):

``trajectory.png``   objective, quality and diversity of DATAMASK over policy-gradient steps
``cluster_heatmap.png``  clusters binned by mean quality x within-cluster diversity: share
                     of the corpus and of each selection in every cell
``token_lengths.png`` document length distribution, corpus vs selection(s)
``clusters.png``     share of rows per cluster (or domain), corpus vs selection(s)
``projection.png``   2-D projection (UMAP when installed, else PCA) of a sample,
                     selected documents highlighted, one panel per method
``pareto.png``       quality vs diversity per method (comparisons)

A figure whose data is absent (no token counts, no clusters, no history) is left out and
the page says why. The comparison table is an HTML table.

:class:`ReportData` holds the inputs; build one yourself (e.g. in Jupyter) and call
:func:`make_figures` / :func:`write_report`.
"""
from __future__ import annotations

import base64
import html
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["ReportData", "load_compare", "load_select", "load", "make_figures", "write_report", "build_report",
           "FIGURES"]

FIGURES = ("trajectory", "pareto", "cluster_heatmap", "token_lengths", "clusters", "projection")
_CORPUS_COLOR = "0.55"
_DPI = 110


@dataclass
class ReportData:
    """Everything the report draws.

    corpus : DataFrame with ``quality`` and, when known, ``n_tokens`` and ``cluster``
        (one row per corpus document, or a large sample)
    selections : DataFrame with ``method`` and the same columns, one row per selected doc
    history : DataFrame ``method, partition, step, objective, quality, diversity`` or None
    table : DataFrame indexed by method (comparison metrics) or None
    cluster_stats : DataFrame from :func:`datamask.clustering.cluster_stats` or None
    sample : DataFrame with ``selected_<method>`` bool columns, rows of ``sample_embedding``
    sample_embedding : (n, d) array or None
    title, notes : page title and a dict of facts shown under it
    """

    corpus: pd.DataFrame
    selections: pd.DataFrame
    history: pd.DataFrame | None = None
    table: pd.DataFrame | None = None
    cluster_stats: pd.DataFrame | None = None
    sample: pd.DataFrame | None = None
    sample_embedding: np.ndarray | None = None
    title: str = "datamask report"
    notes: dict = field(default_factory=dict)

    @property
    def methods(self):
        return list(dict.fromkeys(self.selections["method"])) if len(self.selections) else []


# ---------------------------------------------------------------------- loading
def load_compare(directory) -> ReportData:
    """The files ``datamask compare`` wrote."""
    d = Path(directory)
    meta = json.loads((d / "compare.json").read_text())
    opt = lambda name: pd.read_parquet(d / name) if (d / name).exists() else None  # noqa: E731
    emb = np.load(d / "sample_embedding.npy") if (d / "sample_embedding.npy").exists() else None
    table = pd.read_csv(d / "compare.csv", index_col="method")
    return ReportData(
        corpus=pd.read_parquet(d / "corpus_stats.parquet"), selections=pd.read_parquet(d / "selections.parquet"),
        history=opt("history.parquet"), table=table, cluster_stats=opt("cluster_stats.parquet"),
        sample=opt("sample.parquet"), sample_embedding=emb, title="datamask compare",
        notes={"input": meta["input"], "rows": f"{meta['rows']:,}", "partitions": meta["partitions"],
               "methods": ", ".join(meta["methods"]), "clusters": meta.get("clusters_from"),
               "budget rule": f"ratio {meta['config']['ratio']}" if meta["config"].get("budget") is None
               else f"budget {meta['config']['budget']} per partition",
               "lambda": meta["config"]["lam"], "diversity": meta["config"]["diversity"],
               "wall time": f"{meta['wall_seconds']:.1f} s"},
    )


def _read_columns(path, columns):
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(path), format="parquet")
    have = [c for c in columns if c in dataset.schema.names]
    # without pandas metadata: the pipeline writes ArrowDtype names that plain to_pandas() rejects
    return dataset.to_table(columns=have).replace_schema_metadata(None).to_pandas() if have else pd.DataFrame()


def load_select(directory, sample_rows=2000) -> ReportData:
    """A ``datamask select`` output: the manifest, the selected rows and the input."""
    from .io import discover, read_split, Split
    from .schema import Columns, embedding_matrix

    d = Path(directory)
    man = json.loads((d / "manifest.json").read_text())
    cfg = man["config"]
    cols = Columns(cfg["id_column"], cfg["embedding_column"], cfg["quality_column"])
    want = [cols.id, cols.quality, "n_tokens", "cluster"]
    files = [f for f in discover(cfg["input"]) if f.fmt == "parquet"]
    corpus = pd.concat([_read_columns(f.path, want) for f in files], ignore_index=True) if files else pd.DataFrame()
    sel = _read_columns(d / "data", want)
    if cfg.get("keep_all") and "selected" in _read_columns(d / "data", ["selected"]).columns:
        sel = sel[_read_columns(d / "data", ["selected"])["selected"].to_numpy()]
    method = cfg.get("method", "datamask")
    sel = sel.assign(method=method)
    corpus, sel = (df.rename(columns={cols.quality: "quality"}) for df in (corpus, sel))
    hist = []
    for p in man["partitions"]:
        for h in p.get("history") or []:
            hist.append(dict(h, method=method, partition=p["name"]))
    history = pd.DataFrame(hist) if hist else None
    table = None
    parts = [p for p in man["partitions"] if p.get("after")]
    if parts:
        w = np.array([p["rows_in"] for p in parts], float)
        rows = {}
        for key, label in (("before", "whole partition"), ("after", f"selection ({method})")):
            recs = [p[key] for p in parts if p.get(key)]
            if len(recs) == len(parts):
                rows[label] = {m: float(np.average([r[m] for r in recs], weights=w))
                               for m in ("objective", "quality", "diversity")}
        table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("method") if rows else None
    # sample for the projection: the first rows of each file, spread over the files
    sample = emb = None
    if files and sample_rows:
        per = max(1, sample_rows // len(files))
        chosen = set(sel[cols.id].tolist()) if cols.id in sel else set()
        frames, mats = [], []
        import pyarrow.parquet as pq

        for f in files:
            n = min(per, pq.ParquetFile(f.path).metadata.num_rows)
            if n == 0:
                continue
            t = read_split(Split(f.path, f.rel, f.fmt, 0, n), cols)
            mats.append(embedding_matrix(t.column(cols.embedding), f.rel, cols.embedding).astype(np.float32))
            ids = t.column(cols.id).to_pylist()
            frames.append(pd.DataFrame({"id": ids, f"selected_{method}": [i in chosen for i in ids]}))
        if frames:
            sample, emb = pd.concat(frames, ignore_index=True), np.concatenate(mats)
    t = man["totals"]
    return ReportData(corpus=corpus, selections=sel, history=history, table=table, sample=sample,
                      sample_embedding=emb, cluster_stats=_select_cluster_stats(corpus, files, cols),
                      title="datamask select",
                      notes={"input": cfg["input"], "rows in": f"{t['rows_in']:,}", "rows out": f"{t['rows_out']:,}",
                             "partitions": t["partitions"], "method": method, "lambda": cfg["lam"],
                             "diversity": cfg["diversity"], "wall time": f"{man['wall_seconds']:.1f} s"})


def _select_cluster_stats(corpus, files, cols):
    if "cluster" not in corpus.columns or not len(corpus):
        return None
    from .clustering import combine_stats, partial_stats, stats_frame
    from .schema import embedding_matrix
    import pyarrow.parquet as pq

    k = int(corpus["cluster"].max()) + 1
    sums = []
    for f in files:  # one file at a time: memory stays at one file's embeddings
        t = pq.read_table(f.path, columns=[c for c in ("cluster", cols.quality, "n_tokens", cols.embedding)
                                           if c in pq.ParquetFile(f.path).schema_arrow.names])
        E = embedding_matrix(t.column(cols.embedding), f.rel, cols.embedding)
        tok = t.column("n_tokens").to_numpy() if "n_tokens" in t.schema.names else None
        sums.append(partial_stats(t.column("cluster").to_numpy(), t.column(cols.quality).to_numpy(), E, tok, k))
    return stats_frame(combine_stats(sums))


def load(directory, **kw) -> ReportData:
    d = Path(directory)
    if (d / "compare.json").exists():
        return load_compare(d)
    if (d / "manifest.json").exists():
        return load_select(d, **kw)
    raise FileNotFoundError(f"{d} holds neither compare.json (datamask compare) nor manifest.json (datamask select)")


# ---------------------------------------------------------------------- figures
def _plt():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg",) and not _interactive():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _interactive():
    import sys

    return "ipykernel" in sys.modules


def _colors(methods):
    plt = _plt()
    cmap = plt.get_cmap("tab10")
    return {m: cmap(i % 10) for i, m in enumerate(methods)}


def fig_trajectory(data: ReportData):
    h = data.history
    if h is None or not len(h):
        return None, "no optimisation history (methods without steps, or an output without history)"
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), dpi=_DPI)
    colors = _colors(list(dict.fromkeys(h["method"])))
    labels = {"objective": "objective f = λ·quality + (1−λ)·diversity", "quality": "mean normalised quality (0–1)",
              "diversity": "diversity"}
    for ax, key in zip(axes, ("objective", "quality", "diversity")):
        for (m, p), g in h.groupby(["method", "partition"], sort=False):
            g = g.sort_values("step")
            first = not any(line.get_label() == m for line in ax.get_lines())
            ax.plot(g["step"], g[key], "-o", ms=2.5, lw=1.2, alpha=0.8, color=colors[m], label=m if first else None)
        ax.set_xlabel("policy-gradient step")
        ax.set_ylabel(labels[key])
        ax.set_title(key)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, title="method (one line per partition)", title_fontsize=8)
    fig.suptitle("Optimisation trajectory (top-S mask of the current logits, exact objective)")
    fig.tight_layout()
    return fig, None


def fig_pareto(data: ReportData):
    t = data.table
    if t is None or not {"quality", "pairwise"} <= set(t.columns) or len(t) < 2:
        return None, "no comparison table (run datamask compare)"
    from .compare import pareto_plot

    return pareto_plot(t), None


def fig_cluster_heatmap(data: ReportData, bins=6):
    cs = data.cluster_stats
    if cs is None or "cluster" not in data.corpus or not (cs["size"] > 1).sum() > 1:
        return None, "no clusters (run datamask cluster first, or compare with SemDeDup/QuaDMix)"
    plt = _plt()
    cs = cs[cs["size"] > 1].set_index("cluster")
    qe = np.linspace(cs["mean_quality"].min(), cs["mean_quality"].max() + 1e-9, bins + 1)
    de = np.linspace(cs["pairwise_diversity"].min(), cs["pairwise_diversity"].max() + 1e-9, bins + 1)
    qi = np.clip(np.digitize(cs["mean_quality"], qe) - 1, 0, bins - 1)
    di = np.clip(np.digitize(cs["pairwise_diversity"], de) - 1, 0, bins - 1)
    cell = pd.Series(di * bins + qi, index=cs.index)
    panels = [("corpus", data.corpus)] + [(m, data.selections[data.selections["method"] == m])
                                         for m in data.methods[:5]]
    n = len(panels)
    ncol = min(3, n)
    nrow = int(np.ceil(n / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.9 * nrow), dpi=_DPI, squeeze=False)
    vmax = 0
    grids = []
    for name, df in panels:
        lab = df["cluster"][df["cluster"].isin(cell.index)]
        share = np.bincount(cell.loc[lab].to_numpy(), minlength=bins * bins) / max(len(df), 1)
        grids.append(share.reshape(bins, bins))
        vmax = max(vmax, share.max())
    for ax, (name, _), g in zip(axes.flat, panels, grids):
        im = ax.imshow(g * 100, origin="lower", cmap="viridis", vmin=0, vmax=vmax * 100, aspect="auto",
                       extent=(qe[0], qe[-1], de[0], de[-1]))
        ax.set_title(name if name == "corpus" else f"selection: {name}")
        ax.set_xlabel("cluster mean quality")
        ax.set_ylabel("within-cluster diversity\n(−mean cosine)")
        fig.colorbar(im, ax=ax, label="% of documents")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle("Where documents come from: clusters binned by quality × diversity")
    fig.tight_layout()
    return fig, None


def fig_token_lengths(data: ReportData):
    c = data.corpus
    if "n_tokens" not in c or c["n_tokens"].isna().all():
        return None, "no n_tokens column"
    plt = _plt()
    tok = c["n_tokens"].dropna().to_numpy(float)
    tok = tok[tok > 0]
    edges = np.geomspace(max(tok.min(), 1), tok.max() * 1.0001, 40)
    fig, ax = plt.subplots(figsize=(7.5, 4.5), dpi=_DPI)
    ax.hist(tok, bins=edges, weights=np.full(len(tok), 100 / len(tok)), color=_CORPUS_COLOR, alpha=0.45,
            label=f"corpus (median {np.median(tok):.0f})")
    colors = _colors(data.methods)
    for m in data.methods:
        t = data.selections.loc[data.selections["method"] == m, "n_tokens"].dropna().to_numpy(float)
        if len(t):
            ax.hist(t, bins=edges, weights=np.full(len(t), 100 / len(t)), histtype="step", lw=1.8, color=colors[m],
                    label=f"{m} (median {np.median(t):.0f})")
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
        return None, "no cluster or domain column"
    plt = _plt()
    share = c["cluster"].value_counts(normalize=True) * 100
    order = share.index[:top]
    x = np.arange(len(order))
    fig, ax = plt.subplots(figsize=(max(7.5, 0.22 * len(order) + 3), 4.5), dpi=_DPI)
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
    """(n, 2) coordinates and the method's name: ``auto`` is UMAP when umap-learn is
    installed, else PCA (numpy SVD); ``umap``, ``tsne`` (scikit-learn) or ``pca`` ask."""
    X = np.asarray(X, dtype=np.float32)
    if method in ("auto", "umap"):
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
    plt = _plt()
    Y, name = project_2d(data.sample_embedding, method)
    cols = [c for c in data.sample.columns if c.startswith("selected_")][:6]
    n = max(1, len(cols))
    ncol = min(3, n)
    nrow = int(np.ceil(n / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 4.3 * nrow), dpi=_DPI, squeeze=False)
    colors = _colors([c[len("selected_"):] for c in cols])
    for ax, c in zip(axes.flat, cols):
        m = c[len("selected_"):]
        sel = data.sample[c].to_numpy(bool)
        ax.scatter(Y[~sel, 0], Y[~sel, 1], s=4, color=_CORPUS_COLOR, alpha=0.35, label="not selected", rasterized=True)
        ax.scatter(Y[sel, 0], Y[sel, 1], s=10, color=colors[m], edgecolor="black", linewidth=0.3,
                   label=f"selected ({sel.sum()} of {len(sel)})")
        ax.set_title(m)
        ax.set_xlabel(f"{name} 1")
        ax.set_ylabel(f"{name} 2")
        ax.legend(fontsize=7, loc="best", markerscale=1.5)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(f"2-D {name} projection of a sample of the corpus; selected documents highlighted")
    fig.tight_layout()
    return fig, None


_MAKERS = {"trajectory": fig_trajectory, "pareto": fig_pareto, "cluster_heatmap": fig_cluster_heatmap,
           "token_lengths": fig_token_lengths, "clusters": fig_clusters, "projection": fig_projection}


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
_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1200px;
color:#222;background:#fff;padding:0 16px}
h1{font-size:1.6em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em;margin:.6em 0} th,td{border:1px solid #ccc;padding:4px 8px;
text-align:right} th{background:#f2f2f2} td:first-child,th:first-child{text-align:left}
figure{margin:1em 0} img{max-width:100%;border:1px solid #eee} figcaption{font-size:.85em;color:#555}
.notes td{text-align:left} .missing{color:#777;font-size:.9em}
"""

_CAPTIONS = {
    "trajectory": "Objective, quality and diversity of the current top-S mask over policy-gradient steps.",
    "pareto": "Mean quality against pairwise diversity; the grey line joins the methods no other method beats "
              "on both.",
    "cluster_heatmap": "Clusters placed by their mean quality and within-cluster diversity; colour is the share of "
                       "documents from clusters in each cell.",
    "token_lengths": "Distribution of document lengths in tokens (log scale).",
    "clusters": "Share of documents per cluster or domain.",
    "projection": "A sample of documents projected to 2-D; selected ones highlighted.",
}

_TABLE_LABELS = {
    "quality": "mean quality", "quality_norm": "mean quality (0–1)", "pairwise": "pairwise diversity",
    "facility": "facility-location coverage", "disf": "DiSF", "objective": "objective",
    "mean_tokens": "mean length (tokens)", "seconds": "wall time (s)", "selected": "selected rows", "rows": "rows",
    "diversity": "diversity",
}


def _png_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI)
    return buf.getvalue()


def _table_html(t: pd.DataFrame) -> str:
    t = t.rename(columns=_TABLE_LABELS).reset_index()
    return t.to_html(float_format=lambda v: f"{v:.4g}", border=0, na_rep="–", index=False)


def write_report(data: ReportData, directory, figures=FIGURES) -> Path:
    """Write the PNGs and ``index.html`` into ``directory``; returns the HTML path."""
    plt = _plt()
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    figs, missing = make_figures(data, figures)
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(data.title)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{html.escape(data.title)}</h1>"]
    if data.notes:
        rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                       for k, v in data.notes.items())
        parts.append(f"<table class='notes'>{rows}</table>")
    if data.table is not None:
        parts.append("<h2>Comparison</h2>" + _table_html(data.table))
        parts.append("<p class='missing'>Diversities are computed on each partition and averaged (weighted by rows); "
                     "higher is better for every column except wall time.</p>")
    for name in figures:
        if name in figs:
            png = _png_bytes(figs[name])
            (d / f"{name}.png").write_bytes(png)
            plt.close(figs[name])
            b64 = base64.b64encode(png).decode()
            parts.append(f"<h2>{name.replace('_', ' ').capitalize()}</h2><figure>"
                         f"<img src='data:image/png;base64,{b64}' alt='{name}' data-file='{name}.png'>"
                         f"<figcaption>{html.escape(_CAPTIONS[name])} "
                         f"(<a href='{name}.png'>{name}.png</a>)</figcaption></figure>")
        elif name in missing:
            parts.append(f"<p class='missing'>{name.replace('_', ' ')}: not drawn ({html.escape(missing[name])}).</p>")
    parts.append("</body></html>")
    out = d / "index.html"
    out.write_text("\n".join(parts), encoding="utf-8")
    return out


def build_report(directory, out=None, **kw) -> Path:
    """``datamask report OUTPUT_DIR``: load the directory and write ``OUTPUT_DIR/report/``."""
    data = load(directory, **kw)
    return write_report(data, Path(out) if out else Path(directory) / "report")
