"""The registry of selection methods, dispatched on ``config.method``, and the helpers
every method shares.

A method is a function ``fn(E, q, config, seed, callback) -> Selection`` registered with
``@register("name")``; the pipeline calls :func:`select` and never looks at the method.
A method that needs more columns of the partition (clusters, token counts) sets
``fn.wants_table = True`` and receives the partition's Arrow table as ``table=``.
The methods live in the modules beside this one and register themselves when
:mod:`datamask.methods` is imported; this module imports none of them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..core.backend import to_numpy
from ..core.kmeans import assign, fit_kmeans
from ..core.objectives import evaluate
from ..errors import DataError

__all__ = [
    "Selection",
    "register",
    "select",
    "score",
    "budget_for",
    "prunes",
    "REGISTRY",
    "check_budget",
    "partition_clusters",
    "token_counts",
    "selection_of",
    "method_budget",
    "AUTO_TOKEN_COLUMNS",
    "tokens_column_of",
    "fill_tokens",
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


def register(name):
    def deco(fn):
        REGISTRY[name] = fn
        return fn

    return deco


def prunes(method: str) -> bool:
    """True when ``method`` applies quality-aware pruning (``prune``) before choosing."""
    return bool(getattr(REGISTRY.get(method), "prunes", False))


def budget_for(n_rows: int, cfg) -> int:
    """S for a partition of ``n_rows`` (the estimator's own rule)."""
    if cfg.budget is not None:
        return int(cfg.budget)
    return int(round(float(cfg.ratio) * n_rows))


def score(E, q, mask, cfg, seed=0):
    """The partition objective of any selection (dict of floats)."""
    rec = evaluate(E, q, mask, lam=cfg.lam, diversity=cfg.diversity, reference_size=cfg.reference_size, seed=seed)
    return {k: float(v) for k, v in rec.items()}


def select(E, q, cfg, seed: int, where: str = "", callback=None, table=None, lengths=None, tokens=None) -> Selection:
    """Run ``cfg.method`` on one partition; ``tokens``: its token budget, with ``lengths``
    (the rows' token counts, numpy) instead of the config's row budget."""
    try:
        fn = REGISTRY[cfg.method]
    except KeyError:
        raise DataError(f"unknown method {cfg.method!r}; known: {', '.join(sorted(REGISTRY))}") from None
    kw = {"table": table} if table is not None and getattr(fn, "wants_table", False) else {}
    if tokens is not None:
        kw.update(lengths=np.asarray(lengths, dtype=np.int64), tokens=int(tokens))
    try:
        return fn(E, q, cfg, seed, callback, **kw)
    except ValueError as e:  # the estimator's parameter checks against this partition
        raise DataError(f"{where}: {e}") from None


# ---------------------------------------------------------------------- helpers for methods
def check_budget(S, n):
    """``1 <= S <= n`` or a ValueError that says so."""
    if int(S) != S or not 1 <= int(S) <= n:
        raise ValueError(f"budget must be an integer in [1, {n}] (the number of rows), got {S}")


def partition_clusters(E, cfg, seed, table=None):
    """(labels, centroids) for a partition: the config's domain column when the table has
    it (centroids are the members' normalised means), else k-means with ``n_clusters``
    (default ``sqrt(rows / 10)``) fitted on the partition."""
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
    """The partition's token counts (float64) from its token-count column, or None."""
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


def selection_of(mask, E, q, cfg, seed, t0, n_steps=0):
    """A :class:`Selection` of a plain mask, scored on the partition objective."""
    mask = np.asarray(to_numpy(mask), dtype=bool)
    return Selection(
        mask=mask,
        logits=None,
        objective=score(E, q, mask, cfg, seed),
        budget=int(mask.sum()),
        n_steps=n_steps,
        seconds=time.perf_counter() - t0,
    )


def method_budget(E, cfg):
    """The budget S of a partition, checked against its rows."""
    S = budget_for(E.shape[0], cfg)
    check_budget(S, E.shape[0])
    return S
