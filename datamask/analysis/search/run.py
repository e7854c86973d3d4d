"""The search, start to end: prepare, trials, regressor, choice, verification, outputs.

:func:`compute_search` is what the ``search`` stage computes once its output is checked:

1. one Dask task prepares what every trial shares (:mod:`.prepare`);
2. ``trials`` points of the space (scrambled Sobol, seeded), each selected and trained on
   ``seeds`` proxy seeds as Dask tasks, every record written as it finishes (:mod:`.schedule`);
3. the regressors cross-validated on the trials' mean loss, the best (or the one asked for)
   fitted on all of them (:mod:`.regress`);
4. ``candidates`` points predicted and the ``top`` best averaged into the chosen recipe (:mod:`.choose`);
5. the chosen recipe, the default one, top-k and random retrained on ``verify`` fresh seeds (:mod:`.verify`);
6. ``trials.parquet``, ``verify.parquet``, ``recipe.yaml``, the figures and ``search.json`` (:mod:`.outputs`).

No worker waits on the client where it need not: the references' models (when no chosen
recipe changes them) are submitted once every trial left has a worker, so they train while
the last trials end and the regressor is fitted, and the workers share them with the chosen
recipe's models, which follow as soon as the fit ends (ahead of the references not started);
the trials' outputs are written while they train. ``search.json``'s ``cost`` gives
the workers' training share and the client's wall seconds per phase.
"""

from __future__ import annotations

import json
import time

import numpy as np

from ...errors import ConfigError, DataError
from ...runtime.files import write_json_atomic
from ...runtime.storage import location
from . import figures as figs
from .budget import count_search_tokens
from .choose import choose, curves
from .outputs import records_frame, trials_frame, write_parquet, write_recipe
from .prepare import prepare, read_prep
from .regress import fit_best
from .schedule import Job, cancel, collect, cost_summary, fingerprint_of, submit_jobs, worker_threads
from .space import Space, parse_space
from .summary import search_summary, target_set
from .summary import tracks as _tracks  # noqa: F401  (tests read it here)
from .verify import early_references, recommend, summarize, verification_recipes, verification_seeds

__all__ = ["compute_search", "resolve_eval", "WRITES", "KEEPS", "corpus_parts", "count_search_tokens", "build_space"]

#: what a search writes under OUTPUT; ``_search`` (the records) survives a rerun of the same config
WRITES = ("trials.parquet", "verify.parquet", "search.json", "recipe.yaml", "quadmix_params.yaml", "figures", "report")
KEEPS = ("_search",)


def resolve_eval(cfg):
    """``cfg`` with its evaluation sets resolved on the client and checked to exist (one line each),
    and its ``target`` one of their names."""
    from ...pipeline.io import discover
    from ...runtime.storage import inside, resolve
    from ..proxy_lm.data import eval_set_names

    if not cfg.eval:
        raise ConfigError("search needs an evaluation set: --eval EVAL (Parquet/JSONL text the proxies are judged on)")
    names = eval_set_names(cfg.eval)
    if cfg.target is not None and cfg.target not in names:
        raise ConfigError(f"--target {cfg.target!r} names no evaluation set; the sets are {', '.join(names)}")
    evals = [resolve(e) for e in cfg.eval]
    for e in evals:
        if cfg.output and inside(e, resolve(cfg.output)):
            raise ConfigError(f"evaluation set {e} is inside the output {cfg.output}; keep it outside")
        try:
            discover(e)
        except DataError as err:
            raise DataError(f"evaluation set {e}: {err}") from None
    return cfg.replace(eval=evals)


