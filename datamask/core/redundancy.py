"""Near-duplicate candidates: the redundancy filter of a fit (``DataMask(near_duplicate=0.95)``).

A diversity objective that averages over the selection barely sees a pair of near-duplicates
(pairwise diversity is a function of the selection's mean embedding; facility location gives
the second copy no gain, but once its reference rows are covered the rest of the budget
follows quality, copies included). So rows are dropped best quality first (normalised quality;
on a tie, the earlier row): a row goes when a better row that stays (or a better one compared
in the same block of 256) is at cosine >= ``near_duplicate``. Of a group of near-copies the
best stays, and the rows that stay are pairwise below the threshold wherever a pair was
compared. The threshold is the report's near-duplicate line (semantic dedup's default eps 0.05).

Which rows: where stochastic greedy's picks are the selection (facility location's default
fit, :func:`~datamask.core.solvers.filters_picks`), the picks, refilled by the picks continued
(:func:`picks_without_near_duplicates`); elsewhere every candidate after pruning, before the
optimiser (:func:`without_near_duplicates`).

Finding the pairs without the n x n product: rows go into cells by their nearest of a seeded
sample of themselves as centres (dense regions get more, smaller cells): each row lives in its
nearest cell of about :data:`LEAF` rows and visits its second nearest, so a pair is compared
when one row's cell is among the other's two nearest. Above :data:`COARSE` rows, coarse cells
of about :data:`COARSE_CELL` rows come first (each row in its two nearest). A pair compared is
judged exactly; a pair that shares no cell is missed (tests/core/test_redundancy.py measures
the recall against the full product; docs/diversity.md gives it on the suite's corpora: 99.7%
and more). A group of near-copies costs its size times the rows kept, not its size squared.

Numpy or cupy alike; the rows are gathered one coarse cell at a time (float32), never the
whole split.
"""

from __future__ import annotations

import numpy as np

from .backend import default_rng, get_namespace
from .objectives import best_first
from .validate import BLOCK_ROWS, unit_rows

__all__ = [
    "NEAR_DUPLICATE",
    "near_duplicate_candidates",
    "exact_near_duplicates",
    "without_near_duplicates",
    "picks_without_near_duplicates",
]

#: cosine at or above which two rows are near-duplicates (the report's near-duplicate share)
NEAR_DUPLICATE = 0.95
PROBES = 2  # fine cells each row is put into
LEAF = 128  # rows per fine cell (about twice that with two probes): a row is compared with ~256
COARSE, COARSE_CELL = 65_536, 8_192  # above COARSE rows, first coarse cells of ~COARSE_CELL rows
_PAIR_BLOCK = 1 << 22  # products per block inside a cell (16 MiB of float32)
# A search for at most this many fresh rows compares them with every row (the refills' last
# rounds, where the cells would gather every row twice): F n products against the cells' cost,
# about n gathers and n x 256 products: at 1M rows the cells took 0.9 s for 135 fresh rows of
# 100k picks (the whole filter 4.0-4.2 s, with the comparison 3.2-3.3 s: facility_scale.md, round
# 21); at 100k rows, comparing 5,000 fresh rows of 10k picks
# made the whole filter 0.9-1.0 s against the cells' 0.2 (round 21)
FRESH_ROWS = 256
FRESH_BLOCK = 8192  # rows compared with the fresh ones at a time (a float32 copy of them)
ROUNDS = 8  # the picks' filter: rounds of filter and refill at most


def _nearest(X, centres, probes, xp):
    """(n, probes) indices of each row of ``X``'s nearest ``centres`` (unit float32), nearest first."""
    n = X.shape[0]
    out = xp.empty((n, probes), dtype=xp.int64)
    for i0 in range(0, n, BLOCK_ROWS):
        G = X[i0 : i0 + BLOCK_ROWS] @ centres.T
        at = xp.arange(G.shape[0])
        for j in range(probes):  # argmax, then the next: cheaper than a partition for two
            best = xp.argmax(G, axis=1) if j < centres.shape[0] else out[i0 : i0 + G.shape[0], 0]
            out[i0 : i0 + G.shape[0], j] = best
            G[at, best] = -xp.inf
    return out


