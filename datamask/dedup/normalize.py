"""Text normalisation, exact-duplicate keys and word tokens, vectorised with Arrow.

Two normalisations, one per kind of duplicate:

``normalize_exact``
    Case folded (Unicode lower case) and whitespace folded (every run of whitespace is one
    space, none at either end). Punctuation and everything else is kept, so two texts
    are exact duplicates when they differ only in case and spacing.
``word_tokens``
    For MinHash: lower case, punctuation removed (every run of characters that are
    neither word characters nor whitespace becomes a space), split on whitespace. Each
    word is hashed once per distinct word (pandas' SipHash, ``pd.util.hash_array``), so
    the result is a flat ``uint64`` array plus row offsets, which the MinHash step turns
    into n-gram keys without building a Python string per n-gram.

Null texts are reported in a mask and never get a key: the dedup stage keeps and counts
them and never puts them in a group.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["as_string_array", "normalize_exact", "exact_keys", "word_tokens"]

# Two fixed 16-character SipHash keys: a 128-bit exact key is two independent 64-bit
# hashes of the same normalised text (a 64-bit key would expect one false collision per
# ~4 billion documents squared / 2**64, i.e. a few at corpus scale).
_KEY_A = "datamask-dedup-a"
_KEY_B = "datamask-dedup-b"


def as_string_array(texts) -> pa.Array:
    """``texts`` (Arrow array or chunked array, pandas Series, list) as one Arrow
    ``large_string`` array; nulls stay null."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
    elif isinstance(texts, pd.Series):
        texts = pa.array(texts.astype(object).where(texts.notna(), None).tolist(), type=pa.large_string())
    elif not isinstance(texts, pa.Array):
        texts = pa.array(list(texts), type=pa.large_string())
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        raise TypeError(f"texts must be strings, got Arrow type {texts.type}")
    return texts.cast(pa.large_string())


def normalize_exact(texts) -> pa.Array:
    """Case- and whitespace-folded texts (module doc); nulls stay null.

    Examples
    --------
    >>> normalize_exact(["  Hello\\n  WORLD ", None]).to_pylist()
    ['hello world', None]
    """
    arr = as_string_array(texts)
    low = pc.utf8_lower(arr)
    spaced = pc.replace_substring_regex(low, r"\s+", " ")
    return pc.utf8_trim_whitespace(spaced)


def exact_keys(texts):
    """128-bit key of each normalised text.

    Parameters
    ----------
    texts : array-like of str or None

    Returns
    -------
    keys : (N, 2) uint64 ndarray
        Two independent SipHash values of :func:`normalize_exact`'s output; rows of null
        texts are 0.
    valid : (N,) bool ndarray
        False for null texts.
    """
    norm = normalize_exact(texts)
    valid = ~np.asarray(norm.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    keys = np.zeros((len(norm), 2), dtype=np.uint64)
    if valid.any():
        vals = np.asarray(norm.filter(pa.array(valid)).to_numpy(zero_copy_only=False), dtype=object)
        keys[valid, 0] = pd.util.hash_array(vals, hash_key=_KEY_A, categorize=False)
        keys[valid, 1] = pd.util.hash_array(vals, hash_key=_KEY_B, categorize=False)
    return keys, valid


def word_tokens(texts):
    """Hashed words of each text, for MinHash shingles.

    Parameters
    ----------
    texts : array-like of str or None

    Returns
    -------
    hashes : (W,) uint64 ndarray
        One SipHash per word, all texts concatenated in order.
    offsets : (N + 1,) int64 ndarray
        Text ``i``'s words are ``hashes[offsets[i]:offsets[i + 1]]`` (none for a null or
        punctuation-only text).
    valid : (N,) bool ndarray
        False for null texts.
    """
    arr = as_string_array(texts)
    valid = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    low = pc.utf8_lower(pc.fill_null(arr, ""))
    # every run of non-word characters (punctuation and any whitespace) becomes one ASCII
    # space, so the cheaper ASCII whitespace split is exact; Arrow's split leaves an empty
    # string at a leading or trailing space (and for an empty text): those are dropped
    clean = pc.replace_substring_regex(low, r"[^\w]+", " ")
    lists = pc.ascii_split_whitespace(clean)
    offsets = lists.offsets.to_numpy().astype(np.int64)
    offsets = offsets - offsets[0]
    words = lists.flatten()
    nonempty = np.asarray(pc.binary_length(words).to_numpy(zero_copy_only=False)) > 0
    if not nonempty.all():
        doc = np.repeat(np.arange(len(arr)), np.diff(offsets))
        counts = np.bincount(doc[nonempty], minlength=len(arr))
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        words = words.filter(pa.array(nonempty))
    if len(words) == 0:
        return np.zeros(0, dtype=np.uint64), offsets, valid
    enc = pc.dictionary_encode(words)
    vocab = np.asarray(enc.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    vocab_hash = pd.util.hash_array(vocab, hash_key=_KEY_A, categorize=False)
    return vocab_hash[enc.indices.to_numpy()], offsets, valid
