"""Where ``pg`` starts: ``logit_range="auto"`` picks the initial logit range by a pilot.

A quality-aware start maps quality linearly onto ``(0, hi)`` nats. A wide range starts the
policy near the quality top-S, which is fast where the optimum is near it and slow where it
is not (the rows the optimum needs start far below the top and are rarely drawn); a narrow
range is the other way round. No fixed ``hi`` was best on every corpus of the
default-selection suite (benchmarks/results/defaults.md), so ``"auto"`` runs a short pilot
from each candidate range and keeps the one whose top-S mask scores higher on the exact
objective after the pilot; the fit then runs from that range. The pilot is deterministic
(same seed, same draws), so the chosen run repeats the pilot's steps exactly.
"""
from __future__ import annotations

import copy

from .pg import PolicyGradient

__all__ = ["AUTO_RANGES", "PILOT_STEPS", "pilot_range", "start_range", "check_logit_range"]

# Candidate initial ranges of the pilot: narrow and wide.
AUTO_RANGES = ((0.0, 2.0), (0.0, 16.0))
# Steps of each pilot run (at most a quarter of the fit's step budget).
PILOT_STEPS = 500


def pilot_range(est, E, cand, scale, qc, S, xp, ranges=AUTO_RANGES):
    """The range of ``ranges`` whose pilot run ends with the best top-S objective.

    Returns ``(range, scores)``: ``scores`` maps each range to its pilot's objective.
    """
    steps = max(1, min(PILOT_STEPS, int(est.steps) // 4))
    scores = {}
    for r in ranges:
        probe = copy.copy(est)  # shares the objective and candidates; own history
        probe.steps, probe.eval_every, probe.patience = steps, steps, None
        probe.callback, probe.progress, probe.final = None, False, "topk"
        probe.history_ = []
        probe.logit_range_ = tuple(float(v) for v in r)
        PolicyGradient(probe).run(E, cand, scale, qc, S, xp)
        scores[probe.logit_range_] = float(probe.history_[-1]["objective"])
    best = max(scores, key=scores.get)
    return best, scores


def check_logit_range(value):
    """ValueError unless ``value`` is None, ``"auto"`` or ``(l_min, l_max)`` with l_min <= l_max."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"logit_range must be 'auto', (l_min, l_max) or None, got {value!r}")
    elif value is not None:
        lo, hi = value
        if not float(lo) <= float(hi):
            raise ValueError(f"logit_range must be (l_min, l_max) with l_min <= l_max, got {value}")


def start_range(est, default, E, cand, scale, qc, S, xp):
    """``(range, pilot scores or None)``: ``est.logit_range`` (or ``default`` when None),
    with ``"auto"`` resolved by :func:`pilot_range` (uniform init: no pilot, range unused)."""
    chosen = est.logit_range if est.logit_range is not None else default
    pilot = None
    if isinstance(chosen, str) and est.init == "quality":
        chosen, pilot = pilot_range(est, E, cand, scale, qc, S, xp)
    elif isinstance(chosen, str):
        chosen = AUTO_RANGES[0]
    return tuple(float(v) for v in chosen), pilot
