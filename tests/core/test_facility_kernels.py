"""Facility location's compiled host path (datamask.core.facility_kernels): the threshold
lists, the sampler, and stochastic greedy's compiled picks, against float64 brute force.

Tolerances: a float32 cosine of two unit rows of d entries is off its float64 value by at
most about d float32 units (2**-24 each), whatever order the BLAS kernel sums in; a gain
sums r such terms with weight (1 - lam) / r.
"""

import math

import numpy as np
import pytest

from datamask import DataMask, evaluate
from datamask.core import diversity, facility_lists, metrics, stochastic
from datamask.core.facility import FacilityGroups
from datamask.core.facility_lists import threshold_lists
from datamask.core.synthetic import make_corpus


def unit(n, d, seed):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


def entries(L, n, r):
    """The lists as a dense (n, r) membership matrix and (n, r) cosines (NaN where unlisted)."""
    cand = np.repeat(np.arange(n), np.diff(L.start))
    listed = np.zeros((n, r), dtype=bool)
    listed[cand, L.ref] = True
    sims = np.full((n, r), np.nan)
    sims[cand, L.ref] = L.sim
    return listed, sims


@pytest.mark.parametrize("sampled", [False, True], ids=["every candidate", "sampled threshold"])
def test_threshold_lists_hold_every_pair_above_the_threshold(monkeypatch, sampled):
    n, r, d, T = 3000, 40, 16, 60
    if sampled:  # thresholds from 1,000 of the 3,000 candidates: about T entries, not exactly
        monkeypatch.setattr(facility_lists, "THRESHOLD_SAMPLE", 1000)
    monkeypatch.setattr(facility_lists, "CANDIDATE_BLOCK", 700)  # blocks that do not divide n
    E, R = unit(n, d, 0), unit(r, d, 1)
    L = threshold_lists(E, R, T)
    C = E.astype(np.float64) @ R.astype(np.float64).T
    tol = d * 2.0**-24
    listed, sims = entries(L, n, r)
    assert np.all(np.diff(L.start) >= 0) and L.start[-1] == L.ref.shape[0] == L.sim.shape[0]
    np.testing.assert_allclose(sims[listed], C[listed], rtol=0, atol=tol)
    th = L.theta.astype(np.float64)
    assert not (listed & (C < th - tol)).any()  # nothing below the threshold
    assert (listed | (C < th + tol)).all()  # nothing above it left out
    np.testing.assert_allclose(L.cover, C.sum(axis=1) + r, rtol=1e-6)
    counts = listed.sum(axis=0)
    if sampled:
        assert T / 2 <= counts.mean() <= 2 * T and counts.min() > 0
    else:  # the T-th largest of every candidate: T entries (more only on a tie)
        assert counts.min() >= T and counts.max() <= T + 2


def test_threshold_lists_grow_when_more_pass_than_expected(monkeypatch):
    # a threshold every pair passes (as when T >= n): the lists outgrow their first guess
    monkeypatch.setattr(facility_lists, "list_thresholds", lambda E, R, T: np.full(R.shape[0], -np.inf, np.float32))
    E, R = unit(900, 8, 2), unit(30, 8, 3)
    L = threshold_lists(E, R, 5)
    listed, sims = entries(L, 900, 30)
    assert listed.all()
    np.testing.assert_allclose(sims, E.astype(np.float64) @ R.T.astype(np.float64), rtol=0, atol=8 * 2.0**-24)


def test_sampler_draws_uniformly_without_replacement_from_the_rows_left():
    pool = stochastic._Pool(12, seed=1)
    for i in (2, 7):
        pool.remove(i)
    counts = np.zeros(12)
    for _ in range(3000):
        s = pool.sample(4)
        assert len(set(s.tolist())) == 4 and not {2, 7} & set(s.tolist())
        counts[s] += 1
    left = np.delete(counts, [2, 7])
    assert counts[[2, 7]].sum() == 0
    # 1,200 expected draws per row: a chi-square of 9 degrees of freedom below 30 (p ~ 4e-4)
    assert ((left - 1200) ** 2 / 1200).sum() < 30
    a, b = stochastic._Pool(50, seed=9), stochastic._Pool(50, seed=9)
    assert all(np.array_equal(a.sample(10), b.sample(10)) for _ in range(5))  # one stream per seed
    assert not np.array_equal(stochastic._Pool(50, seed=8).sample(10), stochastic._Pool(50, seed=9).sample(10))


