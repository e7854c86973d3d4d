"""What a search writes: ``trials.parquet``, ``verify.parquet``, ``recipe.yaml`` (``search.json`` is
assembled in :mod:`.run`).

``trials.parquet`` has one row per (trial, seed): ``trial``, ``seed``, each parameter (one
column per value: ``lam``, ``diversity``, ``omega[3]``, ``weights.quality_a``), ``loss`` and
``bits_per_byte`` (the mean over the evaluation sets) and per set (``loss.SET``,
``bits_per_byte.SET``), the unigram baseline per set (``unigram_loss.SET``: a smoothed unigram model
of the model's training tokens on the same scored tokens; ``unigram_margin.SET``: it minus
``loss.SET``), what the selection holds (``quality``, ``diversity_pairwise``, ``coverage``,
``near_duplicate_share``, ``rows``, ``leaks_removed``, ``selected_tokens``: its tokens as the budget
counts them), the training (``tokens``: trained, ``passes`` over the selection, ``steps``: optimiser
steps, ``selection_tokens``: the selection in the proxy's tokens, ``lr``, ``weight_decay``) and the
time (``select_seconds``, ``train_seconds``, ``seconds``: the only columns a rerun does not repeat
exactly).
``verify.parquet`` is the same for the verification runs, with ``name`` the recipe.
``recipe.yaml`` is a workflow ``datamask run`` applies to the input.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from ...runtime.storage import location

__all__ = ["records_frame", "trials_frame", "write_parquet", "recipe_workflow", "write_recipe", "TIME_COLUMNS"]

TIME_COLUMNS = ("select_seconds", "train_seconds", "seconds")
_STATS = ("quality", "diversity", "coverage", "near_duplicate_share", "rows", "leaks_removed", "selected_tokens")


def records_frame(records: list) -> pd.DataFrame:
    """One row per record: name, seed, the losses (mean and per set), the tokens scored of each
    set, the selection's statistics."""
    rows = []
    for r in records:
        row = {"name": r["name"], "kind": r.get("kind"), "trial": r.get("trial"), "seed": int(r["seed"])}
        sets = r["evals"]
        row["loss"] = float(np.mean([v["loss"] for v in sets.values()]))
        row["bits_per_byte"] = float(np.mean([v["bits_per_byte"] for v in sets.values()]))
        for s, v in sets.items():
            row[f"loss.{s}"], row[f"bits_per_byte.{s}"] = v["loss"], v["bits_per_byte"]
            row[f"eval_tokens.{s}"] = int(v["eval_tokens"])  # scored: a trial's first documents, or all
            row[f"unigram_loss.{s}"], row[f"unigram_margin.{s}"] = v["unigram_loss"], v["unigram_margin"]
        st = r["stats"]
        for k in _STATS:
            row["diversity_pairwise" if k == "diversity" else k] = st.get(k)
        keys = ("tokens", "passes", "steps", "selection_tokens", "lr", "weight_decay", "params", *TIME_COLUMNS)
        row.update({k: r[k] for k in keys})
        # records written before the precision was recorded: auto gave bfloat16 on CUDA, float32 on a CPU
        row["precision"] = r.get("precision") or ("bfloat16" if r.get("device") == "cuda" else "float32")
        row["recipe"] = json.dumps(r["recipe"], sort_keys=True)
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["name", "seed"], kind="stable").reset_index(drop=True)


def trials_frame(records: list, space) -> pd.DataFrame:
    """``records_frame`` of the trials, with one column per parameter value and the point ``u``."""
    f = records_frame(records)
    by_name = {r["name"]: r for r in records}
    U = np.asarray([by_name[n]["u"] for n in f["name"]], dtype=float).reshape(len(f), -1)
    params = space.frame(U) if len(f) else pd.DataFrame(columns=space.columns)
    f = pd.concat([f[["trial", "seed"]], params, f.drop(columns=["trial", "seed", "kind"])], axis=1)
    f["u"] = [list(map(float, u)) for u in U]
    return f.sort_values(["trial", "seed"], kind="stable").reset_index(drop=True)


def write_parquet(frame: pd.DataFrame, path) -> None:
    import pyarrow as pa

    from ...runtime.files import write_parquet_atomic

    table = pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(None)
    write_parquet_atomic(table, location(path))


