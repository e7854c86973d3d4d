"""Render ``diversity.md`` and ``diversity_front.png`` from ``diversity.json`` (benchmarks/diversity.py).

Every verdict here is a function of the records with its threshold beside it (the default's
criteria are issue 47's; the Fig. 2 / Fig. 12 check is ``paper_check.md``'s):

* :func:`criteria`: per case and ratio, whether a candidate is on the quality-coverage front (no
  measured selection has both higher quality and higher coverage), covers the corpus at least
  as well as top-k and as random less ``COVERAGE_SLACK``, has no more near-duplicates than
  random plus ``NEAR_DUP_SLACK``, and a normalised quality at least the midpoint of random's and
  top-k's;
* :func:`between`: whether a selection lies between the quality-only selection (top-k) and the
  corpus, in cluster distribution and in embedding space.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

COVERAGE_SLACK = 0.01
NEAR_DUP_SLACK = 0.02
CHECKS = ("front", "coverage_vs_topk", "coverage_vs_random", "near_dup_vs_random", "quality_midpoint")
# paper_check's Fig. 2 / Fig. 12 verdict: the share of cases where a selection lies between
HOLDS, IN_PART = 0.9, 0.5


def criteria(cell: pd.DataFrame) -> pd.DataFrame:
    """One case x ratio (a row per candidate, ``topk`` and ``random`` among them): each check of
    :data:`CHECKS` as a bool column, and each margin (positive: passed by that much)."""
    c = cell.set_index("candidate")
    topk, rnd = c.loc["topk"], c.loc["random"]
    out = pd.DataFrame(index=c.index)
    qn, cov = c["quality_norm"].to_numpy(), c["coverage"].to_numpy()
    dominated = [bool(((qn > a) & (cov > b)).any()) for a, b in zip(qn, cov)]
    out["front"] = ~np.array(dominated)
    out["m_coverage_vs_topk"] = c["coverage"] - topk["coverage"]
    out["m_coverage_vs_random"] = c["coverage"] - (rnd["coverage"] - COVERAGE_SLACK)
    out["m_near_dup_vs_random"] = (rnd["near_dup"] + NEAR_DUP_SLACK) - c["near_dup"]
    out["m_quality_midpoint"] = c["quality_norm"] - 0.5 * (rnd["quality_norm"] + topk["quality_norm"])
    for k in CHECKS[1:]:
        out[k] = out[f"m_{k}"] >= 0
    out["all"] = out[list(CHECKS)].all(axis=1)
    return out


def between(cell: pd.DataFrame) -> pd.Series:
    """Per candidate: True when its selection is closer to the corpus than top-k's is, both in
    cluster distribution (Jensen-Shannon distance) and in mean embedding (the paper's Fig. 2 and
    Fig. 12 claim: the joint selection lies between the quality-only one and the raw corpus)."""
    c = cell.set_index("candidate")
    t = c.loc["topk"]
    return (c["cluster_js"] < t["cluster_js"]) & (c["mean_dist"] < t["mean_dist"])


def verdict(share: float) -> str:
    """'holds' at a share of cases >= HOLDS, 'holds in part' at >= IN_PART, else 'does not hold'."""
    return "holds" if share >= HOLDS else "holds in part" if share >= IN_PART else "does not hold here"


def tables(records: list) -> dict:
    df = pd.DataFrame(records)
    crit, betw = [], []
    for (case, ratio), cell in df.groupby(["case", "ratio"], sort=False):
        c = criteria(cell)
        c["case"], c["ratio"] = case, ratio
        crit.append(c.reset_index())
        b = between(cell).rename("between").reset_index()
        b["case"], b["ratio"] = case, ratio
        betw.append(b)
    crit, betw = pd.concat(crit, ignore_index=True), pd.concat(betw, ignore_index=True)
    summary = crit.groupby("candidate", sort=False).agg(
        cells=("all", "size"),
        passed=("all", "sum"),
        **{f"{k}_fails": (k, lambda s: int((~s).sum())) for k in CHECKS},
        **{f"worst_{k}": (f"m_{k}", "min") for k in CHECKS[1:]},
    )
    return {"records": df, "criteria": crit, "between": betw, "summary": summary}


def _fmt(x, digits=3):
    return "—" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:+.{digits}f}"


def markdown(t: dict, meta: dict) -> str:
    s, df = t["summary"], t["records"]
    n_cases = df["case"].nunique()
    lines = [
        "# Diversity suite (`benchmarks/diversity.py`)",
        "",
        f"Rendered from `diversity.json` by `benchmarks/diversity_report.py`. {n_cases} cases (the four real corpora "
        "of `suite_corpora.py` with MiniLM and static embeddings, seven generated shapes at "
        f"20,000 rows) x ratios {', '.join(str(r) for r in sorted(df['ratio'].unique()))}: "
        f"{len(t['criteria'][t['criteria'].candidate == 'topk'])} cells. Coverage and near-duplicates on a seeded "
        f"sample of {meta['sample']:,} rows, clusters: k-means with {meta['clusters']} on each corpus. Machine: "
        f"{meta['machine']}, load {meta['load'][0]:.1f} at the start and {meta['load'][1]:.1f} at the end "
        f"when the results were assembled (the cases ran in up to two processes side by side, `--shard`; seconds are "
        "one thread's, contended: read them as rough).",
        "",
        "## The default's criteria, per candidate (worst case over every cell)",
        "",
        f"A cell passes when the candidate is on the quality-coverage front, covers at least top-k's coverage and "
        f"random's less {COVERAGE_SLACK}, has at most random's near-duplicate share plus {NEAR_DUP_SLACK}, and a "
        "normalised quality at least the midpoint of random's and top-k's. Margins: positive passes by that much.",
        "",
        "| candidate | cells passed | off the front | below top-k's coverage | below random's coverage | "
        "near-dups over random's | quality below midpoint | worst coverage - top-k | worst near-dup margin | "
        "worst quality margin |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cand, r in s.iterrows():
        lines.append(
            f"| {cand} | {int(r.passed)}/{int(r.cells)} | {int(r.front_fails)} | {int(r.coverage_vs_topk_fails)} | "
            f"{int(r.coverage_vs_random_fails)} | {int(r.near_dup_vs_random_fails)} | {int(r.quality_midpoint_fails)} | "
            f"{_fmt(r.worst_coverage_vs_topk)} | {_fmt(r.worst_near_dup_vs_random)} | {_fmt(r.worst_quality_midpoint)} |"
        )
    lines += ["", "## Every cell at ratio 0.1", ""]
    cols = ("quality_norm", "coverage", "near_dup", "cluster_js", "mean_dist", "seconds")
    for case, g in df[df.ratio == 0.1].groupby("case", sort=False):
        lines += [f"### {case} ({int(g['rows'].iloc[0]):,} rows)", "", "| candidate | " + " | ".join(cols) + " |",
                  "| --- |" + " --- |" * len(cols)]  # fmt: skip
        for _, r in g.iterrows():
            lines.append(f"| {r.candidate} | " + " | ".join(f"{r[c]:.3f}" for c in cols) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


def figure(df: pd.DataFrame, path: Path, ratio=0.1, default: str | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = list(df[df.ratio == ratio].groupby("case", sort=False))
    cols = 4
    fig, axes = plt.subplots(
        (len(cells) + cols - 1) // cols, cols, figsize=(4.2 * cols, 3.4 * ((len(cells) + cols - 1) // cols))
    )
    marks = {c: i for i, c in enumerate(dict.fromkeys(df["candidate"]))}
    cmap = plt.get_cmap("tab20")
    for ax, (case, g) in zip(np.ravel(axes), cells):
        for _, r in g.iterrows():
            mine = r.candidate == default
            ax.scatter(r.quality_norm, r.coverage, color="black" if mine else cmap(marks[r.candidate] % 20),
                       s=70 if mine else 28, marker="*" if r.candidate in ("topk", "random") else "D" if mine else "o",
                       label=f"{r.candidate} (the default)" if mine else r.candidate, zorder=3 if mine else 2)  # fmt: skip
        ax.set_title(case, fontsize=8)
        ax.set_xlabel("quality (normalised)", fontsize=7)
        ax.set_ylabel("coverage", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in np.ravel(axes)[len(cells) :]:
        ax.axis("off")
    h, lab = np.ravel(axes)[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="lower center", ncol=6, fontsize=7)
    fig.suptitle(f"Quality against coverage at ratio {ratio}: up and right is better", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def summary(t: dict, default: str) -> dict:
    """What the docs quote (``diversity_summary.json``): per candidate its cells, passes, each
    check's failures and worst margin, and its cells *between* top-k and the corpus."""
    s, b = t["summary"], t["between"]
    cands = {
        cand: {
            **{k: (float(v) if "worst" in k else int(v)) for k, v in r.items()},
            "between": int(b[b.candidate == cand]["between"].sum()),
        }
        for cand, r in s.iterrows()
    }
    df = t["records"]
    return {"default": default, "cases": int(df["case"].nunique()), "ratios": sorted(float(x) for x in df["ratio"].unique()),
            "candidates": cands}  # fmt: skip


