"""The corpus-analysis stages, ``cluster`` and ``compare``, and ``datamask report``.

``ClusterConfig`` and ``CompareConfig`` extend the pipeline's configs, so ``--split-size``,
``--scheduler`` or ``--ratio`` mean the same in every command and the YAML keys of a
workflow are the flag names. Both are stages (:data:`datamask.stages.registry.STAGES` names
them) of the whole-corpus kind (:class:`~datamask.stages.base.CorpusStage`): k-means
and the comparison read every split at once, so each writes a ``compute`` instead of a
per-split ``process``, and the output contract (config refused or ``--overwrite``,
``manifest.json`` last, ``datamask status``) is the one of every stage. In a workflow (``stages: [cluster, compare]``, see
``workflows/baselines.yaml``) each reads the previous stage's ``OUTPUT/<stage>/data``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ...errors import ConfigError, DataError
from ...pipeline.config import METHODS, SelectConfig, StageConfig
from ...pipeline.config import option as _f
from ..base import CorpusStage, reused

__all__ = [
    "ClusterConfig",
    "CompareConfig",
    "ClusterStage",
    "CompareStage",
    "run_report",
]


@dataclass
class ClusterConfig(StageConfig):
    FLAGS: ClassVar[tuple] = (
        "n_clusters",
        "sample_fraction",
        "kmeans_backend",
        "by_cluster",
        "seed",
        "split_size",
        "overwrite",
    )
    embedding_column: str = _f("embedding", "name of the embedding column (list of floats)", group="data")
    quality_column: str = _f("quality", "quality column for the statistics (skipped when absent)", group="data")
    tokens_column: str = _f("n_tokens", "token-count column for the statistics (skipped when absent)", group="data")
    n_clusters: int | None = _f(
        None,
        "number of k-means clusters (<= rows in the sample; default sqrt(rows/10) between 2 and 50, "
        "few enough to name on the report's map)",
        group="clustering",
    )
    sample_fraction: float = _f(
        0.1, "fraction of rows k-means is fitted on (then every row is labelled)", group="clustering"
    )
    kmeans_backend: str = _f(
        "auto",
        "k-means implementation (auto: cuML with RAPIDS, lloyd on the GPU with "
        "CUDA alone, else faiss or scikit-learn; rows labelled on the GPU with --device gpu)",
        choices=("auto", "sklearn", "faiss", "cuml", "lloyd"),
        group="clustering",
    )
    by_cluster: bool = _f(False, "also write OUTPUT/by_cluster/: one file (one partition) per cluster", group="output")
    seed: int = _f(0, "seed of the sample and of k-means", group="clustering")

    def validated(self):
        super().validated()
        if self.n_clusters is not None and int(self.n_clusters) < 1:
            raise ConfigError(f"n_clusters must be >= 1, got {self.n_clusters}")
        if not 0.0 < float(self.sample_fraction) <= 1.0:
            raise ConfigError(f"sample_fraction must be in (0, 1], got {self.sample_fraction}")
        return self


@dataclass
class CompareConfig(SelectConfig):
    # select's own flags (one method: --methods instead; every row is kept: no --keep-all), then compare's
    FLAGS: ClassVar[tuple] = (
        "methods",
        *(f for f in SelectConfig.FLAGS if f not in ("method", "keep_all", "overwrite")),
        "dedup",
        "proxy_lm",
        "overwrite",
        "no_report",
    )
    n_clusters: int | None = _f(
        None,
        "k-means clusters when the domain column is absent, shared by every split and the report's map "
        "(default sqrt(rows/10) between 2 and 50)",
        group="baselines",
    )
    methods: str = _f(
        "datamask,topk,random,semdedup,quadmix,greedy",
        f"comma-separated methods ({', '.join(METHODS)})",
        group="compare",
    )
    sample_fraction: float = _f(
        0.1,
        "fraction of rows the k-means is fitted on (when the input has no "
        "domain column; n_clusters clusters shared by all splits)",
        group="compare",
    )
    sample_rows: int = _f(
        2000,
        "rows sampled for the report's corpus map and 2-D projection (at most 100,000; UMAP from 5,000, else PCA)",
        group="compare",
        result=False,
    )
    no_report: bool = _f(False, "do not write the HTML report", group="compare", result=False)
    dedup: str | None = _f(
        None,
        "run every method on the deduplicated corpus: datamask dedup with these kinds "
        "(e.g. exact,fuzzy; its defaults) first, into OUTPUT/dedup",
        group="compare",
    )
    text_column: str = _f("text", "name of the text column (for --dedup exact/fuzzy and --proxy-lm)", group="data")
    proxy_lm: str | None = _f(
        None,
        "after the selections, train a proxy LM of this preset (tiny, small) on "
        "every method's selection and judge it on OUTPUT/holdout (needs --holdout)",
        group="compare",
    )

    @property
    def method_list(self):
        return [m.strip() for m in str(self.methods).split(",") if m.strip()]

    def validated(self):
        super().validated()
        from ...analysis.compare import ALL_METHODS

        bad = [m for m in self.method_list if m not in ALL_METHODS]
        if bad or not self.method_list:
            raise ConfigError(
                f"methods must be a comma-separated list of {', '.join(ALL_METHODS)}; got {self.methods!r}"
            )
        if self.dedup:
            self.dedup = self._dedup_config(None).validated().kind
        if self.proxy_lm is not None:
            from ...analysis.proxy_lm.config import PRESETS

            if self.proxy_lm not in PRESETS:
                raise ConfigError(f"proxy_lm must be one of {', '.join(PRESETS)}; got {self.proxy_lm!r}")
            if not self.holdout:
                raise ConfigError(
                    "--proxy-lm needs --holdout FRACTION (e.g. 0.05): the proxy models are judged on "
                    "rows that no method saw"
                )
            from ...runtime.storage import is_url

            if self.output and is_url(self.output):
                raise ConfigError(
                    f"--proxy-lm trains on local files: give compare a local OUTPUT, not {self.output} "
                    "(or run datamask proxy-lm on a local copy; docs/storage.md)"
                )
        return self

    def _dedup_config(self, output):
        """The ``datamask dedup`` run of ``--dedup``: this config's input, columns and cluster."""
        from dataclasses import fields as _fields

        from ...pipeline.config import DedupConfig

        shared = {f.name for f in _fields(DedupConfig)} & {f.name for f in _fields(self)}
        kw = {k: getattr(self, k) for k in shared if k not in ("eps", "keep_all", "seed")}
        return DedupConfig(**dict(kw, kind=self.dedup, output=output))


