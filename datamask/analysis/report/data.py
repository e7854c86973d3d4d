"""What the report draws: :class:`ReportData`, loaded from a ``select``, ``compare`` or
``dedup`` output."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ...methods.datamask import trajectory_rows
from ...pipeline.output import n_splits, split_records
from ...runtime.storage import is_url, location, open_file
from .sample import REPORT_SAMPLE

__all__ = ["ReportData", "load_compare", "load_select", "load_dedup", "load_proxy_lm", "load_search", "load"]


@dataclass
class ReportData:
    """Everything the report draws.

    corpus : DataFrame with ``quality`` and, when known, ``n_tokens`` and ``cluster``
        (one row per corpus document, or a large sample)
    selections : DataFrame with ``method`` and the same columns, one row per selected doc
    history : DataFrame ``method, split, step, objective, quality, diversity`` (and, from 0.4,
        ``phase``: "start" for the start solver's progress, "pg" for policy-gradient steps,
        and ``start``: what made the starting point) or None
    table : DataFrame indexed by method (comparison metrics) or None
    cluster_stats : DataFrame from :func:`datamask.analysis.cluster_stats.cluster_stats` or None
    sample : DataFrame with ``selected_<method>`` bool columns, rows of ``sample_embedding``
    sample_embedding : (n, d) array or None
    title, notes : page title and a dict of facts shown under it
    dedup_examples : example duplicate groups of a ``dedup`` output (``{"kind", "kept",
        "duplicates"}``, each member ``{"id", "text"}``), or None for other outputs
    why : what the report's "why" section reads (:func:`.why_data.why_data` of the split records:
        per-cluster counts, the best rows left out), or None
    """

    corpus: pd.DataFrame
    selections: pd.DataFrame
    history: pd.DataFrame | None = None
    table: pd.DataFrame | None = None
    cluster_stats: pd.DataFrame | None = None
    sample: pd.DataFrame | None = None
    sample_embedding: np.ndarray | None = None
    title: str = "datamask report"
    notes: dict = field(default_factory=dict)
    dedup_examples: list | None = None
    proxy: dict | None = None  # a proxy-LM run: {"dir", "table" (proxy.csv), "manifest"}
    search: dict | None = None  # a search: {"dir", "summary" (search.json)}
    reference_size: int | None = None  # the run's coverage sample (the table's note)
    examples: pd.DataFrame | None = None  # kept and dropped texts per cluster (.kept_dropped)
    id_column: str = "id"  # the id column of ``selections`` (the map's search finds its rows)
    why: dict | None = None  # per-cluster counts and the best dropped rows (.why_data.why_data), or None

    @property
    def methods(self):
        return list(dict.fromkeys(self.selections["method"])) if len(self.selections) else []


def _dir(directory):
    """A local :class:`~pathlib.Path` or a URL's :class:`~datamask.runtime.storage.Remote`."""
    return location(directory)


def _read(loc, reader, **kw):
    """``reader`` (pandas' or numpy's) of a local file or an object (read whole)."""
    if isinstance(loc, Path):
        return reader(loc, **kw)
    import io

    return reader(io.BytesIO(loc.read_bytes()), **kw)


def load_compare(directory) -> ReportData:
    """The files ``datamask compare`` wrote."""
    d = _dir(directory)
    meta = json.loads((d / "compare.json").read_text())
    opt = lambda name: _read(d / name, pd.read_parquet) if (d / name).exists() else None  # noqa: E731
    emb = _read(d / "sample_embedding.npy", np.load) if (d / "sample_embedding.npy").exists() else None
    table = _read(d / "compare.csv", pd.read_csv, index_col="method")
    why = None
    if (d / "why.json").exists():  # (compare_run.WHY_FILE; older outputs have none)
        from .why_data import why_data

        records = json.loads((d / "why.json").read_text())
        why = why_data(records, records[0]["method"]) if records else None
    return ReportData(
        why=why,
        corpus=_read(d / "corpus_stats.parquet", pd.read_parquet),
        selections=_read(d / "selections.parquet", pd.read_parquet),
        history=opt("history.parquet"),
        table=table,
        cluster_stats=opt("cluster_stats.parquet"),
        sample=opt("sample.parquet"),
        sample_embedding=emb,
        examples=opt("examples.parquet"),
        title="datamask compare",
        reference_size=meta["config"].get("reference_size"),
        notes={
            "input": meta["input"],
            "rows": f"{meta['rows']:,}",
            "splits": n_splits(meta),
            "methods": ", ".join(meta["methods"]),
            "clusters": meta.get("clusters_from"),
            "budget rule": f"ratio {meta['config']['ratio']}"
            if meta["config"].get("budget") is None
            else f"budget {meta['config']['budget']} per split",
            "lambda": meta["config"]["lam"],
            "diversity": meta["config"]["diversity"],
            "wall time": f"{meta['wall_seconds']:.1f} s",
            **(
                {
                    "deduplicated first": f"{meta['dedup']['rows_in']:,} -> {meta['dedup']['rows_out']:,} rows "
                    f"({', '.join(meta['dedup']['kinds'])}; {meta['dedup']['output']})"
                }
                if meta.get("dedup")
                else {}
            ),
        },
        proxy=_proxy_part(d / "proxy_lm"),
    )


