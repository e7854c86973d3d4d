"""``datamask search`` end to end on the repository's text corpus, with a test-sized proxy LM:
its outputs, the leak rule, ``recipe.yaml`` through ``datamask run``, a search killed and
resumed, the same trials from an external ``dask scheduler`` with two ``dask worker``
processes as from a LocalCluster, the report in headless Chromium, and the one-line errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from datamask.cli import main  # noqa: E402
from tests.analysis.test_report import chromium  # noqa: E402,F401  (the fixture)
from tests.helpers.dask_processes import dask_processes  # noqa: E402
from tests.helpers.pipeline_data import assert_fails, wait_until  # noqa: E402
from tests.helpers.text_embed import hashed_embeddings  # noqa: E402

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"
PROXY = "vocab_size=512,d_model=32,n_layers=2,n_heads=2,d_ff=64,seq_len=64,batch_size=8,lr=1e-2,eval_tokens=4000"
# 4 trials x 2 seeds + 4 recipes x 2 verification seeds = 16 models of 37k parameters on 8k tokens;
# the regressor is fixed (auto, which cross-validates all three, is tested in test_search_model.py)
ARGS = ["--trials", "4", "--set", 'seeds=2', "--verify", "2", "--set", 'solver_params.steps=30', "--ratio", "0.3", "--split-size", "200", "--proxy-tokens", "8192", "--set", "proxy_options=" + str(PROXY), "--set", 'candidates=2000', "--set", 'regressor=quadratic', "--space", "lam=0:1,diversity=pairwise|disf", "--quiet"]  # fmt: skip
MODELS = 16
TIME = ["select_seconds", "train_seconds", "seconds"]
N_LEAKS = 5


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The input (two quality components, three domains), an evaluation set of 30 prose rows, 5 of
    which are also in the input, and a second one (``quality``) of 12 other prose rows."""
    root = tmp_path_factory.mktemp("search_corpus")
    df = pd.DataFrame([json.loads(line) for line in CORPUS.read_text().splitlines()])
    rng = np.random.default_rng(1)
    qa, qb = df.good.to_numpy() + rng.uniform(0, 0.5, len(df)), rng.uniform(0, 1, len(df))
    held, second = df.index[df.kind == "prose"][:30], df.index[df.kind == "prose"][30:42]
    (root / "eval").mkdir()
    (root / "quality").mkdir()
    df.loc[held, ["id", "text", "kind"]].to_parquet(root / "eval" / "eval.parquet")
    df.loc[second, ["id", "text"]].to_parquet(root / "quality" / "quality.parquet")
    keep = np.ones(len(df), dtype=bool)
    keep[held[N_LEAKS:]] = False
    keep[second] = False
    E = hashed_embeddings(df.text.tolist())[keep]
    t = pa.table(
        {
            "id": df.id.to_numpy()[keep],
            "text": df.text[keep].tolist(),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), E.shape[1]),
            "quality": qa[keep].astype(np.float32),
            "quality_a": qa[keep].astype(np.float32),
            "quality_b": qb[keep].astype(np.float32),
            "cluster": (np.arange(keep.sum()) % 3).astype(np.int32),
        }
    )
    (root / "in").mkdir()
    pq.write_table(t, root / "in" / "corpus.parquet")
    c = {"in": root / "in", "eval": root / "eval", "quality": root / "quality", "eval_texts": set(df.loc[held, "text"])}
    c["evals"] = ["--eval", str(c["eval"]), "--eval", str(c["quality"])]
    c["lengths"] = np.array([len(t.split()) for t in df.text[keep]])
    c["leaked"] = np.isin(df.text[keep].to_numpy(), df.loc[held, "text"].to_numpy())  # the rows no selection may hold
    return c


def _search(corpus, out, *extra, scheduler=None):
    argv = ["search", str(corpus["in"]), str(out), *corpus["evals"], *ARGS, *map(str, extra)]
    return main(argv + (["--scheduler", scheduler] if scheduler else []))


@pytest.fixture(scope="module")
def searched(corpus, address, tmp_path_factory):
    out = tmp_path_factory.mktemp("search") / "out"
    assert _search(corpus, out, scheduler=address) == 0
    return out