@pytest.mark.parametrize("m", [7, 16, 40, 6400])
def test_a_picks_head_is_the_best_bounds_of_its_sample_ties_by_place(m):
    # the first two blocks of a pick (2 x BLOCK places) as a stable sort of the sample's
    # bounds would give them: bounds on a coarse grid, so many tie
    from datamask.core import facility_kernels as fk

    rng = np.random.default_rng(m)
    pub = np.round(rng.random(10_000) * 20) / 20
    drawn = rng.choice(10_000, m, replace=False)
    bound, top = np.empty(m), np.empty(2 * fk.BLOCK, dtype=np.int64)
    nt = fk._bounds_and_head(drawn, m, pub, bound, top)
    np.testing.assert_array_equal(bound, pub[drawn])
    want = np.lexsort((np.arange(m), -bound))[: 2 * fk.BLOCK]
    assert nt == min(m, 2 * fk.BLOCK)
    np.testing.assert_array_equal(top[:nt], want)


def brute_force(E, R, q, S, lam, seed, k):
    """Stochastic greedy on float64 gains of every sampled row, from the same sampler:
    ``(order, margins)``, margins the best gain minus the runner-up's at each pick."""
    C = E.astype(np.float64) @ R.astype(np.float64).T
    n, r = C.shape
    lin, w = lam * q / S, (1.0 - lam) / r
    cur = np.full(r, -1.0)
    pool = stochastic._Pool(n, seed)
    order, margins = [], []
    for _ in range(S):
        cands = pool.sample(k)
        g = lin[cands] + w * np.maximum(C[cands] - cur, 0.0).sum(axis=1)
        top = np.argsort(-g)[:2]
        margins.append(g[top[0]] - g[top[1]])
        i = int(cands[top[0]])
        order.append(i)
        pool.remove(i)
        cur = np.maximum(cur, C[i])
    return np.array(order), np.array(margins)


@pytest.mark.parametrize("per_row", [12, 120, 10_000], ids=["short lists", "long lists", "every pair"])
def test_compiled_picks_are_the_float64_brute_force_picks(monkeypatch, per_row):
    # short lists: reference rows saturate late, so gains come from both the lists and the
    # product with the rows not yet saturated; every pair: the lists alone
    E, q = unit(2000, 24, 11), np.random.default_rng(12).random(2000)
    R = E[np.random.default_rng(0).choice(2000, 250, replace=False)]
    monkeypatch.setattr(facility_lists, "LIST_ENTRIES", per_row * 250)
    fac = FacilityGroups(E, R, n_neighbors=8)
    S, lam, factor = 100, 0.5, 10
    k = math.ceil(2000 / S * factor)  # 200 of the rows left a pick
    want, margins = brute_force(E, R, q, S, lam, seed=4, k=k)
    trace = []
    got, ub = stochastic.stochastic_greedy_facility(fac, q, S, lam, seed=4, factor=factor, trace=trace)
    # float32 cosines move a gain's facility part by (1 - lam) d 2**-24 at most (and cur by as
    # much): a pick whose best two gains are closer than twice that may go either way, and
    # the picks after it differ. Every pick before the first such one is compared.
    close = margins <= 2 * (1 - lam) * 24 * 2.0**-24
    first = int(np.argmax(close)) if close.any() else S
    assert first >= S // 2  # most picks are decided far outside rounding
    assert np.array_equal(got[:first], want[:first])
    cur = (E[got].astype(np.float64) @ R.T.astype(np.float64)).max(axis=0)
    sat = cur >= fac.lists.theta  # reference rows whose gains came from the lists by the end
    if per_row == 12:  # both parts ran: rows saturated on the way, and rows the product scored to the end
        assert 0 < sat.sum() < 250
    # the picks' summed gains are the objective of the selection (against these reference rows)
    assert trace[-1][0] == S
    assert trace[-1][1] == pytest.approx(lam * q[got].mean() + (1 - lam) * cur.mean(), rel=1e-6)
    # each bound is the row's last exact gain or its first, never below its gain now
    lin, w = lam * q / S, (1 - lam) / 250
    now = lin + w * np.maximum(E.astype(np.float64) @ R.T.astype(np.float64) - cur, 0).sum(axis=1)
    assert np.all(ub >= now - 1e-6)


