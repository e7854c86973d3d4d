"""What a run leaves in its output: stable split names along a chain, status that reads the
files, refusals of an output inside its input, and no orphaned work when a split fails."""

from __future__ import annotations

import json
import logging

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from datamask.pipeline.io import Split
from tests.helpers.pipeline_data import assert_fails, local_cluster, write_files

SPLIT = "600"  # files of 900, 900, 300 rows -> 5 splits: 450, 450, 450, 450, 300
ROWS = (900, 900, 300)


def _args(inp, out, *extra, scheduler=None):
    a = [
        "select",
        str(inp),
        str(out),
        "--split-size",
        SPLIT,
        "--set",
        "solver_params.steps=30",
        "--ratio",
        "0.2",
        "--quiet",
        "--no-report",
    ]
    return a + (["--scheduler", scheduler] if scheduler else []) + [str(x) for x in extra]


def _rows(out):
    return pq.read_table(out / "data").sort_by("id")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("small")
    write_files(d, rows=ROWS)
    return d


@pytest.fixture(scope="module")
def clusters():
    """A 1-worker and the 2-worker cluster of the suite's kind."""
    from distributed import LocalCluster

    one = LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    )
    two = local_cluster()
    yield {1: one.scheduler_address, 2: two.scheduler_address}
    one.close()
    two.close()


@pytest.fixture(scope="module")
def reference(small, clusters, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "sel"
    assert main(_args(small, out, scheduler=clusters[2])) == 0
    return _rows(out)


def test_split_names_keep_the_source_name_and_do_not_grow():
    assert (
        Split("/x", "CC-MAIN-2024-10/000_00000.parquet", "parquet", 0, 2000, whole=True).name
        == "CC-MAIN-2024-10__000_00000.r0-2000"
    )
    # a later stage reads that file (fewer rows after a filter): same name, whole or cut again
    assert (
        Split("/y", "CC-MAIN-2024-10__000_00000.r0-2000.parquet", "parquet", 0, 1878, whole=True).name
        == "CC-MAIN-2024-10__000_00000.r0-2000"
    )
    assert Split("/y", "X.r2000-4000.parquet", "parquet", 0, 900).name == "X.r2000-2900"
    assert Split("/y", "docs.jsonl.gz", "jsonl", 300, 600).name == "docs.r300-600"


def test_chained_stage_writes_the_same_names(small, clusters, reference, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    assert main(_args(small, first, scheduler=clusters[2])) == 0
    names = sorted(p.name for p in (first / "data").iterdir())
    assert names[0] == "shard-0.r0-450.parquet" and len(names) == 5
    assert main(_args(first, second, "--ratio", "0.5", scheduler=clusters[2])) == 0
    assert sorted(p.name for p in (second / "data").iterdir()) == names


def test_status_reads_the_files(small, clusters, tmp_path, capsys):
    out = tmp_path / "sel"
    assert main(_args(small, out, scheduler=clusters[2])) == 0
    assert main(["status", str(out)]) == 0
    capsys.readouterr()
    (out / "data" / "shard-1.r450-900.parquet").unlink()
    assert main(["status", str(out)]) == 1
    text = capsys.readouterr().out
    assert (
        "INCOMPLETE: 4 of 5" in text and "shard-1.parquet (rows 450-900): data/shard-1.r450-900.parquet missing" in text
    ), text
    # a file cut short (its footer says fewer rows than its record) counts as missing too
    t = pq.read_table(out / "data" / "shard-0.r0-450.parquet")
    pq.write_table(t.slice(0, 3), out / "data" / "shard-0.r0-450.parquet")
    assert main(["status", str(out)]) == 1
    assert "has 3 rows, its record says" in capsys.readouterr().out
    # the same command recomputes the two splits and the output is whole again
    assert main(_args(small, out, scheduler=clusters[2])) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["totals"]["computed_this_run"] == 2
    assert main(["status", str(out)]) == 0


def test_status_of_one_split_says_split(clusters, tmp_path, capsys):
    write_files(tmp_path / "one", rows=(300,))
    out = tmp_path / "sel1"
    assert main(_args(tmp_path / "one", out, scheduler=clusters[2])) == 0
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    assert "complete (1 split; manifest.json written)" in capsys.readouterr().out
    (out / "data" / "shard-0.r0-300.parquet").unlink()
    assert main(["status", str(out)]) == 1
    assert "INCOMPLETE: 0 of 1 split finished, 1 missing" in capsys.readouterr().out


def test_output_inside_input_is_refused(small, tmp_path, capsys):
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(small, corpus)
    assert_fails(capsys, _args(corpus, corpus / "sel"), "inside the input")
    assert_fails(capsys, _args(corpus, tmp_path), "inside the output")
    assert not (corpus / "sel").exists()


def test_relative_paths_are_resolved_on_the_client(small, clusters, tmp_path, monkeypatch):
    import shutil

    shutil.copytree(small, tmp_path / "in")
    monkeypatch.chdir(tmp_path)
    assert main(_args("in", "sel", scheduler=clusters[2])) == 0
    m = json.loads((tmp_path / "sel" / "manifest.json").read_text())
    assert m["config"]["output"] == str(tmp_path / "sel") and m["config"]["input"] == str(tmp_path / "in")


def _with_nan(src, dst, file_index, row):
    """A copy of the corpus with a NaN in one embedding."""
    write_files(dst, rows=ROWS)
    f = dst / f"shard-{file_index}.parquet"
    t = pq.read_table(f)
    emb = np.stack(t.column("embedding").to_numpy(zero_copy_only=False)).astype(np.float32)
    emb[row, 0] = np.nan
    col = pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)), emb.shape[1])
    pq.write_table(t.set_column(t.schema.get_field_index("embedding"), "embedding", col), f)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("where", [(0, 5), (1, 600), (2, 299)], ids=["first", "middle", "last"])
