"""Trials as Dask tasks: one selection task per recipe, one training task per (recipe, seed).

:func:`submit_jobs` builds the graph for the (recipe, seed) pairs that have no finished record
yet — a record is finished when ``OUTPUT/_search/records/NAME-sSEED.json`` exists with the
job's fingerprint — and submits it (at a Dask priority: a batch submitted early behind
another fills the workers only as that one leaves them free); :func:`collect` gathers each
record as its task ends (the task itself has written it), :func:`cancel` stops a batch the
search no longer collects, and :func:`run_jobs` is the two in one. A killed search therefore
reruns only the missing pairs. The
input's splits are the graph's partitions (:func:`datamask.dask.read`'s), read on the workers;
the client handles one small record per task, never a document.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from ...runtime.storage import location
from .trials import RECORD_DIR, select_recipe, train_recipe

__all__ = [
    "Job",
    "Submitted",
    "submit_jobs",
    "collect",
    "cancel",
    "run_jobs",
    "read_record",
    "fingerprint_of",
    "worker_threads",
    "cost_summary",
    "proxy_regime",
]


@dataclass
class Job:
    """A recipe to train on ``seeds``; ``extra`` goes into every record (kind, trial, point, ...)."""

    name: str
    recipe: dict
    seeds: list
    extra: dict = field(default_factory=dict)


def fingerprint_of(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def read_record(out, name: str, seed: int, fingerprint: str) -> dict | None:
    """The finished record of (``name``, ``seed``) made with ``fingerprint``, or None."""
    p = location(out) / RECORD_DIR / f"{name}-s{int(seed)}.json"
    if not p.exists():
        return None
    try:
        rec = json.loads(p.read_text())
    except (ValueError, OSError):  # a record is written whole; anything else is not ours
        return None
    return rec if rec.get("fingerprint") == fingerprint and "steps" in rec else None  # (older: no steps, baseline)


def _graph(parts, jobs, cfg, out, todo, counts=None):
    """The selection and training tasks of ``jobs``' missing seeds. Every key starts
    ``search-select-TAG-`` or ``search-train-TAG-`` (TAG: 8 hex digits of the job's fingerprint),
    so Dask files every training under one task prefix, ``search-train``: the duration it learns
    from the trials is what it expects of a verification model, and it spreads a recipe's seeds
    over the workers (with a prefix per recipe, ``search-train-verify-random``, it took a new
    recipe's models for half-second tasks, queued its seeds on the worker holding the selection and
    did not steal them: workers idled 2.5 and 6.3 s in a profiled search_real run, round 11)."""
    import dask

    shares = {} if counts is None else {"counts": counts}  # every split's tokens: each recipe's shares

    tasks = []
    for job in jobs:
        missing = todo[job.name]
        if not missing:
            continue
        tag = job.extra["fingerprint"][:8]
        sel = dask.delayed(select_recipe, pure=True)(
            *parts, recipe=job.recipe, cfg=cfg, out=out, **shares, dask_key_name=f"search-select-{tag}-{job.name}"
        )
        for s in missing:
            tasks.append(
                dask.delayed(train_recipe, pure=True)(
                    sel,
                    name=job.name,
                    seed=s,
                    cfg=cfg,
                    out=out,
                    extra=job.extra,
                    dask_key_name=f"search-train-{tag}-{job.name}-s{s}",
                )
            )
    return tasks


@dataclass
class Submitted:
    """Jobs handed to the cluster: the records read back (``done``) and the futures of the rest."""

    done: list
    futures: list
    desc: str


def submit_jobs(
    client, parts, jobs: list, cfg, out: str, desc: str = "trials", priority: int = 0, counts=None
) -> Submitted:
    """Submit the (recipe, seed) pairs of ``jobs`` that have no finished record; returns at once.

    ``priority``: Dask's (higher runs first), so a batch submitted early at a lower priority
    fills the workers only when the batches before it leave one free. ``counts``: under a token
    budget, every split's tokens (:func:`~datamask.analysis.search.budget.count_search_tokens`)."""
    done, todo = [], {}
    for job in jobs:
        todo[job.name] = []
        for s in job.seeds:
            rec = read_record(out, job.name, s, job.extra["fingerprint"])
            if rec is None:
                todo[job.name].append(s)
            else:
                done.append(dict(rec, resumed=True))  # not timed in this run (cost_summary)
    tasks = _graph(parts, jobs, cfg, out, todo, counts)
    return Submitted(done, client.compute(tasks, priority=int(priority)) if tasks else [], desc)


def collect(client, batches: list, cfg, on_left=None) -> tuple[list, int]:
    """Every record of ``batches`` (:func:`submit_jobs`), waiting for their tasks, and how many
    were computed in this call. ``on_left(n)`` runs on the client with the number of tasks
    not yet ended: before the first ends, then as each one ends. On an error every other
    task of theirs is cancelled (and those running waited for) before it is raised."""
    from ...core.progress import bar as progress_bar
    from ...runtime.executor import run_tasks

    done = [r for b in batches for r in b.done]
    futures = [f for b in batches for f in b.futures]
    left = [len(futures)]
    if on_left is not None:
        on_left(left[0])
    if not futures:
        return done, 0

    def ended(i, r):
        bar.update(1)
        left[0] -= 1
        if on_left is not None:
            on_left(left[0])

    desc = " and ".join(b.desc for b in batches if b.futures)
    with progress_bar(
        len(futures), desc=f"datamask search: {desc}", unit="model", disable=cfg.quiet, leave=False
    ) as bar:
        new = run_tasks(client, futures, ended, what="trial(s)")
    return done + new, len(new)


def cancel(client, batches: list) -> None:
    """Cancel the tasks of ``batches`` not started and wait for those running (a search that
    stops before it collects a batch submitted early)."""
    from ...runtime.executor import stop

    futures = [f for b in batches if b is not None for f in b.futures]
    if futures:
        stop(client, futures, "trial(s)")


def run_jobs(client, parts, jobs: list, cfg, out: str, desc: str = "trials", counts=None) -> tuple[list, int]:
    """Every record of ``jobs`` (finished ones read back, the others computed now) and how
    many were computed in this call."""
    return collect(client, [submit_jobs(client, parts, jobs, cfg, out, desc, counts=counts)], cfg)


def worker_threads(client) -> int:
    """The threads of every worker of ``client`` (the models that can train at once)."""
    return int(sum(w.get("nthreads", 1) for w in client.scheduler_info(n_workers=-1)["workers"].values()))


def cost_summary(records: list, wall_seconds: float, workers: int) -> dict:
    """Where the workers' time went, over the models trained in this run (not the resumed ones).

    ``train_share``: all models' training seconds (optimiser steps) / (``wall_seconds`` x
    ``workers``); ``tokens_per_worker_second``: their trained tokens over the same;
    ``eval_seconds``: their final evaluations (a forward pass over every evaluation set);
    ``select_seconds``: their selections, each counted once (a recipe's seeds share one:
    records of one ``fingerprint``), as in ``model_seconds``, the models' tasks; the rest of the
    workers' time is preparation, loading, scheduling and idle workers. Both shares are None
    when ``workers`` is 0."""
    new = [r for r in records if not r.get("resumed")]
    shared = bool(new) and int(workers) > 0  # no workers counted (the scheduler did not answer): no share
    train = float(sum(r["train_seconds"] for r in new))
    tokens = int(sum(r["tokens"] for r in new))
    capacity = max(float(wall_seconds) * max(int(workers), 1), 1e-9)
    selections = {r.get("fingerprint", id(r)): float(r["select_seconds"]) for r in new}
    repeated = float(sum(r["select_seconds"] for r in new)) - sum(selections.values())  # in each seed's seconds
    return {
        "models_timed": len(new),
        "workers": int(workers),
        "train_seconds": round(train, 3),
        "eval_seconds": round(float(sum(r.get("eval_seconds", 0.0) for r in new)), 3),
        "select_seconds": round(sum(selections.values()), 3),
        "model_seconds": round(float(sum(r["seconds"] for r in new)) - repeated, 3),
        "train_share": round(train / capacity, 4) if shared else None,
        "tokens_per_worker_second": round(tokens / capacity, 1) if shared else None,
    }


def proxy_regime(given, records: list) -> dict:
    """The regime as given (``proxy_tokens``: a count, or ``"4x"`` passes over each selection), in
    words, and the passes, trained tokens, optimiser steps and, per evaluation set, the unigram
    margins every model made (min / median / max); ``records``: the models' rows (``records_frame``)."""
    import numpy as np

    from ..proxy_lm.runner import regime

    def spread(v):
        v = np.asarray(v, dtype=float)
        return {"min": float(v.min()), "median": float(np.median(v)), "max": float(v.max())} if len(v) else None

    return {
        "proxy_tokens": given,
        "regime": regime(given),
        "passes": spread([r["passes"] for r in records]),
        "trained_tokens": spread([r["tokens"] for r in records]),
        "steps": spread([r["steps"] for r in records]),
        "unigram_margin": {  # the models' rows (records_frame): one unigram_margin.SET per evaluation set
            k[len("unigram_margin.") :]: spread([r[k] for r in records])
            for k in (records[0] if records else {})
            if k.startswith("unigram_margin.")
        },
    }
