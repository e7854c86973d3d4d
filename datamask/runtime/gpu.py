"""The three GPU levels, chosen once per run, and the one-line reason when none is usable.

``--device gpu`` (and ``auto`` on a machine with a usable GPU) runs at one of three levels,
with one code path; only the libraries behind a few adapters differ:

========  ============================  ==========  ==================================  =================
level     frames (per split)            arrays      k-means                             local workers
========  ============================  ==========  ==================================  =================
rapids    cudf (``frames.to_frame``)    cupy        cuML                                LocalCUDACluster
cuda      pandas / Arrow on the host    cupy        ``lloyd`` on the GPU (the host      LocalCUDACluster
                                                    sample moved once), every row       when dask-cuda is
                                                    labelled on the GPU                 importable, else
                                                                                        one per GPU
cpu       pandas / Arrow                numpy       scikit-learn (or faiss)             LocalCluster
========  ============================  ==========  ==================================  =================

Importing a GPU package proves nothing (cupy, cudf and cuml all import on a machine with no
driver), so a level is chosen by asking the runtime: ``cupy.cuda.is_available()`` and a device
count, ``torch.cuda.device_count()`` for the embedding model. :func:`probe_cupy`,
:func:`probe_torch` and :func:`probe_extras` are the only functions here that touch a GPU
library; tests replace them. ``DATAMASK_GPU_LEVEL=cuda`` keeps a RAPIDS machine on the CUDA
level (to compare the two).

The :class:`Level` travels to the workers inside each stage's arguments, and the manifest
records it (``"gpu"``: level, frame and array library, k-means backend, GPU names).
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass

from ..errors import ConfigError

__all__ = [
    "Level",
    "CPU",
    "CupyProbe",
    "TorchProbe",
    "Extras",
    "probe_cupy",
    "probe_torch",
    "probe_extras",
    "driver_cuda",
    "select_level",
    "why_no_gpu",
    "visible_devices",
    "cuda_text",
]

LEVEL_ENV = "DATAMASK_GPU_LEVEL"


@dataclass(frozen=True)
class Level:
    """What a run uses: frame and array library, k-means backend, local cluster, GPUs."""

    name: str = "cpu"  # "rapids" | "cuda" | "cpu"
    frames: str = "pandas"  # "cudf" | "pandas"
    arrays: str = "numpy"  # "cupy" | "numpy": where each split's embeddings are optimised
    kmeans: str = "sklearn"  # fit backend: "cuml" | "lloyd" (cupy) | "faiss" | "sklearn"
    cluster: str = "LocalCluster"  # "LocalCUDACluster" | "per-gpu" | "LocalCluster"
    gpus: tuple = ()  # names of the visible GPUs
    gpu_memory: tuple = ()  # their total memory, bytes

    @property
    def device(self) -> str:
        """``"gpu"`` or ``"cpu"``: the device name configs and fingerprints use."""
        return "cpu" if self.name == "cpu" else "gpu"

    @property
    def labels_on(self) -> str:
        """Where k-means labels every row: ``"gpu"`` for cuda/rapids, else ``"cpu"``."""
        return self.device

    def to_dict(self) -> dict:
        return {
            "level": self.name,
            "frames": self.frames,
            "arrays": self.arrays,
            "kmeans": self.kmeans,
            "kmeans_labels": self.labels_on,
            "cluster": self.cluster,
            "gpus": list(self.gpus),
            "gpu_memory_bytes": list(self.gpu_memory),
        }


CPU = Level()


# ---------------------------------------------------------------------- probes (the GPU-only part)
@dataclass(frozen=True)
class CupyProbe:
    version: str | None = None  # None: cupy is not importable
    error: str | None = None  # why cupy cannot use a device (first line), or why it does not import
    runtime: int | None = None  # CUDA runtime cupy was built for (13000 = 13.0)
    devices: tuple = ()  # ((name, total bytes), ...) of the visible devices


@dataclass(frozen=True)
class TorchProbe:
    version: str | None = None  # None: torch is not importable
    cuda: str | None = None  # torch.version.cuda; None: a CPU-only build
    devices: tuple = ()  # ((name, total bytes), ...)
    error: str | None = None


@dataclass(frozen=True)
class Extras:
    rapids: bool = False  # cudf and cuml import and make a frame on the device
    dask_cuda: bool = False
    faiss: bool = False


def _line(e) -> str:
    s = str(e).strip()
    return s.splitlines()[0][:200] if s else type(e).__name__


@functools.lru_cache(maxsize=1)
def driver_cuda() -> int | None:
    """The CUDA version the NVIDIA driver supports (13000 = 13.0), None without a driver.

    Asked of ``libcuda`` itself, so it answers when cupy or torch is missing or mismatched."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int(0)
        return int(v.value) if lib.cuDriverGetVersion(ctypes.byref(v)) == 0 and v.value else None
    except (OSError, AttributeError):
        return None


