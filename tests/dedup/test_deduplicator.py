"""Planted groups through the in-memory Deduplicator: exact finds only exact copies,
fuzzy finds exact and near copies, neither touches unrelated texts."""

import numpy as np
import pytest

from datamask.dedup import Deduplicator, parse_kinds
from datamask.errors import ConfigError
from tests.helpers.dedup_data import planted


@pytest.fixture(scope="module")
def corpus():
    return planted(n_unrelated=60, n_exact=5, n_near=5, seed=3)


def test_exact_removes_only_exact_copies(corpus):
    texts, source, kind = corpus
    d = Deduplicator("exact").fit(texts)
    removed = d.duplicate_of_ >= 0
    assert np.array_equal(np.flatnonzero(removed), np.flatnonzero(kind == "exact"))
    assert np.array_equal(d.duplicate_of_[removed], source[kind == "exact"])
    assert d.stats_ == {"exact": {"groups": 5, "removed": 5}}


def test_fuzzy_removes_exact_and_near_copies_and_nothing_else(corpus):
    texts, source, kind = corpus
    d = Deduplicator("fuzzy").fit(texts)
    copies = kind != None  # noqa: E711
    assert np.array_equal(d.duplicate_of_ >= 0, copies)
    assert np.array_equal(d.duplicate_of_[copies], source[copies])
    assert d.stats_["fuzzy"] == {"groups": 10, "removed": 10}


def test_exact_then_fuzzy_attributes_each_removal_once(corpus):
    texts, source, kind = corpus
    d = Deduplicator("fuzzy,exact").fit(texts)
    assert list(d.stats_) == ["exact", "fuzzy"]
    assert d.stats_["exact"]["removed"] == 5 and d.stats_["fuzzy"]["removed"] == 5
    assert (d.removed_by_[kind == "near"] == "fuzzy").all()
    assert (d.removed_by_[kind == "exact"] == "exact").all()


def test_kept_row_is_the_highest_quality_member(corpus):
    texts, source, kind = corpus
    q = np.zeros(len(texts))
    copies = np.flatnonzero(kind != None)  # noqa: E711
    q[copies] = 1.0  # every copy beats its original
    d = Deduplicator("exact,fuzzy").fit(texts, quality=q)
    assert (d.duplicate_of_[copies] == -1).all()
    assert np.array_equal(d.duplicate_of_[source[copies]], copies)


def test_null_texts_are_kept_counted_and_never_grouped(corpus):
    texts, _, kind = corpus
    texts = list(texts) + [None, None, "", "", "!!"]
    d = Deduplicator("fuzzy").fit(texts)
    assert d.n_null_ == 2
    assert (d.duplicate_of_[-5:] == -1).all()
    d = Deduplicator("exact").fit(texts)
    assert (d.duplicate_of_[-5:-3] == -1).all()  # nulls
    assert d.duplicate_of_[-1] == -1 and d.duplicate_of_[-2] == len(texts) - 3  # "" twice: one group


def test_chains_resolve_to_a_finally_kept_row():
    # b is an exact copy of a; c is a near copy of b with higher quality: a -> c, b -> c
    texts, _, _ = planted(n_unrelated=2, n_exact=0, n_near=1, seed=5)
    a, near = texts[0], texts[2]
    d = Deduplicator("exact,fuzzy").fit([a, a.upper(), near, texts[1]], quality=[0.5, 0.1, 0.9, 0.0])
    assert d.duplicate_of_.tolist() == [2, 2, -1, -1]


@pytest.mark.parametrize("bad", ["", "fuzy", "exact,minhash"])
def test_unknown_kinds_are_config_errors(bad):
    with pytest.raises(ConfigError, match="--kind"):
        parse_kinds(bad)
