"""End to end: the `datamask` CLI on a generated corpus through a real LocalCluster."""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from datamask.estimator.estimator import DataMask
from datamask.pipeline.config import SelectConfig
from tests.helpers.pipeline_data import DIM, FILE_ROWS, args, manifest, read_out, write_files


def _run(*a):
    rc = main(list(a))
    assert rc == 0
    return rc


@pytest.fixture(scope="module")
def selected(corpus, address, tmp_path_factory):
    out = tmp_path_factory.mktemp("sel") / "out"
    _run(*args(corpus, out, "--diversity", "pairwise", scheduler=address))  # pg polishes a relaxed start
    return out


def test_parquet_in_parquet_out(corpus, selected):
    m = manifest(selected)
    parts = m["splits"]
    assert [p["rows_in"] for p in parts] == [1500, 1500, 1500, 1500, 1000]
    for p in parts:  # the per-partition budget
        assert p["rows_out"] == round(0.1 * p["rows_in"])
        t = pq.read_table(selected / "data" / p["files"][0])
        assert t.num_rows == p["rows_out"]
        # rows come from this partition's own row range
        ids = t.column("id").to_numpy()
        src = pq.read_table(corpus / p["source"], columns=["id"]).column(0).to_numpy()[p["start"] : p["stop"]]
        assert np.isin(ids, src).all()
        assert p["after"]["objective"] > p["before"]["objective"]
        opt = p["optimizer"]  # how it was made: Frank-Wolfe's answer, then pg's few steps
        assert opt["start"] == "relaxed" and opt["pg_steps"] == p["n_steps"] and isinstance(opt["pg_improved"], bool)
        assert opt["objective_end"] == pytest.approx(p["after"]["objective"], rel=1e-9)
        assert p["start_history"][-1]["objective"] == pytest.approx(p["history"][0]["objective"], rel=1e-9)
    assert m["totals"]["pg_improved"] == sum(p["optimizer"]["pg_improved"] for p in parts)
    out = read_out(selected)
    assert out.num_rows == sum(round(0.1 * p["rows_in"]) for p in parts)
    assert out.schema.field("embedding").type == pa.list_(pa.float16(), DIM)
    assert set(out.column_names) >= {"id", "embedding", "quality", "topic", "dup_group", "n_tokens"}
    assert len(set(out.column("id").to_pylist())) == out.num_rows
    assert m["status"] == "complete" and m["totals"]["rows_in"] == sum(FILE_ROWS)
    assert m["versions"]["dask"] and m["config"]["ratio"] == 0.1 and m["wall_seconds"] > 0
    # partition seeds are distinct and derived from identity, not listing position
    assert len({p["seed"] for p in parts}) == len(parts)


def test_selection_beats_random_on_quality(corpus, selected):
    out = read_out(selected)
    q_all = pq.read_table(corpus).column("quality").to_numpy()
    assert out.column("quality").to_numpy().mean() > q_all.mean() + 0.3


def test_one_and_two_workers_same_output(corpus, selected, tmp_path):
    out1 = tmp_path / "one"
    _run(*args(corpus, out1, "--n-workers", "1", "--diversity", "pairwise"))  # embedded LocalCluster, 1 worker
    assert read_out(out1).equals(read_out(selected))


def test_rerun_skips_and_different_config_refused(corpus, address, tmp_path, capsys):
    out = tmp_path / "out"
    _run(*args(corpus, out, scheduler=address))
    files = sorted((out / "data").glob("*.parquet"))
    stamps = [(f.stat().st_mtime_ns, f.stat().st_ino) for f in files]
    _run(*args(corpus, out, scheduler=address))
    assert [(f.stat().st_mtime_ns, f.stat().st_ino) for f in files] == stamps
    rc = main(args(corpus, out, "--ratio", "0.2", scheduler=address))
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "different config" in err and "ratio" in err and "--overwrite" in err
    assert [(f.stat().st_mtime_ns, f.stat().st_ino) for f in files] == stamps
    _run(*args(corpus, out, "--ratio", "0.2", "--overwrite", scheduler=address))
    assert manifest(out)["totals"]["rows_out"] == sum(round(0.2 * p["rows_in"]) for p in manifest(out)["splits"])


