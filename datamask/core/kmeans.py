"""k-means on an in-memory matrix (numpy or cupy): fit centroids, label rows.

* :func:`fit_kmeans` fits centroids: scikit-learn's ``MiniBatchKMeans`` (default on CPU;
  good quality per second without extra packages), faiss (when installed),
  cuML on a cupy array, or ``lloyd``: our own Lloyd iterations after greedy k-means++
  seeding, on the array's device (the CUDA level's choice on a GPU without cuML: a fit is
  a few matrix products per iteration, with no library beyond cupy). cuML and faiss are
  imported only when used.
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

__all__ = [
    "BACKENDS",
    "default_n_clusters",
    "ASSIGN_BLOCK",
    "fit_kmeans",
    "lloyd",
    "kmeans_plusplus",
    "assign",
    "inertia",
    "check_k",
    "readable_n_clusters",
    "unit32",
]


BACKENDS = ("auto", "sklearn", "faiss", "cuml", "lloyd")


ASSIGN_BLOCK = 65536


def unit32(X, xp):
    X = X.astype(xp.float32)
    return X / xp.sqrt((X * X).sum(axis=1, keepdims=True))


READABLE_MAX = 50  # the most clusters a default gives: labels a person can still read on the map


def default_n_clusters(n_rows: int) -> int:
    """The default number of k-means clusters of ``n_rows`` rows: ``sqrt(rows / 10)`` rounded, at
    least 1 (SemDeDup's default; semantic dedup and the per-split clusters of the baselines)."""
    return max(1, int(round(math.sqrt(int(n_rows) / 10))))


def readable_n_clusters(n_rows: int) -> int:
    """The corpus analysis's default number of clusters (``datamask cluster``, ``compare``'s
    k-means, the report's map): :func:`default_n_clusters` between 2 and
    :data:`READABLE_MAX` (50), and never more than the rows. 2,884 rows get 17 clusters,
    25,000 rows and more get 50."""
    n_rows = int(n_rows)
    return max(1, min(n_rows, READABLE_MAX, max(2, default_n_clusters(n_rows))))


def check_k(k: int, n_rows: int, what="rows"):
    """``1 <= k <= n_rows`` or a ValueError that says so."""
    if int(k) != k or int(k) < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    if int(k) > n_rows:
        raise ValueError(
            f"n_clusters={k} is more than the {n_rows} {what}; lower --n-clusters or raise --sample-fraction"
        )


def fit_kmeans(E, k: int, seed=0, backend="auto", max_iter=100, batch_size=4096, n_init=1, n_threads=1):
    """Fit k-means centroids on an in-memory matrix.

    Parameters
    ----------
    E : (n, d) float array, numpy (sklearn/faiss) or cupy (cuML); rows L2-normalised here
    k : int, ``1 <= k <= n``
    seed : int
    backend : {"auto", "sklearn", "faiss", "cuml", "lloyd"}
        ``auto``: cuML for a cupy array, else scikit-learn's MiniBatchKMeans. ``lloyd``
        runs on the device of ``E`` (:func:`lloyd`).
    max_iter, batch_size, n_init : passed to the backend (iterations for faiss/cuML/lloyd).
    n_threads : int or None, default 1
        CPU threads for the fit (None: the library default). One, because mini-batches are
        small and extra threads mostly contend with the other workers of a shared machine;
        raise it on a dedicated many-core machine.

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
    if backend == "lloyd":
        return _fit_lloyd(X, k, seed, max_iter, n_init)
    if backend == "cuml":
        return _fit_cuml(X, k, seed, max_iter, n_init)
    Xn = np.ascontiguousarray(to_numpy(X))
    if backend == "faiss":
        return _fit_faiss(Xn, k, seed, max_iter, n_init, n_threads)
    return _fit_sklearn(Xn, k, seed, max_iter, batch_size, n_init, n_threads)


def _fit_lloyd(X, k, seed, max_iter, n_init):
    """The best of ``n_init`` :func:`lloyd` runs, on the device of ``X``."""
    best = None
    for trial in range(max(1, int(n_init))):
        C, obj = lloyd(X, k, seed=int(seed) + trial, max_iter=max_iter)
        if best is None or obj < best[1]:
            best = (C, obj)
    return best[0]


def _fit_cuml(X, k, seed, max_iter, n_init):
    from cuml.cluster import KMeans

    xp = get_namespace(X)
    km = KMeans(n_clusters=k, random_state=int(seed) % 2**31, max_iter=int(max_iter), n_init=n_init)
    km.fit(X)
    return xp.asarray(km.cluster_centers_, dtype=xp.float32)


def _fit_faiss(Xn, k, seed, max_iter, n_init, n_threads):
    """faiss k-means from k-means++ seeds (on up to 256 rows per centroid), the best of
    max(n_init, 3) starts: faiss alone starts from random rows, and one start merged
    planted blobs in our tests (ARI 0.83 against sklearn's 1.0)."""
    import faiss
    from sklearn.cluster import kmeans_plusplus

    if n_threads:
        faiss.omp_set_num_threads(int(n_threads))
    n = Xn.shape[0]
    rng = np.random.default_rng(seed)
    sub = Xn[rng.choice(n, size=256 * k, replace=False)] if n > 256 * k else Xn
    best = None
    for trial in range(max(int(n_init), 3)):
        km = faiss.Kmeans(
            Xn.shape[1],
            k,
            niter=int(max_iter),
            seed=(int(seed) + trial) % 2**31,
            verbose=False,
            max_points_per_centroid=max(256, math.ceil(n / k)),
        )
        init, _ = kmeans_plusplus(sub, k, random_state=(int(seed) + trial) % 2**31)
        km.train(Xn, init_centroids=np.ascontiguousarray(init, dtype=np.float32))
        if best is None or km.obj[-1] < best.obj[-1]:
            best = km
    return best.centroids.astype(np.float32)


def _fit_sklearn(Xn, k, seed, max_iter, batch_size, n_init, n_threads):
    from sklearn.cluster import MiniBatchKMeans
    from threadpoolctl import threadpool_limits

    with warnings.catch_warnings(), threadpool_limits(limits=n_threads):
        warnings.simplefilter("ignore")  # memory-leak notice on Windows MKL; ConvergenceWarning
        km = MiniBatchKMeans(
            n_clusters=k,
            random_state=int(seed) % 2**31,
            batch_size=int(batch_size),
            max_iter=int(max_iter),
            n_init=n_init,
        )
        km.fit(Xn)
    return km.cluster_centers_.astype(np.float32)


def kmeans_plusplus(X, k: int, seed=0, trials=None):
    """Greedy k-means++ seeds of unit rows ``X`` (numpy or cupy), on the device of ``X``.

    Each seed is the best of ``trials`` (default ``2 + log k``, scikit-learn's choice) rows
    drawn with probability proportional to their squared distance from the seeds so far,
    "best" meaning the smallest total squared distance once it is added. The draws are made
    up front on the host, so the loop reads nothing back from the device.
    """
    xp = get_namespace(X)
    n = X.shape[0]
    T = int(trials) if trials is not None else 2 + int(math.log(k))
    rng = np.random.default_rng(seed)
    first = int(rng.integers(n))
    u = xp.asarray(rng.random((max(k - 1, 0), T)), dtype=xp.float64)
    C = xp.empty((k, X.shape[1]), dtype=xp.float32)
    C[0] = X[first]
    d2 = xp.maximum(2.0 - 2.0 * (X @ X[first]), 0.0).astype(xp.float64)  # unit rows
    for c in range(1, k):
        cum = xp.cumsum(d2)
        cand = xp.searchsorted(cum, u[c - 1] * cum[-1])
        cand = xp.minimum(cand, n - 1)
        trial = xp.minimum(d2[None, :], xp.maximum(2.0 - 2.0 * (X[cand] @ X.T), 0.0))
        best = xp.argmin(trial.sum(axis=1))  # a device scalar: used through take, never read
        d2 = xp.take(trial, best, axis=0)
        C[c] = xp.take(X, xp.take(cand, best), axis=0)
    return C


def lloyd(X, k: int, seed=0, max_iter=100, tol=1e-4, block=ASSIGN_BLOCK):
    """Lloyd's k-means on unit rows ``X`` (numpy or cupy), on the device of ``X``.

    Seeds by :func:`kmeans_plusplus`, then alternates labelling (:func:`assign`: one matrix
    product per block) and centroid means (a scatter-add), until the mean squared distance
    improves by less than ``tol`` (relative) or ``max_iter`` iterations. A cluster left
    empty takes the row farthest from its centroid. Each iteration reads one number back
    (the inertia) and, only when a cluster is empty, the farthest rows.

    Returns ``(centroids (k, d) float32, inertia float)``.
    """
    xp = get_namespace(X)
    n, d = X.shape
    C = kmeans_plusplus(X, k, seed=seed)
    prev = math.inf
    for _ in range(max(1, int(max_iter))):
        labels, dist = assign(X, C, block=block)
        obj = float(dist.astype(xp.float64).sum())
        sums, counts = _cluster_sums(X, labels, k, xp)
        empty = xp.flatnonzero(counts == 0)
        if int(empty.shape[0]):
            far = xp.argsort(-dist)[: int(empty.shape[0])]
            sums[empty] = X[far]
            counts[empty] = 1.0
        C = sums / counts[:, None]
        if prev - obj <= tol * max(prev, 1e-30) and not int(empty.shape[0]):
            break
        prev = obj
    labels, dist = assign(X, C, block=block)
    return C, float(dist.astype(xp.float64).sum())


def _cluster_sums(X, labels, k, xp):
    """Per-cluster row sums and counts: one scatter-add (``add.at``), the same code on numpy
    and on the device."""
    sums = xp.zeros((k, X.shape[1]), dtype=xp.float32)
    counts = xp.zeros(k, dtype=xp.float32)
    xp.add.at(sums, labels, X)
    xp.add.at(counts, labels, 1.0)
    return sums, counts


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
        X = unit32(E[i0 : i0 + block], xp)
        s = X @ C.T - half  # argmax of <x,c> - |c|^2/2 = argmin |x - c|^2
        j = s.argmax(axis=1)
        labels[i0 : i0 + block] = j
        best = xp.take_along_axis(s, j[:, None], axis=1)[:, 0]
        dist[i0 : i0 + block] = xp.maximum(1.0 - 2.0 * best, 0.0)  # |x|^2 = 1
    return labels, dist


def inertia(E, centroids):
    """Sum of squared distances of the (normalised) rows to their nearest centroid."""
    return float(to_numpy(assign(E, centroids)[1]).astype(np.float64).sum())
