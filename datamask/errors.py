"""Error types the command line turns into one line ``datamask: error: ...`` and a
non-zero exit code. Each message names the file, column or value at fault and the fix.

They carry only a message, so they pickle across Dask workers unchanged.
"""

from __future__ import annotations

__all__ = [
    "DatamaskError",
    "DataError",
    "ConfigError",
    "SchedulerError",
    "OutputError",
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


class OutputError(DatamaskError):
    """The output directory cannot be written."""