def test_growing_corpus_processes_only_new_files(corpus, address, tmp_path):
    src = tmp_path / "in"
    shutil.copytree(corpus, src)
    out = tmp_path / "out"
    _run(*args(src, out, scheduler=address))
    before = {f.name: f.stat().st_mtime_ns for f in (out / "data").glob("*.parquet")}
    seeds = {p["identity"]: p["seed"] for p in manifest(out)["splits"]}
    write_files(tmp_path / "new", rows=(800,), seed=5)
    # sorts before every old file: positions in the listing shift, identities do not
    shutil.copy(tmp_path / "new" / "shard-0.parquet", src / "a-new.parquet")
    t = pq.read_table(src / "a-new.parquet")
    pq.write_table(t.set_column(0, "id", pa.array(np.arange(10**6, 10**6 + 800))), src / "a-new.parquet")
    _run(*args(src, out, scheduler=address))
    m = manifest(out)
    assert m["totals"]["computed_this_run"] == 1 and m["totals"]["splits"] == 6
    after = {f.name: f.stat().st_mtime_ns for f in (out / "data").glob("*.parquet")}
    assert {k: after[k] for k in before} == before
    assert {p["identity"]: p["seed"] for p in m["splits"] if p["identity"] in seeds} == seeds


def test_jsonl_input(corpus, address, tmp_path):
    src = tmp_path / "jsonl"
    src.mkdir()
    t = pq.read_table(corpus / "shard-2.parquet")
    rows = t.to_pylist()
    with gzip.open(src / "docs.jsonl.gz", "wt") as fh:
        for r in rows[:600]:
            fh.write(json.dumps(r) + "\n")
    with open(src / "more.jsonl", "w") as fh:
        for r in rows[600:]:
            fh.write(json.dumps(r) + "\n")
    out = tmp_path / "out"
    _run(*args(src, out, scheduler=address))
    m = manifest(out)
    assert [p["rows_in"] for p in m["splits"]] == [600, 400]
    o = read_out(out)
    assert o.num_rows == 60 + 40
    assert pa.types.is_fixed_size_list(o.schema.field("embedding").type)
    assert o.schema.field("embedding").type.list_size == DIM


def test_partition_on_writes_hive_directories(corpus, selected, address, tmp_path):
    out = tmp_path / "hive"
    _run(*args(corpus, out, "--set", "partition_on=topic", "--diversity", "pairwise", scheduler=address))
    dirs = sorted(p.name for p in (out / "data").iterdir())
    assert dirs and all(d.startswith("topic=") for d in dirs)
    t = pads.dataset(out / "data", partitioning="hive").to_table().sort_by("id")
    flat = read_out(selected)
    assert t.column("id").equals(flat.column("id"))
    assert t.column("topic").cast(pa.int32()).equals(flat.column("topic"))


def test_keep_all_and_dedupe_ids(corpus, address, tmp_path):
    src = tmp_path / "dup"
    write_files(src, rows=(1200, 900), seed=3)
    t = pq.read_table(src / "shard-1.parquet")  # ids 1200.. -> make 10 of them repeat file 0's ids
    ids = t.column("id").to_numpy().copy()
    ids[:10] = np.arange(10)
    pq.write_table(t.set_column(0, "id", pa.array(ids)), src / "shard-1.parquet")
    out = tmp_path / "out"
    _run(*args(src, out, "--set", "dedupe_ids=true", "--keep-all", scheduler=address))
    m = manifest(out)
    assert [p["duplicates_dropped"] for p in m["splits"]] == [0, 10]
    o = read_out(out)
    assert o.num_rows == 2100 - 10 and len(set(o.column("id").to_pylist())) == o.num_rows
    sel = o.column("selected").to_numpy()
    assert sel.sum() == round(0.1 * 1200) + round(0.1 * 890)
    logit = o.column("datamask_logit").to_numpy()
    assert np.isfinite(logit[sel]).all()


def test_run_workflow_with_set(corpus, address, tmp_path):
    wf = tmp_path / "wf.yaml"
    out = tmp_path / "out"
    wf.write_text(f"input: {corpus}\noutput: {out}\nsplit_size: 2000\nsolver_params: {{steps: 20}}\nratio: 0.05\n")
    _run("run", str(wf), "--set", "ratio=0.2", "--set", f"scheduler={address}", "--quiet")
    m = manifest(out)
    assert m["config"]["ratio"] == 0.2 and m["config"]["solver_params"] == {"steps": 20}
    assert m["splits"][0]["rows_out"] == 300


def test_config_defaults_follow_estimator():
    cfg = SelectConfig()
    est = DataMask()
    for k, v in cfg.estimator_params(seed=0).items():
        if k != "seed":
            assert v == est.get_params()[k], k
    with pytest.raises(Exception, match="unknown key"):
        SelectConfig.from_dict({"ratoi": 0.1})


