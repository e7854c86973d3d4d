"""pg's start from the relaxed solution (``init="relaxed"``, pairwise's default) and the
Frank-Wolfe rounding it starts from (datamask.core.start, datamask.core.relaxed).

The crowded corpus is the shape where the quality-aware wide start fails
(tests/core/test_auto_start.py): the relaxed start needs no pilot there.
"""

import numpy as np
import pytest

from datamask.core.diversity import Pairwise
from datamask.core.synthetic import make_clusters, make_corpus
from datamask.errors import ConfigError
from tests.helpers.crowded import crowded_corpus
from tests.helpers.pairwise import PairwiseMask, evaluate


@pytest.fixture(scope="module")
def crowded():
    return crowded_corpus()


def top_rows(L, S):
    return set(np.argsort(-L)[:S].tolist())


def test_default_pg_starts_at_the_relaxed_rounding_and_keeps_the_best(crowded):
    E, q, rand, gain = crowded
    relaxed = PairwiseMask(method="relaxed", lam=0.2).fit(E, q)
    start = PairwiseMask(lam=0.2, solver_params=dict(steps=0)).fit(E, q)
    assert start.init_ == "relaxed" and start.logit_range_ == (0.0, 4.0) and start.pilot_ is None
    # step 0's top S is exactly the rows method="relaxed" returns
    assert top_rows(start.logits_, 200) == set(np.flatnonzero(relaxed.mask_).tolist())
    m = PairwiseMask(lam=0.2).fit(E, q)
    # the same rows summed in another order: float64 rounding only
    assert m.history_[0]["objective"] == pytest.approx(relaxed.objective_["objective"], rel=1e-6)
    # the best mask is kept (evaluated again over the sorted rows: float64 rounding only)
    h0 = m.history_[0]["objective"]
    assert m.objective_["objective"] >= h0 - 1e-12 * abs(h0)
    assert 100 * (m.objective_["objective"] - rand) / gain >= 99.5
    # pg moves the logits: the run is more than the relaxed solver's answer
    assert not np.array_equal(m.logits_, start.logits_)


def test_logits_span_the_range_and_keep_the_relaxed_order_below_the_rounding(crowded):
    E, q, _, _ = crowded
    relaxed = PairwiseMask(method="relaxed", lam=0.2).fit(E, q)
    L = PairwiseMask(lam=0.2, solver_params=dict(steps=0, logit_range=(1.0, 5.0))).fit(E, q).logits_
    live = np.isfinite(L)
    assert (L[live].min(), L[live].max()) == pytest.approx((1.0, 5.0))
    # rows outside the rounding are ordered by the relaxed x (a monotone map of it)
    out = live & ~relaxed.mask_
    x = relaxed.x_[out]
    order = np.argsort(x, kind="stable")
    assert np.all(np.diff(L[out][order]) >= -1e-12)


def test_relaxed_start_is_defined_where_a_relaxation_is():
    c = make_corpus(800, dim=16, seed=2)
    E, q = c["embedding"], c["quality"]
    disf = PairwiseMask(diversity="disf", solver_params=dict(init="relaxed", steps=0)).fit(E, q)
    ref = PairwiseMask(diversity="disf", method="relaxed").fit(E, q)
    assert top_rows(disf.logits_, 80) == set(np.flatnonzero(ref.mask_).tolist())
    assert PairwiseMask(diversity="disf", solver_params=dict(steps=0)).fit(E, q).init_ == "relaxed"  # defaults_disf.md
    with pytest.raises(ValueError, match=r"init='relaxed' is not defined for diversity='facility'.*init='quality'"):
        PairwiseMask(diversity="facility", solver_params=dict(init="relaxed")).fit(E, q)
    from datamask.pipeline.config import SelectConfig

    with pytest.raises(ConfigError, match="init='relaxed' is not defined"):
        SelectConfig(diversity="facility", solver_params=dict(init="relaxed")).validated()
    assert PairwiseMask(diversity="facility", solver_params=dict(steps=0)).fit(E, q).init_ == "stochastic_greedy"


def test_relaxed_start_under_a_token_budget_fills_it_and_keeps_the_relaxed_rows():
    c = make_corpus(1500, dim=16, seed=4)
    E, q = c["embedding"], c["quality"]
    t = np.random.default_rng(0).integers(20, 400, size=1500)
    T = int(0.1 * t.sum())
    relaxed = PairwiseMask(token_budget=T, method="relaxed").fit(E, q, lengths=t)
    m = PairwiseMask(token_budget=T, solver_params=dict(steps=300)).fit(E, q, lengths=t)
    assert m.init_ == "relaxed" and m.tokens_ <= T
    assert m.history_[0]["objective"] == pytest.approx(relaxed.objective_["objective"], rel=1e-6)
    assert m.objective_["objective"] >= relaxed.objective_["objective"] - 1e-12


