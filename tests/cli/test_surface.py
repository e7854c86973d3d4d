"""The surface a newcomer learns stays short (issue 51): ``DataMask`` takes at most 12
parameters, ``datamask select --help`` shows at most 30 options on one screen, all commands
together at most 150; the Dask and storage flags are ``datamask``'s own, listed once and
accepted before or after a command's name. Counted from the real parser and signature."""

from __future__ import annotations

import argparse
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from datamask.cli import build_parser, main
from datamask.cli.common import GLOBAL
from datamask.estimator.params import DataMaskParams

ROOT = Path(__file__).resolve().parents[2]


def _options(parser) -> list:
    """The parser's options (argparse actions with an option string), less -h."""
    return [a for a in parser._actions if a.option_strings and "-h" not in a.option_strings]


def _commands() -> dict:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_datamask_takes_at_most_12_parameters():
    from datamask import DataMask

    params = [p for p in inspect.signature(DataMask.__init__).parameters if p != "self"]
    assert params == [p for p in inspect.signature(DataMaskParams.__init__).parameters if p != "self"]
    assert len(params) <= 12, params


def test_select_shows_at_most_30_options_and_all_commands_at_most_150():
    commands = _commands()
    counts = {name: len(_options(p)) for name, p in commands.items()}
    assert counts["select"] <= 30, counts
    total = sum(counts.values()) + len(_options(build_parser()))  # datamask's own (--version, the Dask flags)
    assert total <= 150, (total, counts)


def test_select_help_fits_a_screen():
    env = dict(os.environ, COLUMNS="100", PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-m", "datamask.cli", "select", "--help"], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert len(out.splitlines()) <= 60, out
    assert "--solver-params" in out and "datamask --help" in out
    assert "--scheduler " not in out and "--n-workers" not in out  # listed once, by datamask --help


def test_the_dask_flags_are_listed_once_by_datamask_help():
    top = {s for a in _options(build_parser()) for s in a.option_strings}
    flags = {"--" + g.replace("_", "-") for g in GLOBAL}
    assert flags <= top
    for name, p in _commands().items():
        own = {s for a in _options(p) for s in a.option_strings}
        assert not (own & flags) - ({"--device"} if name == "proxy-lm" else set()), name  # proxy-lm's: the torch device


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_dask_flag_goes_before_or_after_the_command(where, tmp_path, capsys):
    flag = ["--n-workers", "0"]  # refused by the config's check, after parsing: it arrived there
    words = ["select", str(tmp_path / "in"), str(tmp_path / "o"), "--set", "solver_params.steps=5"]
    argv = [*flag, *words] if where == "before" else [*words, *flag]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == "datamask: error: n_workers must be >= 1, got 0"


def test_a_command_without_a_dask_job_refuses_a_dask_flag(capsys):
    assert main(["train-quality", "--positive", "a", "--negative", "b", "--output", "c", "--scheduler", "x"]) == 2
    assert (
        capsys.readouterr().err.strip() == "datamask: error: train-quality takes no --scheduler (see `datamask --help`)"
    )


def test_a_removed_flag_says_where_it_went(tmp_path, capsys):
    assert main(["select", str(tmp_path), str(tmp_path / "o"), "--steps", "5"]) == 2
    assert "steps is a key of --solver-params" in capsys.readouterr().err
    assert main(["select", str(tmp_path), str(tmp_path / "o"), "--id-column", "doc"]) == 2
    assert "--set id_column=VALUE" in capsys.readouterr().err


def test_solver_params_from_json_a_file_and_set_merge_key_by_key(tmp_path):
    from datamask.cli.common import config_from_args
    from datamask.pipeline.config import SelectConfig

    f = tmp_path / "solver.yaml"
    f.write_text("steps: 200\ninit: quality\n")
    parser = build_parser()
    for given in (['{"steps": 200, "init": "quality"}'], [str(f)]):
        args = parser.parse_args(["select", "in", "out", "--solver-params", *given, "--set", "solver_params.lr=2"])
        cfg = config_from_args(args, SelectConfig)
        assert cfg.solver_params == {"steps": 200, "init": "quality", "lr": 2}
        assert cfg.estimator_params(0)["solver_params"] == cfg.solver_params
    args = parser.parse_args(["select", "in", "out", "--preset", "paper", "--set", "solver_params.steps=7"])
    cfg = config_from_args(args, SelectConfig)
    assert cfg.solver("steps") == 7 and cfg.solver("lr") == 10.0  # the preset's, under the key given


@pytest.mark.parametrize(
    "params",
    [{"lam": 2.0}, {"prune": 1.0}, {"near_duplicate": 0.0}, {"solver_params": {"lr": -1}},
     {"solver_params": {"patience": -2}}, {"solver_params": {"final": "best"}}, {"solver_params": {"stepz": 1}},
     {"solver_params": {"logit_range": [4, 0]}}],
)  # fmt: skip
def test_the_config_and_the_estimator_refuse_a_value_in_the_same_words(params):
    """One table of checks (estimator.constraints): the config says what the estimator says, naming the flag."""
    import numpy as np

    from datamask import DataMask
    from datamask.errors import ConfigError
    from datamask.pipeline.config import SelectConfig

    E, q = np.eye(8, 4, dtype=np.float32) + 0.1, np.linspace(0, 1, 8)
    with pytest.raises(ValueError) as est:
        DataMask(ratio=0.5, **params).fit(E, q)
    with pytest.raises(ConfigError) as cfg:
        SelectConfig.from_dict({"input": "i", "output": "o", **params})
    name = next(iter(params))
    flag = "--" + name.replace("_", "-")
    assert str(cfg.value) == str(est.value).replace(name, f"{name} ({flag})", 1), (str(cfg.value), str(est.value))
