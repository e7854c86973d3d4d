"""Bucket pairs, connected components and the kept row of a group."""

import numpy as np

from datamask.dedup.pairs import (
    KIND_CODE,
    band_pairs,
    choose_kept,
    connected_components,
    exact_stars,
    removed_of_groups,
    unique_pairs,
)


def test_band_pairs_star_from_the_first_doc_and_each_pair_once():
    key = np.array([5, 5, 5, 9, 9, 7, 3], dtype=np.uint64)  # 9: a second band of the docs 20 and 10
    doc = np.array([30, 10, 20, 20, 10, 40, 50])
    a, b = band_pairs(key, doc)
    assert sorted(zip(a.tolist(), b.tolist())) == [(10, 20), (10, 30), (20, 30)]
    a, b = band_pairs(np.array([1, 2], np.uint64), np.array([1, 2]))
    assert a.size == 0 and b.size == 0


def test_exact_stars_from_the_kept_member_and_key2_separates_groups():
    key = np.array([1, 1, 1, 1, 2], dtype=np.uint64)
    key2 = np.array([7, 7, 7, 8, 7], dtype=np.uint64)
    doc = np.array([4, 2, 9, 3, 5])
    kept, other, q_kept, _, groups = exact_stars(key, key2, doc, np.array([0.1, np.nan, 0.5, 0.9, 0.0]))
    assert groups == 1 and sorted(zip(kept.tolist(), other.tolist())) == [(9, 2), (9, 4)]
    assert q_kept.tolist() == [0.5, 0.5]
    assert exact_stars(key, key2, doc)[:2][0].tolist() == [2, 2]  # without quality: the smallest number


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


def test_removed_of_groups_names_the_kept_document_and_the_kind():
    labels = np.array([7, 7, 7, 3, 3])
    doc = np.array([1, 2, 3, 10, 11])
    removed, kept, kind, fuzzy = removed_of_groups(labels, doc, np.array([0, 1, 0, 0, 0.0]), np.array([0, 0, 1, 0, 0]))
    assert removed.tolist() == [1, 3, 11] and kept.tolist() == [2, 2, 10]
    assert kind.tolist() == [KIND_CODE["fuzzy"], KIND_CODE["exact"], KIND_CODE["fuzzy"]] and fuzzy == 2