@functools.lru_cache(maxsize=1)
def probe_cupy() -> CupyProbe:
    try:
        import cupy
    except ImportError as e:
        return CupyProbe(error=None if getattr(e, "name", None) == "cupy" else _line(e))
    except Exception as e:  # noqa: BLE001 - a broken install (missing CUDA library) is "not usable"
        return CupyProbe(version="?", error=_line(e))
    runtime = None
    try:
        runtime = int(cupy.cuda.runtime.runtimeGetVersion())
    except Exception:  # noqa: BLE001
        pass
    try:
        n = cupy.cuda.runtime.getDeviceCount()  # without a driver: raises the runtime's reason
        devs = []
        for i in range(n):
            p = cupy.cuda.runtime.getDeviceProperties(i)
            name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
            devs.append((name, int(p["totalGlobalMem"])))
        return CupyProbe(cupy.__version__, None, runtime, tuple(devs))
    except Exception as e:  # noqa: BLE001 - cudaErrorInsufficientDriver, no device, ...
        return CupyProbe(cupy.__version__, _line(e), runtime, ())


@functools.lru_cache(maxsize=1)
def probe_torch() -> TorchProbe:
    try:
        import torch
    except ImportError:
        return TorchProbe()
    cuda = getattr(torch.version, "cuda", None)
    try:
        n = torch.cuda.device_count() if cuda else 0
        devs = tuple(
            (torch.cuda.get_device_name(i), int(torch.cuda.get_device_properties(i).total_memory)) for i in range(n)
        )
        return TorchProbe(torch.__version__, cuda, devs)
    except Exception as e:  # noqa: BLE001
        return TorchProbe(torch.__version__, cuda, (), _line(e))


@functools.lru_cache(maxsize=1)
def probe_extras(with_rapids: bool = True) -> Extras:
    import importlib.util

    rapids = False
    if with_rapids and importlib.util.find_spec("cudf") and importlib.util.find_spec("cuml"):
        try:  # importing is not enough: make a frame on the device
            import cudf
            import cuml  # noqa: F401

            rapids = len(cudf.DataFrame({"a": [1, 2]})) == 2
        except Exception:  # noqa: BLE001
            rapids = False
    return Extras(
        rapids=rapids,
        dask_cuda=importlib.util.find_spec("dask_cuda") is not None,
        faiss=importlib.util.find_spec("faiss") is not None,
    )


# ---------------------------------------------------------------------- levels
def cuda_text(v: int | None) -> str:
    """13000 -> "13.0"."""
    return "?" if not v else f"{v // 1000}.{(v % 1000) // 10}"


def _usable(needs, cp: CupyProbe, tp: TorchProbe | None) -> bool:
    """Every library in ``needs`` sees a device, and some library sees one."""
    if ("cupy" in needs and not cp.devices) or ("torch" in needs and not (tp and tp.devices)):
        return False
    return bool(cp.devices or (tp and tp.devices))