def test_frank_wolfe_keeps_its_best_rounding_so_more_iterations_never_lose(crowded):
    E, q, _, _ = crowded
    values = [
        PairwiseMask(method="relaxed", lam=0.2, solver_params=dict(relaxed_iter=it)).fit(E, q).objective_["objective"]
        for it in (2, 5, 20, 80)
    ]
    assert values == sorted(values)
    m = PairwiseMask(method="relaxed", lam=0.2).fit(E, q)
    last_top = np.argsort(-m.x_)[:200]
    assert m.objective_["objective"] >= evaluate(E, q, last_top, lam=0.2)["objective"] - 1e-12


def test_small_ratio_holds_with_the_relaxed_start_not_the_quality_start():
    """The suite's worst case, shrunk: heavy-tailed clusters whose crowded clusters score
    high, ratio 0.01 (S = 50 of 5,000; a 256-row batch draws 5 rows). The quality start
    learns too slowly there; the relaxed start does not depend on it."""
    c = make_clusters(5000, dim=64, seed=0, sizes="heavy", quality="size")
    E, q = c["embedding"], c["quality"]
    rand = evaluate(E, q, np.random.default_rng(0).permutation(5000)[:50])["objective"]
    gain = PairwiseMask(method="greedy", ratio=0.01).fit(E, q).objective_["objective"] - rand

    def pct(**kw):
        return 100 * (PairwiseMask(ratio=0.01, **kw).fit(E, q).objective_["objective"] - rand) / gain

    assert pct() >= 99.5
    assert pct(init="quality") < 99.0


class _NoRelaxation(Pairwise):
    """A diversity as docs/design.md's guide defines one: pairwise's kernels, no relaxation."""

    name, label = "no_relaxation", "pairwise without a relaxation"
    relaxed_terms = relaxed_token_terms = None
    no_relaxed = "a test objective"


def test_default_start_of_an_objective_without_a_relaxation_is_quality():
    # init=None inherited "relaxed" from Pairwise and died calling relaxed_terms (None)
    c = make_corpus(600, dim=16, seed=5)
    E, q = c["embedding"], c["quality"]
    div = _NoRelaxation()
    m = PairwiseMask(diversity=div, solver_params=dict(steps=200)).fit(E, q)
    assert m.init_ == "quality" and m.mask_.sum() == 60
    t = np.random.default_rng(0).integers(20, 400, size=600)
    assert (
        PairwiseMask(diversity=div, token_budget=int(0.1 * t.sum()), solver_params=dict(steps=200))
        .fit(E, q, lengths=t)
        .init_
        == "quality"
    )
    with pytest.raises(ValueError, match=r"^init='relaxed' is not defined for diversity='no_relaxation'"):
        PairwiseMask(diversity=div, solver_params=dict(init="relaxed")).fit(E, q)


def test_frank_wolfe_cap_is_the_objectives_when_relaxed_iter_is_none():
    # a DiSF iteration costs n d^2: its cap is 20 (pairwise keeps 100); the old default was 100
    c = make_clusters(3000, dim=32, seed=1)
    E, q = c["embedding"], c["quality"]
    assert (
        PairwiseMask(method="relaxed", diversity="disf", solver_params=dict(relaxed_iter=100)).fit(E, q).n_steps_ > 20
    )  # 31 here
    assert PairwiseMask(method="relaxed", diversity="disf").fit(E, q).n_steps_ == 20
    assert PairwiseMask(diversity="disf", solver_params=dict(steps=0)).fit(E, q).relaxed_iter_ == 20


def test_disf_vertex_gradient_is_the_gradient_at_the_vertex_state():
    # with S < d Frank-Wolfe moves DiSF's gradient along with the state (n S d a step, not n d^2)
    from datamask.core.relaxed import disf_terms

    rng = np.random.default_rng(0)
    E = rng.normal(size=(500, 64)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    rows_sum, grad, _, _, vertex_grad = disf_terms(E, rng.random(500), 30, 0.5)
    rows = rng.choice(500, 30, replace=False)
    # float32 products of 64 standardised columns: agreement to ~1e-7 of the gradient's size
    np.testing.assert_allclose(vertex_grad(rows), grad(rows_sum(rows)), rtol=0, atol=1e-6 * 0.02)
