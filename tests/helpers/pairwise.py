"""The objective DataMask defaulted to before 0.3 (pairwise diversity, lam 0.5, pruning 0.5, no
redundancy filter). The optimiser's tests written for it pin it here, since 0.3's default is
facility location at lam 0.7 without pruning, after the redundancy filter (docs/diversity.md);
tests/estimator/test_default_selection.py tests that default itself."""

from datamask import DataMask
from datamask import evaluate as _evaluate
from datamask.estimator.params import SOLVER_PARAMS

PAIRWISE_DEFAULTS = dict(diversity="pairwise", lam=0.5, prune=0.5, near_duplicate=None)


def PairwiseMask(*args, **kw):
    """``DataMask`` with :data:`PAIRWISE_DEFAULTS` under the given keywords; a key of
    ``solver_params`` given as a keyword (``steps=40``, as the tests' parameter grids write them)
    joins ``solver_params``."""
    solver = {k: kw.pop(k) for k in list(kw) if k in SOLVER_PARAMS}
    if solver or "solver_params" in kw:
        kw["solver_params"] = {**solver, **(kw.get("solver_params") or {})}
    return DataMask(*args, **{**PAIRWISE_DEFAULTS, **kw})


def evaluate(embeddings, quality, mask, **kw):
    """``datamask.evaluate`` with 0.2's defaults (pairwise, lam 0.5, facility's reference all
    rows): the objective :func:`PairwiseMask` fits, under the given keywords."""
    return _evaluate(embeddings, quality, mask, **{"lam": 0.5, "diversity": "pairwise", "reference_size": None, **kw})
