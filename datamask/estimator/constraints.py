"""The one table of checks of ``DataMask``'s parameters and ``solver_params``' keys (types,
ranges, choices; scikit-learn's ``_parameter_constraints``), and the one function that applies
it: the estimator's ``fit`` and every config (:class:`~datamask.pipeline.config.SelectConfig`,
hence each flag, workflow key and keyword) call :func:`check_params`, so a value is refused
alike, in one line naming the parameter, wherever it was given.
"""

from __future__ import annotations

from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions, make_constraint

from ..core.diversity import DIVERSITIES, Diversity, get_diversity
from ..core.start import check_logit_range
from .params import METHODS, SOLVER_PARAMS, DataMaskParams, SolverParams, solver_settings

__all__ = ["PARAMETER_CONSTRAINTS", "SOLVER_CONSTRAINTS", "check_params", "check_solver_params"]

PARAMETER_CONSTRAINTS: dict = {
    "ratio": [Interval(Real, 0, 1, closed="neither"), None],  # None: with a token budget
    "budget": [Interval(Integral, 1, None, closed="left"), None],
    "token_budget": "no_validation",  # core.budget, then against lengths in fit (core.tokens)
    "lam": [Interval(Real, 0, 1, closed="both")],
    "diversity": [StrOptions(set(DIVERSITIES)), Diversity],
    "method": [StrOptions(set(METHODS))],
    "prune": [Interval(Real, 0, 1, closed="left")],
    "near_duplicate": [Interval(Real, 0, 1, closed="right"), None],
    "solver_params": [dict, None],  # each key: _solver_constraints
    "seed": [Integral],
    "callback": [callable, None],
    "progress": ["boolean"],
}
SOLVER_CONSTRAINTS: dict = {  # solver_params' keys (estimator.params.SOLVER_PARAMS)
    "group_size": [Interval(Integral, 2, None, closed="left")],
    "lr": [Interval(Real, 0, None, closed="neither"), None],
    "steps": [Interval(Integral, 0, None, closed="left"), None],
    "batch_ratio": [Interval(Real, 0, 1, closed="right"), None],
    "batch_max": [Interval(Integral, 2, None, closed="left"), None],
    "init": [StrOptions({"quality", "uniform", "relaxed", "stochastic_greedy"}), None],
    "logit_range": "no_validation",  # check_logit_range: "auto", (l_min, l_max) or None
    "final": [StrOptions({"topk", "sample"})],
    "reference_size": [Interval(Integral, 1, None, closed="left"), None],
    "eval_every": [Interval(Integral, 1, None, closed="left")],
    "patience": [Interval(Integral, 0, None, closed="left"), None],
    "tol": [Interval(Real, 0, None, closed="left")],
    "start_patience": [Interval(Integral, 0, None, closed="left"), None],
    "lr_schedule": [StrOptions({"constant", "cosine"})],
    "relaxed_iter": [Interval(Integral, 1, None, closed="left"), None],
    "n_threads": [Interval(Integral, 1, None, closed="left"), None],
}


def check_params(params: dict) -> None:
    """The one check of ``DataMask``'s parameters (also :class:`~datamask.pipeline.config.SelectConfig`'s):
    each against :data:`PARAMETER_CONSTRAINTS`, each key of ``solver_params`` against
    :data:`SOLVER_CONSTRAINTS`, then the ones that depend on each other. A ValueError
    names the parameter (``ratio must be ...``, ``solver_params: lr must be ...``)."""
    for name, value in params.items():
        _check_one(name, value, PARAMETER_CONSTRAINTS.get(name, "no_validation"))
    sp = check_solver_params(params.get("solver_params"))
    defaults = DataMaskParams()  # a parameter not given has the constructor's default
    div = get_diversity(params.get("diversity", defaults.diversity))
    tokens = params.get("token_budget") is not None
    if params.get("method") == "relaxed":
        div.check_relaxed(tokens=tokens)
    if sp.init is not None and params.get("method", defaults.method) == "datamask":
        div.check_start(sp.init, tokens)
    try:
        check_logit_range(sp.logit_range)
    except ValueError as e:
        raise InvalidParameterError(f"solver_params: {e}") from None


def check_solver_params(solver_params) -> SolverParams:
    """``solver_params`` checked key by key (an unknown key named with the valid ones) and
    resolved over the defaults."""
    given = dict(solver_params or {})
    unknown = sorted(set(given) - set(SOLVER_PARAMS))
    if unknown:
        raise InvalidParameterError(
            f"solver_params: unknown key(s) {', '.join(map(str, unknown))}; valid keys: {', '.join(SOLVER_PARAMS)}"
        )
    for name, value in given.items():
        try:
            _check_one(name, value, SOLVER_CONSTRAINTS[name])
        except InvalidParameterError as e:
            raise InvalidParameterError(f"solver_params: {e}") from None
    return solver_settings(given)


def _check_one(name, value, constraints):
    """scikit-learn's InvalidParameterError (a ValueError) ``name must be <what the constraints
    allow, in words>, got <value>``
    (``ratio must be a number between 0 and 1, both excluded, got 1.5``)."""
    if constraints == "no_validation":
        return
    cs = [make_constraint(c) for c in constraints]
    if any(c.is_satisfied_by(value) for c in cs):
        return
    allowed = [w for c in cs if not getattr(c, "hidden", False) and (w := _words(c))]
    what = allowed[0] if len(allowed) == 1 else ", ".join(allowed[:-1]) + " or " + allowed[-1]
    raise InvalidParameterError(f"{name} must be {what}, got {value!r}")


def _words(c) -> str | None:
    """One of scikit-learn's parameter constraints in plain words (None: unset, which no flag
    or key gives by mistake)."""
    if isinstance(c, Interval):
        kind = "a whole number" if c.type is Integral else "a number"
        lo, hi = (None if v is None else f"{v:g}" for v in (c.left, c.right))
        if lo is not None and hi is not None:
            return {
                "both": f"{kind} from {lo} to {hi}",
                "neither": f"{kind} between {lo} and {hi}, both excluded",
                "left": f"{kind} from {lo} up to {hi}, {hi} excluded",
                "right": f"{kind} above {lo}, at most {hi}",
            }[c.closed]
        if lo is not None:
            return f"{kind} of {lo} or more" if c.closed in ("left", "both") else f"{kind} above {lo}"
        if hi is not None:
            return f"{kind} of {hi} or less" if c.closed in ("right", "both") else f"{kind} below {hi}"
        return kind
    if isinstance(c, StrOptions):
        return "one of " + ", ".join(sorted(c.options))
    kind = type(c).__name__
    if kind == "_NoneConstraint":
        return None
    if kind == "_Booleans":
        return "true or false"
    if kind == "_Callables":
        return "a function"
    if kind == "_InstancesOf":
        return f"a {c.type.__name__} object"
    return str(c)
