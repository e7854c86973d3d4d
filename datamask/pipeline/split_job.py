"""One split job: a selection's splits planned, its budget shared and checked, each split run.

Every selection of a corpus does the same three things, here and nowhere else
(``tests/test_one_plan.py`` fails if a second module cuts files into splits, counts a corpus's
tokens or shares a token budget):

1. **plan** the splits: the input's files cut into splits of at most ``split_size`` rows
   (:func:`plan_splits`, :func:`file_splits`), each split's row budget checked before anything
   runs (:meth:`SplitJob.of_files`);
2. **share** a token budget: one counting pass over the splits (or a frame's partitions), each
   split's share T_s (``split_tokens``) of the corpus's budget, and the check that ``--prune``
   leaves every split more than its share (:class:`TokenCounts`, :meth:`SplitJob.count_tokens`);
3. **run** a per-split function on each split with its share, under the one executor
   (:meth:`SplitJob.run`, :func:`~datamask.runtime.executor.run_tasks`).

Its users: ``datamask select`` (:mod:`datamask.stages.split.select`, whose splits the runner runs),
``datamask compare`` (:mod:`datamask.stages.corpus.compare_run`), the dataframe API
(:func:`datamask.dask.select`: a frame's partitions are its splits, :func:`frame_split_tokens`)
and the search's trials (:mod:`datamask.analysis.search`). The rules are
:mod:`datamask.core.budget`'s and :mod:`.tokens`' (docs/tokens.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError
from ..runtime.gpu import CPU, Level, select_level
from .io import Split, discover, inspect_file, make_splits
from .tokens import (
    apportion,
    budget_given,
    check_prune_left,
    count_corpus_tokens,
    prune_grid,
    prunes_checked,
    split_left,
)

__all__ = [
    "Plan",
    "SplitJob",
    "TokenCounts",
    "count_tokens",
    "cut",
    "file_splits",
    "frame_split_tokens",
    "plan_splits",
]


@dataclass
class Plan:
    cfg: object
    device: str  # "cpu" | "gpu" (what the config fingerprint records)
    splits: list
    d: int | None
    n_files: int
    n_rows: int
    skipped_files: list = field(default_factory=list)  # files with 0 rows
    level: Level = CPU  # what runs: frame/array library, k-means, cluster (datamask.runtime.gpu)


def cut(file_rows, split_size: int) -> list[Split]:
    """The splits of ``file_rows`` (``(file, rows)`` pairs, in order): each file cut into
    near-equal row ranges of at most ``split_size`` rows."""
    splits = []
    for f, n in file_rows:
        splits.extend(make_splits(f, int(n), int(split_size)))
    return splits


def file_splits(input, split_size: int) -> list[Split]:
    """The splits of ``input`` (a path, glob or URL), each file's rows from its footer or lines,
    without the column checks of :func:`plan_splits`: the same names, rows and identities."""
    from ..runtime.files import count_rows

    return cut(((f, count_rows(f)) for f in discover(str(input))), split_size)


def plan_splits(cfg, cols, device=None, partition_on=None, on_file=None, needs=("cupy",), input=None) -> Plan:
    """Input files and their splits, with ``cols``' checks on every file (footers / line 1).

    ``input``: the input when not ``cfg.input`` (``run_compare``'s argument). ``on_file(file, width)`` sees each file's embedding width (None without one). ``needs``:
    the GPU libraries the stage computes with on a GPU (see :func:`~datamask.runtime.gpu.select_level`)."""
    input = cfg.input if input is None else str(input)
    files = discover(input)
    rows, empty = [], []
    for f in files:
        n, d = inspect_file(f, cols, partition_on)
        if on_file is not None:
            on_file(f, d)
        if n == 0:
            empty.append(f.rel)
        rows.append((f, n))
    total = sum(n for _, n in rows)
    if total == 0:
        raise DataError(f"empty input: {len(files)} file(s) under {input!r} hold 0 rows")
    splits = cut(rows, cfg.split_size)
    seen = {}
    for s in splits:
        other = seen.setdefault(s.name, s)
        if other is not s:
            raise DataError(
                f"{other.where()} and {s.where()} would both be written as {s.name}.parquet (their "
                "file names differ only in characters a file name cannot hold); rename one"
            )
    level = select_level(device if device is not None else cfg.device, needs)
    return Plan(cfg, level.device, splits, None, len(files), total, empty, level)


@dataclass
class TokenCounts:
    """Every split's tokens (in the order of the splits, ``keys`` naming them), where they were
    counted, and, when a prune is checked, the tokens pruning leaves in each split at every prune
    of ``grid`` (``left``: a list per split, None where its quality is unusable).

    One count serves every budget: :meth:`share` gives a config's shares (a search shares the
    same count for each recipe)."""

    tokens: list
    source: str | None
    where: list
    left: list | None = None
    grid: tuple = ()
    keys: list | None = None  # the splits' names (files) or partition numbers (a frame); None: 0, 1, ...

    @classmethod
    def of_frame(cls, frame, keys, key: str = "name", grid=(), where=None) -> TokenCounts:
        """The counting pass's frame (a row per split: ``key``, ``tokens``, and with ``grid``
        ``where`` and ``left`` as JSON; ``source`` when known) in the order of ``keys``."""
        rows = frame.set_index(key).loc[list(keys)]
        source = ", ".join(sorted(set(frame["source"]))) if "source" in frame.columns else None
        return cls(
            tokens=[int(t) for t in rows["tokens"]],
            source=source,
            where=list(rows["where"]) if grid else list(where or [str(k) for k in keys]),
            left=[json.loads(x) for x in rows["left"]] if grid else None,
            grid=tuple(grid),
            keys=list(keys),
        )

    @property
    def total(self) -> int:
        return int(sum(self.tokens))

    def share(self, cfg) -> tuple[list, dict]:
        """``(split_tokens, info)``: each split's share T_s of ``cfg``'s token budget (in order) and
        the budget as the manifest records it (``budget``, ``corpus_tokens``, ``covers_corpus``,
        ``source``); a budget over the corpus's tokens is a DataError."""
        shares, info = apportion(dict(enumerate(self.tokens)), cfg, self.source)
        return [int(shares[i]) for i in range(len(self.tokens))], dict(info, source=self.source)

    def split_tokens(self, cfg) -> list:
        """Each split's share of ``cfg``'s token budget, in order."""
        return self.share(cfg)[0]

    def info(self, cfg) -> dict:
        """``cfg``'s budget as ``select``'s manifest records it."""
        return self.share(cfg)[1]

    def by_key(self, cfg) -> dict:
        """``{key: T_s}``: each split's share under its name (or partition number)."""
        keys = self.keys if self.keys is not None else range(len(self.tokens))
        return dict(zip(keys, self.split_tokens(cfg)))

    def splits_left(self, cfg) -> list:
        """:func:`~datamask.pipeline.tokens.split_left` of every split at ``cfg``'s shares."""
        return [
            split_left(w, t, s, json.dumps(lf), self.grid)
            for w, t, s, lf in zip(self.where, self.tokens, self.split_tokens(cfg), self.left)
        ]

    def check_prune(self, cfg, prune=None, whose: str = "") -> None:
        """Refuse ``prune`` (``cfg.prune``) when it leaves some split no more tokens than its share
        of ``cfg``'s budget (:func:`~datamask.pipeline.tokens.check_prune_left`)."""
        prune = float(cfg.prune if prune is None else prune)
        check_prune_left(self.splits_left(cfg), prune, budget_given(cfg, self.info(cfg)), whose)

    def most_tokens(self) -> np.ndarray:
        """Per prune of ``grid``, the largest corpus budget ``T`` (``floor(token_ratio x tokens)``)
        whose every split's share stays below the tokens pruning leaves there (``select``'s rule,
        :func:`~datamask.pipeline.tokens.prune_shortfall`: a share of ``T x t_s // total`` fits when
        it is below ``left``, under 1 or the whole split), in exact integers."""
        total, out = self.total, []
        for k in range(len(self.grid)):
            most = total  # T = total keeps every split whole: it fits
            for t, lf in zip(self.tokens, self.left):
                if lf is None or t == 0:
                    continue
                # share < max(left, 1)  <=>  T x t < max(left, 1) x total (T below the corpus's tokens)
                most = min(most, -(-max(int(lf[k]), 1) * total // int(t)) - 1)
            out.append(most)
        return np.asarray(out, dtype=np.int64)

    def room(self, ratios) -> np.ndarray:
        """The largest prune of ``grid`` at which every split keeps more tokens than its share of each
        token ratio of ``ratios`` (what ``select`` at that ratio accepts); ``1 - ratio`` without ``left``."""
        r = np.atleast_1d(np.asarray(ratios, dtype=float))
        if not self.left:
            return 1.0 - r
        T = np.floor(r * self.total).astype(np.int64)  # apportion's budget of a token ratio
        most, grid = self.most_tokens(), np.asarray(self.grid, dtype=float)
        ok = (T[:, None] <= most[None, :]) | (T[:, None] >= self.total)  # the whole corpus: every split whole
        last = np.where(ok, np.arange(len(grid)), 0).max(axis=1)  # the fit is monotone in the prune
        return grid[last]


def count_tokens(client, splits, cfg, cols, *, drops=None, excluded=None, grid=()) -> TokenCounts:
    """Every split's tokens (one task per split: the rows its selection sees, without ``drops``,
    the holdout and the ``excluded`` rows) and, with ``grid``, the tokens pruning leaves at each."""
    frame = count_corpus_tokens(client, splits, cfg, drops or {}, cols, prunes=grid, excluded=excluded)
    return TokenCounts.of_frame(frame, [s.name for s in splits], "name", grid, where=[s.where() for s in splits])


@dataclass
class SplitJob:
    """A selection of the input's files, split by split: the plan, each split's token share (under
    a token budget, once counted) and the budget as the manifest records it."""

    cfg: object
    plan: Plan
    counts: TokenCounts | None = None
    split_tokens: dict | None = None  # {split name: T_s} under a token budget
    token_info: dict | None = None

    @classmethod
    def of_files(cls, cfg, cols, device=None, *, check_rows=True, **plan_kw) -> SplitJob:
        """The input's splits (:func:`plan_splits`); ``check_rows``: every split's row budget checked
        (the one check, :func:`~datamask.methods.registry.split_budget`) before anything runs (a token
        budget is checked once the tokens are counted, :meth:`count_tokens`)."""
        from ..methods.registry import split_budget

        plan = plan_splits(cfg, cols, device, **plan_kw)
        if check_rows and not cfg.budget_in_tokens:
            for s in plan.splits:
                split_budget(s.rows, cfg, where=s.where())
        return cls(cfg, plan)

    @property
    def splits(self) -> list:
        return self.plan.splits

    def count_tokens(self, client, cols, *, drops=None, excluded=None, prunes=None) -> SplitJob:
        """Under a token budget: count (:func:`count_tokens`), share it out, and refuse a prune that leaves
        some split no more than its share (``prunes``: the prunes checked, by default
        :func:`~datamask.pipeline.tokens.prunes_checked`), before any split is selected."""
        cfg = self.cfg
        prunes = prunes_checked(cfg) if prunes is None else list(prunes)
        grid = prune_grid(prunes)
        self.counts = count_tokens(client, self.splits, cfg, cols, drops=drops, excluded=excluded, grid=grid)
        self.split_tokens = self.counts.by_key(cfg)
        self.token_info = self.counts.info(cfg)
        for p in prunes:
            self.counts.check_prune(cfg, p)
        return self

    def share(self, split) -> int | None:
        """``split``'s token share T_s (None under a row budget)."""
        return None if self.split_tokens is None else self.split_tokens[split.name]

    def run(self, client, fn, *args, what: str = "split(s)") -> list:
        """``fn(split, split_tokens, *args)`` for every split, one task each, under the one executor
        (:func:`~datamask.runtime.executor.run_tasks`; ``client`` None: Dask's current scheduler);
        the results in the order of the splits."""
        import dask

        tasks = [dask.delayed(fn)(s, self.share(s), *args) for s in self.splits]
        if client is None:
            return list(dask.compute(*tasks))
        from ..runtime.executor import run_tasks

        return run_tasks(client, tasks, what=what)


def frame_split_tokens(ddf, cfg, count_part):
    """(lazy) ``{partition: T_s}``: a Dask DataFrame's token budget shared out by its partitions (its
    splits), as a file job shares a corpus's: one counting pass, ``count_part(df, partition_info,
    cfg=, prunes=)`` per partition returning a row ``split``, ``tokens`` (with a prune grid also
    ``where`` and ``left``, JSON), then, in one task before any partition selects, the shares and the
    refusal of a ``prune`` that leaves a partition no more than its share."""
    import dask
    import pandas as pd

    grid = prune_grid(prunes_checked(cfg))
    cols_meta = {"split": "int64", "tokens": "int64", **({"where": object, "left": object} if grid else {})}
    counts = ddf.map_partitions(
        count_part,
        cfg=cfg,
        prunes=grid,
        meta=pd.DataFrame({c: pd.Series([], dtype=t) for c, t in cols_meta.items()}),
        enforce_metadata=False,
    )
    return dask.delayed(_frame_shares, pure=True)(counts.to_delayed(), cfg, grid)


def _frame_shares(counts, cfg, grid):
    import pandas as pd

    frame = pd.concat(counts)
    shared = TokenCounts.of_frame(frame, frame["split"].tolist(), "split", grid)
    if grid:
        shared.check_prune(cfg)
    return shared.by_key(cfg)
