"""The ``datamask`` command, one small module per command group:

* :mod:`.stages`: one command per stage of :data:`datamask.stages.registry.STAGES`
  (``select``, ``embed``, ``score``, ``dedup``, ``cluster``, ``compare``);
* :mod:`.workflow`: ``run`` (a workflow file), ``status``;
* :mod:`.features`: ``train-quality``;
* :mod:`.analysis`: ``report``;
* :mod:`.proxy_lm`: ``proxy-lm``;
* :mod:`.demo`: ``demo``.

Every flag of a stage is a field of its config dataclass (``--split-size`` fills
``split_size``, the YAML key of the same name); the fields without a flag of their own are
``--set KEY=VALUE``. The Dask and storage flags (:data:`.common.GLOBAL`) are ``datamask``'s own,
listed once by ``datamask --help`` and given before or after a command's name: a pre-parser
(``parse_known_args``) takes them from the words after it. Expected failures print one line
``datamask: error: ...`` and exit 2 (bad data, config or output) or 3 (no Dask scheduler or worker); anything
else exits 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import DatamaskError

__all__ = ["main", "build_parser"]

# command modules, in the order their commands are listed by --help
GROUPS = ("stages", "workflow", "features", "analysis", "proxy_lm", "demo")


class _Parser(argparse.ArgumentParser):
    """A usage error is one line ``datamask: error: ...`` with a ``--help`` hint, not the usage block.
    A flag is its whole name: no prefix is read as another flag (``--k`` is not ``--kmeans-backend``)."""

    def __init__(self, *args, **kw):
        kw.setdefault("allow_abbrev", False)
        super().__init__(*args, **kw)

    def error(self, message):
        self.exit(2, f"datamask: error: {message} (see `{self.prog} --help`)\n")


def _close_flags(parser, extra) -> str:
    import difflib

    from ..estimator.params import SOLVER_PARAMS

    hints = []
    for a in extra:
        name = a[2:].split("=", 1)[0].replace("-", "_")
        if a.startswith("--") and name in SOLVER_PARAMS and "--solver-params" in parser._option_string_actions:
            return f"; {name} is a key of --solver-params: --solver-params '{{\"{name}\": VALUE}}'"
        if a.startswith("--") and "--set" in parser._option_string_actions and name in _set_keys(parser):
            return f"; {name} has no flag of its own here: --set {name}=VALUE"
        if a.startswith("--"):
            near = difflib.get_close_matches(a.split("=", 1)[0], list(parser._option_string_actions), n=1)
            if near:
                hints.append(near[0])
    return f"; did you mean {' or '.join(hints)}?" if hints else ""


def _set_keys(parser) -> set:
    """The keys ``--set`` names in ``parser``'s help."""
    act = parser._option_string_actions["--set"]
    return {k.strip() for k in (act.help or "").rsplit(":", 1)[-1].split(",")}


def _subparser(parser, command):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


def _groups():
    return [importlib.import_module(f"{__name__}.{g}") for g in GROUPS]


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    from .common import STOPPED_RUN, add_global_flags

    p = _Parser(
        prog="datamask",
        description="Select pre-training data that is both high-quality and diverse (DATAMASK), with Dask.",
        epilog=STOPPED_RUN,
    )
    p.add_argument("--version", action="version", version=f"datamask {__version__}")
    add_global_flags(p, group="Dask and storage (every command that runs a job; before or after its name)")
    sub = p.add_subparsers(dest="command", required=True)
    for g in _groups():
        g.add_parsers(sub)
    return p


def _command_index(parser, argv):
    """Where the command's name is in ``argv`` (None: not found; argparse says so)."""
    from .common import GLOBAL

    commands = set(next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)))
    takes_value = {"--" + g.replace("_", "-") for g in GLOBAL if g != "quiet"}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in commands:
            return i
        if not a.startswith("-"):
            return None
        i += 2 if a in takes_value else 1
    return None


def _parse(parser, argv):
    """The parsed command line, the :data:`.common.GLOBAL` flags found before or after the
    command's name set under their field names where the command takes them."""
    from .common import GLOBAL, global_parser

    i = _command_index(parser, argv)
    after = {}
    if i is not None:  # the global flags after the name (a command's own flag of that name stays its own)
        sub = _subparser(parser, argv[i])
        ns, rest = global_parser(skip=set(sub._option_string_actions)).parse_known_args(argv[i + 1 :])
        argv, after = [*argv[: i + 1], *rest], {k: v for k, v in vars(ns).items() if v is not None}
    args, extra = parser.parse_known_args(argv)
    if extra:
        sub = _subparser(parser, args.command)
        sub.error(f"unrecognized arguments: {' '.join(extra)}{_close_flags(sub, extra)}")
    uses = next(
        getattr(g, "USES_GLOBAL", {}).get(args.command, GLOBAL) for g in _groups() if args.command in g.COMMANDS
    )
    for name in GLOBAL:
        value = after.get(f"global_{name}", getattr(args, f"global_{name}", None))
        if value is not None and name not in uses:
            flag = "--" + name.replace("_", "-")
            if flag in _subparser(parser, args.command)._option_string_actions:
                parser.error(f"{args.command}'s own {flag} goes after its name (before it, {flag} is the Dask one)")
            takes = ", ".join("--" + u.replace("_", "-") for u in uses)
            parser.error(f"{args.command} takes no {flag}" + (f" (of these options, only {takes})" if takes else ""))
        if name in uses:
            setattr(args, name, value)
    return args


def _main(argv) -> int:
    parser = build_parser()
    try:
        args = _parse(parser, list(argv))
    except SystemExit as e:  # --help, --version, a usage error (already printed)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    for g in _groups():
        if args.command in g.COMMANDS:
            return g.COMMANDS[args.command](args)
    raise AssertionError(f"no handler for command {args.command!r}")


def _log_hint() -> str:
    """`` (details: FILE)`` when a cluster this process started logged worker failures."""
    client_mod = sys.modules.get("datamask.runtime.client")  # imported only if a cluster ran
    path = client_mod.worker_log() if client_mod is not None else None
    return f" (worker log: {path})" if path is not None else ""


def main(argv=None) -> int:
    from ..core.progress import quiet_library_bars  # (light: no import of its own)

    # stderr a file or a pipe: progress as lines, no library's carriage-return bar (workers inherit it)
    with quiet_library_bars():
        rc = _run(argv)
    _tidy_worker_log(rc)
    return rc


def _tidy_worker_log(rc: int) -> None:
    """Remove this process's worker log unless a failure left something in it to read."""
    client_mod = sys.modules.get("datamask.runtime.client")
    if client_mod is not None and (rc == 0 or client_mod.worker_log() is None):
        try:
            client_mod.WORKER_LOG.unlink(missing_ok=True)
        except OSError:
            pass


def _run(argv) -> int:
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except DatamaskError as e:
        print(f"datamask: error: {e}{_log_hint()}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("datamask: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except Exception as e:  # a bug or an infrastructure failure: still one line, and non-zero
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(
            f"datamask: error: {type(e).__name__}: {msg} (rerun the same command to resume){_log_hint()}",
            file=sys.stderr,
        )
        return 1
