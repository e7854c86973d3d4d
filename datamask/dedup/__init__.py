"""Duplicate finding: exact, fuzzy (MinHash-LSH) and semantic (docs/design.md, "Deduplication").

Array functions that the ``dedup`` stage maps over partitions, plus
:class:`Deduplicator`, the same algorithm on one in-memory table.

``kernels``    compiled (numba) passes over the text's bytes: exact keys, word n-grams, MinHash
``normalize``  text normalisation, exact keys
``minhash``    MinHash signatures of word n-grams, LSH setting and band keys
``buckets``    per-partition bucket records, signature verification of candidate pairs
``pairs``      bucket pairs, connected components (in memory and by rounds of stars), the kept row
``semantic``   SemDeDup within clusters, sharing the kernel of the SemDeDup method
``deduplicator``  :class:`Deduplicator`
"""

from .deduplicator import KINDS, Deduplicator, parse_kinds
from .minhash import LSHParams, lsh_params

__all__ = ["KINDS", "Deduplicator", "parse_kinds", "LSHParams", "lsh_params"]
