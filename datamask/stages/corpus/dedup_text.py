"""The exact and fuzzy passes of ``datamask dedup``, from the text to the verified pairs.

Four passes (:mod:`.dedup_exchange`), written under ``_datamask/dedup/``:

``signatures`` (per split)
    the split read in batches; each document's id, quality and MinHash signature
    (``signatures/docs/``, one file per split), and its bucket records routed by key: the
    exact key (``signatures/exact/``) and one record per LSH band (``signatures/fuzzy/``).
``buckets`` (per partition of keys)
    equal exact keys: an exact group, a star around its kept member (highest quality,
    then first), written as pairs (``buckets/exact/``); equal band keys: candidate pairs,
    routed by the split of their first document (``buckets/cand/``).
``candidates`` (per split)
    each candidate once, the first document's signature attached from the split's docs
    file, routed by the split of the second one (``candidates/``).
``pairs`` (per split)
    the second signature attached; the pairs whose Jaccard estimate reaches the threshold
    (``pairs/``).

The exact pairs and the verified pairs are the edges of the connected components
(:mod:`.dedup_cc`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ...dedup.buckets import text_records
from ...dedup.minhash import similar
from ...dedup.normalize import read_quality, read_texts
from ...dedup.pairs import KIND_CODE, band_pairs, exact_stars, unique_pairs
from ...pipeline.io import write_parquet_atomic
from ...runtime.storage import location
from .dedup_exchange import RoutedWriter, _atomic, iter_batches, read_part, split_of, take_docs, write_routed

__all__ = ["TextCtx", "text_pairs", "pair_files", "PAIRS_SCHEMA", "sig_column", "sig_matrix", "BATCH_ROWS"]

BATCH_ROWS = 65_536  # rows per batch of the signatures pass, and per row group of a docs file
RECORDS_PER_PART = 4_000_000  # bucket records per partition of the buckets pass (~64 MB)
EXACT_SCHEMA = pa.schema([("key", pa.uint64()), ("key2", pa.uint64()), ("doc", pa.int64()), ("quality", pa.float64())])
FUZZY_SCHEMA = pa.schema([("key", pa.uint64()), ("doc", pa.int64())])
CAND_SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64())])
PAIRS_SCHEMA = pa.schema(
    [("kind", pa.int8()), ("a", pa.int64()), ("b", pa.int64()), ("qa", pa.float64()), ("qb", pa.float64())]
)


@dataclass
class TextCtx:
    """What every task of the text passes needs (sent to each worker once)."""

    root: str  # _datamask/dedup
    splits: list
    bounds: np.ndarray  # first document number of each split
    ranks: dict
    cols: object  # DedupColumns
    quality_column: str
    kinds: tuple
    params: object  # LSHParams
    n_exact: int = 1
    n_fuzzy: int = 1

    def file(self, folder: str, i: int) -> str:
        return str(location(self.root) / folder / f"{i:06d}.parquet")

    def files(self, folder: str, n: int) -> list:
        return [self.file(folder, i) for i in range(n)]

    @property
    def n_splits(self) -> int:
        return len(self.splits)


def sig_column(sig: np.ndarray) -> pa.Array:
    """A ``(N, P)`` uint32 matrix as a ``fixed_size_binary(4P)`` column (one copy)."""
    sig = np.ascontiguousarray(sig, dtype=np.uint32)
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(4 * sig.shape[1]), sig.shape[0], [None, pa.py_buffer(sig)])


def sig_matrix(col, num_perm: int) -> np.ndarray:
    """The ``(N, num_perm)`` uint32 view of a ``fixed_size_binary`` signature column."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if len(col) == 0:
        return np.zeros((0, num_perm), np.uint32)
    flat = np.frombuffer(col.buffers()[1], dtype=np.uint32)
    return flat[col.offset * num_perm : (col.offset + len(col)) * num_perm].reshape(len(col), num_perm)


def _mod(key, n: int) -> np.ndarray:
    return (np.asarray(key, dtype=np.uint64) % np.uint64(n)).astype(np.int64)


# ---------------------------------------------------------------------- pass 1: signatures
def _docs_schema(id_type, num_perm: int, fuzzy: bool) -> pa.Schema:
    fields = [("id", id_type), ("quality", pa.float64())]
    return pa.schema(fields + ([("sig", pa.binary(4 * num_perm))] if fuzzy else []))


