"""The proxy model, its token stream and its learning-rate schedule.

The model is a ``transformers`` LLaMA-style decoder (RMSNorm, rotary positions, SwiGLU, tied
embeddings) built from a config with random initial weights from a fixed seed: nothing is
downloaded. It was chosen over a hand-written torch decoder and a GPT-2 config because it
was no slower on CPU at the ``tiny`` size and brings SDPA attention and bf16 on CUDA with no
code of ours (CHANGELOG.md, 0.2.0; the throughput of the presets is in
benchmarks/results/proxy_lm.md).

torch and transformers are imported inside the functions (``import datamask`` stays light).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["build_model", "count_params", "TokenStream", "lr_at"]


def build_model(cfg, vocab_size: int):
    """A randomly initialised causal LM of ``cfg``'s size (``cfg`` resolved), seeded by ``cfg.seed``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # no "model config" chatter on every build
    conf = LlamaConfig(
        vocab_size=int(vocab_size),
        hidden_size=int(cfg.d_model),
        intermediate_size=int(cfg.d_ff),
        num_hidden_layers=int(cfg.n_layers),
        num_attention_heads=int(cfg.n_heads),
        num_key_value_heads=int(cfg.n_heads),
        max_position_embeddings=int(cfg.seq_len) + 1,
        tie_word_embeddings=True,
        attention_dropout=0.0,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
        use_cache=False,
        attn_implementation="sdpa",
    )
    torch.manual_seed(int(cfg.seed))
    return LlamaForCausalLM(conf)


def count_params(model) -> int:
    """Distinct parameters (tied embeddings counted once)."""
    return int(sum(p.numel() for p in {id(p): p for p in model.parameters()}.values()))


class TokenStream:
    """One selection's documents as an endless token stream, epoch after epoch.

    Each document is followed by the end-of-text id; every epoch visits the documents in a
    new seeded order, so a selection smaller than the token budget is repeated whole.
    :meth:`take` returns the next ``n`` tokens and :attr:`tokens_read` counts them.

    Parameters
    ----------
    docs : list of int arrays — token ids of each document (no end-of-text)
    eos_id : int
    seed : int
    """

    def __init__(self, docs, eos_id: int, seed: int):
        lens = np.fromiter((len(d) + 1 for d in docs), dtype=np.int64, count=len(docs))
        self.flat = np.empty(int(lens.sum()), dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
        self.lens = lens
        for s, d in zip(self.starts, docs):
            self.flat[s : s + len(d)] = d
            self.flat[s + len(d)] = eos_id
        self.seed = int(seed)
        self.epoch = -1
        self.tokens_read = 0
        self._buf = np.empty(0, dtype=np.int64)

    @property
    def n_tokens(self) -> int:
        """Tokens in one pass over the documents (end-of-text ids included)."""
        return int(self.flat.shape[0])

    def _next_epoch(self) -> np.ndarray:
        self.epoch += 1
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.lens))
        idx = np.concatenate([np.arange(self.starts[i], self.starts[i] + self.lens[i]) for i in order])
        return self.flat[idx]

    def take(self, n: int) -> np.ndarray:
        parts, have = [self._buf], self._buf.shape[0]
        while have < n:
            e = self._next_epoch()
            parts.append(e)
            have += e.shape[0]
        buf = np.concatenate(parts)
        self._buf = buf[n:]
        self.tokens_read += n
        return buf[:n]

    @property
    def epochs(self) -> float:
        """Passes over the selection read so far."""
        return self.tokens_read / self.n_tokens


def lr_at(step: int, steps: int, lr: float, warmup: float, min_lr_ratio: float) -> float:
    """Linear warm-up over ``warmup x steps`` steps, then cosine decay to ``min_lr_ratio x lr``."""
    w = max(1, int(round(warmup * steps))) if warmup > 0 else 0
    if step < w:
        return lr * (step + 1) / w
    t = (step - w) / max(1, steps - w)
    return lr * (min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))
