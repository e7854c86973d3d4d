"""The DATAMASK paper's optimisation claims, checked one by one under the paper's settings.

Run:  python benchmarks/paper_check.py [--quick] [--claims fig4,fig10]   ->  benchmarks/results/paper_check.md (+ .png, .json)
      python benchmarks/paper_check.py --from-json benchmarks/results/paper_check.json [--out PATH]

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

The measurements are saved in paper_check.json; the report and every verdict in it are written
from that file by ``paper_check_report.py`` (each verdict a function of the numbers, with its
threshold), so ``--from-json`` rewrites the report, or judges made-up numbers, without a run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from optimizer import Tracker, first_reach, fit_params, pin_allocator  # noqa: E402
from paper_check_report import write  # noqa: E402

from datamask import DataMask, evaluate  # noqa: E402
from datamask.core.greedy import standardize  # noqa: E402
from datamask.core.synthetic import make_clusters, make_corpus  # noqa: E402
from datamask.pipeline.presets import PRESETS  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "results")
# real MiniLM paragraphs embedded (once, cached in benchmarks/.cache): few, as a contended CPU embeds them slowly
MINILM_ROWS = 1000
ISSUE = dict(n_clusters=50, spread=0.5, noise=0.1, n_dup_groups=10, dup_fraction=0.05)
# the paper's recipe as DataMask parameters (steps set per run)
PAPER = dict(
    PRESETS["paper"], solver_params={k: v for k, v in PRESETS["paper"]["solver_params"].items() if k != "steps"}
)


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
    """A fit; ``kw`` may name the optimiser's fine controls beside DataMask's own (the sweeps' keys)."""
    return DataMask(**fit_params(**kw)).fit(E, q)


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes and budgets (a smoke run, ~3 min)")
    ap.add_argument(
        "--claims",
        help=f"comma-separated claims to run ({', '.join(CLAIMS)}; default all): the others' sections of "
        "paper_check.md are kept as they are",
    )
    ap.add_argument(
        "--from-json",
        metavar="PATH",
        help="run nothing: write the report (verdicts included) from saved results, e.g. paper_check.json",
    )
    ap.add_argument("--out", default=os.path.join(OUT, "paper_check.md"), help="the report (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.from_json:
        with open(args.from_json) as fh:
            write(json.load(fh), args.out)
        print(f"wrote {args.out} from {args.from_json}")
        return
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
    # the settings of the claims run (the others' stay those their saved results ran under)
    res.update({k: v for k, v in P.items() if k.split("_")[0] in claims or (k == "naive_max" and "fig4" in claims)})
    with threadpool_limits(limits=1):
        for c in claims:
            RUNS[c](res, P)
    seconds = time.perf_counter() - t0
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    meta = res.setdefault("meta", {"reruns": {}})
    if set(claims) == set(CLAIMS):
        res["meta"] = {"minutes": seconds / 60, "load": load, "quick": args.quick, "reruns": {}}
    else:  # the other claims' sections stay as saved; each rerun one says when it ran
        for key in claims:
            meta["reruns"][key] = (
                f"_Rerun alone (`python benchmarks/paper_check.py --claims {','.join(claims)}"
                f"{' --quick' if args.quick else ''}`, {seconds / 60:.1f} min for the rerun, load average {load})._"
            )
    save_results(res)
    write(res, args.out)
    plots(res, claims)
    print(f"wrote {args.out} in {seconds / 60:.1f} min (load {load})")


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
FIG10_RANGES = ({"logit_range": [0.0, 2.0]}, {"logit_range": [0.0, 16.0]})
RESULTS = os.path.join(OUT, "paper_check.json")


def load_results():
    """The saved results of the last runs (paper_check.json), or {}: a rerun of some claims keeps
    the others' results, and the report is written whole from them."""
    if not os.path.exists(RESULTS):
        return {}
    with open(RESULTS) as fh:
        return json.load(fh)


def save_results(res):
    with open(RESULTS, "w") as fh:
        json.dump(res, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
