"""The array kernels of the three diversity metrics: one selection's value and a whole
group of masks' values at once (see :mod:`datamask.core.diversity` for the metrics).

Group kernels take an index matrix ``idx`` of shape (G, S) into the rows they are given and
return one value per row of ``idx``. Everything runs on numpy or cupy (``xp``).
"""

from __future__ import annotations

from .backend import get_namespace

__all__ = [
    "pairwise_from_sums",
    "selection_matrix",
    "group_sums",
    "pairwise_groups",
    "disf_one",
    "disf_from_moments",
    "disf_groups",
    "facility_value",
    "facility_best",
    "BLOCK_ELEMENTS",
]

# Elements per temporary block in the blocked kernels (float32: 64 MiB).
BLOCK_ELEMENTS = 1 << 24


def pairwise_from_sums(sq_norm_of_sums, S: int):
    """Pairwise diversity from ``||sum_{i in U} e_i||^2`` (unit rows, |U| = S)."""
    if S < 2:
        return sq_norm_of_sums * 0.0
    return -(sq_norm_of_sums - S) / (S * (S - 1.0))


def selection_matrix(idx, n: int, dtype):
    """The dense 0/1 matrix (G, n) with ones at ``idx`` (G, S), set through flat indices."""
    xp = get_namespace(idx)
    G = idx.shape[0]
    M = xp.zeros(G * n, dtype=dtype)
    M[(idx + (xp.arange(G) * n)[:, None]).ravel()] = 1
    return M.reshape(G, n)


def group_sums(E, idx):
    """(G, d) float64: the sum of the rows ``E[idx[g]]`` for each row g of ``idx``.

    A dense 0/1 selection matrix turns G gathers of S x d rows into one GEMM.
    """
    xp = get_namespace(E)
    return (selection_matrix(idx, E.shape[0], E.dtype) @ E).astype(xp.float64)


def pairwise_groups(E, idx):
    """Pairwise diversity of each row of ``idx`` (G, S) into ``E`` (n, d)."""
    sums = group_sums(E, idx)
    return pairwise_from_sums((sums * sums).sum(axis=1), idx.shape[1])


def disf_one(X):
    """DiSF of one (S, d) block of rows: standardise over the rows, off-diagonal C^2."""
    xp = get_namespace(X)
    S, d = X.shape
    X = X.astype(xp.float64)
    X = X - X.mean(axis=0)
    sd = xp.sqrt((X * X).mean(axis=0))
    live = sd > 1e-12
    X = xp.where(live, X / xp.where(live, sd, 1.0), 0.0)
    K = X @ X.T  # S x S Gram: ||X^T X||_F = ||X X^T||_F
    fro2 = (K * K).sum() / (S * S)
    return -(fro2 - float(live.sum())) / (d * (d - 1.0))


def disf_from_moments(total, outer, S):
    """DiSF from the row sum (d,) and the sum of outer products (d, d) of S rows.

    The correlation matrix of the rows is the centred second moment scaled by the standard
    deviations, so a selection of any size is scored from d x d sums gathered block by block.
    """
    xp = get_namespace(outer)
    d = outer.shape[0]
    mu = total / S
    cov = outer / S - xp.outer(mu, mu)
    var = xp.diagonal(cov).copy()
    live = var > 1e-24
    inv = xp.where(live, 1.0 / xp.sqrt(xp.where(live, var, 1.0)), 0.0)
    C = cov * inv[:, None] * inv[None, :]
    return -(float((C * C).sum()) - float(live.sum())) / (d * (d - 1.0))


def disf_groups(E, idx):
    """DiSF diversity of each row of ``idx`` (G, S) into ``E`` (n, d).

    Float32 batched products: per mask the cost is ``S d min(S, d)``, which makes DiSF the
    most expensive metric per step by far (a GPU job at scale).
    """
    xp = get_namespace(E)
    G, S = idx.shape
    d = E.shape[1]
    out = xp.empty(G, dtype=xp.float64)
    per = max(1, BLOCK_ELEMENTS // max(1, S * d))
    for g0 in range(0, G, per):
        blk = E[idx[g0 : g0 + per]].astype(xp.float32, copy=False)  # (g, S, d): the gather's copy
        blk -= blk.mean(axis=1, keepdims=True)
        sd = xp.sqrt(xp.einsum("gsd,gsd->gd", blk, blk) / S)[:, None, :]  # no (g, S, d) square
        live = sd > 1e-6
        blk *= xp.where(live, 1.0 / xp.where(live, sd, 1.0), 0.0).astype(xp.float32)
        if S < d:
            K = blk @ blk.transpose(0, 2, 1)
            fro2 = (K.astype(xp.float64) ** 2).sum(axis=(1, 2)) / (S * S)
        else:
            C = blk.transpose(0, 2, 1) @ blk / S
            fro2 = (C.astype(xp.float64) ** 2).sum(axis=(1, 2))
        diag2 = live.sum(axis=(1, 2))
        out[g0 : g0 + per] = -(fro2 - diag2) / (d * (d - 1.0))
    return out


def facility_value(R, EU):
    """Facility location of one selection: reference rows ``R`` (r, d), selected ``EU`` (S, d).

    Blocked over the selected rows against every reference row (each row of ``EU`` read
    once), so memory stays at about ``BLOCK_ELEMENTS`` floats.
    """
    xp = get_namespace(R)
    return float(facility_best(R, EU).astype(xp.float64).mean())


def facility_best(R, EU, best=None):
    """(r,) float32: each reference row's best cosine to the rows ``EU`` (S, d), or to them
    and the rows behind ``best`` (updated in place when given), blocked over ``EU``'s rows."""
    xp = get_namespace(R)
    if best is None:
        best = xp.full(R.shape[0], -xp.inf, dtype=xp.float32)
    per = max(1, BLOCK_ELEMENTS // max(1, R.shape[0]))
    for i0 in range(0, EU.shape[0], per):
        xp.maximum(best, (EU[i0 : i0 + per] @ R.T).max(axis=0), out=best)
    return best
