"""The notebook's corpus map: every row of a Dask DataFrame (up to :data:`WIDGET_ROWS`, else
a stated sample) in 2-D, drawn by jupyter-scatter.

:func:`widget_frame` computes the points on the workers: a PCA fitted on a seeded sample of
``fit_rows`` rows projects every row (one ``map_partitions``, explicit ``meta``); clusters
come from the frame's ``cluster`` column (else k-means on the fit sample, every row labelled
by its nearest centroid) and are named by their distinctive words over the fit sample's
texts (:func:`~.corpus_map.cluster_labels`). :class:`CorpusMapWidget` draws that frame:
WebGL points coloured by cluster, quality or selection (buttons), hover text (id, quality,
cluster, selected, the text's first 200 characters: kept in the kernel and fetched for the
hovered point only) and a lasso (shift + drag) whose rows :attr:`CorpusMapWidget.selection`
returns as a DataFrame.

jupyter-scatter was chosen by ``benchmarks/notebook_map.py`` (time to first draw and memory
at 100k and 1M points in JupyterLab against plotly, bokeh and datashader:
``benchmarks/results/notebook_map.md``). Its JavaScript comes in its wheel: nothing is
fetched from a network. Needs the ``notebook`` extra (``pip install "datamask[notebook]"``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["WIDGET_ROWS", "COLOURINGS", "widget_frame", "CorpusMapWidget"]

WIDGET_ROWS = 1_000_000  # the most rows the widget draws (more: a seeded sample of this many)
COLOURINGS = ("cluster", "quality", "selected")
_COLUMNS = ["x", "y", "id", "quality", "cluster", "label", "selected", "snippet"]


def _points(df, mean, axes, centroids, names, cols):
    """One partition's map rows (pandas in, pandas out): its embeddings projected on ``axes``."""
    from ..clusters import embeddings_of
    from .corpus_map import snippets

    emb, ident, quality, text = cols
    E = embeddings_of(df[emb]).astype(np.float32) if len(df) else np.zeros((0, len(mean)), np.float32)
    xy = (E - mean) @ axes.T if len(df) else np.zeros((0, 2), np.float32)
    if "cluster" in df.columns:
        cluster = df["cluster"].to_numpy(np.int64)
    elif len(df):
        cluster = np.argmax(E @ centroids.T, axis=1).astype(np.int64)
    else:
        cluster = np.zeros(0, np.int64)
    name = np.array([names.get(int(c), f"cluster {c}") for c in cluster], dtype=object)
    return pd.DataFrame(
        {
            "x": xy[:, 0].astype(np.float32),
            "y": xy[:, 1].astype(np.float32),
            "id": df[ident].astype(str).to_numpy(),
            "quality": df[quality].to_numpy(np.float32),
            "cluster": cluster.astype(np.int32),
            "label": name,
            "selected": df["selected"].to_numpy(bool) if "selected" in df.columns else np.zeros(len(df), bool),
            "snippet": snippets(df[text].tolist()) if text in df.columns else [None] * len(df),
        }
    )


def _fit(sample, emb, text, seed):
    """(mean, two PCA axes, centroids or None, {cluster: name}) from the fit sample."""
    from ...core.kmeans import fit_kmeans, readable_n_clusters, unit32
    from ..clusters import embeddings_of
    from .corpus_map import cluster_labels, snippets

    E = embeddings_of(sample[emb]).astype(np.float32)
    mean = E.mean(axis=0)
    axes = np.linalg.svd(E - mean, full_matrices=False)[2][:2].astype(np.float32)
    centroids = None
    if "cluster" in sample.columns:
        cluster = sample["cluster"].to_numpy(np.int64)
    else:
        centroids = fit_kmeans(E, readable_n_clusters(len(E)), seed=seed)
        centroids = unit32(np.asarray(centroids), np)
        cluster = np.argmax(E @ centroids.T, axis=1)
    texts = snippets(sample[text].tolist()) if text in sample.columns else [None] * len(sample)
    named = cluster_labels(texts, cluster)
    return mean, axes, centroids, {c: str(n) for c, n in enumerate(named)}