def test_a_pick_that_scores_its_whole_large_sample():
    # rows on a circle against reference rows around it: every first gain is about
    # lam q / S + (1 - lam), every gain after the first pick far below, so the second pick
    # scores all 20,000 rows (79 blocks; the block size once overflowed past block 60: a
    # ValueError on a 50k-row split at ratio 0.01, where a sample is every row)
    rng = np.random.default_rng(5)
    a = np.sort(rng.uniform(0, 2 * np.pi, 20_000))
    E = np.stack([np.cos(a), np.sin(a)], axis=1).astype(np.float32)
    b = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    R = np.stack([np.cos(b), np.sin(b)], axis=1).astype(np.float32)
    q = rng.random(20_000)  # gains apart by quality (measured: the best two 2.5e-6 apart at least)
    S, lam = 3, 0.5
    want, margins = brute_force(E, R, q, S, lam, seed=1, k=20_000)
    assert margins.min() > 1e-6
    for fac in (FacilityGroups(E, R), FacilityGroups(E, R, method="dense")):  # the compiled and the Python loop
        got, ub = stochastic.stochastic_greedy_facility(fac, q, S, lam, seed=1, factor=3.0)  # a sample: every row
        assert np.array_equal(np.asarray(got), want)
        first = lam * q / S + (1 - lam) / 64 * np.asarray(fac.cover)
        assert (ub < first - 0.01).sum() > 19_000  # the second pick scored (nearly) every row


def test_compiled_and_python_loops_pick_alike(monkeypatch):
    # the compiled loop on numpy's lists, the Python loop on the dense scorer (cupy's): one sampler
    c = make_corpus(3000, dim=32, seed=2)
    E, q = c["embedding"], c["quality"] / c["quality"].max()
    R = E[::10]
    monkeypatch.setattr(facility_lists, "LIST_ENTRIES", 40 * 300)
    dense = FacilityGroups(E, R, method="dense")
    b, ub_b = stochastic.stochastic_greedy_facility(dense, q, 300, 0.3, seed=7, factor=200)
    C = E.astype(np.float64) @ R.T.astype(np.float64)
    now = 0.3 * q / 300 + 0.7 / 300 * np.maximum(C - C[b].max(axis=0), 0).sum(axis=1)
    # a bound is a gain of float32 cosines: each of them (and cur's) within d float32 units
    tol = 0.7 * 2 * 32 * 2.0**-24
    assert np.all(ub_b >= now - tol)
    for head in (stochastic.STAGE_PICKS, 0):  # the first picks' stage bounds, and none
        monkeypatch.setattr(stochastic, "STAGE_PICKS", head)
        a, ub_a = stochastic.stochastic_greedy_facility(FacilityGroups(E, R), q, 300, 0.3, seed=7, factor=200)
        assert np.array_equal(a, b)
        assert np.all(ub_a >= now - tol)  # bounds on the gains now, as the Python loop's


def test_sorted_lists_are_the_top_neighbours_also_for_rows_listing_too_few(monkeypatch):
    # thresholds from 200 sampled candidates: some reference rows list fewer than the 16
    # neighbours pg's steps need, and those are computed exactly on first use
    monkeypatch.setattr(facility_lists, "THRESHOLD_SAMPLE", 200)
    monkeypatch.setattr(facility_lists, "LIST_ENTRIES", 16 * 60)
    E, R = unit(2000, 12, 5), unit(60, 12, 6)
    fac = FacilityGroups(E, R, n_neighbors=16)
    counts = np.bincount(fac.lists.ref, minlength=60)
    assert (counts < 16).any() and (counts >= 16).any()
    C = R.astype(np.float64) @ E.T.astype(np.float64)
    want = -np.sort(-C, axis=1)[:, :16]
    np.testing.assert_allclose(fac.sim, want, rtol=0, atol=12 * 2.0**-24)
    np.testing.assert_allclose(np.take_along_axis(C, fac.nbr, axis=1), want, rtol=0, atol=12 * 2.0**-24)
    assert all(len(set(row.tolist())) == 16 for row in fac.nbr)


def test_facility_value_blocked_over_the_selection_is_the_brute_force(monkeypatch):
    monkeypatch.setattr(metrics, "BLOCK_ELEMENTS", 3 * 70)  # 3 selected rows a block
    monkeypatch.setattr(diversity, "BLOCK_ROWS", 11)  # and gathers of 11
    E = unit(500, 16, 7)
    ref = np.arange(0, 500, 7)
    rows = np.random.default_rng(0).choice(500, 101, replace=False)
    want = (E[ref].astype(np.float64) @ E[rows].T.astype(np.float64)).max(axis=1).mean()
    assert metrics.facility_value(E[ref], E[rows]) == pytest.approx(want, abs=16 * 2.0**-24)
    from datamask.core.objectives import Objective

    obj = Objective(E, np.zeros(500), 0.5, "facility", reference=ref)
    assert obj.diversity_of(rows) == pytest.approx(want, abs=16 * 2.0**-24)
    # the objective keeps its last value: the same rows in any order give it, others do not
    assert obj.diversity_of(rows[::-1]) == obj.diversity_of(rows)
    other = rows.copy()
    other[0] = np.setdiff1d(np.arange(500), rows)[0]
    want_other = (E[ref].astype(np.float64) @ E[other].T.astype(np.float64)).max(axis=1).mean()
    assert obj.diversity_of(other) == pytest.approx(want_other, abs=16 * 2.0**-24)
    assert obj.diversity_of(rows[:50]) < obj.diversity_of(rows)


