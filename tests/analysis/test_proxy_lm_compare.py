"""``compare --holdout F --proxy-lm PRESET`` and ``proxy-lm`` on compare and select outputs,
through the command line on a real Dask cluster, on the repository's text corpus."""

from __future__ import annotations

import functools
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
from tests.helpers.pipeline_data import assert_fails  # noqa: E402
from tests.helpers.text_embed import hashed_embeddings  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"
SIZES = dict(
    vocab_size=512,
    d_model=32,
    n_layers=2,
    n_heads=2,
    d_ff=64,
    seq_len=64,
    batch_size=8,
    tokens=40_000,
    lr=1e-2,
    eval_tokens=20_000,
    curve_tokens=4_000,
)


@pytest.fixture(scope="module")
def text_corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("textcorpus")
    df = pd.DataFrame([json.loads(line) for line in CORPUS.read_text().splitlines()])
    E = hashed_embeddings(df.text.tolist())
    q = df.good.to_numpy() + np.random.default_rng(1).uniform(0, 0.5, len(df))
    t = pa.table(
        {
            "id": df.id.to_numpy(),
            "text": df.text.tolist(),
            "kind": df.kind.tolist(),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), E.shape[1]),
            "quality": q.astype(np.float32),
            "n_tokens": df.text.str.split().str.len().to_numpy(),
        }
    )
    pq.write_table(t, d / "corpus.parquet")
    return d


@pytest.fixture(scope="module")
def compared(text_corpus, address, tmp_path_factory):
    from datamask.analysis.proxy_lm import PRESETS, ProxyLMConfig, with_compare

    out = tmp_path_factory.mktemp("pcmp") / "cmp"
    with pytest.MonkeyPatch.context() as mp:  # a test-sized "tiny" preset, one thread
        mp.setitem(PRESETS, "tiny", {**PRESETS["tiny"], **SIZES})
        mp.setattr(with_compare, "ProxyLMConfig", functools.partial(ProxyLMConfig, threads=1, curve_points=2))
        assert (
            main(
                [
                    "compare",
                    str(text_corpus),
                    str(out),
                    "--methods",
                    "datamask,topk,random",
                    "--set",
                    "solver_params.steps=30",
                    "--ratio",
                    "0.3",
                    "--holdout",
                    "0.2",
                    "--split-size",
                    "200",
                    "--scheduler",
                    address,
                    "--proxy-lm",
                    "tiny",
                    "--quiet",
                ]
            )
            == 0
        )
    return out


def test_holdout_is_set_aside_before_any_method(compared, text_corpus):
    held = pq.read_table(compared / "holdout").to_pandas()
    n = pq.read_metadata(text_corpus / "corpus.parquet").num_rows
    assert len(held) == round(0.2 * 170) * 2 and n == 340  # two splits of 170 rows, 20% of each
    assert {"text", "embedding", "quality"} <= set(held.columns)  # whole rows
    sel = pd.read_parquet(compared / "selections.parquet")
    for m, g in sel.groupby("method"):
        assert not set(g.id) & set(held.id), m  # no method saw a held-out row
        assert len(g) == 2 * round(0.3 * (170 - 34))  # the budget is taken from the remaining rows
    meta = json.loads((compared / "compare.json").read_text())
    assert meta["holdout"] == 0.2 and meta["holdout_rows"] == len(held)


def test_proxy_loss_next_to_the_objective_metrics(compared):
    t = pd.read_csv(compared / "compare.csv", index_col="method")
    assert {"quality", "pairwise", "proxy_loss", "proxy_perplexity"} <= set(t.columns)
    proxy = pd.read_csv(compared / "proxy_lm" / "proxy.csv")
    overall = proxy[proxy.domain == "all"].set_index("selection")
    for m in ("datamask", "topk", "random"):
        assert t.loc[m, "proxy_loss"] == pytest.approx(overall.loc[m, "loss"])
        assert t.loc[m, "proxy_loss"] < overall.loc["untrained", "loss"]
    # the holdout is a random slice of a mixed corpus: the random selection matches it best
    assert t.loc["random", "proxy_loss"] < overall.loc["untrained", "loss"] - 0.5
    assert t.loc["random", "proxy_loss"] < t.loc["topk", "proxy_loss"]
    assert overall.tokens.drop("untrained").nunique() == 1  # equal tokens for every method
    m = json.loads((compared / "proxy_lm" / "manifest.json").read_text())
    sel = pd.read_parquet(compared / "selections.parquet")
    docs = {s["name"]: s["docs"] for s in m["selections"]}
    assert docs == sel.groupby("method").size().to_dict()  # each method's own rows, text joined back
    assert all(s["excluded_eval_rows"] == 0 for s in m["selections"])  # the holdout kept them apart already
    page = (compared / "report" / "index.html").read_text()
    assert "Proxy-LM evaluation" in page and "proxy-LM held-out loss" in page
    assert (compared / "report" / "proxy_loss_curve.png").exists()


def test_proxy_lm_command_on_a_compare_output_resumes_its_runs(compared, tmp_path, capsys):
    """The same run as compare's by hand: same config, so every selection is reused."""
    out = compared / "proxy_lm"
    flags = [w for k, v in SIZES.items() for w in ("--set", f"{k}={v}")]
    assert (
        main(
            [
                "proxy-lm",
                str(compared),
                "--eval",
                str(compared / "holdout"),
                str(out),
                *flags,
                "--set",
                "threads=1",
                "--set",
                "curve_points=2",
                "--no-report",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "(0 trained, 3 resumed)" in printed and "topk" in printed


def test_proxy_lm_needs_a_holdout(text_corpus, tmp_path, capsys):
    out = tmp_path / "nohold"
    assert_fails(
        capsys, ["compare", text_corpus, out, "--methods", "topk", "--proxy-lm", "tiny"], "--proxy-lm needs --holdout"
    )
    assert not out.exists()


def test_proxy_lm_on_a_select_output_with_keep_all(text_corpus, address, tmp_path):
    """A --keep-all select output trains on its selected rows only, never on held-out rows."""
    sel = tmp_path / "sel"
    assert (
        main(
            [
                "select",
                str(text_corpus),
                str(sel),
                "--method",
                "topk",
                "--ratio",
                "0.3",
                "--holdout",
                "0.2",
                "--split-size",
                "200",
                "--keep-all",
                "--scheduler",
                address,
                "--quiet",
                "--no-report",
            ]
        )
        == 0
    )
    out = tmp_path / "proxy"
    flags = [w for k, v in {**SIZES, "tokens": 1024}.items() for w in ("--set", f"{k}={v}")]
    assert (
        main(
            [
                "proxy-lm",
                str(sel),
                "--eval",
                str(sel / "holdout"),
                str(out),
                *flags,
                "--set",
                "threads=1",
                "--quiet",
                "--no-report",
            ]
        )
        == 0
    )
    m = json.loads((out / "manifest.json").read_text())
    data = pq.read_table(sel / "data").to_pandas()
    assert m["selections"][0]["docs"] == int(data.selected.sum()) < len(data)
    assert m["selections"][0]["excluded_eval_rows"] == 0
