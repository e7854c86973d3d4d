"""datamask: select pre-training data that is both high-quality and diverse.

The core is :class:`DataMask` (one partition in, a boolean mask out) and
:func:`evaluate` (score any selection on the same objective). Both import without Dask or
torch. Every name here is imported on first use (``datamask.DataMask`` imports scikit-learn
then), so ``import datamask``, and the ``datamask`` command that starts with it, stay light.
"""

__version__ = "0.3.0"
__all__ = ["DataMask", "evaluate", "__version__"]

# The public names, each from the module that defines it (imported on first use).
_PUBLIC = {"DataMask": "datamask.estimator.estimator", "evaluate": "datamask.estimator.evaluate"}


def __getattr__(name):
    if name in _PUBLIC:
        import importlib

        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # found directly from now on
        return value
    raise AttributeError(f"module 'datamask' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
