"""Connected components of the duplicate pairs, out of core, and the kept document of each.

The pairs (exact stars and verified fuzzy pairs, :mod:`.dedup_text`) are the edges. Rounds
of Dask tasks over them, each a resumable pass (``cc-0``, ``cc-1``, ...):

* ``cc-0`` (per pairs file): every edge routed to the partitions of both its ends (a hash
  of the document number), and each end's quality and whether an exact group removed it
  (``cc-0/nodes/``), routed the same way;
* ``cc-k`` (per partition): the connected components of the edges the partition holds
  (scipy), each replaced by a star from its smallest node
  (:func:`~datamask.dedup.pairs.star_edges`), routed again. A node's own partition holds
  all its edges, so its smallest neighbour never grows; when no partition changes its
  edges, each edge joins a node to the smallest node of its component, the label. With one
  partition (a pairs table of up to ``EDGES_PER_PART`` edges) the first round is final.

Then ``labels`` (per partition): each node's label, quality and exact flag, routed by the
label; ``kept`` (per partition): each component's kept document (highest quality, then
smallest number); a removed one is ``exact`` when an exact group removed it, else
``fuzzy``. The removed documents (``doc, kept, kind``) are routed by the split of the kept
one for the ids (:mod:`.dedup_groups`). Memory per task is one partition's edges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...dedup.pairs import KIND_CODE, KINDS, removed_of_groups, star_edges
from ...runtime.storage import location
from .dedup_exchange import hash_part, read_part, split_of, write_routed

__all__ = ["CCCtx", "components", "REMOVED_SCHEMA", "EDGES_PER_PART", "MAX_ROUNDS"]

EDGES_PER_PART = 8_000_000  # edges per partition of a round (~128 MB of int64 pairs)
MAX_ROUNDS = 64
N_EXAMPLES = 3  # example groups per kind shown in the report
EDGE_SCHEMA = pa.schema([("u", pa.int64()), ("v", pa.int64())])
NODE_SCHEMA = pa.schema([("doc", pa.int64()), ("quality", pa.float64()), ("exact", pa.bool_())])
LABEL_SCHEMA = pa.schema([("doc", pa.int64()), ("label", pa.int64()), ("quality", pa.float64()), ("exact", pa.bool_())])
REMOVED_SCHEMA = pa.schema([("doc", pa.int64()), ("kept", pa.int64()), ("kind", pa.int8())])


@dataclass
class CCCtx:
    root: str
    pair_files: list
    n_parts: int
    bounds: np.ndarray
    by_doc: bool = False  # also route the removed documents by their own split (semantic needs them)

    def file(self, folder: str, i: int) -> str:
        return str(location(self.root) / folder / f"{i:06d}.parquet")

    def files(self, folder: str, n: int) -> list:
        return [self.file(folder, i) for i in range(n)]


def _both_ways(u, v, n_parts):
    """Each edge as a row of both ends (``u`` the end whose partition gets it)."""
    uu, vv = np.concatenate([u, v]), np.concatenate([v, u])
    return pa.table({"u": uu, "v": vv}, schema=EDGE_SCHEMA), hash_part(uu, n_parts)


def route_pairs(f: int, ctx: CCCtx) -> dict:
    """``cc-0`` for pairs file ``f``."""
    import pyarrow.parquet as pq

    from ...runtime.storage import open_file

    with open_file(ctx.pair_files[f], "rb") as fh:
        t = pq.read_table(fh)
    a, b = t.column("a").to_numpy(), t.column("b").to_numpy()
    write_routed(ctx.file("cc-0", f), *_both_ways(a, b, ctx.n_parts), ctx.n_parts)
    exact = t.column("kind").to_numpy() == KIND_CODE["exact"]
    nodes = pa.table(
        {
            "doc": np.concatenate([a, b]),
            "quality": np.concatenate([t.column("qa").to_numpy(), t.column("qb").to_numpy()]),
            "exact": np.concatenate([np.zeros(a.shape[0], bool), exact]),  # b of an exact pair: removed by it
        },
        schema=NODE_SCHEMA,
    )
    write_routed(ctx.file("cc-0/nodes", f), nodes, hash_part(nodes.column("doc").to_numpy(), ctx.n_parts), ctx.n_parts)
    return {"edges": int(a.shape[0])}


def star_round(item, ctx: CCCtx) -> dict:
    """``cc-k`` for one partition: ``item = (k, p, n_inputs)``."""
    k, p, n_in = item
    t = read_part(ctx.files(f"cc-{k - 1}", n_in), p, ctx.n_parts, EDGE_SCHEMA)
    c, n, changed = star_edges(t.column("u").to_numpy(), t.column("v").to_numpy())
    del t
    write_routed(ctx.file(f"cc-{k}", p), *_both_ways(c, n, ctx.n_parts), ctx.n_parts)
    return {"edges": int(c.shape[0]), "changed": bool(changed)}


def label_task(item, ctx: CCCtx) -> dict:
    """``labels`` for partition ``p`` of the final round: its nodes' labels (the smallest of
    the node and its neighbours), quality and exact flag, routed by label."""
    p, final, n_final, n_pairs = item
    e = read_part(ctx.files(f"cc-{final}", n_final), p, ctx.n_parts, EDGE_SCHEMA)
    u, v = e.column("u").to_numpy(), e.column("v").to_numpy()
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    first = np.ones(u.shape[0], dtype=bool)
    first[1:] = u[1:] != u[:-1]
    doc, label = u[first], np.minimum(u[first], v[first])  # v sorted within u: its first is the smallest
    nd = read_part(ctx.files("cc-0/nodes", n_pairs), p, ctx.n_parts, NODE_SCHEMA)
    nd_doc = nd.column("doc").to_numpy()
    o = np.lexsort((~nd.column("exact").to_numpy(), nd_doc))  # per document, an exact row first
    nd_doc = nd_doc[o]
    head = np.ones(nd_doc.shape[0], dtype=bool)
    head[1:] = nd_doc[1:] != nd_doc[:-1]
    at = np.searchsorted(nd_doc[head], doc)
    rows = pa.table(
        {
            "doc": doc,
            "label": label,
            "quality": nd.column("quality").to_numpy()[o][head][at],
            "exact": nd.column("exact").to_numpy()[o][head][at],
        },
        schema=LABEL_SCHEMA,
    )
    write_routed(ctx.file("labels", p), rows, hash_part(label, ctx.n_parts), ctx.n_parts)
    return {"nodes": int(doc.shape[0])}


def _examples(kept, doc, kind):
    """The ``N_EXAMPLES`` largest groups of each kind: ``[kind, kept, size, first removed]``."""
    out = []
    for code in np.unique(kind):
        sel = kind == code
        k, d = kept[sel], doc[sel]
        groups, sizes = np.unique(k, return_counts=True)
        for g, size in sorted(zip(groups.tolist(), sizes.tolist()), key=lambda x: (-x[1], x[0]))[:N_EXAMPLES]:
            out.append([KINDS[int(code)], g, size, np.sort(d[k == g])[:3].tolist()])
    return out


def kept_task(q: int, ctx: CCCtx) -> dict:
    """``kept`` for partition ``q`` of the labels: every removed document with its kept
    one and kind, routed by the split of the kept one."""
    t = read_part(ctx.files("labels", ctx.n_parts), q, ctx.n_parts, LABEL_SCHEMA)
    cols = [t.column(c).to_numpy() for c in ("label", "doc", "quality", "exact")]
    doc, kept, kind, fuzzy_groups = removed_of_groups(*cols)
    removed = pa.table({"doc": doc, "kept": kept, "kind": kind}, schema=REMOVED_SCHEMA)
    write_routed(ctx.file("kept", q), removed, split_of(kept, ctx.bounds), len(ctx.bounds))
    if ctx.by_doc:
        write_routed(ctx.file("kept/by-doc", q), removed, split_of(doc, ctx.bounds), len(ctx.bounds))
    return {
        "removed": np.bincount(kind, minlength=2).tolist(),
        "fuzzy_groups": fuzzy_groups,
        "examples": _examples(kept, doc, kind),
    }


def components(passes, ctx: CCCtx) -> dict:
    """Rounds until stable, then the kept documents (module doc); stats of the text kinds."""
    n_pairs = len(ctx.pair_files)
    got = passes.run("cc-0", route_pairs, range(n_pairs), passes.scatter(ctx), desc="dedup components")
    ref = passes.scatter(ctx)
    k, n_in, rounds = 0, n_pairs, []
    while True:
        k += 1
        if k > MAX_ROUNDS:
            raise RuntimeError(f"dedup: connected components did not settle in {MAX_ROUNDS} rounds")
        res = passes.run(
            f"cc-{k}", star_round, [(k, p, n_in) for p in range(ctx.n_parts)], ref, desc=f"dedup components (round {k})"
        )
        rounds.append(sum(r["edges"] for r in res))
        n_in = ctx.n_parts
        if ctx.n_parts == 1 or not any(r["changed"] for r in res):
            break
    passes.run("labels", label_task, [(p, k, n_in, n_pairs) for p in range(ctx.n_parts)], ref, desc="dedup labels")
    kept = passes.run("kept", kept_task, range(ctx.n_parts), ref, desc="dedup kept")
    return {
        "edges": sum(r["edges"] for r in got),
        "rounds": k,
        "removed": np.sum([r["removed"] for r in kept], axis=0).tolist() if kept else [0, 0],
        "fuzzy_groups": sum(r["fuzzy_groups"] for r in kept),
        "examples": [e for r in kept for e in r["examples"]],
    }
