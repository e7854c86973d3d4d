"""The whole-corpus stages keep the output contract of every stage, through the command line:
another config is refused in one line naming --overwrite, --overwrite replaces the output,
the same config of a finished output is not computed again, manifest.json is written last,
and ``datamask status`` reads the output (complete, or incomplete without its manifest)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from datamask.cli import main
from tests.helpers.pipeline_data import assert_fails, write_files


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("contract")
    write_files(d, rows=(600, 300))
    return d


def _ok(*argv):
    assert main([str(a) for a in argv]) == 0


def _status(capsys, out):
    capsys.readouterr()
    rc = main(["status", str(out)])
    return rc, capsys.readouterr().out


CASES = {
    # stage: (arguments of the first run, the same with another config, what the manifest says)
    "cluster": (["--n-clusters", 3, "--sample-fraction", 0.5], ["--n-clusters", 4, "--sample-fraction", 0.5]),
    "compare": (["--methods", "topk,random", "--no-report"], ["--methods", "topk", "--no-report"]),
}


@pytest.mark.parametrize("stage", list(CASES))
def test_another_config_is_refused_overwrite_replaces_status_reads(stage, corpus, address, tmp_path, capsys):
    first, other = CASES[stage]
    out = tmp_path / stage
    common = [corpus, out, "--split-size", 500, "--scheduler", address, "--quiet"]
    _ok(stage, *common, *first)
    m = json.loads((out / "manifest.json").read_text())
    assert m["stage"] == stage and m["status"] == "complete" and m["totals"]["rows_in"] == 900
    assert m["totals"]["splits"] == 3 and m["config"]["input"] == str(corpus)
    assert _status(capsys, out) == (
        0,
        f"{out}: datamask {stage} output, complete (3 splits read at once; manifest.json written)\n",
    )

    # the same config again: the finished output is returned, nothing is computed or rewritten
    stamp = (out / "manifest.json").stat().st_mtime_ns
    _ok(stage, *common, *first)
    assert (out / "manifest.json").stat().st_mtime_ns == stamp

    # another config: one line naming --overwrite, the output untouched
    assert_fails(capsys, [stage, *common, *other], "holds a run with a different config", "--overwrite")
    assert (out / "manifest.json").stat().st_mtime_ns == stamp

    # --overwrite replaces it
    _ok(stage, *common, *other, "--overwrite")
    m = json.loads((out / "manifest.json").read_text())
    if stage == "cluster":
        assert m["n_clusters"] == 4 and json.loads((out / "cluster.json").read_text())["n_clusters"] == 4
        assert pd.read_parquet(out / "centroids.parquet").shape[0] == 4
    else:
        assert m["methods"] == ["topk"]
        assert list(pd.read_csv(out / "compare.csv", index_col="method").index) == ["topk"]

    # without its manifest (a run that stopped) the output is incomplete, and a rerun finishes it
    (out / "manifest.json").unlink()
    rc, text = _status(capsys, out)
    assert rc == 1 and "INCOMPLETE (no manifest.json" in text and f"rerun `datamask {stage}`" in text
    _ok(stage, *common, *other)
    assert _status(capsys, out)[0] == 0


def test_a_foreign_directory_and_another_stage_are_refused(corpus, address, tmp_path, capsys):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    common = ["--split-size", 500, "--scheduler", address, "--quiet", "--n-clusters", 2]
    assert_fails(capsys, ["cluster", corpus, foreign, *common], "not written by datamask", "notes.txt")
    assert (foreign / "notes.txt").read_text() == "mine"

    out = tmp_path / "clustered"
    _ok("cluster", corpus, out, *common)
    assert_fails(
        capsys,
        ["compare", corpus, out, "--methods", "topk", "--split-size", 500, "--scheduler", address],
        "holds the output of datamask cluster; choose another OUTPUT for compare",
    )


def test_a_02_cluster_output_is_not_read_and_not_overwritten(corpus, address, tmp_path, capsys):
    """0.3 reads no output of 0.2 (cluster.json, no config record): status says it is not a
    datamask output, a run into it refuses to touch it (``--overwrite`` too: nothing there
    proves datamask wrote it), and the same run into a new directory works."""
    old = tmp_path / "old"
    (old / "data").mkdir(parents=True)
    (old / "cluster.json").write_text(json.dumps({"n_clusters": 2}))
    assert _status(capsys, old)[0] != 0
    common = ["--split-size", 500, "--scheduler", address, "--quiet", "--n-clusters", 2]
    for extra in ([], ["--overwrite"]):
        assert_fails(capsys, ["cluster", corpus, old, *common, *extra], "not written by datamask", "new or empty")
    assert (old / "cluster.json").exists()
    _ok("cluster", corpus, tmp_path / "new", *common)
    assert json.loads((tmp_path / "new" / "manifest.json").read_text())["stage"] == "cluster"
