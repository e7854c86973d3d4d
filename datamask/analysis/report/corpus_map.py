"""The report's corpus map: a bounded sample of rows in two dimensions, drawn by bokeh.

The sample (at most :data:`MAP_ROWS` rows: id, quality, cluster, selected, duplicate group
and the text's first :data:`SNIPPET` characters) is taken on the workers, split by split;
the client projects its embeddings to 2-D (:func:`project`), names each cluster by its
distinctive terms (:func:`cluster_labels`, c-TF-IDF over the cluster's snippets) and writes
one bokeh layout (:func:`map_html`): four tabs sharing one data source and one zoom (colour
by cluster, quality, selected, duplicate group), WebGL points, hover text, pan and wheel
zoom. bokeh's JavaScript is inlined: the page fetches nothing.

The projection and the library were chosen by ``benchmarks/corpus_map.py``
(``benchmarks/results/corpus_map.md``, docs/benchmarks.md).
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

__all__ = [
    "MAP_ROWS",
    "SNIPPET",
    "UMAP_FROM",
    "map_section",
    "sample_columns",
    "project",
    "cluster_labels",
    "map_frame",
    "map_html",
    "snippets",
]

MAP_ROWS = 100_000  # the most rows a map holds (the sample is cut to it)
SNIPPET = 200  # characters of each text the hover shows
UMAP_FROM = 5000  # "auto" projects a sample this large or larger with UMAP, smaller ones with PCA
_COLOURINGS = ("cluster", "quality", "selected", "duplicate group")


def snippets(texts, n=SNIPPET) -> list:
    """The first ``n`` characters of each text (whitespace collapsed; None stays None)."""
    return [None if t is None else " ".join(str(t)[: n * 2].split())[:n] for t in texts]


def sample_columns(table, cols, cfg, extra=None) -> pd.DataFrame:
    """The map's columns of an Arrow table of sampled rows: ``id``, ``quality``, and
    ``cluster``, ``dup_group``, ``snippet`` where the table has them; plus ``extra``."""
    names = table.schema.names
    col = lambda name: table.column(name).to_numpy(zero_copy_only=False)  # noqa: E731
    out = {"id": col(cols.id), "quality": col(cols.quality).astype(np.float64)}
    for name in ("cluster", "dup_group"):
        if name in names:
            out[name] = col(name).astype(np.int64)
    text = cfg.get("text_column", "text") if isinstance(cfg, dict) else getattr(cfg, "text_column", "text")
    if text in names:
        out["snippet"] = snippets(table.column(text).to_pylist())
    return pd.DataFrame({**out, **(extra or {})})


def project(E, method="auto", seed=0, n_neighbors=15) -> np.ndarray:
    """(n, 2) float32 coordinates of the rows of ``E``.

    method : "umap" (umap-learn, cosine neighbourhoods), "pca" (two principal components:
        the fastest, and the fallback without umap-learn), or "auto": UMAP from
        :data:`UMAP_FROM` rows (below, its one-off numba compilation costs more than the
        map gains), else PCA.
    """
    E = np.asarray(E, dtype=np.float32)
    method = _resolve(method, len(E))
    if method == "umap" and len(E) <= n_neighbors + 1:
        method = "pca"
    if method not in ("umap", "pca"):
        raise ValueError(f"unknown projection {method!r}; choose from auto, umap, pca")
    if len(E) < 3:
        return np.zeros((len(E), 2), np.float32)
    if method == "pca":
        from sklearn.decomposition import PCA

        return PCA(2, random_state=seed).fit_transform(E).astype(np.float32)
    import warnings

    import umap

    with warnings.catch_warnings():  # a seeded UMAP runs on one thread and says so
        warnings.simplefilter("ignore")
        reducer = umap.UMAP(n_neighbors=n_neighbors, min_dist=0.1, metric="cosine", random_state=seed)
        return reducer.fit_transform(E).astype(np.float32)


def _has_umap() -> bool:
    try:
        import umap  # noqa: F401
    except ImportError:
        return False
    return True


def cluster_labels(texts, labels, n_terms=3) -> np.ndarray:
    """Each cluster's most distinctive terms (class-based TF-IDF over its texts), as an array
    indexed by cluster id; "cluster N" where its texts are missing or hold no word."""
    labels = np.asarray(labels, dtype=np.int64)
    k = int(labels.max()) + 1 if len(labels) else 0
    names = np.array([f"cluster {c}" for c in range(k)], dtype=object)
    have = np.array([isinstance(t, str) and bool(t.strip()) for t in texts], dtype=bool) & (labels >= 0)
    if not have.any():
        return names
    from scipy import sparse
    from sklearn.feature_extraction.text import CountVectorizer

    docs = [t for t, h in zip(texts, have) if h]
    try:
        cv = CountVectorizer(stop_words="english", token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z]+\b", max_features=50_000)
        X = cv.fit_transform(docs)
    except ValueError:  # only stop words
        return names
    lab = labels[have]
    onehot = sparse.csr_matrix((np.ones(len(lab)), (lab, np.arange(len(lab)))), shape=(k, len(lab)))
    C = np.asarray((onehot @ X).todense(), dtype=np.float64)  # (clusters, terms) counts
    tf = C / np.maximum(C.sum(axis=1, keepdims=True), 1)
    idf = np.log1p(C.sum(axis=1).mean() / np.maximum(C.sum(axis=0), 1))  # BERTopic's c-TF-IDF
    score = tf * idf
    vocab = cv.get_feature_names_out()
    for c in range(k):
        if C[c].sum() > 0:
            top = np.argsort(-score[c])[:n_terms]
            names[c] = f"{c}: " + " ".join(vocab[top][score[c, top] > 0])
    return names


def map_frame(sample, embedding, selected=None, method="auto", seed=0, max_rows=MAP_ROWS) -> pd.DataFrame:
    """The map's rows: ``x, y, id, quality, cluster, selected, dup_group, snippet, label``.

    sample : DataFrame with ``id``, ``quality`` and, when known, ``cluster``, ``dup_group``,
        ``snippet`` (rows of ``embedding``)
    selected : bool array (rows of ``sample``) or None
    Clusters missing from the sample (all -1) are fitted here by k-means on the sample.
    """
    n = min(len(sample), max_rows)
    sample, E = sample.iloc[:n].reset_index(drop=True), np.asarray(embedding[:n], dtype=np.float32)
    Y = project(E, method=method, seed=seed)
    cluster = sample["cluster"].to_numpy(np.int64) if "cluster" in sample else np.full(n, -1)
    if n and (cluster < 0).all():
        from sklearn.cluster import KMeans

        k = int(min(30, max(2, round(np.sqrt(n / 10)))))
        cluster = KMeans(min(k, n), n_init=2, random_state=seed).fit_predict(E) if n >= 2 else np.zeros(n, int)
    text = sample["snippet"].tolist() if "snippet" in sample else [None] * n
    names = cluster_labels(text, cluster)
    return pd.DataFrame(
        {
            "x": Y[:, 0],
            "y": Y[:, 1],
            "id": sample["id"].astype(str).to_numpy(),
            "quality": sample["quality"].to_numpy(np.float64),
            "cluster": cluster,
            "selected": np.zeros(n, bool) if selected is None else np.asarray(selected[:n], bool),
            "dup_group": sample["dup_group"].to_numpy(np.int64) if "dup_group" in sample else np.full(n, -1),
            "snippet": [t if isinstance(t, str) else "(no text column)" for t in text],
            "label": names[cluster] if len(names) else [],
        }
    )


def _source_data(frame):
    dup = frame["dup_group"].to_numpy()
    big = pd.Series(dup[dup >= 0]).value_counts().index[:19]  # the largest groups get a colour each
    return {
        "x": frame["x"].to_numpy(),
        "y": frame["y"].to_numpy(),
        "id": frame["id"].to_numpy(),
        "quality": frame["quality"].to_numpy(),
        "cluster": frame["label"].astype(str).to_numpy(),
        "selected": np.where(frame["selected"], "selected", "not selected"),
        "dup": np.where(dup < 0, "no group", np.where(np.isin(dup, big), "group " + dup.astype(str), "other group")),
        "snippet": frame["snippet"].to_numpy(),
    }


def _colour(kind, data):
    from bokeh.palettes import Category20, Turbo256, Viridis256
    from bokeh.transform import factor_cmap, linear_cmap

    if kind == "quality":
        q = data["quality"]
        return linear_cmap("quality", Viridis256, float(np.nanmin(q)), float(np.nanmax(q))) if len(q) else "grey"
    field = {"cluster": "cluster", "selected": "selected", "duplicate group": "dup"}[kind]
    factors = sorted(set(data[field].tolist()), key=lambda s: (s in ("no group", "not selected", "other group"), s))
    if kind == "selected":
        palette = ["#d62728", "#c8c8c8"][: len(factors)]
    elif kind == "duplicate group":
        palette = [("#dddddd" if f == "no group" else "#888888" if f == "other group" else None) for f in factors]
        cycle = iter(Category20[20])
        palette = [p or next(cycle) for p in palette]
    else:
        step = max(1, 256 // max(len(factors), 1))
        palette = [Turbo256[(i * step + 20) % 256] for i in range(len(factors))]
    return factor_cmap(field, palette, factors)


def _figure(kind, source, labels, data, ranges):
    from bokeh.models import ColorBar, HoverTool, LabelSet
    from bokeh.plotting import figure

    x_range, y_range = ranges or (None, None)
    kw = {"x_range": x_range, "y_range": y_range} if ranges else {}
    fig = figure(
        height=620,
        sizing_mode="stretch_width",
        output_backend="webgl",
        tools="pan,wheel_zoom,box_zoom,reset,save",
        active_scroll="wheel_zoom",
        name=f"map-{kind.replace(' ', '-')}",
        **kw,
    )
    fill = _colour(kind, data)
    pts = fig.scatter("x", "y", source=source, size=4, color=fill, alpha=0.75, name="points")
    fig.add_tools(
        HoverTool(
            renderers=[pts],
            tooltips="<div class='map-tip' style='max-width:360px;white-space:normal'><b>id @id</b> · quality "
            "@quality{0.000} · @cluster<br>@snippet</div>",
        )
    )
    if kind == "quality" and len(data["x"]):
        fig.add_layout(ColorBar(color_mapper=fill["transform"], title="quality"), "right")
    fig.add_layout(
        LabelSet(x="x", y="y", text="label", source=labels, text_font_size="10pt", background_fill_color="white")
    )
    fig.axis.visible = fig.grid.visible = False
    return fig


def map_html(frame: pd.DataFrame, title=None) -> str:
    """An HTML fragment (bokeh's JavaScript inlined, no request to any server) that draws
    ``frame`` (:func:`map_frame`'s columns): one tab per colouring, sharing zoom and data."""
    from bokeh.embed import components
    from bokeh.embed.bundle import bundle_for_objs_and_resources
    from bokeh.models import ColumnDataSource, TabPanel, Tabs
    from bokeh.resources import INLINE

    data = _source_data(frame)
    source = ColumnDataSource(data, name="corpus-map-points")
    centres = frame.groupby("label")[["x", "y"]].median().reset_index() if len(frame) else None
    labels = ColumnDataSource(
        {"x": [], "y": [], "label": []} if centres is None else {c: centres[c].to_numpy() for c in ("x", "y", "label")}
    )
    panels, ranges = [], None
    for kind in _COLOURINGS:
        if kind == "duplicate group" and (frame["dup_group"] < 0).all():
            continue
        fig = _figure(kind, source, labels, data, ranges)
        ranges = ranges or (fig.x_range, fig.y_range)
        panels.append(TabPanel(child=fig, title=f"colour: {kind}"))
    tabs = Tabs(tabs=panels, sizing_mode="stretch_width", name="corpus-map")
    script, div = components(tabs)
    bundle = bundle_for_objs_and_resources([tabs], INLINE)
    head = f"<p class='missing'>{html.escape(title)}</p>" if title else ""
    return f"{bundle._render_css()}{bundle._render_js()}{head}<div class='corpus-map'>{div}</div>{script}"


def _selected_column(sample) -> str | None:
    cols = [c for c in sample.columns if c.startswith("selected_")]
    return "selected_datamask" if "selected_datamask" in cols else (cols[0] if cols else None)


def map_section(data, projection="auto") -> tuple[str, pd.DataFrame | None]:
    """The report's corpus-map section of a :class:`~.data.ReportData` (its ``sample`` and
    ``sample_embedding``) and the map's frame (None without a sample)."""
    if data.sample is None or data.sample_embedding is None or not len(data.sample):
        return "", None
    try:
        import bokeh  # noqa: F401
    except ImportError:
        return (
            "<p class='missing'>corpus map: not drawn (bokeh is not installed: pip install 'datamask[map]').</p>",
            None,
        )
    sel = _selected_column(data.sample)
    frame = map_frame(
        data.sample,
        data.sample_embedding,
        selected=None if sel is None else data.sample[sel].to_numpy(),
        method=projection,
    )
    method = "UMAP" if _resolve(projection, len(frame)) == "umap" else "PCA"
    text = "" if "snippet" in data.sample else " The input has no text column: hover shows ids and quality only."
    intro = (
        f"<h2>Corpus map</h2><p class='missing'>{len(frame):,} sampled rows, their embeddings projected to 2-D "
        f"({method}); each cluster labelled by its most distinctive words (c-TF-IDF over its texts). Hover a point "
        "for its id, quality and first 200 characters; drag to pan, scroll to zoom; the tabs colour by cluster, "
        f"quality, selected ({html.escape(sel.removeprefix('selected_') if sel else 'none')}) and duplicate group "
        f"(where the input has one).{text}</p>"
    )
    return intro + map_html(frame), frame


def _resolve(projection, n) -> str:
    if projection != "auto":
        return projection
    return "umap" if _has_umap() and n >= UMAP_FROM else "pca"
