"""Run several selection methods on the same rows and budget; score them alike.

:func:`compare_arrays` runs methods on one partition's arrays and returns a table with,
per method: mean quality (raw and normalised), pairwise diversity, facility-location
coverage, DiSF, the DATAMASK objective (``lam``, the configured diversity), mean length
in tokens and wall time. :func:`~datamask.analysis.compare_run.run_compare` (``datamask compare``) does that for every
split of a corpus on a Dask cluster, with clusters shared across splits (the input's
``cluster`` column, or k-means fitted on a sample), and writes the table, the selections,
DATAMASK's trajectory, a sample for the 2-D projection and the Pareto plot.

Methods: ``datamask`` (policy gradient), ``greedy``, ``relaxed`` (same objective, other
solvers), ``topk``, ``random``, ``semdedup`` (eps tuned so it keeps the budget; a small
surplus is dropped at random) and ``quadmix`` (domain = cluster, parameters from a dict
or YAML file).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from ..core.backend import to_numpy
from ..core.diversity import DIVERSITIES
from ..pipeline.config import METHODS

__all__ = ["ALL_METHODS", "format_table", "score_selection", "compare_arrays", "summarise"]

ALL_METHODS = METHODS  # every registered selection method (datamask.methods)
METRICS = ("quality", "quality_norm", *DIVERSITIES, "objective", "mean_tokens", "seconds")
# Summed over splits (not averaged): tokens kept, and the token budget under --tokens.
SUMS = ("tokens", "token_budget")


def score_selection(E, q, mask, n_tokens=None, lam=0.5, diversity="pairwise", reference_size=2048, seed=0):
    """Every metric of one selection, on the same footing for all methods."""
    from ..core.objectives import evaluate

    mask = np.asarray(mask, dtype=bool)
    q = np.asarray(q, dtype=np.float64)
    out = {"selected": int(mask.sum()), "quality": float(q[mask].mean())}
    for div in DIVERSITIES:
        out[div] = float(
            evaluate(E, q, mask, lam=lam, diversity=div, reference_size=reference_size, seed=seed)["diversity"]
        )
    r = evaluate(E, q, mask, lam=lam, diversity=diversity, reference_size=reference_size, seed=seed)
    out["quality_norm"], out["objective"] = float(r["quality"]), float(r["objective"])
    out["mean_tokens"] = float(np.asarray(n_tokens)[mask].mean()) if n_tokens is not None else float("nan")
    out["tokens"] = float(np.asarray(n_tokens)[mask].sum()) if n_tokens is not None else float("nan")
    return out


def _clusters_for(E, cluster, k, seed):
    """(labels, centroids): given labels get centroids from their members' mean."""
    from ..core.kmeans import assign, fit_kmeans

    if cluster is None:
        k = min(int(k or max(1, round(math.sqrt(E.shape[0] / 10)))), E.shape[0])
        cent = fit_kmeans(E, k, seed=seed)
        return assign(E, cent)[0], cent
    cluster = np.asarray(cluster, dtype=np.int64)
    k = int(cluster.max()) + 1
    X = E.astype(np.float32)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    cent = np.zeros((k, E.shape[1]), dtype=np.float64)
    np.add.at(cent, cluster, X)
    return cluster, cent.astype(np.float32) + 1e-12


