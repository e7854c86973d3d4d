"""Features from raw text: embeddings and quality scores, one partition at a time.

Modules (one concern each; GPU and model imports are lazy):

- :mod:`.text` - reading and validating the text column, ``n_tokens``;
- :mod:`.embed` - sentence-transformers embeddings (:class:`Embedder`, :func:`embed_frame`);
- :mod:`.backends` - the same model's forward pass in ONNX Runtime or OpenVINO (exported once);
- :mod:`.static` - a static model distilled with model2vec (``model="static"``);
- :mod:`.model_cache`, :mod:`.model_files` - where exports are cached; what a model folder says;
- :mod:`.heuristics` - rule-based text-quality scores mapped to [0, 1];
- :mod:`.fasttext_quality` - train and apply a DCLM-style fastText quality classifier;
- :mod:`.aggregate` - corpus statistics, normalisation, weighted sums, bins -> ``quality``;
- :mod:`.score` - the per-partition half of the score stage (components + ``n_tokens``).

Importing this package is light: torch, sentence-transformers and fastText load only when
a model is first used.
"""

from .aggregate import (
    ColumnStats,
    aggregate_frame,
    check_score_columns,
    compute_stats,
    parse_weights,
)
from .embed import Embedder, embed_frame, embedding_meta, embedding_type
from .fasttext_quality import FastTextScorer, train_quality
from .heuristics import HEURISTICS, heuristic_scores, score_heuristics_frame
from .score import components_meta, count_unusable, score_components_frame
from .text import add_n_tokens, count_tokens, get_texts

__all__ = [
    "ColumnStats",
    "aggregate_frame",
    "check_score_columns",
    "compute_stats",
    "parse_weights",
    "Embedder",
    "embed_frame",
    "embedding_meta",
    "embedding_type",
    "FastTextScorer",
    "train_quality",
    "HEURISTICS",
    "heuristic_scores",
    "score_heuristics_frame",
    "components_meta",
    "count_unusable",
    "score_components_frame",
    "add_n_tokens",
    "count_tokens",
    "get_texts",
]
