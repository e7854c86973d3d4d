"""Progress bars that suit where stderr goes: tqdm's on a terminal, plain lines elsewhere.

:func:`bar` is the one way datamask opens a bar (the stages' bars over splits and rows, the
estimator's over steps and picks, the search's over models, the proxy LM's over tokens). When
stderr is not a terminal (a log file, a pipe, a scheduled job) it is a :class:`LineBar`: one
line ``datamask: rows 1,024/3,000 (34%), 210 rows/s, 0:09 left`` at most every
:data:`INTERVAL_ENV` seconds (default 10), no carriage return, no cursor escape. A bar whose
total is not known ahead (``total=None``: a fit that stops when it stops improving) counts the
work done and its rate, with no percentage and no time left.

:func:`quiet_library_bars` keeps the libraries datamask drives (transformers, sentence-transformers,
model2vec, huggingface_hub: each a tqdm of its own) from drawing carriage-return bars into such a
log: the command line runs inside it, and the worker processes it starts inherit it.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager

__all__ = ["LineBar", "bar", "INTERVAL_ENV", "quiet_library_bars", "duration"]

INTERVAL_ENV = "DATAMASK_PROGRESS_INTERVAL"  # seconds between plain progress lines (not a terminal)


def _interval() -> float:
    try:
        return max(0.0, float(os.environ.get(INTERVAL_ENV, 10)))
    except ValueError:
        return 10.0


def duration(s: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour."""
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _count(n: float) -> str:
    return f"{n:,}" if float(n).is_integer() else f"{n:,.3g}"


class LineBar:
    """tqdm's ``update``/``close``/``set_postfix`` as plain lines on stderr, at most every
    ``interval`` seconds, and at ``close`` when it is kept (``leave``). ``total=None``: the work
    done and its rate, no percentage and no time left."""

    def __init__(self, total, initial=0, desc="", unit="it", leave=True, interval=None, disable=False):
        self.total = None if total is None else int(total)
        self.n, self.desc, self.unit, self.leave, self.disable = int(initial), desc, unit, leave, disable
        self.start = self.shown = self.n
        self.interval = _interval() if interval is None else float(interval)
        self.t0 = self.last = time.monotonic()
        self.postfix = ""

    def update(self, k=1):
        self.n += int(k)
        now = time.monotonic()
        if self.n != self.shown and now - self.last >= self.interval:
            self.last = now
            self._line(now)

    def set_postfix(self, ordered_dict=None, refresh=True, **kw):
        """What the next line ends with (tqdm's postfix: ``objective 0.41200``)."""
        kw = {**(ordered_dict or {}), **kw}
        self.postfix = ", ".join(f"{k} {v}" for k, v in kw.items())

    def _line(self, now):
        self.shown = self.n
        if self.disable:
            return
        rate = (self.n - self.start) / max(now - self.t0, 1e-9)
        speed = f"{rate:.3g} {self.unit}s/s" if rate >= 1 or rate == 0 else f"{1 / rate:.3g} s/{self.unit}"
        if self.total is None:  # open-ended: what was done, never a time left
            head = f"{self.desc} {_count(self.n)} so far"
        else:
            pct = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
            head = f"{self.desc} {_count(self.n)}/{_count(self.total)}{pct}"
        left = ""
        if self.total is not None and rate > 0 and self.total > self.n:
            left = f", {duration((self.total - self.n) / rate)} left"
        post = f" ({self.postfix})" if self.postfix else ""
        prefix = "" if self.desc.startswith("datamask") else "datamask: "
        print(f"{prefix}{head}, {speed}{left}{post}", file=sys.stderr, flush=True)

    def close(self):
        if self.leave and self.n != self.shown:  # the last count, unless it was just printed
            self._line(time.monotonic())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def bar(total, initial=0, desc="", unit="it", leave=True, disable=False, jupyter=True, **tqdm_kw):
    """A progress bar: tqdm on a terminal, :class:`LineBar` when stderr is a file or a pipe
    (``total=None``: open-ended, see :class:`LineBar`); ``tqdm_kw`` go to tqdm only. In a Jupyter
    kernel (stderr not a terminal either): tqdm's own when ``jupyter``, else lines."""
    kernel = type(sys.stderr).__name__ == "OutStream"  # ipykernel's stream
    if not sys.stderr.isatty() and not (jupyter and kernel):
        return LineBar(total, initial, desc, unit, leave, disable=disable)
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=leave, disable=disable, **tqdm_kw)


@contextmanager
def quiet_library_bars():
    """While it is open, when stderr is not a terminal: no library's tqdm bar in this process or
    in the processes it starts (``TQDM_DISABLE``, read by every tqdm bar that does not set
    ``disable`` itself; ``HF_HUB_DISABLE_PROGRESS_BARS``). datamask's own bars are :func:`bar`'s
    lines. The environment is restored on exit."""
    keys = ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS")
    saved = {k: os.environ.get(k) for k in keys}
    if not sys.stderr.isatty():
        for k in keys:
            os.environ.setdefault(k, "1")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
