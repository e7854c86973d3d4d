"""The one loop that runs a batch of Dask tasks, for every stage and pass.

The split runner (:func:`~datamask.pipeline.runner.run_pending`), dedup's corpus-wide
passes and gathers (``stages/corpus/dedup_exchange.Passes``, ``dedup_exchange.gather``) and
the search's trials (``analysis/search/schedule.run_jobs``) hand their tasks to
:func:`run_tasks`, which does the same for all of them (datatrove's executor loop):

1. submit: a Dask collection (one task per partition), a list of delayed objects, or
   futures already submitted (``client.map``);
2. collect each result on the client as its task ends, calling ``on_result(i, result)``
   (the caller's progress, checks and records);
3. on the first error, or Ctrl-C: cancel every task not started, **wait for the tasks
   still running** (a cancelled task that started runs to its end, and writes its files;
   :func:`wait_in_flight`), then raise the error. An error whose wait ended before they
   did (timeout, a second Ctrl-C) carries ``_datamask_unsettled = True``: files may still
   land, so the caller must not remove the output.

Completion markers are the callers': a task writes its own record last (a split's record,
a trial's record), or the caller writes one for the batch (a dedup pass's ``_done.json``);
a rerun submits only what has none.
"""

from __future__ import annotations

import sys
import time

__all__ = ["run_tasks", "submit", "stop", "wait_in_flight", "IN_FLIGHT_WAIT"]

IN_FLIGHT_WAIT = 300.0  # seconds a stopped run waits for the tasks still running on workers


def submit(client, tasks) -> list:
    """``tasks`` as futures: a Dask collection's partitions, delayed objects, or futures as they are."""
    from distributed import Future

    if hasattr(tasks, "to_delayed"):
        tasks = tasks.to_delayed()
    tasks = list(tasks)
    if all(isinstance(t, Future) for t in tasks):
        return tasks
    return client.compute(tasks)


def run_tasks(client, tasks, on_result=None, *, what: str = "tasks", timeout: float = IN_FLIGHT_WAIT) -> list:
    """Run ``tasks`` (see :func:`submit`) on ``client``; their results, in task order.

    ``on_result(i, result)`` runs on the client as task ``i`` ends (in the order they end);
    an error it raises stops the run as a task's error does. On the first error every other
    task is cancelled and those still running are waited for (at most ``timeout`` seconds)
    before the error is raised; ``what`` names the tasks in the line printed on Ctrl-C."""
    from distributed import as_completed

    futures = submit(client, tasks)
    index = {f.key: i for i, f in enumerate(futures)}
    results = [None] * len(futures)
    try:
        for fut in as_completed(futures, loop=client.loop):
            if fut.status == "error":
                raise fut.exception()
            i = index[fut.key]
            results[i] = fut.result()
            if on_result is not None:
                on_result(i, results[i])
    except BaseException:
        stop(client, futures, what, timeout)
        raise
    return results


def stop(client, futures, what: str = "tasks", timeout: float = IN_FLIGHT_WAIT) -> None:
    """Cancel ``futures`` and wait for those running; mark the error being raised when they
    may still write (the wait ran out, or a second Ctrl-C ended it). :func:`run_tasks` calls
    it on an error; a caller calls it for futures it submitted and no longer collects."""
    client.cancel(futures)

    def told(n):  # Ctrl-C: say why the command does not end at once
        if isinstance(sys.exc_info()[1], KeyboardInterrupt):
            print(
                f"datamask: stopping: waiting for the {n} {what} still running to end (Ctrl-C again to stop waiting)",
                file=sys.stderr,
            )

    exc = sys.exc_info()[1]
    try:
        settled = wait_in_flight(client, futures, timeout=timeout, on_wait=told)
    except KeyboardInterrupt:  # a second Ctrl-C: stop waiting
        settled = False
    if not settled and exc is not None:
        try:
            exc._datamask_unsettled = True  # tasks may still land: the output must stay
        except AttributeError:
            pass


def _running(dask_worker, names) -> int:
    """(on a worker) how many of its threads still run a task of the graphs ``names``."""
    return sum(
        1 for key in dict(dask_worker.active_threads).values() if (key[0] if isinstance(key, tuple) else key) in names
    )


def wait_in_flight(client, futures, timeout: float = IN_FLIGHT_WAIT, on_wait=None) -> bool:
    """After ``client.cancel(futures)``: wait until no worker still runs one of them (a
    cancelled task that started runs to its end, and writes its files). True when none does.
    ``on_wait(n)`` is called once when ``n`` are still running."""
    names = {f.key[0] if isinstance(f.key, tuple) else f.key for f in futures}
    deadline = time.monotonic() + timeout
    while True:
        try:
            busy = sum(client.run(_running, names=names, on_error="ignore").values() or [0])
        except Exception:  # the cluster is gone: nothing of it runs any more
            return True
        if not busy:
            return True
        if on_wait is not None:
            on_wait(busy)
            on_wait = None
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
