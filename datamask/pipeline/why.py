"""What the report says about why a selection is what it is: facts gathered on the worker,
per split, with the split's arrays (nothing per document goes to the client).

:func:`split_why` returns the split record's ``why``:

``clusters``  the split's rows and selected rows per cluster: the input's ``cluster`` column,
              or the report's k-means centroids (fitted on a sample of the input before the
              splits ran, ``select``'s :func:`report_centroids`) assigned here; at most
              :data:`MAX_CLUSTERS` clusters a split (more: counted, not listed)
``dropped``   the :data:`DROPPED_ROWS` rows of highest quality the selection left out, each
              with its nearest selected row (id, quality, cluster, text snippet, cosine), its
              cluster's rows and selected rows in the split, and its nearest other row when
              that one is a near-duplicate that was not selected either
``line``      the cosine from which two rows are near-duplicates (the run's
              ``near_duplicate`` when it has one, else semantic dedup's 0.95)

The reasons the report gives (:mod:`datamask.analysis.report.why`) are read from these facts.
One pass over the split's rows in blocks of :data:`BLOCK` against the :data:`DROPPED_ROWS`
rows: O(N d) for the nearest rows, on the split's device.
"""

from __future__ import annotations

import numpy as np

from ..core.backend import get_namespace, to_numpy
from ..core.scorecard import NEAR_DUPLICATE_COSINE
from ..core.validate import unit_rows

__all__ = ["split_why", "snippets", "SNIPPET", "DROPPED_ROWS", "MAX_CLUSTERS", "CLUSTER_COLUMN", "near_line"]

DROPPED_ROWS = 20  # the highest-quality rows left out that each split describes (the report keeps as many)
MAX_CLUSTERS = 1000  # the most clusters a split's record lists
SNIPPET = 200  # characters of each text the report shows
CLUSTER_COLUMN = "cluster"
BLOCK = 16_384  # rows of the split per product with the dropped rows


def snippets(texts, n=SNIPPET) -> list:
    """The first ``n`` characters of each text (whitespace collapsed; None stays None)."""
    return [None if t is None else " ".join(str(t)[: n * 2].split())[:n] for t in texts]


def near_line(cfg) -> float:
    """The cosine from which two rows are near-duplicates: the run's ``near_duplicate``
    (its redundancy filter) when set, else :data:`~datamask.core.scorecard.NEAR_DUPLICATE_COSINE`."""
    v = getattr(cfg, "near_duplicate", None)
    return float(v) if v else NEAR_DUPLICATE_COSINE


def split_labels(table, E, centroids, column=CLUSTER_COLUMN):
    """(labels (N,) int64 on the host, where they came from) or (None, None): the table's
    ``column`` (the run's ``domain_column``; nulls -1), else the nearest of ``centroids``."""
    if column in table.schema.names:
        col = table.column(column).fill_null(-1)
        return np.asarray(col.to_numpy(), dtype=np.int64), "input"
    if centroids is None:
        return None, None
    from ..core.kmeans import assign

    return np.asarray(to_numpy(assign(E, centroids)[0]), dtype=np.int64), "k-means"


def _cluster_counts(labels, mask) -> dict:
    ids, rows = np.unique(labels[labels >= 0], return_counts=True)
    if len(ids) > MAX_CLUSTERS:
        return {"n_clusters": int(len(ids)), "listed": False}
    sel = np.unique(labels[mask & (labels >= 0)], return_counts=True)
    picked = dict(zip(sel[0].tolist(), sel[1].tolist()))
    return {
        "n_clusters": int(len(ids)),
        "listed": True,
        "ids": ids.tolist(),
        "rows": rows.tolist(),
        "selected": [int(picked.get(c, 0)) for c in ids.tolist()],
    }


def _unit(xp, X):
    X = unit_rows(X)  # a float32 copy (float16: the compiled cast)
    X /= xp.maximum(xp.sqrt(xp.einsum("ij,ij->i", X, X)), 1e-12)[:, None]
    return X


