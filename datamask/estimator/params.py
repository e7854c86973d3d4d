"""``DataMask``'s constructor, its solver's fine controls and the named recipes, apart from scikit-learn.

:class:`~datamask.estimator.estimator.DataMask` inherits this ``__init__`` (scikit-learn's
``get_params`` and ``clone`` read its signature as they read any estimator's). It lives here
so that what only needs the parameters' names and defaults (the pipeline's
:class:`~datamask.pipeline.config.SelectConfig`, hence the command line's flags) reads them
without importing scikit-learn; their checks (``DataMask._parameter_constraints``, one table for
the estimator and every config) stay with the estimator.

The optimiser's fine controls are one mapping, ``solver_params`` (the same mapping as
``datamask select --solver-params`` and a workflow's ``solver_params:`` key): its keys and
defaults are :data:`SOLVER_PARAMS`, resolved over them by :func:`solver_settings`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["DataMaskParams", "SolverParams", "SOLVER_PARAMS", "BATCH_MAX", "METHODS", "PRESETS", "solver_settings"]

# The method parameter's values: the names of ``datamask select --method`` that run DataMask
# ("datamask" is DATAMASK's policy gradient; the pg engine is core/pg.py).
METHODS = ("datamask", "greedy", "relaxed")

# Default cap on the rows of one batch-updating step (solver_params' batch_max).
BATCH_MAX = 512


@dataclass(frozen=True)
class SolverParams:
    """The optimiser's fine controls, each at its default (documented in
    :class:`~datamask.estimator.estimator.DataMask`'s ``solver_params``): what a fit runs with
    (``DataMask.solver_params_``). ``None`` means the objective's own value."""

    group_size: int = 128
    lr: float | None = None
    steps: int | None = None
    batch_ratio: float | None = 0.05
    batch_max: int | None = BATCH_MAX
    init: str | None = None
    logit_range: tuple | str | None = None
    final: str = "topk"
    reference_size: int | None = 2048
    eval_every: int = 100
    patience: int | None = 10
    tol: float = 1e-5
    start_patience: int | None = None
    lr_schedule: str = "constant"
    relaxed_iter: int | None = None
    n_threads: int | None = 1


#: ``solver_params``' keys and their defaults
SOLVER_PARAMS = {f.name: f.default for f in fields(SolverParams)}


def solver_settings(solver_params) -> SolverParams:
    """``solver_params`` (a mapping, or None) over the defaults. Unchecked: the estimator's
    ``check_params`` names an unknown key or a bad value first."""
    return SolverParams(**dict(solver_params or {}))


class DataMaskParams:
    """The parameters of :class:`~datamask.estimator.estimator.DataMask` (documented there), stored
    as given, as scikit-learn's estimators store theirs."""

    def __init__(
        self,
        ratio=0.1,
        *,
        budget=None,
        token_budget=None,
        lam=0.7,
        diversity="facility",
        method="datamask",
        prune=0.0,
        near_duplicate=0.95,
        solver_params=None,
        seed=0,
        callback=None,
        progress=False,
    ):
        self.ratio = ratio
        self.budget = budget
        self.token_budget = token_budget
        self.lam = lam
        self.diversity = diversity
        self.method = method
        self.prune = prune
        self.near_duplicate = near_duplicate
        self.solver_params = solver_params
        self.seed = seed
        self.callback = callback
        self.progress = progress


# Presets: named recipes (``DataMask(**PRESETS[name])``, ``datamask select --preset NAME``, a
# workflow's ``preset:`` key); a setting given beside one overrides it, ``solver_params`` key by key.
#: "default": the 0.3 defaults, by name (facility location at lambda 0.7, no pruning, the redundancy
#: filter; docs/diversity.md). "paper": the DATAMASK paper's final recipe (its Section 4.4, "Final
#: Strategies"): quality-aware pruning and initialisation, pairwise diversity at lambda 0.5, lr 10,
#: G 128, batch updating on 5% of a split, uncapped, for 10,000 steps with no early stopping
#: (docs/design.md).
PRESETS = {
    # read from the constructor's defaults, not written twice
    "default": {k: getattr(DataMaskParams(), k) for k in ("diversity", "lam", "prune", "near_duplicate")},
    "paper": {
        "diversity": "pairwise",
        "lam": 0.5,
        "prune": 0.5,
        "near_duplicate": None,
        "solver_params": {
            "init": "quality",
            "lr": 10.0,
            "group_size": 128,
            "batch_ratio": 0.05,
            "batch_max": None,
            "steps": 10_000,
            "patience": None,
            "lr_schedule": "constant",
            "final": "topk",
        },
    },
}
