"""How noisy is one proxy model, and what do common random numbers buy? -> benchmarks/results/proxy_noise.md

On the real-text corpus of ``search_corpus.py`` (MiniLM embeddings of this machine's Python
documentation), four recipes (top-k, random, DATAMASK with lam 0.5 and pairwise, DATAMASK with
lam 0.2 and DiSF; ratio 0.3) are each trained on the same ``--seeds`` proxy seeds at two or
three token budgets, with the ``tiny`` preset, through the search's own tasks
(:func:`datamask.analysis.search.schedule.run_jobs` on a 2-worker LocalCluster, one torch thread
each). The tokenizer and the evaluation windows are shared by every run.

For each budget it reports the seed-to-seed sd of one recipe's loss, and the sd of the
difference between two recipes: **with common random numbers** (both trained on the same seed:
the same initial weights and data order, as every trial of a search is) and **without** (each on
another seed: the pairs ``(s, t)``, ``s != t``, of the same runs, which is what independent
seeds per recipe would give). A search compares recipes, so the second sd is its noise; the
ratio of the recipes' mean gaps to it says how many seeds a trial needs.

    python benchmarks/proxy_noise.py                      # 4 seeds at 50k, 100k and 200k tokens
    python benchmarks/proxy_noise.py --tokens 100k --seeds 3
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RECIPES = {
    "topk": {"method": "topk"},
    "random": {"method": "random"},
    "datamask-0.5-pairwise": {"method": "datamask", "lam": 0.5, "diversity": "pairwise"},
    "datamask-0.2-disf": {"method": "datamask", "lam": 0.2, "diversity": "disf"},
}


def run_budget(client, corpus: dict, work: Path, tokens: int, seeds: list) -> pd.DataFrame:
    """Every recipe on every seed at ``tokens`` training tokens: one row per model."""
    from datamask.analysis.search import SearchConfig
    from datamask.analysis.search.outputs import records_frame
    from datamask.analysis.search.run import _prepared, corpus_parts, resolve_eval
    from datamask.analysis.search.schedule import Job, fingerprint_of, run_jobs
    from datamask.pipeline.runner import resolve_io

    out = work / f"noise-{tokens}"
    cfg = SearchConfig(input=corpus["input"], output=str(out), eval=[corpus["eval"]], ratio=0.3, proxy_tokens=tokens)
    cfg = resolve_eval(resolve_io(cfg, "search"))
    out.mkdir(parents=True, exist_ok=True)
    parts, ids = corpus_parts(cfg)
    fp = fingerprint_of(cfg.fingerprint("cpu"), ids)
    prep = _prepared(client, parts, cfg, out, fp)
    base = fingerprint_of(fp, prep["tokenizer"]["sha256"], prep["eval_fingerprint"])
    jobs = [Job(n, r, seeds, {"kind": "noise", "fingerprint": fingerprint_of(base, n, r)}) for n, r in RECIPES.items()]
    recs, _ = run_jobs(client, parts, jobs, cfg, str(out), desc=f"{tokens:,} tokens")
    f = records_frame(recs)
    f["budget"] = tokens
    return f


def _differences(wide: pd.DataFrame):
    """sd of recipe differences on the same seed and on different seeds, pooled over recipe pairs,
    and the mean absolute gap between recipes."""
    same, other, gaps = [], [], []
    for a, b in itertools.combinations(wide.columns, 2):
        A, B = wide[a].to_numpy(), wide[b].to_numpy()
        same.append(np.var(A - B, ddof=1))
        d = np.array([A[s] - B[t] for s in range(len(A)) for t in range(len(B)) if s != t])
        other.append(np.var(d, ddof=1))
        gaps.append(abs(A.mean() - B.mean()))
    return float(np.sqrt(np.mean(same))), float(np.sqrt(np.mean(other))), float(np.mean(gaps)), float(np.min(gaps))


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for budget, metric in itertools.product(sorted(frame.budget.unique()), ("loss", "bits_per_byte")):
        sub = frame[frame.budget == budget]
        wide = sub.pivot_table(index="seed", columns="name", values=metric)
        sd = float(np.sqrt(wide.var(ddof=1).mean()))
        crn, indep, gap, min_gap = _differences(wide)
        rows.append(
            {
                "budget": budget,
                "metric": metric,
                "seeds": len(wide),
                "sd_one_recipe": sd,
                "sd_diff_crn": crn,
                "sd_diff_independent": indep,
                "crn_gain": indep / crn if crn > 0 else float("inf"),
                "mean_gap": gap,
                "smallest_gap": min_gap,
                "seconds_per_model": float(sub["seconds"].mean()),
            }
        )
    return pd.DataFrame(rows)


def write_markdown(path: Path, frame, table, corpus, args, load, wall):
    per = frame[frame.budget == frame.budget.max()].pivot_table(index="name", columns="seed", values="loss")
    lines = [
        "# Proxy-LM noise: seed-to-seed spread with and without common random numbers",
        "",
        f"Host: {platform.machine()}, {os.cpu_count()} cores, load average at start {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f}; wall time {wall / 60:.1f} min. Command: `python benchmarks/proxy_noise.py {' '.join(sys.argv[1:])}`.",
        "",
        f"Corpus (benchmarks/search_corpus.py): {sum(corpus['kinds'].values()):,} input documents "
        f"({', '.join(f'{k} {v:,}' for k, v in corpus['kinds'].items())}), MiniLM embeddings, heuristic quality, "
        "20 k-means clusters; evaluation set: 300 held-out documents. Recipes at ratio 0.3: "
        + ", ".join(RECIPES)
        + f". Proxy: preset tiny (1.2M parameters), one torch thread per Dask worker, {args.seeds} seeds "
        "(initial weights and data order); tokenizer and evaluation windows shared by every run.",
        "",
        "sd_one_recipe: seed-to-seed sd of one recipe's loss (pooled). sd_diff_crn: sd of the difference between two "
        "recipes trained on the same seed (common random numbers, as every trial of a search is). "
        "sd_diff_independent: the same difference between runs on different seeds. mean_gap / smallest_gap: the "
        "recipes' mean differences (what a search has to tell apart).",
        "",
        "| tokens | metric | seeds | sd one recipe | sd diff, CRN | sd diff, independent | CRN gain | mean gap | smallest gap | s/model |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for _, r in table.iterrows():
        lines.append(
            f"| {r.budget:,} | {r.metric} | {r.seeds} | {r.sd_one_recipe:.4f} | {r.sd_diff_crn:.4f} | "
            f"{r.sd_diff_independent:.4f} | {r.crn_gain:.1f}x | {r.mean_gap:.4f} | {r.smallest_gap:.4f} | {r.seconds_per_model:.0f} |"
        )
    lines += ["", f"Loss (nats/token) per recipe and seed at {int(frame.budget.max()):,} tokens:", ""]
    lines.append("| recipe | " + " | ".join(f"seed {s}" for s in per.columns) + " |")
    lines.append("| --- |" + " --- |" * len(per.columns))
    for name, r in per.iterrows():
        lines.append(f"| {name} | " + " | ".join(f"{v:.4f}" for v in r) + " |")
    path.write_text("\n".join(lines) + "\n")
    print(path.read_text())


def _tokens(v):
    from datamask.pipeline.config import parse_tokens

    return parse_tokens(v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=str(ROOT / "benchmarks" / ".cache" / "search"))
    ap.add_argument("--tokens", nargs="+", type=_tokens, default=[50_000, 100_000, 200_000])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "proxy_noise.md"))
    args = ap.parse_args(argv)
    from distributed import Client, LocalCluster

    from benchmarks.search_corpus import prepare

    load, t0 = os.getloadavg(), time.time()
    corpus = prepare(Path(args.work))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, Client(cl) as c:
        frame = pd.concat([run_budget(c, corpus, Path(args.work), t, list(range(args.seeds))) for t in args.tokens])
    frame.to_parquet(Path(args.work) / "proxy_noise.parquet")
    write_markdown(Path(args.out), frame, summarize(frame), corpus, args, load, time.time() - t0)


if __name__ == "__main__":
    main()
