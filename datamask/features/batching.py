"""Batches that keep the model busy: length-sorted, tokenized ahead, sized for the device.

:func:`encode_ahead` is the loop :class:`~datamask.features.embed.Embedder` runs its model
with, on CPU and CUDA alike:

1. texts are ordered longest first (characters, as sentence-transformers does), so a batch
   pads to nearly its own length; the vectors are put back in the input order at the end;
2. a small thread pool tokenizes the next batches (the model's own ``preprocess``, so the
   tokens are exactly those of ``model.encode``) while the model runs the current one; on
   CUDA the token tensors are pinned and copied without blocking, and the vectors stay on the
   GPU until the last batch, so the host never waits for the device between batches;
3. a text is tokenized only as far as the model reads it: it is first cut after as many
   whitespace-separated words as the model has token positions (:func:`word_cut`; every word
   of a whitespace-delimited text is at least one token, so the tokens the model keeps are
   unchanged), and a cut text that then fills fewer positions than the window (words that
   make no token, such as zero-width characters) is tokenized again whole. A 10,000-word
   document no longer costs 40 times its 256-token window in tokenization;
4. the batch size is the configured one, or on CUDA (:func:`cuda_batch_size`) the largest
   power of two whose activations fit in half the free GPU memory (:func:`choose_batch_size`),
   up to 4,096.

The vectors equal those of the plain ``model.encode`` up to floating-point noise
(``tests/features/test_batching.py``: within 1e-5 on CPU).
"""

from __future__ import annotations

import itertools
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

__all__ = [
    "length_order",
    "encode_blocks",
    "PROGRESS_BLOCK",
    "batches",
    "word_cut",
    "activation_bytes",
    "choose_batch_size",
    "cuda_batch_size",
    "encode_ahead",
    "CPU_BATCH",
    "MAX_BATCH",
]

CPU_BATCH = 32  # texts per forward pass on CPU (the configured default)
MAX_BATCH = 4096  # the most texts per forward pass chosen on CUDA


def length_order(texts) -> np.ndarray:
    """Indices of ``texts``, longest first; ties keep their input order."""
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    return np.argsort(-lengths, kind="stable")


def batches(order: np.ndarray, size: int) -> list:
    """``order`` cut into consecutive batches of at most ``size`` indices."""
    size = max(1, int(size))
    return [order[i : i + size] for i in range(0, len(order), size)]


def word_cut(text: str, n_words: int) -> str:
    """``text`` up to the whitespace after its first ``n_words`` words (whole if it has fewer)."""
    if len(text) <= 2 * n_words:  # a word and a separator take two characters at least
        return text
    parts = text.split(None, n_words)
    if len(parts) <= n_words:
        return text
    return text[: len(text) - len(parts[-1])]


def activation_bytes(max_len: int, hidden: int, intermediate: int, heads: int, bytes_per: int = 2) -> int:
    """Peak activation bytes of one text in one transformer layer at inference: hidden states
    in and out, Q/K/V and context (6 L H), the feed-forward layer and its activation (2 L I),
    attention scores and probabilities (2 A L^2). Layers run one after another, so one
    layer's activations are the peak (with no attention kernel that skips the L^2 matrix)."""
    L = int(max_len)
    return int((6 * L * hidden + 2 * L * intermediate + 2 * heads * L * L) * bytes_per)


