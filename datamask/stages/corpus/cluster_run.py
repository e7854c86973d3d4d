"""The ``datamask cluster`` stage: label every split with the fitted centroids, write the
labelled splits (and, on request, one folder per cluster), the centroids and the per-cluster
statistics, ``cluster.json`` last (:mod:`.clusters` holds the fit, the labelling and the
statistics it uses).
"""

from __future__ import annotations

import time
import warnings

import dask
import numpy as np
import pandas as pd

from ...analysis.cluster_stats import combine_stats, partial_stats, stats_frame
from ...analysis.clusters import embeddings_of, has_faiss, read_corpus, sample_embeddings
from ...core.backend import get_namespace, to_numpy
from ...core.kmeans import assign, check_k, fit_kmeans, inertia, readable_n_clusters
from ...pipeline.split_job import file_splits

__all__ = ["run_cluster", "check_written"]


def _write_split(
    df,
    partition_info=None,
    *,
    names,
    out_root,
    centroids,
    column,
    by_cluster,
    level,
    quality_column=None,
    tokens_column=None,
):
    """Label one split (on the level's arrays: one matrix product per block against the
    centroids, on the GPU for cuda/rapids), write it and its per-cluster pieces; return its
    row count and its per-cluster sums (:func:`partial_stats`, taken while the embeddings are
    in memory, so the statistics need no second read of the output)."""
    import pyarrow as pa

    from ...pipeline.io import write_parquet_atomic
    from ...runtime.gpu_worker import DeviceWork, device_array
    from ...runtime.storage import location

    name = names[partition_info["number"]] if partition_info else names[0]
    out = location(out_root)
    df = df.copy()
    k = len(centroids)
    q = df[quality_column].to_numpy(dtype=np.float64) if quality_column else np.zeros(len(df))
    t = df[tokens_column].to_numpy(dtype=np.float64) if tokens_column else None
    if len(df):
        E = embeddings_of(df[column])
        with DeviceWork(level, f"split {name}", len(df), data_bytes=E.nbytes):
            E = device_array(E, level)
            lab = to_numpy(assign(E, get_namespace(E).asarray(centroids))[0]).astype(np.int32)
            sums = partial_stats(lab, q, E, t, k)
            del E
    else:
        lab = np.zeros(0, dtype=np.int32)
        sums = partial_stats(lab, q, None, t, k)
    df["cluster"] = lab
    # no pandas metadata: its ArrowDtype names do not round-trip through plain to_pandas()
    table = pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(None)
    write_parquet_atomic(table, out / "data" / f"{name}.parquet")
    if by_cluster:
        for c in np.unique(lab):
            piece = table.filter(pa.array(lab == c))
            write_parquet_atomic(piece, out / "by_cluster" / "_pieces" / f"cluster-{c:05d}" / f"{name}.parquet")
    return pd.DataFrame({"name": [name], "rows": [len(df)], "sums": [sums]})


def check_written(out, done):
    """The client's own look at the labelled files the workers wrote: each split's file
    exists here with its rows; otherwise one line saying the output must be shared storage."""
    from ...errors import OutputError
    from ...pipeline.output import SHARED_STORAGE
    from ...runtime.files import parquet_rows

    for name, rows in zip(done["name"], done["rows"]):
        f = out / "data" / f"{name}.parquet"
        if parquet_rows(f) != int(rows):
            raise OutputError(
                f"split {name} was labelled on a worker, but {f} is missing or short here on the client: {SHARED_STORAGE}"
            )


# Lloyd restarts (best inertia kept): on a GPU each costs a few hundred GEMMs, and
# one start can merge two clusters (tests/analysis/test_clusters.py).
LLOYD_INITS = 3


