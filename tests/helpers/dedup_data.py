"""Small planted corpora for the dedup tests: unrelated texts, exact copies (case and
spacing changed) and near copies (a few words changed, 5-gram Jaccard ~0.8)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from datamask.dedup.minhash import shingle_keys

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
    k, ko = shingle_keys([a, b], ngram)
    sa, sb = set(k[ko[0] : ko[1]].tolist()), set(k[ko[1] : ko[2]].tolist())
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


def write_planted(directory, seed=0, with_embedding=False):
    """Two 60-row Parquet files (``id``, ``text``, ``quality``, optional ``embedding``): 100
    unrelated texts, 6 exact and 2 near copies, 2 null and 2 empty texts; every copy lands in
    another file or split than its original (split size 30).

    Returns ``{id: expected duplicate_of or None}``: a copy and its original form a group
    whose kept row is the higher quality one; with ``with_embedding`` every copy also has
    its original's vector (plus 1e-3 noise)."""
    texts, source, kind = planted(n_unrelated=100, n_exact=6, n_near=6, seed=seed)
    texts = list(texts[:108])  # 100 originals, 6 exact copies, 2 near copies
    source = source[:108]
    texts += [None, None, "", ""]
    source = np.concatenate([source, [-1, -1, -1, 110]])  # the two empty texts are exact duplicates
    n = len(texts)
    rng = np.random.default_rng(seed)
    quality = rng.random(n)
    order = np.concatenate([np.arange(0, 100, 2), np.arange(1, 100, 2), np.arange(100, n)])  # originals 0,2,.. file A
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n)
    ids = [f"doc-{place[i]:03d}" for i in range(n)]
    expected = {i: None for i in ids}
    for c in np.flatnonzero(source >= 0):
        o = source[c]
        lo, hi = (c, o) if quality[c] < quality[o] else (o, c)
        expected[ids[lo]] = ids[hi]
    cols = {"id": [ids[i] for i in order], "text": [texts[i] for i in order], "quality": quality[order]}
    if with_embedding:
        E = rng.normal(size=(n, 16)).astype(np.float32)
        for c in np.flatnonzero(source >= 0):
            E[c] = E[source[c]] + 1e-3 * rng.normal(size=16)
        E /= np.linalg.norm(E, axis=1, keepdims=True)
        cols["embedding"] = pa.FixedSizeListArray.from_arrays(pa.array(E[order].ravel()), 16)
    table = pa.table(cols)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.slice(0, 60), directory / "a.parquet")
    pq.write_table(table.slice(60), directory / "b.parquet")
    return expected