def _trials(out) -> pd.DataFrame:
    return pd.read_parquet(out / "trials.parquet").drop(columns=TIME)


def test_outputs_hold_what_the_issue_names(searched):
    t = pd.read_parquet(searched / "trials.parquet")
    assert len(t) == 8 and sorted(t.trial.unique()) == list(range(4)) and set(t.seed) == {0, 1}
    for c in (
        "lam",
        "diversity",
        "loss",
        "bits_per_byte",
        "tokens",
        "seconds",
        "quality",
        "coverage",
        "near_duplicate_share",
    ):
        assert c in t.columns, c
    assert t.loss.between(3, 8).all() and np.allclose(t.loss, (t["loss.eval"] + t["loss.quality"]) / 2)
    s = json.loads((searched / "search.json").read_text())
    assert set(s["chosen"]) == {"lam", "diversity"} and 0 <= s["chosen"]["lam"] <= 1
    assert s["regressor"] in s["cv"] and -1 <= s["cv_spearman"] <= 1
    assert s["noise"]["trials"]["eval"]["loss_sd"] > 0 and s["noise"]["verification"]["eval"]["seeds"] == 2
    for name in ("chosen", "default", "topk", "random"):
        assert s["verified"][name]["sd"] is not None and s["verified"][name]["mean"] > 0
    # every evaluation set reported apart, by its folder's name; the first (eval) is the rule's target
    assert s["target"] == s["verified"]["target"] == s["recommended"]["target"] == "eval"
    assert set(s["verified"]["sets"]) == {"eval", "quality"} and s["noise"]["trials"].keys() == {"eval", "quality"}
    v = pd.read_parquet(searched / "verify.parquet").pivot_table(index="seed", columns="name", values="loss.quality")
    assert s["verified"]["sets"]["quality"]["recipes"]["topk"]["mean"] == pytest.approx(v["topk"].mean())
    assert s["verified"]["differences"]["default"]["words"].startswith("on eval, chosen is")
    assert "on quality (not judged)" in s["recommended"]["why"]
    assert s["leaks"] == N_LEAKS and set(s["tracks"]) == {
        "quality",
        "diversity_pairwise",
        "coverage",
        "near_duplicate_share",
    }
    for f in (
        "verify.parquet",
        "recipe.yaml",
        "figures/loss_by_parameter.png",
        "figures/verification.png",
        "report/index.html",
    ):
        assert (searched / f).exists(), f
    m = json.loads((searched / "manifest.json").read_text())
    assert m["stage"] == "search" and m["totals"]["trained"] == MODELS


def test_the_regime_and_the_workers_time_are_recorded(searched):
    from datamask.analysis.proxy_lm.runner import auto_precision

    """Every model's passes over its selection (trials and verification), the regime as given, and
    the share of the workers' time spent training, measured over the models trained in this run."""
    s = json.loads((searched / "search.json").read_text())
    p = s["proxy"]
    assert p["proxy_tokens"] == 8192 and p["regime"] == "8,192 tokens"
    assert p["steps"] == {"min": 16, "median": 16, "max": 16} and (p["lr"], p["weight_decay"]) == (1e-2, 0.1)
    for f in ("trials.parquet", "verify.parquet"):
        t = pd.read_parquet(searched / f)
        assert np.allclose(t.passes, t.tokens / t.selection_tokens) and (t.passes > 0).all()
        assert (t.steps * 512 == t.tokens).all() and (t.lr == 1e-2).all() and (t.weight_decay == 0.1).all()
        for e in ("eval", "quality"):  # the unigram baseline of each model's own training tokens, per set
            assert np.allclose(t[f"unigram_margin.{e}"], t[f"unigram_loss.{e}"] - t[f"loss.{e}"])
            assert t[f"unigram_loss.{e}"].between(2, 12).all()
        assert p["unigram_margin"]["eval"]["min"] <= t["unigram_margin.eval"].min()
        assert p["passes"]["min"] <= t.passes.min() and t.passes.max() <= p["passes"]["max"]
        assert set(t.precision) == {auto_precision("cpu")}  # what auto resolved to on these workers
    assert p["precision"] == [auto_precision("cpu")] and not [w for w in s["warnings"] if "trained in" in w]
    c = s["cost"]
    assert c["models_timed"] == MODELS and c["workers"] == 2
    assert 0 < s["train_share"] <= 1 and s["train_share"] == c["train_share"]
    assert c["train_seconds"] <= c["model_seconds"] <= s["wall_seconds"] * c["workers"]
    assert s["tokens_per_worker_second"] == pytest.approx(MODELS * 8192 / (s["wall_seconds"] * c["workers"]), rel=1e-3)


