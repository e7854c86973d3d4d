"""Deduplication benchmark on this machine -> benchmarks/results/dedup.md.

Three parts, measured side by side in one run:

1. **MinHash library comparison** (how rensa was chosen). Every candidate signs the
   same word-5-gram sets of ~300-word English-like documents with 128 permutations, one
   thread (``RAYON_NUM_THREADS=1`` for rensa). Reported: documents/s for the signatures
   alone (from ready shingles, in the form each call takes), and the quality of the
   Jaccard estimate on document pairs with a known exact Jaccard (0.1-1.0): bias, RMSE,
   and RMSE over the binomial ideal ``sqrt(J (1 - J) / 128)``.
2. **Throughput of each kind** from raw text, as the stage's partition functions run it
   (one process, one thread): exact keys, fuzzy signatures + band keys + pairs +
   verification + components, semantic (SemDeDup kernel within k-means clusters on
   random 384-d embeddings with planted near-copies).
3. **Recall and precision on planted near-duplicates**: a corpus of unrelated documents
   plus near-copies with a few words changed (5-gram Jaccard ~0.8 to the original), run
   through :class:`datamask.dedup.Deduplicator` with the defaults.

Run: ``.venv/bin/python benchmarks/dedup.py [--quick]``. The host is shared with other
jobs; the load average at the start is recorded.
"""
from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # rensa's thread pool: one worker = one thread
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from datamask.dedup.minhash import SEED, shingle_keys  # noqa: E402
from datamask.dedup.normalize import word_tokens  # noqa: E402

NUM_PERM = 128
NGRAM = 5
SYLLABLES = ["ka", "lo", "mi", "ne", "ta", "ri", "so", "ve", "du", "pa", "ge", "ho", "ju", "be", "fi", "an",
             "er", "in", "on", "us", "st", "th", "ch", "or", "al", "en", "ti", "ro", "ma", "le"]


