"""The worker plugin that gives every worker this run's storage options
(:func:`~datamask.runtime.storage.set_options`); apart from :mod:`.storage`, which imports no
Dask."""

from __future__ import annotations

from distributed.diagnostics.plugin import WorkerPlugin

from .storage import set_options

__all__ = ["StorageOptionsPlugin"]


class StorageOptionsPlugin(WorkerPlugin):
    """Worker plugin: this run's storage options on every worker (those joining later too)."""

    name = "datamask-storage-options"

    def __init__(self, opts: dict):
        self.opts = dict(opts)

    def setup(self, worker):
        set_options(self.opts)
