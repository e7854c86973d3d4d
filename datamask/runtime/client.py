"""``get_client(config)``: the Dask client a run uses.

* ``scheduler`` / ``scheduler_file``: join an existing cluster (see ``cluster/``); fail fast,
  naming the address, if no scheduler answers or no worker connects.
* otherwise an embedded local cluster on 127.0.0.1 only, as the run's
  :class:`~datamask.runtime.gpu.Level` says: for ``cpu`` a ``LocalCluster`` (one
  single-threaded process per worker, memory limit set); for a GPU level one worker process
  per GPU, each with :func:`gpu_threads` threads (one split on the device while the next
  ones are read, see :mod:`~datamask.runtime.gpu_worker`): dask-cuda's
  ``LocalCUDACluster`` when it imports, else :func:`per_gpu_cluster`, a ``SpecCluster`` of nannies whose worker processes are each
  pinned to one GPU with ``CUDA_VISIBLE_DEVICES``. GPU packages are imported only there.

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

from ..errors import SchedulerError

__all__ = [
    "get_client",
    "close_client",
    "worker_log",
    "WORKER_LOG",
    "gpu_worker_specs",
    "per_gpu_cluster",
    "GPU_THREADS",
    "MAX_GPU_THREADS",
    "gpu_threads",
]

GPU_THREADS = 2  # per GPU worker at least: one split on the device, the next one read meanwhile
MAX_GPU_THREADS = 4  # splits in flight per GPU at most (each holds its table in host memory)


def gpu_threads(n_gpus: int, cores: int | None = None) -> int:
    """Threads per GPU worker: the host's cores shared by the GPUs, from 2 to 4.

    Only one thread at a time holds the GPU (the per-GPU lock); the others read and decode
    the next splits on the host, where Parquet decoding of a 1M-row embedding split
    takes seconds of one core (``benchmarks/results/parquet_read.md``), so a GPU that
    finishes a split in well under a second needs several splits prepared at once."""
    cores = (os.cpu_count() or 1) if cores is None else int(cores)
    return max(GPU_THREADS, min(MAX_GPU_THREADS, cores // max(1, int(n_gpus))))


# the worker log of the clusters this process starts (one file per process)
WORKER_LOG = Path(tempfile.gettempdir()) / f"datamask-worker-{os.getpid()}.log"


def worker_log() -> Path | None:
    """The worker log file when it holds anything, else None."""
    try:
        return WORKER_LOG if WORKER_LOG.stat().st_size > 0 else None
    except OSError:
        return None


class _WorkerLogToFile(WorkerPlugin):
    """Worker plugin: the ``distributed.worker`` logger writes its warnings and errors to
    ``path`` instead of stderr (an error line names the file only when something is in it)."""

    name = "datamask-worker-log"

    def __init__(self, path):
        self.path = str(path)

    def setup(self, worker):
        log = logging.getLogger("distributed.worker")
        handler = logging.FileHandler(self.path, delay=True)
        handler.setLevel(logging.WARNING)  # what went wrong, not the workers' routine start and stop
        handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.propagate = False  # the "distributed" logger's stderr handler no longer sees it


def _join(cfg):
    from distributed import Client

    addr = cfg.scheduler or cfg.scheduler_file
    if cfg.scheduler_file and not os.path.exists(cfg.scheduler_file):
        raise SchedulerError(
            f"scheduler file {cfg.scheduler_file} does not exist; start the scheduler first "
            "(dask scheduler --scheduler-file FILE, see cluster/README.md)"
        )
    try:
        if cfg.scheduler:
            client = Client(cfg.scheduler, timeout=cfg.connect_timeout, set_as_default=False)
        else:
            client = Client(scheduler_file=cfg.scheduler_file, timeout=cfg.connect_timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise SchedulerError(
            f"no Dask scheduler answers at {addr} ({msg}); start one (see cluster/README.md) "
            "or drop --scheduler to run on a local cluster"
        ) from None
    try:
        client.wait_for_workers(1, timeout=cfg.connect_timeout)
    except (TimeoutError, OSError):
        client.close()
        raise SchedulerError(
            f"the scheduler at {client.scheduler.address if client.scheduler else addr} answers but no worker "
            f"connected within {cfg.connect_timeout:g}s; start workers (see cluster/README.md)"
        ) from None
    client._datamask_cluster = None
    return client


def _gpu_memory_limit(memory_limit, n_gpus: int):
    """``auto``: the host's memory shared by the GPU workers (not by cores, as Dask's auto does:
    a GPU worker has two threads on a machine of many cores)."""
    if memory_limit != "auto":
        return memory_limit
    import psutil

    return int(psutil.virtual_memory().total // max(1, n_gpus))


def gpu_worker_specs(n_gpus: int, memory_limit="auto", threads: int | None = None, visible: str | None = None) -> dict:
    """``SpecCluster`` worker specs: one nanny per GPU, its worker process pinned to that GPU
    (``CUDA_VISIBLE_DEVICES`` set before the process starts, so CUDA sees only it)."""
    from distributed import Nanny

    from .gpu import visible_devices

    limit = _gpu_memory_limit(memory_limit, n_gpus)
    threads = gpu_threads(n_gpus) if threads is None else threads
    specs = {}
    for i, dev in enumerate(visible_devices(n_gpus, visible)):
        specs[f"gpu-{i}"] = {
            "cls": Nanny,
            "options": {
                "nthreads": int(threads),
                "memory_limit": limit,
                "host": "127.0.0.1",
                "dashboard": False,
                "env": {"CUDA_VISIBLE_DEVICES": dev},
                "resources": {"GPU": 1},
                "silence_logs": logging.ERROR,
            },
        }
    return specs


def per_gpu_cluster(n_gpus: int, memory_limit="auto", threads: int | None = None):
    """A local cluster of one worker per GPU without dask-cuda (see :func:`gpu_worker_specs`)."""
    from distributed import Scheduler, SpecCluster

    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}}
    return SpecCluster(
        workers=gpu_worker_specs(n_gpus, memory_limit, threads),
        scheduler=scheduler,
        silence_logs=logging.ERROR,
        name="datamask-per-gpu",
    )


def _gpu_cluster(cfg, level, common):
    n = int(cfg.n_workers or len(level.gpus) or 1)
    if level.cluster == "LocalCUDACluster":
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise SchedulerError(
                "dask-cuda does not import here; uninstall it or fix its install "
                "(without it datamask starts one worker per GPU itself)"
            ) from None
        kw = dict(common, memory_limit=cfg.memory_limit, threads_per_worker=gpu_threads(n))
        if cfg.n_workers:
            kw["n_workers"] = cfg.n_workers
        return LocalCUDACluster(**kw)
    return per_gpu_cluster(n, cfg.memory_limit)


def get_client(cfg, device: str = "cpu", n_tasks: int | None = None, level=None):
    """A connected ``distributed.Client`` for ``cfg`` (a stage config).

    ``level``: the run's :class:`~datamask.runtime.gpu.Level` (chosen from ``device`` when
    not given); it decides which local cluster is started."""
    if cfg.scheduler or cfg.scheduler_file:
        return _join(cfg)
    from distributed import Client

    if level is None and device == "gpu":
        from .gpu import select_level

        level = select_level("gpu")
    n = cfg.n_workers or min(os.cpu_count() or 1, max(1, n_tasks or 1))
    common = dict(host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR)
    if level is not None and level.device == "gpu":
        cluster = _gpu_cluster(cfg, level, common)
    else:
        from distributed import LocalCluster

        cluster = LocalCluster(
            n_workers=n, threads_per_worker=1, processes=True, memory_limit=cfg.memory_limit, **common
        )
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
