"""The registry of selection methods, dispatched on ``config.method``, and the helpers
every method shares.

A method is a function registered with ``@register("name")``::

    fn(E, q, cfg, seed, budget) -> mask or Selection

``budget`` is the split's :class:`Budget`: S rows or T_s tokens (``split_tokens``), checked by the one budget
check (:func:`datamask.core.budget.check_budget`) before any method runs, and the rows' token
counts when the caller resolved them (:mod:`datamask.pipeline.tokens`: methods never count
tokens themselves); ``budget.take(order)`` turns a ranking of the rows into a mask under
either. A method that
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

import time
from dataclasses import dataclass, field

import numpy as np

from ..core import budget as core_budget
from ..core.backend import to_numpy
from ..core.budget import check_rows
from ..core.kmeans import assign, default_n_clusters, fit_kmeans
from ..errors import DataError
from ..estimator.evaluate import evaluate

__all__ = [
    "Selection",
    "Budget",
    "register",
    "select",
    "select_mask",
    "score",
    "prunes",
    "REGISTRY",
    "check_rows",
    "split_budget",
    "split_clusters",
    "selection_of",
    "fill_tokens",
    "plain_optimizer",
]

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
    # facility location on numpy: the fit's threshold lists (DataMask.reference_cover_), which the
    # split's side-by-side reads; dropped once it has (never sent from the worker)
    reference_cover: object | None = None


@dataclass(frozen=True)
class Budget:
    """One split's budget: ``rows`` (S) of its ``n`` rows, or ``split_tokens`` (T_s, the
    split's share of the corpus's ``tokens``; then ``rows`` is None); ``lengths``: the rows'
    token counts (always with ``split_tokens``; with ``rows`` when the input has them, e.g. for
    QuaDMix's token-weighted percentiles)."""

    n: int
    rows: int | None = None
    split_tokens: int | None = None
    lengths: np.ndarray | None = None

    def take(self, order) -> np.ndarray:
        """Bool mask of the first S rows of ``order``, or of its rows while they fit T_s tokens."""
        order = np.asarray(to_numpy(order))
        if self.split_tokens is not None:
            return fill_tokens(order, self.lengths, self.split_tokens)
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


def score(E, q, mask, cfg, seed=0):
    """The split's objective of any selection (dict of floats)."""
    rec = evaluate(
        E, q, mask, lam=cfg.lam, diversity=cfg.diversity, reference_size=cfg.solver("reference_size"), seed=seed
    )
    return {k: float(v) for k, v in rec.items()}


def select(
    E, q, cfg, seed: int, where: str = "", callback=None, table=None, lengths=None, split_tokens=None, budget=None
) -> Selection:
    """Run ``cfg.method`` on one split; ``split_tokens``: its token budget, with ``lengths`` (the
    rows' token counts, numpy) instead of the config's row budget. A method's ValueError (its
    checks against this split) becomes a DataError naming ``where``; so does a budget that
    does not fit it (:func:`split_budget`). ``budget``: the split's :class:`Budget`, when the
    caller checked it already (``select_split``, once for the method and its side-by-side)."""
    t0 = time.perf_counter()
    out = _run(E, q, cfg, seed, where, callback, table, lengths, split_tokens, budget=budget)
    if not isinstance(out, Selection):
        out = selection_of(out, E, q, cfg, seed, t0)
    if out.optimizer is None:
        out.optimizer = plain_optimizer(cfg.method, out.objective.get("objective"), out.n_steps)
    return out


def select_mask(
    E, q, cfg, seed: int, where: str = "", table=None, lengths=None, split_tokens=None, method=None, budget=None
):
    """The bool mask (numpy) :func:`select` would return, without scoring it on the
    objective (a method that scores itself still does): for callers that score it alike
    with others (``select``'s side-by-side baselines). ``method``: the registered method to
    run instead of ``cfg.method``, under ``cfg``'s budget and parameters."""
    out = _run(E, q, cfg, seed, where, None, table, lengths, split_tokens, method, budget)
    return np.asarray(to_numpy(out.mask if isinstance(out, Selection) else out), dtype=bool)


def _run(E, q, cfg, seed, where, callback, table, lengths, split_tokens, method=None, budget=None):
    """``method``'s (default ``cfg.method``'s) own output (a mask or a :class:`Selection`)."""
    method = method or cfg.method
    try:
        fn = REGISTRY[method]
    except KeyError:
        raise DataError(f"unknown method {method!r}; known: {', '.join(sorted(REGISTRY))}") from None
    wants = _parameters(fn)
    kw = {k: v for k, v in (("table", table), ("callback", callback)) if k in wants}
    if budget is None:  # the one check of the split's budget, unless its caller made it
        budget = split_budget(E.shape[0], cfg, lengths, split_tokens, where=where)
    try:
        return fn(E, q, cfg, seed, budget, **kw)
    except ValueError as e:  # the estimator's parameter checks against this split
        raise DataError(f"{where}: {e}") from None


def plain_optimizer(method: str, objective, n_steps=0) -> dict:
    """The ``optimizer`` record of a method that is no DataMask fit: itself, no pg step."""
    value = None if objective is None else float(objective)
    return {
        "method": method,
        "start": method,
        "start_iterations": int(n_steps),
        "pg_steps": 0,
        "pg_improved": False,
        "pg_gain": 0.0,
        "stopped_by": None,
        "objective_start": value,
        "objective_end": value,
    }


def split_budget(n: int, cfg, lengths=None, split_tokens=None, where: str = "") -> Budget:
    """The :class:`Budget` of a split of ``n`` rows: ``split_tokens`` (T_s), else the config's row
    budget, checked by :func:`datamask.core.budget.check_budget` against the split's rows
    (and the rows left after pruning, when ``cfg.method`` prunes); a DataError naming
    ``where`` (the message names the flag and the fix) if it does not fit."""
    try:
        S = core_budget.check_budget(
            n,
            ratio=cfg.ratio,
            budget=cfg.budget,
            tokens=split_tokens,
            prune=cfg.prune,
            prunes=prunes(cfg.method),
            flags=True,
        )
    except ValueError as e:
        raise DataError(f"{where}: {e}" if where else str(e)) from None
    t = None if lengths is None else np.asarray(to_numpy(lengths), dtype=np.int64)
    return Budget(n, rows=S, split_tokens=None if split_tokens is None else int(split_tokens), lengths=t)


def _parameters(fn) -> set:
    import inspect

    return set(inspect.signature(fn).parameters)


# ---------------------------------------------------------------------- helpers for methods


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
    k = getattr(cfg, "n_clusters", None) or default_n_clusters(n)
    cent = fit_kmeans(E, min(int(k), n), seed=seed % 2**31)
    return to_numpy(assign(E, cent)[0]).astype(np.int64), cent


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
