"""Compiled and inference paths of the ``tiny`` proxy, side by side -> benchmarks/results/search_cost.md

In one process, one torch thread and the search worker's deterministic settings (as
``search.trials.train_recipe`` runs a model), on docstrings of the Python standard library
(a byte-level BPE of the preset's 4,096 tokens, the preset's model, batch 16 x 128):

1. Training: ``--steps`` optimiser steps from the same initial weights and data order, with
   the proxy's own step (``train._step``) on each path -- eager (what the proxy uses),
   ``torch.compile`` of the model (inductor, ``dynamic=False``: the training batch is always
   B x T), the model compiled with its loss (the proxy's ``compile`` setting), eager with
   ``torch.set_flush_denormal(True)``, eager with oneDNN off. The paths take turns step by step
   (every path's step i before any path's step i+1), so a shared host's load falls on all alike;
   each of ``--rounds`` rounds builds new models (round 2's compiled paths: the compile a search
   worker pays for its second model). Reported: the median CPU ms/step of steps 3..N (process CPU
   time: one thread, so the host's other jobs stretch it far less than the wall) and its ratio to
   eager's, the same in wall time, the first steps' extra seconds (the compile; the C++ compiler's
   CPU seconds included), and the training and held-out losses after N steps.
2. Evaluation (the windows vary in length): the proxy's ``evaluate`` (eager, ``no_grad``),
   eager under ``inference_mode``, eager padded to full windows, compiled with every batch
   padded to ``2B x T`` (static shapes, one compile), compiled with dynamic shapes; CPU and wall
   ms per 1,000 scored tokens over rounds 2.., round 1's extra seconds (the compile) and the loss
   against ``evaluate``'s.

The inductor cache is a new, empty folder (removed after) unless ``--cache-dir`` names one (a
second run with the same folder measures the compile with a warm cache: what a later worker
process pays); ``TORCHINDUCTOR_COMPILE_THREADS`` is 1 (no compile pool beside the workers).

    python benchmarks/proxy_paths.py --steps 30 --rounds 2 --append
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULT = ROOT / "benchmarks" / "results" / "search_cost.md"
TRAIN_PATHS = ("eager", "compiled", "compiled, model + loss", "eager + flush denormal", "eager, oneDNN off")
EVAL_PATHS = (
    "evaluate (eager, no_grad)",
    "eager, inference_mode",
    "eager, padded",
    "compiled, padded",
    "compiled, dynamic",
)


def corpus(chars: int):
    """(train texts, eval texts): standard-library docstring paragraphs, split by source file."""
    import sysconfig

    from benchmarks.suite_corpora import _chunks, _docstrings, _is_eval

    train, ev, got = [], [], 0
    for src, d in _docstrings(Path(sysconfig.get_paths()["stdlib"])):
        for c in _chunks(d):
            (ev if _is_eval(src) else train).append(c)
            got += len(c)
        if got >= chars:
            break
    return train, ev


def setup(args):
    from datamask.analysis.proxy_lm.config import ProxyLMConfig
    from datamask.analysis.proxy_lm.tokenizer import train_bpe
    from datamask.analysis.proxy_lm.train import initial_state, prepare_eval

    train, ev = corpus(args.chars)
    cfg = ProxyLMConfig(preset="tiny", threads=1, curve_points=0, quiet=True).resolved()
    tok = train_bpe(train[: len(train) // 2], int(cfg.vocab_size))
    init = initial_state(cfg, tok.vocab_size)
    evd = prepare_eval("eval", ev, None, tok, int(cfg.seq_len), args.eval_tokens, 0)
    return cfg, tok, init, tok.encode(train), evd


@contextlib.contextmanager
def path_flags(path: str):
    import torch

    if path == "eager + flush denormal":
        torch.set_flush_denormal(True)
        try:
            yield
        finally:
            torch.set_flush_denormal(False)
    elif path == "eager, oneDNN off":
        with torch.backends.mkldnn.flags(enabled=False):
            yield
    else:
        yield


class Runner:
    """One model trained on one path, a step at a time (so the paths can take turns)."""

    def __init__(self, path, cfg, tok, init, docs, steps: int):
        import torch

        from datamask.analysis.proxy_lm.compiled import training_loss
        from datamask.analysis.proxy_lm.model import TokenStream, build_model
        from datamask.analysis.proxy_lm.train import _optimizer, forward_loss

        self.path, self.cfg, self.steps = path, cfg, steps
        self.model = build_model(cfg, tok.vocab_size)
        self.model.load_state_dict(init)
        self.model.train()
        self.opt = _optimizer(self.model, cfg)
        self.fwd = torch.compile(self.model, dynamic=False) if path == "compiled" else self.model
        self.loss_fn = None  # the proxy's own compile option: the model and its cross-entropy together
        if path == "compiled, model + loss":
            self.loss_fn = training_loss(self.model, forward_loss, cfg.replace(compile=True), "cpu")
        self.stream = TokenStream(docs, tok.eos_id, cfg.seed)
        self.carry, self.times, self.cpu, self.loss = self.stream.take(1), [], [], None
        self.child_cpu = 0.0  # CPU seconds of the C++ compiler runs (children) during the steps

    def step(self) -> None:
        from datamask.analysis.proxy_lm.train import _step

        step = len(self.times)
        chunk = np.concatenate([self.carry, self.stream.take(int(self.cfg.batch_size) * int(self.cfg.seq_len))])
        self.carry = chunk[-1:]
        with path_flags(self.path):
            t, c, k = time.perf_counter(), time.process_time(), _children_cpu()
            loss, _ = _step(self.fwd, self.opt, chunk, step, self.steps, self.cfg, "cpu", "float32", self.loss_fn)
            self.times.append(time.perf_counter() - t)
            self.cpu.append(time.process_time() - c)
            self.child_cpu += _children_cpu() - k
        self.loss = float(loss)


def _children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def _overhead(times, med) -> float:
    """Seconds the first three steps took beyond three median steps (the compile, on a compiled path)."""
    return sum(times[:3]) - 3 * med


def bench_train(args, cfg, tok, init, docs):
    """{path: [per-round dict]} and the last eager-trained model. Within a round every path's
    model takes its step i in turn before any takes step i+1, so the host's load falls on all
    alike; each round builds new models (round 2's compiled models: the compile a search
    worker pays for its second model)."""
    from datamask.analysis.proxy_lm.train import evaluate

    out, model = {p: [] for p in args.train_paths}, None
    for r in range(args.rounds):
        runs = [Runner(p, cfg, tok, init, docs, args.steps) for p in args.train_paths]
        for _ in range(args.steps):
            for run in runs:
                run.step()
        base = runs[0].cpu
        for run in runs:
            med = statistics.median(run.times[2:])
            held = evaluate(run.model, args.ev, "cpu", "float32", 2 * int(cfg.batch_size))["all"]
            res = dict(
                cpu_ms=1000 * statistics.median(run.cpu[2:]),
                ratio=sum(run.cpu[2:]) / sum(base[2:]),
                wall_ratio=statistics.median([t / b for t, b in zip(run.times[2:], runs[0].times[2:])]),
                ms=1000 * med,
                overhead=_overhead(run.times, med),
                overhead_cpu=_overhead(run.cpu, statistics.median(run.cpu[2:])) + run.child_cpu,
                loss=run.loss,
                held=held[0] / held[1],
            )
            out[run.path].append(res)
            print(f"round {r + 1} {run.path}: CPU {res['cpu_ms']:.0f} ms/step (x{res['ratio']:.3f} of {runs[0].path}), "
                  f"wall {res['ms']:.0f} ms/step (x{res['wall_ratio']:.3f}), first steps +{res['overhead']:.1f} s "
                  f"(CPU +{res['overhead_cpu']:.1f} s), "
                  f"loss {run.loss:.6f}, held-out {res['held']:.6f}", flush=True)  # fmt: skip
        model = runs[0].model
    return out, model


def eval_windows(fwd, ev, batch: int, *, pad: bool, inference: bool) -> float:
    """Held-out nats/token of ``ev`` as ``train.evaluate`` scores it; ``pad``: every batch ``batch`` x
    full windows (static shapes); ``inference``: under ``torch.inference_mode`` instead of ``no_grad``."""
    import torch

    from datamask.analysis.proxy_lm.train import forward_loss

    lens = (ev.windows >= 0).sum(axis=1)
    order = np.argsort(-lens, kind="stable")
    nll_sum = 0.0
    fwd.eval()
    with torch.inference_mode() if inference else torch.no_grad():
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            L = ev.windows.shape[1] if pad else int(lens[idx].max())
            w = np.full((batch if pad else len(idx), L), -1, dtype=np.int64)
            w[: len(idx)] = ev.windows[idx, :L]
            w = torch.from_numpy(w)
            y = w[:, 1:].clone()
            y[y < 0] = -100
            nll = forward_loss(fwd, w[:, :-1].clamp(min=0), y, reduction="none")
            nll_sum += float(nll.double().sum())
    fwd.train()
    return nll_sum / ev.tokens


def bench_eval(args, cfg, model):
    """{path: [per-round dict]} of the evaluation paths on ``model`` (trained eagerly)."""
    import torch

    from datamask.analysis.proxy_lm.train import evaluate

    B2 = 2 * int(cfg.batch_size)
    compiled = {
        "compiled, padded": torch.compile(model, dynamic=False),
        "compiled, dynamic": torch.compile(model, dynamic=True),
    }
    out = {p: [] for p in args.eval_paths}
    for r in range(args.eval_rounds + 1):  # round 1 of a compiled path holds its compile
        for p in args.eval_paths:
            t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
            if p == "evaluate (eager, no_grad)":
                v = evaluate(model, args.ev, "cpu", "float32", B2)["all"]
                loss = v[0] / v[1]
            else:
                fwd = compiled.get(p, model)
                loss = eval_windows(fwd, args.ev, B2, pad="padded" in p, inference="inference" in p)
            s, c = time.perf_counter() - t0, time.process_time() - c0 + _children_cpu() - k0
            out[p].append(dict(s=s, cpu=c, loss=loss))
            print(f"eval round {r + 1} {p}: {s:.2f} s, CPU {c:.2f} s, loss {loss:.7f}", flush=True)
    return out


def _fmt_list(vals, f="{:.0f}"):
    return ", ".join(f.format(v) for v in vals)


def train_table(res, steps: int) -> list:
    rows = [
        f"| path | CPU ms/step (median of steps 3-{steps}), per round | CPU time / eager's, per round "
        f"| wall ms/step, per round | wall / eager's (median over steps) | first 3 steps' extra CPU s (wall s), per round "
        f"| training loss after {steps} steps | held-out loss |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p, runs in res.items():
        over = ", ".join("{:.1f} ({:.1f})".format(r["overhead_cpu"], r["overhead"]) for r in runs)
        rows.append(
            f"| {p} | {_fmt_list([r['cpu_ms'] for r in runs])} | {_fmt_list([r['ratio'] for r in runs], '{:.3f}')} "
            f"| {_fmt_list([r['ms'] for r in runs])} | {_fmt_list([r['wall_ratio'] for r in runs], '{:.2f}')} "
            f"| {over} "
            f"| {_fmt_list(sorted({round(r['loss'], 6) for r in runs}), '{:.6f}')} "
            f"| {_fmt_list(sorted({round(r['held'], 6) for r in runs}), '{:.6f}')} |"
        )
    return rows


def eval_table(res, tokens: int) -> list:
    base = res.get("evaluate (eager, no_grad)")
    rows = [
        "| evaluation path | CPU ms per 1,000 tokens, rounds 2.. | CPU time / evaluate's, rounds 2.. "
        "| wall ms per 1,000 tokens | round 1's extra CPU s (wall s): the compile | held-out loss | minus evaluate's |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for p, runs in res.items():
        later = runs[1:]
        ratio = sum(r["cpu"] for r in later) / sum(b["cpu"] for b in base[1:]) if base else float("nan")
        diff = runs[-1]["loss"] - base[-1]["loss"] if base else float("nan")
        rows.append(
            f"| {p} | {_fmt_list([1e6 * r['cpu'] / tokens for r in later])} | {ratio:.3f} "
            f"| {_fmt_list([1e6 * r['s'] / tokens for r in later])} "
            f"| {runs[0]['cpu'] - statistics.median([r['cpu'] for r in later]):.1f} "
            f"({runs[0]['s'] - statistics.median([r['s'] for r in later]):.1f}) "
            f"| {runs[-1]['loss']:.7f} | {diff:+.1e} |"
        )
    return rows


def header(args, cfg, tok, docs, load0) -> list:
    import subprocess

    import torch

    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return [
        f"Host: {platform.machine()}, {os.cpu_count()} cores, CPU capability {torch.backends.cpu.get_cpu_capability()}, "
        f"torch {torch.__version__}, {gcc}; load average {load0[0]:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at the end. One torch thread, deterministic settings as a search worker. "
        f"Command: `python benchmarks/proxy_paths.py {shlex.join(sys.argv[1:])}`.",
        "",
        f"Model: preset tiny ({int(cfg.d_model)} wide, {int(cfg.n_layers)} layers, vocabulary {tok.vocab_size}), batch "
        f"{int(cfg.batch_size)} x {int(cfg.seq_len)}, {len(docs):,} training paragraphs; evaluation "
        f"{args.ev.tokens:,} tokens in {len(args.ev.windows):,} windows of varying length. Inductor cache: "
        f"{args.cache_state}; compile threads 1.",
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--eval-rounds", type=int, default=4)
    ap.add_argument("--chars", type=int, default=3_000_000, help="characters of docstrings read")
    ap.add_argument("--eval-tokens", type=int, default=20_000)
    ap.add_argument("--train-paths", nargs="*", default=list(TRAIN_PATHS), choices=TRAIN_PATHS)
    ap.add_argument("--eval-paths", nargs="*", default=list(EVAL_PATHS), choices=EVAL_PATHS)
    ap.add_argument("--cache-dir", default=None, help="inductor cache folder (default: a new, empty one)")
    ap.add_argument("--append", action="store_true", help=f"append the tables to {RESULT.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()
    cache = args.cache_dir or tempfile.mkdtemp(prefix="inductor-")
    args.cache_state = "warm" if Path(cache).is_dir() and any(Path(cache).iterdir()) else "cold (empty)"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    from datamask.analysis.proxy_lm.train import deterministic

    cfg, tok, init, docs, args.ev = setup(args)
    with deterministic(1):
        tres, model = bench_train(args, cfg, tok, init, docs) if args.train_paths else ({}, None)
        if model is None:
            from datamask.analysis.proxy_lm.model import build_model

            model = build_model(cfg, tok.vocab_size)
        eres = bench_eval(args, cfg, model) if args.eval_paths else {}
    if not args.cache_dir:
        shutil.rmtree(cache, ignore_errors=True)
    lines = header(args, cfg, tok, docs, load0)
    if tres:
        lines += ["", *train_table(tres, args.steps)]
    if eres:
        lines += ["", *eval_table(eres, args.ev.tokens)]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.append:
        with RESULT.open("a", encoding="utf-8") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
