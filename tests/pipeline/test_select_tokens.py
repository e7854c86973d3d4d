"""Token budgets end to end: `datamask select --tokens` through a real Dask cluster."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from datamask.cli.demo import corpus_table
from datamask.core.synthetic import make_corpus
from datamask.pipeline.config import SelectConfig, parse_tokens
from tests.helpers.pipeline_data import args, assert_fails, assert_no_output, manifest, read_out

ROWS = (1500, 1500, 600)  # split 1000 -> 1000, 500, 1000, 500, 600 rows


def _lengths(n, seed=0):
    rng = np.random.default_rng(seed)
    t = np.maximum(1, rng.lognormal(6.0, 1.2, size=n)).astype(np.int64)
    t[rng.choice(n, 4, replace=False)] = 50_000
    return t


@pytest.fixture(scope="module")
def skewed(tmp_path_factory):
    """Three Parquet files with a lognormal ``token_count`` column and a few 50k-token rows."""
    d = tmp_path_factory.mktemp("tok")
    c = make_corpus(n_rows=sum(ROWS), dim=16, n_topics=6, n_dup_groups=4, seed=1)
    c["token_count"] = _lengths(sum(ROWS))
    lo = 0
    for i, n in enumerate(ROWS):
        pq.write_table(corpus_table(c, lo, hi=lo + n), d / f"shard-{i}.parquet", row_group_size=400)
        lo += n
    return d, c["token_count"]


def _select(inp, out, address, *extra):
    a = args(inp, out, "--split-size", "1000", *extra, scheduler=address)
    assert main(a) == 0


@pytest.mark.slow
@pytest.mark.parametrize("method", ["datamask", "greedy", "relaxed", "topk", "random", "semdedup", "quadmix"])
def test_every_method_keeps_each_split_within_its_share(skewed, address, tmp_path, method):
    inp, t = skewed
    T = int(0.1 * t.sum())
    out = tmp_path / method
    div = ["--diversity", "pairwise"] if method == "relaxed" else []  # facility has no relaxation
    _select(inp, out, address, "--tokens", str(T), "--method", method, "--prune", "0.3", *div)
    m = manifest(out)
    tok = m["totals"]["tokens"]
    assert tok["budget"] == T and tok["corpus_tokens"] == t.sum() and tok["source"] == "column token_count"
    kept = read_out(out)
    assert tok["tokens_out"] == int(kept.column("token_count").to_numpy().sum()) <= T
    for p in m["splits"]:
        share = T * p["tokens_in"] // t.sum()  # T_s = T * tokens_s / tokens
        assert p["token_budget"] == share
        assert p["tokens_out"] <= share
        # within one document: a split keeps all but less than its longest row
        assert share - p["tokens_out"] < 50_000
    assert T - tok["tokens_out"] < 50_000 * len(m["splits"])


@pytest.mark.slow
def test_token_budget_per_split_fills_and_resumes(skewed, address, tmp_path):
    inp, t = skewed
    out = tmp_path / "out"
    _select(inp, out, address, "--tokens", "150k")
    m = manifest(out)
    assert m["totals"]["tokens"]["budget"] == 150_000
    ids = read_out(out).column("id").to_numpy()
    # resume: a lost split is recomputed with the same share and the same rows
    parts = sorted((out / "_datamask" / "parts").glob("*.json"))
    lost = json.loads(parts[1].read_text())
    parts[1].unlink()
    for f in lost["files"]:
        (out / "data" / f).unlink()
    (out / "manifest.json").unlink()
    _select(inp, out, address, "--tokens", "150k")
    m2 = manifest(out)
    assert m2["totals"]["resumed"] == len(m2["splits"]) - 1
    assert np.array_equal(read_out(out).column("id").to_numpy(), ids)
    assert m2["totals"]["tokens"]["tokens_out"] == m["totals"]["tokens"]["tokens_out"]


def test_a_budget_over_the_corpus_follows_the_row_budget_rule(skewed, address, tmp_path, capsys):
    """Above the corpus's tokens: refused in one line, as a row budget above a split's rows
    is, for select and compare alike, nothing written; exactly the corpus's tokens: every row."""
    inp, t = skewed
    total = int(t.sum())
    for cmd in ("select", "compare"):
        out = tmp_path / f"over-{cmd}"
        a = [cmd, inp, out, "--split-size", 1000, "--tokens", total + 1, "--scheduler", address, "--quiet"]
        if cmd == "compare":
            a += ["--methods", "topk", "--no-report"]
        assert_fails(capsys, a, f"token budget {total + 1:,} is larger than the corpus's {total:,} tokens",
                     "(counted from column token_count)", "lower --tokens")  # fmt: skip
        assert not out.exists()
    out = tmp_path / "all"
    a = args(inp, out, "--split-size", "1000", "--tokens", str(total), scheduler=address)
    a.remove("--quiet")
    assert main(a) == 0
    assert "every row is kept" in capsys.readouterr().out
    assert manifest(out)["totals"]["rows_out"] == sum(ROWS)
    assert manifest(out)["totals"]["tokens"]["covers_corpus"]


