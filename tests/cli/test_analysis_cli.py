"""The analysis commands end to end through the CLI: cluster -> per-cluster select with the
baselines, compare, report, on a real Dask cluster."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from tests.helpers.pipeline_data import assert_fails, write_files


def _run(*argv):
    rc = main([str(a) for a in argv])
    assert rc == 0
    return rc


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("acorpus")
    write_files(d, rows=(2000, 1000))
    return d


@pytest.fixture(scope="module")
def clustered(corpus, address, tmp_path_factory):
    out = tmp_path_factory.mktemp("acl") / "clustered"
    _run(
        "cluster",
        corpus,
        out,
        "--n-clusters",
        5,
        "--sample-fraction",
        0.5,
        "--split-size",
        1500,
        "--by-cluster",
        "--scheduler",
        address,
        "--quiet",
    )
    return out


def test_cluster_command(clustered):
    s = json.loads((clustered / "cluster.json").read_text())
    assert s["n_clusters"] == 5 and s["rows"] == 3000 and s["splits"] == 3
    stats = pq.read_table(clustered / "cluster_stats.parquet").to_pandas()
    assert stats["size"].sum() == 3000 and len(stats) == 5
    assert len(list((clustered / "by_cluster").glob("cluster-*.parquet"))) == (stats["size"] > 0).sum()


def test_a_cluster_larger_than_a_split_is_one_warning_line(corpus, address, tmp_path, capsys):
    """Printed once, as ``datamask: warning: ...`` with the summary, not also as a raw UserWarning."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run("cluster", corpus, tmp_path / "c", "--n-clusters", 2, "--sample-fraction", 0.5, "--split-size", 1000)
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "more than the split size" in ln]
    assert lines and all(ln.startswith("datamask: warning: cluster ") for ln in lines)
    assert not [w for w in caught if "more than the split size" in str(w.message)]


@pytest.mark.parametrize("method", ["semdedup", "quadmix", "topk"])
def test_select_baseline_per_cluster(clustered, address, tmp_path, method):
    out = tmp_path / method
    _run(
        "select",
        clustered / "by_cluster",
        out,
        "--method",
        method,
        "--ratio",
        0.1,
        "--split-size",
        5000,
        "--scheduler",
        address,
        "--quiet",
    )
    m = json.loads((out / "manifest.json").read_text())
    stats = pq.read_table(clustered / "cluster_stats.parquet").to_pandas().set_index("cluster")
    assert m["config"]["method"] == method
    assert len(m["splits"]) == (stats["size"] > 0).sum()  # one split per cluster
    for p in m["splits"]:
        assert p["rows_out"] == round(0.1 * p["rows_in"])
        t = pq.read_table(out / "data" / p["files"][0])
        assert len(set(t.column("cluster").to_pylist())) == 1
        if method == "topk":  # exactly the best rows of the partition
            src = pq.read_table(clustered / "by_cluster" / p["source"]).to_pandas()
            want = set(src.nlargest(p["rows_out"], "quality", keep="first")["id"])
            assert set(t.column("id").to_pylist()) == want
    assert (out / "report" / "index.html").exists()  # the report runs at the end of select
    # a rerun resumes: the report directory is not taken for foreign content
    _run(
        "select",
        clustered / "by_cluster",
        out,
        "--method",
        method,
        "--ratio",
        0.1,
        "--split-size",
        5000,
        "--scheduler",
        address,
        "--quiet",
        "--no-report",
    )


