"""Semantic duplicates for ``datamask dedup --kind semantic`` (step 4 of :mod:`.dedup_groups`).

Per split, the embeddings of the rows the exact and fuzzy steps kept, with their cluster (the
domain column, or k-means fitted on a sample of the corpus); a Dask shuffle on the cluster;
the SemDeDup kernel per cluster, highest quality kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from ..io import Split, read_split
from .dedup_read import column_names, document_numbers, gather, per_split, read_quality

__all__ = ["semantic_groups"]

KMEANS_SAMPLE = 50_000  # rows of the corpus sampled to fit k-means when there is no domain column


def _cluster_codes(values) -> np.ndarray:
    """Equal cluster values -> equal int64 codes on every worker (any column type)."""
    return pd.util.hash_array(np.asarray(values, dtype=object), categorize=True).view(np.int64)


def _semantic_rows(s: Split, removed, *, cols, ranks, quality_column, domain_column, centroids):
    from ...core.kmeans import assign
    from ..schema import embedding_matrix

    table = read_split(s, cols)
    doc = document_numbers(s, ranks)
    live = ~np.isin(doc, removed) & ~np.asarray(table.column(cols.text).is_null().to_numpy(zero_copy_only=False))
    table = table.filter(pa.array(live))
    E = embedding_matrix(table.column(cols.embedding), s.where(), cols.embedding, s.start)
    if centroids is None:
        cl = _cluster_codes(table.column(domain_column).to_pylist())
    else:
        cl = np.asarray(assign(E, centroids)[0]).astype(np.int64)
    q = read_quality(table, quality_column)
    n = table.num_rows
    return pd.DataFrame(
        {
            "doc": doc[live],
            "cluster": cl,
            "quality": q if q is not None else np.full(n, np.nan),
            "emb": pd.Series(
                table.column(cols.embedding).combine_chunks(),
                dtype=pd.ArrowDtype(table.schema.field(cols.embedding).type),
            )
            if n
            else pd.Series([], dtype=pd.ArrowDtype(table.schema.field(cols.embedding).type)),
        }
    )


def _semantic_partition(df, *, eps, device):
    from ...dedup.semantic import semantic_duplicates
    from ..gpu import CPU, Level
    from ..gpu_worker import DeviceWork, device_array
    from ..schema import embedding_matrix

    if len(df) == 0:
        return pd.DataFrame({"doc": np.zeros(0, np.int64), "kept": np.zeros(0, np.int64)})
    E = embedding_matrix(pa.array(df["emb"]), "semantic dedup", "embedding")
    # on a GPU: the per-GPU lock (one partition on the device at a time) and a one-line OOM
    level = Level("cuda", arrays="cupy") if device == "gpu" else CPU
    with DeviceWork(
        level,
        f"semantic dedup of {len(df):,} rows",
        len(df),
        data_bytes=E.nbytes,
        flag="raise --n-clusters (smaller clusters per split)",
    ):
        r, k, _ = semantic_duplicates(
            device_array(E, level), df["cluster"].to_numpy(), df["quality"].to_numpy(), eps, doc=df["doc"].to_numpy()
        )
    return pd.DataFrame({"doc": r, "kept": k})


def _sample_rows(s: Split, n, *, cols):
    from ..schema import embedding_matrix

    table = read_split(s, cols)
    if n < table.num_rows:
        table = table.take(pa.array(np.random.default_rng(s.start).choice(table.num_rows, n, replace=False)))
    E = embedding_matrix(table.column(cols.embedding), s.where(), cols.embedding, s.start)
    return pd.DataFrame({"i": np.arange(E.shape[0]), "emb": list(E)})


def semantic_groups(client, plan, cols, ranks, cfg, removed, device):
    """Removed documents and their kept ones, by SemDeDup within clusters."""
    import dask
    import dask.dataframe as dd

    from ...core.kmeans import fit_kmeans
    from ...dedup.semantic import default_n_clusters

    first = plan.splits[0]
    centroids = None
    if cfg.domain_column not in column_names(plan, cols):
        per = min(1.0, KMEANS_SAMPLE * 1.0 / plan.n_rows)  # a sample, never more than every row
        counts = [min(s.rows, max(1, int(round(per * s.rows)))) for s in plan.splits]
        with dask.config.set({"dataframe.convert-string": False}):
            sample = dd.from_map(
                _sample_rows,
                plan.splits,
                counts,
                cols=cols,
                meta=pd.DataFrame({"i": np.zeros(0, np.int64), "emb": pd.Series([], dtype=object)}),
                enforce_metadata=False,
            )
        got = gather(client, sample, "dedup k-means sample", cfg.quiet, len(plan.splits))
        E = np.stack(got["emb"].to_list()).astype(np.float32)
        k = min(int(cfg.n_clusters or default_n_clusters(plan.n_rows)), E.shape[0])
        centroids = np.asarray(fit_kmeans(E, k, seed=int(cfg.seed)))
    first_rows = _semantic_rows(
        Split(first.path, first.rel, first.fmt, first.start, first.start),
        removed[:0],
        cols=cols,
        ranks=ranks,
        quality_column=cfg.quality_column,
        domain_column=cfg.domain_column,
        centroids=centroids,
    )
    rows = per_split(
        _semantic_rows,
        plan,
        ranks,
        removed,
        first_rows.iloc[:0],
        cols=cols,
        quality_column=cfg.quality_column,
        domain_column=cfg.domain_column,
        centroids=centroids,
    )
    n = rows.npartitions
    with dask.config.set({"dataframe.convert-string": False}):
        # tasks: the p2p shuffle cannot carry a fixed-size-list column
        groups = rows.shuffle(on="cluster", npartitions=n, shuffle_method="tasks").map_partitions(
            _semantic_partition,
            eps=float(cfg.eps),
            device=device,
            meta=pd.DataFrame({"doc": np.zeros(0, np.int64), "kept": np.zeros(0, np.int64)}),
            enforce_metadata=False,
        )
    out = gather(client, groups, "dedup semantic", cfg.quiet, n)
    r, k = out["doc"].to_numpy(np.int64), out["kept"].to_numpy(np.int64)
    return r, k, int(np.unique(k).shape[0])
