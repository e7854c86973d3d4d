"""The ``datamask compare`` stage's work: :func:`~datamask.analysis.compare.compare_arrays` on
every split of a corpus on a Dask cluster, with clusters shared across splits (the input's
``cluster`` column, or k-means fitted on a sample); writes the table, the selections,
DATAMASK's trajectory, a sample for the 2-D projection and the Pareto plot.
"""

from __future__ import annotations

import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...analysis.compare import ALL_METHODS, compare_arrays, summarise
from ...core.backend import to_numpy
from ...pipeline.exclude import EXCLUDED_COUNTS

__all__ = ["run_compare", "SPLITS_FILE", "SPLIT_COLUMN", "WHY_FILE", "main_method"]

SPLITS_FILE = "compare_splits.csv"  # one row per method and split (0.2: compare_partitions.csv)
WHY_FILE = "why.json"  # the main method's split records with their ``why`` (datamask.pipeline.why)
SPLIT_COLUMN = "split"  # the column naming the split in the files compare writes (0.2: partition)
# The optimizer record's keys kept per split and method in compare_splits.csv and the manifest.
OPTIMIZER_COLUMNS = ("start", "pg_steps", "pg_improved", "pg_gain", "stopped_by", "objective_start", "objective_end")


@dataclass
class CompareTask:
    """What every split's task needs beside its split (small; sent with each task)."""

    cols: tuple  # id, embedding, quality column names
    methods: list
    cfg: object
    centroids: np.ndarray | None
    n_clusters: int | None
    quadmix_params: object
    semdedup_eps: float | None
    sample_rows: int
    tokens_column: str | None
    domain_column: str | None  # the input's cluster column (SemDeDup's clusters, QuaDMix's domains)
    holdout_dir: str
    excluded: object = None  # the evaluation and held-out rows kept out (--exclude; pipeline.exclude)


def _read(split, task: CompareTask):
    """The split's table, its held-out slice written first (``cfg.holdout``), without the
    excluded rows (``cfg.exclude``, after the holdout); the rows held out and excluded."""
    from ...pipeline.holdout import split_off_holdout
    from ...pipeline.io import read_split, write_parquet_atomic
    from ...pipeline.schema import Columns
    from ...runtime.storage import location

    cfg = task.cfg
    table = read_split(split, Columns(*task.cols))
    n_held, counts = 0, {}
    if cfg.holdout:  # set aside before any method sees the split
        table, held = split_off_holdout(table, cfg.holdout, split.seed(cfg.seed))
        write_parquet_atomic(held, location(task.holdout_dir) / f"{split.name}.parquet")
        n_held = held.num_rows
    if task.excluded is not None:
        table, counts = task.excluded.split(table, task.cols[0], cfg.text_column)
    return table, n_held, counts


def _arrays(table, split, task: CompareTask, split_tokens):
    """(E unit float32, q, token counts or None, cluster labels or None) of the split."""
    from ...core.kmeans import assign
    from ...pipeline.schema import Columns, check_table
    from ...pipeline.tokens import known_lengths

    E, q = check_table(table, split.where(), Columns(*task.cols), split.start)
    E = E.astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    names = table.schema.names
    cfg = task.cfg
    if task.tokens_column != getattr(cfg, "tokens_column", None):  # run_compare(tokens_column=)
        cfg = cfg.replace(tokens_column=task.tokens_column)
    # checked counts (or under a token budget counted from the text), as select has them
    tok, _ = known_lengths(table, cfg, split.where(), split.start, needed=split_tokens is not None)
    tok = None if tok is None else tok.astype(np.float64)
    if task.domain_column in names:
        lab = table.column(task.domain_column).to_numpy().astype(np.int64)
    elif task.centroids is not None:
        lab = to_numpy(assign(E, task.centroids)[0]).astype(np.int64)
    else:
        lab = None
    return E, q, tok, lab


