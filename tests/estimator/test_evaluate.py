"""``evaluate`` (datamask.estimator.evaluate): a mask or row indices, the two terms combined,
facility location against a seeded reference sample, and bad masks refused."""

import numpy as np
import pytest

from datamask.core.backend import default_rng
from datamask.estimator.evaluate import evaluate


def brute_pairwise(EU):
    K = EU.astype(np.float64) @ EU.T.astype(np.float64)
    S = len(EU)
    return -(K.sum() - np.trace(K)) / (S * (S - 1))


def test_evaluate_accepts_mask_or_indices_and_combines_terms(unit_rows):
    E = unit_rows(50, 8)
    q = np.arange(50, dtype=float)
    rows = np.array([1, 5, 9, 49])
    mask = np.zeros(50, bool)
    mask[rows] = True
    a = evaluate(E, q, mask, lam=0.3, diversity="pairwise")
    b = evaluate(E, q, rows, lam=0.3, diversity="pairwise")
    assert a == b
    assert a["quality"] == pytest.approx(np.mean(rows / 49))
    assert a["diversity"] == pytest.approx(brute_pairwise(E[rows]), abs=1e-6)
    assert a["objective"] == pytest.approx(0.3 * a["quality"] + 0.7 * a["diversity"])
    fac = evaluate(E, q, rows, diversity="facility", reference_size=10, seed=1)
    ref = default_rng(np, 1).subset(50, 10)
    assert fac["diversity"] == pytest.approx((E[ref] @ E[rows].T).max(1).mean(), abs=1e-6)


def test_evaluate_rejects_bad_masks(unit_rows):
    E = unit_rows(10, 4)
    q = np.zeros(10)
    with pytest.raises(ValueError, match="duplicates"):
        evaluate(E, q, np.array([1, 1]))
    with pytest.raises(ValueError, match="shape"):
        evaluate(E, q, np.zeros(9, bool))
    with pytest.raises(ValueError, match="lie in"):
        evaluate(E, q, np.array([3, 10]))
