"""A stand-in embedding of text for tests that need one quickly: hashed words, randomly
projected, unit norm (fast and deterministic; no model)."""

from __future__ import annotations

import numpy as np

__all__ = ["hashed_embeddings"]


def hashed_embeddings(texts, d: int = 32) -> np.ndarray:
    from sklearn.feature_extraction.text import HashingVectorizer

    X = HashingVectorizer(n_features=512, alternate_sign=False).transform(list(texts)).toarray()
    E = X @ np.random.default_rng(0).normal(size=(512, d))
    return (E / np.linalg.norm(E, axis=1, keepdims=True)).astype(np.float32)