def _compare_split(split, split_tokens, task: CompareTask) -> dict:
    """One split: read, set the held-out slice aside, cluster, run every method; small
    results back to the client."""
    table, n_held, excluded = _read(split, task)
    E, q, tok, lab = _arrays(table, split, task, split_tokens)
    seed = split.seed(task.cfg.seed) % 2**32
    tab, masks, hist, extra = compare_arrays(
        E,
        q,
        task.methods,
        task.cfg,
        cluster=lab,
        n_tokens=tok,
        n_clusters=task.n_clusters,
        quadmix_params=task.quadmix_params,
        semdedup_eps=task.semdedup_eps,
        seed=seed,
        split_tokens=split_tokens,
        where=split.where(),
    )
    tab = tab.reset_index()
    tab[SPLIT_COLUMN], tab["rows"], tab["holdout_rows"] = split.name, E.shape[0], n_held
    for key in EXCLUDED_COUNTS:
        tab[key] = excluded.get(key, 0)
    tab["eps"] = [extra[m].get("eps", np.nan) for m in tab["method"]]
    for key in OPTIMIZER_COLUMNS:  # how each selection was made (the methods' optimizer records)
        tab[key] = [(extra[m].get("optimizer") or {}).get(key) for m in tab["method"]]
    ids = table.column(task.cols[0]).to_numpy(zero_copy_only=False)
    rows = _row_frame(split.name, ids, q, tok, lab)
    texts = _texts(table, task.cfg)
    out = {"table": tab, **_samples(rows, masks, E, seed, task.sample_rows, texts, table)}
    out["examples"] = _examples(E, lab, masks, q, ids, texts)
    out["why"] = _why(E, q, masks, lab, task, table, texts, split.name)
    picked = [rows[mask].assign(method=m) for m, mask in masks.items()]
    out["selections"] = pd.concat(picked, ignore_index=True)[["method", SPLIT_COLUMN, *rows.columns[1:]]]
    h = [df.assign(method=m, **{SPLIT_COLUMN: split.name}) for m, df in hist.items() if len(df)]
    out["history"] = pd.concat(h, ignore_index=True) if h else pd.DataFrame()
    out["corpus"] = rows[["quality", "n_tokens", "cluster"]]
    out["cluster_sums"] = _cluster_sums(lab, q, E, tok, task.centroids)
    return out


def _row_frame(name, ids, q, tok, lab) -> pd.DataFrame:
    """Every row's id, quality, tokens (NaN without) and cluster (-1 without)."""
    return pd.DataFrame(
        {
            SPLIT_COLUMN: name,
            "id": ids,
            "quality": q,
            "n_tokens": tok if tok is not None else np.nan,
            "cluster": lab if lab is not None else -1,
        }
    )


def _samples(rows, masks, E, seed, n, texts=None, table=None) -> dict:
    """A seeded sample of the split's rows for the corpus map, with every method's picks, the
    text's first characters and the duplicate group (when the input has them)."""
    from ...analysis.report.corpus_map import snippets

    take = np.sort(np.random.default_rng(seed).choice(E.shape[0], size=min(n, E.shape[0]), replace=False))
    samp = rows.iloc[take].reset_index(drop=True)
    for m, mask in masks.items():
        samp[f"selected_{m}"] = mask[take]
    if texts is not None:
        samp["snippet"] = snippets(texts.take(take).to_pylist())
    if table is not None and "dup_group" in table.schema.names:
        samp["dup_group"] = table.column("dup_group").to_numpy(zero_copy_only=False)[take].astype(np.int64)
    return {"sample": samp, "sample_embedding": E[take]}


def _texts(table, cfg):
    """The split's text column (Arrow) when the input has it, else None."""
    name = getattr(cfg, "text_column", "text")
    return table.column(name) if name in table.schema.names else None


def _examples(E, lab, masks, q, ids, texts):
    """Per cluster, the kept and dropped rows nearest its centre (DATAMASK's, else the first
    method's selection)."""
    from ...analysis.report.kept_dropped import nearest_examples

    if not masks:
        return None
    method = "datamask" if "datamask" in masks else next(iter(masks))
    lab = lab if lab is not None else np.full(E.shape[0], -1)
    return nearest_examples(E, lab, masks[method], q, ids, texts).assign(method=method)


def main_method(methods) -> str | None:
    """The method the report explains (why its rows): DATAMASK's, else the first."""
    methods = list(methods)
    return "datamask" if "datamask" in methods else (methods[0] if methods else None)


def _why(E, q, masks, lab, task, table, texts, name):
    """The main method's split record with its ``why`` (:func:`datamask.pipeline.why.split_why`)."""
    from ...pipeline.why import near_line, split_why

    m = main_method(masks)
    if m is None:
        return None
    source = None if lab is None else ("input" if task.domain_column in table.schema.names else "k-means")
    ids = table.column(task.cols[0])
    facts = split_why(E, q, masks[m], ids, texts=texts, labels=lab, source=source, line=near_line(task.cfg))
    return {"name": name, "rows_in": int(E.shape[0]), "method": m, "why": facts}


def _cluster_sums(lab, q, E, tok, centroids):
    from ...analysis.clusters import partial_stats

    if lab is None:
        return None
    return partial_stats(lab, q, E, tok, None if centroids is None else len(centroids))