def nearest_rows(E, rows, mask, block=BLOCK):
    """For each of ``rows`` (host ints) of ``E`` (N, d; numpy or cupy, any float type): its
    nearest selected row and its nearest other row, by cosine. Returns host arrays
    ``(sel_row, sel_cos, any_row, any_cos)`` (-1 and -inf where there is none)."""
    xp = get_namespace(E)
    k, n = len(rows), E.shape[0]
    Q = _unit(xp, E[xp.asarray(rows)])
    m = xp.asarray(mask, dtype=bool)
    own = xp.asarray(rows)
    best = {"sel": xp.full(k, -np.inf, dtype=xp.float32), "any": xp.full(k, -np.inf, dtype=xp.float32)}
    arg = {"sel": xp.full(k, -1, dtype=xp.int64), "any": xp.full(k, -1, dtype=xp.int64)}
    ar = xp.arange(k)
    for i0 in range(0, n, block):
        i1 = min(i0 + block, n)
        G = Q @ _unit(xp, E[i0:i1]).T  # (k, block)
        inside = (own >= i0) & (own < i1)
        G[ar[inside], own[inside] - i0] = -np.inf  # a row is not its own neighbour
        for key, H in (("any", G), ("sel", xp.where(m[i0:i1][None, :], G, -np.inf))):
            j = H.argmax(axis=1)
            v = H[ar, j]
            better = v > best[key]
            best[key] = xp.where(better, v, best[key])
            arg[key] = xp.where(better & xp.isfinite(v), j + i0, arg[key])
    host = {key: (to_numpy(arg[key]), to_numpy(best[key]).astype(np.float64)) for key in ("sel", "any")}
    return (*host["sel"], *host["any"])


def _take(values, rows) -> list:
    """``values[rows]`` of an Arrow array or a list, as plain Python values."""
    if hasattr(values, "take"):
        return values.take(np.asarray(rows, dtype=np.int64)).to_pylist()
    return [values[int(i)] for i in rows]


def split_why(E, q, mask, ids, *, texts=None, labels=None, source=None, line=NEAR_DUPLICATE_COSINE,
              n_rows=DROPPED_ROWS) -> dict:  # fmt: skip
    """The split record's ``why`` (see the module doc).

    E : (N, d) the split's embeddings (numpy or cupy); q : (N,) quality; mask : (N,) bool
    selected; ids, texts : the id and text columns (Arrow arrays or lists; texts None: no
    text column); labels : (N,) int host cluster ids (-1: none) or None; source : where the
    labels came from ("input" or "k-means"); line : the near-duplicate cosine.
    """
    mask = np.asarray(to_numpy(mask), dtype=bool)
    qh = np.asarray(to_numpy(q), dtype=np.float64)
    out = {"line": float(line), "selected": int(mask.sum()), "rows": int(mask.shape[0]), "dropped": []}
    if labels is not None:
        out["clusters"] = dict(_cluster_counts(labels, mask), source=source)
    left = np.flatnonzero(~mask)
    if not len(left):
        return out
    out["lowest_selected_quality"] = float(qh[mask].min()) if mask.any() else None
    top = left[np.argsort(-qh[left], kind="stable")[:n_rows]]
    if mask.any():
        sel_row, sel_cos, any_row, any_cos = nearest_rows(E, top, mask)
    else:
        sel_row = any_row = np.full(len(top), -1)
        sel_cos = any_cos = np.full(len(top), -np.inf)
    want = np.unique(np.concatenate([top, sel_row[sel_row >= 0], any_row[any_row >= 0]]))
    at = {int(r): i for i, r in enumerate(want)}
    vid = _take(ids, want)
    vtext = snippets(_take(texts, want)) if texts is not None else [None] * len(want)
    counts = {}
    if labels is not None:
        cl, rows = np.unique(labels, return_counts=True)
        counts = {int(c): (int(r), int((labels[mask] == c).sum())) for c, r in zip(cl, rows) if c in labels[top]}

    def row(r):
        r = int(r)
        d = {"id": vid[at[r]], "quality": float(qh[r]), "snippet": vtext[at[r]]}
        if labels is not None:
            d["cluster"] = int(labels[r])
        return d

    for i, r in enumerate(top):
        d = row(r)
        if labels is not None and d["cluster"] >= 0:
            d["cluster_rows"], d["cluster_selected"] = counts[d["cluster"]]
        if sel_row[i] >= 0:
            d["nearest_selected"] = dict(row(sel_row[i]), cosine=round(float(sel_cos[i]), 6))
        if any_row[i] >= 0 and not mask[any_row[i]] and any_cos[i] >= line:
            d["near_duplicate_dropped"] = dict(row(any_row[i]), cosine=round(float(any_cos[i]), 6))
        out["dropped"].append(d)
    return out
