"""Fault tolerance: a worker killed mid-partition, and the whole job killed midway."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from datamask.cli import main
from tests.helpers.pipeline_data import args, local_cluster, manifest, read_out, wait_until

# Enough steps that a partition takes a few seconds (patience off: no early stop).
SLOW = ("--set", "solver_params.steps=500", "--set", "solver_params.patience=none")


@pytest.fixture(scope="module")
def fault_cluster():
    """Its own cluster: these tests kill workers."""
    with local_cluster(silence_logs=logging.CRITICAL) as c:
        yield c


@pytest.fixture(scope="module")
def reference(corpus, fault_cluster, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "out"
    assert main(args(corpus, out, *SLOW, scheduler=fault_cluster.scheduler_address)) == 0
    return read_out(out)


def test_worker_killed_mid_partition(corpus, fault_cluster, reference, tmp_path):
    from distributed import Client

    out = tmp_path / "out"
    addr = fault_cluster.scheduler_address
    rc = {}
    job = threading.Thread(target=lambda: rc.setdefault("rc", main(args(corpus, out, *SLOW, scheduler=addr))))
    with Client(addr, set_as_default=False) as client:
        job.start()

        def busy():
            return [
                w
                for w, tasks in client.processing().items()
                if any("select_partition" in str(k) or "read_frame" in str(k) for k in tasks)
            ]

        wait_until(lambda: busy(), what="a running partition")
        time.sleep(1.0)  # well inside the partition (each takes a few seconds)
        victim = busy()[0]
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        job.join(timeout=300)
    assert rc.get("rc") == 0
    assert read_out(out).equals(reference)
    assert not list(out.rglob(".*.tmp-*"))  # the dead worker's temp file was cleaned up


def test_job_killed_midway_then_resumed(corpus, fault_cluster, reference, tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "datamask.cli", *args(corpus, out, *SLOW, "--n-workers", "2")]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    parts = out / "_datamask" / "parts"
    try:
        wait_until(
            lambda: parts.exists() and len(list(parts.glob("*.json"))) >= 2 or proc.poll() is not None,
            what="two finished partitions",
        )
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    time.sleep(0.5)
    done = sorted(p.stem for p in parts.glob("*.json"))
    assert 2 <= len(done) < 5 and not (out / "manifest.json").exists()
    files = {n: (out / "data" / f"{n}.parquet").stat() for n in done}
    assert main(args(corpus, out, *SLOW, scheduler=fault_cluster.scheduler_address)) == 0
    for n, st in files.items():  # finished partitions were not recomputed
        now = (out / "data" / f"{n}.parquet").stat()
        assert (now.st_mtime_ns, now.st_ino) == (st.st_mtime_ns, st.st_ino)
    m = manifest(out)
    assert m["totals"]["computed_this_run"] == 5 - len(done) and m["totals"]["resumed"] == len(done)
    assert read_out(out).equals(reference)
