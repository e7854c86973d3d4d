"""Selection inside one partition, dispatched on ``config.method``.

A method is a function ``fn(E, q, config, seed, callback) -> Selection`` registered with
``@register("name")``; the pipeline calls :func:`select` and never looks at the method.
A method that needs more columns of the partition (clusters, token counts) sets
``fn.wants_table = True`` and receives the partition's Arrow table as ``table=``.
Baselines (top-k, random, SemDeDup, QuaDMix, greedy, relaxed) plug in the same way, from
:mod:`datamask.baselines` (imported at the end of this module; their names are in
``config.METHODS``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .backend import to_numpy
from .errors import DataError
from .objectives import evaluate

__all__ = ["Selection", "register", "select", "score", "budget_for", "REGISTRY"]

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


def select(E, q, cfg, seed: int, where: str = "", callback=None, table=None) -> Selection:
    try:
        fn = REGISTRY[cfg.method]
    except KeyError:
        raise DataError(f"unknown method {cfg.method!r}; known: {', '.join(sorted(REGISTRY))}") from None
    kw = {"table": table} if table is not None and getattr(fn, "wants_table", False) else {}
    try:
        return fn(E, q, cfg, seed, callback, **kw)
    except ValueError as e:  # the estimator's parameter checks against this partition
        raise DataError(f"{where}: {e}") from None


@register("datamask")
def _datamask(E, q, cfg, seed, callback=None) -> Selection:
    from .optimizer import DataMask

    t0 = time.perf_counter()
    est = DataMask(**cfg.estimator_params(seed), callback=callback)
    est.fit(E, q)
    return Selection(
        mask=to_numpy(est.mask_).astype(bool),
        logits=None if est.logits_ is None else to_numpy(est.logits_),
        objective={k: float(v) for k, v in est.objective_.items()},
        budget=int(est.budget_),
        n_steps=int(est.n_steps_),
        seconds=time.perf_counter() - t0,
        history=[{k: (float(v) if k != "step" else int(v)) for k, v in h.items()} for h in est.history_],
    )


_datamask.prunes = True


from . import baselines as _baselines  # noqa: E402,F401  (registers the baseline methods)
