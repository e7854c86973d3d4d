"""A split's selection in a real Dask worker runs with the C heap's block threshold raised
(core/heap.py): the nanny starts every worker with ``MALLOC_TRIM_THRESHOLD_``, which makes each
block over 128 KiB a fresh mmap, and the selection allocates its products block by block."""

from __future__ import annotations

import logging
import os
import platform

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt"
)

SEEN: list = []


def _wrap_topk():
    """(in the worker) record, at each call of the top-k method, the environment's tunable and
    whether the heap's threshold is raised; then select as top-k does."""
    from datamask.core import heap
    from datamask.methods import registry

    inner = registry.REGISTRY["topk"]

    def probe(*args, **kw):
        SEEN.append({"env": "MALLOC_TRIM_THRESHOLD_" in os.environ, "raised": heap.raised()})
        return inner(*args, **kw)

    registry.REGISTRY["topk"] = probe
    return True


def _seen():
    from datamask.core import heap

    return {"calls": list(SEEN), "after": heap.raised()}


def test_each_split_selects_with_the_heap_threshold_raised_in_a_nanny_worker(tmp_path):
    from distributed import Client, LocalCluster

    from datamask.cli.demo import write_corpus
    from datamask.pipeline.config import SelectConfig
    from datamask.stages.split.select import run_select

    write_corpus(tmp_path / "corpus", n_rows=3000, n_files=1, dim=16, row_group_size=1000)
    cfg = SelectConfig(
        input=str(tmp_path / "corpus"),
        output=str(tmp_path / "out"),
        split_size=1000,
        method="topk",
        ratio=0.1,
        quiet=True,
        device="cpu",
    )
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,  # a nanny, as every deployed worker has
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        assert all(client.run(_wrap_topk).values())
        m = run_select(cfg, client=client)
        (seen,) = client.run(_seen).values()
    assert m["totals"]["rows_in"] == 3000 and len(m["splits"]) == 3
    # the selection and side-by-side's top-k, each split: the nanny's tunable is there, and each
    # split's work raised the threshold
    assert len(seen["calls"]) >= 3 and all(c["env"] for c in seen["calls"])
    assert all(c["raised"] for c in seen["calls"])
    assert seen["after"] is False  # restored once the splits were done