def test_compare_and_report_commands(corpus, address, tmp_path, capsys):
    out = tmp_path / "cmp"
    _run(
        "compare",
        corpus,
        out,
        "--methods",
        "datamask,topk,random,semdedup",
        "--set",
        "solver_params.steps=60",
        "--split-size",
        1500,
        "--set",
        "n_clusters=6",
        "--scheduler",
        address,
        "--no-report",
    )
    printed = capsys.readouterr().out
    assert "semdedup" in printed and "pairwise" in printed
    assert not (out / "report").exists()
    import pandas as pd

    t = pd.read_csv(out / "compare.csv", index_col="method")
    assert list(t.index) == ["datamask", "topk", "random", "semdedup"] and (t["selected"] == 300).all()
    # every split record says how each method's selection was made
    m = json.loads((out / "manifest.json").read_text())
    recs = m["splits"]
    assert len(recs) == 4 * m["totals"]["splits"] and {r["method"] for r in recs} == {
        "datamask",
        "topk",
        "random",
        "semdedup",
    }
    for r in recs:
        opt = r["optimizer"]
        if r["method"] == "datamask":  # the default: stochastic greedy's answer, returned with no pg step
            assert opt["start"] == "stochastic_greedy" and opt["pg_steps"] == 0 and opt["pg_improved"] is False
            assert opt["objective_end"] >= opt["objective_start"] - 1e-9
        else:
            assert opt["start"] == r["method"] and opt["pg_steps"] == 0 and opt["pg_improved"] is False
    improved = sum(r["optimizer"]["pg_improved"] for r in recs)
    assert m["totals"]["pg_improved"] == improved
    _run("report", out)
    assert {p.name for p in (out / "report").glob("*.png")} >= {"pareto.png", "trajectory.png", "projection.png"}


def test_select_report_has_trajectory(corpus, address, tmp_path):
    out = tmp_path / "sel"
    _run(
        "select",
        corpus,
        out,
        "--set",
        "solver_params.steps=60",
        "--set",
        "solver_params.eval_every=20",
        "--split-size",
        1500,
        "--diversity",
        "pairwise",
        "--scheduler",
        address,
        "--quiet",
    )
    m = json.loads((out / "manifest.json").read_text())
    assert all(len(p["history"]) >= 2 for p in m["splits"])
    assert (out / "report" / "trajectory.png").exists()
    for p in m["splits"]:  # the first phase: Frank-Wolfe's own progress, ending at pg's step 0
        opt, start = p["optimizer"], p["start_history"]
        assert opt["method"] == m["config"]["method"] == "datamask"  # one name, flag to manifest
        assert opt["start"] == "relaxed" and opt["pg_steps"] == p["n_steps"] and opt["stopped_by"] in ("start", "steps")
        assert start[0]["iteration"] == 0 and start[-1]["iteration"] == opt["start_iterations"] >= 1
        assert start[-1]["objective"] == pytest.approx(p["history"][0]["objective"], rel=1e-9)
        assert start[-1]["objective"] >= start[0]["objective"]
        assert opt["pg_improved"] == (opt["objective_end"] > opt["objective_start"] * (1 + 1e-5))
    assert m["totals"]["pg_improved"] == sum(p["optimizer"]["pg_improved"] for p in m["splits"])
    html = (out / "report" / "index.html").read_text()
    assert "datamask: Frank–Wolfe reached" in html and "pg steps" in html


def test_select_preset_paper_starts_from_quality_and_runs_pg_steps(corpus, address, tmp_path, capsys):
    out = tmp_path / "paper"
    args = (
        "--preset",
        "paper",
        "--set",
        "solver_params.steps=40",
        "--set",
        "solver_params.eval_every=20",
        "--split-size",
        1500,
    )
    _run("select", corpus, out, *args, "--scheduler", address, "--no-report")
    m = json.loads((out / "manifest.json").read_text())
    cfg = m["config"]
    sp = cfg["solver_params"]  # the preset's, key by key under the ones given
    assert cfg["preset"] == "paper" and sp["lr"] == 10 and sp["batch_max"] is None and sp["steps"] == 40
    for p in m["splits"]:
        opt = p["optimizer"]
        assert opt["start"] == "quality" and opt["pg_steps"] == 40 and opt["stopped_by"] == "steps"
        assert "start_history" not in p  # quality is no solver: no first phase
    assert "policy gradient improved its start on" in capsys.readouterr().out


def test_analysis_errors(corpus, tmp_path, capsys):
    assert_fails(
        capsys, ["cluster", corpus, tmp_path / "o", "--n-clusters", 5000, "--quiet"], "n_clusters=5000", "3000 rows"
    )
    assert_fails(capsys, ["compare", corpus, tmp_path / "o2", "--methods", "datamask,bogus"], "methods")
    assert_fails(capsys, ["report", tmp_path], "neither compare.json")
    assert_fails(
        capsys,
        [
            "select",
            corpus,
            tmp_path / "o3",
            "--method",
            "quadmix",
            "--set",
            "quadmix_params=" + str(tmp_path / "nope.yaml"),
        ],
        "quadmix_params",
    )
