"""Fidelity (issue 48, item 6): does the search's small proxy rank selections as a stronger one does?

For each recipe-suite cell given (``--cells``; a finished ``recipe_suite.py`` search each), the
verified arms (the chosen recipe, the default, top-k, random and the suite's references) are
selected again exactly as the search selected them (its own ``select_recipe`` over its own
prepared rows; the rows and tokens are checked against ``verify.parquet``), and a **stronger
proxy** is trained on each: ``--tokens`` training tokens (default 8x the suite's) and the model
``--proxy-options`` give (default about 4x the ``tiny`` preset's parameters), scored on the same
evaluation windows of both targets with the same tokenizer. Its ranking of the arms is set
against the small proxies' (the mean of the search's paired verification seeds):

* Spearman's rho between the two rankings, with a bootstrap interval (the small proxies' seeds
  resampled, and the arms);
* pairwise decision accuracy (DataDecide's measure): the share of arm pairs that the small
  proxies order as the stronger one does, over every pair and over the pairs the small proxies
  separate beyond noise (paired 95% t-interval), with the bootstrap's interval.

Each strong model is cached as JSON under ``--work``/fidelity; two train at a time (one torch
thread each). Writes ``benchmarks/results/fidelity.json`` (``--results`` names another file) and
renders ``fidelity.md`` from every check in the folder::

    python benchmarks/fidelity.py --cells man:1x,pydoc:1x --proxy-options ""
    python benchmarks/fidelity.py --cells man:1x,pydoc:1x --results fidelity_large.json
    python benchmarks/fidelity.py --render

The first is the same model on 8x the tokens; the second the default ``--proxy-options`` (about
4x the parameters) on 8x the tokens.

``--cost`` measures instead what a larger model costs before anyone sizes a check on it: on the
first cell given, two arms (``COST_ARMS``) trained side by side (two at a time, as the check runs)
with the search's own model and with ``--proxy-options``, both at ``--tokens``; writes
``fidelity_cost.json``, which ``fidelity.md`` renders with the check's cost at 8x the tokens::

    python benchmarks/fidelity.py --cost --cells man:1x --tokens 262144
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results"
STRONG = "d_model=256,n_heads=8,d_ff=512,n_layers=5"  # about 4x tiny's parameters (tiny: 128, 4, 256, 4)
TARGETS = ("eval", "quality")
COST_ARMS = ("default", "random")
BOOT = 2000


def _cell_dir(suite: dict, corpus: str, regime: str) -> Path:
    for c in suite["cells"]:
        if c["corpus"] == corpus and c["regime"] == regime:
            return Path(c["run_dir"])
    raise SystemExit(f"fidelity: no finished recipe-suite cell {corpus}:{regime} (run recipe_suite.py first)")


def search_config(cell) -> object:
    """The ``SearchConfig`` a cell's search ran with, from its manifest. A cell searched before 0.3
    recorded the optimiser's fine controls as fields of their own (and ``solver``): those that differ
    from ``SOLVER_PARAMS``' defaults go into ``solver_params`` (as 0.3 records them), the rest equal
    the defaults."""
    from datamask.analysis.search import SearchConfig
    from datamask.estimator.params import SOLVER_PARAMS

    d = dict(json.loads((Path(cell) / "manifest.json").read_text())["config"])
    d.pop("solver", None)  # 0.2's name of --method (None or the method)
    sp = dict(d.pop("solver_params", None) or {})
    for k in SOLVER_PARAMS:
        v = d.pop(k, SOLVER_PARAMS[k])
        if v != SOLVER_PARAMS[k] and k not in sp:
            sp[k] = tuple(v) if k == "logit_range" and isinstance(v, list) else v
    return SearchConfig(**d, solver_params=sp or None)


def selections(cell: Path, check: bool = True) -> dict:
    """``{arm: sel}``: every verified arm selected again as the search selected it (``check``:
    stop when an arm's rows or tokens differ from ``verify.parquet``'s; ``--cost`` only times
    models and takes the selections as they come)."""
    import dask
    from distributed import Client, LocalCluster

    from datamask.analysis.search.run import _plan, corpus_parts, count_search_tokens
    from datamask.analysis.search.trials import select_recipe

    cfg = search_config(cell)
    v = pd.read_parquet(cell / "verify.parquet").drop_duplicates("name").set_index("name")
    splits = _plan(cfg)
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as lc, Client(lc) as client:
        counts, _ = count_search_tokens(client, cfg, splits)
    parts, _ = corpus_parts(cfg, splits)
    frames = dask.compute(*parts, scheduler="sync")
    out = {}
    for arm, row in v.iterrows():
        sel = select_recipe(*frames, recipe=json.loads(row["recipe"]), cfg=cfg, out=str(cell), counts=counts)
        got = (len(sel["rows"]), sel["stats"]["selected_tokens"])
        if check and got != (int(row["rows"]), int(row["selected_tokens"])):
            raise SystemExit(
                f"fidelity: {cell.name} {arm}: selected {got}, the search {row['rows']}, {row['selected_tokens']}"
            )
        out[arm] = sel
    return out


def train_strong(cell: str, arm: str, sel: dict, tokens: int, options: str, seed: int) -> dict:
    """(a process) One stronger proxy on ``sel``, the search's tokenizer and evaluation windows."""
    from datamask.analysis.proxy_lm.runner import proxy_device
    from datamask.analysis.proxy_lm.train import deterministic, train_selection
    from datamask.analysis.search.prepare import load_prep
    from datamask.analysis.search.trials import _losses

    cfg = search_config(cell)
    cfg = cfg.replace(proxy_tokens=int(tokens), proxy_options=",".join(x for x in (cfg.proxy_options, options) if x))
    prep = load_prep(cell)
    pc = cfg.proxy_config(seed)
    r = pc.resolved()
    device, precision = proxy_device(pc)
    t0 = time.perf_counter()
    with deterministic(1):
        res = train_selection(arm, prep.docs(sel["rows"]), prep.tok, r, prep.initial_state(r),
                              [(e, e) for e in prep.evals], device, precision, quiet=True)  # fmt: skip
    return {"arm": arm, "seed": seed, "evals": _losses(res["evals"], res["unigram"]), "steps": res["steps"],
            "tokens": res["tokens"], "passes": res["passes"], "params": res.get("params"),
            "seconds": time.perf_counter() - t0, "precision": precision}  # fmt: skip


