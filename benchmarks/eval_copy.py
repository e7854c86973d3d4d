"""The proxy's bfloat16 evaluation on the CPU: autocast against a bfloat16 copy -> benchmarks/results/eval_copy.md

Since round 10 ``evaluate`` scores a CPU model in bfloat16 as a bfloat16 copy of it (weights
cast once, no autocast) instead of under autocast (the activations cast at every product). This
measures both on the same trained ``tiny`` models, the way a search's worker runs them (one torch
thread, the deterministic settings, inside ``large_blocks`` with a Dask nanny's
``MALLOC_TRIM_THRESHOLD_``): the models are trained in bfloat16 as a search trains them on three
selections of ``search_corpus.py``'s real text (proxy_precision.py's) x ``--seeds`` seeds, then
each is scored on the 300-document evaluation set by the two paths in turn, ``--repeats``
times, so the host's load falls on both alike.

Reported: each model's held-out loss by both paths and their difference; the seconds of an
evaluation by each path (median over models and repeats) and their ratio.

    MALLOC_TRIM_THRESHOLD_=65536 python benchmarks/eval_copy.py --work /work/cache/search
"""

from __future__ import annotations

import functools
import os
import platform
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULT = ROOT / "benchmarks" / "results" / "eval_copy.md"


def autocast_evaluate(model, ev, batch_size):
    """The evaluation before round 10: the float32 model under bfloat16 autocast (``evaluate`` in
    float32 adds no autocast and no copy of its own)."""
    import torch

    from datamask.analysis.proxy_lm.train import evaluate

    with torch.autocast("cpu", dtype=torch.bfloat16):
        return evaluate(model, ev, "cpu", "float32", batch_size)


def trained_models(work: Path, seeds: int, tokens: int):
    """(name, seed, model) of ``tiny`` models trained in bfloat16 as a search's worker trains them."""
    from benchmarks.proxy_precision import corpus_setup, selections
    from datamask.analysis.proxy_lm import train as T
    from datamask.analysis.proxy_lm.config import ProxyLMConfig
    from datamask.analysis.proxy_lm.head_loss import fused_forward_loss
    from datamask.analysis.proxy_lm.model import TokenStream, build_model
    from datamask.core.heap import large_blocks

    raw, base, tok, ev, ids = corpus_setup(work, tokens)

    class Quiet:
        def update(self, n):
            pass

        def set_postfix(self, **kw):
            pass

    models = []
    for seed in range(seeds):
        cfg = ProxyLMConfig(preset="tiny", tokens=tokens, curve_points=0, threads=1, seed=seed).resolved()
        init = T.initial_state(cfg, tok.vocab_size)
        for name, sel in selections(raw["kind"], int(0.3 * len(raw))).items():
            with T.deterministic(1), large_blocks():
                model = build_model(cfg, tok.vocab_size)
                model.load_state_dict(init)
                opt = T._optimizer(model, cfg)
                stream = TokenStream([ids[i] for i in sel], tok.eos_id, cfg.seed)
                loss = functools.partial(fused_forward_loss, model, precision="bfloat16")
                T._train_loop(
                    model, opt, stream, cfg.steps_for(stream.n_tokens), cfg, [], "cpu", "bfloat16", Quiet(), loss
                )
            models.append((name, seed, model))
            print("trained", name, seed, flush=True)
    return models, ev, 2 * int(base.batch_size)


def measure(models, ev, batch_size: int, repeats: int) -> pd.DataFrame:
    from datamask.analysis.proxy_lm import train as T
    from datamask.core.heap import large_blocks

    paths = {
        "autocast": lambda m: autocast_evaluate(m, ev, batch_size),
        "bfloat16 copy": lambda m: T.evaluate(m, ev, "cpu", "bfloat16", batch_size),
    }
    rows = []
    for rep in range(repeats):
        for name, seed, model in models:
            for path, run in paths.items():
                with T.deterministic(1), large_blocks():
                    t0 = time.perf_counter()
                    nats, ntok, _ = run(model)["all"]
                    rows.append(
                        dict(
                            selection=name,
                            seed=seed,
                            path=path,
                            repeat=rep,
                            loss=nats / ntok,
                            seconds=time.perf_counter() - t0,
                        )
                    )
    return pd.DataFrame(rows)


def report(df: pd.DataFrame, eval_tokens: int, load0: float, load1: float, args) -> str:
    import torch

    loss = df[df["repeat"] == 0].pivot_table(index=["selection", "seed"], columns="path", values="loss")
    diff = (loss["bfloat16 copy"] - loss["autocast"]).abs()
    same = df.groupby(["selection", "seed", "path"])["loss"].nunique().max() == 1
    t = df.groupby("path")["seconds"].median()
    out = [
        "# The proxy's bfloat16 evaluation on the CPU: autocast against a bfloat16 copy",
        "",
        f"Host: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}; MALLOC_TRIM_THRESHOLD_="
        f"{os.environ.get('MALLOC_TRIM_THRESHOLD_', 'unset')}; load average {load0:.2f} at start, {load1:.2f} at the "
        f"end. Command: `python benchmarks/eval_copy.py --seeds {args.seeds} --repeats {args.repeats}`.",
        "",
        f"{len(loss)} `tiny` models trained in bfloat16 on {args.tokens:,} tokens (three selections x "
        f"{args.seeds} seeds), each scored on {eval_tokens:,} tokens by both paths in turn, {args.repeats} times; "
        f"one torch thread, inside `large_blocks` as a search's worker scores them. Every repeat gave "
        f"{'the same' if same else 'DIFFERENT'} losses.",
        "",
        "| path | seconds per evaluation (median) |",
        "| --- | --- |",
        f"| autocast (before) | {t['autocast']:.3f} |",
        f"| bfloat16 copy (now) | {t['bfloat16 copy']:.3f} |",
        f"| copy / autocast | **{t['bfloat16 copy'] / t['autocast']:.3f}** |",
        "",
        "| selection | seed | loss, autocast | loss, bfloat16 copy | difference |",
        "| --- | --- | --- | --- | --- |",
    ]
    for (sel, seed), r in loss.iterrows():
        out.append(
            f"| {sel} | {seed} | {r['autocast']:.5f} | {r['bfloat16 copy']:.5f} "
            f"| {r['bfloat16 copy'] - r['autocast']:+.5f} |"
        )
    out += [
        "",
        f"- largest |copy - autocast| of a model's loss: **{diff.max():.5f}** nats/token (mean {diff.mean():.5f});"
        " bfloat16 against float32 moved a loss by up to 0.0057 (proxy_precision.md), a search's paired noise is"
        " 0.009-0.018 (search_real.md)",
        "",
    ]
    return "\n".join(out)


def main(argv=None):
    from benchmarks.proxy_precision import proxy_bench_args

    args, load0 = proxy_bench_args(argv, __doc__, RESULT, seeds=2, repeats=3)
    models, ev, batch = trained_models(Path(args.work), args.seeds, args.tokens)
    df = measure(models, ev, batch, args.repeats)
    text = report(df, ev.tokens, load0, os.getloadavg()[0], args)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
