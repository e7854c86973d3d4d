"""The ``search`` stage: ``datamask search INPUT OUTPUT --eval EVAL`` and ``stages: [search]``."""

from __future__ import annotations

import json
import time

from ...errors import ConfigError
from ...pipeline.stages.base import Stage
from .config import SearchConfig

__all__ = ["SearchStage", "run_search"]

_CONFIG = "_search/config.json"


def _output(cfg, fingerprint: str):
    """The output directory, checked: foreign files or another config refused (``--overwrite``
    starts over); the config record written. Returns (location, finished manifest or None)."""
    from ...pipeline.files import write_json_atomic
    from ...pipeline.storage import location, rmtree
    from .run import KEEPS, WRITES

    out = location(cfg.output)
    if out.exists() and any(out.iterdir()):
        rec = out / _CONFIG
        if not rec.exists():
            raise ConfigError(
                f"output directory {out} is not empty and was not written by datamask search; choose a new or empty OUTPUT"
            )
        old = json.loads(rec.read_text())
        if cfg.overwrite:
            for name in (*WRITES, *KEEPS, "manifest.json"):
                p = out / name
                if p.exists():
                    rmtree(p) if p.is_dir() else p.unlink()
        elif old.get("fingerprint") != fingerprint:
            new = json.loads(json.dumps(cfg.result_dict(), default=str))
            k = next((k for k in sorted(set(old["config"]) | set(new)) if old["config"].get(k) != new.get(k)), "device")
            raise ConfigError(
                f"output directory {out} holds a search of another config ({k}: {old['config'].get(k)!r} -> "
                f"{new.get(k)!r}); pass --overwrite to start over or choose a new OUTPUT"
            )
        elif (out / "manifest.json").exists():
            return out, json.loads((out / "manifest.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic({"fingerprint": fingerprint, "config": cfg.result_dict()}, out / _CONFIG)
    return out, None


def run_search(cfg: SearchConfig, client=None) -> dict:
    """``datamask search``: the checked config's search on ``client`` (a local cluster of its own
    when None); returns the manifest (``search.json``'s keys, ``totals``)."""
    from ...pipeline.client import close_client, get_client
    from ...pipeline.files import write_json_atomic
    from ...pipeline.manifest import public_config, versions
    from ...pipeline.runner import resolve_io, share_storage_options, stage_level
    from .run import compute_search, resolve_eval

    t0 = time.perf_counter()
    cfg = resolve_eval(resolve_io(cfg, "search"))
    level = stage_level(cfg, ())
    fingerprint = cfg.fingerprint(level.device)
    out, done = _output(cfg, fingerprint)
    if done is not None:
        done["totals"].update(computed_this_run=0, resumed=done["totals"].get("trained", 0))
        return done
    own = client is None
    try:
        if own:
            client = get_client(cfg, level.device, n_tasks=int(cfg.trials), level=level)
        share_storage_options(client)
        result = compute_search(cfg, out, client, level)
    finally:
        if own and client is not None:
            close_client(client)
    manifest = {
        "status": "complete",
        "stage": "search",
        "fingerprint": fingerprint,
        "config": public_config(cfg),
        "device": level.device,
        "versions": versions(),
        **result,
        "wall_seconds": round(time.perf_counter() - t0, 3),
    }
    write_json_atomic(manifest, out / "manifest.json")
    return manifest


class SearchStage(Stage):
    name = "search"
    config = SearchConfig
    help = "choose a recipe (lam, diversity, QuaDMix's parameters) with proxy LMs and a regressor"
    description = (
        "Sample recipes from --space (scrambled Sobol), select the input with each and train one small proxy LM "
        "per seed on the same number of tokens (Dask tasks), fit a regressor from recipe to held-out loss on --eval, "
        "predict many candidates and average the best into the chosen recipe, then retrain it beside the default "
        "recipe, top-k and random on fresh seeds. Writes trials.parquet, verify.parquet, search.json, recipe.yaml "
        "(datamask run applies it to INPUT) and the HTML report. See docs/search.md."
    )
    output_help = "output directory (trials.parquet, verify.parquet, search.json, recipe.yaml, figures/, report/)"
    needs = ()

    def run(self, cfg, client=None) -> dict:
        return run_search(cfg, client)

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


def summary_lines(m: dict, out) -> list:
    """What ``datamask search`` prints when it ends."""
    t = m["totals"]
    lines = [
        f"datamask: search: {m['trials']} trials x {m['seeds']} seed(s) of a {m['proxy']['params']:,}-parameter proxy "
        f"on {m['proxy']['tokens']:,} tokens ({t['computed_this_run']} models trained now, {t['resumed']} resumed)",
        f"datamask: search: regressor {m['regressor']}, cross-validated Spearman {m['cv_spearman']:.3f} ("
        + ", ".join(f"{k} {v['spearman']:.3f}" for k, v in m["cv"].items())
        + ")",
        "datamask: search: chosen " + ", ".join(f"{k}={_fmt(v)}" for k, v in m["chosen"].items()),
    ]
    v = m.get("verified")
    if v:
        lines.append(
            "datamask: search: verified loss "
            + ", ".join(
                f"{n} {v[n]['mean']:.4f}" + (f" (sd {v[n]['sd']:.4f})" if v[n]["sd"] else "")
                for n in ("chosen", "default", "topk", "random")
                if n in v
            )
        )
        lines += [f"datamask: search: {d['words']}" for d in v["differences"].values()]
    if m.get("leaks"):
        lines.append(
            f"datamask: search: {m['leaks']} input row(s) hold an evaluation text; removed from every selection"
        )
    lines.append(f"datamask: search: recipe {m['recipe']} (datamask run it) -> {out}")
    return lines
