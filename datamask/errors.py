"""Error types the command line turns into one line ``datamask: error: ...`` and a
non-zero exit code. Each message names the file, column or value at fault and the fix.

They carry only a message, so they pickle across Dask workers unchanged.
"""

from __future__ import annotations

import warnings

__all__ = [
    "DatamaskError",
    "DataError",
    "ConfigError",
    "SchedulerError",
    "ClusterError",
    "OutputError",
    "DatamaskDeprecationWarning",
    "warn_deprecated",
    "renamed",
]


class DatamaskError(Exception):
    """Base class: an expected failure with a user-facing one-line message."""

    exit_code = 2


class DataError(DatamaskError):
    """The input data is unusable (missing column, NaN, duplicate id, unreadable file...)."""


class ConfigError(DatamaskError):
    """A parameter is invalid, or disagrees with an existing output directory."""


class SchedulerError(DatamaskError):
    """No Dask scheduler or worker could be reached (exit code 3)."""

    exit_code = 3


# The old name, from when "cluster" meant both the Dask cluster and k-means clusters; kept
# for one release (deprecated in 0.3).
ClusterError = SchedulerError


class OutputError(DatamaskError):
    """The output directory cannot be written."""


class DatamaskDeprecationWarning(DeprecationWarning):
    """An old flag, YAML key or name that still works for one release; the command line
    prints it as one line ``datamask: warning: ...``."""


def renamed(namespace: dict, names: dict):
    """A module ``__getattr__`` serving each old name of ``names`` (old -> new) as the new
    one, with a warning, for one release: ``__getattr__ = renamed(globals(), {...})``."""

    def __getattr__(name):
        if name in names:
            warn_deprecated(f"{namespace['__name__']}.{name}", names[name])
            return namespace[names[name]]
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")

    return __getattr__


def warn_deprecated(old: str, new: str, until: str = "0.4", category=DatamaskDeprecationWarning, stacklevel=3) -> None:
    """Warn that ``old`` is now called ``new`` (it keeps working until release ``until``).
    ``category``: FutureWarning for a parameter of the Python API a user calls (shown by
    default, as scikit-learn does)."""
    warnings.warn(f"{old} is deprecated, use {new} ({old} stops working in {until})", category, stacklevel=stacklevel)
