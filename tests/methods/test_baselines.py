"""Baselines: top-k, random, SemDeDup (blocked) and QuaDMix sampling."""

from __future__ import annotations

import numpy as np
import pytest

from datamask.core.kmeans import assign, fit_kmeans
from datamask.methods.quadmix import (
    quadmix_expected_counts,
    quadmix_params,
    quadmix_percentile,
    quadmix_sample,
    quadmix_sampling,
    quadmix_scale_to_budget,
    quadmix_select,
)
from datamask.methods.random import random_subset
from datamask.methods.semdedup import semdedup, semdedup_eps_for_budget
from datamask.methods.topk import topk


def _unit(X):
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def dup_corpus():
    """600 rows, d=32, 6 clusters; 60 rows are exact copies of other rows."""
    rng = np.random.default_rng(0)
    centres = _unit(rng.normal(size=(6, 32)))
    lab = rng.integers(0, 6, size=540)
    E = _unit(centres[lab] + 0.25 * rng.normal(size=(540, 32)))
    src = rng.choice(540, size=60, replace=False)
    E = np.concatenate([E, E[src]])
    cent = fit_kmeans(E, 6, seed=0)
    cluster = assign(E, cent)[0]
    return E, cluster, cent, src


def _reference_semdedup(E, cluster, cent, eps, order="far"):
    """Row-by-row SemDeDup, straight from the definition (float64)."""
    E = E.astype(np.float64)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    C = cent / np.linalg.norm(cent, axis=1, keepdims=True)
    cos_c = (E * C[cluster]).sum(axis=1)
    keep = np.ones(len(E), dtype=bool)
    thr = 1.0 - max(eps, 1e-6)
    for c in np.unique(cluster):
        rows = np.flatnonzero(cluster == c)
        key = cos_c[rows] if order == "far" else -cos_c[rows]
        rows = rows[np.lexsort((rows, key))]
        kept = []
        for i in rows:
            if kept and (E[kept] @ E[i]).max() > thr:
                keep[i] = False
            else:
                kept.append(i)
    return keep


def test_topk_and_random():
    q = np.array([0.1, 0.9, 0.5, 0.9, -1.0, 0.3])
    assert np.flatnonzero(topk(q, 3)).tolist() == [1, 2, 3]
    m1, m2 = random_subset(100, 10, seed=3), random_subset(100, 10, seed=3)
    assert m1.sum() == 10 and (m1 == m2).all() and (m1 != random_subset(100, 10, seed=4)).any()
    with pytest.raises(ValueError, match="budget"):
        topk(q, 7)


def test_topk_partition_is_the_stable_sort_and_select_mask_is_selects_mask():
    """Top-k under a row budget takes a partition, not a sort: the same rows as a stable
    descending sort (ties: lower row index first); select_mask returns select's mask for
    the baselines, unscored, under a row and a token budget."""
    from datamask.methods import select, select_mask
    from datamask.pipeline.config import SelectConfig

    rng = np.random.default_rng(0)
    for t in range(200):
        n = int(rng.integers(1, 300))
        q = rng.integers(0, 4, size=n).astype(float) if t % 2 else rng.normal(size=n)  # ties, or none
        S = int(rng.integers(1, n + 1))
        ref = np.zeros(n, dtype=bool)
        ref[np.argsort(-q, kind="stable")[:S]] = True
        assert (topk(q, S) == ref).all()
    E = _unit(rng.normal(size=(500, 8)))
    q = rng.integers(0, 20, size=500).astype(np.float32)
    lengths = rng.integers(1, 50, size=500)
    cfg = SelectConfig(ratio=0.1, quiet=True)
    for m in ("topk", "random"):
        mcfg = cfg.replace(method=m)
        assert (select_mask(E, q, cfg, 7, method=m) == select(E, q, mcfg, 7).mask).all()
        by_tokens = select_mask(E, q, cfg, 7, lengths=lengths, split_tokens=2000, method=m)
        assert (by_tokens == select(E, q, mcfg, 7, lengths=lengths, split_tokens=2000).mask).all()
        assert lengths[by_tokens].sum() <= 2000


