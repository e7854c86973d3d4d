"""Set objectives, evaluated for a whole group of masks at once.

For a selection U of S documents with unit embeddings ``e_i`` and quality ``q_i``::

    f(U) = lam * f_qua(U) + (1 - lam) * f_div(U)
    f_qua(U) = mean of q over U, with q min-max normalised to [0, 1] over the partition

Diversity metrics (all maximised):

``pairwise``
    minus the mean cosine over ordered pairs i != j of U, computed from the sum of the
    embeddings: ``-(||sum e_i||^2 - S) / (S (S - 1))``. O(S d) per mask.
``facility``
    facility location: mean over reference rows x of ``max_{u in U} cos(e_x, e_u)``.
    The reference rows are the partition, or a fixed random sample of it.
``disf``
    minus the mean squared off-diagonal entry of the d x d correlation matrix of U's
    embeddings standardised over U, ``-sum_{a != b} C_ab^2 / (d (d - 1))``, so it lies
    in [-1, 0]. Computed through the S x S Gram matrix when S < d.

Group kernels take an index matrix ``idx`` of shape (G, S) into the rows they are given and
return one value per row of ``idx``. Everything runs on numpy or cupy (``xp``).
"""
from __future__ import annotations

from .backend import default_rng, get_namespace
from .validate import BLOCK_ROWS, check_inputs, check_mask, needs_rescale, unit_rows

__all__ = [
    "DIVERSITIES",
    "normalize_quality",
    "pairwise_groups",
    "group_sums",
    "disf_groups",
    "facility_value",
    "Objective",
    "evaluate",
]

DIVERSITIES = ("pairwise", "facility", "disf")

# Elements per temporary block in the blocked kernels (float32: 64 MiB).
_BLOCK_ELEMENTS = 1 << 24


def normalize_quality(quality):
    """Min-max normalise quality to [0, 1] (float64). A constant column maps to zeros."""
    xp = get_namespace(quality)
    q = quality.astype(xp.float64)
    lo, hi = q.min(), q.max()
    span = float(hi - lo)
    if span <= 0.0:
        return xp.zeros_like(q)
    return (q - lo) / span


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


def _disf_one(X):
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


