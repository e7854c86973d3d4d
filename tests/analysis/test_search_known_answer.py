"""A search with a known answer: the high-quality rows of the input are near-copies of three
documents, so top-k by quality trains the proxy on three documents over and over, while the
evaluation set is other documents of every topic. A real search (Dask cluster, tiny proxies)
must find a recipe that beats top-k beyond noise, and hand over one no reference beats."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from datamask.cli import main  # noqa: E402
from tests.helpers.text_embed import hashed_embeddings  # noqa: E402

pytestmark = pytest.mark.slow

TOPICS, VARIED, COPIES, EVAL = 8, 240, 60, 40
RATIO = COPIES / (VARIED + COPIES)  # top-k by quality keeps exactly the near-copies
PROXY = "vocab_size=512,d_model=32,n_layers=2,n_heads=2,d_ff=64,seq_len=64,batch_size=8,lr=1e-2,eval_tokens=4000"
FUNCTION_WORDS = ["the", "of", "and", "a", "to", "in", "is", "that", "for", "it", "as", "with", "on", "by"]


def _vocabulary(rng, n):
    letters = np.array(list("abcdefghijklmnoprstuvwy"))
    return ["".join(rng.choice(letters, rng.integers(3, 9))) for _ in range(n)]


def _document(rng, vocab, n_words):
    """Words of one topic (Zipf-like frequencies) with the language's function words between them."""
    p = 1.0 / np.arange(1, len(vocab) + 1)
    words = rng.choice(vocab, n_words, p=p / p.sum())
    glue = rng.choice(FUNCTION_WORDS, n_words)
    return " ".join(f"{g} {w}" if k % 2 else w for k, (w, g) in enumerate(zip(words, glue))) + "."


def _near_copy(rng, text, vocab, changes=3):
    words = text.split()
    for i in rng.choice(len(words), changes, replace=False):
        words[i] = rng.choice(vocab)
    return " ".join(words)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    rng = np.random.default_rng(0)
    vocabs = [_vocabulary(rng, 150) for _ in range(TOPICS)]
    varied = [_document(rng, vocabs[i % TOPICS], int(rng.integers(50, 110))) for i in range(VARIED)]
    masters = [_document(rng, vocabs[i], 100) for i in range(3)]
    copies = [_near_copy(rng, masters[i % 3], vocabs[i % 3]) for i in range(COPIES)]
    evals = [_document(rng, vocabs[i % TOPICS], 100) for i in range(EVAL)]
    texts = varied + copies
    quality = np.concatenate([rng.uniform(0.0, 0.5, VARIED), rng.uniform(0.8, 1.0, COPIES)]).astype(np.float32)
    E = hashed_embeddings(texts)  # near-copies share their words: their embeddings are near one another
    root = tmp_path_factory.mktemp("planted")
    (root / "in").mkdir()
    (root / "eval").mkdir()
    table = pa.table(
        {
            "id": np.arange(len(texts)),
            "text": texts,
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), E.shape[1]),
            "quality": quality,
        }
    )
    pq.write_table(table, root / "in" / "corpus.parquet")
    pd.DataFrame({"id": np.arange(EVAL), "text": evals}).to_parquet(root / "eval" / "eval.parquet")
    return root


@pytest.fixture(scope="module")
def searched(planted, address):
    """``datamask.dask.search`` on the shared cluster with the default space (ratio fixed)."""
    from distributed import Client

    import datamask.dask as dmd

    out = planted / "search"
    with Client(address, set_as_default=False) as client:
        m = dmd.search(
            planted / "in", out, planted / "eval", client=client, trials=6, verify=3, ratio=RATIO, steps=30,
            proxy_tokens=8192, proxy_options=PROXY, candidates=2000, regressor="quadratic", no_report=True,
        )  # fmt: skip
    return out, m


def test_the_chosen_recipe_beats_topk_beyond_noise_and_nothing_beats_the_recommended_one(searched):
    out, m = searched
    s = json.loads((out / "search.json").read_text())
    assert s["space"] == f"lam=0:1,diversity=pairwise|facility|disf,prune=0:{1 - RATIO:g}"
    assert m["recommended"] == s["recommended"]  # datamask.dask.search returns what search.json holds
    d = s["verified"]["differences"]["topk"]
    assert d["mean"] < -2 * d["se"] and "larger than the noise" in d["words"], d  # chosen lower than top-k
    v = pd.read_parquet(out / "verify.parquet").pivot_table(index="seed", columns="name", values="loss")
    rec = s["recommended"]["name"]
    for other in v.columns:
        diff = v[rec] - v[other]  # recommended minus each verified recipe, paired by seed
        assert diff.mean() <= 2 * diff.std(ddof=1) / np.sqrt(len(diff)) + 1e-12, (rec, other, diff.tolist())
    assert s["recommended"]["why"] and (rec == "chosen") == (s["recommended"]["recipe"] == s["chosen"])
    if rec != "chosen":  # the user reads it first
        assert s["warnings"][0].startswith(f"recipe.yaml applies {rec}")


@pytest.mark.parametrize("name", ["chosen", "default", "topk", "random"])
def test_recipe_yaml_applies_each_verified_recipe_as_verified(searched, address, tmp_path, name):
    """Whichever recipe is recommended, ``datamask run recipe.yaml`` selects the rows its
    verification trained on."""
    import yaml

    from datamask.analysis.search import SearchConfig
    from datamask.analysis.search.outputs import write_recipe
    from datamask.analysis.search.verify import verification_recipes

    out, m = searched
    s = json.loads((out / "search.json").read_text())
    cfg = SearchConfig(**json.loads((out / "manifest.json").read_text())["config"])
    recipe = verification_recipes(cfg.method, s["chosen"], cfg.prune)[name]
    here = tmp_path / "search"
    here.mkdir()
    write_recipe(cfg, here, dict(s, recommended={"name": name, "recipe": recipe, "why": "test"}))
    wf = yaml.safe_load((here / "recipe.yaml").read_text())
    assert wf["method"] == recipe.get("method", "datamask")
    applied = tmp_path / "applied"
    argv = ["run", str(here / "recipe.yaml"), "--set", f"output={applied}", "--set", f"scheduler={address}"]
    assert main([*argv, "--quiet", "--no-report"]) == 0
    rows = pq.read_table(applied / "data", columns=["id"]).num_rows
    verified = pd.read_parquet(out / "verify.parquet")
    assert rows == verified.loc[verified.name == name, "rows"].iloc[0]
