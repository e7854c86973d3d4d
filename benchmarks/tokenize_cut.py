"""Tokenization cost of the embedding loop, with and without the word cut (one thread).

``encode_ahead`` cuts each text after as many whitespace-separated words as the model has
token positions before tokenizing it (``datamask.features.batching.word_cut``). This measures
what that saves, side by side in one run: texts/s of MiniLM's own ``preprocess`` on batches
of 256 generated texts of 12, 400 and 4,000 words, whole and cut, on one thread
(``TOKENIZERS_PARALLELISM=false``), and checks that both give the same token ids.

    python benchmarks/tokenize_cut.py      # -> benchmarks/results/tokenize.md (about a minute)
"""

from __future__ import annotations

import os

os.environ["TOKENIZERS_PARALLELISM"] = "false"

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from datamask.features.batching import word_cut  # noqa: E402
from datamask.features.embed import Embedder  # noqa: E402

VOCAB = [
    "data",
    "selection,",
    "quality",
    "diverse",
    "model.",
    "training",
    "corpus",
    "tokenization",
    "the",
    "of",
    "and",
    "language",
    "pre-training",
    "documents",
]


def texts(n, words, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(VOCAB, size=words)) for _ in range(n)]


def rate(tokenize, batches, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for b in batches:
            tokenize(b)
        best = min(best, time.perf_counter() - t)
    return sum(len(b) for b in batches) / best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = ap.parse_args()
    model = Embedder(device="cpu", compute="float32").load()
    window = model.max_seq_length
    rows = []
    for words, n in ((12, 4096), (400, 512), (4000, 128)):
        whole = texts(n, words, seed=words)
        cut = [word_cut(t, window) for t in whole]
        a, b = model.preprocess(whole[:64]), model.preprocess(cut[:64])
        same = bool((a["input_ids"] == b["input_ids"]).all())
        r_whole = rate(model.preprocess, [whole[i : i + 256] for i in range(0, n, 256)])
        r_cut = rate(
            lambda bt: model.preprocess([word_cut(t, window) for t in bt]),
            [whole[i : i + 256] for i in range(0, n, 256)],
        )
        rows.append((words, r_whole, r_cut, same))
        print(words, f"{r_whole:,.0f}/s whole, {r_cut:,.0f}/s cut, same ids: {same}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "tokenize.md")
    with open(path, "w") as f:
        f.write("# Tokenization with and without the word cut (one thread)\n\n")
        f.write(
            f"`python benchmarks/tokenize_cut.py`: MiniLM's tokenizer (`preprocess`, {window}-token window), "
            f"batches of 256 generated texts, best of 3, `TOKENIZERS_PARALLELISM=false`; "
            f"{platform.machine()}, {os.cpu_count()} cores (shared host: read the ratios). The cut time "
            "includes `word_cut` itself.\n\n"
        )
        f.write("| words per text | texts/s, whole | texts/s, cut | cut / whole | same token ids |\n")
        f.write("|---|---|---|---|---|\n")
        for words, a, b, same in rows:
            f.write(f"| {words:,} | {a:,.0f} | {b:,.0f} | {b / a:.2f}x | {'yes' if same else 'NO'} |\n")
    print(path)


if __name__ == "__main__":
    main()