def _select_keys(cfg) -> dict:
    """The base recipe's select settings that differ from select's defaults (so the workflow
    selects as the trials did)."""
    from ...pipeline.config import SelectConfig

    base, ref = cfg.select_config().result_dict(), SelectConfig().result_dict()
    skip = {"input", "method", "lam", "diversity", "ratio", "quadmix_params", "exclude"}
    return {k: v for k, v in base.items() if k not in skip and v != ref.get(k)}


def recipe_workflow(cfg, recipe: dict, selected: str, params_file: str | None = None) -> dict:
    """The workflow (a dict for YAML) that applies ``recipe`` (its ``method``, else the search's) to
    ``cfg.input`` into ``selected``."""
    method = recipe.get("method", cfg.method)
    # the evaluation sets' rows stay out of the selection, as they stayed out of every trial's
    select = {"method": method, **_select_keys(cfg), "exclude": cfg.excluded_sets()}
    ratio = recipe.get("ratio", cfg.select_config().ratio)  # None: a token budget
    if ratio is not None:
        select["token_ratio" if cfg.ratio_in_tokens else "ratio"] = float(ratio)
    if method == "quadmix":
        select["quadmix_params"] = params_file
    elif method in ("datamask", "greedy", "relaxed"):
        select.update({k: recipe[k] for k in ("lam", "diversity", "prune") if k in recipe})
        select.setdefault("lam", cfg.lam)
        select.setdefault("diversity", cfg.diversity)
    w = recipe.get("weights")
    if not w:
        return {"input": cfg.input, "output": selected, **select}
    score = {"normalize": "minmax", "quality_column": cfg.quality_column, "text_column": cfg.text_column}
    if all(isinstance(v, dict) for v in w.values()):
        comps = list(next(iter(w.values())))
        score["scores"] = ",".join(f"{c}:{1 / len(comps):.6g}" for c in comps)
        score["domain_column"] = cfg.domain_column
        score["domain_weights"] = ";".join(
            f"{d}=" + ",".join(f"{c}:{x:.6g}" for c, x in ws.items()) for d, ws in w.items()
        )
    else:
        score["scores"] = ",".join(f"{c}:{x:.6g}" for c, x in w.items())
    return {"input": cfg.input, "output": selected, "stages": ["score", "select"], "score": score, "select": select}


def write_recipe(cfg, out, search: dict) -> str:
    """``OUTPUT/recipe.yaml`` (and ``OUTPUT/quadmix_params.yaml`` for QuaDMix); the workflow's
    output is ``OUTPUT-selected`` beside the search's output (``--set output=DIR`` changes it)."""
    import yaml

    from .prepare import write_bytes_atomic
    from .trials import quadmix_spec

    out = location(out)
    rec = search.get("recommended") or {"name": "chosen", "recipe": search["chosen"]}
    recipe = rec["recipe"]
    params = None
    if recipe.get("method", cfg.method) == "quadmix" and rec["name"] == "chosen":
        params = str(out / "quadmix_params.yaml")
        write_bytes_atomic(yaml.safe_dump(quadmix_spec(recipe), sort_keys=False).encode(), params)
    selected = str(out.parent / f"{out.name}-selected")
    wf = recipe_workflow(cfg, recipe, selected, params)
    what = "chose" if rec["name"] == "chosen" else f"recommends ({rec['name']}, not its chosen recipe)"
    why = textwrap.wrap(f"Why: {rec.get('why') or 'see search.json'}", 96)
    head = (
        f"# The recipe datamask search {what} for {cfg.input}\n"
        f"# (regressor {search['regressor']}, cross-validated Spearman {search['cv_spearman']:.3f}, "
        f"{search['trials']} trials; search.json's recommended says why).\n"
        + "".join(f"# {line}\n" for line in why)
        + f"# Apply it:  datamask run {Path(str(out)) / 'recipe.yaml'}   (--set output=DIR to write elsewhere)\n"
    )
    text = head + yaml.safe_dump(wf, sort_keys=False)
    write_bytes_atomic(text.encode(), out / "recipe.yaml")
    return str(out / "recipe.yaml")
