"""Plackett-Luce masks: Gumbel-top-k sampling and the exact score function.

A mask is S distinct rows drawn without replacement with probabilities proportional to
``exp(L)``. Adding Gumbel noise to the logits and taking the top S gives such a draw, and
sorting the noisy keys gives the draw order pi. The log-probability of the ordered draw is

    log P(pi | L) = sum_k [ L_pi(k) - log Z_k ],   Z_k = sum of exp(L) over rows not yet drawn

and its gradient, for row i drawn at position k_i (k_i = S when i is not drawn), is

    d/dL_i = 1[i drawn] - exp(L_i) * sum_{k <= k_i} 1 / Z_k

which costs O(n) per mask. Every quantity is a sum of positive terms (see
:func:`policy_gradient` for why no total is ever subtracted from).

Everything here runs on numpy or cupy (``xp``) and reads no value back to the host, so a
``pg`` step built from these functions can be captured as a CUDA graph. Random numbers
come from :class:`datamask.rng.CounterRNG`, keyed by (seed, step, mask, row).
"""

from __future__ import annotations

import sys

import numpy as np

from . import kernels
from .backend import get_namespace
from .rng import MASKS, CounterRNG

__all__ = ["sample_masks", "log_prob", "policy_gradient", "scatter_add", "LOGIT_SPAN"]

# A step samples from logits clamped to within this many nats of their maximum: a row that
# far below is practically never drawn (probability < e^-60 relative), the keys'
# weights exp(max - L) stay below e^60 (float32 holds them) and 1/Z_k stays finite.
LOGIT_SPAN = 60.0
# Added to the log-space keys so that they are positive: log E >= log(6e-8) > -17.
_LOG_KEY_OFFSET = 17.0
# Keys per block of the numpy sampler: a (masks, n) block of packed uint64 keys of about
# 512 KiB keeps partition and sort in cache (the whole (G, n) array at once falls out of
# cache and is slower).
_SAMPLE_BLOCK_BYTES = 1 << 19
# Index of the high 32-bit half of a uint64 viewed as two uint32.
_HIGH = 1 if sys.byteorder == "little" else 0


def sample_masks(logits, S: int, G: int, rng=0, step=0, log_keys=None, select=None):
    """Draw ``G`` ordered masks of ``S`` distinct rows each (Gumbel-top-k).

    Parameters
    ----------
    logits : (n,) float array, numpy or cupy
    S : int, rows per mask, ``1 <= S <= n``
    G : int, number of masks
    rng : :class:`datamask.rng.CounterRNG` or int seed
    step : int or 0-d integer array
        The draw's step number: the same (seed, step) gives the same masks.
    log_keys : bool or None
        Take the keys in log space (needed when the logits span more than ~80 nats).
        None decides from the logits (which reads their span back to the host); the
        ``pg`` step passes False, because it clamps its logits to ``LOGIT_SPAN``.
    select : {"partition", "sort"} or None
        How the S smallest keys of each mask are found: per-mask ``partition`` + ``sort``
        of packed (key, row) words (numpy's default: SIMD kernels on cache-sized blocks),
        or one flat ``sort`` of (mask, key, row) words (the default elsewhere: one radix
        sort on a GPU). Both give the same masks.

    Returns
    -------
    (G, S) int array
        Row indices in draw order (first drawn first).

    Notes
    -----
    Row i's key is ``E_i * exp(max L - L_i)`` with ``E_i = -log U_i ~ Exp(1)``; the S
    smallest keys, in increasing order, are a Plackett-Luce draw (this is the
    Gumbel-top-k trick with ``-log(key) = L_i + Gumbel``). ``U`` comes from 23 random bits
    and is never 0 or 1, so every key is finite and positive (see :mod:`datamask.core.rng`).
    """
    xp = get_namespace(logits)
    n = logits.shape[0]
    if not 1 <= S <= n:
        raise ValueError(f"S must be in [1, {n}], got {S}")
    if not isinstance(rng, CounterRNG):
        rng = CounterRNG(xp, rng)
    shift = logits.max()
    if log_keys is None:
        log_keys = float(shift - logits.min()) > 80.0
    if select is None:
        select = "partition" if xp is np else "sort"
    if select == "partition":
        return _sample_partition(logits, shift, S, G, rng, step, log_keys)
    return _sample_sort(logits, shift, S, G, rng, step, log_keys)


