"""One Stage object from plan to run: ``bind`` gives a copy of the stage bound to the run's
config, the runner runs that copy (its hooks, its plan of splits), each split's task carries
it to its worker, and the stage in ``STAGES`` is left as it was."""

from __future__ import annotations

import json

from datamask.pipeline.runner import run_stage
from datamask.stages.registry import STAGES
from datamask.stages.split.select import SelectStage
from tests.helpers.pipeline_data import SPLIT
from tests.helpers.probe_stage import ProbeConfig, ProbeStage


def test_bind_returns_a_prepared_copy_and_leaves_the_registered_stage_alone(corpus, tmp_path):
    from datamask.pipeline.config import SelectConfig

    stage = STAGES["select"]
    bound = stage.bind(SelectConfig(input=str(corpus), output=str(tmp_path / "out"), split_size=int(SPLIT)))
    assert isinstance(bound, SelectStage) and bound is not stage
    assert bound.cfg.output == str(tmp_path / "out") and len(bound.plan_.splits) == 5
    assert stage.cfg is None and stage.plan_ is None


def test_what_the_hooks_set_on_the_bound_stage_reaches_every_split(corpus, tmp_path, address):
    from distributed import Client

    out = tmp_path / "probe"
    cfg = ProbeConfig(input=str(corpus), output=str(out), split_size=int(SPLIT), quiet=True)
    stage = ProbeStage()
    with Client(address, set_as_default=False) as client:
        manifest = run_stage(stage.bind(cfg), client)
    records = [json.loads(p.read_text()) for p in sorted((out / "_datamask" / "parts").glob("*.json"))]
    assert len(records) == 5 and manifest["totals"]["checked"] == 5 * 5
    assert {(r["checked"], r["set_up"], r["output"]) for r in records} == {(5, "5 pending, output probe", str(out))}
    assert not hasattr(stage, "checked_") and stage.cfg is None  # the run worked on its own copy
