"""MinHash implementations measured side by side for ``benchmarks/dedup.py`` (part 1).

Each candidate turns raw texts into ``(N, 128)`` signatures of their word 5-gram sets, in
the form its call takes, from the text (normalise + shingle + hash): so a candidate that
needs Python lists or strings pays for building them. The word tokens are the same for
all (lower case, runs of ASCII ``[0-9a-z_]``); ``previous`` is the pipeline datamask used
before the compiled pass (Arrow regex tokeniser, SipHash of each distinct word, numpy
n-gram keys, rensa's flat call), kept here to be measured.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from datamask.dedup.kernels import fmix64_array
from datamask.dedup.minhash import SEED, permutations, shingle_keys, signatures

NUM_PERM = 128
NGRAM = 5
_WORD = re.compile(r"[0-9a-z_]+")
_C1 = np.uint64(0x9E3779B97F4A7C15)


def previous_tokens(texts):
    """The previous tokeniser: Arrow lower case and regex, split, SipHash per distinct word."""
    arr = pa.array(texts, type=pa.large_string())
    clean = pc.replace_substring_regex(pc.utf8_lower(arr), r"[^\w]+", " ")
    lists = pc.ascii_split_whitespace(clean)
    offsets = lists.offsets.to_numpy().astype(np.int64)
    words = lists.flatten()
    nonempty = np.asarray(pc.binary_length(words).to_numpy(zero_copy_only=False)) > 0
    doc = np.repeat(np.arange(len(arr)), np.diff(offsets))
    offsets = np.concatenate([[0], np.cumsum(np.bincount(doc[nonempty], minlength=len(arr)))]).astype(np.int64)
    enc = pc.dictionary_encode(words.filter(pa.array(nonempty)))
    vocab = np.asarray(enc.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    return pd.util.hash_array(vocab, hash_key="datamask-dedup-a", categorize=False)[enc.indices.to_numpy()], offsets


def previous_shingles(hashes, offsets):
    """The previous numpy n-gram keys (documents of >= NGRAM words)."""
    counts = np.diff(offsets)
    per_doc = np.maximum(counts - NGRAM + 1, 1) * (counts > 0)
    key_offsets = np.concatenate([[0], np.cumsum(per_doc)]).astype(np.int64)
    doc = np.repeat(np.arange(counts.shape[0]), per_doc)
    starts = np.arange(key_offsets[-1]) - key_offsets[:-1][doc] + offsets[:-1][doc]
    padded = np.concatenate([hashes, np.zeros(NGRAM, np.uint64)])
    acc = np.zeros(starts.shape[0], np.uint64)
    with np.errstate(over="ignore"):
        for k in range(NGRAM):
            acc = acc * _C1 + padded[starts + k]
        return fmix64_array(acc), key_offsets


def numpy_minhash(keys, key_offsets, chunk_docs=500):
    """Vectorised numpy MinHash of flat keys, the same hash as the compiled pass."""
    A, B = permutations(NUM_PERM, SEED)
    n = key_offsets.shape[0] - 1
    out = np.empty((n, NUM_PERM), np.uint32)
    with np.errstate(over="ignore"):
        for lo in range(0, n, chunk_docs):
            hi = min(lo + chunk_docs, n)
            k = keys[key_offsets[lo] : key_offsets[hi]]
            v = k[:, None] * A[None, :] + B[None, :]
            starts = key_offsets[lo:hi] - key_offsets[lo]
            out[lo:hi] = (np.minimum.reduceat(v, starts, axis=0) >> np.uint64(32)).astype(np.uint32)
    return out


def ngram_strings(texts):
    out = []
    for t in texts:
        w = _WORD.findall(t.lower())
        out.append([" ".join(w[i : i + NGRAM]) for i in range(max(len(w) - NGRAM + 1, 1))])
    return out


def _rensa_rows(m):
    return np.array(m.to_rows(), dtype=np.uint32)


def candidates():
    """name -> texts -> (N, NUM_PERM) signatures."""
    import rensa
    from datasketch import MinHash

    def previous(texts):
        k, ko = previous_shingles(*previous_tokens(texts))
        return _rensa_rows(rensa.RMinHash.digest_matrix_from_flat_token_hashes(k, ko.astype(np.uint64), NUM_PERM, SEED))

    def rensa_strings(texts):
        return _rensa_rows(rensa.RMinHash.digest_matrix_from_token_sets(ngram_strings(texts), NUM_PERM, SEED))

    def rensa_cminhash(texts):
        k, ko = shingle_keys(texts, NGRAM)
        lists = [k[a:b].tolist() for a, b in zip(ko[:-1], ko[1:])]
        return np.array(rensa.CMinHash.digests64_from_token_hash_sets(lists, NUM_PERM, SEED), dtype=np.uint64)

    def numba_rensa(texts):
        k, ko = shingle_keys(texts, NGRAM)
        return _rensa_rows(rensa.RMinHash.digest_matrix_from_flat_token_hashes(k, ko.astype(np.uint64), NUM_PERM, SEED))

    def numba_numpy(texts):
        return numpy_minhash(*shingle_keys(texts, NGRAM))

    def numba_one_pass(texts):
        return signatures(texts, NGRAM, NUM_PERM)[0]

    def ds_prehashed(texts):
        k, ko = shingle_keys(texts, NGRAM)
        k32 = (k & np.uint64(0xFFFFFFFF)).astype(np.int64)
        lists = [k32[a:b].tolist() for a, b in zip(ko[:-1], ko[1:])]
        return np.stack([m.hashvalues for m in MinHash.bulk(lists, num_perm=NUM_PERM, seed=SEED, hashfunc=int)])

    def ds_sha1(texts):
        grams = [[s.encode() for s in doc] for doc in ngram_strings(texts)]
        return np.stack([m.hashvalues for m in MinHash.bulk(grams, num_perm=NUM_PERM, seed=SEED)])

    return {
        "compiled one pass (numba: tokens, n-grams, MinHash; chosen)": numba_one_pass,
        "previous: Arrow regex tokens, numpy n-grams, rensa RMinHash flat": previous,
        "compiled n-grams + rensa RMinHash flat": numba_rensa,
        "compiled n-grams + vectorised numpy MinHash": numba_numpy,
        "rensa RMinHash, n-gram strings (Python regex)": rensa_strings,
        "rensa CMinHash, pre-hashed shingle lists": rensa_cminhash,
        "datasketch MinHash, pre-hashed 32-bit shingles": ds_prehashed,
        "datasketch MinHash, n-gram bytes, SHA-1 (its default)": ds_sha1,
    }