def render(json_path: Path, out: Path, default: str | None = None) -> dict:
    data = json.loads(Path(json_path).read_text())
    t = tables(data["records"])
    (out / "diversity.md").write_text(markdown(t, data["meta"]))
    figure(t["records"], out / "diversity_front.png", default=default)
    if default is not None:
        (out / "diversity_summary.json").write_text(json.dumps(summary(t, default), indent=1) + "\n")
    return t


# the objectives paper_check's Fig. 2 / Fig. 12 section reads (the paper's own and ours)
PAPER_FIG_CANDIDATES = ("pairwise, paper preset", "pairwise", "facility lam 0.5", "disf")


def paper_section(json_path: Path) -> list:
    """paper_check.md's Fig. 2 / Fig. 12 section, computed from ``diversity.json``: per objective,
    the share of the suite's cells where its selection lies between top-k's and the corpus (closer
    to the corpus than top-k's is, in cluster distribution and in mean embedding)."""
    head = [
        "",
        "## Fig. 2 / Fig. 12: the joint selection lies between quality-only and the raw corpus",
        "",
        "**Paper.** Its Fig. 2 and Fig. 12 show the jointly optimised selection between the quality-only "
        "selection and the raw distribution, in embedding space and over clusters.",
        "",
    ]
    if not Path(json_path).exists():
        return head + [f"Not measured: `{Path(json_path).name}` is missing (run `benchmarks/diversity.py`)."]
    t = tables(json.loads(Path(json_path).read_text())["records"])
    b = t["between"]
    n_cells = b[b.candidate == "topk"].shape[0]
    lines = head + [
        f"**Here** (`benchmarks/diversity.py`, {n_cells} cells: the diversity suite's corpora x ratios, "
        "[diversity.md](diversity.md)): a selection is *between* when its Jensen-Shannon distance to the "
        "corpus over k-means clusters and the distance of its mean embedding to the corpus's are both "
        "smaller than top-k's. Verdict per objective: "
        f"**holds** at >= {HOLDS:.0%} of cells, **holds in part** at >= {IN_PART:.0%}, else **does not hold here**.",
        "",
        "| objective | cells between | share | verdict |",
        "| --- | --- | --- | --- |",
    ]
    summ = Path(json_path).with_name("diversity_summary.json")
    default = json.loads(summ.read_text())["default"] if summ.exists() else None
    for cand in dict.fromkeys([*PAPER_FIG_CANDIDATES, *([default] if default else [])]):
        s = b[b.candidate == cand]["between"]
        if len(s):
            name = f"{cand} (the default)" if cand == default else cand
            lines.append(f"| {name} | {int(s.sum())}/{len(s)} | {s.mean():.0%} | {verdict(float(s.mean()))} |")
    return lines + [""]


