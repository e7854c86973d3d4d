"""A Dask cluster started the ordinary way: ``dask scheduler`` and two ``dask worker``
processes on 127.0.0.1, each in its own working directory (as on separate nodes). Runs with
relative paths write where the client sees them; a worker writing where the client cannot
see stops the run."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from tests.helpers.dask_processes import dask_processes
from tests.helpers.pipeline_data import assert_fails, write_files

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"
SELECT = ["--split-size", "600", "--ratio", "0.2", "--set", "solver_params.steps=30", "--quiet", "--no-report"]


@pytest.fixture(scope="module")
def real_cluster(tmp_path_factory):
    """``dask scheduler`` + two ``dask worker`` subprocesses, each worker in its own directory."""
    with dask_processes(tmp_path_factory.mktemp("nodes"), n_workers=2) as (addr, dirs):
        yield addr, dirs


@pytest.fixture
def client_dir(tmp_path, monkeypatch):
    write_files(tmp_path / "in", rows=(900, 900, 300))
    (tmp_path / "docs.jsonl").write_text("\n".join(CORPUS.read_text().splitlines()[:20]) + "\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _rows(d):
    return pq.read_table(Path(d) / "data").sort_by("id")


def test_relative_paths_on_a_real_cluster_equal_a_local_cluster(real_cluster, client_dir, address):
    addr, worker_dirs = real_cluster
    runs = {
        "select": ["select", "in", "{out}/sel", *SELECT],
        "embed": ["embed", "docs.jsonl", "{out}/emb", "--split-size", "10", "--quiet"],  # 2 splits of 10 texts
        "dedup": ["dedup", "{out}/emb", "{out}/dd", "--split-size", "10", "--quiet"],
    }
    for sched, out in ((addr, "real"), (address, "local")):
        for name, argv in runs.items():
            assert main([a.format(out=out) for a in argv] + ["--scheduler", sched]) == 0, (name, out)
    for name, sub in (("select", "sel"), ("embed", "emb"), ("dedup", "dd")):
        real, local = client_dir / "real" / sub, client_dir / "local" / sub
        m = json.loads((real / "manifest.json").read_text())
        t = _rows(real)
        assert t.num_rows == m["totals"]["rows_out"] > 0, name  # every row is visible to the client
        assert t.column("id").to_pylist() == _rows(local).column("id").to_pylist(), name
        assert sorted(p.name for p in (real / "data").iterdir()) == sorted(p.name for p in (local / "data").iterdir())
    for d in worker_dirs:  # nothing landed in a worker's own working directory
        assert not (d / "real").exists() and not list(d.rglob("*.parquet"))


def test_workers_writing_where_the_client_cannot_see(real_cluster, client_dir, capsys):
    """memory:// is each process's own: the workers' writes are invisible to the client, as a
    node-local disk is."""
    import fsspec

    addr, _ = real_cluster
    assert_fails(
        capsys,
        ["select", "in", "memory://sel", *SELECT, "--scheduler", addr],
        "output must be on storage every node shares",
        code=2,
    )
    fs = fsspec.filesystem("memory")
    assert not fs.exists("/sel/manifest.json")


def test_cluster_labels_written_where_the_client_cannot_see(real_cluster, client_dir, capsys):
    """``datamask cluster``: the client checks each labelled file the workers wrote, as the
    per-split stages do (one line, exit 2, no cluster.json)."""
    import fsspec

    addr, _ = real_cluster
    assert_fails(
        capsys,
        ["cluster", "in", "memory://cl", "--n-clusters", "4", "--split-size", "600", "--quiet", "--scheduler", addr],
        "output must be on storage every node shares",
        code=2,
    )
    assert not fsspec.filesystem("memory").exists("/cl/cluster.json")
