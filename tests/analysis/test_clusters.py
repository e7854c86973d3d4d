"""k-means (sample -> fit -> predict everywhere) and per-cluster statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import adjusted_rand_score

from datamask.analysis.clusters import (
    assign,
    check_k,
    cluster_stats,
    cluster_stats_dask,
    fit_kmeans,
    fit_kmeans_dask,
    predict_dask,
    read_corpus,
)
from datamask.cli.demo import corpus_table


def _blobs(n=2400, k=8, d=32, spread=0.15, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    y = rng.integers(0, k, size=n)
    X = centres[y] + spread * rng.normal(size=(n, d)) / np.sqrt(d) * 3
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X.astype(np.float32), y


def _brute_stats(df, E):
    rows = []
    for c, g in df.groupby("cluster"):
        X = E[g.index.to_numpy()].astype(np.float64)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        G = X @ X.T
        n = len(g)
        div = -(G.sum() - np.trace(G)) / (n * (n - 1)) if n > 1 else np.nan
        rows.append((c, n, g["quality"].mean(), div, g["n_tokens"].mean()))
    return pd.DataFrame(rows, columns=["cluster", "size", "mean_quality", "pairwise_diversity", "mean_tokens"])


def test_kmeans_recovers_blobs():
    X, y = _blobs()
    cent = fit_kmeans(X, 8, seed=0)
    lab, dist = assign(X, cent)
    assert cent.shape == (8, 32) and lab.dtype == np.int32
    assert adjusted_rand_score(y, lab) > 0.95
    # assign is the nearest centroid by brute force
    D = ((X[:, None, :] - cent[None]) ** 2).sum(-1)
    assert (D.argmin(1) == lab).mean() > 0.999
    assert np.allclose(dist, D.min(1), atol=1e-4)


def test_faiss_backend_recovers_blobs():
    pytest.importorskip("faiss")
    X, y = _blobs(seed=1)
    lab = assign(X, fit_kmeans(X, 8, seed=0, backend="faiss"))[0]
    assert adjusted_rand_score(y, lab) > 0.9


def test_k_validation():
    X, _ = _blobs(n=50)
    with pytest.raises(ValueError, match="more than the 50 rows"):
        fit_kmeans(X, 51)
    with pytest.raises(ValueError, match="positive"):
        check_k(0, 10)


def test_cluster_stats_match_pandas():
    from datamask.core.synthetic import make_corpus

    c = make_corpus(n_rows=1500, dim=32, n_topics=5, seed=3, dtype=np.float16)
    E = c["embedding"]
    lab = assign(E, fit_kmeans(E, 6, seed=0))[0]
    df = pd.DataFrame({"cluster": lab, "quality": c["quality"], "n_tokens": c["n_tokens"]})
    got = cluster_stats(lab, c["quality"], E, c["n_tokens"], k=7)  # cluster 6 is empty
    want = _brute_stats(df, E)
    assert got["size"].sum() == 1500 and got.loc[6, "size"] == 0 and np.isnan(got.loc[6, "mean_quality"])
    g = got.set_index("cluster").loc[want["cluster"]]
    for col in ("size", "mean_quality", "pairwise_diversity", "mean_tokens"):
        assert np.allclose(g[col].to_numpy(), want[col].to_numpy(), rtol=1e-6, atol=1e-6), col
    assert np.allclose(got["share"].sum(), 1.0)


@pytest.fixture(scope="module")
def blob_corpus(tmp_path_factory):
    """Parquet corpus of 3 files (one cut into 2 splits) with planted blobs."""
    X, y = _blobs(n=3000, k=6, seed=2)
    rng = np.random.default_rng(0)
    corpus = {
        "id": np.arange(3000),
        "embedding": X,
        "quality": rng.normal(size=3000).astype(np.float32),
        "n_tokens": rng.integers(20, 900, size=3000).astype(np.int32),
        "truth": y,
    }
    d = tmp_path_factory.mktemp("blobs")
    for i, (lo, hi) in enumerate([(0, 1400), (1400, 2200), (2200, 3000)]):
        pq.write_table(corpus_table(corpus, lo, hi), d / f"f{i}.parquet", row_group_size=300)
    return d, corpus


def test_dask_fit_on_sample_predict_everywhere(blob_corpus):
    import dask

    d, corpus = blob_corpus
    ddf = read_corpus(d, split_size=1000)
    assert ddf.npartitions == 4
    with dask.config.set(scheduler="synchronous"):
        cent, n_sample = fit_kmeans_dask(ddf, 6, sample_fraction=0.2, seed=0)
        assert 450 < n_sample < 750
        out = predict_dask(ddf, cent).compute()
        assert out["cluster"].dtype == np.int32 and len(out) == 3000
        assert adjusted_rand_score(out["truth"], out["cluster"]) > 0.95
        stats = cluster_stats_dask(predict_dask(ddf, cent), 6)
    E = corpus["embedding"]
    want = _brute_stats(out.reset_index(drop=True), E)
    g = stats.set_index("cluster").loc[want["cluster"]]
    for col in ("size", "mean_quality", "pairwise_diversity", "mean_tokens"):
        assert np.allclose(g[col].to_numpy(), want[col].to_numpy(), rtol=1e-5, atol=1e-5), col
    with pytest.raises(ValueError, match="sampled rows"):
        fit_kmeans_dask(ddf, 500, sample_fraction=0.05)


def test_run_cluster_writes_labels_stats_and_per_cluster_files(blob_corpus, tmp_path):
    import json

    from datamask.stages.corpus.cluster_run import run_cluster

    d, corpus = blob_corpus
    out = tmp_path / "out"
    s = run_cluster(d, out, 6, sample_fraction=0.3, split_size=1000, by_cluster=True)
    assert s["rows"] == 3000 and s["splits"] == 4 and s["warnings"] == []
    assert json.loads((out / "cluster.json").read_text())["n_clusters"] == 6
    data = pq.read_table(out / "data").to_pandas()
    assert len(data) == 3000 and data["cluster"].dtype == np.int32
    assert adjusted_rand_score(data["truth"], data["cluster"]) > 0.95
    stats = pq.read_table(out / "cluster_stats.parquet").to_pandas().set_index("cluster")
    by_pd = data.groupby("cluster").agg(size=("id", "size"), q=("quality", "mean"), t=("n_tokens", "mean"))
    assert (stats.loc[by_pd.index, "size"].to_numpy() == by_pd["size"].to_numpy()).all()
    assert np.allclose(stats.loc[by_pd.index, "mean_quality"], by_pd["q"], atol=1e-6)
    assert np.allclose(stats.loc[by_pd.index, "mean_tokens"], by_pd["t"])
    # the diversity comes from sums taken while each partition is labelled: equal to brute force
    want = _brute_stats(data, np.stack(data["embedding"].to_numpy()).astype(np.float64)).set_index("cluster")
    assert np.allclose(stats.loc[want.index, "pairwise_diversity"], want["pairwise_diversity"], atol=1e-5)
    cent = pq.read_table(out / "centroids.parquet")
    assert cent.num_rows == 6 and cent.schema.field("centroid").type.list_size == 32
    files = sorted((out / "by_cluster").glob("cluster-*.parquet"))
    assert len(files) == 6 and not (out / "by_cluster" / "_pieces").exists()
    for f in files:  # one file (one pipeline partition) per cluster, all of its rows
        t = pq.read_table(f)
        c = int(f.stem.split("-")[1])
        assert set(t.column("cluster").to_pylist()) == {c} and t.num_rows == stats.loc[c, "size"]
        assert t.schema.field("embedding").type == pq.read_table(d).schema.field("embedding").type
    with pytest.warns(UserWarning, match="more than the split size"):
        s2 = run_cluster(d, tmp_path / "out2", 2, sample_fraction=0.3, split_size=1000)
    assert s2["warnings"]
    with pytest.raises(ValueError, match="more than the 3000 rows"):
        run_cluster(d, tmp_path / "out3", 3001)


def test_the_default_cluster_count_is_one_a_person_can_read(blob_corpus, tmp_path):
    """No n_clusters: sqrt(rows / 10) between 2 and 50 (3,000 rows: 17), from one function that
    ``cluster``, ``compare``, the frame API and the report's map share; never more than the sample."""
    from datamask.core.kmeans import readable_n_clusters
    from datamask.stages.corpus.analysis import ClusterConfig, CompareConfig
    from datamask.stages.corpus.cluster_run import run_cluster

    assert [readable_n_clusters(n) for n in (1, 3, 100, 2884, 3000, 25_000, 10**9)] == [1, 2, 3, 17, 17, 50, 50]
    assert ClusterConfig().n_clusters is None and CompareConfig().n_clusters is None
    d, _ = blob_corpus
    s = run_cluster(d, tmp_path / "out", None, sample_fraction=0.3, split_size=1000)
    assert s["n_clusters"] == 17 and pq.read_table(tmp_path / "out" / "centroids.parquet").num_rows == 17
    s = run_cluster(d, tmp_path / "few", None, sample_fraction=0.004, split_size=1000)  # a 12-row sample
    assert s["n_clusters"] == s["sample_rows"] < 17


