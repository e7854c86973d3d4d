"""What the tiny proxy learns beyond token frequencies at the old and the new search default.

Real text (this machine's Python documentation, ``search_corpus.py``'s raw corpus: the input
and its 300-document evaluation set), two selections of it (every input row, and a seeded 10%
of the rows, about a search's selection), each trained by ``datamask proxy-lm`` at 100k tokens
(the search's default until issue 48: 49 optimiser steps) and at 512k (the new default: 250),
one torch thread as a search's worker uses. For every model: optimiser steps, its loss, the loss
of an add-1/2 unigram model of its own training tokens on the same scored tokens, the unigram
margin (the difference) and the training seconds. Writes ``benchmarks/results/unigram_margin.md``.

    python benchmarks/unigram_margin.py            # through /work/bin/heavy --exclusive for timings
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULT = ROOT / "benchmarks" / "results" / "unigram_margin.md"
BUDGETS = ("100k", "512k")


def _selections(work: Path, seed: int = 0) -> list:
    """(name, path) of the selections: the whole input and a seeded 10% of its rows."""
    df = pd.read_parquet(work / "raw" / "corpus.parquet")
    out = []
    for name, part in (("all", df), ("random10", df.sample(frac=0.1, random_state=seed))):
        d = work / "selections" / name
        d.mkdir(parents=True, exist_ok=True)
        part[["id", "text"]].to_parquet(d / "part.parquet", index=False)
        out.append((name, d))
    return out


def _proxy_lm(sels, eval_dir: Path, out: Path, tokens: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "datamask.cli", "proxy-lm", *[str(p) for _, p in sels], "--eval", str(eval_dir)]
    cmd += [str(out), "--tokens", tokens, "--set", "threads=1", "--set", "curve_points=0", "--no-report", "--quiet"]
    print("$", " ".join(cmd[3:]), flush=True)
    subprocess.run(cmd, check=True, env=env)
    return json.loads((out / "manifest.json").read_text())


def _rows(out: Path, m: dict, tokens: str) -> list:
    t = pd.read_csv(out / "proxy.csv")
    t = t[(t.domain == "all") & (t.selection != "untrained")]
    rows = []
    for r in t.itertuples():
        run = json.loads((out / "runs" / f"{r.selection}.json").read_text())
        rows.append(
            {
                "budget": tokens,
                "selection": r.selection,
                "selection tokens": run["selection_tokens"],
                "steps": int(r.steps),
                "passes": round(float(r.passes), 2),
                "loss": round(float(r.loss), 4),
                "unigram loss": round(float(r.unigram_loss), 4),
                "unigram margin": round(float(r.unigram_margin), 4),
                "train s": round(float(run["train_seconds"]), 1),
                "eval s": round(float(run["eval_seconds"]), 1),
            }
        )
    return rows


def _markdown(table: pd.DataFrame) -> list:
    cells = [[f"{v:,}" if isinstance(v, int) else str(v) for v in row] for row in table.itertuples(index=False)]
    return [
        "| " + " | ".join(table.columns) + " |",
        "|" + " --- |" * len(table.columns),
        *("| " + " | ".join(c) + " |" for c in cells),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default=str(ROOT / "benchmarks" / ".cache" / "unigram_margin"))
    ap.add_argument("--docs", type=int, default=3300, help="documents of the raw corpus (search_corpus.py's)")
    ap.add_argument("--out", default=str(RESULT))
    args = ap.parse_args()
    from benchmarks.search_corpus import _raw

    work = Path(args.work)
    _raw(work, args.docs)
    sels = _selections(work)
    t0, rows, manifests = time.time(), [], {}
    for tokens in BUDGETS:
        out = work / f"proxy_{tokens}"
        manifests[tokens] = m = _proxy_lm(sels, work / "eval", out, tokens)
        rows += _rows(out, m, tokens)
    table = pd.DataFrame(rows)
    m = manifests[BUDGETS[-1]]
    load = os.getloadavg()
    lines = [
        "# The tiny proxy's margin over a unigram baseline, at 100k and 512k training tokens",
        "",
        f"`python benchmarks/unigram_margin.py` ({time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
        f"{m['device']} in {m['precision']}, one torch thread; load average at the end {load[0]:.2f} {load[1]:.2f}; "
        f"{(time.time() - t0) / 60:.1f} min in all). Corpus: `search_corpus.py`'s raw Python-documentation "
        f"text, evaluation set {m['eval_sets'][0]['docs']} documents ({m['eval_sets'][0]['scored_tokens']:,} "
        f"scored tokens); `{m['params']:,}`-parameter `tiny` proxy, lr {m['lr']:g}, weight decay "
        f"{m['weight_decay']:g}, BPE vocabulary {m['tokenizer']['vocab_size']:,}.",
        "",
        "The unigram loss is an add-1/2 unigram model of each model's own training tokens on the same scored "
        "tokens; the margin is it minus the model's loss (nats/token): what the model learned beyond token "
        "frequencies. `train s`: the optimiser steps' seconds of one model on one thread.",
        "",
        *_markdown(table),
        "",
    ]
    for tokens, man in manifests.items():
        for w in man.get("warnings", ()):
            lines.append(f"- proxy-lm at {tokens} warned: {w}")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
