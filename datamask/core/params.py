"""``DataMask``'s constructor: its parameters and their defaults, apart from scikit-learn.

:class:`~datamask.core.estimator.DataMask` inherits this ``__init__`` (scikit-learn's
``get_params`` and ``clone`` read its signature as they read any estimator's). It lives here
so that what only needs the parameters' names and defaults (the pipeline's
:class:`~datamask.pipeline.config.SelectConfig`, hence the command line's flags) reads them
without importing scikit-learn; their checks (``DataMask._parameter_constraints``) stay with
the estimator.
"""

from __future__ import annotations

__all__ = ["DataMaskParams", "BATCH_MAX", "METHODS"]

# The method parameter's values: the names of ``datamask select --method`` that run DataMask
# ("datamask" is DATAMASK's policy gradient; the pg engine is core/pg.py).
METHODS = ("datamask", "greedy", "relaxed")

# Default cap on the rows of one batch-updating step (the batch_max parameter).
BATCH_MAX = 512


class DataMaskParams:
    """The parameters of :class:`~datamask.core.estimator.DataMask` (documented there), stored
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
        group_size=128,
        lr=None,
        steps=None,
        batch_ratio=0.05,
        batch_max=BATCH_MAX,
        prune=0.0,
        near_duplicate=0.95,
        init=None,
        logit_range=None,
        final="topk",
        reference_size=2048,
        seed=0,
        callback=None,
        eval_every=100,
        patience=10,
        tol=1e-5,
        start_patience=None,
        lr_schedule="constant",
        relaxed_iter=None,
        n_threads=1,
        progress=False,
    ):
        self.ratio = ratio
        self.budget = budget
        self.token_budget = token_budget
        self.lam = lam
        self.diversity = diversity
        self.method = method
        self.group_size = group_size
        self.lr = lr
        self.steps = steps
        self.batch_ratio = batch_ratio
        self.batch_max = batch_max
        self.prune = prune
        self.near_duplicate = near_duplicate
        self.init = init
        self.logit_range = logit_range
        self.final = final
        self.reference_size = reference_size
        self.seed = seed
        self.callback = callback
        self.eval_every = eval_every
        self.patience = patience
        self.tol = tol
        self.start_patience = start_patience
        self.lr_schedule = lr_schedule
        self.relaxed_iter = relaxed_iter
        self.n_threads = n_threads
        self.progress = progress
