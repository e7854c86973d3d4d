"""Bucket pairs, connected components and the kept row of a group."""

import numpy as np

from datamask.dedup.pairs import bucket_pairs, choose_kept, connected_components, duplicate_of, unique_pairs


def test_bucket_pairs_star_from_smallest_doc_and_dedupe_over_bands():
    band = np.array([0, 0, 0, 1, 1, 0, 1])
    key = np.array([5, 5, 5, 9, 9, 7, 3], dtype=np.uint64)
    key2 = np.zeros(7, dtype=np.uint64)
    doc = np.array([30, 10, 20, 20, 10, 40, 50])
    a, b = bucket_pairs(band, key, key2, doc)
    assert sorted(zip(a.tolist(), b.tolist())) == [(10, 20), (10, 30)]


def test_bucket_pairs_key2_separates_buckets():
    a, b = bucket_pairs(np.zeros(2, int), np.array([1, 1], np.uint64), np.array([1, 2], np.uint64), np.array([1, 2]))
    assert a.size == 0 and b.size == 0


def test_unique_pairs_orders_and_drops_self_pairs():
    a, b = unique_pairs([3, 1, 2, 5], [1, 3, 2, 4])
    assert list(zip(a, b)) == [(1, 3), (4, 5)]


def test_connected_components_join_chains():
    nodes, labels = connected_components(np.array([1, 2, 10]), np.array([2, 3, 11]))
    assert nodes.tolist() == [1, 2, 3, 10, 11]
    assert labels[0] == labels[1] == labels[2] != labels[3] == labels[4]


def test_choose_kept_highest_quality_then_smallest_doc_nan_lowest():
    labels = np.array([0, 0, 0, 1, 1, 2, 2])
    doc = np.array([5, 3, 9, 4, 8, 1, 2])
    q = np.array([0.1, 0.5, 0.9, 0.2, 0.2, np.nan, 0.0])
    assert choose_kept(labels, doc, q).tolist() == [9, 9, 9, 4, 4, 2, 2]
    assert choose_kept(labels, doc).tolist() == [3, 3, 3, 4, 4, 1, 1]


def test_duplicate_of_names_the_kept_document():
    removed, kept, groups = duplicate_of(np.array([1, 2]), np.array([2, 3]), lambda n: (n == 2).astype(float))
    assert groups == 1 and removed.tolist() == [1, 3] and kept.tolist() == [2, 2]
