"""``datamask cluster``, ``datamask compare`` and ``datamask report``."""
from __future__ import annotations

from ..analysis.stages import ClusterConfig, CompareConfig, run_cluster_stage, run_compare_stage, run_report
from .common import add_stage_arguments, config_from_args, format_table

__all__ = ["add_parsers", "COMMANDS"]


def add_parsers(sub):
    c = sub.add_parser("cluster", help="k-means on the embeddings: a cluster column, centroids and per-cluster "
                                       "statistics (INPUT -> OUTPUT)")
    add_stage_arguments(c, ClusterConfig, "output directory (data/, centroids.parquet, cluster_stats.parquet, "
                                          "cluster.json, by_cluster/)")
    m = sub.add_parser("compare", help="run DATAMASK and the baselines on the same corpus and budget, score them "
                                       "alike, write a table, a Pareto plot and the HTML report")
    add_stage_arguments(m, CompareConfig, "output directory (compare.csv, pareto.png, report/)")
    r = sub.add_parser("report", help="figures and a self-contained HTML page for a select, compare or dedup "
                                      "OUTPUT_DIR")
    r.add_argument("directory", help="output directory of datamask select, compare or dedup")
    r.add_argument("--out", default=None, help="where to write the report (default: DIRECTORY/report)")


def _report(args) -> int:
    page = run_report(args.directory, args.out)
    print(f"datamask: report {page}")
    return 0


def _cluster(args) -> int:
    cfg = config_from_args(args, ClusterConfig)
    s = run_cluster_stage(cfg)
    if not cfg.quiet:
        for w in s["warnings"]:
            print(f"datamask: warning: {w}")
        print(f"datamask: {s['rows']:,} rows in {s['k']} clusters (fitted on {s['sample_rows']:,} sampled rows, "
              f"largest cluster {s['largest_cluster']:,}) -> {cfg.output}")
    return 0


def _compare(args) -> int:
    cfg = config_from_args(args, CompareConfig)
    res = run_compare_stage(cfg)
    if not cfg.quiet:
        print(format_table(res["table"]))
        print(f"datamask: compared {', '.join(cfg.method_list)} on {res['totals']['rows_in']:,} rows -> {cfg.output}"
              + (f"; report {res['report']}" if res["report"] else ""))
    return 0


COMMANDS = {"cluster": _cluster, "compare": _compare, "report": _report}
