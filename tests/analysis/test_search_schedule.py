"""The search's schedule on a real two-worker LocalCluster, with planted models (no selection, no
training: tests/helpers/planted_search.py): the references' verification models are submitted
once the trials left no longer fill the workers and train while the client fits the regressor,
the chosen recipe's follow, every record is collected once, and a failing trial stops the
references submitted early."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from datamask.analysis.search import SearchConfig, schedule
from datamask.analysis.search import run as search_run
from datamask.analysis.search.schedule import cost_summary
from datamask.analysis.search.verify import early_references, verification_recipes
from tests.helpers import planted_search
from tests.helpers.pipeline_data import wait_until

TRIALS, VERIFY = 6, 2


@pytest.fixture
def client(cluster):
    from distributed import Client

    with Client(cluster.scheduler_address, set_as_default=False) as c:
        yield c


@pytest.fixture
def planted(monkeypatch):
    monkeypatch.setattr(schedule, "select_recipe", planted_search.select)
    monkeypatch.setattr(schedule, "train_recipe", planted_search.train)


def _cfg(tmp_path, space="lam=0:1,diversity=pairwise|facility"):
    return SearchConfig(
        input=str(tmp_path / "in"),
        output=str(tmp_path / "out"),
        eval=[str(tmp_path / "eval")],
        ratio=0.3,
        space=space,
        trials=TRIALS,
        verify=VERIFY,
        regressor="quadratic",
        candidates=500,
        top=5,
        quiet=True,
    ).validated()


def _run(client, cfg, out):
    space = search_run.build_space(cfg, {"domains": [], "components": []})
    workers = schedule.worker_threads(client)
    return search_run._run(client, [], cfg, str(out), space, "fp", search_run._Clock(), workers)


def _verifying(out) -> bool:
    return any(name.startswith("verify-") for name, _ in planted_search.marked(out, "started"))


def test_the_references_train_while_the_client_fits_then_the_chosen_recipe(planted, client, tmp_path, monkeypatch):
    cfg, out = _cfg(tmp_path), tmp_path / "out"
    fit, at_fit = search_run._fit, {}

    def fit_when_a_reference_trains(space, frame, cfg, target=None):  # the old schedule submitted none before the fit
        wait_until(lambda: _verifying(out), timeout=60, what="a reference model to start before the fit")
        at_fit["started"] = planted_search.marked(out, "started")
        return fit(space, frame, cfg, target)

    monkeypatch.setattr(search_run, "_fit", fit_when_a_reference_trains)
    recs, n_trials, frame, _fit, _means, drawn, (vframe, vsum, n_verify, vrecs, recipes) = _run(client, cfg, out)
    assert n_trials == TRIALS and len(frame) == TRIALS and sorted(frame.trial) == list(range(TRIALS))
    assert n_verify == 4 * VERIFY and len(vrecs) == 4 * VERIFY
    assert vframe.groupby("name").seed.nunique().to_dict() == {
        n: VERIFY for n in ("chosen", "default", "random", "topk")
    }
    assert not any(n == "verify-chosen" for n, _ in at_fit["started"]), "the chosen recipe trained before the fit"
    assert set(vsum["recipes"]) == set(recipes) == {"chosen", "default", "topk", "random"}
    assert (out / "trials.parquet").exists() and drawn == ["figures/loss_by_parameter.png", "figures/loss_tracks.png"]
    assert planted_search.marked(out, "finished") == planted_search.marked(out, "started")


def test_the_references_wait_until_the_trials_left_no_longer_fill_the_workers(planted, client, tmp_path):
    """Submitted with the trials, Dask ran references between them (search_real.md, round 10):
    the trials then ended later and the workers waited through the fit and the last models."""
    cfg, out = _cfg(tmp_path), tmp_path / "out"
    _run(client, cfg, out)
    workers = schedule.worker_threads(client)
    assert workers >= 1 and workers < TRIALS

    def at(what, name, seed):
        return (Path(out) / "marks" / f"{what}-{name}-s{seed}").stat().st_mtime_ns

    ended = sorted(at("finished", n, s) for n, s in planted_search.marked(out, "finished") if n.startswith("trial-"))
    refs = [
        (n, s) for n, s in planted_search.marked(out, "started") if n.startswith("verify-") and n != "verify-chosen"
    ]
    assert len(ended) == TRIALS and len(refs) == 3 * VERIFY
    first_ref = min(at("started", n, s) for n, s in refs)
    assert first_ref >= ended[TRIALS - workers - 1], "a reference started while more trials than workers were left"


def test_a_failing_trial_stops_the_references_submitted_early(planted, client, tmp_path):
    cfg, out = _cfg(tmp_path), tmp_path / "out"
    out.mkdir(parents=True)
    (out / "fail-trial").touch()  # the first trial to end fails, four are still to run
    with pytest.raises(ValueError, match="planted failure in trial-"):
        _run(client, cfg, out)
    started = planted_search.marked(out, "started")
    running = {m for m in started if m[0].startswith("verify-")} - planted_search.marked(out, "finished")
    assert not running, f"raised while {running} still ran"
    assert len({n for n, _ in started if n.startswith("trial-")}) < TRIALS
    time.sleep(3 * planted_search.HOLD + 0.5)  # a reference not cancelled would start meanwhile
    assert planted_search.marked(out, "started") == started


def test_trial_eval_tokens_reads_a_token_count_and_defaults_to_half_the_proxy_s_eval_tokens(tmp_path):
    assert _cfg(tmp_path).trial_eval_cap() == 50_000  # tiny: eval_tokens 100,000
    assert SearchConfig.from_dict({**_cfg(tmp_path).to_dict(), "trial_eval_tokens": "20k"}).trial_eval_cap() == 20_000


def test_every_training_task_is_one_dask_prefix_so_its_learned_duration_applies_to_all(tmp_path):
    """A verification recipe's models must not look like new, unknown-duration tasks to Dask."""
    from dask.utils import key_split

    cfg = _cfg(tmp_path)
    jobs = [
        schedule.Job("trial-0003", {"lam": 0.2}, [0], {"kind": "trial", "fingerprint": "0123456789abcdef"}),
        schedule.Job(
            "verify-random", {"method": "random"}, [10000, 10001], {"kind": "verify", "fingerprint": "fe" * 8}
        ),
        schedule.Job("verify-chosen", {"lam": 0.4}, [10000], {"kind": "verify", "fingerprint": "abcdefab" * 2}),
    ]
    todo = {j.name: list(j.seeds) for j in jobs}
    tasks = schedule._graph([], jobs, cfg, str(tmp_path), todo)
    trains = [t.key for t in tasks]
    selects = {k for t in tasks for k in t.dask if k not in trains}
    assert len(trains) == 4 and {key_split(k) for k in trains} == {"search-train"}
    assert len(selects) == 3 and {key_split(k) for k in selects} == {"search-select"}
    assert any("verify-random-s10001" in k for k in trains)  # the names stay readable on the dashboard


