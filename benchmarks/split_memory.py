"""Peak memory of one Dask worker while ``datamask select`` runs one split, before and after.

    python benchmarks/split_memory.py                      # 100k and 1M rows, top-k and the default (as it runs)
    python benchmarks/split_memory.py --rows 100000        # quick
    python benchmarks/split_memory.py --base 1d60a28       # the "before" tree (default: merge-base with main)

Each (rows, row group size, method, code) run is its own subprocess: a ``LocalCluster`` of
one worker (one thread), ``run_select`` on a generated corpus of one split (384-d float16
embeddings; one row group, or row groups of 100k), and the worker's RSS sampled with psutil
every 20 ms from the client. The
"before" code is the ``datamask`` package of ``--base`` (``git archive`` into a temporary
folder), the "after" code this tree's; the runs alternate, so both see the same host. A
corpus is written once per (rows, row group size) under ``--workdir`` and kept there.
Writes ``benchmarks/results/split_memory.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "split_memory.md"
DIM = 384


class PeakRSS(threading.Thread):
    """The largest RSS of process ``pid``, sampled every ``every`` seconds until stopped."""

    def __init__(self, pid, every=0.02):
        import psutil

        super().__init__(daemon=True)
        self.proc, self.every, self.peak = psutil.Process(pid), every, 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except Exception:  # the process ended
                return
            time.sleep(self.every)


def _run_select(cfg, client):
    try:
        from datamask.stages.split.select import run_select
    except ImportError:
        from datamask.pipeline.stages.select import run_select
    return run_select(cfg, client=client)


def child(a):
    """One measured run (in a fresh interpreter, with the code under test on sys.path)."""
    import logging

    import psutil
    from distributed import Client, LocalCluster

    from datamask.pipeline.config import SelectConfig

    kw = {"method": a.method}
    if a.method == "datamask" and a.steps:  # a solver_params key from 0.3, a field of its own before
        solver = "solver_params" in SelectConfig.__dataclass_fields__
        kw.update({"solver_params": {"steps": a.steps}} if solver else {"steps": a.steps})
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
            memory_limit=0,  # no spilling or pausing: the peak is what the split needs
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        pid = next(iter(client.run(os.getpid).values()))
        idle = psutil.Process(pid).memory_info().rss
        mon = PeakRSS(pid)
        mon.start()
        cfg = SelectConfig(
            input=a.corpus, output=a.out, split_size=a.rows, quiet=True, overwrite=True, device="cpu", **kw
        )
        t0 = time.perf_counter()
        m = _run_select(cfg, client)
        wall = time.perf_counter() - t0
        mon.stop.set()
        mon.join()
    parts = m.get("splits", m.get("partitions", []))
    p = parts[0]
    read_s, read_added = _time_read(a.corpus, a.rows)
    print(
        json.dumps(
            {
                "rows": m["totals"]["rows_in"],
                "rows_out": m["totals"]["rows_out"],
                "peak_rss": mon.peak,
                "idle_rss": idle,
                "wall": wall,
                "split_seconds": p.get("wall_seconds"),
                "read_seconds": read_s,
                "read_added": read_added,
                "select_seconds": p.get("select_seconds"),
                "n_steps": p.get("n_steps"),
                "objective": (p.get("after") or {}).get("objective"),
            }
        )
    )


def _time_read(corpus_dir, rows):
    """``read_split`` of the whole split in this process: seconds (best of 2; the file is
    cached) and the RSS it added at its peak (the first read)."""
    import gc

    import psutil

    from datamask.pipeline.io import Split, read_split
    from datamask.pipeline.schema import Columns

    path = str(next(Path(corpus_dir).glob("*.parquet")))
    best, added = float("inf"), None
    for _ in range(2):
        gc.collect()
        rss0 = psutil.Process().memory_info().rss
        mon = PeakRSS(os.getpid(), every=0.005)
        mon.start()
        t0 = time.perf_counter()
        t = read_split(Split(path, Path(path).name, "parquet", 0, rows), Columns())
        best = min(best, time.perf_counter() - t0)
        mon.stop.set()
        mon.join()
        added = mon.peak - rss0 if added is None else added
        del t
    return best, added


def base_tree(commit: str, into: Path) -> Path:
    """The ``datamask`` package of ``commit`` under ``into`` (git archive: no worktree, no checkout)."""
    into.mkdir(parents=True, exist_ok=True)
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "datamask"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar.stdout, check=True)
    return into


def corpus(work: Path, rows: int, row_group: int) -> Path:
    from datamask.cli.demo import write_corpus

    path = work / f"corpus-{rows}-rg{row_group}"
    if not (path / "shard-0000.parquet").exists():
        write_corpus(path, n_rows=rows, dim=DIM, n_files=1, row_group_size=row_group)
    return path


def measure(tree: Path, corpus_dir: Path, out: Path, rows: int, method: str, steps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, __file__, "--child", "--corpus", str(corpus_dir), "--out", str(out)]
    cmd += ["--rows", str(rows), "--method", method, "--steps", str(steps)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if res.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _table(runs, note_steps) -> list:
    lines = [
        "| rows | row group | method | code | peak worker RSS | / split embedding bytes | idle worker | "
        "(peak - idle) / bytes | rows/s, whole command | split seconds | read_split rows/s | read_split peak / bytes | "
        "rows out |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        emb = r["rows"] * DIM * 2
        cap = f", cap {note_steps}" if note_steps else ""
        method = r["method"] + (f" ({r['n_steps']} pg steps{cap})" if r["method"] == "datamask" else "")
        lines.append(
            f"| {r['rows']:,} | {r['row_group']:,} | {method} | {r['code']} | {r['peak_rss'] / 2**30:.2f} GiB | "
            f"{r['peak_rss'] / emb:.2f}x | {r['idle_rss'] / 2**30:.2f} GiB | {(r['peak_rss'] - r['idle_rss']) / emb:.2f}x | "
            f"{r['rows'] / r['wall']:,.0f} | {r['split_seconds']:.1f} | {r['rows'] / r['read_seconds']:,.0f} | "
            f"{r['read_added'] / emb:.2f}x | {r['rows_out']:,} |"
        )
    return lines


def _summary(runs) -> list:
    """One line per split size: the peak ratio, before and after, of each method."""
    out = []
    for rows in sorted({r["rows"] for r in runs}):
        parts = []
        for method in dict.fromkeys(r["method"] for r in runs):
            for code in ("before", "after"):
                got = [
                    r["peak_rss"] / (rows * DIM * 2)
                    for r in runs
                    if (r["rows"], r["method"], r["code"]) == (rows, method, code)
                ]
                if got:
                    parts.append(f"{method} {code} {min(got):.2f}-{max(got):.2f}x")
        out.append(
            f"- {rows:,} rows, peak worker RSS / split embedding bytes: {'; '.join(parts)} (target: <= 3x at 1M rows)."
        )
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="100000,1000000", help="comma-separated split sizes (one split each)")
    ap.add_argument("--methods", default="topk,datamask")
    ap.add_argument("--steps", type=int, default=0, help="cap on the default method's pg steps (0: its own)")
    ap.add_argument("--base", default=None, help="the 'before' commit (default: git merge-base HEAD main)")
    ap.add_argument("--no-base", action="store_true", help="measure this tree only")
    ap.add_argument("--row-groups", default="0", help="row group sizes of the corpus files (0: one row group per file)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--method", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        a.rows = int(a.rows)
        return child(a)
    import psutil

    work = Path(a.workdir or tempfile.mkdtemp(prefix="datamask-splitmem-"))
    trees = {"after": ROOT}
    base = None
    if not a.no_base:
        base = (
            a.base
            or subprocess.run(
                ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], check=True, capture_output=True, text=True
            ).stdout.strip()
        )
        base = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", base], check=True, capture_output=True, text=True
        ).stdout.strip()
        trees = {"before": base_tree(base, work / f"base-{base}"), "after": ROOT}
    runs = []
    for rows in [int(r) for r in a.rows.split(",")]:
        groups = sorted({min(int(g) or rows, rows) for g in a.row_groups.split(",")}, reverse=True)
        for group in groups:  # one row group per file first (pyarrow's default for up to 1Mi rows)
            c = corpus(work, rows, group)
            for method in a.methods.split(","):
                for _ in range(a.repeat):
                    for code, tree in trees.items():
                        r = measure(tree, c, work / "out", rows, method, a.steps)
                        r.update(method=method, code=code, row_group=group)
                        print(json.dumps(r), flush=True)
                        runs.append(r)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    lines = [
        "# Peak worker memory of one split (`benchmarks/split_memory.py`)",
        "",
        f"One split per run: a generated corpus of N rows (`datamask.cli.demo.write_corpus`), {DIM}-d float16 "
        f"embeddings (N x {DIM * 2} bytes, the denominator of the ratios), one Parquet file written in one row "
        "group (pyarrow's default for a table of up to 1Mi rows) or in row groups of 100,000. `run_select` with "
        "the select's defaults but the method: `topk`, and `datamask` (the default: Frank-Wolfe's relaxed start, "
        "then policy gradient, which returns the start when 20 steps do not improve on it)"
        + (f", its policy-gradient steps capped at {a.steps}" if a.steps else ", its steps uncapped")
        + "; on a `LocalCluster` of one worker, one thread, no memory limit; "
        "its RSS is sampled with psutil every 20 ms from the client, each run a fresh cluster in a fresh "
        "process. `split seconds` is the split's own wall time on the worker (read, checks, selection, the "
        "side-by-side top-k and random, write); `read_split` is timed (best of 2) and its added RSS sampled "
        "every 5 ms in the client process after the run. "
        f"`before` is the package at {base or '-'} (the commit this branch started from), `after` at {head}; "
        "the two alternate within one script run. "
        f"Machine: {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
        f"{platform.processor() or platform.machine()}, shared with other jobs' benchmarks and run under "
        "`nice -n 19`: timings vary 2-4x from run to run, so compare before and after of one row pair only.",
        "",
        *_table(runs, a.steps),
        "",
        *_summary(runs),
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(RESULTS.read_text())


if __name__ == "__main__":
    main()
