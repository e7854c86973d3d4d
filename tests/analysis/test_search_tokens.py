"""``datamask search --tokens``: every trial's and every verification reference's selection
keeps each split's share of the corpus's budget, the shares ``datamask select --tokens`` gives
(the same rows and tokens as ``select`` of the same recipe), and ``recipe.yaml`` keeps it too."""

from __future__ import annotations

import json
from pathlib import Path

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

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"
PROXY = "vocab_size=512,d_model=32,n_layers=2,n_heads=2,d_ff=64,seq_len=64,batch_size=8,lr=1e-2,eval_tokens=4000"
SPLIT = 200
SHARE = 0.25  # of the corpus's tokens


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The repository's text corpus without 30 prose rows (the evaluation set: no leaks), with a
    ``token_count`` column (as FineWeb has) and the budget, a quarter of its tokens."""
    root = tmp_path_factory.mktemp("search_tokens")
    df = pd.DataFrame([json.loads(line) for line in CORPUS.read_text().splitlines()])
    held = df.index[df.kind == "prose"][:30]
    (root / "eval").mkdir()
    df.loc[held, ["id", "text"]].to_parquet(root / "eval" / "eval.parquet")
    df = df.drop(index=held).reset_index(drop=True)
    E = hashed_embeddings(df.text.tolist())
    lengths = np.array([len(t.split()) for t in df.text], dtype=np.int64)
    t = pa.table(
        {
            "id": df.id.to_numpy(),
            "text": df.text.tolist(),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), E.shape[1]),
            "quality": (df.good.to_numpy() + np.random.default_rng(1).uniform(0, 0.5, len(df))).astype(np.float32),
            "token_count": lengths,
        }
    )
    (root / "in").mkdir()
    pq.write_table(t, root / "in" / "corpus.parquet")
    return {"root": root, "in": root / "in", "eval": root / "eval", "lengths": lengths, "T": int(SHARE * lengths.sum())}


@pytest.fixture(scope="module")
def searched(corpus, address):
    from distributed import Client

    import datamask.dask as dmd

    out = corpus["root"] / "search"
    with Client(address, set_as_default=False) as client:
        m = dmd.search(
            corpus["in"], out, corpus["eval"], client=client, tokens=corpus["T"], trials=4, verify=1, steps=30,
            split_size=SPLIT, proxy_tokens=1024, proxy_options=PROXY, candidates=500, regressor="quadratic",
            no_report=True,
        )  # fmt: skip
    return out, m


def _selections(out) -> pd.DataFrame:
    """Every selection the search trained on: the trials' and the verified recipes'."""
    t = pd.read_parquet(out / "trials.parquet").assign(name=lambda f: "trial-" + f.trial.astype(str))
    v = pd.read_parquet(out / "verify.parquet")
    return pd.concat([t, v], ignore_index=True)[["name", "recipe", "rows", "selected_tokens", "leaks_removed"]]


def _shares(corpus) -> list:
    n = corpus["lengths"]
    per_split = [int(n[lo : lo + SPLIT].sum()) for lo in range(0, len(n), SPLIT)]
    return [corpus["T"] * s // sum(per_split) for s in per_split]


def test_every_selection_keeps_the_token_budget_and_the_space_leaves_prune_and_ratio_out(searched, corpus):
    out, m = searched
    assert m["space"] == "lam=0:1,diversity=pairwise|facility|disf"  # no ratio, no prune: their cap is per split
    sel = _selections(out)
    assert set(sel.name) >= {"trial-0", "chosen", "default", "topk", "random"}
    assert (sel.leaks_removed == 0).all()
    T, longest, shares = corpus["T"], int(corpus["lengths"].max()), _shares(corpus)
    assert len(shares) == 2 and sum(shares) <= T
    # each split keeps at most its share and is within one document of it (docs/tokens.md)
    for r in sel.itertuples():
        assert sum(shares) - len(shares) * longest < r.selected_tokens <= sum(shares), r


def _select(corpus, address, tmp_path, name, recipe) -> dict:
    flags = [f"--{k}={v}" for k, v in recipe.items()]
    out = tmp_path / name
    argv = ["select", str(corpus["in"]), str(out), f"--tokens={corpus['T']}", "--steps=30", f"--split-size={SPLIT}"]
    assert main([*argv, *flags, f"--scheduler={address}", "--quiet", "--no-report"]) == 0
    return json.loads((out / "manifest.json").read_text())["totals"]


@pytest.mark.parametrize("name", ["trial-0", "topk", "default"])
def test_a_selection_is_what_select_keeps_at_the_same_budget(searched, corpus, address, tmp_path, name):
    out, _ = searched
    row = _selections(out).set_index("name").loc[name]
    got = _select(corpus, address, tmp_path, name, json.loads(row.recipe))
    assert got["tokens"]["budget"] == corpus["T"] and got["tokens"]["source"] == "column token_count"
    assert (got["rows_out"], got["tokens"]["tokens_out"]) == (row.rows, row.selected_tokens)


def test_recipe_yaml_keeps_the_budget_as_the_recommended_recipe_did(searched, corpus, address, tmp_path):
    out, m = searched
    assert f"tokens: {corpus['T']}" in (out / "recipe.yaml").read_text()
    applied = tmp_path / "applied"
    argv = ["run", str(out / "recipe.yaml"), "--set", f"output={applied}", "--set", f"scheduler={address}"]
    assert main([*argv, "--quiet", "--no-report"]) == 0
    got = json.loads((applied / "manifest.json").read_text())["totals"]
    row = _selections(out).set_index("name").loc[m["recommended"]["name"]]
    assert (got["rows_out"], got["tokens"]["tokens_out"]) == (row.rows, row.selected_tokens)
