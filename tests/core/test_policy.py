"""Plackett-Luce sampling and its score function."""

import itertools

import numpy as np
import pytest

from datamask.core.policy import log_prob, policy_gradient, sample_masks
from tests.helpers import fake_cupy


@pytest.mark.parametrize("n,S,G", [(10, 3, 50), (2500, 500, 128), (7, 7, 4), (300, 1, 16)])
def test_every_mask_has_S_distinct_rows(n, S, G):
    L = np.random.default_rng(1).normal(size=n) * 3
    orders = sample_masks(L, S, G, 0)
    assert orders.shape == (G, S)
    assert orders.min() >= 0 and orders.max() < n
    for row in orders:
        assert len(set(row.tolist())) == S


def test_wide_logit_span_uses_log_keys_and_still_samples_correctly():
    # Span > 80 nats takes the log-space branch; the top rows must still come first.
    L = np.array([200.0, 100.0, 0.0, -50.0, -120.0])
    orders = sample_masks(L, 3, 200, 3)
    assert (orders[:, 0] == 0).all() and (orders[:, 1] == 1).all() and (orders[:, 2] == 2).all()


def _pl_prob(L, seq):
    p = np.exp(L)
    left = p.sum()
    prob = 1.0
    for i in seq:
        prob *= p[i] / left
        left -= p[i]
    return prob


@pytest.mark.parametrize("select", ["partition", "sort"])
@pytest.mark.parametrize("far_row", [False, True])
def test_gumbel_top_k_frequencies_match_plackett_luce_law(far_row, select):
    # far_row adds a row 200 nats down: the logits then span > 80 nats and the keys are
    # taken in log space; that row is (practically) never drawn, so the law is unchanged.
    # select: numpy's per-mask partition, or the flat sort that the GPU path uses.
    L = np.array([1.2, 0.3, -0.5, 0.0, 0.9] + ([-200.0] if far_row else []))
    S, draws = 2, 200_000
    orders = sample_masks(L, S, draws, 7, select=select)
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


@pytest.mark.parametrize("log_keys", [False, True])
@pytest.mark.parametrize("n,S,G", [(2500, 250, 128), (97, 96, 5), (300, 1, 16), (5000, 600, 3)])
def test_every_device_path_draws_the_same_masks_as_numpy(n, S, G, log_keys, fake_cp):
    # The flat sort on numpy, and the whole cupy branch on a numpy-backed stand-in for
    # cupy, give exactly the masks of numpy's own sampler: same keys, same ties order.
    L = np.random.default_rng(n).normal(size=n) * 4
    ref = sample_masks(L, S, G, 11, step=5, log_keys=log_keys)
    assert np.array_equal(ref, sample_masks(L, S, G, 11, step=5, log_keys=log_keys, select="sort"))
    dev = sample_masks(fake_cp.asarray(L), S, G, 11, step=fake_cp.asarray(5, dtype=np.uint64), log_keys=log_keys)
    assert isinstance(dev, fake_cupy.ndarray) and np.array_equal(np.asarray(dev), ref)
    assert not np.array_equal(ref, sample_masks(L, S, G, 11, step=6, log_keys=log_keys))


def test_gradient_on_the_device_path_matches_numpy(fake_cp):
    L = np.random.default_rng(3).normal(size=400) * 3
    orders = sample_masks(L, 40, 32, 2)
    w = np.random.default_rng(4).normal(size=32)
    g = policy_gradient(fake_cp.asarray(L), fake_cp.asarray(orders), fake_cp.asarray(w))
    assert isinstance(g, fake_cupy.ndarray)
    assert np.allclose(np.asarray(g), policy_gradient(L, orders, w), rtol=1e-12, atol=1e-12)


def test_a_dominant_row_is_in_every_mask():
    # Row 0 holds all but ~e^-60 of the probability: every draw must start with it. A
    # uniform of exactly 0 (cupy's float32 generator gives one in 2^25) made its key
    # infinite and left it out of the mask, an event the score function then treats as
    # one of probability ~e^-60.
    L = np.zeros(3000)
    L[0] = 70.0
    for select in ("partition", "sort"):
        orders = sample_masks(L, 10, 4000, 1, select=select)
        assert (orders[:, 0] == 0).all()


def test_log_prob_sums_to_one_over_all_ordered_draws():
    L = np.array([0.4, -1.0, 2.0, 0.1])
    seqs = np.array(list(itertools.permutations(range(4), 3)))
    total = np.exp(log_prob(L, seqs)).sum()
    assert total == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("n,S,G", [(7, 3, 5), (40, 10, 8), (12, 12, 3)])