def select_level(device: str, needs=("cupy",)) -> Level:
    """The :class:`Level` for ``device`` (``"auto" | "cpu" | "gpu"``).

    ``needs``: the GPU libraries the stage computes with (``"cupy"`` for arrays, ``"torch"``
    for the embedding model). ``gpu`` without them raises :class:`ConfigError` with the reason
    (:func:`why_no_gpu`); ``auto`` falls back to the CPU.
    """
    if device not in ("auto", "cpu", "gpu"):
        raise ConfigError(f"device must be 'auto', 'cpu' or 'gpu', got {device!r}")
    if device == "cpu":
        return CPU
    cp = probe_cupy()
    driver = driver_cuda()
    # torch takes seconds to import: not asked where neither cupy nor the driver sees a GPU
    no_driver = not cp.devices and not driver and not os.path.exists("/proc/driver/nvidia")
    tp = probe_torch() if "torch" in needs and not no_driver else None
    if not _usable(needs, cp, tp):
        if device == "auto":
            return CPU
        raise ConfigError(why_no_gpu(needs, cp, tp, driver))
    devs = cp.devices or (tp.devices if tp else ())
    forced = os.environ.get(LEVEL_ENV, "").strip().lower()
    if forced not in ("", "cuda", "rapids"):
        raise ConfigError(f"{LEVEL_ENV}={forced!r}: use cuda (no RAPIDS) or leave it unset")
    ex = probe_extras(with_rapids=forced != "cuda" and "cupy" in needs)
    names, mem = tuple(d[0] for d in devs), tuple(d[1] for d in devs)
    if ex.rapids and forced != "cuda":
        return Level("rapids", "cudf", "cupy", "cuml", "LocalCUDACluster" if ex.dask_cuda else "per-gpu", names, mem)
    # k-means: Lloyd on the GPU where cupy sees one (a few GEMMs per iteration), else on the host
    kmeans = "lloyd" if cp.devices else ("faiss" if ex.faiss else "sklearn")
    return Level(
        "cuda",
        "pandas",
        "cupy" if cp.devices else "numpy",
        kmeans,
        "LocalCUDACluster" if ex.dask_cuda else "per-gpu",
        names,
        mem,
    )


def why_no_gpu(needs, cp: CupyProbe, tp: TorchProbe | None, driver: int | None) -> str:
    """One line: why ``--device gpu`` cannot run here, and the fix."""
    drv = f"the NVIDIA driver here supports CUDA {cuda_text(driver)}" if driver else "no NVIDIA driver was found"
    pkg = f"cupy-cuda{driver // 1000}x" if driver else "cupy-cuda12x or cupy-cuda13x"
    tail = "; or use --device cpu"
    if "cupy" in needs and not cp.devices:
        if cp.version is None and cp.error is None:
            if not driver:
                return f"device gpu: no CUDA GPU is usable here (cupy is not installed and {drv}){tail}"
            return f"device gpu needs cupy, which is not installed ({drv}): pip install {pkg}{tail}"
        if cp.version is None or cp.version == "?":
            return (
                f"device gpu: cupy does not import ({cp.error}); reinstall the cupy build for this CUDA "
                f"({drv}: {pkg}){tail}"
            )
        err = cp.error or "no device"
        if driver and cp.runtime and cp.runtime > driver:
            return (
                f"device gpu: cupy {cp.version} is built for CUDA {cuda_text(cp.runtime)} but {drv}: "
                f"install {pkg} or update the driver{tail}"
            )
        if not driver or "driver" in err.lower():
            return f"device gpu: no CUDA GPU is usable here ({drv}; cupy {cp.version}: {err}){tail}"
        return (
            f"device gpu: no CUDA GPU is usable here (cupy {cp.version} sees no device: {err}; "
            f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}){tail}"
        )
    if tp is None:
        return f"device gpu: no CUDA GPU is usable here ({drv}){tail}"
    if tp.version is None:
        return f"device gpu embeds with torch, which is not installed: install the torch build for CUDA ({drv}){tail}"
    if tp.cuda is None:
        return (
            f"device gpu: torch {tp.version} is a CPU-only build; install the torch build for this "
            f"CUDA ({drv}) to embed on the GPU{tail}"
        )
    tc = int(float(tp.cuda) * 1000) if tp.cuda.replace(".", "").isdigit() else None
    if driver and tc and tc // 1000 > driver // 1000:
        return (
            f"device gpu: torch {tp.version} is built for CUDA {tp.cuda} but {drv}: install a torch build "
            f"for CUDA {cuda_text(driver)} or update the driver{tail}"
        )
    why = f": {tp.error}" if tp.error else ""
    return f"device gpu: no CUDA GPU is usable here (torch {tp.version} sees no device{why}; {drv}){tail}"


def visible_devices(n: int, env: str | None = None) -> list:
    """The ``CUDA_VISIBLE_DEVICES`` value of each of ``n`` per-GPU workers: this process's
    own list when it has one (``"2,3"`` -> ``["2", "3"]``), else ``"0"``, ``"1"``, ..."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES") if env is None else env
    ids = [x.strip() for x in env.split(",") if x.strip()] if env else []
    return ids[:n] if len(ids) >= n else [str(i) for i in range(n)]
