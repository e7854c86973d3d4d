"""Progress of a stage: one bar over splits, and one within them when the work reports it
(workers send ``(split, done)`` events on :data:`PROGRESS_TOPIC`: select's policy-gradient
steps, embed's and score's rows).

On a terminal the bars are tqdm's; when stderr is not a terminal (a log file, a pipe) they are
plain lines every :data:`INTERVAL_ENV` seconds (default 10) with the rate and the time left,
and no cursor escapes.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["ProgressBars", "PROGRESS_TOPIC", "row_progress", "INTERVAL_ENV", "LineBar"]

PROGRESS_TOPIC = "datamask-progress"
INTERVAL_ENV = "DATAMASK_PROGRESS_INTERVAL"  # seconds between plain progress lines (not a terminal)


def row_progress(name):
    """On a Dask worker, ``cb(done)`` that reports ``done`` rows (or steps) of the split
    ``name`` to the client's bars; None elsewhere (no worker: nobody listens)."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return None

    def cb(done):
        worker.log_event(PROGRESS_TOPIC, {"name": name, "step": int(done)})

    return cb


def _interval() -> float:
    try:
        return max(0.0, float(os.environ.get(INTERVAL_ENV, 10)))
    except ValueError:
        return 10.0


def _duration(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class LineBar:
    """tqdm's ``update``/``close`` as plain lines on stderr: ``datamask: rows 1,024/3,000 (34%),
    210 rows/s, 0:09 left``, at most every ``interval`` seconds, and at ``close`` when it is
    kept (``leave``)."""

    def __init__(self, total, initial=0, desc="", unit="it", leave=True, interval=None):
        self.total, self.n, self.desc, self.unit, self.leave = int(total), int(initial), desc, unit, leave
        self.start = self.shown = self.n
        self.interval = _interval() if interval is None else float(interval)
        self.t0 = self.last = time.monotonic()

    def update(self, k=1):
        self.n += int(k)
        now = time.monotonic()
        if self.n != self.shown and now - self.last >= self.interval:
            self.last = now
            self._line(now)

    def _line(self, now):
        self.shown = self.n
        rate = (self.n - self.start) / max(now - self.t0, 1e-9)
        pct = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        speed = f"{rate:.3g} {self.unit}s/s" if rate >= 1 or rate == 0 else f"{1 / rate:.3g} s/{self.unit}"
        left = f", {_duration((self.total - self.n) / rate)} left" if rate > 0 and self.total > self.n else ""
        print(f"datamask: {self.desc} {self.n:,}/{self.total:,}{pct}, {speed}{left}", file=sys.stderr, flush=True)

    def close(self):
        if self.leave and self.n != self.shown:  # the last count, unless it was just printed
            self._line(time.monotonic())


def _bar(total, initial=0, desc="", unit="it", leave=True):
    """tqdm on a terminal; :class:`LineBar` when stderr is a file or a pipe."""
    if not sys.stderr.isatty():
        return LineBar(total, initial, desc, unit, leave)
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=leave)


class ProgressBars:
    """A bar over splits and, when the work reports within splits, one over its units.

    ``per_split``: ``{split name: units}`` of the pending splits (each split's rows; select
    passes ``steps_per`` instead: the same steps for every split), ``unit`` their name.
    """

    def __init__(
        self, client, n_total, n_done, n_pending, quiet, steps_per=0, desc="splits", per_split=None, unit="step"
    ):
        self.quiet = quiet
        self.client = client
        self.per_split = dict(per_split or {})
        self.steps_per = int(steps_per)
        self.seen = {}
        if quiet:
            return
        self.parts = _bar(n_total, n_done, desc, "split")
        self.steps = None
        inner = sum(self.per_split.values()) if self.per_split else self.steps_per * n_pending
        if inner and n_pending:
            self.steps = _bar(inner, 0, f"{unit}s", unit, leave=False)
            client.subscribe_topic(PROGRESS_TOPIC, self._on_event)

    def _total(self, name):
        return self.per_split.get(name, self.steps_per)

    def _on_event(self, event):
        msg = event[1] if isinstance(event, tuple) else event
        name, step = msg["name"], min(msg["step"], self._total(msg["name"]))
        last = self.seen.get(name, 0)
        if self.steps is not None and step > last:
            self.steps.update(step - last)
            self.seen[name] = step

    def split_done(self, name):
        if self.quiet:
            return
        if self.steps is not None:
            last = self.seen.get(name, 0)
            self.steps.update(max(0, self._total(name) - last))
            self.seen[name] = self._total(name)
        self.parts.update(1)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(failed=exc_type is not None)
        return False

    def close(self, failed=False):
        """Close the bars; after a failure they are cleared, so the error line stands alone."""
        if self.quiet:
            return
        if self.steps is not None:
            try:
                self.client.unsubscribe_topic(PROGRESS_TOPIC)
            except Exception:
                pass
            self.steps.leave = self.steps.leave and not failed
            self.steps.close()
        self.parts.leave = not failed
        self.parts.close()
