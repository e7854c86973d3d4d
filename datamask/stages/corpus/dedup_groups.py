"""The corpus-wide part of ``datamask dedup``: duplicate groups across every split and file.

Run once, in the stage's setup, as resumable passes of Dask tasks that read and write
Parquet under ``_datamask/dedup/`` (:mod:`.dedup_exchange`); the client holds O(splits),
never a row. A killed run restarts at the first pass it had not finished (a kill during
the connected components reruns them from the pairs already written). Documents are named
by their numbers (:mod:`.dedup_exchange`).

1. exact and fuzzy pairs (:mod:`.dedup_text`): per split the signatures and bucket
   records; per partition of keys the exact groups and candidate pairs; per split the
   candidates verified on their signatures;
2. connected components of the pairs, rounds until stable, and the kept document of each
   (:mod:`.dedup_cc`);
3. semantic (when asked, :mod:`.dedup_semantic`): SemDeDup one cluster at a time on what
   the exact and fuzzy kinds kept;
4. ids (per split): a removed document pointing at one that semantic removed points at its
   kept one instead (``resolve``); the kept document's id (``kept-ids``, where the groups
   are numbered), then the removed one's: ``removed/<split>.parquet`` (``doc, kept_id,
   kind``: what the per-split pass drops) and ``groups/<split>.parquet`` (``id, kept_id,
   kind, group``: for the user); then ``summary.json``.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pyarrow as pa

from ...dedup.normalize import read_texts
from ...dedup.pairs import KINDS
from ...runtime.files import write_json_atomic, write_parquet_atomic
from ...runtime.storage import location, rmtree
from . import dedup_cc
from .dedup_cc import N_EXAMPLES, REMOVED_SCHEMA, CCCtx, components
from .dedup_exchange import (
    Passes,
    column_names,
    doc_range,
    iter_batches,
    read_part,
    split_of,
    take_docs,
    take_rows,
    write_routed,
)
from .dedup_semantic import SemCtx, semantic_groups
from .dedup_text import TextCtx, pair_files, parts_for, text_pairs

__all__ = ["find_groups", "DEDUP_DIR", "GROUPS_DIR", "REMOVED_DIR", "SUMMARY_FILE", "PLAN_FILE", "EXAMPLE_CHARS"]

DEDUP_DIR = "dedup"
GROUPS_DIR = "groups"  # for the user: id, kept_id, kind, group of every removed row, one file per split
REMOVED_DIR = "removed"  # for the per-split pass: document number (doc), kept_id, kind
SUMMARY_FILE = "summary.json"
PLAN_FILE = "plan.json"  # the splits and settings the passes under _datamask/dedup were made for
EXAMPLE_CHARS = 600


# ---------------------------------------------------------------------- 4. ids
def _resolve_task(i: int, ctx) -> dict:
    """``resolve`` for split ``i``: the removed documents whose kept one is in the split;
    a kept one that semantic removed is replaced by its own kept one."""
    n = len(ctx["bounds"])
    t = read_part(ctx["kept"], i, n, REMOVED_SCHEMA)
    sem = read_part(ctx["semantic"], i, n, REMOVED_SCHEMA)
    kept = t.column("kept").to_numpy()
    order = np.argsort(sem.column("doc").to_numpy())
    sd, sk = sem.column("doc").to_numpy()[order], sem.column("kept").to_numpy()[order]
    if sd.shape[0]:
        at = np.clip(np.searchsorted(sd, kept), 0, sd.shape[0] - 1)
        t = t.set_column(1, "kept", pa.array(np.where(sd[at] == kept, sk[at], kept)))
    out = pa.concat_tables([t, sem])
    write_routed(_file(ctx, "resolve", i), out, split_of(out.column("kept").to_numpy(), ctx["bounds"]), n)
    return {"rows": out.num_rows}


def _file(ctx, folder, i):
    return str(location(ctx["root"]) / folder / f"{i:06d}.parquet")


def _ids_of(ctx, i, docs):
    """The input ids of documents ``docs`` of split ``i`` (from its docs file)."""
    return take_docs(_file(ctx, "signatures/docs", i), ctx["bounds"][i], docs, ["id"]).column("id")


def _kept_ids_task(i: int, ctx) -> dict:
    """``kept-ids`` for split ``i``: the kept ones' ids; their groups numbered within the
    split; routed by the removed document's split."""
    n = len(ctx["bounds"])
    t = read_part(ctx["inputs"], i, n, REMOVED_SCHEMA)
    kept = t.column("kept").to_numpy()
    uniq, local = np.unique(kept, return_inverse=True)
    t = t.append_column("kept_id", _ids_of(ctx, i, kept)).append_column(
        "group", pa.array(local.reshape(-1).astype(np.int64))
    )
    t = t.append_column("gsplit", pa.array(np.full(t.num_rows, i, np.int64)))
    write_routed(_file(ctx, "kept-ids", i), t, split_of(t.column("doc").to_numpy(), ctx["bounds"]), n)
    return {"groups": int(uniq.shape[0])}