def test_fit_objective_kept_from_the_picks_is_the_evaluated_objective():
    # stochastic greedy keeps each reference row's best cosine to its picks, and the fit
    # reports their mean instead of computing it again: the same value as a fresh evaluation
    c = make_corpus(3000, dim=32, seed=3)
    E, q = c["embedding"], c["quality"]
    m = DataMask(diversity="facility", seed=2, solver_params=dict(reference_size=500)).fit(E, q)
    fresh = evaluate(E, q, m.mask_, lam=0.5, diversity="facility", reference_size=500, seed=2)
    assert m.objective_["diversity"] == pytest.approx(fresh["diversity"], rel=0, abs=32 * 2.0**-24)
    assert m.objective_["quality"] == pytest.approx(fresh["quality"], rel=1e-12)
    value = []
    fac = FacilityGroups(E[:2000], E[2000:2300])
    order, _ = stochastic.stochastic_greedy_facility(fac, q[:2000] / q.max(), 100, 0.5, seed=1, value=value)
    want = (E[:2000][order].astype(np.float64) @ E[2000:2300].T.astype(np.float64)).max(axis=0).mean()
    assert value[0] == pytest.approx(want, rel=0, abs=32 * 2.0**-24)


# ---------------------------------------------------------------- the two-part pool
from datamask.core import facility_kernels as fkern  # noqa: E402
from datamask.core import facility_pool as fpool  # noqa: E402


def test_the_refresh_sets_each_pooled_rows_bound_to_its_gain_from_the_lists():
    # every reference row saturated (the picks' best cosines at or above the thresholds): the
    # lists give every gain exactly; picked rows (places at or past left) keep their bounds
    n, r, d, T = 3000, 40, 16, 200
    E, R = unit(n, d, 7), unit(r, d, 8)
    L = threshold_lists(E, R, T)
    C = E.astype(np.float64) @ R.T.astype(np.float64)
    picked = np.argsort(-C, axis=0)[0]  # each reference row's best candidate
    cur = C[picked].max(axis=0).astype(np.float32)
    assert (cur >= L.theta).all()
    rng = np.random.default_rng(0)
    lin, w = rng.random(n) * 1e-3, 0.5 / r
    rows = np.r_[np.setdiff1d(np.arange(n), picked), np.unique(picked)]
    left = n - np.unique(picked).shape[0]
    at = np.empty(n, dtype=np.int64)
    at[rows] = np.arange(n)
    ub = lin + w * (C + 1).sum(axis=1)  # first gains: far above
    ub[picked] = 7.0
    pub = ub[rows].copy()
    fkern._refresh(rows, at, left, ub, pub, lin, w, cur, L.start, L.sim, L.ref)
    gain = lin + w * np.maximum(C - cur.astype(np.float64), 0).sum(axis=1)
    pool = rows[:left]
    np.testing.assert_allclose(ub[pool], gain[pool], rtol=0, atol=w * r * 2 * d * 2.0**-24)
    assert np.array_equal(pub[:left], ub[pool]) and (ub[picked] == 7.0).all()


@pytest.mark.parametrize("good,bad,n", [(30, 70, 20), (5, 1000, 300), (900, 100, 950), (12, 48, 10)])
def test_hypergeometric_draws_follow_their_distribution(good, bad, n):
    state = fpool.seed_state(3)
    draws = np.array([fpool.hypergeometric(state, good, bad, n) for _ in range(20_000)])
    lo, hi = max(0, n - bad), min(n, good)
    assert draws.min() >= lo and draws.max() <= hi
    x = np.arange(lo, hi + 1)
    p = np.array([math.comb(good, v) * math.comb(bad, n - v) for v in x], dtype=float) / math.comb(good + bad, n)
    want, got = 20_000 * p, np.bincount(draws - lo, minlength=x.shape[0]).astype(float)
    keep = want >= 5  # the tails pooled: a chi-square over bins of 5 expected draws or more
    obs = np.r_[got[keep], got[~keep].sum()]
    exp = np.r_[want[keep], want[~keep].sum()]
    obs, exp = (obs, exp) if exp[-1] >= 5 else (obs[:-1], exp[:-1])
    dof = max(1, obs.shape[0] - 1)
    assert ((obs - exp) ** 2 / exp).sum() < dof + 6 * math.sqrt(2 * dof)  # far in the tail: p < 1e-6
    assert fpool.hypergeometric(state, 0, 50, 10) == 0 and fpool.hypergeometric(state, 50, 0, 10) == 10


