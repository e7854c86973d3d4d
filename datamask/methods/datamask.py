"""DATAMASK itself as a selection method (``--method datamask``: ``DataMask(method="datamask")``), and
the estimator's other methods on the same objective as selection methods of their own
(``greedy``, ``relaxed``)."""

from __future__ import annotations

import time

from ..core.backend import get_namespace, to_numpy
from .registry import Selection, register

__all__ = ["select_datamask", "select_greedy", "select_relaxed", "trajectory", "trajectory_rows"]


@register("datamask")
def select_datamask(E, q, cfg, seed, budget, callback=None, method="datamask") -> Selection:
    """DATAMASK's estimator on the split (its own pruning and budget rule, the config's)."""
    from ..estimator.estimator import DataMask  # (scikit-learn: imported when a split is selected)

    t0 = time.perf_counter()
    est = DataMask(**cfg.estimator_params(seed, method=method), callback=callback, token_budget=budget.split_tokens)
    lengths = None if budget.split_tokens is None else get_namespace(E).asarray(budget.lengths)
    est.fit(E, q, lengths=lengths)
    return Selection(
        mask=to_numpy(est.mask_).astype(bool),
        logits=None if est.logits_ is None else to_numpy(est.logits_),
        objective={k: float(v) for k, v in est.objective_.items()},
        budget=int(est.budget_),
        n_steps=int(est.n_steps_),
        seconds=time.perf_counter() - t0,
        history=[{k: (float(v) if k != "step" else int(v)) for k, v in h.items()} for h in est.history_],
        optimizer=_plain(est.optimizer_),
        start_history=est.start_history_,
        reference_cover=est.reference_cover_,
    )


def _plain(record: dict) -> dict:
    """Python scalars only (the manifest is JSON): numpy scalars become Python's."""
    return {k: v.item() if hasattr(v, "item") else v for k, v in record.items()}


def trajectory(sel: Selection) -> list:
    """One split's trajectory for the report (:func:`trajectory_rows` of the selection)."""
    return trajectory_rows(sel.optimizer, sel.start_history, sel.history)


def trajectory_rows(optimizer, start_history, history) -> list:
    """The start solver's progress (``phase`` "start", ``step`` its iteration or picks), then
    pg's evaluation points (``phase`` "pg"); each row has ``start``, what made the starting
    point (the ``optimizer`` record's). Outside pg the history's one record is the start's end
    (kept only when there is no start trace: greedy)."""
    opt = optimizer or {}
    start, pg = opt.get("start"), opt.get("method", "datamask") == "datamask"
    rows = [{"step": int(h["iteration"]), "objective": h["objective"], "phase": "start"} for h in start_history or ()]
    if pg or not rows:
        rows += [dict(h, phase="pg" if pg else "start") for h in history or ()]
    return [dict(r, start=start) for r in rows]


select_datamask.prunes = True


def _estimator_method(method):
    def fn(E, q, cfg, seed, budget, callback=None):
        return select_datamask(E, q, cfg, seed, budget, callback, method=method)

    fn.__name__ = f"select_{method}"
    fn.prunes = True  # runs DataMask, which prunes
    return fn


select_greedy = register("greedy")(_estimator_method("greedy"))
select_relaxed = register("relaxed")(_estimator_method("relaxed"))
