"""Every number of one selection on the same footing: the report's side-by-side table.

:func:`selection_scores` scores any mask of one split (the chosen selection, top-k and
random at the same budget in ``datamask select``; every method in ``datamask compare``);
:class:`Scorecard` scores several masks of one split alike, on one sample of rows:

``quality``         mean raw quality score of the selected rows (the input's scale)
``quality_norm``    mean quality min-max normalised over the split (0-1: the objective's term)
``objective``       DATAMASK's objective with the run's ``lam`` and diversity
``pairwise``, ``facility``, ``disf``  each diversity of :mod:`.diversity`; ``facility`` is the
                    coverage: the mean over rows of their best cosine to the selection
                    (over a seeded sample of ``sample`` rows, post-stratified, else the
                    objective's ``reference_size`` rows)
``near_duplicates`` share of selected rows whose nearest other selected row has cosine
                    >= :data:`NEAR_DUPLICATE_COSINE` (over a seeded sample of selected rows)
``tokens``, ``mean_tokens``  kept tokens and mean length, when token counts are known

Numpy or cupy arrays alike. The rows of the masks scored together are copied once (float32,
unit), grouped by the masks that hold them, and every number is read from that copy: O(S d)
for pairwise and O(r S d) for coverage and near-duplicates (r = the sample, one product for
both and for every mask holding a group), never O(N S d). :func:`score_sample` bounds r S.
"""

from __future__ import annotations

import numpy as np

from .backend import default_rng, get_namespace, smallest_keys, to_numpy
from .diversity import DIVERSITIES, get_diversity
from .metrics import BLOCK_ELEMENTS, pairwise_from_sums
from .objectives import Objective, normalize_quality
from .validate import BLOCK_ROWS, check_inputs, needs_rescale, unit_rows

__all__ = [
    "Scorecard",
    "selection_scores",
    "near_duplicate_share",
    "score_sample",
    "NEAR_DUPLICATE_COSINE",
    "SCORE_SAMPLE",
    "SCORE_PAIRS",
    "SCORE_SAMPLE_MIN",
]

# semantic dedup's default eps (0.05): rows with cosine above 1 - eps are near-duplicates there
NEAR_DUPLICATE_COSINE = 0.95
# rows sampled for coverage and near-duplicates when the run sets no reference_size
SCORE_SAMPLE = 2048
# the most row pairs (sample x selected) one sampled number compares, and the fewest rows it
# samples: a default select's subsets at 20k and 200k rows (2,000 and 20,000 selected) sample 131
# and 128 rows: the three subsets' scoring took 8-10% of the split's select at 200k, 9-19% at 20k;
# sd of one run 0.008-0.017 for coverage, 0.017-0.037 for the near-duplicate share
# (benchmarks/side_by_side.py, benchmarks/results/side_by_side.md, docs/benchmarks.md)
SCORE_PAIRS = 1 << 18
SCORE_SAMPLE_MIN = 128


