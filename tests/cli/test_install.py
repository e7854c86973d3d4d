"""The package as users install it: the wheel carries the workflows it runs, and ``datamask demo``
(what ``make demo`` runs, scaled down) works from any directory with nothing of the checkout on the
path: the selection, the comparison it prints, and the HTML report's path printed last. The demo
runs once, from the installed wheel (an in-process run would repeat the same work)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_packaged_workflows_are_the_checkouts():
    """``datamask/workflows/`` (package data) and the top-level ``workflows/`` hold the same files,
    byte for byte: copy one over the other after an edit (``cp workflows/*.yaml datamask/workflows/``)."""
    top = {p.name: p.read_bytes() for p in (ROOT / "workflows").glob("*.yaml")}
    packaged = {p.name: p.read_bytes() for p in (ROOT / "datamask" / "workflows").glob("*.yaml")}
    assert "demo.yaml" in top
    assert sorted(packaged) == sorted(top)
    assert [n for n in top if packaged[n] != top[n]] == []


def _build_wheel(tmp_path) -> Path:
    """The wheel built offline from a copy of the sources (the checkout is left as it was)."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "datamask", src / "datamask", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    dist = tmp_path / "dist"
    cmd = [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation", "--no-index"]
    r = subprocess.run([*cmd, "-w", str(dist), str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # the license is an SPDX expression: setuptools warns of no deprecated license table
    assert "project.license" not in r.stdout + r.stderr
    (wheel,) = dist.glob("datamask-*.whl")
    return wheel


@pytest.mark.slow
def test_wheel_installed_into_an_empty_directory_runs_the_demo(tmp_path):
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = next(z.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    assert "datamask/workflows/demo.yaml" in names
    assert "License-Expression: Apache-2.0" in meta

    target = tmp_path / "site"
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target)]
    r = subprocess.run([*cmd, str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]

    # only the installed copy on the path (the dependencies come from this interpreter's
    # site-packages), run from a directory that holds nothing of the checkout
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    where = subprocess.run(
        # where ``import datamask`` would load it from (found, not imported: no second start-up)
        [sys.executable, "-c", "import importlib.util; print(importlib.util.find_spec('datamask').origin)"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(target), where

    corpus = "{n_rows: 6000, dim: 32, n_files: 2, n_topics: 8, n_dup_groups: 4, dup_fraction: 0.1, seed: 0}"
    sets = [
        f"corpus={corpus}",
        "split_size=3000",
        "solver_params.steps=40",
        "solver_params.eval_every=20",
        "n_workers=1",
    ]
    args = [str(target / "bin" / "datamask"), "demo", "out", "--quiet"]
    for s in sets:
        args += ["--set", s]
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout.strip().splitlines()
    head = next(line for line in out if "selection (datamask)" in line).split()
    assert head == ["selection", "(datamask)", "top-k", "quality", "random"]  # the report's three subsets
    rows = {line[:32].strip(): line[32:].split() for line in out if line.startswith(("objective", "mean quality"))}
    assert set(rows) == {"objective", "mean quality, normalised (0-1)", "mean quality, raw score"}
    assert all(len(v) == 3 for v in rows.values())
    # top-k has the highest raw quality of the three (it takes the best rows at the same budget)
    raw = [float(v) for v in rows["mean quality, raw score"]]
    assert raw[1] == max(raw)
    last = out[-1]
    assert last.startswith("report: ") and last.endswith("index.html")
    page = Path(last.removeprefix("report: "))
    assert page.is_absolute() and page == (cwd / "out" / "selected" / "report" / "index.html").resolve()
    assert "<img" in page.read_text()
