"""Deduplication benchmark on this machine -> benchmarks/results/dedup.md.

Four parts, measured side by side in one run:

1. **MinHash implementations** (how the compiled pass was chosen): every candidate of
   ``benchmarks/minhash_candidates.py`` turns the same ~150-word documents recombined from
   real text (``benchmarks/dedup_corpus.py``) into 128-permutation signatures of their word
   5-grams, one thread (``RAYON_NUM_THREADS=1`` for rensa), from the raw text: documents per
   CPU second, and the quality of the Jaccard estimate on document pairs with a known exact
   Jaccard (0.1-1.0): bias, RMSE, and RMSE over the binomial ideal ``sqrt(J (1 - J) / 128)``.
2. **Throughput of each kind** from raw text, as the stage's functions run it (one
   process, one thread): exact keys, fuzzy signatures + band keys + pairs + verification +
   components, semantic (SemDeDup kernel within clusters on random 384-d embeddings with
   planted near-copies).
3. **Recall and precision on planted near-duplicates**: a corpus of unrelated documents
   plus near-copies with a few words changed (5-gram Jaccard ~0.67-0.88 to the original),
   run through :class:`datamask.dedup.Deduplicator` with the defaults, by words changed and
   by exact Jaccard bin; with ``--old PATH`` (a checkout of the previous version), the same
   data through the previous code too, and through both versions' ``datamask dedup``.

Run: ``.venv/bin/python benchmarks/dedup.py [--quick] [--old PATH]``. The host is shared
with other jobs; the load average at the start is recorded.
"""

from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # rensa's thread pool: one worker = one thread
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from datamask.dedup.minhash import shingle_keys  # noqa: E402

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
    return shingle_keys(texts, NGRAM)


def library_comparison(n_docs: int, n_pairs: int, seed: int = 0):
    """Rates and estimate quality of every MinHash candidate on real-text documents."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from dedup_corpus import documents, word_pool
    from minhash_candidates import candidates

    pool = word_pool()
    texts = documents(0, n_docs, pool, seed)[0].to_pylist()
    rng = np.random.default_rng(seed + 1)
    a_texts = documents(1_000_000, 1_000_000 + n_pairs, pool, seed)[0].to_pylist()
    b_texts = []
    for t in a_texts:  # a copy with 0-45 of its ~150 words replaced by other real words
        w = t.split()
        for pos in rng.choice(len(w), size=int(rng.integers(0, 46)), replace=False):
            w[pos] = pool[int(rng.integers(0, len(pool)))].as_py()
        b_texts.append(" ".join(w))
    ka, oa = _shingles(a_texts)
    kb, ob = _shingles(b_texts)
    exact = np.array([exact_jaccard(ka[oa[i] : oa[i + 1]], kb[ob[i] : ob[i + 1]]) for i in range(n_pairs)])
    rows = []
    for name, sign in candidates().items():
        n = max(n_docs // 10, 200) if name.startswith("datasketch") else n_docs
        sign(texts[:50])  # warm-up (and the compiled pass's load from numba's cache)
        t = time.process_time()  # CPU time: a shared machine does not inflate it
        sig = sign(texts[:n])
        dt = time.process_time() - t
        assert sig.shape == (n, NUM_PERM), (name, sig.shape)
        est = (sign(a_texts) == sign(b_texts)).mean(axis=1)
        err = est - exact
        ideal = np.sqrt(np.maximum(exact * (1 - exact), 1e-12) / NUM_PERM)
        mid = (exact > 0.05) & (exact < 0.95)
        rows.append(
            {
                "name": name,
                "n": n,
                "docs_s": n / dt,
                "bias": float(err.mean()),
                "rmse": float(np.sqrt((err**2).mean())),
                "rel": float(np.sqrt((err[mid] ** 2).mean()) / np.sqrt((ideal[mid] ** 2).mean())),
            }
        )
    return rows, exact


def library_table(rows, exact):
    lines = [
        "| implementation | docs | text to signature, docs per CPU-second | bias | RMSE | RMSE / ideal |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['n']:,} | {r['docs_s']:,.0f} | {r['bias']:+.4f} | {r['rmse']:.4f} | {r['rel']:.2f} |"
        )
    chosen = next(r for r in rows if "chosen" in r["name"])
    prev = next(r for r in rows if r["name"].startswith("previous"))
    rest = max((r for r in rows if r is not chosen), key=lambda r: r["docs_s"])
    lines += [
        "",
        f"Reading: the compiled pass signs {chosen['docs_s']:,.0f} documents per CPU second "
        f"({chosen['docs_s'] / prev['docs_s']:.1f}x the previous pipeline, {chosen['docs_s'] / rest['docs_s']:.1f}x the "
        f"next fastest candidate, {rest['name']}), with an estimate error {chosen['rel']:.2f}x the ideal "
        f"(previous: {prev['rel']:.2f}x). The rensa calls are fast at hashing but return Python lists "
        "(`to_rows`), and every call from lists or strings pays for building them.",
        "",
        f"Quality on {exact.shape[0]} pairs of real-text documents and copies with 0-45 words replaced: exact "
        f"5-gram Jaccard from {exact.min():.2f} to {exact.max():.2f} (median {np.median(exact):.2f}); ideal = "
        f"the standard error of an estimate from {NUM_PERM} independent permutations, sqrt(J(1-J)/{NUM_PERM}), "
        "over pairs with 0.05 < J < 0.95.",
    ]
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


BINS = (0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90, 1.01)
OLD_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[1] + "/benchmarks")
import numpy as np
import dedup as bench
from datamask.dedup import Deduplicator
out = {}
for c in json.loads(sys.argv[3]):
    texts, src, jac = bench.planted_corpus(int(sys.argv[2]), int(sys.argv[2]) // 10, c, seed=c)
    out[c] = {"texts": __import__("hashlib").md5("\\x00".join(texts).encode()).hexdigest(),
              "dup": Deduplicator("fuzzy").fit(texts).duplicate_of_.tolist()}
print(json.dumps(out))
"""


