"""Selection methods a split can be chosen with (``datamask select --method``).

:mod:`.registry` holds the registry and the helpers every method shares; each method is a
module of its own that registers itself on import: :mod:`.datamask` (DATAMASK, and its
``greedy`` / ``relaxed`` solvers as methods), :mod:`.topk`, :mod:`.random`,
:mod:`.semdedup`, :mod:`.quadmix`. Importing this package imports every module of it, in
name order, so a new method is one module and nothing else; the registry never imports a
method, so there is no import cycle.
"""

import importlib
import pkgutil

from .registry import REGISTRY, Budget, Selection, prunes, register, score, select, select_mask

for _m in pkgutil.iter_modules(__path__):  # register the methods
    importlib.import_module(f"{__name__}.{_m.name}")

__all__ = ["REGISTRY", "Budget", "Selection", "prunes", "register", "score", "select", "select_mask"]