def _merge_cluster(out_root, c):
    """Concatenate one cluster's pieces into ``by_cluster/cluster-NNNNN.parquet``."""
    import pyarrow as pa

    from ...pipeline.io import write_parquet_atomic
    from ...runtime.files import read_parquet_table
    from ...runtime.storage import location, rmtree

    root = location(out_root)
    d = root / "by_cluster" / "_pieces" / f"cluster-{c:05d}"
    files = sorted(d.glob("*.parquet"), key=str)
    table = pa.concat_tables([read_parquet_table(f) for f in files])
    write_parquet_atomic(table, root / "by_cluster" / f"cluster-{c:05d}.parquet")
    rmtree(d)
    return table.num_rows


def run_cluster(
    input,
    output,
    k: int | None,
    sample_fraction=0.1,
    seed=0,
    split_size=1_000_000,
    by_cluster=False,
    backend="auto",
    device="cpu",
    embedding_column="embedding",
    quality_column="quality",
    tokens_column="n_tokens",
    client=None,
    max_sample_rows=None,
    level=None,
) -> dict:
    """``datamask cluster``: fit k-means on a sample, label every row, write statistics.

    Writes under ``output``: ``data/<split>.parquet`` (the input rows plus an int32
    ``cluster`` column, one file per split), ``centroids.parquet`` (``cluster``,
    ``centroid``), ``cluster_stats.parquet`` (see module doc), ``cluster.json`` (summary)
    and, with ``by_cluster``, ``by_cluster/cluster-NNNNN.parquet``: the corpus rewritten
    with one file, hence one pipeline split, per cluster (while a cluster fits in
    ``split_size``; a larger one is warned about and split by ``datamask select``).
    Everything runs split by split, so the corpus need not fit in memory (``k`` None: ``readable_n_clusters``).

    ``level`` (a :class:`~datamask.runtime.gpu.Level`; default: from ``device``) says
    where: ``auto`` fits with cuML on the RAPIDS level, else on the host sample (faiss when
    installed, else scikit-learn; every core on a GPU machine), and labels every row on the
    level's arrays (cupy on cuda/rapids). Returns the summary (also in ``cluster.json``).
    """
    from ...pipeline.io import write_json_atomic
    from ...runtime.gpu import CPU, select_level
    from ...runtime.storage import location

    t0 = time.perf_counter()
    level = level or (CPU if device == "cpu" else select_level(device))
    out = location(output)
    ddf = read_corpus(input, split_size=split_size)
    splits = file_splits(input, split_size)  # one listing, one footer read a file
    names, n_rows = [s.name for s in splits], sum(s.rows for s in splits)
    if embedding_column not in ddf.columns:
        raise ValueError(f"input has no column {embedding_column!r} (columns: {', '.join(ddf.columns)})")
    k, given = (int(k), True) if k is not None else (readable_n_clusters(n_rows), False)
    check_k(k, int(n_rows))
    ctx = dask.config.set(scheduler=client.get) if client is not None else dask.config.set({})
    with ctx, dask.config.set({"dataframe.convert-string": False}):
        if backend == "auto":
            backend = level.kmeans if level.kmeans != "faiss" or has_faiss() else "sklearn"
        X = sample_embeddings(ddf, sample_fraction, embedding_column, seed, max_rows=max_sample_rows)
        k = k if given else max(1, min(k, X.shape[0]))  # the default never asks for more than the sample
        cent, fit_seconds = _fit(X, k, seed, backend, level)
        present = [c if c and c in ddf.columns else None for c in (quality_column, tokens_column)]
        columns = dict(column=embedding_column, quality_column=present[0], tokens_column=present[1])
        t_label = time.perf_counter()
        done, stats = _label(ddf, names, out, cent, by_cluster, level, columns)
        label_seconds = time.perf_counter() - t_label
    warn = _warn_big(stats, split_size)
    _write_centroids(out, cent, stats)
    summary = {
        "n_clusters": int(k),
        "rows": int(done["rows"].sum()),
        "splits": int(len(done)),
        "sample_rows": int(X.shape[0]),
        "sample_fraction": float(sample_fraction),
        "backend": backend,
        "device": level.device,
        "gpu": level.to_dict(),
        "seed": int(seed),
        "fit_seconds": round(fit_seconds, 3),
        "label_seconds": round(label_seconds, 3),
        **_sizes(stats, X, cent),
        "split_size": int(split_size),
        "by_cluster": bool(by_cluster),
        "warnings": warn,
        "wall_seconds": round(time.perf_counter() - t0, 3),
    }
    write_json_atomic(summary, out / "cluster.json")
    return summary