def _proxy_part(d, manifest=None) -> dict | None:
    """A finished proxy-LM run in ``d`` (``manifest.json`` of kind proxy-lm, or ``manifest``,
    the run's before it is written), or None."""
    m = d / "manifest.json"
    if manifest is None and not m.exists():
        return None
    manifest = json.loads(m.read_text()) if manifest is None else manifest
    if manifest.get("kind") != "proxy-lm":
        return None
    return {"dir": d, "table": _read(d / "proxy.csv", pd.read_csv), "manifest": manifest}


def load_proxy_lm(directory, manifest=None) -> ReportData:
    """A ``datamask proxy-lm`` output: its table, figures and manifest."""
    d = _dir(directory)
    proxy = _proxy_part(d, manifest)
    m, cfg = proxy["manifest"], proxy["manifest"]["config"]
    return ReportData(
        corpus=pd.DataFrame(),
        selections=pd.DataFrame({"method": []}),
        title="datamask proxy-lm",
        notes={
            "selections": ", ".join(s["name"] for s in m["selections"]),
            "evaluation sets": ", ".join(e["source"] for e in m["eval_sets"]),
            "preset": cfg["preset"],
            "model": f"{m['params']:,} parameters (d_model {cfg['d_model']}, "
            f"{cfg['n_layers']} layers, context {cfg['seq_len']})",
            "training per selection": m.get("regime") or f"{m['train_tokens']:,} tokens",
            "tokenizer": f"{m['tokenizer']['source']}, {m['tokenizer']['vocab_size']:,} tokens",
            "device": f"{m['device']} ({m['precision']}, {m['threads']} threads)",
            "wall time": f"{m['wall_seconds']:.1f} s",
        },
        proxy=proxy,
    )


def _read_columns(path, columns):
    import pyarrow.dataset as ds

    if is_url(path):
        from ...runtime.storage import filesystem

        fs, p = filesystem(str(path))
        dataset = ds.dataset(p, format="parquet", filesystem=fs)
    else:
        dataset = ds.dataset(str(path), format="parquet")
    have = [c for c in columns if c in dataset.schema.names]
    # without pandas metadata: the pipeline writes ArrowDtype names that plain to_pandas() rejects
    return dataset.to_table(columns=have).replace_schema_metadata(None).to_pandas() if have else pd.DataFrame()


def _manifest(d, manifest):
    """``manifest`` (a run's, before it is written: the report comes first) or ``d/manifest.json``."""
    return manifest if manifest is not None else json.loads((d / "manifest.json").read_text())