@pytest.mark.gpu
def test_gpu_select(corpus, tmp_path):
    from datamask.core.backend import gpu_available

    if not gpu_available():
        pytest.skip("no CUDA GPU")
    out = tmp_path / "gpu"
    _run(*args(corpus, out, "--device", "gpu"))
    assert manifest(out)["device"] == "gpu"
    assert read_out(out).num_rows == sum(round(0.1 * r) for r in (1500, 1500, 1500, 1500, 1000))


def test_pruning_limit_applies_only_to_methods_that_prune(corpus, address, tmp_path, capsys):
    # ratio 0.6 exceeds what pruning 0.5 leaves: refused for datamask, which prunes,
    # but top-k ignores `prune` and must keep 60% of every split.
    assert main(args(corpus, tmp_path / "dm", "--ratio", "0.6", "--prune", "0.5", scheduler=address)) == 2
    assert "left after pruning" in capsys.readouterr().err
    assert (
        main(args(corpus, tmp_path / "topk", "--ratio", "0.6", "--method", "topk", "--no-report", scheduler=address))
        == 0
    )
    parts = manifest(tmp_path / "topk")["splits"]
    assert all(p["rows_out"] == round(0.6 * p["rows_in"]) for p in parts)


def test_each_split_scores_its_selection_beside_topk_and_random(corpus, selected):
    """The workers' side-by-side numbers: top-k and random at the selection's budget, each
    scored alike, in every split's record (the report and the terminal combine these)."""
    for p in manifest(selected)["splits"]:
        side = p["side_by_side"]
        assert set(side) == {"selection", "topk", "random", "seconds"}
        for name in ("selection", "topk", "random"):
            s = side[name]
            assert s["selected"] == p["rows_out"]  # the same budget
            assert 0.0 <= s["quality_norm"] <= 1.0 and 0.0 <= s["near_duplicates"] <= 1.0
            assert -1.0 <= s["pairwise"] <= 1.0 and -1.0 <= s["facility"] <= 1.0
        assert side["selection"]["objective"] == pytest.approx(p["after"]["objective"], abs=1e-6)
        assert side["topk"]["quality"] >= max(side["selection"]["quality"], side["random"]["quality"])


def test_scorecard_coverage_and_near_duplicates_by_hand():
    """Coverage is the mean best cosine of every row to the selection, near-duplicates the
    share of selected rows with another selected row at cosine >= 0.95; both checked against
    a brute-force computation on a split small enough to score every row."""
    from datamask.core.scorecard import NEAR_DUPLICATE_COSINE, near_duplicate_share, selection_scores

    rng = np.random.default_rng(3)
    E = rng.normal(size=(600, 16)).astype(np.float32)
    E[50:60] = E[50] + 0.01 * rng.normal(size=(10, 16)).astype(np.float32)  # a planted near-duplicate group
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    q = rng.normal(size=600) * 3 + 10
    mask = np.zeros(600, dtype=bool)
    mask[40:100] = True  # 60 rows, 10 of them the group
    s = selection_scores(E, q, mask, lengths=np.arange(600), reference_size=600)
    G = E @ E[mask].T
    assert s["facility"] == pytest.approx(G.max(axis=1).mean(), abs=1e-5)
    S = E[mask] @ E[mask].T
    np.fill_diagonal(S, -np.inf)
    share = (S.max(axis=1) >= NEAR_DUPLICATE_COSINE).mean()
    assert share == pytest.approx(10 / 60) and s["near_duplicates"] == pytest.approx(share)
    assert s["quality"] == pytest.approx(q[mask].mean())  # raw
    assert s["quality_norm"] == pytest.approx(((q - q.min()) / (q.max() - q.min()))[mask].mean())
    assert s["tokens"] == np.arange(40, 100).sum() and s["selected"] == 60
    # the same objective and diversities as evaluate(), which every selection's record uses
    from datamask.estimator.evaluate import evaluate

    for div in ("pairwise", "facility", "disf"):
        ev = evaluate(E * 2.0, q, mask, lam=0.3, diversity=div, reference_size=200, seed=5)  # rows not unit
        sc = selection_scores(E * 2.0, q, mask, lam=0.3, diversity=div, reference_size=200, seed=5)
        assert sc["objective"] == pytest.approx(ev["objective"], abs=1e-6)
        assert sc[div] == pytest.approx(ev["diversity"], abs=1e-6)
    # a sample of the selected rows estimates the share; with every row sampled it is exact
    assert near_duplicate_share(E, np.flatnonzero(mask), sample=60) == pytest.approx(share)
    assert 0.0 <= near_duplicate_share(E, np.flatnonzero(mask), sample=20, seed=1) <= 1.0


