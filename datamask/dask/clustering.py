"""``cluster`` on a Dask DataFrame: k-means fitted on a seeded sample, every row labelled.

Lazy like the rest: the sample (one task per partition, :func:`~datamask.analysis.clusters.
sample_parts`, the sample ``datamask cluster`` takes), the fit (one task) and the labels (a
``map_partitions`` that takes the fitted centroids) are one graph. The model the call returns
holds the fit as a Delayed; ``dask.compute(labelled, model.centroids)`` fits once for both.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError
from ..stages.corpus.analysis import ClusterConfig
from .params import takes_config
from .partitions import check_not_strings, keep_attrs

__all__ = ["cluster", "ClusterModel"]


def _fit(mats, k, fraction, seed, backend, level):
    from ..analysis.clusters import join_sample
    from ..core.backend import to_numpy
    from ..core.kmeans import check_k, fit_kmeans, readable_n_clusters

    try:
        X = join_sample(mats, fraction, seed)
        if k is None:  # the default of the rows the sample stands for, at most the sample
            k = min(readable_n_clusters(round(X.shape[0] / fraction)), max(1, X.shape[0]))
        check_k(k, X.shape[0], "sampled rows")
    except ValueError as e:
        raise DataError(str(e)) from None
    if backend in ("cuml", "lloyd"):  # the GPU levels' fits (never run on the test machines)
        from ..runtime.gpu_worker import device_array

        return to_numpy(fit_kmeans(device_array(X, level), k, seed=seed, backend=backend)).astype(np.float32)
    return np.asarray(fit_kmeans(X, k, seed=seed, backend=backend, n_threads=1), dtype=np.float32)


def _label_part(df, centroids, column, out_column):
    from ..analysis.clusters import predict_split

    return keep_attrs(predict_split(df, centroids, column, out_column), df)


class ClusterModel:
    """k-means fitted on a sample of a frame (lazy until computed).

    Attributes
    ----------
    centroids : dask.delayed.Delayed
        The fit: a ``(k, d)`` float32 array once computed.
    cluster_centers_ : ndarray
        The same array, after :meth:`compute`.
    """

    def __init__(self, centroids, cfg, backend):
        self.centroids = centroids
        self.n_clusters = None if cfg.n_clusters is None else int(cfg.n_clusters)  # None: known once fitted
        self.embedding_column = cfg.embedding_column
        self.backend = backend
        self.seed = int(cfg.seed)

    def compute(self, **kwargs) -> ClusterModel:
        """Fit (run the sample and the fit tasks); returns ``self`` with ``cluster_centers_``."""
        self.cluster_centers_ = np.asarray(self.centroids.compute(**kwargs))
        self.n_clusters = int(self.cluster_centers_.shape[0])
        return self

    def predict(self, ddf, out_column: str = "cluster"):
        """``ddf`` with an int32 ``out_column`` of each row's nearest centroid (lazy)."""
        check_not_strings(ddf._meta, self.embedding_column)
        meta = ddf._meta.assign(**{out_column: np.zeros(0, dtype=np.int32)})
        cent = getattr(self, "cluster_centers_", self.centroids)
        return ddf.map_partitions(
            _label_part, cent, self.embedding_column, out_column, meta=meta, enforce_metadata=False
        )

    def __repr__(self):
        state = "fitted" if hasattr(self, "cluster_centers_") else "lazy"
        return f"ClusterModel(n_clusters={self.n_clusters}, backend={self.backend!r}, {state})"


@takes_config(ClusterConfig, exclude=("by_cluster",))
def cluster(ddf, cfg=None):
    """k-means on the embeddings: ``(labelled frame, model)``, both lazy.

    The frame gains an int32 ``cluster`` column; the model (:class:`ClusterModel`) is fitted
    on a seeded ``sample_fraction`` of the rows with ``kmeans_backend`` (auto: faiss when
    installed, else scikit-learn, on CPU).
    """
    import dask

    from ..analysis.clusters import has_faiss, sample_parts
    from ..runtime.gpu import select_level

    check_not_strings(ddf._meta, cfg.embedding_column)
    if cfg.embedding_column not in ddf.columns:
        raise DataError(
            f"missing column {cfg.embedding_column!r} (columns: {', '.join(map(str, ddf.columns))}); "
            "rename it or set the config's embedding_column=NAME"
        )
    level = select_level(cfg.device)
    backend = cfg.kmeans_backend
    if backend == "auto":
        backend = level.kmeans if level.kmeans != "faiss" or has_faiss() else "sklearn"
    parts = sample_parts(ddf, float(cfg.sample_fraction), cfg.embedding_column, int(cfg.seed))
    cent = dask.delayed(_fit, pure=True)(
        parts,
        None if cfg.n_clusters is None else int(cfg.n_clusters),
        float(cfg.sample_fraction),
        int(cfg.seed),
        backend,
        level,
    )
    model = ClusterModel(cent, cfg, backend)
    return model.predict(ddf), model
