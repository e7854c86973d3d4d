"""The recipe suite (issue 48): which recipe trains better proxies, at equal tokens, on content.

For each corpus of ``suite_corpora.py`` (four real corpora of >= 3M proxy tokens: man pages,
Python docstrings, Debian package descriptions, Debian changelogs; and the known-answer
``planted`` corpus) and each regime, one ``datamask.dask.search`` at the search's own rules:

* every arm selects the same tokens (the budget ``PROXY_TOKENS / passes``, counted with the
  corpus's BPE-4096, ``--tokenizer``, each split within one document of its share) and every
  model trains in that same tokenizer on the same ``PROXY_TOKENS`` (``1x``: one pass over its
  selection; ``4x``: four; one end-of-text id a document makes it slightly less), 256 optimiser
  steps of the ``tiny`` proxy;
* ``--trials`` recipes (scrambled Sobol points of the search's default space), a regressor, the
  chosen recipe, then the verification on ``--verify`` paired seeds of: the chosen recipe, the
  default (what ``datamask select`` runs), top-k, random, and the references ``ARMS`` (the
  paper's recipe, ``--preset paper``; a facility recipe); ``recommended`` is the search's rule;
* two targets: ``eval`` (representative held-out documents) and ``quality`` (held-out documents
  a classifier of curated prose rates highest; suite_corpora.py), each model's loss and its
  margin over a unigram model of its own training tokens on each.

``benchmarks/recipe_suite_report.py`` writes ``recipe_suite.md`` from ``recipe_suite.json`` and
``recipe_suite_records.csv`` (every model): per cell, each arm's loss per target, the paired 95%
t-intervals against the default, top-k and random, steps and margins; then the verdicts.

A cell is one search directory under ``--work``/runs, cached: a rerun reuses finished cells and
resumes a killed one; ``--cells man:1x,pydoc:4x`` runs some; a file ``--pause`` (default
``/work/PAUSE``) present between cells makes it wait (so tests can run with the cores idle)::

    python benchmarks/recipe_suite.py                       # 5 corpora x 2 regimes
    python benchmarks/recipe_suite.py --report              # only the report, from the JSON/CSV
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

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.suite_corpora import CORPORA, build  # noqa: E402

REGIMES = {"1x": 1, "4x": 4}
PROXY_TOKENS = 524_288  # 256 steps of the tiny proxy (2,048 tokens a step)
# the references beside the search's own (default, top-k, random)
ARMS = {
    "paper": "preset=paper",
    "facility": "diversity=facility,lam=0.5,prune=0.5,near_duplicate=null",
}
RESULTS = ROOT / "benchmarks" / "results"


def _references() -> str:
    return ";".join(f"{k}:{v}" for k, v in ARMS.items())


def settings(args) -> dict:
    return {
        "trials": args.trials,
        "seeds": 1,
        "verify": args.verify,
        "proxy_tokens": args.proxy_tokens,
        "references": _references(),
        "target": "eval",
        "seed": args.seed,
    }


#: the cells' design beside their settings: since 2 the budget and the proxies share one tokenizer
#: (design 1 counted the budget in ``n_tokens``' words: 0.53-0.63 "one pass"; its cells are retired)
DESIGN = 2


def run_dir(work: Path, corpus: str, regime: str, s: dict) -> Path:
    key = hashlib.sha1(json.dumps({**s, "design": DESIGN}, sort_keys=True).encode()).hexdigest()[:10]
    return work / "runs" / f"{corpus}-{regime}-{key}"


def run_cell(client, corpus: dict, regime: str, s: dict, work: Path) -> Path:
    """One corpus x regime's search (reused when finished before)."""
    import datamask.dask as dmd

    out = run_dir(work, corpus["name"], regime, s)
    if (out / "search.json").exists() and (out / "manifest.json").exists():
        return out
    budget = int(s["proxy_tokens"]) // REGIMES[regime]
    print(f"[suite] {corpus['name']} {regime}: search -> {out} (tokens {budget:,})", flush=True)
    t0 = time.time()
    dmd.search(
        corpus["input"], str(out), [corpus["eval"], corpus["quality"]], client=client(), tokens=budget,
        tokenizer=corpus["tokenizer"], **s,
    )  # fmt: skip
    print(f"[suite] {corpus['name']} {regime}: {time.time() - t0:.0f} s", flush=True)
    return out


