"""``embed`` and ``score`` on a Dask DataFrame of texts (lazy ``map_partitions``).

``embed`` runs :func:`~datamask.stages.split.embed.embed_split` on every partition, as
``datamask embed`` does on every split (the model loaded once per worker process, never
downloaded). ``score`` is the CLI's three passes as one graph: the text components per
partition (:func:`~datamask.stages.split.score.components_split`), the corpus statistics
of every weighted column (Dask reductions, :func:`~datamask.features.aggregate.stats_parts`),
then ``quality`` per partition (:func:`~datamask.stages.split.score.aggregate_split`).
Until the statistics are known the graph holds the component columns of every partition;
``persist()`` the input first on a corpus larger than the cluster's memory.
"""

from __future__ import annotations

import numpy as np

from ..errors import DataError
from ..pipeline.config import EmbedConfig, ScoreConfig
from ..runtime.gpu import select_level
from .params import takes_config
from .partitions import keep_attrs, part_split

__all__ = ["embed", "score"]


def _missing(df, names, where, hint):
    for c in names:
        if c not in df.columns:
            raise DataError(f"{where}: missing column {c!r} (columns: {', '.join(map(str, df.columns))}); {hint(c)}")


def _embed_part(df, partition_info=None, *, cfg, embedder, level):
    from ..pipeline.schema import TextColumns
    from ..stages.split.embed import embed_split

    p = part_split(df, partition_info)
    cols = TextColumns.from_config(cfg)
    _missing(df, (cfg.text_column,), p.where, cols.hint)
    out, _ = embed_split(df, p.where, cfg=cfg, embedder=embedder, level=level)
    out.attrs.pop("n_skipped", None)
    return keep_attrs(out, df)


@takes_config(EmbedConfig)
def embed(ddf, cfg=None):
    """Add an L2-normalised embedding column to every partition (lazy).

    Rows with null or empty text are dropped, as ``datamask embed`` drops them. The model is
    a local sentence-transformers folder (default: the offline all-MiniLM-L6-v2), loaded once
    per worker process.
    """
    from ..features.embed import embedding_meta
    from ..stages.split.embed import make_embedder

    level = select_level(cfg.device, ("torch",))
    embedder, _ = make_embedder(cfg, level.device)
    meta = embedding_meta(ddf._meta, embedder, cfg.embedding_column)
    return ddf.map_partitions(_embed_part, cfg=cfg, embedder=embedder, level=level, meta=meta, enforce_metadata=False)


def _components_part(df, partition_info=None, *, cfg, scorer_kw, inputs, needed):
    from ..pipeline.schema import TextColumns
    from ..stages.split.score import components_split

    p = part_split(df, partition_info)
    _missing(df, needed, p.where, TextColumns.from_config(cfg, extra=inputs).hint)
    out = components_split(df, p.where, text_column=cfg.text_column, scorer_kw=scorer_kw, inputs=inputs)
    return keep_attrs(out, df)


def _aggregate_part(df, partition_info=None, *, cfg, weights, domain_weights, stats):
    from ..stages.split.score import aggregate_split

    p = part_split(df, partition_info)
    out = aggregate_split(df, p.where, cfg=cfg, weights=weights, domain_weights=domain_weights, stats=stats)
    return keep_attrs(out, df)


def _finish_stats(columns, levels, *values):
    from ..features.aggregate import finish_stats

    try:
        return finish_stats(columns, levels, *values)
    except ValueError as e:
        raise DataError(str(e)) from None


@takes_config(ScoreConfig)
def score(ddf, cfg=None):
    """Add ``quality`` (float32, the weighted sum of normalised components), the generated
    components (``quality_heuristics``, ``quality_fasttext``) and ``n_tokens`` (lazy).

    Normalisation uses statistics over the whole frame, as ``datamask score`` uses them
    over the whole corpus.
    """
    from pathlib import Path

    import dask

    from ..errors import ConfigError
    from ..features.score import components_meta
    from ..stages.split.score import fasttext_scorer, score_weights, weighted_columns

    weights, domain_weights, generated = score_weights(cfg)
    weighted = weighted_columns(weights, domain_weights)
    inputs = [c for c in weighted if c not in generated]
    if cfg.tokenizer and not Path(cfg.tokenizer).exists():
        raise ConfigError(
            f"tokenizer {cfg.tokenizer!r} does not exist; pass a tokenizer.json file or a folder holding one"
        )
    scorer_kw = dict(
        heuristics=bool(cfg.heuristics), fasttext=fasttext_scorer(cfg), tokenizer=cfg.tokenizer, n_tokens=True
    )
    needed = [cfg.text_column] + inputs + ([cfg.domain_column] if cfg.domain_column else [])
    absent = [c for c in inputs if c not in ddf.columns]
    if absent:  # the statistics cannot be planned without it
        raise DataError(
            f"missing score column {absent[0]!r} (columns: {', '.join(map(str, ddf.columns))}); add the "
            "column or fix the column names in --scores / --domain-weights / --domain-column"
        )
    comp = ddf.map_partitions(
        _components_part,
        cfg=cfg,
        scorer_kw=scorer_kw,
        inputs=inputs,
        needed=needed,
        meta=components_meta(ddf._meta, **scorer_kw),
        enforce_metadata=False,
    )
    from ..features.aggregate import stats_parts

    levels = np.linspace(0.0, 1.0, 1001)
    stats = dask.delayed(_finish_stats, pure=True)(weighted, levels, *stats_parts(comp, weighted, levels))
    meta = comp._meta.assign(**{cfg.quality_column: np.zeros(0, dtype=np.float32)})
    return comp.map_partitions(
        _aggregate_part,
        cfg=cfg,
        weights=weights,
        domain_weights=domain_weights,
        stats=stats,
        meta=meta,
        enforce_metadata=False,
    )
