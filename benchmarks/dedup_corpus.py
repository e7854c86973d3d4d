"""The corpus of the dedup scale benchmark: ~150-word documents recombined from real text.

The words of the English man pages on this machine (``benchmarks/real_text.py``'s
paragraphs, in order, punctuation kept) are one long token stream. A document is
``CHUNKS`` runs of ``CHUNK`` consecutive words taken from random places of that stream
(so its word 5-grams are real text's), and ``COPY_SHARE`` of the documents are near copies
of an earlier-numbered one with each word replaced by a random stream word with probability
``REPLACE`` (3% of the words). Everything is a function of the seed and the document
number, so a corpus of any size is made batch by batch, in bounded memory, and the same
``N`` gives the same files. Cached under ``benchmarks/.cache/`` (gitignored).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(__file__))

CACHE = os.path.join(os.path.dirname(__file__), ".cache")
CHUNK = 15
CHUNKS = 10  # 150 words per document
COPY_SHARE = 0.10
REPLACE = 0.03
FILE_ROWS = 500_000
BATCH = 100_000


def word_pool() -> pa.Array:
    """The man pages' words in order (a large_string array), cached."""
    path = os.path.join(CACHE, "dedup_words.parquet")
    if not os.path.exists(path):
        from real_text import man_paragraphs

        words = [w for p in man_paragraphs() for w in p.split()]
        os.makedirs(CACHE, exist_ok=True)
        pq.write_table(pa.table({"w": pa.array(words, type=pa.large_string())}), path)
    return pq.read_table(path).column("w").combine_chunks()


def _mix(x, salt: int):
    """splitmix64 of ``x + salt`` (uint64 array): a random number per document and slot."""
    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) + np.uint64(salt) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _unit(x, salt):
    return (_mix(x, salt) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def sources(doc, seed: int = 0):
    """The original each document copies (-1 for an original): a copy's source is an
    earlier original (a pure function of the document number)."""
    doc = np.asarray(doc, dtype=np.int64)
    copy = (_unit(doc, 2 * seed + 1) < COPY_SHARE) & (doc > 0)
    src = np.where(copy, (_unit(doc, 2 * seed + 2) * doc).astype(np.int64), -1)
    while True:  # the source of a copy of a copy is the copy's own source
        hit = src >= 0
        again = hit.copy()
        again[hit] = (_unit(src[hit], 2 * seed + 1) < COPY_SHARE) & (src[hit] > 0)
        if not again.any():
            return src
        src[again] = (_unit(src[again], 2 * seed + 2) * src[again]).astype(np.int64)


def _word_ids(lo: int, hi: int, n_pool: int, seed: int):
    """(hi - lo, 150) word ids of documents lo..hi-1 and, for each, its source (-1: none)."""
    doc = np.arange(lo, hi, dtype=np.int64)
    src = sources(doc, seed)
    base = np.where(src >= 0, src, doc).astype(np.uint64)
    slot = base[:, None] * np.uint64(CHUNKS) + np.arange(CHUNKS, dtype=np.uint64)
    starts = (_mix(slot, 1000 + seed) % np.uint64(n_pool - CHUNK)).astype(np.int64)
    ids = (starts[:, :, None] + np.arange(CHUNK)).reshape(hi - lo, CHUNKS * CHUNK)
    rng = np.random.default_rng([seed, lo])
    rep = (src >= 0)[:, None] & (rng.random(ids.shape) < REPLACE)
    ids[rep] = rng.integers(0, n_pool, size=int(rep.sum()))
    return ids, src


def documents(lo: int, hi: int, pool: pa.Array, seed: int = 0):
    """Texts (a large_string array) of documents lo..hi-1 and the source of each (-1: an
    original), made ``BATCH`` at a time."""
    texts, srcs = [], []
    for b in range(lo, hi, BATCH):
        ids, src = _word_ids(b, min(b + BATCH, hi), len(pool), seed)
        flat = pool.take(pa.array(ids.reshape(-1)))
        lists = pa.LargeListArray.from_arrays(pa.array(np.arange(0, ids.size + 1, ids.shape[1])), flat)
        texts.append(pc.binary_join(lists, pa.scalar(" ", pa.large_string())))
        srcs.append(src)
    return pa.chunked_array(texts).combine_chunks(), np.concatenate(srcs)


def write_corpus(n: int, seed: int = 0, file_rows: int = FILE_ROWS) -> str:
    """``n`` documents in Parquet files of ``file_rows`` (``id``, ``text``) under the cache; the folder."""
    folder = os.path.join(CACHE, f"dedup_corpus_{n}_{seed}")
    done = os.path.join(folder, "_SUCCESS")
    if os.path.exists(done):
        return folder
    os.makedirs(folder, exist_ok=True)
    pool = word_pool()
    t0 = time.perf_counter()
    for i, lo in enumerate(range(0, n, file_rows)):
        hi = min(lo + file_rows, n)
        texts, _ = documents(lo, hi, pool, seed)
        table = pa.table({"id": np.arange(lo, hi, dtype=np.int64), "text": texts})
        pq.write_table(table, os.path.join(folder, f"part-{i:04d}.parquet"), row_group_size=100_000)
        print(f"corpus {n:,}: {hi:,} documents ({time.perf_counter() - t0:.0f} s)", flush=True)
    open(done, "w").close()
    return folder


if __name__ == "__main__":
    print(write_corpus(int(sys.argv[1])))
