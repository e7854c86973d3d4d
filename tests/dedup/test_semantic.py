"""Semantic duplicates: the SemDeDup kernel shared with the selection method, visited by
quality so the kept row of a group is its best member."""

import numpy as np
import pytest

from datamask.dedup import Deduplicator
from datamask.dedup.semantic import semantic_duplicates, visit_order
from datamask.methods.semdedup import COS_TOL, nearest_kept, semdedup


def _planted(n=200, n_copies=20, d=24, noise=1e-3, seed=0):
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(n + n_copies, d)).astype(np.float32)
    E[n:] = E[:n_copies] + noise * rng.normal(size=(n_copies, d))
    cluster = rng.integers(0, 4, n + n_copies)
    cluster[n:] = cluster[:n_copies]
    return E, cluster


@pytest.mark.parametrize("block", [5, 1024])
def test_nearest_kept_targets_are_kept_rows_of_the_cluster_above_the_threshold(block):
    E, cl = _planted()
    rng = np.random.default_rng(1)
    E[-5:] = E[200:205] + 1e-3 * rng.normal(size=(5, E.shape[1]))  # copies of copies: chains
    cl[-5:] = cl[200:205]
    eps = 0.01
    dup = nearest_kept(E, cl, np.arange(E.shape[0], dtype=float), eps, block=block, chunk=7)
    r = np.flatnonzero(dup >= 0)
    U = E / np.linalg.norm(E, axis=1, keepdims=True)
    assert (dup[dup[r]] == -1).all()  # every target is kept
    assert (cl[dup[r]] == cl[r]).all() and (dup[r] < r).all()  # same cluster, visited earlier
    assert ((U[r] * U[dup[r]]).sum(axis=1) > 1 - max(eps, COS_TOL)).all()
    assert set(r) >= set(range(200, 220))


def test_semdedup_keep_mask_is_the_kernel_in_centroid_order():
    E, cl = _planted()
    cent = np.stack([E[cl == k].mean(axis=0) for k in range(4)])
    U = E / np.linalg.norm(E, axis=1, keepdims=True)
    C = cent / np.linalg.norm(cent, axis=1, keepdims=True)
    far = (U * C[cl]).sum(axis=1)
    for order, key in (("far", far), ("near", -far)):
        assert np.array_equal(semdedup(E, cl, cent, 0.02, order=order), nearest_kept(E, cl, key, 0.02) < 0)


def test_visit_order_by_quality_then_doc_nan_last():
    rank = visit_order(np.array([0.5, np.nan, 0.9, 0.5]), np.array([10, 11, 12, 3]))
    assert np.argsort(rank).tolist() == [2, 3, 0, 1]


def test_semantic_keeps_the_highest_quality_copy_and_skips_removed_docs():
    E, cl = _planted()
    q = np.zeros(E.shape[0])
    q[200:] = 1.0  # every copy beats its original
    removed, kept, groups = semantic_duplicates(E, cl, q, 0.01, removed=np.array([0, 1]))
    assert groups == 18 and removed.tolist() == list(range(2, 20)) and kept.tolist() == list(range(202, 220))


def test_semantic_without_clusters_runs_kmeans_and_finds_the_copies():
    E, _ = _planted()
    d = Deduplicator("semantic", eps=0.01, n_clusters=3).fit(embeddings=E)
    assert np.array_equal(np.flatnonzero(d.duplicate_of_ >= 0), np.arange(200, 220))
    assert np.array_equal(d.duplicate_of_[200:], np.arange(20))
    assert d.stats_ == {"semantic": {"groups": 20, "removed": 20}}


def test_semantic_leaves_rows_with_null_text_alone():
    E, _ = _planted()
    texts = ["t"] * E.shape[0]
    texts[200] = None  # a planted copy whose text is null
    d = Deduplicator("semantic", eps=0.01, n_clusters=3).fit(texts=texts, embeddings=E)
    assert d.duplicate_of_[200] == -1 and d.n_null_ == 1
    assert np.array_equal(np.flatnonzero(d.duplicate_of_ >= 0), np.arange(201, 220))
