"""The redundancy filter (``DataMask(near_duplicate=...)``, datamask.core.redundancy).

Checked against the full product in float64: the rows it keeps are pairwise below the
threshold, it drops (almost) every row the full search drops, the best of a group of
near-copies stays; in a fit, the selection has no near-duplicates and still fills its budget.
"""

from __future__ import annotations

import numpy as np
import pytest

from datamask import DataMask
from datamask.core import redundancy
from datamask.core.redundancy import (
    NEAR_DUPLICATE,
    exact_near_duplicates,
    near_duplicate_candidates,
    picks_without_near_duplicates,
)
from datamask.core.scorecard import near_duplicate_share
from datamask.core.synthetic import make_corpus


def _groups(n=6000, groups=30, per=40, seed=0, noise=0.15):
    """Random unit rows, plus ``groups`` groups of ``per`` near-copies (cosine ~0.99 to their base)."""
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(n, 64))
    base = rng.choice(n, groups, replace=False)
    rows = rng.choice(np.setdiff1d(np.arange(n), base), groups * per, replace=False)
    E[rows] = E[np.repeat(base, per)] + noise * rng.normal(size=(groups * per, 64)) / 8
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    q = rng.normal(size=n)
    return E.astype(np.float32), q, np.repeat(base, per), rows


def _close_pairs(E, keep, t):
    X = E[keep].astype(np.float64)
    G = X @ X.T
    np.fill_diagonal(G, -1)
    return int((np.triu(G) >= t).sum())


@pytest.mark.parametrize("n", [6000, 70_000])  # one level of cells, and the coarse cells above 65,536
def test_kept_rows_are_pairwise_below_the_threshold_and_groups_keep_their_best(n):
    E, q, base, copies = _groups(n=n)
    rows = np.arange(n)
    drop = near_duplicate_candidates(E, q, rows)
    keep = rows[~drop]
    sample = keep if n <= 6000 else np.union1d(keep[np.isin(keep, np.r_[base, copies])], keep[:4000])
    assert _close_pairs(E, sample, NEAR_DUPLICATE) == 0
    for b in np.unique(base):
        group = np.r_[b, copies[base == b]]
        best = group[np.argmax(q[group])]
        assert not drop[best]  # the group's best row stays ...
        assert drop[group].sum() == len(group) - 1  # ... and only it


def test_it_finds_what_the_full_product_finds():
    c = make_corpus(n_rows=12_000, dim=128, seed=3)
    E, q = c["embedding"], c["quality"]
    rows = np.sort(np.argsort(-q)[:9000])  # candidates after pruning a quarter
    fast = near_duplicate_candidates(E, q, rows)
    full = exact_near_duplicates(E, q, rows)
    assert full.sum() > 500  # the corpus has near-copies to find
    assert (fast & full).sum() >= 0.99 * full.sum()
    assert (fast & ~full).sum() <= 0.01 * full.sum()
    assert _close_pairs(E, rows[~fast], NEAR_DUPLICATE) == 0


def test_threshold_one_drops_only_exact_copies():
    E, q, _, _ = _groups(n=2000, noise=0.15)
    E[10] = E[20]
    q[10], q[20] = 1.0, 2.0
    drop = near_duplicate_candidates(E, q, np.arange(2000), threshold=1.0 - 1e-6)
    assert drop[10] and not drop[20] and drop.sum() == 1


def test_a_fit_selects_no_near_duplicates_and_fills_its_budget():
    c = make_corpus(n_rows=20_000, seed=0)  # 10% of rows in 20 groups of near-copies, half scored high
    E, q = c["embedding"], c["quality"]
    off = DataMask(ratio=0.1, diversity="facility", near_duplicate=None).fit(E, q)
    on = DataMask(ratio=0.1, diversity="facility").fit(E, q)
    assert near_duplicate_share(E, np.nonzero(off.mask_)[0]) > 0.2
    assert near_duplicate_share(E, np.nonzero(on.mask_)[0]) == 0.0
    assert on.mask_.sum() == off.mask_.sum() == 2000
    assert on.n_near_duplicates_ > 500 and off.n_near_duplicates_ == 0
    assert on.optimizer_["near_duplicates"] == on.n_near_duplicates_


