"""One fit's working state, handed to its solver (scikit-learn's convention).

:meth:`datamask.DataMask.fit` builds a :class:`FitState` (the split's exact objective, the
candidate rows, the row or token budget, the history so far) and gives it to the solver
it runs; the solvers read the estimator's parameters through it and write what they found
into :attr:`FitState.fitted`. Nothing of a fit is kept on the estimator but the fitted
attributes, all of them set on every fit (:data:`FITTED`, ``None`` where one does not apply),
so a refit never leaves one of the last fit's behind.
"""

from __future__ import annotations

import copy
import time

__all__ = ["FitState", "FITTED"]

# The fitted attributes (each ``name + "_"`` on the estimator), set on every fit.
FITTED = (
    "mask",
    "budget",
    "tokens",
    "covers_all",
    "objective",
    "history",
    "n_candidates",
    "n_near_duplicates",
    "n_near_duplicates_left",
    "n_steps",
    "fit_seconds",
    "logits",
    "order",
    "x",
    "steps",
    "lr",
    "init",
    "logit_range",
    "relaxed_iter",
    "pilot",
    "stopped_by",
    "start_history",
    "optimizer",
    "solver_params",
    "reference_cover",
)


class FitState:
    """What one fit works on: ``objective`` (the split's), ``cand`` (the candidate rows after
    pruning), ``S``, the ``method`` that runs, and under a token budget the candidates'
    ``lengths`` and ``token_budget``.

    ``est`` gives the parameters (read only) and is the callback's first argument;
    ``callback`` and ``progress`` are the estimator's, or off in a pilot's :meth:`probe`.
    ``start_scores``, ``lr``, ``init``, ``logit_range`` are set by pg's start
    (:mod:`datamask.core.start`).
    """

    def __init__(self, est, objective, cand, S, *, method="datamask", lengths=None, token_budget=None, t0=None):
        self.est, self.objective, self.cand, self.S, self.method = est, objective, cand, S, method
        self.div = objective.div
        self.lengths, self.token_budget = lengths, token_budget
        self.t0 = time.perf_counter() if t0 is None else t0
        self.callback, self.progress = est.callback, bool(est.progress)
        self.history = []
        self.fitted = {}  # name (without the trailing "_") -> value
        self.cache = {}  # what the start and pg's runs share: the candidate rows, facility's scorer
        self.start_scores = self.lr = self.init = self.logit_range = None
        # the redundancy filter's cosine when it runs over the start's picks (solvers.filters_picks)
        self.picks_filter = None

    def evaluate(self, rows) -> dict:
        """The exact objective of candidate rows ``rows`` (indices into ``cand``)."""
        return self.objective.evaluate_rows(self.cand[rows])

    def record(self, step, rows) -> dict:
        """One evaluation point: the objective of ``rows`` at ``step``, kept in the history."""
        rec = {"step": int(step), "seconds": time.perf_counter() - self.t0}
        rec.update(self.evaluate(rows))
        self.history.append(rec)
        return rec

    def probe(self) -> FitState:
        """A copy for a pilot run: the same objective and candidates, its own history and
        results, no callback and no progress bar."""
        p = copy.copy(self)
        p.history, p.fitted, p.callback, p.progress = [], {}, None, False
        return p