def test_bad_row_in_any_split_leaves_a_resumable_output(small, clusters, reference, tmp_path, capsys, workers, where):
    inp, out = tmp_path / "in", tmp_path / "sel"
    _with_nan(small, inp, *where)
    assert_fails(capsys, _args(inp, out, scheduler=clusters[workers]), "NaN")
    if out.exists():  # it holds its config record and the finished splits, nothing else
        assert (out / "_datamask" / "config.json").exists() and not (out / "manifest.json").exists()
        assert main(["status", str(out)]) == 1
        done = len(list((out / "_datamask" / "parts").glob("*.json")))
        assert len(list((out / "data").glob("*.parquet"))) == done
    else:
        done = 0
    capsys.readouterr()
    write_files(inp, rows=ROWS)  # the fix
    assert main(_args(inp, out, scheduler=clusters[workers])) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["totals"]["computed_this_run"] == 5 - done and m["totals"]["resumed"] == done
    assert _rows(out).equals(reference)


def test_the_manifest_names_storage_options_without_their_values():
    from datamask.pipeline.config import SelectConfig
    from datamask.pipeline.runner import public_config

    cfg = SelectConfig(input="s3://b/in", output="s3://b/out", storage_options='{"key": "K", "secret": "S"}')
    assert public_config(cfg)["storage_options"] == ["key", "secret"]
    assert cfg.fingerprint("cpu") == SelectConfig(input="s3://b/in", output="s3://b/out").fingerprint("cpu")


def test_an_output_beside_a_glob_input_is_not_inside_it():
    from datamask.runtime.storage import inside

    assert not inside("/a/sel", "/a/*.parquet")  # the glob never reads /a/sel/data/*.parquet
    assert inside("/a/sel", "/a/*/*/*.parquet") and inside("/a/sel", "/a/**/*.parquet")
    assert inside("s3://b/in/sel", "s3://b/in") and not inside("s3://b/in2", "s3://b/in")


