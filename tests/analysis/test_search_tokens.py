"""``datamask search --tokens`` and ``--token-ratio``: every trial's and every verification
reference's selection keeps each split's share of the corpus's budget, the shares ``datamask
select`` gives (the same rows and tokens as ``select`` of the same recipe), ``search.json`` and
``recipe.yaml`` keep the budget, and a ``prune`` that leaves a split fewer tokens than its share is
refused before anything runs. One corpus; a search per flag (the ratio's also searches ``prune``)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from datamask.analysis.search.budget import PRUNE_GRID  # noqa: E402
from datamask.cli import main  # noqa: E402
from datamask.estimator.estimator import tokens_after_pruning  # noqa: E402
from tests.helpers.pipeline_data import assert_fails  # noqa: E402
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
    quality = t.column("quality").to_numpy()
    c = {"root": root, "in": root / "in", "eval": root / "eval", "lengths": lengths, "quality": quality}
    c["T"] = int(np.floor(SHARE * lengths.sum()))  # what --token-ratio SHARE comes to, as --tokens
    c["room"] = max(g for g in PRUNE_GRID if all(share < left for share, left in _left(c, g)))
    return c


def _splits(n: int) -> list:
    """The planned splits' rows: ``--split-size`` rows at most, as even as can be (310: 155 + 155)."""
    return np.array_split(np.arange(n), -(-n // SPLIT))


def _left(corpus, p) -> list:
    """(share, tokens pruning ``p`` leaves) of every split: the fit needs share < left."""
    n, q = corpus["lengths"], corpus["quality"]
    return [(s, tokens_after_pruning(n[i], q[i], [p])[0]) for i, s in zip(_splits(len(n)), _shares(corpus))]


def _search(corpus, address, name, **settings):
    from distributed import Client

    import datamask.dask as dmd

    out = corpus["root"] / name
    with Client(address, set_as_default=False) as client:
        m = dmd.search(corpus["in"], out, corpus["eval"], client=client, trials=4, verify=1, split_size=SPLIT, proxy_tokens=1024, proxy_options=PROXY, candidates=500, regressor="quadratic", no_report=True, **settings, solver_params=dict(steps=30))  # fmt: skip
    return out, m


@pytest.fixture(scope="module")
def searched(corpus, address):
    return _search(corpus, address, "search", tokens=corpus["T"])


@pytest.fixture(scope="module")
def searched_ratio(corpus, address):
    """``--token-ratio SHARE`` with ``prune`` searched up to the largest that fits every split's share."""
    return _search(corpus, address, "search_ratio", token_ratio=SHARE, space=f"lam=0:1,prune=0:{corpus['room']:g}")


@pytest.fixture(params=["tokens", "token_ratio"])
def budgeted(request):
    """Each search: (its flag, OUTPUT, manifest)."""
    return (request.param, *request.getfixturevalue("searched" if request.param == "tokens" else "searched_ratio"))


def _selections(out) -> pd.DataFrame:
    """Every selection the search trained on: the trials' and the verified recipes'."""
    t = pd.read_parquet(out / "trials.parquet").assign(name=lambda f: "trial-" + f.trial.astype(str))
    v = pd.read_parquet(out / "verify.parquet")
    return pd.concat([t, v], ignore_index=True)[["name", "recipe", "rows", "selected_tokens", "leaks_removed"]]


def _shares(corpus) -> list:
    n = corpus["lengths"]
    per_split = [int(n[i].sum()) for i in _splits(len(n))]
    return [corpus["T"] * s // sum(per_split) for s in per_split]


def test_every_selection_keeps_the_token_budget_and_the_space_leaves_prune_and_ratio_out(searched, corpus):
    out, m = searched
    assert m["space"] == "lam=0:1,diversity=pairwise|facility|disf"  # no ratio, no prune: their cap is per split
    _assert_within_budget(_selections(out), corpus)


def test_token_ratio_keeps_the_budget_it_comes_to_as_tokens_does(searched_ratio, searched, corpus):
    out, m = searched_ratio
    assert m["space"] == f"lam=0:1,prune=0:{corpus['room']:g}" and 0.3 < corpus["room"] < 0.9
    sel = _selections(out)
    _assert_within_budget(sel, corpus)
    pruned = sel.recipe.map(lambda r: json.loads(r).get("prune", 0.0))
    assert pruned.max() > corpus["room"] / 2  # (4 Sobol points: 2 in each half) and each kept its share
    # floor(SHARE * corpus tokens) is --tokens T: the references (the same recipes) keep the same rows
    by_tokens, by_ratio = _selections(searched[0]).set_index("name"), sel.set_index("name")
    for name in ("default", "topk", "random"):
        assert by_ratio.loc[name].tolist() == by_tokens.loc[name].tolist(), name


def _assert_within_budget(sel, corpus):
    assert set(sel.name) >= {"trial-0", "chosen", "default", "topk", "random"}
    assert (sel.leaks_removed == 0).all()
    T, longest, shares = corpus["T"], int(corpus["lengths"].max()), _shares(corpus)
    assert len(shares) == 2 and sum(shares) <= T
    # each split keeps at most its share and is within one document of it (docs/tokens.md)
    for r in sel.itertuples():
        assert sum(shares) - len(shares) * longest < r.selected_tokens <= sum(shares), r


def test_search_json_records_the_budget_as_select_does(budgeted, corpus):
    flag, out, m = budgeted
    want = {"budget": corpus["T"], "corpus_tokens": int(corpus["lengths"].sum()), "covers_corpus": False}
    want["source"] = "column token_count"
    assert m["tokens"] == want and json.loads((out / "search.json").read_text())["tokens"] == want
    given = json.loads((out / "manifest.json").read_text())["config"]
    assert (given["tokens"], given["token_ratio"]) == ((corpus["T"], None) if flag == "tokens" else (None, SHARE))


def _select(corpus, address, tmp_path, name, recipe) -> dict:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in recipe.items()]
    out = tmp_path / name
    argv = [
        "select",
        str(corpus["in"]),
        str(out),
        f"--tokens={corpus['T']}",
        "--set",
        "solver_params.steps=30",
        f"--split-size={SPLIT}",
    ]
    assert main([*argv, *flags, f"--scheduler={address}", "--quiet", "--no-report"]) == 0
    return json.loads((out / "manifest.json").read_text())["totals"]


@pytest.mark.parametrize("name", ["trial-0", "topk", "default"])
def test_a_selection_is_what_select_keeps_at_the_same_budget(searched, corpus, address, tmp_path, name):
    out, _ = searched
    row = _selections(out).set_index("name").loc[name]
    got = _select(corpus, address, tmp_path, name, json.loads(row.recipe))
    assert got["tokens"]["budget"] == corpus["T"] and got["tokens"]["source"] == "column token_count"
    assert (got["rows_out"], got["tokens"]["tokens_out"]) == (row.rows, row.selected_tokens)


def test_recipe_yaml_keeps_the_budget_as_the_recommended_recipe_did(budgeted, corpus, address, tmp_path):
    flag, out, m = budgeted
    yaml_text = (out / "recipe.yaml").read_text()
    kept = {"tokens": f"tokens: {corpus['T']}", "token_ratio": f"token_ratio: {SHARE}"}  # the flag as given
    assert kept[flag] in yaml_text and not re.search(
        r"^(ratio|budget|" + ("token_ratio" if flag == "tokens" else "tokens") + "):", yaml_text, re.M
    )
    applied = tmp_path / "applied"
    argv = ["run", str(out / "recipe.yaml"), "--set", f"output={applied}", "--set", f"scheduler={address}"]
    assert main([*argv, "--quiet", "--no-report"]) == 0
    got = json.loads((applied / "manifest.json").read_text())["totals"]
    assert got["tokens"]["budget"] == corpus["T"]
    row = _selections(out).set_index("name").loc[m["recommended"]["name"]]
    assert (got["rows_out"], got["tokens"]["tokens_out"]) == (row.rows, row.selected_tokens)


def _refuse(corpus, address, tmp_path, capsys, *flags, needles=()):
    out = tmp_path / "refused"
    argv = ["search", corpus["in"], out, "--eval", corpus["eval"], f"--split-size={SPLIT}", *flags]
    line = assert_fails(capsys, [*argv, f"--scheduler={address}", "--quiet", "--no-report"], *needles)
    assert not out.exists()  # nothing prepared, trained or written
    return float(re.search(r"(?:keep prune <=|lower --prune to) ([0-9.]+)", line)[1])


def test_a_prune_that_leaves_a_split_fewer_tokens_than_its_share_is_refused_before_the_search(
    corpus, address, tmp_path, capsys
):
    """The space's highest prune, then the base recipe's --prune: one line naming the option, its
    value, the split and the largest prune (of hundredths) that fits every split's share."""
    T, room = corpus["T"], corpus["room"]
    head = "space 'prune=0.1:0.95': pruning 0.95 of the rows of "
    got = _refuse(
        corpus, address, tmp_path, capsys, "--token-ratio=0.25", "--space=lam=0:1,prune=0.1:0.95",
        needles=(head, f"-token share of --token-ratio 0.25 ({T:,} tokens)", f"keep prune <= {room:g} (e.g. prune=0.1:{room:g})"),
    )  # fmt: skip
    assert got == room and not all(share < left for share, left in _left(corpus, round(room + 0.01, 2)))
    head = "--prune 0.95 (the default recipe's, verified beside the chosen one): pruning 0.95 of the rows of "
    needles = (head, f"-token share of --tokens {T}; lower --prune to {room:g} or the token budget")
    assert (
        _refuse(
            corpus,
            address,
            tmp_path,
            capsys,
            f"--tokens={T}",
            "--prune=0.95",
            "--space=lam=0:1,prune=0:0.2",
            needles=needles,
        )
        == room
    )
    needles = ("--prune 0.95: pruning 0.95",)  # the trials' own prune when the space has none
    assert _refuse(corpus, address, tmp_path, capsys, f"--tokens={T}", "--prune=0.95", needles=needles) == room


@pytest.fixture(scope="module")
def searched_tokenizer(corpus, address):
    """``--tokenizer PATH`` over an input with a ``token_count`` column: the budget counts the
    tokenizer's tokens (not the column's words) and the proxies train in that tokenizer."""
    from datamask.analysis.proxy_lm.tokenizer import train_bpe

    texts = pq.read_table(corpus["in"] / "corpus.parquet").column("text").to_pylist()
    path = corpus["root"] / "tokenizer.json"
    train_bpe(texts, 400).save(path)
    counts = np.array([len(e.ids) for e in train_bpe(texts, 400).tok.encode_batch(texts, add_special_tokens=False)])
    T = int(SHARE * counts.sum())
    out, m = _search(corpus, address, "search_tokenizer", tokens=T, tokenizer=str(path))
    return out, m, path, T, counts


def test_a_tokenizer_counts_the_budget_in_the_tokens_the_proxies_train_in(searched_tokenizer, corpus):
    from datamask.analysis.proxy_lm.tokenizer import load_tokenizer

    out, m, path, T, counts = searched_tokenizer
    assert m["tokens"]["source"] == f"tokenizer {path}" and m["tokens"]["corpus_tokens"] == int(counts.sum())
    prep = json.loads((out / "_search" / "prep" / "prep.json").read_text())
    assert prep["tokenizer"]["sha256"] == load_tokenizer(path).sha256  # not a BPE trained on a sample
    sel = pd.read_parquet(out / "verify.parquet")
    longest = int(counts.max())
    assert (sel.selected_tokens > T - 2 * longest).all() and (sel.selected_tokens <= T).all()
    # one pass reads the selection's tokens and one end-of-text id per document: nothing else
    assert (sel.selection_tokens == sel.selected_tokens + sel.rows).all(), sel[["name", "rows", "selection_tokens"]]
    warnings = json.loads((out / "search.json").read_text()).get("warnings", [])
    assert not any("passes over their selections" in w for w in warnings)


def test_a_budget_counted_apart_from_the_proxies_tokenizer_is_named_when_the_passes_differ():
    from datamask.analysis.search.config import SearchConfig
    from datamask.analysis.search.summary import PASSES_SPREAD, _passes

    frame = pd.DataFrame({"name": ["default", "topk", "random"] * 2, "passes": [0.58, 0.63, 0.53] * 2})
    cfg = SearchConfig(input="in", output="out", eval=["e"], tokens=1000)
    (line,) = _passes(cfg, frame)
    assert "0.53-0.63 passes" in line and "--tokenizer" in line
    even = frame.assign(passes=[1.0, 1.0 + PASSES_SPREAD / 2, 0.99] * 2)
    assert _passes(cfg, even) == []
    assert _passes(dataclasses.replace(cfg, tokenizer="tok.json"), frame) == []
