"""What a stage is, and the two templates a new stage starts from.

A stage is a step of a workflow and a ``datamask NAME INPUT OUTPUT`` command. It names
itself, its config class (whose fields are its flags and YAML keys), what it computes with
on a GPU, and the line printed after a run. :data:`~datamask.stages.registry.STAGES` lists
every stage by name; the command line, ``datamask run`` and ``datamask status`` read it.

**A per-split stage** (select, embed, score; datatrove's ``PipelineStep``) subclasses
:class:`SplitStage` and writes one method, :meth:`SplitStage.process`: one split's Arrow
table in, the output table and the split's own record fields out. It runs on a worker::

    class LinesStage(SplitStage):
        name, config, help = "lines", LinesConfig, "count the lines of every text"

        def process(self, table, split):
            n = pc.add(pc.count_substring(table.column(self.cfg.text_column), "\\n"), 1)
            return table.append_column("n_lines", n), {}

The runner does the rest, the same for every such stage: it reads each pending split
(``self.columns(cfg)`` says which columns, and checks them), gives ``process`` the split's
table and its :class:`~datamask.pipeline.io.Split`, times it, starts the record
(``name``, ``source``, ``start``, ``stop``, ``rows_in``, ``rows_out`` = the output's rows),
adds the fields ``process`` returned, writes the table atomically and the record after it,
resumes, checks every split from the client, and writes ``manifest.json`` last, with the
totals (``rows_in``, ``rows_out``, and each record field named in :attr:`SplitStage.summed`).

One object from plan to run: :meth:`SplitStage.bind` returns a copy of the stage bound to
the run's config (prepared: ``cfg``, ``cols``, ``plan_``), and that copy is what
:func:`~datamask.pipeline.runner.run_stage` runs and what each split task carries to its
worker. What a run computes once goes on the copy's attributes, as a scikit-learn estimator
keeps what ``fit`` learned, so attributes set by one hook are read by the next one and by
``process`` on the workers (they must pickle); the stage in
:data:`~datamask.stages.registry.STAGES` is never changed by a run.
The hooks, all optional, in the order they run:

* :meth:`~SplitStage.prepare` (client, nothing written): the checked config ``self.cfg``,
  ``self.cols`` and ``self.plan_`` (the splits); override to check more or to build what
  ``process`` needs (a model), calling ``super().prepare(cfg)`` first;
* :meth:`~SplitStage.check` (client, before the output is touched): corpus-wide checks;
* :meth:`~SplitStage.setup` (client, output prepared): corpus-wide passes whose results the
  splits read (corpus statistics);
* :meth:`~SplitStage.process` (worker): one split;
* :meth:`~SplitStage.totals` and :meth:`~SplitStage.extra` (client): the manifest's totals
  beyond the summed fields, and its keys of the stage's own.

**A whole-corpus stage** (cluster, compare: k-means and the comparison read every split at
once) subclasses :class:`CorpusStage` and writes :meth:`CorpusStage.compute`, which writes
the stage's files under OUTPUT and returns the manifest's keys of its own, ``totals``
among them (``{"rows_in", "rows_out", "splits"}``; the runner adds ``computed_this_run``
and ``resumed``). It lists the entries it writes in :attr:`CorpusStage.writes`::

    class CountStage(CorpusStage):
        name, config, help = "count", CountConfig, "count the corpus's rows"
        writes = ("count.json",)

        def compute(self, cfg, out, client, level):
            plan = plan_splits(cfg, TextColumns.from_config(cfg))
            write_json_atomic({"rows": plan.n_rows}, out / "count.json")
            return {"totals": {"rows_in": plan.n_rows, "rows_out": plan.n_rows, "splits": len(plan.splits)}}

``cfg`` arrives checked, with every path resolved. The output contract is the per-split
stages' one, from one place (:func:`~datamask.pipeline.corpus.run_corpus_stage`): a
directory that holds another config is refused in one line naming ``--overwrite``,
``--overwrite`` replaces it (everything in ``writes`` goes first; entries in
:attr:`CorpusStage.keeps` survive a rerun of the same config), a rerun with the same config
of a finished output returns its manifest, ``manifest.json`` is written last and ``datamask
status`` reads it. A ``ValueError`` from ``compute`` is a one-line DataError; work that
wants the machine's cores once the run's own Dask cluster is closed goes in
:meth:`CorpusStage.finish`.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:  # the stages' declarations import nothing heavy: pipeline.output (pyarrow) on use
    from ..pipeline.output import Output

__all__ = ["Stage", "SplitStage", "CorpusStage", "INPUT_HELP", "split_runs", "reused"]

INPUT_HELP = (
    "directory, file or glob of Parquet / JSONL / JSONL.gz, or the output directory of another "
    "datamask stage (its data/ is read)"
)


class Stage:
    """A step of a workflow and a ``datamask NAME INPUT OUTPUT`` command.

    Subclass :class:`SplitStage` or :class:`CorpusStage`.
    """

    name: ClassVar[str]
    config: ClassVar[type]  # a StageConfig subclass: one flag and one YAML key per field
    help: ClassVar[str] = ""  # the line in ``datamask --help``
    description: ClassVar[str | None] = None  # the paragraph of ``datamask NAME --help``
    output_help: ClassVar[str] = "output directory (data/, manifest.json)"
    input_help: ClassVar[str] = INPUT_HELP
    needs: ClassVar[tuple] = ("cupy",)  # the GPU libraries it computes with on a GPU
    report: ClassVar[bool] = False  # writes the HTML report after a command-line run (--no-report)
    whole_corpus: ClassVar[bool] = False  # no split records: ``datamask status`` reads the manifest alone
    stopped_run: ClassVar[str | None] = None  # what a stopped run leaves (the help's last lines; None: splits)

    def run(self, cfg, client=None) -> dict:
        """Run the stage on ``client`` (a local Dask cluster of its own when None); the manifest."""
        raise NotImplementedError(f"stage {self.name} does not define run()")

    def summary(self, manifest: dict, out) -> str:
        """The line printed when the stage finished into ``out``."""
        t = manifest["totals"]
        return f"datamask: {self.name}: {t['rows_out']:,} of {t['rows_in']:,} rows {split_runs(t, out)}"


class SplitStage(Stage):
    """A per-split stage: write :meth:`process` (see the module doc)."""

    summed: ClassVar[tuple] = ()  # record fields summed over the splits into the manifest's totals
    gpu_frames: ClassVar[bool] = False  # read splits as cudf on the RAPIDS level (process still gets Arrow)
    progress_rows: ClassVar[bool] = False  # process reports its rows (progress.row_progress): a bar over rows

    cfg = cols = plan_ = None  # set by prepare, on the run's copy (bind)

    # ------------------------------------------------------------------ the hooks
    def columns(self, cfg):
        """How a split is read and checked: the columns it needs (default: id and text)."""
        from ..pipeline.schema import TextColumns

        return TextColumns.from_config(cfg)

    def prepare(self, cfg) -> None:
        """Client, nothing written: ``self.cfg`` (checked, every path resolved), ``self.cols``,
        ``self.plan_`` (the input's splits, every file checked)."""
        from ..pipeline.runner import resolve_io
        from ..pipeline.split_job import plan_splits

        self.cfg = resolve_io(cfg, self.name)
        self.cols = self.columns(self.cfg)
        self.plan_ = plan_splits(self.cfg, self.cols, needs=self.needs)

    def check(self, client, pending) -> None:
        """Client, before the output directory is touched: corpus-wide checks of the pending splits."""

    def setup(self, client, pending, out: Output) -> None:
        """Client, the output prepared: corpus-wide passes whose results ``process`` reads."""

    def process(self, table, split):
        """Worker: one split. ``table`` is its rows (Arrow, the columns of ``self.cols`` checked),
        ``split`` its :class:`~datamask.pipeline.io.Split`. Returns ``(output table, record
        fields)``; a None table writes no file (an empty split)."""
        raise NotImplementedError(f"stage {self.name} does not define process()")

    def totals(self, records: list) -> dict:
        """The manifest's totals of the stage's own (default: each :attr:`summed` field summed)."""
        return {k: int(sum(r.get(k, 0) for r in records)) for k in self.summed}

    def extra(self, out: Output) -> dict:
        """The manifest's keys of the stage's own (written with it, last)."""
        return {}

    def steps_per_split(self) -> int:
        """Progress steps each split reports (select's policy gradient); 0: one bar step a split."""
        return 0

    @property
    def output(self) -> Output:
        """The run's output directory (on the client and on workers)."""
        from ..pipeline.output import Output

        return Output(self.cfg.output)

    # ------------------------------------------------------------------ the runner's side
    def bind(self, cfg) -> SplitStage:
        """A copy of this stage bound to ``cfg`` (:meth:`prepare` run on it; nothing written
        yet): the object :func:`~datamask.pipeline.runner.run_stage` runs."""
        run = copy.copy(self)
        run.prepare(cfg)
        return run

    def run(self, cfg, client=None, finish=None) -> dict:
        """Run the stage on ``client``; ``finish(manifest)`` (the command line's report) runs
        before ``manifest.json`` is written, which is written last. Returns the manifest."""
        from ..pipeline.runner import run_stage

        return run_stage(self.bind(cfg), client, finish=finish)


class CorpusStage(Stage):
    """A whole-corpus stage: write :meth:`compute` and :attr:`writes` (see the module doc)."""

    whole_corpus = True
    writes: ClassVar[tuple] = ()  # the entries it writes under OUTPUT (manifest.json and _datamask/ aside)
    keeps: ClassVar[tuple] = ()  # entries a rerun with the same config keeps (resumable outputs of their own)

    def compute(self, cfg, out, client, level) -> dict:
        """Write the stage's files under ``out`` (a local path or a URL: the
        :func:`~datamask.runtime.storage.location` of OUTPUT) with ``client`` on ``level``;
        return the manifest's keys of the stage's own, ``totals`` among them (``rows_in``,
        ``rows_out``, ``splits``). Raise :class:`~datamask.errors.DataError` on bad input."""
        raise NotImplementedError(f"stage {self.name} does not define compute()")

    def finish(self, cfg, out, result: dict) -> dict:
        """Client, after the run's own Dask cluster is closed: work that wants the machine's
        cores (compare's proxy LM); returns ``result`` (default: unchanged)."""
        return result

    def run(self, cfg, client=None) -> dict:
        from ..pipeline.corpus import run_corpus_stage

        return run_corpus_stage(self, cfg, client)

    def summary(self, manifest: dict, out) -> str:
        return f"datamask: {self.name}: {manifest['totals']['rows_in']:,} rows -> {out}{reused(manifest)}"


def reused(manifest: dict) -> str:
    """``" (finished before: nothing computed)"`` for the manifest of a finished output a
    whole-corpus stage returned as it was; else empty."""
    return " (finished before: nothing computed)" if manifest["totals"].get("computed_this_run") == 0 else ""


def split_runs(totals: dict, out) -> str:
    """``in N splits (C computed, R resumed) -> OUT``, the tail of a per-split stage's summary."""
    from ..pipeline.output import n_splits

    n = n_splits(totals)
    return (
        f"in {n} split{'' if n == 1 else 's'} ({totals['computed_this_run']} computed, {totals['resumed']} "
        f"resumed) -> {out}"
    )
