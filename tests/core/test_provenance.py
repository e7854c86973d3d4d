"""``DataMask.optimizer_`` and ``start_history_``: how each fit made its selection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from datamask.analysis.report.figures import trajectory_caption
from datamask.core.relaxed_tokens import frank_wolfe_tokens, pairwise_token_terms
from datamask.core.synthetic import make_corpus
from tests.helpers.pairwise import PairwiseMask, evaluate


@pytest.fixture(scope="module")
def corpus():
    c = make_corpus(n_rows=3000, dim=32, seed=0)
    return c["embedding"], c["quality"]


def test_default_pairwise_fit_says_frank_wolfe_made_it(corpus):
    E, q = corpus
    m = PairwiseMask(0.1).fit(E, q)
    opt, start = m.optimizer_, m.start_history_
    assert opt["method"] == "datamask" and opt["start"] == "relaxed" and opt["pg_steps"] == m.n_steps_
    assert opt["start_iterations"] == m.relaxed_iter_ == start[-1]["iteration"]
    # Frank-Wolfe's trace: the best rounding so far, never falling, ending at pg's step 0
    values = [r["objective"] for r in start]
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:]))
    assert values[-1] == pytest.approx(m.history_[0]["objective"], rel=1e-12)
    assert values[-1] > values[0]  # it made progress: not a flat line
    assert opt["objective_start"] == m.history_[0]["objective"]
    assert opt["objective_end"] == pytest.approx(m.objective_["objective"])
    assert opt["pg_gain"] == pytest.approx(opt["objective_end"] - opt["objective_start"])
    assert opt["pg_improved"] == (opt["pg_gain"] > 1e-5 * abs(opt["objective_start"]))


def test_pairwise_frank_wolfe_trace_is_the_exact_objective(corpus):
    # for pairwise on unit rows the relaxed objective of a 0/1 point is the exact one: no shift
    E, q = corpus
    m = PairwiseMask(0.1, method="relaxed").fit(E, q)
    rows = np.flatnonzero(m.mask_)
    assert m.start_history_[-1]["objective"] == pytest.approx(evaluate(E, q, rows)["objective"], rel=1e-9)
    assert m.optimizer_["start"] == "relaxed" and m.optimizer_["pg_steps"] == 0 and not m.optimizer_["pg_improved"]


def test_facility_trace_follows_stochastic_greedy_picks(corpus):
    E, q = corpus
    m = PairwiseMask(0.1, diversity="facility").fit(E, q)
    start = m.start_history_
    assert m.optimizer_["start"] == "stochastic_greedy" and start[-1]["iteration"] == m.budget_
    values = [r["objective"] for r in start]
    assert all(b >= a for a, b in zip(values, values[1:]))  # gains are >= 0 (monotone objective)
    assert 10 <= len(start) <= 60  # about every S/50 picks, not every pick
    assert values[-1] == pytest.approx(m.history_[0]["objective"], rel=1e-12)


@pytest.mark.parametrize("diversity", ["pairwise", "disf"])
def test_token_budget_frank_wolfe_has_a_start_phase(corpus, diversity):
    # the token-budget relaxation (frank_wolfe_tokens) records its trace like the row budget's
    E, q = corpus
    lengths = np.random.default_rng(1).integers(50, 500, size=len(q))
    m = PairwiseMask(token_budget=int(0.1 * lengths.sum()), diversity=diversity).fit(E, q, lengths)
    opt, start = m.optimizer_, m.start_history_
    assert opt["start"] == "relaxed" and start is not None and len(start) >= 2
    assert start[0]["iteration"] == 0 and start[-1]["iteration"] <= m.relaxed_iter_
    values = [r["objective"] for r in start]
    # F(x) never falls (the line search keeps the step 0 point), and rises from the quality start
    assert all(b >= a - 1e-12 * abs(a) for a, b in zip(values, values[1:]))
    assert values[-1] > values[0]
    assert values[-1] == pytest.approx(m.history_[0]["objective"], rel=1e-12)  # shifted onto pg's step 0


def test_frank_wolfe_tokens_trace_is_the_relaxed_objective_of_x(corpus):
    E, q = corpus
    En = E / np.linalg.norm(E, axis=1, keepdims=True)
    qn = (q - q.min()) / (q.max() - q.min())
    lengths = np.random.default_rng(2).integers(50, 500, size=len(q))
    T = int(0.1 * lengths.sum())
    trace = []
    x, _, _, it = frank_wolfe_tokens(En, qn, lengths, T, 0.5, pairwise_token_terms, max_iter=30, trace=trace)
    linear, value, _ = pairwise_token_terms(En, qn.astype(np.float64), 0.5)
    assert trace[-1][0] <= it and [i for i, _ in trace] == list(range(len(trace)))
    assert trace[-1][1] == pytest.approx(value(float(x.sum()), float(qn @ x), linear(x)), rel=1e-9)
    # without a trace the same iterates: the trace only records what the loop computed
    x2, _, _, it2 = frank_wolfe_tokens(En, qn, lengths, T, 0.5, pairwise_token_terms, max_iter=30)
    assert it2 == it and np.array_equal(x2, x)


def test_quality_start_runs_pg_and_reports_its_gain(corpus):
    E, q = corpus
    m = PairwiseMask(0.1, solver_params=dict(init="uniform", steps=200, patience=None, eval_every=50)).fit(E, q)
    opt = m.optimizer_
    assert m.start_history_ is None and opt["start"] == "uniform" and opt["start_iterations"] is None
    assert opt["pg_steps"] == 200 and opt["stopped_by"] == "steps"
    assert opt["pg_improved"] and opt["pg_gain"] > 0.01  # from a uniform start pg climbs
    g = PairwiseMask(0.1, method="greedy").fit(E, q).optimizer_
    assert (g["start"], g["pg_steps"], g["pg_improved"], g["start_iterations"]) == ("greedy", 0, False, 300)


def test_nothing_to_choose_is_said(corpus):
    E, q = corpus
    m = PairwiseMask(budget=1500).fit(E, q)  # S = the rows left after pruning
    assert m.optimizer_["start"] == "none" and m.optimizer_["pg_steps"] == 0 and m.start_history_ is None


def test_trajectory_caption_names_the_solver_and_what_pg_did():
    h = pd.DataFrame(
        [
            {"method": "datamask", "split": "a", "phase": "start", "start": "relaxed", "step": i, "objective": v}
            for i, v in ((0, 0.30), (50, 0.37), (100, 0.3747))
        ]
        + [
            {"method": "datamask", "split": "a", "phase": "pg", "start": "relaxed", "step": s, "objective": 0.3747}
            for s in (0, 20)
        ]
    )
    assert (
        trajectory_caption(h)
        == "datamask: Frank–Wolfe reached 0.3747 in 100 iterations; 20 pg steps did not improve it."
    )
    h.loc[h["step"] == 20, "objective"] = 0.3800
    assert trajectory_caption(h).endswith("; 20 pg steps raised it to 0.3800.")
    old = h[h["phase"] == "pg"].drop(columns=["phase", "start"])  # an output of 0.3: pg only
    assert trajectory_caption(old).startswith("datamask: the start scored 0.3747 at step 0")
