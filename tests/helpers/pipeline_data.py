"""Shared data, arguments and CLI assertions for the pipeline and CLI tests (their Dask
cluster fixtures live in ``tests/conftest.py``)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from datamask.cli.demo import corpus_table
from datamask.core.synthetic import make_corpus

DIM = 32
STEPS = "30"
# 3 files: 3000 + 3000 + 1000 rows; split 2000 -> 1500, 1500, 1500, 1500, 1000 rows.
FILE_ROWS = (3000, 3000, 1000)
SPLIT = "2000"


def write_files(directory: Path, rows=FILE_ROWS, seed=0, dim=DIM, row_group_size=700):
    directory.mkdir(parents=True, exist_ok=True)
    c = make_corpus(n_rows=sum(rows), dim=dim, n_topics=6, n_dup_groups=4, seed=seed)
    lo = 0
    for i, n in enumerate(rows):
        pq.write_table(corpus_table(c, lo, lo + n), directory / f"shard-{i}.parquet", row_group_size=row_group_size)
        lo += n
    return c


def args(input, output, *extra, scheduler=None):
    a = [
        "select",
        str(input),
        str(output),
        "--split-size",
        SPLIT,
        "--set",
        "solver_params.steps=" + str(STEPS),
        "--quiet",
    ]
    if scheduler:
        a += ["--scheduler", scheduler]
    return a + [str(x) for x in extra]


def read_out(output: Path) -> pa.Table:
    t = pq.read_table(output / "data")
    return t.sort_by("id")


def manifest(output: Path) -> dict:
    return json.loads((output / "manifest.json").read_text())


def wait_until(cond, timeout=180, what=""):
    """Poll ``cond()`` every 50 ms until it is true; fail after ``timeout`` seconds."""
    import time

    t0 = time.time()
    while not cond():
        if time.time() - t0 > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def local_cluster(silence_logs=logging.ERROR):
    """A real LocalCluster with 2 single-threaded worker processes on 127.0.0.1."""
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=silence_logs,
    )


def assert_fails(capsys, argv, *needles, code=2):
    """Run the CLI expecting failure: exit ``code`` and one line ``datamask: error: ...``
    containing every needle. Returns the line."""
    from datamask.cli import main

    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err.strip()
    assert rc == code, err
    assert len(err.splitlines()) == 1 and err.startswith("datamask: error: "), err
    for n in needles:
        assert n in err, (n, err)
    return err


def assert_no_output(out: Path):
    """Nothing a reader would take for a result: no manifest, no data file."""
    assert not (out / "manifest.json").exists()
    assert not out.exists() or not list(out.rglob("*.parquet"))
