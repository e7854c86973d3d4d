"""datamask.dask.select / evaluate / records: lazy, typed, and the CLI's rows and errors."""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import fields

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dask.callbacks import Callback

import datamask.dask as dmd
from datamask.cli import main
from datamask.errors import ConfigError, DataError
from datamask.pipeline.config import SelectConfig
from tests.helpers.pipeline_data import SPLIT, STEPS, args, manifest, read_out, write_files

KW = dict(solver_params={"steps": int(STEPS)}, ratio=0.1)


class Count(Callback):
    """Counts the tasks the local schedulers run (``keys``: which)."""

    def __init__(self):
        super().__init__()
        self.n = 0
        self.keys = []

    def _pretask(self, key, dsk, state):
        self.n += 1
        self.keys.append(str(key))


@pytest.fixture(scope="module")
def cli_out(corpus, address, tmp_path_factory):
    out = tmp_path_factory.mktemp("frames") / "out"
    assert main(args(corpus, out, "--keep-all", scheduler=address)) == 0
    return out


def test_signature_is_the_config(corpus):
    sig = inspect.signature(dmd.select).parameters
    for f in fields(SelectConfig):
        if f.name in (
            "input",
            "output",
            "scheduler",
            "split_size",
            "holdout",
            "partition_on",
            "n_workers",
            "storage_options",
        ):
            assert f.name not in sig
        elif f.name in sig:
            assert sig[f.name].default == f.default, f.name
    assert {"ratio", "lam", "diversity", "method", "seed", "keep_all", "budget", "solver_params"} <= set(sig)
    with pytest.raises(TypeError, match="ratoi"):
        dmd.select(dmd.read(corpus, split_size=int(SPLIT)), ratoi=0.2)


def test_nothing_runs_before_compute_and_one_pass_gives_records(corpus, monkeypatch):
    import datamask.dask.selection as mod

    calls = []
    real = mod.select_split
    monkeypatch.setattr(mod, "select_split", lambda *a, **k: calls.append(1) or real(*a, **k))
    with Count() as c, dask.config.set(scheduler="sync"):
        ddf = dmd.read(corpus, split_size=int(SPLIT))
        # pairwise: a whole split has an objective to beat (facility's is 1 by definition, not recorded)
        sel = dmd.select(ddf[ddf["quality"] > -1.0], keep_all=True, diversity="pairwise", **KW)
        recs = dmd.records(sel)
        ev = dmd.evaluate(sel, diversity="pairwise")
        assert c.n == 0 and not calls  # building the graph ran nothing
        frame, r, e = dask.compute(sel, recs, ev)
    assert c.n > 0 and len(calls) == ddf.npartitions == 5  # the selection ran once per split for all three
    assert len(r) == len(e) == 5 and int(r["rows_out"].sum()) == int(frame["selected"].sum())
    assert (r["objective_after"] > r["objective_before"]).all()
    # evaluate scores the same selection on the same objective as the record
    np.testing.assert_allclose(e["objective"].to_numpy(), r["objective_after"].to_numpy(), rtol=1e-5)


def _dtypes(df):
    return {c: str(t) for c, t in df.dtypes.items()}


@pytest.mark.parametrize("keep_all", [False, True])
def test_meta_is_the_computed_dtypes(corpus, keep_all):
    ddf = dmd.read(corpus, split_size=int(SPLIT))
    sel = dmd.select(ddf, keep_all=keep_all, **KW)
    frame, recs = dmd.compute(sel, return_records=True, scheduler="sync")
    assert _dtypes(frame) == _dtypes(sel._meta) and list(frame.columns) == list(sel._meta.columns)
    assert _dtypes(recs) == _dtypes(dmd.records(sel)._meta)
    ev = dmd.evaluate(sel)
    assert _dtypes(ev.compute(scheduler="sync")) == _dtypes(ev._meta)


