"""``select --holdout F``: a seeded slice of every split set aside before the method runs."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

from datamask.cli import main
from datamask.pipeline.holdout import holdout_mask
from tests.helpers.pipeline_data import FILE_ROWS, args, manifest, read_out


def test_holdout_mask_is_seeded_and_sized():
    a, b, c = holdout_mask(1000, 0.1, 7), holdout_mask(1000, 0.1, 7), holdout_mask(1000, 0.1, 8)
    assert a.sum() == 100 and (a == b).all() and (a != c).any()
    assert holdout_mask(10, 0.0, 1).sum() == 0


def test_select_sets_the_holdout_aside(corpus, address, tmp_path):
    out = tmp_path / "sel"
    assert main(args(corpus, out, "--holdout", "0.1", "--ratio", "0.2", scheduler=address)) == 0
    m = manifest(out)
    held = pq.read_table(out / "holdout").to_pandas()
    sel = read_out(out).to_pandas()
    assert m["totals"]["holdout_rows"] == len(held) == sum(round(0.1 * (p["stop"] - p["start"])) for p in m["splits"])
    assert m["totals"]["rows_in"] + len(held) == sum(FILE_ROWS)
    assert not set(held.id) & set(sel.id)
    for p in m["splits"]:
        assert p["rows_out"] == round(0.2 * p["rows_in"])  # the budget is taken from the rows left
    # a split whose holdout file is missing is not finished: the rerun redoes it, with the same slice
    files = sorted((out / "holdout").glob("*.parquet"))
    assert len(files) == len(m["splits"])
    files[0].unlink()
    stamps = {f.name: f.stat().st_mtime_ns for f in files[1:]}
    assert main(args(corpus, out, "--holdout", "0.1", "--ratio", "0.2", scheduler=address)) == 0
    assert {f.name: f.stat().st_mtime_ns for f in files[1:]} == stamps  # the others resumed
    again = pq.read_table(out / "holdout").to_pandas()
    assert np.array_equal(np.sort(again.id), np.sort(held.id))
