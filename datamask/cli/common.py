"""What every command module shares: config flags from a config dataclass, the config
back from parsed flags, the report after a run."""

from __future__ import annotations

import argparse
import sys
from dataclasses import MISSING, fields

from ..pipeline.config import SelectConfig, parse_value, with_preset
from ..stages.base import INPUT_HELP

__all__ = [
    "add_stage_arguments",
    "add_config_flags",
    "config_from_args",
    "write_report_after",
    "report_first",
    "report_line",
    "INPUT_HELP",
    "STOPPED_RUN",
]

_POSITIONAL = ("input", "output")


STOPPED_RUN = (
    "If the run stops (bad input, a killed job), the splits it finished stay in OUTPUT/data and no "
    "manifest.json is written; fix the cause and rerun the same command to compute only the missing "
    "splits. `datamask status OUTPUT` lists them."
)


def add_stage_arguments(p: argparse.ArgumentParser, cls, output_help: str, input_help: str = INPUT_HELP):
    """``INPUT OUTPUT`` and one flag per field of the stage's config class ``cls``; the help
    ends with what a stopped run leaves."""
    p.epilog = STOPPED_RUN
    p.add_argument("input", help=input_help)
    p.add_argument("output", help=output_help)
    add_config_flags(p, cls)


def with_default(text: str, default) -> str:
    """``text (default: DEFAULT)``, unless ``text`` already says its default (``(default:
    cores)``, ``(null: ...)``): each flag's help states its default once."""
    said = "default" in text.lower() or "(null:" in text.lower()
    return text if said else f"{text} (default: {default})"


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
        help = with_default(f.metadata.get("help", ""), default)
        if str(f.type).startswith("bool"):
            groups[g].add_argument(flag, dest=f.name, action="store_true", default=None, help=help)
        elif str(f.type).startswith("list"):
            groups[g].add_argument(
                flag,
                dest=f.name,
                action="append",
                default=None,
                metavar=f.name.upper(),
                help=f"{f.metadata.get('help', '')} (repeatable)",
            )
        else:
            groups[g].add_argument(
                flag, dest=f.name, default=None, metavar=f.name.upper(), choices=f.metadata.get("choices"), help=help
            )


def config_from_args(args, cls=SelectConfig):
    """The validated config of class ``cls`` from parsed flags (unset flags keep defaults)."""
    values = {}
    by_name = {f.name: f for f in fields(cls)}
    for name, f in by_name.items():
        v = getattr(args, name, None)
        if v is not None:
            values[name] = v if isinstance(v, (bool, list)) else parse_value(f, v, source=f"--{name.replace('_', '-')}")
    if "preset" in by_name and hasattr(cls, "with_preset_merged"):  # a recipe preset (not proxy-lm's model preset)
        return cls(**with_preset(values)).with_preset_merged().validated()
    return cls(**values).validated()


def _build(output, manifest=None):
    """``(page, None)``, or ``(None, why)`` when the report could not be written."""
    from ..analysis.report import build_report

    try:
        return build_report(output, manifest=manifest), None
    except Exception as e:  # the selection is complete and valid without its report
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(
            f"datamask: warning: the report could not be written ({msg}); retry with: datamask report {output}",
            file=sys.stderr,
        )
        return None, msg


def write_report_after(output, quiet=False):
    """The HTML report of a finished output (``datamask demo``'s page of its selection); a
    failure here does not fail the run. Returns the page's path, or None when it could not be written."""
    page, _ = _build(output)
    if page is not None and not quiet:
        print(f"datamask: report {page}")
    return page


def report_first(output):
    """The ``finish`` hook of a command-line run (:func:`~datamask.pipeline.runner.run_stage`):
    the HTML report, built from the manifest about to be written, which is written after it, so
    an output with a manifest holds the report it lists. The manifest comes back with ``report``
    (the page; None when it could not be written, ``report_error`` saying why: the output is
    complete and valid without it, and ``datamask report OUTPUT`` retries)."""

    def finish(manifest: dict) -> dict:
        page, error = _build(output, manifest)
        manifest["report"] = None if page is None else str(page)
        manifest.pop("report_error", None)
        if error is not None:
            manifest["report_error"] = error
        return manifest

    return finish


def report_line(manifest: dict, quiet=False) -> None:
    """``datamask: report PAGE`` after a run's summary, when it wrote one."""
    if not quiet and manifest.get("report"):
        print(f"datamask: report {manifest['report']}")
