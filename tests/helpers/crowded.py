"""The crowded clustered corpus (quality set by the cluster, tight clusters, high-quality
near-duplicate groups) at lam 0.2: the shape where the quality-aware wide start fails
(benchmarks/results/defaults.md, shrunk), under pairwise diversity (0.2's objective, pinned in tests/helpers/pairwise.py).
Shared by the start tests."""

import numpy as np

from datamask.core.synthetic import make_clusters
from tests.helpers.pairwise import PairwiseMask, evaluate

ISSUE = dict(n_clusters=50, spread=0.5, noise=0.1, n_dup_groups=10, dup_fraction=0.05)


def crowded_corpus(n=2000, dim=32, lam=0.2):
    """``(E, q, random objective, greedy's gain over it)`` of the crowded corpus, S = n / 10."""
    c = make_clusters(n, dim=dim, seed=0, **ISSUE)
    E, q = c["embedding"], c["quality"]
    rand = evaluate(E, q, np.random.default_rng(0).permutation(n)[: n // 10], lam=lam)["objective"]
    best = PairwiseMask(method="greedy", lam=lam).fit(E, q).objective_["objective"]
    return E, q, rand, best - rand
