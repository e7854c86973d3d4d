"""``datamask report`` (``cluster`` and ``compare`` are stages: :mod:`.stages`)."""

from __future__ import annotations

__all__ = ["add_parsers", "COMMANDS"]


def add_parsers(sub):
    r = sub.add_parser(
        "report", help="figures and a self-contained HTML page for a select, compare or dedup OUTPUT_DIR"
    )
    r.add_argument("directory", help="output directory of datamask select, compare or dedup")
    r.add_argument("--out", default=None, help="where to write the report (default: DIRECTORY/report)")


def _report(args) -> int:
    from ..stages.corpus.analysis import run_report

    page = run_report(args.directory, args.out, getattr(args, "storage_options", None))
    print(f"datamask: report {page}")
    return 0


COMMANDS = {"report": _report}
#: the global flags it reads: --storage-options, for an s3://, gs://, az:// DIRECTORY or --out
USES_GLOBAL = {"report": ("storage_options",)}
