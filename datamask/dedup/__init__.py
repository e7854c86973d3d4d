"""Duplicate finding: exact, fuzzy (MinHash-LSH) and semantic (docs/design.md, "Deduplication").

Every step once, as array functions: the ``dedup`` stage runs them out of core over files,
:class:`Deduplicator` on one in-memory table and ``datamask.dask.dedup`` over a Dask
DataFrame.

``kernels``    compiled (numba) passes over the text's bytes: exact keys, word n-grams, MinHash
``normalize``  the text and quality columns as every path reads them, normalisation, exact keys
``minhash``    MinHash signatures of word n-grams, LSH setting and band keys, the signature check
``buckets``    bucket records of a batch, the pairs of a partition of them, candidates verified
``pairs``      document numbers, exact stars, band pairs, connected components (in memory and one
               round of stars), the kept row and the kind that removed each other member
``semantic``   SemDeDup within clusters, sharing the kernel of the SemDeDup method
``deduplicator``  :class:`Deduplicator`, the in-memory groups, the drop/mark step of the front ends
"""

from .deduplicator import KINDS, Deduplicator, parse_kinds
from .minhash import LSHParams, lsh_params

__all__ = ["KINDS", "Deduplicator", "parse_kinds", "LSHParams", "lsh_params"]
