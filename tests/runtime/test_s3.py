"""Every stage from s3:// to s3:// against a real S3-compatible server (moto_server on 127.0.0.1,
started and stopped here): the same rows as a local run, resume after a killed job, status."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from tests.helpers.pipeline_data import write_files

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"
STAGES = ("embed", "score", "dedup", "select")
WORKFLOW = """
stages: [embed, score, dedup, select]
split_size: 10
quiet: true
score: {heuristics: true, normalize: rank}
select: {ratio: 0.3, solver_params: {steps: 30}}
"""
ROWS = (900, 900, 300)
DOCS = 20  # two splits of 10 texts per stage: the embedding model's time is per text
SELECT = ["--split-size", "600", "--ratio", "0.2", "--quiet", "--no-report"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto_server on a free loopback port; AWS_ENDPOINT_URL and dummy credentials set for
    this module only (the client, the processes started here and, through ``addr``, the
    shared cluster's workers read them)."""
    port = _free_port()
    exe = shutil.which("moto_server") or str(Path(sys.executable).with_name("moto_server"))
    proc = subprocess.Popen(
        [exe, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while True:
        try:
            urllib.request.urlopen(url, timeout=1)
            break
        except OSError:
            if time.time() - t0 > 30 or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("moto_server did not start") from None
            time.sleep(0.1)
    env = {
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    fs.mkdir("bkt")
    local = tmp_path_factory.mktemp("s3src")
    lines = CORPUS.read_text().splitlines()[:DOCS]
    (local / "docs.jsonl").write_text("\n".join(lines) + "\n")
    write_files(local / "emb", rows=ROWS)
    fs.put(str(local / "docs.jsonl"), "bkt/raw/docs.jsonl")
    fs.put(str(local / "emb") + "/", "bkt/emb/", recursive=True)
    try:
        yield SimpleNamespace(url=url, env=env, fs=fs, local=local)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def addr(s3, cluster):
    """The suite's shared cluster, its workers given this module's AWS variables (they read them
    as a cluster started with them would) and their own values back at the end: no cluster
    started and no embedding model loaded again for this module."""
    from distributed import Client

    def put(values):
        old = {k: os.environ.get(k) for k in values}
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        return old

    with Client(cluster.scheduler_address, set_as_default=False) as c:
        old = c.run(put, s3.env)
    try:
        yield cluster.scheduler_address
    finally:
        with Client(cluster.scheduler_address, set_as_default=False) as c:
            for w, values in old.items():
                c.run(put, values, workers=[w])


def _chain(workflow, src, root, addr):
    """``datamask run`` of embed -> score -> dedup -> select, from ``src`` to ``root/<stage>``."""
    assert (
        main(
            [
                "run",
                str(workflow),
                "--set",
                f"input={src}",
                "--set",
                f"output={root}",
                "--set",
                f"scheduler={addr}",
                "--no-report",
            ]
        )
        == 0
    )


def _s3_table(s3, prefix):
    return pq.read_table(prefix, filesystem=s3.fs).sort_by("id")


def test_chain_from_s3_to_s3_equals_a_local_run(s3, addr, tmp_path, capsys):
    wf = tmp_path / "chain.yaml"
    wf.write_text(WORKFLOW)
    _chain(wf, str(s3.local / "docs.jsonl"), str(tmp_path / "chain"), addr)
    _chain(wf, "s3://bkt/raw/docs.jsonl", "s3://bkt/chain", addr)
    for name in STAGES:  # the same file names in every stage, locally and on S3
        local = sorted(p.name for p in (tmp_path / "chain" / name / "data").iterdir())
        remote = sorted(Path(p).name for p in s3.fs.find(f"bkt/chain/{name}/data"))
        assert local == remote == ["docs.r0-10.parquet", "docs.r10-20.parquet"], name
    a = pq.read_table(tmp_path / "chain" / "select" / "data").sort_by("id")
    b = _s3_table(s3, "bkt/chain/select/data")
    assert a.num_rows > 0 and a.column("id").to_pylist() == b.column("id").to_pylist()
    assert a.column("text").to_pylist() == b.column("text").to_pylist()
    ea, eb = (np.stack(t.column("embedding").to_numpy(zero_copy_only=False)) for t in (a, b))
    np.testing.assert_allclose(ea, eb, atol=1e-6)
    np.testing.assert_allclose(a.column("quality").to_numpy(), b.column("quality").to_numpy(), atol=1e-9)
    m = json.loads(s3.fs.cat("bkt/chain/select/manifest.json"))
    assert m["config"]["output"] == "s3://bkt/chain/select" and m["totals"]["splits"] == 2

    # status reads the objects: complete, then one split's object deleted
    capsys.readouterr()
    assert main(["status", "s3://bkt/chain/select"]) == 0
    s3.fs.rm("bkt/chain/select/data/docs.r10-20.parquet")
    assert main(["status", "s3://bkt/chain/select"]) == 1
    out = capsys.readouterr().out
    assert "missing: docs.r10-20.parquet (rows 0-" in out and "data/docs.r10-20.parquet missing" in out, out


def test_job_killed_midway_resumes_on_s3(s3, addr, tmp_path):
    """The killed run has no AWS variables: its --storage-options alone (sent to every worker
    of the cluster it starts) reach the server. The resumed run uses the environment."""
    ref = tmp_path / "ref"
    slow = [
        "--set",
        "solver_params.steps=400",
        "--set",
        "solver_params.patience=none",
    ]  # a split takes about a second: time to see two records
    assert main(["select", str(s3.local / "emb"), str(ref), *SELECT, *slow, "--scheduler", addr]) == 0
    out = "s3://bkt/killed"
    opts = json.dumps({"endpoint_url": s3.url, "key": "testing", "secret": "testing"})
    cmd = [
        sys.executable,
        "-m",
        "datamask.cli",
        "select",
        "s3://bkt/emb",
        out,
        *SELECT,
        *slow,
        "--n-workers",
        "2",
        "--storage-options",
        opts,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)

    def records():
        s3.fs.invalidate_cache()
        return s3.fs.glob("bkt/killed/_datamask/parts/*.json")

    try:
        t0 = time.time()
        while len(records()) < 2 and proc.poll() is None and time.time() - t0 < 120:
            time.sleep(0.1)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = len(records())
    assert 2 <= done < 5 and not s3.fs.exists("bkt/killed/manifest.json")
    assert b"testing" not in s3.fs.cat("bkt/killed/_datamask/config.json")  # credentials are not recorded
    assert main(["status", out]) == 1
    assert main(["select", "s3://bkt/emb", out, *SELECT, *slow, "--scheduler", addr]) == 0
    m = json.loads(s3.fs.cat("bkt/killed/manifest.json"))
    assert m["totals"]["computed_this_run"] == 5 - done and m["totals"]["resumed"] == done
    assert _s3_table(s3, "bkt/killed/data").equals(pq.read_table(ref / "data").sort_by("id"))


def _local_copy(s3, prefix, dest: Path) -> Path:
    s3.fs.invalidate_cache()
    s3.fs.get(prefix.rstrip("/") + "/", str(dest) + "/", recursive=True)
    return dest


def test_cluster_from_s3_to_s3_equals_a_local_run(s3, addr, tmp_path):
    flags = [
        "--n-clusters",
        "4",
        "--sample-fraction",
        "0.5",
        "--split-size",
        "600",
        "--by-cluster",
        "--quiet",
        "--scheduler",
        addr,
    ]
    assert main(["cluster", str(s3.local / "emb"), str(tmp_path / "cl"), *flags]) == 0
    assert main(["cluster", "s3://bkt/emb", "s3://bkt/cl", *flags]) == 0
    got = _local_copy(s3, "bkt/cl", tmp_path / "got")
    want = tmp_path / "cl"
    names = lambda d: sorted(p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file())  # noqa: E731
    assert names(got) == names(want) and "data/shard-0.r0-450.parquet" in names(want), names(got)
    for rel in names(want):
        if rel.endswith(".parquet"):
            a, b = pq.read_table(want / rel), pq.read_table(got / rel)
            assert a.num_rows == b.num_rows and a.column_names == b.column_names, rel
            if "cluster" in a.column_names and "id" in a.column_names:
                assert a.column("cluster").to_pylist() == b.column("cluster").to_pylist(), rel
    a, b = (json.loads((d / "cluster.json").read_text()) for d in (want, got))
    assert a["rows"] == b["rows"] == sum(ROWS) and a["largest_cluster"] == b["largest_cluster"]
    assert a["sample_inertia_per_row"] == pytest.approx(b["sample_inertia_per_row"], rel=1e-5)


def test_compare_from_s3_to_s3_equals_a_local_run_with_its_report(s3, addr, tmp_path, capsys):
    flags = [
        "--methods",
        "datamask,topk,random,semdedup",
        "--set",
        "n_clusters=4",
        "--set",
        "solver_params.steps=20",
        "--split-size",
        "600",
        "--ratio",
        "0.2",
        "--holdout",
        "0.1",
        "--quiet",
        "--scheduler",
        addr,
    ]
    # the report is checked on the S3 run's output only (building one takes most of a run's time here)
    assert main(["compare", str(s3.local / "emb"), str(tmp_path / "cmp"), *flags, "--no-report"]) == 0
    assert main(["compare", "s3://bkt/emb", "s3://bkt/cmp", *flags]) == 0
    got = _local_copy(s3, "bkt/cmp", tmp_path / "got")
    want = tmp_path / "cmp"
    for name in (
        "compare.json",
        "compare.csv",
        "selections.parquet",
        "corpus_stats.parquet",
        "pareto.png",
        "report/index.html",
        "report/pareto.png",
    ):
        assert (got / name).is_file(), name
    a, b = (pq.read_table(d / "selections.parquet").to_pandas() for d in (want, got))
    assert len(a) > 0 and a.equals(b)
    held = lambda d: pq.read_table(d / "holdout").sort_by("id").column("id").to_pylist()  # noqa: E731
    assert len(held(want)) > 0 and held(want) == held(got)
    import pandas as pd

    ta, tb = (pd.read_csv(d / "compare.csv", index_col="method") for d in (want, got))
    cols = [c for c in ta.columns if c != "seconds"]
    np.testing.assert_allclose(ta[cols].to_numpy(float), tb[cols].to_numpy(float), rtol=1e-6, atol=1e-9)
    assert json.loads((got / "compare.json").read_text())["input"] == "s3://bkt/emb"

    # datamask report reads the s3:// output and writes its page there again
    s3.fs.rm("bkt/cmp/report", recursive=True)
    capsys.readouterr()
    assert main(["report", "s3://bkt/cmp"]) == 0
    assert "s3://bkt/cmp/report/index.html" in capsys.readouterr().out
    s3.fs.invalidate_cache()
    assert s3.fs.cat("bkt/cmp/report/index.html").startswith(b"<!DOCTYPE html>")


def test_select_writes_its_report_to_s3_and_proxy_lm_refuses_a_url(s3, addr, tmp_path, capsys):
    assert (
        main(
            [
                "select",
                "s3://bkt/emb",
                "s3://bkt/selr",
                "--split-size",
                "600",
                "--ratio",
                "0.2",
                "--set",
                "solver_params.steps=20",
                "--quiet",
                "--scheduler",
                addr,
            ]
        )
        == 0
    )
    s3.fs.invalidate_cache()
    page = s3.fs.cat("bkt/selr/report/index.html").decode()
    assert "datamask select" in page and "s3://bkt/emb" in page
    capsys.readouterr()
    assert main(["proxy-lm", "s3://bkt/selr", "--eval", str(tmp_path), str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "proxy-lm reads and writes local paths only" in err[0] and "s3://bkt/selr" in err[0]
