"""0.3.0 removed the 0.2 names (CHANGELOG.md, 0.3.0, Removed): each now fails as any unknown
module, attribute, keyword, flag or YAML key does. A compatibility shim that came back (an
import hook, a module ``__getattr__`` serving an old name, a hidden flag, an old key read
with a warning) would make one of these pass through."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "old",
    [
        "datamask.pipeline.stages",
        "datamask.pipeline.workflow",
        "datamask.pipeline.status",
        "datamask.analysis.stages",
        "datamask.core.estimator",
    ],
)
def test_the_02_module_paths_do_not_import(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


@pytest.mark.parametrize(
    "module,old,new",
    [
        ("datamask", "run_select", "datamask.stages.split.select"),
        ("datamask", "SelectConfig", "datamask.pipeline.config"),
        ("datamask", "make_corpus", "datamask.core.synthetic"),
        ("datamask.estimator.estimator", "SOLVERS", None),  # (estimator.params.METHODS)
        ("datamask.estimator.estimator", "check_params", None),  # (estimator.constraints.check_params)
        ("datamask.pipeline.config", "SOLVER_OF", None),  # --method's names are DataMask(method=)'s
        ("datamask.pipeline.config", "DATAMASK_METHOD", None),
        ("datamask.methods.registry", "check_budget", "check_rows"),
        ("datamask.methods.registry", "partition_clusters", "split_clusters"),
        ("datamask.features", "embed_partition", "embed_frame"),
        ("datamask.features", "score_components_partition", "score_components_frame"),
        ("datamask.features", "score_heuristics_partition", "score_heuristics_frame"),
        ("datamask.features", "aggregate_partition", "aggregate_frame"),
        ("datamask.features.fasttext_quality", "score_fasttext_partition", "score_fasttext_frame"),
        ("datamask.features.aggregate", "METHODS", "NORMALIZATIONS"),
        ("datamask.stages.corpus.analysis", "run_cluster_stage", "ClusterStage"),
        ("datamask.stages.corpus.analysis", "run_compare_stage", "CompareStage"),
        ("datamask.errors", "ClusterError", "SchedulerError"),
        ("datamask.errors", "renamed", None),
        ("datamask.errors", "DatamaskDeprecationWarning", None),
        ("datamask.core.objectives", "facility_value", None),  # (datamask.core.metrics')
    ],
)
def test_the_02_names_are_gone(module, old, new):
    mod = importlib.import_module(module)
    with pytest.raises(AttributeError, match=old):
        getattr(mod, old)
    if new is not None and not new.startswith("datamask."):
        assert getattr(mod, new) is not None  # the name that replaced it is where the CHANGELOG says


@pytest.mark.parametrize("key", ["steps", "lr", "group_size", "eval_every", "n_threads", "reference_size"])
def test_a_solver_keyword_of_02_is_a_key_of_solver_params(key):
    from datamask import DataMask
    from datamask.estimator.params import SOLVER_PARAMS

    with pytest.raises(TypeError, match=key):
        DataMask(**{key: SOLVER_PARAMS[key]})
    assert DataMask(solver_params={key: SOLVER_PARAMS[key]}).get_params()["solver_params"] == {key: SOLVER_PARAMS[key]}


def test_datamask_takes_only_method_and_token_budget():
    from sklearn.base import clone

    from datamask import DataMask

    for old in ({"solver": "greedy"}, {"tokens": 2000}):
        with pytest.raises(TypeError, match=next(iter(old))):
            DataMask(**old)
    est = DataMask(method="greedy", token_budget=2000)
    params = clone(est).get_params()
    assert params["method"] == "greedy" and params["token_budget"] == 2000
    assert "solver" not in params and "tokens" not in params


def test_method_pg_is_an_invalid_method_named_datamask_now():
    import numpy as np
    from sklearn.utils._param_validation import InvalidParameterError

    from datamask import DataMask
    from datamask.pipeline.config import SelectConfig

    E, q = np.eye(20, 4, dtype=np.float32) + 0.1, np.linspace(0, 1, 20)
    with pytest.raises(InvalidParameterError, match=r"^method must be one of datamask, greedy, relaxed, got 'pg'$"):
        DataMask(method="pg").fit(E, q)
    m = DataMask(method="datamask", solver_params=dict(steps=5)).fit(E, q)
    assert m.optimizer_["method"] == "datamask" and m.get_params()["method"] == "datamask"
    # the CLI's name is the estimator's: no translation between them
    assert SelectConfig(input="i", output="o", method="greedy").estimator_params(0)["method"] == "greedy"
    assert SelectConfig(input="i", output="o").estimator_params(0)["method"] == "datamask"


def test_the_02_keywords_are_unknown_keywords():
    import datamask.dask as dmd
    from datamask.stages.corpus.compare_run import run_compare

    for old in ("k", "cluster_column"):
        with pytest.raises(TypeError, match=old):
            run_compare("in", "out", **{old: 3})
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) k; it takes .*n_clusters"):
        dmd.cluster(None, k=3)


@pytest.mark.parametrize("command", ["select", "compare"])
def test_the_solver_flag_fails_as_an_unknown_flag(command, tmp_path, capsys):
    from datamask.cli import main

    assert main([command, str(tmp_path / "in"), str(tmp_path / "out"), "--solver", "greedy"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("datamask: error: unrecognized arguments: --solver greedy"), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "argv", [["cluster", "--k", "sklearn"], ["cluster", "--k", "7"], ["compare", "--k=3"], ["select", "--tok", "5"]]
)
def test_a_prefix_of_a_flag_is_not_the_flag(argv, tmp_path, capsys):
    """No flag is read from a prefix (argparse's allow_abbrev): ``cluster --k sklearn`` was
    ``--kmeans-backend sklearn`` and ran; ``--k`` (0.2's n_clusters) is now simply unknown."""
    from datamask.cli import main

    cmd, *flags = argv
    assert main([cmd, str(tmp_path / "in"), str(tmp_path / "out"), *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"datamask: error: unrecognized arguments: {' '.join(flags)}"), err
    assert not (tmp_path / "out").exists()


def test_the_02_yaml_keys_fail_as_unknown_keys(tmp_path):
    from datamask.errors import ConfigError
    from datamask.pipeline.config import SelectConfig
    from datamask.stages.workflow import stage_configs

    with pytest.raises(ConfigError, match=r"run.yaml: unknown key\(s\) solver; valid keys: .*method"):
        SelectConfig.from_dict({"solver": "greedy"}, source="run.yaml")
    raw = {"stages": ["cluster"], "input": str(tmp_path), "output": str(tmp_path / "o"), "k": 7}
    with pytest.raises(ConfigError, match=r"unknown key\(s\) k for stages cluster"):
        stage_configs(raw)
