"""``select`` and ``evaluate`` on a Dask DataFrame whose partitions are the splits.

Both are one ``map_partitions`` with an explicit ``meta``: building them computes nothing.
Each partition runs :func:`~datamask.pipeline.select_split.select_split`, the function
``datamask select`` runs on each split, with the split's own seed; so on the frame
:func:`datamask.dask.read` gives, ``select(ddf)`` keeps the rows ``datamask select`` keeps.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..core.diversity import DIVERSITIES
from ..errors import DataError
from ..pipeline.config import SelectConfig
from ..pipeline.io import split_seed
from ..pipeline.schema import LOGIT, SELECTED, Columns
from ..pipeline.select_split import duplicate_ids, select_split
from ..pipeline.split_record import SplitRecord
from ..pipeline.tokens import tokens_column_of
from ..runtime.gpu import select_level
from .params import takes_config
from .partitions import RECORD_ATTR, check_not_strings, fixed_width, is_cudf, keep_attrs, part_split, part_table

__all__ = ["select", "records", "evaluate", "RECORD_META", "EVALUATE_META"]

RECORD_COLUMNS = {
    "split": "int64",
    "identity": object,
    "seed": "int64",
    "rows_in": "int64",
    "rows_out": "int64",
    "duplicates_dropped": "int64",
    "budget": "float64",
    "objective_before": "float64",
    "objective_after": "float64",
    "quality_after": "float64",
    "diversity_after": "float64",
    "n_steps": "float64",
    "select_seconds": "float64",
    "device_seconds": "float64",
    "record": object,
}
RECORD_META = pd.DataFrame({c: pd.Series([], dtype=t) for c, t in RECORD_COLUMNS.items()})


def _nan(d, key):
    v = (d or {}).get(key)
    return float("nan") if v is None else float(v)


def _record_row(rec: dict) -> dict:
    return {
        "split": rec["split"],
        "identity": rec["identity"],
        "seed": rec["seed"],
        "rows_in": rec["rows_in"],
        "rows_out": rec["rows_out"],
        "duplicates_dropped": rec["duplicates_dropped"],
        "budget": float(rec.get("budget", np.nan)),
        "objective_before": _nan(rec.get("before"), "objective"),
        "objective_after": _nan(rec.get("after"), "objective"),
        "quality_after": _nan(rec.get("after"), "quality"),
        "diversity_after": _nan(rec.get("after"), "diversity"),
        "n_steps": float(rec.get("n_steps", np.nan)),
        "select_seconds": float(rec.get("select_seconds", np.nan)),
        "device_seconds": float(rec.get("device_seconds", np.nan)),
        "record": json.dumps(rec),
    }


def _count_tokens_part(df, partition_info=None, *, cfg, prunes=()):
    """One partition's tokens, of the rows its selection sees (without the ids ``dedupe_ids``
    drops); ``prunes``: also ``where`` and ``left``, the tokens pruning leaves at each (JSON), as
    ``datamask select``'s counting pass gives them (:func:`~datamask.pipeline.tokens.count_corpus_tokens`)."""
    from ..pipeline.tokens import left_after_pruning, split_lengths

    p = part_split(df, partition_info)
    cols = Columns.from_config(cfg)
    df, _ = _drop_duplicate_ids(df, p, cols, cfg)
    row = {"split": [p.number], "tokens": [0]}
    left = None
    if len(df):
        table = part_table(df, cols, p.where, p.first_row)
        counts = split_lengths(table, cfg, p.where, p.first_row)[0]
        row["tokens"] = [int(counts.sum())]
        left = left_after_pruning(table, cols, counts, prunes) if prunes else None
    if prunes:
        row.update(where=[p.where], left=[json.dumps(left)])
    return pd.DataFrame(row)


def _drop_duplicate_ids(df, p, cols, cfg):
    """``(df, n)``: the partition without the ``n`` repeated ids ``dedupe_ids`` drops (the first
    kept); a repeat without it is a DataError naming the partition, as in the CLI."""
    if not (len(df) and cols.id in df.columns):  # a missing column fails in select_split, as in the CLI
        return df, 0
    drop = duplicate_ids(df[cols.id].to_numpy(), p.where, cols.id, cfg.dedupe_ids, p.first_row)
    if drop is None:
        return df, 0
    keep = np.ones(len(df), dtype=bool)
    keep[drop] = False
    return keep_attrs(df.iloc[keep], df), int(drop.size)


def _select_part(df, partition_info=None, *, cfg, level, d, split_tokens=None):
    """One partition: the CLI's checks and selection, then the frame's selected rows (or
    every row with ``selected`` and ``datamask_logit``), its record in ``attrs``."""
    p = part_split(df, partition_info)
    cols = Columns.from_config(cfg)
    df, n_dupes = _drop_duplicate_ids(df, p, cols, cfg)
    table = part_table(df, cols, p.where, p.first_row)
    seed = split_seed(cfg.seed, p.identity)
    share = None if split_tokens is None else split_tokens[p.number]
    sel, own = select_split(table, cfg, seed, p.where, p.first_row, level=level, d=d, split_tokens=share)
    del table
    if cfg.keep_all:
        out = df.assign(**{SELECTED: sel.mask, LOGIT: sel.logits})
    else:
        out = df.iloc[np.flatnonzero(sel.mask)] if not is_cudf(df) else df[sel.mask]
    rec = SplitRecord(identity=p.identity, fields={"split": p.number, "seed": seed, "duplicates_dropped": n_dupes})
    return keep_attrs(out, df, **{RECORD_ATTR: rec.update(own).to_dict()})


