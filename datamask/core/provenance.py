"""How a fit made its selection: the ``optimizer_`` mapping and the start's trajectory.

A default ``DataMask`` fit is mostly its start: Frank-Wolfe (pairwise, DiSF) or stochastic
greedy (facility location) chooses, and policy gradient then gets a few steps to improve
on that answer on the exact objective (docs/defaults.md). :func:`optimizer_record` says which
part made the selection, so no output calls a solver's answer "policy gradient".
"""

from __future__ import annotations

import math

__all__ = ["optimizer_record", "start_trajectory", "START_NAMES"]

# What made the selection's starting point, in words (captions, summaries).
START_NAMES = {
    "relaxed": "Frank–Wolfe",
    "stochastic_greedy": "stochastic greedy",
    "quality": "the quality-aware start",
    "uniform": "the uniform start",
    "greedy": "greedy",
    "none": "nothing to choose",
}


def start_trajectory(fitted: dict, history: list) -> list | None:
    """The start solver's own progress as records ``{"iteration", "objective"}``, or None.

    Frank-Wolfe's trace is the relaxed objective of its best rounding so far (exact for
    pairwise), or under a token budget the relaxed objective of its fractional x;
    stochastic greedy's, the sum of its picks' gains. Both are shifted so that the
    last point is the exact objective of the start (the first evaluation point of
    ``history``: pg's step 0, or the relaxed solver's answer): the shift is 0 for pairwise,
    the empty selection's value for facility location, and the relaxation's fixed
    standardisation for DiSF."""
    trace = fitted.get("start_history")
    if not trace:
        return None
    shift = 0.0
    if history:
        shift = float(history[0]["objective"]) - float(trace[-1][1])
    return [{"iteration": int(i), "objective": float(v) + shift} for i, v in trace]


def optimizer_record(est, fitted: dict, method: str) -> dict:
    """The ``optimizer_`` mapping of a fit (``fitted``: the fitted attributes, without ``_``).

    ``method``: the estimator's (``datamask``, ``greedy``, ``relaxed``); ``start``: what made the
    starting point (``relaxed``, ``stochastic_greedy``, ``quality``, ``uniform`` for datamask;
    ``greedy`` or ``relaxed`` for those methods; ``none`` when there was nothing to choose);
    ``start_iterations``: the start solver's iterations or picks (None for quality and
    uniform); ``pg_steps``: policy
    gradient steps run (0 outside pg); ``pg_improved`` and ``pg_gain``: whether the final
    selection's exact objective is above the start's by more than ``tol`` times its size,
    and by how much; ``stopped_by``; ``objective_start`` and ``objective_end``; ``near_duplicates``: the
    candidates the redundancy filter dropped.
    """
    history = fitted.get("history") or []
    end = (fitted.get("objective") or {}).get("objective", math.nan)
    end = float(end)
    trace = fitted.get("start_history")
    iterations = int(trace[-1]["iteration"]) if trace else None
    if not fitted.get("n_steps") and method == "datamask" and fitted.get("init") is None:
        start, steps, begin = "none", 0, end
    elif method == "datamask":
        start, steps = fitted["init"], int(fitted.get("n_steps") or 0)
        begin = float(history[0]["objective"]) if history else end
    else:
        start, steps, begin = method, 0, end
        iterations = int(fitted.get("n_steps") or 0)
    if method == "datamask" and start == "relaxed":
        iterations = fitted.get("relaxed_iter")
    gain = end - begin if math.isfinite(end) and math.isfinite(begin) else 0.0
    improved = bool(steps > 0 and gain > float(est.solver_params_.tol) * max(abs(begin), 1e-12))
    return {
        "method": method,
        "start": start,
        "start_iterations": iterations,
        "pg_steps": steps,
        "pg_improved": improved,
        "pg_gain": float(gain),
        "stopped_by": fitted.get("stopped_by"),
        "objective_start": begin,
        "objective_end": end,
        "near_duplicates": int(fitted.get("n_near_duplicates") or 0),
    }
