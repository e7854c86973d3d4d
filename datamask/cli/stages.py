"""One command per stage of :data:`datamask.stages.registry.STAGES`: ``datamask NAME INPUT
OUTPUT`` with one flag per field of the stage's config class; after the run it prints the
stage's summary line (and writes the HTML report for the stages that have one)."""

from __future__ import annotations

from ..stages.registry import STAGES
from .common import GLOBAL_HINT, add_stage_arguments, config_from_args, report_first, report_line

__all__ = ["add_parsers", "COMMANDS", "run_stage_command"]


def add_parsers(sub):
    for name in STAGES:
        st = STAGES.declared(name)  # (the stage's module is imported when it runs)
        p = sub.add_parser(
            name, help=st.help, description=st.description, usage=f"datamask {name} INPUT OUTPUT [options]"
        )
        add_stage_arguments(p, st.config, st.output_help, input_help=st.input_help)
        p.epilog = (stopped_run(st) or p.epilog) + " " + GLOBAL_HINT
        if st.report:
            p.add_argument(
                "--no-report",
                dest="no_report",
                action="store_true",
                help="do not write the HTML report (OUTPUT/report/) at the end",
            )


def stopped_run(st):
    """What a stopped run of ``st`` leaves, for its help's last lines: the stage's own words,
    or for a whole-corpus stage what it keeps (None: a split stage's finished splits)."""
    if st.stopped_run or not st.whole_corpus:
        return st.stopped_run
    kept = getattr(st, "keeps", ())
    again = (
        f"what it keeps ({', '.join(f'OUTPUT/{k}/' for k in kept)}) is reused, the rest computed again"
        if kept
        else "it is computed again"
    )
    return (
        "If the run stops (bad input, a killed job), no manifest.json is written; fix the cause and rerun "
        f"the same command: {again} (another config is refused unless --overwrite). "
        "`datamask status OUTPUT` says whether it finished."
    )


def run_stage_command(args) -> int:
    st = STAGES[args.command]
    cfg = config_from_args(args, st.config)
    if st.report and not args.no_report:  # the report, then manifest.json (written last)
        manifest = st.run(cfg, finish=report_first(cfg.output))
    else:
        manifest = st.run(cfg)
    if not cfg.quiet:
        print(st.summary(manifest, cfg.output))
    report_line(manifest, cfg.quiet)
    return 0


COMMANDS = dict.fromkeys(STAGES, run_stage_command)
