"""What every command module shares: config flags from a config dataclass, the config
back from parsed flags, one-line summaries of a stage's manifest, the report after a run."""
from __future__ import annotations

import argparse
import sys
from dataclasses import MISSING, fields

from ..pipeline.config import SelectConfig, parse_value

__all__ = ["add_stage_arguments", "add_config_flags", "config_from_args", "stage_summary", "format_table", "write_report_after"]

_POSITIONAL = ("input", "output")


INPUT_HELP = ("directory, file or glob of Parquet / JSONL / JSONL.gz, or the output directory of another "
              "datamask stage (its data/ is read)")


STOPPED_RUN = ("If the run stops (bad input, a killed job), the splits it finished stay in OUTPUT/data and no "
               "manifest.json is written; fix the cause and rerun the same command to compute only the missing "
               "splits. `datamask status OUTPUT` lists them.")


def add_stage_arguments(p: argparse.ArgumentParser, cls, output_help: str, input_help: str = INPUT_HELP):
    """``INPUT OUTPUT`` and one flag per field of the stage's config class ``cls``; the help
    ends with what a stopped run leaves."""
    p.epilog = STOPPED_RUN
    p.add_argument("input", help=input_help)
    p.add_argument("output", help=output_help)
    add_config_flags(p, cls)


def add_config_flags(p: argparse.ArgumentParser, cls=SelectConfig, positional=_POSITIONAL):
    """One ``--flag`` per field of the config dataclass ``cls``, grouped as its metadata says
    (a ``list`` field: a repeatable flag)."""
    groups = {}
    for f in fields(cls):
        if f.name in positional:
            continue
        g = f.metadata.get("group", "selection")
        if g not in groups:
            groups[g] = p.add_argument_group(g)
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not MISSING else None
        help = f"{f.metadata.get('help', '')} (default: {default})"
        if str(f.type).startswith("bool"):
            groups[g].add_argument(flag, dest=f.name, action="store_true", default=None, help=help)
        elif str(f.type).startswith("list"):
            groups[g].add_argument(flag, dest=f.name, action="append", default=None, metavar=f.name.upper(),
                                   help=f"{f.metadata.get('help', '')} (repeatable)")
        else:
            groups[g].add_argument(flag, dest=f.name, default=None, metavar=f.name.upper(),
                                   choices=f.metadata.get("choices"), help=help)


def config_from_args(args, cls=SelectConfig):
    """The validated config of class ``cls`` from parsed flags (unset flags keep defaults)."""
    values = {}
    by_name = {f.name: f for f in fields(cls)}
    for name, f in by_name.items():
        v = getattr(args, name, None)
        if v is not None:
            values[name] = v if isinstance(v, (bool, list)) else parse_value(f, v, source=f"--{name.replace('_', '-')}")
    return cls(**values).validated()


def format_table(table) -> str:
    cols = [c for c in ("quality", "pairwise", "facility", "disf", "objective", "mean_tokens", "tokens", "seconds")
            if c in table.columns]
    return table[cols].to_string(float_format=lambda v: f"{v:.4g}")


def stage_summary(stage, manifest, out) -> str:
    """The line a command prints when ``stage`` finished into ``out``."""
    t = manifest["totals"]
    if stage == "select":
        tok = t.get("tokens")
        line = (f"datamask: selected {t['rows_out']:,} of {t['rows_in']:,} rows in {t['partitions']} partitions "
                f"({t['computed_this_run']} computed, {t['resumed']} resumed) -> {out}")
        if tok:
            line += (f"\ndatamask: kept {tok['tokens_out']:,} of {tok['corpus_tokens']:,} tokens (budget "
                     f"{tok['budget']:,}; counts from {tok['source'] or 'no split'})")
            if tok["covers_corpus"]:
                line += "\ndatamask: the token budget is at least the corpus's tokens: every row is kept"
        return line
    if stage == "cluster":
        return f"datamask: {t['rows_in']:,} rows in {manifest['k']} clusters -> {out}"
    if stage == "compare":
        return format_table(manifest["table"]) + f"\ndatamask: compared on {t['rows_in']:,} rows -> {out}"
    runs = f"in {t['partitions']} partitions ({t['computed_this_run']} computed, {t['resumed']} resumed) -> {out}"
    if stage == "embed":
        return f"datamask: embedded {t['rows_out']:,} of {t['rows_in']:,} rows ({t['skipped_texts']:,} empty texts skipped) {runs}"
    if stage == "dedup":
        kinds = ", ".join(f"{k} {v['removed']:,} in {v['groups']:,} groups"
                          for k, v in manifest["dedup"]["kinds"].items())
        return (f"datamask: deduplicated {t['rows_in']:,} rows to {t['rows_out']:,} (removed: {kinds or 'none'}; "
                f"{t['null_texts']:,} null texts kept) {runs}")
    if stage == "score":
        return f"datamask: scored {t['rows_out']:,} rows ({t['unusable_texts']:,} empty texts scored 0) {runs}"
    return f"datamask: {stage}: {t['rows_out']:,} of {t['rows_in']:,} rows {runs}"


def write_report_after(output, quiet=False):
    """The HTML report of a finished run; a failure here does not fail the run.

    Returns the page's path, or None when it could not be written."""
    from ..analysis.report import build_report
    from ..pipeline.storage import is_url

    if is_url(output):
        if not quiet:
            print(f"datamask: no HTML report for {output} (reports are written to local outputs only; "
                  "run `datamask report` on a local copy)")
        return None
    try:
        page = build_report(output)
    except Exception as e:  # the selection is complete and valid without its report
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"datamask: warning: the report could not be written ({msg}); "
              f"retry with: datamask report {output}", file=sys.stderr)
        return None
    if not quiet:
        print(f"datamask: report {page}")
    return page