def _key_weights(xp, logits, shift, log_keys):
    """Per-row float32 factor of the keys: ``-exp(shift - L)`` or ``shift - L + offset``."""
    d = shift - logits.astype(xp.float64)
    if log_keys:
        return (d + _LOG_KEY_OFFSET).astype(xp.float32)
    return (-xp.exp(d)).astype(xp.float32)


def _keys(xp, words, weights, log_keys):
    """Positive float32 keys (in place over ``words``): ``E * w`` or ``log E + offset + d``."""
    u = words
    u >>= xp.uint32(9)  # 23 random bits as the mantissa of 1 + j / 2^23
    u |= xp.uint32(0x3F800000)
    e = u.view(xp.float32)
    e -= xp.float32(1.0 - 2.0**-24)  # U = (j + 1/2) / 2^23, exact, never 0 or 1
    xp.log(e, out=e)  # log U < 0
    if log_keys:
        xp.negative(e, out=e)
        xp.log(e, out=e)  # log E
        e += weights
    else:
        e *= weights  # -log U * exp(shift - L) >= 0
    return e


def _sample_partition(logits, shift, S, G, rng, step, log_keys):
    xp = get_namespace(logits)
    n = logits.shape[0]
    w = _key_weights(xp, logits, shift, log_keys)
    ids = xp.arange(n, dtype=xp.uint32)
    out = xp.empty((G, S), dtype=xp.int64)
    per = max(1, min(G, _SAMPLE_BLOCK_BYTES // (8 * n)))
    for a in range(0, G, per):
        k = min(per, G - a)
        e = _keys(xp, rng.words(MASKS, step, a * n, k * n).reshape(k, n), w, log_keys)
        # positive floats order like their bit patterns: pack (key bits, row) in a uint64
        packed = xp.empty((k, n), dtype=xp.uint64)
        halves = packed.view(xp.uint32).reshape(k, n, 2)
        halves[:, :, _HIGH] = e.view(xp.uint32)
        halves[:, :, 1 - _HIGH] = ids
        if S < n:
            packed = xp.partition(packed, S - 1, axis=1)[:, :S]
            if xp is not np:  # cupy sorts and views only contiguous arrays (numpy: no copy needed)
                packed = xp.ascontiguousarray(packed)
        packed.sort(axis=1)
        out[a : a + k] = packed.view(xp.uint32).reshape(k, S, 2)[:, :, 1 - _HIGH]
    return out


def sort_plan(G: int, n: int):
    """Bit layout ``(key_bits, row_bits)`` of the flat sort's (mask, key, row) words."""
    gb = max(1, (G - 1).bit_length())
    rb = max(1, (n - 1).bit_length())
    kb = min(31, 64 - gb - rb)
    if kb < 16:
        raise ValueError(f"{G} masks of {n} rows do not fit the flat sort's 64-bit keys")
    return kb, rb


def _sample_sort(logits, shift, S, G, rng, step, log_keys):
    xp = get_namespace(logits)
    n = logits.shape[0]
    kb, rb = sort_plan(G, n)
    u64 = xp.uint64
    w = _key_weights(xp, logits, shift, log_keys)
    comp = kernels.fused_sort_keys(xp, w, step, rng.key, G, n, kb, rb, log_keys, MASKS)
    if comp is None:  # the same words with array operations
        e = _keys(xp, rng.words(MASKS, step, 0, G * n).reshape(G, n), w, log_keys)
        comp = e.view(xp.uint32).astype(u64)  # positive float bits: < 2^31
        if kb < 31:
            comp >>= u64(31 - kb)  # coarser keys; ties are broken by row
        comp <<= u64(rb)
        comp |= xp.arange(n, dtype=u64)[None, :]
        comp |= (xp.arange(G, dtype=u64) << u64(kb + rb))[:, None]
    comp = xp.sort(comp.reshape(-1)).reshape(G, n)[:, :S]
    return (comp & u64((1 << rb) - 1)).astype(xp.int64)


def scatter_add(out, idx, vals):
    """``out[idx] += vals`` with repeated indices summed (``bincount`` on numpy: faster,
    ``add.at`` elsewhere: cupy's ``bincount`` reads the largest index back to the host)."""
    xp = get_namespace(out)
    if xp is np:
        out += np.bincount(idx, weights=vals, minlength=out.shape[0])
    else:
        xp.add.at(out, idx, vals)
    return out


def _draw_terms(logits, orders):
    """Masses and normalisers of the ordered draws, each a sum of positive terms.

    Returns ``p = exp(L - max)`` (float64, n), ``U`` (G, n: 1 where the row was *not*
    drawn in that mask, else 0), ``pf = p[orders]`` and ``Z`` (G, S) with ``Z[j, k]`` =
    ``Z_k`` of mask j in draw order: the undrawn mass ``U @ p`` plus the mass drawn at
    positions >= k (a suffix sum). Neither is formed by subtracting from a total: with a
    concentrated policy the undrawn mass can be ~1e-20 of the total, far below the
    rounding of ``total - drawn``. No value leaves the device.
    """
    xp = get_namespace(logits)
    L = logits.astype(xp.float64)
    p = xp.exp(L - L.max())
    G, n = orders.shape[0], L.shape[0]
    U = xp.ones(G * n, dtype=xp.float64)
    U[(orders + (xp.arange(G) * n)[:, None]).reshape(-1)] = 0.0
    U = U.reshape(G, n)
    pf = p[orders]  # (G, S) mass of each drawn row, in draw order
    Z = xp.cumsum(pf[:, ::-1], axis=1)[:, ::-1]  # mass drawn at positions >= k
    Z += (U @ p)[:, None]  # + mass never drawn
    return p, U, pf, Z


def log_prob(logits, orders, lengths=None):
    """Log-probability of each ordered mask (rows of ``orders``) under Plackett-Luce.

    ``lengths`` (G,): score only the first ``lengths[j]`` draws of mask j (a draw stopped
    there, as under a token budget; see :func:`policy_gradient`). None: all S.
    """
    xp = get_namespace(logits)
    _, _, pf, Z = _draw_terms(logits, orders)
    terms = xp.log(pf) - xp.log(Z)
    if lengths is not None:
        terms = xp.where(xp.arange(orders.shape[1])[None, :] < lengths[:, None], terms, 0.0)
    return terms.sum(axis=1)


def policy_gradient(logits, orders, weights, lengths=None):
    """``sum_j weights[j] * grad_L log P(orders[j] | L)`` in O(G n).

    Parameters
    ----------
    logits : (n,) array
    orders : (G, S) int array, masks in draw order (from :func:`sample_masks`)
    weights : (G,) array, e.g. advantages / G
    lengths : (G,) int array or None
        Mask j is the draw of its first ``lengths[j]`` rows only (a token budget stops a
        draw at the first row that does not fit, that row included: the stopping rule
        makes this the exact score function, docs/tokens.md). Rows after it count as not
        drawn. None: all S rows of every mask.

    Returns
    -------
    (n,) float64 array

    Notes
    -----
    Row i's term in mask j is ``1 - p_i c_{k_i}`` if it was drawn at position ``k_i``
    and ``-p_i c_S`` if not, with ``c_k = sum_{k' <= k} 1/Z_k'``. Each is computed as
    written: both are bounded (``p_i <= Z_k`` for every position before i's draw) while
    ``c_S`` itself can reach ~e^60 when one row dominates; the earlier form ``-p_i c_S``
    for every row plus ``p_i (c_S - c_{k_i})`` back for drawn rows lost everything to
    rounding there (errors of 1e9 nats in a step; ``tests/core/test_collapse.py``).
    """
    xp = get_namespace(logits)
    p, U, pf, Z = _draw_terms(logits, orders)
    c = xp.cumsum(1.0 / Z, axis=1)  # c_k in draw order; c[:, -1] = c_S
    w = weights.astype(xp.float64)
    if lengths is None:
        cS = c[:, -1]
        drawn = 1.0 - pf * c
    else:  # a draw of lengths[j] rows: c at its last row, and the rows after it undrawn
        last = xp.maximum(lengths.astype(xp.int64), 1) - 1
        cS = xp.take_along_axis(c, last[:, None], axis=1)[:, 0]
        inside = xp.arange(orders.shape[1])[None, :] <= last[:, None]
        drawn = xp.where(inside, 1.0 - pf * c, -pf * cS[:, None])
    grad = U.T @ (w * cS)  # sum over the masks that did not draw row i ...
    grad *= -p  # ... of -w_j p_i c_S
    drawn *= w[:, None]
    return scatter_add(grad, orders.reshape(-1), drawn.reshape(-1))