@takes_config(SelectConfig)
def select(ddf, cfg=None):
    """Select from every partition (lazy): DATAMASK or a baseline, on the partition's
    embeddings and quality, with its split's own seed.

    Returns a Dask DataFrame of the selected rows, or with ``keep_all=True`` every row
    plus a bool ``selected`` and a float64 ``datamask_logit`` column. The per-split records
    come with it in one pass: ``datamask.dask.compute(result, return_records=True)`` or
    ``dask.compute(result, records(result))``. Bad input fails at compute time with the
    CLI's one-line message, naming the partition. Ids are checked within each partition
    (``dedupe_ids`` keeps the first); ``holdout``, ``exclude`` and ``partition_on`` are file-only.
    """
    check_not_strings(ddf._meta, cfg.embedding_column)
    level = select_level(cfg.device, ("cupy",))
    meta = ddf._meta
    if cfg.keep_all:
        meta = meta.assign(**{SELECTED: np.zeros(0, dtype=bool), LOGIT: np.zeros(0, dtype=np.float64)})
    kw = {}
    if cfg.budget_in_tokens:  # one counting pass over the frame, shared out (and prune checked) before any selects
        from ..pipeline.split_job import frame_split_tokens

        kw["split_tokens"] = frame_split_tokens(ddf, cfg, _count_tokens_part)
    return ddf.map_partitions(
        _select_part,
        cfg=cfg,
        level=level,
        d=fixed_width(ddf._meta, cfg.embedding_column),
        meta=meta,
        enforce_metadata=False,
        **kw,
    )


def _records_part(df):
    rec = getattr(df, "attrs", {}).get(RECORD_ATTR)
    if rec is None:
        raise DataError(
            "records(): this split holds no datamask record; call records() on what "
            "datamask.dask.select returned (before a merge or concat)"
        )
    return pd.DataFrame([_record_row(rec)]).astype(RECORD_COLUMNS)


def records(selected):
    """The per-split records of a ``select`` result (lazy; one row per split, ``split`` its
    partition number):
    objective before and after, budget, steps, seconds, and the full record as JSON.
    Computed together with the result (``dask.compute(sel, records(sel))``), the selection
    runs once."""
    return selected.map_partitions(_records_part, meta=RECORD_META, enforce_metadata=False)


# ---------------------------------------------------------------------- evaluate
EVALUATE_COLUMNS = {
    "split": "int64",
    "identity": object,
    "rows": "int64",
    "selected": "int64",
    "quality": "float64",
    "quality_norm": "float64",
    **dict.fromkeys(DIVERSITIES, "float64"),
    "objective": "float64",
    "mean_tokens": "float64",
}
EVALUATE_META = pd.DataFrame({c: pd.Series([], dtype=t) for c, t in EVALUATE_COLUMNS.items()})
_EVALUATE_FIELDS = (
    "id_column",
    "embedding_column",
    "quality_column",
    "tokens_column",
    "lam",
    "diversity",
    "reference_size",
    "seed",
)


def _evaluate_part(df, partition_info=None, *, cfg, selected):
    from ..analysis.compare import score_selection
    from ..pipeline.schema import check_table

    p = part_split(df, partition_info)
    row = {"split": p.number, "identity": p.identity, "rows": len(df), "selected": 0}
    if len(df) == 0:
        return pd.DataFrame([row]).reindex(columns=list(EVALUATE_COLUMNS)).astype(EVALUATE_COLUMNS)
    cols = Columns.from_config(cfg)
    E, q = check_table(part_table(df, cols, p.where, p.first_row), p.where, cols, p.first_row)
    mask = np.asarray(df[selected].to_numpy(), dtype=bool) if selected in df.columns else np.ones(len(df), bool)
    tcol = tokens_column_of(cfg, df.columns)  # tokens_column, else token_count / n_tokens
    tok = df[tcol].to_numpy(dtype=np.float64) if tcol is not None else None
    if mask.any():
        row.update(
            score_selection(
                E,
                q,
                mask,
                tok,
                lam=cfg.lam,
                diversity=cfg.diversity,
                reference_size=cfg.solver("reference_size"),
                seed=split_seed(cfg.seed, p.identity),
            )
        )
    return pd.DataFrame([row]).reindex(columns=list(EVALUATE_COLUMNS)).astype(EVALUATE_COLUMNS)


@takes_config(SelectConfig, only=_EVALUATE_FIELDS)
def evaluate(ddf, selected: str = SELECTED, cfg=None):
    """Score each split's selection on every metric (lazy; one row per split, a partition).

    The selection is the ``selected`` column where the frame has it (``select(...,
    keep_all=True)``), else every row of the frame. Quality is normalised over the rows
    scored, so on a frame of selected rows alone it is not the record's ``quality_after``.
    Metrics: raw and normalised mean quality, pairwise, facility and DiSF diversity, the
    DATAMASK objective (``lam``, ``diversity``) and mean tokens (NaN without ``tokens_column``).
    """
    check_not_strings(ddf._meta, cfg.embedding_column)
    return ddf.map_partitions(_evaluate_part, cfg=cfg, selected=selected, meta=EVALUATE_META, enforce_metadata=False)
