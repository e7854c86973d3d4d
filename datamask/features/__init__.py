"""Features from raw text: embeddings and quality scores, one partition at a time.

Modules (one concern each; GPU and model imports are lazy):

- :mod:`.text` - reading and validating the text column, ``n_tokens``;
- :mod:`.embed` - sentence-transformers embeddings (:class:`Embedder`, :func:`embed_partition`);
- :mod:`.heuristics` - rule-based text-quality scores mapped to [0, 1];
- :mod:`.fasttext_quality` - train and apply a DCLM-style fastText quality classifier;
- :mod:`.aggregate` - corpus statistics, normalisation, weighted sums, bins -> ``quality``.
"""
