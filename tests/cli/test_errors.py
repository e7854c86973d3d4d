"""Bad input: each case exits non-zero with one line naming the file/column/value and the
fix, and leaves no half-written output."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from tests.helpers.pipeline_data import args, assert_fails, assert_no_output, write_files


def _one_file(tmp_path, mutate, rows=600, name="f.parquet"):
    d = tmp_path / "in"
    write_files(d, rows=(rows,))
    t = pq.read_table(d / "shard-0.parquet")
    (d / "shard-0.parquet").unlink()
    pq.write_table(mutate(t), d / name)
    return d


def _with_embedding(t, E):
    return t.set_column(
        t.schema.get_field_index("embedding"),
        "embedding",
        pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), E.shape[1]),
    )


def _emb(t):
    return t.column("embedding").combine_chunks().flatten().to_numpy().reshape(t.num_rows, -1).copy()


def test_missing_column(tmp_path, capsys):
    d = _one_file(tmp_path, lambda t: t.drop_columns(["quality"]))
    out = tmp_path / "out"
    assert_fails(capsys, args(d, out), "f.parquet", "'quality'", "--set quality_column=NAME")
    assert not out.exists()


def test_configured_column_name_used(tmp_path, capsys, address):
    d = _one_file(tmp_path, lambda t: t.rename_columns(["doc" if c == "id" else c for c in t.column_names]))
    assert_fails(capsys, args(d, tmp_path / "o1"), "'id'", "--set id_column=NAME")
    assert main(args(d, tmp_path / "o2", "--set", "id_column=doc", scheduler=address)) == 0


def test_width_differs_between_files(tmp_path, capsys):
    d = tmp_path / "in"
    write_files(d, rows=(500,))
    write_files(tmp_path / "b", rows=(500,), dim=16)
    (tmp_path / "b" / "shard-0.parquet").rename(d / "shard-1.parquet")
    assert_fails(capsys, args(d, tmp_path / "out"), "width differs", "shard-0.parquet has 32", "shard-1.parquet has 16")
    assert not (tmp_path / "out").exists()


def test_width_differs_between_rows(tmp_path, capsys, address):
    d = tmp_path / "in"
    d.mkdir()
    rows = [
        {"id": i, "embedding": list(np.random.default_rng(i).normal(size=8)), "quality": 0.1 * i} for i in range(300)
    ]
    rows[123]["embedding"] = rows[123]["embedding"][:7]
    (d / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    assert_fails(capsys, args(d, out, scheduler=address), "a.jsonl", "'embedding'", "width differs", "row 123")
    assert_no_output(out)


@pytest.mark.parametrize("what", ["nan-embedding", "inf-quality", "zero-norm"])
def test_bad_values(tmp_path, capsys, address, what):
    def mutate(t):
        if what == "inf-quality":
            q = t.column("quality").to_numpy().copy()
            q[77] = np.inf
            return t.set_column(t.schema.get_field_index("quality"), "quality", pa.array(q))
        E = _emb(t)
        E[77] = np.nan if what == "nan-embedding" else 0.0
        return _with_embedding(t, E)

    d = _one_file(tmp_path, mutate)
    out = tmp_path / "out"
    col = "'quality'" if what == "inf-quality" else "'embedding'"
    fix = "zero-norm" if what == "zero-norm" else ("inf" if what == "inf-quality" else "NaN")
    assert_fails(capsys, args(d, out, scheduler=address), "f.parquet", col, "row 77", fix, "drop")
    assert_no_output(out)


def test_empty_input(tmp_path, capsys):
    d = tmp_path / "in"
    d.mkdir()
    assert_fails(capsys, args(d, tmp_path / "out"), "empty input")
    e = _one_file(tmp_path / "x", lambda t: t.slice(0, 0))
    assert_fails(capsys, args(e, tmp_path / "out"), "empty input", "0 rows")
    assert not (tmp_path / "out").exists()


def test_empty_partition_is_skipped(tmp_path, capsys, address):
    d = tmp_path / "in"
    write_files(d, rows=(600,))
    t = pq.read_table(d / "shard-0.parquet")
    pq.write_table(t.slice(0, 0), d / "shard-9.parquet")
    out = tmp_path / "out"
    assert main(args(d, out, scheduler=address)) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["totals"]["rows_out"] == 60 and m["input"]["empty_files"] == ["shard-9.parquet"]


def test_duplicate_ids(tmp_path, capsys, address):
    d = _one_file(tmp_path, lambda t: t.set_column(0, "id", pa.array(np.r_[np.arange(599), 5])))
    out = tmp_path / "out"
    assert_fails(
        capsys,
        args(d, out, scheduler=address),
        "duplicate ids",
        "5",
        "f.parquet row 5",
        "row 599",
        "--set",
        "dedupe_ids=true",
    )
    assert not out.exists()


@pytest.mark.parametrize("ratio", ["0", "1", "1.5", "-0.1"])
def test_ratio_outside_unit_interval(corpus, tmp_path, capsys, ratio):
    assert_fails(
        capsys,
        args(corpus, tmp_path / "out", "--ratio", ratio),
        "ratio (--ratio) must be a number between 0 and 1, both excluded",
        ratio,
    )


def test_budget_larger_than_partition(corpus, tmp_path, capsys):
    assert_fails(
        capsys,
        args(corpus, tmp_path / "out", "--budget", "1200", "--prune", "0"),
        "shard-2.parquet (rows 0-1000)",
        "budget 1200",
        "1000 rows",
        "--budget",
    )
    assert_fails(
        capsys, args(corpus, tmp_path / "out", "--budget", "800", "--prune", "0.5"), "left after pruning", "--prune"
    )
    assert not (tmp_path / "out").exists()


def test_unreadable_file(tmp_path, capsys):
    d = tmp_path / "in"
    write_files(d, rows=(300,))
    (d / "broken.parquet").write_bytes(b"this is not parquet at all")
    assert_fails(capsys, args(d, tmp_path / "out"), "broken.parquet", "not a readable Parquet file")
    (d / "broken.parquet").unlink()
    (d / "notes.csv").write_text("a,b\n")
    assert_fails(capsys, args(d, tmp_path / "out"), "notes.csv", "not a Parquet or JSONL file")
    (d / "notes.csv").unlink()
    (d / "bad.jsonl.gz").write_bytes(b"not gzip")
    assert_fails(capsys, args(d, tmp_path / "out"), "bad.jsonl.gz", "not a readable JSONL file")
    assert not (tmp_path / "out").exists()


def test_output_not_writable(corpus, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert_fails(capsys, args(corpus, blocker / "out"), "not writable", str(blocker))


def test_output_holding_other_data_refused(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    assert_fails(capsys, args(corpus, out, "--overwrite"), "not written by datamask", "precious.txt")
    assert (out / "precious.txt").read_text() == "keep me"


def test_scheduler_not_answering(corpus, tmp_path, capsys):
    out = tmp_path / "out"
    assert_fails(
        capsys,
        args(corpus, out, "--connect-timeout", "2", scheduler="tcp://127.0.0.1:9"),
        "tcp://127.0.0.1:9",
        "no Dask scheduler answers",
        code=3,
    )
    assert_fails(capsys, args(corpus, out, "--scheduler-file", tmp_path / "nope.json"), "nope.json", code=3)
    assert not out.exists()


def test_gpu_without_cuda_is_one_line(corpus, tmp_path, capsys):
    from datamask.core.backend import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    assert_fails(capsys, args(corpus, tmp_path / "out", "--device", "gpu"), "no CUDA GPU", "--device cpu")
