"""``--exclude SET``: the rows of an evaluation or held-out set kept out of ``select`` and
``compare`` (by text always, by id for a datamask holdout), counted in the manifest."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from datamask.pipeline.exclude import load_excluded
from tests.helpers.pipeline_data import assert_fails, manifest

N = 600


def _texts(n: int) -> list:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]
    rng = np.random.default_rng(3)
    return [" ".join(rng.choice(words, size=12 + i % 7)) + f" row {i}" for i in range(n)]


@pytest.fixture(scope="module")
def texts_corpus(tmp_path_factory):
    """``N`` rows with id, text, embedding, quality and n_tokens in two files."""
    root = tmp_path_factory.mktemp("exclude")
    rng = np.random.default_rng(0)
    E = rng.normal(size=(N, 16)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    texts = _texts(N)
    (root / "in").mkdir()
    for k, (lo, hi) in enumerate(((0, 400), (400, N))):
        t = pa.table(
            {
                "id": pa.array(np.arange(lo, hi, dtype=np.int64)),
                "text": texts[lo:hi],
                "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E[lo:hi].reshape(-1)), 16),
                "quality": pa.array(rng.uniform(size=hi - lo).astype(np.float32)),
                "n_tokens": pa.array(np.full(hi - lo, 10, dtype=np.int32)),
            }
        )
        pq.write_table(t, root / "in" / f"part-{k}.parquet")
    # a set from elsewhere: its ids 0..19 are other documents' (matched by nothing), and rows
    # 500-509's texts under ids 1000+ (matched by text)
    other = pd.DataFrame(
        {"id": list(range(20)) + list(range(1000, 1010)), "text": [f"other {i}" for i in range(20)] + texts[500:510]}
    )
    other.to_parquet(root / "other.parquet")
    return {"root": root, "in": root / "in", "other": root / "other.parquet", "texts": texts}


def _free(held, n):
    """``n`` ids of the corpus neither held out nor in the other set."""
    return [i for i in range(N) if i not in held and not 500 <= i < 510][:n]


def _select(src, out, *extra, address):
    argv = [
        "select",
        str(src),
        str(out),
        "--split-size",
        "300",
        "--set",
        "solver_params.steps=20",
        "--quiet",
        "--no-report",
    ]
    return main([*argv, "--scheduler", address, *map(str, extra)])


def test_a_holdout_is_matched_by_id_and_text_another_set_by_text_alone(texts_corpus, address, tmp_path):
    held = tmp_path / "held"
    assert _select(texts_corpus["in"], held, "--holdout", "0.1", address=address) == 0
    ex = load_excluded([str(held / "holdout"), str(texts_corpus["other"])])
    ids = pq.read_table(held / "holdout").column("id").to_pylist()
    assert sorted(ex.ids) == sorted(ids) and ex.by_source[str(held / "holdout")] == "id and text"
    assert ex.by_source[str(texts_corpus["other"])] == "text"
    texts = texts_corpus["texts"]
    h = min(ids)
    k, k2 = _free(ids, 2)
    rows = np.array([h, k, 9999, k2])
    mask, by_id, by_text = ex.match(rows, ["an edited text", texts[k], texts[505], texts[h]])
    # the held-out row by its id though its text was edited; a text of the other set under a new id;
    # a held-out row's text under another id
    assert mask.tolist() == [True, False, True, True] and (by_id, by_text) == (1, 2)


def test_select_keeps_the_sets_out_and_counts_them(texts_corpus, address, tmp_path, capsys):
    held = tmp_path / "held"
    assert _select(texts_corpus["in"], held, "--holdout", "0.1", address=address) == 0
    held_ids = set(pq.read_table(held / "holdout").column("id").to_pylist())
    out = tmp_path / "sel"
    argv = ["--exclude", held / "holdout", "--exclude", texts_corpus["other"], "--ratio", "0.5"]
    assert _select(texts_corpus["in"], out, *argv, address=address) == 0
    sel = pq.read_table(out / "data").to_pandas()
    m = manifest(out)
    t = m["totals"]
    assert not set(sel.id) & held_ids and not set(sel.text) & set(texts_corpus["texts"][500:510])
    from_other = len(set(range(500, 510)) - held_ids)  # texts of the other set not held out already
    assert t["excluded_rows"] == len(held_ids) + from_other
    assert t["excluded_by_id"] == len(held_ids) and t["excluded_by_text"] == len(held_ids) + from_other
    assert t["rows_in"] == N - t["excluded_rows"]
    assert sum(r["rows_out"] for r in m["splits"]) == sum(round(0.5 * r["rows_in"]) for r in m["splits"])
    assert m["config"]["exclude"] == [str(held / "holdout"), str(texts_corpus["other"])]
    # the line the command prints (not quiet): a rerun reports the finished output
    assert main(["select", str(texts_corpus["in"]), str(out), "--split-size", "300", "--set", 'solver_params.steps=20', "--no-report", "--scheduler", address, *map(str, argv)]) == 0  # fmt: skip
    line = [x for x in capsys.readouterr().out.splitlines() if "excluded" in x]
    assert line == [
        f"datamask: excluded {t['excluded_rows']} rows found in the evaluation and held-out sets "
        f"({len(held_ids)} by id, {t['excluded_by_text']} by text; {held / 'holdout'}, {texts_corpus['other']}) "
        "before selecting"
    ]


def test_a_token_budget_is_shared_over_the_rows_left(texts_corpus, address, tmp_path):
    held = tmp_path / "held"
    assert _select(texts_corpus["in"], held, "--holdout", "0.2", address=address) == 0
    n_held = pq.read_table(held / "holdout").num_rows
    out = tmp_path / "tok"
    assert _select(texts_corpus["in"], out, "--exclude", held / "holdout", "--token-ratio", "0.1", address=address) == 0
    tok = manifest(out)["totals"]["tokens"]
    assert tok["corpus_tokens"] == 10 * (N - n_held) and tok["budget"] == (N - n_held)  # 10 tokens a row


def test_compare_keeps_the_sets_out(texts_corpus, address, tmp_path):
    held = tmp_path / "held"
    assert _select(texts_corpus["in"], held, "--holdout", "0.1", address=address) == 0
    held_ids = set(pq.read_table(held / "holdout").column("id").to_pylist())
    out = tmp_path / "cmp"
    argv = ["compare", str(texts_corpus["in"]), str(out), "--methods", "topk,random", "--split-size", "300"]
    argv += ["--exclude", str(held / "holdout"), "--quiet", "--no-report", "--scheduler", address]
    assert main(argv) == 0
    meta = json.loads((out / "compare.json").read_text())
    assert meta["excluded_rows"] == len(held_ids) == meta["excluded_by_id"]
    assert manifest(out)["totals"]["excluded_rows"] == len(held_ids)
    sel = pd.read_parquet(out / "selections.parquet")
    assert len(sel) and not set(sel.id) & held_ids


def test_one_line_errors(texts_corpus, tmp_path, capsys):
    base = ["select", str(texts_corpus["in"]), str(tmp_path / "o"), "--quiet"]
    assert_fails(capsys, [*base, "--exclude", tmp_path / "nope"], "exclude set", "nope", "does not exist")
    bad = tmp_path / "notext.parquet"
    pd.DataFrame({"x": [1, 2]}).to_parquet(bad)
    assert_fails(capsys, [*base, "--exclude", bad], "exclude set", "no text column 'text'", "--set text_column=NAME")
    assert not (tmp_path / "o").exists()
