""":data:`STAGES`, the one list of the stages: name -> stage, in the order ``datamask
--help`` lists them.

A stage is a :class:`~.base.Stage`: its name, config class, per-split function (or a
whole-corpus ``compute``) and summary line. The command line (one command per stage),
``datamask run`` (``stages: [...]`` workflows) and ``datamask status`` read :data:`STAGES`;
adding a stage is one module and one line here (``STAGES["lines"] = LinesStage()``).

A built-in stage's module is imported when the stage is first used (``STAGES["select"]``),
each by an import statement in :func:`_load`, so ``tests/test_layout.py`` sees what each one
depends on. Until then :meth:`Stages.declared` gives what the command line reads of it (name,
config, help: its declaration, :mod:`.declared`), so ``datamask --help`` and every
``datamask NAME --help`` import no stage's implementation (pandas, numba, Dask).
"""

from __future__ import annotations

from collections.abc import MutableMapping

from .base import Stage
from .corpus.analysis import ClusterStage, CompareStage
from .declared import Dedup, Embed, Score, Search, Select

__all__ = ["STAGES", "Stages"]


class Stages(MutableMapping):
    """name -> :class:`~.base.Stage`, in order; a stage declared by its class (a built-in one,
    :mod:`.declared`) is imported on first use, an added stage instance is itself."""

    def __init__(self, declared):
        self._declared = {d.name: d for d in declared}  # name -> declaration class or stage
        self._stages = {}  # name -> stage, once used

    def declared(self, name: str):
        """What the command line reads of stage ``name`` (``name``, ``config``, ``help``,
        ``description``, ``report``...), its module not imported."""
        return self._declared[name]

    def __getitem__(self, name: str) -> Stage:
        if name not in self._stages:
            d = self._declared[name]
            self._stages[name] = d if isinstance(d, Stage) else _load(name)
        return self._stages[name]

    def __setitem__(self, name: str, stage: Stage) -> None:
        self._declared[name] = self._stages[name] = stage

    def __delitem__(self, name: str) -> None:
        del self._declared[name]
        self._stages.pop(name, None)

    def __iter__(self):
        return iter(self._declared)

    def __len__(self) -> int:
        return len(self._declared)

    def __repr__(self) -> str:
        return f"Stages({', '.join(self._declared)})"


def _load(name: str) -> Stage:
    """The built-in stage ``name``, its module imported now."""
    if name == "select":
        from .split.select import SelectStage as cls
    elif name == "embed":
        from .split.embed import EmbedStage as cls
    elif name == "score":
        from .split.score import ScoreStage as cls
    elif name == "dedup":
        from .corpus.dedup import DedupStage as cls
    elif name == "search":
        from .corpus.search import SearchStage as cls
    else:
        raise KeyError(name)
    return cls()


STAGES: Stages = Stages((Select, Embed, Score, Dedup, ClusterStage(), CompareStage(), Search))