def _ranks(x):
    return pd.Series(x).rank().to_numpy()


def spearman(a, b) -> float:
    ra, rb = _ranks(a), _ranks(b)
    return float(np.corrcoef(ra, rb)[0, 1])


def accuracy(small: pd.DataFrame, strong: pd.Series, only_beyond=False, count=False):
    """Share of arm pairs the small proxies (``small``: seeds x arms) order as ``strong`` does;
    ``only_beyond``: only the pairs whose paired 95% t-interval excludes zero."""
    from datamask.analysis.search.noise import paired_t

    arms, hit, n = list(strong.index), 0, 0
    m = small.mean()
    for i, a in enumerate(arms):
        for b in arms[i + 1 :]:
            if only_beyond and not paired_t(small[a].to_numpy(), small[b].to_numpy())["beyond"]:
                continue
            n += 1
            hit += (m[a] < m[b]) == (strong[a] < strong[b])
    if count:
        return n
    return hit / n if n else None


def fidelity(small: pd.DataFrame, strong: pd.Series, seed=0) -> dict:
    """Spearman and decision accuracy of the small proxies' mean ranking against ``strong``, with a
    bootstrap over the small proxies' seeds and the arms."""
    arms = list(strong.index)
    small = small[arms]
    out = {"spearman": spearman(small.mean().to_numpy(), strong.to_numpy()),
           "accuracy": accuracy(small, strong), "accuracy_beyond": accuracy(small, strong, True),
           "pairs_beyond": accuracy(small, strong, True, count=True), "arms": len(arms)}  # fmt: skip
    rng = np.random.default_rng(seed)
    rho, acc = [], []
    for _ in range(BOOT):
        s = small.iloc[rng.integers(0, len(small), len(small))]
        pick = rng.choice(arms, len(arms), replace=True)
        if len(set(pick)) >= 3:
            rho.append(spearman(s[pick].mean().to_numpy(), strong[pick].to_numpy()))
        acc.append(accuracy(s, strong))
    out["spearman_ci"] = [float(np.nanpercentile(rho, 2.5)), float(np.nanpercentile(rho, 97.5))]
    out["accuracy_ci"] = [float(np.percentile(acc, 2.5)), float(np.percentile(acc, 97.5))]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", default="man:1x,pydoc:1x")
    ap.add_argument("--suite", default=str(RESULTS / "recipe_suite.json"))
    ap.add_argument("--work", default="/work/cache/suite")
    ap.add_argument("--tokens", type=int, default=8 * 524_288, help="the stronger proxy's training tokens")
    ap.add_argument("--proxy-options", default=STRONG, help="the stronger proxy's model (proxy-lm's flag names)")
    ap.add_argument("--seed", type=int, default=10_000, help="its seed (the first verification seed)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument(
        "--results", default="fidelity.json", help="the check's file under --out (fidelity.md renders each)"
    )
    ap.add_argument("--render", action="store_true")
    ap.add_argument("--cost", action="store_true", help="time the search's model and --proxy-options side by side")
    args = ap.parse_args(argv)
    from benchmarks.fidelity_report import render

    out = Path(args.out)
    if args.render:
        render(out)
        return
    suite = json.loads(Path(args.suite).read_text())
    if args.cost:
        cost(args, suite, out)
        return
    cache = Path(args.work) / "fidelity"
    cache.mkdir(parents=True, exist_ok=True)
    t0, load0 = time.time(), os.getloadavg()[0]
    cells = []
    for spec in args.cells.split(","):
        corpus, regime = spec.strip().split(":")
        cell = _cell_dir(suite, corpus, regime)
        key = f"{corpus}-{regime}-{args.tokens}-{args.proxy_options.replace(',', '_').replace('=', '')}-s{args.seed}"
        todo, models = {}, {}
        sels = None
        for arm in pd.read_parquet(cell / "verify.parquet")["name"].unique():
            f = cache / f"{key}-{arm}.json"
            if f.exists():
                models[arm] = json.loads(f.read_text())
            else:
                sels = sels or selections(cell)
                todo[arm] = sels[arm]
        with ProcessPoolExecutor(args.jobs) as ex:
            futs = {
                a: ex.submit(train_strong, str(cell), a, s, args.tokens, args.proxy_options, args.seed)
                for a, s in todo.items()
            }
            for arm, fu in futs.items():
                models[arm] = fu.result()
                (cache / f"{key}-{arm}.json").write_text(json.dumps(models[arm]))
                print(f"[fidelity] {corpus} {regime} {arm}: {models[arm]['seconds']:.0f} s", flush=True)
        v = pd.read_parquet(cell / "verify.parquet")
        res = {}
        for t in TARGETS:
            small = v.pivot_table(index="seed", columns="name", values=f"loss.{t}", aggfunc="first").dropna()
            strong = pd.Series({a: m["evals"][t]["loss"] for a, m in models.items()})
            res[t] = fidelity(small, strong)
            res[t]["small"] = small.mean().to_dict()
            res[t]["strong"] = strong.to_dict()
        cells.append({"corpus": corpus, "regime": regime, "run_dir": str(cell), "fidelity": res,
                      "strong_models": models})  # fmt: skip
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load": [load0, os.getloadavg()[0]],
            "seconds": time.time() - t0, "tokens": args.tokens, "proxy_options": args.proxy_options,
            "small_tokens": suite["settings"]["proxy_tokens"], "seed": args.seed}  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / args.results).write_text(json.dumps({"meta": meta, "cells": cells}, indent=1, default=str))
    render(out)