def _left(inp, split, p) -> int:
    """The tokens pruning ``p`` leaves in a split (a manifest record), counted here from its
    file: the best ``n - floor(p * n)`` rows by quality, ties by row order."""
    tab = pq.read_table(inp / split["source"]).slice(split["start"], split["stop"] - split["start"])
    t, q = tab.column("token_count").to_numpy(), tab.column("quality").to_numpy().astype(np.float64)
    return int(t[np.argsort(-q, kind="stable")[: len(t) - math.floor(p * len(t))]].sum())


def test_a_prune_that_cannot_fill_a_share_is_refused_before_any_split_runs(skewed, address, tmp_path, capsys):
    """A ``--prune`` that leaves some split no more tokens than its share of ``--tokens`` (or
    ``--token-ratio``) is refused by the counting pass, before any split is selected: one line
    naming the split short by the most and the largest prune (in hundredths) that fits every
    split; no output. That prune runs, and the next hundredth would not have fitted."""
    inp, t = skewed
    total = int(t.sum())
    T = total // 2
    out = tmp_path / "out"
    line = (
        r"^datamask: error: --prune 0.9: pruning 0.9 of the rows of (\S+) \(rows (\d+)-(\d+)\) leaves ([\d,]+) tokens, "
    )
    line += r"not more than its ([\d,]+)-token share of {}; lower --prune to (0\.\d+) or the token budget$"
    err = assert_fails(
        capsys, args(inp, out, "--split-size", "1000", "--tokens", T, "--prune", "0.9", scheduler=address)
    )
    got = re.match(line.format(f"--tokens {T}"), err)
    assert got, err
    assert not out.exists()
    ratio = assert_fails(
        capsys, args(inp, out, "--split-size", "1000", "--token-ratio", "0.5", "--prune", "0.9", scheduler=address)
    )
    assert re.match(line.format(rf"--token-ratio 0.5 \({T:,} tokens\)"), ratio).groups() == got.groups(), ratio
    assert not out.exists()
    room = float(got[6])
    _select(inp, out, address, "--tokens", str(T), "--prune", str(room))
    m = manifest(out)
    assert m["config"]["prune"] == room and m["totals"]["tokens"]["tokens_out"] <= T
    splits = m["splits"]
    assert len(splits) == 5
    for s in splits:
        assert s["token_budget"] == T * s["tokens_in"] // total and s["tokens_out"] <= s["token_budget"]
        assert s["token_budget"] < _left(inp, s, room)  # the fix fits every split...
    nxt = (round(room * 100) + 1) / 100  # ...and is the largest hundredth that does
    assert any(s["token_budget"] >= _left(inp, s, nxt) for s in splits)
    short = {(s["source"], s["start"], s["stop"]): s["token_budget"] - _left(inp, s, 0.9) for s in splits}
    named = (got[1], int(got[2]), int(got[3]))
    assert short[named] == max(short.values()) > 0  # the split named is short by the most
    named_split = next(s for s in splits if (s["source"], s["start"], s["stop"]) == named)
    assert (int(got[4].replace(",", "")), int(got[5].replace(",", ""))) == (
        _left(inp, named_split, 0.9),
        named_split["token_budget"],
    )


