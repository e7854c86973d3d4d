"""``datamask compare --dedup``: every method runs on the deduplicated corpus."""

import json

import pyarrow.parquet as pq

from datamask.cli import main
from tests.helpers.dedup_data import write_planted


def test_compare_on_the_deduplicated_corpus(tmp_path, address):
    inp, out = tmp_path / "in", tmp_path / "out"
    expected = write_planted(inp, with_embedding=True)
    assert (
        main(
            [
                "compare",
                str(inp),
                str(out),
                "--methods",
                "topk,random",
                "--ratio",
                "0.2",
                "--dedup",
                "fuzzy,exact",
                "--split-size",
                "30",
                "--no-report",
                "--scheduler",
                address,
                "--quiet",
            ]
        )
        == 0
    )
    meta = json.loads((out / "compare.json").read_text())
    kept = {i for i, k in expected.items() if k is None}
    assert meta["dedup"]["kinds"] == {"exact": {"groups": 7, "removed": 7}, "fuzzy": {"groups": 2, "removed": 2}}
    assert meta["rows"] == meta["dedup"]["rows_out"] == len(kept)
    assert meta["input"] == str(out / "dedup" / "data")
    sel = pq.read_table(out / "selections.parquet").to_pandas()
    assert set(sel["method"]) == {"topk", "random"} and set(sel["id"]) <= kept