def _removed_task(i: int, ctx) -> dict:
    """``removed`` for split ``i``: its removed documents with both ids, by document number."""
    n = len(ctx["bounds"])
    t = read_part([_file(ctx, "kept-ids", j) for j in range(n)], i, n, None)
    if t.num_rows:
        t = t.take(pa.array(np.argsort(t.column("doc").to_numpy(), kind="stable")))
    group = t.column("group").to_numpy() + np.asarray(ctx["offsets"], np.int64)[t.column("gsplit").to_numpy()]
    kind = pa.array(np.array(KINDS, dtype=object)[t.column("kind").to_numpy()].tolist(), type=pa.string())
    name = ctx["names"][i]
    root = location(ctx["root"])
    write_parquet_atomic(
        pa.table({"doc": t.column("doc"), "kept_id": t.column("kept_id"), "kind": kind}),
        root / REMOVED_DIR / f"{name}.parquet",
    )
    groups = pa.table(
        {
            "id": _ids_of(ctx, i, t.column("doc").to_numpy()),
            "kept_id": t.column("kept_id"),
            "kind": kind,
            "group": group,
        }
    )
    write_parquet_atomic(groups, root / GROUPS_DIR / f"{name}.parquet")
    return {"removed": np.bincount(t.column("kind").to_numpy(), minlength=3).tolist()}


def _ids(passes, base, kept_files, sem_files):
    n = len(base["bounds"])
    inputs = kept_files
    if sem_files:
        passes.run("resolve", _resolve_task, range(n), passes.scatter(dict(base, kept=kept_files, semantic=sem_files)))
        inputs = [_file(base, "resolve", i) for i in range(n)]
    got = passes.run("kept-ids", _kept_ids_task, range(n), passes.scatter(dict(base, inputs=inputs)), desc="dedup ids")
    offsets = np.concatenate([[0], np.cumsum([r["groups"] for r in got])[:-1]]).astype(np.int64).tolist()
    res = passes.run(
        "removed", _removed_task, range(n), passes.scatter(dict(base, offsets=offsets)), desc="dedup removed"
    )
    return np.sum([r["removed"] for r in res], axis=0).tolist()


# ---------------------------------------------------------------------- examples
def _texts_task(item, ctx) -> dict:
    """Ids and (cut) texts of a few documents of one split, for the report."""
    i, docs = item
    s, lo = ctx["splits"][i], int(ctx["bounds"][i])
    rows = np.asarray(docs, np.int64) - lo
    if s.fmt == "parquet":  # only the row groups that hold them
        t = take_rows(s.path, rows + s.start, [ctx["id"], ctx["text"]])
    else:
        t = pa.concat_tables(list(iter_batches(s, [ctx["id"], ctx["text"]], 1 << 30))).take(pa.array(rows))
    ids, texts = t.column(ctx["id"]).to_pylist(), read_texts(t, ctx["text"], s.where()).to_pylist()
    cut = [x[:EXAMPLE_CHARS] if isinstance(x, str) else None for x in texts]
    return {"rows": [[int(d), i, x] for d, i, x in zip(docs, ids, cut)]}


def _examples(client, tctx, examples):
    """The largest ``N_EXAMPLES`` groups of each kind, with ids and texts."""
    best = {}
    for kind, kept, size, removed in examples:
        best.setdefault(kind, []).append((-size, kept, removed))
    picked = [(k, kept, removed) for k in KINDS if k in best for _, kept, removed in sorted(best[k])[:N_EXAMPLES]]
    docs = np.unique(np.array([d for _, kept, rs in picked for d in [kept, *rs]], dtype=np.int64))
    where = split_of(docs, tctx.bounds)
    items = [(int(i), docs[where == i].tolist()) for i in np.unique(where)]
    ctx = {"splits": tctx.splits, "bounds": tctx.bounds, "id": tctx.cols.id, "text": tctx.cols.text}
    found = {}
    for r in client.gather(client.map(_texts_task, items, ctx=ctx, pure=False)):
        found.update({d: (i, t) for d, i, t in r["rows"]})

    def one(d):
        i, t = found.get(d, (None, None))
        return {"id": i, "text": t}

    return [{"kind": k, "kept": one(kept), "duplicates": [one(r) for r in rs]} for k, kept, rs in picked]


