"""What a stage is: a step of a workflow that describes itself.

A stage names itself, its config class (whose fields are its flags and YAML keys), what it
computes with on a GPU, and the line printed after a run. A *per-split* stage (select,
embed, score, dedup) also builds its :class:`~datamask.pipeline.runner.StageRun`, the plan of
splits and the function that handles one split (with its totals), and :meth:`Stage.run`
hands that to :func:`~datamask.pipeline.runner.run_stage`: the output checks, resume, the
client and the manifest are the same for every such stage. A *whole-corpus* stage
(cluster, compare) overrides :meth:`Stage.run` instead.

:mod:`datamask.pipeline.stages` lists every stage by name (:data:`~datamask.pipeline.stages.STAGES`);
the command line, ``datamask run`` and ``datamask status`` read that list.
"""

from __future__ import annotations

from typing import ClassVar

from ..output import MANIFEST, n_splits

__all__ = ["Stage", "INPUT_HELP", "split_runs"]

INPUT_HELP = (
    "directory, file or glob of Parquet / JSONL / JSONL.gz, or the output directory of another "
    "datamask stage (its data/ is read)"
)


class Stage:
    """A step of a workflow and a ``datamask NAME INPUT OUTPUT`` command.

    Subclasses set the class attributes and either :meth:`plan` (per-split stages) or
    :meth:`run` (whole-corpus stages), and :meth:`summary`.
    """

    name: ClassVar[str]
    config: ClassVar[type]  # a StageConfig subclass: one flag and one YAML key per field
    help: ClassVar[str] = ""  # the line in ``datamask --help``
    description: ClassVar[str | None] = None  # the paragraph of ``datamask NAME --help``
    output_help: ClassVar[str] = "output directory (data/, manifest.json)"
    input_help: ClassVar[str] = INPUT_HELP
    needs: ClassVar[tuple] = ("cupy",)  # the GPU libraries it computes with on a GPU
    report: ClassVar[bool] = False  # writes the HTML report after a command-line run (--no-report)
    marker: ClassVar[str] = MANIFEST  # the file a finished output holds

    def plan(self, cfg):
        """The :class:`~datamask.pipeline.runner.StageRun` of ``cfg``: its plan of splits, the
        per-split function, its hooks and totals (checked config; nothing written yet)."""
        raise NotImplementedError(f"stage {self.name} runs the whole corpus at once: call run()")

    def run(self, cfg, client=None) -> dict:
        """Run the stage on ``client`` (a local Dask cluster of its own when None); the manifest."""
        from ..runner import run_stage

        return run_stage(self.plan(cfg), client)

    def summary(self, manifest: dict, out) -> str:
        """The line printed when the stage finished into ``out``."""
        t = manifest["totals"]
        return f"datamask: {self.name}: {t['rows_out']:,} of {t['rows_in']:,} rows {split_runs(t, out)}"


def split_runs(totals: dict, out) -> str:
    """``in N splits (C computed, R resumed) -> OUT``, the tail of a per-split stage's summary."""
    n = n_splits(totals)
    return (
        f"in {n} split{'' if n == 1 else 's'} ({totals['computed_this_run']} computed, {totals['resumed']} "
        f"resumed) -> {out}"
    )
