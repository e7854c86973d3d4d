"""datamask.dask.embed / score: lazy, typed, the CLI stage's numbers, its errors."""

from __future__ import annotations

import json
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import datamask.dask as dmd
from datamask.cli import main
from datamask.errors import DataError
from tests.frames.test_frame_select import Count

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "corpus.jsonl"


def _dtypes(df):
    return {c: str(t) for c, t in df.dtypes.items()}


def test_score_equals_datamask_score(tmp_path, address):
    out = tmp_path / "scored"
    argv = [
        "score",
        str(CORPUS),
        str(out),
        "--split-size",
        "120",
        "--heuristics",
        "--normalize",
        "rank",
        "--scheduler",
        address,
        "--quiet",
    ]
    assert main(argv) == 0
    with Count() as c, dask.config.set(scheduler="sync"):
        scored = dmd.score(dmd.read(CORPUS, split_size=120), heuristics=True, normalize="rank")
        assert c.n == 0
        mine = scored.compute()
    assert _dtypes(mine) == _dtypes(scored._meta)
    cli = pq.read_table(out / "data").to_pandas().sort_values("id")
    mine = mine.sort_values("id")
    assert mine["id"].tolist() == cli["id"].tolist()
    np.testing.assert_allclose(mine["quality"].to_numpy(), cli["quality"].to_numpy(), atol=1e-6)
    assert (mine["n_tokens"].to_numpy() == cli["n_tokens"].to_numpy()).all()


def test_score_errors_name_the_partition(tmp_path):
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines()][:40]
    pdf = pd.DataFrame(rows)
    pdf["dclm"] = np.linspace(0, 1, 40)
    pdf.loc[30, "dclm"] = np.nan
    with dask.config.set({"dataframe.convert-string": False}):
        import dask.dataframe as dd

        ddf = dd.from_pandas(pdf, npartitions=2, sort=False)
    with pytest.raises(DataError, match=r"^split 1: score column 'dclm' is nan at row 30"):
        dmd.score(ddf, scores="dclm:1").compute(scheduler="sync")
    with pytest.raises(DataError, match="missing score column 'fineweb'"):
        dmd.score(ddf, scores="fineweb:1")  # the statistics cannot be planned: refused at once
    with pytest.raises(DataError, match=r"^split [01]: missing column 'body' .*--set text_column=NAME"):
        dmd.score(ddf, heuristics=True, text_column="body").compute(scheduler="sync")


@pytest.mark.slow
def test_embed_runs_the_cli_s_per_split_function(tmp_path):
    """Embeddings equal the Embedder's own, empty texts dropped as `datamask embed` drops them
    (embed_split is the CLI's per-split function; one model load, in this process)."""
    from datamask.features.embed import Embedder

    rows = [json.loads(line) for line in CORPUS.read_text().splitlines()[:12]]
    rows[3]["text"] = "   "
    small = tmp_path / "small.jsonl"
    small.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with Count() as c, dask.config.set(scheduler="sync"):
        e = dmd.embed(dmd.read(small, split_size=6))
        assert c.n == 0 and e.npartitions == 2
        mine = e.compute()
    assert _dtypes(mine) == _dtypes(e._meta) and len(mine) == 11 and rows[3]["id"] not in set(mine["id"])
    E = np.stack(mine["embedding"].to_numpy())
    F = Embedder().encode([r["text"] for i, r in enumerate(rows) if i != 3])
    np.testing.assert_allclose(E, F, atol=1e-5)