# ---------------------------------------------------------------------- the passes
def _contexts(plan, cols, ranks, kinds, params, cfg, where):
    bounds = np.array([doc_range(s, ranks)[0] for s in plan.splits], dtype=np.int64)
    tctx = TextCtx(str(where), list(plan.splits), bounds, ranks, cols, cfg.quality_column, kinds, params)
    tctx.n_exact = parts_for(plan.n_rows, 1)
    tctx.n_fuzzy = parts_for(plan.n_rows, params.bands)
    base = {"root": str(where), "bounds": bounds, "names": [s.name for s in plan.splits]}
    return tctx, base


def _check_plan(where, plan, kinds):
    """Passes made for other splits (the input changed since) are discarded."""
    record = {"splits": [s.identity for s in plan.splits], "kinds": list(kinds)}
    path = location(where) / PLAN_FILE
    if path.exists() and json.loads(path.read_text()) != record:
        rmtree(where)
    if not path.exists():
        write_json_atomic(record, path)


def find_groups(client, plan, cols, ranks, kinds, params, cfg, device, where):
    """Every duplicate group of the corpus (module doc); writes ``removed/``, ``groups/`` and
    ``summary.json`` under ``where`` (``_datamask/dedup``), the summary last."""
    t0 = time.perf_counter()
    _check_plan(where, plan, kinds)
    passes = Passes(client, where, cfg.quiet)
    tctx, base = _contexts(plan, cols, ranks, kinds, params, cfg, where)
    text = text_pairs(passes, tctx)
    text_kinds = [k for k in kinds if k != "semantic"]
    cctx = CCCtx(str(where), pair_files(tctx), 1, tctx.bounds, by_doc="semantic" in kinds)
    cctx.n_parts = max(1, -(-(text["exact_pairs"] + text["fuzzy_pairs"]) * 2 // dedup_cc.EDGES_PER_PART))
    cc = (
        components(passes, cctx)
        if text_kinds
        else {"removed": [0, 0], "fuzzy_groups": 0, "examples": [], "rounds": 0, "edges": 0}
    )
    stats = {"exact": {"groups": text["exact_groups"], "removed": cc["removed"][0]}}
    stats["fuzzy"] = {"groups": cc["fuzzy_groups"], "removed": cc["removed"][1]}
    examples, sem_files = list(cc["examples"]), []
    kept_files = cctx.files("kept", cctx.n_parts) if text_kinds else []
    if "semantic" in kinds:
        sctx = SemCtx(str(where), tctx.splits, tctx.bounds, ranks, cols, cfg.quality_column, cfg.domain_column)
        sctx.eps, sctx.device = float(cfg.eps), device
        sctx.text_removed = cctx.files("kept/by-doc", cctx.n_parts) if text_kinds else []
        sem = semantic_groups(passes, sctx, plan, cfg)
        stats["semantic"] = {"groups": sem["groups"], "removed": sem["removed"]}
        examples += sem["examples"]
        sem_files = [sctx.file("semantic", c) for c in range(sem["n_clusters"])]
    removed = _ids(passes, base, kept_files, sem_files)
    summary = {
        "kinds": {k: stats[k] for k in kinds},
        "removed": int(sum(removed)),
        "quality_column_used": cfg.quality_column in column_names(plan, cols),
        "lsh": _lsh(params) if "fuzzy" in kinds else None,
        "eps": float(cfg.eps) if "semantic" in kinds else None,
        "examples": _examples(client, tctx, examples),
        "pairs": {"exact": text["exact_pairs"], "fuzzy_candidates": text["candidates"], "fuzzy": text["fuzzy_pairs"]},
        "components": {"partitions": cctx.n_parts, "rounds": cc["rounds"]},
        "passes": {"seconds": passes.timings, "cpu_seconds": passes.cpu, "reused": passes.reused},
        "seconds": round(time.perf_counter() - t0, 3),
    }
    write_json_atomic(summary, location(where) / SUMMARY_FILE)  # last: its presence marks the groups complete
    for name in [*passes.reused, *passes.timings]:  # the exchanged files; the pairs, labels, removed, groups stay
        if name not in ("buckets", "pairs", "labels", "removed") and (location(where) / name).exists():
            passes.free(name)
    rmtree(location(where) / "buckets" / "cand")
    return summary


def _lsh(params):
    return {k: getattr(params, k) for k in ("ngram", "num_perm", "bands", "rows", "threshold")}
