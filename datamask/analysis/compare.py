"""Run several selection methods on the same rows and budget; score them alike.

The selection methods are those of the registry (:mod:`datamask.methods`), and
:func:`compare_arrays` runs each on one split's arrays through it, and returns a table with,
per method: mean quality (raw and normalised), pairwise diversity, facility-location
coverage, DiSF, the DATAMASK objective (``lam``, the configured diversity), mean length
in tokens and wall time. :func:`~datamask.stages.corpus.compare_run.run_compare` (``datamask compare``) does that for every
split of a corpus on a Dask cluster, with clusters shared across splits (the input's
``cluster`` column, or k-means fitted on a sample), and writes the table, the selections,
DATAMASK's trajectory, a sample for the 2-D projection and the Pareto plot.

Methods: ``datamask`` (policy gradient), ``greedy``, ``relaxed`` (same objective, other
solvers), ``topk``, ``random``, ``semdedup`` (eps tuned so it keeps the budget; a small
surplus is dropped at random) and ``quadmix`` (domain = cluster, parameters from a dict
or YAML file).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.backend import to_numpy
from ..core.diversity import DIVERSITIES
from ..pipeline.config import METHODS

__all__ = ["ALL_METHODS", "format_table", "score_selection", "compare_arrays", "summarise"]

ALL_METHODS = METHODS  # every registered selection method (datamask.methods)
METRICS = ("quality", "quality_norm", *DIVERSITIES, "near_duplicates", "objective", "mean_tokens", "seconds")
# Summed over splits (not averaged): tokens kept, and the token budget under --tokens.
SUMS = ("tokens", "token_budget")


def score_selection(E, q, mask, n_tokens=None, lam=0.5, diversity="pairwise", reference_size=2048, seed=0):
    """Every metric of one selection, on the same footing for all methods
    (:func:`datamask.core.scorecard.selection_scores`: ``select``'s side-by-side numbers)."""
    from ..core.scorecard import selection_scores

    return selection_scores(E, q, mask, n_tokens, lam, diversity, reference_size, seed)


def compare_arrays(
    E,
    q,
    methods=ALL_METHODS,
    cfg=None,
    budget=None,
    cluster=None,
    n_tokens=None,
    n_clusters=None,
    quadmix_params=None,
    semdedup_eps=None,
    seed=0,
    split_tokens=None,
    where="",
):
    """Run ``methods`` on one split, each through the method registry, and score each alike.

    Parameters
    ----------
    E : (N, d) numpy array; q : (N,) quality
    methods : names from :data:`ALL_METHODS`
    cfg : SelectConfig, optional — DATAMASK's parameters, ``lam``, ``diversity``,
        ``reference_size`` and the budget rule (``ratio``/``budget``); defaults otherwise
    budget : int, optional — overrides the config's budget rule
    cluster : (N,) int, optional — cluster ids (SemDeDup's clusters, QuaDMix's domains);
        fitted with k-means (``n_clusters`` clusters) when absent
    n_tokens : (N,) optional — token counts (QuaDMix weighting, mean length)
    quadmix_params : dict or YAML path for :func:`datamask.methods.quadmix.quadmix_params`
    semdedup_eps : float, optional — fixed eps; default tunes eps to the budget
    split_tokens : int, optional — the split's token budget instead of rows (needs ``n_tokens``):
        every method keeps at most this many tokens, filled to within one row
    where : str — the split, as errors name it (a method's check fails as a DataError)

    Returns
    -------
    (table DataFrame indexed by method, masks dict name -> bool array, histories dict,
    extras dict name -> dict e.g. SemDeDup's eps)
    """
    from ..methods import select
    from ..methods.datamask import trajectory

    cfg = _method_config(cfg, budget, n_clusters, quadmix_params, semdedup_eps)
    E = np.asarray(to_numpy(E))
    q = np.asarray(to_numpy(q), dtype=np.float64)
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {', '.join(ALL_METHODS)}")
    if split_tokens is not None and n_tokens is None:
        raise ValueError("a token budget needs the rows' token counts (n_tokens)")
    table = _side_table(E, cfg, seed, methods, cluster)
    lengths = None if n_tokens is None else np.asarray(n_tokens, dtype=np.int64)  # in each method's Budget
    rows, masks, hist, extra = [], {}, {}, {}
    for m in methods:
        at = f"{where}, method {m}" if where else f"method {m}"
        sel = select(
            E, q, cfg.replace(method=m), seed, where=at, table=table, lengths=lengths, split_tokens=split_tokens
        )
        rec = score_selection(
            E, q, sel.mask, n_tokens, cfg.lam, cfg.diversity, cfg.solver("reference_size") or 2048, seed
        )
        rec.update(
            method=m, seconds=sel.seconds, budget=int(sel.mask.sum()) if split_tokens is not None else sel.budget
        )
        if split_tokens is not None:
            rec["token_budget"] = int(split_tokens)
        rows.append(rec)
        masks[m] = sel.mask
        extra[m] = dict(sel.info, steps=int(sel.n_steps), optimizer=sel.optimizer)
        if sel.history:  # the start solver's progress, then pg's (datamask.methods.datamask.trajectory)
            hist[m] = pd.DataFrame(trajectory(sel))
    return pd.DataFrame(rows).set_index("method"), masks, hist, extra


def _method_config(cfg, budget, n_clusters, quadmix_params, semdedup_eps):
    """``cfg`` (default ``SelectConfig()``) with the arguments that override it."""
    import dataclasses

    from ..pipeline.config import SelectConfig

    cfg = cfg or SelectConfig()
    changes = {"budget": None if budget is None else int(budget), "n_clusters": n_clusters, "eps": semdedup_eps}
    changes = {f: v for f, v in changes.items() if v is not None}
    if quadmix_params is not None:
        changes["quadmix_params"] = quadmix_params
    return dataclasses.replace(cfg, **changes).validated() if changes else cfg


def _side_table(E, cfg, seed, methods, cluster):
    """The column the methods read beside the arrays: the clusters (given, or k-means with
    ``cfg.n_clusters`` fitted once for every method that wants them)."""
    import pyarrow as pa

    from ..methods.registry import split_clusters

    cols = {}
    if cluster is None and {"semdedup", "quadmix"} & set(methods):
        cluster, _ = split_clusters(E, cfg, seed)
    if cluster is not None:
        cols[cfg.domain_column] = np.asarray(cluster)
    return pa.table(cols) if cols else None


def summarise(per_split: pd.DataFrame) -> pd.DataFrame:
    """Row-weighted means over splits (times summed), one row per method."""
    df = per_split.copy()
    w = df["rows"].astype(float)
    out = {}
    for m, g in df.groupby("method", sort=False):
        ww = w.loc[g.index]
        rec = {c: float(np.average(g[c], weights=ww)) for c in METRICS if c != "seconds" and c in g}
        rec["seconds"] = float(g["seconds"].sum())
        for c in SUMS:
            if c in g and g[c].notna().any():
                rec[c] = int(g[c].sum())
        rec["selected"] = int(g["selected"].sum())
        rec["rows"] = int(g["rows"].sum())
        out[m] = rec
    return pd.DataFrame.from_dict(out, orient="index").rename_axis("method")


def format_table(table) -> str:
    """The comparison table as ``datamask compare`` prints it: one line per number, one column
    per method, the report's labels and formats."""
    from ..pipeline.side_by_side import COLUMNS, format_side_by_side

    return format_side_by_side(table, (*COLUMNS, "disf", "mean_tokens", "seconds"))
