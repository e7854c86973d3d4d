"""Plackett-Luce masks: Gumbel-top-k sampling and the exact score function.

A mask is S distinct rows drawn without replacement with probabilities proportional to
``exp(L)``. Adding Gumbel noise to the logits and taking the top S gives such a draw, and
sorting the noisy keys gives the draw order pi. The log-probability of the ordered draw is

    log P(pi | L) = sum_k [ L_pi(k) - log Z_k ],   Z_k = sum of exp(L) over rows not yet drawn

and its gradient, for row i drawn at position k_i (k_i = S when i is not drawn), is

    d/dL_i = 1[i drawn] - exp(L_i) * sum_{k <= k_i} 1 / Z_k

which costs O(n + S) per mask. ``Z_k`` is accumulated from the undrawn mass upwards (a
suffix sum), never by subtraction from the total, so it stays accurate when the drawn rows
hold almost all the probability.
"""
from __future__ import annotations

import sys

import numpy as np

from .backend import get_namespace

__all__ = ["sample_masks", "log_prob", "policy_gradient"]


def sample_masks(logits, S: int, G: int, rng):
    """Draw ``G`` ordered masks of ``S`` distinct rows each (Gumbel-top-k).

    Parameters
    ----------
    logits : (n,) float array
    S : int, rows per mask, ``1 <= S <= n``
    G : int, number of masks
    rng : random source from :func:`datamask.backend.default_rng`

    Returns
    -------
    (G, S) int array
        Row indices in draw order (first drawn first).

    Notes
    -----
    Row i's key is ``E_i * exp(-L_i)`` with ``E_i ~ Exp(1)``; the S smallest keys, in
    increasing order, are a Plackett-Luce draw (this is the Gumbel-top-k trick with
    ``-log(key) = L_i + Gumbel``). When the logits span more than 80 nats the keys are
    taken in log space instead, so nothing overflows.

    On numpy, ``E_i = -log U_i`` with ``U_i`` on a grid of 2^23 points in (0, 1), built from
    raw generator words; the keys are packed with their row index into one uint64 and
    selected with ``partition`` + ``sort`` (SIMD kernels; ``argpartition`` + ``argsort``
    cost about twice as much), a block of masks at a time so that the keys stay in cache.
    """
    xp = get_namespace(logits)
    n = logits.shape[0]
    if not 1 <= S <= n:
        raise ValueError(f"S must be in [1, {n}], got {S}")
    if xp is np and n < 2**32:
        return _sample_numpy(logits, S, G, rng)
    shift = logits.max()
    span = float(shift - logits.min())
    with _quiet(xp):
        E = -xp.log(rng.uniform((G, n)))  # Exp(1); U == 0 gives +inf, drawn last
        if span <= 80.0:
            keys = E * xp.exp(shift - logits).astype(xp.float32)[None, :]
        else:
            keys = xp.log(E) - (logits - shift).astype(xp.float32)[None, :]
    if S < n:
        top = xp.argpartition(keys, S - 1, axis=1)[:, :S]
    else:
        top = xp.broadcast_to(xp.arange(n), (G, n))
    order = xp.argsort(xp.take_along_axis(keys, top, axis=1), axis=1)
    return xp.take_along_axis(top, order, axis=1)


# Keys per block of the numpy sampler: a (masks, n) block of packed uint64 keys of about
# 512 KiB keeps partition and sort in cache; the whole (G, n) array at n = 2,500 ran ~2x
# slower (and 25,000-row batches 2x slower still).
_SAMPLE_BLOCK_BYTES = 1 << 19
# Index of the high 32-bit half of a uint64 viewed as two uint32.
_HIGH = 1 if sys.byteorder == "little" else 0


