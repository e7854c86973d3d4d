"""Proxy-LM evaluation on the repository's own text corpus (tests/data/corpus.jsonl).

A selection of prose rows and a selection of boilerplate / link-list / spam / repeated rows
train the same tiny model on equal tokens; the held-out rows of both kinds judge them.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from datamask.analysis.proxy_lm import ProxyLMConfig, run_proxy_lm  # noqa: E402
from datamask.analysis.proxy_lm import train as train_mod  # noqa: E402
from datamask.errors import ConfigError  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"
JUNK = ("boilerplate", "links", "spam", "repeated")
# A model of 37k parameters: the tests take seconds, not minutes.
TEST_MODEL = dict(
    vocab_size=512,
    d_model=32,
    n_layers=2,
    n_heads=2,
    d_ff=64,
    seq_len=64,
    batch_size=8,
    tokens=80_000,
    lr=1e-2,
    eval_tokens=20_000,
    curve_tokens=4_000,
    curve_points=3,
    threads=1,
    quiet=True,
)


def _write(df, d):
    d.mkdir(parents=True, exist_ok=True)
    df.to_parquet(d / "part-0.parquet", index=False)
    return str(d)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Held-out rows of every kind; a prose and a junk selection; 5 held-out rows leaked into prose."""
    root = tmp_path_factory.mktemp("proxy_corpus")
    df = pd.DataFrame([json.loads(line) for line in CORPUS.read_text().splitlines()])
    prose, junk = df[df.kind == "prose"], df[df.kind.isin(JUNK)]
    held = pd.concat([prose.iloc[:30]] + [junk[junk.kind == k].iloc[:6] for k in JUNK])
    leak = prose.iloc[:5]  # held-out rows a careless selection contains
    sel_prose = pd.concat([prose.iloc[30:], leak])
    sel_junk = junk[~junk.id.isin(held.id)]
    return {
        "root": root,
        "held": held,
        "leak": leak,
        "prose": sel_prose,
        "junk": sel_junk,
        "eval": _write(held, root / "heldout"),
        "sel_prose": _write(sel_prose, root / "prose"),
        "sel_junk": _write(sel_junk, root / "junk"),
    }


class Spy:
    """Counts the target tokens the model is trained on, per selection, and keeps the documents
    every training stream is built from."""

    def __init__(self, mp):
        self.targets, self.docs, self.current = {}, {}, None
        real_forward, real_train, real_stream = train_mod.forward_loss, train_mod.train_selection, train_mod.TokenStream
        real_fused = train_mod.fused_forward_loss

        def count(model, y):
            if model.training:
                self.targets[self.current] = self.targets.get(self.current, 0) + int((y != -100).sum())

        def forward_loss(model, x, y, reduction="mean"):
            count(model, y)
            return real_forward(model, x, y, reduction)

        def fused_forward_loss(model, x, y, **k):  # what the CPU's training steps call (head_loss.py)
            count(model, y)
            return real_fused(model, x, y, **k)

        def train_selection(name, docs, *a, **k):
            self.current = name
            return real_train(name, docs, *a, **k)

        def stream(docs, eos_id, seed):
            self.docs[self.current] = [np.asarray(d) for d in docs]
            return real_stream(docs, eos_id, seed)

        mp.setattr(train_mod, "forward_loss", forward_loss)
        mp.setattr(train_mod, "fused_forward_loss", fused_forward_loss)
        mp.setattr(train_mod, "train_selection", train_selection)
        mp.setattr(train_mod, "TokenStream", stream)
        import datamask.analysis.proxy_lm.runner as runner_mod

        mp.setattr(runner_mod, "train_selection", train_selection)


def _cfg(corpus, out, **kw):
    return ProxyLMConfig(
        selections=[corpus["sel_prose"], corpus["sel_junk"]],
        eval=[corpus["eval"]],
        output=str(out),
        domain_column="kind",
        **{**TEST_MODEL, **kw},
    )


@pytest.fixture(scope="module")
def run(corpus):
    with pytest.MonkeyPatch.context() as mp:
        spy = Spy(mp)
        manifest = run_proxy_lm(_cfg(corpus, corpus["root"] / "out"))
    return manifest, spy


def _loss(table, sel, domain="all"):
    row = table[(table.selection == sel) & (table.domain == domain)]
    assert len(row) == 1, (sel, domain)
    return float(row.loss.iloc[0])