@pytest.mark.parametrize("eps", [1e-12, 1e-6, 1e-3, 0.05, 0.3])
def test_semdedup_removes_exact_duplicates_for_any_eps(dup_corpus, eps):
    E, cluster, cent, src = dup_corpus
    keep = semdedup(E, cluster, cent, eps)
    copies = np.arange(540, 600)
    # of each (original, copy) pair exactly one is dropped at least
    assert not (keep[src] & keep[copies]).any()
    # no two kept rows of a cluster are closer than 1 - eps
    for c in np.unique(cluster):
        K = E[keep & (cluster == c)]
        G = K @ K.T
        np.fill_diagonal(G, -1)
        assert G.max() <= 1 - max(eps, 1e-6) + 1e-6


@pytest.mark.parametrize("order", ["far", "near"])
@pytest.mark.parametrize("eps", [0.02, 0.4, 1.5])
def test_semdedup_blocked_equals_definition_and_keeps_first(dup_corpus, eps, order):
    E, cluster, cent, _ = dup_corpus
    ref = _reference_semdedup(E, cluster, cent, eps, order)
    keep = semdedup(E, cluster, cent, eps, order=order, block=7, chunk=5)  # many blocks and chunks
    assert (keep == ref).all()
    assert (semdedup(E, cluster, cent, eps, order=order) == ref).all()
    # the first row of every cluster's visiting order is kept, whatever eps
    C = cent / np.linalg.norm(cent, axis=1, keepdims=True)
    cos_c = (E * C[cluster]).sum(axis=1)
    for c in np.unique(cluster):
        rows = np.flatnonzero(cluster == c)
        first = rows[np.argmin(cos_c[rows])] if order == "far" else rows[np.argmax(cos_c[rows])]
        assert keep[first]
    if eps == 1.5:  # everything within a cluster is a "duplicate" of something very close
        assert keep.sum() < len(E) // 2


def test_semdedup_eps_zero_keeps_all(dup_corpus):
    E, cluster, cent, _ = dup_corpus
    assert semdedup(E, cluster, cent, 0.0).all()
    with pytest.raises(ValueError):
        semdedup(E, cluster, cent, -0.1)


def test_semdedup_eps_for_budget(dup_corpus):
    E, cluster, cent, _ = dup_corpus
    for budget in (150, 400):
        eps, keep = semdedup_eps_for_budget(E, cluster, cent, budget, tol=3)
        assert budget <= keep.sum() <= budget + 3
        assert (keep == semdedup(E, cluster, cent, eps)).all()


# ---------------------------------------------------------------------- QuaDMix
@pytest.mark.parametrize(
    "lam,omega,eta,eps", [(10, 0.5, 1, 0.0), (3, 0.8, 2.5, 0.2), (50, 0.1, 0.5, 1.0), (0.0, 0.7, 1.0, 0.3)]
)
def test_quadmix_sampling_shape(lam, omega, eta, eps):
    r = np.linspace(0, 1, 2001)
    s = quadmix_sampling(r, lam, omega, eta, eps)
    assert (np.diff(s) <= 1e-12).all()  # non-increasing in the percentile
    assert (s[r >= omega] == 0).all() and (s[r < omega] >= 1 + eps - 1e-12).all()
    left = quadmix_sampling(omega - 1e-9, lam, omega, eta, eps)
    assert left == pytest.approx(1 + eps, abs=1e-6)  # 1 + eps at the cut-off, from the left
    assert quadmix_sampling(omega, lam, omega, eta, eps) == 0
    assert s[0] <= 2**eta + eps + 1e-12


def test_quadmix_percentile_token_weighted_within_domain():
    q = np.array([5.0, 1.0, 3.0, 9.0, 2.0, 2.0])
    dom = np.array([0, 0, 0, 1, 1, 1])
    tok = np.array([10, 30, 60, 1, 2, 2])
    r = quadmix_percentile(q, dom, tok)
    # domain 0 by quality: 5 (10 tok), 3 (60), 1 (30) of 100 tokens
    assert r[:3] == pytest.approx([0.05, 0.1 + 0.6 + 0.15, 0.1 + 0.3])
    # domain 1: 9 (1 tok) then a tie of two rows with 4 tokens of 5
    assert r[3:] == pytest.approx([0.1, 0.2 + 0.4, 0.6])
    assert ((0 < r) & (r < 1)).all()


