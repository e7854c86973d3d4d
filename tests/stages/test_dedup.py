"""``datamask dedup`` on a small planted corpus: groups found across files and splits, the
kept row is the highest-quality one, --keep-all, resume, semantic, and bad input."""

import html
import json

import pyarrow.parquet as pq
import pytest

from tests.helpers.dedup_data import write_planted as _write
from tests.helpers.pipeline_data import assert_fails, assert_no_output

SPLIT = "30"  # each 60-row file of write_planted is two splits


def _run(inp, out, address, *extra):
    from datamask.cli import main

    return main(
        [
            "dedup",
            str(inp),
            str(out),
            "--split-size",
            SPLIT,
            "--scheduler",
            address,
            "--quiet",
            *[str(x) for x in extra],
        ]
    )


def _table(out):
    return pq.read_table(out / "data").sort_by("id")


def _manifest(out):
    return json.loads((out / "manifest.json").read_text())


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("dedup_in")
    return d, _write(d)


def test_groups_across_files_and_splits_keep_the_highest_quality_row(corpus, tmp_path, address):
    inp, expected = corpus
    assert _run(inp, tmp_path / "out", address) == 0
    kept = set(_table(tmp_path / "out")["id"].to_pylist())
    assert kept == {i for i, k in expected.items() if k is None}
    m = _manifest(tmp_path / "out")
    assert m["totals"]["splits"] == 4 and m["totals"]["null_texts"] == 2
    assert m["dedup"]["kinds"] == {"exact": {"groups": 7, "removed": 7}, "fuzzy": {"groups": 2, "removed": 2}}
    assert m["dedup"]["quality_column_used"] is True
    assert m["totals"]["rows_out"] == m["totals"]["rows_in"] - 9
    # groups/ names rows by id: a removal can be traced without decoding row numbers
    g = pq.read_table(tmp_path / "out" / "_datamask" / "dedup" / "groups").to_pandas()
    assert list(g.columns) == ["id", "kept_id", "kind", "group"]
    assert dict(zip(g["id"], g["kept_id"])) == {i: k for i, k in expected.items() if k is not None}
    assert sorted(g["kind"].value_counts().items()) == [("exact", 7), ("fuzzy", 2)]
    assert g.groupby("group")["kept_id"].nunique().eq(1).all() and g["group"].nunique() == g["kept_id"].nunique()
    # the report shows example groups: the kept text beside the removed ones
    page = (tmp_path / "out" / "report" / "index.html").read_text()
    assert m["dedup"]["examples"] and "Example duplicate groups" in page
    for g in m["dedup"]["examples"]:
        assert all(expected[r["id"]] == g["kept"]["id"] for r in g["duplicates"])
        assert f"kept (id {g['kept']['id']})" in page and html.escape(g["kept"]["text"][:40]) in page


def test_exact_alone_leaves_near_copies(corpus, tmp_path, address):
    inp, expected = corpus
    assert _run(inp, tmp_path / "out", address, "--kind", "exact") == 0
    m = _manifest(tmp_path / "out")
    assert m["dedup"]["kinds"] == {"exact": {"groups": 7, "removed": 7}}
    assert m["totals"]["rows_out"] == m["totals"]["rows_in"] - 7


def test_keep_all_points_at_the_kept_id_and_a_rerun_resumes_to_the_same_output(corpus, tmp_path, address):
    inp, expected = corpus
    out = tmp_path / "out"
    assert _run(inp, out, address, "--keep-all") == 0
    first = _table(out)
    assert dict(zip(first["id"].to_pylist(), first["duplicate_of"].to_pylist())) == expected
    # a run killed after three splits: one split's record and file gone, no manifest
    rec = sorted((out / "_datamask" / "parts").glob("*.json"))[1]
    (out / "data" / json.loads(rec.read_text())["files"][0]).unlink()
    rec.unlink()
    (out / "manifest.json").unlink()
    assert _run(inp, out, address, "--keep-all") == 0
    m = _manifest(out)
    assert m["totals"]["computed_this_run"] == 1 and m["totals"]["resumed"] == 3
    assert _table(out).equals(first)


def test_semantic_without_cluster_column_computes_clusters(tmp_path, address):
    inp = tmp_path / "in"
    expected = _write(inp, seed=1, with_embedding=True)  # every planted copy has its original's vector
    assert (
        _run(inp, tmp_path / "out", address, "--kind", "semantic", "--eps", "0.01", "--n-clusters", "3", "--keep-all")
        == 0
    )
    t = _table(tmp_path / "out")
    assert dict(zip(t["id"].to_pylist(), t["duplicate_of"].to_pylist())) == expected
    assert _manifest(tmp_path / "out")["dedup"]["kinds"]["semantic"]["removed"] == 9


