"""Out-of-core k-means and per-cluster statistics: the ``datamask cluster`` stage.

Fit on a sample, label everywhere (the corpus never has to fit in memory); the array
k-means itself is :mod:`datamask.core.kmeans`.

* the statistics themselves are :mod:`datamask.analysis.cluster_stats` (re-exported here).
* Dask: :func:`read_corpus`, :func:`sample_embeddings`, :func:`fit_kmeans_dask`
  (sample -> fit; or cuML's Dask k-means on GPU workers), :func:`predict_dask` (a
  ``cluster`` column added per partition, explicit ``meta``), :func:`cluster_stats_dask`,
  :func:`~datamask.stages.corpus.cluster_run.run_cluster` (the stage: labels, centroids, statistics
  written atomically).

Statistics per cluster: ``size``, ``mean_quality``, ``pairwise_diversity`` (minus the
mean cosine over pairs of distinct members, from the member sum: ``-(|sum e|^2 - n) /
(n (n - 1))``; NaN for a singleton), ``mean_tokens`` (NaN without a token column),
``share`` (size / rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.backend import get_namespace, to_numpy
from ..core.kmeans import BACKENDS, assign, check_k, fit_kmeans, unit32
from .cluster_stats import STAT_COLUMNS, cluster_stats, combine_stats, partial_stats, stats_frame  # noqa: F401

__all__ = [
    "BACKENDS",
    "fit_kmeans",
    "assign",
    "check_k",
    "cluster_stats",
    "partial_stats",
    "combine_stats",
    "embeddings_of",
    "read_corpus",
    "sample_embeddings",
    "sample_parts",
    "join_sample",
    "fit_kmeans_dask",
    "predict_dask",
    "cluster_stats_dask",
]


# ---------------------------------------------------------------------- Dask
def embeddings_of(series) -> np.ndarray:
    """(n, d) float array from an embedding column of a pandas (Arrow-backed or object
    of arrays) or cudf frame."""
    from ..pipeline.schema import embedding_matrix

    if type(series).__module__.split(".")[0] == "cudf":
        import cupy

        return cupy.asarray(series.list.leaves.values).reshape(len(series), -1)
    if len(series) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    if isinstance(series.dtype, pd.ArrowDtype):
        arr = series.array.__arrow_array__()
        return embedding_matrix(arr, "split", str(series.name))
    return np.stack([np.asarray(v, dtype=np.float32) for v in series.to_numpy()])


def read_corpus(path, split_size=1_000_000, columns=None):
    """A Dask DataFrame of a corpus (Parquet / JSONL file, directory or glob), one
    partition per split of at most ``split_size`` rows (the pipeline's splits), Arrow
    types kept (the embedding stays a ``fixed_size_list``)."""
    import dask
    import dask.dataframe as dd

    from ..pipeline.io import read_split
    from ..pipeline.split_job import file_splits

    cols = _AnyColumns()
    splits = file_splits(path, split_size)
    if not splits:
        raise ValueError(f"empty input: {path}")

    def load(s):
        t = read_split(s, cols)
        if columns is not None:
            t = t.select(list(columns))
        return t.to_pandas(types_mapper=pd.ArrowDtype)

    first = splits[0]
    from ..pipeline.io import Split

    with dask.config.set({"dataframe.convert-string": False}):
        meta = load(Split(first.path, first.rel, first.fmt, first.start, first.start))
        return dd.from_map(load, splits, meta=meta, enforce_metadata=False)


class _AnyColumns:
    """``Columns`` stand-in for reading: only the embedding column name matters."""

    id, embedding, quality = "id", "embedding", "quality"
    required = ()


def sample_parts(ddf, fraction: float, column="embedding", seed=0) -> list:
    """One Delayed per partition: a seeded ``fraction`` of its rows' embeddings (float32, or
    None when it samples no row). Lazy; :func:`sample_embeddings` computes them."""
    import dask

    if not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"sample fraction must be in (0, 1], got {fraction}")
    parts = ddf[[column]].to_delayed()
    return [dask.delayed(_take_sample, pure=True)(p, i, fraction, column, seed) for i, p in enumerate(parts)]


def _take_sample(df, i, fraction, column, seed):
    n = len(df)
    m = n if fraction >= 1.0 else int(np.random.default_rng([seed, i]).binomial(n, fraction))
    if m == 0:
        return None
    rows = np.sort(np.random.default_rng([seed, i, 1]).choice(n, size=m, replace=False))
    return embeddings_of(df[column].iloc[rows]).astype(np.float32)


def join_sample(mats, fraction, seed=0, max_rows=None) -> np.ndarray:
    """The partitions' samples as one matrix (at most ``max_rows``, seeded)."""
    mats = [m for m in mats if m is not None]
    if not mats:
        raise ValueError(f"the sample ({fraction:.3g} of the rows) is empty; raise --sample-fraction")
    X = np.concatenate(mats)
    if max_rows is not None and X.shape[0] > max_rows:
        X = X[np.random.default_rng(seed).choice(X.shape[0], size=int(max_rows), replace=False)]
    return X


