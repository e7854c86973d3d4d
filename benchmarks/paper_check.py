"""The DATAMASK paper's optimisation claims, checked one by one under the paper's settings.

Run:  python benchmarks/paper_check.py [--quick] [--claims fig4,fig10]   ->  benchmarks/results/paper_check.md (+ .png)

For each claim (Fig. 3, 4, 7, 8, 10 and Table 1 of the paper, /work/shared/papers): the
paper's statement, what we measure on the default-selection suite's corpora
(:mod:`benchmarks.defaults`: ``make_corpus``, clustered corpora of the issue's shape, and real
MiniLM embeddings of text on this machine, :mod:`benchmarks.real_text`) under the paper's
recipe (``--preset paper``: quality-aware pruning 0.5 and start, lr 10, G 128, batch 5%
uncapped, no early stop; step budgets cut to fit a small machine), and a verdict in words.
Every figure is one process, one BLAS thread; runs are capped in seconds (a Tracker callback)
so the whole check fits about 15 minutes on two shared cores. Gains are over a random
selection of the same size, as in benchmarks/optimizer.py; "greedy" is our lazy greedy
(``method="greedy"``), "naive greedy" recomputes every candidate's gain from the picks at
every pick (the paper's baseline; DiSF only), "relaxed" is Frank-Wolfe (``method="relaxed"``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from optimizer import Tracker, first_reach, pin_allocator  # noqa: E402

from datamask import DataMask, evaluate  # noqa: E402
from datamask.core.greedy import standardize  # noqa: E402
from datamask.core.synthetic import make_clusters, make_corpus  # noqa: E402
from datamask.pipeline.presets import PRESETS  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "results")
# real MiniLM paragraphs embedded (once, cached in benchmarks/.cache): few, as a contended CPU embeds them slowly
MINILM_ROWS = 1000
ISSUE = dict(n_clusters=50, spread=0.5, noise=0.1, n_dup_groups=10, dup_fraction=0.05)
# the paper's recipe as DataMask parameters (steps set per run)
PAPER = {k: v for k, v in PRESETS["paper"].items() if k not in ("steps",)}


def corpus(name, N):
    if name == "make_corpus":
        c = make_corpus(n_rows=N, dim=384, seed=0)
    elif name == "clusters":
        c = make_clusters(n_rows=N, dim=384, seed=0, **ISSUE)
    else:  # real MiniLM embeddings of the Python docstrings + /usr/share/doc paragraphs
        import real_text

        E, q, _ = real_text.build("pydoc", MINILM_ROWS, threads=1)
        rows = np.sort(np.random.default_rng(1).choice(len(q), size=min(N, len(q)), replace=False))
        return E[rows], q[rows]
    return c["embedding"], c["quality"]


def rand_obj(E, q, ratio, lam, div):
    S = round(ratio * len(q))
    return evaluate(E, q, np.random.default_rng(0).permutation(len(q))[:S], lam=lam, diversity=div, reference_size=2048)


def timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def fit(E, q, **kw):
    return DataMask(**kw).fit(E, q)


def pg(E, q, cap_s, stop_at=None, eval_every=20, **kw):
    """A pg fit under the paper's recipe (``kw`` overrides), capped: (estimator, seconds, points)."""
    tr = Tracker(cap_s, stop_at)
    params = dict(PAPER, ratio=0.1, eval_every=eval_every, callback=tr)
    params.update(kw)
    m, s = timed(fit, E, q, **params)
    return m, s, tr.points


def pct(v, r, g):
    return 100.0 * (v - r) / g if g else float("nan")


# ---------------------------------------------------------------------- Fig. 3
def fig3(size, steps, cap):
    rows, traj = [], {}
    for name in ("make_corpus", "clusters", "MiniLM pydoc"):
        E, q = corpus(name, size)
        for lam, what in ((0.0, "diversity only"), (0.5, "joint")):
            base = dict(ratio=0.1, lam=lam, diversity="pairwise")
            r = rand_obj(E, q, 0.1, lam, "pairwise")["objective"]
            gain = DataMask(method="greedy", **base).fit(E, q).objective_["objective"] - r
            for init in ("uniform", "quality"):
                m, s, pts = pg(E, q, cap, steps=steps, lam=lam, init=init)
                h = m.history_
                rows.append(
                    dict(
                        corpus=name,
                        what=what,
                        init=init,
                        q=m.objective_["quality"],
                        div=m.objective_["diversity"],
                        pct=pct(max(p[2] for p in pts), r, gain),
                        start=pct(pts[0][2], r, gain),
                        t95=first_reach(pts, r + 0.95 * gain)[1],
                        k95=first_reach(pts, r + 0.95 * gain)[0],
                        steps=m.n_steps_,
                    )
                )
                traj[(name, what, init)] = [(x["step"], x["quality"], x["diversity"]) for x in h]
        print("fig3", name, flush=True)
    return rows, traj