# ---------------------------------------------------------------------- the recheck (diversity.py --recheck)
def _passes(records: list, candidate: str) -> pd.DataFrame:
    """Per cell (case, ratio) of ``records``: every check of ``candidate`` and its values."""
    rows = []
    for (case, ratio), cell in pd.DataFrame(records).groupby(["case", "ratio"], sort=False):
        c = criteria(cell).loc[candidate]
        v = cell.set_index("candidate").loc[candidate]
        rows.append({"case": case, "ratio": ratio, "all": bool(c["all"]),
                     **{k: v[k] for k in ("quality_norm", "coverage", "near_dup", "seconds")}})  # fmt: skip
    return pd.DataFrame(rows).set_index(["case", "ratio"])


def recheck_tables(data: dict, recorded: list) -> dict:
    """``after``: this tree's cells; ``before``: the same cells with the filtered candidates'
    records of the other commit in their place (the rest is code neither changed); ``recorded``:
    the recorded suite's (diversity.json) cells of the same generated cases (a real corpus
    rebuilt on another machine is not the recorded one's data)."""
    after = data["records"]
    swap = {(r["case"], r["ratio"], r["candidate"]): r for r in data["before"]}
    before = [swap.get((r["case"], r["ratio"], r["candidate"]), r) for r in after]
    real = tuple(f"{c} (" for c in data["meta"].get("real", []))
    cases = {r["case"] for r in after if not r["case"].startswith(real)}
    rec = [r for r in recorded if r["case"] in cases]
    out = {}
    for cand in data["meta"]["filtered"]:
        a, b = _passes(after, cand), _passes(before, cand)
        r = _passes(rec, cand) if any(x["candidate"] == cand for x in rec) else None
        d = (a[["quality_norm", "coverage", "near_dup"]] - b[["quality_norm", "coverage", "near_dup"]]).abs()
        out[cand] = {
            "cells": int(len(a)),
            "passed_after": int(a["all"].sum()),
            "passed_before": int(b["all"].sum()),
            "passed_recorded": None if r is None else int(r["all"].sum()),
            "cells_recorded": None if r is None else int(len(r)),
            "passed_after_recorded_cells": None if r is None else int(a.loc[r.index, "all"].sum()),
            **{f"max_delta_{k}": float(d[k].max()) for k in d},
            "seconds_after": float(a["seconds"].sum()),
            "seconds_before": float(b["seconds"].sum()),
            "_after": a,
            "_before": b,
        }
    return out


