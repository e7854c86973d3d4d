"""The text stages through the CLI on a real LocalCluster (2 workers): embed -> score -> dedup
-> select from raw JSONL (workflows/raw_jsonl.yaml), resume, skipped-text counts, and bad input (exit
code, one line, no partial output)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from tests.helpers.pipeline_data import assert_fails, assert_no_output

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "corpus.jsonl"
WORKFLOW = ROOT / "workflows" / "raw_jsonl.yaml"
ROWS = [json.loads(line) for line in CORPUS.read_text().splitlines()]


def _manifest(out):
    return json.loads((Path(out) / "manifest.json").read_text())


def _stamps(d):
    return {f.name: (f.stat().st_mtime_ns, f.stat().st_ino) for f in sorted(Path(d).glob("*.parquet"))}


def _run_workflow(out, address, quiet=True):
    return main(
        [
            "run",
            str(WORKFLOW),
            "--set",
            f"input={CORPUS}",
            "--set",
            f"output={out}",
            "--set",
            f"scheduler={address}",
            "--set",
            "select.solver_params.steps=30",
        ]
        + (["--quiet"] if quiet else [])
    )


@pytest.fixture(scope="module")
def chained(tmp_path_factory, address):
    out = tmp_path_factory.mktemp("wf") / "run"
    assert _run_workflow(out, address) == 0
    return out


def test_raw_jsonl_workflow_end_to_end(chained):
    good = {r["id"]: r["good"] for r in ROWS}
    # embed: every text embedded, unit-norm 384-d float32 fixed-size lists, one file per split
    m = _manifest(chained / "embed")
    assert m["stage"] == "embed" and m["totals"]["rows_in"] == m["totals"]["rows_out"] == len(ROWS)
    assert m["totals"]["skipped_texts"] == 0 and m["embed"]["dim"] == 384
    assert [p["rows_in"] for p in m["splits"]] == [113, 114, 113]  # split_size 120
    emb = pq.read_table(chained / "embed" / "data")
    assert emb.schema.field("embedding").type == pa.list_(pa.float32(), 384)
    E = emb.column("embedding").combine_chunks().flatten().to_numpy().reshape(len(ROWS), 384)
    assert np.allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-4)
    # score: quality (float32) and n_tokens (int32) next to the input columns; good docs score higher
    sc = pq.read_table(chained / "score" / "data").to_pandas()
    assert str(sc["quality"].dtype) == "float32" and str(sc["n_tokens"].dtype) == "int32"
    assert (sc["n_tokens"] > 0).all()
    g = sc["id"].map(good)
    assert sc.loc[g == 1, "quality"].mean() > sc.loc[g == 0, "quality"].mean() + 0.2
    ms = _manifest(chained / "score")
    assert ms["score"]["weights"] == {"quality_heuristics": 1.0} and ms["totals"]["unusable_texts"] == 0
    assert (chained / "score" / "_datamask" / "stats.json").exists()
    # dedup: the same groups as the in-memory Deduplicator on the scored rows, the best copy kept
    from datamask.dedup import Deduplicator

    md = _manifest(chained / "dedup")
    d = Deduplicator("exact,fuzzy").fit(sc["text"].tolist(), quality=sc["quality"].to_numpy())
    kept = set(pq.read_table(chained / "dedup" / "data").column("id").to_pylist())
    assert kept == set(sc["id"][d.keep_mask_]) and md["totals"]["rows_out"] == len(kept) < len(ROWS)
    assert md["dedup"]["kinds"] == d.stats_
    # select: 20% of each deduplicated split, mostly the good documents, embeddings carried through
    sel = pq.read_table(chained / "select" / "data")
    msel = _manifest(chained / "select")
    assert msel["totals"]["rows_in"] == len(kept)
    assert sel.num_rows == sum(round(0.2 * p["rows_in"]) for p in msel["splits"])
    assert (chained / "select" / "report" / "index.html").exists()  # as `datamask select` writes it
    frac_good = np.mean([good[i] for i in sel.column("id").to_pylist()])
    assert frac_good > 0.8 > np.mean(list(good.values()))
    assert sel.schema.field("embedding").type == pa.list_(pa.float32(), 384)


def test_workflow_rerun_resumes_every_stage(chained, address, capsys):
    before = {s: _stamps(chained / s / "data") for s in ("embed", "score", "dedup", "select")}
    capsys.readouterr()
    assert _run_workflow(chained, address, quiet=False) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("datamask: report ")  # the select stage's report, as after `datamask select`
    # each stage's summary line (select's is followed by its side-by-side table and optimiser line)
    lines = [ln for ln in lines[:-1] if re.match(r"datamask: (embedded|scored|deduplicated|selected) ", ln)]
    assert [ln.split()[1] for ln in lines] == ["embedded", "scored", "deduplicated", "selected"]
    assert all("(0 computed, 3 resumed)" in ln for ln in lines), lines
    for s in ("embed", "score", "dedup", "select"):
        assert _stamps(chained / s / "data") == before[s]


def _small_corpus(tmp_path, n=40):
    rows = [dict(r) for r in ROWS[:n]]
    rows[3]["text"] = None
    rows[17]["text"] = ""
    rows[25]["text"] = "   \n "
    p = tmp_path / "raw" / "small.jsonl"
    p.parent.mkdir()
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_empty_texts_counted_and_partial_resume(tmp_path, address):
    src = _small_corpus(tmp_path)
    common = ["--split-size", "20", "--scheduler", address, "--quiet"]
    emb = tmp_path / "emb"
    assert main(["embed", str(src), str(emb), *common]) == 0
    m = _manifest(emb)
    assert m["totals"]["skipped_texts"] == 3 and m["totals"]["rows_out"] == 37
    assert [p["skipped_texts"] for p in m["splits"]] == [2, 1]
    assert sorted(set(range(40)) - set(pq.read_table(emb / "data").column("id").to_pylist())) == [3, 17, 25]

    sc = tmp_path / "score"
    assert main(["score", str(src), str(sc), "--heuristics", *common]) == 0
    ms = _manifest(sc)
    assert ms["totals"]["unusable_texts"] == 3 and ms["totals"]["rows_out"] == 40
    t = pq.read_table(sc / "data").to_pandas().set_index("id")
    assert (t.loc[[3, 17, 25], "quality_heuristics"] == 0).all() and (t.loc[[3, 17, 25], "n_tokens"] == 0).all()

    # kill one finished split of each stage: a rerun recomputes it only, with the stored stats
    stats = sc / "_datamask" / "stats.json"
    stats_stamp = stats.stat().st_mtime_ns
    for out in (emb, sc):
        rec = sorted((out / "_datamask" / "parts").glob("*.json"))[1]
        kept = _stamps(out / "data")
        lost = json.loads(rec.read_text())["files"][0]
        old = pq.read_table(out / "data" / lost)
        rec.unlink()
        (out / "data" / lost).unlink()
        (out / "manifest.json").unlink()
        kept.pop(lost)
        argv = ["embed", str(src), str(emb)] if out == emb else ["score", str(src), str(sc), "--heuristics"]
        assert main([*argv, *common]) == 0
        m = _manifest(out)
        assert (m["totals"]["computed_this_run"], m["totals"]["resumed"]) == (1, 1)
        now = _stamps(out / "data")
        assert {k: now[k] for k in kept} == kept
        new = pq.read_table(out / "data" / lost)
        if out == sc:
            assert new.equals(old)
        else:  # same texts, same model: same vectors up to float noise
            a = old.column("embedding").combine_chunks().flatten().to_numpy()
            b = new.column("embedding").combine_chunks().flatten().to_numpy()
            assert np.allclose(a, b, atol=1e-3)
    assert stats.stat().st_mtime_ns == stats_stamp


# ---------------------------------------------------------------------- bad input
def _assert_fails(capsys, argv, *needles, code=2):
    """`fail` with --quiet appended (the text stages' progress bars write to stderr)."""
    return assert_fails(capsys, list(argv) + ["--quiet"], *needles, code=code)


def _parquet(tmp_path, **cols):
    d = tmp_path / "in"
    d.mkdir(exist_ok=True)
    pq.write_table(pa.table(cols), d / "f.parquet")
    return d


@pytest.fixture
def texts():
    return [r["text"] for r in ROWS[:30]]


def test_missing_text_column(tmp_path, capsys, address, texts):
    d = _parquet(tmp_path, id=list(range(30)), body=texts)
    out = tmp_path / "out"
    _assert_fails(
        capsys,
        ["embed", d, out, "--scheduler", address],
        "f.parquet",
        "missing column 'text'",
        "--set text_column=NAME",
    )
    assert_no_output(out)
    _assert_fails(capsys, ["score", d, out, "--heuristics", "--scheduler", address], "missing column 'text'")
    assert_no_output(out)


def test_non_utf8_bytes(tmp_path, capsys, address, texts):
    raw = tmp_path / "raw"
    raw.mkdir()
    lines = [json.dumps({"id": i, "text": t}).encode() for i, t in enumerate(texts)]
    lines[11] = b'{"id": 11, "text": "caf\xe9 au lait"}'
    (raw / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "out"
    _assert_fails(capsys, ["embed", raw, out, "--scheduler", address], "a.jsonl", "utf-8")
    assert_no_output(out)
    # Parquet binary text column with a bad row: found on the worker, named by file and row
    b = [t.encode() for t in texts]
    b[7] = b"caf\xe9 au lait"
    d = _parquet(tmp_path, id=list(range(30)), text=pa.array(b, pa.binary()))
    _assert_fails(capsys, ["score", d, out, "--heuristics", "--scheduler", address], "f.parquet", "row 7", "UTF-8")
    assert_no_output(out)


def test_bad_model_paths(tmp_path, capsys, address, texts):
    d = _parquet(tmp_path, id=list(range(30)), text=texts)
    out = tmp_path / "out"
    _assert_fails(capsys, ["embed", d, out, "--model", tmp_path / "nowhere", "--scheduler", address], "does not exist")
    assert_no_output(out)
    empty = tmp_path / "empty-model"
    empty.mkdir()
    _assert_fails(
        capsys, ["embed", d, out, "--model", empty, "--scheduler", address], "not a sentence-transformers model"
    )
    assert_no_output(out)
    # (a folder with config files that do not load: tests/test_features_embed.py, same one-line error)


def test_fasttext_file_not_a_model(tmp_path, capsys, address, texts):
    d = _parquet(tmp_path, id=list(range(30)), text=texts)
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"this is not a fastText model at all")
    out = tmp_path / "out"
    _assert_fails(
        capsys, ["score", d, out, "--fasttext", bad, "--scheduler", address], "model.bin", "not a fastText model"
    )
    assert_no_output(out)


def test_score_column_with_nan(tmp_path, capsys, address, texts):
    s = np.linspace(0, 1, 30)
    s[7] = np.nan
    d = _parquet(tmp_path, id=list(range(30)), text=texts, edu=s)
    out = tmp_path / "out"
    _assert_fails(
        capsys,
        ["score", d, out, "--scores", "edu:1", "--scheduler", address],
        "f.parquet",
        "'edu'",
        "row 7",
        "fill or drop",
    )
    assert_no_output(out)


def test_weights_name_absent_columns(tmp_path, capsys, address, texts):
    d = _parquet(tmp_path, id=list(range(30)), text=texts, edu=np.linspace(0, 1, 30))
    out = tmp_path / "out"
    _assert_fails(
        capsys,
        ["score", d, out, "--scores", "edu:1,dclm:2", "--scheduler", address],
        "f.parquet",
        "missing column 'dclm'",
        "--scores",
    )
    assert_no_output(out)
    _assert_fails(capsys, ["score", d, out, "--scores", "edu:x", "--scheduler", address], "edu", "not a number")
    _assert_fails(capsys, ["score", d, out, "--scheduler", address], "nothing to score")
    assert_no_output(out)
