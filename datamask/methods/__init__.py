"""Selection methods a split can be chosen with (``datamask select --method``).

:mod:`.registry` holds the registry and the helpers every method shares; each method is a
module of its own that registers itself on import: :mod:`.datamask` (DATAMASK, and its
``greedy`` / ``relaxed`` solvers as methods), :mod:`.topk`, :mod:`.random`,
:mod:`.semdedup`, :mod:`.quadmix`. Importing this package registers them all; the
registry never imports a method, so there is no import cycle.
"""

from . import datamask, quadmix, random, semdedup, topk  # noqa: F401  (register the methods)
from .registry import REGISTRY, Selection, budget_for, prunes, register, score, select

__all__ = ["REGISTRY", "Selection", "budget_for", "prunes", "register", "score", "select"]
