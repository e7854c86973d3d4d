"""The numbers of the report's "why" section (:mod:`.why` draws them), read from the split
records' ``why`` (gathered on the workers, :mod:`datamask.pipeline.why`), never from the rows.

:func:`why_data` merges the records (cluster counts summed, the dropped rows of highest
quality kept); :func:`sample_shares` is the fallback of an output without cluster counts
(the map's sample and its k-means).
"""

from __future__ import annotations

import pandas as pd

from ...pipeline.why import DROPPED_ROWS

__all__ = ["why_data", "cluster_shares", "sample_shares", "dropped_rows"]


def cluster_shares(records) -> tuple[pd.DataFrame | None, str | None]:
    """``(frame, source)``: per cluster, ``rows`` and ``selected`` summed over the records'
    ``why.clusters`` and each one's share (``corpus_share``, ``selection_share``, both summing
    to 1); ``(None, why not)`` when a record has no counts."""
    parts = [(r.get("why") or {}).get("clusters") for r in records if r.get("rows_in")]
    if not parts or any(p is None for p in parts):
        return None, None
    if not all(p["listed"] for p in parts):
        n = max(p["n_clusters"] for p in parts)
        return None, f"a split holds {n:,} clusters, more than the records list"
    frames = [pd.DataFrame({"cluster": p["ids"], "rows": p["rows"], "selected": p["selected"]}) for p in parts]
    df = pd.concat(frames).groupby("cluster", sort=True)[["rows", "selected"]].sum().reset_index()
    if not len(df) or df["rows"].sum() == 0:
        return None, "no row has a cluster"
    return _shares(df), parts[0]["source"]


def _shares(df: pd.DataFrame) -> pd.DataFrame:
    df = df.assign(
        corpus_share=df["rows"] / df["rows"].sum(), selection_share=df["selected"] / max(int(df["selected"].sum()), 1)
    )
    return df.assign(difference=df["selection_share"] - df["corpus_share"])


def sample_shares(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """:func:`cluster_shares`' frame over the map's sampled rows (``cluster``, ``selected``)."""
    if frame is None or not len(frame) or not frame["selected"].any():
        return None
    g = frame.groupby("cluster", sort=True)["selected"]
    return _shares(pd.DataFrame({"rows": g.size(), "selected": g.sum()}).reset_index())


def dropped_rows(records, n=DROPPED_ROWS) -> list:
    """The ``n`` highest-quality dropped rows of all records, each with its split's numbers
    (``split``, ``split_rows``, ``split_selected``, ``lowest_selected_quality``)."""
    rows = []
    for r in records:
        w = r.get("why") or {}
        for d in w.get("dropped", ()):
            rows.append(dict(d, split=r.get("name"), split_rows=w["rows"], split_selected=w["selected"],
                             lowest_selected_quality=w.get("lowest_selected_quality"), line=w["line"]))  # fmt: skip
    rows.sort(key=lambda d: -d["quality"])  # stable: a split's own order among equal quality
    return rows[:n]


def why_data(records, method: str) -> dict | None:
    """What the section draws, from a run's split records; None when no record has a ``why``
    (an output written before they had one)."""
    if not any(r.get("why") for r in records):
        return None
    shares, source = cluster_shares(records)
    return {"method": method, "shares": shares, "source": source, "dropped": dropped_rows(records)}
