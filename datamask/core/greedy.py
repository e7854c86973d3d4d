"""Greedy solvers: add the row with the best marginal gain, S times.

These are the baseline DATAMASK is compared with. Each pick costs one or two (n x d)
matrix-vector products, so a full run costs O(S n d): minutes at n = 100k on a CPU.

* pairwise: the gain of row i given the running sum v of picked embeddings is
  ``lam q_i / S - (1 - lam) 2 <v, e_i> / (S (S - 1))``; ``E v`` is updated incrementally.
* facility: lazy greedy (gains only shrink, so stale gains are upper bounds), re-scoring a
  small block of the best upper bounds at a time so the loop stays vectorised.
* disf: DiSF with the standardisation fixed over the candidate rows (the exact metric
  re-standardises over the selection, which no incremental greedy can follow). The
  selection is reported with the exact metric.
"""
from __future__ import annotations

from .backend import get_namespace

__all__ = ["greedy_pairwise", "greedy_facility", "greedy_disf", "standardize"]


def _progress(total, enabled, desc):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="pick", leave=False)


def _argmax_free(gain, picked, xp):
    gain = xp.where(picked, -xp.inf, gain)
    return int(gain.argmax())


def greedy_pairwise(E, q, S, lam, progress=False):
    """Greedy picks for quality + pairwise diversity. Returns row indices in pick order."""
    xp = get_namespace(E)
    n = E.shape[0]
    picked = xp.zeros(n, dtype=bool)
    dots = xp.zeros(n, dtype=xp.float64)  # <v, e_i>
    lin = lam * q / S
    scale = 2.0 * (1.0 - lam) / (S * (S - 1.0)) if S > 1 else 0.0
    order = []
    bar = _progress(S, progress, "greedy")
    for _ in range(S):
        i = _argmax_free(lin - scale * dots, picked, xp)
        picked[i] = True
        order.append(i)
        dots += E @ E[i]
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return xp.asarray(order)


def greedy_facility(E, q, S, lam, R, block=64, progress=False):
    """Lazy greedy for quality + facility location against reference rows ``R`` (r, d)."""
    xp = get_namespace(E)
    n = E.shape[0]
    r = R.shape[0]
    cur = xp.full(r, -1.0, dtype=xp.float32)  # max over an empty set: cos >= -1
    lin = lam * q / S
    w = (1.0 - lam) / r
    # First gains exactly, in blocks of candidates: sum_x (C[x, i] + 1).
    ub = xp.empty(n, dtype=xp.float64)
    step = max(1, (1 << 24) // max(1, r))
    for i0 in range(0, n, step):
        ub[i0:i0 + step] = lin[i0:i0 + step] + w * (R @ E[i0:i0 + step].T + 1.0).astype(xp.float64).sum(axis=0)
    picked = xp.zeros(n, dtype=bool)
    order = []
    bar = _progress(S, progress, "greedy")
    block = min(block, n)
    while len(order) < S:
        ub = xp.where(picked, -xp.inf, ub)
        k = min(block, n - len(order))
        top = xp.argpartition(-ub, k - 1)[:k] if k < n else xp.arange(n)
        rest_best = float(xp.where(_member(top, n, xp), -xp.inf, ub).max()) if k < n - len(order) else -float("inf")
        gains = lin[top] + w * xp.maximum(R @ E[top].T - cur[:, None], 0.0).astype(xp.float64).sum(axis=0)
        ub[top] = gains
        j = int(gains.argmax())
        if float(gains[j]) >= rest_best:
            i = int(top[j])
            picked[i] = True
            order.append(i)
            cur = xp.maximum(cur, R @ E[i])
            if bar is not None:
                bar.update()
    if bar is not None:
        bar.close()
    return xp.asarray(order)


def _member(idx, n, xp):
    m = xp.zeros(n, dtype=bool)
    m[idx] = True
    return m


def standardize(E):
    """Columns of ``E`` standardised over its rows (constant columns become 0), float32."""
    xp = get_namespace(E)
    X = E.astype(xp.float32, copy=False)
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    live = sd > 1e-12
    scale = xp.where(live, 1.0 / xp.where(live, sd, 1.0), 0.0).astype(xp.float32)
    return (X - mu) * scale  # one float32 copy (constant columns become 0)


def greedy_disf(E, q, S, lam, progress=False):
    """Greedy for quality + DiSF with the standardisation fixed over the rows of ``E``.

    With A = sum over picked rows of z z^T, the proxy is -sum_{a != b} (A_ab / S)^2 / (d(d-1)).
    Adding row i raises sum_{a != b} A_ab^2 by 2 w_i - 2 t_i + k_i, where
    w_i = sum_u (z_i . z_u)^2, t_i = sum_a A_aa z_ia^2 and k_i = |z_i|^4 - sum_a z_ia^4.
    """
    xp = get_namespace(E)
    n, d = E.shape
    Z = standardize(E)
    Z2 = Z * Z
    k = (Z2.sum(axis=1).astype(xp.float64) ** 2) - (Z2.astype(xp.float64) ** 2).sum(axis=1)
    w_ = xp.zeros(n, dtype=xp.float64)
    t_ = xp.zeros(n, dtype=xp.float64)
    lin = lam * q / S
    scale = (1.0 - lam) / (d * (d - 1.0) * S * S)
    picked = xp.zeros(n, dtype=bool)
    order = []
    bar = _progress(S, progress, "greedy")
    for _ in range(S):
        i = _argmax_free(lin - scale * (2 * w_ - 2 * t_ + k), picked, xp)
        picked[i] = True
        order.append(i)
        w_ += (Z @ Z[i]).astype(xp.float64) ** 2
        t_ += Z2 @ Z2[i]
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return xp.asarray(order)