def test_prose_selection_wins_on_prose_and_both_learn(run):
    manifest, _ = run
    t = manifest["table"]
    # on held-out prose the prose-trained model is better by a clear margin (measured: ~4.7 vs ~7.5 nats)
    assert _loss(t, "prose", "prose") < _loss(t, "junk", "prose") - 1.0
    # and the junk-trained model wins on held-out junk: the margin is the data, not a broken run
    for kind in JUNK:
        assert _loss(t, "junk", kind) < _loss(t, "prose", kind) - 0.5
    # each model is far below the untrained model on held-out text of the kind it was trained on
    untrained = _loss(t, "untrained", "prose")
    assert untrained > 5.5  # about ln(vocab): random weights know nothing
    assert _loss(t, "prose", "prose") < untrained - 1.0
    assert _loss(t, "junk", "boilerplate") < _loss(t, "untrained", "boilerplate") - 1.0
    assert np.allclose(t.perplexity, np.exp(t.loss))


def test_equal_tokens_are_counted_and_small_selections_repeat(run, corpus):
    manifest, spy = run
    cfg = _cfg(corpus, "x")
    expected = cfg.train_tokens
    # whole batches of 8 x 64 tokens, at least the 80,000 asked for and less than a batch more
    assert expected == cfg.steps * 8 * 64 and 80_000 <= expected < 80_000 + 8 * 64
    assert spy.targets == {"prose": expected, "junk": expected}  # counted at the model's input
    t = manifest["table"]
    for s in ("prose", "junk"):
        rows = t[t.selection == s]
        assert (rows.tokens == expected).all()
        info = next(x for x in manifest["selections"] if x["name"] == s)
        assert info["selection_tokens"] < expected  # the selection is smaller than the budget ...
        assert rows.passes.iloc[0] == pytest.approx(expected / info["selection_tokens"])  # ... so it is repeated
        assert rows.passes.iloc[0] > 1


