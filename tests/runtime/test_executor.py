"""One executor for every batch of tasks: an error in one task cancels the tasks not
started and waits for those running before it is raised, whichever caller ran them (the
executor itself, the split runner, dedup's passes and gathers). Real LocalCluster, real
tasks; each task marks its start and its end in a folder."""

from __future__ import annotations

import time

import pytest

from datamask.runtime.executor import run_tasks
from tests.helpers.planted_tasks import HOLD, N_TASKS, marked, part, per_split, running, task


@pytest.fixture
def client(cluster):
    from distributed import Client

    with Client(cluster.scheduler_address, set_as_default=False) as c:
        yield c


def _executor(client, ctx, tmp_path, corpus):
    return run_tasks(client, client.map(task, range(N_TASKS), ctx=ctx, pure=False))


def _runner(client, ctx, tmp_path, corpus):
    from datamask.pipeline.io import discover, make_splits, parquet_rows
    from datamask.pipeline.runner import run_pending
    from datamask.pipeline.schema import Columns

    splits = [s for f in discover(str(corpus)) for s in make_splits(f, parquet_rows(f.path), 700)]
    assert len(splits) >= N_TASKS
    return run_pending(client, splits[:N_TASKS], Columns(), "cpu", per_split, {"ctx": ctx}, str(tmp_path / "out"))


def _passes(client, ctx, tmp_path, corpus):
    from datamask.stages.corpus.dedup_exchange import Passes

    return Passes(client, str(tmp_path / "passes"), quiet=True).run("planted", task, range(N_TASKS), ctx)


def _gather(client, ctx, tmp_path, corpus):
    import dask.dataframe as dd
    import pandas as pd

    from datamask.stages.corpus.dedup_exchange import gather

    meta = pd.DataFrame({"i": pd.Series([], dtype="int64")})
    frames = dd.from_map(part, range(N_TASKS), ctx=ctx, meta=meta, enforce_metadata=False)
    return gather(client, frames, "planted", True, N_TASKS)


@pytest.mark.parametrize("caller", [_executor, _runner, _passes, _gather], ids=lambda f: f.__name__[1:])
def test_an_error_cancels_the_rest_and_waits_for_those_running(caller, client, corpus, tmp_path):
    d = tmp_path / "marks"
    d.mkdir()
    ctx = {"dir": str(d), "fail": True, "hold": HOLD}
    with pytest.raises(ValueError, match="planted failure in task") as e:
        caller(client, ctx, tmp_path, corpus)
    started, failed = marked(d, "started"), marked(d, "failed")
    assert len(failed) == 1 and str(e.value) == f"planted failure in task {min(failed)}"
    assert marked(d, "finished"), "no task ran beside the failing one"
    assert not running(d), "raised while tasks were still running"
    time.sleep(HOLD + 0.5)  # a task not cancelled would start meanwhile
    assert marked(d, "started") == started
    assert len(started) < N_TASKS, "the tasks not started were not cancelled"


def test_results_come_in_task_order_and_each_is_seen_once(client, tmp_path):
    d = tmp_path / "marks"
    d.mkdir()
    seen = []
    ctx = {"dir": str(d), "fail": False, "hold": 0.0}
    got = run_tasks(client, client.map(task, range(6), ctx=ctx, pure=False), lambda i, r: seen.append((i, r["i"])))
    assert [r["i"] for r in got] == list(range(6))
    assert sorted(seen) == [(i, i) for i in range(6)]
    assert marked(d, "finished") == set(range(6))
