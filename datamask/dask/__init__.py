"""Every datamask stage as a lazy operation on a Dask DataFrame (for notebooks).

Partitions are the splits: each function is one ``map_partitions`` (explicit ``meta``) of
the same per-split function the CLI stage runs, and computes nothing until ``.compute()``,
``.to_parquet()`` or ``dask.compute``. Parameters are the stage config's fields, under the
CLI flags' names and defaults (``select(ddf, ratio=0.1)`` is ``datamask select --ratio 0.1``).

>>> import datamask.dask as dmd
>>> ddf = dmd.read("corpus/", split_size=100_000)          # the CLI's splits
>>> sel = dmd.select(ddf[ddf.lang == "en"], ratio=0.1, keep_all=True)
>>> frame, recs = dmd.compute(sel, return_records=True)    # one pass

See ``docs/dataframe.md``.
"""

from __future__ import annotations

from .clustering import ClusterModel, cluster
from .dedup import dedup, dedup_groups
from .features import embed, score
from .search import search
from .selection import evaluate, records, select

__all__ = [
    "read",
    "embed",
    "score",
    "dedup",
    "dedup_groups",
    "cluster",
    "ClusterModel",
    "select",
    "records",
    "compute",
    "evaluate",
    "search",
]


def read(path, split_size: int = 1_000_000, columns=None, embedding_column: str = "embedding", device: str = "cpu"):
    """A lazy Dask DataFrame of a corpus, one partition per split, cut as ``datamask select``
    cuts them (so :func:`select` seeds each like the CLI). ``device="gpu"`` gives cudf
    partitions (RAPIDS; never run on the test machines)."""
    from ..pipeline.frames import read_splits

    return read_splits(path, split_size=split_size, columns=columns, embedding_column=embedding_column, device=device)


def compute(*collections, return_records: bool = False, **kwargs):
    """Compute frames and cluster models in one pass (shared tasks run once).

    A :class:`ClusterModel` comes back fitted (``cluster_centers_`` set). With
    ``return_records``, the per-split records of the first collection (a :func:`select`
    result) come last: ``frame, recs = compute(sel, return_records=True)``. One collection
    alone comes back alone, not in a tuple.
    """
    import warnings

    import dask

    todo = [c.centroids if isinstance(c, ClusterModel) else c for c in collections]
    if return_records:
        todo.append(records(collections[0]))
    with warnings.catch_warnings():  # a model's Delayed beside frames: Dask warns, and computes both
        warnings.filterwarnings("ignore", message="Computing mixed collections")
        values = list(dask.compute(*todo, **kwargs))
    for i, c in enumerate(collections):
        if isinstance(c, ClusterModel):
            c.cluster_centers_ = values[i]
            c.n_clusters = int(values[i].shape[0])
            values[i] = c
    return values[0] if len(values) == 1 else tuple(values)
