"""Ctrl-C during the test suite stops it at once, with its summary (issue 49: ``make test``
interrupted went on, then ended in ``Segmentation fault`` with no summary). A test that runs
``datamask``'s ``main()`` in-process gets the KeyboardInterrupt as a command does (its line,
exit 130); ``tests/conftest.py`` notes the Ctrl-C and ends the session after that test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ctrl_c_ends_the_session_with_its_summary(tmp_path):
    env = dict(os.environ, CTRL_C_PROBE=str(tmp_path), PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/helpers/ctrl_c_probe.py"]
    p = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a process group of its own, as a terminal's foreground job is
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a terminal's Ctrl-C, not ignored
    )
    t0 = time.monotonic()
    while not (tmp_path / "ready").exists() and p.poll() is None and time.monotonic() - t0 < 120:
        time.sleep(0.05)
    time.sleep(1.0)  # the command is waiting for its scheduler
    os.killpg(p.pid, signal.SIGINT)  # Ctrl-C: the whole group
    out = p.communicate(timeout=120)[0].decode(errors="replace")
    assert p.returncode == 2, out[-3000:]
    assert "interrupted (Ctrl-C)" in out and "datamask: interrupted" in out, out[-3000:]
    assert "1 failed" in out, out[-3000:]  # the summary of the tests run so far
    assert not (tmp_path / "after").exists()  # the session stopped: no later test ran
