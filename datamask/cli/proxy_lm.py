"""``datamask proxy-lm SELECTION... --eval EVAL_DIR OUTPUT_DIR``."""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError
from .common import add_config_flags, given_values, report_first, report_line

__all__ = ["add_parsers", "COMMANDS"]


class _PathsParser(argparse.ArgumentParser):
    """Lets paths follow an option (``A B --eval E OUT``): argparse fills a ``+`` positional
    from the first run of positionals only and leaves the rest unrecognised; they are the
    same list, so they are appended to it in order. No prefix of a flag is read as the flag."""

    def __init__(self, *args, **kw):
        kw.setdefault("allow_abbrev", False)
        super().__init__(*args, **kw)

    def parse_known_args(self, args=None, namespace=None):
        ns, extra = super().parse_known_args(args, namespace)
        if extra and all(not a.startswith("-") for a in extra) and hasattr(ns, "paths"):
            ns.paths = list(ns.paths or []) + list(extra)
            extra = []
        return ns, extra


def add_parsers(sub):
    from ..analysis.proxy_lm import ProxyLMConfig

    own, sub._parser_class = sub._parser_class, _PathsParser
    try:
        p = sub.add_parser(
            "proxy-lm",
            help="train the same small LM on each selection (equal tokens) and report held-out loss",
            usage="datamask proxy-lm SELECTION... --eval EVAL_DIR [--eval EVAL_DIR ...] OUTPUT_DIR [options]",
            description="For each selection (a select output, every method of a compare output, or any "
            "Parquet/JSONL corpus) train the same small decoder-only LM from the same initial weights, seed, "
            "optimiser, schedule and number of tokens (--tokens; a smaller selection is repeated), then report "
            "held-out loss (nats/token) and perplexity on every --eval set, per domain when it has a domain "
            "column. Rows of an evaluation set are removed from every selection before training. Nothing is "
            "downloaded: the tokenizer is --tokenizer or a byte-level BPE trained on the selections.",
        )
    finally:
        sub._parser_class = own
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="SELECTION... OUTPUT_DIR: one or more selections, then the output directory (proxy.csv, "
        "figures, manifest.json, report/)",
    )
    p.add_argument(
        "--config",
        default=None,
        metavar="YAML",
        help="a YAML file of the same keys as these flags (selections, eval, output too); flags override",
    )
    add_config_flags(p, ProxyLMConfig, positional=("selections", "output"), skip=("quiet",))
    p.epilog = "--quiet (no progress bars) is datamask's own: `datamask --help`; give it before or after proxy-lm."


def _proxy_lm(args) -> int:
    from ..analysis.proxy_lm import ProxyLMConfig, run_proxy_lm
    from ..stages.workflow import load_workflow

    base = ProxyLMConfig.from_dict(load_workflow(args.config), source=args.config) if args.config else ProxyLMConfig()
    changed = given_values(args, ProxyLMConfig)
    paths = list(args.paths or [])
    if len(paths) == 1 and base.selections:
        changed["output"] = paths[0]
    elif len(paths) >= 2:
        changed.update(selections=paths[:-1], output=paths[-1])
    else:
        raise ConfigError(
            "proxy-lm needs at least one SELECTION and an OUTPUT_DIR "
            "(datamask proxy-lm SELECTION... --eval EVAL_DIR OUTPUT_DIR)"
        )
    cfg = base.replace(**changed)
    if not cfg.eval:
        raise ConfigError(
            "proxy-lm needs an evaluation set: --eval EVAL_DIR (e.g. the holdout/ of "
            "select/compare --holdout, or any trusted text corpus)"
        )
    m = run_proxy_lm(cfg, finish=None if cfg.no_report else report_first(cfg.output))
    for w in m.get("warnings", ()):  # first: what must be read before the table
        print(f"datamask: proxy-lm: warning: {w}", file=sys.stderr)
    if not cfg.quiet:
        t = m["table"]
        wide = t[t["domain"] == "all"].pivot_table(index="selection", columns="eval_set", values="loss", sort=False)
        print(wide.to_string(float_format=lambda v: f"{v:.4f}"))
        for s in m["selections"]:  # what each selection holds, and how often training went through it
            print(
                f"datamask: proxy-lm: {s['name']}: {s['docs']:,} documents, {s['selection_tokens']:,} tokens "
                f"({s['passes']:.2f} passes, {s['steps']:,} optimiser steps); unigram margin "
                + ", ".join(f"{e} {v:+.3f}" for e, v in s["unigram_margin"].items())
                + " nats/token"
            )
        tot = m["totals"]
        print(
            f"datamask: proxy-lm: {tot['selections']} selection(s) x {m['regime']}, "
            f"{m['params']:,}-parameter model ({tot['computed_this_run']} trained, {tot['resumed']} resumed) "
            f"-> {cfg.output}"
        )
    report_line(m, cfg.quiet)
    return 0


COMMANDS = {"proxy-lm": _proxy_lm}
USES_GLOBAL = {"proxy-lm": ("quiet",)}  # (its --device is its own: where the model trains, cpu or cuda)
