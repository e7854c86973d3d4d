"""Duplicate finding: exact, fuzzy (MinHash-LSH) and semantic (docs/design.md, "Deduplication").

Array functions that the ``dedup`` stage maps over partitions, plus
:class:`Deduplicator`, the same algorithm on one in-memory table.

``normalize``  text normalisation, exact keys, hashed word tokens
``minhash``    MinHash signatures of word n-grams (rensa), LSH setting and band keys
``buckets``    per-partition bucket records, signature verification of candidate pairs
``pairs``      bucket pairs, connected components, the kept row of a group
``semantic``   SemDeDup within clusters, sharing the kernel of the SemDeDup method
``deduplicator``  :class:`Deduplicator`
"""

from .deduplicator import KINDS, Deduplicator, parse_kinds
from .minhash import LSHParams, lsh_params

__all__ = ["KINDS", "Deduplicator", "parse_kinds", "LSHParams", "lsh_params"]
