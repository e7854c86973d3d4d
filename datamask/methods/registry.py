"""The registry of selection methods, dispatched on ``config.method``, and the helpers
every method shares.

A method is a function registered with ``@register("name")``::

    fn(E, q, cfg, seed, budget) -> mask or Selection

``budget`` is the split's :class:`Budget`: S rows, or T tokens with the rows' token counts;
``budget.take(order)`` turns a ranking of the rows into a mask under either. A method that
returns a plain bool mask is timed and scored by :func:`select`; one that has more to say
(logits, steps, a trajectory) returns a :class:`Selection`. A method that needs more names
them as parameters and gets them: ``table`` (the split's Arrow table: clusters, token
counts), ``callback`` (the progress callback). Every caller (``datamask select``,
``datamask compare``, :func:`datamask.dask.select`) goes through :func:`select` and never
looks at the method. The methods live in the modules beside this one and register
themselves when :mod:`datamask.methods` imports them (every module of the package); this
module imports none of them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..core.backend import to_numpy
from ..core.kmeans import assign, fit_kmeans
from ..core.objectives import evaluate
from ..errors import DataError, renamed

__all__ = [
    "Selection",
    "Budget",
    "register",
    "select",
    "select_mask",
    "score",
    "budget_for",
    "prunes",
    "REGISTRY",
    "check_rows",
    "split_budget",
    "split_clusters",
    "token_counts",
    "selection_of",
    "AUTO_TOKEN_COLUMNS",
    "tokens_column_of",
    "fill_tokens",
    "plain_optimizer",
]

# Token-count columns used when --tokens-column is not given, in this order (FineWeb's, then
# datamask score's).
AUTO_TOKEN_COLUMNS = ("token_count", "n_tokens")

REGISTRY = {}


@dataclass
class Selection:
    mask: np.ndarray  # (N,) bool, numpy
    logits: np.ndarray | None  # (N,) float, numpy; -inf for pruned rows
    objective: dict  # objective, quality, diversity of the selection
    budget: int
    n_steps: int
    seconds: float
    history: list | None = None  # the estimator's evaluation records (step, objective, ...)
    info: dict = field(default_factory=dict)  # what else the method chose (SemDeDup's eps)
    # how the selection was made (DataMask.optimizer_; a method without one: its name, no pg step)
    optimizer: dict | None = None
    start_history: list | None = None  # the start solver's progress (DataMask.start_history_)


@dataclass(frozen=True)
class Budget:
    """One split's budget: ``rows`` (S) of its ``n`` rows, or ``tokens`` (T) with the rows'
    token counts ``lengths`` (then ``rows`` is None)."""

    n: int
    rows: int | None = None
    tokens: int | None = None
    lengths: np.ndarray | None = None

    def take(self, order) -> np.ndarray:
        """Bool mask of the first S rows of ``order``, or of its rows while they fit T tokens."""
        order = np.asarray(to_numpy(order))
        if self.tokens is not None:
            return fill_tokens(order, self.lengths, self.tokens)
        mask = np.zeros(self.n, dtype=bool)
        mask[order[: self.rows]] = True
        return mask


def register(name):
    """Register ``fn`` as the method ``name`` (see the module doc for its signature)."""

    def deco(fn):
        REGISTRY[name] = fn
        return fn

    return deco


def prunes(method: str) -> bool:
    """True when ``method`` applies quality-aware pruning (``prune``) before choosing."""
    return bool(getattr(REGISTRY.get(method), "prunes", False))


def budget_for(n_rows: int, cfg) -> int:
    """S for a split of ``n_rows`` (the estimator's own rule)."""
    if cfg.budget is not None:
        return int(cfg.budget)
    return int(round(float(cfg.ratio) * n_rows))


def score(E, q, mask, cfg, seed=0):
    """The split's objective of any selection (dict of floats)."""
    rec = evaluate(E, q, mask, lam=cfg.lam, diversity=cfg.diversity, reference_size=cfg.reference_size, seed=seed)
    return {k: float(v) for k, v in rec.items()}


def select(E, q, cfg, seed: int, where: str = "", callback=None, table=None, lengths=None, tokens=None) -> Selection:
    """Run ``cfg.method`` on one split; ``tokens``: its token budget, with ``lengths`` (the
    rows' token counts, numpy) instead of the config's row budget. A method's ValueError (its
    checks against this split) becomes a DataError naming ``where``."""
    t0 = time.perf_counter()
    out = _run(E, q, cfg, seed, where, callback, table, lengths, tokens)
    if not isinstance(out, Selection):
        out = selection_of(out, E, q, cfg, seed, t0)
    if out.optimizer is None:
        out.optimizer = plain_optimizer(cfg.method, out.objective.get("objective"), out.n_steps)
    return out


def select_mask(E, q, cfg, seed: int, where: str = "", table=None, lengths=None, tokens=None, method=None):
    """The bool mask (numpy) :func:`select` would return, without scoring it on the
    objective (a method that scores itself still does): for callers that score it alike
    with others (``select``'s side-by-side baselines). ``method``: the registered method to
    run instead of ``cfg.method``, under ``cfg``'s budget and parameters."""
    out = _run(E, q, cfg, seed, where, None, table, lengths, tokens, method)
    return np.asarray(to_numpy(out.mask if isinstance(out, Selection) else out), dtype=bool)


def _run(E, q, cfg, seed, where, callback, table, lengths, tokens, method=None):
    """``method``'s (default ``cfg.method``'s) own output (a mask or a :class:`Selection`)."""
    method = method or cfg.method
    try:
        fn = REGISTRY[method]
    except KeyError:
        raise DataError(f"unknown method {method!r}; known: {', '.join(sorted(REGISTRY))}") from None
    wants = _parameters(fn)
    kw = {k: v for k, v in (("table", table), ("callback", callback)) if k in wants}
    try:
        budget = split_budget(E.shape[0], cfg, lengths, tokens)
        return fn(E, q, cfg, seed, budget, **kw)
    except ValueError as e:  # the estimator's parameter checks against this split
        raise DataError(f"{where}: {e}") from None


def plain_optimizer(method: str, objective, n_steps=0) -> dict:
    """The ``optimizer`` record of a method that is no DataMask fit: itself, no pg step."""
    value = None if objective is None else float(objective)
    return {
        "solver": method,
        "start": method,
        "start_iterations": int(n_steps),
        "pg_steps": 0,
        "pg_improved": False,
        "pg_gain": 0.0,
        "stopped_by": None,
        "objective_start": value,
        "objective_end": value,
    }


def split_budget(n: int, cfg, lengths=None, tokens=None) -> Budget:
    """The :class:`Budget` of a split of ``n`` rows: ``tokens`` with ``lengths``, else the
    config's row budget (checked: ``1 <= S <= n``)."""
    if tokens is not None:
        return Budget(n, tokens=int(tokens), lengths=np.asarray(to_numpy(lengths), dtype=np.int64))
    S = budget_for(n, cfg)
    check_rows(S, n)
    return Budget(n, rows=S)


def _parameters(fn) -> set:
    import inspect

    return set(inspect.signature(fn).parameters)


# ---------------------------------------------------------------------- helpers for methods
def check_rows(S, n):
    """``1 <= S <= n`` or a ValueError that says so."""
    if int(S) != S or not 1 <= int(S) <= n:
        raise ValueError(f"budget must be an integer in [1, {n}] (the number of rows), got {S}")


# the 0.2 names, read for one release
__getattr__ = renamed(globals(), {"check_budget": "check_rows", "partition_clusters": "split_clusters"})


def split_clusters(E, cfg, seed, table=None):
    """(labels, centroids) for a split: the config's domain column when the table has it
    (centroids are the members' normalised means), else k-means with ``n_clusters``
    (default ``sqrt(rows / 10)``) fitted on the split."""
    col = getattr(cfg, "domain_column", None)
    if table is not None and col and col in table.schema.names:
        raw = table.column(col).to_numpy(zero_copy_only=False)
        _, lab = np.unique(raw, return_inverse=True)
        X = to_numpy(E).astype(np.float32)
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        cent = np.zeros((int(lab.max()) + 1, X.shape[1]), dtype=np.float64)
        np.add.at(cent, lab, X)
        return lab.astype(np.int64), cent.astype(np.float32)
    n = E.shape[0]
    k = getattr(cfg, "n_clusters", None) or max(1, int(round(math.sqrt(n / 10))))
    cent = fit_kmeans(E, min(int(k), n), seed=seed % 2**31)
    return to_numpy(assign(E, cent)[0]).astype(np.int64), cent


def tokens_column_of(cfg, names):
    """The token-count column: ``cfg.tokens_column`` when present, else the first of
    :data:`AUTO_TOKEN_COLUMNS` in ``names`` when no column was named; None otherwise."""
    col = getattr(cfg, "tokens_column", None)
    if col:
        return col if col in names else None
    return next((c for c in AUTO_TOKEN_COLUMNS if c in names), None)


def token_counts(cfg, table):
    """The split's token counts (float64) from its token-count column, or None."""
    col = None if table is None else tokens_column_of(cfg, table.schema.names)
    if col is not None:
        return table.column(col).to_numpy(zero_copy_only=False).astype(np.float64)
    return None


def fill_tokens(order, lengths, tokens):
    """Bool mask of the rows of ``order`` taken while they fit ``tokens`` (numpy)."""
    from ..core.tokens import fill

    t = np.asarray(lengths, dtype=np.float64)
    mask = np.zeros(t.shape[0], dtype=bool)
    mask[fill(np.asarray(order), t, int(tokens))] = True
    return mask


def selection_of(mask, E, q, cfg, seed, t0, n_steps=0, info=None):
    """A :class:`Selection` of a plain mask, scored on the split's objective."""
    mask = np.asarray(to_numpy(mask), dtype=bool)
    return Selection(
        mask=mask,
        logits=None,
        objective=score(E, q, mask, cfg, seed),
        budget=int(mask.sum()),
        n_steps=n_steps,
        seconds=time.perf_counter() - t0,
        info=dict(info or {}),
    )
