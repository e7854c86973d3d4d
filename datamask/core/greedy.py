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

Under a token budget (``cost``, ``tokens``) each pick is the best row that still fits, by
gain or by gain per token (``per_token``), until no row fits. The selection's size is then
free, so each gain is the exact gain of f(U) with its means over the current size
(:func:`_mean_gain`); facility location's lazy bounds stay valid because only its facility
part is kept stale (it only shrinks) while the quality part is recomputed every pick.
"""

from __future__ import annotations

from .backend import get_namespace
from .metrics import pairwise_from_sums

__all__ = ["greedy_pairwise", "greedy_facility", "greedy_disf", "standardize"]


def _progress(total, enabled, desc):
    if not enabled:
        return None
    from .progress import bar

    return bar(total, desc=desc, unit="pick", leave=False)


class _Picks:
    """When to stop and which row is next: ``S`` rows, or rows while they fit ``tokens``."""

    def __init__(self, S, cost=None, tokens=None, per_token=False):
        self.S, self.cost, self.left = int(S), cost, None if cost is None else float(tokens)
        self.div = None
        if cost is not None and per_token:
            xp = get_namespace(cost)
            self.div = xp.maximum(cost, 1.0)  # a row of 0 tokens costs as much as 1

    def live(self, picked, n_picked):
        """Rows that may still be picked (None: none, stop)."""
        if self.cost is None:
            return None if n_picked >= self.S else ~picked
        ok = ~picked & (self.cost <= self.left)
        return ok if bool(ok.any()) else None

    def priority(self, gain, rows=None):
        if self.div is None:
            return gain
        return gain / (self.div if rows is None else self.div[rows])

    def next(self, gain, picked, n_picked, xp):
        live = self.live(picked, n_picked)
        if live is None:
            return None
        return int(xp.where(live, self.priority(gain), -xp.inf).argmax())

    def take(self, i):
        if self.cost is not None:
            self.left -= float(self.cost[i])


def _mean_gain(lam, Q, q, k, div_now, div_new):
    """``f(U + i) - f(U)`` for every row i, with ``f = lam * mean q + (1 - lam) * div``:
    ``Q`` the quality sum and ``k`` the size of U, ``div_new`` (n,) the diversity after adding i."""
    now = lam * Q / k + (1.0 - lam) * div_now if k else 0.0
    return lam * (Q + q) / (k + 1) + (1.0 - lam) * div_new - now


def greedy_pairwise(E, q, S, lam, progress=False, cost=None, tokens=None, per_token=False):
    """Greedy picks for quality + pairwise diversity. Returns row indices in pick order."""
    xp = get_namespace(E)
    n = E.shape[0]
    picked = xp.zeros(n, dtype=bool)
    dots = xp.zeros(n, dtype=xp.float64)  # <v, e_i>
    lin = lam * q / S
    scale = 2.0 * (1.0 - lam) / (S * (S - 1.0)) if S > 1 else 0.0
    order = []
    bar = _progress(S, progress, "greedy")
    picks = _Picks(S, cost, tokens, per_token)
    Q = sq = 0.0  # token budgets: quality sum and |v|^2 of the picks

    def gains():
        if cost is None:
            return lin - scale * dots
        k = len(order)
        return _mean_gain(lam, Q, q, k, pairwise_from_sums(sq, k), pairwise_from_sums(sq + 2.0 * dots + 1.0, k + 1))

    while (i := picks.next(gains(), picked, len(order), xp)) is not None:
        picks.take(i)
        picked[i] = True
        order.append(i)
        Q, sq = Q + float(q[i]), sq + 2.0 * float(dots[i]) + 1.0
        dots += E @ E[i]
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return xp.asarray(order)


def greedy_facility(E, q, S, lam, R, block=64, progress=False, cost=None, tokens=None, per_token=False):
    """Lazy greedy for quality + facility location against reference rows ``R`` (r, d)."""
    xp = get_namespace(E)
    n = E.shape[0]
    r = R.shape[0]
    cur = xp.full(r, -1.0, dtype=xp.float32)  # max over an empty set: cos >= -1
    # under a token budget (``mean``) ub holds the facility gains alone and the quality part
    # of each gain is exact, over the current size: stale facility gains still bound it
    mean = cost is not None
    lin = q * 0.0 if mean else lam * q / S
    w = (1.0 - lam) / r
    # First gains exactly, in blocks of candidates: sum_x (C[x, i] + 1).
    ub = xp.empty(n, dtype=xp.float64)
    step = max(1, (1 << 24) // max(1, r))
    for i0 in range(0, n, step):
        ub[i0 : i0 + step] = lin[i0 : i0 + step] + w * (R @ E[i0 : i0 + step].T + 1.0).astype(xp.float64).sum(axis=0)
    Q = 0.0

    def quality(rows=None):
        """The quality part of the gains under a token budget (the facility baseline of an
        empty set, -1, taken off the first pick's)."""
        if not mean:
            return 0.0
        m, qq = len(order), (q if rows is None else q[rows])
        return lam * qq - (1.0 - lam) if m == 0 else lam * ((Q + qq) / (m + 1) - Q / m)

    picked = xp.zeros(n, dtype=bool)
    order = []
    bar = _progress(S, progress, "greedy")
    block = min(block, n)
    picks = _Picks(S, cost, tokens, per_token)
    # stale gains are upper bounds (gains only shrink), and so are they per token
    while (live := picks.live(picked, len(order))) is not None:
        n_live = n - len(order) if cost is None else int(live.sum())
        pr = xp.where(live, picks.priority(ub + quality()), -xp.inf)
        k = min(block, n_live)
        top = xp.argpartition(-pr, k - 1)[:k] if k < n else xp.arange(n)
        rest_best = float(xp.where(_member(top, n, xp), -xp.inf, pr).max()) if k < n_live else -float("inf")
        gains = lin[top] + w * xp.maximum(R @ E[top].T - cur[:, None], 0.0).astype(xp.float64).sum(axis=0)
        ub[top] = gains
        gt = xp.where(live[top], picks.priority(gains + quality(top), top), -xp.inf)
        j = int(gt.argmax())
        if float(gt[j]) >= rest_best:
            i = int(top[j])
            picks.take(i)
            picked[i] = True
            order.append(i)
            Q += float(q[i])
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


def greedy_disf(E, q, S, lam, progress=False, cost=None, tokens=None, per_token=False):
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
    picks = _Picks(S, cost, tokens, per_token)
    Q = off2 = 0.0  # token budgets: quality sum and sum_{a != b} A_ab^2 of the picks

    def gains():
        inc = 2 * w_ - 2 * t_ + k
        if cost is None:
            return lin - scale * inc
        m = len(order)
        now = -off2 / (m * m * (d * (d - 1.0))) if m else 0.0
        return _mean_gain(lam, Q, q, m, now, -(off2 + inc) / ((m + 1.0) ** 2 * (d * (d - 1.0))))

    while (i := picks.next(gains(), picked, len(order), xp)) is not None:
        picks.take(i)
        picked[i] = True
        order.append(i)
        Q, off2 = Q + float(q[i]), off2 + float(2 * w_[i] - 2 * t_[i] + k[i])
        w_ += (Z @ Z[i]).astype(xp.float64) ** 2
        t_ += Z2 @ Z2[i]
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.close()
    return xp.asarray(order)
