"""``datamask score`` (the quality column and ``n_tokens``) and ``datamask train-quality``.

Runs on :func:`~datamask.pipeline.runner.run_stage`, in two passes:

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
from pathlib import Path

import numpy as np
import pandas as pd

from ...errors import ConfigError, DataError, OutputError
from ...pipeline.frames import pandas_table, text_frame
from ...pipeline.io import read_parquet_table, write_json_atomic, write_parquet_atomic
from ...pipeline.runner import Output, ProgressBars, record_frame, run_pending
from ...pipeline.schema import TextColumns
from ...pipeline.split_record import SplitRecord
from ...runtime.progress import row_progress
from ...runtime.storage import options
from ..base import split_runs
from ..declared import Score

__all__ = [
    "ScoreStage",
    "run_score",
    "run_train_quality",
    "parse_domain_weights",
    "score_weights",
    "COMPONENTS_DIR",
    "STATS_FILE",
    "components_split",
    "aggregate_split",
    "weighted_columns",
    "fasttext_scorer",
]


COMPONENTS_DIR = "components"
STATS_FILE = "stats.json"
SCORE_BLOCK = 4096  # rows per progress report of pass 1 (the components)


# ---------------------------------------------------------------------- embed


# ---------------------------------------------------------------------- score
def parse_domain_weights(spec: str | None) -> dict | None:
    """``"news=dclm:2,fineweb_edu:1;code=fineweb_edu:1"`` -> ``{"news": {...}, "code": {...}}``."""
    from ...features.aggregate import parse_weights

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
    from ...features.aggregate import parse_weights

    try:
        weights = parse_weights(cfg.scores) if cfg.scores else {}
    except ValueError as e:
        raise ConfigError(str(e)) from None
    generated = (["quality_heuristics"] if cfg.heuristics else []) + (["quality_fasttext"] if cfg.fasttext else [])
    for g in generated:
        weights.setdefault(g, 1.0)
    return weights, parse_domain_weights(cfg.domain_weights), generated


def weighted_columns(weights, domain_weights):
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
            raise DataError(
                f"{where}: score column {c!r} is not numeric (dtype {pdf[c].dtype}); "
                "pass numeric score columns in --scores"
            ) from None
        bad = ~np.isfinite(v)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{where}: score column {c!r} is {v[i]} at row {pdf.index[i]} "
                f"({int(bad.sum())} such rows); fill or drop those rows before scoring"
            )


def components_split(pdf, where, *, text_column, scorer_kw, inputs, progress=None):
    """One split's text components and ``n_tokens`` (the input score columns checked first);
    the per-split function of pass 1, shared with :func:`datamask.dask.score`.
    ``progress(done)``: called after each block of :data:`SCORE_BLOCK` rows (every
    component is a row's own, so blocks give the same columns)."""
    from ...features.score import score_components_frame

    _check_scores(pdf, inputs, where)
    try:
        if progress is None or len(pdf) <= SCORE_BLOCK:
            return score_components_frame(pdf, text_column, **scorer_kw)
        parts = []
        for i in range(0, len(pdf), SCORE_BLOCK):
            parts.append(score_components_frame(pdf.iloc[i : i + SCORE_BLOCK], text_column, **scorer_kw))
            progress(i + len(parts[-1]))
        return pd.concat(parts)
    except ValueError as e:
        raise DataError(f"{where}: {e}") from None


def aggregate_split(pdf, where, *, cfg, weights, domain_weights, stats):
    """One split's ``quality`` from its components and the corpus statistics: the per-split
    function of pass 3, shared with :func:`datamask.dask.score`."""
    from ...features.aggregate import aggregate_frame

    try:
        return aggregate_frame(
            pdf,
            weights,
            stats,
            normalize=cfg.normalize,
            domain_column=cfg.domain_column,
            domain_weights=domain_weights,
            bins=cfg.bins,
            output=cfg.quality_column,
        )
    except ValueError as e:
        raise DataError(f"{where}: {e}") from None


def _components_split(df, partition_info=None, *, splits, out_root, cfg, scorer_kw, inputs, keep):
    s = splits[partition_info["number"]]
    pdf = text_frame(df, s, cfg.text_column)
    del df
    comp = components_split(
        pdf, s.where(), text_column=cfg.text_column, scorer_kw=scorer_kw, inputs=inputs, progress=row_progress(s.name)
    )
    write_parquet_atomic(pandas_table(comp[keep]), Output(out_root).state / COMPONENTS_DIR / f"{s.name}.parquet")
    return record_frame(SplitRecord.of_split(s, len(comp)).update(rows_written=len(comp)))


def _check_components(out, rec):
    """The client's check of a split's components (as :meth:`Output.verify` does for its data)."""
    from ...pipeline.io import parquet_rows
    from ...pipeline.output import SHARED_STORAGE

    f = out.state / COMPONENTS_DIR / f"{rec['name']}.parquet"
    n = parquet_rows(f)
    if n is None or n != rec.get("rows_written", n):
        raise OutputError(
            f"split {rec.get('source', rec['name'])} (rows {rec.get('start')}-{rec.get('stop')}) "
            f"was scored, but {f} is {'missing' if n is None else f'short ({n} rows)'} here on the "
            f"client: {SHARED_STORAGE}"
        )


def _score_setup(client, pending, out, stage):
    """Pass 1 (components of splits that lack them) and pass 2 (corpus stats, once)."""
    import dask.dataframe as dd

    from ...features.aggregate import ColumnStats, compute_stats

    cfg, inputs, generated, weighted = stage.cfg, stage.inputs, stage.generated, stage.weighted
    splits = stage.plan_.splits
    comp_dir = out.state / COMPONENTS_DIR
    stats_file = out.state / STATS_FILE
    have_stats = stats_file.exists()
    todo = pending if have_stats else splits
    need = [s for s in todo if not (comp_dir / f"{s.name}.parquet").exists()]
    if need:
        keep = list(dict.fromkeys(inputs + generated + ["n_tokens"]))
        rows = {s.name: s.rows for s in need}  # a bar over rows too: each split reports its blocks
        bars = ProgressBars(
            client,
            len(todo),
            len(todo) - len(need),
            len(need),
            cfg.quiet,
            desc="components",
            per_split=rows,
            unit="row",
        )
        with bars:
            run_pending(
                client,
                need,
                stage.cols,
                "cpu",
                _components_split,
                dict(cfg=cfg, scorer_kw=stage.scorer_kw, inputs=inputs, keep=keep),
                str(out.root),
                bars.split_done,
                verify=lambda rec: _check_components(out, rec),
            )
    if have_stats:
        raw = json.loads(stats_file.read_text())
        stats = {c: ColumnStats.from_dict(d) for c, d in raw["stats"].items()}
    else:
        files = [str(comp_dir / f"{s.name}.parquet") for s in splits]
        with client.as_current():
            try:
                stats = compute_stats(
                    dd.read_parquet(files, columns=weighted, storage_options=options() or None), weighted
                )
            except ValueError as e:
                raise DataError(str(e)) from None
        write_json_atomic({"weights": weighted, "stats": {c: v.to_dict() for c, v in stats.items()}}, stats_file)
    return stats


def fasttext_scorer(cfg):
    """The fastText scorer of ``cfg`` (None without one), loaded here so a bad model or label
    fails before any work starts."""
    if not cfg.fasttext:
        return None
    from ...features.fasttext_quality import FastTextScorer

    try:
        scorer = FastTextScorer(cfg.fasttext, cfg.fasttext_label)
        scorer.label()
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return scorer


class ScoreStage(Score):  # name, config, help: .declared
    summed = ("unusable_texts",)

    stats = None  # the corpus statistics of every weighted column (setup)

    def columns(self, cfg):  # the text, the input score columns and the domain column
        return TextColumns.from_config(cfg, extra=self.inputs + ([cfg.domain_column] if cfg.domain_column else []))

    def prepare(self, cfg):
        self.weights, self.domain_weights, self.generated = score_weights(cfg.validated())
        self.weighted = weighted_columns(self.weights, self.domain_weights)
        self.inputs = [c for c in self.weighted if c not in self.generated]
        super().prepare(cfg)
        cfg = self.cfg
        scorer = fasttext_scorer(cfg)
        if cfg.tokenizer and not Path(cfg.tokenizer).exists():
            raise ConfigError(
                f"tokenizer {cfg.tokenizer!r} does not exist; pass a tokenizer.json file or a folder holding one"
            )
        self.scorer_kw = dict(heuristics=bool(cfg.heuristics), fasttext=scorer, tokenizer=cfg.tokenizer, n_tokens=True)

    def setup(self, client, pending, out):
        self.stats = _score_setup(client, pending, out, self)

    def process(self, table, split):
        from ...features.score import count_unusable

        cfg, where = self.cfg, split.where()
        pdf = text_frame(table, split, cfg.text_column)
        del table
        columns = self.generated + ["n_tokens"]
        comp = read_parquet_table(self.output.state / COMPONENTS_DIR / f"{split.name}.parquet", columns=columns)
        if comp.num_rows != len(pdf):
            raise DataError(
                f"{where}: the stored components have {comp.num_rows} rows, the input "
                f"{len(pdf)}; the input changed: rerun with --overwrite"
            )
        for c in columns:
            pdf[c] = comp.column(c).to_numpy()
        try:
            n_unusable = count_unusable(pdf, cfg.text_column)
        except ValueError as e:
            raise DataError(f"{where}: {e}") from None
        kw = dict(weights=self.weights, domain_weights=self.domain_weights, stats=self.stats)
        out = aggregate_split(pdf, where, cfg=cfg, **kw)
        return pandas_table(out), {"unusable_texts": n_unusable}

    def extra(self, out):
        from ...runtime.storage import rmtree

        if (out.state / COMPONENTS_DIR).exists():  # every split is finished: its components are not needed
            rmtree(out.state / COMPONENTS_DIR)
        raw = json.loads((out.state / STATS_FILE).read_text())
        keep = ("count", "min", "max", "mean", "std")
        return {
            "score": {
                "weights": self.weights,
                "domain_weights": self.domain_weights,
                "normalize": self.cfg.normalize,
                "bins": self.cfg.bins,
                "stats": {c: {k: d[k] for k in keep} for c, d in raw["stats"].items()},
            }
        }

    def summary(self, manifest, out):
        t = manifest["totals"]
        return (
            f"datamask: scored {t['rows_out']:,} rows ({t['unusable_texts']:,} empty texts scored 0) "
            f"{split_runs(t, out)}"
        )


# ---------------------------------------------------------------------- train-quality
def run_train_quality(positive, negative, output, *, text_column="text", epoch=10, seed=0) -> dict:
    """``datamask train-quality``: a fastText classifier of positive vs negative documents."""
    from ...features.fasttext_quality import train_quality

    for name, p in (("--positive", positive), ("--negative", negative)):
        if not Path(p).exists():
            raise DataError(f"{name} {p!r} does not exist; pass a .txt, .jsonl(.gz) or .parquet file or a directory")
    try:
        return train_quality(positive, negative, output, text_column=text_column, epoch=int(epoch), seed=int(seed))
    except ValueError as e:
        raise DataError(str(e)) from None


# ---------------------------------------------------------------------- workflows


# ``datamask score``: ``cfg`` is a :class:`~datamask.pipeline.config.ScoreConfig`; returns the manifest.
run_score = ScoreStage().run