def _sample_numpy(logits, S, G, rng):
    n = logits.shape[0]
    L = np.asarray(logits, dtype=np.float64)
    shift = float(L.max())
    positive = shift - float(L.min()) <= 80.0
    if positive:
        neg_w = (-np.exp(shift - L)).astype(np.float32)  # key = -log(U) * exp(shift - L)
    else:
        offset = (L - shift).astype(np.float32)
    ids = np.arange(n, dtype=np.uint32)
    out = np.empty((G, S), dtype=np.intp)
    per = max(1, min(G, _SAMPLE_BLOCK_BYTES // (8 * n)))
    for a in range(0, G, per):
        k = min(per, G - a)
        u = rng.bits32(k * n).reshape(k, n)
        # 23 random bits j as the mantissa of a float in [1, 2): 1 + j / 2^23. Minus
        # (1 - 2^-24) that is U = (j + 1/2) / 2^23, exact, never 0 or 1.
        np.right_shift(u, 9, out=u)
        np.bitwise_or(u, np.uint32(0x3F800000), out=u)
        e = u.view(np.float32)
        e -= np.float32(1.0 - 2.0**-24)
        np.log(e, out=e)  # log U < 0
        if positive:
            e *= neg_w
            bits = e.view(np.uint32)  # non-negative floats order like their bit patterns
        else:
            np.negative(e, out=e)
            np.log(e, out=e)
            e -= offset
            bits = _sortable_bits(e)
        packed = np.empty((k, n), dtype=np.uint64)
        halves = packed.view(np.uint32).reshape(k, n, 2)
        halves[:, :, _HIGH] = bits
        halves[:, :, 1 - _HIGH] = ids
        if S < n:
            packed = np.partition(packed, S - 1, axis=1)[:, :S]
        packed.sort(axis=1)
        out[a:a + k] = packed.view(np.uint32).reshape(k, S, 2)[:, :, 1 - _HIGH]
    return out


def _sortable_bits(x):
    """uint32 bit patterns of float32 ``x`` whose unsigned order is the float order."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    neg = (b >> np.uint32(31)).astype(bool)
    return np.where(neg, ~b, b | np.uint32(0x80000000))


class _quiet:
    """Silence numpy's divide-by-zero warning for log(0) (the key is then +inf)."""

    def __init__(self, xp):
        self.ctx = np.errstate(divide="ignore") if xp is np else None

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *exc):
        if self.ctx is not None:
            self.ctx.__exit__(*exc)


def _suffix_terms(logits, orders):
    """The masks in reverse draw order, with each drawn row's mass and ``Z_k``.

    Returns ``p = exp(L - max)`` (float64, n), ``rev`` (G, S: ``orders`` reversed, last
    drawn first), ``pr = p[rev]`` and ``Zr`` with ``Zr[j, i]`` = ``Z_k`` at the draw position
    k of ``rev[j, i]``. In reverse order the suffix sums over draw positions are prefix
    sums, so every cumulative sum runs over contiguous memory.
    """
    xp = get_namespace(logits)
    p = xp.exp(logits.astype(xp.float64) - float(logits.max()))
    rev = xp.ascontiguousarray(orders[:, ::-1])
    pr = p[rev]  # (G, S) mass of each drawn row, last drawn first
    total = float(p.sum())
    z_rest = xp.maximum(total - pr.sum(axis=1), 0.0)  # mass never drawn
    # Z_k = undrawn mass + mass of rows drawn at positions >= k
    Zr = xp.cumsum(pr, axis=1)
    Zr += z_rest[:, None]
    return p, rev, pr, Zr


def log_prob(logits, orders):
    """Log-probability of each ordered mask (rows of ``orders``) under Plackett-Luce."""
    xp = get_namespace(logits)
    _, _, pr, Zr = _suffix_terms(logits, orders)
    return (xp.log(pr) - xp.log(Zr)).sum(axis=1)


def policy_gradient(logits, orders, weights):
    """``sum_j weights[j] * grad_L log P(orders[j] | L)`` in O(G (n + S)).

    Parameters
    ----------
    logits : (n,) array
    orders : (G, S) int array, masks in draw order (from :func:`sample_masks`)
    weights : (G,) array, e.g. advantages / G

    Returns
    -------
    (n,) float64 array
    """
    xp = get_namespace(logits)
    n = logits.shape[0]
    p, rev, pr, Zr = _suffix_terms(logits, orders)
    inv = 1.0 / Zr
    cum = xp.cumsum(inv, axis=1)
    c_last = cum[:, -1].copy()  # c_S = sum over all draw positions of 1/Z_k
    tail = cum
    tail -= inv  # c_S - c_{k_i}: 1/Z_k summed over positions after i's
    w = weights.astype(xp.float64)
    # Every row pays -p_i * c_S (its term if undrawn) ...
    grad = -p * float((w * c_last).sum())
    # ... and drawn rows get 1 + p_i (c_S - c_{k_i}) on top.
    corr = pr * tail
    corr += 1.0
    corr *= w[:, None]
    grad += xp.bincount(rev.ravel(), weights=corr.ravel(), minlength=n)
    return grad
