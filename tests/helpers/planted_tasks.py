"""Tasks for the executor's tests: each marks when it starts and when it ends (files in a
folder), one of them fails while another is still running. Importable by Dask workers."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd

N_TASKS = 10
HOLD = 1.5  # seconds a task runs


def task(i, ctx):
    """Mark ``started-i``; the first task to start while another is running claims the
    failure (``failed-i``) and raises at once; every other task runs ``ctx["hold"]`` seconds
    and marks ``finished-i``. (Dask orders tasks as it likes: the failing one is whichever
    comes second, so one task is always in flight when it fails.) ``ctx["fail"]`` False: none fails."""
    d = Path(ctx["dir"])
    (d / f"started-{i}").touch()
    if ctx["fail"] and running(d, but=i):
        try:
            os.close(os.open(d / "claim", os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            pass
        else:
            (d / f"failed-{i}").touch()
            raise ValueError(f"planted failure in task {i}")
    time.sleep(ctx["hold"])
    (d / f"finished-{i}").touch()
    return {"i": i}


def marked(d, what) -> set:
    return {int(p.name.rsplit("-", 1)[1]) for p in Path(d).glob(f"{what}-*")}


def running(d, but=None) -> set:
    """Tasks started, neither finished nor failed (``but`` aside)."""
    return marked(d, "started") - marked(d, "finished") - marked(d, "failed") - {but}


def part(i, ctx):
    """A partition of a Dask frame: :func:`task`'s result as one row."""
    return pd.DataFrame({"i": [task(i, ctx)["i"]]})


def per_split(df, partition_info=None, *, splits, out_root, ctx):
    """The runner's per-split function: :func:`task` of the split's number, one record row."""
    i = partition_info["number"]
    task(i, ctx)
    from datamask.pipeline.runner import record_frame
    from datamask.pipeline.split_record import SplitRecord

    return record_frame(SplitRecord(name=splits[i].name))
