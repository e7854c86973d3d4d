"""SemDeDup (Abbas et al., 2023).

``semdedup``
    SemDeDup: k-means, then within each cluster visit the rows in order of distance to
    the centroid (farthest first by default, as in the SemDeDup paper, which keeps the
    least prototypical member of a duplicate group) and drop a row whose cosine to an
    *earlier kept* row exceeds ``1 - eps``. The visit is blocked: a block of ``block``
    rows is compared with the rows already kept, ``chunk`` of them at a time, and then
    resolved in order inside the block, so memory stays at ``block * max(block, chunk)``
    floats whatever the cluster size. Cosines are float32, so an ``eps`` below
    ``COS_TOL`` (1e-6) acts as ``COS_TOL``: exact duplicates are removed for any
    ``eps > 0``. The first row of every cluster's order is always kept.
"""

from __future__ import annotations

import time

import numpy as np

from ..core.backend import get_namespace, to_numpy
from ..core.budget import check_rows
from .registry import register, selection_of, split_clusters

__all__ = ["COS_TOL", "nearest_kept", "semdedup", "semdedup_eps_for_budget", "select_semdedup"]


COS_TOL = 1e-6


def _unit(X, xp):
    X = X.astype(xp.float32)
    return X / xp.sqrt((X * X).sum(axis=1, keepdims=True))


def _semdedup_order(E, cluster, centroids, order, xp):
    """Row indices grouped by cluster, each cluster sorted by cosine to its centroid."""
    C = _unit(xp.asarray(centroids), xp)
    cos = (E * C[cluster]).sum(axis=1)
    key = cos if order == "far" else -cos  # far: lowest cosine (largest distance) first
    # lexsort: last key is primary
    idx = xp.lexsort(xp.stack([xp.arange(E.shape[0]), key, cluster.astype(xp.float64)]))
    return idx


def semdedup(E, cluster, centroids, eps: float, order="far", block=1024, chunk=8192):
    """SemDeDup keep-mask.

    Parameters
    ----------
    E : (N, d) float array (numpy or cupy); rows are L2-normalised here
    cluster : (N,) int array of cluster ids in ``[0, k)``
    centroids : (k, d) array
    eps : float >= 0
        A row is dropped when its cosine to an earlier kept row of its cluster exceeds
        ``1 - eps`` (``0`` keeps every row).
    order : {"far", "near"}
        Visit each cluster farthest from (default) or nearest to its centroid first (the
        order handed to :func:`nearest_kept`, the kernel deduplication shares).
    block, chunk : int
        Rows resolved together, and kept rows compared at once (memory bound).

    Returns
    -------
    (N,) bool numpy array, True = kept.
    """
    xp = get_namespace(E)
    if order not in ("far", "near"):
        raise ValueError(f"order must be 'far' or 'near', got {order!r}")
    n = E.shape[0]
    cluster = xp.asarray(cluster).astype(xp.int64)
    if cluster.shape != (n,):
        raise ValueError(f"cluster must have shape ({n},), got {cluster.shape}")
    C = _unit(xp.asarray(centroids), xp)
    cos = (_unit(E, xp) * C[cluster]).sum(axis=1)
    key = cos if order == "far" else -cos  # far: lowest cosine (largest distance) first
    return nearest_kept(E, cluster, key, eps, block=block, chunk=chunk) < 0