def compare_arrays(
    E,
    q,
    methods=ALL_METHODS,
    cfg=None,
    budget=None,
    cluster=None,
    n_tokens=None,
    k=None,
    quadmix_params=None,
    semdedup_eps=None,
    seed=0,
    tokens=None,
):
    """Run ``methods`` on one partition and score each.

    Parameters
    ----------
    E : (N, d) numpy array; q : (N,) quality
    methods : names from :data:`ALL_METHODS`
    cfg : SelectConfig, optional — DATAMASK's parameters, ``lam``, ``diversity``,
        ``reference_size`` and the budget rule (``ratio``/``budget``); defaults otherwise
    budget : int, optional — overrides the config's budget rule
    cluster : (N,) int, optional — cluster ids (SemDeDup's clusters, QuaDMix's domains);
        fitted with k-means (``k`` clusters) when absent
    n_tokens : (N,) optional — token counts (QuaDMix weighting, mean length)
    quadmix_params : dict or YAML path for :func:`datamask.methods.quadmix.quadmix_params`
    semdedup_eps : float, optional — fixed eps; default tunes eps to the budget
    tokens : int, optional — a token budget instead of rows (needs ``n_tokens``): every
        method keeps at most this many tokens, filled to within one row

    Returns
    -------
    (table DataFrame indexed by method, masks dict name -> bool array, histories dict,
    extras dict name -> dict e.g. SemDeDup's eps)
    """
    from ..core.estimator import DataMask
    from ..methods import budget_for
    from ..methods.quadmix import quadmix_params as make_quadmix_params
    from ..methods.quadmix import quadmix_select
    from ..methods.random import random_subset
    from ..methods.semdedup import semdedup, semdedup_eps_for_budget
    from ..methods.topk import topk
    from ..pipeline.config import SOLVER_OF, SelectConfig

    cfg = cfg or SelectConfig()
    E = np.asarray(to_numpy(E))
    q = np.asarray(to_numpy(q), dtype=np.float64)
    n = E.shape[0]
    if tokens is not None:
        return _compare_tokens(E, q, methods, cfg, cluster, n_tokens, k, quadmix_params, int(tokens), seed)
    S = int(budget) if budget is not None else budget_for(n, cfg)
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {', '.join(ALL_METHODS)}")
    lab = cent = None
    if {"semdedup", "quadmix"} & set(methods):
        lab, cent = _clusters_for(E, cluster, k, seed)
    rows, masks, hist, extra = [], {}, {}, {}
    for m in methods:
        t0 = time.perf_counter()
        info = {}
        if m in SOLVER_OF:
            params = cfg.estimator_params(seed, solver=SOLVER_OF[m])
            params.update(budget=S)
            est = DataMask(**params).fit(E, q)
            mask = to_numpy(est.mask_).astype(bool)
            if m == "datamask":  # greedy/relaxed count picks/iterations, not steps
                hist[m] = pd.DataFrame(est.history_)
            info["steps"] = int(est.n_steps_)
        elif m == "topk":
            mask = topk(q, S)
        elif m == "random":
            mask = random_subset(n, S, seed)
        elif m == "semdedup":
            if semdedup_eps is None:
                eps, keep = semdedup_eps_for_budget(E, lab, cent, S)
            else:
                eps, keep = float(semdedup_eps), semdedup(E, lab, cent, float(semdedup_eps))
            kept = np.flatnonzero(keep)
            if kept.shape[0] > S:
                kept = np.random.default_rng(seed).choice(kept, size=S, replace=False)
            mask = np.zeros(n, dtype=bool)
            mask[kept] = True
            info["eps"] = float(eps)
        else:  # quadmix
            params = make_quadmix_params(np.unique(lab).tolist(), quadmix_params)
            mask = quadmix_select(q, lab, params, S, n_tokens=n_tokens, seed=seed)
        seconds = time.perf_counter() - t0
        rec = score_selection(E, q, mask, n_tokens, cfg.lam, cfg.diversity, cfg.reference_size or 2048, seed)
        rec.update(method=m, seconds=seconds, budget=S)
        rows.append(rec)
        masks[m] = mask
        extra[m] = info
    table = pd.DataFrame(rows).set_index("method")
    return table, masks, hist, extra


def _compare_tokens(E, q, methods, cfg, cluster, n_tokens, k, quadmix_params, T, seed):
    """:func:`compare_arrays` at equal tokens: every method within ``T`` tokens."""
    from ..methods import select as run_method
    from ..pipeline.config import SOLVER_OF

    if n_tokens is None:
        raise ValueError("a token budget needs the rows' token counts (n_tokens)")
    t = np.asarray(n_tokens, dtype=np.int64)
    lab = cent = None
    if {"semdedup", "quadmix"} & set(methods):
        lab, cent = _clusters_for(E, cluster, k, seed)
    rows, masks, hist, extra = [], {}, {}, {}
    for m in methods:
        t0 = time.perf_counter()
        info = {}
        if m in SOLVER_OF:
            from ..core.estimator import DataMask

            params = dict(cfg.estimator_params(seed, solver=SOLVER_OF[m]), budget=None, tokens=T)
            est = DataMask(**params).fit(E, q, lengths=t)
            mask = to_numpy(est.mask_).astype(bool)
            if m == "datamask":
                hist[m] = pd.DataFrame(est.history_)
            info["steps"] = int(est.n_steps_)
        else:  # the registry's token-budget forms, on this split's clusters
            mcfg = cfg.replace(method=m)
            mcfg.quadmix_params = quadmix_params
            table = None
            if lab is not None:
                import pyarrow as pa

                table = pa.table({mcfg.domain_column: np.asarray(lab)})
            mask = run_method(E, q, mcfg, seed, table=table, lengths=t, tokens=T).mask
        seconds = time.perf_counter() - t0
        rec = score_selection(E, q, mask, t, cfg.lam, cfg.diversity, cfg.reference_size or 2048, seed)
        rec.update(method=m, seconds=seconds, budget=int(mask.sum()), token_budget=T)
        rows.append(rec)
        masks[m] = mask
        extra[m] = info
    return pd.DataFrame(rows).set_index("method"), masks, hist, extra


def summarise(per_partition: pd.DataFrame) -> pd.DataFrame:
    """Row-weighted means over partitions (times summed), one row per method."""
    df = per_partition.copy()
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
    """The comparison table as ``datamask compare`` prints it."""
    cols = [c for c in ("quality", *DIVERSITIES, "objective", "mean_tokens", "tokens", "seconds") if c in table.columns]
    return table[cols].to_string(float_format=lambda v: f"{v:.4g}")
