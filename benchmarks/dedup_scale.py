"""Dedup at corpus scale on this machine -> benchmarks/results/dedup_scale.md.

``datamask dedup --kind exact,fuzzy`` as a user runs it (the whole command: a local cluster
of ``--workers`` single-threaded workers started and stopped, Parquet in, Parquet out) on
corpora of N documents of ~150 words recombined from real text, 10% of them near copies
with 3% of the words replaced (:mod:`dedup_corpus`). For each N: wall time, documents per
second, the peak memory of the command's process (the client) and of its whole process
tree (client, nanny and worker processes: the sum of their resident sets, sampled every
0.1 s), the rows removed, and the time of each pass of the corpus-wide part (from the
manifest). ``--old PATH`` runs another checkout's ``datamask`` (e.g. a git worktree of the
previous version) on the sizes of ``--old-sizes``, side by side in the same run.

Run under the shared lock (it holds both cores for minutes):
``flock /work/heavy.lock .venv/bin/python benchmarks/dedup_scale.py --sizes 200000 2000000``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from dedup_corpus import CACHE, write_corpus  # noqa: E402

RUNNER = "import sys; sys.path.insert(0, sys.argv[1]); from datamask.cli import main; sys.exit(main(sys.argv[2:]))"


class Peak:
    """Peak resident memory of a process and of its whole tree, sampled in a thread."""

    def __init__(self, pid: int, every: float = 0.1):
        self.proc, self.every = psutil.Process(pid), every
        self.client = self.tree = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                own = self.proc.memory_info().rss
                kids = sum(c.memory_info().rss for c in self.proc.children(recursive=True) if c.is_running())
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                kids, own = 0, 0
            self.client, self.tree = max(self.client, own), max(self.tree, own + kids)
            self._stop.wait(self.every)

    def stop(self):
        self._stop.set()
        self._t.join()


def run_once(code: Path, corpus: str, out: Path, workers: int, split_size: int, kinds: str) -> dict:
    """One ``datamask dedup`` command; its wall, peaks and manifest figures."""
    shutil.rmtree(out, ignore_errors=True)
    args = [sys.executable, "-c", RUNNER, str(code), "dedup", corpus, str(out), "--kind", kinds]
    args += ["--n-workers", str(workers), "--split-size", str(split_size), "--quiet"]
    t0 = time.perf_counter()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(args, cwd=str(code), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = Peak(proc.pid)
    log, _ = proc.communicate()
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak.stop()
    if proc.returncode != 0:
        raise SystemExit(f"datamask dedup failed ({proc.returncode}):\n{log[-3000:]}")
    m = json.loads((out / "manifest.json").read_text())
    t = m["totals"]
    info = m.get("dedup", {})
    res = {
        "rows": t["rows_in"],
        "removed": t["rows_in"] - t["rows_out"],
        "wall": wall,
        "cpu": (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime),
        "client_gb": peak.client / 2**30,
        "tree_gb": peak.tree / 2**30,
        "kinds": info.get("kinds", {}),
        "passes": info.get("passes", {}).get("seconds", {}),
        "disk_gb": sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**30,
    }
    shutil.rmtree(out, ignore_errors=True)
    return res


def table(rows) -> list:
    lines = [
        "| code | documents | wall | docs/s | CPU seconds (all processes) | docs per CPU-second | peak memory, client "
        "| peak memory, whole process tree | removed rows (exact + fuzzy) | output + state on disk | load average before |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        k = r["kinds"]
        by = " + ".join(f"{k[x]['removed']:,}" for x in ("exact", "fuzzy") if x in k)
        lines.append(
            f"| {r['code']} | {r['rows']:,} | {r['wall']:.1f} s | {r['rows'] / r['wall']:,.0f} | {r['cpu']:.0f} | "
            f"{r['rows'] / max(r['cpu'], 1e-9):,.0f} | "
            f"{r['client_gb'] * 1024:.0f} MB | {r['tree_gb']:.2f} GB | {r['removed']:,} ({by}) | "
            f"{r['disk_gb']:.2f} GB | {r['load']:.2f} |"
        )
    return lines


def passes_table(rows) -> list:
    names = []
    for r in rows:
        names += [n for n in r["passes"] if n not in names]
    if not names:
        return []
    lines = ["| documents | " + " | ".join(names) + " |", "| ---: |" + " ---: |" * len(names)]
    for r in rows:
        if r["passes"]:
            lines.append(f"| {r['rows']:,} | " + " | ".join(f"{r['passes'].get(n, 0):.1f}" for n in names) + " |")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[200_000, 2_000_000])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--split-size", type=int, default=100_000)
    ap.add_argument("--kind", default="exact,fuzzy")
    ap.add_argument("--old", type=Path, help="another checkout to run side by side (the previous version)")
    ap.add_argument("--old-sizes", type=int, nargs="*", default=[200_000])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dedup_scale.md"))
    ap.add_argument("--work", default=os.path.join(CACHE, "dedup_scale_out"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    for n in sorted(set(args.sizes) | set(args.old_sizes if args.old else [])):
        corpus = write_corpus(n)
        runs = [("new", ROOT)] if n in args.sizes else []
        runs += [("old", args.old)] if args.old and n in args.old_sizes else []
        for label, code in runs:
            load = os.getloadavg()[0]
            r = run_once(code, corpus, Path(args.work), args.workers, args.split_size, args.kind)
            r.update(code=label, load=load)
            rows.append(r)
            print(table([r])[-1], flush=True)
    text = [
        "# Dedup at corpus scale (CPU)",
        "",
        f"Generated by `benchmarks/dedup_scale.py {' '.join(argv if argv is not None else sys.argv[1:])}` on "
        f"{datetime.now():%Y-%m-%d %H:%M}; {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GB. "
        f"`datamask dedup --kind {args.kind} --n-workers {args.workers} --split-size {args.split_size}`, the "
        "whole command (local cluster started and stopped), on documents of ~150 words recombined from the "
        "man pages' text, 10% near copies with 3% of the words replaced (`benchmarks/dedup_corpus.py`). "
        "**The machine is shared**: the load average before each run is in the table. Whole run: "
        f"{time.perf_counter() - t0:.0f} s.",
        "",
        *table(rows),
        "",
        "Seconds in each pass of the corpus-wide part (new code; `manifest.json` -> `dedup.passes`):",
        "",
        *passes_table([r for r in rows if r["code"] == "new"]),
    ]
    Path(args.out).write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