def test_the_best_dropped_rows_return_when_the_rest_cannot_fill_the_budget():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(5, 32))
    E = np.repeat(base, 100, axis=0) + 1e-3 * rng.normal(size=(500, 32))
    E = np.vstack([E, rng.normal(size=(20, 32))])
    E = (E / np.linalg.norm(E, axis=1, keepdims=True)).astype(np.float32)
    q = rng.normal(size=520)
    m = DataMask(budget=100, prune=0.0).fit(E, q)  # 25 rows stay after the filter; 75 come back
    assert m.mask_.sum() == 100
    assert m.n_near_duplicates_ == 520 - 25 - 75
    t = np.full(520, 10)
    mt = DataMask(token_budget=600, prune=0.0).fit(E, q, t)  # 25 rows hold 250 tokens < 600
    assert 590 <= mt.tokens_ <= 600


@pytest.mark.parametrize("path", ["cells", "every row"])
@pytest.mark.parametrize("n", [6000, 70_000])
def test_a_search_of_fresh_rows_finds_their_pairs_and_leaves_the_rest(monkeypatch, n, path):
    # the refill's rounds: only cells holding a new pick are searched, or (a few fresh rows)
    # every row compared with the fresh ones
    if path == "cells":
        monkeypatch.setattr(redundancy, "FRESH_ROWS", 0)
    E, q, base, copies = _groups(n=n)
    rows = np.arange(n)
    full = near_duplicate_candidates(E, q, rows)
    fresh = np.zeros(n, dtype=bool)
    assert not near_duplicate_candidates(E, q, rows, fresh=fresh).any()  # nothing new: nothing searched
    fresh[copies[base == base[0]]] = True  # one group's copies are new
    got = near_duplicate_candidates(E, q, rows, fresh=fresh)
    group = np.r_[base[0], copies[base == base[0]]]
    assert np.array_equal(got[group], full[group]) and got[group].sum() == len(group) - 1
    other = np.setdiff1d(copies, group)  # in cells without a fresh row (most of them): not searched
    assert got[other].sum() < 0.2 * full[other].sum()


def test_a_few_fresh_rows_are_searched_as_the_full_product_would():
    # rows pairwise below the threshold (what the rounds before kept), then a few fresh rows,
    # near-copies of some of them, better or worse: every row compared with the fresh ones
    # finds what the full product's best-first pass finds
    E, q, base, copies = _groups(n=6000)
    old = np.flatnonzero(~exact_near_duplicates(E, q, np.arange(6000)))
    new = copies[np.isin(copies, old, invert=True)][:60]  # dropped copies, now picked again
    q = q.copy()
    q[new[:5]] = q.max() + 1.0  # some now better than the row of their group that stayed
    rows = np.r_[old, new]
    fresh = np.r_[np.zeros(old.shape[0], dtype=bool), np.ones(new.shape[0], dtype=bool)]
    assert fresh.sum() <= redundancy.FRESH_ROWS
    got = near_duplicate_candidates(E, q, rows, fresh=fresh)
    want = exact_near_duplicates(E, q, rows)
    assert want[fresh].any() and want[~fresh].any()  # fresh rows that go, and older rows they push out
    assert np.array_equal(got, want)


def test_the_device_branch_keeps_the_same_rows(fake_cp):
    E, q, _, _ = _groups(n=3000)
    rows = np.arange(3000)
    host = near_duplicate_candidates(E, q, rows)
    dev = near_duplicate_candidates(fake_cp.asarray(E), fake_cp.asarray(q), fake_cp.asarray(rows))
    assert np.array_equal(fake_cp.asnumpy(dev), host)


# ---------------------------------------------------------------- over the picks, refilled
def _by_quality(q, cand):
    """A solver that picks the best quality left: ``pick(m, first, without)``."""

    def pick(m, first, without):
        taken = np.zeros(cand.shape[0], dtype=bool)
        taken[np.r_[first, without].astype(np.int64)] = True
        order = np.argsort(-q[cand], kind="stable")
        return order[~taken[order]][:m]

    return pick