def test_a_multiple_trains_each_selection_on_its_own_passes(corpus, tmp_path):
    """``tokens=1.5x``: each selection trains for 1.5 passes over its own tokens (whole batches),
    counted at the model's input; the passes are in proxy.csv, the manifest and the CLI's line."""
    with pytest.MonkeyPatch.context() as mp:
        spy = Spy(mp)
        m = run_proxy_lm(_cfg(corpus, tmp_path / "out", tokens="1.5x", curve_points=0))
    assert m["config"]["tokens"] == "1.5x" and m["regime"] == "1.5 passes over its selection"
    assert m["train_tokens"] is None and m["steps"] is None  # each selection's own
    t = m["table"]
    assert len(m["selections"]) == 2  # the loop below checks both selections, never none
    for s in m["selections"]:
        n, BT = s["selection_tokens"], 8 * 64
        want = -(-int(1.5 * n) // BT) * BT  # 1.5 passes rounded up to whole batches
        assert spy.targets[s["name"]] == s["tokens"] == want
        assert s["passes"] >= 1.5 and s["passes"] < 1.5 + BT / n  # at most one batch more
        assert t.loc[t.selection == s["name"], "passes"].iloc[0] == pytest.approx(want / n)
    assert len({s["tokens"] for s in m["selections"]}) == 2  # not equal tokens: equal passes
    lo, hi = sorted(s["steps"] for s in m["selections"])
    assert (
        m["warnings"][-1].startswith("--tokens 1.5x trains each selection for passes")
        and f"({lo:,}-{hi:,} steps)" in m["warnings"][-1]
    )


@pytest.mark.parametrize("bad", ["x", "-2x", "0x", "2.5.1x", "fourx"])
def test_a_bad_multiple_is_one_line_naming_the_flag(corpus, tmp_path, capsys, bad):
    from datamask.cli import main

    out = tmp_path / "o"
    argv = ["proxy-lm", corpus["sel_prose"], "--eval", corpus["eval"], str(out), f"--tokens={bad}", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "tokens" in err[0] and "4x" in err[0] and repr(bad) in err[0]
    assert not out.exists()


def test_held_out_rows_never_reach_training(run, corpus):
    manifest, spy = run
    info = {x["name"]: x for x in manifest["selections"]}
    assert info["prose"]["excluded_eval_rows"] == len(corpus["leak"]) == 5
    assert info["junk"]["excluded_eval_rows"] == 0
    from datamask.analysis.proxy_lm.tokenizer import load_tokenizer

    tok = load_tokenizer(Path(manifest["output"]) / "tokenizer.json")
    held = {tuple(a) for a in tok.encode(corpus["held"].text.tolist())}
    trained = [tuple(d) for docs in spy.docs.values() for d in docs]
    assert len(trained) == len(corpus["prose"]) - 5 + len(corpus["junk"])
    assert not held & set(trained)


def test_rerun_reproduces_and_resumes(run, corpus, tmp_path):
    manifest, _ = run
    again = run_proxy_lm(_cfg(corpus, tmp_path / "again"))
    cols = ["selection", "eval_set", "domain", "loss", "tokens", "passes"]
    pd.testing.assert_frame_equal(manifest["table"][cols], again["table"][cols], check_exact=True)
    assert (tmp_path / "again" / "tokenizer.json").read_text() == (
        Path(manifest["output"]) / "tokenizer.json"
    ).read_text()
    # the same output again: every selection's result is reused, nothing trains
    with pytest.MonkeyPatch.context() as mp:
        spy = Spy(mp)
        resumed = run_proxy_lm(_cfg(corpus, tmp_path / "again"))
    assert spy.targets == {} and resumed["totals"] == {"selections": 2, "computed_this_run": 0, "resumed": 2}
    pd.testing.assert_frame_equal(again["table"][cols], resumed["table"][cols], check_exact=True)


def test_outputs_written(run):
    manifest, _ = run
    out = Path(manifest["output"])
    for name in (
        "proxy.csv",
        "loss_curve.png",
        "final_loss.png",
        "manifest.json",
        "tokenizer.json",
        "config.json",
        "runs/prose.json",
        "runs/junk.json",
    ):
        assert (out / name).is_file(), name
    assert not list(out.rglob(".*tmp*"))
    csv = pd.read_csv(out / "proxy.csv")
    assert list(csv.columns) == [
        "selection",
        "eval_set",
        "domain",
        "loss",
        "perplexity",
        "bits_per_byte",
        "eval_tokens",
        "unigram_loss",
        "unigram_margin",
        "tokens",
        "passes",
        "steps",
        "params",
        "seconds",
    ]
    assert set(csv.domain) == {"all", "prose", *JUNK}
    # every model's optimiser steps and its margin over a unigram model of its own training tokens
    trained = csv[csv.selection != "untrained"]
    assert (trained.steps * TEST_MODEL["batch_size"] * TEST_MODEL["seq_len"] == trained.tokens).all()
    assert np.allclose(csv.unigram_margin, csv.unigram_loss - csv.loss)
    untrained = csv[csv.selection == "untrained"]  # nothing counted: the uniform model, ln V
    assert (
        np.allclose(untrained.unigram_loss, np.log(manifest["tokenizer"]["vocab_size"]))
        and (untrained.steps == 0).all()
    )
    m = json.loads((out / "manifest.json").read_text())
    assert m["versions"]["torch"] and m["versions"]["transformers"] and m["config"]["d_model"] == 32
    assert (m["lr"], m["weight_decay"]) == (m["config"]["lr"], m["config"]["weight_decay"])
    assert [s["steps"] for s in m["selections"]] == [m["steps"]] * 2 and m["steps"] < 250
    assert m["warnings"][0].startswith("these proxies measured token frequencies, not content: 2 of 2")
    assert m["params"] == csv.params.iloc[0] > 0
    from matplotlib.image import imread

    assert imread(out / "loss_curve.png").shape[0] > 200


def test_other_config_refused(run, corpus):
    manifest, _ = run
    with pytest.raises(ConfigError, match="another config.*tokens"):
        run_proxy_lm(_cfg(corpus, manifest["output"], tokens=40_000))


# ---------------------------------------------------------------------- bad input (the command line)
SMALL_FLAGS = [
    "--set",
    "vocab_size=512",
    "--set",
    "d_model=32",
    "--set",
    "n_layers=2",
    "--set",
    "n_heads=2",
    "--set",
    "d_ff=64",
    "--set",
    "seq_len=64",
    "--set",
    "batch_size=8",
    "--tokens",
    1024,
    "--set",
    "threads=1",
    "--quiet",
]


def assert_refused(capsys, out, *argv_and_needles):
    *argv, needles = argv_and_needles
    from tests.helpers.pipeline_data import assert_fails

    assert_fails(capsys, ["proxy-lm", *argv, out, *SMALL_FLAGS], *needles)
    assert not Path(out).exists()  # checked before anything is written


def test_selection_without_text_column(corpus, tmp_path, capsys):
    bad = _write(corpus["prose"].rename(columns={"text": "body"}), tmp_path / "notext")
    assert_refused(
        capsys,
        tmp_path / "out",
        bad,
        "--eval",
        corpus["eval"],
        ["notext", "no text column 'text'", "(columns: id, body", "--set text_column=NAME"],
    )


def test_empty_selection(corpus, tmp_path, capsys):
    empty = _write(corpus["prose"].iloc[:0], tmp_path / "empty")
    blank = _write(corpus["prose"].iloc[:3].assign(text=["", "  ", None]), tmp_path / "blank")
    for sel in (empty, blank):
        assert_refused(
            capsys,
            tmp_path / "out",
            corpus["sel_prose"],
            sel,
            "--eval",
            corpus["eval"],
            [f"selection {sel}: no usable text"],
        )


def test_selection_made_only_of_evaluation_rows(corpus, tmp_path, capsys):
    only_held = _write(corpus["leak"], tmp_path / "onlyheld")
    assert_refused(
        capsys,
        tmp_path / "out",
        only_held,
        "--eval",
        corpus["eval"],
        ["onlyheld", "every usable row is also in an evaluation set"],
    )


def test_eval_set_without_usable_text(corpus, tmp_path, capsys):
    blank = _write(corpus["held"].iloc[:4].assign(text=["", None, " \n", ""]), tmp_path / "blankeval")
    assert_refused(
        capsys, tmp_path / "out", corpus["sel_prose"], "--eval", blank, [f"evaluation set {blank}: no usable text"]
    )


def test_tokenizer_file_that_is_not_one(corpus, tmp_path, capsys):
    fake = tmp_path / "tokenizer.json"
    fake.write_text('{"hello": "world"}')
    assert_refused(
        capsys,
        tmp_path / "out",
        corpus["sel_prose"],
        "--eval",
        corpus["eval"],
        "--tokenizer",
        fake,
        [f"tokenizer '{fake}' is not a tokenizers tokenizer.json"],
    )
    assert_refused(
        capsys,
        tmp_path / "out",
        corpus["sel_prose"],
        "--eval",
        corpus["eval"],
        "--tokenizer",
        tmp_path / "missing.json",
        ["missing.json' not found"],
    )


def test_given_tokenizer_is_used(run, corpus, tmp_path):
    """``--tokenizer`` with the tokenizer an earlier run trained gives that run's numbers."""
    from datamask.cli import main

    out = tmp_path / "given"
    tok = Path(run[0]["output"]) / "tokenizer.json"
    flags = [str(x) for x in SMALL_FLAGS if x not in ("--tokens", 1024)]
    assert (
        main(
            [
                "proxy-lm",
                corpus["sel_prose"],
                "--eval",
                corpus["eval"],
                str(out),
                "--tokenizer",
                str(tok),
                "--tokens",
                "80000",
                "--set",
                "lr=0.01",
                "--set",
                "eval_tokens=20000",
                "--set",
                "curve_tokens=4000",
                "--set",
                "curve_points=3",
                "--set",
                "domain_column=kind",
                "--no-report",
                *flags,
            ]
        )
        == 0
    )
    assert not (out / "tokenizer.json").exists()
    m = json.loads((out / "manifest.json").read_text())
    assert m["tokenizer"]["source"] == str(tok)
    a, b = pd.read_csv(out / "proxy.csv"), run[0]["table"]
    assert a[a.selection == "prose"].loss.tolist() == b[b.selection == "prose"].loss.tolist()


# ---------------------------------------------------------------------- config, model, schedule
def test_presets_are_the_sizes_they_claim():
    from datamask.analysis.proxy_lm.model import build_model, count_params

    tiny = ProxyLMConfig().resolved()
    small = ProxyLMConfig(preset="small").resolved()
    assert 0.8e6 < count_params(build_model(tiny, tiny.vocab_size)) < 1.6e6  # "about 1M parameters"
    assert 20e6 < count_params(build_model(small, small.vocab_size)) < 60e6  # "tens of millions"
    assert tiny.tokens == 1_000_000 and small.tokens >= 100_000_000


def test_flags_and_yaml_fill_the_same_fields(tmp_path):
    c = ProxyLMConfig.from_dict({"preset": "small", "d_model": 256, "eval": "held", "tokens": "2e6"})
    r = c.resolved()
    assert (r.d_model, r.n_layers, r.tokens, c.eval) == (256, 8, 2_000_000, ["held"])  # the rest from the preset
    with pytest.raises(ConfigError, match="d_model .* n_heads"):
        ProxyLMConfig(d_model=100, n_heads=3).validated()
    with pytest.raises(ConfigError, match="unknown key"):
        ProxyLMConfig.from_dict({"d_modle": 3})
    with pytest.raises(ConfigError, match="at least one step"):
        ProxyLMConfig(tokens=100).validated()


def test_same_initial_weights_for_every_selection():
    from datamask.analysis.proxy_lm.train import initial_state

    cfg = ProxyLMConfig(**{k: v for k, v in TEST_MODEL.items() if k not in ("threads", "quiet")}).resolved()
    a, b = initial_state(cfg, 300), initial_state(cfg, 300)
    c = initial_state(cfg.replace(seed=1), 300)
    assert all((a[k] == b[k]).all() for k in a)
    assert any((a[k] != c[k]).any() for k in a)


def test_the_evaluation_scores_each_token_as_the_whole_batchs_logits_do():
    """The LM head in chunks of positions (how a CPU evaluation runs) gives every position the loss
    the model's whole logits give it (the tiny preset's head, 300 positions: not a multiple of a chunk)."""
    import torch

    from datamask.analysis.proxy_lm.model import build_model
    from datamask.analysis.proxy_lm.train import forward_loss, token_nll

    cfg = ProxyLMConfig(preset="tiny").resolved()
    model = build_model(cfg, cfg.vocab_size).eval()
    x = torch.randint(0, cfg.vocab_size, (3, 100), generator=torch.Generator().manual_seed(0))
    y = torch.roll(x, -1, dims=1)
    y[2, 60:] = -100  # padding scores 0
    with torch.no_grad():
        whole = forward_loss(model, x, y, reduction="none")
        for rows in (None, 64, 256, 1000):
            got = token_nll(model, x, y, rows)
            assert got.shape == whole.shape and torch.allclose(got, whole, rtol=1e-6, atol=0)
    assert (whole.reshape(3, 100)[2, 60:] == 0).all() and (whole.reshape(3, 100)[2, :60] > 0).all()


def test_warmup_then_cosine_schedule():
    from datamask.analysis.proxy_lm.model import lr_at

    lrs = [lr_at(s, 100, 1.0, 0.1, 0.1) for s in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)  # 10 warm-up steps
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))  # then only down
    assert lrs[-1] == pytest.approx(0.1, abs=0.01)  # to min_lr_ratio x lr


