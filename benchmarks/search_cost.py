"""Where a search trial's seconds go -> benchmarks/results/search_cost.md

In one process (one torch thread, as a search's worker runs it), on the corpus of
``search_corpus.py``: the search's preparation, then ``--models`` trials of the default space
(selection + one proxy model each, the search's own task functions) under cProfile with the
process's CPU time as its clock (a shared host's load stretches wall seconds, and unevenly
across the parts; CPU seconds much less). The table gives the cumulative CPU seconds of the
parts a trial is made of: loading the shared preparation, the selection (``select_split``),
the selection's statistics, tokenisation, building the model, the optimiser steps, the final
evaluation. ``--label`` names the run in the table, so one file holds the breakdown before
and after a change (rows are appended).

    python benchmarks/search_cost.py --work /work/cache/search-cost/corpus --label after
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (label, function name as cProfile reports it: file suffix, name)
PARTS = (
    ("load prep", "prepare.py", "load_prep"),
    ("selection (select_split)", "select_split.py", "select_split"),
    ("selection statistics", "trials.py", "selection_stats"),
    ("tokenise selection", "tokenizer.py", "encode"),
    ("token stream", "model.py", "__init__"),
    ("build model", "model.py", "build_model"),
    ("optimiser steps", "train.py", "_train_loop"),
    ("final evaluation", "train.py", "evaluate"),
)


def _cum(stats: pstats.Stats, suffix: str, name: str) -> float:
    tot = 0.0
    for (path, _line, fn), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():
        if fn == name and path.endswith(suffix):
            tot += ct
    return tot


def quick_corpus(work: Path) -> dict:
    """The raw text of ``search_corpus.py`` (its first step) with a stand-in for the model stages:
    hashed-word embeddings (384 dimensions, randomly projected) and a quality of distinct words
    per word. The trials' cost has the same shape (rows, text, dimensions); the losses do not
    mean what the real corpus's do."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    from sklearn.feature_extraction.text import HashingVectorizer

    from benchmarks.search_corpus import _raw

    _raw(work, 3300)
    out = work / "quick"
    if not (out / "corpus.parquet").exists():
        df = pd.read_parquet(work / "raw" / "corpus.parquet")
        X = HashingVectorizer(n_features=4096, alternate_sign=False).transform(df.text.tolist())
        E = np.asarray(X @ np.random.default_rng(0).normal(size=(4096, 384)), dtype=np.float32)
        E /= np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
        words = [t.split() for t in df.text]
        q = np.array([len(set(w)) / max(len(w), 1) * np.log1p(len(w)) for w in words], dtype=np.float32)
        emb = pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), 384)
        out.mkdir(parents=True, exist_ok=True)
        t = pa.table({"id": df.id.to_numpy(), "text": df.text.tolist(), "embedding": emb, "quality": q})
        pq.write_table(t, out / "corpus.parquet")
    return {"input": str(out), "eval": str(work / "eval")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=str(ROOT / "benchmarks" / ".cache" / "search"))
    ap.add_argument("--models", type=int, default=3)
    ap.add_argument("--label", default="now")
    ap.add_argument("--quick", action="store_true", help="stand-in embeddings and quality (no model stages)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "search_cost.md"))
    args = ap.parse_args(argv)
    import dask
    import torch

    from benchmarks.search_corpus import prepare as corpus_prepare
    from datamask.analysis.search import SearchConfig
    from datamask.analysis.search.prepare import prepare
    from datamask.analysis.search.run import build_space, corpus_parts
    from datamask.analysis.search.trials import select_recipe, train_recipe

    torch.set_num_threads(1)
    corpus = quick_corpus(Path(args.work)) if args.quick else corpus_prepare(Path(args.work))
    out = Path(args.work) / ("search-cost-" + "".join(c if c.isalnum() else "-" for c in args.label))
    cfg = SearchConfig(input=corpus["input"], output=str(out), eval=[corpus["eval"]], ratio=0.3).validated()
    parts, _ = corpus_parts(cfg)
    with dask.config.set(scheduler="synchronous"):
        dfs = list(dask.compute(*parts))
    t0 = time.perf_counter()
    prep = prepare(*dfs, out=str(out), cfg=cfg, fingerprint="bench")
    prep_s = time.perf_counter() - t0
    space = build_space(cfg, prep)
    U = space.design(args.models, 0)
    prof = cProfile.Profile(time.process_time)
    t0, c0 = time.perf_counter(), time.process_time()
    tokens = 0
    prof.enable()
    for i, u in enumerate(U):
        sel = select_recipe(*dfs, recipe=space.recipe(u), cfg=cfg, out=str(out))
        rec = train_recipe(sel, name=f"bench-{i}", seed=0, cfg=cfg, out=str(out), extra={"fingerprint": "-"})
        tokens += rec["tokens"]
    prof.disable()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    st = pstats.Stats(prof)
    rows = [(label, _cum(st, suf, fn)) for label, suf, fn in PARTS]
    parts = dict(rows)
    train_s, eval_s = parts["optimiser steps"], parts["final evaluation"]
    ev_tokens = sum(e["scored_tokens"] for e in prep["eval_sets"]) * args.models
    load = os.getloadavg()
    lines = [
        f"## {args.label}: {args.models} trials{' (--quick corpus)' if args.quick else ''}, "
        f"{time.strftime('%Y-%m-%d %H:%M')} UTC, load {load[0]:.2f} / "
        f"{load[1]:.2f} / {load[2]:.2f}",
        "",
        f"Preparation (once per search): {prep_s:.1f} s wall. Trials: {cpu:.1f} CPU-s under cProfile "
        f"({wall:.1f} s wall), {cpu / args.models:.2f} CPU-s per trial; optimiser steps {train_s:.1f} CPU-s = "
        f"**{train_s / cpu:.0%}** of it ({train_s / tokens * 1e5:.2f} CPU-s per 100k trained tokens; the final "
        f"evaluation {eval_s / ev_tokens * 1e5:.2f} per 100k scored tokens).",
        "",
        "| part | CPU seconds (cumulative, all trials) | share of the trials' CPU time |",
        "| --- | --- | --- |",
        *[f"| {label} | {s:.2f} | {s / cpu:.0%} |" for label, s in rows],
        "",
    ]
    path = Path(args.out)
    head = "" if path.exists() else _HEAD
    with path.open("a") as f:
        f.write(head + "\n".join(lines) + "\n")
    print("\n".join(lines))
    st.sort_stats("cumulative").print_stats(25)


_HEAD = """# Where a search trial's seconds go

`python benchmarks/search_cost.py --work WORK --label LABEL` (one process, one torch thread, the
search's own task functions under cProfile timed in CPU seconds; corpus of
benchmarks/search_corpus.py, default space, `tiny` proxy on 100k tokens). The machine is shared
with other jobs: the load average is given with each run; the shares within one run are
comparable, the seconds across runs less so.

"""

if __name__ == "__main__":
    main()