def test_trials_score_the_first_documents_and_the_verification_the_whole_set(searched):
    """A trial's model scores each evaluation set's first documents up to trial_eval_tokens (default
    half of the proxy's eval_tokens: 2,000 here), the one crossing it included; a verification
    model scores every prepared window (up to eval_tokens: 4,000)."""
    s = json.loads((searched / "search.json").read_text())
    assert s["trial_eval_tokens"] == 2000
    e = s["eval_sets"][0]
    assert [x["name"] for x in s["eval_sets"]] == ["eval", "quality"]
    assert 2000 <= e["trial_tokens"] < e["scored_tokens"] and e["scored_tokens"] >= 4000
    t, v = pd.read_parquet(searched / "trials.parquet"), pd.read_parquet(searched / "verify.parquet")
    assert (t["eval_tokens.eval"] == e["trial_tokens"]).all()
    assert (v["eval_tokens.eval"] == e["scored_tokens"]).all()
    html = (searched / "report" / "index.html").read_text()
    assert f"{e['trial_tokens']:,} of {e['scored_tokens']:,} tokens of eval" in html


def test_no_selection_trains_on_an_evaluation_text(searched, corpus):
    import dask

    from datamask.analysis.search import SearchConfig
    from datamask.analysis.search.run import corpus_parts
    from datamask.analysis.search.trials import select_recipe

    cfg = SearchConfig(**json.loads((searched / "manifest.json").read_text())["config"])
    cfg = cfg.replace(budget_unit="rows")  # 95% of the rows (no token counts to share out here)
    parts, _ = corpus_parts(cfg)
    frames = dask.compute(*parts, scheduler="sync")
    sel = select_recipe(*frames, recipe={"method": "topk", "ratio": 0.95}, cfg=cfg, out=str(searched))
    assert sel["stats"]["leaks_removed"] == N_LEAKS  # 95% by quality takes every leaked prose row: all removed
    texts = pd.concat(frames)[cfg.text_column].tolist()  # corpus order: the positions ``rows`` index
    assert not {texts[i] for i in sel["rows"]} & corpus["eval_texts"]


def test_recipe_yaml_selects_as_the_verified_recommended_recipe(searched, corpus, address, tmp_path):
    """The same selection: its rows (leaks aside) and their mean quality, which differ between recipes
    that a token budget gives the same tokens."""
    out = tmp_path / "applied"
    argv = ["run", str(searched / "recipe.yaml"), "--set", f"output={out}", "--set", f"scheduler={address}", "--quiet"]
    assert main(argv + ["--no-report"]) == 0
    got = pq.read_table(out / "data", columns=["text", "quality"]).to_pandas()
    assert not set(got.text) & corpus["eval_texts"]  # recipe.yaml keeps the leaks out, as the trials did
    v = pd.read_parquet(searched / "verify.parquet")
    name = json.loads((searched / "search.json").read_text())["recommended"]["name"]
    row = v.loc[v.name == name].iloc[0]
    assert len(got) == row["rows"] and float(got.quality.astype(float).mean()) == pytest.approx(
        row["quality"], rel=1e-6
    )
    m = json.loads((out / "manifest.json").read_text())
    assert m["totals"]["excluded_rows"] == m["totals"]["excluded_by_text"] == N_LEAKS


