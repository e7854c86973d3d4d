"""The recipe suite (issue 35): the search, the default, top-k and random on real corpora, two regimes.

For each corpus of ``suite_corpora.py`` (man pages, Python docstrings, the Debian package index,
Debian changelogs, and the known-answer ``planted`` corpus; MiniLM embeddings and heuristic quality
through the real ``embed`` and ``score`` stages) and each regime — ``1x``: every proxy trains one
pass over its own selection, ``3x``: three passes — it runs ``datamask.dask.search`` with its
default space (the verification retrains the chosen recipe, the default, top-k and random on
``--verify`` paired seeds), then writes ``benchmarks/results/recipe_suite.md``:

* per corpus x regime: each verified recipe's mean and sd loss, its paired difference from the
  default, top-k and random with its paired 95% t-interval, *beyond* or *within noise*; the
  recommended recipe; the regressor's cross-validated Spearman;
* why: per regime, Spearman of each selection property (mean quality, pairwise diversity,
  coverage, near-duplicate share, mean document length, proxy tokens per row, ...) with the
  loss, within each corpus and pooled over corpora (ranks centred per corpus), with a bootstrap
  interval and how many corpora agree in sign;
* the verdict on the default recipe (issue 35, item 6);

and ``recipe_suite_records.csv`` (every proxy model) and ``recipe_suite.json`` (per cell).

The regimes use ``--proxy-tokens 1x`` / ``3x`` where the search takes a multiple of each
selection's tokens. Where it does not (older code), ``1x`` trains every model on the same token
count, the input's characters x ratio / 4 (about one pass; each record's ``passes`` says how
many), and ``3x`` on three times the median selection tokens of the ``1x`` run.

Everything is cached under ``--work`` (default ``/work/cache/recipe-suite``): the corpora, and one
search directory per corpus x regime x settings (a rerun reuses finished searches and resumes
killed ones). Nothing is installed; see suite_corpora.py for the sources::

    python benchmarks/recipe_suite.py                         # 5 corpora x 2 regimes
    python benchmarks/recipe_suite.py --quick --corpora packages,planted
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import recipe_suite_report as rep  # noqa: E402
from benchmarks.suite_corpora import CORPORA, build  # noqa: E402

CHARS_PER_TOKEN = 4.0  # the fallback's estimate of a proxy BPE token (older code only)


def multiples_supported() -> bool:
    """Whether ``datamask.dask.search`` takes ``proxy_tokens="4x"`` (a multiple of each selection's tokens)."""
    from datamask.analysis.search.config import SearchConfig
    from datamask.dask.params import frame_config
    from datamask.errors import ConfigError

    try:
        frame_config(SearchConfig, {"proxy_tokens": "4x"}, "search", exclude=("eval",))
    except (ConfigError, ValueError, TypeError):
        return False
    return True


def _settings(args) -> dict:
    return {
        k: getattr(args, k)
        for k in ("trials", "seeds", "verify", "ratio", "proxy_options", "space", "seed", "steps")
        if getattr(args, k) is not None
    }


def _run_dir(work: Path, corpus: str, regime: str, tokens, settings: dict) -> Path:
    key = hashlib.sha1(json.dumps({**settings, "tokens": tokens}, sort_keys=True).encode()).hexdigest()[:10]
    return work / "runs" / f"{corpus}-{regime}-{key}"


def run_search(client, corpus: dict, regime: str, tokens, settings: dict, work: Path) -> tuple:
    """(search.json, records frame) of one corpus x regime; reused when finished before.
    ``client()`` gives the Dask client (a cluster is started only for a search to run)."""
    import datamask.dask as dmd

    out = _run_dir(work, corpus["name"], regime, tokens, settings)
    done = out / "search.json"
    if not (done.exists() and (out / "manifest.json").exists()):
        print(f"[suite] {corpus['name']} {regime}: search -> {out} (proxy_tokens={tokens})", flush=True)
        t0 = time.time()
        dmd.search(
            corpus["input"], str(out), corpus["eval"], client=client(), proxy_tokens=tokens, no_report=True, **settings
        )
        print(f"[suite] {corpus['name']} {regime}: {time.time() - t0:.0f} s", flush=True)
    s = json.loads(done.read_text())
    frames = []
    for kind, f in (("trial", "trials.parquet"), ("verify", "verify.parquet")):
        if (out / f).exists():
            d = pd.read_parquet(out / f)
            if kind == "trial":
                d["name"] = "trial-" + d["trial"].astype(str)
            frames.append(d.assign(kind=kind))
    rec = pd.concat(frames, ignore_index=True, sort=False)
    rec = rec.assign(corpus=corpus["name"], regime=regime, run_dir=str(out))
    return s, enrich(rec)


def enrich(rec: pd.DataFrame) -> pd.DataFrame:
    """``passes``, ``words_per_row`` (the input's ``n_tokens``: whitespace words) and
    ``tokens_per_row`` (proxy tokens) where the records lack them."""
    rows = rec["rows"].astype(float).where(rec["rows"] > 0)
    if "passes" not in rec:
        rec["passes"] = rec.get("epochs", np.nan)
    if "words_per_row" not in rec:
        rec["words_per_row"] = rec["selected_tokens"] / rows if "selected_tokens" in rec else np.nan
    if "tokens_per_row" not in rec:
        rec["tokens_per_row"] = rec["selection_tokens"] / rows if "selection_tokens" in rec else np.nan
    return rec


def regime_tokens(regime: str, corpus: dict, ratio: float, first: pd.DataFrame | None, native: bool):
    """What ``proxy_tokens`` a regime passes: ``"4x"`` natively, else a token count (docstring)."""
    if native:
        return regime
    k = float(regime.rstrip("x"))
    if first is not None and "selection_tokens" in first and first["selection_tokens"].notna().any():
        base = float(first["selection_tokens"].median())
    else:
        base = corpus["chars"] * ratio / CHARS_PER_TOKEN
    return int(max(2048, round(k * base / 2048) * 2048))


def load_earlier(spec: str | None) -> dict:
    """Cells, records, corpora and invocation metadata of earlier result files (``--merge``).
    Invocation k (1, 2, ...) is the k-th file; a cell found in two files is taken from the first."""
    out = {"cells": [], "records": [], "corpora": [], "meta": [], "done": set()}
    for k, f in enumerate([x for x in (spec or "").split(",") if x.strip()], start=1):
        path = Path(f.strip())
        d = json.loads(path.read_text())
        rec = pd.read_csv(path.with_name(path.stem + "_records.csv"))
        out["meta"].append({**d["meta"], "file": path.name})
        for c in d["cells"]:
            key = (c["corpus"], c["regime"])
            if key in out["done"]:
                continue
            out["done"].add(key)
            out["cells"].append({**c, "invocation": k})
            out["records"].append(rec[(rec["corpus"] == key[0]) & (rec["regime"] == key[1])])
        out["corpora"] += d["corpora"]
    return out


def _machine(load0, load1, t_total, t_cells) -> list:
    import torch

    return [
        f"Host: {platform.machine()}, {os.cpu_count()} cores shared with other jobs; Python "
        f"{platform.python_version()}, torch {torch.__version__}. Load average (1 / 5 / 15 min) at start "
        f"{load0[0]:.2f} / {load0[1]:.2f} / {load0[2]:.2f}, at the end {load1[0]:.2f} / {load1[1]:.2f} / "
        f"{load1[2]:.2f}. This invocation: {t_total / 60:.1f} min; the cells' searches, as each search.json "
        f"records them (a cached cell keeps its first run's): {t_cells / 60:.1f} min.",
    ]


def write_markdown(path: Path, args, corpora, cells, records, meta) -> None:
    regimes = sorted(records["regime"].unique())
    lines = [
        "# Recipe suite: the search, the default, top-k and random on real corpora",
        "",
        *_machine(meta["load0"], meta["load1"], meta["wall"], sum(c["wall_seconds"] or 0 for c in cells)),
        "",
        f"Command: `python benchmarks/recipe_suite.py {' '.join(meta['argv'])}`; each cell runs "
        f"`datamask.dask.search(INPUT, OUT, EVAL, {', '.join(f'{k}={v!r}' for k, v in meta['settings'].items())}, "
        "proxy_tokens=REGIME)` on one local cluster "
        f"({args.workers} workers x 1 thread). Regimes: "
        + (
            " / ".join(f"`proxy_tokens={r!r}`" for r in regimes) + " (passes over each selection)."
            if meta["native"]
            else "this code takes no multiple, so `1x` trains every model on the same tokens (the input's "
            "characters x ratio / 4) and `4x` on four times the 1x run's median selection tokens; the passes "
            "column says what each recipe got."
        ),
        "Loss: mean nats/token on the corpus's evaluation set (lower is better). A paired difference is "
        "*beyond noise* when its paired 95% t-interval (t quantile at seeds - 1 degrees of freedom) excludes zero; "
        "± is the interval's half width.",
        "",
        "| corpus | input documents | words per document | evaluation documents |",
        "| --- | --- | --- | --- |",
        *[f"| {c['name']} | {c['docs']:,} | {c['words_per_doc']:.1f} | {c['eval_docs']} |" for c in corpora],
        "",
        "## Per corpus and regime",
        "",
    ]
    for k, m in enumerate(meta.get("earlier", []), start=1):
        lines += [
            f"Invocation {k} (cells marked *invocation {k}*, kept from `{m['file']}`): "
            f"`python benchmarks/recipe_suite.py {' '.join(m['argv'])}`; load average at start "
            f"{m['load0'][0]:.2f} / {m['load0'][1]:.2f} / {m['load0'][2]:.2f}, at the end "
            f"{m['load1'][0]:.2f} / {m['load1'][1]:.2f} / {m['load1'][2]:.2f}; {m['wall'] / 60:.1f} min.",
            "",
        ]
    for c in cells:
        lines += rep.cell_lines(c)
    lines += ["## Why: what the loss follows, pooled over corpora", ""]
    for regime in regimes:
        lines += [f"### {regime}", ""]
        lines += rep.why_table(records, regime)[0]
    lines += rep.verdict_lines(cells, records)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    print(path.read_text())


def _args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/work/cache/recipe-suite", help="corpora and searches (cached)")
    ap.add_argument("--corpora", default=",".join(CORPORA), help="comma-separated, of " + ", ".join(CORPORA))
    ap.add_argument("--regimes", default="1x,3x", help="passes over each selection, comma-separated")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=1, help="proxy seeds per trial")
    ap.add_argument("--verify", type=int, default=5, help="paired verification seeds (>= 5 for the suite)")
    ap.add_argument("--ratio", type=float, default=0.2)
    ap.add_argument("--steps", type=int, default=None, help="policy-gradient steps per selection (search's default)")
    ap.add_argument("--space", default=None, help="the search space (default: the search's)")
    ap.add_argument("--proxy-options", default=None, help="e.g. d_model=64,n_layers=2 (default: the tiny preset)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="smoke run: 4 trials, 2 verification seeds")
    ap.add_argument("--out", default=None, help="default benchmarks/results/recipe_suite.md (quick: WORK/quick.md)")
    ap.add_argument(
        "--merge",
        default=None,
        help="earlier result files (recipe_suite.json, comma-separated; each beside its _records.csv): their "
        "cells are reused, not rerun, and reported with the invocation that measured them",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.trials, args.verify = 4, 2
    names = [n.strip() for n in args.corpora.split(",") if n.strip()]
    bad = [n for n in names if n not in CORPORA]
    if bad:
        ap.error(f"--corpora: unknown {', '.join(bad)}; choose from {', '.join(CORPORA)}")
    regimes = [r.strip() for r in args.regimes.split(",")]
    if any(not r.endswith("x") or not r[:-1].replace(".", "", 1).isdigit() for r in regimes):
        ap.error(f"--regimes: write multiples such as 1x,4x; got {args.regimes!r}")
    return args, names, regimes


def main(argv=None):
    args, names, regimes = _args(argv)
    from distributed import Client, LocalCluster

    work = Path(args.work)
    native = multiples_supported()
    if not native:
        print("[suite] this datamask takes no --proxy-tokens multiple: regimes fall back to token counts", flush=True)
    settings = _settings(args)
    load0, t0 = os.getloadavg(), time.time()
    cells, frames = [], []
    held = []

    def client():  # started on the first search that is not cached
        if not held:
            lc = LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None)
            held.extend([lc, Client(lc)])
        return held[1]

    earlier = load_earlier(args.merge)
    todo = [n for n in names if any((n, r) not in earlier["done"] for r in regimes)]
    corpora = [build(n, work, seed=args.seed) for n in todo]  # cached; embedding only on the first run
    try:
        for corpus in corpora:
            first = None
            for regime in regimes:
                if (corpus["name"], regime) in earlier["done"]:
                    print(f"[suite] {corpus['name']} {regime}: reused from an earlier invocation", flush=True)
                    continue
                tokens = regime_tokens(regime, corpus, args.ratio, first, native)
                s, rec = run_search(client, corpus, regime, tokens, settings, work)
                first = rec if first is None else first
                frames.append(rec)
                cells.append({**rep.cell_summary(rec, corpus["name"], regime, s), "invocation": 0})
    finally:
        for h in held[::-1]:
            h.close()
    meta = {
        "load0": load0,
        "load1": os.getloadavg(),
        "wall": time.time() - t0,
        "native": native,
        "settings": settings,
        "argv": sys.argv[1:] if argv is None else list(argv),
    }
    cells += earlier["cells"]
    frames += earlier["records"]
    records = pd.concat(frames, ignore_index=True, sort=False)
    meta["earlier"] = earlier["meta"]
    names_now = {c["name"] for c in corpora}
    corpora += [c for c in earlier["corpora"] if c["name"] not in names_now and not names_now.add(c["name"])]
    order = {n: i for i, n in enumerate(CORPORA)}
    cells.sort(key=lambda c: (order.get(c["corpus"], 99), float(c["regime"].rstrip("x"))))
    corpora.sort(key=lambda c: order.get(c["name"], 99))
    out = (
        Path(args.out)
        if args.out
        else (work / "quick.md" if args.quick else ROOT / "benchmarks/results/recipe_suite.md")
    )
    keep = [c for c in records.columns if c not in ("u",)]
    records[keep].to_csv(out.with_name(out.stem + "_records.csv"), index=False)
    out.with_name(out.stem + ".json").write_text(
        json.dumps({"cells": cells, "corpora": corpora, "meta": meta}, indent=1, default=str)
    )
    write_markdown(out, args, corpora, cells, records, meta)


if __name__ == "__main__":
    main()