def render_recheck(json_path: Path, recorded_path: Path, out: Path, default: str) -> dict:
    """``diversity_recheck.md`` and ``diversity_recheck_summary.json`` (what the docs quote) from
    ``diversity_recheck.json`` and the recorded suite's ``diversity.json``."""
    data = json.loads(Path(json_path).read_text())
    recorded = json.loads(Path(recorded_path).read_text())["records"]
    t = recheck_tables(data, recorded)
    m = data["meta"]
    real = m.get("real", [])
    with_real = f" and the real corpus {', '.join(real)} (rebuilt here; MiniLM and static embeddings)" if real else ""
    lines = [
        "# The diversity suite re-run for the filter over the picks (`benchmarks/diversity.py --recheck`)",
        "",
        f"Rendered from `diversity_recheck.json` by `benchmarks/diversity_report.py`. The seven generated shapes of "
        f"`diversity.md` ({m['rows']:,} rows each){with_real}, ratios 0.05, 0.1, 0.3: {t[default]['cells']} cells, "
        "with this tree "
        f"(`after`, {m['after']}: every candidate) and, in a second process beside it, the candidates where the "
        f"redundancy filter now runs over facility location's picks with the package of {m['before']} (`before`: the "
        "filter over every candidate first). A `before` cell is the `after` cell with those candidates' records "
        "in their place (nothing else differs between the two commits). *recorded*: the generated cells of "
        "`diversity.json`, the suite run that chose the default (older code), against `after` on the same cells. "
        f"The other real corpora were not rebuilt for this run. Machine: {m['machine']}, load {m['load'][0]:.1f} at the start and {m['load'][1]:.1f} "
        "at the end (two processes side by side: seconds are one thread's, contended).",
        "",
        "| candidate | cells passed: after | before | generated cells: recorded | after | max abs. change: quality (norm.) | coverage | "
        "near-dup share | seconds, all cells: after | before |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for cand, r in t.items():
        rec = (
            "— | —"
            if r["passed_recorded"] is None
            else (
                f"{r['passed_recorded']}/{r['cells_recorded']} | {r['passed_after_recorded_cells']}/{r['cells_recorded']}"
            )
        )
        lines.append(
            f"| {cand}{' (the default)' if cand == default else ''} | {r['passed_after']}/{r['cells']} | "
            f"{r['passed_before']}/{r['cells']} | {rec} | {r['max_delta_quality_norm']:.4f} | "
            f"{r['max_delta_coverage']:.4f} | {r['max_delta_near_dup']:.4f} | {r['seconds_after']:.1f} | "
            f"{r['seconds_before']:.1f} |"
        )
    a, b = t[default]["_after"], t[default]["_before"]
    lines += ["", f"## The default (`{default}`), cell by cell", "",
              "| case | ratio | quality (norm.): before | after | coverage: before | after | near-dup share: before | "
              "after | passes: before | after |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for (case, ratio), x in a.iterrows():
        y = b.loc[(case, ratio)]
        lines.append(
            f"| {case} | {ratio} | {y.quality_norm:.4f} | {x.quality_norm:.4f} | {y.coverage:.4f} | {x.coverage:.4f} | "
            f"{y.near_dup:.4f} | {x.near_dup:.4f} | {'yes' if y['all'] else 'no'} | {'yes' if x['all'] else 'no'} |"
        )
    (out / "diversity_recheck.md").write_text("\n".join(lines) + "\n")
    summary = {
        "default": default,
        "after": m["after"],
        "before": m["before"],
        "load": m["load"],
        "real": m.get("real", []),
        "candidates": {c: {k: v for k, v in r.items() if not k.startswith("_")} for c, r in t.items()},
    }
    (out / "diversity_recheck_summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return t
