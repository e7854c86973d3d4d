"""A Dask worker's heap: the same tasks with and without ``datamask.core.heap.large_blocks``.

A Dask nanny starts every worker with ``MALLOC_TRIM_THRESHOLD_=65536``, which pins glibc's mmap
threshold at 128 KiB (core/heap.py). This measures what that costs the tasks datamask runs in
workers, and what ``large_blocks`` gives back: the `tiny` proxy's training step (eager and
fused loss) and DATAMASK's fit of one split, each in a fresh one-worker LocalCluster per variant
and round (a worker's heap remembers earlier tasks, so the variants never share a worker), in the
worker's CPU seconds; the client process (no tunables: glibc's sliding threshold) runs the same
task as the reference.

    python benchmarks/heap.py [--rounds 3] [--rows 50000 200000] [--out benchmarks/results/heap.md]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def proxy_steps(steps: int = 12, fused: bool = False) -> float:
    """Median CPU seconds of steps 4.. of the `tiny` proxy (batch 16 x 128, one thread)."""
    import torch
    import torch.nn.functional as F

    from datamask.analysis.proxy_lm.config import ProxyLMConfig
    from datamask.analysis.proxy_lm.head_loss import fused_forward_loss
    from datamask.analysis.proxy_lm.model import build_model

    torch.set_num_threads(1)
    cfg = ProxyLMConfig(preset="tiny").resolved()
    model = build_model(cfg, int(cfg.vocab_size))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, foreach=False)
    g = torch.Generator().manual_seed(0)
    B, T, V = int(cfg.batch_size), int(cfg.seq_len), int(cfg.vocab_size)
    x, y = torch.randint(0, V, (B, T), generator=g), torch.randint(0, V, (B, T), generator=g)
    times = []
    for _ in range(steps):
        c = time.process_time()
        if fused:
            loss = fused_forward_loss(model, x, y)
        else:
            loss = F.cross_entropy(model(input_ids=x).logits.reshape(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.process_time() - c)
    return statistics.median(times[3:])


def datamask_fit(rows: int) -> float:
    """CPU seconds of ``DataMask(ratio=0.3).fit`` on ``rows`` unit vectors of width 384."""
    import numpy as np

    from datamask import DataMask

    rng = np.random.default_rng(0)
    E = rng.standard_normal((rows, 384)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    q = rng.random(rows).astype(np.float32)
    c = time.process_time()
    DataMask(ratio=0.3, seed=0).fit(E, q)
    return time.process_time() - c


def _task(name: str, arg, heap: bool) -> float:
    from datamask.core.heap import large_blocks

    fn = {
        "proxy step, eager loss": lambda: proxy_steps(fused=False),
        "proxy step, fused loss": lambda: proxy_steps(fused=True),
        "DataMask fit": lambda: datamask_fit(int(arg)),
    }[name]
    with large_blocks() if heap else contextlib.nullcontext():
        return fn()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, nargs="+", default=[50_000, 200_000])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "heap.md"))
    args = ap.parse_args()
    from distributed import Client, LocalCluster

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    cases = [("proxy step, eager loss", None), ("proxy step, fused loss", None)]
    cases += [("DataMask fit", r) for r in args.rows]
    res = {(c, a, v): [] for c, a in cases for v in ("plain process", "worker", "worker + large_blocks")}
    load0 = os.getloadavg()
    for rnd in range(args.rounds):
        for c, a in cases:
            res[(c, a, "plain process")].append(_task(c, a, False))
            for v, heap in (("worker", False), ("worker + large_blocks", True)):
                cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None)
                with cluster as lc, Client(lc) as cl:
                    res[(c, a, v)].append(cl.submit(_task, c, a, heap, pure=False).result())
            print(
                rnd,
                c,
                a,
                {v: round(res[(c, a, v)][-1], 3) for v in ("plain process", "worker", "worker + large_blocks")},
                flush=True,
            )
    load1 = os.getloadavg()
    lines = [
        "# A Dask worker's heap (core/heap.py)",
        "",
        f"Host: {platform.machine()}, {os.cpu_count()} cores, load average {load0[0]:.2f} at start, {load1[0]:.2f} "
        f"at the end. Command: `python benchmarks/heap.py --rounds {args.rounds} --rows {' '.join(map(str, args.rows))}`. "
        "CPU seconds of one task (proxy: median step of 12, batch 16 x 128, one thread; fit: the whole fit), "
        "median over the rounds, each round's worker a fresh process.",
        "",
        "| task | plain process | Dask worker | worker + `large_blocks` | worker / plain | with / without `large_blocks` |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for c, a in cases:
        m = {v: statistics.median(res[(c, a, v)]) for v in ("plain process", "worker", "worker + large_blocks")}
        label = c if a is None else f"{c}, {a:,} rows"
        lines.append(
            f"| {label} | {m['plain process']:.3f} | {m['worker']:.3f} | {m['worker + large_blocks']:.3f} | "
            f"{m['worker'] / m['plain process']:.2f} | {m['worker + large_blocks'] / m['worker']:.2f} |"
        )
    lines.append("")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
