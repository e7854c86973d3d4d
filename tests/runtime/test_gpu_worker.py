"""A split's device work on a GPU worker, proved on CPU: one split per GPU at a time while
the next one is read, the peak GPU memory in the split's record, and an out-of-memory as one
line that names the split and the fix. Fakes stand in for cupy's pool and CUDA's errors."""

from __future__ import annotations

import sys
import threading
import time
import types

import pytest

from datamask.errors import ConfigError
from datamask.runtime.gpu import CPU, Level
from datamask.runtime.gpu_worker import DeviceWork, device_array, is_out_of_memory, out_of_memory_message

FAKE_GPU = Level("cuda", "pandas", "numpy", "sklearn", "per-gpu", ("Fake GPU",), (80 * 2**30,))


class OutOfMemoryError(MemoryError):
    """Stand-in for ``cupy.cuda.memory.OutOfMemoryError`` / ``torch.cuda.OutOfMemoryError``."""


def test_device_work_serialises_splits_while_others_read():
    """Thread B reads while A holds the device, then waits for it: reads overlap device work,
    device work never overlaps."""
    spans, reads = {}, {}

    def split(name, read_s, device_s):
        t = time.perf_counter()
        time.sleep(read_s)  # read and decode: no lock
        reads[name] = (t, time.perf_counter())
        with DeviceWork(FAKE_GPU, name, 1000) as w:
            a = time.perf_counter()
            time.sleep(device_s)
            spans[name] = (a, time.perf_counter(), w)

    a = threading.Thread(target=split, args=("A", 0.0, 0.4))
    b = threading.Thread(target=split, args=("B", 0.1, 0.1))
    a.start()
    time.sleep(0.02)
    b.start()
    a.join()
    b.join()
    (_, a1, wa), (b0, _, wb) = spans["A"], spans["B"]
    assert b0 >= a1  # B's device work starts after A's ends
    assert reads["B"][1] < a1  # B finished reading while A held the device
    assert wb.wait_seconds > 0.1 and wb.record()["wait_seconds"] > 0.1
    assert wa.record()["device_seconds"] >= 0.4


def test_cpu_level_takes_no_lock():
    inside = threading.Event()
    release = threading.Event()

    def hold():
        with DeviceWork(CPU, "A", 10):
            inside.set()
            release.wait(2)

    t = threading.Thread(target=hold)
    t.start()
    inside.wait(2)
    t0 = time.perf_counter()
    with DeviceWork(CPU, "B", 10) as w:
        pass
    release.set()
    t.join()
    assert time.perf_counter() - t0 < 0.5 and "wait_seconds" not in w.record()


@pytest.mark.parametrize(
    "message, needles",
    [
        (
            "Out of memory allocating 1,073,741,824 bytes (allocated so far: 2,147,483,648 bytes).",
            ["asked for 1.00 GiB more with 2.00 GiB already allocated"],
        ),
        (
            "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.15 GiB total capacity)",
            ["asked for 20.00 MiB more"],
        ),
        ("no numbers here", ["asked for more than was free"]),
    ],
)
def test_out_of_memory_is_one_line_naming_split_memory_and_fix(message, needles):
    with (
        pytest.raises(ConfigError) as e,
        DeviceWork(FAKE_GPU, "shard-0.parquet (rows 0-1000000)", 1_000_000, data_bytes=768 * 2**20),
    ):
        raise OutOfMemoryError(message)
    msg = str(e.value)
    for n in needles + [
        "shard-0.parquet (rows 0-1000000)",
        "ran out of memory on Fake GPU",
        "its embeddings are 768.00 MiB",
        "lower --split-size (now 1,000,000)",
    ]:
        assert n in msg, (n, msg)
    assert "\n" not in msg
    # the lock is free again: the next split can take the device
    with DeviceWork(FAKE_GPU, "next", 10):
        pass


def test_other_errors_pass_through_and_oom_is_known_by_class_name():
    with pytest.raises(ValueError, match="bad"), DeviceWork(FAKE_GPU, "x", 10):
        raise ValueError("bad")
    assert is_out_of_memory(OutOfMemoryError("x"))
    assert is_out_of_memory(type("CUDARuntimeError", (RuntimeError,), {})("cudaErrorMemoryAllocation: out of memory"))
    assert not is_out_of_memory(MemoryError("host memory"))
    # cupy's sorts: thrust's workspace allocation failing comes back as C++ bad_alloc
    assert is_out_of_memory(MemoryError("std::bad_alloc"))
    assert not is_out_of_memory(MemoryError("std::bad_alloc"), gpu=False)
    line = out_of_memory_message(OutOfMemoryError("x"), "s", 10, flag="--batch-size or --split-size")
    assert "lower --batch-size or --split-size so that" in line


def test_peak_gpu_memory_from_the_cupy_pool(monkeypatch):
    """The pool is emptied when the split takes the device and read when it leaves."""
    calls = []

    class Pool:
        def free_all_blocks(self):
            calls.append("free")

        def total_bytes(self):
            calls.append("total")
            return 3 * 2**30

    fake = types.SimpleNamespace(get_default_memory_pool=lambda: Pool(), asarray=lambda x: ("on-gpu", x))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    lv = Level("cuda", "pandas", "cupy", "sklearn", "per-gpu", ("Fake",), (1,))
    with DeviceWork(lv, "s", 10, data_bytes=2**30) as w:
        assert device_array(5, lv) == ("on-gpu", 5)
        calls.append("work")
    rec = w.record()
    assert calls == ["free", "work", "total"]
    assert rec["gpu_peak_bytes"] == 3 * 2**30 and rec["gpu_peak_ratio"] == 3.0
    assert device_array(5, CPU) == 5
    with DeviceWork(CPU, "s", 10, data_bytes=2**30) as w:
        pass
    assert "gpu_peak_bytes" not in w.record()


def test_vector_checks_run_on_the_device_with_one_read_back(fake_cp):
    """``check_vectors`` on a cupy array (the numpy stand-in) finds the first bad row with a
    single host read-back for a clean split, so the host is free to read the next split."""
    import numpy as np

    from datamask.errors import DataError
    from datamask.pipeline.schema import VECTOR_BLOCK, check_vectors
    from tests.helpers import fake_cupy

    rng = np.random.default_rng(0)
    E = rng.normal(size=(VECTOR_BLOCK + 500, 8)).astype(np.float16)
    fake_cupy.SYNCS.clear()
    check_vectors(fake_cp.asarray(E), "f.parquet (rows 0-66036)", "embedding")
    assert len(fake_cupy.SYNCS) == 1
    for row, value, needle in (
        (VECTOR_BLOCK + 7, np.nan, "NaN or inf at row 1065579"),
        (3, 0.0, "zero-norm embedding at row 1000039"),
    ):
        bad = E.copy()
        bad[row] = value
        bad[VECTOR_BLOCK + 100] = 0.0  # a later zero row: the first bad row is the one named
        with pytest.raises(DataError, match=needle):
            check_vectors(fake_cp.asarray(bad), "f.parquet", "embedding", first_row=1_000_036)
