"""One trial: a recipe's selection of the whole input, and one proxy model per seed trained on it.

:func:`select_recipe` (a Dask task over every split) applies a recipe as ``datamask select``
would: each split through :func:`~datamask.pipeline.select_split.select_split` with the
split's own seed (and, under ``--tokens``, its share of the budget, shared out once by the
client as ``select`` shares it), so ``recipe.yaml`` run on the input makes the same
selection. The rows of the evaluation sets (leaks, counted: their exact text is in one, or
their id in a datamask holdout) are kept out before the method sees a split, as ``select
--exclude`` keeps them out of recipe.yaml's selection, and it
measures what the loss may track: the selection's mean quality, its pairwise diversity
(minus the mean cosine between selected rows), its coverage of the input (the mean over every
input row of its best cosine to a selected row) and its near-duplicate share (selected rows whose exact or MinHash group
already has a selected row); it hands the training tasks the selected rows' positions, not
their text. :func:`train_recipe` (one Dask task per seed) trains the proxy model from the
seed's initial weights on the selected rows' token ids (tokenised once, by the preparation)
for the configured tokens (a count, or passes over the selection), scores it (a trial's model
on the first ``trial_eval_tokens`` of each evaluation set, a verification model on all of it)
and writes the record as soon as it finishes.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pyarrow as pa

from ...runtime.files import write_json_atomic
from ...runtime.storage import location
from .prepare import load_prep, split_of

__all__ = ["recipe_select_config", "quadmix_spec", "select_recipe", "train_recipe", "selection_stats", "RECORD_DIR"]

RECORD_DIR = "_search/records"
_DATAMASK_KEYS = ("lam", "diversity", "ratio", "prune")
_QUADMIX_KEYS = ("lam", "omega", "eta", "eps")


def quadmix_spec(recipe: dict) -> dict:
    """A recipe's QuaDMix parameters as ``quadmix_params`` takes them: shared values under
    ``default``, per-domain ones under ``domains``."""
    spec = {"default": {}, "domains": {}}
    for k in _QUADMIX_KEYS:
        v = recipe.get(k)
        if isinstance(v, dict):
            for d, x in v.items():
                spec["domains"].setdefault(str(d), {})[k] = float(x)
        elif v is not None:
            spec["default"][k] = float(v)
    return spec


def recipe_select_config(cfg, recipe: dict):
    """The :class:`~datamask.pipeline.config.SelectConfig` of ``recipe`` (its ``method`` or the
    search's); its ratio (the recipe's, else the base recipe's) a token ratio when the search
    counts it in tokens (``cfg.ratio_in_tokens``)."""
    method = recipe.get("method", cfg.method)
    change = {"method": method, **{k: recipe[k] for k in ("ratio",) if k in recipe}}
    if method in ("datamask", "greedy", "relaxed"):
        change.update({k: recipe[k] for k in _DATAMASK_KEYS if k in recipe})
    if cfg.ratio_in_tokens:
        change["token_ratio"] = float(change.get("ratio", cfg.select_config().ratio))
        change["ratio"] = None
    if method == "quadmix":
        scfg = cfg.replace_unchecked(**change)
        return dataclasses.replace(scfg, quadmix_params=quadmix_spec(recipe))  # a mapping, not a file
    return cfg.replace_unchecked(**change)


def _merged(table, weights: dict, comp_range: dict, cfg):
    """``table`` with its quality column replaced by the merged quality of ``weights``, as
    ``datamask score --scores ... --normalize minmax`` computes it (corpus min/max)."""
    import pyarrow as pa

    from ...features.aggregate import ColumnStats, aggregate_frame

    per_domain = all(isinstance(v, dict) for v in weights.values())
    comps = list(next(iter(weights.values()))) if per_domain else list(weights)
    cols = comps + ([cfg.domain_column] if per_domain else [])
    pdf = table.select(cols).to_pandas()
    stats = {c: ColumnStats(c, 0, comp_range[c][0], comp_range[c][1], 0.0, 0.0) for c in comps}
    if per_domain:
        pdf[cfg.domain_column] = pdf[cfg.domain_column].astype(str)
        flat = {c: 1.0 / len(comps) for c in comps}
        out = aggregate_frame(pdf, flat, stats, domain_column=cfg.domain_column, domain_weights=weights, output="_q")
    else:
        out = aggregate_frame(pdf, weights, stats, output="_q")
    i = table.schema.get_field_index(cfg.quality_column)
    q = pa.array(out["_q"].to_numpy(dtype=np.float32))
    return table.set_column(i, cfg.quality_column, q) if i >= 0 else table.append_column(cfg.quality_column, q)


def selection_stats(E_all, masks, quality, groups) -> dict:
    """Mean quality, pairwise diversity, coverage and near-duplicate share of a selection.

    ``E_all``: every split's unit embeddings; ``masks``: the selected rows of each (leaks
    dropped); ``quality``: every split's input quality; ``groups``: near-duplicate group of
    every input row (corpus order)."""
    sel = np.concatenate([E[m] for E, m in zip(E_all, masks)]).astype(np.float32)
    S = sel.shape[0]
    q = np.concatenate([v[m] for v, m in zip(quality, masks)])
    g = groups[np.concatenate(masks)]
    s = sel.sum(axis=0, dtype=np.float64)
    div = -(float(s @ s) - S) / (S * (S - 1)) if S > 1 else 0.0
    best = []
    for E in E_all:
        for lo in range(0, E.shape[0], 2048):
            best.append((E[lo : lo + 2048] @ sel.T).max(axis=1))
    return {
        "rows": int(S),
        "quality": float(q.mean()) if S else float("nan"),
        "diversity": div,
        "coverage": float(np.concatenate(best).mean()) if S else 0.0,
        "near_duplicate_share": float(1.0 - np.unique(g).shape[0] / S) if S else 0.0,
    }


def _split_selection(df, i, scfg, cfg, weights, comp_range, split_tokens=None, leak=None):
    """(mask, unit embeddings, input quality, token count) of split ``i`` under ``scfg``;
    ``split_tokens``: the split's share of a token budget (None: the row budget); ``leak``: the split's
    rows of an evaluation set, kept out before the method sees the split (as ``select --exclude``
    keeps them out of recipe.yaml's selection)."""
    from ...pipeline.frames import to_table
    from ...pipeline.io import split_seed
    from ...pipeline.schema import embedding_matrix
    from ...pipeline.select_split import select_split

    identity, where, first = split_of(df, i)
    table = to_table(df)
    q_in = table.column(cfg.quality_column).to_numpy().astype(np.float64)
    if weights:
        table = _merged(table, weights, comp_range, cfg)
    keep = None if leak is None or not leak.any() else ~leak
    rows = table if keep is None else table.filter(pa.array(keep))
    # no side-by-side scores: a trial measures its selection itself (selection_stats)
    sel, rec = select_split(
        rows,
        scfg,
        split_seed(cfg.seed, identity),
        where,
        first,
        split_tokens=split_tokens,
        side_by_side=False,
        why=False,
    )
    mask = sel.mask
    if keep is not None:  # back onto the split's rows
        full = np.zeros(table.num_rows, dtype=bool)
        full[np.flatnonzero(keep)[mask]] = True
        mask = full
    E = np.array(embedding_matrix(table.column(cfg.embedding_column), where, cfg.embedding_column, first), np.float32)
    E /= np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)  # a copy: the matrix is the table's buffer
    return mask, E, q_in, rec.get("tokens_out")