def _sizes(stats, X, cent) -> dict:
    """The summary's fit quality and cluster sizes."""
    return {
        "sample_inertia_per_row": round(inertia(X, cent) / X.shape[0], 6),
        "empty_clusters": int((stats["size"] == 0).sum()),
        "largest_cluster": int(stats["size"].max()),
    }


def _fit(X, k, seed, backend, level):
    """(centroids (k, d) numpy, seconds) of k-means on the sample ``X`` with ``backend``."""
    check_k(k, X.shape[0], "sampled rows")
    t = time.perf_counter()
    if backend == "cuml":  # the RAPIDS adapter: cuML fits on the GPU
        import cupy

        cent = to_numpy(fit_kmeans(cupy.asarray(X), k, seed=seed, backend="cuml"))
    elif backend == "lloyd":  # on the level's arrays: the sample moved to the GPU once
        from ...runtime.gpu_worker import DeviceWork, device_array

        with DeviceWork(level, "the k-means fit", X.shape[0], data_bytes=X.nbytes, flag="--sample-fraction"):
            cent = to_numpy(fit_kmeans(device_array(X, level), k, seed=seed, backend="lloyd", n_init=LLOYD_INITS))
    else:  # on the host sample; a GPU machine's cores are the run's own
        cent = fit_kmeans(X, k, seed=seed, backend=backend, n_threads=None if level.device == "gpu" else 1)
    return cent, time.perf_counter() - t


_DONE_META = {"name": object, "rows": np.int64, "sums": object}


def _label(ddf, names, out, cent, by_cluster, level, columns):
    """Label and write every split (``map_partitions``, explicit meta), check the files from
    here, merge the per-cluster pieces; (per-split rows frame, statistics frame)."""
    from ...runtime.storage import rmtree

    meta = pd.DataFrame({c: pd.Series([], dtype=t) for c, t in _DONE_META.items()})
    done = ddf.map_partitions(
        _write_split,
        names=names,
        out_root=str(out),
        centroids=cent,
        by_cluster=by_cluster,
        level=level,
        **columns,
        meta=meta,
        enforce_metadata=False,
    ).compute()
    check_written(out, done)
    stats = stats_frame(combine_stats(done["sums"]))
    if columns["quality_column"] is None:
        stats["mean_quality"] = np.nan
    if by_cluster:
        present = stats.loc[stats["size"] > 0, "cluster"].tolist()
        dask.compute(*[dask.delayed(_merge_cluster)(str(out), int(c)) for c in present])
        rmtree(out / "by_cluster" / "_pieces")
    return done, stats


def _warn_big(stats, split_size) -> list:
    """A warning for every cluster larger than a split (per-cluster selection cuts it)."""
    out = []
    for _, r in stats[stats["size"] > int(split_size)].iterrows():
        msg = (
            f"cluster {int(r['cluster'])} has {int(r['size']):,} rows, more than the split size "
            f"{int(split_size):,}: per-cluster selection will cut it into several splits"
        )
        warnings.warn(msg, stacklevel=3)
        out.append(msg)
    return out


def _write_centroids(out, cent, stats):
    """``centroids.parquet`` and ``cluster_stats.parquet``."""
    import pyarrow as pa

    from ...pipeline.io import write_parquet_atomic

    C = np.ascontiguousarray(cent, dtype=np.float32)
    table = pa.table(
        {
            "cluster": pa.array(np.arange(C.shape[0], dtype=np.int32)),
            "centroid": pa.FixedSizeListArray.from_arrays(pa.array(C.reshape(-1)), C.shape[1]),
        }
    )
    write_parquet_atomic(table, out / "centroids.parquet")
    write_parquet_atomic(pa.Table.from_pandas(stats, preserve_index=False), out / "cluster_stats.parquet")
