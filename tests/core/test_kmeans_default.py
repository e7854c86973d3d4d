"""One function for the default k-means cluster count (issue 51): SemDeDup's ``sqrt(rows / 10)``,
which semantic dedup (the stage and the estimator) and the baselines' per-split clusters use,
and the corpus analysis's readable count built on it."""

import numpy as np

from datamask.core.kmeans import default_n_clusters, readable_n_clusters
from datamask.dedup.semantic import semantic_duplicates


def test_one_default_cluster_count_under_every_caller():
    assert [default_n_clusters(n) for n in (0, 1, 14, 15, 1000, 10**6)] == [1, 1, 1, 1, 10, 316]
    for n in (1, 3, 100, 2884, 25_000):
        assert readable_n_clusters(n) == max(1, min(n, 50, max(2, default_n_clusters(n))))


def test_semantic_dedup_without_a_cluster_count_uses_the_default(monkeypatch):
    """The estimator's semantic pass fits ``default_n_clusters(rows)`` clusters when none is given."""
    import datamask.core.kmeans as km

    seen = []
    real = km.fit_kmeans
    monkeypatch.setattr(km, "fit_kmeans", lambda E, k, **kw: seen.append(k) or real(E, k, **kw))
    E = np.random.default_rng(0).normal(size=(1000, 8)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    semantic_duplicates(E, None, np.random.default_rng(1).random(1000), 0.05)
    assert seen == [default_n_clusters(1000)] == [10]
