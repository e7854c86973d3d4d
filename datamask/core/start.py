"""Where ``pg`` starts: the initial logits, from quality or from the relaxed solution.

``init="quality"`` (the paper's) maps quality linearly onto ``logit_range``;
``init="relaxed"`` (beyond the paper; pairwise and DiSF, which have a relaxation) maps the
relaxed mask instead: Frank-Wolfe's fractional x (:mod:`datamask.core.relaxed`) averaged
with its best 0/1 rounding, so the step-0 top-S mask *is* that rounding and pg starts where
``solver="relaxed"`` ends, then searches around it on the exact objective. On every corpus
of the default-selection suite it ended at or above the best quality-aware start, which
fell short at small ratios (docs/defaults.md).

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

import copy
import time

from .pg import PolicyGradient
from .validate import unit_rows

__all__ = ["AUTO_RANGES", "PILOT_STEPS", "pilot", "start_solver", "check_logit_range", "relaxed_scores"]

# Candidate initial ranges of the pilot: narrow and wide.
AUTO_RANGES = ((0.0, 2.0), (0.0, 16.0))
# Steps of each pilot run (at most a quarter of the fit's step budget).
PILOT_STEPS = 500


def pilot(est, E, cand, scale, qc, S, xp, ranges=AUTO_RANGES):
    """Run each range of ``ranges`` for the pilot's steps; ``(run, scores)`` of the best one.

    ``run`` is the winner's :class:`~datamask.core.pg.PolicyGradient`, started and advanced
    to the end of its pilot, ready to :meth:`~datamask.core.pg.PolicyGradient.advance`;
    ``scores`` maps each range to its best top-S objective over the pilot. The pilots run
    without ``est``'s callback; the winner's evaluation points are then given to it (their
    ``seconds``: no earlier than the end of the pilot, when the choice is known).
    """
    runs, scores, shared = {}, {}, {}
    for r in ranges:
        probe = copy.copy(est)  # shares the objective and candidates; own history
        probe.callback, probe.progress, probe.history_ = None, False, []
        probe.logit_range_ = tuple(float(v) for v in r)
        run = PolicyGradient(probe, shared)  # one copy of the candidate rows for both
        run.start(E, cand, scale, qc, S, xp)
        run.advance(max(1, min(PILOT_STEPS, run.steps // 4)))
        score = run.tracker.best_val
        if probe.history_[-1]["step"] != run.t:  # the pilot's last step was no evaluation point
            score = max(score, est._full.evaluate_rows(est._cand[run.tracker.top(run.step.L)])["objective"])
        runs[probe.logit_range_], scores[probe.logit_range_] = run, float(score)
    best = max(scores, key=scores.get)
    run = runs[best]
    now = time.perf_counter() - est._t0
    est.history_ = run.est.history_
    for rec in est.history_:
        rec["seconds"] = max(rec["seconds"], now)
    run.est.callback, run.tracker.owner, est.logit_range_ = est.callback, est, best
    run.est.progress = est.progress  # the pilots ran without a bar; the fit goes on with one
    run.open_bar()
    if est.callback is not None:
        run.stopped = run.stopped or any(bool(est.callback(est, rec)) for rec in list(est.history_))
    return run, scores


def check_logit_range(value):
    """ValueError unless ``value`` is None, ``"auto"`` or ``(l_min, l_max)`` with l_min <= l_max."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"logit_range must be 'auto', (l_min, l_max) or None, got {value!r}")
    elif value is not None:
        lo, hi = value
        if not float(lo) <= float(hi):
            raise ValueError(f"logit_range must be (l_min, l_max) with l_min <= l_max, got {value}")


def relaxed_scores(est, E, cand, scale, qc, S, xp):
    """``init="relaxed"``'s scores over the candidates: ``(x + r) / 2``, x the relaxed mask
    and r the indicator of its chosen rounding (the rows ``solver="relaxed"`` returns), so
    the rounding is the top S and the other rows keep x's order. Sets ``relaxed_iter_``."""
    x, rows, est.relaxed_iter_ = est._solve_relaxed(unit_rows(E, cand, scale), qc, S, xp)
    r = xp.zeros(x.shape[0], dtype=xp.float64)
    r[rows] = 1.0
    return (x.astype(xp.float64) + r) / 2.0


def start_solver(est, E, cand, scale, qc, S, xp):
    """``(run, pilot scores or None)``: a started pg run from ``est.init_`` and
    ``est.logit_range`` (None: the diversity's default for that init), ``"auto"`` resolved by
    :func:`pilot` (uniform init: no pilot, range unused); sets ``est.logit_range_``."""
    div = est._div
    est._start_scores = relaxed_scores(est, E, cand, scale, qc, S, xp) if est.init_ == "relaxed" else qc
    chosen = est.logit_range if est.logit_range is not None else div.default_logit_range(est.init_)
    if isinstance(chosen, str) and est.init_ != "uniform":
        return pilot(est, E, cand, scale, qc, S, xp)
    est.logit_range_ = tuple(float(v) for v in (AUTO_RANGES[0] if isinstance(chosen, str) else chosen))
    run = PolicyGradient(est)
    run.start(E, cand, scale, qc, S, xp)
    return run, None
