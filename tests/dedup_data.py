"""Small planted corpora for the dedup tests: unrelated texts, exact copies (case and
spacing changed) and near copies (a few words changed, 5-gram Jaccard ~0.8)."""
from __future__ import annotations

import numpy as np

from datamask.dedup.minhash import shingle_keys
from datamask.dedup.normalize import word_tokens

LETTERS = list("abcdefghijklmnopqrstuvwxyz")


def vocab(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    words = {"".join(rng.choice(LETTERS, size=rng.integers(3, 9))) for _ in range(n * 2)}
    return sorted(words)[:n]


def text(rng, words, n_words=150):
    w = [words[i] for i in rng.integers(0, len(words), n_words)]
    return " ".join(w).capitalize() + "."


def exact_copy(t):
    """Same text up to case and whitespace."""
    return "  " + t.upper().replace(" ", " \n ") + "\t"


def near_copy(t, rng, words, n_changes=3):
    """``t`` with ``n_changes`` words (spread out) replaced."""
    w = t.split()
    pos = np.linspace(5, len(w) - 5, n_changes).astype(int)
    for p in pos:
        w[p] = words[rng.integers(0, len(words))] + "x"
    return " ".join(w)


def jaccard(a, b, ngram=5):
    h, off, _ = word_tokens([a, b])
    k, ko = shingle_keys(h, off, ngram)
    sa, sb = set(k[ko[0]:ko[1]].tolist()), set(k[ko[1]:ko[2]].tolist())
    return len(sa & sb) / len(sa | sb)


def planted(n_unrelated=40, n_exact=4, n_near=4, seed=0):
    """Texts and labels.

    Returns
    -------
    texts : list of str
        ``n_unrelated`` originals, then ``n_exact`` exact copies of originals 0..n_exact-1,
        then ``n_near`` near copies of originals n_exact..n_exact+n_near-1.
    source : (N,) int array
        For a copy, the row of its original; -1 for an original.
    kind : (N,) object array
        "exact", "near" or None.
    """
    rng = np.random.default_rng(seed)
    words = vocab(seed=seed)
    texts = [text(rng, words) for _ in range(n_unrelated)]
    source = [-1] * n_unrelated
    kind = [None] * n_unrelated
    for i in range(n_exact):
        texts.append(exact_copy(texts[i]))
        source.append(i)
        kind.append("exact")
    for i in range(n_exact, n_exact + n_near):
        texts.append(near_copy(texts[i], rng, words))
        source.append(i)
        kind.append("near")
    return texts, np.array(source), np.array(kind, dtype=object)
