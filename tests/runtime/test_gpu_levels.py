"""GPU levels chosen from what the runtime answers, the one-line reasons when none can run,
and the per-GPU workers: all on CPU, with the probes of :mod:`datamask.runtime.gpu` replaced
by stand-ins (a machine with cupy and two GPUs, with RAPIDS, with a mismatched build...)."""

from __future__ import annotations

import pytest

from datamask.errors import ConfigError
from datamask.runtime import gpu
from datamask.runtime.gpu import CPU, CupyProbe, Extras, Level, TorchProbe, select_level, visible_devices
from tests.helpers.pipeline_data import assert_fails

H200 = (("NVIDIA H200", 150_000_000_000), ("NVIDIA H200", 150_000_000_000))


@pytest.fixture
def machine(monkeypatch):
    """``machine(cupy=..., torch=..., extras=..., driver=...)`` sets what the probes answer."""
    monkeypatch.delenv(gpu.LEVEL_ENV, raising=False)

    def set_(cupy=CupyProbe(), torch=TorchProbe(), extras=Extras(), driver=None):  # noqa: B008 (frozen records)
        monkeypatch.setattr(gpu, "probe_cupy", lambda: cupy)
        monkeypatch.setattr(gpu, "probe_torch", lambda: torch)
        monkeypatch.setattr(gpu, "probe_extras", lambda with_rapids=True: extras)
        monkeypatch.setattr(gpu, "driver_cuda", lambda: driver)

    return set_


CUPY_OK = CupyProbe("14.2.0", None, 13000, H200)
TORCH_OK = TorchProbe("2.11.0+cu130", "13.0", H200)


def test_cpu_machine_auto_is_cpu_and_gpu_is_one_clear_line(machine):
    machine()
    assert select_level("auto") is CPU and select_level("cpu") is CPU
    with pytest.raises(ConfigError) as e:
        select_level("gpu")
    msg = str(e.value)
    assert "no CUDA GPU" in msg and "cupy is not installed" in msg and "--device cpu" in msg
    assert "\n" not in msg


def test_cuda_alone_host_frames_cupy_arrays_and_one_worker_per_gpu(machine):
    machine(cupy=CUPY_OK, driver=13000)
    lv = select_level("gpu")
    assert (lv.name, lv.frames, lv.arrays, lv.kmeans, lv.cluster) == ("cuda", "pandas", "cupy", "lloyd", "per-gpu")
    assert lv.device == "gpu" and lv.gpus == ("NVIDIA H200", "NVIDIA H200")
    assert select_level("auto") == lv
    d = lv.to_dict()
    assert d["level"] == "cuda" and d["kmeans_labels"] == "gpu" and d["gpus"] == ["NVIDIA H200"] * 2
    machine(cupy=CUPY_OK, extras=Extras(dask_cuda=True, faiss=True), driver=13000)
    lv = select_level("gpu")
    assert (lv.name, lv.kmeans, lv.cluster) == ("cuda", "lloyd", "LocalCUDACluster")


def test_rapids_when_it_works_unless_told_to_stay_on_cuda(machine, monkeypatch):
    machine(cupy=CUPY_OK, extras=Extras(rapids=True, dask_cuda=True), driver=13000)
    lv = select_level("gpu")
    assert (lv.name, lv.frames, lv.arrays, lv.kmeans, lv.cluster) == (
        "rapids",
        "cudf",
        "cupy",
        "cuml",
        "LocalCUDACluster",
    )
    monkeypatch.setenv(gpu.LEVEL_ENV, "cuda")
    assert select_level("gpu").name == "cuda"
    monkeypatch.setenv(gpu.LEVEL_ENV, "bogus")
    with pytest.raises(ConfigError, match="DATAMASK_GPU_LEVEL"):
        select_level("gpu")


@pytest.mark.parametrize(
    "cupy, driver, needles",
    [
        (CupyProbe(), 13000, ["needs cupy", "pip install cupy-cuda13x", "CUDA 13.0"]),
        (
            CupyProbe("14.2.0", "cudaErrorInsufficientDriver: CUDA driver version is insufficient", 13000, ()),
            12040,
            ["cupy 14.2.0 is built for CUDA 13.0", "supports CUDA 12.4", "install cupy-cuda12x"],
        ),
        (CupyProbe("14.2.0", "cudaErrorInsufficientDriver", 13000, ()), None, ["no CUDA GPU", "no NVIDIA driver"]),
        (CupyProbe("14.2.0", None, 13000, ()), 13000, ["no CUDA GPU", "sees no device", "CUDA_VISIBLE_DEVICES"]),
        (
            CupyProbe(None, "libcudart.so.13: cannot open shared object file", None, ()),
            12040,
            ["cupy does not import", "libcudart.so.13", "cupy-cuda12x"],
        ),
    ],
)
def test_why_no_gpu_for_arrays(machine, cupy, driver, needles):
    machine(cupy=cupy, driver=driver)
    assert select_level("auto") is CPU
    with pytest.raises(ConfigError) as e:
        select_level("gpu")
    for n in needles + ["--device cpu"]:
        assert n in str(e.value), (n, str(e.value))


