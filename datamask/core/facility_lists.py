"""The numpy facility scorer's one pass over the candidate-by-reference similarities: the
*threshold lists* that stochastic greedy's compiled loop (:mod:`datamask.core.facility_kernels`)
reads its exact gains from (each candidate's first gain comes before it, from one product with
the reference rows' sum: :func:`first_gains`).

Reference row x lists every candidate i with ``C[i, x] >= theta[x]``, ``theta[x]`` set so
that about :func:`list_entries` / r candidates pass it (from a fixed sample of the
candidates, :func:`list_thresholds`). The pass reads the candidates in blocks of
:data:`CANDIDATE_BLOCK` rows against every reference row, so each candidate row is read
once, and it reads them from the split's own array (:class:`HostRows`: no copy of the
candidates is kept; float16 storage stays float16).

**The products.** Float32 on every CPU (:func:`screen_kernel` ``"float32"``). A large pass
(:data:`BF16_MIN_PAIRS` pairs or more) screens the pairs with a cheaper product instead, where
the CPU and torch have one, then computes the cosine of every pair that may reach its
threshold again in float32: ``"int8"`` where the CPU has int8 dot products (``amx_int8``,
``avx512_vnni``, ``avx_vnni``; torch's ``_int_mm``, exact int32 sums) on rows rounded to int8 on their own scales
(:func:`~datamask.core.facility_scan.screen_block_int`, :func:`int8_keys`), else
``"bfloat16"`` where it has bfloat16 dot products (``amx_bf16``, ``avx512_bf16``;
:func:`~datamask.core.facility_scan.screen_block`). Either rounded product of unit rows is
within :func:`screen_margin` of the exact cosine (a bound from each row's own rounding: about
2^-8 for random unit rows of 384 entries in bfloat16, 0.02 in int8), so a pair whose screened
cosine is below ``theta[x]`` less that margin cannot reach ``theta[x]``. The lists are the same
pairs with the same float32 cosines whichever product screens (up to the order the sums run
in); only the time differs. ``DATAMASK_FACILITY_PRODUCT=float32`` forces the portable one, ``=bfloat16`` skips int8.

**A stage.** Given each reference row's best cosine to stochastic greedy's first picks
(``stage``), the pass also sums, for each candidate, its products above that cosine less the
product's rounding bound: at least the candidate's gain over those picks, so at least every
later gain of it (:func:`threshold_lists`, ``bound``; :func:`~datamask.core.facility_scan.stage_sums`).
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass

import numpy as np

from .cpu import cpu_flags, int8_matmul
from .metrics import BLOCK_ELEMENTS
from .validate import unit_rows

__all__ = [
    "HostRows",
    "ReferenceCover",
    "ThresholdLists",
    "LIST_ENTRIES",
    "list_entries",
    "list_thresholds",
    "threshold_lists",
    "first_gains",
    "sorted_lists",
    "screen_kernel",
    "screen_margin",
]

# Entries of the threshold lists, about (6 bytes each, an int16 reference row and a float32
# cosine: 48 MiB; 8 above 32,768 reference rows): each reference row lists
# about LIST_ENTRIES / r candidates (4,096 against the default 2,048 reference rows); twice as
# many from LARGE_SPLIT candidates (list_entries): reference rows then saturate in fewer picks
# (at 1M rows the default fit 23.7 -> 21.4 s; 100k rows unchanged: docs/defaults.md).
LIST_ENTRIES = 1 << 23
LARGE_SPLIT = 1 << 19
# Candidate rows sampled to set each reference row's threshold (all of them below this).
THRESHOLD_SAMPLE = 16384
# Candidate rows per block of the pass (a 4 MiB float32 block against 2,048 reference rows).
CANDIDATE_BLOCK = 512
# Candidate-reference pairs from which the bfloat16 screen is worth importing torch (about a
# second): 131k candidates against 2,048 reference rows, where the float32 pass took 1.4 s.
BF16_MIN_PAIRS = 1 << 28
_CPU_FLAGS = ("amx_bf16", "avx512_bf16")


class HostRows:
    """The fit's candidate rows ``E[rows]`` as float32 unit rows (``norms``: rescale, as
    :func:`~datamask.core.validate.unit_rows` does), read from the split's own numpy array
    a block at a time: no copy of the candidates. The compiled loops read them through
    :attr:`src` (float16 storage as its uint16 bits, through :attr:`table`)."""

    def __init__(self, E, rows, norms=None):
        self.E, self.rows, self.norms = E, np.ascontiguousarray(rows, dtype=np.int64), norms
        self.shape = (int(self.rows.shape[0]), int(E.shape[1]))
        self.src = E.view(np.uint16) if E.dtype == np.float16 else E
        self.scale = np.empty(0, dtype=np.float32) if norms is None else np.asarray(norms, dtype=np.float32)
        self.table = _half_table() if E.dtype == np.float16 else np.empty(0, dtype=np.float32)

    def take(self, idx=None):
        """(k, d) float32: the candidates ``idx`` (None: all of them, a copy)."""
        return unit_rows(self.E, self.rows if idx is None else self.rows[idx], self.norms)

    def blocks(self, size=CANDIDATE_BLOCK):
        """``(i0, i1, rows)`` for consecutive blocks of candidates, float32 unit rows."""
        for i0 in range(0, self.shape[0], size):
            i1 = min(self.shape[0], i0 + size)
            yield i0, i1, unit_rows(self.E, self.rows[i0:i1], self.norms)


@functools.lru_cache(maxsize=1)
def _half_table():
    """float32 value of every float16 bit pattern (256 KiB)."""
    return np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


def as_host_rows(E):
    """``E`` as :class:`HostRows` (an array: all its rows)."""
    return E if isinstance(E, HostRows) else HostRows(E, np.arange(E.shape[0]))


@dataclass
class ThresholdLists:
    """Each reference row x's candidates i with ``C[i, x] >= theta[x]``, stored by candidate:
    candidate i's entries are ``ref[start[i]:start[i + 1]]`` (reference rows) and ``sim``
    (their float32 cosines); ``cover`` (n,) float64 is each candidate's ``sum_x (C[i, x] + 1)``,
    its gain over the empty selection."""

    start: np.ndarray
    ref: np.ndarray
    sim: np.ndarray
    theta: np.ndarray
    cover: np.ndarray
    bound: np.ndarray | None = None  # with a ``stage``: each candidate's gain bound (threshold_lists)


class ReferenceCover:
    """A facility fit's threshold lists read back by split row: for any subset of the fit's
    candidates, each reference row's largest listed cosine to it (:meth:`maxima`). A reference
    row x with a listed candidate in the subset has its largest cosine to the subset among the
    listed ones (an unlisted candidate's cosine is below ``theta[x]``, every listed one's at or
    above it); a row with none gets -inf, for the caller to compute. The report's side-by-side
    reads the objective of the selection, top-k and random from it instead of their products
    with every reference row (:class:`~datamask.core.scorecard.Scorecard`'s ``reference_cover``).

    ``lists`` the fit's :class:`ThresholdLists`, ``cand`` (n,) the split rows of its candidates
    (increasing, as the fit keeps them), ``reference`` (r,) the split rows of its reference rows.
    """

    def __init__(self, lists, cand, reference):
        self.start, self.ref, self.sim, self.theta = lists.start, lists.ref, lists.sim, lists.theta
        self.cand = np.asarray(cand, dtype=np.int64)
        if self.cand.shape[0] > 1 and bool((self.cand[1:] <= self.cand[:-1]).any()):
            raise ValueError("ReferenceCover: the candidates' rows must increase")
        self.reference = np.asarray(reference, dtype=np.int64)

    def _positions(self, rows):
        """``rows``' places among the candidates, and whether each is one."""
        rows = np.asarray(rows, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.cand, rows), max(self.cand.shape[0] - 1, 0))
        return pos, self.cand.shape[0] > 0 and self.cand[pos] == rows

    def covers(self, rows) -> bool:
        """Every split row of ``rows`` is one of the fit's candidates (so :meth:`maxima` applies)."""
        return bool(np.all(self._positions(rows)[1]))

    def maxima(self, rows):
        """(r,) float32: each reference row's largest listed cosine to the split rows ``rows``
        (candidates of the fit, :meth:`covers`); -inf where none of them lists it."""
        pos = self._positions(rows)[0]
        lo, hi = self.start[pos], self.start[pos + 1]
        size = hi - lo
        total = int(size.sum())
        out = np.full(self.reference.shape[0], -np.inf, dtype=np.float32)
        if total:
            idx = np.arange(total, dtype=np.int64) + np.repeat(lo - (np.cumsum(size) - size), size)
            np.maximum.at(out, self.ref[idx].astype(np.int64), self.sim[idx])
        return out


