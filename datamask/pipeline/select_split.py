"""One split's selection, with no paths and no I/O: the function both rings call.

``datamask select`` (the runner, :mod:`.select`) and :func:`datamask.dask.select` (a lazy
``map_partitions``) both hand one split's Arrow table to :func:`select_split` and get back
the method's selection (mask, logits) and the split's record (a
:class:`~.split_record.SplitRecord`: objective before and after, steps, seconds).
What they add around it differs: the runner reads splits from files, drops duplicate ids
found across the corpus, sets a holdout aside and writes files atomically; the dataframe API
checks ids within its partition and returns a frame. The checks and their one-line messages
are the same, so a bad frame fails like a bad file, naming its split.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..core.diversity import get_diversity, uses_host_kernels
from ..core.halfcast import load as load_compiled_cast
from ..core.heap import large_blocks
from ..errors import DataError
from ..methods import score, select
from ..methods.registry import Selection, split_budget
from ..runtime.gpu import CPU
from ..runtime.gpu_worker import DeviceWork, device_array
from .io import split_seed  # noqa: F401  (re-exported: the seed of a split)
from .schema import LOGIT, SELECTED, Columns, check_table, check_vectors
from .side_by_side import split_side_by_side
from .split_record import SplitRecord
from .tokens import known_lengths
from .why import near_line, split_labels, split_why

__all__ = [
    "select_split",
    "split_seed",
    "duplicate_ids",
    "duplicate_ids_message",
    "selected_table",
]


def duplicate_ids_message(column: str, n_values: int, example, at: list) -> str:
    """The one-line duplicate-id error, for the corpus-wide check and the per-split one."""
    return (
        f"column {column!r} has duplicate ids ({n_values} values repeat, e.g. {example!r} at "
        f"{' and '.join(at)}); deduplicate the input or pass --set dedupe_ids=true to keep the first"
    )


def duplicate_ids(ids, where: str, column: str, dedupe: bool, first_row: int = 0) -> np.ndarray | None:
    """Rows (positions) to drop for ids repeated within one split; raises unless ``dedupe``."""
    import pandas as pd

    s = pd.Series(np.asarray(ids.to_pylist() if isinstance(ids, (pa.Array, pa.ChunkedArray)) else ids, dtype=object))
    dup = s.duplicated(keep="first").to_numpy()
    if not dup.any():
        return None
    if not dedupe:
        i = int(np.flatnonzero(dup)[0])
        j = int(np.flatnonzero((s == s.iloc[i]).to_numpy())[0])
        n_values = int(s[s.duplicated(keep=False)].nunique())
        raise DataError(
            duplicate_ids_message(
                column, n_values, s.iloc[i], [f"{where} row {first_row + j}", f"{where} row {first_row + i}"]
            )
        )
    return np.flatnonzero(dup)


def _score_all(E, q, cfg, seed):
    """The objective of the whole split ("before"), by the same ``evaluate`` as every
    selection. Facility location is skipped: every row is its own nearest neighbour, so it
    is 1 by definition."""
    if get_diversity(cfg.diversity).whole_split_known:
        return None
    return score(E, q, np.ones(E.shape[0], dtype=bool), cfg, seed)


def select_split(
    table: pa.Table,
    cfg,
    seed: int,
    where: str,
    first_row: int = 0,
    *,
    level=CPU,
    d=None,
    callback=None,
    split_tokens=None,
    side_by_side=True,
    why=True,
    centroids=None,
) -> tuple[Selection, SplitRecord]:
    """Validate one split (host), select on the level's arrays, score before and after:
    ``(selection, record)``, the method's :class:`~datamask.methods.registry.Selection` (its
    ``mask`` a numpy bool array, its ``logits`` float64, NaN for a method without logits, -inf
    for pruned rows) and the split's :class:`~.split_record.SplitRecord`, made from it.

    ``table`` holds the split's rows (the method may read more columns of it: clusters,
    token counts); ``seed`` is the split's own (:func:`split_seed` of its identity);
    ``where`` names the split in errors; ``d`` is the width every split must have;
    ``split_tokens``: the split's share T_s of the corpus's token budget (:mod:`datamask.pipeline.tokens`);
    ``side_by_side``: score top-k and random at the same budget beside the selection (the
    record's ``side_by_side``, :mod:`datamask.pipeline.side_by_side`); ``why``: the facts the
    report's "why" section reads (the record's ``why``, :mod:`datamask.pipeline.why`), with
    clusters from the table's ``cluster`` column, else the nearest of ``centroids`` (or none)."""
    cols = Columns.from_config(cfg)
    n = table.num_rows
    if n == 0:  # an empty split is skipped, not an error
        return _kept(n, np.zeros(0, dtype=bool)), SplitRecord(rows_in=0, rows_out=0, fields={"skipped": "empty"})
    E, q = check_table(table, where, cols, first_row, expect_d=d, vectors=False)
    lengths, source = known_lengths(table, cfg, where, first_row, needed=split_tokens is not None)
    if split_tokens is not None and int(split_tokens) < 1:  # a split of no tokens, or too small a share
        return _nothing_kept(n, lengths, source, split_tokens)
    budget = split_budget(n, cfg, lengths, split_tokens, where=where)  # the split's one check, before any work
    # large_blocks: a Dask worker's heap hands every block over 128 KiB back to the kernel, and
    # the selection allocates its products block by block (core/heap.py)
    with DeviceWork(level, where, cfg.split_size, data_bytes=E.nbytes) as work, large_blocks():
        E, q = device_array(E, level), device_array(q, level)  # to the GPU once (cupy levels)
        if level is CPU and cfg.method == "datamask" and uses_host_kernels(cfg.diversity):
            load_compiled_cast()  # the fit loads it anyway: the vector check casts with it too
        check_vectors(E, where, cols.embedding, first_row)  # there, not on the host
        sel = select(E, q, cfg, seed, where, callback=callback, table=table, budget=budget)
        before = _score_all(E, q, cfg, seed)
        side = (
            split_side_by_side(
                E, q, sel.mask, cfg, seed, where=where, table=table, budget=budget, reference_cover=sel.reference_cover
            )
            if side_by_side
            else None
        )
        sel.reference_cover = None  # the fit's lists: read, and not sent anywhere
        facts = _why(table, cfg, cols, E, q, sel.mask, centroids) if why else None
        del E, q
    sel.mask = np.asarray(sel.mask, dtype=bool)
    sel.logits = np.full(n, np.nan) if sel.logits is None else np.asarray(sel.logits, dtype=np.float64)
    rec = SplitRecord(rows_in=n, rows_out=int(sel.mask.sum()), fields=work.record())
    rec.update(
        budget=sel.budget,
        before=before,
        after=sel.objective,
        n_steps=sel.n_steps,
        select_seconds=round(sel.seconds, 3),
        optimizer=sel.optimizer,  # how it was made: start, pg_steps, pg_improved, ...
    )
    if side is not None:  # top-k and random at the same budget, every number of each
        rec.update(side_by_side=side)
    if facts is not None:  # what the report says about why (per cluster, the dropped rows)
        rec.update(why=facts)
    if sel.history:  # the trajectory the report draws
        rec.update(history=sel.history)
    if sel.start_history:  # its first phase: the start solver's own progress
        rec.update(start_history=sel.start_history)
    if lengths is not None:
        rec.update(_token_record(lengths, sel.mask, source, split_tokens))
    return sel, rec


