"""Run several selection methods on the same rows and budget; score them alike.

:func:`compare_arrays` runs methods on one partition's arrays and returns a table with,
per method: mean quality (raw and normalised), pairwise diversity, facility-location
coverage, DiSF, the DATAMASK objective (``lam``, the configured diversity), mean length
in tokens and wall time. :func:`run_compare` (``datamask compare``) does that for every
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
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.backend import to_numpy
from ..core.diversity import DIVERSITIES
from ..pipeline.config import METHODS

__all__ = ["ALL_METHODS", "format_table", "score_selection", "compare_arrays", "run_compare",
           "summarise"]

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
        out[div] = float(evaluate(E, q, mask, lam=lam, diversity=div, reference_size=reference_size,
                                  seed=seed)["diversity"])
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


def compare_arrays(E, q, methods=ALL_METHODS, cfg=None, budget=None, cluster=None, n_tokens=None, k=None,
                   quadmix_params=None, semdedup_eps=None, seed=0, tokens=None):
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


# ---------------------------------------------------------------------- out of core
def _compare_split(split, cols_names, methods, cfg, centroids, k, quadmix_params, semdedup_eps, sample_rows,
                   tokens_column, cluster_column, holdout_dir=None, token_budget=None):
    """One split: read, set the held-out slice aside (``cfg.holdout``), cluster, run every
    method; small results back to the client."""
    from ..core.kmeans import assign
    from ..pipeline.holdout import split_off_holdout
    from ..pipeline.io import read_split, write_parquet_atomic
    from ..pipeline.schema import Columns, check_table

    cols = Columns(*cols_names)
    table = read_split(split, cols)
    n_held = 0
    if cfg.holdout:  # before any method sees the split
        table, held = split_off_holdout(table, cfg.holdout, split.seed(cfg.seed))
        from ..pipeline.storage import location

        write_parquet_atomic(held, location(holdout_dir) / f"{split.name}.parquet")
        n_held = held.num_rows
    E, q = check_table(table, split.where(), cols, split.start)
    E = E.astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    names = table.schema.names
    from ..methods.registry import AUTO_TOKEN_COLUMNS

    tcol = tokens_column if tokens_column else next((c for c in AUTO_TOKEN_COLUMNS if c in names), None)
    tok = table.column(tcol).to_numpy().astype(np.float64) if tcol in names else None
    if token_budget is not None:  # checked counts (or counted from the text), as select has them
        from ..pipeline.tokens import split_lengths

        tok = split_lengths(table, cfg, split.where(), split.start)[0].astype(np.float64)
    if cluster_column in names:
        lab = table.column(cluster_column).to_numpy().astype(np.int64)
    elif centroids is not None:
        lab = to_numpy(assign(E, centroids)[0]).astype(np.int64)
    else:
        lab = None
    seed = split.seed(cfg.seed) % 2**32
    tab, masks, hist, extra = compare_arrays(E, q, methods, cfg, cluster=lab, n_tokens=tok, k=k,
                                             quadmix_params=quadmix_params, semdedup_eps=semdedup_eps, seed=seed,
                                             tokens=token_budget)
    tab = tab.reset_index()
    tab["partition"] = split.name
    tab["rows"] = E.shape[0]
    tab["holdout_rows"] = n_held
    tab["eps"] = [extra[m].get("eps", np.nan) for m in tab["method"]]
    ids = table.column(cols.id).to_numpy(zero_copy_only=False)
    sel = []
    for m, mask in masks.items():
        sel.append(pd.DataFrame({"method": m, "partition": split.name, "id": ids[mask], "quality": q[mask],
                                 "n_tokens": tok[mask] if tok is not None else np.nan,
                                 "cluster": lab[mask] if lab is not None else -1}))
    h = [df.assign(method=m, partition=split.name) for m, df in hist.items() if len(df)]
    rng = np.random.default_rng(seed)
    take = np.sort(rng.choice(E.shape[0], size=min(sample_rows, E.shape[0]), replace=False))
    samp = pd.DataFrame({"partition": split.name, "id": ids[take], "quality": q[take],
                         "n_tokens": tok[take] if tok is not None else np.nan,
                         "cluster": lab[take] if lab is not None else -1})
    for m, mask in masks.items():
        samp[f"selected_{m}"] = mask[take]
    from .clusters import partial_stats

    cstats = partial_stats(lab, q, E, tok, None if centroids is None else len(centroids)) if lab is not None else None
    corpus = pd.DataFrame({"quality": q, "n_tokens": tok if tok is not None else np.nan,
                           "cluster": lab if lab is not None else -1})
    return {"table": tab, "selections": pd.concat(sel, ignore_index=True),
            "history": pd.concat(h, ignore_index=True) if h else pd.DataFrame(),
            "sample": samp, "sample_embedding": E[take], "corpus": corpus, "cluster_sums": cstats}


def run_compare(input, output, methods=("datamask", "topk", "random", "semdedup", "quadmix", "greedy"), cfg=None,
                k=None, sample_fraction=0.1, quadmix_params=None, semdedup_eps=None, sample_rows=2000,
                tokens_column="n_tokens", cluster_column="cluster", client=None, report=True) -> pd.DataFrame:
    """``datamask compare``: every method on every split of ``input``; results in ``output``.

    Clusters (SemDeDup's clusters, QuaDMix's domains) come from the input's ``cluster``
    column or from k-means with ``k`` clusters (default ``sqrt(rows / 10)``) fitted on a
    ``sample_fraction`` of the rows and shared by all splits.

    Writes ``compare.csv`` (the summary table), ``compare_partitions.csv``,
    ``selections.parquet`` (id, quality, n_tokens, cluster of each selected row per method),
    ``history.parquet`` (DATAMASK's trajectory), ``sample.parquet`` and
    ``sample_embedding.npy`` (rows for the projection plot), ``corpus_stats.parquet``
    (quality, n_tokens, cluster of every row: three small columns), ``cluster_stats.parquet``,
    ``compare.json`` and
    ``pareto.png``; then the HTML report unless ``report`` is false. Returns the table.
    """
    from ..pipeline.config import SelectConfig

    t0 = time.perf_counter()
    cfg = cfg or SelectConfig()
    methods = list(methods)
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(ALL_METHODS)}")
    from ..pipeline.holdout import HOLDOUT_DIR
    from ..pipeline.storage import Remote, location, rmtree

    dest = location(output)
    dest.mkdir(parents=True, exist_ok=True)
    holdout_dir = dest / HOLDOUT_DIR  # the workers write the held-out slices there
    if holdout_dir.exists():  # a rerun writes the slice again
        rmtree(holdout_dir)
    # the client's files: written in place, or (object store) in a local folder uploaded at the end
    staging = tempfile.TemporaryDirectory(prefix="datamask-compare-") if isinstance(dest, Remote) else None
    out = Path(staging.name) if staging else dest
    try:
        return _run_compare(input, out, dest, holdout_dir, methods, cfg, k, sample_fraction, quadmix_params,
                            semdedup_eps, sample_rows, tokens_column, cluster_column, client, report, t0)
    finally:
        if staging:
            staging.cleanup()


def _run_compare(input, out, dest, holdout_dir, methods, cfg, k, sample_fraction, quadmix_params, semdedup_eps,
                 sample_rows, tokens_column, cluster_column, client, report, t0):
    """:func:`run_compare` once the output is ready: the client's files under the local
    folder ``out``, copied to ``dest`` when that is an object store (compare.json last)."""
    import dask

    from ..core.kmeans import check_k
    from ..pipeline.io import discover, inspect_file, make_splits, write_json_atomic
    from ..pipeline.schema import Columns
    from .clusters import fit_kmeans_dask, read_corpus

    cols = Columns.from_config(cfg)
    splits = []
    for f in discover(str(input)):
        n, _ = inspect_file(f, cols)
        splits.extend(make_splits(f, n, int(cfg.split_size)))
    n_rows = sum(s.rows for s in splits)
    ctx = dask.config.set(scheduler=client.get) if client is not None else dask.config.set({})
    with ctx, dask.config.set({"dataframe.convert-string": False}):
        centroids = None
        ddf = read_corpus(input, split_size=cfg.split_size)
        has_cluster = cluster_column in ddf.columns
        if {"semdedup", "quadmix"} & set(methods) and not has_cluster:
            k = int(k or max(1, round(math.sqrt(n_rows / 10))))
            check_k(k, n_rows)
            centroids, _ = fit_kmeans_dask(ddf, k, sample_fraction, cfg.embedding_column, seed=cfg.seed)
        budgets, token_info = {}, None
        if cfg.token_budget:  # every split's share of the corpus's tokens, counted first
            from ..pipeline.tokens import _split_tokens, apportion

            counts = dask.compute(*[dask.delayed(_split_tokens)(s, cfg, {}, cols) for s in splits])
            budgets, token_info = apportion({c["name"][0]: int(c["tokens"][0]) for c in counts}, cfg)
            token_info["source"] = ", ".join(sorted({c["source"][0] for c in counts}))
        tasks = [dask.delayed(_compare_split)(s, (cols.id, cols.embedding, cols.quality), methods, cfg, centroids, k,
                                              quadmix_params, semdedup_eps, max(1, sample_rows // len(splits)),
                                              tokens_column, cluster_column, str(holdout_dir), budgets.get(s.name))
                 for s in splits]
        results = dask.compute(*tasks)
    per = pd.concat([r["table"] for r in results], ignore_index=True)
    table = summarise(per)
    per.to_csv(out / "compare_partitions.csv", index=False)
    table.to_csv(out / "compare.csv")
    pd.concat([r["selections"] for r in results], ignore_index=True).to_parquet(out / "selections.parquet")
    hist = [r["history"] for r in results if len(r["history"])]
    if hist:
        pd.concat(hist, ignore_index=True).to_parquet(out / "history.parquet")
    pd.concat([r["sample"] for r in results], ignore_index=True).to_parquet(out / "sample.parquet")
    np.save(out / "sample_embedding.npy", np.concatenate([r["sample_embedding"] for r in results]))
    pd.concat([r["corpus"] for r in results], ignore_index=True).to_parquet(out / "corpus_stats.parquet")
    sums = [r["cluster_sums"] for r in results if r["cluster_sums"] is not None]
    if sums:
        from .clusters import combine_stats, stats_frame

        stats_frame(combine_stats(sums)).to_parquet(out / "cluster_stats.parquet")
    from .report.figures import pareto_plot

    pareto_plot(table, out / "pareto.png")
    write_json_atomic({"kind": "compare", "input": str(input), "methods": methods, "rows": int(n_rows),
                       "splits": len(splits), "holdout": float(cfg.holdout),
                       "holdout_rows": int(per.groupby("partition")["holdout_rows"].first().sum()), "n_clusters": k, "clusters_from": "input" if has_cluster else "k-means",
                       "config": cfg.to_dict(), "quadmix_params": quadmix_params,
                       "semdedup_eps": semdedup_eps, "tokens": token_info,
                       "tokens_kept": {m: int(v) for m, v in table.get("tokens", pd.Series(dtype=float)).items()
                                       if pd.notna(v)},
                       "wall_seconds": round(time.perf_counter() - t0, 3)},
                      out / "compare.json")
    if report:
        from .report import build_report

        build_report(out)
    if out != dest:
        from ..pipeline.files import upload_tree

        upload_tree(out, dest, last=("compare.json",))
    return table


def format_table(table) -> str:
    """The comparison table as ``datamask compare`` prints it."""
    cols = [c for c in ("quality", *DIVERSITIES, "objective", "mean_tokens", "tokens", "seconds") if c in table.columns]
    return table[cols].to_string(float_format=lambda v: f"{v:.4g}")
