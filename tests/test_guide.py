"""The guide is a test: every example of docs/design.md, "Extending datamask", applied to a
copy of the package and run through the command line, as a newcomer following it would.

Each example is a ``python`` block whose first line names the file it goes into
(``# datamask/...``); the block is appended to that file of the copy (a new file when the
package has none). Then, with the copy first on ``PYTHONPATH`` (a ``dask scheduler`` and a
``dask worker`` process read it too), the method ``first`` runs in ``select`` and in
``compare``, with rows and with ``--tokens``; the objective ``mean_cos`` in a default
``DataMask`` fit and in ``select``; the stage ``lines`` alone, in a workflow and in
``status``. A change to the design that breaks an example fails here, and so does an
example that stops saying how the design is used.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers.dask_processes import dask_processes

ROOT = Path(__file__).resolve().parents[1]
FILES = (300, 200)  # rows per file; --split-size 200 cuts them into 150+150 and 200
SPLIT = "200"


def guide_examples(text: str) -> list[tuple[str, str]]:
    """``[(path, code)]`` of the python blocks of the section "Extending datamask"."""
    section = text.split("## Extending datamask", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    out = []
    for b in blocks:
        first = b.splitlines()[0]
        assert first.startswith("# datamask/"), f"an example must open with the file it goes into: {first!r}"
        out.append((first[2:].split()[0], b))
    return out


@pytest.fixture(scope="module")
def guide(tmp_path_factory):
    """The copy of the package with the guide applied, and the environment that runs it."""
    root = tmp_path_factory.mktemp("guide")
    shutil.copytree(ROOT / "datamask", root / "datamask", ignore=shutil.ignore_patterns("__pycache__"))
    examples = guide_examples((ROOT / "docs" / "design.md").read_text())
    assert {p for p, _ in examples} >= {
        "datamask/methods/first.py",
        "datamask/core/diversity.py",
        "datamask/stages/split/lines.py",
    }
    for path, code in examples:
        f = root / path
        f.write_text((f.read_text() + "\n\n" if f.exists() else "") + code)
    env = dict(os.environ, PYTHONPATH=str(root))
    return root, env


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Two Parquet files: ids, texts of 1 to 5 lines, unit embeddings, quality, n_tokens."""
    d = tmp_path_factory.mktemp("guide-corpus")
    rng = np.random.default_rng(0)
    lo = 0
    for i, n in enumerate(FILES):
        E = rng.normal(size=(n, 16)).astype(np.float32)
        E /= np.linalg.norm(E, axis=1, keepdims=True)
        lines = rng.integers(1, 6, size=n)
        table = pa.table(
            {
                "id": pa.array(np.arange(lo, lo + n, dtype=np.int64)),
                "text": ["\n".join(f"line {j} of doc {lo + r}" for j in range(k)) for r, k in enumerate(lines)],
                "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), 16),
                "quality": pa.array(rng.random(n).astype(np.float32)),
                "n_tokens": pa.array(rng.integers(20, 200, size=n).astype(np.int32)),
            }
        )
        pq.write_table(table, d / f"part-{i}.parquet")
        lo += n
    return d


@pytest.fixture(scope="module")
def scheduler(guide, tmp_path_factory):
    """A real ``dask scheduler`` and ``dask worker`` reading the guide's copy of the package."""
    with dask_processes(tmp_path_factory.mktemp("guide-dask"), n_workers=1, env=guide[1]) as (addr, _):  # noqa: SIM117
        yield addr


