"""Progress of a stage: one bar over splits, and one within them when the work reports it
(workers send ``(split, done)`` events on :data:`PROGRESS_TOPIC`: select's policy-gradient
steps, embed's and score's rows).

On a terminal the bars are tqdm's; when stderr is not a terminal (a log file, a pipe) they are
plain lines every :data:`INTERVAL_ENV` seconds (default 10), and no carriage return or cursor
escape (:mod:`datamask.core.progress`). The bar within the splits of a fit that may stop early
(select's policy-gradient steps: ``steps`` is a maximum) counts the steps run and their rate,
with no percentage and no time left; the bar over splits says the time left.
"""

from __future__ import annotations

from ..core.progress import INTERVAL_ENV, LineBar, bar


def _bar(total, initial=0, desc="", unit="it", leave=True):
    """The stages' bars: lines whenever stderr is not a terminal (in Jupyter too)."""
    return bar(total, initial, desc, unit, leave, jupyter=False)


__all__ = ["ProgressBars", "PROGRESS_TOPIC", "row_progress", "INTERVAL_ENV", "LineBar"]

PROGRESS_TOPIC = "datamask-progress"


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


class ProgressBars:
    """A bar over splits and, when the work reports within splits, one over its units.

    ``per_split``: ``{split name: units}`` of the pending splits (each split's rows), ``unit``
    their name; or ``steps_per``, the most steps a split may run (select's policy gradient,
    which stops early): then the inner bar counts the steps run, with no total and no time left.
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
        if self.per_split and n_pending:  # rows: known ahead
            self.steps = _bar(sum(self.per_split.values()), 0, f"{unit}s", unit, leave=False)
        elif self.steps_per and n_pending:  # at most steps_per a split: the steps run, no false time left
            self.steps = _bar(None, 0, f"policy-gradient {unit}s", unit, leave=False)
        if self.steps is not None:
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
        if self.steps is not None and self.per_split:  # a split's rows are all done (steps: as reported)
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
