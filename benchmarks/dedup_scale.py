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
        "pass_cpu": info.get("passes", {}).get("cpu_seconds", {}),
        "split_pass": sum(r.get("wall_seconds", 0) for r in m.get("splits", [])),
        "disk_gb": sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**30,
    }
    shutil.rmtree(out, ignore_errors=True)
    return res


def _split_records(path, lo, n, batch=65_536):
    """(key, doc) LSH band records of ``n`` rows of one corpus file from row ``lo``."""
    import numpy as np
    import pyarrow.parquet as pq

    from datamask.dedup.minhash import lsh_params, signatures

    p = lsh_params()
    t = pq.read_table(path, columns=["text"]).slice(lo, n)
    keys, docs = [], []
    for s in range(0, t.num_rows, batch):
        texts = t.column("text").slice(s, batch)
        _, has, bk = signatures(texts, p.ngram, p.num_perm, bands=p.bands, rows=p.rows)
        keys.append(bk[has].reshape(-1))
        docs.append(np.repeat(lo + s + np.flatnonzero(has), p.bands))
    return np.concatenate(keys), np.concatenate(docs).astype(np.int64)


def _routed_map(item, ctx):
    import pyarrow as pa

    from datamask.stages.corpus.dedup_exchange import write_routed

    i, path, lo, n = item
    key, doc = _split_records(path, lo, n)
    part = (key % ctx["P"]).astype("int64")
    write_routed(f"{ctx['dir']}/{i:06d}.parquet", pa.table({"key": key, "doc": doc}), part, ctx["P"])
    return int(key.shape[0])


def _routed_reduce(p, ctx):
    import pyarrow as pa

    from datamask.dedup.pairs import band_pairs
    from datamask.stages.corpus.dedup_exchange import read_part

    schema = pa.schema([("key", pa.uint64()), ("doc", pa.int64())])
    t = read_part([f"{ctx['dir']}/{i:06d}.parquet" for i in range(ctx["S"])], p, ctx["P"], schema)
    return int(band_pairs(t.column("key").to_numpy(), t.column("doc").to_numpy())[0].shape[0])


def _p2p_part(item):
    import pandas as pd

    _, path, lo, n = item
    key, doc = _split_records(path, lo, n)
    return pd.DataFrame({"key": key, "doc": doc})


def _pairs_count(df):
    import pandas as pd

    from datamask.dedup.pairs import band_pairs

    return pd.DataFrame({"n": [band_pairs(df["key"].to_numpy(), df["doc"].to_numpy())[0].shape[0]]})


