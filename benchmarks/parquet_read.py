"""Writing and reading an embedding column in Parquet: how the file is written decides the speed.

Side by side in one run, 200,000 unit vectors of d = 384, row groups of 100,000, read with
``pyarrow.parquet.read_table`` (best of 3):

* float16 and float32 vectors as pyarrow writes them by default (a dictionary is tried on
  every column, the embedding included) and as datamask writes them
  (``datamask.pipeline.io.dictionary_columns``: no dictionary on float vectors);
* the same float16 bytes as one fixed-size binary value per row, which has no per-element
  repetition levels to decode: the floor a list column cannot reach.

    python benchmarks/parquet_read.py      # -> benchmarks/results/parquet_read.md (under a minute)
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from datamask.pipeline.io import dictionary_columns

N, D = 200_000, 384


def read_seconds(table, path, repeat=3, **write_kw):
    """(best read seconds, best write seconds, file bytes) of ``table`` written with ``write_kw``."""
    wbest = best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        pq.write_table(table, path, row_group_size=100_000, **write_kw)
        wbest = min(wbest, time.perf_counter() - t)
    for _ in range(repeat):
        t = time.perf_counter()
        pq.read_table(path)
        best = min(best, time.perf_counter() - t)
    return best, wbest, os.path.getsize(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    E = rng.standard_normal((N, D), dtype=np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    ids = pa.array(np.arange(N))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.parquet")
        for dtype in (np.float16, np.float32):
            vec = pa.FixedSizeListArray.from_arrays(pa.array(E.astype(dtype).reshape(-1)), D)
            table = pa.table({"id": ids, "embedding": vec})
            for how, kw in (
                ("pyarrow default (dictionary tried)", {}),
                ("datamask (no dictionary on vectors)", {"use_dictionary": dictionary_columns(table.schema)}),
            ):
                s, w, size = read_seconds(table, path, **kw)
                rows.append((f"list<{np.dtype(dtype).name}>[{D}]", how, s, w, size))
                print(rows[-1], flush=True)
        raw = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(2 * D), N, [None, pa.py_buffer(E.astype(np.float16).tobytes())]
        )
        s, w, size = read_seconds(pa.table({"id": ids, "embedding": raw}), path, use_dictionary=["id"])
        rows.append((f"fixed_size_binary({2 * D}), float16 bytes", "no dictionary", s, w, size))
        print(rows[-1], flush=True)
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "parquet_read.md")
    with open(out, "w") as f:
        f.write("# Writing and reading embeddings in Parquet\n\n")
        f.write(
            f"`python benchmarks/parquet_read.py`: {N:,} unit vectors, d = {D}, snappy, row groups of "
            f"100,000, `pyarrow.parquet.write_table` and `read_table`, best of 3 each; pyarrow {pa.__version__}, {platform.machine()}, "
            f"{os.cpu_count()} cores (a shared host: read the ratios).\n\n"
        )
        f.write(
            "| column | written | read s | read rows/s | write s | write rows/s | file MB |\n"
            "|---|---|---|---|---|---|---|\n"
        )
        for col, how, s, w, size in rows:
            f.write(f"| {col} | {how} | {s:.3f} | {N / s:,.0f} | {w:.3f} | {N / w:,.0f} | {size / 2**20:.0f} |\n")
        f.write(
            "\nA list column stores repetition and definition levels for every element (384 per row), and "
            "encoding and decoding them bound the write and the read whatever the encoding; a dictionary tried "
            "on values that never repeat only adds to it. datamask's own outputs (embed, score, select, dedup, cluster) are "
            "written without it.\n"
        )
    print(out)


if __name__ == "__main__":
    main()