def test_missing_text_column_fails_cleanly(corpus, tmp_path, address, capsys):
    inp, _ = corpus
    out = tmp_path / "out"
    assert_fails(
        capsys,
        ["dedup", inp, out, "--set", "text_column=body", "--scheduler", address, "--quiet"],
        "'body'",
        "--set text_column=NAME",
    )
    assert_no_output(out)


@pytest.mark.parametrize(
    "flags,needle",
    [
        (["--bands", "7"], "--bands 7"),
        (["--num-perm", "64", "--bands", "128"], "--bands 128"),
        (["--kind", "fuzzy,minhash"], "--kind"),
    ],
)
def test_impossible_settings_fail_before_any_output(corpus, tmp_path, address, capsys, flags, needle):
    inp, _ = corpus
    out = tmp_path / "out"
    assert_fails(capsys, ["dedup", inp, out, "--scheduler", address, "--quiet", *flags], needle)
    assert not out.exists()


def test_semantic_cluster_on_the_gpu_branch_takes_the_lock_and_says_oom_in_one_line(fake_cp, monkeypatch):
    """The GPU branch (numpy standing in for cupy) finds what the CPU branch finds, holding the
    per-GPU lock; an out-of-memory there is one line with the fix for this step."""
    import numpy as np

    from datamask.errors import ConfigError
    from datamask.runtime import gpu_worker
    from datamask.stages.corpus import dedup_semantic

    rng = np.random.default_rng(0)
    E = rng.normal(size=(40, 16)).astype(np.float32)
    E[20:] = E[:20] + 1e-4  # 20 near-copies
    q, doc = rng.random(40), np.arange(40) * 7
    cpu = dedup_semantic.cluster_duplicates(E, q, doc, 0.01, "cpu")
    taken = []
    lock = gpu_worker._LOCK

    class Spy:
        def acquire(self):
            taken.append("lock")
            return lock.acquire()

        def release(self):
            return lock.release()

    monkeypatch.setattr(gpu_worker, "_LOCK", Spy())
    gpu = dedup_semantic.cluster_duplicates(E, q, doc, 0.01, "gpu")
    assert taken == ["lock"] and len(cpu[0]) == 20
    np.testing.assert_array_equal(gpu[0], cpu[0])
    np.testing.assert_array_equal(gpu[1], cpu[1])

    class OutOfMemoryError(MemoryError):
        pass

    def oom(*a, **k):
        raise OutOfMemoryError("Out of memory allocating 1,024 bytes (allocated so far: 2,048 bytes).")

    monkeypatch.setattr("datamask.dedup.semantic.semantic_duplicates", oom)
    with pytest.raises(ConfigError) as e:
        dedup_semantic.cluster_duplicates(E, q, doc, 0.01, "gpu")
    msg = str(e.value)
    assert "semantic dedup of 40 rows: the GPU ran out of memory" in msg and "raise --n-clusters" in msg
    assert "\n" not in msg


def test_help_says_how_the_threshold_shapes_the_bands(capsys):
    """The figures `dedup --help` quotes are lsh_params' own (126 of 128 at 0.5), and its range."""
    from datamask.cli import main
    from datamask.dedup.minhash import lsh_params

    p = lsh_params(5, 128, None, 0.5)
    assert (p.bands, p.rows) == (42, 3)
    assert main(["dedup", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"{p.bands} bands x {p.rows} rows use {p.bands * p.rows} of 128" in text
    assert "Jaccard similarity in (0, 1]" in text and "1: identical shingle sets only" in text


@pytest.mark.parametrize(
    "flag,value",
    [("--threshold", "0"), ("--threshold", "-0.2"), ("--threshold", "1.5"), ("--eps", "0"), ("--eps", "1")],
)
def test_a_threshold_or_eps_outside_its_range_is_one_line(tmp_path, capsys, flag, value):
    """``--threshold 0`` would call every pair sharing a band a duplicate (97 of 200 distinct
    real documents); ``--eps 0`` would remove nothing: refused before anything is read or written."""
    from pathlib import Path

    corpus = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"
    out = tmp_path / "dd"
    assert_fails(capsys, ["dedup", corpus, out, "--kind", "fuzzy,semantic", flag, value, "--quiet"], flag)
    assert not out.exists()


def test_threshold_one_keeps_identical_shingle_sets_only():
    from datamask.dedup.minhash import lsh_params

    p = lsh_params(5, 128, None, 1.0)
    assert (p.bands, p.rows, p.threshold) == (1, 128, 1.0)
