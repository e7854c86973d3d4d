"""Generated corpora with planted structure, for the demo, tests and benchmarks.

Real corpora are crowded: a few topics hold most documents, and templated pages produce
large groups of near-duplicates, some scored high by quality classifiers and some low. The
generator plants exactly that, on the unit sphere:

* ``n_topics`` topics with Zipf-distributed sizes; a document is its topic's centre plus
  isotropic noise (within-topic cosine about 0.3-0.6), and its quality is the topic's mean
  quality plus noise;
* ``n_dup_groups`` near-duplicate groups (cosine about 0.99 to each other) holding
  ``dup_fraction`` of the rows; half the groups score high on quality, half low.

Columns: ``id`` (int64), ``embedding`` (N x d float32 array, unit rows), ``quality``
(float32), ``topic`` (int32), ``dup_group`` (int32, -1 outside groups), ``n_tokens`` (int32).
"""

from __future__ import annotations

import numpy as np

__all__ = ["make_corpus", "make_clusters"]


def _unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def make_corpus(
    n_rows=20_000,
    dim=384,
    n_topics=50,
    n_dup_groups=20,
    dup_fraction=0.1,
    seed=0,
    dtype=np.float32,
):
    """Generate one corpus; returns a dict of numpy arrays (see module doc)."""
    if n_rows < 1 or dim < 2 or n_topics < 1:
        raise ValueError("n_rows, n_topics must be >= 1 and dim >= 2")
    rng = np.random.default_rng(seed)
    centres = _unit(rng.normal(size=(n_topics, dim)))
    zipf = 1.0 / np.arange(1, n_topics + 1) ** 0.8
    topic = rng.choice(n_topics, size=n_rows, p=zipf / zipf.sum()).astype(np.int32)
    spread = rng.uniform(0.8, 1.6, size=n_topics)  # noise norm relative to the centre
    topic_quality = rng.normal(0.0, 0.6, size=n_topics)

    E = np.empty((n_rows, dim), dtype=np.float32)
    step = 65_536
    for i0 in range(0, n_rows, step):
        t = topic[i0 : i0 + step]
        noise = rng.normal(size=(t.shape[0], dim)).astype(np.float32)
        noise *= (spread[t] / np.sqrt(dim)).astype(np.float32)[:, None]
        E[i0 : i0 + step] = centres[t] + noise
    quality = topic_quality[topic] + rng.normal(0.0, 1.0, size=n_rows)

    dup_group = np.full(n_rows, -1, dtype=np.int32)
    n_dup = int(round(dup_fraction * n_rows))
    if n_dup_groups > 0 and n_dup > 0:
        rows = rng.choice(n_rows, size=n_dup, replace=False)
        groups = rng.integers(0, n_dup_groups, size=n_dup).astype(np.int32)
        dup_group[rows] = groups
        bases = E[rng.choice(n_rows, size=n_dup_groups, replace=False)]
        bases = _unit(bases)
        noise = rng.normal(size=(n_dup, dim)).astype(np.float32) * np.float32(0.1 / np.sqrt(dim))
        E[rows] = bases[groups] + noise
        # Half the groups are templated pages a classifier likes, half it dislikes.
        group_quality = np.where(np.arange(n_dup_groups) % 2 == 0, 2.5, -2.0)
        quality[rows] = group_quality[groups] + rng.normal(0.0, 0.3, size=n_dup)
        topic[rows] = topic[rows]  # keep the topic label of the row it replaced
    E = _unit(E).astype(dtype)
    n_tokens = np.maximum(20, rng.lognormal(6.0, 0.8, size=n_rows)).astype(np.int32)
    return {
        "id": np.arange(n_rows, dtype=np.int64),
        "embedding": E,
        "quality": quality.astype(np.float32),
        "topic": topic,
        "dup_group": dup_group,
        "n_tokens": n_tokens,
    }


def make_clusters(
    n_rows=20_000,
    dim=384,
    n_clusters=100,
    sizes="even",
    quality="cluster",
    n_dup_groups=10,
    dup_fraction=0.05,
    intrinsic_dim=None,
    spread=1.0,
    noise=0.5,
    seed=0,
):
    """Clusters of another shape than :func:`make_corpus`, for the default-selection suite.

    ``sizes``: ``"even"`` (Dirichlet, all of a similar size) or ``"heavy"`` (Pareto, a few
    clusters hold most rows). ``quality``: a row's quality is its cluster's mean plus noise
    with the cluster mean ``"cluster"`` (random, correlated within clusters), ``"size"``
    (rising with cluster size: the crowded clusters score high), ``"anti"`` (falling with
    size) or ``"independent"`` (no cluster term). ``n_dup_groups`` groups of near-duplicates
    (cosine about 0.99) hold ``dup_fraction`` of the rows, all scored near the top of the
    quality range: the quality top-S is crowded with them. ``intrinsic_dim``: the rows lie
    in a random subspace of this dimension (None: all of ``dim``). ``spread``: noise norm
    relative to a cluster centre; ``noise``: sd of a row's quality around its cluster's
    mean (which has sd 1). Returns the columns of :func:`make_corpus`
    (``topic`` is the cluster).
    """
    if n_rows < 1 or dim < 2 or n_clusters < 1:
        raise ValueError("n_rows, n_clusters must be >= 1 and dim >= 2")
    rng = np.random.default_rng(seed)
    k = dim if intrinsic_dim is None else int(intrinsic_dim)
    if sizes == "heavy":
        p = rng.pareto(1.0, size=n_clusters) + 1.0
    else:
        p = rng.dirichlet(np.full(n_clusters, 20.0))
    p = p / p.sum()
    topic = rng.choice(n_clusters, size=n_rows, p=p).astype(np.int32)
    centres = _unit(rng.normal(size=(n_clusters, k)))
    X = centres[topic] + rng.normal(size=(n_rows, k)) * (spread / np.sqrt(k))
    size_z = np.log(p) - np.log(p).mean()
    size_z /= size_z.std() + 1e-12
    mean_q = {
        "cluster": rng.normal(0.0, 1.0, n_clusters),
        "size": size_z,
        "anti": -size_z,
        "independent": np.zeros(n_clusters),
    }[quality]
    q = mean_q[topic] + rng.normal(0.0, noise, n_rows)
    dup_group = np.full(n_rows, -1, dtype=np.int32)
    n_dup = int(round(dup_fraction * n_rows))
    if n_dup_groups > 0 and n_dup > 0:
        rows = rng.choice(n_rows, size=n_dup, replace=False)
        groups = rng.integers(0, n_dup_groups, size=n_dup).astype(np.int32)
        dup_group[rows] = groups
        bases = _unit(X[rng.choice(n_rows, size=n_dup_groups, replace=False)])
        X[rows] = bases[groups] + rng.normal(size=(n_dup, k)) * (0.1 / np.sqrt(k))
        q[rows] = np.quantile(q, 0.99) + rng.normal(0.0, 0.2, n_dup)
    if k < dim:
        basis, _ = np.linalg.qr(rng.normal(size=(dim, k)))
        X = X @ basis.T
    E = _unit(X).astype(np.float32)
    return {
        "id": np.arange(n_rows, dtype=np.int64),
        "embedding": E,
        "quality": q.astype(np.float32),
        "topic": topic,
        "dup_group": dup_group,
        "n_tokens": np.maximum(20, rng.lognormal(6.0, 0.8, size=n_rows)).astype(np.int32),
    }