def test_plain_pandas_frame_with_object_embeddings(corpus):
    """A frame a user built (numpy dtypes, embeddings as an object column of arrays)."""
    import dask.dataframe as dd

    pdf = pq.read_table(corpus / "shard-2.parquet").to_pandas()
    pdf["embedding"] = [np.asarray(v, dtype=np.float32) for v in pdf["embedding"]]
    with pytest.raises(DataError, match="convert-string"):  # Dask's default turns the vectors to text
        dmd.select(dd.from_pandas(pdf, npartitions=2), **KW)
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(pdf, npartitions=2)
    sel = dmd.select(ddf, keep_all=True, **KW)
    out = sel.compute(scheduler="sync")
    assert _dtypes(out) == _dtypes(sel._meta) and len(out) == len(pdf)
    assert out.groupby(np.arange(len(out)) // 500)["selected"].sum().tolist() == [50, 50]


@pytest.mark.slow
def test_select_equals_the_cli_on_the_same_files(corpus, cli_out):
    """Same splits, same seeds (from the split identity), same rows and logits."""
    ddf = dmd.read(corpus, split_size=int(SPLIT))
    frame, recs = dmd.compute(dmd.select(ddf, keep_all=True, **KW), return_records=True, scheduler="sync")
    cli = read_out(cli_out).to_pandas()
    mine = frame.sort_values("id")
    assert mine["id"].tolist() == cli["id"].tolist()
    assert mine["selected"].tolist() == cli["selected"].tolist()
    np.testing.assert_array_equal(mine["datamask_logit"].to_numpy(), cli["datamask_logit"].to_numpy())
    parts = {p["identity"]: p for p in manifest(cli_out)["splits"]}
    for _, r in recs.iterrows():
        assert parts[r["identity"]]["seed"] == r["seed"]
        assert parts[r["identity"]]["after"]["objective"] == pytest.approx(r["objective_after"], rel=1e-6)


@pytest.mark.slow
def test_resume_is_unaffected(corpus, address, cli_out, tmp_path):
    """A CLI run with one split lost resumes that split only and gives the same rows."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(cli_out, out)
    (out / "manifest.json").unlink()
    name = manifest(cli_out)["splits"][2]["name"]
    (out / "_datamask" / "parts" / f"{name}.json").unlink()
    (out / "data" / f"{name}.parquet").unlink()
    assert main(args(corpus, out, "--keep-all", scheduler=address)) == 0
    m = manifest(out)
    assert m["totals"]["computed_this_run"] == 1 and m["totals"]["resumed"] == 4
    assert read_out(out).equals(read_out(cli_out))


def test_more_partitions_than_workers(corpus, cluster):
    """Ten partitions on the shared two-worker cluster: the same result as in-process."""
    from distributed import Client

    ddf = dmd.read(corpus, split_size=800)
    assert ddf.npartitions == 10
    sel = dmd.select(ddf, **KW)
    with Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) < ddf.npartitions
        frame, recs = dmd.compute(sel, return_records=True)
    local = sel.compute(scheduler="sync")
    assert sorted(frame["id"]) == sorted(local["id"]) and len(recs) == 10
    assert recs["identity"].str.contains("shard-").all()  # the split identity travelled with the partition
    assert sorted(recs["split"]) == list(range(10)) and "partition" not in recs.columns  # (0.2's name: gone)


# ---------------------------------------------------------------------- bad input
def _bad_corpus(tmp_path, change):
    d = tmp_path / "bad"
    write_files(d, rows=(1000,), dim=8)
    t = pq.read_table(d / "shard-0.parquet")
    pq.write_table(change(t), d / "shard-0.parquet")
    return d


def _nan_quality(t):
    q = t.column("quality").to_numpy().copy()
    q[700] = np.nan
    return t.set_column(t.schema.get_field_index("quality"), "quality", pa.array(q))


def _dup_ids(t):
    ids = t.column("id").to_numpy().copy()
    ids[900] = ids[600]
    return t.set_column(t.schema.get_field_index("id"), "id", pa.array(ids))


@pytest.mark.slow  # the CLI half runs a real split on the shared cluster
@pytest.mark.parametrize(
    "change,needle",
    [
        (lambda t: t.drop_columns(["quality"]), "missing column 'quality'"),
        (_nan_quality, "column 'quality' is nan at row 700"),
        (_dup_ids, "duplicate ids (1 values repeat"),
    ],
)
def test_bad_input_fails_at_compute_like_the_cli(tmp_path, capsys, address, change, needle):
    d = _bad_corpus(tmp_path, change)
    sel = dmd.select(dmd.read(d, split_size=500), **KW)  # building it reads no row
    with pytest.raises(DataError) as e:
        sel.compute(scheduler="sync")
    msg = str(e.value)
    assert needle in msg and "split 1 (shard-0.parquet (rows 500-1000))" in msg and "\n" not in msg
    rc = main(
        [
            "select",
            str(d),
            str(tmp_path / "o"),
            "--split-size",
            "500",
            "--set",
            "solver_params.steps=" + str(STEPS),
            "--quiet",
            "--scheduler",
            address,
        ]
    )
    cli = capsys.readouterr().err.strip()
    assert rc == 2
    # the same sentence after the place (the CLI checks some of it on the client, before any split)
    assert needle in cli and msg.rsplit(";", 1)[1] in cli


def test_wrong_width(tmp_path):
    import dask.dataframe as dd

    write_files(tmp_path / "a", rows=(400,), dim=8)
    write_files(tmp_path / "b", rows=(400,), dim=6)
    (tmp_path / "b" / "shard-0.parquet").rename(tmp_path / "a" / "shard-1.parquet")
    sel = dmd.select(dmd.read(tmp_path / "a", split_size=400), **KW)
    with pytest.raises(
        DataError,
        match=r"^split 1 \(shard-1.parquet \(rows 0-400\)\): column 'embedding' "
        r"has width 6 but other inputs have 8; embed every file with the same model",
    ):
        sel.compute(scheduler="sync")
    # within a partition of a frame a user built: the CLI's width-differs message
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"id": np.arange(40), "quality": rng.random(40)})
    pdf["embedding"] = [rng.normal(size=8 if i != 25 else 7).astype(np.float32) for i in range(40)]
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(pdf, npartitions=2, sort=False)
    with pytest.raises(DataError, match=r"^split 1: column 'embedding' width differs between rows: row 5"):
        dmd.select(ddf, ratio=0.2, solver_params=dict(steps=5)).compute(scheduler="sync")


def test_dedupe_ids_keeps_the_first_within_a_partition(tmp_path):
    d = _bad_corpus(tmp_path, _dup_ids)
    out = dmd.select(dmd.read(d, split_size=500), dedupe_ids=True, keep_all=True, **KW)
    frame, recs = dmd.compute(out, return_records=True, scheduler="sync")
    assert recs["duplicates_dropped"].tolist() == [0, 1] and len(frame) == 999
    assert json.loads(recs["record"].iloc[1])["rows_in"] == 499


def test_cluster_is_lazy_and_fits_once_for_frame_and_model(corpus):
    from datamask.analysis.clusters import fit_kmeans, sample_embeddings

    ddf = dmd.read(corpus, split_size=int(SPLIT))
    with Count() as c, dask.config.set(scheduler="sync"):
        labelled, model = dmd.cluster(ddf, n_clusters=6, sample_fraction=0.3, seed=1)
        assert c.n == 0 and "lazy" in repr(model)
        frame, model = dmd.compute(labelled, model)
        # the CLI's sample and fit: the same centroids
        X = sample_embeddings(ddf, 0.3, seed=1)
    np.testing.assert_allclose(model.cluster_centers_, fit_kmeans(X, 6, seed=1, backend=model.backend), atol=1e-5)
    assert _dtypes(frame) == _dtypes(labelled._meta) and str(frame["cluster"].dtype) == "int32"
    assert frame["cluster"].nunique() == 6 and len(frame) == 7000
    stats = frame.groupby("cluster")["topic"].agg(lambda t: t.value_counts(normalize=True).iloc[0])
    assert stats.mean() > 0.8  # the planted topics come back as clusters


@pytest.mark.slow
def test_token_budget_is_shared_out_like_the_cli(corpus, address, tmp_path):
    out = tmp_path / "tok"
    assert main(args(corpus, out, "--tokens", "200k", scheduler=address)) == 0
    ddf = dmd.read(corpus, split_size=int(SPLIT))
    with Count() as c, dask.config.set(scheduler="sync"):
        sel = dmd.select(ddf, tokens=200_000, solver_params=dict(steps=int(STEPS)))
        assert c.n == 0
        frame, recs = dmd.compute(sel, return_records=True)
    assert sorted(frame["id"]) == sorted(read_out(out).column("id").to_pylist())
    budgets = {p["identity"]: p["token_budget"] for p in manifest(out)["splits"]}
    assert {r["identity"]: json.loads(r["record"])["token_budget"] for _, r in recs.iterrows()} == budgets


def test_a_prune_that_cannot_fill_a_share_is_refused_before_any_partition_selects(corpus):
    """The CLI's refusal (tests/pipeline/test_select_tokens.py), from the frame's counting pass:
    a ``prune`` that leaves some partition no more tokens than its share of ``tokens`` fails the
    compute before any partition's selection starts, naming the partition and the prune that fits;
    that prune selects within every share."""
    ddf = dmd.read(corpus, split_size=int(SPLIT))
    T = int(sum(pq.read_table(f, columns=["n_tokens"]).column(0).to_numpy().sum() for f in corpus.glob("*.parquet")))
    T //= 2
    msg = (
        r"^--prune 0.9: pruning 0.9 of the rows of split \d \(shard-\d.parquet \(rows \d+-\d+\)\) leaves [\d,]+ "
        rf"tokens, not more than its [\d,]+-token share of --tokens {T}; lower --prune to (0\.\d+) or the token budget$"
    )
    with Count() as c, dask.config.set(scheduler="sync"):
        sel = dmd.select(ddf, tokens=T, prune=0.9, solver_params=dict(steps=int(STEPS)))
        with pytest.raises(ConfigError, match=msg) as e:
            sel.compute()
    assert any("_count_tokens_part" in k for k in c.keys) and not any("_select_part" in k for k in c.keys), c.keys
    room = float(re.match(msg, str(e.value))[1])
    _, recs = dmd.compute(
        dmd.select(ddf, tokens=T, prune=room, solver_params=dict(steps=int(STEPS))),
        return_records=True,
        scheduler="sync",
    )
    got = [json.loads(r) for r in recs["record"]]
    assert len(got) == 5 and all(0 < r["tokens_out"] <= r["token_budget"] for r in got)