def load_select(directory, sample_rows=REPORT_SAMPLE, manifest=None) -> ReportData:
    """A ``datamask select`` output: the manifest (``manifest``, or the one written), the
    selected rows and the input."""
    from ...pipeline.io import discover
    from ...pipeline.output import STATE_DIR
    from ...pipeline.schema import Columns, embedding_matrix
    from .corpus_map import sample_columns
    from .sample import read_centroids, sample_tables
    from .why_data import why_data

    d = _dir(directory)
    man = _manifest(d, manifest)
    cfg = man["config"]
    cols = Columns(cfg["id_column"], cfg["embedding_column"], cfg["quality_column"])
    want = [cols.id, cols.quality, "n_tokens", "cluster"]
    files = [f for f in discover(cfg["input"]) if f.fmt == "parquet"]
    corpus = pd.concat([_read_columns(f.path, want) for f in files], ignore_index=True) if files else pd.DataFrame()
    sel = _read_columns(d / "data", want)
    if cfg.get("keep_all") and "selected" in _read_columns(d / "data", ["selected"]).columns:
        sel = sel[_read_columns(d / "data", ["selected"])["selected"].to_numpy()]
    method = cfg.get("method", "datamask")
    sel = sel.assign(method=method)
    corpus, sel = (df.rename(columns={cols.quality: "quality"}) for df in (corpus, sel))
    hist = []
    for p in split_records(man):  # the start solver's progress, then pg's steps
        for h in trajectory_rows(p.get("optimizer"), p.get("start_history"), p.get("history")):
            hist.append(dict(h, method=method, split=p["name"]))
    history = pd.DataFrame(hist) if hist else None
    table = _select_table(split_records(man), method, cfg["diversity"])
    # sample for the projection: the first rows of each file, spread over the files (.sample)
    sample = emb = None
    chosen = set(sel[cols.id].tolist()) if cols.id in sel else set()
    frames, mats = [], []
    for f, t in sample_tables(files, cols, sample_rows):
        mats.append(embedding_matrix(t.column(cols.embedding), f.rel, cols.embedding).astype(np.float32))
        ids = t.column(cols.id).to_pylist()
        frames.append(sample_columns(t, cols, cfg, {f"selected_{method}": [i in chosen for i in ids]}))
    if frames:
        sample, emb = pd.concat(frames, ignore_index=True), np.concatenate(mats)
        centroids = read_centroids(d / STATE_DIR)  # the clusters the workers counted rows by
        if "cluster" not in sample and centroids is not None:
            from ...core.kmeans import assign

            sample["cluster"] = assign(emb, centroids)[0].astype(np.int64)
    t = man["totals"]
    return ReportData(
        corpus=corpus,
        selections=sel,
        history=history,
        table=table,
        sample=sample,
        sample_embedding=emb,
        cluster_stats=_select_cluster_stats(corpus, files, cols),
        title="datamask select",
        id_column=cols.id,
        why=why_data(split_records(man), method),
        reference_size=cfg.get("reference_size"),
        notes={
            "input": cfg["input"],
            "rows in": f"{t['rows_in']:,}",
            "rows out": f"{t['rows_out']:,}",
            "splits": n_splits(t),
            "method": method,
            "lambda": cfg["lam"],
            "diversity": cfg["diversity"],
            "wall time": f"{man['wall_seconds']:.1f} s",
        },
    )


def _select_table(records, method, diversity):
    """The selection beside top-k and random (the split records' ``side_by_side``, as the
    terminal printed it), then the whole split (objective, normalised quality and the run's
    diversity of every row: the records' ``before``)."""
    from ...pipeline.side_by_side import combine

    table = combine(records, method)
    parts = [p for p in records if p.get("before")]
    if parts and len(parts) == len([p for p in records if p.get("after")]):
        w = np.array([p["rows_in"] for p in parts], float)
        whole = {
            col: float(np.average([p["before"][key] for p in parts], weights=w))
            for key, col in (("objective", "objective"), ("quality", "quality_norm"), ("diversity", diversity))
        }
        whole_row = pd.DataFrame.from_dict({"whole split": whole}, orient="index").rename_axis("subset")
        table = whole_row if table is None else pd.concat([table, whole_row])
    return table


def _select_cluster_stats(corpus, files, cols):
    if "cluster" not in corpus.columns or not len(corpus):
        return None
    import pyarrow.parquet as pq

    from ...pipeline.schema import embedding_matrix
    from ..clusters import combine_stats, partial_stats, stats_frame

    k = int(corpus["cluster"].max()) + 1
    sums = []
    for f in files:  # one file at a time: memory stays at one file's embeddings
        with open_file(f.path) as fh:
            pf = pq.ParquetFile(fh)
            t = pf.read(
                columns=[c for c in ("cluster", cols.quality, "n_tokens", cols.embedding) if c in pf.schema_arrow.names]
            )
        E = embedding_matrix(t.column(cols.embedding), f.rel, cols.embedding)
        tok = t.column("n_tokens").to_numpy() if "n_tokens" in t.schema.names else None
        sums.append(partial_stats(t.column("cluster").to_numpy(), t.column(cols.quality).to_numpy(), E, tok, k))
    return stats_frame(combine_stats(sums))