def test_quadmix_realised_copies_approach_expected():
    rng = np.random.default_rng(1)
    q = rng.normal(size=4000)
    dom = rng.integers(0, 4, size=4000)
    p = quadmix_params(
        range(4),
        {"default": {"lam": 8, "omega": 0.6, "eta": 1.5, "eps": 0.25}, "domains": {2: {"omega": 0.3}, 3: {"eta": 0.0}}},
    )
    exp = quadmix_expected_counts(q, dom, p, n_tokens=rng.integers(50, 500, size=4000))
    assert (exp[dom == 2] > 0).mean() == pytest.approx(0.3, abs=0.05)
    exp = quadmix_scale_to_budget(exp, 1000)
    assert exp.sum() == pytest.approx(1000)
    draws = np.stack([quadmix_sample(exp, seed=s) for s in range(400)])
    assert (draws >= np.floor(exp)).all() and (draws <= np.ceil(exp)).all()
    assert np.abs(draws.mean(axis=0) - exp).max() < 0.12  # per document, 400 draws
    assert draws.sum(axis=1).mean() == pytest.approx(1000, rel=0.01)


def test_quadmix_select_prefers_quality_within_domains():
    rng = np.random.default_rng(2)
    q = rng.normal(size=3000)
    dom = rng.integers(0, 3, size=3000)
    p = quadmix_params([0, 1, 2], {"default": {"omega": 0.5}})
    m = quadmix_select(q, dom, p, 300, seed=0)
    assert m.sum() == 300
    r = quadmix_percentile(q, dom)
    assert (r[m] < 0.5).all()  # nothing above the cut-off while enough rows are eligible
    for d in range(3):  # every domain keeps a share, not only the best domain
        assert m[dom == d].sum() > 50
    assert q[m].mean() > q.mean() + 0.5
    full = quadmix_select(q, dom, quadmix_params([0, 1, 2], {"default": {"omega": 0.05}}), 600, seed=0)
    assert full.sum() == 600  # filled past the eligible rows by percentile


def test_quadmix_params_yaml(tmp_path):
    f = tmp_path / "qm.yaml"
    f.write_text("default: {lam: 5, omega: 0.4}\ndomains:\n  1: {omega: 0.9, eps: 0.5}\n")
    p = quadmix_params([0, 1], str(f))
    assert p.omega.tolist() == [0.4, 0.9] and p.lam.tolist() == [5, 5] and p.eps.tolist() == [0, 0.5]
    with pytest.raises(ValueError, match="omega"):
        quadmix_params([0], {"default": {"omega": 1.5}})
    with pytest.raises(ValueError, match="unknown"):
        quadmix_params([0], {"default": {"beta": 1}})


def test_baselines_are_selection_methods(dup_corpus):
    from datamask.methods import REGISTRY, select
    from datamask.pipeline.config import SelectConfig

    E, _, _, _ = dup_corpus
    q = np.random.default_rng(0).normal(size=len(E))
    cfg = SelectConfig(
        ratio=0.1, prune=0.5, diversity="pairwise", solver_params=dict(steps=20)
    )  # relaxed: pairwise or DiSF
    for name in ("topk", "random", "semdedup", "quadmix", "greedy", "relaxed"):
        assert name in REGISTRY
        sel = select(E, q, cfg.replace(method=name), 7)
        assert sel.mask.dtype == bool and sel.mask.sum() == 60, name
        assert set(sel.objective) == {"objective", "quality", "diversity"}
    assert select(E, q, cfg.replace(method="topk"), 7).mask[np.argmax(q)]


def test_max_cos_to_earlier_bounds_semdedup(dup_corpus):
    from datamask.methods.semdedup import _max_cos_to_earlier

    E, cluster, cent, _ = dup_corpus
    M = _max_cos_to_earlier(E, cluster, cent, block=7, chunk=5)
    # brute force in each cluster's visiting order
    C = cent / np.linalg.norm(cent, axis=1, keepdims=True)
    cos_c = (E * C[cluster]).sum(axis=1)
    for c in np.unique(cluster):
        rows = np.flatnonzero(cluster == c)
        rows = rows[np.lexsort((rows, cos_c[rows]))]
        assert M[rows[0]] == -np.inf
        for j in range(1, len(rows)):
            assert M[rows[j]] == pytest.approx((E[rows[:j]] @ E[rows[j]]).max(), abs=1e-5)
    for eps in (0.05, 0.3, 0.8):  # comparing with every earlier row drops at least as many
        assert (M <= 1 - eps).sum() <= semdedup(E, cluster, cent, eps).sum()
