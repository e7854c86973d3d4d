"""datamask: select pre-training data that is both high-quality and diverse.

The core is :class:`DataMask` (one partition in, a boolean mask out) and
:func:`evaluate` (score any selection on the same objective).
"""
from .objectives import evaluate
from .optimizer import DataMask

__version__ = "0.1.0"
__all__ = ["DataMask", "evaluate", "__version__"]
