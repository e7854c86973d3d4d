"""The three solvers of :class:`datamask.DataMask`, each a function of one :class:`FitState`.

Each returns the chosen candidate rows and writes what else it found into
``state.fitted`` (``n_steps``; ``order`` for greedy, ``x`` for relaxed, ``logits``,
``steps``, the resolved start and why it stopped for pg).
"""

from __future__ import annotations

from .start import solve_relaxed, start_solver
from .stopping import start_patience
from .validate import unit_rows

__all__ = ["solve", "fit_greedy", "fit_relaxed", "fit_pg", "filters_picks"]


def filters_picks(est, div, method, tokens) -> bool:
    """True when the redundancy filter (``near_duplicate``) runs over the picks, refilled
    (:func:`~datamask.core.redundancy.picks_without_near_duplicates`), not over the
    candidates first: where a solver's picks are the selection as they stand, that is pg
    from stochastic greedy's start with no steps to improve on it (facility location's
    default fit; no token budget). Elsewhere pg's steps, greedy or relaxed choose among the
    candidates, so those are filtered first (:func:`~datamask.core.redundancy.without_near_duplicates`)."""
    if method in ("greedy", "relaxed") or tokens or div.stochastic_greedy is None:
        return False
    init = est.solver_params_.init if est.solver_params_.init is not None else div.default_init(tokens)
    return init == "stochastic_greedy" and start_patience(est, init, div) == 0


def solve(state, E, scale, qc, xp):
    """The chosen candidate rows by the fit's ``method``."""
    if state.method == "greedy":
        return fit_greedy(state, unit_rows(E, state.cand, scale), qc)
    if state.method == "relaxed":
        return fit_relaxed(state, unit_rows(E, state.cand, scale), qc, xp)
    return fit_pg(state, E, scale, qc, xp)


def fit_greedy(state, Ec, qc):
    """Greedy picks; under a token budget the knapsack rule: the better on the exact
    objective of plain gain and gain per token."""
    est, div = state.est, state.div
    kws = (
        [{}]
        if state.lengths is None
        else [{"cost": state.lengths, "tokens": state.token_budget, "per_token": p} for p in (False, True)]
    )
    R = state.objective.rows(state.objective.reference) if div.uses_reference else None
    runs = [div.greedy(Ec, qc, state.S, est.lam, R, state.progress, **kw) for kw in kws]
    order = max(runs, key=lambda o: state.evaluate(o)["objective"])
    n = int(order.shape[0])
    state.fitted.update(n_steps=n, order=state.cand[order])
    state.record(n, order)
    return order


def fit_relaxed(state, Ec, qc, xp):
    x, rows, it = solve_relaxed(state, Ec, qc, xp)
    full = xp.full(state.objective.E.shape[0], 0.0)
    full[state.cand] = x
    state.fitted.update(n_steps=it, x=full)
    state.record(it, rows)
    return rows


def fit_pg(state, E, scale, qc, xp):
    """pg from its start (:func:`datamask.core.start.start_solver`) until it stops."""
    est = state.est
    state.lr = float(est.solver_params_.lr) if est.solver_params_.lr is not None else state.div.lr
    tokens = state.lengths is not None
    state.init = est.solver_params_.init if est.solver_params_.init is not None else state.div.default_init(tokens)
    state.div.check_start(state.init, tokens)  # the resolved start, checked against the objective
    run, pilot = start_solver(state, E, scale, qc, xp)
    run.advance(run.steps)
    rows = run.finish()
    logits = xp.full(state.objective.E.shape[0], -xp.inf)
    logits[state.cand] = run.L
    state.history = run.state.history  # the pilot winner's (datamask.core.start.pilot)
    state.fitted.update(
        run.state.fitted,
        n_steps=run.n_steps,
        steps=run.steps,
        logits=logits,
        lr=state.lr,
        init=state.init,
        logit_range=run.state.logit_range,
        pilot=pilot,
        stopped_by=run.stopped_by,
    )
    return rows