def score_sample(selected: int, size=None) -> int:
    """Rows sampled for coverage and near-duplicates of a ``selected``-row subset: ``size``
    (default :data:`SCORE_SAMPLE`), fewer when ``size x selected`` passes :data:`SCORE_PAIRS`,
    never under :data:`SCORE_SAMPLE_MIN`."""
    size = int(size or SCORE_SAMPLE)
    return max(min(size, SCORE_PAIRS // max(int(selected), 1)), min(size, SCORE_SAMPLE_MIN))


def gathered_rows(E, rows=None, norms=None):
    """``E[rows]`` as float32 unit rows (all rows when ``rows`` is None): ``norms`` as
    :func:`~.validate.unit_rows` takes them, or ``"own"``: the rows' own norms, computed on
    the copy and used only when one of them is more than ``NORM_TOLERANCE`` off 1 (the
    inputs' rule, applied to the rows read; no pass over the split)."""
    if not isinstance(norms, str):
        return unit_rows(E, rows, norms)
    xp = get_namespace(E)
    if E.dtype == xp.float32:  # one gather, no staging block
        U = E.copy() if rows is None else E[rows]
    else:
        U = unit_rows(E, rows)
    own = xp.sqrt(xp.einsum("ij,ij->i", U, U))
    if needs_rescale(own):
        U /= own[:, None]
    return U


def best_cosines(P, U, own=None):
    """Each row of ``P`` (p, d)'s largest dot product with the rows of ``U`` (S, d), in
    blocks of ``U``'s rows; ``own``: for each row of ``P``, its position in ``U`` (its own
    pair is left out), or -1 / None for none. -inf where nothing is left."""
    return region_maxima(P, U, [(0, U.shape[0])], own)[0]


def region_maxima(P, U, regions, own=None):
    """(len(regions), p): each row of ``P``'s largest dot product with the rows of each
    region ``(start, stop)`` of ``U`` (consecutive ranges), in one product per block of
    :data:`~.metrics.BLOCK_ELEMENTS`; ``own`` as :func:`best_cosines` has it."""
    xp = get_namespace(P)
    p = P.shape[0]
    out = xp.full((len(regions), p), -np.inf, dtype=xp.float32)
    if not regions:
        return out
    b0, b1 = regions[0][0], regions[-1][1]
    per = max(1, BLOCK_ELEMENTS // max(p, 1))
    mine = None if own is None else xp.nonzero(own >= 0)[0]
    for c0 in range(b0, b1, per):
        c1 = min(c0 + per, b1)
        G = P @ U[c0:c1].T
        if mine is not None:
            hit = mine[(own[mine] >= c0) & (own[mine] < c1)]
            G[hit, own[hit] - c0] = -np.inf
        for i, (r0, r1) in enumerate(regions):
            lo, hi = max(r0, c0), min(r1, c1)
            if lo < hi:
                out[i] = xp.maximum(out[i], G[:, lo - c0 : hi - c0].max(axis=1))
    return out


def venn_order(masks):
    """The rows held by any of ``masks`` (bool arrays of one split), grouped by which masks
    hold them: ``(order, regions)``, ``order`` the rows (sorted within a group) and
    ``regions`` one ``(start, stop, code)`` per non-empty group, bit j of ``code`` set when
    mask j holds its rows."""
    xp = get_namespace(masks[0])
    code = xp.zeros(masks[0].shape[0], dtype=xp.int64)
    for j, m in enumerate(masks):
        code += m.astype(xp.int64) * (1 << j)
    rows = xp.nonzero(code)[0]
    if len(masks) == 1:
        return rows, [(0, int(rows.shape[0]), 1)] if rows.shape[0] else []
    rc = code[rows]
    parts, regions, start = [], [], 0
    for c in (int(c) for c in to_numpy(xp.unique(rc))):
        parts.append(rows[rc == c])
        regions.append((start, start + int(parts[-1].shape[0]), c))
        start = regions[-1][1]
    return (xp.concatenate(parts) if parts else rows), regions


def _share_near(best, threshold) -> float:
    return float((best >= threshold).mean()) if best.shape[0] else 0.0


def _near_sample(xp, S, sample, seed, rng=None):
    """Positions (sorted) of the selected rows whose nearest neighbour is sought (``rng``:
    ``default_rng(xp, seed)`` made already)."""
    if S <= sample:
        return xp.arange(S)
    return xp.sort((rng or default_rng(xp, seed)).subset(S, sample))


def near_duplicate_share(E, rows, threshold=NEAR_DUPLICATE_COSINE, sample=SCORE_SAMPLE, seed=0, norms=None) -> float:
    """Share of the selected ``rows`` (a seeded sample of ``sample`` of them) whose nearest
    other selected row has cosine >= ``threshold``; 0 for fewer than two rows."""
    xp = get_namespace(E)
    rows = xp.asarray(rows)
    S = int(rows.shape[0])
    if S < 2:
        return 0.0
    U = gathered_rows(E, rows, norms)
    pos = _near_sample(xp, S, sample, seed)
    return _share_near(best_cosines(U[pos], U, pos), threshold)


class Scorecard:
    """Scores masks of one split's ``E`` (N, d) and quality ``q`` alike (see the module doc).

    The objective is the run's (``lam``, ``diversity``; ``reference_size``: its facility
    reference set, None for every row); the diversity columns use ``sample`` rows instead
    when given, and near-duplicates a sample of ``sample or reference_size or``
    :data:`SCORE_SAMPLE` selected rows. Samples are coordinated (drawn with ``seed``): each
    row has one random key, a sample takes the smallest keys, so the masks share the
    reference rows and, where they overlap, their near-duplicate rows, and their
    differences are measured on the same rows. Coverage on a ``sample`` is post-stratified:
    a selected row's best cosine is 1, so the sample estimates only the other rows' mean
    (weight 1 - S/N), which removes the variance of how many sampled rows happen to be
    selected; without a sample it is the objective's value on its reference set.
    ``diversities``: the columns (default: all of :data:`~.diversity.DIVERSITIES`).
    ``norms``: the rows' norms as :func:`~.validate.check_inputs` returned them (None: unit
    rows); False (default) checks the inputs here; ``"own"``: the inputs were checked, each
    copy uses its rows' own norms (:func:`gathered_rows`).
    ``reference_cover``: a facility fit's :class:`~.facility_lists.ReferenceCover` of the same
    split (its reference rows the run's): each mask's objective is then read from the fit's
    lists, and only the reference rows no listed row of a mask reaches are multiplied with it
    (numpy; masks of the fit's candidates only, else the products as without it).
    """

    def __init__(
        self, E, q, *, lam=0.5, diversity="pairwise", reference_size=None, seed=0, sample=None, diversities=None,
        norms=False, reference_cover=None,
    ):  # fmt: skip
        xp = get_namespace(E)
        q = xp.asarray(q)
        if norms is False:  # once: every number below reads these rows' norms
            norms = check_inputs(E, q)
            norms = norms if needs_rescale(norms) else None
        self.xp, self.E, self.q, self.qn, self.norms = xp, E, q, normalize_quality(q), norms
        self.lam, self.diversity, self.reference_size, self.seed = float(lam), diversity, reference_size, seed
        self.cover = reference_size if sample is None else int(sample)
        self.stratified = sample is not None
        self.near = int(sample or reference_size or SCORE_SAMPLE)
        self.columns = list(dict.fromkeys([*(diversities or DIVERSITIES), diversity]))
        self.keys = default_rng(xp, seed).keys(E.shape[0])  # one random key per row
        self.reference_cover = reference_cover

    def sample_of(self, rows, size):
        """The rows (increasing) of ``rows`` with the ``size`` smallest keys: all of them for
        None or ``size >= len(rows)``; of every row, the objective's reference set."""
        if size is None or int(size) >= rows.shape[0]:
            return rows
        return smallest_keys(self.keys[rows], int(size))  # a key's low half is its row

    def score(self, mask, lengths=None) -> dict:
        """Every number of the selection ``mask``; ``lengths``: the rows' token counts, or None."""
        return self.score_many({"mask": mask}, lengths)["mask"]

    def score_many(self, masks, lengths=None) -> dict:
        """``{name: every number of that mask}`` for ``masks`` (name -> bool mask): the rows
        of all of them copied once, grouped by the masks that hold them (:func:`venn_order`),
        each group's product with the sampled rows taken once for every mask holding it."""
        xp, n = self.xp, self.E.shape[0]
        names = list(masks)
        ms = [xp.asarray(masks[k]).astype(bool) for k in names]
        order, regions = venn_order(ms)
        rows = [xp.nonzero(m)[0] for m in ms]
        near = [self.sample_of(r, self.near) for r in rows]
        refs = [self.sample_of(xp.arange(n), self.cover)]
        if get_diversity(self.diversity).uses_reference and self.reference_size != self.cover:
            refs.append(self.sample_of(xp.arange(n), self.reference_size))  # the run's own reference set
        listed = self._listed(refs[1] if len(refs) > 1 else None, rows)  # from the fit's lists, or None
        if listed is not None:
            refs = refs[:1]  # the run's reference rows: from the lists, not in the products below
        P_rows = xp.unique(xp.concatenate(refs + near))  # every sampled row, once
        where = xp.full(n, -1, dtype=xp.int64)
        where[order] = xp.arange(order.shape[0])
        out_rows = P_rows[where[P_rows] < 0]  # sampled rows no mask holds
        where[out_rows] = order.shape[0] + xp.arange(out_rows.shape[0])
        U = gathered_rows(self.E, xp.concatenate([order, out_rows]), self.norms)  # the one copy
        at = where[P_rows]
        P, own = U[at], xp.where(at < order.shape[0], at, -1)
        best, sums = self._products(U[: order.shape[0]], regions, P, own, P_rows, refs, near)
        if listed is not None:
            self._fill(listed, U, regions)
        pos = xp.full(n, -1, dtype=xp.int64)
        pos[P_rows] = xp.arange(P_rows.shape[0])
        self_dot = xp.einsum("ij,ij->i", P, P)  # a row's best cosine to a set holding it
        out = {}
        for j, name in enumerate(names):
            held = (U, None if len(ms) == 1 else where[rows[j]])  # its rows, for DiSF
            ref_best = []
            for R in refs:
                b, inside = best[j][pos[R]], ms[j][R]
                ref_best.append((xp.where(inside, xp.maximum(b, self_dot[pos[R]]), b), inside))
            if listed is not None:  # a row of the mask lists itself: its own cosine is in
                ref_best.append((listed[j], ms[j][self.reference_cover.reference]))
            out[name] = self._numbers(ms[j], sums[j], held, ref_best, best[j][pos[near[j]]], lengths)
        return out

    def _listed(self, run_ref, rows):
        """Per mask (its split ``rows``), each of the run's reference rows' largest cosine to it
        from the fit's lists (-inf where no listed row of the mask reaches it: :meth:`_fill`);
        None without a cover that applies (none given, cupy, other reference rows, or a mask
        with rows the fit did not score)."""
        c = self.reference_cover
        if c is None or run_ref is None or self.xp is not np:
            return None
        if not np.array_equal(c.reference, run_ref):
            return None
        if not all(c.covers(r) for r in rows):
            return None
        return [c.maxima(r) for r in rows]

    def _fill(self, listed, U, regions):
        """The reference rows of each mask that its listed rows do not reach, by products with
        the mask's rows (the groups of ``U`` that it holds)."""
        ref = self.reference_cover.reference
        for j, b in enumerate(listed):
            miss = np.flatnonzero(~np.isfinite(b))
            spans = [(r0, r1) for r0, r1, code in regions if code >> j & 1]
            if miss.shape[0] and spans:
                P = gathered_rows(self.E, ref[miss], self.norms)
                b[miss] = region_maxima(P, U, spans).max(axis=0)

    def _products(self, U, regions, P, own, P_rows, refs, near):
        """Per mask: each sampled row's best cosine to the mask's rows (its own pair left
        out), and the float64 sum of the mask's rows; one product per group of rows and the
        sampled rows it needs (one for all of them when that fits a block)."""
        xp, k = self.xp, len(near)
        is_ref = xp.isin(P_rows, xp.concatenate(refs))
        is_near = [xp.isin(P_rows, a) for a in near]
        spans = [(r0, r1) for r0, r1, _ in regions]
        whole = U.shape[0] * P.shape[0] <= BLOCK_ELEMENTS
        batches = [list(range(len(regions)))] if whole and regions else [[i] for i in range(len(regions))]
        best = [xp.full(P.shape[0], -np.inf, dtype=xp.float32) for _ in range(k)]
        sums = [xp.zeros(U.shape[1], dtype=xp.float64) for _ in range(k)]
        for batch in batches:
            held = [j for j in range(k) if any(regions[i][2] >> j & 1 for i in batch)]
            need = xp.nonzero(is_ref | _any([is_near[j] for j in held], is_ref))[0]
            top = region_maxima(P[need], U, [spans[i] for i in batch], own[need])
            for t, i in enumerate(batch):
                r0, r1, code = regions[i]
                s = xp.zeros(U.shape[1], dtype=xp.float64)
                for i0 in range(r0, r1, BLOCK_ROWS):  # float64 sums, a block at a time
                    s += U[i0 : min(i0 + BLOCK_ROWS, r1)].sum(axis=0, dtype=xp.float64)
                for j in range(k):
                    if code >> j & 1:
                        best[j][need] = xp.maximum(best[j][need], top[t])
                        sums[j] += s
        return best, sums

    def _numbers(self, mask, sums, held, ref_best, near_best, lengths) -> dict:
        """One mask's numbers from its products (see :meth:`score_many`)."""
        xp, q = self.xp, self.q
        S = int(mask.sum())
        out = {"selected": S, "quality": float(q[mask].astype(xp.float64).mean()) if S else np.nan}
        for name in self.columns:
            if get_diversity(name).uses_reference:
                out[name] = self._coverage(*ref_best[0], S)
            elif name == "pairwise":
                out[name] = float(pairwise_from_sums(float((sums * sums).sum()), S))
            else:
                U = held[0] if held[1] is None else held[0][held[1]]  # DiSF: the mask's rows again
                out[name] = float(Objective(U, self.qn, self.lam, name).diversity_of(xp.arange(S)))
        out["quality_norm"] = float(self.qn[mask].mean()) if S else 0.0
        if not get_diversity(self.diversity).uses_reference:
            run_div = out[self.diversity]
        else:  # the run's reference set, as evaluate() has it: a plain mean
            run_div = float(ref_best[-1][0].astype(xp.float64).mean()) if S else 0.0
        out["objective"] = self.lam * out["quality_norm"] + (1.0 - self.lam) * run_div
        out["near_duplicates"] = _share_near(near_best, NEAR_DUPLICATE_COSINE) if S >= 2 else 0.0
        if lengths is not None:
            t = np.asarray(to_numpy(lengths), dtype=np.float64)[np.asarray(to_numpy(mask))]
            out["tokens"] = float(t.sum())
            out["mean_tokens"] = float(t.mean()) if len(t) else np.nan
        else:
            out["tokens"] = out["mean_tokens"] = np.nan
        return out

    def _coverage(self, best, inside, S) -> float:
        """Mean of the reference rows' ``best`` cosines; post-stratified on a sample."""
        xp = self.xp
        if S == 0:
            return np.nan
        plain = float(best.astype(xp.float64).mean())
        k = int((~inside).sum())
        if not self.stratified or k == 0 or best.shape[0] >= self.E.shape[0]:
            return plain
        share = S / self.E.shape[0]
        return share + (1.0 - share) * float(best[~inside].astype(xp.float64).sum()) / k


def _any(flags, like):
    out = like & False
    for f in flags:
        out |= f
    return out


def selection_scores(
    E,
    q,
    mask,
    lengths=None,
    lam=0.5,
    diversity="pairwise",
    reference_size=None,
    seed=0,
    sample=None,
    diversities=None,
    norms=False,
) -> dict:
    """Every number of the selection ``mask`` of one split's ``E`` (N, d) and quality ``q``
    (see the module doc; the parameters are :class:`Scorecard`'s); ``lengths``: the rows'
    token counts, or None."""
    card = Scorecard(
        E, q, lam=lam, diversity=diversity, reference_size=reference_size, seed=seed, sample=sample,
        diversities=diversities, norms=norms,
    )  # fmt: skip
    return card.score(mask, lengths)
