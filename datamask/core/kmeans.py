"""k-means on an in-memory matrix (numpy or cupy): fit centroids, label rows.

* :func:`fit_kmeans` fits centroids: scikit-learn's ``MiniBatchKMeans`` (default on CPU;
  best quality per second on our 2-core measurements), faiss (fastest when installed), or
  cuML on a cupy array. cuML and faiss are imported only when used.
* :func:`assign` labels rows against centroids in blocks, on the device of the rows (one
  matrix product per block against the centroids).

The out-of-core form (sample, fit, label every partition) is
:mod:`datamask.analysis.clusters`.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .backend import get_namespace, is_cupy, to_numpy

__all__ = ["BACKENDS", "ASSIGN_BLOCK", "fit_kmeans", "assign", "inertia", "check_k", "unit32"]


BACKENDS = ("auto", "sklearn", "faiss", "cuml")


ASSIGN_BLOCK = 65536


def unit32(X, xp):
    X = X.astype(xp.float32)
    return X / xp.sqrt((X * X).sum(axis=1, keepdims=True))


def check_k(k: int, n_rows: int, what="rows"):
    """``1 <= k <= n_rows`` or a ValueError that says so."""
    if int(k) != k or int(k) < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    if int(k) > n_rows:
        raise ValueError(f"k={k} clusters is more than the {n_rows} {what}; lower --k or raise --sample-fraction")


def fit_kmeans(E, k: int, seed=0, backend="auto", max_iter=100, batch_size=4096, n_init=1, n_threads=1):
    """Fit k-means centroids on an in-memory matrix.

    Parameters
    ----------
    E : (n, d) float array, numpy (sklearn/faiss) or cupy (cuML); rows L2-normalised here
    k : int, ``1 <= k <= n``
    seed : int
    backend : {"auto", "sklearn", "faiss", "cuml"}
        ``auto``: cuML for a cupy array, else scikit-learn's MiniBatchKMeans.
    max_iter, batch_size, n_init : passed to the backend (iterations for faiss/cuML).
    n_threads : int or None, default 1
        CPU threads for the fit (None: the library default). One thread was about 20x
        faster than two on our shared 2-core machine (mini-batches are small); raise it on
        a dedicated many-core machine.

    Returns
    -------
    (k, d) float32 centroids, on the device of ``E``.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    xp = get_namespace(E)
    n = E.shape[0]
    check_k(k, n)
    X = unit32(E, xp)
    k = int(k)
    if backend == "auto":
        backend = "cuml" if is_cupy(E) else "sklearn"
    if backend == "cuml":
        from cuml.cluster import KMeans

        km = KMeans(n_clusters=k, random_state=int(seed) % 2**31, max_iter=int(max_iter), n_init=n_init)
        km.fit(X)
        return get_namespace(E).asarray(km.cluster_centers_, dtype=xp.float32)
    Xn = np.ascontiguousarray(to_numpy(X))
    if backend == "faiss":
        import faiss

        if n_threads:
            faiss.omp_set_num_threads(int(n_threads))
        # k-means++ seeding (on up to 256 rows per centroid), best of max(n_init, 3) starts:
        # faiss alone starts from random rows, and one start merged planted blobs in our
        # tests (ARI 0.83 against sklearn's 1.0).
        from sklearn.cluster import kmeans_plusplus

        rng = np.random.default_rng(seed)
        sub = Xn[rng.choice(n, size=256 * k, replace=False)] if n > 256 * k else Xn
        best = None
        for trial in range(max(int(n_init), 3)):
            km = faiss.Kmeans(Xn.shape[1], k, niter=int(max_iter), seed=(int(seed) + trial) % 2**31,
                              verbose=False, max_points_per_centroid=max(256, math.ceil(n / k)))
            init, _ = kmeans_plusplus(sub, k, random_state=(int(seed) + trial) % 2**31)
            km.train(Xn, init_centroids=np.ascontiguousarray(init, dtype=np.float32))
            if best is None or km.obj[-1] < best.obj[-1]:
                best = km
        km = best
        return km.centroids.astype(np.float32)
    from sklearn.cluster import MiniBatchKMeans
    from threadpoolctl import threadpool_limits

    with warnings.catch_warnings(), threadpool_limits(limits=n_threads):
        warnings.simplefilter("ignore")  # memory-leak notice on Windows MKL; ConvergenceWarning
        km = MiniBatchKMeans(n_clusters=k, random_state=int(seed) % 2**31, batch_size=int(batch_size),
                             max_iter=int(max_iter), n_init=n_init)
        km.fit(Xn)
    return km.cluster_centers_.astype(np.float32)


def assign(E, centroids, block=ASSIGN_BLOCK):
    """Nearest centroid (Euclidean, on L2-normalised rows) of every row, in row blocks.

    Returns ``(labels int32 (n,), sq_dist float32 (n,))`` on the device of ``E``.
    """
    xp = get_namespace(E)
    C = xp.asarray(centroids, dtype=xp.float32)
    half = 0.5 * (C * C).sum(axis=1)
    n = E.shape[0]
    labels = xp.empty(n, dtype=xp.int32)
    dist = xp.empty(n, dtype=xp.float32)
    for i0 in range(0, n, block):
        X = unit32(E[i0:i0 + block], xp)
        s = X @ C.T - half  # argmax of <x,c> - |c|^2/2 = argmin |x - c|^2
        j = s.argmax(axis=1)
        labels[i0:i0 + block] = j
        best = xp.take_along_axis(s, j[:, None], axis=1)[:, 0]
        dist[i0:i0 + block] = xp.maximum(1.0 - 2.0 * best, 0.0)  # |x|^2 = 1
    return labels, dist


def inertia(E, centroids):
    """Sum of squared distances of the (normalised) rows to their nearest centroid."""
    return float(to_numpy(assign(E, centroids)[1]).astype(np.float64).sum())
