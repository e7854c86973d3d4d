"""The proxy's bfloat16 path on the CPU against float32 -> benchmarks/results/proxy_precision.md

Whether ``precision: auto`` may pick bfloat16 on a CPU with bfloat16 dot products
(``avx512_bf16`` or ``amx_bf16``): the same ``tiny`` models, trained and evaluated as a search
trains them (``train_selection``, one torch thread, the deterministic settings), on the real
text of ``search_corpus.py`` (its input documents; its evaluation set of 300 documents), in
float32 and in bfloat16, side by side. Three selections of the same size that a proxy should
tell apart (documentation only; a uniform sample; the low-information rows first) x ``--seeds``
seeds; the two precisions take turns model by model, so the host's load falls on both alike.

Reported: each model's held-out loss in both precisions and their difference, beside the
seed-to-seed spread and the paired spread of the selections' differences (what a search
compares); whether the selections rank the same; the seconds of the optimiser steps and of the
final evaluation per model in each precision and their ratio.

    python benchmarks/proxy_precision.py --work /work/cache/search
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULT = ROOT / "benchmarks" / "results" / "proxy_precision.md"
PRECISIONS = ("float32", "bfloat16")


def selections(kinds: pd.Series, size: int, seed: int = 0) -> dict:
    """Three row sets of ``size`` rows that a proxy should tell apart."""
    rng = np.random.default_rng(seed)
    docs = np.flatnonzero(kinds.eq("docs").to_numpy())
    low = np.flatnonzero(kinds.eq("low").to_numpy())
    rest = np.setdiff1d(np.arange(len(kinds)), low)
    return {
        "docs": rng.choice(docs, size, replace=False),
        "uniform": rng.choice(len(kinds), size, replace=False),
        "low first": np.concatenate([low, rng.choice(rest, size - len(low), replace=False)])[:size],
    }


def corpus_setup(work: Path, tokens: int) -> tuple:
    """(input rows without the leaks, the resolved ``tiny`` config, tokenizer, evaluation set, token
    ids of every row) of search_corpus.py's text under ``work``: what every proxy benchmark trains on."""
    from datamask.analysis.proxy_lm.config import ProxyLMConfig
    from datamask.analysis.proxy_lm.tokenizer import sample_for_tokenizer, train_bpe
    from datamask.analysis.proxy_lm.train import prepare_eval

    raw = pd.read_parquet(work / "raw" / "corpus.parquet")
    raw = raw[raw["kind"] != "leak"].reset_index(drop=True)
    evtexts = pd.read_parquet(next((work / "eval").glob("*.parquet")))["text"].tolist()
    base = ProxyLMConfig(preset="tiny", tokens=tokens, curve_points=0, threads=1).resolved()
    tok = train_bpe(sample_for_tokenizer([raw["text"].tolist()], base.tokenizer_sample_chars, 0), base.vocab_size)
    ev = prepare_eval("eval", evtexts, None, tok, base.seq_len, base.eval_tokens, 0)
    return raw, base, tok, ev, tok.encode(raw["text"].tolist())


def run_models(work: Path, seeds: int, tokens: int):
    from datamask.analysis.proxy_lm.config import ProxyLMConfig
    from datamask.analysis.proxy_lm.train import deterministic, initial_state, train_selection

    raw, _, tok, ev, ids = corpus_setup(work, tokens)
    sels = selections(raw["kind"], int(0.3 * len(raw)))
    rows = []
    for seed in range(seeds):
        cfg = ProxyLMConfig(preset="tiny", tokens=tokens, curve_points=0, threads=1, seed=seed).resolved()
        init = initial_state(cfg, tok.vocab_size)
        for name, sel in sels.items():
            for precision in PRECISIONS:
                with deterministic(1):
                    res = train_selection(
                        name, [ids[i] for i in sel], tok, cfg, init, [(ev, ev)], "cpu", precision, quiet=True
                    )
                nats, ntok, _ = res["evals"]["eval"]["all"]
                rows.append(
                    dict(
                        seed=seed,
                        selection=name,
                        precision=precision,
                        loss=nats / ntok,
                        train_s=res["train_seconds"],
                        eval_s=res["eval_seconds"],
                    )
                )
                print(rows[-1], flush=True)
    return pd.DataFrame(rows), ev.tokens, int(res["tokens"])