def test_another_seed_keeps_the_tokenizer_and_the_scored_documents(run, corpus, tmp_path):
    """``seed`` moves the initial weights and the data order only, so seeds can be averaged."""
    other = run_proxy_lm(_cfg(corpus, tmp_path / "seed1", seed=1, tokens=1024))
    first = run[0]
    assert (Path(other["output"]) / "tokenizer.json").read_text() == (
        Path(first["output"]) / "tokenizer.json"
    ).read_text()
    a, b = first["table"], other["table"]
    assert a.eval_tokens.tolist()[:6] == b.eval_tokens.tolist()[:6]  # the untrained rows: same documents scored
    assert a.loss.iloc[0] != b.loss.iloc[0]  # other initial weights


def test_yaml_config_file_with_flags_on_top(corpus, tmp_path):
    """``--config`` fills the same dataclass as the flags (flags win)."""
    import yaml

    from datamask.cli import main

    cfg = {
        "selections": [corpus["sel_prose"]],
        "eval": [corpus["eval"]],
        "vocab_size": 512,
        "d_model": 32,
        "n_layers": 2,
        "n_heads": 2,
        "d_ff": 64,
        "seq_len": 64,
        "batch_size": 8,
        "tokens": 4096,
        "threads": 1,
        "quiet": True,
        "no_report": True,
    }
    path = tmp_path / "proxy.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    assert main(["proxy-lm", "--config", str(path), str(out), "--tokens", "2048"]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["config"]["d_model"] == 32 and m["train_tokens"] == 2048  # YAML, then the flag on top
    assert [s["name"] for s in m["selections"]] == ["prose"]


def test_the_unigram_baseline_is_add_half_counts_on_the_scored_tokens():
    """By hand: a vocabulary of 4, training counts (3, 1, 0, 0); two documents' windows scoring the
    targets 1, 0 | 0, 3 (padding -1 unscored), in two domains."""
    from datamask.analysis.proxy_lm.baseline import unigram_losses
    from datamask.analysis.proxy_lm.train import EvalData

    windows = np.array([[2, 1, 0, -1], [2, 0, 3, -1]])
    ev = EvalData(
        "e", windows, np.array([0, 1]), np.array(["a", "b"], dtype=object), np.array([2, 2]), np.array([9, 9])
    )
    p = (np.array([3, 1, 0, 0]) + 0.5) / (4 + 0.5 * 4)
    got = unigram_losses(np.array([3, 1, 0, 0]), ev)
    assert got["a"] == (pytest.approx(-np.log(p[1]) - np.log(p[0])), 2)
    assert got["b"] == (pytest.approx(-np.log(p[0]) - np.log(p[3])), 2)
    assert got["all"][0] == pytest.approx(got["a"][0] + got["b"][0]) and got["all"][1] == 4
