"""datamask.dask.dedup: lazy, and the groups ``datamask dedup`` finds across partitions."""

from __future__ import annotations

import dask
import pyarrow.parquet as pq
import pytest

import datamask.dask as dmd
from datamask.cli import main
from datamask.errors import ConfigError
from tests.frames.test_frame_select import Count
from tests.helpers.dedup_data import write_planted


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    d = tmp_path_factory.mktemp("dedup_frame")
    return d, write_planted(d)


@pytest.mark.slow
def test_dedup_finds_the_cli_groups_across_partitions(planted, address, tmp_path):
    d, expected = planted
    assert (
        main(
            [
                "dedup",
                str(d),
                str(tmp_path / "out"),
                "--split-size",
                "30",
                "--scheduler",
                address,
                "--quiet",
                "--no-report",
            ]
        )
        == 0
    )
    cli = pq.read_table(tmp_path / "out" / "_datamask" / "dedup" / "groups").to_pandas()
    ddf = dmd.read(d, split_size=30)
    with Count() as c, dask.config.set(scheduler="sync"):
        kept = dmd.dedup(ddf)
        marked = dmd.dedup(ddf, keep_all=True)
        groups = dmd.dedup_groups(ddf)
        assert c.n == 0
        kept, marked, groups = dask.compute(kept, marked, groups)
    assert set(kept["id"]) == {i for i, k in expected.items() if k is None}
    assert {str(c): str(t) for c, t in kept.dtypes.items()} == {str(c): str(t) for c, t in ddf.dtypes.items()}
    dup = marked.dropna(subset=["duplicate_of"])
    assert dict(zip(dup["id"], dup["duplicate_of"])) == {i: k for i, k in expected.items() if k is not None}
    key = ["id", "kept_id", "kind"]
    assert sorted(map(tuple, groups[key].to_numpy().tolist())) == sorted(map(tuple, cli[key].to_numpy().tolist()))


def test_semantic_is_the_cli_s(planted):
    with pytest.raises(ConfigError, match="semantic"):
        dmd.dedup(dmd.read(planted[0], split_size=30), kind="exact,semantic")
