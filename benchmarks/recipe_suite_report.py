"""The tables of ``recipe_suite.py``: per corpus x regime, what predicts loss, and the verdict.

Functions of the pooled records (one row per proxy model: ``corpus``, ``regime``, ``kind``
trial / verify, ``name``, ``seed``, ``loss`` and the selection's properties) and of each
search's ``search.json``; no training here.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from datamask.analysis.search.noise import LEVEL, paired_t

REFS = ("default", "topk", "random")
#: properties of a selection item 5 of issue 35 asks about (column in the records, label)
PROPERTIES = (
    ("quality", "mean quality"),
    ("diversity_pairwise", "pairwise diversity"),
    ("coverage", "coverage"),
    ("near_duplicate_share", "near-duplicate share"),
    ("words_per_row", "mean document length (words)"),
    ("tokens_per_row", "proxy tokens per row"),
    ("rows", "rows"),
    ("tokens", "training tokens"),
    ("passes", "passes over the selection"),
)


def _f(v, p=4, sign=False):
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "–"
    return f"{v:+.{p}f}" if sign else f"{v:.{p}f}"


def paired(wide: pd.DataFrame, a: str, b: str) -> dict | None:
    """``a - b`` paired by seed: the search's rule (:func:`~datamask.analysis.search.noise.paired_t`:
    mean, the 95% t-interval's half width, p, seeds; *beyond noise* when the interval excludes 0)."""
    if a not in wide or b not in wide:
        return None
    both = wide[[a, b]].dropna()
    if len(both) == 0:
        return None
    return paired_t(both[a].to_numpy(np.float64), both[b].to_numpy(np.float64))


def _words(d: dict | None) -> str:
    if d is None:
        return "–"
    if d["half_width"] is None:
        return f"{_f(d['mean'], sign=True)} (one seed: not judged)"
    return f"{_f(d['mean'], sign=True)} ± {_f(d['half_width'])} **{'beyond' if d['beyond'] else 'within'} noise**"


def verify_wide(records: pd.DataFrame, corpus: str, regime: str) -> pd.DataFrame:
    v = records[(records["corpus"] == corpus) & (records["regime"] == regime) & (records["kind"] == "verify")]
    return v.pivot_table(index="seed", columns="name", values="loss", aggfunc="first")


def cell_summary(records: pd.DataFrame, corpus: str, regime: str, s: dict) -> dict:
    """What one corpus x regime verified: each recipe's loss, the paired differences, the recommendation."""
    wide = verify_wide(records, corpus, regime)
    v = records[(records["corpus"] == corpus) & (records["regime"] == regime) & (records["kind"] == "verify")]
    recipes = {}
    order = ["chosen", "recommended", "default", "topk", "random"]
    for name in sorted(wide.columns, key=lambda n: (order.index(n) if n in order else len(order), n)):
        x = wide[name].dropna().to_numpy()
        sub = v[v["name"] == name]
        recipes[name] = {
            "mean": float(x.mean()),
            "sd": float(x.std(ddof=1)) if len(x) > 1 else None,
            "seeds": int(len(x)),
            "recipe": json.loads(sub["recipe"].iloc[0]) if len(sub) else None,
            "passes": float(sub["passes"].mean()) if len(sub) else None,
            "tokens": float(sub["tokens"].mean()) if len(sub) else None,
        }
    diffs = {f"{a}-{b}": paired(wide, a, b) for a in wide.columns for b in REFS if a != b}
    rec = s.get("recommended") or {
        "name": "chosen",
        "recipe": s.get("chosen"),
        "why": "(this search has no `recommended`: the chosen recipe)",
    }
    return {
        "corpus": corpus,
        "regime": regime,
        "recipes": recipes,
        "differences": {k: d for k, d in diffs.items() if d is not None},
        "recommended": rec,
        "chosen": s.get("chosen"),
        "regressor": s.get("regressor"),
        "cv_spearman": s.get("cv_spearman"),
        "trials": s.get("trials"),
        "proxy_tokens": (s.get("proxy") or {}).get("tokens"),
        "train_share": s.get("train_share"),
        "tokens_per_worker_second": s.get("tokens_per_worker_second"),
        "wall_seconds": s.get("wall_seconds"),
        "warnings": s.get("warnings", []),
    }


