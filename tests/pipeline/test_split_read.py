"""A split held once: read in batches into one (N, d) array, Arrow-backed through the
partition frame, and a numpy view of that same buffer when it reaches the method
(benchmarks/results/split_memory.md measures the memory)."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import datamask.runtime.files as files
from datamask.errors import DataError
from datamask.pipeline.io import Split, read_split
from datamask.pipeline.schema import Columns

D = 32
F16 = pa.float16()


def _write(path, n=3000, vtype=F16, fixed=True, row_group_size=700, seed=0):
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(n, D)).astype(vtype.to_pandas_dtype())
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    flat = pa.array(E.reshape(-1))
    emb = (
        pa.FixedSizeListArray.from_arrays(flat, D)
        if fixed
        else pa.ListArray.from_arrays(pa.array(np.arange(0, n * D + 1, D, dtype=np.int32)), flat)
    )
    t = pa.table({"id": np.arange(n), "quality": rng.random(n).astype(np.float32), "embedding": emb})
    pq.write_table(t, path, row_group_size=row_group_size)
    return t


@pytest.mark.parametrize(
    "vtype,fixed", [(pa.float16(), True), (pa.float32(), True), (pa.float16(), False), (pa.float32(), False)]
)
def test_batched_read_is_the_whole_read(tmp_path, monkeypatch, vtype, fixed):
    """Batches of 150 rows across row groups of 700, a split cut inside row groups: the
    rows and values of the whole read, the embedding one fixed-size column of its own type."""
    monkeypatch.setattr(files, "READ_BATCH_BYTES", 150 * D * (vtype.bit_width // 8))
    whole = _write(tmp_path / "a.parquet", vtype=vtype, fixed=fixed)
    s = Split(str(tmp_path / "a.parquet"), "a.parquet", "parquet", 450, 2550)
    t = read_split(s, Columns())
    assert t.schema.names == whole.schema.names and t.num_rows == 2100
    assert t.schema.field("embedding").type == pa.list_(vtype, D)
    assert t.column("embedding").num_chunks == 1
    want = whole.slice(450, 2100)
    assert t.column("id").to_pylist() == want.column("id").to_pylist()
    got = t.column("embedding").chunk(0).flatten().to_numpy().reshape(-1, D)
    np.testing.assert_array_equal(got, want.column("embedding").combine_chunks().flatten().to_numpy().reshape(-1, D))


@pytest.mark.parametrize("bad,match", [("null", "is null at row 1234"), ("width", "row 1234 has 31 values")])
def test_a_bad_row_is_named_by_its_file_row(tmp_path, monkeypatch, bad, match):
    monkeypatch.setattr(files, "READ_BATCH_BYTES", 150 * D * 2)
    t = _write(tmp_path / "a.parquet", fixed=False)
    rows = t.column("embedding").to_pylist()
    rows[1234] = None if bad == "null" else rows[1234][:-1]
    pq.write_table(t.set_column(2, "embedding", pa.array(rows, pa.list_(pa.float16()))), tmp_path / "a.parquet")
    with pytest.raises(DataError, match=match):
        read_split(Split(str(tmp_path / "a.parquet"), "a.parquet", "parquet", 450, 2550), Columns())


@pytest.fixture
def watched(monkeypatch):
    """The Arrow buffers of every partition frame's embedding column, and what the method got."""
    import datamask.pipeline.frames as frames
    from datamask.methods.registry import REGISTRY

    seen = {"frames": [], "method": []}
    to_frame, topk = frames.to_frame, REGISTRY["topk"]

    def watch_frame(table, device):
        df = to_frame(table, device)
        col = df["embedding"]
        assert isinstance(col.dtype, pd.ArrowDtype)  # Arrow-backed: no per-row objects
        chunks = col.array.__arrow_array__().chunks
        seen["frames"] += [c.flatten().to_numpy(zero_copy_only=True) for c in chunks if len(c)]
        return df

    def watch_method(E, q, cfg, seed, budget):
        seen["method"].append(E)
        return topk(E, q, cfg, seed, budget)

    monkeypatch.setattr(frames, "to_frame", watch_frame)
    monkeypatch.setitem(REGISTRY, "topk", watch_method)
    return seen


def _views_of_frames(seen, n_splits):
    """Every array the method got (the selection's, and top-k's beside it) is a view of one
    partition frame's Arrow buffer, and every split's frame reached it."""
    hit = set()
    for E in seen["method"]:
        assert isinstance(E, np.ndarray) and E.dtype == np.float16 and not E.flags.owndata
        owners = [i for i, v in enumerate(seen["frames"]) if np.shares_memory(E, v)]
        assert len(owners) == 1
        hit.update(owners)
    assert len(hit) == n_splits


def test_the_method_gets_a_view_of_the_frames_arrow_buffer(tmp_path, watched):
    """``datamask select``: read → pandas ``ArrowDtype`` frame (``map_partitions``) → Arrow
    table → the method's numpy array, one buffer throughout; the output keeps the type."""
    from distributed import Client, LocalCluster

    from datamask.pipeline.config import SelectConfig
    from datamask.stages.split.select import run_select

    src = tmp_path / "in"
    src.mkdir()
    _write(src / "a.parquet", n=3000)
    cfg = SelectConfig(
        input=str(src), output=str(tmp_path / "out"), split_size=1500, method="topk", quiet=True, device="cpu"
    )
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None, silence_logs=logging.ERROR
        ) as lc,
        Client(lc, set_as_default=False) as client,
    ):
        run_select(cfg, client=client)
    _views_of_frames(watched, 2)
    out = pq.read_table(tmp_path / "out" / "data")
    assert out.schema.field("embedding").type == pq.read_schema(src / "a.parquet").field("embedding").type
    assert out.num_rows == 300


def test_the_dataframe_api_hands_the_same_view(tmp_path, watched):
    import datamask.dask as dmd

    _write(tmp_path / "a.parquet", n=3000)
    sel = dmd.select(dmd.read(tmp_path, split_size=1500), method="topk")
    out = sel.compute(scheduler="sync")
    _views_of_frames(watched, 2)
    assert out["embedding"].dtype == pd.ArrowDtype(pa.list_(pa.float16(), D)) and len(out) == 300
