"""Stages chain by the directory each one prints; an incomplete output is refused in one
line; ``datamask status`` says which splits a stopped run left; a failure inside a worker
reaches the user as one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from tests.helpers.pipeline_data import args, assert_fails, read_out


def _ok(*argv):
    assert main([str(a) for a in argv]) == 0


@pytest.fixture(scope="module")
def selected(corpus, address, tmp_path_factory):
    out = tmp_path_factory.mktemp("chain") / "selected"
    _ok(*args(corpus, out, "--no-report", scheduler=address))
    return out


@pytest.fixture(scope="module")
def clustered(selected, address, tmp_path_factory):
    out = tmp_path_factory.mktemp("chain") / "clustered"
    _ok("cluster", selected, out, "--n-clusters", 3, "--sample-fraction", 1.0, "--scheduler", address, "--quiet")
    return out


def test_cluster_reads_a_select_output_directory(selected, clustered):
    """`datamask cluster selected/` labels exactly the selected rows (from selected/data)."""
    labelled = pq.read_table(clustered / "data").to_pandas()
    assert sorted(labelled["id"]) == sorted(read_out(selected).column("id").to_pylist())
    assert set(labelled["cluster"]) <= {0, 1, 2}


def test_select_and_compare_read_a_cluster_output_directory(clustered, address, tmp_path):
    """A cluster output holds centroids.parquet and cluster_stats.parquet beside data/: only
    data/ is read."""
    out = tmp_path / "again"
    _ok(
        "select",
        clustered,
        out,
        "--ratio",
        0.5,
        "--split-size",
        100_000,
        "--set",
        "solver_params.steps=20",
        "--scheduler",
        address,
        "--quiet",
        "--no-report",
    )
    n_in = pq.read_metadata(next((clustered / "data").glob("*.parquet"))).num_rows
    assert (
        json.loads((out / "manifest.json").read_text())["totals"]["rows_in"]
        == sum(pq.read_metadata(f).num_rows for f in (clustered / "data").glob("*.parquet"))
        >= n_in
    )
    cmp = tmp_path / "cmp"
    _ok(
        "compare",
        clustered,
        cmp,
        "--methods",
        "topk,random",
        "--ratio",
        0.2,
        "--split-size",
        100_000,
        "--scheduler",
        address,
        "--quiet",
        "--no-report",
    )
    assert (cmp / "compare.csv").exists()


def test_an_incomplete_output_is_refused_in_one_line(selected, address, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(selected, broken)
    (broken / "manifest.json").unlink()
    assert_fails(
        capsys,
        ["cluster", broken, tmp_path / "c", "--n-clusters", 2, "--scheduler", address],
        "incomplete",
        "rerun datamask select",
        "datamask status",
    )
    assert not (tmp_path / "c").exists()


def test_a_compare_output_is_not_a_corpus(tmp_path, capsys):
    d = tmp_path / "cmp"
    d.mkdir()
    (d / "manifest.json").write_text('{"stage": "compare"}')  # a finished compare output
    assert_fails(capsys, ["cluster", d, tmp_path / "c", "--n-clusters", 2], "compare output")


def test_status_of_complete_and_stopped_runs(selected, tmp_path, capsys):
    assert main(["status", str(selected)]) == 0
    assert "complete (5 splits" in capsys.readouterr().out
    stopped = tmp_path / "stopped"
    shutil.copytree(selected, stopped)
    (stopped / "manifest.json").unlink()
    parts = sorted((stopped / "_datamask" / "parts").glob("*.json"))
    gone = json.loads(parts[1].read_text())
    parts[1].unlink()
    assert main(["status", str(stopped)]) == 1
    out = capsys.readouterr().out
    assert "INCOMPLETE: 4 of 5 splits finished, 1 missing" in out
    missing = [line for line in out.splitlines() if line.strip().startswith("missing:")]
    assert missing == [f"  missing: {gone['source']} (rows {gone['start']}-{gone['stop']})"]
    assert_fails(capsys, ["status", str(tmp_path / "nothing")], "does not exist")


def test_a_bad_row_found_in_a_worker_prints_one_line(corpus, tmp_path):
    """No `Compute Failed` log or traceback on the terminal: one line that names the worker
    log, which holds the details; the finished splits stay and `status` lists them."""
    bad = tmp_path / "bad"
    shutil.copytree(corpus, bad)
    f = sorted(bad.glob("*.parquet"))[-1]
    t = pq.read_table(f)
    q = t.column("quality").to_numpy(zero_copy_only=False).astype(np.float32)
    q[5] = np.nan
    pq.write_table(t.set_column(t.schema.get_field_index("quality"), "quality", pa.array(q)), f)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    r = subprocess.run(
        [sys.executable, "-m", "datamask.cli", *args(bad, out, "--n-workers", "1", "--no-report")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith("datamask: error: ") and "column 'quality' is nan" in lines[0]
    log = lines[0].rsplit("(worker log: ", 1)[1].rstrip(")")
    assert "Compute Failed" in Path(log).read_text()
    assert not (out / "manifest.json").exists()


def test_the_worker_log_is_kept_only_when_a_failure_wrote_to_it(selected, monkeypatch, tmp_path):
    import datamask.runtime.client as client

    log = tmp_path / "datamask-worker.log"
    monkeypatch.setattr(client, "WORKER_LOG", log)
    log.write_text("a task failed earlier\n")
    assert main(["status", str(selected)]) == 0 and not log.exists()  # success: removed
    log.write_text("Compute Failed\n")
    assert main(["status", str(tmp_path / "nothing")]) == 2 and log.exists()  # named by the error line
    log.write_text("")
    assert main(["status", str(tmp_path / "nothing")]) == 2 and not log.exists()  # nothing to read


@pytest.mark.parametrize("command", [[], ["select"], ["embed"], ["score"], ["cluster"], ["compare"]])
def test_help_says_what_a_stopped_run_leaves(command, capsys):
    assert main(command + ["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "no manifest.json is written" in text and "datamask status OUTPUT" in text
