"""The proxy's bfloat16 evaluation on the CPU: autocast against a bfloat16 copy -> benchmarks/results/eval_copy.md

Since round 10 ``evaluate`` scores a CPU model in bfloat16 as a bfloat16 copy of it (weights
cast once, no autocast) whose attention takes the queries in causal blocks
(``proxy_lm/attention.py``), instead of under autocast (the activations cast at every product)
with torch's SDPA. This measures the three paths (round 9's; the copy with SDPA; the copy with
the block attention) on the same trained ``tiny`` models, the way a search's worker runs them (one torch
thread, the deterministic settings, inside ``large_blocks`` with a Dask nanny's
``MALLOC_TRIM_THRESHOLD_``): the models are trained in bfloat16 as a search trains them on three
selections of ``search_corpus.py``'s real text (proxy_precision.py's) x ``--seeds`` seeds, then
each is scored on the 300-document evaluation set by the two paths in turn, ``--repeats``
times, so the host's load falls on both alike.

Reported: each model's held-out loss by each path and the differences; the seconds of an
evaluation by each path (median over models and repeats) and their ratios; and the attention
alone on the evaluation's shapes (32 windows, 4 heads, 128 positions, heads of 32, bfloat16):
SDPA's flash kernel against the block attention, time and error against float64.

    MALLOC_TRIM_THRESHOLD_=65536 python benchmarks/eval_copy.py --work /work/cache/search
"""

from __future__ import annotations

import argparse
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
    from benchmarks.proxy_precision import selections
    from datamask.analysis.proxy_lm import train as T
    from datamask.analysis.proxy_lm.config import ProxyLMConfig
    from datamask.analysis.proxy_lm.head_loss import fused_forward_loss
    from datamask.analysis.proxy_lm.model import TokenStream, build_model
    from datamask.analysis.proxy_lm.tokenizer import sample_for_tokenizer, train_bpe
    from datamask.core.heap import large_blocks

    raw = pd.read_parquet(work / "raw" / "corpus.parquet")
    raw = raw[raw["kind"] != "leak"].reset_index(drop=True)
    evtexts = pd.read_parquet(next((work / "eval").glob("*.parquet")))["text"].tolist()
    base = ProxyLMConfig(preset="tiny", tokens=tokens, curve_points=0, threads=1).resolved()
    tok = train_bpe(sample_for_tokenizer([raw["text"].tolist()], base.tokenizer_sample_chars, 0), base.vocab_size)
    ev = T.prepare_eval("eval", evtexts, None, tok, base.seq_len, base.eval_tokens, 0)
    ids = tok.encode(raw["text"].tolist())

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


def copy_sdpa_evaluate(model, ev, batch_size):
    """The bfloat16 copy with torch's SDPA attention (``evaluate`` in float32 adds no copy of its own)."""
    import copy

    import torch

    from datamask.analysis.proxy_lm.train import evaluate

    return evaluate(copy.deepcopy(model).to(torch.bfloat16), ev, "cpu", "float32", batch_size)


PATHS = ("autocast", "copy, SDPA", "copy, block attention")


def measure(models, ev, batch_size: int, repeats: int) -> pd.DataFrame:
    from datamask.analysis.proxy_lm import train as T
    from datamask.core.heap import large_blocks

    run = dict(
        zip(
            PATHS,
            (
                lambda m: autocast_evaluate(m, ev, batch_size),
                lambda m: copy_sdpa_evaluate(m, ev, batch_size),
                lambda m: T.evaluate(m, ev, "cpu", "bfloat16", batch_size),
            ),
        )
    )
    rows = []
    for rep in range(repeats):
        for name, seed, model in models:
            for path in PATHS:
                with T.deterministic(1), large_blocks():
                    t0 = time.perf_counter()
                    nats, ntok, _ = run[path](model)["all"]
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


def attention_alone(repeats: int = 5, calls: int = 20) -> dict:
    """SDPA's kernel and the block attention on the evaluation's shapes: best seconds per call and
    the mean / largest absolute error against float64 SDPA."""
    import torch

    from datamask.analysis.proxy_lm.attention import block_causal_attention

    g = torch.Generator().manual_seed(0)
    q, k, v = ((torch.randn(32, 4, 128, 32, generator=g) * 1.5).bfloat16() for _ in range(3))
    exact = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    fns = {
        "SDPA": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
        "block attention": lambda: block_causal_attention(None, q, k, v, None, scaling=32**-0.5)[0].transpose(1, 2),
    }
    out = {}
    with torch.no_grad():
        for name, f in fns.items():
            err = (f().double() - exact).abs()
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                for _ in range(calls):
                    f()
                best = min(best, (time.perf_counter() - t0) / calls)
            out[name] = (best, float(err.mean()), float(err.max()))
    return out