def corpus_parts(cfg, splits=None):
    """The input's splits as delayed partitions (read on the workers) and their identities;
    ``splits``: the planned splits (:func:`_plan`), planned here when None."""
    import dask
    import dask.dataframe as dd

    from ...pipeline.frames import read_frame
    from ...pipeline.io import Split
    from ...pipeline.schema import Columns

    cols = Columns.from_config(cfg)
    splits = _plan(cfg) if splits is None else splits
    first = splits[0]
    with dask.config.set({"dataframe.convert-string": False}):
        meta = read_frame(Split(first.path, first.rel, first.fmt, first.start, first.start), cols, "cpu")
        ddf = dd.from_map(read_frame, splits, cols=cols, device="cpu", meta=meta, enforce_metadata=False)
        return ddf.to_delayed(), [s.identity for s in splits]


def _plan(cfg) -> list:
    """The input's splits (``select``'s plan: the same files, rows and identities)."""
    from ...pipeline.schema import Columns
    from ...pipeline.split_job import plan_splits

    return plan_splits(cfg, Columns.from_config(cfg), device="cpu").splits


def _prepared(client, parts, cfg, out, fp) -> dict:
    import dask

    got = read_prep(out, fp)
    if got is None:
        task = dask.delayed(prepare, pure=True)(
            *parts, out=str(out), cfg=cfg, fingerprint=fp, dask_key_name=f"search-prepare-{fp}"
        )
        got = client.compute(task).result()
    return got


def build_space(cfg, prep: dict, counts=None) -> Space:
    """The expanded space: the config's items, the input's domains and quality components
    (QuaDMix's default space merges every component when the input has two or more); under a
    ratio in tokens, ``counts`` (:class:`~datamask.pipeline.split_job.TokenCounts`) cap each trial's ``prune``."""
    items = cfg.items()
    if cfg.method == "quadmix" and cfg.space is None and len(prep["components"]) >= 2:
        items += parse_space("weights=auto", "quadmix")
    cap = counts.room if cfg.ratio_in_tokens and counts is not None and counts.left else None
    return Space.build(items, cfg.method, prep["domains"], prep["components"], cfg.base_ratio(), cap)


def _trial_jobs(cfg, space, base_fp) -> list:
    U = space.design(int(cfg.trials), int(cfg.seed))
    seeds = [int(cfg.seed) + k for k in range(int(cfg.seeds))]
    jobs = []
    for i, u in enumerate(U):
        recipe = space.recipe(u)
        fp = fingerprint_of(base_fp, "trial", recipe)
        extra = {"kind": "trial", "trial": i, "u": [float(x) for x in u], "fingerprint": fp}
        jobs.append(Job(f"trial-{i:04d}", recipe, seeds, extra))
    return jobs


def _target_loss(frame, target: str | None) -> str:
    """The column of the target set's loss (``loss.SET``; ``loss`` when there is no such column)."""
    return f"loss.{target}" if target and f"loss.{target}" in frame else "loss"


def _fit(space, frame, cfg, target=None) -> dict:
    """The regressors on the trials' mean loss on the ``target`` set, the best fitted, the choice."""
    means = frame.groupby("trial", sort=True).mean(numeric_only=True)
    by_trial = frame.drop_duplicates("trial").set_index("trial")
    X = np.stack([space.recipe_features(json.loads(r)) for r in by_trial.loc[means.index, "recipe"]])
    y = means[_target_loss(frame, target)].to_numpy()
    name, model, cv = fit_best(cfg.regressor, X, y, int(cfg.seed))
    choice = choose(space, model, int(cfg.candidates), int(cfg.top), int(cfg.seed))
    return {"regressor": name, "model": model, "cv": cv, **choice}


def _verify_jobs(cfg, recipes: dict, base_fp) -> list:
    seeds = verification_seeds(cfg.seed, cfg.verify)
    return [
        Job(f"verify-{name}", r, seeds, {"kind": "verify", "fingerprint": fingerprint_of(base_fp, "verify", r)})
        for name, r in recipes.items()
    ]


