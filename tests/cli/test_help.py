"""Every command's --help states each flag's default once (the config fields' help strings
said "(default: cores)" and the flag builder added "(default: None)")."""

from __future__ import annotations

import argparse
import re

import pytest

from datamask.cli import build_parser


def _commands():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices.items())


@pytest.mark.parametrize("name,parser", _commands(), ids=[n for n, _ in _commands()])
def test_each_default_is_stated_once(name, parser):
    helps = [(a.option_strings or [a.dest], a.help) for a in parser._actions if a.help not in (None, argparse.SUPPRESS)]
    assert helps, f"{name} has no documented flag"
    doubled = [(flags, h) for flags, h in helps if len(re.findall(r"\(default|\(null:", h, flags=re.I)) > 1]
    assert not doubled, f"datamask {name} --help states a default twice: {doubled}"
    # the rendered page too, one flag at a time (argparse wraps lines: joined first)
    page = re.sub(r"\s+", " ", parser.format_help())
    for chunk in re.split(r" (?=--[a-z])", page):
        assert len(re.findall(r"\(default", chunk)) <= 1, f"datamask {name} --help: {chunk}"


def test_n_workers_says_cores_once():
    (action,) = [a for a in build_parser()._actions if "--n-workers" in a.option_strings]  # datamask's own
    assert action.help.count("default") == 1 and "cores" in action.help, action.help