def run_compare(
    input,
    output,
    methods=("datamask", "topk", "random", "semdedup", "quadmix", "greedy"),
    cfg=None,
    n_clusters=None,
    sample_fraction=None,
    quadmix_params=None,
    semdedup_eps=None,
    sample_rows=None,
    tokens_column=None,
    domain_column=None,
    client=None,
    report=True,
) -> pd.DataFrame:
    """``datamask compare``: every method on every split of ``input``; results in ``output``.

    Clusters (SemDeDup's clusters, QuaDMix's domains) come from the input's ``domain_column``
    or from k-means with ``n_clusters`` clusters (default :func:`~datamask.core.kmeans.readable_n_clusters`:
    ``sqrt(rows / 10)`` between 2 and 50) fitted on a
    ``sample_fraction`` of the rows and shared by all splits. The keyword arguments left None
    are read from ``cfg`` (a ``CompareConfig``; a ``SelectConfig`` takes compare's defaults).

    Writes ``compare.csv`` (the summary table), ``compare_splits.csv`` (per split),
    ``selections.parquet`` (id, quality, n_tokens, cluster of each selected row per method),
    ``history.parquet`` (DATAMASK's trajectory), ``sample.parquet`` and
    ``sample_embedding.npy`` (rows for the corpus map and the projection plot),
    ``examples.parquet`` (kept and dropped rows nearest each cluster's centre), ``why.json`` (per split,
    the main method's clusters and best dropped rows), ``corpus_stats.parquet``
    (quality, n_tokens, cluster of every row: three small columns), ``cluster_stats.parquet``,
    ``compare.json`` and ``pareto.png``; then the HTML report unless ``report`` is false.
    Returns the table.
    """
    from ...pipeline.config import SelectConfig
    from ...pipeline.holdout import HOLDOUT_DIR
    from ...runtime.storage import location, rmtree

    t0 = time.perf_counter()
    cfg = cfg or SelectConfig()
    methods = list(methods)
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)}; choose from {', '.join(ALL_METHODS)}")
    pick = lambda v, name, default: v if v is not None else getattr(cfg, name, default)  # noqa: E731
    opts = dict(
        n_clusters=n_clusters if n_clusters is not None else cfg.n_clusters,
        sample_fraction=pick(sample_fraction, "sample_fraction", 0.1),
        quadmix_params=pick(quadmix_params, "quadmix_params", None),
        semdedup_eps=pick(semdedup_eps, "eps", None),
        sample_rows=pick(sample_rows, "sample_rows", 2000),
        tokens_column=pick(tokens_column, "tokens_column", "n_tokens"),
        domain_column=pick(domain_column, "domain_column", "cluster"),
    )
    dest = location(output)
    dest.mkdir(parents=True, exist_ok=True)
    if (dest / HOLDOUT_DIR).exists():  # a rerun writes the slices again
        rmtree(dest / HOLDOUT_DIR)
    # the client's files: written in place, or (object store) in a local folder uploaded at
    # the end (compare.json last)
    with _client_folder(dest) as out:
        results, meta = _run_splits(input, methods, cfg, opts, str(dest / HOLDOUT_DIR), client)
        table = _write_results(out, results, meta, t0, report)
        if out != dest:
            from ...runtime.files import upload_tree

            upload_tree(out, dest, last=("compare.json",))
        return table