def _why(table, cfg, cols, E, q, mask, centroids):
    labels, source = split_labels(table, E, centroids, getattr(cfg, "domain_column", "cluster"))
    text = getattr(cfg, "text_column", "text")
    texts = table.column(text) if text in table.schema.names else None
    ids = table.column(cols.id)
    return split_why(E, q, mask, ids, texts=texts, labels=labels, source=source, line=near_line(cfg))


def _token_record(lengths, mask, source, split_tokens):
    rec = {"tokens_in": int(lengths.sum()), "tokens_out": int(lengths[mask].sum()), "tokens_source": source}
    if split_tokens is not None:
        rec["token_budget"] = int(split_tokens)  # the manifest's name for the split's share
    return rec


def _kept(n, mask) -> Selection:
    """The selection of a split nothing is selected from (empty, or a share of no token)."""
    return Selection(mask=mask, logits=np.full(n, np.nan), objective={}, budget=0, n_steps=0, seconds=0.0)


def _nothing_kept(n, lengths, source, split_tokens):
    sel = _kept(n, np.zeros(n, dtype=bool))
    fields = dict(budget=0, before=None, after=None, n_steps=0, select_seconds=0.0)
    rec = SplitRecord(rows_in=n, rows_out=0, fields=fields)
    return sel, rec.update(_token_record(lengths, sel.mask, source, split_tokens))


def selected_table(table: pa.Table, sel: Selection, keep_all: bool) -> pa.Table:
    """The split's output table: the selected rows, or every row with ``selected`` and
    ``datamask_logit`` (``keep_all``)."""
    if keep_all:
        return table.append_column(SELECTED, pa.array(sel.mask)).append_column(LOGIT, pa.array(sel.logits))
    return table.filter(pa.array(sel.mask))
