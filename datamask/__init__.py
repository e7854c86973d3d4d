"""datamask: select pre-training data that is both high-quality and diverse.

The core is :class:`DataMask` (one partition in, a boolean mask out) and
:func:`evaluate` (score any selection on the same objective). Both import without Dask or
torch. Every name here is imported on first use (``datamask.DataMask`` imports scikit-learn
then), so ``import datamask``, and the ``datamask`` command that starts with it, stay light.
"""

import sys

__version__ = "0.2.0"
__all__ = ["DataMask", "evaluate", "__version__"]

# The public names, each from the module that defines it (imported on first use).
_PUBLIC = {"DataMask": "datamask.core.estimator", "evaluate": "datamask.core.objectives"}

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
    if name in _PUBLIC or name in _MOVED:
        import importlib

        value = getattr(importlib.import_module(_PUBLIC.get(name) or _MOVED[name]), name)
        if name in _PUBLIC:
            globals()[name] = value  # found directly from now on
        return value
    raise AttributeError(f"module 'datamask' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))


# Modules that moved out of their 0.2 package into the stages layer (CHANGELOG.md,
# Unreleased): the 0.2 path (the 0.2.0 migration table names ``datamask.pipeline.stages.select``
# and ``datamask.analysis.stages``) imports the module itself, with a warning, for one release.
_MOVED_MODULES = {
    "datamask.pipeline.stages": "datamask.stages",
    "datamask.pipeline.workflow": "datamask.stages.workflow",
    "datamask.pipeline.status": "datamask.stages.status",
    "datamask.analysis.stages": "datamask.stages.analysis",
}


class _MovedModules:
    """Import hook: an old module path is served the module at its new path."""

    @staticmethod
    def new_name(name):
        for old, new in _MOVED_MODULES.items():
            if name == old or name.startswith(old + "."):
                return new + name[len(old) :]
        return None

    def find_spec(self, name, path=None, target=None):
        if self.new_name(name) is None:
            return None
        from importlib.util import spec_from_loader

        return spec_from_loader(name, self)

    def create_module(self, spec):
        import importlib

        from .errors import warn_deprecated

        new = self.new_name(spec.name)
        warn_deprecated(spec.name, new)
        module = importlib.import_module(new)
        spec.loader_state = module.__spec__  # the import system sets the old spec on it: put it back
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state


sys.meta_path.insert(0, _MovedModules())  # before the path finder: a stale folder of the old name is no module