def _early_references(client, parts, cfg, out, space, base_fp, counts):
    """The references' verification models, submitted before the chosen recipe is known (when
    the trials left no longer fill the workers: :func:`_run`) at a lower priority than the chosen
    recipe's, so no worker waits while the last trials end and the client fits the regressor,
    and some are left to train beside the chosen recipe's; None when they depend on the chosen
    recipe (its searched ``ratio``) or ``--verify 0``."""
    refs = early_references(cfg.method, [p.name for p in space.params], extra=cfg.reference_recipes())
    if int(cfg.verify) < 1 or refs is None:
        return None
    jobs = _verify_jobs(cfg, refs, base_fp)
    return submit_jobs(client, parts, jobs, cfg, str(out), "references", priority=-1, counts=counts)


def _submit_verification(client, parts, cfg, out, chosen, base_fp, early, counts, space) -> tuple:
    """(batch of the verification models not submitted early, every verified recipe by name)."""
    recipes = verification_recipes(
        cfg.method, chosen, None, lambda r: float(space.cap_at([r])[0]), extra=cfg.reference_recipes()
    )
    if int(cfg.verify) < 1:
        return None, recipes
    todo = {"chosen": recipes["chosen"]} if early is not None else recipes
    jobs = _verify_jobs(cfg, todo, base_fp)
    return submit_jobs(client, parts, jobs, cfg, str(out), "verification", counts=counts), recipes


def _verification(client, cfg, batches, target=None):
    if not batches:
        return None, None, 0, []
    recs, n = collect(client, batches, cfg)
    frame = records_frame(recs)
    frame["name"] = frame["name"].str.replace("verify-", "", regex=False)
    return frame, summarize(frame, target), n, recs


def _trial_figures(out, space, frame, fit, target=None) -> tuple:
    """The trials' figures (drawn while the workers train the verification models) and the
    trials' means (``loss``: the ``target`` set's, what the regressor fitted)."""
    means = frame.groupby("trial", sort=True).mean(numeric_only=True)
    means["loss"] = means[_target_loss(frame, target)]
    firsts = frame.drop_duplicates("trial").set_index("trial").loc[means.index]
    for c in space.columns:  # choices are text: the first seed's row holds them
        if c not in means.columns:
            means[c] = firsts[c].to_numpy()
    drawn = {
        "loss_by_parameter": figs.loss_by_parameter(
            space, means, curves(space, fit["model"], fit["recipe"]), fit["recipe"]
        ),
        "loss_tracks": figs.loss_tracks(means),
    }
    for name, fig in drawn.items():
        figs.save_png(fig, location(out) / "figures" / f"{name}.png")
    return [f"figures/{n}.png" for n in drawn], means


def _verification_figure(out, vframe, vsum) -> list:
    if vframe is None:
        return []
    figs.save_png(figs.verification_bars(vframe, vsum), location(out) / "figures" / "verification.png")
    return ["figures/verification.png"]


class _Clock:
    """Wall seconds of the search's phases on the client (``search.json``'s ``cost.phases``)."""

    def __init__(self):
        self.t0 = self.t = time.perf_counter()
        self.phases: dict = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.phases[name] = round(now - self.t, 3)
        self.t = now

    @property
    def total(self) -> float:
        return round(time.perf_counter() - self.t0, 3)