def test_picks_filter_refills_to_what_filtering_the_candidates_first_gives():
    E, q, base, copies = _groups(n=6000)
    q[copies] += 3.0  # the copies rank first: the first picks are full of near-duplicates
    cand = np.arange(6000)
    S = 600
    first = np.argsort(-q, kind="stable")[:S]
    assert _close_pairs(E, first, NEAR_DUPLICATE) > 1000
    order, gone, left = picks_without_near_duplicates(E, q, cand, first, _by_quality(q, cand))
    assert order.shape[0] == S == np.unique(order).shape[0] and left == 0
    assert _close_pairs(E, order, NEAR_DUPLICATE) == 0
    assert gone > 1000  # of each group's picks only its best stayed
    # the same rows as the filter over every candidate, then the best S of those left
    keep = cand[~near_duplicate_candidates(E, q, cand)]
    assert set(order.tolist()) == set(keep[np.argsort(-q[keep], kind="stable")[:S]].tolist())


def test_picks_filter_returns_the_best_dropped_when_the_pool_runs_dry():
    rng = np.random.default_rng(1)
    E = np.repeat(rng.normal(size=(5, 32)), 100, axis=0) + 1e-3 * rng.normal(size=(500, 32))
    E = np.vstack([E, rng.normal(size=(20, 32))])
    E = (E / np.linalg.norm(E, axis=1, keepdims=True)).astype(np.float32)
    q = rng.normal(size=520)
    cand = np.arange(520)
    pick = _by_quality(q, cand)
    order, gone, left = picks_without_near_duplicates(E, q, cand, pick(100, [], []), pick)
    assert order.shape[0] == 100 == np.unique(order).shape[0]
    assert left == 75 and gone == 520 - 25 - 75  # 25 distinct rows; 75 of the dropped came back
    returned = order[exact_near_duplicates(E, q, order)]  # picks with a better near-duplicate among them
    assert returned.shape[0] == 75
    assert q[returned].min() >= q[np.setdiff1d(cand, order)].max()  # the best of the dropped


def test_a_default_fit_filters_its_picks_and_others_their_candidates():
    c = make_corpus(n_rows=20_000, seed=0)
    E, q = c["embedding"], c["quality"]
    picks = DataMask(ratio=0.1).fit(E, q)  # facility location: stochastic greedy's picks are the selection
    assert picks.n_candidates_ == 20_000 and picks.n_near_duplicates_ > 500 and picks.n_near_duplicates_left_ == 0
    assert _close_pairs(E, np.nonzero(picks.mask_)[0], NEAR_DUPLICATE) == 0
    for other in (
        DataMask(ratio=0.1, diversity="pairwise"),  # pg's steps choose among the candidates
        DataMask(ratio=0.1, solver_params={"start_patience": 5}),  # pg may leave the picks
        DataMask(ratio=0.1, method="greedy"),
    ):
        other.fit(E, q)
        assert other.n_candidates_ == 20_000 - other.n_near_duplicates_ < 19_000, other
        assert near_duplicate_share(E, np.nonzero(other.mask_)[0]) == 0.0


def test_the_device_branch_filters_the_picks_as_the_host_does(fake_cp):
    c = make_corpus(n_rows=4000, dim=64, seed=2)
    E, q = c["embedding"], c["quality"]
    host = DataMask(ratio=0.1).fit(E, q)
    dev = DataMask(ratio=0.1).fit(fake_cp.asarray(E), fake_cp.asarray(q))
    assert host.n_near_duplicates_ > 0 and dev.n_near_duplicates_ == host.n_near_duplicates_
    assert np.array_equal(fake_cp.asnumpy(dev.mask_), host.mask_)


def test_a_fit_whose_pool_runs_dry_reports_the_objective_of_what_it_selected():
    # the picks' cover is the objective's shortcut; the dropped rows that return are not in it
    rng = np.random.default_rng(1)
    E = np.repeat(rng.normal(size=(5, 32)), 100, axis=0) + 0.15 * rng.normal(size=(500, 32))  # cosines ~0.98
    E = np.vstack([E, rng.normal(size=(20, 32))])
    E = (E / np.linalg.norm(E, axis=1, keepdims=True)).astype(np.float32)
    q = rng.normal(size=520)
    m = DataMask(budget=100, prune=0.0).fit(E, q)  # facility location: the filter over its picks
    assert m.mask_.sum() == 100 and m.n_candidates_ == 520 and m.n_near_duplicates_left_ > 50
    sel = np.nonzero(m.mask_)[0]
    cover = (E.astype(np.float64) @ E[sel].T.astype(np.float64)).max(axis=1).mean()  # every row is a reference row
    assert m.objective_["diversity"] == pytest.approx(cover, abs=1e-5)
