"""Configs and runners of the corpus-analysis commands: ``cluster``, ``compare``, ``report``.

``ClusterConfig`` and ``CompareConfig`` extend the pipeline's configs, so ``--split-size``,
``--scheduler`` or ``--ratio`` mean the same in every command and the YAML keys of a
workflow are the flag names. :func:`register_stages` adds ``cluster`` and ``compare`` to the
chaining workflow's stages (``stages: [cluster, compare]``, see ``workflows/baselines.yaml``):
each stage reads the previous stage's ``OUTPUT/<stage>/data`` and writes ``OUTPUT/<stage>``.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from .config import SelectConfig, StageConfig, _f
from .errors import ConfigError, DataError

__all__ = ["ClusterConfig", "CompareConfig", "run_cluster_stage", "run_compare_stage", "run_report",
           "register_stages"]


@dataclass
class ClusterConfig(StageConfig):
    embedding_column: str = _f("embedding", "name of the embedding column (list of floats)", group="data")
    quality_column: str = _f("quality", "quality column for the statistics (skipped when absent)", group="data")
    tokens_column: str = _f("n_tokens", "token-count column for the statistics (skipped when absent)", group="data")
    k: int = _f(100, "number of k-means clusters (<= rows in the sample)", group="clustering")
    sample_fraction: float = _f(0.1, "fraction of rows k-means is fitted on (then every row is labelled)",
                                group="clustering")
    kmeans_backend: str = _f("auto", "k-means implementation (auto: cuML on GPU, scikit-learn on CPU)",
                             choices=("auto", "sklearn", "faiss", "cuml"), group="clustering")
    by_cluster: bool = _f(False, "also write OUTPUT/by_cluster/: one file (one partition) per cluster",
                          group="output")
    seed: int = _f(0, "seed of the sample and of k-means", group="clustering")

    def validated(self):
        super().validated()
        if int(self.k) < 1:
            raise ConfigError(f"k must be >= 1, got {self.k}")
        if not 0.0 < float(self.sample_fraction) <= 1.0:
            raise ConfigError(f"sample_fraction must be in (0, 1], got {self.sample_fraction}")
        return self


@dataclass
class CompareConfig(SelectConfig):
    methods: str = _f("datamask,topk,random,semdedup,quadmix,greedy",
                      "comma-separated methods (datamask, greedy, relaxed, topk, random, semdedup, quadmix)",
                      group="compare")
    sample_fraction: float = _f(0.1, "fraction of rows the k-means is fitted on (when the input has no "
                                      "domain column; n_clusters clusters shared by all splits)", group="compare")
    sample_rows: int = _f(2000, "rows kept for the 2-D projection plot", group="compare", result=False)
    no_report: bool = _f(False, "do not write the HTML report", group="compare", result=False)

    @property
    def method_list(self):
        return [m.strip() for m in str(self.methods).split(",") if m.strip()]

    def validated(self):
        super().validated()
        from .compare import ALL_METHODS

        bad = [m for m in self.method_list if m not in ALL_METHODS]
        if bad or not self.method_list:
            raise ConfigError(f"methods must be a comma-separated list of {', '.join(ALL_METHODS)}; got {self.methods!r}")
        return self


def _client(cfg, client):
    if client is not None:
        return client, False
    from .backend import resolve_device
    from .client import get_client

    try:
        device = resolve_device(cfg.device)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return get_client(cfg, device), True


def _prepare_output(path, marker, overwrite):
    out = Path(path)
    if out.exists() and any(out.iterdir()):
        if not (out / marker).exists():
            raise ConfigError(f"output directory {out} is not empty and was not written by this command "
                              f"(no {marker}); choose a new or empty OUTPUT")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _totals(rows, partitions):
    return {"rows_in": rows, "rows_out": rows, "partitions": partitions, "computed_this_run": partitions, "resumed": 0}


def run_cluster_stage(cfg: ClusterConfig, client=None) -> dict:
    """``datamask cluster INPUT OUTPUT --k K``; returns the summary (with ``totals``)."""
    from .backend import resolve_device
    from .client import close_client
    from .clustering import run_cluster

    if not cfg.input or not cfg.output:
        raise ConfigError("both input and output are required (datamask cluster INPUT OUTPUT --k K)")
    out = _prepare_output(cfg.output, "cluster.json", cfg.overwrite)
    for old in ("data", "by_cluster"):  # a rerun replaces the previous labels
        if (out / old).exists():
            shutil.rmtree(out / old)
    client, own = _client(cfg, client)
    try:
        summary = run_cluster(cfg.input, out, int(cfg.k), sample_fraction=float(cfg.sample_fraction), seed=cfg.seed,
                              split_size=int(cfg.split_size), by_cluster=cfg.by_cluster, backend=cfg.kmeans_backend,
                              device=resolve_device(cfg.device), embedding_column=cfg.embedding_column,
                              quality_column=cfg.quality_column, tokens_column=cfg.tokens_column, client=client)
    except ValueError as e:
        raise DataError(str(e)) from None
    finally:
        if own:
            close_client(client)
    summary["totals"] = _totals(summary["rows"], summary["partitions"])
    return summary


def run_compare_stage(cfg: CompareConfig, client=None) -> dict:
    """``datamask compare INPUT OUTPUT --methods ...``; returns a summary with the table."""
    import json

    from .client import close_client
    from .compare import run_compare

    if not cfg.input or not cfg.output:
        raise ConfigError("both input and output are required (datamask compare INPUT OUTPUT)")
    _prepare_output(cfg.output, "compare.json", cfg.overwrite)
    qm = cfg.quadmix_params
    client, own = _client(cfg, client)
    try:
        table = run_compare(cfg.input, cfg.output, methods=cfg.method_list, cfg=cfg, k=cfg.n_clusters,
                            sample_fraction=cfg.sample_fraction, quadmix_params=qm, semdedup_eps=cfg.eps,
                            sample_rows=cfg.sample_rows, tokens_column=cfg.tokens_column,
                            cluster_column=cfg.domain_column, client=client, report=not cfg.no_report)
    except ValueError as e:
        raise DataError(str(e)) from None
    finally:
        if own:
            close_client(client)
    meta = json.loads((Path(cfg.output) / "compare.json").read_text())
    return {"table": table, "totals": _totals(meta["rows"], meta["partitions"]),
            "report": None if cfg.no_report else str(Path(cfg.output) / "report" / "index.html")}


def run_report(directory, out=None) -> Path:
    """``datamask report OUTPUT_DIR``: the HTML page and PNGs under ``OUTPUT_DIR/report``."""
    from .report import build_report

    try:
        return build_report(directory, out)
    except FileNotFoundError as e:
        raise DataError(str(e)) from None


def format_table(table) -> str:
    cols = [c for c in ("quality", "pairwise", "facility", "disf", "objective", "mean_tokens", "seconds")
            if c in table.columns]
    return table[cols].to_string(float_format=lambda v: f"{v:.4g}")


def register_stages():
    """Make ``cluster`` and ``compare`` stages of chaining workflows (``stages: [...]``)."""
    from . import stages
    from .config import STAGE_CONFIGS

    STAGE_CONFIGS.setdefault("cluster", ClusterConfig)
    STAGE_CONFIGS.setdefault("compare", CompareConfig)
    stages.RUNNERS.setdefault("cluster", run_cluster_stage)
    stages.RUNNERS.setdefault("compare", run_compare_stage)


# ---------------------------------------------------------------------- command line
def add_subparsers(sub):
    """Add ``cluster``, ``compare`` and ``report`` to the ``datamask`` parser's subcommands."""
    from .cli import _add_config_flags

    c = sub.add_parser("cluster", help="k-means on the embeddings: a cluster column, centroids and per-cluster "
                                       "statistics (INPUT -> OUTPUT)")
    c.add_argument("input", help="directory, file or glob of Parquet / JSONL / JSONL.gz")
    c.add_argument("output", help="output directory (data/, centroids.parquet, cluster_stats.parquet, "
                                  "cluster.json, by_cluster/)")
    _add_config_flags(c, ClusterConfig)
    m = sub.add_parser("compare", help="run DATAMASK and the baselines on the same corpus and budget, score them "
                                       "alike, write a table, a Pareto plot and the HTML report")
    m.add_argument("input", help="directory, file or glob of Parquet / JSONL / JSONL.gz")
    m.add_argument("output", help="output directory (compare.csv, pareto.png, report/)")
    _add_config_flags(m, CompareConfig)
    r = sub.add_parser("report", help="figures and a self-contained HTML page for a select or compare OUTPUT_DIR")
    r.add_argument("directory", help="output directory of datamask select or datamask compare")
    r.add_argument("--out", default=None, help="where to write the report (default: DIRECTORY/report)")
    return sub


def run_command(args) -> int:
    """Run a parsed ``cluster`` / ``compare`` / ``report`` command; returns the exit code."""
    from .cli import config_from_args

    if args.command == "report":
        page = run_report(args.directory, args.out)
        print(f"datamask: report {page}")
        return 0
    if args.command == "cluster":
        cfg = config_from_args(args, ClusterConfig)
        s = run_cluster_stage(cfg)
        if not cfg.quiet:
            for w in s["warnings"]:
                print(f"datamask: warning: {w}")
            print(f"datamask: {s['rows']:,} rows in {s['k']} clusters (fitted on {s['sample_rows']:,} sampled rows, "
                  f"largest cluster {s['largest_cluster']:,}) -> {cfg.output}")
        return 0
    cfg = config_from_args(args, CompareConfig)
    res = run_compare_stage(cfg)
    if not cfg.quiet:
        print(format_table(res["table"]))
        print(f"datamask: compared {', '.join(cfg.method_list)} on {res['totals']['rows_in']:,} rows -> {cfg.output}"
              + (f"; report {res['report']}" if res["report"] else ""))
    return 0
