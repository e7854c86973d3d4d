"""What every command module shares: config flags from a config dataclass, the config
back from parsed flags, the report after a run."""

from __future__ import annotations

import argparse
import sys
from dataclasses import MISSING, fields

from ..errors import ConfigError
from ..pipeline.config import SelectConfig, StageConfig, check_keys, parse_value, with_preset
from ..pipeline.flags import RUNTIME_FIELDS
from ..stages.base import INPUT_HELP

__all__ = [
    "GLOBAL",
    "GLOBAL_HINT",
    "add_global_flags",
    "global_parser",
    "given_values",
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

#: the Dask and storage settings every stage shares (StageConfig's fields, the same workflow keys):
#: flags of ``datamask`` itself, given before or after the command's name, listed once by ``datamask --help``
GLOBAL = RUNTIME_FIELDS
GLOBAL_HINT = (
    "Dask and storage options (--scheduler, --device, --quiet, --storage-options ...): `datamask --help`; "
    "give them before or after the command's name."
)


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


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_global_flags(p: argparse.ArgumentParser, skip=(), group=None):
    """The :data:`GLOBAL` flags on ``p`` (``datamask``'s own parser, or the pre-parser that finds
    them after a command's name), each read from its StageConfig field; ``dest`` ``global_NAME``
    (a command's flag of the same name, proxy-lm's ``--device``, keeps its own)."""
    by_name = {f.name: f for f in fields(StageConfig)}
    g = p if group is None else p.add_argument_group(group)
    for name in GLOBAL:
        if _flag(name) in skip:
            continue
        f = by_name[name]
        help = with_default(f.metadata.get("help", ""), f.default)
        if str(f.type).startswith("bool"):
            g.add_argument(_flag(name), dest=f"global_{name}", action="store_true", default=None, help=help)
        else:
            choices = f.metadata.get("choices")
            g.add_argument(
                _flag(name), dest=f"global_{name}", default=None, metavar=metavar(f), choices=choices, help=help
            )


def global_parser(skip=()) -> argparse.ArgumentParser:
    """A parser of the :data:`GLOBAL` flags alone (less ``skip``), for ``parse_known_args`` over
    the words after a command's name."""
    p = _OneLine(add_help=False, allow_abbrev=False, prog="datamask")
    add_global_flags(p, skip)
    return p


class _OneLine(argparse.ArgumentParser):
    def error(self, message):  # one line, as the command's own parser says it
        self.exit(2, f"datamask: error: {message} (see `datamask --help`)\n")


def with_default(text: str, default) -> str:
    """``text (default: DEFAULT)``, unless ``text`` already says its default (``(default:
    cores)``, ``(null: ...)``): each flag's help states its default once."""
    said = "default" in text.lower() or "(null:" in text.lower()
    return text if said or default is None or default is False else f"{text} (default: {default})"


def metavar(f) -> str:
    """A flag's value in its usage, short (``--split-size N``): the field's ``metavar``, else by type."""
    t = str(f.type)
    if f.metadata.get("metavar"):
        return f.metadata["metavar"]
    for prefix, word in (("int", "N"), ("float", "X"), ("tuple", "LO,HI"), ("dict", "JSON"), ("list", "PATH")):
        if t.startswith(prefix):
            return word
    return f.name.rsplit("_", 1)[-1].upper()


def add_config_flags(p: argparse.ArgumentParser, cls=SelectConfig, positional=_POSITIONAL, skip=GLOBAL):
    """One ``--flag`` per field of the config dataclass ``cls`` named in its ``FLAGS`` (all when
    None), grouped as its metadata says (a ``list`` field: a repeatable flag); every other field
    is a ``--set KEY=VALUE``, the same key as in a workflow. ``skip``: fields given elsewhere
    (the :data:`GLOBAL` flags, on ``datamask`` itself)."""
    shown = getattr(cls, "FLAGS", None)
    groups, rest = {}, []
    for f in fields(cls):
        if f.name in positional or f.name in skip:
            continue
        if shown is not None and f.name not in shown:
            rest.append(f.name)
            continue
        g = f.metadata.get("group", "selection")
        if g not in groups:
            groups[g] = p.add_argument_group(g)
        flag = _flag(f.name)
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
                metavar=metavar(f),
                help=f"{f.metadata.get('help', '')} (repeatable)",
            )
        else:
            groups[g].add_argument(
                flag, dest=f.name, default=None, metavar=metavar(f), choices=f.metadata.get("choices"), help=help
            )
    if rest:
        p.add_argument(
            "--set",
            dest="settings",
            action="append",
            default=None,
            metavar="KEY=VALUE",
            help="any other setting, under its workflow key (repeatable; VALUE read as YAML; "
            "solver_params.KEY=VALUE sets one key of --solver-params): " + ", ".join(rest),
        )


def given_values(args, cls=SelectConfig) -> dict:
    """The settings a command line gave, parsed: its flags, then ``--set KEY=VALUE`` (a key given
    both ways is refused)."""
    from ..stages.workflow import apply_overrides

    by_name = {f.name: f for f in fields(cls)}
    values = {}
    for name, f in by_name.items():
        v = getattr(args, name, None)
        if v is not None:
            values[name] = v if isinstance(v, (bool, list)) else parse_value(f, v, source=_flag(name))
    settings = apply_overrides({}, getattr(args, "settings", None) or [])  # (solver_params.KEY: one key)
    check_keys(cls, settings, "--set")
    for name, v in settings.items():
        v = parse_value(by_name[name], v, source=f"--set {name}")
        if name == "solver_params" and isinstance(values.get(name), dict):  # over --solver-params, key by key
            v = {**values[name], **v}
        elif name in values:
            raise ConfigError(f"{name} given twice: as {_flag(name)} and as --set {name}=...; give it once")
        values[name] = v
    return values


def config_from_args(args, cls=SelectConfig):
    """The validated config of class ``cls`` from parsed flags (unset flags keep defaults)."""
    values = given_values(args, cls)
    if any(f.name == "preset" for f in fields(cls)) and hasattr(cls, "with_preset_merged"):  # a recipe preset
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