def _groups(cell, n_cells, xp):
    """Members (positions) of each of ``n_cells`` cells, from ``cell`` (n, k) (a row that
    names a cell twice counts once)."""
    k = cell.shape[1]
    flat = cell.reshape(-1)
    member = xp.repeat(xp.arange(cell.shape[0]), k)
    by = xp.argsort(flat, kind="stable") if xp is np else xp.argsort(flat)
    bounds = xp.searchsorted(flat[by], xp.arange(n_cells + 1))
    bounds = [int(b) for b in (bounds.get() if hasattr(bounds, "get") else bounds)]
    for c in range(n_cells):
        got = member[by[bounds[c] : bounds[c + 1]]]
        yield xp.unique(got) if k > 1 else got


def _search(X, rank, threshold, drop, pos, seed, xp, fresh=None):
    """Mark in ``drop`` (at ``pos``) the rows of ``X`` (unit float32) to drop: each has a better
    row at cosine >= ``threshold`` that stays, or that is compared in the same block
    (``rank``: their places in the quality order). ``fresh`` (None: every row): only the
    cells that hold a fresh row are searched."""
    m = X.shape[0]
    if m <= 2 * LEAF:
        drop[pos] |= _within(X, rank, threshold, xp)
        return
    n_cells = -(-m // LEAF)
    centres = X[default_rng(xp, seed).subset(m, n_cells)]
    cell = _nearest(X, centres, PROBES, xp)
    near = xp.zeros(m, dtype=bool)
    homes = list(_groups(cell[:, :1], n_cells, xp))
    for h in homes:  # each row in its nearest cell
        if h.shape[0] > 1 and (fresh is None or bool(fresh[h].any())):
            near[h] = _within(X[h], rank[h], threshold, xp)
    # then the rows still kept visit their second cell: a pair is compared when one row's
    # home is among the other's two nearest cells
    for h, v in zip(homes, _groups(cell[:, 1:], n_cells, xp)):
        v = v[(cell[v, 0] != cell[v, 1]) & ~near[v]]
        h = h[~near[h]]
        if v.shape[0] and h.shape[0] and (fresh is None or bool(fresh[h].any() or fresh[v].any())):
            _across(X, rank, h, v, threshold, near, xp)
    drop[pos] |= near


def _across(X, rank, h, v, threshold, near, xp):
    """Pairs between visitors ``v`` and home rows ``h`` of a cell: the worse of a close pair goes."""
    rh, rv = rank[h], rank[v]
    per = max(1, _PAIR_BLOCK // h.shape[0])
    for i0 in range(0, v.shape[0], per):
        vb = v[i0 : i0 + per]
        close = (X[vb] @ X[h].T) >= threshold
        worse = rv[i0 : i0 + per, None] > rh[None, :]  # the visitor is the worse of the pair
        near[vb] |= (close & worse).any(axis=1)
        near[h] |= (close & ~worse).any(axis=0)


def _within(X, rank, threshold, xp, block=256):
    """Which rows of ``X`` (one cell; ``rank``: their places in the quality order) to drop,
    best first a block at a time: a row goes when a better row that stays, or a better row of
    its own block, is at cosine >= ``threshold``. The rows that stay are then pairwise below
    it, and a group of near-copies costs its size times one row, not its size squared."""
    m = X.shape[0]
    near = xp.zeros(m, dtype=bool)
    if m < 2:
        return near
    order = xp.argsort(rank)
    Xs = X[order]
    kept = xp.zeros((0, X.shape[1]), dtype=X.dtype)
    for i0 in range(0, m, block):
        B = Xs[i0 : i0 + block]
        gone = xp.tril(B @ B.T >= threshold, -1).any(axis=1)
        if kept.shape[0]:
            gone |= ((B @ kept.T) >= threshold).any(axis=1)
        near[order[i0 : i0 + block]] = gone
        kept = xp.concatenate([kept, B[~gone]])
    return near


def _ranks(quality, rows, xp):
    q = xp.asarray(quality)[rows]
    order = xp.argsort(-q, kind="stable") if xp is np else xp.argsort(-q)
    rank = xp.empty(rows.shape[0], dtype=xp.int64)
    rank[order] = xp.arange(rows.shape[0])
    return rank


def near_duplicate_candidates(E, quality, rows, threshold=NEAR_DUPLICATE, *, seed=0, norms=None, fresh=None):
    """Which of ``rows`` (indices into ``E``) have a better row of ``rows`` at cosine >= ``threshold``.

    Parameters
    ----------
    E : (N, d) array, numpy or cupy (float16 or float32 storage)
    quality : (N,) array; higher is better
    rows : (n,) int array, the candidates
    threshold : float in (0, 1]
    seed : int, the cells' centres
    norms : (N,) row norms when the rows are not unit (as :func:`~.validate.check_inputs` gives)
    fresh : (n,) bool array or None
        The rows new since a search of the others (the filter over the picks' refills): only
        the cells that hold a fresh row are searched, so a pair of two older rows is
        compared only where it shares a cell with a fresh one; up to ``FRESH_ROWS`` fresh
        rows are compared with every row instead, and the fresh rows with the rows near one
        searched together. None: every row is fresh.

    Returns
    -------
    (n,) bool array: True for a row to drop (a better near-duplicate stays among ``rows``).
    """
    xp = get_namespace(E)
    rows = xp.asarray(rows)
    n = int(rows.shape[0])
    drop = xp.zeros(n, dtype=bool)
    rank = _ranks(quality, rows, xp)
    if fresh is not None and int(fresh.sum()) <= FRESH_ROWS:
        return _fresh_search(E, rows, rank, float(threshold), drop, fresh, norms, xp)
    if n <= COARSE:
        _search(unit_rows(E, rows, norms), rank, float(threshold), drop, xp.arange(n), int(seed), xp, fresh)
        return drop
    # above COARSE rows: coarse cells from the stored rows a block at a time, each cell then
    # gathered once as float32 (never the whole split)
    n_cells = -(-n // COARSE_CELL)
    centres = unit_rows(E, rows[default_rng(xp, seed).subset(n, n_cells)], norms)
    cell = xp.concatenate([_nearest(unit_rows(E, rows[i0 : i0 + BLOCK_ROWS], norms), centres, PROBES, xp)
                           for i0 in range(0, n, BLOCK_ROWS)])  # fmt: skip
    for idx in _groups(cell, n_cells, xp):  # both probes: a coarse cell holds its neighbours' edges
        f = None if fresh is None else fresh[idx]
        if f is None or bool(f.any()):
            _search(unit_rows(E, rows[idx], norms), rank[idx], float(threshold), drop, idx, int(seed) + 1, xp, f)
    return drop


def _fresh_search(E, rows, rank, threshold, drop, fresh, norms, xp):
    """:func:`near_duplicate_candidates` for a few fresh rows: every row compared with them,
    then the fresh rows and the rows near one searched together (the others, searched
    before, stay)."""
    F = unit_rows(E, rows[xp.flatnonzero(fresh)], norms)
    near = fresh.copy()
    for i0 in range(0, rows.shape[0], FRESH_BLOCK):
        near[i0 : i0 + FRESH_BLOCK] |= ((unit_rows(E, rows[i0 : i0 + FRESH_BLOCK], norms) @ F.T) >= threshold).any(
            axis=1
        )
    z = xp.flatnonzero(near)
    drop[z] = _within(unit_rows(E, rows[z], norms), rank[z], threshold, xp)
    return drop


def exact_near_duplicates(E, quality, rows, threshold=NEAR_DUPLICATE, norms=None):
    """:func:`near_duplicate_candidates` by the full product (O(n^2 d)): the reference the
    tests and the benchmark measure its recall against."""
    xp = get_namespace(E)
    rows = xp.asarray(rows)
    return _within(unit_rows(E, rows, norms), _ranks(quality, rows, xp), threshold, xp)


def without_near_duplicates(E, qn, cand, est, S, T, t, scale, xp):
    """``(candidates, dropped)``: ``cand`` less the rows with a better near-duplicate among them
    (:func:`~datamask.core.redundancy.near_duplicate_candidates`); the best dropped rows
    return when the rest cannot fill the budget (``S`` rows, or more than ``T`` tokens)."""
    drop = near_duplicate_candidates(E, qn, cand, est.near_duplicate, seed=est.seed, norms=scale)
    keep, gone = cand[~drop], cand[drop]
    if T is not None:
        short = int(t[keep].sum()) <= T
        need = xp.cumsum(t[gone[best_first(qn[gone], xp)]]) if short else None
        back = 0 if not short else min(int((need <= T - int(t[keep].sum())).sum()) + 1, int(gone.shape[0]))
    else:
        back = max(0, int(S) - int(keep.shape[0]))
    if back:
        keep = xp.concatenate([keep, gone[best_first(qn[gone], xp)[:back]]])
    return xp.sort(keep), int(gone.shape[0]) - back


def picks_without_near_duplicates(E, quality, cand, order, pick, threshold=NEAR_DUPLICATE, *, seed=0, norms=None):
    """The redundancy filter over a solver's picks, refilled: ``(order, dropped, left)``.

    ``order`` (candidate positions, into ``cand``) are the picks; of every near-duplicate
    pair among them (:func:`near_duplicate_candidates` over the picks) the worse goes for
    good, and ``pick(m, first, without)`` (the solver, continued from the picks ``first``
    that stay, never taking ``without``: every pick dropped so far) adds ``m`` others in
    their place; its picks are filtered in turn, for at most :data:`ROUNDS` rounds. The
    filter then sees the picks only, not every candidate: a fit's selection is a tenth of
    the split or less, so this is that much cheaper than filtering the candidates first
    (:func:`without_near_duplicates`), and a row near a better one that was never picked
    still counts. When the rows left cannot fill the budget, the best dropped return.

    Returns the picks, how many were dropped (and not returned), and how many picks still
    have a better near-duplicate among them: 0 unless the rounds ran out (the last round's
    finds stay) or the pool ran dry (the dropped rows that returned).
    """
    xp = get_namespace(E)
    S, gone, fresh = int(order.shape[0]), [], None
    for r in range(ROUNDS + 1):
        drop = near_duplicate_candidates(E, quality, cand[order], threshold, seed=seed + r, norms=norms, fresh=fresh)
        if r == ROUNDS and order.shape[0] == S:  # the rounds are spent: the last picks stay as they are
            return order, sum(int(g.shape[0]) for g in gone), int(drop.sum())
        gone.append(order[drop])
        order = order[~drop]
        need = S - int(order.shape[0])
        if not need:
            return order, sum(int(g.shape[0]) for g in gone), 0
        out = xp.concatenate(gone)
        new = xp.asarray(pick(need, order, out), dtype=order.dtype) if r < ROUNDS else out[:0]
        if not new.shape[0]:  # the pool ran dry: the best dropped return
            back = out[best_first(xp.asarray(quality)[cand[out]], xp)[:need]]
            return xp.concatenate([order, back]), int(out.shape[0] - back.shape[0]), int(back.shape[0])
        # the next round searches only where a new pick is: the picks that stay were searched together
        fresh = xp.concatenate([xp.zeros(order.shape[0], dtype=bool), xp.ones(new.shape[0], dtype=bool)])
        order = xp.concatenate([order, new])
    raise AssertionError("unreachable")  # pragma: no cover