def datamask(guide, *argv, check=True):
    """``datamask ARGV`` on the guide's copy; (exit code, stdout, stderr)."""
    _, env = guide
    cmd = [sys.executable, "-c", "import sys; from datamask.cli import main; sys.exit(main())", *map(str, argv)]
    r = subprocess.run(cmd, env=env, cwd=guide[0], capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r.returncode, r.stdout, r.stderr


def test_the_copy_runs_and_mean_cos_in_a_default_fit(guide):
    """The copy is what imports (the method registered), and a default ``DataMask`` fit of
    the guide's objective works and reports it."""
    root, env = guide
    code = (
        "import numpy as np, datamask, datamask.methods as m; from datamask import DataMask, evaluate; "
        "print(datamask.__file__, 'first' in m.REGISTRY); "
        "rng = np.random.default_rng(0); E = rng.normal(size=(400, 16)); E /= np.linalg.norm(E, axis=1, keepdims=True); "
        "q = rng.random(400); est = DataMask(ratio=0.1, diversity='mean_cos', seed=0).fit(E, q); "
        "S = int(est.mask_.sum()); r = evaluate(E, q, est.mask_, diversity='mean_cos'); "
        "C = E[est.mask_] @ E[est.mask_].T; print(S, r['diversity'], -C.mean(), est.init_)"
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (path, registered), (S, got, want, init) = (line.split() for line in r.stdout.splitlines())
    assert path.startswith(str(root)) and registered == "True"
    # float64 arrays: the objective's formula and the direct mean agree to rounding
    assert int(S) == 40 and abs(float(got) - float(want)) < 1e-9  # minus the mean cosine, diagonal included
    assert init == "quality"  # no relaxation: the default start is the quality-aware one


def _manifest(out):
    return json.loads((out / "manifest.json").read_text())


def test_method_first_in_select_with_rows_and_tokens(guide, corpus, scheduler, tmp_path):
    common = ["--split-size", SPLIT, "--scheduler", scheduler, "--quiet", "--no-report", "--method", "first"]
    datamask(guide, "select", corpus, tmp_path / "rows", "--ratio", 0.1, *common)
    m = _manifest(tmp_path / "rows")
    assert [s["rows_out"] for s in m["splits"]] == [15, 15, 20]
    got = pq.read_table(tmp_path / "rows" / "data").column("id").to_pylist()
    assert sorted(got) == list(range(15)) + list(range(150, 165)) + list(range(300, 320))  # each split's first rows

    datamask(guide, "select", corpus, tmp_path / "tok", "--tokens", 5000, *common)
    t = _manifest(tmp_path / "tok")["totals"]["tokens"]
    assert t["budget"] == 5000 and 0 < t["tokens_out"] <= 5000


@pytest.mark.parametrize("budget", [["--ratio", 0.1], ["--tokens", 5000]], ids=["rows", "tokens"])
def test_method_first_in_compare(guide, corpus, scheduler, tmp_path, budget):
    out = tmp_path / "cmp"
    datamask(guide, "compare", corpus, out, "--methods", "first,topk", "--split-size", SPLIT, *budget,
             "--scheduler", scheduler, "--quiet", "--no-report")  # fmt: skip
    import pandas as pd

    t = pd.read_csv(out / "compare.csv", index_col="method")
    assert list(t.index) == ["first", "topk"]
    if budget[0] == "--ratio":
        assert t.loc["first", "selected"] == t.loc["topk", "selected"] == 50
    else:
        assert t["tokens"].max() <= 5000 and t.loc["first", "tokens"] > 0
    assert t.loc["topk", "quality"] > t.loc["first", "quality"]


def test_objective_mean_cos_in_select(guide, corpus, scheduler, tmp_path):
    out = tmp_path / "sel"
    datamask(guide, "select", corpus, out, "--diversity", "mean_cos", "--ratio", 0.1, "--set", 'solver_params.steps=100', "--split-size", SPLIT, "--scheduler", scheduler, "--quiet", "--no-report")  # fmt: skip
    m = _manifest(out)
    assert m["config"]["diversity"] == "mean_cos" and m["totals"]["rows_out"] == 50
    assert all(s["after"]["objective"] >= s["before"]["objective"] for s in m["splits"])


def test_stage_lines_alone_in_a_workflow_and_in_status(guide, corpus, scheduler, tmp_path):
    out = tmp_path / "lines"
    _, printed, _ = datamask(guide, "lines", corpus, out, "--split-size", SPLIT, "--scheduler", scheduler)
    t = pq.read_table(out / "data").sort_by("id")
    text = pq.read_table(corpus).sort_by("id").column("text").to_pylist()
    assert t.column("n_lines").to_pylist() == [s.count("\n") + 1 for s in text]
    m = _manifest(out)
    assert m["stage"] == "lines" and m["totals"]["lines"] == sum(s.count("\n") + 1 for s in text)
    assert f"counted {m['totals']['lines']:,} lines in 500 rows in 3 splits" in printed
    assert datamask(guide, "status", out)[1].startswith(f"{out}: datamask lines output, complete (3 splits")

    wf = tmp_path / "wf.yaml"
    wf.write_text(
        f"stages: [lines, select]\ninput: {corpus}\noutput: {tmp_path / 'chain'}\nsplit_size: {SPLIT}\n"
        f"scheduler: {scheduler}\nquiet: true\nselect:\n  method: topk\n  ratio: 0.1\n"
    )
    datamask(guide, "run", wf, "--no-report")
    sel = pq.read_table(tmp_path / "chain" / "select" / "data")
    assert sel.num_rows == 50 and "n_lines" in sel.schema.names