def test_bad_token_counts_fail_in_one_line_naming_file_row_column(tmp_path, address, capsys):
    c = make_corpus(n_rows=300, dim=16, seed=2)
    tab = corpus_table(c)
    counts = pa.array([5] * 120 + [None] + [5] * 179, type=pa.int64())
    pq.write_table(tab.append_column("token_count", counts), tmp_path / "a.parquet")
    out = tmp_path / "out"
    assert_fails(
        capsys,
        args(tmp_path / "a.parquet", out, "--tokens", "200", scheduler=address),
        "a.parquet",
        "row 120",
        "'token_count'",
        "null",
    )
    assert_no_output(out)
    counts = pa.array([5.0] * 77 + [2.5] + [5.0] * 222)
    pq.write_table(tab.append_column("token_count", counts), tmp_path / "b.parquet")
    assert_fails(
        capsys, args(tmp_path / "b.parquet", out, "--tokens", "200", scheduler=address), "b.parquet", "row 77", "2.5"
    )
    assert_no_output(out)


def test_budget_flags_are_checked(tmp_path, capsys):
    for extra, needle in (
        (["--tokens", "0"], "positive"),
        (["--tokens", "-5"], "positive"),
        (["--tokens", "1k", "--budget", "10"], "not both"),
        (["--tokens", "1k", "--ratio", "0.2"], "not both"),
        (["--tokens", "1k", "--token-ratio", "0.2"], "not both"),
        (["--token-ratio", "1.5"], "(0, 1]"),
        (["--tokens", "lots"], "200k"),
    ):
        assert_fails(capsys, ["select", str(tmp_path), str(tmp_path / "o"), *extra], needle)
    assert [parse_tokens(v) for v in ("2e5", "200k", "1.5B", "1.5T", 300, "2M")] == [
        200_000,
        200_000,
        1_500_000_000,
        1_500_000_000_000,
        300,
        2_000_000,
    ]
    cfg = SelectConfig.from_dict({"tokens": "200k"})
    assert cfg.tokens == 200_000 and cfg.budget_in_tokens


@pytest.mark.slow
def test_compare_at_equal_tokens(skewed, address, tmp_path, capsys):
    import pandas as pd

    inp, t = skewed
    T = int(0.1 * t.sum())
    out = tmp_path / "cmp"
    argv = [
        "compare",
        inp,
        out,
        "--methods",
        "datamask,greedy,topk,random,semdedup,quadmix",
        "--tokens",
        T,
        "--set",
        "solver_params.steps=30",
        "--split-size",
        1000,
        "--set",
        "n_clusters=4",
        "--scheduler",
        address,
    ]
    assert main([str(a) for a in argv]) == 0
    printed = capsys.readouterr().out
    assert "tokens" in printed
    table = pd.read_csv(out / "compare.csv", index_col="method")
    assert (table["token_budget"] <= T).all() and (table["tokens"] <= table["token_budget"]).all()
    assert (table["token_budget"] - table["tokens"] < 5 * 50_000).all()  # within one document per split
    per = pd.read_csv(out / "compare_splits.csv")
    assert (per["tokens"] <= per["token_budget"]).all()
    info = json.loads((out / "compare.json").read_text())
    assert info["tokens"]["budget"] == T and set(info["tokens_kept"]) == set(table.index)
    assert "tokens kept" in (out / "report" / "index.html").read_text()


@pytest.mark.slow
def test_compare_shares_and_checks_a_token_budget_as_select_does(skewed, address, tmp_path, capsys):
    """``compare`` goes through ``select``'s split job (pipeline/split_job.py): a ``--prune`` that
    leaves a split no more tokens than its share is refused with ``select``'s line before any split
    runs, and each split's share of ``--tokens`` is the one ``select`` records."""
    import pandas as pd

    inp, t = skewed
    T = int(t.sum()) // 2
    flags = ["--split-size", 1000, "--tokens", T, "--scheduler", address]
    compare = ["compare", inp, tmp_path / "c", "--methods", "datamask,topk", "--solver-params", '{"steps": 5}', *flags]
    select = ["select", inp, tmp_path / "s", "--quiet", *flags]
    refused = assert_fails(capsys, select + ["--prune", "0.9"])
    assert refused.startswith("datamask: error: --prune 0.9: pruning 0.9 of the rows of ")
    assert assert_fails(capsys, compare + ["--prune", "0.9"]) == refused
    assert_no_output(tmp_path / "c")
    assert main([str(a) for a in select + ["--method", "topk"]]) == 0
    assert main([str(a) for a in compare]) == 0
    shares = {s["name"]: s["token_budget"] for s in manifest(tmp_path / "s")["splits"]}
    per = pd.read_csv(tmp_path / "c" / "compare_splits.csv")
    top = per[per["method"] == "topk"].set_index("split")["token_budget"]
    assert len(shares) == 5 and {k: int(v) for k, v in top.items()} == shares


