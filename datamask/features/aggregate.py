"""From component score columns to one ``quality`` column: corpus statistics, normalisation,
weighted sums (global or per domain) and integer bins.

Two passes, both out-of-core:

1. :func:`compute_stats` reads each component column once over the whole corpus (a Dask
   DataFrame; pandas works too) and returns small :class:`ColumnStats`: min, max, mean, std
   and approximate quantiles (Dask's per-partition percentiles merged into one sketch, so no
   partition is ever sorted against another). A NaN or infinite value is an error here.
2. :func:`aggregate_frame` maps each split independently: normalise every component
   with the corpus statistics, optionally bin it, and write
   ``quality = sum_c w_c * component_c`` (float32).

Normalisations (:data:`NORMALIZATIONS`, ``--normalize``):

- ``"minmax"``: ``(x - min) / (max - min)`` in [0, 1];
- ``"rank"``: the approximate corpus percentile of ``x`` in [0, 1] (interpolated between the
  quantiles; tied quantiles share their mean level, so a score with few distinct values gets
  mid-ranks);
- ``"zscore"``: ``(x - mean) / std`` (unbounded; cannot be binned).

A constant column normalises to 0.5 (minmax, rank) or 0 (zscore).

Weights: ``{"fineweb_edu": 1, "dclm": 1}`` is the paper's plain sum. QuaDMix-style per-domain
weights: ``domain_weights={"news": {"dclm": 2, "fineweb_edu": 1}, ...}`` with
``domain_column``; rows whose domain has no entry (or is null) use the global ``weights``.

Bins: with ``bins=K`` each normalised component becomes an integer ``0..K-1`` before the
weighted sum (equal-width bins for minmax, equal-frequency for rank); the paper's 0-15 scale
is three components with ``bins=6`` and unit weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from .text import like_input, to_pandas

__all__ = [
    "ColumnStats",
    "parse_weights",
    "check_score_columns",
    "compute_stats",
    "normalize",
    "aggregate_frame",
    "NORMALIZATIONS",
    "stats_parts",
    "finish_stats",
]

NORMALIZATIONS = ("minmax", "rank", "zscore")  # ``--normalize``


@dataclass
class ColumnStats:
    """Corpus-level statistics of one score column (JSON-able via :meth:`to_dict`)."""

    name: str
    count: int
    min: float
    max: float
    mean: float
    std: float
    quantile_levels: list[float] = field(default_factory=list)
    quantile_values: list[float] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping) -> ColumnStats:
        return cls(**dict(d))


def parse_weights(spec: str) -> dict[str, float]:
    """Parse ``"fineweb_edu:1,dclm:0.5"`` (a bare name means weight 1).

    Raises
    ------
    ValueError
        For an empty spec, a repeated name or a weight that is not a finite number.
    """
    out: dict[str, float] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, _, w = part.partition(":")
        name = name.strip()
        try:
            weight = float(w) if w.strip() else 1.0
        except ValueError:
            raise ValueError(
                f"--scores: weight {w.strip()!r} of {name!r} is not a number (expected NAME:WEIGHT,NAME:WEIGHT)"
            ) from None
        if not name or not np.isfinite(weight):
            raise ValueError(f"--scores: bad entry {part!r} (expected NAME:WEIGHT with a finite weight)")
        if name in out:
            raise ValueError(f"--scores: column {name!r} is given twice")
        out[name] = weight
    if not out:
        raise ValueError("--scores is empty (expected NAME:WEIGHT,NAME:WEIGHT)")
    return out


def _weight_columns(
    weights: Mapping[str, float], domain_weights: Mapping[object, Mapping[str, float]] | None
) -> list[str]:
    cols = list(weights)
    for w in (domain_weights or {}).values():
        cols += [c for c in w if c not in cols]
    return cols


def check_score_columns(
    columns: Sequence[str],
    weights: Mapping[str, float],
    domain_weights: Mapping[object, Mapping[str, float]] | None = None,
    domain_column: str | None = None,
) -> None:
    """Fail early, in one line, when weights name columns that the input does not have."""
    present = set(columns)
    missing = [c for c in _weight_columns(weights, domain_weights) if c not in present]
    if missing:
        raise ValueError(
            f"score columns {missing} named in the weights are absent from the input (columns: {sorted(present)})"
        )
    if domain_weights and domain_column is None:
        raise ValueError("per-domain weights need a domain column (--domain-column)")
    if domain_column is not None and domain_column not in present:
        raise ValueError(f"domain column {domain_column!r} is absent from the input (columns: {sorted(present)})")


def _nonfinite_frame(d: pd.DataFrame) -> pd.DataFrame:
    """One row: the number of NaN/null/infinite values per column of ``d``."""
    return pd.DataFrame(
        {c: [int((~np.isfinite(d[c].to_numpy(dtype=np.float64, na_value=np.nan))).sum())] for c in d.columns}
    )


def compute_stats(data, columns: Sequence[str], *, n_quantiles: int = 1001) -> dict[str, ColumnStats]:
    """Corpus statistics of score columns, in one pass over a Dask (or pandas) DataFrame.

    Parameters
    ----------
    data : dask.dataframe.DataFrame or pandas.DataFrame
        The corpus (only ``columns`` are read).
    columns : sequence of str
        Numeric score columns.
    n_quantiles : int
        Number of evenly spaced quantile levels kept for ``"rank"`` (1001: 0.1% steps).

    Returns
    -------
    dict of str to ColumnStats

    Raises
    ------
    ValueError
        A column is absent or not numeric, holds NaN/null or infinite values, or the corpus is empty.
    """
    columns = list(columns)
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise ValueError(f"score columns {missing} are absent from the input (columns: {list(data.columns)})")
    for c in columns:
        dt = data[c].dtype
        if not (pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt)):
            raise ValueError(f"score column {c!r} has dtype {dt}, not a number")
    levels = np.linspace(0.0, 1.0, n_quantiles)
    is_dask = type(data).__module__.split(".")[0].startswith("dask")
    if is_dask:
        import dask

        return finish_stats(columns, levels, *dask.compute(*stats_parts(data, columns, levels)))  # one pass
    sub = to_pandas(data[columns].astype("float64"))
    return finish_stats(
        columns,
        levels,
        _nonfinite_frame(sub).sum(),
        sub.count(),
        sub.min(),
        sub.max(),
        sub.mean(),
        sub.std(),
        *[sub[c].quantile(levels) for c in columns],
    )


def stats_parts(data, columns, levels):
    """The lazy Dask reductions behind :func:`compute_stats` (checked columns of a Dask
    DataFrame); :func:`finish_stats` turns their values into the statistics."""
    sub = data[list(columns)].astype("float64")
    bad_counts = sub.map_partitions(
        _nonfinite_frame, meta=pd.DataFrame({c: pd.Series(dtype="int64") for c in columns})
    ).sum()
    return [bad_counts, sub.count(), sub.min(), sub.max(), sub.mean(), sub.std()] + [
        sub[c].quantile(levels) for c in columns
    ]


def finish_stats(columns, levels, bad, count, mn, mx, mean, std, *quantiles) -> dict[str, ColumnStats]:
    """``{column: ColumnStats}`` from the reductions' values; a ValueError for NaN/inf or no rows."""
    quant = dict(zip(columns, quantiles))
    for c in columns:
        if int(bad[c]):
            raise ValueError(
                f"score column {c!r} has {int(bad[c])} NaN, null or infinite values; "
                "fill or drop those rows before scoring"
            )
    out = {}
    for c in columns:
        if int(count[c]) == 0:
            raise ValueError(f"score column {c!r} has no rows: the input is empty")
        # Dask's merged percentiles can be out of order (seen: level 0 reported as the maximum
        # on a column with few distinct values): pin the ends to the exact min/max and sort.
        q = np.asarray(quant[c], dtype=np.float64).copy()
        q[0], q[-1] = float(mn[c]), float(mx[c])
        q = np.sort(np.clip(q, q[0], q[-1]))
        out[c] = ColumnStats(
            name=c,
            count=int(count[c]),
            min=float(mn[c]),
            max=float(mx[c]),
            mean=float(mean[c]),
            std=float(std[c]) if np.isfinite(std[c]) else 0.0,
            quantile_levels=levels.tolist(),
            quantile_values=q.tolist(),
        )
    return out


