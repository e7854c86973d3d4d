"""The README's search flow end to end on real text (the Python standard library's docstrings):
``score``, ``dedup``, ``select --holdout 0.05``, ``search --eval held/holdout/``, ``datamask run
search/recipe.yaml``; no held-out row, by id or by text, is in the final selection (issue 49: 11
of 144 were), and the recipe selects the rows its verification trained on."""

from __future__ import annotations

import ast
import json
import sysconfig
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from datamask.cli import main  # noqa: E402
from tests.helpers.text_embed import hashed_embeddings  # noqa: E402

pytestmark = pytest.mark.slow

PROXY = "vocab_size=512,d_model=32,n_layers=2,n_heads=2,d_ff=64,seq_len=64,batch_size=8,lr=1e-2,eval_tokens=2000"
SEARCH = ["--ratio", "0.1", "--trials", "4", "--set", 'seeds=1', "--verify", "1", "--set", 'solver_params.steps=20', "--proxy-tokens", "4096", "--set", "proxy_options=" + str(PROXY), "--set", 'candidates=500', "--set", 'regressor=quadratic', "--space", "lam=0:1"]  # fmt: skip
PACKAGES = ("json", "email", "http", "logging", "importlib", "concurrent", "xml", "urllib", "asyncio", "unittest")


def docstrings(n: int) -> list:
    """``n`` docstrings of at least 25 words from the standard library, in a fixed order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for pkg in PACKAGES:
        for f in sorted((root / pkg).rglob("*.py")):
            if "test" in f.relative_to(root).parts[1:]:
                continue
            for node in ast.walk(ast.parse(f.read_text(errors="replace"))):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    d = ast.get_docstring(node)
                    if d and len(d.split()) >= 25 and d not in out:
                        out.append(d)
                        if len(out) == n:
                            return out
    return out


@pytest.fixture(scope="module")
def flow(tmp_path_factory, address):
    """The README's commands, each on the shared cluster; the directories they wrote."""
    root = tmp_path_factory.mktemp("flow")
    texts = docstrings(600)
    assert len(texts) >= 400, len(texts)
    texts += texts[:12]  # exact copies under new ids: dedup removes them
    E = hashed_embeddings(texts)
    (root / "raw").mkdir()
    table = pa.table(
        {
            "id": [f"doc{i}" for i in range(len(texts))],
            "text": texts,
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), E.shape[1]),
        }
    )
    pq.write_table(table, root / "raw" / "docs.parquet")
    d = {k: root / k for k in ("raw", "scored", "deduped", "held", "search")}
    on = ["--scheduler", address, "--quiet"]
    assert main(["score", str(d["raw"]), str(d["scored"]), "--heuristics", *on]) == 0
    assert main(["dedup", str(d["scored"]), str(d["deduped"]), "--kind", "exact,fuzzy", "--no-report", *on]) == 0
    assert main(["select", str(d["deduped"]), str(d["held"]), "--holdout", "0.05", "--no-report", *on]) == 0
    argv = ["search", str(d["deduped"]), str(d["search"]), "--eval", str(d["held"] / "holdout"), *SEARCH]
    assert main([*argv, "--no-report", *on]) == 0
    run = ["run", str(d["search"] / "recipe.yaml"), "--set", f"scheduler={address}", "--no-report"]
    assert main(run) == 0
    d["selected"] = root / "search-selected"
    return d


def test_no_held_out_row_is_in_the_final_selection(flow):
    held = pq.read_table(flow["held"] / "holdout").to_pandas()
    deduped = pq.read_table(flow["deduped"] / "data", columns=["id"]).num_rows
    sel = pq.read_table(flow["selected"] / "data").to_pandas()
    assert len(held) == round(0.05 * deduped) > 10 and len(sel) > 0
    assert not set(sel.id) & set(held.id)
    assert not set(sel.text) & set(held.text)
    t = json.loads((flow["selected"] / "manifest.json").read_text())["totals"]
    assert t["excluded_rows"] == t["excluded_by_id"] == t["excluded_by_text"] == len(held)
    assert t["rows_in"] == deduped - len(held)
    s = json.loads((flow["search"] / "search.json").read_text())
    assert s["leaks"] == len(held)  # the search kept the same rows out of every trial


def test_the_recipe_selects_the_rows_its_verification_trained_on(flow):
    s = json.loads((flow["search"] / "search.json").read_text())
    v = pd.read_parquet(flow["search"] / "verify.parquet")
    rows = v.loc[v.name == s["recommended"]["name"], "rows"]
    sel = pq.read_table(flow["selected"] / "data", columns=["id"]).num_rows
    assert len(rows) and (rows == sel).all()
    trials = pd.read_parquet(flow["search"] / "trials.parquet")
    assert (trials.leaks_removed == s["leaks"]).all() and np.isfinite(trials.loss).all()