def cell_lines(c: dict) -> list:
    rec = c["recommended"]
    lines = [
        f"### {c['corpus']}, {c['regime']}" + (f" (*invocation {c['invocation']}*)" if c.get("invocation") else ""),
        "",
        f"{c['trials']} trials; regressor **{c['regressor']}**, cross-validated Spearman **{_f(c['cv_spearman'], 3)}**; "
        f"search wall time {_f((c['wall_seconds'] or 0) / 60, 1)} min"
        + (f"; training share of the workers' time {_f(c['train_share'], 2)}" if c["train_share"] is not None else "")
        + (
            f"; {c['tokens_per_worker_second']:,.0f} trained tokens per worker-second"
            if c["tokens_per_worker_second"]
            else ""
        )
        + ".",
        f"Recommended: **{rec.get('name')}** `{json.dumps(rec.get('recipe'), sort_keys=True)}` — {rec.get('why', '')}",
        "",
        "| recipe | mean loss | sd | seeds | passes | tokens | minus default | minus top-k | minus random |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in c["recipes"].items():
        cells = [_words(c["differences"].get(f"{name}-{ref}")) if name != ref else "" for ref in REFS]
        label = name if name not in ("chosen",) else f"chosen `{json.dumps(r['recipe'], sort_keys=True)}`"
        lines.append(
            f"| {label} | {_f(r['mean'])} | {_f(r['sd'])} | {r['seeds']} | {_f(r['passes'], 2)} | "
            f"{_f(r['tokens'], 0)} | " + " | ".join(cells) + " |"
        )
    lines += [f"- the search warned: {w}" for w in c["warnings"]]
    return lines + [""]


# ---------------------------------------------------------------------- item 5: why
def _centred_ranks(x: pd.Series) -> np.ndarray:
    r = x.rank().to_numpy(np.float64)
    return (r - r.mean()) / max(len(r), 1)


def _rho(a, b) -> float | None:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


def _pooled(sub: pd.DataFrame, col: str) -> float | None:
    """Spearman pooled over corpora: ranks taken and centred within each corpus, then correlated."""
    x, y = [], []
    for _, g in sub.groupby("corpus"):
        if g[col].nunique() > 1:
            x.append(_centred_ranks(g[col]))
            y.append(_centred_ranks(g["loss"]))
    return _rho(np.concatenate(x), np.concatenate(y)) if x else None


def why_table(records: pd.DataFrame, regime: str, boot: int = 400, seed: int = 0) -> tuple:
    """(markdown lines, {property: {"pooled", "lo", "hi", "per_corpus"}}) for one regime."""
    sub = records[(records["regime"] == regime) & records["loss"].notna()]
    corpora = sorted(sub["corpus"].unique())
    rng = np.random.default_rng(seed)
    out = {}
    head = ["| property | pooled ρ | 95% bootstrap | sign agrees | " + " | ".join(corpora) + " |"]
    head.append("| --- | --- | --- | --- |" + " --- |" * len(corpora))
    for col, label in PROPERTIES:
        if col not in sub or sub[col].isna().all():
            continue
        per = {}
        for c in corpora:
            g = sub[sub["corpus"] == c][[col, "loss"]].dropna()
            per[c] = None if g[col].nunique() < 2 else _rho(g[col].rank(), g["loss"].rank())
        pooled = _pooled(sub[["corpus", col, "loss"]].dropna(), col)
        reps = []
        if pooled is not None:
            groups = [g for _, g in sub[["corpus", col, "loss"]].dropna().groupby("corpus")]
            for _ in range(boot):
                bs = pd.concat([g.iloc[rng.integers(0, len(g), len(g))] for g in groups], ignore_index=True)
                r = _pooled(bs, col)
                if r is not None:
                    reps.append(r)
        lo, hi = np.percentile(reps, [2.5, 97.5]) if reps else (None, None)
        signs = [np.sign(r) for r in per.values() if r is not None]
        agree = f"{max(signs.count(1.0), signs.count(-1.0))} of {len(signs)}" if signs else "–"
        out[col] = {"pooled": pooled, "lo": lo, "hi": hi, "per_corpus": per}
        cells = ["constant" if per[c] is None else _f(per[c], 2, sign=True) for c in corpora]
        lines_p = "constant" if pooled is None else _f(pooled, 2, sign=True)
        ci = "–" if lo is None else f"{_f(float(lo), 2, sign=True)} … {_f(float(hi), 2, sign=True)}"
        head.append(f"| {label} | {lines_p} | {ci} | {agree} | " + " | ".join(cells) + " |")
    n = sub.groupby("corpus").size().to_dict()
    note = (
        f"Spearman ρ between a property of the selection and the proxy's loss over every trial and verification "
        f"model of the {regime} regime ({', '.join(f'{c} {k}' for c, k in n.items())} models). Pooled: ranks "
        "taken and centred within each corpus, so a corpus's level does not count; the interval resamples models "
        f"within each corpus ({boot} bootstrap draws). Positive: more of the property, higher (worse) loss."
    )
    return [note, "", *head, ""], out


# ---------------------------------------------------------------------- item 6: the verdict
def _design_key(recipe: str) -> str:
    """A trial's recipe with its floats rounded to 2 places: the same design point on every cell."""
    r = json.loads(recipe)
    return json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in sorted(r.items())})


