"""A per-split stage for the runner's tests: what its hooks set on the stage, each split's
task reads on its worker (importable here, so the workers can unpickle it)."""

from __future__ import annotations

from dataclasses import dataclass

from datamask.pipeline.config import StageConfig
from datamask.pipeline.schema import Columns
from datamask.stages.base import SplitStage


@dataclass
class ProbeConfig(StageConfig):
    """``probe``: each split as it was, its record naming what the hooks set."""


class ProbeStage(SplitStage):
    name, config, help = "probe", ProbeConfig, "copy each split, recording what the hooks set"
    summed = ("checked",)

    def columns(self, cfg):
        return Columns()  # id and embedding: the pipeline tests' corpus holds no text

    def check(self, client, pending):
        self.checked_ = len(pending)

    def setup(self, client, pending, out):
        self.set_up_ = f"{self.checked_} pending, output {out.root.name}"

    def process(self, table, split):
        return table, {"checked": self.checked_, "set_up": self.set_up_, "output": self.cfg.output}
