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

__all__ = ["make_corpus"]


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
        t = topic[i0:i0 + step]
        noise = rng.normal(size=(t.shape[0], dim)).astype(np.float32)
        noise *= (spread[t] / np.sqrt(dim)).astype(np.float32)[:, None]
        E[i0:i0 + step] = centres[t] + noise
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
