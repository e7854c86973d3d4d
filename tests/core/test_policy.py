"""Plackett-Luce sampling and its score function."""
import itertools

import numpy as np
import pytest

from datamask.core.backend import default_rng
from datamask.core.policy import log_prob, policy_gradient, sample_masks


@pytest.mark.parametrize("n,S,G", [(10, 3, 50), (2500, 500, 128), (7, 7, 4), (300, 1, 16)])
def test_every_mask_has_S_distinct_rows(n, S, G):
    L = np.random.default_rng(1).normal(size=n) * 3
    orders = sample_masks(L, S, G, default_rng(np, 0))
    assert orders.shape == (G, S)
    assert orders.min() >= 0 and orders.max() < n
    for row in orders:
        assert len(set(row.tolist())) == S


def test_wide_logit_span_uses_log_keys_and_still_samples_correctly():
    # Span > 80 nats takes the log-space branch; the top rows must still come first.
    L = np.array([200.0, 100.0, 0.0, -50.0, -120.0])
    orders = sample_masks(L, 3, 200, default_rng(np, 3))
    assert (orders[:, 0] == 0).all() and (orders[:, 1] == 1).all() and (orders[:, 2] == 2).all()


def _pl_prob(L, seq):
    p = np.exp(L)
    left = p.sum()
    prob = 1.0
    for i in seq:
        prob *= p[i] / left
        left -= p[i]
    return prob


@pytest.mark.parametrize("far_row", [False, True])
def test_gumbel_top_k_frequencies_match_plackett_luce_law(far_row):
    # far_row adds a row 200 nats down: the logits then span > 80 nats and the keys are
    # taken in log space; that row is (practically) never drawn, so the law is unchanged.
    L = np.array([1.2, 0.3, -0.5, 0.0, 0.9] + ([-200.0] if far_row else []))
    S, draws = 2, 200_000
    orders = sample_masks(L, S, draws, default_rng(np, 7))
    assert orders.max() < 5
    counts = {}
    for a, b in orders.tolist():
        counts[(a, b)] = counts.get((a, b), 0) + 1
    exact = {seq: _pl_prob(L, seq) for seq in itertools.permutations(range(5), S)}
    assert abs(sum(exact.values()) - 1.0) < 1e-12
    for seq, p in exact.items():
        freq = counts.get(seq, 0) / draws
        # 5 standard errors: fails for a wrong law, passes for sampling noise.
        assert abs(freq - p) < 5 * np.sqrt(p * (1 - p) / draws) + 1e-4, (seq, freq, p)


def test_log_prob_sums_to_one_over_all_ordered_draws():
    L = np.array([0.4, -1.0, 2.0, 0.1])
    seqs = np.array(list(itertools.permutations(range(4), 3)))
    total = np.exp(log_prob(L, seqs)).sum()
    assert total == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("n,S,G", [(7, 3, 5), (40, 10, 8), (12, 12, 3)])
def test_gradient_matches_finite_differences(n, S, G):
    rng = np.random.default_rng(n)
    L = rng.normal(size=n) * 2
    orders = sample_masks(L, S, G, default_rng(np, n))
    w = rng.normal(size=G)
    g = policy_gradient(L, orders, w)
    eps = 1e-6
    fd = np.empty(n)
    for i in range(n):
        up, dn = L.copy(), L.copy()
        up[i] += eps
        dn[i] -= eps
        fd[i] = ((log_prob(up, orders) - log_prob(dn, orders)) * w).sum() / (2 * eps)
    assert np.abs(g - fd).max() < 1e-6


def test_gradient_is_invariant_to_a_logit_shift():
    L = np.random.default_rng(0).normal(size=30)
    orders = sample_masks(L, 5, 6, default_rng(np, 1))
    w = np.linspace(-1, 1, 6)
    assert np.allclose(policy_gradient(L, orders, w), policy_gradient(L + 500.0, orders, w))


def test_rejects_budget_outside_rows():
    with pytest.raises(ValueError, match="S must be"):
        sample_masks(np.zeros(5), 6, 2, default_rng(np, 0))


@pytest.mark.gpu
def test_cupy_masks_are_distinct_and_gradient_matches_numpy():
    import cupy as cp

    L = np.random.default_rng(1).normal(size=500)
    orders = sample_masks(cp.asarray(L), 50, 64, default_rng(cp, 0))
    o = cp.asnumpy(orders)
    assert all(len(set(r.tolist())) == 50 for r in o)
    w = np.random.default_rng(2).normal(size=64)
    g_gpu = cp.asnumpy(policy_gradient(cp.asarray(L), orders, cp.asarray(w)))
    assert np.allclose(g_gpu, policy_gradient(L, o, w), atol=1e-8)
