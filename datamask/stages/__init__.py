"""The stages, one module each, and :data:`STAGES`, the one list of them.

A stage is a :class:`~.base.Stage`: its name, config class, plan of splits and per-split
function (or a whole-corpus ``run``) and summary line. The command line (one command per
stage), ``datamask run`` (``stages: [...]`` workflows) and ``datamask status`` read
:data:`STAGES`; adding a stage is one module and one line here.

``cluster`` and ``compare`` live in the analysis layer; they are named here by module, and
imported only when used, so this package imports nothing above it.
"""

from __future__ import annotations

import importlib

__all__ = ["STAGES", "get_stage"]

# name -> "module:Class", in the order ``datamask --help`` lists them
STAGES = {
    "select": "datamask.stages.select:SelectStage",
    "embed": "datamask.stages.embed:EmbedStage",
    "score": "datamask.stages.score:ScoreStage",
    "dedup": "datamask.stages.dedup:DedupStage",
    "cluster": "datamask.stages.analysis:ClusterStage",
    "compare": "datamask.stages.analysis:CompareStage",
    "search": "datamask.stages.search:SearchStage",
}

_LOADED: dict = {}


def get_stage(name: str):
    """The :class:`~.base.Stage` named ``name`` (KeyError when there is none)."""
    if name not in _LOADED:
        module, _, cls = STAGES[name].partition(":")
        _LOADED[name] = getattr(importlib.import_module(module), cls)()
    return _LOADED[name]
