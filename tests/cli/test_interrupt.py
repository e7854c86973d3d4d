"""A run stopped by SIGINT (what Ctrl-C sends) at each phase: while its splits (or its whole-corpus
computation) run, while it writes its report, just before its manifest. Each stopped run is
resumable and reported INCOMPLETE by ``datamask status`` (exit 1), with no ``manifest.json``; the
rerun of the same command finishes it, and ``status`` then finds everything the manifest lists
(the report). The signal is sent by the process to itself at the named point (the real signal,
the real handler); the stages run on the shared Dask cluster."""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datamask.analysis.report.html as report_html
import datamask.pipeline.corpus as corpus_mod
import datamask.pipeline.runner as runner_mod
from datamask.cli import main
from datamask.runtime.progress import ProgressBars

pytestmark = pytest.mark.slow

N = 240


def _sigint():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(10)  # the KeyboardInterrupt is raised here, in the main thread
    raise AssertionError("SIGINT did not stop the run")


def _words(i: int) -> str:
    words = ["river", "stone", "paper", "cloud", "engine", "garden", "signal", "window", "market", "planet"]
    rng = np.random.default_rng(i)
    return " ".join(rng.choice(words, size=20)) + f" document {i}"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("interrupt")
    rng = np.random.default_rng(0)
    texts = [_words(i) for i in range(N)]
    texts[7] = texts[3]  # one exact duplicate for dedup
    E = rng.normal(size=(N, 16)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    full = pa.table(
        {
            "id": np.arange(N, dtype=np.int64),
            "text": texts,
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), 16),
            "quality": rng.uniform(size=N).astype(np.float32),
        }
    )
    (root / "full").mkdir()
    pq.write_table(full, root / "full" / "corpus.parquet")
    (root / "raw").mkdir()
    pq.write_table(full.select(["id", "text"]).slice(0, 40), root / "raw" / "docs.parquet")
    return root


# (stage, its arguments after INPUT OUTPUT, its input) ; split-size 60: four splits of the full corpus
STAGES = {
    "select": (["--set", "solver_params.steps=20"], "full"),
    "dedup": (["--kind", "exact,fuzzy"], "full"),
    "score": (["--heuristics"], "full"),
    "embed": (["--split-size", "10"], "raw"),
    "cluster": (["--n-clusters", "3"], "full"),
    "compare": (["--methods", "topk,random"], "full"),
}


def _at(phase: str, stage: str, monkeypatch):
    """Send SIGINT at ``phase`` of the run of ``stage``."""
    if phase == "splits":
        if stage in ("cluster", "compare"):  # a whole-corpus stage: while it computes
            from datamask.stages.corpus.analysis import ClusterStage, CompareStage

            cls = ClusterStage if stage == "cluster" else CompareStage
            monkeypatch.setattr(cls, "compute", lambda *a, **k: _sigint())
        else:  # once the first split has landed on the client
            orig = ProgressBars.split_done
            monkeypatch.setattr(ProgressBars, "split_done", lambda self, name: (orig(self, name), _sigint()))
    elif phase == "report":  # the page is being built: report/ exists, index.html not yet
        monkeypatch.setattr(report_html, "_table_html", lambda *a, **k: _sigint())
    else:  # "manifest": everything else written, manifest.json not yet

        def guard(orig):
            def write(obj, path, *a, **k):
                if str(path).endswith("manifest.json"):
                    _sigint()
                return orig(obj, path, *a, **k)

            return write

        for mod in (runner_mod, corpus_mod):
            monkeypatch.setattr(mod, "write_json_atomic", guard(mod.write_json_atomic))


CASES = [
    (stage, phase)
    for stage in STAGES
    for phase in ("splits", "report", "manifest")
    if phase != "report" or stage in ("select", "dedup", "compare")  # the stages that write a report
]


@pytest.mark.parametrize(("stage", "phase"), CASES, ids=[f"{s}-{p}" for s, p in CASES])
def test_an_interrupted_run_is_incomplete_until_the_rerun(stage, phase, inputs, address, tmp_path, monkeypatch, capsys):
    extra, src = STAGES[stage]
    out = tmp_path / "out"
    argv = [stage, str(inputs / src), str(out), "--split-size", "60", *extra, "--scheduler", address, "--quiet"]
    with monkeypatch.context() as m:
        _at(phase, stage, m)
        # Ctrl-C's handler, as in a terminal (a process started in the background ignores SIGINT)
        old = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            assert main(argv) == 130
        finally:
            signal.signal(signal.SIGINT, old)
    assert "datamask: interrupted; rerun the same command to resume" in capsys.readouterr().err
    assert not (out / "manifest.json").exists()
    if out.exists():  # a stopped run that left its output: resumable, and said to be incomplete
        assert main(["status", str(out)]) == 1
        said = capsys.readouterr().out
        assert "INCOMPLETE" in said and "rerun" in said, said
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["status", str(out)]) == 0
    assert "complete" in capsys.readouterr().out
    m = json.loads((out / "manifest.json").read_text())
    if stage in ("select", "dedup", "compare"):
        assert m["report"] and os.path.exists(m["report"]) and m["report"].endswith("report/index.html")


def test_status_finds_a_report_the_manifest_lists_missing(inputs, address, tmp_path, capsys):
    out = tmp_path / "sel"
    argv = [
        "select",
        str(inputs / "full"),
        str(out),
        "--set",
        "solver_params.steps=20",
        "--scheduler",
        address,
        "--quiet",
    ]
    assert main(argv) == 0
    page = json.loads((out / "manifest.json").read_text())["report"]
    os.remove(page)
    capsys.readouterr()
    assert main(["status", str(out)]) == 1
    assert "manifest.json lists report" in capsys.readouterr().out
    assert main(argv) == 0 and os.path.exists(page)  # the rerun writes it again, and nothing else
    assert main(["status", str(out)]) == 0
