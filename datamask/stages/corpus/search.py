"""The ``search`` stage: ``datamask search INPUT OUTPUT --eval EVAL`` and ``stages: [search]``."""

from __future__ import annotations

import os

from ...analysis.search.config import SearchConfig
from ...analysis.search.run import KEEPS, WRITES, compute_search, resolve_eval
from ...pipeline.runner import resolve_io
from ..base import reused
from ..declared import Search

__all__ = ["SearchStage", "run_search"]


def run_search(cfg: SearchConfig, client=None) -> dict:
    """``datamask search`` from Python: the stage's run of ``cfg`` on ``client`` (a local cluster
    of its own, one worker per core, when None); returns the manifest."""
    return SearchStage().run(cfg, client)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class SearchStage(Search):
    """A whole-corpus stage (the output contract of :func:`~datamask.pipeline.corpus.run_corpus_stage`):
    its trial records (``_search/``) survive a rerun of the same config, so a killed search resumes."""

    # name, config, help: .declared
    needs = ()
    writes = WRITES + KEEPS
    keeps = KEEPS

    def run(self, cfg, client=None) -> dict:
        cfg = resolve_eval(resolve_io(cfg, self.name))  # evaluation sets checked before OUTPUT is touched
        if client is None and not (cfg.scheduler or cfg.scheduler_file) and cfg.n_workers is None:
            cfg = cfg.replace(n_workers=_cores())  # the trials run in parallel, one torch thread each
        return super().run(cfg, client)

    def compute(self, cfg, out, client, level) -> dict:
        return compute_search(cfg, out, client, level)

    def summary(self, m, out) -> str:
        return "\n".join(summary_lines(m, out))


def _fmt(v) -> str:
    if isinstance(v, dict):
        vals = list(v.values())
        if vals and isinstance(vals[0], dict):
            return f"{len(v)} sets"
        if len(v) > 4:
            return f"{len(v)} values, mean {sum(vals) / len(vals):.3g}"
        return "{" + ", ".join(f"{k}: {x:.3g}" for k, x in v.items()) + "}"
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _verified_lines(v) -> list:
    """Each evaluation set's verified losses and paired differences (the target set first)."""
    if not v:
        return []
    sets = v.get("sets") or {None: {"recipes": v, "differences": v["differences"]}}
    order = sorted(sets, key=lambda k: k != v.get("target"))
    lines = []
    for name in order:
        e = sets[name]
        on = "" if name is None else f" on {name}" + (" (the target)" if name == v.get("target") else "")
        lines.append(
            f"datamask: search: verified loss{on} "
            + ", ".join(
                f"{n} {e['recipes'][n]['mean']:.4f}"
                + (f" (sd {e['recipes'][n]['sd']:.4f})" if e["recipes"][n]["sd"] else "")
                for n in ("chosen", "default", "topk", "random")
                if n in e["recipes"]
            )
        )
        lines += [f"datamask: search: {d['words']}" for d in e["differences"].values()]
    return lines


def summary_lines(m: dict, out) -> list:
    """What ``datamask search`` prints when it ends."""
    t, px = m["models"], m["proxy"]
    passes, steps = px.get("passes") or {}, px.get("steps") or {}
    lines = [f"datamask: search: warning: {w}" for w in m.get("warnings", ())]  # first: what must be read
    lines += [
        f"datamask: search: {m['trials']} trials x {m['seeds']} seed(s) of a {px['params']:,}-parameter proxy "
        f"on {px['regime']} ({passes.get('min', 0):.2f}-{passes.get('max', 0):.2f} passes over a selection, "
        f"{steps.get('min', 0):,.0f}-{steps.get('max', 0):,.0f} optimiser steps; "
        f"{t['computed_this_run']} models trained now, {t['resumed']} resumed)" + reused(m),
        f"datamask: search: regressor {m['regressor']}, cross-validated Spearman {m['cv_spearman']:.3f} ("
        + ", ".join(f"{k} {v['spearman']:.3f}" for k, v in m["cv"].items())
        + ")",
        "datamask: search: chosen " + ", ".join(f"{k}={_fmt(v)}" for k, v in m["chosen"].items()),
    ]
    if m.get("budget"):
        lines.append(f"datamask: search: every selection budgeted by {m['budget']['words']}")
    lines += _verified_lines(m.get("verified"))
    rec = m.get("recommended")
    if rec and rec["name"] == "chosen":
        lines.append(f"datamask: search: recipe.yaml applies the chosen recipe: {rec['why']}")
    if m.get("leaks"):
        lines.append(
            f"datamask: search: {m['leaks']} input row(s) are rows of the evaluation sets (by exact text, or by id "
            "in a datamask holdout): kept out of every selection, and recipe.yaml's (its exclude)"
        )
    if m.get("train_share") is not None:
        lines.append(
            f"datamask: search: the workers trained {m['train_share']:.0%} of the time, "
            f"{m['tokens_per_worker_second']:,.0f} tokens per worker-second ({m['cost']['workers']} workers, "
            f"{m['wall_seconds']:.0f} s)"
        )
    lines.append(f"datamask: search: recipe {m['recipe']} (datamask run it) -> {out}")
    return lines
