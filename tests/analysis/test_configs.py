"""Configs of the analysis commands and the workflow files that use them."""

from __future__ import annotations

from pathlib import Path

import pytest

from datamask.errors import ConfigError
from datamask.pipeline.config import SelectConfig
from datamask.stages.corpus.analysis import ClusterConfig, CompareConfig
from datamask.stages.workflow import load_workflow

WF = Path(__file__).resolve().parents[2] / "workflows"


def test_paper_recipe_is_a_select_config():
    raw = load_workflow(WF / "paper_fineweb_mask.yaml", ["input=in", "output=out"])
    cfg = SelectConfig.from_dict(raw, source="paper")
    assert 0.4 <= cfg.prune <= 0.5 and cfg.solver("init") == "quality" and cfg.diversity == "pairwise"
    assert cfg.lam == 0.5 and cfg.solver("group_size") == 128 and cfg.split_size == 1_000_000
    assert cfg.solver("batch_ratio") == 0.05 and cfg.solver("steps") == 10_000 and cfg.method == "datamask"
    assert cfg.solver("logit_range") is None  # auto
    # the workflow is the preset: the paper's lr, no cap on a batch, no early stop
    assert cfg.preset == "paper" and cfg.prune == 0.5 and cfg.solver("lr") == 10 and cfg.solver("batch_max") is None
    assert cfg.solver("patience") is None and cfg.solver("eval_every") == 250  # the workflow's, beside the preset's


def test_preset_paper_sets_the_recipe_and_given_settings_override_it():
    cfg = SelectConfig.from_dict({"preset": "paper", "solver_params": {"steps": 50, "batch_max": 512}})
    assert tuple(cfg.solver(k) for k in ("init", "lr", "group_size", "batch_ratio")) == ("quality", 10.0, 128, 0.05)
    assert cfg.solver("steps") == 50 and cfg.solver("batch_max") == 512  # given beside the preset, even at the default
    assert cfg.replace(seed=3).solver("batch_max") == 512  # a replace keeps what was given
    plain = SelectConfig().validated()
    assert plain.solver_params is None and plain.solver("batch_max") == 512  # no preset: defaults
    built = SelectConfig(preset="paper", solver_params={"steps": 7}).validated()  # in Python: fills the keys not given
    assert built.solver("init") == "quality" and built.solver("steps") == 7 and built.solver("batch_max") is None
    assert built.estimator_params(0) == {**SelectConfig.from_dict({"preset": "paper"}).estimator_params(0),
                                         "solver_params": built.solver_params}  # fmt: skip
    with pytest.raises(ConfigError, match="preset must be one of default, paper"):
        SelectConfig.from_dict({"preset": "nope"})
    with pytest.raises(ConfigError, match=r"unknown key\(s\) steps; steps is a key of solver_params"):
        SelectConfig.from_dict({"steps": 5})  # a 0.2 workflow's key: where it went


def test_baselines_workflow_chains_cluster_and_compare():
    from datamask.stages.workflow import stage_configs

    cfgs = stage_configs(load_workflow(WF / "baselines.yaml", ["cluster.n_clusters=7", "compare.ratio=0.2"]))
    (n1, c1), (n2, c2) = cfgs
    assert (n1, n2) == ("cluster", "compare")
    assert isinstance(c1, ClusterConfig) and isinstance(c2, CompareConfig)
    assert c1.n_clusters == 7 and c2.ratio == 0.2 and c2.split_size == c1.split_size == 50_000
    assert c2.input == str(Path(c1.output) / "data")
    assert c2.method_list == ["datamask", "topk", "random", "semdedup", "quadmix", "greedy"]


def test_config_checks():
    with pytest.raises(ConfigError, match="methods"):
        CompareConfig(methods="datamask,nope").validated()
    with pytest.raises(ConfigError, match="sample_fraction"):
        ClusterConfig(sample_fraction=0).validated()
    with pytest.raises(ConfigError, match="n_clusters must"):
        ClusterConfig(n_clusters=0).validated()