def select_recipe(*parts, recipe: dict, cfg, out: str, counts=None) -> dict:
    """(a Dask task) The selection of ``recipe`` over every split (``parts``, in order):
    ``{"rows", "stats", "recipe", "seconds"}``, ``rows`` the corpus positions of the selected rows
    with usable text (the training tasks take their token ids from the preparation); evaluation
    texts removed and counted. ``counts``: under a token budget, every split's tokens
    (:class:`~datamask.pipeline.split_job.TokenCounts`), from which each split's share of the
    recipe's budget is taken as ``datamask select`` shares it."""
    t0 = time.perf_counter()
    prep = load_prep(out)
    scfg = recipe_select_config(cfg, recipe)
    if scfg.budget_in_tokens and (counts is None or len(counts.tokens) != len(parts)):
        raise ValueError(
            f"a token budget needs each of the {len(parts)} splits' tokens: pass counts= (count_search_tokens)"
        )
    split_tokens = counts.split_tokens(scfg) if scfg.budget_in_tokens else None
    weights = recipe.get("weights")
    E_all, masks, quality, rows, leaks, tokens = [], [], [], [], 0, 0
    for i, df in enumerate(parts):
        share = split_tokens[i] if scfg.budget_in_tokens else None
        lo, hi = prep.offsets[i], prep.offsets[i + 1]
        leak = prep.leak[lo:hi]
        mask, E, q, tok = _split_selection(df, i, scfg, cfg, weights, prep.summary["component_range"], share, leak)
        leaks += int(leak.sum())
        tokens += int(tok or 0)
        E_all.append(E)
        masks.append(mask)
        quality.append(q)
        rows.append(lo + np.flatnonzero(mask & prep.usable[lo:hi]))
    rows = np.concatenate(rows).astype(np.int64)
    if not len(rows):
        from ...errors import DataError

        raise DataError(f"recipe {recipe}: the selection holds no usable text (after removing evaluation texts)")
    stats = selection_stats(E_all, masks, quality, prep.groups)
    stats.update(leaks_removed=leaks, selected_tokens=tokens or None)
    return {"rows": rows, "stats": stats, "recipe": recipe, "seconds": time.perf_counter() - t0}