def test_the_two_parts_draw_a_uniform_sample_of_the_whole_pool():
    left, h, k, trials = 60, 12, 10, 30_000
    state, mark, drawn = fpool.seed_state(5), np.zeros(left, dtype=bool), np.empty(k, dtype=np.int64)
    counts, first = np.zeros(left), []
    for _ in range(trials):
        m = fpool.sample_first(h, left, k, state, mark, drawn)
        mr = fpool.sample_rest(h, left, k, m, state, mark, drawn)
        s = drawn[: m + mr]
        assert m + mr == k and len(set(s.tolist())) == k and not mark.any()
        assert (s[:m] < h).all() and (s[m:] >= h).all()
        counts[s] += 1
        first.append(m)
    # every place in 1 / 6 of the samples: a chi-square of 59 degrees of freedom below 120 (p ~ 1e-6)
    assert ((counts - trials * k / left) ** 2 / (trials * k / left)).sum() < 120
    assert np.mean(first) == pytest.approx(k * h / left, rel=0.02)


def test_the_partition_puts_the_largest_bounds_first():
    rng = np.random.default_rng(0)
    n, left = 1000, 900
    rows = rng.permutation(n)
    at = np.empty(n, dtype=np.int64)
    at[rows] = np.arange(n)
    bound = rng.random(n)
    pub, before = bound[rows].copy(), rows.copy()
    h, tau = fpool._partition(rows, at, pub, left, 16)
    assert abs(h - left // 16) <= 1
    assert (pub[:h] > tau).all() and (pub[h:left] <= tau).all()
    assert np.array_equal(pub, bound[rows]) and np.array_equal(at[rows], np.arange(n))
    assert set(rows[:left].tolist()) == set(before[:left].tolist()) and np.array_equal(rows[left:], before[left:])


def test_a_large_pool_picks_through_the_two_parts(monkeypatch):
    # 20,000 rows, a sample of 200 a pick: a pool of 100 samples' worth, above TWO_PART_MIN. The
    # picks are stochastic greedy's on other samples than the Python loop's (the same
    # distribution): exact gains, bounds that hold, and as good an objective
    c = make_corpus(20_000, dim=24, seed=4)
    E, q = c["embedding"], c["quality"] / c["quality"].max()
    R = E[np.random.default_rng(1).choice(20_000, 250, replace=False)]
    S, lam, factor = 200, 0.5, 2
    assert 20_000 >= fkern.TWO_PART_MIN * math.ceil(20_000 / S * factor)
    C = E.astype(np.float64) @ R.T.astype(np.float64)
    lin, w = lam * q / S, (1 - lam) / 250
    got = {}
    for method in ("neighbors", "dense"):  # the compiled loop, and the Python loop
        trace = []
        fac = FacilityGroups(E, R, method=method)
        order, ub = stochastic.stochastic_greedy_facility(fac, q, S, lam, seed=2, factor=factor, trace=trace)
        order = np.asarray(order)
        assert len(set(order.tolist())) == S
        cur = C[order].max(axis=0)
        value = lam * q[order].mean() + (1 - lam) * cur.mean()
        assert trace[-1][1] == pytest.approx(value, rel=1e-6)  # each pick's gain was its exact gain
        now = lin + w * np.maximum(C - cur, 0).sum(axis=1)
        assert np.all(np.asarray(ub) >= now - 2 * (1 - lam) * 24 * 2.0**-24)  # bounds that hold
        got[method] = order, value
    assert not np.array_equal(got["neighbors"][0], got["dense"][0])  # other samples: the two parts ran
    random = (
        lam * q.mean() + (1 - lam) * C[np.random.default_rng(0).choice(20_000, S, replace=False)].max(axis=0).mean()
    )
    gain = {m: v - random for m, (_, v) in got.items()}
    assert gain["neighbors"] >= 0.99 * gain["dense"]