def _run_splits(input, methods, cfg, opts, holdout_dir, client):
    """Every split's results, and what ``compare.json`` says about the run."""
    import dask

    from ...analysis.clusters import fit_kmeans_dask, read_corpus
    from ...analysis.report.corpus_map import MAP_ROWS
    from ...core.kmeans import check_k, readable_n_clusters
    from ...pipeline.exclude import load_excluded
    from ...pipeline.schema import Columns
    from ...pipeline.split_job import SplitJob
    from ...pipeline.tokens import prunes_checked

    cols = Columns.from_config(cfg)
    # select's job: the same splits, the same shares of a token budget, the same prune check
    job = SplitJob.of_files(cfg, cols, "cpu", check_rows=False, input=input)
    splits, n_rows = job.splits, job.plan.n_rows
    k = opts["n_clusters"]
    ctx = dask.config.set(scheduler=client.get) if client is not None else dask.config.set({})
    with ctx, dask.config.set({"dataframe.convert-string": False}):
        excluded = load_excluded(getattr(cfg, "exclude", None), getattr(cfg, "text_column", "text"))
        if cfg.budget_in_tokens:
            job.count_tokens(client, cols, excluded=excluded, prunes=prunes_checked(cfg, methods))
        centroids = None
        ddf = read_corpus(input, split_size=cfg.split_size)
        has_cluster = opts["domain_column"] in ddf.columns
        if {"semdedup", "quadmix"} & set(methods) and not has_cluster:
            k = int(k or readable_n_clusters(n_rows))
            check_k(k, n_rows)
            centroids, _ = fit_kmeans_dask(ddf, k, opts["sample_fraction"], cfg.embedding_column, seed=cfg.seed)
        task = CompareTask(
            (cols.id, cols.embedding, cols.quality),
            methods,
            cfg,
            centroids,
            k,
            opts["quadmix_params"],
            opts["semdedup_eps"],
            max(1, min(opts["sample_rows"], MAP_ROWS) // len(splits)),
            opts["tokens_column"],
            opts["domain_column"],
            holdout_dir,
            excluded,
        )
        results = job.run(client, _compare_split, task)
    meta = {
        "kind": "compare",
        "input": str(input),
        "methods": methods,
        "rows": int(n_rows),
        "splits": len(splits),
        "holdout": float(cfg.holdout),
        "n_clusters": k,
        "clusters_from": "input" if has_cluster else "k-means",
        "config": cfg.to_dict(),
        "quadmix_params": opts["quadmix_params"],
        "semdedup_eps": opts["semdedup_eps"],
        "tokens": job.token_info,
    }
    return results, meta


def optimizer_records(per: pd.DataFrame) -> list:
    """One record per split and method, ``{"name", "method", "optimizer"}`` (how that
    selection was made), for the manifest."""

    def plain(v):
        return None if pd.isna(v) else v.item() if hasattr(v, "item") else v

    keys = [k for k in OPTIMIZER_COLUMNS if k in per.columns]
    return [
        {"name": str(r[SPLIT_COLUMN]), "method": r["method"], "optimizer": {k: plain(r[k]) for k in keys}}
        for _, r in per.iterrows()
    ]


def _write_results(out, results, meta, t0, report) -> pd.DataFrame:
    """The client's files under ``out``, ``compare.json`` last (then the report); the table."""
    from ...analysis.report.figures import pareto_plot
    from ...pipeline.io import write_json_atomic

    per = pd.concat([r["table"] for r in results], ignore_index=True)
    table = summarise(per)
    per.to_csv(out / SPLITS_FILE, index=False)
    table.to_csv(out / "compare.csv")
    pd.concat([r["selections"] for r in results], ignore_index=True).to_parquet(out / "selections.parquet")
    hist = [r["history"] for r in results if len(r["history"])]
    if hist:
        pd.concat(hist, ignore_index=True).to_parquet(out / "history.parquet")
    pd.concat([r["sample"] for r in results], ignore_index=True).to_parquet(out / "sample.parquet")
    from ...analysis.report.kept_dropped import merge_examples

    examples = merge_examples([r.get("examples") for r in results])
    if examples is not None:
        examples.to_parquet(out / "examples.parquet")
    whys = [r["why"] for r in results if r.get("why") is not None]
    if whys:  # the main method's per-split facts, for the report's "why" section
        write_json_atomic(whys, out / WHY_FILE)
    np.save(out / "sample_embedding.npy", np.concatenate([r["sample_embedding"] for r in results]))
    pd.concat([r["corpus"] for r in results], ignore_index=True).to_parquet(out / "corpus_stats.parquet")
    sums = [r["cluster_sums"] for r in results if r["cluster_sums"] is not None]
    if sums:
        from ...analysis.clusters import combine_stats, stats_frame

        stats_frame(combine_stats(sums)).to_parquet(out / "cluster_stats.parquet")
    pareto_plot(table, out / "pareto.png")
    meta["holdout_rows"] = int(per.groupby(SPLIT_COLUMN)["holdout_rows"].first().sum())
    for key in EXCLUDED_COUNTS:
        meta[key] = int(per.groupby(SPLIT_COLUMN)[key].first().sum())
    meta["optimizer"] = optimizer_records(per)
    meta["tokens_kept"] = {m: int(v) for m, v in table.get("tokens", pd.Series(dtype=float)).items() if pd.notna(v)}
    meta["wall_seconds"] = round(time.perf_counter() - t0, 3)
    write_json_atomic(meta, out / "compare.json")
    if report:
        from ...analysis.report import build_report

        build_report(out)
    return table


@contextmanager
def _client_folder(dest):
    """The local folder the client writes its files into: ``dest`` itself, or a temporary
    one (removed on exit) when ``dest`` is an object store."""
    from ...runtime.storage import Remote

    if not isinstance(dest, Remote):
        yield dest
        return
    with tempfile.TemporaryDirectory(prefix="datamask-compare-") as tmp:
        yield Path(tmp)
