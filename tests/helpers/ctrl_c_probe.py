"""Run by ``tests/cli/test_ctrl_c.py`` as a pytest session of its own, which it stops with Ctrl-C:
a test whose command waits (for a Dask scheduler that never answers), then a test that must not
run. Not collected with the suite (the name does not start with ``test_``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def test_a_command_that_waits(tmp_path):
    from datamask.cli import main

    E = np.eye(8, dtype=np.float32)
    t = pa.table(
        {
            "id": np.arange(8),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), 8),
            "quality": np.linspace(0, 1, 8).astype(np.float32),
        }
    )
    pq.write_table(t, tmp_path / "in.parquet")
    Path(os.environ["CTRL_C_PROBE"], "ready").touch()
    argv = ["select", str(tmp_path / "in.parquet"), str(tmp_path / "out"), "--quiet"]
    assert main([*argv, "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "120"]) == 0


def test_after_the_ctrl_c():
    """Must never run: tests/cli/test_ctrl_c.py checks that its marker file is absent after the Ctrl-C."""
    Path(os.environ["CTRL_C_PROBE"], "after").touch()