def load_dedup(directory, manifest=None) -> ReportData:
    """A ``datamask dedup`` output: its manifest (groups per kind, example groups)."""
    d = _dir(directory)
    man = _manifest(d, manifest)
    cfg, t, info = man["config"], man["totals"], man.get("dedup", {})
    table = pd.DataFrame.from_dict(info.get("kinds", {}), orient="index").rename_axis("kind")
    notes = {
        "input": cfg["input"],
        "rows in": f"{t['rows_in']:,}",
        "rows out": f"{t['rows_out']:,}",
        "kinds": cfg["kind"],
        "null texts (kept, never grouped)": f"{t.get('null_texts', 0):,}",
        "kept row of a group": "highest quality" if info.get("quality_column_used") else "first by path and row",
    }
    if info.get("lsh"):
        lsh = info["lsh"]
        notes["fuzzy"] = (
            f"word {lsh['ngram']}-grams, {lsh['num_perm']} permutations, {lsh['bands']} bands x "
            f"{lsh['rows']} rows, Jaccard threshold {lsh['threshold']}"
        )
    if info.get("eps") is not None:
        notes["semantic"] = f"cosine > 1 - eps = {1 - info['eps']:.3g} within a cluster"
    notes["wall time"] = f"{man['wall_seconds']:.1f} s"
    return ReportData(
        corpus=pd.DataFrame(),
        selections=pd.DataFrame(),
        table=table,
        title="datamask dedup",
        notes=notes,
        dedup_examples=info.get("examples", []),
    )


def _proxy_note(p: dict) -> str:
    """The proxy and its regime: what every model trained on and the passes it made over its selection."""
    head = f"{p['preset']}, {p['params']:,} parameters"
    if "regime" not in p:  # a search.json of an earlier version
        return f"{head}, {p['tokens']:,} tokens"
    n = p.get("passes") or {}
    text = f"{head}, {p['regime']} ({n.get('min', 0):.2f}-{n.get('max', 0):.2f} passes over a selection"
    k = p.get("steps")  # (a search.json before issue 48 has no steps)
    if k:
        text += f", {k['min']:,.0f}-{k['max']:,.0f} optimiser steps; lr {p['lr']:g}, weight decay {p['weight_decay']:g}"
    return text + ")"


def load_search(directory) -> ReportData:
    """A ``datamask search`` output: ``search.json`` and the figures beside it."""
    d = _dir(directory)
    s = json.loads((d / "search.json").read_text())
    v = d / "verify.parquet"
    return ReportData(
        corpus=pd.DataFrame(),
        selections=pd.DataFrame({"method": []}),
        title="datamask search",
        notes={
            "input": s["input"],
            "evaluation sets": ", ".join(s["eval"]),
            "method and space": f"{s['method']}: {s['space']}",
            "trials": f"{s['trials']} x {s['seeds']} seed(s)",
            "proxy": _proxy_note(s["proxy"]),
            "budget": (s.get("budget") or {}).get("words", "–"),
            "evaluation texts found in the input (removed)": s["leaks"],
        },
        search={"dir": d, "summary": s, "verify": _read(v, pd.read_parquet) if v.exists() else None},
    )


def load(directory, manifest=None, **kw) -> ReportData:
    """The report's data of a stage's output; ``manifest``: the run's, not written yet (a
    report written before its manifest, :func:`~.html.build_report`)."""
    d = _dir(directory)
    if manifest is not None:  # a run finishing: the page, then manifest.json
        if manifest.get("kind") == "proxy-lm":
            return load_proxy_lm(d, manifest)
        return load_dedup(d, manifest) if manifest.get("stage") == "dedup" else load_select(d, manifest=manifest, **kw)
    if (d / "search.json").exists():
        return load_search(d)
    if (d / "compare.json").exists():
        return load_compare(d)
    if _proxy_part(d) is not None:
        return load_proxy_lm(d)
    if (d / "manifest.json").exists():
        if json.loads((d / "manifest.json").read_text()).get("stage") == "dedup":
            return load_dedup(d)
        return load_select(d, **kw)
    raise FileNotFoundError(
        f"{d} holds neither compare.json (datamask compare) nor manifest.json (datamask select or dedup or proxy-lm)"
    )
