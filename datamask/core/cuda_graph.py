"""Run a step function as a captured CUDA graph on cupy, or plainly elsewhere.

A ``pg`` step reads and writes only device arrays (its step counter included), so after
one plain run has fixed the shapes, compiled the kernels and filled the memory pool, it
can be recorded once with cupy's stream capture and replayed: one launch per step instead
of dozens of kernel launches from Python.

:class:`StepRunner` does the bookkeeping for any *capturer* (an object with ``scope()``,
``eager(fn)`` and ``capture(fn)``): the first call runs the step plainly, the second
captures it and launches the graph, later calls launch the graph. A capture that fails
falls back to plain calls for the rest of the run and says so once per process
(``warnings.warn``). :class:`CupyGraphs` is the capturer for cupy; it is the only code
here that needs a GPU (never run in the CPU suite; ``tests/core/test_pg_step.py`` drives the
runner with a fake capturer).

Memory: the captured kernels use the addresses their temporaries had during capture. The
capture allocates from a memory pool of its own, which nothing else allocates from, so
those addresses stay reserved for the graph for as long as the runner lives; the arrays
the step updates in place (logits, counters) are allocated before the first step.
"""

from __future__ import annotations

import contextlib
import os
import warnings

__all__ = ["StepRunner", "CupyGraphs", "capture_enabled", "warn_once"]

_WARNED: set = set()


def warn_once(key: str, message: str) -> bool:
    """``warnings.warn(message)`` the first time ``key`` is seen in this process."""
    if key in _WARNED:
        return False
    _WARNED.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=3)
    return True


def capture_enabled() -> bool:
    """False when ``DATAMASK_CUDA_GRAPH=0`` (plain launches, e.g. to compare timings)."""
    return os.environ.get("DATAMASK_CUDA_GRAPH", "1").strip().lower() not in ("0", "false", "no", "off")


class StepRunner:
    """Call ``step()`` once per ``__call__``: plainly, or as a graph after one plain call.

    Parameters
    ----------
    step : callable, no arguments; reads and writes device state only
    capturer : object or None
        None runs every step plainly (numpy, or capture disabled).
    """

    def __init__(self, step, capturer=None):
        self.step = step
        self.capturer = capturer
        self.graph = None
        self.mode = "plain" if capturer is None else "warm-up"
        self.calls = 0

    def scope(self):
        """Context for the whole run (cupy: the capture stream is the current stream)."""
        return self.capturer.scope() if self.capturer is not None else contextlib.nullcontext()

    def __call__(self):
        self.calls += 1
        if self.mode == "graph":
            self.graph()
        elif self.mode == "plain":
            self.step()
        elif self.mode == "warm-up":
            self.capturer.eager(self.step)
            self.mode = "capture"
        else:  # capture now, then run this step through the graph
            try:
                self.graph = self.capturer.capture(self.step)
            except Exception as exc:  # noqa: BLE001 - any failure means: no graph
                warn_once(
                    "capture",
                    f"datamask: the pg step could not be captured as a CUDA graph "
                    f"({type(exc).__name__}: {exc}); running it with plain kernel launches",
                )
                self.graph, self.mode = None, "plain"
                self.step()
                return
            self.mode = "graph"
            self.graph()


class CupyGraphs:
    """Stream capture on cupy (GPU only): a private stream and memory pool per runner."""

    def __init__(self):
        import cupy

        self.cupy = cupy
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.pool = cupy.cuda.MemoryPool()

    @contextlib.contextmanager
    def scope(self):
        # a non-blocking stream does not wait for the legacy default stream, where the
        # step's arrays were made: wait once here, and once at the end for the results
        self.cupy.cuda.Device().synchronize()
        with self.stream:
            yield
        self.stream.synchronize()

    def eager(self, fn):
        with self.cupy.cuda.using_allocator(self.pool.malloc):
            fn()

    def capture(self, fn):
        cupy = self.cupy
        stream = self.stream
        with cupy.cuda.using_allocator(self.pool.malloc):
            stream.begin_capture()
            try:
                fn()
            except BaseException:
                # end the capture, but report why the step failed: ending a broken capture
                # raises its own "capture invalidated", which would hide the cause
                try:
                    stream.end_capture()
                except Exception:  # noqa: BLE001
                    pass
                raise
            graph = stream.end_capture()
        return lambda: graph.launch(stream)