def test_score_sample_bounds_the_pairs_compared():
    """Coverage and near-duplicates sample rows in proportion to the subset's size: 2,048 for
    a small subset, fewer (never under 128) once sample x subset passes SCORE_PAIRS; a run's
    reference_size caps it. Scores from norms the caller computed match those checked here."""
    from datamask.core.scorecard import SCORE_PAIRS, SCORE_SAMPLE, SCORE_SAMPLE_MIN, score_sample, selection_scores
    from datamask.core.validate import check_inputs

    assert score_sample(100) == SCORE_SAMPLE and score_sample(0) == SCORE_SAMPLE
    assert score_sample(2_000) == 131 and score_sample(20_000) == SCORE_SAMPLE_MIN == 128  # 20k and 200k rows
    for s in (5_000, 16_384, 100_000, 10_000_000):
        r = score_sample(s)
        assert SCORE_SAMPLE_MIN <= r <= SCORE_SAMPLE and (r * s <= SCORE_PAIRS or r == SCORE_SAMPLE_MIN)
    assert score_sample(100, 300) == 300 and score_sample(100_000, 100) == 100
    rng = np.random.default_rng(0)
    E = rng.normal(size=(400, 8)).astype(np.float32) * 3.0  # not unit rows: norms are used
    q, mask = rng.random(400), rng.random(400) < 0.3
    a = selection_scores(E, q, mask, sample=64, seed=2)
    b = selection_scores(E, q, mask, sample=64, seed=2, norms=check_inputs(E, q))
    assert a == pytest.approx(b, rel=1e-6, nan_ok=True)


def test_scorecard_scores_masks_alike_from_one_copy(monkeypatch):
    """A Scorecard scores several masks on coordinated samples of rows, their rows copied once:
    the same numbers as selection_scores one mask at a time, with the inputs checked or with
    each copy's own norms ("own": the side-by-side's, no pass over the split); the blocked
    best-cosine product (its own pair left out) equals a brute-force one."""
    import datamask.core.scorecard as sc

    rng = np.random.default_rng(1)
    E = rng.normal(size=(700, 12)).astype(np.float32)
    q = rng.normal(size=700)
    masks = [rng.random(700) < p for p in (0.05, 0.2, 0.5)]
    for X in (E * 3.0, E / np.linalg.norm(E, axis=1, keepdims=True), E.astype(np.float16)):
        for norms in (False, "own"):
            card = sc.Scorecard(X, q, lam=0.3, diversity="facility", reference_size=100, seed=4, sample=50, norms=norms)
            for mk in masks:
                one = sc.selection_scores(
                    X, q, mk, lam=0.3, diversity="facility", reference_size=100, seed=4, sample=50
                )
                assert card.score(mk) == pytest.approx(one, rel=1e-5, abs=1e-6, nan_ok=True)
    card = sc.Scorecard(E, q, lam=0.3, diversity="facility", reference_size=100, seed=4, sample=50)
    alone = [card.score(mk) for mk in masks]
    for _ in range(2):  # one product for every group, then one per group in many column blocks
        many = card.score_many(dict(zip("abc", masks)))
        assert all(many[k] == pytest.approx(a, rel=1e-6, nan_ok=True) for k, a in zip("abc", alone))
        monkeypatch.setattr(sc, "BLOCK_ELEMENTS", 64)
    # coordinated samples: the reference set is the objective's; a subset's sampled rows are
    # among those of any subset holding it
    from datamask.core.backend import default_rng

    assert (card.sample_of(np.arange(700), 100) == default_rng(np, 4).subset(700, 100)).all()
    small, large = np.flatnonzero(masks[0] & masks[2]), np.flatnonzero(masks[2])
    assert set(card.sample_of(large, 50)) & set(small) <= set(card.sample_of(small, 50))
    U = sc.gathered_rows(E, np.arange(0, 700, 3), "own")
    assert np.allclose(np.linalg.norm(U, axis=1), 1.0, atol=1e-5)
    own = np.array([-1, 0, 5, 232, -1])
    G = U[[9, 0, 5, 232, 100]] @ U.T
    G[[1, 2, 3], own[1:4]] = -np.inf
    assert np.allclose(sc.best_cosines(U[[9, 0, 5, 232, 100]], U, own), G.max(axis=1))
