"""Where ``pg`` starts: the initial logits, from quality or from another solver's answer.

``init="quality"`` (the paper's) maps quality linearly onto ``logit_range``;
``init="relaxed"`` (beyond the paper; pairwise and DiSF, which have a relaxation) maps the
relaxed mask instead: Frank-Wolfe's fractional x (:mod:`datamask.core.relaxed`) averaged
with its best 0/1 rounding, so the step-0 top-S mask *is* that rounding and pg starts where
``method="relaxed"`` ends, then searches around it on the exact objective. On every corpus
of the default-selection suite it ended at or above the best quality-aware start, which
fell short at small ratios (docs/defaults.md). ``init="stochastic_greedy"`` (facility
location, which has no relaxation) starts from stochastic greedy's picks
(:mod:`datamask.core.stochastic`) in the same way.

``logit_range="auto"`` picks the range by a pilot. A quality-aware start maps quality onto
``(0, hi)`` nats. A wide range starts the policy near the quality top-S, which is fast where
the optimum is near it and slow where it is not (the rows the optimum needs start far below
the top and are rarely drawn); a narrow range is the other way round. No fixed ``hi`` was best on every corpus of the
default-selection suite (benchmarks/results/defaults.md), so ``"auto"`` runs a short pilot
from each candidate range and keeps the one whose best top-S mask so far scores higher on
the exact objective; the fit then *continues* that pilot's run (no step is repeated). Each
run is deterministic for a seed, so an ``"auto"`` fit is the chosen fixed range's fit, plus
the losing pilot's steps.
"""

from __future__ import annotations

import time

import numpy as np

from .backend import to_numpy
from .pg import PolicyGradient, facility_scorer
from .redundancy import picks_without_near_duplicates
from .relaxed import frank_wolfe
from .relaxed_tokens import frank_wolfe_tokens
from .validate import unit_rows

__all__ = [
    "AUTO_RANGES",
    "PILOT_STEPS",
    "pilot",
    "start_solver",
    "check_logit_range",
    "relaxed_scores",
    "solve_relaxed",
]

# Candidate initial ranges of the pilot: narrow and wide.
AUTO_RANGES = ((0.0, 2.0), (0.0, 16.0))
# Steps of each pilot run (at most a quarter of the fit's step budget).
PILOT_STEPS = 500


