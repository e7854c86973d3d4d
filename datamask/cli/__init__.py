"""The ``datamask`` command, one small module per command group:

* :mod:`.stages`: one command per stage of :data:`datamask.stages.registry.STAGES`
  (``select``, ``embed``, ``score``, ``dedup``, ``cluster``, ``compare``);
* :mod:`.workflow`: ``run`` (a workflow file), ``status``;
* :mod:`.features`: ``train-quality``;
* :mod:`.analysis`: ``report``;
* :mod:`.proxy_lm`: ``proxy-lm``;
* :mod:`.demo`: ``demo``.

Every flag of a stage is a field of its config dataclass (``--split-size`` fills
``split_size``, the YAML key of the same name). Expected failures print one line
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

    hints = []
    for a in extra:
        if a.startswith("--"):
            near = difflib.get_close_matches(a.split("=", 1)[0], list(parser._option_string_actions), n=1)
            if near:
                hints.append(near[0])
    return f"; did you mean {' or '.join(hints)}?" if hints else ""


def _subparser(parser, command):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


def _groups():
    return [importlib.import_module(f"{__name__}.{g}") for g in GROUPS]


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    from .common import STOPPED_RUN

    p = _Parser(
        prog="datamask",
        description="Select pre-training data that is both high-quality and diverse (DATAMASK), with Dask.",
        epilog=STOPPED_RUN,
    )
    p.add_argument("--version", action="version", version=f"datamask {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for g in _groups():
        g.add_parsers(sub)
    return p


def _main(argv) -> int:
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            sub = _subparser(parser, args.command)
            sub.error(f"unrecognized arguments: {' '.join(extra)}{_close_flags(sub, extra)}")
    except SystemExit as e:  # --help, --version, a usage error (already printed)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    for g in _groups():
        if args.command in g.COMMANDS:
            return g.COMMANDS[args.command](args)
    raise AssertionError(f"no handler for command {args.command!r}")


def _log_hint() -> str:
    """`` (details: FILE)`` when a cluster this process started logged worker failures."""
    client_mod = sys.modules.get("datamask.pipeline.client")  # imported only if a cluster ran
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
    client_mod = sys.modules.get("datamask.pipeline.client")
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