def test_a_02_manifest_is_refused_in_one_line_naming_overwrite():
    """0.3 reads no output of 0.2 (no compatibility readers): a manifest listing ``partitions``
    instead of ``splits`` is refused in one line that says to rerun with --overwrite."""
    from datamask.errors import DataError
    from datamask.pipeline.output import n_splits, split_records

    old = {"partitions": [{"name": "a"}], "totals": {"partitions": 1}}
    for read in (lambda: split_records(old), lambda: n_splits(old["totals"])):
        with pytest.raises(DataError, match="datamask 0.2.*--overwrite") as e:
            read()
        assert "\n" not in str(e.value)
    new = {"splits": [{"name": "a"}], "totals": {"splits": 1}}
    assert split_records(new) == [{"name": "a"}] and n_splits(new["totals"]) == 1


def _settle(address, timeout=120):
    """Wait until no task of any run is processing on the cluster at ``address`` (a split the
    stopped run did not wait for would land by then)."""
    import time

    from distributed import Client

    with Client(address, timeout=30) as c:
        deadline = time.monotonic() + timeout
        while any(c.processing().values()) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)


@pytest.mark.slow
def test_a_worker_side_bad_row_with_both_cores_busy_leaves_a_resumable_output(
    small, clusters, reference, tmp_path, capsys
):
    """Five runs stopped by a bad row a worker finds while two busy loops hold both cores (the
    client's wait for the splits in flight then races with them): each leaves an output that
    holds its config record (``status`` exits 1, the fixed rerun resumes) or none at all, never
    one a rerun refuses as not written by datamask, even once the splits in flight have landed."""
    import subprocess
    import sys

    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for i in range(5):
            inp, out = tmp_path / f"in{i}", tmp_path / f"sel{i}"
            _with_nan(small, inp, *((0, 5) if i % 2 == 0 else (1, 600)))  # the first split, or the fourth
            assert_fails(capsys, _args(inp, out, scheduler=clusters[2]), "NaN")
            _settle(clusters[2])
            done = 0
            if out.exists():
                assert (out / "_datamask" / "config.json").exists() and not (out / "manifest.json").exists(), i
                assert main(["status", str(out)]) == 1, i
                done = len(list((out / "_datamask" / "parts").glob("*.json")))
                assert len(list((out / "data").glob("*.parquet"))) == done, i
            capsys.readouterr()
            write_files(inp, rows=ROWS)  # the fix
            assert main(_args(inp, out, scheduler=clusters[2])) == 0, (i, capsys.readouterr().err)
            m = json.loads((out / "manifest.json").read_text())
            assert m["totals"]["computed_this_run"] == 5 - done and m["totals"]["resumed"] == done, i
            assert _rows(out).equals(reference), i
    finally:
        for p in busy:
            p.kill()
            p.wait()


def test_a_split_is_not_written_into_an_output_without_its_config_record(tmp_path):
    """A split still running when its stopped run removed the output writes nothing there (and
    takes back what it wrote when the removal comes between its writes)."""
    from datamask.errors import OutputError
    from datamask.pipeline.runner import finish_split

    table = pa.table({"id": [1, 2, 3]})
    rec = {"name": "a.r0-3", "rows_in": 3}
    with pytest.raises(OutputError, match="config.json is missing here on the worker"):
        finish_split(table, tmp_path / "gone", dict(rec))
    assert not (tmp_path / "gone").exists()

    out = tmp_path / "kept"
    (out / "_datamask").mkdir(parents=True)
    (out / "_datamask" / "config.json").write_text("{}")
    finish_split(table, out, dict(rec))
    assert (out / "data" / "a.r0-3.parquet").exists() and (out / "_datamask" / "parts" / "a.r0-3.json").exists()

    from datamask.pipeline.output import Output

    (out / "_datamask" / "config.json").unlink()  # removed while the split was written
    Output(out).take_back(dict(rec, files=["a.r0-3.parquet"]))
    assert not out.exists()