def choose_batch_size(
    free_bytes: int, per_text_bytes: int, share: float = 0.5, floor: int = CPU_BATCH, cap: int = MAX_BATCH
) -> int:
    """The largest power of two ``b`` with ``b * per_text_bytes <= share * free_bytes``,
    within ``[floor, cap]``."""
    fit = int(share * max(0, int(free_bytes)) // max(1, int(per_text_bytes)))
    b = 1 << max(0, fit.bit_length() - 1) if fit >= 1 else 1
    return int(min(cap, max(floor, b)))


def cuda_batch_size(model, max_len: int, bytes_per: int = 2) -> int:
    """Texts per forward pass for ``model`` on its CUDA device, from the free memory there."""
    import torch

    free, _ = torch.cuda.mem_get_info(model.device)
    try:
        c = model[0].auto_model.config
        per = activation_bytes(max_len, c.hidden_size, c.intermediate_size, c.num_attention_heads, bytes_per)
    except (AttributeError, IndexError, TypeError, KeyError):
        per = activation_bytes(max_len, 1024, 4096, 16, bytes_per)  # a large model's, to be safe
    return choose_batch_size(free, per)


def _tensors_to(feats: dict, device, non_blocking: bool) -> dict:
    import torch

    return {k: v.to(device, non_blocking=non_blocking) if isinstance(v, torch.Tensor) else v for k, v in feats.items()}


def encode_ahead(model, texts: list, batch_size: int, threads: int = 2) -> np.ndarray:
    """``model``'s ``sentence_embedding`` of every text, float32, in the input order (not
    normalised), with tokenization ``threads`` batches ahead of the model (see module doc)."""
    import torch

    n = len(texts)
    parts = batches(length_order(texts), batch_size)
    device = model.device
    cuda = device.type == "cuda"
    tokenize = getattr(model, "preprocess", None) or model.tokenize

    window = getattr(model, "max_seq_length", None)  # token positions, special tokens included

    def prepare(idx):
        batch = [texts[i] for i in idx]
        cut = [word_cut(t, window) for t in batch] if window else batch
        feats = tokenize(cut)
        was_cut = [j for j, (a, b) in enumerate(zip(cut, batch)) if a is not b]
        mask = feats.get("attention_mask")
        if was_cut and mask is not None:
            # a cut text that fills fewer positions than the window had words that made no
            # token, so the cut may have dropped tokens the model would read: tokenize it whole
            filled = mask[was_cut].sum(dim=1).tolist()
            again = [j for j, f in zip(was_cut, filled) if f < window]
            if again:
                for j in again:
                    cut[j] = batch[j]
                feats = tokenize(cut)
        if cuda:
            feats = {k: v.pin_memory() if isinstance(v, torch.Tensor) else v for k, v in feats.items()}
        return feats

    out = None
    it = iter(parts)
    with (
        ThreadPoolExecutor(max_workers=max(1, int(threads)), thread_name_prefix="tokenize") as pool,
        torch.inference_mode(),
    ):
        first = next(it, None)
        # the first batch on this thread: the tokenizer's padding/truncation settings are set
        # once here, so the pool's threads only read them
        queue = deque([(first, prepare(first))] if first is not None else [])
        for idx in itertools.islice(it, 2 * max(1, int(threads))):
            queue.append((idx, pool.submit(prepare, idx)))
        while queue:
            idx, fut = queue.popleft()
            nxt = next(it, None)
            if nxt is not None:
                queue.append((nxt, pool.submit(prepare, nxt)))
            feats = fut.result() if isinstance(fut, Future) else fut
            emb = model(_tensors_to(feats, device, cuda))["sentence_embedding"]
            if out is None:
                out = torch.empty((n, emb.shape[1]), dtype=torch.float32, device=device)
            out[torch.as_tensor(idx, device=device)] = emb.float()
    return out.cpu().numpy() if out is not None else np.zeros((0, 0), dtype=np.float32)


PROGRESS_BLOCK = 512  # texts per encode call when progress is reported (x8 on a GPU)


def encode_blocks(embedder, texts, progress):
    """``embedder.encode(texts)``, a block at a time with ``progress(done)`` after each."""
    if not texts or progress is None:
        return embedder.encode(texts) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
    block = PROGRESS_BLOCK * (8 if embedder.resolved_device() == "cuda" else 1)
    parts = []
    for i in range(0, len(texts), block):
        parts.append(embedder.encode(texts[i : i + block]))
        progress(i + len(parts[-1]))
    return np.concatenate(parts)
