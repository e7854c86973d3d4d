"""The manifest a finished stage writes last: its config (credentials left out), versions,
input, per-split records, totals and throughput.

``manifest.json`` is the proof that an output is complete (see :mod:`.runner`), so it is built
on the client from the split records alone, after every split's file has been checked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from .. import __version__
from ..runtime.gpu import Level
from ..runtime.storage import parse_options

__all__ = ["build_manifest", "public_config", "throughput", "versions"]


def public_config(cfg) -> dict:
    """``cfg.to_dict()`` with the storage options' keys only (their values may be credentials)."""
    d = cfg.to_dict()
    if d.get("storage_options"):
        d["storage_options"] = sorted(parse_options(d["storage_options"]))
    return d


def versions():
    import dask
    import distributed

    return {
        "datamask": __version__,
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "pyarrow": pa.__version__,
        "dask": dask.__version__,
        "distributed": distributed.__version__,
    }


def build_manifest(
    plan, fingerprint, records, computed, wall, stage="select", totals=None, extra=None, throughput=None
):
    parts = sorted(records.values(), key=lambda r: (r["source"], r["start"]))
    cfg = plan.cfg
    m = {
        "status": "complete",
        "stage": stage,
        "fingerprint": fingerprint,
        "config": public_config(cfg),
        "device": plan.device,
        "seed": getattr(cfg, "seed", None),
        "versions": versions(),
        "input": {"files": plan.n_files, "rows": plan.n_rows, "empty_files": plan.skipped_files},
        "totals": {
            "splits": len(parts),
            "rows_in": int(sum(r["rows_in"] for r in parts)),
            "rows_out": int(sum(r["rows_out"] for r in parts)),
            "computed_this_run": len(computed),
            "resumed": len(parts) - len(computed),
        },
        "wall_seconds": round(wall, 3),
        "splits": parts,
    }
    if totals is not None:
        m["totals"].update(totals(parts))
    level = getattr(plan, "level", None)
    if level is not None:
        m["gpu"] = level.to_dict()
    if throughput is not None:
        m["throughput"] = throughput
    if extra is not None:
        m.update(extra)
    return m


def throughput(records: dict, computed: list, seconds: float, n_workers: int, level: Level) -> dict | None:
    """Rows per second of the splits computed this run, end to end (first read to last write,
    cluster start excluded), in all and per worker (per GPU on a GPU level), and each
    worker's share: splits, rows and seconds holding the device."""
    recs = [records[n] for n in computed if n in records]
    if not recs or seconds <= 0:
        return None
    rows = int(sum(r["rows_in"] for r in recs))
    per = "gpu" if level.device == "gpu" else "worker"
    workers: dict = {}
    for r in recs:
        w = workers.setdefault(r.get("worker", "?"), {"splits": 0, "rows": 0, "device_seconds": 0.0})
        w["splits"] += 1
        w["rows"] += int(r["rows_in"])
        w["device_seconds"] = round(w["device_seconds"] + float(r.get("device_seconds", 0.0)), 3)
    n = max(1, int(n_workers))
    out = {
        "rows": rows,
        "seconds": round(seconds, 3),
        "workers": n,
        "rows_per_second": round(rows / seconds, 1),
        f"rows_per_second_per_{per}": round(rows / seconds / n, 1),
        "per_worker": workers,
    }
    peaks = [r["gpu_peak_bytes"] for r in recs if "gpu_peak_bytes" in r]
    if peaks:
        out["gpu_peak_bytes_max"] = int(max(peaks))
        ratios = [r["gpu_peak_ratio"] for r in recs if "gpu_peak_ratio" in r]
        if ratios:
            out["gpu_peak_ratio_max"] = float(max(ratios))
    return out