def test_cuda_level_fits_lloyd_on_its_arrays(blob_corpus, tmp_path):
    """The CUDA level's own fit (``lloyd`` on the level's arrays; numpy stands in for cupy)
    finds the planted clusters and the summary names it."""
    from datamask.runtime.gpu import Level
    from datamask.stages.corpus.cluster_run import run_cluster

    d, corpus = blob_corpus
    fake = Level("cuda", "pandas", "numpy", "lloyd", "per-gpu", ("Fake GPU",), (2**34,))
    s = run_cluster(d, tmp_path / "cuda", 6, sample_fraction=0.3, split_size=1000, level=fake)
    assert s["backend"] == "lloyd" and s["gpu"]["kmeans"] == "lloyd"
    lab = pq.read_table(tmp_path / "cuda" / "data").to_pandas().sort_values("id")["cluster"].to_numpy()
    assert adjusted_rand_score(corpus["truth"], lab) > 0.95


def test_cuda_level_labels_on_its_arrays_like_the_cpu(blob_corpus, tmp_path):
    """The CUDA level fits on the host sample and labels every row on its array library; with
    numpy standing in for cupy the labels equal the CPU level's, and the summary says what ran."""
    from datamask.runtime.gpu import CPU, Level
    from datamask.stages.corpus.cluster_run import run_cluster

    d, _ = blob_corpus
    fake = Level("cuda", "pandas", "numpy", "sklearn", "per-gpu", ("Fake GPU",), (2**34,))
    a = run_cluster(d, tmp_path / "cpu", 6, sample_fraction=0.3, split_size=1000, level=CPU)
    b = run_cluster(d, tmp_path / "cuda", 6, sample_fraction=0.3, split_size=1000, level=fake)
    assert pq.read_table(tmp_path / "cpu" / "data").equals(pq.read_table(tmp_path / "cuda" / "data"))
    assert a["gpu"]["level"] == "cpu" and a["backend"] == "sklearn"
    assert b["gpu"] == fake.to_dict() and b["device"] == "gpu" and b["gpu"]["kmeans_labels"] == "gpu"
    assert b["fit_seconds"] >= 0 and b["label_seconds"] > 0


def test_partial_stats_on_the_device_equal_the_host_ones(fake_cp):
    """On a cupy array (the numpy stand-in) the embedding sums are taken on the device and
    only the k x d sums come back; they equal the numpy ones."""
    from datamask.analysis.cluster_stats import partial_stats
    from tests.helpers import fake_cupy

    X, y = _blobs(n=700, k=5, seed=3)
    q = np.linspace(0, 1, 700)
    host = partial_stats(y, q, X.astype(np.float16), None, 5)
    fake_cupy.SYNCS.clear()
    dev = partial_stats(y, q, fake_cp.asarray(X.astype(np.float16)), None, 5)
    assert len(fake_cupy.SYNCS) == 1  # the sums, once
    np.testing.assert_allclose(dev["sum_e"], host["sum_e"], rtol=1e-12, atol=1e-12)
    assert (dev["count"] == host["count"]).all()
