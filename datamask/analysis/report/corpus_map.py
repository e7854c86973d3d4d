"""The report's corpus map: a bounded sample of rows in two dimensions, drawn by bokeh.

The sample (at most :data:`MAP_ROWS` rows: id, quality, cluster, selected, duplicate group
and the text's first :data:`SNIPPET` characters) is taken on the workers, split by split;
the client projects its embeddings to 2-D (:func:`project`), names each cluster by its
distinctive terms (:func:`cluster_labels`, c-TF-IDF over the cluster's snippets) and writes
one bokeh layout (:func:`~.map_draw.map_html`): a search box (any row by id, the selected
rows beyond the sample too), four tabs sharing one data source and one zoom (colour by
cluster, quality, selected, duplicate group), WebGL points, hover text, pan and wheel zoom,
the largest clusters named where their names do not overlap. bokeh's JavaScript is inlined:
the page fetches nothing.

The projection and the library were chosen by ``benchmarks/corpus_map.py``
(``benchmarks/results/corpus_map.md``, docs/benchmarks.md).
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from ...pipeline.why import SNIPPET, snippets  # the hover's text: the first SNIPPET characters
from .map_draw import map_html

__all__ = [
    "MAP_ROWS",
    "SEARCH_ROWS",
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
SEARCH_ROWS = 200_000  # the most selected rows beyond the sample that the map's search finds
UMAP_FROM = 5000  # "auto" projects a sample this large or larger with UMAP, smaller ones with PCA


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
    indexed by cluster id. A cluster whose texts hold no word (numbers, symbols, only stop
    words) is named by the opening of its first text, quoted; "cluster N" where it has no text."""
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
    for c in np.flatnonzero(C.sum(axis=1) == 0):  # texts of no word (numbers, symbols, stop words)
        first = next((t for t, h, cl in zip(texts, have, labels) if h and cl == c), None)
        if first is not None:  # named by how its first text starts, quoted
            names[c] = f'{c}: "{_opening(first)}"'
    return names


def _opening(text: str, chars: int = 24) -> str:
    """The first ``chars`` characters of ``text``, whitespace collapsed (an ellipsis when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1].rstrip() + "…"


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

        from ...core.kmeans import readable_n_clusters

        k = readable_n_clusters(n)
        cluster = KMeans(k, n_init=2, random_state=seed).fit_predict(E) if n >= 2 else np.zeros(n, int)
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
    more, n_selected = _beyond_sample(data, sel, frame)
    text = "" if "snippet" in data.sample else " The input has no text column: hover shows ids and quality only."
    found = f"the {len(more):,} selected rows beyond them" + (
        f" (the first {len(more):,} of {n_selected:,})" if n_selected > len(more) else ""
    )
    intro = (
        f"<h2>Corpus map</h2><p class='missing'>{len(frame):,} sampled rows, their embeddings projected to 2-D "
        f"({method}); the largest clusters named by their most distinctive words (c-TF-IDF over their texts) "
        "where the names do not overlap, every cluster named in its points' hover text. Hover a point "
        "for its id, quality and first 200 characters; drag to pan, scroll to zoom; the tabs colour by cluster, "
        f"quality, selected ({html.escape(sel.removeprefix('selected_') if sel else 'none')}) and duplicate group "
        f"(where the input has one). The search finds a row by id among the sampled rows and {found}.{text}</p>"
    )
    return intro + map_html(frame, more=more), frame


def _beyond_sample(data, sel, frame) -> tuple[pd.DataFrame, int]:
    """The selected rows (of the sample's method) that are not in the map's sample, at most
    :data:`SEARCH_ROWS` (``id`` as text, ``quality``, ``cluster``), and how many there are."""
    rows = data.selections
    if sel is None or rows is None or not len(rows) or data.id_column not in rows:
        return pd.DataFrame({"id": [], "quality": []}), 0
    rows = rows[rows["method"] == sel.removeprefix("selected_")] if "method" in rows else rows
    ids = rows[data.id_column].astype(str)
    rows = rows.loc[~ids.isin(set(frame["id"])).to_numpy()]
    out = pd.DataFrame({"id": ids.loc[rows.index].to_numpy(), "quality": rows["quality"].to_numpy(np.float64)})
    if "cluster" in rows:
        out["cluster"] = rows["cluster"].fillna(-1).to_numpy(np.int64)
    return out.iloc[:SEARCH_ROWS], len(out)


def _resolve(projection, n) -> str:
    if projection != "auto":
        return projection
    return "umap" if _has_umap() and n >= UMAP_FROM else "pca"
