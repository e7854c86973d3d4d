"""The CUDA-alone path end to end on CPU: host frames, one worker per (fake) GPU pinned with
CUDA_VISIBLE_DEVICES, 2-4 threads each (one split on the device while the next are read),
the per-GPU lock, records and manifest. Its array library is numpy here, so the only step
that differs on a real GPU is the copy of each split's embeddings to the device, and the
selection must equal the CPU run's row for row."""

from __future__ import annotations

import os

import pytest

from datamask.pipeline import runner, split_job
from datamask.pipeline.config import SelectConfig
from datamask.runtime.client import close_client, get_client
from datamask.runtime.gpu import CPU, Level
from datamask.stages.split.select import run_select
from tests.helpers.pipeline_data import SPLIT, STEPS, manifest, read_out

FAKE = Level("cuda", "pandas", "numpy", "sklearn", "per-gpu", ("Fake GPU A", "Fake GPU B"), (2**34, 2**34))


@pytest.fixture
def fake_cuda(monkeypatch):
    fake = lambda device, needs=("cupy",): CPU if device == "cpu" else FAKE  # noqa: E731
    monkeypatch.setattr(runner, "select_level", fake)
    monkeypatch.setattr(split_job, "select_level", fake)  # the plan picks the level (pipeline/split_job.py)


def test_cuda_path_on_numpy_selects_what_the_cpu_selects(fake_cuda, corpus, address, tmp_path):
    common = dict(input=str(corpus), split_size=int(SPLIT), solver_params={"steps": int(STEPS)}, quiet=True)
    cpu_cfg = SelectConfig(output=str(tmp_path / "cpu"), device="cpu", scheduler=address, **common)  # shared cluster
    gpu_cfg = SelectConfig(output=str(tmp_path / "gpu"), device="gpu", **common)

    client = get_client(gpu_cfg, "gpu", level=FAKE)
    try:
        info = client.scheduler_info()["workers"]
        assert sorted(w["nthreads"] for w in info.values()) == [2, 2]
        assert sorted(client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES")).values()) == ["0", "1"]
        run_select(gpu_cfg, client)
    finally:
        close_client(client)
    run_select(cpu_cfg)

    g, c = manifest(tmp_path / "gpu"), manifest(tmp_path / "cpu")
    assert read_out(tmp_path / "gpu").equals(read_out(tmp_path / "cpu"))  # same rows, same values
    assert [p["seed"] for p in g["splits"]] == [p["seed"] for p in c["splits"]]
    assert g["device"] == "gpu" and g["gpu"]["level"] == "cuda" and g["gpu"]["frames"] == "pandas"
    assert g["gpu"]["gpus"] == ["Fake GPU A", "Fake GPU B"] and g["gpu"]["cluster"] == "per-gpu"
    assert c["gpu"]["level"] == "cpu" and c["gpu"]["arrays"] == "numpy"
    workers = {p["worker"].rsplit("/", 1)[1] for p in g["splits"]}
    assert workers and workers <= {"gpu0", "gpu1"}
    assert all(p["device_seconds"] > 0 and "wait_seconds" in p for p in g["splits"])
    t = g["throughput"]
    assert t["rows"] == g["totals"]["rows_in"] and t["workers"] == 2
    assert t["rows_per_second_per_gpu"] == pytest.approx(t["rows"] / t["seconds"] / 2, rel=1e-2)  # seconds rounded
    assert sum(w["splits"] for w in t["per_worker"].values()) == len(g["splits"])
    assert "rows_per_second_per_worker" in c["throughput"]


class OutOfMemoryError(MemoryError):
    """Stand-in for cupy's and torch's CUDA out-of-memory errors (known by class name)."""


def test_out_of_memory_in_a_worker_is_one_line(fake_cuda, corpus, tmp_path, capsys, monkeypatch):
    import logging

    from distributed import LocalCluster

    from datamask.pipeline import select_split as select_stage  # the per-split function's module
    from tests.helpers.pipeline_data import assert_fails, assert_no_output

    def oom(*a, **k):
        raise OutOfMemoryError("Out of memory allocating 6,442,450,944 bytes (allocated so far: 1,024 bytes).")

    monkeypatch.setattr(select_stage, "select", oom)
    out = tmp_path / "out"
    # an in-process worker, so the stand-in reaches it
    with LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None, silence_logs=logging.ERROR
    ) as cluster:
        assert_fails(
            capsys,
            [
                "select",
                corpus,
                out,
                "--device",
                "gpu",
                "--split-size",
                SPLIT,
                "--quiet",
                "--scheduler",
                cluster.scheduler_address,
            ],
            "shard-",
            "(rows ",
            "ran out of memory on Fake GPU A",
            "asked for 6.00 GiB more",
            "lower --split-size (now 2,000)",
        )
    assert_no_output(out)


@pytest.mark.gpu
def test_select_on_the_gpu_records_level_and_peak_memory(corpus, tmp_path):
    """On a real GPU: cupy arrays, one worker per GPU, each split's peak GPU memory recorded."""
    cfg = SelectConfig(
        input=str(corpus),
        output=str(tmp_path / "gpu"),
        split_size=int(SPLIT),
        quiet=True,
        device="gpu",
        method="relaxed",
        solver_params=dict(steps=int(STEPS)),
    )
    m = run_select(cfg)
    assert m["gpu"]["arrays"] == "cupy" and m["gpu"]["level"] in ("cuda", "rapids") and m["gpu"]["gpus"]
    assert all(p["gpu_peak_bytes"] > 0 and p["gpu_peak_ratio"] > 0 for p in m["splits"])
    assert m["throughput"]["rows_per_second_per_gpu"] > 0
    cpu = run_select(cfg.replace(output=str(tmp_path / "cpu"), device="cpu"))
    assert m["totals"]["rows_out"] == cpu["totals"]["rows_out"]


@pytest.mark.gpu
def test_labels_on_the_gpu_equal_the_host_labels():
    import cupy
    import numpy as np

    from datamask.core.kmeans import assign

    rng = np.random.default_rng(0)
    E = rng.standard_normal((5000, 64)).astype(np.float32)
    C = rng.standard_normal((40, 64)).astype(np.float32)
    host = assign(E, C)[0]
    dev = cupy.asnumpy(assign(cupy.asarray(E), cupy.asarray(C))[0])
    assert (host == dev).mean() > 0.999  # float32 ties aside
