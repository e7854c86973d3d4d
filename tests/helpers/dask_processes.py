"""A Dask cluster started the ordinary way, as on separate nodes: ``dask scheduler`` and
``dask worker`` processes on 127.0.0.1, each worker in its own working directory."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dask_processes(root: Path, n_workers: int = 2, env=None):
    """Yields ``(scheduler address, [worker directories])`` of a scheduler and ``n_workers``
    one-thread workers started under ``root`` (with ``env``, e.g. another ``PYTHONPATH``);
    every process is stopped on exit."""
    from distributed import Client

    dask = shutil.which("dask") or str(Path(sys.executable).with_name("dask"))
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              cwd=root, **quiet)]  # fmt: skip
    dirs = []
    for i in range(n_workers):
        d = root / f"worker{i}"
        d.mkdir()
        dirs.append(d)
        args = ["--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard", "--local-directory", str(d / "scratch")]
        procs.append(subprocess.Popen([dask, "worker", addr, *args], cwd=d, **quiet))
    try:
        t0 = time.time()
        while True:
            try:
                with Client(addr, timeout=5, set_as_default=False) as c:
                    c.wait_for_workers(n_workers, timeout=60)
                break
            except OSError:
                if time.time() - t0 > 60:
                    raise
                time.sleep(0.5)
        yield addr, dirs
    finally:
        # the workers first, while their scheduler still answers (stopped together, each waits
        # out its timeouts for the other: seconds instead of one), then the scheduler
        for group in (procs[1:], procs[:1]):
            for p in group:
                p.terminate()
            for p in group:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