def test_a_workflow_ratio_is_cleared_with_null():
    from datamask.errors import ConfigError

    with pytest.raises(ConfigError, match="select.ratio=null"):
        SelectConfig.from_dict({"ratio": 0.2, "tokens": "1k"})
    assert SelectConfig.from_dict({"ratio": "null", "tokens": "1k"}).tokens == 1000
    assert SelectConfig.from_dict({"ratio": None}).ratio == 0.1  # null without tokens: the default


def test_workflow_key_tokens(tmp_path):
    from datamask.stages.workflow import load_workflow

    wf = tmp_path / "w.yaml"
    wf.write_text("input: in\noutput: out\ntokens: 1.5B\ntokens_column: token_count\n")
    cfg = SelectConfig.from_dict(load_workflow(str(wf), []))
    assert cfg.tokens == 1_500_000_000 and cfg.tokens_column == "token_count"
    wf.write_text("input: in\noutput: out\ntoken_ratio: 0.25\n")
    assert SelectConfig.from_dict(load_workflow(str(wf), [])).token_ratio == 0.25


def test_token_counts_come_from_a_column_or_the_text():
    from datamask.errors import DataError
    from datamask.pipeline.tokens import split_lengths

    base = pa.table({"id": [1, 2, 3], "text": ["a b c", None, "  one  "]})
    cfg = SelectConfig()
    t, src = split_lengths(base, cfg, "f.jsonl (rows 0-3)")
    assert t.tolist() == [3, 0, 1] and src == "whitespace words of text"
    both = base.append_column("n_tokens", pa.array([7, 8, 9])).append_column("token_count", pa.array([4, 5, 6]))
    assert split_lengths(both, cfg, "f")[0].tolist() == [4, 5, 6]  # FineWeb's column first
    assert split_lengths(both, cfg.replace(tokens_column="n_tokens"), "f")[1] == "column n_tokens"
    with pytest.raises(DataError, match="missing column 'len'"):
        split_lengths(both, cfg.replace(tokens_column="len"), "f")
    with pytest.raises(DataError, match="--set tokens_column=NAME or --set text_column=NAME"):
        split_lengths(pa.table({"id": [1]}), cfg, "f")
    with pytest.raises(DataError, match=r"f row 11: column 'token_count' is -1"):
        split_lengths(pa.table({"token_count": [3, -1]}), cfg, "f", first_row=10)


def test_a_tokenizer_counts_over_a_count_column_and_not_beside_a_named_one(tmp_path, capsys):
    """``--tokenizer`` is the user's word: it counts even where the input has ``n_tokens`` (a
    search's proxies then train in the tokens the budget counted); with ``--tokens-column`` too
    there would be two counts, refused in one line."""
    from datamask.analysis.proxy_lm.tokenizer import train_bpe
    from datamask.pipeline.tokens import split_lengths

    texts = ["the cat sat on the mat", "a dog", "the cat and the dog sat on a mat together"] * 20
    path = tmp_path / "tokenizer.json"
    tok = train_bpe(texts, 300)
    tok.save(path)
    t = pa.table({"text": texts[:3], "n_tokens": pa.array([99, 99, 99])})
    counts, src = split_lengths(t, SelectConfig(tokenizer=str(path)), "f")
    assert src == f"tokenizer {path}" and counts.tolist() == [len(a) for a in tok.encode(texts[:3])]
    assert counts.tolist() != [99, 99, 99] and split_lengths(t, SelectConfig(), "f")[0].tolist() == [99, 99, 99]
    argv = ["select", str(tmp_path), str(tmp_path / "o"), "--tokens", "1k", "--set", "tokens_column=n", "--tokenizer"]
    assert_fails(capsys, [*argv, str(path)], "give a tokens_column (n) or --tokenizer", "not both")