def test_every_verified_arm_selects_the_same_tokens(searched, corpus):
    """``--ratio 0.3`` is a share of the corpus's tokens (the default budget unit), its evaluation
    texts left out of the count (no selection holds them): the four verified recipes select as many
    whitespace words, each within one document of the budget."""
    s = json.loads((searched / "search.json").read_text())
    n = corpus["lengths"]
    counted = int(n[~corpus["leaked"]].sum())
    assert corpus["leaked"].sum() == N_LEAKS and s["tokens"]["corpus_tokens"] == counted
    assert s["budget"]["unit"] == "tokens" and s["tokens"]["budget"] == int(np.floor(0.3 * counted))
    v = pd.read_parquet(searched / "verify.parquet").groupby("name").selected_tokens.first()
    assert len(v) == 4 and v.max() - v.min() < 2 * n.max() and (v <= s["tokens"]["budget"]).all()
    assert "(--budget-unit tokens)" in s["budget"]["words"]


def test_an_external_cluster_gives_the_same_trials(searched, corpus, tmp_path):
    out = tmp_path / "out"
    with dask_processes(tmp_path, 2) as (addr, _):  # trials only: verification does not change them
        assert _search(corpus, out, "--verify", 0, "--no-report", scheduler=addr) == 0
    pd.testing.assert_frame_equal(_trials(out), _trials(searched))
    assert (
        json.loads((out / "search.json").read_text())["chosen"]
        == json.loads((searched / "search.json").read_text())["chosen"]
    )


def test_a_killed_search_resumes_only_the_missing_trials(searched, corpus, address, tmp_path, capsys):
    """The search process is killed (SIGKILL) on the shared cluster; the tasks it had started end
    and write their records, the others are dropped with the client; a rerun trains the rest."""
    from distributed import Client

    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "datamask.cli", "search", str(corpus["in"]), str(out), *corpus["evals"]]
    proc = subprocess.Popen(cmd + ARGS + ["--scheduler", address], start_new_session=True, stderr=subprocess.PIPE)
    records = out / "_search" / "records"
    try:
        wait_until(
            lambda: len(list(records.glob("trial-*.json"))) >= 3 or proc.poll() is not None,
            timeout=240,
            what="three trial records",
        )
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    with Client(address, set_as_default=False) as c:  # the tasks already running end (on the workers)
        wait_until(
            lambda: not any(c.run(lambda dask_worker: len(dask_worker.active_threads)).values()),
            timeout=240,
            what="running tasks to end",
        )
    done = {p.name: p.stat().st_mtime_ns for p in records.glob("*.json")}
    assert 3 <= len(done) < MODELS and not (out / "search.json").exists()
    assert main(["status", str(out)]) == 1 and "what it keeps (_search/) is reused" in capsys.readouterr().out
    assert _search(corpus, out, scheduler=address) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["totals"]["computed_this_run"] == MODELS - len(done) and m["totals"]["resumed"] == len(done)
    assert all((records / n).stat().st_mtime_ns == t for n, t in done.items())  # finished trials untouched
    pd.testing.assert_frame_equal(_trials(out), _trials(searched))


def test_the_report_renders_in_headless_chromium(searched, chromium, tmp_path):  # noqa: F811
    import matplotlib.image as mpimg

    shot = tmp_path / "shot.png"
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage"]
    cmd += [f"--user-data-dir={tmp_path / 'p'}", f"--screenshot={shot}", "--window-size=1200,1600"]
    r = subprocess.run(
        cmd + [(searched / "report" / "index.html").resolve().as_uri()], capture_output=True, timeout=120
    )
    assert shot.exists(), r.stderr.decode(errors="replace")[-2000:]
    img = mpimg.imread(shot)[..., :3]
    assert img.std() > 0.05 and (img.mean(axis=2) < 0.9).mean() > 0.01
    page = (searched / "report" / "index.html").read_text()
    # 16 optimiser steps: the first thing the report (and search.json, and the summary) says
    first = json.loads((searched / "search.json").read_text())["warnings"][0]
    assert first.startswith("these proxies measured token frequencies, not content: 16 of 16 models trained fewer")
    assert page.index("these proxies measured token frequencies") < page.index("Recommended")
    for needle in (
        "Chosen recipe",
        "cross-validated Spearman",
        "Verification",
        "What the loss tracks",
        "data:image/png",
    ):
        assert needle in page, needle