@pytest.mark.parametrize(
    "torch, driver, needles",
    [
        (TorchProbe(), 13000, ["torch, which is not installed"]),
        (TorchProbe("2.13.0+cpu", None, ()), 13000, ["torch 2.13.0+cpu is a CPU-only build", "CUDA 13.0"]),
        (TorchProbe("2.11.0+cu130", "13.0", ()), 12040, ["built for CUDA 13.0", "supports CUDA 12.4"]),
    ],
)
def test_why_no_gpu_for_the_embedding_model(machine, torch, driver, needles):
    machine(cupy=CUPY_OK, torch=torch, driver=driver)
    assert select_level("gpu").name == "cuda"  # arrays alone: fine
    assert select_level("auto", needs=("torch",)) is CPU
    with pytest.raises(ConfigError) as e:
        select_level("gpu", needs=("torch",))
    for n in needles + ["--device cpu"]:
        assert n in str(e.value), (n, str(e.value))


def test_no_driver_no_torch_import(machine, monkeypatch):
    """Where no NVIDIA driver answers, torch (seconds to import) is not asked."""
    machine()
    monkeypatch.setattr(gpu.os.path, "exists", lambda p: False)
    monkeypatch.setattr(gpu, "probe_torch", lambda: pytest.fail("torch probed without a driver"))
    assert select_level("auto", needs=("torch",)) is CPU
    with pytest.raises(ConfigError, match="no NVIDIA driver was found"):
        select_level("gpu", needs=("torch",))


def test_embedding_level_with_torch_alone(machine):
    machine(torch=TORCH_OK, driver=13000)
    lv = select_level("gpu", needs=("torch",))
    assert lv.name == "cuda" and lv.gpus == ("NVIDIA H200", "NVIDIA H200") and lv.arrays == "numpy"
    assert lv.kmeans == "sklearn"  # no cupy device: k-means stays on the host
    with pytest.raises(ConfigError, match="needs cupy"):
        select_level("gpu")  # select's arrays need cupy


def test_cli_mismatched_cupy_is_one_line_and_leaves_no_output(machine, corpus, tmp_path, capsys):
    machine(cupy=CupyProbe("14.2.0", "cudaErrorInsufficientDriver", 13000, ()), driver=12040)
    out = tmp_path / "out"
    assert_fails(
        capsys,
        ["select", corpus, out, "--device", "gpu", "--quiet"],
        "built for CUDA 13.0",
        "install cupy-cuda12x",
        "--device cpu",
    )
    assert not out.exists()
    assert_fails(capsys, ["cluster", corpus, tmp_path / "c", "--device", "gpu", "--n-clusters", "3"], "cupy-cuda12x")
    assert not (tmp_path / "c").exists()


def test_visible_devices_follow_this_process_list():
    assert visible_devices(2, "") == ["0", "1"]
    assert visible_devices(2, "4,5") == ["4", "5"]
    assert visible_devices(1, "GPU-9f2c,GPU-77aa") == ["GPU-9f2c"]
    assert visible_devices(3, "4,5") == ["0", "1", "2"]  # a list shorter than the GPUs asked for


def test_per_gpu_worker_specs_pin_one_gpu_each():
    import psutil

    from datamask.runtime.client import gpu_threads, gpu_worker_specs

    specs = gpu_worker_specs(2, visible="6,7")
    assert list(specs) == ["gpu-0", "gpu-1"]
    opts = [s["options"] for s in specs.values()]
    assert [o["env"]["CUDA_VISIBLE_DEVICES"] for o in opts] == ["6", "7"]
    assert all(o["nthreads"] == gpu_threads(2) and o["resources"] == {"GPU": 1} for o in opts)
    # the host's cores shared by the GPUs, 2 to 4: an H200 machine (16 cores, 1 GPU) gets 4
    assert (gpu_threads(1, cores=16), gpu_threads(8, cores=16), gpu_threads(2, cores=6), gpu_threads(1, cores=1)) == (
        4,
        2,
        3,
        2,
    )
    assert all(o["memory_limit"] == psutil.virtual_memory().total // 2 for o in opts)
    assert gpu_worker_specs(1, memory_limit="3GiB", visible="")["gpu-0"]["options"]["memory_limit"] == "3GiB"


def test_level_pickles_for_the_workers():
    import pickle

    lv = Level("cuda", "pandas", "cupy", "sklearn", "per-gpu", ("A",), (1,))
    assert pickle.loads(pickle.dumps(lv)) == lv and lv.device == "gpu" and CPU.device == "cpu"
