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


def _chains(directory):
    """Near copies of near copies, exact copies of originals and of near copies, null and empty
    texts, quality with ties and NaN, in two files; the texts in file order and their ids."""
    import numpy as np
    import pyarrow as pa

    from tests.helpers.dedup_data import exact_copy, near_copy, text, vocab

    rng = np.random.default_rng(4)
    words = vocab(seed=4)
    texts = [text(rng, words) for _ in range(80)]
    texts += [near_copy(texts[i], rng, words) for i in range(10)]  # 80-89: near copies of 0-9
    texts += [near_copy(texts[i], rng, words) for i in range(80, 85)]  # chains: near copies of near copies
    texts += [exact_copy(texts[i]) for i in [*range(5, 15), *range(85, 90)]] + [None, "", ""]
    order = rng.permutation(len(texts))
    texts = [texts[i] for i in order]
    ids = [f"doc-{i:03d}" for i in range(len(texts))]
    quality = rng.choice([0.2, 0.5, 0.5, 0.9, np.nan], size=len(texts))
    table = pa.table({"id": ids, "text": texts, "quality": quality})
    pq.write_table(table.slice(0, 60), directory / "a.parquet")
    pq.write_table(table.slice(60), directory / "b.parquet")
    return texts, ids, quality


@pytest.mark.slow
def test_the_three_paths_keep_the_same_rows(tmp_path, address):
    """``datamask dedup``, :class:`~datamask.dedup.Deduplicator` and ``datamask.dask.dedup`` run one
    core: the same groups, kinds and kept rows (the best quality, NaN lowest, ties to the first row)."""
    import numpy as np

    from datamask.dedup import Deduplicator

    (tmp_path / "in").mkdir()
    texts, ids, quality = _chains(tmp_path / "in")
    out = tmp_path / "out"
    assert main(["dedup", str(tmp_path / "in"), str(out), "--split-size", "30", "--scheduler", address, "--quiet"]) == 0
    cli = pq.read_table(out / "_datamask" / "dedup" / "groups").to_pandas()[["id", "kept_id", "kind"]]
    with dask.config.set(scheduler="sync"):
        frame = dmd.dedup_groups(dmd.read(tmp_path / "in", split_size=30)).compute()[["id", "kept_id", "kind"]]
    d = Deduplicator().fit(texts, quality=quality)
    gone = np.flatnonzero(d.duplicate_of_ >= 0)
    memory = {(ids[i], ids[d.duplicate_of_[i]], d.removed_by_[i]) for i in gone}
    assert set(map(tuple, cli.to_numpy().tolist())) == memory == set(map(tuple, frame.to_numpy().tolist()))
    assert {k for _, _, k in memory} == {"exact", "fuzzy"} and len(memory) == 15 + 15 + 1  # near, exact, ""
    rank = np.where(np.isnan(quality), -np.inf, quality)
    for kept in set(d.duplicate_of_[gone]):
        members = np.flatnonzero((d.duplicate_of_ == kept) | (np.arange(len(texts)) == kept))
        best = members[rank[members] == rank[members].max()]
        assert kept == best.min()
