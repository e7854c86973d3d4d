"""The default stopping rule and step budget hold at small ratios.

``patience`` compares the best of the last ``patience`` evaluations with the best of the
``patience`` before them, by ``tol`` times the gain over the start. The old rule compared
each evaluation with the best so far, by the objective's size: it stopped runs whose
top-S mask dipped early and was climbing back, and runs whose masks hold few selected rows
per batch, whose rise per evaluation is tiny next to the objective yet steady
(benchmarks/results/defaults.md, ratio 0.01).
"""

import math
import types

import numpy as np
import pytest

from datamask.core import pg
from datamask.core.pg import MAX_STEPS, MIN_STEPS, step_budget
from datamask.core.synthetic import make_corpus
from datamask.estimator.params import solver_settings
from tests.helpers.pairwise import PairwiseMask


def tracker(objectives, patience=10, tol=1e-5):
    """A _BestMask fed the given objectives, one per evaluation; the index where it stops."""
    it = iter(objectives)
    est = types.SimpleNamespace(solver_params_=solver_settings({"tol": tol, "patience": patience}))
    state = types.SimpleNamespace(
        est=est, lengths=None, callback=None, record=lambda step, rows: {"objective": next(it), "step": step}
    )
    t = pg._BestMask(state, 2, np)
    L = np.arange(4.0)
    for i in range(len(objectives)):
        if t.evaluate(i, L, None):
            return i
    return None


def test_a_slow_steady_rise_is_progress():
    # objective about 1, rising by 2e-6 an evaluation: 2e-6 of the objective (under tol),
    # but all of the gain so far comes from such steps, so the run is still improving
    assert tracker([1.0 + 2e-6 * k for k in range(200)]) is None


def test_a_run_climbing_back_from_a_dip_is_progress():
    # best at evaluation 1, then a dip and a steady climb that passes it only at the end
    values = [0.0, 1.0, 0.5] + [0.5 + 0.02 * k for k in range(1, 30)]
    assert tracker(values) is None


def test_a_flat_run_stops_after_patience_evaluations():
    assert tracker([0.5, 0.6, 0.7] + [0.7] * 30) == 21  # the plateau (from 2) fills both windows
    # rises that are small against the gain made so far count as no progress
    assert tracker([0.0, 1.0] + [1.0 + 1e-7 * k for k in range(1, 30)]) == 20  # both windows from 1 on


def test_steps_none_scales_with_rows_per_batch_and_keeps_int():
    assert step_budget(1234, 10_000, 10, 128) == 1234
    assert step_budget(None, 10_000, 100, 128) == MIN_STEPS  # ratio 0.1 at 20k rows
    small = step_budget(None, 10_000, 10, 128)  # ratio 0.01 at 20k rows: 10 selected rows a batch
    assert small == math.ceil(pg.DRAWS_PER_ROW * 10_000 / (128 * 10)) > MIN_STEPS
    assert step_budget(None, 10**7, 1, 128) == MAX_STEPS


def count_steps(monkeypatch):
    calls = [0]
    inner = pg.Step.__call__

    def counted(self):
        calls[0] += 1
        return inner(self)

    monkeypatch.setattr(pg.Step, "__call__", counted)
    return calls


def test_auto_continues_its_pilot_instead_of_rerunning_it(monkeypatch):
    c = make_corpus(n_rows=2000, dim=16, seed=0)
    E, q = c["embedding"], c["quality"]
    kw = dict(steps=400, eval_every=50, patience=None, init="quality")
    calls = count_steps(monkeypatch)
    auto = PairwiseMask(**kw).fit(E, q)
    n_auto = calls[0]
    calls[0] = 0
    fixed = PairwiseMask(**kw, solver_params=dict(logit_range=auto.logit_range_)).fit(E, q)
    assert n_auto == calls[0] + 100  # the losing pilot's 100 steps (a quarter of 400) only
    assert auto.n_steps_ == fixed.n_steps_ == 400 and auto.steps_ == 400
    np.testing.assert_array_equal(auto.mask_, fixed.mask_)
    assert [h["objective"] for h in auto.history_] == [h["objective"] for h in fixed.history_]


@pytest.mark.parametrize("stop_at", [50, 250])
def test_auto_callback_sees_the_winners_points_and_can_stop(stop_at):
    c = make_corpus(n_rows=2000, dim=16, seed=0)
    seen = []

    def cb(est, rec):
        seen.append(rec["step"])
        return rec["step"] >= stop_at

    m = PairwiseMask(callback=cb, solver_params=dict(steps=400, eval_every=50, patience=None, init="quality"))
    m.fit(c["embedding"], c["quality"])
    assert seen == list(range(0, stop_at + 1, 50))  # in order, once each, the loser's never
    assert m.n_steps_ == max(stop_at, 100)  # a stop inside the pilot takes effect when it ends


def test_auto_shows_its_progress_bar_after_the_pilot(capsys, monkeypatch):
    monkeypatch.setenv("DATAMASK_PROGRESS_INTERVAL", "0")  # stderr is not a terminal here: a line per step
    c = make_corpus(n_rows=2000, dim=16, seed=0)
    PairwiseMask(progress=True, solver_params=dict(steps=400, eval_every=50, patience=None, init="quality")).fit(
        c["embedding"], c["quality"]
    )
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("datamask: policy-gradient steps 101 so far")  # it continues from the pilot's end
    assert "steps 400 so far" in lines[-1] and not any("left" in ln for ln in lines)  # no false time left


@pytest.mark.parametrize("final", ["topk", "sample"])
def test_a_stop_at_step_0_builds_no_step(final, monkeypatch):
    """A callback that stops at step 0 ends the fit with step 0's mask; the step's arrays are
    never allocated (``build`` is not called)."""
    c = make_corpus(n_rows=1000, dim=16, seed=0)
    kw = dict(steps=200, eval_every=50, patience=None, init="quality", logit_range=(0.0, 16.0), final=final)
    ran = PairwiseMask(**kw).fit(c["embedding"], c["quality"])

    def no_build(*a, **k):
        raise AssertionError("the step was built")

    monkeypatch.setattr(pg.PolicyGradient, "build", no_build)
    m = PairwiseMask(**kw, callback=lambda est, rec: True).fit(c["embedding"], c["quality"])
    assert m.n_steps_ == 0 and [h["step"] for h in m.history_] == [0]
    assert m.mask_.sum() == ran.mask_.sum() == m.budget_
    assert m.history_[0]["objective"] == ran.history_[0]["objective"]  # the same step 0
