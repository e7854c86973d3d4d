"""Old names keep working for one release, each with one warning: the --k flag and k key
(now n_clusters), --solver greedy/relaxed (now --method), DataMask(solver=, tokens=) (now
method=, token_budget=, with a FutureWarning), ClusterError (now SchedulerError), manifests that
say partitions (now splits), and the 0.2 function names of the methods and features. 0.2's
runner.Stage (a hand-built run) is gone: its error names what replaces it."""

from __future__ import annotations

import pytest

from datamask.errors import DatamaskDeprecationWarning


def test_the_k_flag_is_n_clusters_with_a_warning():
    from datamask.cli import build_parser
    from datamask.cli.common import config_from_args
    from datamask.stages.analysis import ClusterConfig

    with pytest.warns(DatamaskDeprecationWarning, match="--k is deprecated, use --n-clusters"):
        args = build_parser().parse_args(["cluster", "in", "out", "--k", "7"])
    assert config_from_args(args, ClusterConfig).n_clusters == 7
    assert "--k " not in build_parser()._subparsers._group_actions[0].choices["cluster"].format_help()


def test_the_command_line_prints_the_warning_as_one_line(tmp_path, capsys):
    from datamask.cli import main

    rc = main(["cluster", str(tmp_path / "missing"), str(tmp_path / "out"), "--k", "3"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err[0] == "datamask: warning: --k is deprecated, use --n-clusters (--k stops working in 0.4)"
    assert err[1].startswith("datamask: error: ") and len(err) == 2


def test_the_k_key_of_a_workflow_is_n_clusters_with_a_warning(tmp_path):
    from datamask.stages.workflow import stage_configs

    raw = {"stages": ["cluster"], "input": str(tmp_path), "output": str(tmp_path / "o"), "k": 7}
    with pytest.warns(DatamaskDeprecationWarning, match="key k is deprecated, use n_clusters"):
        ((name, cfg),) = stage_configs(raw)
    assert name == "cluster" and cfg.n_clusters == 7


def test_solver_greedy_is_method_greedy_with_a_warning():
    from datamask.errors import ConfigError
    from datamask.pipeline.config import SelectConfig

    with pytest.warns(DatamaskDeprecationWarning, match="solver greedy is deprecated, use method greedy"):
        cfg = SelectConfig.from_dict({"solver": "greedy"})
    assert cfg.method == "greedy" and cfg.solver == "pg"
    assert cfg.estimator_params(0)["method"] == "greedy"
    assert SelectConfig().estimator_params(0)["method"] == "pg"
    assert "solver" not in cfg.estimator_params(0) and "token_budget" not in cfg.estimator_params(0)
    with pytest.warns(DatamaskDeprecationWarning), pytest.raises(ConfigError, match="disagree"):
        SelectConfig.from_dict({"solver": "relaxed", "method": "topk"})


def test_datamask_solver_and_tokens_are_method_and_token_budget_with_a_future_warning():
    import numpy as np
    from sklearn.base import clone

    from datamask import DataMask
    from datamask.core.synthetic import make_corpus

    c = make_corpus(400, dim=8, seed=1)
    E, q = c["embedding"], c["quality"]
    t = np.random.default_rng(0).integers(10, 50, size=400)
    new = DataMask(method="greedy", token_budget=2000).fit(E, q, lengths=t)
    old = DataMask(solver="greedy", tokens=2000)
    with pytest.warns(FutureWarning) as caught:
        clone(old).fit(E, q, lengths=t)  # clone keeps the old names (they are parameters)
    said = [str(w.message) for w in caught]
    assert any("DataMask(solver=) is deprecated, use method=" in m for m in said), said
    assert any("DataMask(tokens=) is deprecated, use token_budget=" in m for m in said), said
    with pytest.warns(FutureWarning):
        assert np.array_equal(clone(old).fit(E, q, lengths=t).mask_, new.mask_)
    assert new.optimizer_["method"] == "greedy" and repr(new) == "DataMask(method='greedy', token_budget=2000)"
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="disagree; give method alone"):
        DataMask(solver="greedy", method="relaxed").fit(E, q)


def test_the_old_names_of_the_method_tables_warn():
    from datamask.core import estimator
    from datamask.pipeline import config

    with pytest.warns(DatamaskDeprecationWarning, match="SOLVERS is deprecated, use METHODS"):
        assert estimator.SOLVERS == ("pg", "greedy", "relaxed")
    with pytest.warns(DatamaskDeprecationWarning, match="SOLVER_OF is deprecated, use DATAMASK_METHOD"):
        assert config.SOLVER_OF["datamask"] == "pg"


def test_old_names_of_classes_and_manifest_keys_still_resolve():
    from datamask.errors import ClusterError, SchedulerError
    from datamask.pipeline import runner
    from datamask.pipeline.output import n_splits, split_records

    assert ClusterError is SchedulerError and SchedulerError.exit_code == 3
    for old in ("Stage", "StageRun"):  # one object from plan to run: the bound SplitStage
        with pytest.raises(AttributeError, match=r"is gone: a stage subclasses SplitStage .* run_stage\(stage.bind"):
            getattr(runner, old)
    old = {"totals": {"partitions": 2}, "partitions": [{"name": "a"}, {"name": "b"}]}
    new = {"totals": {"splits": 2}, "splits": [{"name": "a"}, {"name": "b"}]}
    for m in (old, new):
        assert n_splits(m["totals"]) == 2 and [r["name"] for r in split_records(m)] == ["a", "b"]


def test_the_02_function_names_warn_and_resolve():
    """*split* (or *frame*, for the features' functions on any frame) replaced *partition*;
    the normalisations are NORMALIZATIONS (METHODS names the selection methods)."""
    import pandas as pd

    from datamask import features
    from datamask.features import aggregate
    from datamask.methods import registry

    old_new = [
        (registry, "check_budget", "check_rows"),
        (registry, "partition_clusters", "split_clusters"),
        (features, "embed_partition", "embed_frame"),
        (features, "score_components_partition", "score_components_frame"),
        (features, "score_heuristics_partition", "score_heuristics_frame"),
        (aggregate, "METHODS", "NORMALIZATIONS"),
    ]
    for module, old, new in old_new:
        with pytest.warns(DatamaskDeprecationWarning, match=f"{old} is deprecated, use {new}"):
            assert getattr(module, old) is getattr(module, new)
    df = pd.DataFrame({"a": [0.0, 1.0, 3.0]})
    stats = aggregate.compute_stats(df, ["a"])
    with pytest.warns(DatamaskDeprecationWarning, match=r"aggregate_frame\(normalize=\)"):
        old = aggregate.aggregate_partition(df, {"a": 1}, stats, method="rank")
    assert (
        old["quality"].tolist() == aggregate.aggregate_frame(df, {"a": 1}, stats, normalize="rank")["quality"].tolist()
    )


@pytest.mark.parametrize(
    "name,config", [("run_cluster_stage", "ClusterConfig"), ("run_compare_stage", "CompareConfig")]
)
def test_the_02_stage_functions_warn_and_run_the_stage(name, config):
    """0.2 exported run_cluster_stage / run_compare_stage: they still run the stage (here, to
    its one-line refusal of a config without input), with a warning."""
    from datamask.errors import ConfigError
    from datamask.stages import analysis as stages

    assert name not in stages.__all__
    warns = pytest.warns(DatamaskDeprecationWarning, match=f"{name} is deprecated")
    with warns, pytest.raises(ConfigError, match="input and output are required"):
        getattr(stages, name)(getattr(stages, config)())


@pytest.mark.parametrize(
    "old,new,name",
    [
        ("datamask.pipeline.stages.select", "datamask.stages.select", "SelectStage"),
        ("datamask.pipeline.stages.embed", "datamask.stages.embed", "EmbedStage"),
        ("datamask.pipeline.workflow", "datamask.stages.workflow", "run_workflow"),
        ("datamask.pipeline.status", "datamask.stages.status", "output_status"),
        ("datamask.analysis.stages", "datamask.stages.analysis", "ClusterConfig"),
    ],
)
def test_the_02_module_paths_of_the_stages_import_the_moved_module(old, new, name):
    """0.2.0's migration table names these paths; they import the module at its new place (the
    same module object, its own spec kept), with a warning, until 0.4."""
    import importlib
    import sys

    sys.modules.pop(old, None)
    with pytest.warns(DatamaskDeprecationWarning) as warned:  # its old package's too, the first time
        module = importlib.import_module(old)
    assert f"{old} is deprecated, use {new} " in " ".join(str(w.message) for w in warned)
    assert module is importlib.import_module(new) and module.__spec__.name == new
    assert getattr(module, name).__module__ == new
