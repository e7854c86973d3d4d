"""What the selection keeps and what it drops, cluster by cluster: the selected and the
rejected texts nearest each cluster's centre, with their quality.

:func:`nearest_examples` runs on a worker over one split (a few rows per cluster come back);
:func:`merge_examples` keeps, per cluster, the ``per`` nearest of each kind over all splits on
the client; :func:`kept_dropped_html` writes the report's section.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

__all__ = ["nearest_examples", "merge_examples", "sample_examples", "kept_dropped_html", "EXAMPLES_PER_CLUSTER"]

EXAMPLES_PER_CLUSTER = 3
_COLUMNS = ["cluster", "kind", "id", "quality", "cosine", "snippet"]


def nearest_examples(E, cluster, selected, quality, ids, texts, per=EXAMPLES_PER_CLUSTER) -> pd.DataFrame:
    """Per cluster of one split, the ``per`` selected ("kept") and the ``per`` rejected
    ("dropped") rows of highest cosine to the cluster's mean embedding in this split.

    E : (n, d) unit rows; cluster : (n,) int labels (-1: none; then one region, -1);
    selected : (n,) bool; quality : (n,); ids, texts : length n (a list or an Arrow array; texts None: no text column).
    Returns at most ``2 * per`` rows per cluster: ``cluster, kind, id, quality, cosine, snippet``.
    """
    from .corpus_map import snippets

    E = np.asarray(E, dtype=np.float32)
    cluster = np.asarray(cluster, dtype=np.int64)
    selected = np.asarray(selected, dtype=bool)
    out = []
    for c in np.unique(cluster):
        rows = np.flatnonzero(cluster == c)
        centre = E[rows].mean(axis=0)
        centre /= max(float(np.linalg.norm(centre)), 1e-12)
        cos = E[rows] @ centre
        for kind, mask in (("kept", selected[rows]), ("dropped", ~selected[rows])):
            pick = rows[mask][np.argsort(-cos[mask], kind="stable")[:per]]
            if len(pick):
                out.append(
                    pd.DataFrame(
                        {
                            "cluster": int(c),
                            "kind": kind,
                            "id": [str(ids[i]) for i in pick],
                            "quality": np.asarray(quality)[pick].astype(np.float64),
                            "cosine": (E[pick] @ centre).astype(np.float64),
                            "snippet": snippets(_take(texts, pick)) if texts is not None else None,
                        }
                    )
                )
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=_COLUMNS)


def _take(texts, rows) -> list:
    """``texts[rows]`` of a list or an Arrow array (read only at those rows)."""
    return texts.take(rows).to_pylist() if hasattr(texts, "take") else [texts[i] for i in rows]


def merge_examples(parts, per=EXAMPLES_PER_CLUSTER) -> pd.DataFrame | None:
    """The splits' :func:`nearest_examples` merged: per cluster and kind, the ``per`` rows of
    highest cosine (each to its own split's centre)."""
    parts = [p for p in parts if p is not None and len(p)]
    if not parts:
        return None
    df = pd.concat(parts, ignore_index=True).sort_values(["cluster", "kind", "cosine"], ascending=[True, True, False])
    return df.groupby(["cluster", "kind"], sort=True).head(per).reset_index(drop=True)


def sample_examples(sample, embedding, selected_column, per=EXAMPLES_PER_CLUSTER) -> pd.DataFrame | None:
    """:func:`nearest_examples` over a report's bounded sample (``select``'s report, which
    reads a sample of the input rather than every split)."""
    if sample is None or selected_column not in sample or not len(sample):
        return None
    E = np.asarray(embedding, dtype=np.float32)
    E = E / np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
    lab = sample["cluster"].to_numpy() if "cluster" in sample else np.full(len(sample), -1)
    texts = sample["snippet"].tolist() if "snippet" in sample else None
    sel, q, ids = (sample[c].to_numpy() for c in (selected_column, "quality", "id"))
    return nearest_examples(E, lab, sel, q, ids, texts, per)


def _cell(rows) -> str:
    if not len(rows):
        return "<td class='missing'>none</td>"
    items = "".join(
        f"<li><span class='q'>quality {r.quality:.3g}</span> · id {html.escape(str(r.id))}"
        + (f"<br>{html.escape(r.snippet)}" if isinstance(r.snippet, str) else "")  # no text column: said once
        + "</li>"
        for r in rows.itertuples()
    )
    return f"<td><ul>{items}</ul></td>"


def kept_dropped_html(examples: pd.DataFrame, labels=None, method="datamask", max_clusters=40) -> str:
    """The report's section: one row per cluster, its kept texts beside its dropped ones.

    labels : cluster id -> name (e.g. :func:`~.corpus_map.cluster_labels`), or None
    """
    who = "the selection" if method in ("selection", "") else f"the selection ({html.escape(method)})"
    texts = examples is None or "snippet" not in examples or examples["snippet"].map(lambda t: isinstance(t, str)).any()
    what, each = (
        ("texts", "; the first 200 characters of each")
        if texts
        else ("rows", " (ids only: the input has no text column)")
    )
    parts = [
        "<h2>Kept and dropped</h2>",
        f"<p class='missing'>Per cluster, the {what} {who} kept and the {what} it dropped that lie nearest the "
        "cluster's centre (highest cosine to the mean embedding of the cluster in their split), with their "
        f"quality{each}. Clusters in order of id; at most {max_clusters} shown.</p>",
    ]
    if examples is None or not len(examples):
        parts.append("<p class='missing'>No rows to show.</p>")
        return "\n".join(parts)
    rows = []
    for c in sorted(examples["cluster"].unique())[:max_clusters]:
        g = examples[examples["cluster"] == c]
        name = labels.get(int(c), f"cluster {c}") if labels else ("all rows" if c < 0 else f"cluster {c}")
        kept, dropped = g[g["kind"] == "kept"], g[g["kind"] == "dropped"]
        rows.append(f"<tr><th>{html.escape(str(name))}</th>{_cell(kept)}{_cell(dropped)}</tr>")
    parts.append(
        "<table class='kept-dropped'><tr><th>cluster</th><th>kept (selected)</th><th>dropped (not selected)</th></tr>"
        + "".join(rows)
        + "</table>"
    )
    return "\n".join(parts)


def examples_section(data, frame) -> str:
    """The report's kept-and-dropped section: ``data.examples`` (computed on the workers) or,
    without them or without clusters in them, the map's sample (``frame`` of
    :func:`~.corpus_map.map_frame`, whose clusters it then uses); empty without either."""
    ex = data.examples
    if ex is not None and (ex["cluster"] < 0).all() and frame is not None and len(frame):
        ex = None  # the workers had no clusters: the map's, fitted on its sample, say more
    if ex is None and frame is not None and len(frame):
        sample = frame.rename(columns={"selected": "selected_map"})
        if data.sample is None or "snippet" not in data.sample:  # the map's hover placeholder is no text
            sample = sample.drop(columns=["snippet"], errors="ignore")
        ex = sample_examples(sample, data.sample_embedding[: len(frame)], "selected_map")
        labels = dict(zip(frame["cluster"], frame["label"]))
    elif ex is not None and frame is not None:
        labels = dict(zip(frame["cluster"], frame["label"]))
    else:
        return ""
    fallback = str((getattr(data, "notes", None) or {}).get("method", "selection"))
    method = str(ex["method"].iloc[0]) if "method" in ex and len(ex) else fallback
    return kept_dropped_html(ex, labels, method=method)
