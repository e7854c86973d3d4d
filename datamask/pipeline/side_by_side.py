"""``select``'s selection beside top-k and random at the same budget, on every number.

Each split's worker scores its selection, the top-k by quality and a random sample with the
same budget (rows, or tokens) through :func:`datamask.core.scorecard.selection_scores` and
puts the numbers in the split's record (:func:`split_side_by_side`); the client combines the
records (:func:`combine`: row-weighted means, tokens summed) without reading a row. The
terminal summary (:func:`format_side_by_side`) and the HTML report print the same numbers
under the same :data:`LABELS`.
"""

from __future__ import annotations

import math
import time

import pandas as pd

from ..core.scorecard import NEAR_DUPLICATE_COSINE, SCORE_PAIRS, SCORE_SAMPLE, SCORE_SAMPLE_MIN

__all__ = [
    "LABELS",
    "COLUMNS",
    "BASELINES",
    "split_side_by_side",
    "combine",
    "format_side_by_side",
    "format_value",
    "side_by_side_note",
    "coverage_warning",
]

# the methods scored beside the selection, at its budget, and their names in the table
BASELINES = {"topk": "top-k quality", "random": "random"}
# the side-by-side columns, in the order both the terminal and the report print them
COLUMNS = ("objective", "quality_norm", "quality", "pairwise", "facility", "near_duplicates", "tokens")
LABELS = {
    "objective": "objective",
    "quality_norm": "mean quality, normalised (0-1)",
    "quality": "mean quality, raw score",
    "pairwise": "pairwise diversity",
    "facility": "coverage (mean best cosine)",
    "disf": "DiSF",
    "near_duplicates": "near-duplicate share",
    "tokens": "tokens kept",
    "mean_tokens": "mean length (tokens)",
    "selected": "selected rows",
    "seconds": "wall time (s)",
}
SUMMED = ("tokens", "selected")


def side_by_side_note(reference_size=None, subsets=None) -> str:
    """What the side-by-side numbers are, under the table (terminal and report); ``subsets``
    says what was scored (default: ``select``'s three, sampled as :func:`split_side_by_side`
    samples them)."""
    size = int(reference_size or SCORE_SAMPLE)
    near = (
        f"Near-duplicate share: of {size:,} sampled rows of the subset, those whose nearest other row in it has "
        f"cosine >= {NEAR_DUPLICATE_COSINE} (semantic dedup's default eps 0.05)"
    )
    if subsets:
        cover, tail = f"Coverage: mean over {size:,} sampled rows of their best cosine to the subset", ""
    else:
        subsets = "each split's selection, the top-k by quality and a random sample at the same budget"
        cover = f"Coverage: mean over rows of their best cosine to the subset (1 for its own rows; the others' from {size:,} sampled rows)"
        tail = (
            f"; both sample fewer rows, down to {min(size, SCORE_SAMPLE_MIN):,}, where sampled rows x the subset's "
            f"rows would pass {SCORE_PAIRS:,} pairs, and the subsets share their sampled rows where they can"
        )
    return (
        f"{subsets}, scored alike and averaged over splits weighted by rows (tokens summed). Normalised "
        f"quality: min-max over the split (the objective's term); raw: the input's score. {cover}. {near}{tail}"
    )