def exchange_compare(n: int, workers: int, split_size: int) -> list:
    """The LSH bucket exchange of ``n`` documents (records computed per split, then equal
    band keys brought together and turned into candidate pairs) through the routed files
    the stage uses and through Dask's p2p shuffle, on one local cluster: wall, peak memory of
    the process tree, candidate pairs (equal in both)."""
    import tempfile

    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    from datamask.stages.corpus.dedup_text import RECORDS_PER_PART

    corpus = write_corpus(n)
    files = sorted(Path(corpus).glob("*.parquet"))
    import pyarrow.parquet as pq

    items = []
    for f in files:
        rows = pq.ParquetFile(f).metadata.num_rows
        items += [(str(f), lo, min(split_size, rows - lo)) for lo in range(0, rows, split_size)]
    items = [(i, *it) for i, it in enumerate(items)]
    P = max(1, -(-n * 32 // RECORDS_PER_PART))
    out = []
    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as lc, Client(lc) as c:
        c.run(lambda: __import__("datamask.dedup.minhash"))
        for name in ("routed files", "Dask p2p shuffle"):
            peak = Peak(os.getpid())
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
                if name == "routed files":
                    ctx = {"dir": tmp, "P": P, "S": len(items)}
                    c.gather(c.map(_routed_map, items, ctx=ctx, pure=False))
                    pairs = sum(c.gather(c.map(_routed_reduce, range(P), ctx=ctx, pure=False)))
                else:
                    meta = pd.DataFrame({"key": pd.Series([], dtype="uint64"), "doc": pd.Series([], dtype="int64")})
                    recs = dd.from_map(_p2p_part, items, meta=meta, enforce_metadata=False)
                    sh = recs.shuffle(on="key", npartitions=P, shuffle_method="p2p")
                    pairs = int(sh.map_partitions(_pairs_count, meta=pd.DataFrame({"n": [0]})).compute()["n"].sum())
            wall = time.perf_counter() - t0
            peak.stop()
            out.append(
                {"name": name, "wall": wall, "tree_gb": peak.tree / 2**30, "pairs": pairs, "load": os.getloadavg()[0]}
            )
            print(out[-1], flush=True)
    return out


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
    lines = ["| documents | " + " | ".join(names) + " | per-split pass |", "| ---: |" + " ---: |" * (len(names) + 1)]
    for r in rows:
        if r["passes"]:
            cells = [f"{r['passes'].get(n, 0):.1f} / {r['pass_cpu'].get(n, 0):.0f}" for n in names]
            lines.append(f"| {r['rows']:,} | " + " | ".join(cells) + f" | {r['split_pass']:.0f} |")
    return lines


def _shown(argv) -> str:
    """The command's arguments without ``--out`` (where the table went is not part of it)."""
    out, skip = [], False
    for a in argv:
        if skip or a == "--out":
            skip = not skip
            continue
        out.append(a)
    return " ".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[200_000, 2_000_000])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--split-size", type=int, default=100_000)
    ap.add_argument("--kind", default="exact,fuzzy")
    ap.add_argument("--old", type=Path, help="another checkout to run side by side (the previous version)")
    ap.add_argument("--old-sizes", type=int, nargs="*", default=[200_000])
    ap.add_argument("--exchange", type=int, default=0, help="also compare the bucket exchange with p2p on N docs")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dedup_scale.md"))
    ap.add_argument("--work", default=os.path.join(CACHE, "dedup_scale_out"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    for n in sorted(set(args.sizes) | set(args.old_sizes if args.old else [])):
        corpus = write_corpus(n)
        runs = [("new", ROOT)] if n in args.sizes else []
        runs += [("old", args.old.resolve())] if args.old and n in args.old_sizes else []
        for label, code in runs:
            load = os.getloadavg()[0]
            r = run_once(code, corpus, Path(args.work), args.workers, args.split_size, args.kind)
            r.update(code=label, load=load)
            rows.append(r)
            print(table([r])[-1], flush=True)
    ex = exchange_compare(args.exchange, args.workers, args.split_size) if args.exchange else []
    text = [
        "# Dedup at corpus scale (CPU)",
        "",
        f"Generated by `benchmarks/dedup_scale.py {_shown(argv if argv is not None else sys.argv[1:])}` on "
        f"{datetime.now():%Y-%m-%d %H:%M}; {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GB. "
        f"`datamask dedup --kind {args.kind} --n-workers {args.workers} --split-size {args.split_size}`, the "
        "whole command (local cluster started and stopped), on documents of ~150 words recombined from the "
        "man pages' text, 10% near copies with 3% of the words replaced (`benchmarks/dedup_corpus.py`). "
        "**The machine is shared**: the load average before each run is in the table. Whole run: "
        f"{time.perf_counter() - t0:.0f} s.",
        "",
        *table(rows),
        "",
        "Each pass of the corpus-wide part, wall seconds / CPU seconds of the worker processes during its tasks "
        "(new code; `manifest.json` -> `dedup.passes`), and the per-split pass (filter and write; the splits' "
        f"wall seconds summed over the {args.workers} workers):",
        "",
        *passes_table([r for r in rows if r["code"] == "new"]),
    ]
    if ex:
        text += [
            "",
            f"## The bucket exchange: routed files against Dask's p2p shuffle ({args.exchange:,} documents)",
            "",
            f"The LSH band records of {args.exchange:,} documents (32 per document; computed per split of "
            f"{args.split_size:,}), brought together by key into partitions of the same count and turned into "
            f"candidate pairs, on one local cluster of {args.workers} workers: through the routed Parquet files "
            "the stage writes (`dedup_exchange.py`) and through `DataFrame.shuffle(shuffle_method='p2p')`. "
            "Peak memory: the whole process tree (this process, its scheduler and workers).",
            "",
            "| exchange | wall | peak memory, whole process tree | candidate pairs (a star per bucket around the "
            "first row to arrive: the count moves with the order) | load average |",
            "| --- | ---: | ---: | ---: | ---: |",
            *[
                f"| {e['name']} | {e['wall']:.1f} s | {e['tree_gb']:.2f} GB | {e['pairs']:,} | {e['load']:.2f} |"
                for e in ex
            ],
        ]
    Path(args.out).write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