def test_references_go_early_only_when_no_chosen_recipe_changes_them():
    for chosen in ({"lam": 0.2, "diversity": "facility"}, {"lam": 0.9, "diversity": "pairwise", "prune": 0.3}):
        got = verification_recipes("datamask", chosen, 0.5)
        assert early_references("datamask", ["lam", "diversity", "prune"], 0.5) == {
            k: v for k, v in got.items() if k != "chosen"
        }
    assert early_references("quadmix", ["lam", "omega"]) == {
        k: v for k, v in verification_recipes("quadmix", {"lam": 1.0}).items() if k != "chosen"
    }
    assert early_references("datamask", ["lam", "ratio"], 0.5) is None  # the references take the chosen ratio


def test_the_default_reference_is_what_select_runs_and_extra_references_train_beside_it():
    from datamask.analysis.search.config import SearchConfig, parse_references
    from datamask.errors import ConfigError
    from datamask.estimator.params import DataMaskParams
    from datamask.pipeline.presets import PRESETS

    d = DataMaskParams()
    refs = parse_references("paper:preset=paper;mine:lam=0.3,diversity=pairwise,near_duplicate=null")
    assert refs["paper"] == {"method": "datamask", **PRESETS["paper"]}
    assert refs["mine"] == {"method": "datamask", "lam": 0.3, "diversity": "pairwise", "near_duplicate": None}
    got = verification_recipes("datamask", {"lam": 0.2, "ratio": 0.3}, extra=refs, cap=lambda r: 0.4)
    assert set(got) == {"chosen", "default", "topk", "random", "paper", "mine"}
    assert got["default"] == {"method": "datamask", "lam": d.lam, "diversity": d.diversity, "prune": min(d.prune, 0.4),
                              "near_duplicate": d.near_duplicate, "ratio": 0.3}  # fmt: skip
    assert got["paper"]["ratio"] == 0.3 and got["paper"]["prune"] == 0.4  # capped where the ratio fits
    assert set(early_references("datamask", ["lam"], extra=refs)) == {"default", "topk", "random", "paper", "mine"}
    for bad, words in (("topk:lam=0.1", "is taken"), ("x:lam", "KEY=VALUE"), ("x:preset=nope", "preset must")):
        with pytest.raises(ConfigError, match=words):
            parse_references(bad)
    with pytest.raises(ConfigError, match="references x: .*lam"):
        SearchConfig(references="x:lam=7", eval=["e"]).validated()


def test_the_training_share_counts_the_models_of_this_run_and_needs_the_workers():
    rec = {"train_seconds": 30.0, "eval_seconds": 8.0, "select_seconds": 1.0, "seconds": 40.0, "tokens": 100_000}
    c = cost_summary([rec, rec, dict(rec, resumed=True)], wall_seconds=50.0, workers=2)
    assert c["models_timed"] == 2 and c["train_share"] == 0.6 and c["eval_seconds"] == 16.0
    assert c["tokens_per_worker_second"] == 2000.0
    seeds = [dict(rec, fingerprint="a", seed=s) for s in range(3)] + [dict(rec, fingerprint="b")]
    c = cost_summary(seeds, wall_seconds=100.0, workers=2)  # a recipe's seeds share one selection task
    assert c["select_seconds"] == 2.0 and c["model_seconds"] == 4 * 40.0 - 2 * 1.0 and c["train_share"] == 0.6
    none = cost_summary([rec], wall_seconds=50.0, workers=0)  # the scheduler counted no worker
    assert none["train_share"] is None and none["tokens_per_worker_second"] is None and none["train_seconds"] == 30.0
