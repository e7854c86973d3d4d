"""Proxy-LM benchmark -> benchmarks/results/proxy_lm.md.

1. Throughput: training tokens/s of each preset on this machine (``tiny`` with 1 and 2 torch
   threads; ``small`` briefly, a few steps, on CPU; on a GPU with ``--device cuda``).
2. Does a selection train a better model? On real text a fresh machine can build offline —
   docstrings of the Python standard library and of installed packages, the Python reference
   topics shipped in ``pydoc_data``, some low-information text (short docstrings, wheel RECORD
   listings, licence files) and planted near-duplicates (documents repeated with small
   edits) — through the real stages: ``embed``, ``score --heuristics``, ``cluster``,
   ``compare --holdout`` (DATAMASK, top-k, random, SemDeDup, QuaDMix at the same budget), then
   ``proxy-lm`` on every method's selection at equal tokens, with 3 proxy seeds (initial
   weights and data order) so the seed-to-seed spread can be told from a difference.

Run: ``.venv/bin/python benchmarks/proxy_lm.py`` (about half an hour on 2 busy cores;
``--quick`` for a smoke run). GPU: ``python benchmarks/proxy_lm.py --throughput-only
--device cuda --presets small --out DIR``. Timings on a shared host vary 2-4x between runs;
the results record the load average.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
METHODS = ("datamask", "topk", "random", "semdedup", "quadmix")


# ---------------------------------------------------------------------- corpus
def _docstrings(root: Path) -> list:
    """Every docstring under ``root`` (suite_corpora's walker, without the file names)."""
    from benchmarks.suite_corpora import _docstrings as walk

    return [d for _, d in walk(root)]


def _cut(text: str, size: int = 1500):
    """Paragraph groups of at most about ``size`` characters."""
    parts, cur = [], ""
    for p in re.split(r"\n\s*\n", text):
        if cur and len(cur) + len(p) > size:
            parts.append(cur)
            cur = ""
        cur = f"{cur}\n\n{p}" if cur else p
    if cur:
        parts.append(cur)
    return [p[: 2 * size] for p in parts]


def _edit(text: str, rng: random.Random) -> str:
    """A near-duplicate: a few words changed or dropped."""
    words = text.split(" ")
    for _ in range(max(1, len(words) // 40)):
        i = rng.randrange(len(words))
        words[i] = rng.choice(["", words[i].upper(), words[i] + ",", "the"])
    return " ".join(w for w in words if w)


def build_corpus(n_docs: int, seed: int = 0) -> pd.DataFrame:
    """About ``n_docs`` documents of real text found on this machine; columns id, text, kind."""
    rng = random.Random(seed)
    std = Path(sysconfig.get_paths()["stdlib"])
    site = Path(sysconfig.get_paths()["purelib"])
    pkgs = [site / p for p in ("numpy", "pandas", "sklearn", "dask", "matplotlib") if (site / p).is_dir()]
    docs = _docstrings(std) + [d for p in pkgs for d in _docstrings(p)]
    try:
        from pydoc_data.topics import topics

        ref = [c for k in sorted(topics) for c in _cut(topics[k])]
    except ImportError:
        ref = []
    seen = set()
    good = [d[:3000] for d in docs + ref if len(d) >= 300 and not (d in seen or seen.add(d))]
    short = sorted({d for d in docs if 20 <= len(d) < 90})
    short = ["\n".join(short[i : i + 3]) for i in range(0, len(short) - 2, 3)]  # real text, little information
    records = [c for f in sorted(site.glob("*.dist-info/RECORD")) for c in _cut(f.read_text(errors="replace"), 1200)]
    licences = [
        c
        for f in sorted(site.glob("*.dist-info/LICEN[CS]E*"))
        if f.is_file()
        for c in _cut(f.read_text(errors="replace"), 1200)
    ]
    n_good, n_low, n_dup = int(n_docs * 0.8), int(n_docs * 0.1), int(n_docs * 0.1)
    good = rng.sample(good, min(n_good, len(good)))
    low = []
    for pool, k in ((short, n_low // 3), (records, n_low // 3), (licences, n_low - 2 * (n_low // 3))):
        low += rng.sample(pool, min(k, len(pool)))
    dups = [_edit(d, rng) for d in rng.sample(good, n_dup // 2) for _ in range(2)]
    rows = [("docs", t) for t in good] + [("low", t) for t in low] + [("near_duplicate", t) for t in dups]
    rng.shuffle(rows)
    return pd.DataFrame({"id": np.arange(len(rows)), "text": [t for _, t in rows], "kind": [k for k, _ in rows]})


# ---------------------------------------------------------------------- stages
def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "datamask.cli", *map(str, args)]
    print("$", " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, check=True, env=env)


def throughput(preset: str, device: str, threads: int, steps: int) -> dict:
    """Training tokens/s of ``preset`` on random tokens (model, optimiser and loss as in a run)."""
    import torch

    from datamask.analysis.proxy_lm import ProxyLMConfig
    from datamask.analysis.proxy_lm.model import build_model, count_params
    from datamask.analysis.proxy_lm.train import _autocast, _optimizer, deterministic, forward_loss

    cfg = ProxyLMConfig(preset=preset, device=device).resolved()
    prec = "bfloat16" if device == "cuda" else "float32"
    with deterministic(threads):
        model = build_model(cfg, cfg.vocab_size).to(device)
        opt = _optimizer(model, cfg)
        B, T = cfg.batch_size, cfg.seq_len
        g = torch.Generator().manual_seed(0)
        x = torch.randint(0, cfg.vocab_size, (B, T + 1), generator=g).to(device)

        losses = []

        def step():
            with _autocast(device, prec):
                loss = forward_loss(model, x[:, :-1], x[:, 1:])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.detach())

        step()  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(steps):
            step()
        if device == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t
    return {
        "preset": preset,
        "device": device,
        "precision": prec,
        "threads": threads,
        "params": count_params(model),
        "tokens_per_step": B * T,
        "steps": steps,
        "tokens_per_s": steps * B * T / dt,
        "losses": [float(v) for v in losses],
    }


def run_selection_benchmark(work: Path, n_docs: int, tokens: int, seeds, quick: bool, threads: int = 1) -> dict:
    """The stages, each skipped when its output is complete (a rerun only redraws the table);
    wall times come from the stages' own manifests."""
    import json

    raw, q = work / "raw", ["--quiet"]
    if not (raw / "corpus.parquet").exists():
        raw.mkdir(parents=True, exist_ok=True)
        build_corpus(n_docs).to_parquet(raw / "corpus.parquet", index=False)
    stages = [
        ("embed", work / "emb" / "manifest.json", ("embed", raw, work / "emb", "--n-workers", 1, *q)),
        (
            "score",
            work / "scored" / "manifest.json",
            ("score", work / "emb", work / "scored", "--heuristics", "--n-workers", 1, *q),
        ),
        (
            "cluster",
            work / "clustered" / "cluster.json",
            (
                "cluster",
                work / "scored",
                work / "clustered",
                "--n-clusters",
                20,
                "--sample-fraction",
                1.0,
                "--n-workers",
                1,
                *q,
            ),
        ),
        (
            "compare",
            work / "cmp" / "compare.json",
            (
                "compare",
                work / "clustered",
                work / "cmp",
                "--methods",
                ",".join(METHODS),
                "--ratio",
                0.3,
                "--holdout",
                0.1,
                "--n-workers",
                1,
                "--no-report",
                *q,
            ),
        ),
    ]
    for s in seeds:
        stages.append(
            (
                f"proxy-lm seed {s}",
                work / f"proxy-seed{s}" / "manifest.json",
                (
                    "proxy-lm",
                    work / "cmp",
                    "--eval",
                    work / "cmp" / "holdout",
                    work / f"proxy-seed{s}",
                    "--tokens",
                    tokens,
                    "--seed",
                    s,
                    "--set",
                    f"threads={threads}",
                    "--no-report",
                    *q,
                    *(["--set", "eval_tokens=20000"] if quick else []),
                ),
            )
        )
    times = {}
    for name, marker, argv in stages:
        if not marker.exists():
            _cli(*argv)
        times[name] = json.loads(marker.read_text())["wall_seconds"]
    runs = []
    for s in seeds:
        t = pd.read_csv(work / f"proxy-seed{s}" / "proxy.csv")
        t["seed"] = s
        runs.append(t)
    corpus = pd.read_parquet(raw / "corpus.parquet", columns=["kind"])
    return {
        "times": times,
        "proxy": pd.concat(runs, ignore_index=True),
        "compare": pd.read_csv(work / "cmp" / "compare.csv", index_col="method"),
        "kinds": corpus["kind"].value_counts().to_dict(),
    }


def end_to_end(work: Path, device: str, preset: str, tokens: int) -> dict:
    """``proxy-lm`` on the repository's test corpus (prose vs boilerplate/links/spam/repeated,
    held-out rows of both), run twice into fresh directories: the losses and whether the
    second run repeats them exactly."""
    import json

    rows = [json.loads(line) for line in (ROOT / "tests" / "data" / "corpus.jsonl").read_text().splitlines()]
    df = pd.DataFrame(rows)
    junk_kinds = ("boilerplate", "links", "spam", "repeated")
    prose, junk = df[df.kind == "prose"], df[df.kind.isin(junk_kinds)]
    held = pd.concat([prose.iloc[:30]] + [junk[junk.kind == k].iloc[:6] for k in junk_kinds])
    for name, part in (("prose", prose.iloc[30:]), ("junk", junk[~junk.id.isin(held.id)]), ("held", held)):
        (work / name).mkdir(parents=True, exist_ok=True)
        part.to_parquet(work / name / "part-0.parquet", index=False)
    tables = []
    for i in (1, 2):
        out = work / f"e2e-{i}"
        _cli(
            "proxy-lm",
            work / "prose",
            work / "junk",
            "--eval",
            work / "held",
            out,
            "--preset",
            preset,
            "--tokens",
            tokens,
            "--device",
            device,
            "--set",
            "domain_column=kind",
            "--quiet",
            "--no-report",
            "--overwrite",
        )
        tables.append(pd.read_csv(out / "proxy.csv"))
    m = json.loads((work / "e2e-1" / "manifest.json").read_text())
    t = tables[0]
    return {
        "table": t[t.domain.isin(["all", "prose", "boilerplate"])],
        "repeatable": tables[0]["loss"].tolist() == tables[1]["loss"].tolist(),
        "manifest": m,
    }


# ---------------------------------------------------------------------- report
def write_markdown(path: Path, tput: list, sel: dict | None, args, load, e2e: dict | None = None) -> None:
    import torch
    import transformers

    lines = [
        "# Proxy-LM benchmark",
        "",
        f"Host: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average at start "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; torch {torch.__version__}, transformers "
        f"{transformers.__version__}. Command: `python benchmarks/proxy_lm.py "
        f"{' '.join(sys.argv[1:])}`.",
        "",
        "## Training throughput",
        "",
        "Random token batches, the run's model, AdamW, gradient clipping and loss; one warm-up step, then "
        "`steps` timed steps.",
        "",
        "| preset | device | precision | threads | parameters | tokens/step | steps | tokens/s | same losses on "
        "a rerun |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in tput:
        rep = {True: "yes", False: "NO"}.get(r.get("repeatable"), "not checked")
        lines.append(
            f"| {r['preset']} | {r['device']} | {r['precision']} | {r['threads']} | {r['params']:,} | "
            f"{r['tokens_per_step']:,} | {r['steps']} | {r['tokens_per_s']:,.0f} | {rep} |"
        )
    if e2e is not None:
        m = e2e["manifest"]
        lines += [
            "",
            "## End to end on the test corpus",
            "",
            f"`proxy-lm` on tests/data/corpus.jsonl (a prose selection and a boilerplate/link/spam/repeated "
            f"selection, held-out rows of both kinds), preset {m['config']['preset']} on {m['device']} "
            f"({m['precision']}), {m['params']:,} parameters, {m['train_tokens']:,} training tokens per "
            f"selection; training tokens/s: "
            + ", ".join(f"{s['name']} {s['tokens_per_second']:,.0f}" for s in m["selections"])
            + f". A second run into a fresh directory repeated every loss exactly: "
            f"{'yes' if e2e['repeatable'] else 'NO'}.",
            "",
            "| selection | domain | loss (nats/token) |",
            "| --- | --- | --- |",
        ]
        for _, r in e2e["table"].iterrows():
            lines.append(f"| {r['selection']} | {r['domain']} | {r['loss']:.3f} |")
    if sel is not None:
        p, c = sel["proxy"], sel["compare"]
        allrows = p[(p.domain == "all") & (p.selection != "untrained")]
        g = allrows.groupby("selection")["loss"]
        stats = pd.DataFrame({"mean": g.mean(), "std": g.std(ddof=1), "min": g.min(), "max": g.max()})
        stats = stats.sort_values("mean")
        per_seed = allrows.pivot_table(index="selection", columns="seed", values="loss")
        ep = allrows.groupby("selection")["passes"].first()
        tps = p[p.selection != "untrained"].groupby("selection")["seconds"].mean()
        untrained = p[(p.selection == "untrained") & (p.domain == "all")]["loss"]
        tokens = int(allrows["tokens"].iloc[0])
        lines += [
            "",
            "## Held-out loss of each method's selection at equal tokens",
            "",
            f"Corpus: {sum(sel['kinds'].values()):,} documents ({', '.join(f'{k}: {v:,}' for k, v in sel['kinds'].items())}), "
            "built offline from this machine's Python installation (see the module docstring). Stages: "
            "`embed` (MiniLM), `score --heuristics`, `cluster --n-clusters 20`, `compare --ratio 0.3 --holdout 0.1` "
            "(10% of every split set aside before any method runs: the evaluation set), then `proxy-lm` "
            f"(preset tiny, {tokens:,} training tokens per selection, {args.threads} torch thread(s), "
            f"{len(args.seeds)} seeds of initial weights and data order; the selections, the tokenizer and the "
            "scored documents are the same for every seed: `--sample-seed` is left at 0). The budget is in rows (ratio 0.3), so selections differ in tokens: "
            "the passes column says how often each was repeated to reach the same training tokens.",
            "",
            f"Untrained model: {untrained.mean():.3f} nats/token.",
            "",
            "| method | loss mean (nats/token) | std over seeds | min | max | per seed | passes | mean quality "
            "| pairwise diversity | seconds per run |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for m, r in stats.iterrows():
            seeds = ", ".join(f"{v:.3f}" for v in per_seed.loc[m])
            lines.append(
                f"| {m} | {r['mean']:.3f} | {r['std']:.3f} | {r['min']:.3f} | {r['max']:.3f} | {seeds} | "
                f"{ep[m]:.2f} | {c.loc[m, 'quality']:.3f} | {c.loc[m, 'pairwise']:.3f} | {tps[m]:.0f} |"
            )
        best, rest = stats.index[0], stats.index[1:]
        lines += [
            "",
            "Stage wall times (s, from each stage's manifest): "
            + ", ".join(f"{k} {v:.0f}" for k, v in sel["times"].items())
            + ".",
            "",
            "Reading: a difference between two methods means something only when it is larger than both "
            "methods' seed-to-seed spread (std column; min-max range).",
            f"Lowest mean loss: {best} ({stats.loc[best, 'mean']:.3f}); next: "
            + ", ".join(f"{m} (+{stats.loc[m, 'mean'] - stats.loc[best, 'mean']:.3f})" for m in rest)
            + ".",
        ]
    path.write_text("\n".join(lines) + "\n")
    print(path.read_text())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--docs", type=int, default=3000, help="corpus documents")
    ap.add_argument(
        "--tokens",
        type=int,
        default=300_000,
        help="training tokens per selection (the tiny preset's "
        "own default is 1M; 300k keeps 15 runs near 20 minutes on 2 busy cores)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads of the proxy-lm runs (on a shared 2-core "
        "host 1 thread was several times faster than 2: see the throughput table)",
    )
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--presets", nargs="+", default=["tiny", "small"])
    ap.add_argument("--small-steps", type=int, default=1, help="timed steps of the small preset on CPU")
    ap.add_argument("--throughput-only", action="store_true", help="no selection benchmark")
    ap.add_argument(
        "--e2e",
        action="store_true",
        help="also proxy-lm end to end on the test corpus, twice (on by default with --device cuda)",
    )
    ap.add_argument("--e2e-tokens", type=int, default=5_000_000, help="training tokens of the end-to-end run")
    ap.add_argument("--quick", action="store_true", help="small corpus and budget: a smoke run")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    load = os.getloadavg()
    tput = []
    for preset in args.presets:
        if args.device == "cuda":  # twice: the second run must repeat the first one's losses exactly
            a = throughput(preset, "cuda", 1, 50 if preset == "small" else 200)
            b = throughput(preset, "cuda", 1, 50 if preset == "small" else 200)
            a["repeatable"] = a["losses"] == b["losses"]
            a["tokens_per_s"] = max(a["tokens_per_s"], b["tokens_per_s"])
            tput.append(a)
        else:
            for th in (1, 2) if preset == "tiny" else (args.threads,):
                tput.append(throughput(preset, "cpu", th, 20 if preset == "tiny" else args.small_steps))
        print({k: v for k, v in tput[-1].items() if k != "losses"}, flush=True)
    e2e = None
    if args.e2e or args.device == "cuda":
        import tempfile

        e2e = end_to_end(
            Path(tempfile.mkdtemp(prefix="proxy_lm_e2e_")),
            args.device,
            "small" if args.device == "cuda" else "tiny",
            args.e2e_tokens,
        )
    sel = None
    if not args.throughput_only:
        import tempfile

        docs, tokens = (400, 60_000) if args.quick else (args.docs, args.tokens)
        work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="proxy_lm_bench_"))
        sel = run_selection_benchmark(work, docs, tokens, args.seeds, args.quick, args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = (
        "proxy_lm.md"
        if args.device == "cpu" and not args.quick
        else f"proxy_lm_{args.device}{'_quick' if args.quick else ''}.md"
    )
    write_markdown(out / name, tput, sel, args, load, e2e)


if __name__ == "__main__":
    main()