def _totals(rows, splits):
    return {"rows_in": rows, "rows_out": rows, "splits": splits}


def run_report(directory, out=None, storage_options=None) -> Path:
    """``datamask report OUTPUT_DIR``: the HTML page and PNGs under ``OUTPUT_DIR/report``
    (a local path or a URL, read and written through fsspec with ``storage_options``)."""
    from ...analysis.report import build_report
    from ...runtime.storage import parse_options, set_options

    set_options(parse_options(storage_options))
    try:
        return build_report(directory, out)
    except FileNotFoundError as e:
        raise DataError(str(e)) from None


# ---------------------------------------------------------------------- the stages
class ClusterStage(CorpusStage):
    name = "cluster"
    config = ClusterConfig
    help = "k-means on the embeddings: a cluster column, centroids and per-cluster statistics (INPUT -> OUTPUT)"
    output_help = (
        "output directory (data/, centroids.parquet, cluster_stats.parquet, cluster.json, by_cluster/, manifest.json)"
    )
    writes = ("data", "by_cluster", "centroids.parquet", "cluster_stats.parquet", "cluster.json")

    def compute(self, cfg, out, client, level) -> dict:
        import warnings

        from .cluster_run import run_cluster

        with warnings.catch_warnings():  # the large-cluster ones are in summary["warnings"], printed by summary()
            warnings.filterwarnings("ignore", message=r"cluster \d+ has .* more than the split size")
            summary = run_cluster(
                cfg.input,
                out,
                None if cfg.n_clusters is None else int(cfg.n_clusters),
                sample_fraction=float(cfg.sample_fraction),
                seed=cfg.seed,
                split_size=int(cfg.split_size),
                by_cluster=cfg.by_cluster,
                backend=cfg.kmeans_backend,
                device=level.device,
                embedding_column=cfg.embedding_column,
                quality_column=cfg.quality_column,
                tokens_column=cfg.tokens_column,
                client=client,
                level=level,
            )
        return dict(summary, totals=_totals(summary["rows"], summary["splits"]))

    def summary(self, s, out) -> str:
        lines = [f"datamask: warning: {w}" for w in s.get("warnings", ())]
        lines.append(
            f"datamask: {s['rows']:,} rows in {s['n_clusters']} clusters (fitted on {s['sample_rows']:,} "
            f"sampled rows, largest cluster {s['largest_cluster']:,}) -> {out}{reused(s)}"
        )
        return "\n".join(lines)


