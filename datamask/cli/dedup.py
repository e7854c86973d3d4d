"""``datamask dedup``."""
from __future__ import annotations

from ..pipeline.config import DedupConfig
from .common import add_stage_arguments, config_from_args, stage_summary, write_report_after

__all__ = ["add_parsers", "COMMANDS"]


def add_parsers(sub):
    d = sub.add_parser(
        "dedup", help="remove exact, fuzzy (MinHash-LSH) and semantic duplicates across the whole corpus",
        description="Find duplicate groups across every file and split of INPUT and keep one row per group: the "
        "highest quality one when the quality column exists, else the first by path and row. --kind exact: "
        "equal text after folding case and whitespace; fuzzy: MinHash signatures of word n-grams (--ngram, "
        "--num-perm) and LSH bands (--bands, or chosen from --threshold), candidates verified against "
        "--threshold on their estimated Jaccard, groups as connected components; semantic: SemDeDup within "
        "clusters (the cluster column, or k-means), cosine above 1 - eps. Null texts are kept, counted, never "
        "grouped. With --keep-all every row is written with a duplicate_of column (the kept row's id).")
    add_stage_arguments(d, DedupConfig, "output directory (data/, manifest.json, report/)",
                        input_help="directory, file or glob of Parquet / JSONL / JSONL.gz with id and text columns, "
                        "or the output directory of another datamask stage")
    d.add_argument("--no-report", dest="no_report", action="store_true",
                   help="do not write the HTML report (OUTPUT/report/: example groups side by side) at the end")


def _dedup(args) -> int:
    from ..pipeline.stages.dedup import run_dedup

    cfg = config_from_args(args, DedupConfig)
    manifest = run_dedup(cfg)
    if not cfg.quiet:
        print(stage_summary("dedup", manifest, cfg.output))
    if not args.no_report:
        write_report_after(cfg.output, cfg.quiet)
    return 0


COMMANDS = {"dedup": _dedup}