def list_entries(n) -> int:
    """Entries of the threshold lists for ``n`` candidates: :data:`LIST_ENTRIES`, twice that
    from :data:`LARGE_SPLIT` candidates."""
    return LIST_ENTRIES * (2 if n >= LARGE_SPLIT else 1)


def list_thresholds(E, R, T):
    """(r,) float32: for each reference row, the ``ceil(T m / n)``-th largest cosine to a
    fixed random sample of m = :data:`THRESHOLD_SAMPLE` candidates (:class:`HostRows` ``E``;
    all of them when fewer: the T-th largest), so about T candidates reach it; -inf when
    ``T >= n`` (every one)."""
    n, r = E.shape[0], R.shape[0]
    if T >= n:
        return np.full(r, -np.inf, dtype=np.float32)
    m = min(n, THRESHOLD_SAMPLE)
    Es = E.take(np.sort(np.random.default_rng(0).choice(n, m, replace=False)) if m < n else None)
    kth = m - max(1, math.ceil(T * m / n))
    theta = np.empty(r, dtype=np.float32)
    per = max(1, (BLOCK_ELEMENTS >> 2) // m)
    for r0 in range(0, r, per):
        theta[r0 : r0 + per] = np.partition(R[r0 : r0 + per] @ Es.T, kth, axis=1)[:, kth]
    return theta


def first_gains(E, R):
    """(n,) float64: each candidate's ``sum_x (C[i, x] + 1)``, its gain over the empty selection
    (:class:`HostRows` ``E``), from one product with the sum of the reference rows."""
    E = as_host_rows(E)
    total = R.sum(axis=0, dtype=np.float64)  # sum_x (C[i, x] + 1) = e_i . sum_x r_x + r
    cover, buf = np.empty(E.shape[0]), np.empty((CANDIDATE_BLOCK, E.shape[1]))  # float64; one block, reused
    for i0, i1, blk in E.blocks():
        np.copyto(buf[: i1 - i0], blk)
        np.matmul(buf[: i1 - i0], total, out=cover[i0:i1])
    return cover + float(R.shape[0])  # the same values as a float64 copy of 8,192 rows a block (1M: 0.52 -> 0.25 s)


def threshold_lists(E, R, T, *, cover=None, stage=None):
    """:class:`ThresholdLists` of candidates ``E`` (:class:`HostRows` or an (n, d) array)
    against reference rows ``R`` (r, d), about ``T`` entries a reference row, from one pass
    over blocks of candidates (the products of :func:`screen_kernel`).

    ``cover``: the first gains when known (else :func:`first_gains` computes them).
    ``stage`` (r,) float32, each reference row's best cosine to some picks: the pass also
    bounds each candidate's gain over them, ``sum_x max(0, C[i, x] - stage[x])``, from its
    products (at least that sum, by the product's rounding bound; ``bound``), which every
    later pick's gain is at most (stochastic greedy's early picks,
    :data:`~datamask.core.stochastic.STAGE_PICKS`)."""
    from .facility_scan import scan_block, screen_block, screen_block_int, stage_sums, workspace

    E = as_host_rows(E)
    n, r = E.shape[0], R.shape[0]
    theta = list_thresholds(E, R, T)
    cover = first_gains(E, R) if cover is None else np.asarray(cover, dtype=np.float64)
    bound = None if stage is None else np.empty(n, dtype=np.float64)
    start = np.zeros(n + 1, dtype=np.int64)
    cap = max(1024, int(1.05 * min(n, T) * r) + 1024)  # the sampled thresholds give T r within a few %
    ref = np.empty(cap, dtype=np.int16 if r <= 1 << 15 else np.int32)
    sim, pos = np.empty(cap, dtype=np.float32), 0
    kernel = screen_kernel(n * r) if np.isfinite(theta).all() else "float32"
    product = {"int8": _Int8Product, "bfloat16": _Bf16Product}.get(kernel, _F32Product)(R, theta)
    work = workspace(CANDIDATE_BLOCK, r)
    for i0, i1, blk in E.blocks():
        C = product(blk)
        if bound is not None:
            est, scale, margin = product.estimate(C)
            low = (np.asarray(stage, dtype=np.float64) - margin - screen_margin(R.shape[1], 0.0, 0.0)).astype(
                np.float32
            )
            stage_sums(est, scale, low, bound[i0:i1])
        while True:
            if kernel == "int8":
                end = screen_block_int(C, product.key, blk, R, theta, ref, sim, start[i0 + 1 : i1 + 1], pos, work)
            elif kernel == "bfloat16":
                end = screen_block(C, product.key, blk, R, theta, ref, sim, start[i0 + 1 : i1 + 1], pos, work)
            else:
                end = scan_block(C, theta, ref, sim, start[i0 + 1 : i1 + 1], pos, work)
            if end >= 0:
                break
            ref, sim = np.resize(ref, 2 * ref.shape[0]), np.resize(sim, 2 * sim.shape[0])  # rare: rescan
        pos = end
    return ThresholdLists(start, ref[:pos], sim[:pos], theta, cover, bound)  # views: no second copy


class _F32Product:
    """(c, r) float32 cosines of a block of candidates (the portable pass)."""

    def __init__(self, R, theta):
        self.Rt = np.ascontiguousarray(R.T)
        self.buf = np.empty((CANDIDATE_BLOCK, R.shape[0]), dtype=np.float32)
        self.one, self.d = np.ones(R.shape[0], dtype=np.float32), R.shape[1]

    def __call__(self, blk):
        return np.matmul(blk, self.Rt, out=self.buf[: blk.shape[0]])

    def estimate(self, C):
        """``(est, scale, margin)``: the block's cosines are ``est * scale`` within ``margin``
        (here: the float32 sum's)."""
        return C, self.one, screen_margin(self.d, 0.0, 0.0)


class _Bf16Product:
    """(c, r) bfloat16 cosines of a block of candidates, as int16 bits; after each block,
    ``key`` (r,) the order keys (:func:`bf16_keys`) of each threshold less the block's
    :func:`screen_margin`, rounded down."""

    def __init__(self, R, theta):
        import torch

        self.torch = torch
        R32 = torch.from_numpy(np.ascontiguousarray(R, dtype=np.float32))
        Rb = R32.to(torch.bfloat16)
        self.Rt, self.dr = Rb.T, _rounding(R32, Rb)
        self.theta, self.d, self.key = theta.astype(np.float64), R.shape[1], None
        self.out = torch.empty((CANDIDATE_BLOCK, R.shape[0]), dtype=torch.bfloat16)  # reused: no page faults a block

    def __call__(self, blk):
        t = self.torch
        b32 = t.from_numpy(blk)
        b = b32.to(t.bfloat16)
        da = float(_rounding(b32, b).max())
        self.key = bf16_keys(self.theta - screen_margin(self.d, da, self.dr), down=True)
        out = self.out[: blk.shape[0]]
        t.matmul(b, self.Rt, out=out)
        self.margin = screen_margin(self.d, da, self.dr) + 2.0**-8  # and the output's rounding (|cos| <= 1)
        return out.view(t.int16).numpy()

    def estimate(self, C):
        """``(est, scale, margin)`` of the last block (:meth:`_F32Product.estimate`): its
        bfloat16 cosines as float32, within the rounding bound plus the output's rounding."""
        est = self.torch.from_numpy(C).view(self.torch.bfloat16).float().numpy()
        return est, np.ones(C.shape[1], dtype=np.float32), self.margin


class _Int8Product:
    """(c, r) int32 products of a block of candidates and the reference rows, each rounded to
    int8 on its own scale (a candidate block shares one: ``sa``, its largest entry over 127; a
    reference row x has ``sr[x]``); after each block, ``key`` (r,) int64: the least product
    that a pair whose float32 cosine reaches ``theta[x]`` can have (:func:`int8_keys`)."""

    def __init__(self, R, theta):
        import torch

        self.torch = torch
        R = np.ascontiguousarray(R, dtype=np.float32)
        self.sr = _int8_scales(R)
        Rq = np.rint(R / self.sr[:, None].astype(np.float32)).astype(np.int8)
        self.dr = _int8_error(R, Rq, self.sr)
        self.Rt = torch.from_numpy(np.ascontiguousarray(Rq.T))
        self.theta, self.d, self.key = theta.astype(np.float64), R.shape[1], None
        self.q = np.empty((CANDIDATE_BLOCK, R.shape[1]), dtype=np.int8)

    def __call__(self, blk):
        from .facility_scan import quantize_rows

        sa = max(float(np.abs(blk).max()), 1e-30) / 127.0
        q = self.q[: blk.shape[0]]
        da = quantize_rows(blk, sa, q)
        self.key = int8_keys(self.theta, sa, self.sr, self.d, da, self.dr)
        self.scale, self.margin = (sa * self.sr).astype(np.float32), screen_margin(self.d, da, self.dr)
        return self.torch._int_mm(self.torch.from_numpy(q), self.Rt).numpy()

    def estimate(self, C):
        """``(est, scale, margin)`` of the last block (:meth:`_F32Product.estimate`): the int32
        products on the rows' scales, within the rounding bound (:func:`int8_keys`'s)."""
        return C, self.scale, self.margin


def _int8_scales(X):
    """(rows,) float64: each row's largest magnitude over 127 (1 for a zero row)."""
    m = np.abs(X).max(axis=1).astype(np.float64) / 127.0
    return np.where(m > 0, m, 1.0)


def _int8_error(X, Q, scale):
    """(rows,) float64: each row's ``||x - scale q||``, a bound (float64 sums of exact float32
    entries; 2^-40 to spare)."""
    diff = X.astype(np.float64) - Q.astype(np.float64) * np.asarray(scale, dtype=np.float64)[:, None]
    return np.sqrt((diff * diff).sum(axis=1)) * (1 + 2.0**-40) + 2.0**-40


def int8_keys(theta, sa, sr, d, da, dr):
    """(r,) int64: the least int32 product ``sum_k qa_k qr_k`` that a pair can have whose float32
    cosine reaches ``theta[x]``. The rounded rows' product, ``sa sr[x]`` times that sum, is
    within :func:`screen_margin` of the float32 cosine (as for bfloat16: ``da``, ``dr`` the
    rounding errors, plus the float32 sum), so a pair whose sum is below
    ``(theta[x] - margin) / (sa sr[x])``, rounded down, less one for the division's
    rounding, cannot reach ``theta[x]``."""
    lo = (np.asarray(theta, dtype=np.float64) - screen_margin(d, da, dr)) / (sa * np.asarray(sr, dtype=np.float64))
    return np.floor(lo).astype(np.int64) - 1


def _rounding(x32, xb):
    """(rows,) float64: each row's ``||x - bfloat16(x)||``, a bound (the differences are exact
    in float32; their float32 sum of squares is within 2^-10 of its value)."""
    return np.sqrt((x32 - xb.float()).square().sum(dim=1).double().numpy()) * (1 + 2.0**-10)


def bf16_keys(x, down=False):
    """int16 keys that order bfloat16 values as the values (``x`` float32, truncated to
    bfloat16; ``down``: rounded towards -inf instead, so the key's value is <= ``x``)."""
    x = np.asarray(x, dtype=np.float32)
    bits = (x.view(np.int32) >> 16).astype(np.int16)
    key = np.where(bits >= 0, bits, -32768 - bits.astype(np.int32)).astype(np.int32)
    if down:  # truncation moved a negative value up: one bfloat16 step down
        back = (bits.astype(np.int32) << 16).view(np.float32)
        key = np.where(back > x, key - 1, key)
    return key.astype(np.int32)


def screen_margin(d, da, dr):
    """Most a bfloat16 product moves the cosine of a unit row a (``da``: ``||a - a'||``, a'
    its bfloat16 rounding) and unit rows r (``dr``) from the exact one before the output's
    rounding: ``|a'.r' - a.r| <= da + dr + da dr`` (Cauchy-Schwarz), plus the float32 sum
    of ``d`` products (``2 d 2^-24``, any order) and 2^-20 to spare. The output's rounding
    to bfloat16 needs none: it is monotone, and the thresholds' keys are rounded down."""
    dr = np.asarray(dr, dtype=np.float64)
    return da + dr + da * dr + (2 * d * 2.0**-24) * (1 + da) * (1 + dr) + 2.0**-20


@functools.lru_cache(maxsize=1)
def _bf16_usable() -> bool:
    """This CPU has bfloat16 dot products and torch multiplies bfloat16 within the margin."""
    if os.environ.get("DATAMASK_FACILITY_PRODUCT", "").lower() == "float32":
        return False
    if not cpu_flags().intersection(_CPU_FLAGS):
        return False
    try:
        import torch

        rng = np.random.default_rng(0)
        A = rng.standard_normal((37, 384)).astype(np.float32)
        A /= np.linalg.norm(A, axis=1, keepdims=True)
        A32 = torch.from_numpy(A)
        Ab = A32.to(torch.bfloat16)
        got = (Ab @ Ab.T).float().numpy()
        da = _rounding(A32, Ab)
    except Exception:
        return False
    # within the margin, plus the output's rounding (half a bfloat16 step at 1): float32 sums
    bound = screen_margin(384, da[:, None], da[None, :]) + 2.0**-8
    return bool((np.abs(got - A.astype(np.float64) @ A.T.astype(np.float64)) <= bound).all())


@functools.lru_cache(maxsize=1)
def _int8_usable() -> bool:
    """This CPU has int8 dot products and torch's ``_int_mm`` multiplies int8 exactly
    (:func:`~datamask.core.cpu.int8_matmul`), and ``DATAMASK_FACILITY_PRODUCT`` does not name
    another product."""
    if os.environ.get("DATAMASK_FACILITY_PRODUCT", "").lower() in ("float32", "bfloat16"):
        return False
    return int8_matmul()


def screen_kernel(pairs) -> str:
    """The product a pass over ``pairs`` candidate-reference pairs screens with: ``"int8"``
    (int8 dot products, the CPU and torch can), else ``"bfloat16"`` (likewise), for a large
    pass; else ``"float32"``. ``DATAMASK_FACILITY_PRODUCT`` names one (``float32``: never a screen)."""
    if pairs < BF16_MIN_PAIRS:
        return "float32"
    if _int8_usable():
        return "int8"
    return "bfloat16" if _bf16_usable() else "float32"


def sorted_lists(lists, T):
    """``(nbr, sim, short)``: each reference row's ``T`` most similar candidates, most similar
    first (ties by candidate), and their cosines, from :class:`ThresholdLists`; ``short``: the
    reference rows that list fewer than T (their rows of ``nbr`` and ``sim`` left unset).
    A row listing at least T holds its T largest: all of them reach its threshold."""
    r, n = lists.theta.shape[0], lists.start.shape[0] - 1
    cand = np.repeat(np.arange(n), np.diff(lists.start))
    o = np.lexsort((cand, -lists.sim, lists.ref))  # by reference row, then cosine down, then candidate
    counts = np.bincount(lists.ref, minlength=r)
    first = np.cumsum(counts) - counts
    ok = counts >= T
    nbr = np.empty((r, T), dtype=np.int64)
    sim = np.empty((r, T), dtype=np.float32)
    at = o[first[ok][:, None] + np.arange(T)]
    nbr[ok], sim[ok] = cand[at], lists.sim[at]
    return nbr, sim, np.flatnonzero(~ok)
