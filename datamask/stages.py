"""``datamask embed`` and ``datamask score``: the text stages, and workflows that chain stages.

Both stages run on :func:`datamask.pipeline.run_stage`, the mechanism ``select`` uses: the
same split planning and identities, atomic per-split writes and records, resume, refusal of
an output directory written with another config, the client and the manifest.

embed (one pass): each split's usable texts get an L2-normalised ``embedding``
(``fixed_size_list<float32|float16>[d]``). The sentence-transformers model is loaded once per
worker process (the :class:`~datamask.features.Embedder` cache), never from a hub. Texts
longer than the model's window are truncated unless ``chunk``. Rows with null/empty text are
dropped; their count is ``skipped_texts`` in each split's record and the manifest totals.

score (two passes):

1. components, per split: heuristics / fastText columns and ``n_tokens`` from the text, plus
   the weighted input score columns, written to ``_datamask/components/`` (NaN in a score
   column fails here, naming the file and row);
2. corpus statistics of every weighted column, in one out-of-core pass over those files,
   stored in ``_datamask/stats.json``; a resumed run reuses them, so every split of one output
   is normalised with the same numbers;
3. aggregate, per split (the resumable pass): normalise, weight (per domain if asked), bin,
   write ``quality`` and ``n_tokens`` next to the input columns. Null/empty texts score 0 in
   the text components and are counted (``unusable_texts``).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .errors import ConfigError, DataError
from .io import write_json_atomic, write_parquet_atomic
from .pipeline import (DATA_DIR, Output, Stage, _Bars, _run_pending, finish_split, plan_splits, resolve_io,
                       run_stage, split_record)
from .schema import TextColumns

__all__ = ["run_embed", "run_score", "run_train_quality", "run_workflow", "parse_domain_weights",
           "score_weights", "COMPONENTS_DIR", "STATS_FILE"]

COMPONENTS_DIR = "components"
STATS_FILE = "stats.json"


def _frame(df, s, text_column):
    """The partition as pandas, indexed by file row (so messages name the file's row). A binary
    text column becomes Python bytes, which the text reader decodes as UTF-8 row by row."""
    from .features.text import to_pandas

    pdf = to_pandas(df)
    pdf.index = pd.RangeIndex(s.start, s.start + len(pdf))
    t = pdf[text_column].dtype
    if isinstance(t, pd.ArrowDtype) and (pa.types.is_binary(t.pyarrow_dtype) or pa.types.is_large_binary(t.pyarrow_dtype)):
        pdf[text_column] = pdf[text_column].astype(object)
    return pdf


def _table(pdf) -> pa.Table:
    # No pandas metadata: its ArrowDtype strings ("fixed_size_list<...>[384]") cannot be read back
    # by pandas, and the Arrow types alone round-trip.
    return pa.Table.from_pandas(pdf, preserve_index=False).replace_schema_metadata(None)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _workers_per_host(client) -> dict:
    from distributed.comm import get_address_host

    counts: dict = {}
    for addr in client.scheduler_info().get("workers", {}):
        h = get_address_host(addr)
        counts[h] = counts.get(h, 0) + 1
    return counts


# ---------------------------------------------------------------------- embed
def _embed_partition(df, partition_info=None, *, splits, out_root, cfg, embedder, per_host):
    from .features.embed import embed_partition

    t0 = time.perf_counter()
    s = splits[partition_info["number"]]
    pdf = _frame(df, s, cfg.text_column)
    del df
    if embedder.num_threads is None and embedder.resolved_device() == "cpu":
        # cores // workers on this host, so worker processes do not oversubscribe the CPU
        try:
            from distributed import get_worker
            from distributed.comm import get_address_host

            k = per_host.get(get_address_host(get_worker().address), 1)
        except (ImportError, ValueError):
            k = 1
        embedder = replace(embedder, num_threads=max(1, _cores() // max(k, 1)))
    try:
        out = embed_partition(pdf, cfg.text_column, embedder, column=cfg.embedding_column)
    except ValueError as e:
        raise DataError(f"{s.where()}: {e}") from None
    rec = split_record(s, len(pdf))
    rec.update(rows_out=len(out), skipped_texts=int(out.attrs.get("n_skipped", 0)))
    return finish_split(_table(out), out_root, rec, t0=t0)


def _embedder(cfg, device):
    from .features.embed import Embedder

    try:
        emb = Embedder(model=cfg.model, device="cuda" if device == "gpu" else "cpu",
                       batch_size=int(cfg.batch_size), max_length=cfg.max_length, prefix=cfg.prefix,
                       chunk=bool(cfg.chunk), dtype=cfg.dtype, compute=cfg.compute)
        dim = emb.dim  # from the model's config files; loads the model here only when they do not say
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return emb, dim


def run_embed(cfg, client=None) -> dict:
    """``datamask embed``: ``cfg`` is an :class:`~datamask.config.EmbedConfig`; returns the manifest."""
    cfg = resolve_io(cfg, "embed")
    cols = TextColumns.from_config(cfg)
    plan = plan_splits(cfg, cols)
    embedder, dim = _embedder(cfg, plan.device)
    info = {"model": embedder.path, "dim": dim, "dtype": cfg.dtype, "max_length": cfg.max_length,
            "chunk": bool(cfg.chunk), "compute": cfg.compute}
    stage = Stage(
        "embed", plan, cols, _embed_partition,
        kwargs=dict(cfg=cfg, embedder=embedder, per_host={}),
        setup=lambda client, pending, out: {"per_host": _workers_per_host(client)},
        totals=lambda parts: {"skipped_texts": int(sum(r.get("skipped_texts", 0) for r in parts))},
        extra=lambda out: {"embed": info},
    )
    return run_stage(stage, client)


# ---------------------------------------------------------------------- score
def parse_domain_weights(spec: str | None) -> dict | None:
    """``"news=dclm:2,fineweb_edu:1;code=fineweb_edu:1"`` -> ``{"news": {...}, "code": {...}}``."""
    from .features.aggregate import parse_weights

    if not spec:
        return None
    out = {}
    for part in (p.strip() for p in spec.split(";")):
        if not part:
            continue
        dom, eq, w = part.partition("=")
        if not eq or not dom.strip():
            raise ConfigError(f"--domain-weights: bad entry {part!r} (expected DOMAIN=NAME:W,NAME:W;DOMAIN=...)")
        try:
            out[dom.strip()] = parse_weights(w)
        except ValueError as e:
            raise ConfigError(f"--domain-weights {dom.strip()!r}: {e}") from None
    return out or None


def score_weights(cfg):
    """``(weights, domain_weights, generated columns)`` of a ``ScoreConfig``.

    Generated components (``quality_heuristics``, ``quality_fasttext``) weigh 1 unless
    ``--scores`` names them."""
    from .features.aggregate import parse_weights

    try:
        weights = parse_weights(cfg.scores) if cfg.scores else {}
    except ValueError as e:
        raise ConfigError(str(e)) from None
    generated = (["quality_heuristics"] if cfg.heuristics else []) + (["quality_fasttext"] if cfg.fasttext else [])
    for g in generated:
        weights.setdefault(g, 1.0)
    return weights, parse_domain_weights(cfg.domain_weights), generated


def _weighted_columns(weights, domain_weights):
    cols = list(weights)
    for w in (domain_weights or {}).values():
        cols += [c for c in w if c not in cols]
    return cols


def _check_scores(pdf, columns, where):
    """Input score columns are numbers without NaN/inf; names the first bad row."""
    for c in columns:
        try:
            v = pd.to_numeric(pdf[c], errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            raise DataError(f"{where}: score column {c!r} is not numeric (dtype {pdf[c].dtype}); "
                            "pass numeric score columns in --scores") from None
        bad = ~np.isfinite(v)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{where}: score column {c!r} is {v[i]} at row {pdf.index[i]} "
                            f"({int(bad.sum())} such rows); fill or drop those rows before scoring")


def _components_partition(df, partition_info=None, *, splits, out_root, cfg, scorer_kw, inputs, keep):
    from .features.score import score_components_partition

    s = splits[partition_info["number"]]
    pdf = _frame(df, s, cfg.text_column)
    del df
    _check_scores(pdf, inputs, s.where())
    try:
        comp = score_components_partition(pdf, cfg.text_column, **scorer_kw)
    except ValueError as e:
        raise DataError(f"{s.where()}: {e}") from None
    write_parquet_atomic(_table(comp[keep]), Output(out_root).state / COMPONENTS_DIR / f"{s.name}.parquet")
    return pd.DataFrame({"name": [s.name], "record": [json.dumps({"name": s.name})]})


def _score_partition(df, partition_info=None, *, splits, out_root, cfg, generated, weights, domain_weights,
                     stats):
    from .features.aggregate import aggregate_partition
    from .features.score import count_unusable

    t0 = time.perf_counter()
    s = splits[partition_info["number"]]
    pdf = _frame(df, s, cfg.text_column)
    del df
    comp_file = Output(out_root).state / COMPONENTS_DIR / f"{s.name}.parquet"
    comp = pq.read_table(comp_file, columns=generated + ["n_tokens"])
    if comp.num_rows != len(pdf):
        raise DataError(f"{s.where()}: the stored components have {comp.num_rows} rows, the input "
                        f"{len(pdf)}; the input changed: rerun with --overwrite")
    for c in generated + ["n_tokens"]:
        pdf[c] = comp.column(c).to_numpy()
    try:
        n_unusable = count_unusable(pdf, cfg.text_column)
        out = aggregate_partition(pdf, weights, stats, method=cfg.normalize, domain_column=cfg.domain_column,
                                  domain_weights=domain_weights, bins=cfg.bins, output=cfg.quality_column)
    except ValueError as e:
        raise DataError(f"{s.where()}: {e}") from None
    rec = split_record(s, len(pdf))
    rec.update(rows_out=len(out), unusable_texts=n_unusable)
    res = finish_split(_table(out), out_root, rec, t0=t0)
    comp_file.unlink(missing_ok=True)  # the split is finished; its components are no longer needed
    return res


def _score_setup(client, pending, out, *, stage_plan, cols, cfg, scorer_kw, inputs, generated, weighted):
    """Pass 1 (components of splits that lack them) and pass 2 (corpus stats, once)."""
    import dask.dataframe as dd

    from .features.aggregate import ColumnStats, compute_stats

    comp_dir = out.state / COMPONENTS_DIR
    stats_file = out.state / STATS_FILE
    have_stats = stats_file.exists()
    todo = pending if have_stats else stage_plan.splits
    need = [s for s in todo if not (comp_dir / f"{s.name}.parquet").exists()]
    if need:
        bars = _Bars(client, len(todo), len(todo) - len(need), len(need), cfg.quiet, desc="components")
        try:
            keep = list(dict.fromkeys(inputs + generated + ["n_tokens"]))
            _run_pending(client, need, cols, "cpu", _components_partition,
                         dict(cfg=cfg, scorer_kw=scorer_kw, inputs=inputs, keep=keep), str(out.root),
                         bars.partition_done)
        finally:
            bars.close()
    if have_stats:
        raw = json.loads(stats_file.read_text())
        stats = {c: ColumnStats.from_dict(d) for c, d in raw["stats"].items()}
    else:
        files = [str(comp_dir / f"{s.name}.parquet") for s in stage_plan.splits]
        with client.as_current():
            try:
                stats = compute_stats(dd.read_parquet(files, columns=weighted), weighted)
            except ValueError as e:
                raise DataError(str(e)) from None
        write_json_atomic({"weights": weighted, "stats": {c: v.to_dict() for c, v in stats.items()}}, stats_file)
    return {"stats": stats}


def run_score(cfg, client=None) -> dict:
    """``datamask score``: ``cfg`` is a :class:`~datamask.config.ScoreConfig`; returns the manifest."""
    cfg = resolve_io(cfg, "score")
    weights, domain_weights, generated = score_weights(cfg)
    weighted = _weighted_columns(weights, domain_weights)
    inputs = [c for c in weighted if c not in generated]
    extra_cols = inputs + ([cfg.domain_column] if cfg.domain_column else [])
    cols = TextColumns.from_config(cfg, extra=extra_cols)
    plan = plan_splits(cfg, cols)
    scorer = None
    if cfg.fasttext:
        from .features.fasttext_quality import FastTextScorer

        try:
            scorer = FastTextScorer(cfg.fasttext, cfg.fasttext_label)
            scorer.label()  # load once here: a bad model or label fails before any work starts
        except ValueError as e:
            raise ConfigError(str(e)) from None
    if cfg.tokenizer and not Path(cfg.tokenizer).exists():
        raise ConfigError(f"tokenizer {cfg.tokenizer!r} does not exist; pass a tokenizer.json file or a "
                          "folder holding one")
    scorer_kw = dict(heuristics=bool(cfg.heuristics), fasttext=scorer, tokenizer=cfg.tokenizer, n_tokens=True)

    def setup(client, pending, out):
        return _score_setup(client, pending, out, stage_plan=plan, cols=cols, cfg=cfg, scorer_kw=scorer_kw,
                            inputs=inputs, generated=generated, weighted=weighted)

    def extra(out):
        try:
            (out.state / COMPONENTS_DIR).rmdir()  # empty once every split is finished
        except OSError:
            pass
        raw = json.loads((out.state / STATS_FILE).read_text())
        keep = ("count", "min", "max", "mean", "std")
        return {"score": {"weights": weights, "domain_weights": domain_weights, "normalize": cfg.normalize,
                          "bins": cfg.bins, "stats": {c: {k: d[k] for k in keep} for c, d in raw["stats"].items()}}}

    stage = Stage(
        "score", plan, cols, _score_partition,
        kwargs=dict(cfg=cfg, generated=generated, weights=weights, domain_weights=domain_weights, stats=None),
        setup=setup,
        totals=lambda parts: {"unusable_texts": int(sum(r.get("unusable_texts", 0) for r in parts))},
        extra=extra,
    )
    return run_stage(stage, client)


# ---------------------------------------------------------------------- train-quality
def run_train_quality(positive, negative, output, *, text_column="text", epoch=10, seed=0) -> dict:
    """``datamask train-quality``: a fastText classifier of positive vs negative documents."""
    from .features.fasttext_quality import train_quality

    for name, p in (("--positive", positive), ("--negative", negative)):
        if not Path(p).exists():
            raise DataError(f"{name} {p!r} does not exist; pass a .txt, .jsonl(.gz) or .parquet file or a directory")
    try:
        return train_quality(positive, negative, output, text_column=text_column, epoch=int(epoch), seed=int(seed))
    except ValueError as e:
        raise DataError(str(e)) from None


# ---------------------------------------------------------------------- workflows
RUNNERS = {"embed": run_embed, "score": run_score}


def _runner(name):
    if name == "select":
        from .pipeline import run_select

        return run_select
    return RUNNERS[name]


def stage_configs(raw: dict, source: str = "workflow") -> list:
    """``[(stage, config)]`` of a chaining workflow (``stages: [embed, score, select]``).

    Top-level keys go to every stage that has them (``split_size``, ``device``...); a block
    named after a stage holds that stage's own keys. Stage *k* reads stage *k-1*'s
    ``OUTPUT/<stage>/data`` and writes ``OUTPUT/<stage>``; the first reads ``input``."""
    from .config import STAGE_CONFIGS

    raw = dict(raw)
    names = raw.pop("stages")
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    if not isinstance(names, list) or not names or any(n not in STAGE_CONFIGS for n in names):
        raise ConfigError(f"{source}: stages must be a list of {', '.join(STAGE_CONFIGS)}; got {names!r}")
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: a stage is listed twice in stages ({names})")
    for k in [k for k in raw if "." in k]:  # --set select.ratio=0.2
        stage, _, key = k.partition(".")
        if stage in STAGE_CONFIGS:
            block = raw.setdefault(stage, {}) or {}
            block[key] = raw.pop(k)
            raw[stage] = block
    blocks = {}
    for n in STAGE_CONFIGS:
        b = raw.pop(n, None) or {}
        if not isinstance(b, dict):
            raise ConfigError(f"{source}: {n} must be a mapping of {n} keys")
        if n not in names and b:
            raise ConfigError(f"{source}: block {n!r} given but {n} is not in stages")
        blocks[n] = b
    inp, out = raw.pop("input", None), raw.pop("output", None)
    if not inp or not out:
        raise ConfigError(f"{source}: the workflow needs input and output keys (or --set input=... --set output=...)")
    known = {f.name for n in names for f in fields(STAGE_CONFIGS[n])}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)} for stages {', '.join(names)}")
    cfgs, prev = [], inp
    for n in names:
        cls = STAGE_CONFIGS[n]
        own = {f.name for f in fields(cls)}
        d = {k: v for k, v in raw.items() if k in own}
        d.update(blocks[n])
        d["input"], d["output"] = prev, str(Path(out) / n)
        cfgs.append((n, cls.from_dict(d, source=f"{source} ({n})")))
        prev = str(Path(out) / n / DATA_DIR)
    return cfgs


def run_workflow(raw: dict, source: str = "workflow", on_stage=None) -> list:
    """Run a chaining workflow on one client; returns ``[(stage, manifest)]``."""
    from .backend import resolve_device
    from .client import close_client, get_client

    cfgs = stage_configs(raw, source)
    first = cfgs[0][1]
    try:
        device = resolve_device(first.device)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    client = get_client(first, device)
    try:
        results = []
        for name, cfg in cfgs:
            m = _runner(name)(cfg, client=client)
            results.append((name, m))
            if on_stage is not None:
                on_stage(name, cfg, m)
        return results
    finally:
        close_client(client)
