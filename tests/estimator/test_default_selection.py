"""The default selection (0.3: facility location, lam 0.7, no pruning, the redundancy filter) does
what docs/diversity.md says it was chosen for, on one case of the suite that chose it (a
corpus of 50 clusters with planted near-copies): it covers the
corpus at least as well as top-k and nearly as well as random, keeps no more near-duplicates than
random, and keeps quality above the midpoint of random's and top-k's. The paper's recipe
(``preset="paper"``) does not, on the same rows."""

import numpy as np
import pytest

from datamask import DataMask
from datamask.core.scorecard import Scorecard
from datamask.core.synthetic import make_clusters
from datamask.pipeline.presets import PRESETS


@pytest.fixture(scope="module")
def corpus():
    """The diversity suite's "clusters, issue shape" case (benchmarks/diversity.py), as it ran there."""
    c = make_clusters(n_rows=20_000, dim=384, seed=0, n_clusters=50, spread=0.5, noise=0.1, n_dup_groups=10,
                      dup_fraction=0.05)  # fmt: skip
    return c["embedding"].astype(np.float32), c["quality"].astype(np.float64)


def _scores(E, q, masks):
    card = Scorecard(E, q, sample=4096, diversities=("facility",), diversity="facility", reference_size=4096)
    return card.score_many(masks)


def test_the_default_is_facility_with_the_filter_and_meets_its_checks(corpus):
    E, q = corpus
    est = DataMask(ratio=0.1, seed=0, solver_params=dict(n_threads=1)).fit(E, q)
    assert (est.diversity, est.prune, est.near_duplicate) == ("facility", 0.0, 0.95)
    S = int(est.mask_.sum())
    topk = np.zeros(len(q), bool)
    topk[np.argsort(-q, kind="stable")[:S]] = True
    rnd = np.zeros(len(q), bool)
    rnd[np.random.default_rng(0).choice(len(q), S, replace=False)] = True
    recipe = {**PRESETS["paper"], "solver_params": {**PRESETS["paper"]["solver_params"], "steps": 300}}
    paper = DataMask(ratio=0.1, seed=0, **recipe).fit(E, q)
    s = _scores(E, q, {"default": est.mask_, "topk": topk, "random": rnd, "paper": paper.mask_})
    d, t, r = s["default"], s["topk"], s["random"]
    assert d["facility"] >= t["facility"] and d["facility"] >= r["facility"] - 0.01
    assert d["near_duplicates"] <= r["near_duplicates"] + 0.02
    assert d["quality_norm"] >= 0.5 * (t["quality_norm"] + r["quality_norm"])
    # the paper's pairwise recipe keeps the planted near-copies the default leaves out
    assert s["paper"]["near_duplicates"] > r["near_duplicates"] + 0.02
    assert est.optimizer_["near_duplicates"] > 0


def test_evaluate_scores_the_objective_the_default_fit_maximised():
    """``evaluate``'s defaults are ``DataMask()``'s: the same objective, the same reference rows."""
    from datamask import evaluate

    c = make_clusters(n_rows=3000, dim=32, seed=1, n_clusters=20, spread=0.5, noise=0.1)
    E, q = c["embedding"].astype(np.float32), c["quality"].astype(np.float64)
    est = DataMask(ratio=0.1, seed=3).fit(E, q)
    got = evaluate(E, q, est.mask_, seed=3)
    assert got == pytest.approx(est.objective_, rel=1e-6)
    other = evaluate(E, q, est.mask_, seed=3, lam=0.5, diversity="pairwise", reference_size=None)
    assert other["objective"] != pytest.approx(got["objective"], rel=1e-3)  # 0.2's defaults score another one