def design_lines(records: pd.DataFrame, cells: list) -> tuple:
    """Each trial recipe that every cell trained (the search's first design points are the same
    on every corpus at one seed and ratio) against that cell's verified default.

    One trial seed against the default's mean over its verification seeds, not paired: the
    difference is *beyond noise* when it is outside the default's 95% prediction interval for one
    more seed, ``t_{0.975, n-1} x sd x sqrt(1 + 1/n)``, sd the default's seed-to-seed spread in that
    cell. Returns (lines, {design: number of cells where it beat the default beyond noise, of how many})."""
    from scipy import stats

    keys = sorted({(c["corpus"], c["regime"]) for c in cells})
    t = records[records["kind"] == "trial"].copy()
    if t.empty or not keys:
        return [], {}
    t["design"] = t["recipe"].map(_design_key)
    per_cell = t.groupby("design")[["corpus", "regime"]].apply(lambda d: len(set(zip(d["corpus"], d["regime"]))))
    shared = sorted(per_cell[per_cell == len(keys)].index)
    if not shared:
        return [], {}
    by = {(c["corpus"], c["regime"]): c for c in cells}
    head = "| recipe (a trial on every cell) | " + " | ".join(f"{c} {r}" for c, r in keys) + " | beats the default |"
    lines = [head, "| --- " * (len(keys) + 2) + "|"]
    tally = {}
    for design in shared:
        row, wins = [], 0
        for key in keys:
            d = by[key]["recipes"].get("default")
            x = t[(t["design"] == design) & (t["corpus"] == key[0]) & (t["regime"] == key[1])]["loss"].mean()
            if not d or d["sd"] is None:
                row.append("–")
                continue
            q = float(stats.t.ppf(0.5 + LEVEL / 2, d["seeds"] - 1))
            diff, band = float(x - d["mean"]), q * d["sd"] * np.sqrt(1 + 1 / d["seeds"])
            beyond = abs(diff) > band
            wins += beyond and diff < 0
            row.append(f"{diff:+.3f}" + (" **beyond**" if beyond else ""))
        tally[design] = (wins, len(keys))
        lines.append(f"| `{design}` | " + " | ".join(row) + f" | {wins} of {len(keys)} cells |")
    note = (
        "Trial loss minus the cell's verified default (nats/token; one trial seed against the default's "
        "mean over its verification seeds, so *beyond* means outside the default's 95% prediction interval, "
        "t(n-1) x sd x sqrt(1 + 1/n) of its seed-to-seed spread, not a paired test)."
    )
    return ["", note, "", *lines, ""], tally


def verdict_lines(cells: list, records: pd.DataFrame | None = None) -> list:
    corpora = sorted({c["corpus"] for c in cells})
    regimes = sorted({c["regime"] for c in cells})
    by = {(c["corpus"], c["regime"]): c for c in cells}
    lines = ["## Verdict: the default recipe", ""]
    beats = []
    for key in [(c, r) for c in corpora for r in regimes if (c, r) in by]:
        d = by[key]["differences"].get("chosen-default")
        beats.append(bool(d and d["beyond"] and d["mean"] < 0))
    n_cells = len(corpora) * len(regimes)
    everywhere = len(beats) == n_cells and all(beats)
    lines += [
        f"- Does a searched DATAMASK recipe beat the default beyond noise everywhere? The chosen recipe beat it "
        f"beyond noise in **{sum(beats)} of {len(beats)}** corpus x regime cells"
        + (f" (of {n_cells} planned)" if len(beats) != n_cells else "")
        + (
            ": in every cell — but each cell's chosen recipe is its own; a new default needs one recipe verified "
            "on every cell (see the chosen recipes below)."
            if everywhere
            else ": so no DATAMASK recipe has been shown to beat the default on every corpus in both regimes, "
            "and the default stays."
        ),
        "",
        "| corpus | regime | chosen recipe | chosen minus default | default minus top-k | default minus random |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for (c, r), cell in sorted(by.items()):
        dd = cell["differences"]
        lines.append(
            f"| {c} | {r} | `{json.dumps(cell['chosen'], sort_keys=True)}` | {_words(dd.get('chosen-default'))} | "
            f"{_words(dd.get('default-topk'))} | {_words(dd.get('default-random'))} |"
        )
    lines.append("")
    if records is not None:
        design, tally = design_lines(records, cells)
        if design:
            best = max(tally.values(), key=lambda w: w[0])
            lines += [
                "The same recipes on every corpus: the search's first design points are the same on every "
                "cell, so each was trained everywhere. A recipe that beat the default beyond noise on every "
                f"cell would replace it; the best did so on **{best[0]} of {best[1]}** cells.",
                *design,
            ]
    for ref in ("topk", "random"):
        ds = [by[k]["differences"].get(f"default-{ref}") for k in sorted(by)]
        ds = [d for d in ds if d]
        better = sum(d["beyond"] and d["mean"] < 0 for d in ds)
        worse = sum(d["beyond"] and d["mean"] > 0 for d in ds)
        lines.append(
            f"- default against {ref}: lower loss beyond noise in {better}, higher beyond noise in {worse}, "
            f"within noise in {len(ds) - better - worse} of {len(ds)} cells."
        )
    return lines + [""]
