"""Semantic duplicates for ``datamask dedup --kind semantic``: SemDeDup one cluster at a time.

Passes (:mod:`.dedup_exchange`), after the exact and fuzzy ones:

* clusters: the cluster column's values (``clusters``, per split: the distinct values; the
  client numbers them, O(clusters)), or k-means fitted on a sample of the corpus
  (``KMEANS_SAMPLE`` rows gathered to the client);
* ``semantic-rows`` (per split): the embeddings of the rows the exact and fuzzy kinds kept
  (null texts left out), each with its quality, routed by cluster: one partition per cluster;
* ``semantic`` (per cluster): the SemDeDup kernel, highest quality kept
  (:func:`~datamask.dedup.semantic.semantic_duplicates`); the removed documents routed by
  their split.

A task of the last pass holds one cluster's embeddings: the memory of a worker is bounded by
the largest cluster (rows x dimension x 4 bytes, plus the kernel's ``block x chunk`` tile),
whatever the corpus size; raise ``--n-clusters`` to shrink it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from ...dedup.normalize import read_quality
from ...dedup.pairs import KIND_CODE
from ...pipeline.io import Split, read_split
from ...runtime.storage import location
from .dedup_cc import REMOVED_SCHEMA
from .dedup_exchange import column_names, document_numbers, gather, read_part, split_of, write_routed

__all__ = ["SemCtx", "semantic_groups", "cluster_duplicates", "KMEANS_SAMPLE"]

KMEANS_SAMPLE = 50_000  # rows of the corpus sampled to fit k-means when there is no cluster column


@dataclass
class SemCtx:
    root: str
    splits: list
    bounds: np.ndarray
    ranks: dict
    cols: object  # DedupColumns (with the embedding column)
    quality_column: str
    domain_column: str
    eps: float = 0.05
    device: str = "cpu"
    text_removed: list = None  # files of the documents the text kinds removed, routed by their split
    centroids: object = None  # (k, d) k-means centroids, or None with a cluster column
    codes: object = None  # sorted hash codes of the cluster values (with a cluster column)

    def file(self, folder: str, i: int) -> str:
        return str(location(self.root) / folder / f"{i:06d}.parquet")

    @property
    def n_clusters(self) -> int:
        return len(self.codes) if self.centroids is None else len(self.centroids)


def _cluster_codes(values) -> np.ndarray:
    """Equal cluster values -> equal int64 codes on every worker (any column type)."""
    return pd.util.hash_array(np.asarray(values, dtype=object), categorize=True).view(np.int64)


def _values_task(i: int, ctx: SemCtx) -> dict:
    """The distinct cluster values of split ``i`` (as codes), read batch by batch."""
    from .dedup_exchange import iter_batches

    codes = set()
    for b in iter_batches(ctx.splits[i], [ctx.cols.id, ctx.cols.text, ctx.domain_column], 65_536):
        codes.update(np.unique(_cluster_codes(b.column(ctx.domain_column).to_pylist())).tolist())
    return {"codes": sorted(codes)}


def _rows_task(i: int, ctx: SemCtx) -> dict:
    """``semantic-rows`` for split ``i``."""
    from ...core.kmeans import assign
    from ...pipeline.schema import embedding_matrix

    s = ctx.splits[i]
    table = read_split(s, ctx.cols)
    doc = document_numbers(s, ctx.ranks)
    gone = read_part(ctx.text_removed, i, len(ctx.splits), REMOVED_SCHEMA, columns=["doc"]).column("doc")
    live = ~np.isin(doc, gone.to_numpy()) & ~np.asarray(table.column(ctx.cols.text).is_null().to_numpy(False))
    table = table.filter(pa.array(live))
    E = embedding_matrix(table.column(ctx.cols.embedding), s.where(), ctx.cols.embedding, s.start)
    if ctx.centroids is None:
        cl = np.searchsorted(ctx.codes, _cluster_codes(table.column(ctx.domain_column).to_pylist()))
    else:
        cl = np.asarray(assign(E, ctx.centroids)[0]).astype(np.int64)
    q = read_quality(table, ctx.quality_column)
    rows = pa.table(
        {
            "doc": doc[live],
            "quality": q if q is not None else np.full(table.num_rows, np.nan),
            "emb": pa.FixedSizeListArray.from_arrays(
                pa.array(np.ascontiguousarray(E, np.float32).reshape(-1)), E.shape[1]
            ),
        }
    )
    write_routed(ctx.file("semantic-rows", i), rows, cl, ctx.n_clusters)
    return {"rows": int(table.num_rows)}


def cluster_duplicates(E, quality, doc, eps: float, device: str):
    """SemDeDup of one cluster's rows: ``(removed, kept)`` document numbers. On a GPU: the
    per-GPU lock (one cluster on the device at a time) and a one-line out-of-memory."""
    from ...dedup.semantic import semantic_duplicates
    from ...runtime.gpu import CPU, Level
    from ...runtime.gpu_worker import DeviceWork, device_array

    n = E.shape[0]
    level = Level("cuda", arrays="cupy") if device == "gpu" else CPU
    with DeviceWork(level, f"semantic dedup of {n:,} rows", n, data_bytes=E.nbytes, flag="raise --n-clusters"):
        r, k, _ = semantic_duplicates(device_array(E, level), np.zeros(n, np.int64), quality, eps, doc=doc)
    return r, k


def _cluster_task(c: int, ctx: SemCtx) -> dict:
    """``semantic`` for cluster ``c``: its removed documents, routed by split."""
    from ...pipeline.schema import embedding_matrix
    from .dedup_cc import _examples

    files = [ctx.file("semantic-rows", i) for i in range(len(ctx.splits))]
    t = read_part(files, c, ctx.n_clusters, None)
    r = k = np.zeros(0, np.int64)
    if t.num_rows:
        E = embedding_matrix(t.column("emb"), "semantic dedup", "embedding")
        r, k = cluster_duplicates(E, t.column("quality").to_numpy(), t.column("doc").to_numpy(), ctx.eps, ctx.device)
    kind = np.full(r.shape[0], KIND_CODE["semantic"], np.int8)
    out = pa.table({"doc": r, "kept": k, "kind": kind}, schema=REMOVED_SCHEMA)
    write_routed(ctx.file("semantic", c), out, split_of(r, ctx.bounds), len(ctx.splits))
    return {"removed": int(r.shape[0]), "groups": int(np.unique(k).shape[0]), "examples": _examples(k, r, kind)}


def _sample_rows(s: Split, n, *, cols):
    from ...pipeline.schema import embedding_matrix

    table = read_split(s, cols)
    if n < table.num_rows:
        table = table.take(pa.array(np.random.default_rng(s.start).choice(table.num_rows, n, replace=False)))
    E = embedding_matrix(table.column(cols.embedding), s.where(), cols.embedding, s.start)
    return pd.DataFrame({"i": np.arange(E.shape[0]), "emb": list(E)})


def _centroids(client, plan, cols, cfg):
    """k-means on a sample of at most ``KMEANS_SAMPLE`` rows of the corpus."""
    import dask
    import dask.dataframe as dd

    from ...core.kmeans import default_n_clusters, fit_kmeans

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
    return np.asarray(fit_kmeans(E, k, seed=int(cfg.seed)))


def semantic_groups(passes, ctx: SemCtx, plan, cfg) -> dict:
    """Run the semantic passes (module doc); the removed documents are in ``semantic/``."""
    n = len(ctx.splits)
    if cfg.domain_column in column_names(plan, ctx.cols):
        got = passes.run("clusters", _values_task, range(n), passes.scatter(ctx), desc="dedup clusters")
        ctx.codes = np.unique(np.array([c for r in got for c in r["codes"]], dtype=np.int64))
    else:
        ctx.centroids = _centroids(passes.client, plan, ctx.cols, cfg)
    ref = passes.scatter(ctx)
    passes.run("semantic-rows", _rows_task, range(n), ref, desc="dedup semantic rows")
    res = passes.run("semantic", _cluster_task, range(ctx.n_clusters), ref, desc="dedup semantic")
    return {
        "removed": sum(r["removed"] for r in res),
        "groups": sum(r["groups"] for r in res),
        "examples": [e for r in res for e in r["examples"]],
        "n_clusters": ctx.n_clusters,
    }
