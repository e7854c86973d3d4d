"""The real-text corpus of the search benchmarks (``search_real.py``, ``proxy_noise.py``).

Documents from this machine's Python installation, built by ``proxy_lm.build_corpus`` (80%
docstrings and reference topics, 10% low-information text, 10% planted near-duplicates),
then cut in two: an evaluation set of 300 documents of the ``docs`` kind (what the proxy
models are judged on) and the input corpus, the rest plus 10 exact copies of evaluation
documents (the leaks a real crawl holds; the search removes and counts them). The input
goes through the real stages: ``embed`` (MiniLM), ``score --heuristics`` and
``cluster --n-clusters 20``. Every step is skipped when its output is complete, so the
embedding (minutes on CPU) is paid once; the folder is ``benchmarks/.cache/search``
(gitignored) unless ``--work`` says otherwise.

    python benchmarks/search_corpus.py            # builds or reuses the corpus, prints its paths
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CACHE = ROOT / "benchmarks" / ".cache" / "search"
N_EVAL, N_LEAKS = 300, 10


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "datamask.cli", *map(str, args)]
    print("$", "datamask", " ".join(cmd[3:]), flush=True)
    subprocess.run(cmd, check=True, env=env)


def _raw(work: Path, n_docs: int, seed: int = 0):
    from benchmarks.proxy_lm import build_corpus

    if (work / "raw" / "corpus.parquet").exists():
        return
    df = build_corpus(n_docs, seed=seed)
    rng = np.random.default_rng(seed)
    held = rng.choice(np.flatnonzero(df["kind"].to_numpy() == "docs"), size=N_EVAL, replace=False)
    ev = df.iloc[np.sort(held)]
    rest = df.drop(index=df.index[held])
    leaks = ev.iloc[:N_LEAKS].assign(id=np.arange(len(df), len(df) + N_LEAKS), kind="leak")
    corpus = pd.concat([rest, leaks], ignore_index=True)
    for name, part in (("eval", ev), ("raw", corpus)):
        (work / name).mkdir(parents=True, exist_ok=True)
        part.to_parquet(work / name / "corpus.parquet", index=False)


def prepare(work: Path = CACHE, n_docs: int = 3300) -> dict:
    """``{"input", "eval", "kinds", "times"}`` of the corpus in ``work`` (built when missing)."""
    work = Path(work)
    _raw(work, n_docs)
    q = ("--quiet", "--n-workers", 1)
    steps = [
        ("embed", work / "emb", "manifest.json", ("embed", work / "raw", work / "emb", *q)),
        ("score", work / "scored", "manifest.json", ("score", work / "emb", work / "scored", "--heuristics", *q)),
        (
            "cluster",
            work / "clustered",
            "cluster.json",
            ("cluster", work / "scored", work / "clustered", "--n-clusters", 20, "--sample-fraction", 1.0, *q),
        ),
    ]
    times = {}
    for name, out, marker, argv in steps:
        if not (out / marker).exists():
            _cli(*argv)
        m = json.loads((out / marker).read_text())
        times[name] = m.get("wall_seconds")
    kinds = pd.read_parquet(work / "raw" / "corpus.parquet", columns=["kind"])["kind"].value_counts().to_dict()
    return {"input": str(work / "clustered"), "eval": str(work / "eval"), "kinds": kinds, "times": times}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=str(CACHE))
    ap.add_argument("--docs", type=int, default=3300)
    args = ap.parse_args(argv)
    print(json.dumps(prepare(Path(args.work), args.docs), indent=1))


if __name__ == "__main__":
    main()
