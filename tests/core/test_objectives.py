"""Objectives: closed forms against brute force."""

import numpy as np
import pytest

from datamask.core.facility import FacilityGroups
from datamask.core.metrics import disf_groups, disf_one, facility_value, pairwise_groups
from datamask.core.objectives import normalize_quality
from datamask.estimator.evaluate import evaluate


def brute_pairwise(EU):
    K = EU.astype(np.float64) @ EU.T.astype(np.float64)
    S = len(EU)
    return -(K.sum() - np.trace(K)) / (S * (S - 1))


def brute_disf(EU):
    C = np.corrcoef(EU.astype(np.float64), rowvar=False)
    d = C.shape[0]
    return -(np.sum(C**2) - np.sum(np.diag(C) ** 2)) / (d * (d - 1))


def test_pairwise_closed_form_matches_brute_force(unit_rows):
    E = unit_rows(200, 16)
    idx = np.stack([np.random.default_rng(s).permutation(200)[:30] for s in range(5)])
    got = pairwise_groups(E, idx)
    want = [brute_pairwise(E[r]) for r in idx]
    assert np.allclose(got, want, atol=1e-6)


@pytest.mark.parametrize("S,d", [(20, 64), (100, 16)])  # Gram form (S < d) and covariance form
def test_disf_matches_correlation_matrix(unit_rows, S, d):
    E = unit_rows(300, d, seed=S)
    idx = np.stack([np.random.default_rng(s).permutation(300)[:S] for s in range(4)])
    want = [brute_disf(E[r]) for r in idx]
    assert np.allclose(disf_groups(E, idx), want, atol=1e-5)
    assert np.allclose([disf_one(E[r]) for r in idx], want, atol=1e-9)
    # one selection through evaluate(): Gram form when S < d, d x d moments when S >= d
    q = np.zeros(300)
    got = [evaluate(E, q, np.sort(r), diversity="disf")["diversity"] for r in idx]
    assert np.allclose(got, want, atol=1e-9)


def test_disf_gram_and_covariance_forms_agree(unit_rows):
    X = unit_rows(100, 40, seed=3)[:30].astype(np.float64)
    gram = disf_one(X)  # S=30 < d=40 takes the S x S Gram path
    Xc = X - X.mean(0)  # the d x d correlation matrix, directly
    Xc /= Xc.std(0)
    C = Xc.T @ Xc / len(X)
    cov = -(np.sum(C**2) - np.sum(np.diag(C) ** 2)) / (40 * 39)
    assert gram == pytest.approx(cov, abs=1e-9)


def test_facility_scorers_match_brute_force(unit_rows):
    E = unit_rows(400, 12)
    R = E[::7]
    idx = np.stack([np.random.default_rng(s).permutation(400)[:25] for s in range(6)])
    want = [(R @ E[r].T).max(axis=1).mean() for r in idx]
    assert np.allclose([facility_value(R, E[r]) for r in idx], want, atol=1e-6)
    # The neighbour-list scorer is exact, including pairs with no member in the list.
    fg = FacilityGroups(E, R, n_neighbors=5)
    assert np.allclose(fg.values(idx), want, atol=1e-6)
    ref = np.array([0, 3, 10])
    want_ref = [(R[ref] @ E[r].T).max(axis=1).mean() for r in idx]
    assert np.allclose(fg.values(idx, ref), want_ref, atol=1e-6)


def test_dense_and_neighbour_facility_scorers_agree_to_float32_rounding(unit_rows):
    # The device path's dense (n, r) cosine block and numpy's neighbour lists multiply in
    # different shapes, so BLAS sums each cosine in another order: they may differ by the
    # float32 rounding of a d-term dot product (d units of 2**-24), never more.
    E = unit_rows(600, 24).astype(np.float32)
    R = E[::5]
    idx = np.stack([np.random.default_rng(s).permutation(600)[:40] for s in range(8)])
    dense = FacilityGroups(E, R, method="dense").values(idx)
    nbrs = FacilityGroups(E, R, n_neighbors=16, method="neighbors").values(idx)
    assert np.allclose(dense, nbrs, rtol=0, atol=E.shape[1] * 2.0**-24)


def test_normalize_quality_is_minmax_and_handles_constant():
    q = np.array([2.0, 4.0, 3.0])
    assert np.allclose(normalize_quality(q), [0.0, 1.0, 0.5])
    assert np.allclose(normalize_quality(np.ones(4)), 0.0)