def normalize(values, stats: ColumnStats, method: str = "minmax") -> np.ndarray:
    """Normalise raw scores with corpus statistics (see module docstring); float64 out."""
    x = np.asarray(values, dtype=np.float64)
    if method == "minmax":
        span = stats.max - stats.min
        if span <= 0:
            return np.full_like(x, 0.5)
        return np.clip((x - stats.min) / span, 0.0, 1.0)
    if method == "zscore":
        if stats.std <= 0:
            return np.zeros_like(x)
        return (x - stats.mean) / stats.std
    if method == "rank":
        qv = np.asarray(stats.quantile_values, dtype=np.float64)
        ql = np.asarray(stats.quantile_levels, dtype=np.float64)
        uniq, inv = np.unique(qv, return_inverse=True)
        if len(uniq) == 1:
            return np.full_like(x, 0.5)
        lev = np.bincount(inv, weights=ql) / np.bincount(inv)  # tied quantiles -> mean level
        return np.interp(x, uniq, lev)
    raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {method!r}")


def aggregate_frame(
    df,
    weights: Mapping[str, float],
    stats: Mapping[str, ColumnStats],
    *,
    normalize: str = "minmax",
    domain_column: str | None = None,
    domain_weights: Mapping[object, Mapping[str, float]] | None = None,
    bins: int | None = None,
    output: str = "quality",
):
    """Write the aggregated ``quality`` column of one frame (a split).

    Parameters
    ----------
    df : pandas.DataFrame or cudf.DataFrame
        The split, holding every column named in the weights.
    weights : mapping of str to float
        Global component weights.
    stats : mapping of str to ColumnStats
        From :func:`compute_stats` over the whole corpus (every weighted column needed).
    normalize : {"minmax", "rank", "zscore"}
        Normalisation of each component (``--normalize``).
    domain_column : str, optional
        Column whose value picks the weights from ``domain_weights``.
    domain_weights : mapping of domain to mapping of str to float, optional
        Per-domain weights; unknown or null domains use ``weights``.
    bins : int, optional
        Integer-bin each normalised component to ``0..bins-1`` first (minmax or rank only).
    output : str
        Output column name (float32).

    Returns
    -------
    DataFrame
        ``df`` with ``output`` added (same library as the input).

    Raises
    ------
    ValueError
        Absent columns, missing statistics, NaN values, bad normalisation or bins.
    """
    _check_normalization(normalize, bins)
    pdf = to_pandas(df)
    check_score_columns(pdf.columns, weights, domain_weights, domain_column)
    comps = _components(pdf, _weight_columns(weights, domain_weights), stats, normalize, bins)
    total = np.zeros(len(pdf), dtype=np.float64)
    for c, w in weights.items():
        total += w * comps[c]
    if domain_weights:
        dom = pdf[domain_column]
        as_text = all(isinstance(d, str) for d in domain_weights) and not pd.api.types.is_string_dtype(dom)
        if as_text:  # keys from the command line or YAML are text; an integer cluster column matches them as text
            dom = dom.astype("string")
        for d, dw in domain_weights.items():
            rows = (dom == d).fillna(False).to_numpy(dtype=bool)
            if rows.any():
                t = np.zeros(int(rows.sum()))
                for c, w in dw.items():
                    t += w * comps[c][rows]
                total[rows] = t
    out = pdf.copy()
    out[output] = total.astype(np.float32)
    return like_input(out, df)


def _check_normalization(how, bins):
    if how not in NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {how!r}")
    if bins is not None:
        if int(bins) != bins or bins < 2:
            raise ValueError(f"bins must be an integer >= 2, got {bins!r}")
        if how == "zscore":
            raise ValueError("bins need a bounded normalisation: use --normalize minmax or rank")


def _components(pdf, cols, stats, how, bins) -> dict:
    """Every weighted column normalised with the corpus statistics (and binned)."""
    absent = [c for c in cols if c not in stats]
    if absent:
        raise ValueError(f"no corpus statistics for score columns {absent}; run compute_stats over them first")
    comps = {}
    for c in cols:
        raw = pd.to_numeric(pdf[c], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        n_bad = int((~np.isfinite(raw)).sum())
        if n_bad:
            raise ValueError(
                f"score column {c!r} has {n_bad} NaN, null or infinite values in this "
                "split; fill or drop those rows before scoring"
            )
        v = normalize(raw, stats[c], how)
        if bins is not None:
            v = np.minimum(np.floor(v * bins), bins - 1)
        comps[c] = v
    return comps
