"""``datamask select``, ``datamask run`` (a workflow file) and ``datamask status``."""
from __future__ import annotations

from ..errors import ConfigError
from ..pipeline.config import SelectConfig
from .common import add_stage_arguments, config_from_args, stage_summary, write_report_after

__all__ = ["add_parsers", "COMMANDS"]


def add_parsers(sub):
    s = sub.add_parser("select", help="select rows of a corpus: INPUT (Parquet/JSONL) -> OUTPUT (Parquet)")
    add_stage_arguments(s, SelectConfig, "output directory (data/, manifest.json, report/)")
    s.add_argument("--no-report", dest="no_report", action="store_true",
                   help="do not write the HTML report (OUTPUT/report/) at the end")

    r = sub.add_parser("run", help="run a workflow YAML file (keys are the flags' names)")
    r.add_argument("workflow")
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of the workflow (repeatable)")
    r.add_argument("--quiet", action="store_true")
    r.add_argument("--no-report", dest="no_report", action="store_true",
                   help="do not write the HTML report at the end of a select workflow")

    st = sub.add_parser(
        "status", help="say whether a stage's OUTPUT is complete, and which splits are done and missing",
        description="A run that stops on bad input (or is killed) keeps the splits it finished and writes no "
        "manifest.json; rerunning the same command resumes from them. This lists them. Exit 0 when the output "
        "is complete, 1 when it is not.")
    st.add_argument("output", help="output directory (or URL) of datamask select, embed, score or dedup")
    st.add_argument("--storage-options", dest="storage_options", default=None, metavar="JSON",
                    help="fsspec options for an s3://, gs://, az:// OUTPUT (default: the backend's environment)")


def _select(cfg, no_report=False) -> int:
    from ..pipeline.stages.select import run_select

    if not cfg.input or not cfg.output:
        raise ConfigError("the workflow needs input and output keys (or --set input=... --set output=...)")
    manifest = run_select(cfg)
    if not cfg.quiet:
        print(stage_summary("select", manifest, cfg.output))
    if not no_report:
        write_report_after(cfg.output, cfg.quiet)
    return 0


def run_select_command(args) -> int:
    return _select(config_from_args(args), args.no_report)


def run_workflow_command(args) -> int:
    from ..pipeline.workflow import load_workflow

    raw = load_workflow(args.workflow, args.overrides)
    if args.quiet:
        raw["quiet"] = True
    if "stages" not in raw:
        return _select(SelectConfig.from_dict(raw, source=args.workflow), args.no_report)
    # a chain such as embed -> score -> dedup -> select (workflows/raw_jsonl.yaml)
    from ..analysis import stages as _analysis_stages  # noqa: F401  (registers cluster and compare)
    from ..pipeline.workflow import run_workflow

    def report(stage, cfg, manifest):
        if not cfg.quiet:
            print(stage_summary(stage, manifest, cfg.output))
        if stage == "select" and not args.no_report:  # the same report as `datamask select` writes
            write_report_after(cfg.output, cfg.quiet)

    run_workflow(raw, source=args.workflow, on_stage=report)
    return 0


def run_status_command(args) -> int:
    from ..pipeline.status import output_status
    from ..pipeline.storage import parse_options, resolve, set_options

    set_options(parse_options(args.storage_options))
    st = output_status(resolve(args.output))
    print("\n".join(st.lines()))
    return 0 if st.complete else 1


COMMANDS = {"select": run_select_command, "run": run_workflow_command, "status": run_status_command}
