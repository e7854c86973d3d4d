"""``datamask dedup``'s corpus-wide passes: the same output whatever the workers and the
partitions, and a run killed during the connected components resumes from the pairs."""

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from datamask.cli import main
from tests.helpers.dedup_data import write_planted
from tests.helpers.pipeline_data import wait_until

ALL = ("--kind", "exact,fuzzy,semantic", "--eps", "0.01", "--n-clusters", "3", "--keep-all")


def _args(inp, out, *extra):
    return ["dedup", str(inp), str(out), "--split-size", "30", "--quiet", *[str(x) for x in extra]]


def _result(out):
    """The output rows and the groups, sorted, as plain lists."""
    data = pq.read_table(out / "data").sort_by("id").to_pylist()
    groups = pq.read_table(out / "_datamask" / "dedup" / "groups").sort_by("id").to_pylist()
    return data, groups


def _manifest(out):
    return json.loads((out / "manifest.json").read_text())


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The planted corpus, plus 4 pairs of unrelated texts with (nearly) one embedding: duplicates
    only the semantic kind finds."""
    import numpy as np
    import pyarrow as pa

    d = tmp_path_factory.mktemp("dedup_passes_in")
    expected = write_planted(d, seed=1, with_embedding=True)
    targets = set(expected.values())
    lone = [i for i, k in expected.items() if k is None and i not in targets][:40:5]  # 8 unrelated rows
    tables = {f: pq.read_table(d / f) for f in ("a.parquet", "b.parquet")}
    emb = {i: v for t in tables.values() for i, v in zip(t["id"].to_pylist(), t["embedding"].to_pylist())}
    rng = np.random.default_rng(0)
    for a, b in zip(lone[::2], lone[1::2]):
        v = np.asarray(emb[a]) + 1e-4 * rng.normal(size=len(emb[a]))
        emb[b] = (v / np.linalg.norm(v)).astype(np.float32).tolist()
    for f, t in tables.items():
        col = pa.FixedSizeListArray.from_arrays(
            pa.array(np.ravel([emb[i] for i in t["id"].to_pylist()]), pa.float32()), 16
        )
        pq.write_table(t.set_column(t.schema.get_field_index("embedding"), "embedding", col), d / f)
    return d, expected


@pytest.fixture(scope="module")
def reference(planted, tmp_path_factory, address):
    out = tmp_path_factory.mktemp("dedup_ref") / "out"
    assert main(_args(planted[0], out, *ALL, "--scheduler", address)) == 0
    return out


def test_reference_finds_every_planted_group(planted, reference):
    data, groups = _result(reference)
    found = {r["id"]: r["duplicate_of"] for r in data}
    text = {i: k for i, k in found.items() if k is None or planted[1][i] is not None or planted[1][k] is not None}
    assert {i: k for i, k in planted[1].items() if k is not None} == {i: k for i, k in text.items() if k is not None}
    kinds = _manifest(reference)["dedup"]["kinds"]
    assert kinds["exact"]["removed"] == 7 and kinds["fuzzy"]["removed"] == 2 and kinds["semantic"]["removed"] == 4
    assert sum(g["kind"] == "semantic" for g in groups) == 4


def test_one_and_two_workers_write_the_same_output(planted, reference, tmp_path):
    """Each on its own local cluster of real worker processes (started by the command)."""
    for n in (1, 2):
        out = tmp_path / f"w{n}"
        assert main(_args(planted[0], out, *ALL, "--n-workers", n)) == 0
        assert _result(out) == _result(reference)


def test_many_partitions_give_the_same_groups(planted, reference, tmp_path, address, monkeypatch):
    """Bucket records and pair edges spread over many partitions (and components over several
    rounds) find exactly the groups of one partition each."""
    from datamask.stages.corpus import dedup_cc, dedup_text

    monkeypatch.setattr(dedup_text, "RECORDS_PER_PART", 50)
    monkeypatch.setattr(dedup_cc, "EDGES_PER_PART", 2)
    out = tmp_path / "out"
    assert main(_args(planted[0], out, *ALL, "--scheduler", address)) == 0
    assert _result(out) == _result(reference)
    assert _manifest(out)["dedup"]["components"]["partitions"] > 3


def test_chains_settle_over_several_rounds_of_many_partitions(tmp_path, address, monkeypatch):
    """Chains of near copies (each a copy of the previous one, so far ends are not pairs) are one
    group each, whether the components run in one partition or over rounds of many."""
    import numpy as np
    import pyarrow as pa

    from datamask.stages.corpus import dedup_cc
    from tests.helpers.dedup_data import near_copy, text, vocab

    rng, words = np.random.default_rng(3), vocab(seed=3)
    texts, chain = [], []
    for c in range(5):
        t = text(rng, words)
        for _ in range(8):
            texts.append(t)
            chain.append(c)
            t = near_copy(t, rng, words, n_changes=2)
    texts += [text(rng, words) for _ in range(40)]
    chain += [-1] * 40
    order = rng.permutation(len(texts))
    ids = [f"t{i:03d}" for i in range(len(texts))]
    pq.write_table(pa.table({"id": ids, "text": [texts[i] for i in order]}), tmp_path / "in.parquet")
    runs = {}
    for label, per in (("one", dedup_cc.EDGES_PER_PART), ("many", 40)):
        monkeypatch.setattr(dedup_cc, "EDGES_PER_PART", per)
        out = tmp_path / label
        assert main(_args(tmp_path / "in.parquet", out, "--kind", "fuzzy", "--scheduler", address)) == 0
        runs[label] = (_result(out)[1], _manifest(out)["dedup"]["components"])
    assert runs["one"][0] == runs["many"][0]
    assert runs["one"][1] == {"partitions": 1, "rounds": 1} and runs["many"][1]["rounds"] >= 2
    by_id = {ids[k]: chain[i] for k, i in enumerate(order)}
    groups = {}
    for g in runs["one"][0]:
        groups.setdefault(g["kept_id"], {g["kept_id"]}).add(g["id"])
    assert sorted(sorted(by_id[i] for i in g) for g in groups.values()) == [[c] * 8 for c in range(5)]


def test_killed_during_components_resumes_from_the_pairs(planted, reference, tmp_path, address):
    """The whole command (client, scheduler, workers) is killed while a round of connected
    components runs (its workers preload tests/helpers/slow_cc.py, which makes each round
    sleep); the rerun reuses every pass up to the pairs, files untouched."""
    out = tmp_path / "out"
    state = out / "_datamask" / "dedup"
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__PRELOAD='["tests.helpers.slow_cc"]')
    cmd = [sys.executable, "-m", "datamask.cli", *_args(planted[0], out, *ALL, "--n-workers", "2")]
    proc = subprocess.Popen(cmd, cwd=os.getcwd(), env=env, start_new_session=True, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: (state / "cc-0" / "_done.json").exists() or proc.poll() is not None, what="the first rounds")
        time.sleep(0.5)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert (state / "pairs" / "_done.json").exists() and not (state / "cc-1" / "_done.json").exists()
    kept = sorted(p for d in ("buckets/exact", "pairs") for p in (state / d).glob("*.parquet"))
    before = {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in kept}
    assert main(_args(planted[0], out, *ALL, "--scheduler", address)) == 0
    assert {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in kept} == before
    reused = _manifest(out)["dedup"]["passes"]["reused"]
    assert reused[:5] == ["signatures", "buckets", "candidates", "pairs", "cc-0"] and "cc-1" not in reused
    assert _result(out) == _result(reference)
    # the exchanged files are gone once the groups are written; the pairs, labels and groups stay
    assert not list((state / "signatures").rglob("*.parquet")) and list((state / "labels").glob("*.parquet"))


def test_semantic_with_a_cluster_column_finds_what_kmeans_finds(planted, tmp_path, address):
    """One cluster per value of the cluster column (strings here), one task per cluster; the
    near-identical embeddings are the same pairs whatever the clustering."""
    import pyarrow as pa

    inp = tmp_path / "in"
    inp.mkdir()
    for f in ("a.parquet", "b.parquet"):
        t = pq.read_table(planted[0] / f)
        pq.write_table(t.append_column("cluster", pa.array(["all"] * t.num_rows)), inp / f)
    sem = ("--kind", "semantic", "--eps", "0.01", "--keep-all")
    assert main(_args(inp, tmp_path / "col", *sem, "--scheduler", address)) == 0
    assert main(_args(planted[0], tmp_path / "km", *sem, "--n-clusters", "3", "--scheduler", address)) == 0
    col, km = _result(tmp_path / "col"), _result(tmp_path / "km")
    assert [{k: v for k, v in r.items() if k != "cluster"} for r in col[0]] == km[0]
    assert col[1] == km[1] and len(km[1]) == 13  # 9 text copies (their original's vector) and 4 pairs