def _batch_records(batch, s, doc, ctx, writers):
    """One batch's docs rows and bucket records (added to ``writers``, routed by key)."""
    texts = read_texts(batch, ctx.cols.text, s.where())
    q = read_quality(batch, ctx.quality_column)
    q = np.full(batch.num_rows, np.nan) if q is None else q
    records, sig = text_records(texts, doc, q, ctx.kinds, ctx.params)
    for kind, n_parts in (("exact", ctx.n_exact), ("fuzzy", ctx.n_fuzzy)):
        if kind in records:
            writers[kind].add(pa.table(records[kind]), _mod(records[kind]["key"], n_parts))
    docs = {"id": batch.column(ctx.cols.id), "quality": q}
    if sig is not None:
        docs["sig"] = sig_column(sig)
    return pa.table(docs), texts.null_count


def signatures_task(i: int, ctx: TextCtx) -> dict:
    """Pass 1 for split ``i`` (module doc)."""
    s, lo = ctx.splits[i], int(ctx.bounds[i])
    n = nulls = 0
    schema = {"exact": EXACT_SCHEMA, "fuzzy": FUZZY_SCHEMA}
    parts = {"exact": ctx.n_exact, "fuzzy": ctx.n_fuzzy}
    with contextlib.ExitStack() as stack:
        writers = {
            k: stack.enter_context(RoutedWriter(ctx.file(f"signatures/{k}", i), schema[k], parts[k]))
            for k in ctx.kinds
            if k in schema
        }
        fh = stack.enter_context(_atomic(ctx.file("signatures/docs", i)))
        out = None
        for batch in iter_batches(s, [ctx.cols.id, ctx.cols.text, ctx.quality_column], BATCH_ROWS):
            doc = lo + n + np.arange(batch.num_rows, dtype=np.int64)
            table, null = _batch_records(batch, s, doc, ctx, writers)
            if out is None:
                id_type = batch.schema.field(ctx.cols.id).type
                out = stack.enter_context(
                    pq.ParquetWriter(fh, _docs_schema(id_type, ctx.params.num_perm, "sig" in table.schema.names))
                )
            out.write_table(table.cast(out.schema), row_group_size=BATCH_ROWS)
            n, nulls = n + batch.num_rows, nulls + null
        if out is None:  # an empty split
            pq.write_table(_docs_schema(pa.null(), ctx.params.num_perm, "fuzzy" in ctx.kinds).empty_table(), fh)
    return {"rows": n, "null_texts": int(nulls)}


# ---------------------------------------------------------------------- pass 2: buckets
def bucket_task(item, ctx: TextCtx) -> dict:
    """Pass 2 for one partition of exact keys (``("exact", p)``) or band keys (``("fuzzy", p)``)."""
    kind, p = item
    if kind == "exact":
        t = read_part(ctx.files("signatures/exact", ctx.n_splits), p, ctx.n_exact, EXACT_SCHEMA)
        col = {c: t.column(c).to_numpy() for c in EXACT_SCHEMA.names}
        a, b, qa, qb, groups = exact_stars(col["key"], col["key2"], col["doc"], col["quality"])
        kind_col = np.full(a.shape[0], KIND_CODE["exact"], np.int8)
        pairs = pa.table({"kind": kind_col, "a": a, "b": b, "qa": qa, "qb": qb}, schema=PAIRS_SCHEMA)
        write_parquet_atomic(pairs, ctx.file("buckets/exact", p))
        return {"kind": kind, "pairs": int(a.shape[0]), "groups": groups}
    t = read_part(ctx.files("signatures/fuzzy", ctx.n_splits), p, ctx.n_fuzzy, FUZZY_SCHEMA)
    a, b = band_pairs(t.column("key").to_numpy(), t.column("doc").to_numpy())
    del t
    write_routed(ctx.file("buckets/cand", p), pa.table({"a": a, "b": b}), split_of(a, ctx.bounds), ctx.n_splits)
    return {"kind": kind, "candidates": int(a.shape[0])}


# ---------------------------------------------------------------------- passes 3-4: verification
def _attach(ctx: TextCtx, i: int, docs) -> tuple:
    """Quality and signatures of the documents ``docs`` (all in split ``i``), row by row."""
    t = take_docs(ctx.file("signatures/docs", i), ctx.bounds[i], docs, ["quality", "sig"])
    return t.column("quality").to_numpy(), sig_matrix(t.column("sig"), ctx.params.num_perm)