# ---------------------------------------------------------------------- corpus
def vocabulary(size: int, seed: int = 0):
    """``size`` distinct pronounceable words and Zipf(1.1) probabilities."""
    rng = np.random.default_rng(seed)
    words, seen = [], set()
    while len(words) < size:
        w = "".join(rng.choice(SYLLABLES, size=rng.integers(1, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    p = 1.0 / np.arange(1, size + 1) ** 1.1
    return np.array(words), p / p.sum()


def documents(n: int, n_words: int = 300, seed: int = 0, vocab=None):
    """``n`` English-like documents: Zipf words in sentences of 8-20, capitalised, with
    punctuation. Returns the texts and their word lists."""
    words, p = vocab if vocab is not None else vocabulary(20000)
    rng = np.random.default_rng(seed)
    ids = rng.choice(words.shape[0], size=(n, n_words), p=p)
    texts, lists = [], []
    for row in ids:
        w = words[row].tolist()
        lists.append(w)
        texts.append(_sentences(w, rng))
    return texts, lists


def _sentences(w, rng):
    out, i = [], 0
    while i < len(w):
        k = int(rng.integers(8, 21))
        s = " ".join(w[i:i + k])
        out.append(s[:1].upper() + s[1:] + ".")
        i += k
    return " ".join(out)


def near_copy(w, n_changes: int, rng, vocab):
    """``w`` with ``n_changes`` words replaced by random vocabulary words."""
    w = list(w)
    for pos in rng.choice(len(w), size=n_changes, replace=False):
        w[pos] = vocab[0][rng.integers(0, vocab[0].shape[0])]
    return w


def exact_jaccard(ka, kb):
    a, b = np.unique(ka), np.unique(kb)
    inter = np.intersect1d(a, b, assume_unique=True).shape[0]
    return inter / (a.shape[0] + b.shape[0] - inter)


# ---------------------------------------------------------------------- part 1: libraries
def _shingles(texts):
    h, off, _ = word_tokens(texts)
    return shingle_keys(h, off, NGRAM)


def _ngram_strings(lists):
    return [[" ".join(w[i:i + NGRAM]).lower() for i in range(max(len(w) - NGRAM + 1, 1))] for w in lists]


def candidates():
    """name -> (prepare(texts, lists) -> input, sign(input) -> (N, NUM_PERM) array)."""
    import rensa
    from datasketch import MinHash

    def flat(texts, lists):
        keys, off = _shingles(texts)
        return keys, off.astype(np.uint64)

    def rensa_flat(inp):
        m = rensa.RMinHash.digest_matrix_from_flat_token_hashes(inp[0], inp[1], NUM_PERM, SEED)
        return np.array(m.to_rows(), dtype=np.uint32)

    def rensa_rho(inp):
        m = rensa.RMinHash.digest_matrix_from_flat_token_hashes_rho(inp[0], inp[1], NUM_PERM, SEED)
        return np.array(m.to_rows(), dtype=np.uint32)

    def hash_lists(texts, lists):
        keys, off = _shingles(texts)
        return [keys[a:b].tolist() for a, b in zip(off[:-1], off[1:])]

    def rensa_cminhash(inp):
        return np.array(rensa.CMinHash.digests64_from_token_hash_sets(inp, NUM_PERM, SEED), dtype=np.uint64)

    def strings(texts, lists):
        return _ngram_strings(lists)

    def rensa_strings(inp):
        m = rensa.RMinHash.digest_matrix_from_token_sets(inp, NUM_PERM, SEED)
        return np.array(m.to_rows(), dtype=np.uint32)

    def byte_lists(texts, lists):
        return [[s.encode() for s in doc] for doc in _ngram_strings(lists)]

    def ds_sha1(inp):
        return np.stack([m.hashvalues for m in MinHash.bulk(inp, num_perm=NUM_PERM, seed=SEED)])

    def hash32_lists(texts, lists):
        keys, off = _shingles(texts)
        k32 = (keys & np.uint64(0xFFFFFFFF)).astype(np.int64)
        return [k32[a:b].tolist() for a, b in zip(off[:-1], off[1:])]

    def ds_prehashed(inp):
        return np.stack([m.hashvalues for m in MinHash.bulk(inp, num_perm=NUM_PERM, seed=SEED, hashfunc=int)])

    return {
        "rensa RMinHash, flat pre-hashed 64-bit shingles (chosen)": (flat, rensa_flat),
        "rensa RMinHash, n-gram strings": (strings, rensa_strings),
        "rensa CMinHash, pre-hashed shingle lists": (hash_lists, rensa_cminhash),
        "rensa RMinHash Rho sketch (one-permutation), flat": (flat, rensa_rho),
        "datasketch MinHash (affine32), n-gram bytes, SHA-1 (its default)": (byte_lists, ds_sha1),
        "datasketch MinHash (affine32), pre-hashed 32-bit shingles": (hash32_lists, ds_prehashed),
    }


def library_comparison(n_docs: int, n_pairs: int, seed: int = 0):
    vocab = vocabulary(20000, seed)
    texts, lists = documents(n_docs, seed=seed, vocab=vocab)
    rng = np.random.default_rng(seed + 1)
    a_texts, a_lists, b_texts, b_lists = [], [], [], []
    base_t, base_l = documents(n_pairs, seed=seed + 2, vocab=vocab)
    for t, w in zip(base_t, base_l):
        m = int(rng.integers(0, 45))
        w2 = near_copy(w, m, rng, vocab)
        a_texts.append(t), a_lists.append(w)
        b_texts.append(_sentences(w2, rng)), b_lists.append(w2)
    ka, oa = _shingles(a_texts)
    kb, ob = _shingles(b_texts)
    exact = np.array([exact_jaccard(ka[oa[i]:oa[i + 1]], kb[ob[i]:ob[i + 1]]) for i in range(n_pairs)])
    rows = []
    for name, (prep, sign) in candidates().items():
        slow = name.startswith("datasketch")
        n = max(n_docs // 8, 200) if slow else n_docs
        sign(prep(texts[:50], lists[:50]))  # warm-up
        t = time.perf_counter()
        inp = prep(texts[:n], lists[:n])
        t_prep = time.perf_counter() - t
        t = time.perf_counter()
        sig = sign(inp)
        dt = time.perf_counter() - t
        assert sig.shape == (n, NUM_PERM), (name, sig.shape)
        sa, sb = sign(prep(a_texts, a_lists)), sign(prep(b_texts, b_lists))
        est = (sa == sb).mean(axis=1)
        err = est - exact
        ideal = np.sqrt(np.maximum(exact * (1 - exact), 1e-12) / NUM_PERM)
        mid = (exact > 0.05) & (exact < 0.95)
        rows.append({"name": name, "docs_s": n / dt, "n": n, "prep_s": n / t_prep, "total_s": n / (t_prep + dt), "bias": float(err.mean()),
                     "rmse": float(np.sqrt((err ** 2).mean())),
                     "rel": float(np.sqrt((err[mid] ** 2).mean()) / np.sqrt((ideal[mid] ** 2).mean()))})
    return rows, exact


def library_table(rows, exact):
    lines = ["| library and call | docs | sign docs/s | prepare docs/s | text to signature docs/s | bias | RMSE "
             "| RMSE / ideal |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['n']:,} | {r['docs_s']:,.0f} | {r['prep_s']:,.0f} | {r['total_s']:,.0f} | "
                     f"{r['bias']:+.4f} | {r['rmse']:.4f} | {r['rel']:.2f} |")
    lines.append("")
    lines.append(f"Quality on {exact.shape[0]} pairs with exact 5-gram Jaccard from {exact.min():.2f} to "
                 f"{exact.max():.2f} (median {np.median(exact):.2f}); ideal = the standard error of an estimate "
                 f"from {NUM_PERM} independent permutations, sqrt(J(1-J)/{NUM_PERM}), over pairs with "
                 "0.05 < J < 0.95.")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dedup.md"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    load = os.getloadavg()
    n_docs, n_pairs = (2000, 200) if args.quick else (8000, 400)
    rows, exact = library_comparison(n_docs, n_pairs)
    text = [
        "# Deduplication benchmark (CPU)",
        "",
        f"Generated by `benchmarks/dedup.py` on {datetime.now():%Y-%m-%d %H:%M}; {os.cpu_count()} cores "
        f"({platform.machine()}), Python {platform.python_version()}. The machine is shared with other jobs "
        f"(load average at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}); expect 2-4x run-to-run "
        "variation in the rates.",
        "",
        "## MinHash library comparison",
        "",
        f"Same word-{NGRAM}-gram sets of ~300-word generated English-like documents, {NUM_PERM} permutations, "
        "one thread. *sign*: the library call alone, from its input ready (and the conversion of its result "
        "to a numpy matrix); *prepare*: from raw text to that input (our Arrow tokeniser and shingle keys, or "
        "Python n-gram strings for the string calls); *text to signature*: both.",
        "",
        library_table(rows, exact),
    ]
    text.append("")
    text.append(f"Whole run: {time.perf_counter() - t0:.0f} s.")
    Path(args.out).write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