def nearest_kept(E, cluster, order_key, eps: float, block=1024, chunk=8192):
    """The kernel SemDeDup and ``datamask dedup --kind semantic`` share.

    Visit the rows of each cluster by ascending ``order_key`` (ties: lower row first) and
    drop a row whose cosine to an *earlier kept* row of its cluster exceeds ``1 - eps``.
    The visit is blocked: a block of ``block`` rows is compared with the rows already
    kept, ``chunk`` of them at a time, then resolved in order inside the block, so memory
    stays at ``block * max(block, chunk)`` floats whatever the cluster size.

    Parameters
    ----------
    E : (N, d) float array (numpy or cupy)
        L2-normalised here.
    cluster : (N,) int array
    order_key : (N,) float array
        Visit order within a cluster.
    eps : float >= 0
        ``0`` keeps every row.
    block, chunk : int

    Returns
    -------
    (N,) int64 numpy array
        ``-1`` for a kept row; for a dropped row, the earlier kept row of its cluster it is
        most similar to (above the threshold, so a duplicate of it).
    """
    xp = get_namespace(E)
    eps = float(eps)
    if not eps >= 0.0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    n = E.shape[0]
    cluster = xp.asarray(cluster).astype(xp.int64)
    if cluster.shape != (n,):
        raise ValueError(f"cluster must have shape ({n},), got {cluster.shape}")
    dup = np.full(n, -1, dtype=np.int64)
    if eps == 0.0 or n == 0:
        return dup
    thr = np.float32(1.0 - max(eps, COS_TOL))
    E = _unit(E, xp)
    key = xp.asarray(order_key).astype(xp.float64)
    idx = to_numpy(xp.lexsort(xp.stack([xp.arange(n), key, cluster.astype(xp.float64)])))
    cl_sorted = to_numpy(cluster)[idx]
    bounds = np.flatnonzero(np.diff(cl_sorted)) + 1
    for a, b in zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [n]])):
        rows = idx[a:b]
        kept_rows = np.zeros(0, dtype=np.int64)  # kept row indices, in visit order
        kept_E = None  # (K, d) on the device
        for s0 in range(0, rows.shape[0], block):
            br = rows[s0 : s0 + block]
            B = E[xp.asarray(br)]
            best = np.full(br.shape[0], -np.inf, dtype=np.float32)  # best cosine to a kept row
            arg = np.full(br.shape[0], -1, dtype=np.int64)
            if kept_E is not None:
                for k0 in range(0, kept_E.shape[0], chunk):
                    S = B @ kept_E[k0 : k0 + chunk].T
                    m, j = to_numpy(S.max(axis=1)), to_numpy(S.argmax(axis=1))
                    better = m > best
                    best[better], arg[better] = m[better], kept_rows[k0 + j[better]]
            alive = best <= thr
            G = to_numpy(B @ B.T)  # within-block cosines
            A = G > thr
            for i in range(br.shape[0]):
                if alive[i]:
                    alive[i + 1 :] &= ~A[i, i + 1 :]
            # a row dropped inside the block: compare with the earlier kept rows of the block too
            inner = np.where(alive[None, :] & np.tri(br.shape[0], k=-1, dtype=bool), G, -np.inf)
            j = inner.argmax(axis=1)
            m = inner[np.arange(br.shape[0]), j]
            better = ~alive & (m > best)
            arg[better] = br[j[better]]
            dup[br[~alive]] = arg[~alive]
            new = br[alive]
            if new.shape[0]:
                kept_rows = np.concatenate([kept_rows, new])
                add = E[xp.asarray(new)]
                kept_E = add if kept_E is None else xp.concatenate([kept_E, add])
    return dup


def _max_cos_to_earlier(E, cluster, centroids, order="far", block=1024, chunk=8192):
    """For every row, the largest cosine to any *earlier* row of its cluster's order
    (``-inf`` for a cluster's first row). One blocked pass, like :func:`semdedup`.

    A row compared with every earlier row is dropped at least as often as one compared
    with the earlier *kept* rows only, so ``#{i: M_i <= 1 - eps}`` is a lower bound of the
    number SemDeDup keeps: its quantile gives the search a tight starting bracket.
    """
    xp = get_namespace(E)
    n = E.shape[0]
    cluster = xp.asarray(cluster).astype(xp.int64)
    E = _unit(E, xp)
    idx = to_numpy(_semdedup_order(E, cluster, centroids, order, xp))
    cl_sorted = to_numpy(cluster)[idx]
    bounds = np.flatnonzero(np.diff(cl_sorted)) + 1
    M = np.full(n, -np.inf, dtype=np.float32)
    for a, b in zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [n]])):
        rows = idx[a:b]
        for s0 in range(0, rows.shape[0], block):
            br = rows[s0 : s0 + block]
            B = E[xp.asarray(br)]
            best = np.full(br.shape[0], -np.inf, dtype=np.float32)
            for k0 in range(0, s0, chunk):
                prev = E[xp.asarray(rows[k0 : min(k0 + chunk, s0)])]
                best = np.maximum(best, to_numpy((B @ prev.T).max(axis=1)))
            G = to_numpy(B @ B.T)
            G[np.triu_indices(br.shape[0])] = -np.inf  # earlier rows of the block only
            if br.shape[0] > 1:
                best = np.maximum(best, G.max(axis=1))
            M[br] = best
    return M