def cost(args, suite: dict, out: Path) -> None:
    """``fidelity_cost.json``: seconds per model of the search's model and of ``--proxy-options``
    at ``--tokens``, on :data:`COST_ARMS` of the first cell, two models at a time."""
    corpus, regime = args.cells.split(",")[0].strip().split(":")
    cell = _cell_dir(suite, corpus, regime)
    sels = selections(cell, check=False)
    t0, load0 = time.time(), os.getloadavg()[0]
    models = []
    for options in ("", args.proxy_options):
        with ProcessPoolExecutor(args.jobs) as ex:
            futs = [ex.submit(train_strong, str(cell), a, sels[a], args.tokens, options, args.seed) for a in COST_ARMS]
            for fu in futs:
                m = fu.result()
                models.append(
                    {"options": options, **{k: m[k] for k in ("arm", "seconds", "params", "steps", "tokens")}}
                )
                print(f"[fidelity cost] {options or 'search model'} {m['arm']}: {m['seconds']:.0f} s", flush=True)
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load": [load0, os.getloadavg()[0]],
            "seconds": time.time() - t0, "tokens": args.tokens, "cell": f"{corpus} {regime}", "jobs": args.jobs,
            "check_tokens": 8 * suite["settings"]["proxy_tokens"], "proxy_options": args.proxy_options}  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "fidelity_cost.json").write_text(json.dumps({"meta": meta, "models": models}, indent=1))
    if (out / "fidelity.json").exists():
        from benchmarks.fidelity_report import render

        render(out)


if __name__ == "__main__":
    main()
