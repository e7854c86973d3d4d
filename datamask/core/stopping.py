"""pg's evaluation points and its early stopping (:class:`BestMask`).

Every ``eval_every`` steps the top-S mask of the logits is scored on the exact objective;
the best is kept (it is the fit's answer with ``final="topk"``) and three rules can end the
run there: the callback, ``start_patience`` (a solver's start that pg has not improved on
is returned as it is) and ``patience`` (two windows of evaluations, the later no better).
"""

from __future__ import annotations

import math

from .tokens import fill

__all__ = ["BestMask", "start_patience", "SOLVED_STARTS"]

# Starts that are a solver's answer: start_patience=None stops a run that does not improve on them.
SOLVED_STARTS = ("relaxed", "stochastic_greedy")


def start_patience(est, init, div):
    """``start_patience``, or for None the objective's (``div.start_patience`` steps) from a
    solver's start (relaxed, stochastic greedy); never from quality or uniform (a start pg
    is meant to leave), nor with ``patience=None`` (no early stopping at all)."""
    if est.solver_params_.start_patience is not None:
        return int(est.solver_params_.start_patience)
    return int(div.start_patience) if init in SOLVED_STARTS and est.solver_params_.patience is not None else None


class BestMask:
    """Evaluation points: the top-S mask of the logits on the exact objective, best kept."""

    def __init__(self, state, S, xp):
        self.state, self.est, self.S, self.xp = state, state.est, S, xp
        self.best_val, self.best_rows, self.values = -math.inf, None, []
        self.stopped_by = None
        self.start_patience, self.start_checked = None, False  # set by PolicyGradient.start

    def top(self, L):
        """The top-S rows of the logits (the longest prefix that fits, under a token budget)."""
        state = self.state
        if state.lengths is not None:
            return fill(self.xp.argsort(-L), state.lengths, state.token_budget)
        return self.xp.argpartition(-L, self.S - 1)[: self.S]

    def evaluate(self, step, L, bar):
        """Record one point; True when the run should stop (callback or patience)."""
        rows = self.top(L)
        rec = self.state.record(step, rows)
        self.values.append(rec["objective"])
        if rec["objective"] > self.best_val:
            self.best_val, self.best_rows = rec["objective"], rows
        if bar is not None:
            bar.set_postfix(objective=f"{rec['objective']:.5f}")
        return self.stop_by(rec)

    def stop_by(self, rec):
        """True (and ``stopped_by`` set) when the callback, the start rule or patience ends the run."""
        state, est = self.state, self.est
        if state.callback is not None and bool(state.callback(est, rec)):
            self.stopped_by = "callback"
        elif self.no_gain_on_start(rec["step"], est.solver_params_.tol):
            self.stopped_by = "start"
        elif est.solver_params_.patience is not None and self.stalled(
            int(est.solver_params_.patience), est.solver_params_.tol
        ):
            self.stopped_by = "patience"
        return self.stopped_by is not None

    def no_gain_on_start(self, step, tol):
        """True at the first evaluation point at least ``start_patience`` steps in when the
        best top-S mask so far is no more than ``tol`` times the start's objective (its size)
        above the start's (step 0's): a solved start that pg does not improve on is returned
        as it is, without the two windows of ``patience``."""
        p = self.start_patience
        if p is None or step < p or self.start_checked:
            return False
        self.start_checked = True
        v0 = self.values[0]
        return self.best_val <= v0 + tol * abs(v0)

    def stalled(self, p, tol):
        """True when the mean of the last ``p`` evaluations is no more than ``tol`` times the
        gain over the start above the mean of the ``p`` before them.

        Window means, not the best so far: a run whose top-S mask dipped and is climbing
        back is still improving. The gain, not the objective's size: with few selected rows
        per batch the rise per evaluation is tiny next to the objective, yet steady.
        """
        v = self.values
        if p == 0:
            return True
        if len(v) < 2 * p:  # two full windows: an early peak and dip are no plateau
            return False
        gain = max(0.0, max(v) - v[0])
        recent, before = v[-p:], v[-2 * p : -p]
        return sum(recent) / len(recent) <= sum(before) / len(before) + tol * gain