def sample_embeddings(ddf, fraction: float, column="embedding", seed=0, max_rows=None) -> np.ndarray:
    """A random ``fraction`` of the rows' embeddings, as one in-memory matrix."""
    import dask

    return join_sample(dask.compute(*sample_parts(ddf, fraction, column, seed)), fraction, seed, max_rows)


def fit_kmeans_dask(ddf, k: int, sample_fraction=0.1, column="embedding", seed=0, backend="auto", **kw):
    """Fit centroids on a sample of a Dask DataFrame's embeddings (``backend`` as in
    :func:`fit_kmeans`; on a dask-cudf frame ``auto`` uses cuML's Dask k-means on the
    GPU workers). Returns ``(centroids (k, d) float32 numpy, n_sample)``."""
    is_gpu_frame = type(ddf._meta).__module__.split(".")[0] == "cudf"
    if backend == "cuml" or (backend == "auto" and is_gpu_frame):
        # cuML's multi-GPU k-means on a Dask array of cupy blocks: one block per partition of
        # the sample, so the sample stays on the GPU workers. (Not exercised by the CPU test
        # suite; the GPU job runs it.)
        import cupy
        import dask
        import dask.array as da
        from cuml.dask.cluster import KMeans as DaskKMeans

        sample = ddf[[column]].sample(frac=float(sample_fraction), random_state=int(seed) % 2**31)
        blocks = list(dask.persist(*[dask.delayed(_embeddings32)(p, column) for p in sample.to_delayed()]))
        widths = dask.compute(*[dask.delayed(lambda b: b.shape)(b) for b in blocks])
        d = next((w[1] for w in widths if w[0]), None)
        n = int(sum(w[0] for w in widths))
        check_k(k, n, "sampled rows")
        X = da.concatenate(
            [
                da.from_delayed(b, shape=(w[0], d), dtype=np.float32, meta=cupy.empty((0, d), dtype=cupy.float32))
                for b, w in zip(blocks, widths)
                if w[0]
            ]
        )
        km = DaskKMeans(n_clusters=int(k), random_state=int(seed) % 2**31, **kw)
        km.fit(X)
        return to_numpy(km.cluster_centers_).astype(np.float32), n
    X = sample_embeddings(ddf, sample_fraction, column, seed)
    check_k(k, X.shape[0], "sampled rows")
    return fit_kmeans(X, k, seed=seed, backend=backend, **kw), X.shape[0]


def _embeddings32(df, column):
    E = embeddings_of(df[column])
    xp = get_namespace(E)
    if len(df) == 0:
        return xp.zeros((0, 0), dtype=xp.float32)
    return unit32(E, xp)


def predict_split(df, centroids, column, out_column):
    df = df.copy()
    if len(df) == 0:
        df[out_column] = np.zeros(0, dtype=np.int32)
        return df
    E = embeddings_of(df[column])
    xp = get_namespace(E)
    labels, _ = assign(E, xp.asarray(centroids))
    df[out_column] = labels if xp is not np else labels.astype(np.int32)
    return df


def predict_dask(ddf, centroids, column="embedding", out_column="cluster"):
    """Add an int32 ``cluster`` column to every partition (``map_partitions``, explicit meta)."""
    meta = ddf._meta.copy()
    meta[out_column] = np.zeros(0, dtype=np.int32)
    return ddf.map_partitions(
        predict_split,
        np.asarray(centroids, dtype=np.float32),
        column,
        out_column,
        meta=meta,
        enforce_metadata=False,
    )


def _partial_split(df, k, label_col, quality_col, emb_col, tokens_col):
    E = embeddings_of(df[emb_col]) if (emb_col and len(df)) else None
    q = df[quality_col].to_numpy(dtype=np.float64) if quality_col else np.zeros(len(df))
    t = df[tokens_col].to_numpy(dtype=np.float64) if tokens_col else None
    return partial_stats(df[label_col].to_numpy(dtype=np.int64), q, E, t, k)


def cluster_stats_dask(
    ddf,
    k: int,
    cluster_column="cluster",
    quality_column="quality",
    embedding_column="embedding",
    tokens_column="n_tokens",
) -> pd.DataFrame:
    """:func:`cluster_stats` of a Dask DataFrame: per-partition sums, reduced on the
    client (memory: ``k x d`` floats per partition). Missing optional columns (quality,
    tokens) give NaN statistics."""
    import dask

    names = set(ddf.columns)
    qcol = quality_column if quality_column in names else None
    tcol = tokens_column if tokens_column and tokens_column in names else None
    ecol = embedding_column if embedding_column and embedding_column in names else None
    wanted = [c for c in (cluster_column, qcol, tcol, ecol) if c]
    parts = ddf[wanted].to_delayed()
    sums = dask.compute(*[dask.delayed(_partial_split)(p, int(k), cluster_column, qcol, ecol, tcol) for p in parts])
    table = stats_frame(combine_stats(sums))
    if qcol is None:
        table["mean_quality"] = np.nan
    return table


def has_faiss() -> bool:
    import importlib.util

    return importlib.util.find_spec("faiss") is not None