# ---------------------------------------------------------------------- Fig. 4
def naive_greedy_disf(E, q, S, lam):
    """Greedy for quality + DiSF (standardisation fixed over the rows, as our greedy) with
    every candidate's gain recomputed from the picks at every pick: O(n |U| d) a pick."""
    Z = standardize(E).astype(np.float64)
    n, d = Z.shape
    Z2 = Z * Z
    k = Z2.sum(axis=1) ** 2 - (Z2**2).sum(axis=1)
    picked, order = np.zeros(n, dtype=bool), []
    lin, scale = lam * q / S, (1.0 - lam) / (d * (d - 1.0) * S * S)
    for _ in range(S):
        if order:
            U = Z[order]
            w = ((Z @ U.T) ** 2).sum(axis=1)  # recomputed from the picks, not carried
            t = Z2 @ (U * U).sum(axis=0)
        else:
            w = t = np.zeros(n)
        gain = lin - scale * (2 * w - 2 * t + k)
        gain[picked] = -np.inf
        i = int(gain.argmax())
        picked[i] = True
        order.append(i)
    return np.array(order)


def fig4(sizes, naive_max, cap):
    rows = []
    for N in sizes:
        E, q = corpus("make_corpus", N)
        base = dict(ratio=0.1, lam=0.5, diversity="disf")
        r = rand_obj(E, q, 0.1, 0.5, "disf")["objective"]
        g, tg = timed(fit, E, q, method="greedy", **base)
        x, tx = timed(fit, E, q, method="relaxed", **base)
        target = g.objective_["objective"]
        gain = target - r
        tn = None
        if N <= naive_max:
            cand = np.sort(np.argsort(-q, kind="stable")[: N - N // 2])  # the same pruning (0.5)
            En = E[cand] / np.linalg.norm(E[cand], axis=1, keepdims=True)
            _, tn = timed(naive_greedy_disf, En, (q[cand] - q.min()) / (q.max() - q.min()), round(0.1 * N), 0.5)
        m, s, pts = pg(E, q, cap, stop_at=target, steps=10_000, diversity="disf")
        reach = first_reach(pts, target)
        best = max(p[2] for p in pts)
        rows.append(
            dict(
                N=N,
                greedy=tg,
                naive=tn,
                relaxed=tx,
                relaxed_pct=pct(x.objective_["objective"], r, gain),
                pg_t=reach[1],
                pg_steps=reach[0],
                pg_best=pct(best, r, gain),
                pg_s=s,
            )
        )
        print("fig4", rows[-1], flush=True)
    return rows


# ---------------------------------------------------------------------- Fig. 7 / 8 / 10 / Table 1
def sweep(name, N, div, key, values, steps, cap, each=({},), **fixed):
    """pg runs with ``key`` set to each of ``values`` (and, around them, each of ``each``'s
    extra settings, kept in the rows), against greedy's gain over random."""
    E, q = corpus(name, N)
    base = dict(ratio=0.1, lam=0.5, diversity=div)
    r = rand_obj(E, q, 0.1, 0.5, div)["objective"]
    g, tg = timed(fit, E, q, method="greedy", **base)
    gain = g.objective_["objective"] - r
    rows = []
    for extra in each:
        for v in values:
            kw = dict(fixed, diversity=div, steps=steps, **extra, **{key: v})
            m, s, pts = pg(E, q, cap, **kw)
            objs = [p[2] for p in pts]
            fall = max([a - b for a, b in zip(objs, objs[1:])] + [0.0])
            t99 = first_reach(pts, r + 0.99 * gain)
            rows.append(
                dict(
                    extra,
                    value=v,
                    end=pct(objs[-1], r, gain),
                    best=pct(max(objs), r, gain),
                    start=pct(objs[0], r, gain),
                    fall=100 * fall / gain,
                    steps=m.n_steps_,
                    s=s,
                    ms=1000 * s / max(1, m.n_steps_),
                    t99=t99[1],
                    pilot=m.pilot_ is not None,
                    points=[[int(p[0]), pct(p[2], r, gain)] for p in pts],  # (step, % of greedy)
                )
            )
            print(key, {k: v for k, v in rows[-1].items() if k != "points"}, flush=True)
    return rows, tg


def table1(N, steps, cap):
    E, q = corpus("make_corpus", N)
    base = dict(ratio=0.1, lam=0.5, diversity="disf")
    r = rand_obj(E, q, 0.1, 0.5, "disf")["objective"]
    g, tg = timed(fit, E, q, method="greedy", **base)
    gain = g.objective_["objective"] - r
    rows = []
    for label, kw in (
        ("random (uniform start, no pruning)", dict(prune=0.0, init="uniform")),
        ("+ pruning", dict(prune=0.5, init="uniform")),
        ("+ quality initialisation", dict(prune=0.5, init="quality")),
    ):
        m, s, pts = pg(E, q, cap, steps=steps, diversity="disf", **kw)
        t = first_reach(pts, r + 0.95 * gain)
        rows.append(
            dict(
                label=label,
                end=pct(max(p[2] for p in pts), r, gain),
                t95=t[1],
                s=s,
                steps=m.n_steps_,
                quality=m.objective_["quality"],
            )
        )
        print("table1", rows[-1], flush=True)
    return rows, tg


# ---------------------------------------------------------------------- report
def f(x, spec=".1f"):
    return "—" if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, spec)


def by_step(row, k):
    """The best % of greedy a run's top-S mask reached by step ``k`` (its evaluation points)."""
    return max((v for step, v in row.get("points", []) if step <= k), default=None)


def versus(t, base):
    """pg's time ``t`` against a baseline's: "N% less" when shorter, "Nx longer" when not."""
    if t is None:
        return None
    return f"{100 * (1 - t / base):.1f}% less" if t < base else f"{t / base:.1f}x longer"


def verdict_fig3(rows):
    by = {(r["corpus"], r["what"], r["init"]): r for r in rows}
    corpora = sorted({r["corpus"] for r in rows})
    lower = [
        by[(c, "diversity only", i)]["q"] < by[(c, "joint", i)]["q"] for c in corpora for i in ("uniform", "quality")
    ]
    close = [
        abs(by[(c, w, "uniform")]["pct"] - by[(c, w, "quality")]["pct"]) <= 2.0 for c in corpora for w in ("joint",)
    ]
    faster = []
    for c in corpora:
        tu, tq = by[(c, "joint", "uniform")]["k95"], by[(c, "joint", "quality")]["k95"]
        faster.append(tq is not None and (tu is None or tq <= tu))
    return lower, close, faster


def header(args, seconds, load):
    return [
        "# The paper's optimisation claims, checked (`benchmarks/paper_check.py`)",
        "",
        f"Run: `python benchmarks/paper_check.py{' --quick' if args.quick else ''}` in {seconds / 60:.1f} min, "
        f"one BLAS thread per fit, on a 2-core machine shared with other jobs (load average {load}: "
        "timings are contended; ratios within one table were measured side by side).",
        "",
        "Settings: the paper's final recipe (`--preset paper`: quality-aware pruning 0.5 and start, lr 10, "
        "G 128, batch updating on 5% of the candidates with no cap, no early stop), ratio 0.1, 384-d "
        "embeddings; each claim's own parameter swept around it. Step budgets and sizes are cut to fit "
        "the machine (the paper: 1M-row splits, 10,000 steps, a GPU each): a verdict here is about these sizes. "
        "Corpora are the default-selection suite's (benchmarks/defaults.py): `make_corpus`, clustered rows "
        "of the issue's shape (`clusters`), and real MiniLM embeddings of Python docstrings and "
        '/usr/share/doc paragraphs (`MiniLM pydoc`, benchmarks/real_text.py). "% of greedy" is the '
        "share of greedy's gain over a random selection of the same size.",
        "",
    ]


def write(args, res, seconds, load, claims):
    """The report: whole (every claim run), or the rerun ``claims``' sections replaced in
    the existing paper_check.md, each saying when and at what load it was rerun."""
    path = os.path.join(OUT, "paper_check.md")
    if set(claims) == set(CLAIMS):
        L = header(args, seconds, load)
        for key in CLAIMS + ("where",):
            L += SECTIONS[key](res)
        text = "\n".join(L)
    else:
        with open(path) as fh:
            parts = re.split(r"(?m)^(?=## )", fh.read())
        rerun = (
            f"_Rerun alone (`python benchmarks/paper_check.py --claims {','.join(claims)}"
            f"{' --quick' if args.quick else ''}`, {seconds / 60:.1f} min for the rerun, load average {load})._"
        )
        for key in claims:
            sec = SECTIONS[key](res)
            sec[1:1] = ["", rerun]
            i = next(i for i, p in enumerate(parts) if p.startswith(sec[0]))
            parts[i] = "\n".join(sec) + "\n"
        text = "".join(parts)
    with open(path, "w") as fh:
        fh.write(text)


def sec_fig3(res):
    L = []
    rows = res["fig3"]
    lower, close, faster = verdict_fig3(rows)
    L += [
        "## Fig. 3: uniform vs quality-aware start; diversity only vs joint",
        "",
        "**Paper.** Optimising diversity alone selects low-quality data; jointly optimising quality and "
        "diversity keeps quality high. The uniform and quality-aware starts reach similar quality and "
        "diversity, and the quality-aware start gets there faster.",
        "",
        f"**Measured** (pairwise, {res['fig3_size']:,} rows per corpus, at most {res['fig3_steps']} steps or "
        f"{res['fig3_cap']} s per run; `q` is the mean normalised quality of the selection):",
        "",
        "| corpus | objective | start | q | diversity | % of greedy (best) | % at step 0 | step at 95% | s to 95% | steps |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        L.append(
            f"| {r['corpus']} | {r['what']} | {r['init']} | {r['q']:.3f} | {r['div']:.4f} | {f(r['pct'])} | "
            f"{f(r['start'])} | {f(r['k95'], 'd')} | {f(r['t95'])} | {r['steps']} |"
        )
    v1 = "holds" if all(lower) else ("holds in part" if any(lower) else "does not hold here")
    v2 = "holds" if all(close) else ("holds in part" if any(close) else "does not hold here")
    v3 = "holds" if all(faster) else ("holds in part" if any(faster) else "does not hold here")
    L += [
        "",
        f"**Verdict.** Diversity only lowers quality: **{v1}** ({sum(lower)} of {len(lower)} runs select lower "
        f"quality than the joint objective from the same start). Similar end points from both starts (joint, "
        f"within 2 points of greedy's gain): **{v2}** ({sum(close)} of {len(close)} corpora). The quality-aware "
        f"start reaches 95% of greedy's gain in no more steps: **{v3}** ({sum(faster)} of {len(faster)} corpora) — "
        "with pruning the quality-aware start is already close to greedy's answer at step 0, so its speed is "
        "the start itself. In seconds it is slower at these sizes: its time includes our `logit_range` "
        '"auto" pilot (two short runs, beyond the paper, which gives no range).',
        "",
        "![Fig. 3 trajectories](paper_check_fig3.png)",
        "",
    ]
    return L


def sec_fig4(res):
    L = []
    rows = res["fig4"]
    L += [
        "## Fig. 4: DATAMASK reaches greedy's DiSF score in 98.9% less time",
        "",
        "**Paper.** Selecting 10% of 5,000-100,000 rows for DiSF, greedy's time grows to 78 hours at 100k "
        "rows; DATAMASK reaches the same optimised value in 98.9% less time.",
        "",
        f"**Measured** (DiSF, `make_corpus`, ratio 0.1, pruning 0.5 for every solver; pg capped at "
        f"{res['fig4_cap']} s and stopped when its top-S mask reaches greedy's exact objective; naive greedy "
        f"run up to {res['naive_max']:,} rows):",
        "",
        "| rows | naive greedy s | lazy greedy s (ours) | pg s to greedy's score | pg best % of greedy | "
        "Frank–Wolfe s | Frank–Wolfe % of greedy | pg time vs naive | pg time vs lazy |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t = r["pg_t"]
        vs_n = None if r["naive"] is None else versus(t, r["naive"])
        vs_l = versus(t, r["greedy"])
        L.append(
            f"| {r['N']:,} | {f(r['naive'], '.2f')} | {r['greedy']:.2f} | {f(t, '.2f')} | {f(r['pg_best'], '.2f')} | "
            f"{r['relaxed']:.2f} | {f(r['relaxed_pct'], '.2f')} | "
            f"{f(vs_n, 's')} | {f(vs_l, 's')} |"
        )
    ns = [(r["N"], r["naive"]) for r in rows if r["naive"]]
    slope = np.polyfit(np.log([n for n, _ in ns]), np.log([t for _, t in ns]), 1)[0] if len(ns) > 1 else None
    reached = [r for r in rows if r["pg_t"] is not None]
    cross_lazy = [r["N"] for r in reached if r["pg_t"] < r["greedy"]]
    cross_naive = [r["N"] for r in reached if r["naive"] and r["pg_t"] < r["naive"]]
    L += [
        "",
        f"Naive greedy's time grows as rows^{f(slope, '.2f')} here (fitted over the sizes it ran; "
        f"extrapolated from {ns[-1][0]:,} rows, 100k rows would take about "
        f"{ns[-1][1] * (1e5 / ns[-1][0]) ** slope / 3600 if slope else float('nan'):.0f} h here, the order of the "
        "paper's 78 h); our lazy greedy carries each candidate's "
        "gain from pick to pick and grows about linearly in rows times picks.",
        "",
        "**Verdict.** "
        + (
            f"pg reached greedy's score at {len(reached)} of {len(rows)} sizes. "
            + (
                f"Faster than naive greedy from {min(cross_naive):,} rows. "
                if cross_naive
                else "Never faster than naive greedy at the sizes measured. "
            )
            + (
                f"Faster than our lazy greedy from {min(cross_lazy):,} rows."
                if cross_lazy
                else "Never faster than our lazy greedy."
            )
        )
        + " Against the paper's baseline the claim's direction **holds in part** (naive greedy's cost grows "
        "much faster than pg's); against our lazy greedy it **does not hold here**: greedy is the faster way "
        "to greedy's score at every size measured, and Frank–Wolfe (our default start) gets within a fraction "
        "of a point of it in a fraction of the time.",
        "",
        "![Fig. 4 times](paper_check_fig4.png)",
        "",
    ]
    return L


def sec_fig7(res):
    L = []
    rows = res["fig7"]
    L += [
        "## Fig. 7: learning rate",
        "",
        "**Paper.** lr 1-10 converge fast and beat greedy; lr >= 100 diverges; lr <= 0.1 converges too slowly.",
        "",
        f"**Measured** (DiSF, `make_corpus` {res['fig7_size']:,} rows, uniform start so every lr starts from the "
        f"same place, {res['fig7_steps']} steps or {res['fig7_cap']} s):",
        "",
        "| lr | % of greedy at step 0 | at the end | best | largest fall (points) | steps | s to 99% |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        L.append(
            f"| {r['value']:g} | {f(r['start'])} | {f(r['end'])} | {f(r['best'])} | {f(r['fall'])} | {r['steps']} | {f(r['t99'])} |"
        )
    best = max(rows, key=lambda r: r["best"])
    slow = [r for r in rows if r["value"] <= 0.1]
    big = [r for r in rows if r["value"] >= 100]
    mid = [r for r in rows if 1 <= r["value"] <= 10]
    L += [
        "",
        f"**Verdict.** Best lr here: {best['value']:g} ({f(best['best'])}% of greedy). lr <= 0.1 slow: "
        f"**{'holds' if all(r['best'] < min(m['best'] for m in mid) for r in slow) else 'does not hold here'}**. "
        f"lr >= 100 ends worse than lr 1-10: **{'holds' if all(r['end'] < max(m['end'] for m in mid) - 1 or r['fall'] > 1 for r in big) else 'does not hold here'}**"
        + (
            " (it stalls rather than diverges: no fall of more than a point; a large step saturates the "
            "logits and freezes the mask). "
            if all(r["fall"] <= 1 for r in big)
            else " (with falls of more than a point: divergence). "
        )
        + "lr 1-10 beat greedy: "
        f"**{'holds' if any(m['best'] > 100 for m in mid) else 'does not hold here'}** at this budget.",
        "",
    ]
    return L


def sec_fig8(res):
    L = []
    rows = res["fig8"]
    L += [
        "## Fig. 8: group size G",
        "",
        "**Paper.** Too small a G diverges, a large one costs time; G 128 or 256 is the smallest stable value.",
        "",
        f"**Measured** (facility location, `clusters` {res['fig8_size']:,} rows, quality start, "
        f"{res['fig8_steps']} steps or {res['fig8_cap']} s):",
        "",
        "| G | % of greedy at the end | best | largest fall (points) | ms / step | steps |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        L.append(f"| {r['value']} | {f(r['end'])} | {f(r['best'])} | {f(r['fall'])} | {r['ms']:.0f} | {r['steps']} |")
    small = [r for r in rows if r["value"] < 128]
    g128 = [r for r in rows if r["value"] >= 128]
    unstable = [r["value"] for r in small if r["fall"] > 1]
    L += [
        "",
        "**Verdict.** "
        + (
            f"Small groups fell by more than a point of greedy's gain (G {unstable}); "
            if unstable
            else "No group size fell by more than a point of greedy's gain; "
        )
        + f"G >= 128 cost {min(r['ms'] for r in g128):.0f}-{max(r['ms'] for r in g128):.0f} ms a step against "
        f"{min(r['ms'] for r in small):.0f}-{max(r['ms'] for r in small):.0f} for the smaller ones. "
        + ("**Holds**" if unstable and not any(r["fall"] > 1 for r in g128) else "**Holds in part**")
        + (": G 128-256 is stable here" if not any(r["fall"] > 1 for r in g128) else ": G 128-256 also fell")
        + (
            ", and smaller groups were unstable."
            if unstable
            else ", but so were the smaller groups at this budget: the instability the paper saw did not appear."
        ),
        "",
    ]
    return L


def sec_fig10(res):
    L = []
    rows = res["fig10"]
    ranges = sorted({tuple(r["logit_range"]) for r in rows})
    L += [
        "## Fig. 10: batch updating",
        "",
        "**Paper.** Updating on a random 5-10% of the rows each step cuts the time a lot and reaches as good "
        "or better scores (the noise helps escape local optima).",
        "",
        f"**Measured** (pairwise, `make_corpus` {res['fig10_size']:,} rows, quality start, batch_max none, "
        f"{res['fig10_steps']} steps or {res['fig10_cap']} s; a batch is at least 256 rows, so below "
        f"{256 / (res['fig10_size'] // 2):.3f} the ratios are the same batch). The paper gives no initial "
        "logit range, so every run starts from a fixed one, each of "
        + " and ".join(f"({lo:g}, {hi:g})" for lo, hi in ranges)
        + ' (the two our `logit_range="auto"` pilot chooses between); no pilot runs, so each run\'s time '
        "is its own start and steps (the cap stops it at an evaluation point every 20 steps):",
        "",
        "| logit range | batch ratio | ms / step | % of greedy at step 0 | best by the full batch's last step "
        "| at the end | best | s to 99% | steps |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    full_steps = {tuple(r["logit_range"]): r["steps"] for r in rows if r["value"] == 1.0}
    for r in rows:
        lo, hi = r["logit_range"]
        k = full_steps[(lo, hi)]
        L.append(
            f"| ({lo:g}, {hi:g}) | {r['value']:g} | {r['ms']:.1f} | {f(r['start'])} | "
            f"{f(by_step(r, k))} (step {k}) | {f(r['end'])} | {f(r['best'])} | {f(r['t99'])} | {r['steps']} |"
        )
    faster, as_good, same_steps, notes = [], [], [], []
    for rg in ranges:
        rr = [r for r in rows if tuple(r["logit_range"]) == rg]
        full = next(r for r in rr if r["value"] == 1.0)
        b = [r for r in rr if r["value"] in (0.05, 0.1)]
        faster += [r["ms"] < full["ms"] for r in b]
        as_good += [r["best"] >= full["best"] - 0.5 for r in b]
        same_steps += [by_step(r, full["steps"]) >= full["best"] - 0.5 for r in b]
        notes.append(
            f"from ({rg[0]:g}, {rg[1]:g}): full batch best {f(full['best'])}% in {full['steps']} steps, "
            f"5% and 10%: {', '.join(f(r['best']) for r in b)}% in {', '.join(str(r['steps']) for r in b)} steps, "
            f"{', '.join(f(by_step(r, full['steps'])) for r in b)}% by step {full['steps']}"
        )

    def word(v):
        return "holds" if all(v) else ("holds in part" if any(v) else "does not hold here")

    L += [
        "",
        f"**Verdict.** 5-10% batches are faster per step: **{word(faster)}** ({sum(faster)} of {len(faster)} "
        f"runs); as good or better within the same time cap: **{word(as_good)}** ({sum(as_good)} of "
        f"{len(as_good)} runs within half a point of the full batch or above; {'; '.join(notes)}). "
        f"As good or better in as many steps (by the full batch's last step): **{word(same_steps)}** "
        f"({sum(same_steps)} of {len(same_steps)}). Times are contended and the load fell during the run, so "
        "ms / step compares ratios within one range, not across ranges; the objective values and step counts "
        "are not contended. No run was taken to convergence (the full batch stops at the time cap, the "
        'small batches at the step budget), so the paper\'s "better converged score" is not measured here.',
        "",
    ]
    return L


def sec_table1(res):
    L = []
    rows = res["table1"]
    L += [
        "## Table 1: pruning and quality-aware initialisation cut selection time",
        "",
        "**Paper.** DiSF on 384 GPUs: 18 h (random start) -> 10 h (+ pruning) -> 7 h (+ quality "
        "initialisation), with better downstream scores.",
        "",
        f"**Measured** (DiSF, `make_corpus` {res['table1_size']:,} rows, {res['table1_steps']} steps or "
        f"{res['table1_cap']} s; time to 95% of greedy's gain):",
        "",
        "| configuration | s to 95% of greedy | best % of greedy | q of the selection | steps |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        L.append(f"| {r['label']} | {f(r['t95'], '.2f')} | {f(r['end'])} | {r['quality']:.3f} | {r['steps']} |")
    t = [r["t95"] for r in rows]
    order_ok = all(x is not None for x in t) and t[0] >= t[1] >= t[2]
    L += [
        "",
        "**Verdict.** "
        + (
            "**Holds**: each step cuts the time to 95% of greedy's gain."
            if order_ok
            else "**Holds in part**: "
            + ", ".join(f"{r['label']} {f(r['t95'], '.2f')} s" for r in rows)
            + " (— : not reached in the budget). Pruning shrinks the problem and the quality start begins near the answer; "
            "the order of the first two depends on whether the uniform run reaches the bar at all in the budget."
        ),
        "",
    ]
    return L


def sec_where(res):
    L = []
    L += [
        "## Where policy gradient is the best tool we measured",
        "",
        _where_pg(res),
        "",
        'What a default fit does instead (docs/design.md, "DATAMASK, exactly"): Frank–Wolfe (pairwise, '
        "DiSF) or stochastic greedy (facility location) makes the selection and policy gradient gets a few "
        "steps to improve it on the exact objective; every split record says which (`optimizer.start`, "
        "`optimizer.pg_improved`). `--preset paper` runs the paper's recipe above.",
        "",
    ]
    return L


def _where_pg(res):
    wins = []
    for r in res["fig4"]:
        if r["pg_best"] > 100.0 and r["relaxed_pct"] < r["pg_best"]:
            wins.append(f"DiSF at {r['N']:,} rows ({f(r['pg_best'], '.2f')}% of greedy)")
    for r in res["fig7"]:
        if r["best"] > 100.0:
            wins.append(f"DiSF with lr {r['value']:g} ({f(r['best'], '.2f')}% of greedy)")
    for r in res["fig3"]:
        if r["pct"] > 100.0:
            wins.append(f"pairwise on {r['corpus']} ({r['what']}, {r['init']} start: {f(r['pct'], '.2f')}%)")
    if not wins:
        return (
            "Nowhere in this check: on every case greedy (or Frank–Wolfe) reached a score at least as high, "
            "and sooner. Policy gradient's place is the paper's: a mask learner whose step is a batched, "
            "fixed-shape GPU computation over 1M-row splits; on CPU at these sizes a solver is better."
        )
    return (
        "Policy gradient ended above greedy in: "
        + "; ".join(wins)
        + ". Everywhere else greedy or Frank–Wolfe scored at least as high, sooner."
    )


def plots(res, claims):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if "fig3" in claims:
        plot_fig3(res, plt)
    if "fig4" in claims:
        plot_fig4(res, plt)


def plot_fig3(res, plt):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), dpi=100)
    for (name, what, init), pts in res["fig3_traj"]:
        if name != "make_corpus":
            continue
        st = np.array(pts)
        ls = "-" if init == "quality" else "--"
        axes[0].plot(st[:, 0], st[:, 1], ls, label=f"{what}, {init} start")
        axes[1].plot(st[:, 0], st[:, 2], ls, label=f"{what}, {init} start")
    axes[0].set(xlabel="pg step", ylabel="mean normalised quality of the top-S mask", title="quality")
    axes[1].set(xlabel="pg step", ylabel="pairwise diversity", title="diversity")
    axes[0].legend(fontsize=8)
    fig.suptitle("Fig. 3 check (make_corpus): diversity only vs joint, uniform vs quality-aware start")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "paper_check_fig3.png"))


def plot_fig4(res, plt):
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    rows = res["fig4"]
    N = [r["N"] for r in rows]
    for key, label in (
        ("naive", "naive greedy (paper's baseline)"),
        ("greedy", "lazy greedy (ours)"),
        ("relaxed", "Frank–Wolfe"),
        ("pg_t", "pg to greedy's score"),
    ):
        xs = [n for n, r in zip(N, rows) if r[key] is not None]
        ys = [r[key] for r in rows if r[key] is not None]
        if xs:
            ax.loglog(xs, ys, "o-", label=label)
    ax.set(xlabel="rows", ylabel="seconds (contended 2-core machine)", title="Fig. 4 check: DiSF, ratio 0.1")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "paper_check_fig4.png"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes and budgets (a smoke run, ~3 min)")
    ap.add_argument(
        "--claims",
        help=f"comma-separated claims to run ({', '.join(CLAIMS)}; default all): the others' sections of "
        "paper_check.md are kept as they are",
    )
    args = ap.parse_args()
    pin_allocator()
    from threadpoolctl import threadpool_limits

    q = args.quick
    P = dict(
        fig3_size=1500 if q else 3000,
        fig3_steps=200 if q else 1000,
        fig3_cap=8 if q else 20,
        fig4_sizes=[500, 1000] if q else [500, 1000, 2000, 4000],
        naive_max=1000 if q else 2000,
        fig4_cap=10 if q else 40,
        fig7_size=600 if q else 1000,
        fig7_steps=60 if q else 200,
        fig7_cap=8 if q else 25,
        fig8_size=1000 if q else 2000,
        fig8_steps=60 if q else 150,
        fig8_cap=8 if q else 20,
        fig10_size=12000 if q else 20000,
        fig10_steps=200 if q else 800,
        fig10_cap=8 if q else 30,
        table1_size=600 if q else 1000,
        table1_steps=100 if q else 300,
        table1_cap=10 if q else 40,
    )
    claims = CLAIMS if args.claims is None else tuple(c.strip() for c in args.claims.split(","))
    bad = [c for c in claims if c not in CLAIMS]
    if bad:
        ap.error(f"--claims: unknown {', '.join(bad)}; choose from {', '.join(CLAIMS)}")
    t0 = time.perf_counter()
    res = load_results() if set(claims) != set(CLAIMS) else {}
    res.update(P)
    with threadpool_limits(limits=1):
        for c in claims:
            RUNS[c](res, P)
    seconds = time.perf_counter() - t0
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    save_results(res)
    write(args, res, seconds, load, claims)
    plots(res, claims)
    print(f"wrote {OUT}/paper_check.md in {seconds / 60:.1f} min (load {load})")


def run_fig3(res, P):
    res["fig3"], traj = fig3(P["fig3_size"], P["fig3_steps"], P["fig3_cap"])
    res["fig3_traj"] = [[list(k), v] for k, v in traj.items()]


def run_fig4(res, P):
    res["fig4"] = fig4(P["fig4_sizes"], P["naive_max"], P["fig4_cap"])


def run_fig7(res, P):
    lrs = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    res["fig7"], _ = sweep(
        "make_corpus", P["fig7_size"], "disf", "lr", lrs, P["fig7_steps"], P["fig7_cap"], init="uniform"
    )


def run_fig8(res, P):
    res["fig8"], _ = sweep(
        "clusters", P["fig8_size"], "facility", "group_size", [8, 32, 128, 256], P["fig8_steps"], P["fig8_cap"],
        init="quality", eval_every=10,
    )  # fmt: skip


def run_fig10(res, P):
    # fixed ranges (the paper gives none), so no logit_range="auto" pilot: the time cap is a
    # callback on the fit's evaluation points, and a pilot runs before the first of them
    res["fig10"], _ = sweep(
        "make_corpus", P["fig10_size"], "pairwise", "batch_ratio", [0.01, 0.05, 0.1, 0.3, 1.0],
        P["fig10_steps"], P["fig10_cap"], each=FIG10_RANGES, init="quality",
    )  # fmt: skip


def run_table1(res, P):
    res["table1"], _ = table1(P["table1_size"], P["table1_steps"], P["table1_cap"])


CLAIMS = ("fig3", "fig4", "fig7", "fig8", "fig10", "table1")
RUNS = dict(fig3=run_fig3, fig4=run_fig4, fig7=run_fig7, fig8=run_fig8, fig10=run_fig10, table1=run_table1)
SECTIONS = dict(
    fig3=sec_fig3, fig4=sec_fig4, fig7=sec_fig7, fig8=sec_fig8, fig10=sec_fig10, table1=sec_table1, where=sec_where
)
FIG10_RANGES = ({"logit_range": [0.0, 2.0]}, {"logit_range": [0.0, 16.0]})
RESULTS = os.path.join(OUT, "paper_check.json")


def load_results():
    """The saved results of the last runs (paper_check.json), or {} (then only the sections
    rerun are rewritten in paper_check.md)."""
    if not os.path.exists(RESULTS):
        return {}
    with open(RESULTS) as fh:
        return json.load(fh)


def save_results(res):
    with open(RESULTS, "w") as fh:
        json.dump(res, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