def _losses(evals: dict, unigram: dict) -> dict:
    """``{set: {"loss", "bits_per_byte", "eval_tokens", "unigram_loss", "unigram_margin"}}`` of a run's
    ``{set: {domain: (nats, tokens, bytes)}}`` and its unigram baseline's ``{set: {domain: (nats, tokens)}}``."""
    out = {}
    for name, by_dom in evals.items():
        nats, ntok, nbytes = by_dom["all"]
        u = unigram[name]["all"][0] / max(unigram[name]["all"][1], 1)
        loss = nats / ntok
        out[name] = {
            "loss": loss,
            "bits_per_byte": nats / np.log(2) / max(nbytes, 1),
            "eval_tokens": ntok,
            "unigram_loss": u,
            "unigram_margin": u - loss,
        }
    return out


def train_recipe(sel: dict, *, name: str, seed: int, cfg, out: str, extra: dict) -> dict:
    """(a Dask task) One proxy model of seed ``seed`` on the selection ``sel``; its record,
    written to ``OUTPUT/_search/records/NAME-sSEED.json`` before it is returned."""
    from ...core.heap import large_blocks
    from ..proxy_lm.runner import proxy_device
    from ..proxy_lm.train import deterministic, train_selection

    t0 = time.perf_counter()
    prep = load_prep(out)
    pc = cfg.proxy_config(seed)
    r = pc.resolved()
    device, precision = proxy_device(pc)
    # a trial's model scores the first documents of each evaluation set, a verification model all of it
    evals = prep.trial_evals(cfg.trial_eval_cap()) if extra.get("kind") == "trial" else prep.evals
    with deterministic(int(r.threads)), large_blocks():  # a Dask worker's heap: core/heap.py
        init = prep.initial_state(r)
        res = train_selection(
            name, prep.docs(sel["rows"]), prep.tok, r, init, [(e, e) for e in evals], device, precision, quiet=True
        )
    rec = {
        "name": name,
        "seed": int(seed),
        **extra,
        "recipe": sel["recipe"],
        "stats": sel["stats"],
        "evals": _losses(res["evals"], res["unigram"]),
        "tokens": res["tokens"],
        "passes": res["passes"],
        "steps": res["steps"],
        "lr": res["lr"],
        "weight_decay": res["weight_decay"],
        "selection_tokens": res["selection_tokens"],
        "docs": res["docs"],
        "params": res["params"],
        "select_seconds": round(sel["seconds"], 3),
        "train_seconds": round(res["train_seconds"], 3),
        "eval_seconds": round(res["eval_seconds"], 3),  # in the record and search.json, not trials.parquet
        "seconds": round(sel["seconds"] + time.perf_counter() - t0, 3),
        "device": device,
        "precision": precision,  # auto resolves on the worker: bfloat16 where its CPU has bf16 dot products
    }
    write_json_atomic(rec, location(out) / RECORD_DIR / f"{name}-s{int(seed)}.json")
    return rec