def widget_frame(
    ddf, *, max_rows=WIDGET_ROWS, fit_rows=20_000, embedding_column="embedding", id_column="id",
    quality_column="quality", text_column="text", seed=0,
) -> pd.DataFrame:  # fmt: skip
    """The widget's rows (``x, y, id, quality, cluster, label, selected, snippet``) of every
    row of ``ddf``, or of a seeded sample of ``max_rows`` when it has more.

    ``ddf`` : a Dask DataFrame with the embedding, id and quality columns and, when known,
    ``cluster``, ``selected`` and the text. One pass counts the rows, one fits the projection
    on ``fit_rows`` of them, one projects them all. ``frame.attrs``: ``rows`` (of ``ddf``),
    ``drawn``, ``sampled`` (True when cut to ``max_rows``), ``projection``.
    """
    n = int(ddf.map_partitions(len, meta=(None, "int64")).sum().compute())
    sampled = n > max_rows
    if sampled:
        ddf = ddf.sample(frac=max_rows / n, random_state=seed)
    sample = ddf.sample(frac=min(1.0, fit_rows / max(min(n, max_rows), 1)), random_state=seed + 1).compute()
    mean, axes, centroids, names = _fit(sample, embedding_column, text_column, seed)
    meta = pd.DataFrame(
        {
            "x": np.zeros(0, np.float32),
            "y": np.zeros(0, np.float32),
            "id": np.zeros(0, object),
            "quality": np.zeros(0, np.float32),
            "cluster": np.zeros(0, np.int32),
            "label": np.zeros(0, object),
            "selected": np.zeros(0, bool),
            "snippet": np.zeros(0, object),
        }
    )
    cols = (embedding_column, id_column, quality_column, text_column)
    frame = ddf.map_partitions(_points, mean, axes, centroids, names, cols, meta=meta).compute()
    frame = frame.reset_index(drop=True)
    frame["label"] = frame["label"].astype("category")
    frame["selected"] = pd.Categorical(np.where(frame["selected"], "selected", "not selected"))
    frame.attrs.update(rows=n, drawn=len(frame), sampled=sampled, projection=f"PCA fitted on {len(sample):,} rows")
    return frame


class CorpusMapWidget:
    """A corpus map for a notebook: ``frame`` (:func:`widget_frame`) drawn by jupyter-scatter.

    Parameters
    ----------
    frame : DataFrame with :func:`widget_frame`'s columns
    colour : "cluster", "quality" or "selected" (the first colouring; buttons switch it)
    height : int, pixels

    ``show()`` (or the widget's own display) draws it; :attr:`selection` holds the rows the
    lasso picked (shift + drag, or the lasso button then drag).
    """

    def __init__(self, frame: pd.DataFrame, *, colour="cluster", height=560):
        import jscatter

        if colour not in COLOURINGS:
            raise ValueError(f"colour must be one of {', '.join(COLOURINGS)}; got {colour!r}")
        self.frame = frame = frame.reset_index(drop=True)  # the widget's selection: positions = labels
        self.scatter = jscatter.Scatter(
            data=frame,
            x="x",
            y="y",
            height=int(height),
            size="auto",
            opacity="auto",
            tooltip=True,
            tooltip_properties=["id", "quality", "label", "selected"],
            tooltip_preview="snippet" if frame["snippet"].notna().any() else None,
            legend=True,
            lasso_initiator=True,
        )
        self.colour(colour)

    def colour(self, by: str) -> CorpusMapWidget:
        """Colour the points by ``cluster``, ``quality`` or ``selected``."""
        if by == "cluster":
            self.scatter.color(by="label", map="auto")
        elif by == "quality":
            self.scatter.color(by="quality", map="viridis")
        elif by == "selected":
            self.scatter.color(by="selected", map={"selected": "#d62728", "not selected": "#c8c8c8"})
        else:
            raise ValueError(f"colour must be one of {', '.join(COLOURINGS)}; got {by!r}")
        self.colouring = by
        return self

    @property
    def selection(self) -> pd.DataFrame:
        """The rows the lasso picked (all of ``frame``'s columns), in ``frame``'s order."""
        idx = np.sort(np.asarray(self.scatter.selection(), dtype=np.int64))
        return self.frame.iloc[idx]

    def note(self) -> str:
        a = self.frame.attrs
        rows, drawn = a.get("rows", len(self.frame)), a.get("drawn", len(self.frame))
        what = f"a seeded sample of {drawn:,} of its {rows:,} rows" if a.get("sampled") else f"all {drawn:,} rows"
        return f"The corpus map draws {what} ({a.get('projection', 'projected to 2-D')})."

    def show(self):
        """The widget: colouring buttons, a line saying what is drawn, the plot."""
        import ipywidgets

        buttons = ipywidgets.ToggleButtons(options=list(COLOURINGS), value=self.colouring, description="colour")
        buttons.observe(lambda change: self.colour(change["new"]), names="value")
        return ipywidgets.VBox([buttons, ipywidgets.HTML(self.note()), self.scatter.show()])

    def _repr_mimebundle_(self, **kwargs):
        return self.show()._repr_mimebundle_(**kwargs)
