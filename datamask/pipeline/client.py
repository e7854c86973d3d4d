"""``get_client(config)``: the Dask client a run uses.

* ``scheduler`` / ``scheduler_file``: join an existing cluster (see ``cluster/``); fail fast,
  naming the address, if no scheduler answers or no worker connects.
* otherwise an embedded local cluster on 127.0.0.1 only: ``LocalCUDACluster`` (one worker
  per GPU) for device ``gpu``, ``LocalCluster`` (one single-threaded process per worker,
  memory limit set) for ``cpu``. GPU packages are imported only on that path.

Close with :func:`close_client`, which also stops a cluster this module started.

On a cluster this module starts, the workers' own log (a task's failure, with its
traceback) goes to a file, :data:`WORKER_LOG`, not to the terminal: the client raises the
same error, and the command prints it as one line that names that file.
"""
from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin

from ..errors import ClusterError

__all__ = ["get_client", "close_client", "worker_log", "WORKER_LOG"]

# the worker log of the clusters this process starts (one file per process)
WORKER_LOG = Path(tempfile.gettempdir()) / f"datamask-worker-{os.getpid()}.log"


def worker_log() -> Path | None:
    """The worker log file when it holds anything, else None."""
    try:
        return WORKER_LOG if WORKER_LOG.stat().st_size > 0 else None
    except OSError:
        return None


class _WorkerLogToFile(WorkerPlugin):
    """Worker plugin: the ``distributed.worker`` logger writes to ``path`` instead of stderr."""

    name = "datamask-worker-log"

    def __init__(self, path):
        self.path = str(path)

    def setup(self, worker):
        log = logging.getLogger("distributed.worker")
        handler = logging.FileHandler(self.path, delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.propagate = False  # the "distributed" logger's stderr handler no longer sees it


def _join(cfg):
    from distributed import Client

    addr = cfg.scheduler or cfg.scheduler_file
    if cfg.scheduler_file and not os.path.exists(cfg.scheduler_file):
        raise ClusterError(f"scheduler file {cfg.scheduler_file} does not exist; start the scheduler first "
                           "(dask scheduler --scheduler-file FILE, see cluster/README.md)")
    try:
        if cfg.scheduler:
            client = Client(cfg.scheduler, timeout=cfg.connect_timeout, set_as_default=False)
        else:
            client = Client(scheduler_file=cfg.scheduler_file, timeout=cfg.connect_timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise ClusterError(
            f"no Dask scheduler answers at {addr} ({msg}); start one (see cluster/README.md) "
            "or drop --scheduler to run on a local cluster"
        ) from None
    try:
        client.wait_for_workers(1, timeout=cfg.connect_timeout)
    except (TimeoutError, OSError):
        client.close()
        raise ClusterError(
            f"the scheduler at {client.scheduler.address if client.scheduler else addr} answers but no worker "
            f"connected within {cfg.connect_timeout:g}s; start workers (see cluster/README.md)"
        ) from None
    client._datamask_cluster = None
    return client


def get_client(cfg, device: str = "cpu", n_tasks: int | None = None):
    """A connected ``distributed.Client`` for ``cfg`` (a ``SelectConfig``)."""
    if cfg.scheduler or cfg.scheduler_file:
        return _join(cfg)
    from distributed import Client

    n = cfg.n_workers or min(os.cpu_count() or 1, max(1, n_tasks or 1))
    common = dict(host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    if device == "gpu":
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise ClusterError("device gpu needs dask-cuda: install the [gpu] extra (see environment.yml)") from None
        kw = dict(common, memory_limit=cfg.memory_limit, threads_per_worker=1)
        if cfg.n_workers:
            kw["n_workers"] = cfg.n_workers
        cluster = LocalCUDACluster(**kw)
    else:
        from distributed import LocalCluster

        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               memory_limit=cfg.memory_limit, **common)
    client = Client(cluster, set_as_default=False)
    client._datamask_cluster = cluster
    client.register_plugin(_WorkerLogToFile(WORKER_LOG))
    return client


def close_client(client):
    cluster = getattr(client, "_datamask_cluster", None)
    try:
        client.close()
    finally:
        if cluster is not None:
            cluster.close()
