"""The report's "why" section: what the selection holds per cluster against the corpus, and
what took the place of the best rows it left out; drawn from :mod:`.why_data`'s numbers
(the split records' ``why``, gathered on the workers), never from the rows themselves.

:func:`reason` says in words what the data show about one dropped row; :func:`why_section`
writes the page's part and its figure.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from ...pipeline.why import DROPPED_ROWS
from .why_data import sample_shares

__all__ = ["reason", "why_section", "fig_cluster_shares", "SHOWN_CLUSTERS", "TABLE_CLUSTERS"]

SHOWN_CLUSTERS = 30  # the most clusters the figure draws (the most over- and under-represented halves)
TABLE_CLUSTERS = 5  # over- and under-represented clusters listed in the table, each


def _pct(v) -> str:
    return f"{100 * v:.1f}%"


def reason(d: dict, method: str = "datamask") -> str:
    """What the data show about why the dropped row ``d`` (:func:`dropped_rows`' item) is
    not in the selection: a selected near-duplicate, its cluster's share already held, or
    neither (below the method's cut). Top-k and random see neither copies nor clusters: their
    reason is their cut or their draw, with the same facts beside it."""
    near, line = d.get("nearest_selected"), d["line"]
    cluster = d.get("cluster", -1) is not None and d.get("cluster", -1) >= 0 and "cluster_rows" in d
    share = None
    if cluster and d["split_selected"]:
        share = (d["cluster_selected"] / d["split_selected"], d["cluster_rows"] / d["split_rows"])
    if near is not None and near["cosine"] >= line:
        text = f"a near-duplicate of a selected row (cosine {near['cosine']:.3f} >= {line:g})"
    elif share is not None and share[0] >= share[1] and method not in ("random", "topk"):  # (neither sees clusters)
        text = (
            f"its cluster's share was full: its cluster makes up {_pct(share[0])} of the selection in its split, "
            f"against {_pct(share[1])} of the split's rows"
        )
    else:
        what = {"random": "not drawn by the random sample", "topk": "below top-k's quality cut"}
        text = what.get(method, "below the method's cut")
        facts = [f"no selected row within cosine {line:g}" + (f" (nearest {near['cosine']:.3f})" if near else "")]
        if share is not None:
            facts.append(f"its cluster holds {_pct(share[0])} of the selection against {_pct(share[1])} of the split")
        low = d.get("lowest_selected_quality")
        if low is not None and d["quality"] > low:
            facts.append(f"rows of quality down to {low:.3g} were kept")
        text += ": " + "; ".join(facts)
    twin = d.get("near_duplicate_dropped")
    if twin is not None and not (near is not None and near["cosine"] >= line):  # a near-duplicate left out too
        text += (
            f"; its near-duplicate id {twin['id']} (quality {twin['quality']:.3g}, cosine {twin['cosine']:.3f}) "
            "was not selected either"
        )
    return text


def fig_cluster_shares(shares: pd.DataFrame, names: dict, what: str):
    """A dot plot: per cluster, its share of the corpus (grey) and of the selection, sorted
    from the most over- to the most under-represented; at most :data:`SHOWN_CLUSTERS`."""
    from .figures import DPI, pyplot

    plt = pyplot()
    df = shares.sort_values("difference", ascending=False, kind="stable")
    cut = len(df) > SHOWN_CLUSTERS
    if cut:
        df = pd.concat([df.head(SHOWN_CLUSTERS // 2), df.tail(SHOWN_CLUSTERS // 2)])
    labels = [_short(names.get(int(c), f"cluster {c}")) for c in df["cluster"]]
    y = np.arange(len(df))[::-1]
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.3 * len(df)), dpi=DPI)
    c, s = 100 * df["corpus_share"].to_numpy(), 100 * df["selection_share"].to_numpy()
    ax.hlines(y, np.minimum(c, s), np.maximum(c, s), color="0.75", lw=2, zorder=1)
    ax.scatter(c, y, s=36, color="0.55", zorder=2, label="corpus")
    ax.scatter(s, y, s=36, color="tab:blue", edgecolor="black", linewidth=0.4, zorder=3, label="selection")
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlabel("% of rows")
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    more = f"; the {SHOWN_CLUSTERS // 2} most over- and under-represented of {len(shares)}" if cut else ""
    ax.set_title(f"Share of each cluster: selection against corpus ({what}{more})", fontsize=10)
    fig.tight_layout()
    return fig


def _short(name: str, n=48) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"


def _name(names, c) -> str:
    return names.get(int(c), f"cluster {c}") if c is not None and int(c) >= 0 else "–"


def _shares_table(shares: pd.DataFrame, names: dict) -> str:
    df = shares.sort_values("difference", ascending=False, kind="stable")
    over = df[df["difference"] > 0].head(TABLE_CLUSTERS)
    under = df[df["difference"] < 0].sort_values("difference", kind="stable").head(TABLE_CLUSTERS)
    rows = []
    for kind, part in (("over", over), ("under", under)):
        for r in part.itertuples():
            ratio = r.selection_share / r.corpus_share if r.corpus_share else float("nan")
            rows.append(
                f"<tr><td>{kind}-represented</td><td>{html.escape(_name(names, r.cluster))}</td>"
                f"<td>{int(r.rows):,}</td><td>{_pct(r.corpus_share)}</td><td>{_pct(r.selection_share)}</td>"
                f"<td>{ratio:.2f}</td></tr>"
            )
    if not rows:
        return "<p class='missing'>Every cluster holds the same share of the selection as of the corpus.</p>"
    head = (
        "<tr><th></th><th>cluster</th><th>rows</th><th>share of the corpus</th><th>share of the selection</th>"
        "<th>selection / corpus</th></tr>"
    )
    return f"<table class='why-shares'>{head}{''.join(rows)}</table>"


def _row_cell(d: dict, names: dict, texts: bool) -> str:
    parts = [f"<span class='q'>quality {d['quality']:.3g}</span> · id {html.escape(str(d['id']))}"]
    if d.get("cluster") is not None and d["cluster"] >= 0:
        parts.append(f" · {html.escape(_name(names, d['cluster']))}")
    if texts and isinstance(d.get("snippet"), str):
        parts.append(f"<br>{html.escape(d['snippet'])}")
    return "<td>" + "".join(parts) + "</td>"


def _dropped_table(rows: list, names: dict, method: str) -> str:
    texts = any(isinstance(d.get("snippet"), str) for d in rows)
    body = []
    for d in rows:
        near = d.get("nearest_selected")
        near_cell = _row_cell(near, names, texts) if near else "<td class='missing'>nothing selected</td>"
        cos = f"{near['cosine']:.3f}" if near else "–"
        body.append(
            f"<tr>{_row_cell(d, names, texts)}{near_cell}<td>{cos}</td><td>{html.escape(reason(d, method))}</td></tr>"
        )
    head = (
        "<tr><th>dropped row</th><th>its nearest selected row</th><th>cosine</th><th>why (what the data show)</th></tr>"
    )
    return f"<table class='why-dropped'>{head}{''.join(body)}</table>"


def why_section(data, frame, d) -> str:
    """The page's "why" part of a :class:`~.data.ReportData` with ``why`` (and ``frame``, the
    map's rows, for the clusters' names and the sample's fallback); ``d``: where the figure's
    PNG goes. Empty without either."""
    from .figures import figure_html

    why = data.why
    names = dict(zip(frame["cluster"], frame["label"])) if frame is not None and len(frame) else {}
    shares, what = (why or {}).get("shares"), None
    if shares is not None:
        source = (
            "the input's cluster column"
            if why["source"] == "input"
            else "k-means, every row assigned to its nearest centre"
        )
        what = f"every row; clusters: {source}"
    elif frame is not None and len(frame):
        shares = sample_shares(frame)
        what = f"the map's {len(frame):,} sampled rows; clusters: k-means fitted on them"
    if why is None and shares is None:
        return ""
    method = (why or {}).get("method") or str(data.notes.get("method", "selection"))
    parts = ["<h2>Why this selection</h2>"]
    if shares is not None:
        parts.append(
            f"<p class='missing'>Per cluster, its share of the selection against its share of the corpus ({what}), "
            "sorted from the most over-represented to the most under-represented.</p>"
        )
        parts.append(figure_html(fig_cluster_shares(shares, names, what.split(";")[0]), "cluster_shares", d,
                                 "Each cluster's share of the corpus (grey) and of the selection (blue)."))  # fmt: skip
        parts.append(_shares_table(shares, names))
    rows = (why or {}).get("dropped") or []
    if rows:
        line = rows[0]["line"]
        parts.append(
            f"<p class='missing'>The {len(rows)} rows of highest quality that the selection left out (each split "
            f"describes its {DROPPED_ROWS} best; the page keeps the best of those), each beside its nearest selected "
            f"row in its split. Near-duplicates: cosine >= {line:g}. A cluster's share is full when the selection of "
            "the split already holds as large a share of its rows from that cluster as the split does, or larger. "
            "These are facts about the rows, not what the method weighed.</p>"
        )
        parts.append(_dropped_table(rows, names, method))
    return "\n".join(parts)
