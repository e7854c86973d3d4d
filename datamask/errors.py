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


def warn_deprecated(old: str, new: str, until: str = "0.4") -> None:
    """Warn that ``old`` is now called ``new`` (it keeps working until release ``until``)."""
    warnings.warn(
        f"{old} is deprecated, use {new} ({old} stops working in {until})", DatamaskDeprecationWarning, stacklevel=3
    )