def test_gradient_matches_finite_differences(n, S, G):
    rng = np.random.default_rng(n)
    L = rng.normal(size=n) * 2
    orders = sample_masks(L, S, G, n)
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
    orders = sample_masks(L, 5, 6, 1)
    w = np.linspace(-1, 1, 6)
    assert np.allclose(policy_gradient(L, orders, w), policy_gradient(L + 500.0, orders, w))


def test_rejects_budget_outside_rows():
    with pytest.raises(ValueError, match="S must be"):
        sample_masks(np.zeros(5), 6, 2, 0)


@pytest.mark.gpu
def test_cupy_masks_are_distinct_and_gradient_matches_numpy():
    import cupy as cp

    L = np.random.default_rng(1).normal(size=500)
    orders = sample_masks(cp.asarray(L), 50, 64, 0)
    o = cp.asnumpy(orders)
    assert all(len(set(r.tolist())) == 50 for r in o)
    w = np.random.default_rng(2).normal(size=64)
    g_gpu = cp.asnumpy(policy_gradient(cp.asarray(L), orders, cp.asarray(w)))
    assert np.allclose(g_gpu, policy_gradient(L, o, w), atol=1e-8)


@pytest.mark.gpu
def test_fused_keys_match_the_array_path():
    import cupy as cp

    from datamask.core import kernels
    from datamask.core.policy import _key_weights, _keys, sort_plan
    from datamask.core.rng import MASKS, CounterRNG

    L = cp.asarray(np.random.default_rng(5).normal(size=3000) * 5)
    G, n = 64, 3000
    kb, rb = sort_plan(G, n)
    rng = CounterRNG(cp, 9)
    for log_keys in (False, True):
        w = _key_weights(cp, L, L.max(), log_keys)
        fused = kernels.sort_keys(w, 7, rng.key, G, n, kb, rb, log_keys, MASKS)
        e = _keys(cp, rng.words(MASKS, cp.asarray(7, dtype=cp.uint64), 0, G * n).reshape(G, n), w, log_keys)
        ref = (e.view(cp.uint32).astype(cp.uint64) << cp.uint64(rb)) | cp.arange(n, dtype=cp.uint64)[None, :]
        ref |= (cp.arange(G, dtype=cp.uint64) << cp.uint64(kb + rb))[:, None]
        diff = cp.abs(fused.astype(cp.int64) - ref.astype(cp.int64)) >> cp.int64(rb)  # key bits apart
        assert int(diff.max()) <= 2  # float32 log may differ in its last bit
    # and the masks of a numpy and a cupy draw agree but for near-ties
    Ln = np.random.default_rng(6).normal(size=2500) * 3
    a = sample_masks(Ln, 250, 128, 3, step=4)
    b = cp.asnumpy(sample_masks(cp.asarray(Ln), 250, 128, 3, step=4))
    assert np.mean([len(set(x) & set(y)) / 250 for x, y in zip(a.tolist(), b.tolist())]) > 0.999


def _reference_gradient(L, orders, w):
    """The score function from its definition, one mask and one row at a time (fsum)."""
    import math

    p = [math.exp(v - max(L)) for v in L]
    g = [0.0] * len(L)
    for order, wj in zip(orders.tolist(), w.tolist()):
        drawn = set(order)
        rest = math.fsum(p[i] for i in range(len(L)) if i not in drawn)
        Z = [rest + math.fsum(p[i] for i in order[k:]) for k in range(len(order))]
        c = [math.fsum(1.0 / z for z in Z[: k + 1]) for k in range(len(order))]
        pos = {i: k for k, i in enumerate(order)}
        for i in range(len(L)):
            g[i] += wj * ((1.0 - p[i] * c[pos[i]]) if i in pos else -p[i] * c[-1])
    return np.array(g)


@pytest.mark.parametrize("lead", [0.0, 20.0, 45.0, 58.0])
def test_gradient_is_accurate_when_one_row_dominates(lead):
    # One row `lead` nats above the rest: the draws' last normalisers Z_k are then ~e^-lead
    # of the first ones and c_S = sum 1/Z_k ~ e^lead. The gradient formed as -p c_S for
    # every row plus p (c_S - c_k) back for drawn rows lost all precision there (the
    # amplifier of the pg collapse, see test_collapse.py); each term must be formed directly.
    rng = np.random.default_rng(7)
    L = rng.normal(size=300) * 2.0
    L[17] = L.max() + lead
    orders = sample_masks(L, 40, 12, 3)
    w = rng.normal(size=12) / 12
    ref = _reference_gradient(L, orders, w)
    got = policy_gradient(L, orders, w)
    assert np.abs(got - ref).max() <= 1e-9 * (1.0 + np.abs(ref).max())