def candidates_task(i: int, ctx: TextCtx) -> dict:
    """Pass 3 for split ``i``: its candidates (first document in it) once, that document's
    signature attached, routed by the split of the second."""
    t = read_part(ctx.files("buckets/cand", ctx.n_fuzzy), i, ctx.n_splits, CAND_SCHEMA)
    a, b = unique_pairs(t.column("a").to_numpy(), t.column("b").to_numpy())
    qa, sig = _attach(ctx, i, a)
    out = pa.table({"a": a, "b": b, "qa": qa, "sig": sig_column(sig)})
    write_routed(ctx.file("candidates", i), out, split_of(b, ctx.bounds), ctx.n_splits)
    return {"candidates": int(a.shape[0])}


def pairs_task(j: int, ctx: TextCtx) -> dict:
    """Pass 4 for split ``j``: the candidates whose second document is in it, verified."""
    schema = pa.schema(
        [("a", pa.int64()), ("b", pa.int64()), ("qa", pa.float64()), ("sig", pa.binary(4 * ctx.params.num_perm))]
    )
    t = read_part(ctx.files("candidates", ctx.n_splits), j, ctx.n_splits, schema)
    b = t.column("b").to_numpy()
    qb, sig_b = _attach(ctx, j, b)
    sig_a = sig_matrix(t.column("sig"), ctx.params.num_perm)
    ok = similar(sig_a, sig_b, ctx.params.threshold)
    a = t.column("a").to_numpy()[ok]
    pairs = {"kind": np.full(a.shape[0], KIND_CODE["fuzzy"], np.int8), "a": a, "b": b[ok]}
    pairs.update(qa=t.column("qa").to_numpy()[ok], qb=qb[ok])
    write_parquet_atomic(pa.table(pairs, schema=PAIRS_SCHEMA), ctx.file("pairs", j))
    return {"pairs": int(a.shape[0])}


# ---------------------------------------------------------------------- the passes in order
def parts_for(n_rows: int, per_row: int) -> int:
    """Partitions of the buckets pass for ``n_rows`` documents with ``per_row`` records each."""
    return max(1, -(-int(n_rows) * int(per_row) // RECORDS_PER_PART))


def text_pairs(passes, ctx: TextCtx) -> dict:
    """Run passes 1-4 (each resumable); stats: rows, null texts, exact groups, candidate
    and verified pair counts."""
    from ...runtime.storage import rmtree

    ref = passes.scatter(ctx)
    got = passes.run("signatures", signatures_task, range(ctx.n_splits), ref, desc="dedup signatures")
    items = [("exact", p) for p in range(ctx.n_exact) if "exact" in ctx.kinds]
    items += [("fuzzy", p) for p in range(ctx.n_fuzzy) if "fuzzy" in ctx.kinds]
    buckets = passes.run("buckets", bucket_task, items, ref, desc="dedup buckets")
    for k in ("exact", "fuzzy"):  # the bucket records are read once: free the disk
        rmtree(location(ctx.root) / "signatures" / k)
    stats = {
        "null_texts": sum(r["null_texts"] for r in got),
        "exact_groups": sum(r.get("groups", 0) for r in buckets),
        "exact_pairs": sum(r.get("pairs", 0) for r in buckets if r["kind"] == "exact"),
        "candidates": sum(r.get("candidates", 0) for r in buckets),
        "fuzzy_pairs": 0,
    }
    if "fuzzy" in ctx.kinds:
        passes.run("candidates", candidates_task, range(ctx.n_splits), ref, desc="dedup candidates")
        verified = passes.run("pairs", pairs_task, range(ctx.n_splits), ref, desc="dedup verify")
        passes.free("candidates")
        stats["fuzzy_pairs"] = sum(r["pairs"] for r in verified)
    return stats


def pair_files(ctx: TextCtx) -> list:
    """The files of every verified pair: exact pairs, then fuzzy ones."""
    files = ctx.files("buckets/exact", ctx.n_exact) if "exact" in ctx.kinds else []
    return files + (ctx.files("pairs", ctx.n_splits) if "fuzzy" in ctx.kinds else [])
