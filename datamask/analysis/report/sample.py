"""The ``select`` report's sample of the input, and the k-means it groups rows by.

The sample is the first rows of each Parquet file of the input, :data:`REPORT_SAMPLE` rows
spread over the files (:func:`sample_tables`). An input without a ``cluster`` column gets
its clusters from k-means fitted on that sample's embeddings (:func:`report_centroids`)
before any split runs, so each split's worker assigns its own rows to them (the record's
``why``, :mod:`datamask.pipeline.why`) and the report's map names the same clusters. The
centroids are kept in ``_datamask/`` (:data:`CENTROIDS_FILE`): a resumed run and a later
``datamask report`` read them instead of fitting again.
"""

from __future__ import annotations

import numpy as np

__all__ = ["REPORT_SAMPLE", "CENTROIDS_FILE", "sample_tables", "report_centroids", "read_centroids"]

REPORT_SAMPLE = 2000  # rows the select report reads for its map and its k-means
CENTROIDS_FILE = "report_clusters.parquet"


def sample_tables(files, cols, sample_rows=REPORT_SAMPLE):
    """``(file, Arrow table)`` of the first rows of each Parquet file of ``files``
    (:func:`~datamask.pipeline.io.discover`'s), ``sample_rows`` spread over them."""
    import pyarrow.parquet as pq

    from ...pipeline.io import Split, read_split
    from ...runtime.storage import open_file

    files = [f for f in files if f.fmt == "parquet"]
    if not files or not sample_rows:
        return
    per = max(1, int(sample_rows) // len(files))
    for f in files:
        with open_file(f.path) as fh:
            n = min(per, pq.ParquetFile(fh).metadata.num_rows)
        if n:
            yield f, read_split(Split(f.path, f.rel, f.fmt, 0, n), cols)


def read_centroids(state) -> np.ndarray | None:
    """The centroids kept in ``state`` (an output's ``_datamask/``), or None."""
    path = state / CENTROIDS_FILE
    if not path.exists():
        return None
    from ...runtime.files import read_parquet_table

    col = read_parquet_table(path).column("centroid").combine_chunks()
    return col.values.to_numpy().reshape(len(col), -1).astype(np.float32)


def report_centroids(cfg, cols, state, sample_rows=REPORT_SAMPLE) -> np.ndarray | None:
    """k-means centroids (k, d) for an input without a ``cluster`` column: the ones kept in
    ``state``, else fitted on the report's sample (``readable_n_clusters`` of its rows, our
    Lloyd iterations, seeded by ``cfg.seed``) and kept there. None when the input has a
    ``cluster`` column, no Parquet file or fewer than 2 sampled rows."""
    import pyarrow as pa

    from ...core.kmeans import fit_kmeans, readable_n_clusters
    from ...pipeline.io import discover
    from ...pipeline.schema import embedding_matrix
    from ...pipeline.why import CLUSTER_COLUMN
    from ...runtime.files import write_parquet_atomic

    kept = read_centroids(state)
    if kept is not None:
        return kept
    mats = []
    for f, t in sample_tables(discover(cfg.input), cols, sample_rows):
        if getattr(cfg, "domain_column", CLUSTER_COLUMN) in t.schema.names:
            return None  # the input's own clusters
        mats.append(embedding_matrix(t.column(cols.embedding), f.rel, cols.embedding).astype(np.float32))
    E = np.concatenate(mats) if mats else np.zeros((0, 0), np.float32)
    if len(E) < 2:
        return None
    C = np.asarray(fit_kmeans(E, readable_n_clusters(len(E)), seed=int(cfg.seed or 0), backend="lloyd", n_init=2))
    C = C.astype(np.float32)
    flat = pa.array(C.reshape(-1))
    table = pa.table({"cluster": pa.array(np.arange(len(C), dtype=np.int32)),
                      "centroid": pa.FixedSizeListArray.from_arrays(flat, C.shape[1])})  # fmt: skip
    write_parquet_atomic(table, state / CENTROIDS_FILE)
    return C
