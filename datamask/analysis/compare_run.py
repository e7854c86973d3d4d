"""The ``datamask compare`` stage: :func:`~datamask.analysis.compare.compare_arrays` on every
split of a corpus on a Dask cluster, with clusters shared across splits (the input's
``cluster`` column, or k-means fitted on a sample); writes the table, the selections,
DATAMASK's trajectory, a sample for the 2-D projection and the Pareto plot.
"""

from __future__ import annotations

import math
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.backend import to_numpy
from .compare import ALL_METHODS, compare_arrays, summarise

__all__ = ["run_compare"]


def _compare_split(
    split,
    cols_names,
    methods,
    cfg,
    centroids,
    k,
    quadmix_params,
    semdedup_eps,
    sample_rows,
    tokens_column,
    cluster_column,
    holdout_dir=None,
    token_budget=None,
):
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
    tab, masks, hist, extra = compare_arrays(
        E,
        q,
        methods,
        cfg,
        cluster=lab,
        n_tokens=tok,
        k=k,
        quadmix_params=quadmix_params,
        semdedup_eps=semdedup_eps,
        seed=seed,
        tokens=token_budget,
    )
    tab = tab.reset_index()
    tab["partition"] = split.name
    tab["rows"] = E.shape[0]
    tab["holdout_rows"] = n_held
    tab["eps"] = [extra[m].get("eps", np.nan) for m in tab["method"]]
    ids = table.column(cols.id).to_numpy(zero_copy_only=False)
    sel = []
    for m, mask in masks.items():
        sel.append(
            pd.DataFrame(
                {
                    "method": m,
                    "partition": split.name,
                    "id": ids[mask],
                    "quality": q[mask],
                    "n_tokens": tok[mask] if tok is not None else np.nan,
                    "cluster": lab[mask] if lab is not None else -1,
                }
            )
        )
    h = [df.assign(method=m, partition=split.name) for m, df in hist.items() if len(df)]
    rng = np.random.default_rng(seed)
    take = np.sort(rng.choice(E.shape[0], size=min(sample_rows, E.shape[0]), replace=False))
    samp = pd.DataFrame(
        {
            "partition": split.name,
            "id": ids[take],
            "quality": q[take],
            "n_tokens": tok[take] if tok is not None else np.nan,
            "cluster": lab[take] if lab is not None else -1,
        }
    )
    for m, mask in masks.items():
        samp[f"selected_{m}"] = mask[take]
    from .clusters import partial_stats

    cstats = partial_stats(lab, q, E, tok, None if centroids is None else len(centroids)) if lab is not None else None
    corpus = pd.DataFrame(
        {"quality": q, "n_tokens": tok if tok is not None else np.nan, "cluster": lab if lab is not None else -1}
    )
    return {
        "table": tab,
        "selections": pd.concat(sel, ignore_index=True),
        "history": pd.concat(h, ignore_index=True) if h else pd.DataFrame(),
        "sample": samp,
        "sample_embedding": E[take],
        "corpus": corpus,
        "cluster_sums": cstats,
    }


def run_compare(
    input,
    output,
    methods=("datamask", "topk", "random", "semdedup", "quadmix", "greedy"),
    cfg=None,
    k=None,
    sample_fraction=0.1,
    quadmix_params=None,
    semdedup_eps=None,
    sample_rows=2000,
    tokens_column="n_tokens",
    cluster_column="cluster",
    client=None,
    report=True,
) -> pd.DataFrame:
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
    from ..pipeline.storage import location, rmtree

    dest = location(output)
    dest.mkdir(parents=True, exist_ok=True)
    holdout_dir = dest / HOLDOUT_DIR  # the workers write the held-out slices there
    if holdout_dir.exists():  # a rerun writes the slice again
        rmtree(holdout_dir)
    # the client's files: written in place, or (object store) in a local folder uploaded at
    # the end (compare.json last)
    with _client_folder(dest) as out:
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
            tasks = [
                dask.delayed(_compare_split)(
                    s,
                    (cols.id, cols.embedding, cols.quality),
                    methods,
                    cfg,
                    centroids,
                    k,
                    quadmix_params,
                    semdedup_eps,
                    max(1, sample_rows // len(splits)),
                    tokens_column,
                    cluster_column,
                    str(holdout_dir),
                    budgets.get(s.name),
                )
                for s in splits
            ]
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
        write_json_atomic(
            {
                "kind": "compare",
                "input": str(input),
                "methods": methods,
                "rows": int(n_rows),
                "splits": len(splits),
                "holdout": float(cfg.holdout),
                "holdout_rows": int(per.groupby("partition")["holdout_rows"].first().sum()),
                "n_clusters": k,
                "clusters_from": "input" if has_cluster else "k-means",
                "config": cfg.to_dict(),
                "quadmix_params": quadmix_params,
                "semdedup_eps": semdedup_eps,
                "tokens": token_info,
                "tokens_kept": {
                    m: int(v) for m, v in table.get("tokens", pd.Series(dtype=float)).items() if pd.notna(v)
                },
                "wall_seconds": round(time.perf_counter() - t0, 3),
            },
            out / "compare.json",
        )
        if report:
            from .report import build_report

            build_report(out)
        if out != dest:
            from ..pipeline.files import upload_tree

            upload_tree(out, dest, last=("compare.json",))
        return table


@contextmanager
def _client_folder(dest):
    """The local folder the client writes its files into: ``dest`` itself, or a temporary
    one (removed on exit) when ``dest`` is an object store."""
    from ..pipeline.storage import Remote

    if not isinstance(dest, Remote):
        yield dest
        return
    with tempfile.TemporaryDirectory(prefix="datamask-compare-") as tmp:
        yield Path(tmp)
