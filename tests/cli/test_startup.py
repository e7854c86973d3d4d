"""The command starts light: ``import datamask``, ``datamask --help``, every ``datamask NAME
--help`` and a usage error import none of the heavy libraries (scikit-learn, numba, torch,
Dask, pandas, pyarrow); a stage's own module is imported when the stage runs. What is imported
later is the same: the public names, the estimator, the stages."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import datamask
from datamask.cli.stages import stopped_run
from datamask.stages.base import Stage
from datamask.stages.registry import STAGES, Stages

HEAVY = ("sklearn", "numba", "torch", "distributed", "dask", "pandas", "pyarrow", "scipy")

# In a fresh interpreter: the heavy modules loaded after ``import datamask``, then after the
# parser of every command has printed its help and refused an unknown flag.
_PROBE = f"""
import argparse, contextlib, io, json, sys
HEAVY = {HEAVY!r}
def loaded():
    return sorted({{m.split(".")[0] for m in sys.modules}} & set(HEAVY))
import datamask
after_import = loaded()
from datamask.cli import build_parser, main
sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
codes = {{}}
for argv in (["--help"], *([c, "--help"] for c in sub.choices), ["select", "in", "out", "--no-such-flag"]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes[" ".join(argv)] = main(argv)
print(json.dumps({{"import": after_import, "cli": loaded(), "codes": codes, "commands": list(sub.choices)}}))
"""


@pytest.fixture(scope="module")
def probe():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_import_datamask_imports_nothing_heavy(probe):
    assert probe["import"] == [], f"import datamask imports {probe['import']}"


def test_help_and_usage_errors_import_nothing_heavy(probe):
    assert set(STAGES) <= set(probe["commands"])  # every stage's parser was built
    codes = probe["codes"]
    assert codes.pop("select in out --no-such-flag") == 2
    assert set(codes.values()) == {0}, codes  # every --help printed
    assert probe["cli"] == [], f"the command's parser imports {probe['cli']}"


def test_public_names_resolve_to_the_same_objects():
    from sklearn.base import BaseEstimator

    from datamask.estimator.estimator import DataMask
    from datamask.estimator.evaluate import evaluate

    assert datamask.DataMask is DataMask and datamask.evaluate is evaluate
    assert {n: getattr(datamask, n) for n in datamask.__all__}["DataMask"] is DataMask
    assert {"DataMask", "evaluate"} <= set(dir(datamask))
    # the scikit-learn estimator, its constructor read by get_params and checked by its constraints
    assert issubclass(DataMask, BaseEstimator)
    params = DataMask(lam=0.3).get_params()
    assert params["lam"] == 0.3 and params["ratio"] == 0.1 and set(params) == set(DataMask._parameter_constraints)
    with pytest.raises(AttributeError):
        datamask.no_such_name  # noqa: B018 (the attribute access is the test)


# what the command line reads of a stage, from its declaration, before the stage is imported
CLI_ATTRIBUTES = ("name", "config", "help", "description", "output_help", "input_help", "report", "whole_corpus")


@pytest.mark.parametrize("name", list(STAGES))
def test_each_stage_says_what_its_declaration_says(name):
    declared, stage = STAGES.declared(name), STAGES[name]
    assert isinstance(stage, Stage) and (stage is declared or isinstance(stage, declared))
    assert STAGES[name] is stage  # imported once
    for attr in CLI_ATTRIBUTES:
        assert getattr(stage, attr) == getattr(declared, attr), f"{name}.{attr} differs from its declaration"
    assert stopped_run(stage) == stopped_run(declared)


def test_an_added_stage_is_listed_after_the_built_in_ones():
    class Lines(Stage):
        name, help = "lines", "count lines"

    stages = Stages(STAGES.declared(n) for n in STAGES)
    stages["lines"] = Lines()
    assert list(stages)[-1] == "lines" and stages["lines"] is stages.declared("lines")
    del stages["lines"]
    assert "lines" not in stages and list(stages) == list(STAGES)
