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
import re  # noqa: E402
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
SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ta",
    "ri",
    "so",
    "ve",
    "du",
    "pa",
    "ge",
    "ho",
    "ju",
    "be",
    "fi",
    "an",
    "er",
    "in",
    "on",
    "us",
    "st",
    "th",
    "ch",
    "or",
    "al",
    "en",
    "ti",
    "ro",
    "ma",
    "le",
]


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
        s = " ".join(w[i : i + k])
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


_WORD = re.compile(r"\w+")


def _ngram_strings(texts):
    """Word n-gram strings from raw text in plain Python (the tokens our Arrow tokeniser
    makes: lower case, runs of word characters)."""
    out = []
    for t in texts:
        w = _WORD.findall(t.lower())
        out.append([" ".join(w[i : i + NGRAM]) for i in range(max(len(w) - NGRAM + 1, 1))])
    return out


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
        return _ngram_strings(texts)

    def rensa_strings(inp):
        m = rensa.RMinHash.digest_matrix_from_token_sets(inp, NUM_PERM, SEED)
        return np.array(m.to_rows(), dtype=np.uint32)

    def byte_lists(texts, lists):
        return [[s.encode() for s in doc] for doc in _ngram_strings(texts)]

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
    exact = np.array([exact_jaccard(ka[oa[i] : oa[i + 1]], kb[ob[i] : ob[i + 1]]) for i in range(n_pairs)])
    rows = []
    for name, (prep, sign) in candidates().items():
        slow = name.startswith("datasketch")
        n = max(n_docs // 8, 200) if slow else n_docs
        sign(prep(texts[:50], lists[:50]))  # warm-up
        t = time.process_time()  # CPU time: a shared machine does not inflate it
        inp = prep(texts[:n], lists[:n])
        t_prep = time.process_time() - t
        t = time.process_time()
        sig = sign(inp)
        dt = time.process_time() - t
        assert sig.shape == (n, NUM_PERM), (name, sig.shape)
        sa, sb = sign(prep(a_texts, a_lists)), sign(prep(b_texts, b_lists))
        est = (sa == sb).mean(axis=1)
        err = est - exact
        ideal = np.sqrt(np.maximum(exact * (1 - exact), 1e-12) / NUM_PERM)
        mid = (exact > 0.05) & (exact < 0.95)
        rows.append(
            {
                "name": name,
                "docs_s": n / dt,
                "n": n,
                "prep_s": n / t_prep,
                "total_s": n / (t_prep + dt),
                "bias": float(err.mean()),
                "rmse": float(np.sqrt((err**2).mean())),
                "rel": float(np.sqrt((err[mid] ** 2).mean()) / np.sqrt((ideal[mid] ** 2).mean())),
            }
        )
    return rows, exact


def library_table(rows, exact):
    lines = [
        "| library and call | docs | sign docs/CPU-s | prepare docs/CPU-s | text to signature docs/CPU-s | bias "
        "| RMSE | RMSE / ideal |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['n']:,} | {r['docs_s']:,.0f} | {r['prep_s']:,.0f} | {r['total_s']:,.0f} | "
            f"{r['bias']:+.4f} | {r['rmse']:.4f} | {r['rel']:.2f} |"
        )
    chosen = next(r for r in rows if "chosen" in r["name"])
    ds = [r for r in rows if r["name"].startswith("datasketch")]
    rho = next(r for r in rows if "Rho" in r["name"])
    lines.append("")
    best_ds = max(r["total_s"] for r in ds)
    lines.append(
        f"Reading: from raw text, the chosen call signs {chosen['total_s'] / best_ds:.1f}x as many"
        f" documents per CPU second as datasketch's faster call, with an estimate error "
        f"{chosen['rel']:.2f}x the ideal (datasketch: {min(r['rel'] for r in ds):.2f}x at best); rensa's Rho "
        f"sketch is biased ({rho['bias']:+.2f} on the Jaccard estimate), so it is not used."
    )
    lines.append("")
    lines.append(
        f"Quality on {exact.shape[0]} pairs with exact 5-gram Jaccard from {exact.min():.2f} to "
        f"{exact.max():.2f} (median {np.median(exact):.2f}); ideal = the standard error of an estimate "
        f"from {NUM_PERM} independent permutations, sqrt(J(1-J)/{NUM_PERM}), over pairs with "
        "0.05 < J < 0.95."
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------- part 2 and 3
def planted_corpus(n_unrelated: int, n_copies: int, n_changes, seed: int = 0, n_words: int = 300):
    """Unrelated documents plus near copies of the first ``n_copies`` (``n_changes`` words
    replaced: an int, or one per copy). Returns texts, the original of each row (-1 for
    originals) and the exact 5-gram Jaccard of each copy to its original."""
    vocab = vocabulary(20000, seed)
    texts, lists = documents(n_unrelated, n_words=n_words, seed=seed, vocab=vocab)
    rng = np.random.default_rng(seed + 7)
    changes = np.broadcast_to(np.asarray(n_changes), (n_copies,))
    src = np.full(n_unrelated + n_copies, -1)
    jac = np.full(n_unrelated + n_copies, np.nan)
    for i in range(n_copies):
        w2 = near_copy(lists[i], int(changes[i]), rng, vocab)
        texts.append(_sentences(w2, rng))
        src[n_unrelated + i] = i
    ks, ko = _shingles(texts)
    for i in range(n_unrelated, n_unrelated + n_copies):
        j = src[i]
        jac[i] = exact_jaccard(ks[ko[i] : ko[i + 1]], ks[ko[j] : ko[j + 1]])
    return texts, src, jac


def kind_throughput(n_docs: int, repeat: int = 2):
    """docs/s of Deduplicator.fit for each text kind, in one process and one thread
    (CPU time, which a shared machine does not inflate, and wall time)."""
    from datamask.dedup import Deduplicator

    texts, _, _ = planted_corpus(n_docs - n_docs // 10, n_docs // 10, 7)
    out = {}
    for kind in ("exact", "fuzzy"):
        Deduplicator(kind).fit(texts[:200])  # warm-up
        best_cpu = best_wall = float("inf")
        for _ in range(repeat):
            c, w = time.process_time(), time.perf_counter()
            Deduplicator(kind).fit(texts)
            best_cpu = min(best_cpu, time.process_time() - c)
            best_wall = min(best_wall, time.perf_counter() - w)
        out[kind] = (len(texts) / best_cpu, len(texts) / best_wall)
    return out, len(texts)


def recall_precision(n_unrelated: int, n_copies: int):
    """Defaults of the fuzzy kind on planted near copies at several Jaccard levels."""
    from datamask.dedup import Deduplicator, lsh_params

    rows = []
    for n_changes in (4, 7, 10, 13):
        texts, src, jac = planted_corpus(n_unrelated, n_copies, n_changes, seed=n_changes)
        d = Deduplicator("fuzzy").fit(texts)
        removed = d.duplicate_of_ >= 0
        copy = src >= 0
        # a removal is right when it is a copy pointing at its original (the original comes
        # first, so with no quality column it is the kept one)
        right = removed & copy & (d.duplicate_of_ == src)
        n_found = int(right.sum())
        rows.append(
            {
                "changes": n_changes,
                "jaccard": float(np.nanmean(jac)),
                "jmin": float(np.nanmin(jac)),
                "jmax": float(np.nanmax(jac)),
                "recall": n_found / int(copy.sum()),
                "precision": n_found / max(int(removed.sum()), 1),
                "removed": int(removed.sum()),
                "n": len(texts),
            }
        )
    return rows, lsh_params()


def fuzzy_breakdown(n_docs: int):
    """CPU microseconds per document of each step of the fuzzy kind, one process."""
    from datamask.dedup.buckets import fuzzy_records, verify_pairs
    from datamask.dedup.minhash import lsh_params, signatures
    from datamask.dedup.pairs import bucket_pairs, duplicate_of

    texts, _, _ = planted_corpus(n_docs - n_docs // 10, n_docs // 10, 7)
    p = lsh_params()
    n = len(texts)
    doc = np.arange(n)
    steps = {}
    duplicate_of(np.array([0]), np.array([1]))  # warm-up: scipy's import is not per document

    def step(name, fn):
        c = time.process_time()
        r = fn()
        steps[name] = (time.process_time() - c) / n * 1e6
        return r

    import rensa

    h, off, _ = step("tokenise (Arrow: lower case, punctuation, split, word hashes)", lambda: word_tokens(texts))
    keys, koff = step("word 5-gram keys (numpy)", lambda: shingle_keys(h, off, p.ngram))
    step(
        "MinHash signatures (rensa) and their matrix",
        lambda: np.array(
            rensa.RMinHash.digest_matrix_from_flat_token_hashes(
                keys, koff.astype(np.uint64), p.num_perm, SEED
            ).to_rows(),
            dtype=np.uint32,
        ),
    )
    sig, has = signatures(texts, p.ngram, p.num_perm)  # the same three steps, as the stage calls them
    rec = step("LSH band keys and records", lambda: fuzzy_records(sig, has, doc, p.bands, p.rows))
    a, b = step(
        "bucket pairs (sort on band keys)",
        lambda: bucket_pairs(
            rec["band"].to_numpy(), rec["key"].to_numpy(), rec["key2"].to_numpy(), rec["doc"].to_numpy()
        ),
    )
    a, b = step("verify candidates (signature Jaccard)", lambda: verify_pairs(a, b, doc, sig, p.threshold))
    step("connected components and kept row", lambda: duplicate_of(a, b))
    return steps


def semantic_throughput(n_docs: int, dim: int = 384, repeat: int = 2):
    """docs/s of the semantic kind on unit vectors in planted clusters with 10% near copies
    (cosine ~0.99), with the cluster column given (as after ``datamask cluster``)."""
    from datamask.dedup import Deduplicator

    rng = np.random.default_rng(0)
    k = max(1, int(round(np.sqrt(n_docs / 10))))
    centres = rng.normal(size=(k, dim)).astype(np.float32)
    cl = rng.integers(0, k, n_docs)
    E = centres[cl] + 0.6 * rng.normal(size=(n_docs, dim)).astype(np.float32)
    n_copy = n_docs // 10
    E[-n_copy:] = E[:n_copy] + 0.01 * rng.normal(size=(n_copy, dim)).astype(np.float32)
    cl[-n_copy:] = cl[:n_copy]
    q = rng.random(n_docs)
    best_cpu = best_wall = float("inf")
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        d = Deduplicator("semantic", eps=0.05).fit(embeddings=E, cluster=cl, quality=q)
        best_cpu = min(best_cpu, time.process_time() - c)
        best_wall = min(best_wall, time.perf_counter() - w)
    return n_docs / best_cpu, n_docs / best_wall, int((d.duplicate_of_ >= 0).sum()), n_copy, k


def _process_cpu():
    import psutil

    t = psutil.Process().cpu_times()
    return t.user + t.system


def stage_throughput(n_docs: int, kinds=("exact", "fuzzy")):
    """docs/s of the whole ``dedup`` stage (reads, shuffle, passes, Parquet writes) on a
    LocalCluster of one single-threaded worker, wall clock."""
    import shutil
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq
    from distributed import Client, LocalCluster

    from datamask.pipeline.stages.dedup import run_dedup
    from datamask.pipeline.text_config import DedupConfig

    texts, _, _ = planted_corpus(n_docs - n_docs // 10, n_docs // 10, 7)
    out = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as lc,
        Client(lc) as client,
    ):
        half = len(texts) // 2
        for i, (a, b) in enumerate(((0, half), (half, len(texts)))):
            pq.write_table(pa.table({"id": np.arange(a, b), "text": texts[a:b]}), f"{tmp}/part-{i}.parquet")
        warm = DedupConfig(
            input=f"{tmp}/part-0.parquet",
            output=f"{tmp}-warm",
            kind="exact,fuzzy",
            split_size=max(2, n_docs // 4),
            quiet=True,
        )
        run_dedup(warm, client=client)  # imports and first-call costs on the worker, not timed

        def worker_cpu():
            return sum(client.run(_process_cpu).values())

        for kind in kinds:
            cfg = DedupConfig(input=tmp, output=f"{tmp}-{kind}", kind=kind, split_size=max(2, n_docs // 4), quiet=True)
            t, c, w = time.perf_counter(), time.process_time(), worker_cpu()
            m = run_dedup(cfg, client=client)
            wall = time.perf_counter() - t
            cpu = time.process_time() - c + worker_cpu() - w
            out[kind] = (len(texts) / wall, len(texts) / cpu, m["totals"]["rows_out"])
            shutil.rmtree(f"{tmp}-{kind}")
        shutil.rmtree(f"{tmp}-warm")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dedup.md"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    load = os.getloadavg()
    q = args.quick
    rows, exact = library_comparison(*((2000, 200) if q else (8000, 400)))
    n_kind = 4000 if q else 20000
    kinds, n_texts = kind_throughput(n_kind, repeat=1 if q else 2)
    breakdown = fuzzy_breakdown(4000 if q else 20000)
    sem = semantic_throughput(4000 if q else 20000, repeat=1 if q else 2)
    rp, params = recall_precision(*((2000, 200) if q else (10000, 1000)))
    n_stage = 4000 if q else 20000
    stage = stage_throughput(n_stage)
    text = [
        "# Deduplication benchmark (CPU)",
        "",
        f"Generated by `benchmarks/dedup.py{' --quick' if q else ''}` on {datetime.now():%Y-%m-%d %H:%M}; "
        f"{os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}. **The machine is "
        f"shared with other jobs** (load average at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}), so "
        "wall-clock rates vary 2-4x between runs; the CPU-time rates (one process, one thread) are closer to what "
        "one worker does with a core to itself, though contention for shared caches raises CPU time too, so "
        "they are lower bounds for a dedicated core. Whole run: {wall} s.",
        "",
        "## Throughput per worker, by kind",
        "",
        f"`Deduplicator.fit` on {n_texts:,} generated English-like documents of ~300 words (10% near copies), "
        "one process, one thread: the same partition functions the `dedup` stage maps over splits "
        "(normalise/tokenise, keys or signatures, bucket pairs, verification, connected components); "
        "Dask's shuffle and the Parquet reads and writes of the stage are not in these numbers. Semantic: "
        f"{sem[4]} clusters of 384-d unit vectors, {sem[3]:,} planted near copies (cosine ~0.99), eps 0.05.",
        "",
        "| kind | docs/s (CPU time) | docs/s (wall, shared machine) |",
        "| --- | ---: | ---: |",
        f"| exact | {kinds['exact'][0]:,.0f} | {kinds['exact'][1]:,.0f} |",
        f"| fuzzy (5-grams, {params.num_perm} permutations, {params.bands} bands x {params.rows} rows) | "
        f"{kinds['fuzzy'][0]:,.0f} | {kinds['fuzzy'][1]:,.0f} |",
        f"| semantic ({sem[2]:,} of {sem[3]:,} planted copies removed) | {sem[0]:,.0f} | {sem[1]:,.0f} |",
        "",
        "Target: fuzzy >= 5,000 docs/s per worker on ~300-word documents.",
        "",
        "Where the fuzzy kind's time goes (CPU microseconds per document, same documents):",
        "",
        "| step | us/doc |",
        "| --- | ---: |",
        *[f"| {k} | {v:.1f} |" for k, v in breakdown.items()],
        f"| total | {sum(breakdown.values()):.1f} |",
        "",
        f"The whole stage (`run_dedup`: read Parquet, records, Dask shuffle on band keys, lookup, ids, "
        f"filtered Parquet written) on {n_stage:,} such documents in 2 files and 4 splits, LocalCluster of "
        "one single-threaded worker process (warmed up by a run on one file first); per CPU second of the "
        "worker and the client together, and per wall second on the shared machine:",
        "",
        "| kind | docs/s (CPU time, worker + client) | docs/s (wall, 1 worker) | rows kept |",
        "| --- | ---: | ---: | ---: |",
        *[f"| {k} | {v[1]:,.0f} | {v[0]:,.0f} | {v[2]:,} |" for k, v in stage.items()],
        "",
        "## Recall and precision on planted near-duplicates (fuzzy, defaults)",
        "",
        f"Defaults: word {params.ngram}-grams, {params.num_perm} permutations, threshold {params.threshold} "
        f"(LSH {params.bands} bands x {params.rows} rows, chosen from the threshold; candidates kept when the "
        "signature estimate of their Jaccard reaches it). Each row: unrelated documents plus near copies of "
        "some of them with `changes` words replaced; recall = copies removed and pointing at their original, "
        "precision = of all rows removed, those that are such copies.",
        "",
        "| words changed | exact 5-gram Jaccard: mean (min-max) | documents | removed | recall | precision |",
        "| ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rp:
        text.append(
            f"| {r['changes']} | {r['jaccard']:.3f} ({r['jmin']:.3f}-{r['jmax']:.3f}) | {r['n']:,} | "
            f"{r['removed']:,} | {r['recall']:.3f} | {r['precision']:.3f} |"
        )
    text += [
        "",
        "Targets: recall >= 0.95 at Jaccard 0.8, precision >= 0.99.",
        "",
        "## MinHash library comparison",
        "",
        f"Same word-{NGRAM}-gram sets of ~300-word generated English-like documents, {NUM_PERM} permutations, "
        "one thread, rates per CPU second. *sign*: the library call alone, from its input ready (and the "
        "conversion of its result "
        "to a numpy matrix); *prepare*: from raw text to that input (our Arrow tokeniser and shingle keys, or "
        "the same words split by a Python regex and joined into n-gram strings for the string calls); "
        "*text to signature*: both.",
        "",
        library_table(rows, exact),
    ]
    out = "\n".join(text).replace("{wall}", f"{time.perf_counter() - t0:.0f}")
    Path(args.out).write_text(out + "\n")
    print(out)


if __name__ == "__main__":
    main()
