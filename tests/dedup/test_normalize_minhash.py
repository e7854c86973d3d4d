"""Text normalisation, exact keys, shingles, MinHash signatures and the LSH setting."""

import numpy as np
import pytest

from datamask.dedup.minhash import (
    CANDIDATE_RECALL,
    band_keys64,
    candidate_probability,
    jaccard_estimate,
    lsh_params,
    shingle_keys,
    signatures,
)
from datamask.dedup.normalize import exact_keys, normalize_exact
from datamask.errors import ConfigError
from tests.helpers.dedup_data import jaccard, near_copy, planted, text, vocab


def test_normalize_exact_folds_case_and_whitespace_only():
    out = normalize_exact(["  Hello \n\t WORLD!  ", "hello world!", "hello, world!", None]).to_pylist()
    assert out == ["hello world!", "hello world!", "hello, world!", None]


def test_exact_keys_equal_for_case_and_spacing_variants_and_skip_nulls():
    keys, valid = exact_keys(["A b  c", "a B c", "a b c.", None])
    assert valid.tolist() == [True, True, True, False]
    assert (keys[0] == keys[1]).all()
    assert not (keys[0] == keys[2]).all()
    assert (keys[3] == 0).all()


def test_exact_keys_are_equal_exactly_when_the_normal_forms_are():
    """The compiled key folds what normalize_exact folds (ASCII whitespace runs inside, any
    Unicode whitespace at the ends, Unicode case) and nothing else (a vertical tab, a
    non-breaking space inside, punctuation)."""
    texts = ["  Hello\n  WORLD ", "hello world", "hello\tworld", "Hello World!", "", " \n ", "x\vy", "x y"]
    texts += ["\u00a0x y\u2003", "x\u00a0y", "x  y", "STRASSE", "strasse", "Ærø", "ærø", "x" * 17, "x" * 16]
    keys, valid = exact_keys(texts)
    norm = normalize_exact(texts).to_pylist()
    for i in range(len(texts)):
        for j in range(len(texts)):
            assert (norm[i] == norm[j]) == bool((keys[i] == keys[j]).all()), (texts[i], texts[j])


def test_shingle_keys_count_order_and_words():
    keys, ko = shingle_keys(["one two three four five six", "", "Seven, ONE!", "x", None, "...", "uno"], 3)
    assert np.diff(ko).tolist() == [4, 0, 1, 1, 0, 0, 1]
    assert len(set(keys[:4].tolist())) == 4
    # the 2-word document's one shingle "seven one" differs from the 1-word one and from "one two three"
    assert keys[4] != keys[5] and keys[4] not in keys[:4]
    # the same words in the same order give the same key wherever they stand, whatever the
    # case and the punctuation around them; a word is a run of [0-9a-z_], so é separates
    k2, _ = shingle_keys(["nine One; two THREE", "caf\u00e9 x y", "caf x y"], 3)
    assert k2[1] == keys[0] and k2[2] == k2[3]
    # a word longer than 8 bytes is hashed whole (the 9th byte counts)
    k3, _ = shingle_keys(["abcdefgh1 b c", "abcdefgh2 b c", "abcdefgh1 b c"], 3)
    assert k3[0] != k3[1] and k3[0] == k3[2]


def test_signature_estimate_tracks_exact_jaccard():
    rng = np.random.default_rng(1)
    words = vocab()
    base = [text(rng, words) for _ in range(20)]
    copies = [near_copy(t, rng, words, n_changes=int(c)) for t, c in zip(base, rng.integers(1, 12, 20))]
    sig, has = signatures(base + copies, ngram=5, num_perm=256)
    assert has.all() and sig.dtype == np.uint32 and sig.shape == (40, 256)
    est = jaccard_estimate(sig[:20], sig[20:])
    exact = np.array([jaccard(a, b) for a, b in zip(base, copies)])
    assert np.abs(est - exact).max() < 4 * np.sqrt(0.25 / 256)
    assert np.corrcoef(est, exact)[0, 1] > 0.95


def test_signatures_identical_for_exact_copies_and_flag_empty_texts():
    texts, _, _ = planted(n_unrelated=3, n_exact=1, n_near=0)
    sig, has = signatures(texts + [None, "", " ... "])
    assert (sig[0] == sig[3]).all()
    assert has.tolist() == [True] * 4 + [False] * 3


def test_band_keys_equal_exactly_when_the_band_is_equal():
    sig = np.arange(24, dtype=np.uint32).reshape(2, 12)
    sig[1, :4] = sig[0, :4]
    keys = band_keys64(sig, 3, 4)
    assert keys.shape == (2, 3)
    assert keys[0, 0] == keys[1, 0] and keys[0, 1] != keys[1, 1] and keys[0, 2] != keys[1, 2]
    same = np.tile(np.arange(4, dtype=np.uint32), 3)[None]  # one band's values under every number
    assert np.unique(band_keys64(same, 3, 4)).shape[0] == 3  # the band's number is in its key


@pytest.mark.parametrize("threshold,num_perm", [(0.7, 128), (0.8, 128), (0.5, 64), (0.9, 256)])
def test_threshold_picks_the_narrowest_bands_that_still_catch_the_threshold(threshold, num_perm):
    p = lsh_params(5, num_perm, None, threshold)
    assert p.bands * p.rows <= num_perm
    assert p.candidate_probability(threshold) >= CANDIDATE_RECALL
    r = p.rows + 1
    assert candidate_probability(threshold, num_perm // r, r) < CANDIDATE_RECALL


@pytest.mark.parametrize(
    "kw,word",
    [
        ({"num_perm": 128, "bands": 7}, "--bands 7"),
        ({"num_perm": 128, "bands": 256}, "--bands 256"),
        ({"num_perm": 0}, "--num-perm"),
        ({"ngram": 0}, "--ngram"),
        ({"threshold": 1.5}, "--threshold"),
        ({"threshold": 0}, "--threshold"),
        ({"threshold": -0.1}, "--threshold"),
        ({"bands": 0}, "--bands"),
    ],
)
def test_impossible_settings_are_one_line_config_errors(kw, word):
    with pytest.raises(ConfigError) as e:
        lsh_params(**kw)
    assert word in str(e.value) and "\n" not in str(e.value)


def test_explicit_bands_divide_num_perm():
    p = lsh_params(5, 112, 14)
    assert (p.bands, p.rows) == (14, 8)


def test_band_keys_of_the_signature_pass_are_band_keys64():
    texts, _, _ = planted(n_unrelated=6, n_exact=1, n_near=2)
    sig, has, bk = signatures(texts + [None, ""], 5, 128, bands=32, rows=4)
    np.testing.assert_array_equal(bk[has], band_keys64(sig[has], 32, 4))
    assert (bk[0] == bk[6]).all()  # the exact copy of text 0 shares every band
    assert bk.shape == (len(texts) + 2, 32) and has.tolist()[-2:] == [False, False]