def report(df: pd.DataFrame, eval_tokens: int, trained: int, load0, load1, args) -> str:
    import torch

    from datamask.features.model_files import cpu_has_bf16

    loss = df.pivot_table(index=["selection", "seed"], columns="precision", values="loss")
    diff = (loss["bfloat16"] - loss["float32"]).abs()
    # the paired spread a search compares: the selections' differences, seed by seed
    f32 = loss["float32"].unstack("selection")
    names = list(f32.columns)
    paired = [float(np.std((f32[a] - f32[b]).to_numpy(), ddof=1)) for i, a in enumerate(names) for b in names[i + 1 :]]
    seed_sd = float(np.mean([np.std(f32[n].to_numpy(), ddof=1) for n in names]))
    ranks = {p: " < ".join(loss[p].groupby("selection").mean().sort_values().index.tolist()) for p in PRECISIONS}
    t = df.groupby("precision")[["train_s", "eval_s"]].median()
    out = [
        "# The proxy in bfloat16 on the CPU, against float32",
        "",
        f"Host: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}, bfloat16 dot products (avx512_bf16 or amx_bf16): "
        f"{'yes' if cpu_has_bf16() else 'no'}; load average {load0:.2f} at start, {load1:.2f} at the end. "
        f"Command: `python benchmarks/proxy_precision.py --seeds {args.seeds} --tokens {args.tokens}`.",
        "",
        f"`tiny` proxy, {trained:,} trained tokens per model, one torch thread, deterministic settings; "
        f"evaluation set of {eval_tokens:,} scored tokens (search_corpus.py's). bfloat16 = the matrix "
        "products under autocast, the LM head's three products fused into the loss with bfloat16 operands; "
        "the residual stream, softmax, loss and optimiser in float32.",
        "",
        "| precision | optimiser steps, s per model (median) | final evaluation, s per model (median) |",
        "| --- | --- | --- |",
    ]
    for p in PRECISIONS:
        out.append(f"| {p} | {t.loc[p, 'train_s']:.2f} | {t.loc[p, 'eval_s']:.2f} |")
    out += [
        f"| bfloat16 / float32 | **{t.loc['bfloat16', 'train_s'] / t.loc['float32', 'train_s']:.3f}** "
        f"| **{t.loc['bfloat16', 'eval_s'] / t.loc['float32', 'eval_s']:.3f}** |",
        "",
        "| selection | seed | loss float32 | loss bfloat16 | difference |",
        "| --- | --- | --- | --- | --- |",
    ]
    for (sel, seed), r in loss.iterrows():
        out.append(
            f"| {sel} | {seed} | {r['float32']:.5f} | {r['bfloat16']:.5f} | {r['bfloat16'] - r['float32']:+.5f} |"
        )
    out += [
        "",
        f"- largest |bfloat16 - float32| of a model's loss: **{diff.max():.5f}** nats/token (mean {diff.mean():.5f})",
        f"- seed-to-seed sd of a selection's loss (float32, mean over selections): {seed_sd:.4f}; "
        f"paired sd of two selections' difference: {min(paired):.4f}-{max(paired):.4f}",
        f"- ranking of the selections by mean loss: float32 {ranks['float32']}; bfloat16 {ranks['bfloat16']}"
        f" ({'the same' if ranks['float32'] == ranks['bfloat16'] else 'DIFFERENT'})",
        "",
    ]
    return "\n".join(out)


def proxy_bench_args(argv, doc: str, result: Path, seeds: int, **more) -> tuple:
    """(arguments, load average at start) of a benchmark that trains ``tiny`` proxies on
    search_corpus.py's text (built under ``--work`` when missing): ``--work``, ``--seeds``,
    ``--tokens``, ``--out`` and ``more`` (``--name``: default, an int)."""
    from benchmarks.search_corpus import CACHE, prepare

    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--work", default=str(CACHE))
    ap.add_argument("--seeds", type=int, default=seeds)
    ap.add_argument("--tokens", type=int, default=100_000)
    for name, default in more.items():
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--out", default=str(result))
    args = ap.parse_args(argv)
    prepare(Path(args.work))
    return args, os.getloadavg()[0]


def main(argv=None):
    args, load0 = proxy_bench_args(argv, __doc__, RESULT, seeds=3)
    df, eval_tokens, trained = run_models(Path(args.work), args.seeds, args.tokens)
    text = report(df, eval_tokens, trained, load0, os.getloadavg()[0], args)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
