"""The report's corpus map and its kept/dropped texts: the bounded sample, the cluster names,
the projection, the page fragment (no network), and the examples merged from the splits."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

TOPICS = {
    "kernel": "kernel module driver interrupt device memory page scheduler",
    "network": "socket packet address interface route firewall port protocol",
    "printing": "printer queue spool page job toner paper duplex",
    "archive": "archive compress tar file extract directory gzip member",
}


def text_corpus(directory, n_rows=1200, dim=24, seed=0, n_files=1):
    """Rows of four topics: each text built from its topic's words (and a few common ones),
    its embedding the topic's direction plus noise, quality higher on two topics, and small
    duplicate groups; written as Parquet with ``id, text, embedding, quality, dup_group``."""
    rng = np.random.default_rng(seed)
    names = list(TOPICS)
    topic = rng.integers(0, len(names), n_rows)
    centres = rng.normal(size=(len(names), dim))
    E = (centres[topic] + 0.35 * rng.normal(size=(n_rows, dim))).astype(np.float32)
    common = ["the", "a", "of", "system", "user", "option", "value", "default"]
    texts = []
    for i, t in enumerate(topic):
        words = rng.choice(TOPICS[names[t]].split() + common, size=30).tolist()
        texts.append(f"doc {i}: " + " ".join(words))
    quality = (np.where(topic % 2 == 0, 1.0, -1.0) + rng.normal(0, 0.5, n_rows)).astype(np.float32)
    dup = np.full(n_rows, -1, np.int64)
    dup[: n_rows // 10] = np.arange(n_rows // 10) % 5
    directory.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, n_rows, n_files + 1).astype(int)
    for f in range(n_files):
        lo, hi = bounds[f], bounds[f + 1]
        t = pa.table(
            {
                "id": np.arange(lo, hi, dtype=np.int64),
                "text": texts[lo:hi],
                "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E[lo:hi].reshape(-1)), dim),
                "quality": quality[lo:hi],
                "dup_group": dup[lo:hi],
            }
        )
        pq.write_table(t, directory / f"part-{f}.parquet", row_group_size=300)
    return names, topic


def test_cluster_labels_name_each_topic_by_its_own_words():
    from datamask.analysis.report.corpus_map import cluster_labels

    rng = np.random.default_rng(0)
    lab = rng.integers(0, 4, 400)
    names = list(TOPICS)
    texts = [" ".join(rng.choice(TOPICS[names[c]].split() + ["the", "system", "user"], 20)) for c in lab]
    got = cluster_labels(texts, lab, n_terms=3)
    for c, name in enumerate(names):
        words = got[c].split(": ", 1)[1].split()
        assert len(words) == 3 and set(words) <= set(TOPICS[name].split()), got[c]
    assert list(cluster_labels([None] * 3, np.array([0, 1, 1]))) == ["cluster 0", "cluster 1"]
    # a cluster of numbers and symbols only: named by its first text's opening, not "cluster 1"
    got = cluster_labels(["alpha beta gamma", "0x1f 0x2a  -- 42 17 99 12 13 14 15", "== 3"], np.array([0, 1, 1]))
    assert got[0].startswith("0: ") and got[1] == '1: "0x1f 0x2a -- 42 17 99 1…"', got


def test_map_frame_is_bounded_and_the_fragment_fetches_nothing():
    from datamask.analysis.report.corpus_map import map_frame, map_html

    rng = np.random.default_rng(1)
    n = 600
    sample = pd.DataFrame(
        {"id": np.arange(n), "quality": rng.normal(size=n), "snippet": [f"text {i} " + "x" * 300 for i in range(n)]}
    )
    E = rng.normal(size=(n, 8)).astype(np.float32)
    f = map_frame(sample, E, selected=np.arange(n) % 3 == 0, method="pca", max_rows=500)
    assert len(f) == 500 and f[["x", "y"]].notna().all().all()
    assert f["cluster"].nunique() > 1  # no cluster column: k-means on the sample
    assert f["selected"].sum() == (np.arange(500) % 3 == 0).sum()
    frag = map_html(f)
    # bokeh's JavaScript is inlined: no script or style tag points anywhere (the browser test
    # checks that the page requests nothing while it draws)
    assert "Bokeh" in frag and len(frag) > 500_000
    assert not re.search(r"<script[^>]*\ssrc\s*=|<link[^>]*\shref\s*=", frag)
    assert "colour: quality" in frag and "colour: duplicate group" not in frag  # no dup_group column


def test_umap_keeps_neighbours_better_than_pca_on_clustered_rows():
    """The reason UMAP is the projection for large samples: more of each row's neighbours in
    the embedding space stay its neighbours on the map (kNN recall@10)."""
    pytest.importorskip("umap")
    from sklearn.neighbors import NearestNeighbors

    from datamask.analysis.report.corpus_map import project

    rng = np.random.default_rng(2)
    centres = rng.normal(size=(30, 32))
    # 600 rows (umap's exact-neighbour path, as at 1,500): the cost is numba's compilation of
    # umap, paid once; recall@10 0.59 vs PCA's 0.42 here (0.33 vs 0.21 at 1,500 rows)
    E = (centres[rng.integers(0, 30, 600)] + 0.3 * rng.normal(size=(600, 32))).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)

    def recall(Y, k=10):
        hi = np.argsort(-(E @ E.T), axis=1)[:, 1 : k + 1]
        lo = NearestNeighbors(n_neighbors=k + 1).fit(Y).kneighbors(Y, return_distance=False)[:, 1:]
        return np.mean([len(set(a) & set(b)) / k for a, b in zip(hi, lo)])

    r_pca, r_umap = recall(project(E, "pca")), recall(project(E, "umap"))
    assert r_umap > r_pca + 0.05, (r_umap, r_pca)


def test_examples_are_the_nearest_kept_and_dropped_per_cluster_merged_over_splits():
    from datamask.analysis.report.kept_dropped import kept_dropped_html, merge_examples, nearest_examples

    rng = np.random.default_rng(3)
    parts = []
    for s in range(2):
        E = rng.normal(size=(200, 6)).astype(np.float32)
        E /= np.linalg.norm(E, axis=1, keepdims=True)
        lab, sel = np.arange(200) % 2, rng.random(200) < 0.3
        texts = pa.array([f"split {s} row {i}" for i in range(200)])
        ex = nearest_examples(E, lab, sel, rng.normal(size=200), np.arange(200) + 1000 * s, texts, per=2)
        for c in (0, 1):  # the kept ones are the selected rows of highest cosine to the centre
            rows = np.flatnonzero((lab == c) & sel)
            centre = E[lab == c].mean(0)
            centre /= np.linalg.norm(centre)
            best = rows[np.argsort(-(E[rows] @ centre))[:2]] + 1000 * s
            got = ex[(ex.cluster == c) & (ex.kind == "kept")]["id"].astype(int).tolist()
            assert got == best.tolist()
        parts.append(ex)
    merged = merge_examples(parts, per=2)
    assert merged.groupby(["cluster", "kind"]).size().eq(2).all() and len(merged) == 8
    for (_c, _k), g in merged.groupby(["cluster", "kind"]):  # the best two of both splits
        both = pd.concat(parts)
        top = both[(both.cluster == _c) & (both.kind == _k)]["cosine"].nlargest(2).to_numpy()
        np.testing.assert_allclose(np.sort(g["cosine"].to_numpy()), np.sort(top), rtol=1e-6)
    page = kept_dropped_html(merged, {0: "0: even", 1: "1: odd"})
    assert page.count("<tr>") == 3 and "0: even" in page and "split 1 row" in page


def test_compare_report_has_map_and_examples_from_the_workers(tmp_path):
    from datamask.pipeline.config import SelectConfig
    from datamask.stages.corpus.compare_run import run_compare

    names, topic = text_corpus(tmp_path / "c", n_rows=1200, n_files=2)
    cfg = SelectConfig(split_size=600, ratio=0.2, seed=0, solver_params=dict(steps=60, eval_every=20))
    run_compare(tmp_path / "c", tmp_path / "o", cfg=cfg, methods=("datamask", "topk", "random"), sample_rows=400)
    sample = pd.read_parquet(tmp_path / "o" / "sample.parquet")
    assert len(sample) == 400 and sample["snippet"].str.startswith("doc ").all()
    assert (sample["dup_group"] >= 0).any()
    ex = pd.read_parquet(tmp_path / "o" / "examples.parquet")
    assert set(ex["kind"]) == {"kept", "dropped"} and (ex.groupby("kind").size() <= 3).all()  # one region
    page = (tmp_path / "o" / "report" / "index.html").read_text()
    assert "<h2>Corpus map</h2>" in page and "<h2>Kept and dropped</h2>" in page
    assert "400 sampled rows" in page and "colour: duplicate group" in page
    # no clusters on the workers: kept/dropped per cluster of the map's sample, several rows
    table = page.split("<table class='kept-dropped'>")[1].split("</table>")[0]
    assert table.count("<tr>") >= 4 and table.count("quality ") >= 6
    # the clusters fitted on the sample are named by the words of the topics
    labels = re.findall(r"&quot;label&quot;|\"label\"", page)
    assert labels
    topic_words = {w for ws in TOPICS.values() for w in ws.split()}
    shown = set(re.findall(r"\d+: ((?:[a-z]+ ?){3})", page))
    assert any(set(s.split()) <= topic_words for s in shown), shown
