"""What a worker does around one split's device work, the same on every level.

* **One split at a time per GPU, reads alongside.** A GPU worker runs 2 to 4 threads (the
  host's cores per GPU, :func:`~datamask.runtime.client.gpu_threads`): while one split holds
  the device (:class:`DeviceWork`, a per-process lock: one worker process per GPU), the other
  threads read and decode the next splits on the host; a split's embedding NaN and norm
  checks run on the device once it holds it (:func:`~datamask.pipeline.schema.check_vectors`).
  Results do not change: each split has its own seed and the device work of splits never
  interleaves.
* **Peak GPU memory per split**: the cupy pool is emptied when a split takes the device and
  its size read when it leaves (the pool only grows in between, so that is the split's peak),
  plus torch's ``max_memory_allocated``; recorded in the split's record.
* **Out of memory is one line**: cupy's and torch's ``OutOfMemoryError`` (recognised by class
  name, so tests can raise a stand-in) become a :class:`~datamask.errors.ConfigError` naming
  the split, the memory it asked for and the fix (a smaller ``--split-size``).

On the CPU level :class:`DeviceWork` takes no lock and measures nothing: CPU workers are
single-threaded processes.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time

from ..errors import ConfigError

__all__ = ["DeviceWork", "device_array", "is_out_of_memory", "out_of_memory_message", "worker_label", "format_bytes"]

_LOCK = threading.Lock()  # one per worker process, and a GPU worker process owns one GPU


def device_array(x, level):
    """``x`` on the level's array library: copied to the GPU once (cupy), else unchanged."""
    if level.arrays == "cupy":
        import cupy

        return cupy.asarray(x)
    return x


def format_bytes(n) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"


def worker_label() -> str:
    """``host/gpuN`` (its ``CUDA_VISIBLE_DEVICES``) on a GPU worker, else the worker's address."""
    host = os.uname().nodename if hasattr(os, "uname") else "local"
    dev = os.environ.get("CUDA_VISIBLE_DEVICES")
    if dev:
        return f"{host}/gpu{dev.split(',')[0]}"
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return f"{host}/pid{os.getpid()}"


def is_out_of_memory(e: BaseException, gpu: bool = True) -> bool:
    """cupy's ``cupy.cuda.memory.OutOfMemoryError``, torch's ``torch.cuda.OutOfMemoryError``
    (by class name), a CUDA runtime error that says it could not allocate, or the plain
    ``MemoryError("std::bad_alloc")`` that cupy's sorts raise when thrust's workspace does
    not fit (cupy >= 14.1 turns the pool's out-of-memory there into a C++ ``bad_alloc``);
    that one only when ``gpu``, since on the host it would be the host's memory."""
    if any(c.__name__ == "OutOfMemoryError" for c in type(e).__mro__):
        return True
    if gpu and isinstance(e, MemoryError) and "bad_alloc" in str(e):
        return True
    return type(e).__name__ == "CUDARuntimeError" and "cudaErrorMemoryAllocation" in str(e)


_CUPY = re.compile(r"allocating ([\d,]+) bytes(?: \(allocated so far: ([\d,]+) bytes)?")
_TORCH = re.compile(r"Tried to allocate ([\d.]+ ?[KMGT]?i?B)")


def out_of_memory_message(
    e: BaseException,
    where: str,
    split_size: int,
    data_bytes: int | None = None,
    gpu: str | None = None,
    flag: str = "--split-size",
) -> str:
    """The one line for a CUDA out-of-memory while ``where`` held the device."""
    msg = str(e)
    m = _CUPY.search(msg)
    if m:
        need = f"it asked for {format_bytes(int(m.group(1).replace(',', '')))} more"
        if m.group(2):
            need += f" with {format_bytes(int(m.group(2).replace(',', '')))} already allocated"
    elif (t := _TORCH.search(msg)) is not None:
        need = f"it asked for {t.group(1)} more"
    else:
        need = "it asked for more than was free"
    data = f"; its embeddings are {format_bytes(data_bytes)}" if data_bytes else ""
    on = f" on {gpu}" if gpu else ""
    if flag.split(" ", 1)[0] in ("raise", "lower"):  # a whole hint ("raise --n-clusters ...")
        hint = flag
    else:
        now = f" (now {int(split_size):,})" if flag == "--split-size" else ""
        hint = f"lower {flag}{now} so that each split fits"
    return f"{where}: the GPU ran out of memory{on} ({need}{data}); {hint}, or free the GPU from other processes"


class DeviceWork:
    """``with DeviceWork(level, where, split_size) as w:`` around a split's device work.

    Holds the per-GPU lock (GPU levels), measures the peak GPU memory and turns an
    out-of-memory into a :class:`ConfigError`. :meth:`record` gives the split record's
    fields: ``device_seconds``, ``wait_seconds`` (for the GPU) and ``gpu_peak_bytes``.
    """

    def __init__(self, level, where: str, split_size: int, data_bytes: int | None = None, flag: str = "--split-size"):
        self.level = level
        self.where = where
        self.split_size = int(split_size)
        self.data_bytes = data_bytes
        self.flag = flag
        self.wait_seconds = 0.0
        self.device_seconds = 0.0
        self.peak_bytes = None
        self._t = 0.0
        self._locked = False

    @property
    def on_gpu(self) -> bool:
        return self.level.device == "gpu"

    def __enter__(self):
        t = time.perf_counter()
        if self.on_gpu:
            _LOCK.acquire()
            self._locked = True
        self._t = time.perf_counter()
        self.wait_seconds = self._t - t
        if self.on_gpu:
            _reset_peak(self.level)
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.device_seconds = time.perf_counter() - self._t
            if self.on_gpu:
                self.peak_bytes = _peak(self.level)
        finally:
            if self._locked:
                self._locked = False
                _LOCK.release()
        if exc is not None and is_out_of_memory(exc, gpu=self.on_gpu):
            gpu = self.level.gpus[0] if self.level.gpus else None
            raise ConfigError(
                out_of_memory_message(exc, self.where, self.split_size, self.data_bytes, gpu, self.flag)
            ) from None
        return False

    def record(self) -> dict:
        rec = {"worker": worker_label(), "device_seconds": round(self.device_seconds, 3)}
        if self.on_gpu:
            rec["wait_seconds"] = round(self.wait_seconds, 3)
        if self.peak_bytes is not None:
            rec["gpu_peak_bytes"] = int(self.peak_bytes)
            if self.data_bytes:
                rec["gpu_peak_ratio"] = round(self.peak_bytes / self.data_bytes, 3)
        return rec


# ---------------------------------------------------------------------- GPU-only measurement
def _torch_cuda():
    torch = sys.modules.get("torch")  # only when this process already uses torch
    try:
        return torch if torch is not None and torch.cuda.is_initialized() else None
    except Exception:  # noqa: BLE001
        return None


def _reset_peak(level):
    if level.arrays == "cupy":
        try:
            import cupy

            cupy.get_default_memory_pool().free_all_blocks()
        except Exception:  # noqa: BLE001 - measuring must never fail the split
            pass
    torch = _torch_cuda()
    if torch is not None:
        torch.cuda.reset_peak_memory_stats()


def _peak(level) -> int | None:
    total, seen = 0, False
    if level.arrays == "cupy" and "cupy" in sys.modules:
        try:
            total += int(sys.modules["cupy"].get_default_memory_pool().total_bytes())
            seen = True
        except Exception:  # noqa: BLE001
            pass
    torch = _torch_cuda()
    if torch is not None:
        total += int(torch.cuda.max_memory_allocated())
        seen = True
    return total if seen else None
