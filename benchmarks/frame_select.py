"""``datamask select`` against ``datamask.dask.select`` on the same files and the same cluster.

The demo corpus (planted topics and duplicates, d = 384) cut into splits; both paths run the
same per-split function, so the rows must be equal: the script checks that, then reports each
path's wall time (the CLI's includes its duplicate-id pass, file writes and manifest; the
frame's is ``compute`` of the selected rows with their records, nothing written).

    python benchmarks/frame_select.py      # -> benchmarks/results/frame_select.md (a few minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

import pyarrow.parquet as pq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=40_000)
    ap.add_argument("--split-size", type=int, default=10_000)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "frame_select.md"))
    a = ap.parse_args()

    from distributed import Client, LocalCluster

    import datamask.dask as dmd
    from datamask.cli.demo import write_corpus
    from datamask.pipeline.config import SelectConfig
    from datamask.stages.split.select import run_select

    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalCluster(n_workers=a.workers, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        corpus = os.path.join(tmp, "corpus")
        write_corpus(corpus, n_rows=a.rows, dim=384, n_files=2, n_topics=20, n_dup_groups=10)
        kw = dict(ratio=0.1, solver_params={"steps": a.steps}, seed=0)
        t = time.perf_counter()
        m = run_select(
            SelectConfig(input=corpus, output=os.path.join(tmp, "cli"), split_size=a.split_size, quiet=True, **kw),
            client=client,
        )
        cli_s = time.perf_counter() - t
        t = time.perf_counter()
        frame, recs = dmd.compute(dmd.select(dmd.read(corpus, split_size=a.split_size), **kw), return_records=True)
        frame_s = time.perf_counter() - t
        cli_ids = sorted(pq.read_table(os.path.join(tmp, "cli", "data")).column("id").to_pylist())
        same = cli_ids == sorted(frame["id"].tolist())
        assert same, "the frame and the CLI selected different rows"
        n_parts = m["totals"]["splits"]
    lines = [
        "# datamask select vs datamask.dask.select",
        "",
        f"Command: `python benchmarks/frame_select.py --rows {a.rows} --split-size {a.split_size} --steps {a.steps} "
        f"--workers {a.workers}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared with other jobs while it ran); "
        f"LocalCluster of {a.workers} single-threaded workers; demo corpus, d = 384, {n_parts} splits, ratio 0.1.",
        "",
        "| path | wall seconds | rows kept |",
        "| --- | ---: | ---: |",
        f"| `datamask select` (run_select: id pass, selection, Parquet writes, manifest) | {cli_s:.1f} | {len(cli_ids)} |",
        f"| `datamask.dask.select` + records (compute, nothing written) | {frame_s:.1f} | {len(frame)} |",
        "",
        f"Same rows: {same}. Per-split select seconds (frame records): "
        f"{', '.join(f'{x:.1f}' for x in recs['select_seconds'])}.",
        "",
    ]
    with open(a.out, "w") as fh:
        fh.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