def split_side_by_side(E, q, mask, cfg, seed, *, budget, where="", table=None, reference_cover=None) -> dict:
    """``{"selection", "topk", "random"}`` -> that mask's scores on this split (numbers only,
    NaN left out), and the seconds they took under ``"seconds"``. Top-k and random come from
    the method registry with the selection's ``budget`` (its checked
    :class:`~datamask.methods.registry.Budget`: S rows, or ``split_tokens`` with the rows' counts),
    unscored there: the three are scored here alike, on one sample of rows, the rows of the three
    copied once (the inputs were checked by the split's select). ``reference_cover``: the fit's
    :class:`~datamask.core.facility_lists.ReferenceCover` (facility location on numpy), which
    gives each subset's objective without its products with every reference row."""
    from ..core.scorecard import Scorecard, score_sample
    from ..methods import select_mask

    t0 = time.perf_counter()
    masks = {"selection": mask}
    for m in BASELINES:
        masks[m] = select_mask(E, q, cfg, seed, where, table=table, method=m, budget=budget)
    largest = max(int(mk.sum()) for mk in masks.values())
    card = Scorecard(
        E, q, lam=cfg.lam, diversity=cfg.diversity, reference_size=cfg.solver("reference_size"), seed=seed,
        sample=score_sample(largest, cfg.solver("reference_size")),  # bounded: sample x selected pairs
        diversities=("pairwise", "facility"), norms="own", reference_cover=reference_cover,
    )  # fmt: skip
    out = {}
    for name, s in card.score_many(masks, budget.lengths).items():
        out[name] = {k: v for k, v in s.items() if not (isinstance(v, float) and math.isnan(v))}
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def combine(records, method: str) -> pd.DataFrame | None:
    """The side-by-side table of a run from its split records: one row per subset (the
    selection, then the baselines), row-weighted means over splits, tokens and rows summed;
    None when no split has the numbers."""
    parts = [r for r in records if r.get("side_by_side")]
    if not parts:
        return None
    names = {"selection": f"selection ({method})", **BASELINES}
    rows = {}
    for key, label in names.items():
        recs = [(p["side_by_side"][key], p["rows_in"]) for p in parts if key in p["side_by_side"]]
        cols = [c for c in COLUMNS if all(c in r for r, _ in recs)]  # the terminal's (and the report's)
        row = {}
        for c in cols:
            vals = [(r[c], w) for r, w in recs]
            if c in SUMMED:
                row[c] = sum(v for v, _ in vals)
            else:
                row[c] = sum(v * w for v, w in vals) / max(sum(w for _, w in vals), 1)
        rows[label] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("subset")


def coverage_warning(table: pd.DataFrame | None, subsets=None) -> str | None:
    """One sentence when a subset of the side-by-side ``table`` covers the corpus less than
    ``random`` does at the same budget (their ``facility`` column), with both numbers; None
    when none does or a number is missing. ``subsets``: the rows checked (default: every row
    but random's and the whole split's; ``select`` checks its selection only)."""
    if table is None or "facility" not in table or "random" not in table.index:
        return None
    rnd = float(table.at["random", "facility"])
    rows = [i for i in table.index if i not in ("random", "whole split")] if subsets is None else list(subsets)
    below = [(str(i), float(table.at[i, "facility"])) for i in rows if i in table.index]
    below = [(i, v) for i, v in below if v < rnd]  # (NaN compares false: not below)
    if not below:
        return None
    if len(below) == 1 and below[0][0].startswith("selection ("):  # select's own
        who = (
            f"this selection covers the corpus less than a random sample of the same budget: coverage {below[0][1]:.3f}"
        )
    else:
        names = ", ".join(f"{i} ({v:.3f})" for i, v in below)
        who = f"{names} cover{'s' if len(below) == 1 else ''} the corpus less than a random sample of the same budget"
    return (
        f"{who[0].upper() + who[1:]} against random's {rnd:.3f} (coverage: the mean over sampled rows of the corpus "
        "of their best cosine to the subset; higher is better)"
    )


def format_value(column: str, v) -> str:
    """One cell as the terminal and the report print it."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if column in SUMMED or column in ("rows", "groups", "removed", "holdout_rows", "token_budget"):
        return f"{int(round(float(v))):,}"
    return f"{float(v):.4g}"


def format_side_by_side(table: pd.DataFrame, columns=COLUMNS) -> str:
    """The side-by-side table for the terminal: one line per number (of ``columns``), one
    column per subset or method."""
    cols = [c for c in columns if c in table.columns]
    width = max(len(LABELS[c]) for c in cols) + 2
    heads = [str(i) for i in table.index]
    cw = [max(len(h), 10) + 2 for h in heads]
    lines = [" " * width + "".join(h.rjust(w) for h, w in zip(heads, cw))]
    for c in cols:
        cells = "".join(format_value(c, table.at[i, c]).rjust(w) for i, w in zip(table.index, cw))
        lines.append(LABELS[c].ljust(width) + cells)
    return "\n".join(lines)
