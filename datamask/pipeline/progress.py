"""Progress bars of a stage: one over splits, and one over steps when the method reports them
(workers send ``(split, step)`` events on :data:`PROGRESS_TOPIC`)."""

from __future__ import annotations

__all__ = ["ProgressBars", "PROGRESS_TOPIC"]

PROGRESS_TOPIC = "datamask-progress"


class ProgressBars:
    """A bar over splits and, when the method reports steps, one over steps."""

    def __init__(self, client, n_total, n_done, n_pending, quiet, steps_per=0, desc="splits"):
        self.quiet = quiet
        self.client = client
        self.steps_per = int(steps_per)
        self.seen = {}
        if quiet:
            return
        from tqdm.auto import tqdm

        self.parts = tqdm(total=n_total, initial=n_done, desc=desc, unit="split")
        self.steps = None
        if self.steps_per and n_pending:
            self.steps = tqdm(total=self.steps_per * n_pending, desc="steps", unit="step", leave=False)
            client.subscribe_topic(PROGRESS_TOPIC, self._on_event)

    def _on_event(self, event):
        msg = event[1] if isinstance(event, tuple) else event
        name, step = msg["name"], msg["step"]
        last = self.seen.get(name, 0)
        if self.steps is not None and step > last:
            self.steps.update(step - last)
            self.seen[name] = step

    def split_done(self, name):
        if self.quiet:
            return
        if self.steps is not None:
            last = self.seen.get(name, 0)
            self.steps.update(max(0, self.steps_per - last))
            self.seen[name] = self.steps_per
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