def _stage_dup(code: Path, texts, tmp: Path):
    """``duplicate_of`` (positions) from ``datamask dedup --kind fuzzy --keep-all`` of ``code``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": np.arange(len(texts)), "text": texts}), tmp / "in.parquet")
    runner = "import sys; sys.path.insert(0, sys.argv[1]); from datamask.cli import main; sys.exit(main(sys.argv[2:]))"
    args = ["dedup", str(tmp / "in.parquet"), str(tmp / "out"), "--kind", "fuzzy", "--keep-all", "--quiet"]
    args += ["--n-workers", "2", "--split-size", str(len(texts) // 4 + 1), "--overwrite"]
    subprocess.run([sys.executable, "-c", runner, str(code), *args], cwd=str(code), check=True)
    t = pq.read_table(tmp / "out" / "data").to_pandas().sort_values("id")
    return t["duplicate_of"].fillna(-1).astype(np.int64).to_numpy()


def by_bin(dup, src, texts):
    """Recall and precision by exact 5-gram Jaccard bin: a copy counts in the bin of its
    Jaccard to its original; a removal in the bin of its Jaccard to the row it points at."""
    ks, ko = _shingles(texts)

    def jac(i, j):
        return exact_jaccard(ks[ko[i] : ko[i + 1]], ks[ko[j] : ko[j + 1]])

    copies = np.flatnonzero(src >= 0)
    removed = np.flatnonzero(dup >= 0)
    jc = np.array([jac(i, src[i]) for i in copies])
    jr = np.array([jac(i, dup[i]) for i in removed])
    right_c = dup[copies] == src[copies]
    right_r = src[removed] == dup[removed]
    out = []
    for lo, hi in zip(BINS[:-1], BINS[1:]):
        c, r = (jc >= lo) & (jc < hi), (jr >= lo) & (jr < hi)
        out.append((int(c.sum()), int(right_c[c].sum()), int(r.sum()), int(right_r[r].sum())))
    below = jr < BINS[0]
    return out, (int(below.sum()), int(right_r[below].sum()))


def old_vs_new(old: Path | None, n_unrelated: int, changes=(4, 7, 10, 13)):
    """Per Jaccard bin, over the planted corpora of every ``changes``: (copies, found,
    removed, right) of the in-memory Deduplicator and of the stage, new and (with ``old``) old."""
    import tempfile

    from datamask.dedup import Deduplicator

    runs = {"Deduplicator, new": [], "datamask dedup, new": []}
    if old is not None:
        runs.update({"Deduplicator, old": [], "datamask dedup, old": []})
        got = subprocess.run(
            [sys.executable, "-c", OLD_SCRIPT, str(old), str(n_unrelated), json.dumps(list(changes))],
            cwd=str(old),
            check=True,
            capture_output=True,
            text=True,
        )
        old_dup = json.loads(got.stdout.strip().splitlines()[-1])
    with tempfile.TemporaryDirectory() as tmp:
        for c in changes:
            texts, src, _ = planted_corpus(n_unrelated, n_unrelated // 10, c, seed=c)
            runs["Deduplicator, new"].append(by_bin(Deduplicator("fuzzy").fit(texts).duplicate_of_, src, texts))
            runs["datamask dedup, new"].append(by_bin(_stage_dup(ROOT, texts, Path(tmp) / "new"), src, texts))
            if old is not None:
                import hashlib

                same = old_dup[str(c)]["texts"] == hashlib.md5("\x00".join(texts).encode()).hexdigest()
                assert same, "the previous checkout generates other texts: not the same data"
                runs["Deduplicator, old"].append(by_bin(np.array(old_dup[str(c)]["dup"]), src, texts))
                runs["datamask dedup, old"].append(by_bin(_stage_dup(old, texts, Path(tmp) / "old"), src, texts))
    return {k: _sum_bins(v) for k, v in runs.items()}


def _sum_bins(results):
    bins = np.sum([r[0] for r in results], axis=0)
    below = np.sum([r[1] for r in results], axis=0)
    return bins.tolist(), below.tolist()


def bins_table(runs) -> list:
    names = list(runs)
    head = "| exact 5-gram Jaccard | copies | " + " | ".join(f"{n}: recall / precision (removed)" for n in names) + " |"
    lines = [head, "| --- | ---: |" + " ---: |" * len(names)]
    for i, (lo, hi) in enumerate(zip(BINS[:-1], BINS[1:])):
        cells = []
        for n in names:
            c, f, r, ok = runs[n][0][i]
            cells.append(f"{f / c if c else float('nan'):.3f} / {ok / r if r else float('nan'):.3f} ({r:,})")
        copies = runs[names[0]][0][i][0]
        lines.append(f"| {lo:.2f}-{min(hi, 1.0):.2f} | {copies:,} | " + " | ".join(cells) + " |")
    lines.append(
        "| below 0.60 (removals only) | - | "
        + " | ".join(
            f"- / {runs[n][1][1] / runs[n][1][0] if runs[n][1][0] else float('nan'):.3f} ({runs[n][1][0]:,})"
            for n in names
        )
        + " |"
    )
    return lines


def fuzzy_breakdown(n_docs: int):
    """CPU microseconds per document of each step of the fuzzy kind, one process."""
    from datamask.dedup.buckets import records_frame, records_pairs, text_records, verify_pairs
    from datamask.dedup.minhash import lsh_params
    from datamask.dedup.pairs import connected_components, removed_of_groups

    texts, _, _ = planted_corpus(n_docs - n_docs // 10, n_docs // 10, 7)
    p = lsh_params()
    n = len(texts)
    doc = np.arange(n)
    steps = {}
    connected_components(np.array([0]), np.array([1]))  # warm-up: scipy's import is not per document
    text_records(texts[:10], doc[:10], None, ("fuzzy",), p)  # the kernel's load

    def step(name, fn):
        c = time.process_time()
        r = fn()
        steps[name] = (time.process_time() - c) / n * 1e6
        return r

    rec, sig = step(
        "lower case (Arrow), then one compiled pass: words, 5-gram keys, MinHash, LSH band keys",
        lambda: text_records(texts, doc, None, ("fuzzy",), p),
    )
    rec = step("bucket records (a frame)", lambda: records_frame(rec))
    pairs = step("bucket pairs (equal band keys)", lambda: records_pairs(rec))
    a, b = pairs["a"].to_numpy(), pairs["b"].to_numpy()
    a, b = step("verify candidates (signature Jaccard)", lambda: verify_pairs(a, b, doc, sig, p.threshold))
    step("connected components and kept row", lambda: removed_of_groups(*connected_components(a, b)[::-1]))
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

    from datamask.pipeline.config import DedupConfig
    from datamask.stages.corpus.dedup import run_dedup

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


def _throughput_text(q, args, load, kinds, n_texts, sem, params, breakdown, n_stage, stage):
    text = [
        "# Deduplication benchmark (CPU)",
        "",
        f"Generated by `benchmarks/dedup.py{' --quick' if q else ''}{' --old PREVIOUS' if args.old else ''}` on {datetime.now():%Y-%m-%d %H:%M}; "
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
    return text


def _quality_text(rp, params, bins, rows, exact):
    text = []
    for r in rp:
        text.append(
            f"| {r['changes']} | {r['jaccard']:.3f} ({r['jmin']:.3f}-{r['jmax']:.3f}) | {r['n']:,} | "
            f"{r['removed']:,} | {r['recall']:.3f} | {r['precision']:.3f} |"
        )
    text += [
        "",
        "Targets: recall >= 0.95 at Jaccard 0.8, precision >= 0.99.",
        "",
        "### By exact Jaccard, this version and the previous one on the same data",
        "",
        "The four corpora above pooled (the same generator and seeds as the previous version's benchmark; the "
        "previous checkout regenerates them and its texts are checked identical), binned by the exact word-5-gram "
        "Jaccard of each copy to its original (recall) and of each removed row to the row it points at "
        "(precision). *Deduplicator*: the in-memory class; *datamask dedup*: the whole stage (`--kind fuzzy "
        "--keep-all`, 2 workers, 4 splits), each version's own code. The signatures of the two versions come "
        "from different hash functions, so single documents near the threshold can fall either side; the "
        "counts per bin show how much that moves.",
        "",
        *bins_table(bins),
        "",
        "## MinHash implementations",
        "",
        f"Word-{NGRAM}-gram sets of ~150-word documents recombined from the man pages' text "
        f"(`benchmarks/dedup_corpus.py`), {NUM_PERM} permutations, one thread, from the raw text to the "
        "signature matrix, per CPU second (`benchmarks/minhash_candidates.py`).",
        "",
        library_table(rows, exact),
    ]
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dedup.md"))
    ap.add_argument("--old", type=Path, help="a checkout of the previous version, for the old-vs-new recall table")
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
    bins = old_vs_new(args.old.resolve() if args.old else None, 2000 if q else 10000)
    text = _throughput_text(q, args, load, kinds, n_texts, sem, params, breakdown, n_stage, stage)
    text += _quality_text(rp, params, bins, rows, exact)
    out = "\n".join(text).replace("{wall}", f"{time.perf_counter() - t0:.0f}")
    Path(args.out).write_text(out + "\n")
    print(out)


if __name__ == "__main__":
    main()