def _disf_from_moments(total, outer, S):
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
    per = max(1, _BLOCK_ELEMENTS // max(1, S * d))
    for g0 in range(0, G, per):
        blk = E[idx[g0:g0 + per]].astype(xp.float32)  # (g, S, d)
        blk -= blk.mean(axis=1, keepdims=True)
        sd = xp.sqrt((blk * blk).mean(axis=1, keepdims=True))
        live = sd > 1e-6
        blk *= xp.where(live, 1.0 / xp.where(live, sd, 1.0), 0.0).astype(xp.float32)
        if S < d:
            K = blk @ blk.transpose(0, 2, 1)
            fro2 = (K.astype(xp.float64) ** 2).sum(axis=(1, 2)) / (S * S)
        else:
            C = blk.transpose(0, 2, 1) @ blk / S
            fro2 = (C.astype(xp.float64) ** 2).sum(axis=(1, 2))
        diag2 = live.sum(axis=(1, 2))
        out[g0:g0 + per] = -(fro2 - diag2) / (d * (d - 1.0))
    return out


def facility_value(R, EU):
    """Facility location of one selection: reference rows ``R`` (r, d), selected ``EU`` (S, d).

    Blocked over reference rows, so memory stays at about ``_BLOCK_ELEMENTS`` floats.
    """
    xp = get_namespace(R)
    r, S = R.shape[0], EU.shape[0]
    per = max(1, _BLOCK_ELEMENTS // max(1, S))
    total = 0.0
    for r0 in range(0, r, per):
        total += float((R[r0:r0 + per] @ EU.T).max(axis=1).astype(xp.float64).sum())
    return total / r


class Objective:
    """``f = lam * quality + (1 - lam) * diversity`` bound to one partition's rows.

    Parameters
    ----------
    embeddings : (N, d) array, numpy or cupy
        Unit-norm rows.
    quality_norm : (N,) array
        Quality already normalised to [0, 1] over the partition.
    lam : float
        Weight of quality, in [0, 1].
    diversity : {"pairwise", "facility", "disf"}
    reference : array of int, optional
        Row indices of the facility-location reference set (default: all rows).
    norms : (N,) array, optional
        Row norms, when the rows are not unit: rows are rescaled as they are gathered.

    The embeddings are kept as given (float16 storage included, no copy); only the rows
    a selection touches are gathered into float32.
    """

    def __init__(self, embeddings, quality_norm, lam=0.5, diversity="pairwise", reference=None, norms=None):
        if diversity not in DIVERSITIES:
            raise ValueError(f"diversity must be one of {DIVERSITIES}, got {diversity!r}")
        self.E = embeddings
        self.q = quality_norm
        self.lam = float(lam)
        self.diversity = diversity
        self.norms = norms
        xp = get_namespace(embeddings)
        self.reference = xp.arange(embeddings.shape[0]) if reference is None else reference

    def rows(self, rows):
        """Float32 unit embeddings of ``rows``."""
        return unit_rows(self.E, rows, self.norms)

    def diversity_of(self, rows):
        """Diversity of one selection given as row indices."""
        xp = get_namespace(self.E)
        rows = xp.asarray(rows)
        S = int(rows.shape[0])
        if self.diversity == "pairwise":  # a blocked sum: no (S, d) copy
            s = xp.zeros(self.E.shape[1], dtype=xp.float64)
            for i0 in range(0, S, BLOCK_ROWS):
                s += self.rows(rows[i0:i0 + BLOCK_ROWS]).sum(axis=0, dtype=xp.float64)
            return float(pairwise_from_sums(float((s * s).sum()), S))
        if self.diversity == "disf":
            if S < self.E.shape[1]:
                return float(_disf_one(self.rows(rows)))
            total = xp.zeros(self.E.shape[1], dtype=xp.float64)
            outer = xp.zeros((self.E.shape[1],) * 2, dtype=xp.float64)
            for i0 in range(0, S, BLOCK_ROWS):  # blocked: no (S, d) float64 copy
                blk = self.rows(rows[i0:i0 + BLOCK_ROWS]).astype(xp.float64)
                total += blk.sum(axis=0)
                outer += blk.T @ blk
            return _disf_from_moments(total, outer, S)
        return facility_value(self.rows(self.reference), self.rows(rows))

    def evaluate_rows(self, rows) -> dict:
        """``{"objective", "quality", "diversity"}`` of the selection ``rows``."""
        xp = get_namespace(self.E)
        rows = xp.asarray(rows)
        qual = float(self.q[rows].mean()) if rows.shape[0] else 0.0
        div = self.diversity_of(rows)
        return {
            "objective": self.lam * qual + (1.0 - self.lam) * div,
            "quality": qual,
            "diversity": div,
        }


def evaluate(embeddings, quality, mask, lam=0.5, diversity="pairwise", reference_size=None, seed=0):
    """Score any selection of one partition with DATAMASK's objective.

    Parameters
    ----------
    embeddings : (N, d) array (numpy or cupy), unit-norm rows
    quality : (N,) array; normalised to [0, 1] over these N rows before use
    mask : (N,) bool array, or an integer array of selected row indices
    lam : float, weight of quality
    diversity : {"pairwise", "facility", "disf"}
    reference_size : int, optional
        Facility location only: score against a fixed random sample of this many rows
        (drawn with ``seed``) instead of all N rows.
    seed : int

    Returns
    -------
    dict
        ``objective``, ``quality`` (mean normalised quality), ``diversity``.
    """
    norms = check_inputs(embeddings, quality)
    xp = get_namespace(embeddings)
    rows = check_mask(mask, embeddings.shape[0], xp)
    reference = None
    if diversity == "facility" and reference_size is not None and reference_size < embeddings.shape[0]:
        reference = default_rng(xp, seed).subset(embeddings.shape[0], int(reference_size))
    obj = Objective(embeddings, normalize_quality(quality), lam, diversity, reference,
                    norms=norms if needs_rescale(norms) else None)
    return obj.evaluate_rows(rows)