def report(df: pd.DataFrame, att: dict, eval_tokens: int, load0: float, load1: float, args) -> str:
    import torch

    loss = df[df["repeat"] == 0].pivot_table(index=["selection", "seed"], columns="path", values="loss")[list(PATHS)]
    same = df.groupby(["selection", "seed", "path"])["loss"].nunique().max() == 1
    t = df.groupby("path")["seconds"].median()
    now = PATHS[-1]
    out = [
        "# The proxy's bfloat16 evaluation on the CPU: autocast against a bfloat16 copy",
        "",
        f"Host: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}; MALLOC_TRIM_THRESHOLD_="
        f"{os.environ.get('MALLOC_TRIM_THRESHOLD_', 'unset')}; load average {load0:.2f} at start, {load1:.2f} at the "
        f"end. Command: `python benchmarks/eval_copy.py --seeds {args.seeds} --repeats {args.repeats}`.",
        "",
        f"{len(loss)} `tiny` models trained in bfloat16 on {args.tokens:,} tokens (three selections x "
        f"{args.seeds} seeds), each scored on {eval_tokens:,} tokens by the three paths in turn, {args.repeats} "
        "times; one torch thread, inside `large_blocks` as a search's worker scores them. Every repeat gave "
        f"{'the same' if same else 'DIFFERENT'} losses. Paths: autocast = round 9's (the float32 model under "
        "bfloat16 autocast, SDPA attention); copy, SDPA = a bfloat16 copy of the model, no autocast; copy, "
        "block attention = the copy with `proxy_lm/attention.py` (what `evaluate` runs since round 10).",
        "",
        "| path | seconds per evaluation (median) | / autocast |",
        "| --- | --- | --- |",
    ]
    for p in PATHS:
        out.append(f"| {p} | {t[p]:.3f} | {t[p] / t['autocast']:.3f} |")
    out += [
        "",
        "| selection | seed | " + " | ".join(f"loss, {p}" for p in PATHS) + f" | {now} - autocast |",
        "| --- | --- | " + " | ".join("---" for _ in PATHS) + " | --- |",
    ]
    for (sel, seed), r in loss.iterrows():
        out.append(
            f"| {sel} | {seed} | " + " | ".join(f"{r[p]:.5f}" for p in PATHS) + f" | {r[now] - r['autocast']:+.5f} |"
        )
    diff = (loss[now] - loss["autocast"]).abs()
    out += [
        "",
        f"- largest |{now} - autocast| of a model's loss: **{diff.max():.5f}** nats/token (mean {diff.mean():.5f});"
        " bfloat16 against float32 moved a loss by up to 0.0057 (proxy_precision.md), a search's paired noise is"
        " 0.009-0.018 (search_real.md)",
        "",
        "The attention alone (32 x 4 heads x 128 positions x 32, bfloat16, one thread; error against float64 SDPA):",
        "",
        "| attention | ms per call (best of 5 x 20) | mean abs error | largest abs error |",
        "| --- | --- | --- | --- |",
    ]
    for name, (sec, mean_err, max_err) in att.items():
        out.append(f"| {name} | {sec * 1e3:.2f} | {mean_err:.5f} | {max_err:.4f} |")
    out += [
        "",
        f"- block attention / SDPA: **{att['block attention'][0] / att['SDPA'][0]:.2f}** of the time",
        "",
    ]
    return "\n".join(out)


def main(argv=None):
    from benchmarks.search_corpus import CACHE, prepare

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=str(CACHE))
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(RESULT))
    args = ap.parse_args(argv)
    prepare(Path(args.work))
    load0 = os.getloadavg()[0]
    models, ev, batch = trained_models(Path(args.work), args.seeds, args.tokens)
    df = measure(models, ev, batch, args.repeats)
    att = attention_alone()
    text = report(df, att, ev.tokens, load0, os.getloadavg()[0], args)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
