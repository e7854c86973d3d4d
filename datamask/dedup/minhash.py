"""MinHash signatures of word n-grams and LSH band keys (docs/design.md, "Deduplication").

A document's shingles are its word n-grams (``ngram`` consecutive words after lower-casing;
a word is a run of ASCII word characters ``[0-9a-z_]``, everything else separates words;
a document with fewer words than ``ngram`` has one shingle, all its words). Each shingle
gets a 64-bit key from its words' hashes, and the MinHash signature of the set of keys,
``num_perm`` 32-bit minima of one multiply-shift hash per permutation, is computed in one
compiled pass over the text's bytes (:mod:`.kernels`; chosen over rensa, datasketch and
vectorised numpy by the measured comparison in ``benchmarks/dedup.py``). The fraction of
equal positions of two signatures estimates the Jaccard similarity of the two shingle sets.

LSH splits the first ``bands * rows`` positions into ``bands`` bands of ``rows``; two
documents become a candidate pair when all ``rows`` values of some band agree, which
happens with probability ``1 - (1 - J**rows)**bands`` for Jaccard ``J``. Each band is
reduced to one 64-bit key with the band's number mixed in (:func:`band_keys64`, in the
signature pass itself), so equal bands meet in a shuffle or a sort on the key; a candidate
is verified on its signatures (:func:`similar`), so a chance collision costs a check.

:func:`lsh_params` checks a setting and, without ``bands``, chooses the band shape from
the Jaccard threshold: the largest ``rows`` (fewest chance candidates) for which a pair
at the threshold still becomes a candidate with probability at least
``CANDIDATE_RECALL``. Candidates are then kept only when their signature estimate
reaches the threshold (:func:`jaccard_estimate`), so the threshold means what it says.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow.compute as pc

from ..errors import ConfigError
from .kernels import EMPTY, fmix64_array, shingle_kernel, signature_kernel
from .normalize import as_string_array, utf8_buffers

__all__ = [
    "CANDIDATE_RECALL",
    "SEED",
    "LSHParams",
    "lsh_params",
    "candidate_probability",
    "permutations",
    "shingle_keys",
    "signatures",
    "band_keys64",
    "jaccard_estimate",
    "similar",
]

CANDIDATE_RECALL = 0.99
SEED = 42  # the permutations' seed: every worker and every split hashes alike
_C1 = np.uint64(0x9E3779B97F4A7C15)
_C2 = np.uint64(0xC2B2AE3D27D4EB4F)


@dataclass(frozen=True)
class LSHParams:
    """Checked MinHash-LSH setting.

    Attributes
    ----------
    ngram : int
        Words per shingle.
    num_perm : int
        Signature length.
    bands, rows : int
        LSH band shape; ``bands * rows <= num_perm``.
    threshold : float
        Jaccard estimate a candidate pair must reach to count as duplicates.
    """

    ngram: int
    num_perm: int
    bands: int
    rows: int
    threshold: float

    def candidate_probability(self, jaccard):
        """Probability that a pair at Jaccard ``jaccard`` shares at least one band."""
        return candidate_probability(jaccard, self.bands, self.rows)


def candidate_probability(jaccard, bands: int, rows: int):
    """``1 - (1 - J**rows)**bands`` (array in, array out)."""
    j = np.asarray(jaccard, dtype=np.float64)
    return 1.0 - (1.0 - j**rows) ** bands


def lsh_params(ngram: int = 5, num_perm: int = 128, bands: int | None = None, threshold: float = 0.7) -> LSHParams:
    """Check a MinHash-LSH setting and fill in the band shape.

    Parameters
    ----------
    ngram : int
        Words per shingle, ``>= 1``.
    num_perm : int
        Signature length, ``>= 1``.
    bands : int, optional
        Number of bands; must divide ``num_perm`` (``rows = num_perm / bands``). Default:
        chosen from ``threshold`` (module doc).
    threshold : float
        Jaccard threshold in ``(0, 1]`` (1: identical shingle sets only).

    Returns
    -------
    LSHParams

    Raises
    ------
    ConfigError
        One line naming the option and the fix.
    """
    if isinstance(ngram, bool) or int(ngram) != ngram or ngram < 1:
        raise ConfigError(f"--ngram must be an integer >= 1, got {ngram!r}")
    if isinstance(num_perm, bool) or int(num_perm) != num_perm or num_perm < 1:
        raise ConfigError(f"--num-perm must be an integer >= 1, got {num_perm!r}")
    threshold = float(threshold)
    if not 0.0 < threshold <= 1.0:
        raise ConfigError(
            f"--threshold is a Jaccard similarity in (0, 1], got {threshold!r}; use e.g. 0.7 (the default)"
        )
    ngram, num_perm = int(ngram), int(num_perm)
    if bands is not None:
        if isinstance(bands, bool) or int(bands) != bands or bands < 1:
            raise ConfigError(f"--bands must be an integer >= 1, got {bands!r}")
        bands = int(bands)
        if bands > num_perm or num_perm % bands:
            divisors = [d for d in range(2, num_perm) if num_perm % d == 0][:8]
            raise ConfigError(
                f"--bands {bands} with --num-perm {num_perm}: bands x rows must equal num_perm, so bands must "
                f"divide it; use one of {divisors or [1]} or change --num-perm"
            )
        return LSHParams(ngram, num_perm, bands, num_perm // bands, threshold)
    rows = 1
    for r in range(1, num_perm + 1):
        if candidate_probability(threshold, num_perm // r, r) >= CANDIDATE_RECALL:
            rows = r
    return LSHParams(ngram, num_perm, num_perm // rows, rows, threshold)


@lru_cache(maxsize=8)
def permutations(num_perm: int, seed: int = SEED):
    """The ``num_perm`` hash permutations ``(A, B)`` (uint64; ``A`` odd) of ``seed``."""
    rng = np.random.default_rng(int(seed))
    A = rng.integers(0, np.iinfo(np.uint64).max, size=int(num_perm), dtype=np.uint64, endpoint=True) | np.uint64(1)
    B = rng.integers(0, np.iinfo(np.uint64).max, size=int(num_perm), dtype=np.uint64, endpoint=True)
    A.flags.writeable = B.flags.writeable = False
    return A, B


def _lowered(texts):
    arr = as_string_array(texts)
    valid = ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return pc.utf8_lower(pc.fill_null(arr, "") if arr.null_count else arr), valid


def shingle_keys(texts, ngram: int):
    """64-bit key of every word n-gram of each text (the sets the signatures sample).

    Parameters
    ----------
    texts : array-like of str or None
    ngram : int

    Returns
    -------
    keys : (K,) uint64 ndarray
        The n-gram keys, documents concatenated in order: ``max(words - ngram + 1, 1)``
        per document with at least one word (a shorter document's one shingle holds all
        its words), none for a document without words (or a null one).
    key_offsets : (N + 1,) int64 ndarray
    """
    low, _ = _lowered(texts)
    data, offsets = utf8_buffers(low)
    return shingle_kernel(data, offsets, int(ngram))


def signatures(texts, ngram: int = 5, num_perm: int = 128, seed: int = SEED, bands: int = 0, rows: int = 0):
    """MinHash signatures of the texts' word n-grams.

    Parameters
    ----------
    texts : array-like of str or None
    ngram, num_perm : int
    seed : int
        The permutations' seed; equal seeds give comparable signatures.
    bands, rows : int
        With ``bands``: also return the LSH band keys (:func:`band_keys64`), computed in
        the same pass.

    Returns
    -------
    sig : (N, num_perm) uint32 ndarray
    has_shingles : (N,) bool ndarray
        False for a null text or one with no word (its signature is meaningless and it
        must not be grouped).
    band_keys : (N, bands) uint64 ndarray
        Only with ``bands``.
    """
    low, valid = _lowered(texts)
    data, offsets = utf8_buffers(low)
    A, B = permutations(int(num_perm), int(seed))
    if bands and bands * rows > num_perm:
        raise ConfigError(f"bands x rows = {bands * rows} exceeds the signature length {num_perm}")
    sig, count, bkeys = signature_kernel(data, offsets, int(ngram), A, B, int(bands), int(rows))
    has = valid & (count > 0)
    sig[~has] = EMPTY
    return (sig, has, bkeys) if bands else (sig, has)


def band_keys64(sig, bands: int, rows: int):
    """``(N, bands)`` uint64: one 64-bit key per band of each signature, the band's number
    mixed in, so that equal keys mean equal bands of the same number (different bands
    collide with probability ~2**-64, and a candidate pair is verified on its signatures)."""
    sig = np.asarray(sig, dtype=np.uint32)
    n = sig.shape[0]
    if bands * rows > sig.shape[1]:
        raise ConfigError(f"bands x rows = {bands * rows} exceeds the signature length {sig.shape[1]}")
    B = sig[:, : bands * rows].reshape(n, bands, rows).astype(np.uint64)
    with np.errstate(over="ignore"):
        acc = np.broadcast_to(np.arange(bands, dtype=np.uint64) * _C2 + np.uint64(rows), (n, bands)).copy()
        for j in range(rows):
            acc = fmix64_array(acc * _C1 + B[:, :, j])
    return acc


def jaccard_estimate(sig_a, sig_b):
    """Share of equal signature positions, row by row: the MinHash Jaccard estimate."""
    a, b = np.asarray(sig_a), np.asarray(sig_b)
    return (a == b).mean(axis=-1)


def similar(sig_a, sig_b, threshold: float, rows_a=None, rows_b=None, chunk: int = 65_536) -> np.ndarray:
    """(P,) bool: the pairs of signatures whose :func:`jaccard_estimate` reaches ``threshold``
    (the check that keeps an LSH candidate): pair ``i`` is ``sig_a[rows_a[i]]`` and
    ``sig_b[rows_b[i]]`` (row ``i`` of each where no rows are given), compared ``chunk`` pairs
    at a time so the comparison's memory stays bounded."""
    n = (sig_a if rows_a is None else rows_a).shape[0]
    ok = np.zeros(n, dtype=bool)
    for s in range(0, n, chunk):
        x = sig_a[s : s + chunk] if rows_a is None else sig_a[rows_a[s : s + chunk]]
        y = sig_b[s : s + chunk] if rows_b is None else sig_b[rows_b[s : s + chunk]]
        ok[s : s + chunk] = jaccard_estimate(x, y) >= threshold
    return ok