def _run(client, parts, cfg, out, space, base_fp, clock, workers: int, counts=None, target=None) -> tuple:
    """Trials, fit and verification, every batch submitted as its inputs allow and the workers
    need it: the references once the trials left are no more than the ``workers`` (each has
    one: submitted earlier, Dask ran them between the trials, and the workers then waited
    through the fit and the chosen recipe's last models: search_real.md, round 10), the chosen
    recipe's models as soon as the fit ends, ahead of the references not started; the
    trials' outputs are written while the verification trains. A batch not collected when
    the search stops is cancelled (its running tasks waited for). ``counts``: every split's tokens
    under a token budget (:func:`count_search_tokens`); ``target``: the evaluation set the regressor
    fits and the verification's rule reads (None: the mean over the sets)."""
    trials = submit_jobs(client, parts, _trial_jobs(cfg, space, base_fp), cfg, str(out), counts=counts)
    early: dict = {}  # the references' batch (None: they wait for the chosen recipe), once submitted
    batches = []

    def refs_when_drained(left: int) -> None:
        if "refs" not in early and left <= max(int(workers), 1):
            early["refs"] = _early_references(client, parts, cfg, out, space, base_fp, counts)
            batches.append(early["refs"])

    try:
        recs, n_trials = collect(client, [trials], cfg, on_left=refs_when_drained)
        clock.lap("trials")
        frame = trials_frame(recs, space)
        fit = _fit(space, frame, cfg, target)
        clock.lap("fit")
        late, recipes = _submit_verification(
            client, parts, cfg, out, fit["recipe"], base_fp, early["refs"], counts, space
        )
        batches.append(late)
        write_parquet(frame, location(out) / "trials.parquet")
        drawn, means = _trial_figures(out, space, frame, fit, target)
        vframe, vsum, n_verify, vrecs = _verification(client, cfg, [b for b in batches if b is not None], target)
        clock.lap("verification")
    except BaseException:
        cancel(client, batches)
        raise
    return recs, n_trials, frame, fit, means, drawn, (vframe, vsum, n_verify, vrecs, recipes)


def compute_search(cfg, out, client, level=None) -> dict:
    """Run the search of ``cfg`` (checked, paths resolved) into ``out`` on ``client``; returns the
    manifest's keys of its own (``search.json``'s content, with ``totals``)."""
    clock = _Clock()
    splits = _plan(cfg)
    parts, identities = corpus_parts(cfg, splits)
    fp = fingerprint_of(cfg.fingerprint("cpu"), identities)
    # before the preparation: a budget too large, or a prune that leaves too few tokens, is refused
    tokens, token_info = count_search_tokens(client, cfg, splits)
    prep = _prepared(client, parts, cfg, out, fp)
    clock.lap("prepare")
    base_fp = fingerprint_of(fp, prep["tokenizer"]["sha256"], prep["eval_fingerprint"])
    if prep["leaks"]:  # leaked rows are kept out before selecting (they were dropped after)
        base_fp = fingerprint_of(base_fp, "leaks kept out before selecting")
    space = build_space(cfg, prep, tokens)
    workers = worker_threads(client)  # counted while the cluster works (a loaded one's may miss a late count)
    recs, n_trials, frame, fit, means, drawn, verified = _run(
        client, parts, cfg, out, space, base_fp, clock, workers, tokens, target_set(cfg, prep)
    )
    vframe, vsum, n_verify, vrecs, recipes = verified
    files = ["trials.parquet"]
    if vframe is not None:
        write_parquet(vframe, location(out) / "verify.parquet")
        files.append("verify.parquet")
    drawn += _verification_figure(out, vframe, vsum)
    total = len(recs) + (0 if vframe is None else len(vframe))
    counts = {"trained": total, "computed_this_run": n_trials + n_verify, "resumed": total - n_trials - n_verify}
    recommended = recommend(vsum, recipes)
    summary = search_summary(
        cfg, space, prep, fit, (frame, vframe), means, vsum, counts, files + drawn, recommended, token_info
    )
    summary["recipe"] = write_recipe(cfg, out, summary)
    clock.lap("outputs")
    summary["wall_seconds"] = clock.total
    summary["cost"] = cost_summary(recs + vrecs, summary["wall_seconds"], max(workers, worker_threads(client)))
    summary["cost"]["phases"] = clock.phases
    summary.update({k: summary["cost"][k] for k in ("train_share", "tokens_per_worker_second")})
    write_json_atomic(summary, location(out) / "search.json")
    if not cfg.no_report:
        from ..report import build_report

        summary["report"] = str(build_report(out))
    rows = int(prep["rows"])
    summary["totals"] = {"rows_in": rows, "rows_out": rows, "splits": len(identities), **counts}
    return summary