def records_of(out: Path, corpus: str, regime: str) -> pd.DataFrame:
    frames = []
    for kind, f in (("trial", "trials.parquet"), ("verify", "verify.parquet")):
        d = pd.read_parquet(out / f)
        if kind == "trial":
            d["name"] = "trial-" + d["trial"].astype(str)
        frames.append(d.assign(kind=kind))
    return pd.concat(frames, ignore_index=True, sort=False).assign(corpus=corpus, regime=regime)


def _wait(pause: Path) -> None:
    if pause.exists():
        print(f"[suite] paused while {pause} exists", flush=True)
    while pause.exists():
        time.sleep(20)


def _args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/work/cache/suite", help="the corpora and the cells (cached)")
    ap.add_argument("--cells", default=None, help="CORPUS:REGIME,... (default: every corpus x regime)")
    ap.add_argument("--trials", type=int, default=16)
    ap.add_argument("--verify", type=int, default=5, help="paired verification seeds")
    ap.add_argument("--proxy-tokens", type=int, default=PROXY_TOKENS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--pause", default="/work/PAUSE")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--report", action="store_true", help="only write the report from the results files")
    args = ap.parse_args(argv)
    cells = [(c, r) for c in CORPORA for r in REGIMES]
    if args.cells:
        cells = [tuple(x.strip().split(":")) for x in args.cells.split(",") if x.strip()]
        bad = [c for c in cells if len(c) != 2 or c[0] not in CORPORA or c[1] not in REGIMES]
        if bad:
            ap.error(
                f"--cells: write CORPUS:REGIME with CORPUS of {', '.join(CORPORA)} and REGIME of {', '.join(REGIMES)}"
            )
    return args, cells


def main(argv=None):
    args, cells = _args(argv)
    out = Path(args.out)
    from benchmarks import recipe_suite_report as rep

    if args.report:
        rep.write(out)
        return
    from distributed import Client, LocalCluster

    work, s, held = Path(args.work), settings(args), []

    def client():  # started on the first cell that is not cached
        if not held:
            lc = LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=None)
            held.extend([lc, Client(lc)])
        return held[1]

    done = {}
    try:
        for name, regime in cells:
            _wait(Path(args.pause))
            corpus = build(name, work)
            load0, t0 = os.getloadavg()[0], time.time()
            d = run_cell(client, corpus, regime, s, work)
            done[(name, regime)] = (corpus, d, load0, os.getloadavg()[0], time.time() - t0)
    finally:
        for h in held[::-1]:
            h.close()
    merge(out, done, s)
    rep.write(out)


def merge(out: Path, done: dict, s: dict) -> None:
    """Fold the cells run now into ``recipe_suite.json`` and ``recipe_suite_records.csv``
    (cells of earlier invocations with the same settings stay)."""
    path, csv = out / "recipe_suite.json", out / "recipe_suite_records.csv"
    old = json.loads(path.read_text()) if path.exists() else {"cells": [], "corpora": {}}
    if old.get("settings") not in (None, s) or old.get("meta", {}).get("design") != DESIGN:
        old = {"cells": [], "corpora": {}}  # other settings or design: the earlier cells are not comparable
    keep = {(c["corpus"], c["regime"]) for c in old["cells"]} - set(done)
    cells = [c for c in old["cells"] if (c["corpus"], c["regime"]) in keep]
    frames = [pd.read_csv(csv)] if csv.exists() and keep else []
    if frames:
        frames[0] = frames[0][[(a, b) in keep for a, b in zip(frames[0].corpus, frames[0].regime)]]
    corpora = dict(old.get("corpora", {}))
    for (name, regime), (corpus, d, l0, l1, secs) in done.items():
        search = json.loads((d / "search.json").read_text())
        cells.append({"corpus": name, "regime": regime, "run_dir": str(d), "search": search,
                      "load": [l0, l1], "seconds": secs})  # fmt: skip
        frames.append(records_of(d, name, regime))
        corpora[name] = {k: v for k, v in corpus.items() if k not in ("input", "eval", "quality", "tokenizer")}
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "settings": s, "arms": ARMS, "design": DESIGN}
    out.mkdir(parents=True, exist_ok=True)
    pd.concat(frames, ignore_index=True, sort=False).to_csv(csv, index=False)
    path.write_text(
        json.dumps({"settings": s, "meta": meta, "corpora": corpora, "cells": cells}, indent=1, default=str)
    )


if __name__ == "__main__":
    main()