class CompareStage(CorpusStage):
    name = "compare"
    config = CompareConfig
    help = (
        "run DATAMASK and the baselines on the same corpus and budget, score them alike, write a table, "
        "a Pareto plot and the HTML report"
    )
    output_help = "output directory (compare.csv, pareto.png, report/, manifest.json)"
    writes = (
        "compare.csv",
        "compare_splits.csv",
        "selections.parquet",
        "history.parquet",
        "sample.parquet",
        "examples.parquet",
        "why.json",  # compare_run.WHY_FILE
        "sample_embedding.npy",
        "corpus_stats.parquet",
        "cluster_stats.parquet",
        "compare.json",
        "pareto.png",
        "report",
        "holdout",
        "dedup",
        "proxy_lm",
    )
    keeps = ("dedup",)  # --dedup's own output resumes like the dedup stage

    def compute(self, cfg, out, client, level) -> dict:
        from ...runtime.files import write_json_atomic
        from .compare_run import run_compare

        dedup = None
        if cfg.dedup:  # every method then runs on the deduplicated corpus (resumable, like the stage)
            from .dedup import run_dedup

            dcfg = cfg._dedup_config(str(out / "dedup"))
            dedup = run_dedup(dcfg, client=client)
            cfg = cfg.replace(input=str(out / "dedup" / "data"))
        run_compare(cfg.input, out, methods=cfg.method_list, cfg=cfg, client=client, report=self._report_now(cfg))
        meta = json.loads((out / "compare.json").read_text())
        if dedup is not None:
            meta["dedup"] = {
                "output": str(out / "dedup"),
                "rows_in": dedup["totals"]["rows_in"],
                "rows_out": dedup["totals"]["rows_out"],
                "kinds": dedup["dedup"]["kinds"],
            }
            write_json_atomic(meta, out / "compare.json")
        from ...pipeline.exclude import EXCLUDED_COUNTS

        splits = meta.get("optimizer", [])  # per split and method, how the selection was made
        improved = sum(bool(s["optimizer"].get("pg_improved")) for s in splits)
        return {
            "methods": cfg.method_list,
            "splits": splits,
            "totals": dict(
                _totals(meta["rows"], meta["splits"]),
                pg_improved=improved,
                **({k: meta.get(k, 0) for k in EXCLUDED_COUNTS} if cfg.exclude else {}),
            ),
            "report": None if cfg.no_report else str(out / "report" / "index.html"),
        }

    @staticmethod
    def _report_now(cfg):  # with --proxy-lm the report waits for the proxy models (finish)
        return not cfg.no_report and not cfg.proxy_lm

    def finish(self, cfg, out, result) -> dict:
        if cfg.proxy_lm:  # after the Dask cluster is closed: torch takes the cores
            from ...analysis.proxy_lm.with_compare import add_proxy_lm
            from ...analysis.report import build_report

            add_proxy_lm(
                out, read_table(out), cfg.proxy_lm, seed=cfg.seed, text_column=cfg.text_column, quiet=cfg.quiet
            )
            if not cfg.no_report:
                build_report(out)
        return result

    def summary(self, res, out) -> str:
        from ...analysis.compare import format_table
        from ...pipeline.exclude import excluded_line

        excluded = excluded_line(res["totals"], res.get("config", {}).get("exclude"))
        return (
            format_table(read_table(out))
            + (f"\n{excluded}" if excluded else "")
            + f"\ndatamask: compared {', '.join(res['methods'])} on "
            f"{res['totals']['rows_in']:,} rows -> {out}"
            + (f"; report {res['report']}" if res["report"] else "")
            + reused(res)
        )


def read_table(out):
    """The comparison table of a compare output (``compare.csv``), indexed by method."""
    import io

    import pandas as pd

    from ...runtime.storage import location

    return pd.read_csv(io.StringIO((location(out) / "compare.csv").read_text()), index_col="method")
