"""The 0.2 names of ``DataMask``'s parameters, read for one release (until 0.4).

``DataMask(solver=...)`` is ``method=`` (the command line's ``--method``) and ``tokens=`` is
``token_budget=`` (a split's budget; ``datamask select --tokens`` is the corpus's). The old
keywords stay in the signature with the default :data:`DEPRECATED` (scikit-learn's way, so
``clone`` and ``get_params`` keep them); a fit reads the parameters through
:func:`current_params`, which maps a given old name to the new one with a FutureWarning.
"""

from __future__ import annotations

import inspect

from ..errors import warn_deprecated

__all__ = ["RENAMED", "DEPRECATED", "current_params"]

RENAMED = {"solver": "method", "tokens": "token_budget"}  # old -> new
DEPRECATED = "deprecated"  # an old name's default: not given


def current_params(est) -> dict:
    """``est``'s parameters under their current names: an old name given (:data:`RENAMED`)
    is read as the new one, with a FutureWarning; both given and different is a ValueError."""
    params = est.get_params(deep=False)
    for old, new in RENAMED.items():
        value = params.pop(old, DEPRECATED)
        if isinstance(value, str) and value == DEPRECATED:
            continue
        warn_deprecated(f"DataMask({old}=)", f"{new}=", category=FutureWarning, stacklevel=6)
        default = inspect.signature(type(est).__init__).parameters[new].default
        if params[new] != default and params[new] != value:
            raise ValueError(f"{old}={value!r} and {new}={params[new]!r} disagree; give {new} alone")
        params[new] = value
    return params
