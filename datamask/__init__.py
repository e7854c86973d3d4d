"""datamask: select pre-training data that is both high-quality and diverse.

The core is :class:`DataMask` (one partition in, a boolean mask out) and
:func:`evaluate` (score any selection on the same objective). Both import without Dask or
torch; the pipeline's entry points below are imported on first use.
"""

from .core.estimator import DataMask
from .core.objectives import evaluate

__version__ = "0.2.0"
__all__ = ["DataMask", "evaluate", "__version__"]

# Entry points that moved into the layer packages in 0.2 (CHANGELOG.md, 0.2.0), reachable
# here for one release; imported lazily so ``import datamask`` stays light.
_MOVED = {
    "run_select": "datamask.stages.select",
    "run_embed": "datamask.stages.embed",
    "run_score": "datamask.stages.score",
    "run_workflow": "datamask.stages.workflow",
    "SelectConfig": "datamask.pipeline.config",
    "EmbedConfig": "datamask.pipeline.text_config",
    "ScoreConfig": "datamask.pipeline.text_config",
    "run_cluster": "datamask.analysis.cluster_run",
    "run_compare": "datamask.analysis.compare_run",
    "build_report": "datamask.analysis.report",
    "make_corpus": "datamask.core.synthetic",
}


def __getattr__(name):
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module 'datamask' has no attribute {name!r}")
