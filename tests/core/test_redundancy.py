"""The redundancy filter (``DataMask(near_duplicate=...)``, datamask.core.redundancy).

Checked against the full product in float64: the rows it keeps are pairwise below the
threshold, it drops (almost) every row the full search drops, the best of a group of
near-copies stays; in a fit, the selection has no near-duplicates and still fills its budget.
"""

from __future__ import annotations

import numpy as np
import pytest

from datamask import DataMask
from datamask.core.redundancy import NEAR_DUPLICATE, exact_near_duplicates, near_duplicate_candidates
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


def test_the_device_branch_keeps_the_same_rows(fake_cp):
    E, q, _, _ = _groups(n=3000)
    rows = np.arange(3000)
    host = near_duplicate_candidates(E, q, rows)
    dev = near_duplicate_candidates(fake_cp.asarray(E), fake_cp.asarray(q), fake_cp.asarray(rows))
    assert np.array_equal(fake_cp.asnumpy(dev), host)
