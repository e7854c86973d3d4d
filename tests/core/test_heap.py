"""core/heap.py on the real C library: inside ``large_blocks`` a 4 MiB block comes from the
heap where a Dask worker's environment would have mmap'd it, and the process's threshold is
back afterwards."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt"
)

# counts the mmap'd blocks (mallinfo2's hblks) that one 4 MiB malloc adds, outside, inside and
# after the context
PROBE = r"""
import ctypes, json
from datamask.core.heap import large_blocks

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]

def mmapped_by_one_block():
    before = libc.mallinfo2().hblks
    p = libc.malloc(4 << 20)
    added = libc.mallinfo2().hblks - before
    libc.free(p)
    return int(added)

out = {"outside": mmapped_by_one_block()}
with large_blocks():
    out["inside"] = mmapped_by_one_block()
out["after"] = mmapped_by_one_block()
print(json.dumps(out))
"""


def _probe(env_extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_dask_workers_environment_gets_heap_blocks_inside_and_its_threshold_back():
    # distributed's nanny.pre-spawn-environ: what every Dask worker process starts with
    got = _probe({"MALLOC_TRIM_THRESHOLD_": "65536"})
    assert got == {"outside": 1, "inside": 0, "after": 1}


def test_a_threshold_the_environment_set_is_restored():
    got = _probe({"MALLOC_MMAP_THRESHOLD_": str(64 << 20)})  # pinned above the block: heap throughout
    assert got == {"outside": 0, "inside": 0, "after": 0}


def test_no_tunables_leaves_glibcs_sliding_threshold_alone():
    # without tunables the first 4 MiB block is mmap'd (threshold 128 KiB), and freeing it raises
    # the sliding threshold past it: the context must not pin anything, so the slide still happens
    got = _probe({})
    assert got == {"outside": 1, "inside": 0, "after": 0}