def test_quadmix_search_from_python_with_merge_weights_and_its_recipe(corpus, address, tmp_path):
    """``datamask.dask.search`` on the user's client: QuaDMix's per-domain parameters and the merge
    weights of the two quality components; its recipe.yaml scores, then selects."""
    from distributed import Client

    import datamask.dask as dmd

    out = tmp_path / "qm"
    with Client(address, set_as_default=False) as client:
        m = dmd.search(
            corpus["in"], out, corpus["eval"], client=client, method="quadmix", trials=4, verify=0, ratio=0.3,
            split_size=200, proxy_tokens="0.5x", proxy_options=PROXY, candidates=500, regressor="quadratic",
            no_report=True,
        )  # fmt: skip
    # the fixed-pass regime: each model made half a pass over its own selection (whole batches of 8 x 64)
    t = pd.read_parquet(out / "trials.parquet")
    assert m["proxy"]["proxy_tokens"] == "0.5x" and m["proxy"]["regime"] == "0.5 passes over its selection"
    assert ((t.passes >= 0.5) & (t.passes < 0.5 + 512 / t.selection_tokens)).all()
    assert (t.tokens == np.ceil(0.5 * t.selection_tokens / 512) * 512).all()
    assert set(m["chosen"]["omega"]) == {"0", "1", "2"} and m["chosen"]["weights"].keys() == {"quality_a", "quality_b"}
    assert sum(m["chosen"]["weights"].values()) == pytest.approx(1.0)
    assert m["chosen"] == json.loads((out / "search.json").read_text())["chosen"]
    assert "weights.quality_a" in pd.read_parquet(out / "trials.parquet").columns
    applied = tmp_path / "applied"
    assert main(["run", str(out / "recipe.yaml"), "--set", f"output={applied}", "--quiet", "--no-report"]) == 0
    assert (applied / "score" / "manifest.json").exists() and (applied / "select" / "manifest.json").exists()


def test_one_line_errors(searched, corpus, tmp_path, capsys):
    base = ["search", str(corpus["in"]), str(tmp_path / "o"), "--quiet"]
    assert_fails(capsys, base, "search needs an evaluation set: --eval EVAL")
    assert_fails(capsys, [*base, "--eval", str(tmp_path / "nope")], "evaluation set", "nope")
    ev = ["--eval", str(corpus["eval"])]
    assert_fails(capsys, [*base, *ev, "--target", "held"], "--target 'held' names no evaluation set; the sets are eval")
    assert_fails(capsys, [*base, *ev, "--budget", "50"], "--budget 50 counts rows", "--budget-unit rows")
    assert_fails(capsys, [*base, *ev, "--tokens", "5k", "--budget-unit", "rows"], "--tokens already counts tokens")
    assert_fails(capsys, [*base, *ev, "--space", "lam=0:2"], "space 'lam=0:2': lam must be")
    assert_fails(capsys, [*base, *ev, "--space", "temperature=0:1"], "unknown name 'temperature'")
    assert_fails(capsys, [*base, *ev, "--set", "proxy_options=depth=3"], "proxy_options 'depth=3'")
    assert_fails(capsys, [*base, *ev, "--method", "semdedup"], "search takes --method")
    assert_fails(capsys, [*base, *ev, "--set", "trial_eval_tokens=0"], "trial_eval_tokens must be >= 1, got 0")
    assert_fails(capsys, [*base, *ev, "--set", "trial_eval_tokens=lots"], "trial_eval_tokens must be a token count")
    for bad in ("x", "-2x", "0x"):
        assert_fails(capsys, [*base, *ev, f"--proxy-tokens={bad}"], "proxy_tokens must be", "4x", repr(bad))
    assert not (tmp_path / "o").exists()
    again = ["search", str(corpus["in"]), str(searched), *corpus["evals"], *ARGS, "--trials", "8"]
    assert_fails(capsys, again, "holds a run with a different config (trials: 4 -> 8)", "--overwrite")
