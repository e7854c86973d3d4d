"""The counter-based generator: one stream of words on numpy and on cupy-like arrays."""

import numpy as np
import pytest

from datamask.core.rng import MASKS, PASSES, CounterRNG, philox, uniform_from_words
from tests.helpers import fake_cupy


def test_philox_matches_the_published_known_answer():
    # Random123's known-answer vector for Philox4x64-10 with zero counter and zero key.
    out = philox(np, (0, 0), 0, 0, 0, 0)
    assert [int(v[0]) for v in out] == [0x16554D9ECA36314C, 0xDB20FE9D672D0FDC, 0xD7E772CEE186176B, 0x7E68B68AEC7BA23B]


@pytest.mark.parametrize("step,start,count", [(0, 0, 10), (5, 3, 37), (2**40 + 1, 17, 1000), (7, 800, 1)])
def test_numpy_generator_and_array_path_give_the_same_words(step, start, count):
    fast = CounterRNG(np, [3, 1])
    slow = CounterRNG(fake_cupy.module(), [3, 1])  # takes the xp-operations path
    a = fast.words(MASKS, step, start, count)
    b = np.asarray(slow.words(MASKS, np.uint64(step), start, count))
    assert a.dtype == np.uint32 and np.array_equal(a, b)
    # a window of a longer draw is the same words: the index is part of the counter
    assert np.array_equal(a, fast.words(MASKS, step, 0, start + count)[start:])


def test_draws_depend_on_seed_purpose_and_step_only():
    r = CounterRNG(np, 4)
    a = r.words(MASKS, 9, 0, 64)
    r.words(MASKS, 10, 0, 5000)  # another draw in between changes nothing
    assert np.array_equal(a, r.words(MASKS, 9, 0, 64))
    assert np.array_equal(a, CounterRNG(np, 4).words(MASKS, 9, 0, 64))
    for other in (CounterRNG(np, 5).words(MASKS, 9, 0, 64), r.words(MASKS, 8, 0, 64), r.words(PASSES, 9, 0, 64)):
        assert (a != other).mean() > 0.99


def test_uniforms_are_open_interval_and_uniform():
    u = CounterRNG(np, 0).uniform(MASKS, 1, 1 << 20)
    assert u.dtype == np.float32
    assert u.min() > 0 and u.max() < 1
    hist = np.bincount((u * 16).astype(int), minlength=16) / u.size
    assert np.abs(hist - 1 / 16).max() < 0.002
    # the extreme words map strictly inside (0, 1): the keys -log(U) are finite and positive
    ends = uniform_from_words(np, np.array([0, 0xFFFFFFFF], dtype=np.uint32))
    assert ends[0] == np.float32(2.0**-24) and ends[1] == np.float32(1 - 2.0**-24)


def test_permutation_is_a_permutation_on_either_path():
    a = CounterRNG(np, 1).permutation(1000, 3)
    b = np.asarray(CounterRNG(fake_cupy.module(), 1).permutation(1000, np.uint64(3)))
    assert np.array_equal(np.sort(a), np.arange(1000))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, CounterRNG(np, 1).permutation(1000, 4))


def test_subset_is_sorted_distinct_and_seeded():
    """The facility reference sample: k distinct rows in increasing order, so a numpy and a
    cupy run (whose partitions order their output differently) use the same array."""
    from datamask.core.backend import default_rng

    a = default_rng(np, 7).subset(10_000, 300)
    assert a.shape == (300,) and (np.diff(a) > 0).all() and a.min() >= 0 and a.max() < 10_000
    assert (default_rng(np, 7).subset(10_000, 300) == a).all()
    assert not (default_rng(np, 8).subset(10_000, 300) == a).all()
