""":data:`STAGES`, the one list of the stages: name -> stage, in the order ``datamask
--help`` lists them.

A stage is a :class:`~.base.Stage`: its name, config class, per-split function (or a
whole-corpus ``compute``) and summary line. The command line (one command per stage),
``datamask run`` (``stages: [...]`` workflows) and ``datamask status`` read :data:`STAGES`;
adding a stage is one module and one line here. Every stage is imported here like any other
module, so ``tests/test_layout.py`` sees what each one depends on.
"""

from __future__ import annotations

from .analysis import ClusterStage, CompareStage
from .base import Stage
from .dedup import DedupStage
from .embed import EmbedStage
from .score import ScoreStage
from .search import SearchStage
from .select import SelectStage

__all__ = ["STAGES"]

STAGES: dict[str, Stage] = {
    s.name: s
    for s in (SelectStage(), EmbedStage(), ScoreStage(), DedupStage(), ClusterStage(), CompareStage(), SearchStage())
}