def semdedup_eps_for_budget(E, cluster, centroids, budget: int, order="far", tol=None, max_iter=20, eps_max=1.0, **kw):
    """Search ``eps`` so that SemDeDup keeps about ``budget`` rows.

    The number kept falls (almost always monotonically) as ``eps`` grows. A safeguarded
    false-position search (interpolate the kept count linearly between the bracket ends,
    but always cut at least 10% off the bracket) stands in for plain bisection, using the
    kept counts it has already paid for. Returns ``(eps, keep_mask)`` for the largest
    ``eps`` found that still keeps at least ``budget`` rows, stopping within ``tol`` rows
    (default 1% of the budget; the caller trims the surplus) or after ``max_iter`` passes. If even
    ``eps_max`` keeps at least ``budget`` rows, that is returned.
    """
    n = E.shape[0]
    check_rows(budget, n)
    tol = max(1, int(round(0.01 * budget))) if tol is None else int(tol)
    lo, hi = 0.0, float(eps_max)
    k_lo, k_hi = n, None
    best = (0.0, np.ones(n, dtype=bool))
    keep_hi = semdedup(E, cluster, centroids, hi, order=order, **kw)
    k_hi = int(keep_hi.sum())
    if k_hi >= budget:
        return hi, keep_hi
    if n - budget <= tol:
        return best
    # starting bracket: the eps at which "drop if close to ANY earlier row" keeps the budget
    # keeps at least the budget under the kept-rows rule
    M = np.sort(
        _max_cos_to_earlier(E, cluster, centroids, order, **{k: v for k, v in kw.items() if k in ("block", "chunk")})
    )
    start = float(1.0 - M[budget - 1]) if np.isfinite(M[budget - 1]) else 0.0
    if 0.0 < start < hi:
        keep = semdedup(E, cluster, centroids, start, order=order, **kw)
        k = int(keep.sum())
        if k >= budget:
            lo, k_lo, best = start, k, (start, keep)
            if k - budget <= tol:
                return best
        else:  # the bound failed (float rounding at the threshold): plain search from 0
            hi, k_hi = start, k
    for _ in range(int(max_iter)):
        frac = (k_lo - budget) / max(k_lo - k_hi, 1)
        frac = min(max(frac, 0.1), 0.9)
        mid = lo + frac * (hi - lo)
        keep = semdedup(E, cluster, centroids, mid, order=order, **kw)
        k = int(keep.sum())
        if k >= budget:
            lo, k_lo, best = mid, k, (mid, keep)
            if k - budget <= tol:
                break
        else:
            hi, k_hi = mid, k
    return best


@register("semdedup")
def select_semdedup(E, q, cfg, seed, budget, table=None):
    """SemDeDup with ``eps`` from the config, or tuned to the budget when it is None;
    a surplus over the budget is trimmed at random (seeded). Under a token budget, eps is
    tuned to the rows a random fill of the budget takes, the kept rows are filled to the
    budget in random order and, if they fall short, topped up from the dropped ones."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed % 2**63)
    if budget.split_tokens is not None:
        S = max(1, int(budget.take(rng.permutation(E.shape[0])).sum()))
    else:
        S = budget.rows
    cluster, centroids = split_clusters(E, cfg, seed, table)
    eps = getattr(cfg, "eps", None)
    if eps is None:
        eps, keep = semdedup_eps_for_budget(E, cluster, centroids, S)
    else:
        keep = semdedup(E, cluster, centroids, float(eps))
    rows = np.flatnonzero(keep)
    if budget.split_tokens is not None:
        order = rng.permutation(E.shape[0])
        order = np.concatenate([order[keep[order]], order[~keep[order]]])  # kept rows first
        return selection_of(budget.take(order), E, q, cfg, seed, t0, info={"eps": float(eps)})
    if rows.shape[0] < S:
        raise ValueError(
            f"SemDeDup with eps={eps:g} keeps {rows.shape[0]} rows, fewer than the budget {S}; "
            "lower eps (--set eps=X) or leave it unset to tune it to the budget"
        )
    if rows.shape[0] > S:
        rows = np.random.default_rng(seed % 2**63).choice(rows, size=S, replace=False)
    mask = np.zeros(E.shape[0], dtype=bool)
    mask[rows] = True
    return selection_of(mask, E, q, cfg, seed, t0, info={"eps": float(eps)})