def pilot(state, E, scale, qc, xp, ranges=AUTO_RANGES):
    """Run each range of ``ranges`` for the pilot's steps; ``(run, scores)`` of the best one.

    ``run`` is the winner's :class:`~datamask.core.pg.PolicyGradient`, started and advanced
    to the end of its pilot, ready to :meth:`~datamask.core.pg.PolicyGradient.advance`;
    ``scores`` maps each range to its best top-S objective over the pilot. The pilots run
    on :meth:`~datamask.core.state.FitState.probe` copies of ``state`` (no callback, no
    bar); the winner's then takes ``state``'s callback and bar, and its evaluation points
    are given to the callback (their ``seconds``: no earlier than the end of the pilot,
    when the choice is known).
    """
    runs, scores = {}, {}
    for r in ranges:
        probe = state.probe()  # shares the objective, candidates and cache; own history
        probe.logit_range = tuple(float(v) for v in r)
        run = PolicyGradient(probe)  # one copy of the candidate rows for both
        run.start(E, scale, qc, xp)
        run.advance(max(1, min(PILOT_STEPS, run.steps // 4)))
        score = run.tracker.best_val
        if probe.history[-1]["step"] != run.t:  # the pilot's last step was no evaluation point
            score = max(score, state.evaluate(run.tracker.top(run.logits))["objective"])
        runs[probe.logit_range], scores[probe.logit_range] = run, float(score)
    run = runs[max(scores, key=scores.get)]
    now = time.perf_counter() - state.t0
    for rec in run.state.history:
        rec["seconds"] = max(rec["seconds"], now)
    run.state.callback, run.state.progress = state.callback, state.progress
    run.open_bar()  # the pilots ran without a bar; the fit goes on with one
    if state.callback is not None and not run.stopped:
        run.stopped = any(bool(state.callback(state.est, rec)) for rec in list(run.state.history))
        run.tracker.stopped_by = "callback" if run.stopped else None
    return run, scores


def check_logit_range(value):
    """ValueError unless ``value`` is None, ``"auto"`` or ``(l_min, l_max)`` with l_min <= l_max."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"logit_range must be auto or two numbers LOW,HIGH (e.g. 0,4), got {value!r}")
    elif value is not None:
        lo, hi = value
        if not float(lo) <= float(hi):
            raise ValueError(
                f"logit_range must be two numbers LOW,HIGH with LOW <= HIGH (e.g. 0,4), got {float(lo):g},{float(hi):g}"
            )


def solve_relaxed(state, Ec, qc, xp):
    """``(x, rows, n_iter)``: Frank-Wolfe's relaxed mask over the candidates, and the better
    on the exact objective of its two roundings (filled to the token budget under one).
    Frank-Wolfe's progress goes to ``state.fitted["start_history"]`` (the ``trace`` of
    :func:`datamask.core.relaxed.frank_wolfe`, or under a token budget of
    :func:`datamask.core.relaxed_tokens.frank_wolfe_tokens`)."""
    est, t, T, S = state.est, state.lengths, state.token_budget, state.S
    cap = int(
        est.solver_params_.relaxed_iter if est.solver_params_.relaxed_iter is not None else state.div.relaxed_iter
    )
    trace = state.fitted["start_history"] = []
    if t is None:
        x, best, it = frank_wolfe(Ec, qc, S, est.lam, state.div.relaxed_terms, max_iter=cap, trace=trace)
        picks = (best, xp.argpartition(-x, S - 1)[:S])
    else:
        terms = state.div.relaxed_token_terms
        x, top, last, it = frank_wolfe_tokens(Ec, qc, t, T, est.lam, terms, cap, trace=trace)
        picks = (top, last)
    rows = max(picks, key=lambda r: state.evaluate(r)["objective"])
    return x, rows, it


def relaxed_scores(state, E, scale, qc, xp):
    """``init="relaxed"``'s scores over the candidates: ``(x + r) / 2``, x the relaxed mask
    and r the indicator of its chosen rounding (the rows ``method="relaxed"`` returns), so
    the rounding is the top S and the other rows keep x's order. Sets ``relaxed_iter``."""
    x, rows, state.fitted["relaxed_iter"] = solve_relaxed(state, unit_rows(E, state.cand, scale), qc, xp)
    r = xp.zeros(x.shape[0], dtype=xp.float64)
    r[rows] = 1.0
    return (x.astype(xp.float64) + r) / 2.0


def greedy_scores(state, E, scale, qc, xp):
    """``init="stochastic_greedy"``'s scores over the candidates: 1 for the rows stochastic
    greedy picked (:mod:`datamask.core.stochastic`), so they are the top S, and for the
    others their last gain scaled onto [0, 1/2] (a bound on what each would add)."""
    est = state.est
    fac = facility_scorer(state, E, scale)  # pg's scorer: its pass gives the first gains
    trace, value = [], []
    state.fitted["start_history"] = trace
    sg = state.div.stochastic_greedy
    order, bounds = sg(fac, qc, state.S, est.lam, est.seed, trace=trace, value=value)
    gone, known = None, True
    if state.picks_filter is not None:  # the redundancy filter over the picks, refilled
        run = {"bounds": bounds, "round": 0, "picked": [to_numpy(order)], "covered": to_numpy(order)}

        def pick(m, first, without):  # stochastic greedy, continued (each round its own sample stream)
            run["round"] += 1
            first = to_numpy(first)
            got, run["bounds"] = sg(fac, qc, m, est.lam, est.seed + run["round"], value=value, first=first,
                                    without=to_numpy(without), bounds=run["bounds"], budget=state.S)  # fmt: skip
            run["picked"].append(to_numpy(got))
            run["covered"] = np.concatenate([first, to_numpy(got)])  # what value[-1] is the cover of
            return got

        order, n_gone, n_left = picks_without_near_duplicates(
            E, state.objective.q, state.cand, order, pick, state.picks_filter, seed=est.seed, norms=scale
        )
        bounds = run["bounds"]
        state.fitted.update(n_near_duplicates=n_gone, n_near_duplicates_left=n_left)
        final = to_numpy(order)
        gone = np.setdiff1d(np.concatenate(run["picked"]), final)
        gone = xp.asarray(gone) if gone.shape[0] else None
        # a pool that ran dry returned dropped rows the last picks' cover does not hold
        known = np.array_equal(np.sort(run["covered"]), np.sort(final))
    if known:
        state.objective.remember(state.cand[order], value[-1])  # the picks' diversity: pg's step 0 scores them
    b = xp.asarray(bounds, dtype=xp.float64)
    lo, hi = float(b.min()), float(b.max())
    v = (b - lo) / (hi - lo) / 2.0 if hi > lo else b * 0.0
    if gone is not None:
        v[gone] = 0.0  # dropped picks: last in pg's start
    v[order] = 1.0
    return v


def start_scores(state, E, scale, qc, xp):
    """The scores pg's initial logits map onto ``logit_range``, for ``state.init``."""
    if state.init == "relaxed":
        return relaxed_scores(state, E, scale, qc, xp)
    if state.init == "stochastic_greedy":
        return greedy_scores(state, E, scale, qc, xp)
    return qc


def start_solver(state, E, scale, qc, xp):
    """``(run, pilot scores or None)``: a started pg run from ``state.init`` and the
    estimator's ``logit_range`` (None: the diversity's default for that init), ``"auto"``
    resolved by :func:`pilot` (uniform init: no pilot, range unused); sets
    ``state.start_scores`` and ``state.logit_range``."""
    state.start_scores = start_scores(state, E, scale, qc, xp)
    lr = state.est.solver_params_.logit_range
    chosen = lr if lr is not None else state.div.default_logit_range(state.init)
    if isinstance(chosen, str) and state.init != "uniform":
        return pilot(state, E, scale, qc, xp)
    state.logit_range = tuple(float(v) for v in (AUTO_RANGES[0] if isinstance(chosen, str) else chosen))
    run = PolicyGradient(state)
    run.start(E, scale, qc, xp)
    return run, None
