"""Per-cluster statistics of labelled rows, in memory or as per-partition sums.

:func:`cluster_stats` is the per-array table; :func:`partial_stats` and
:func:`combine_stats` are its out-of-core form (per-partition sums, reduced on the client),
so the Dask version gives the same numbers as the in-memory one.

Statistics per cluster: ``size``, ``mean_quality``, ``pairwise_diversity`` (minus the mean
cosine over pairs of distinct members, from the member sum: ``-(|sum e|^2 - n) / (n (n - 1))``;
NaN for a singleton), ``mean_tokens`` (NaN without a token column), ``share`` (size / rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.backend import get_namespace, to_numpy
from ..core.kmeans import ASSIGN_BLOCK, unit32

__all__ = ["STAT_COLUMNS", "partial_stats", "combine_stats", "stats_frame", "cluster_stats"]


STAT_COLUMNS = ["cluster", "size", "share", "mean_quality", "pairwise_diversity", "mean_tokens"]


def partial_stats(labels, quality, E=None, n_tokens=None, k=None) -> dict:
    """Per-cluster sums of one partition: count, quality, tokens, embedding sum (numpy).

    ``E`` (numpy or cupy) rows are L2-normalised first (float16 storage rounds the norms).
    """
    lab = to_numpy(labels).astype(np.int64)
    k = int(lab.max()) + 1 if k is None else int(k)
    if lab.size and (lab.min() < 0 or lab.max() >= k):
        raise ValueError(f"cluster labels must lie in [0, {k})")
    out = {
        "k": k,
        "count": np.bincount(lab, minlength=k).astype(np.int64),
        "sum_quality": np.bincount(lab, weights=to_numpy(quality).astype(np.float64), minlength=k),
        "sum_tokens": None,
        "sum_e": None,
    }
    if n_tokens is not None:
        out["sum_tokens"] = np.bincount(lab, weights=to_numpy(n_tokens).astype(np.float64), minlength=k)
    if E is not None:
        # on the device of E (only the k x d sums come back), in float64: the diversity is a
        # difference of two large numbers for a tight cluster
        xp = get_namespace(E)
        s = xp.zeros((k, E.shape[1]), dtype=xp.float64)
        lab_d = xp.asarray(lab)
        for i0 in range(0, E.shape[0], ASSIGN_BLOCK):
            xp.add.at(s, lab_d[i0 : i0 + ASSIGN_BLOCK], unit32(E[i0 : i0 + ASSIGN_BLOCK], xp).astype(xp.float64))
        out["sum_e"] = to_numpy(s)
    return out


def combine_stats(parts) -> dict:
    """Add up :func:`partial_stats` dicts (same ``k``)."""
    parts = list(parts)
    if not parts:
        raise ValueError("no partial statistics to combine")
    k = max(p["k"] for p in parts)
    out = {"k": k}
    for key in ("count", "sum_quality", "sum_tokens", "sum_e"):
        vals = [p[key] for p in parts if p[key] is not None]
        if not vals:
            out[key] = None
            continue
        acc = np.zeros((k,) + vals[0].shape[1:], dtype=vals[0].dtype)
        for v in vals:
            acc[: v.shape[0]] += v
        out[key] = acc
    return out


def stats_frame(sums: dict) -> pd.DataFrame:
    """The statistics table from (combined) sums."""
    n = sums["count"].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_q = np.where(n > 0, sums["sum_quality"] / np.maximum(n, 1), np.nan)
        tok = (
            np.where(n > 0, sums["sum_tokens"] / np.maximum(n, 1), np.nan)
            if sums["sum_tokens"] is not None
            else np.full(len(n), np.nan)
        )
        if sums["sum_e"] is not None:
            sq = (sums["sum_e"] ** 2).sum(axis=1)
            div = np.where(n > 1, -(sq - n) / (n * (n - 1)), np.nan)
        else:
            div = np.full(len(n), np.nan)
    total = n.sum()
    return pd.DataFrame(
        {
            "cluster": np.arange(len(n), dtype=np.int32),
            "size": sums["count"].astype(np.int64),
            "share": n / total if total else n,
            "mean_quality": mean_q,
            "pairwise_diversity": div,
            "mean_tokens": tok,
        }
    )


def cluster_stats(labels, quality, E=None, n_tokens=None, k=None) -> pd.DataFrame:
    """Per-cluster ``size, share, mean_quality, pairwise_diversity, mean_tokens``."""
    return stats_frame(partial_stats(labels, quality, E, n_tokens, k))
