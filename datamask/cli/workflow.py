"""``datamask run`` (a workflow file) and ``datamask status``."""

from __future__ import annotations

from ..errors import ConfigError
from ..stages.registry import STAGES
from .common import GLOBAL, report_first, report_line

__all__ = ["add_parsers", "COMMANDS"]


def add_workflow_overrides(p):
    """``--set KEY=VALUE`` (repeatable) into ``overrides``: a key of the workflow, ``run``'s and ``demo``'s."""
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key of the workflow (repeatable)",
    )


def add_parsers(sub):
    r = sub.add_parser("run", help="run a workflow YAML file (keys are the flags' names)")
    r.add_argument("workflow")
    add_workflow_overrides(r)
    r.add_argument(
        "--no-report",
        dest="no_report",
        action="store_true",
        help="do not write the HTML report at the end of the workflow (its last stage that writes one)",
    )

    st = sub.add_parser(
        "status",
        help="say whether a stage's OUTPUT is complete, and which splits are done and missing",
        description="A run that stops on bad input (or is killed) keeps the splits it finished and writes no "
        "manifest.json; rerunning the same command resumes from them. This lists them. Exit 0 when the output "
        "is complete, 1 when it is not.",
    )
    st.add_argument("output", help=f"output directory (or URL) of datamask {', '.join(STAGES)}")


def run_workflow_command(args) -> int:
    from ..stages.workflow import load_workflow, run_workflow, stage_list

    raw = load_workflow(args.workflow, args.overrides)
    for name in GLOBAL:  # `datamask --scheduler ... run FILE`: over the workflow's keys
        if getattr(args, name, None) is not None:
            raw[name] = getattr(args, name)
    if "stages" not in raw:  # a select workflow: its keys are select's
        select = STAGES["select"]
        cfg = select.config.from_dict(raw, source=args.workflow)
        if not cfg.input or not cfg.output:
            raise ConfigError("the workflow needs input and output keys (or --set input=... --set output=...)")
        manifest = select.run(cfg, finish=None if args.no_report else report_first(cfg.output))
        if not cfg.quiet:
            print(select.summary(manifest, cfg.output))
        report_line(manifest, cfg.quiet)
        return 0

    # a chain such as embed -> score -> dedup -> select (workflows/raw_jsonl.yaml): the last
    # stage that writes a report after its command (Stage.report) writes it here too; the
    # stages before it leave theirs to their own commands
    with_report = [n for n in stage_list(raw, args.workflow) if STAGES[n].report]

    def finish(stage, cfg):  # the report, then the stage's manifest.json (written last)
        if with_report and stage == with_report[-1] and not args.no_report:
            return report_first(cfg.output)
        return None

    def summary(stage, cfg, manifest):
        if not cfg.quiet:
            print(STAGES[stage].summary(manifest, cfg.output))
        report_line(manifest, cfg.quiet)

    run_workflow(raw, source=args.workflow, on_stage=summary, finish=finish)
    return 0


def run_status_command(args) -> int:
    from ..runtime.storage import parse_options, resolve, set_options
    from ..stages.status import output_status

    set_options(parse_options(args.storage_options))
    st = output_status(resolve(args.output))
    print("\n".join(st.lines()))
    return 0 if st.complete else 1


COMMANDS = {"run": run_workflow_command, "status": run_status_command}
#: the global flags each command reads (the others are refused); run: all, over the workflow's keys
USES_GLOBAL = {"status": ("storage_options",)}
