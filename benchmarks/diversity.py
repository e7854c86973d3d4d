"""The diversity suite (issue 47): what each selection gives a user, on corpora of many shapes.

For each case (a corpus, an embedding, a ratio) every candidate selects the same number of rows
of the same split, and each selection is scored alike:

``quality_norm``   mean quality, min-max normalised over the split (0-1)
``coverage``       mean over the corpus's rows of their best cosine to the selection (a seeded
                   sample of ``SAMPLE`` rows, post-stratified: the report's coverage)
``near_dup``       share of selected rows whose nearest other selected row has cosine >= 0.95
                   (the report's near-duplicate share)
``cluster_js``     Jensen-Shannon distance (base 2) between the selection's and the corpus's
                   distributions over ``K`` k-means clusters of the corpus (the paper's Fig. 12
                   in our terms)
``mean_dist``      distance between the selection's and the corpus's mean embeddings
``seconds``        the selection's wall time (one thread; the cases ran one at a time)

Candidates: the paper's pairwise objective (our optimiser, and ``--preset paper``), pairwise on
embeddings centred on the split's mean (the objective then matches the selection's mean to the
corpus's), facility location at several ``lam`` and ``prune``, each objective with and without
the redundancy filter (``near_duplicate`` 0.95: a candidate with a better candidate at cosine >=
0.95 is dropped first; ``+ filter``), DiSF, top-k, random, SemDeDup and QuaDMix. Cases: the four real corpora of ``suite_corpora.py`` with MiniLM and with
static embeddings, and seven generated shapes, each at ratios 0.05, 0.1 and 0.3.

Writes ``benchmarks/results/diversity.json`` (every record and the machine), and renders
``diversity.md`` and ``diversity_front.png`` (the quality-coverage front per case at ratio 0.1)
from it (``--render`` re-renders from the JSON alone)::

    python benchmarks/diversity.py                    # the whole suite (cached per case)
    python benchmarks/diversity.py --render           # the .md and .png from diversity.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # (last: a PYTHONPATH's datamask, --recheck's other commit, comes first)
os.environ.setdefault("OMP_NUM_THREADS", "1")

RESULTS = ROOT / "benchmarks" / "results"
RATIOS = (0.05, 0.1, 0.3)
SAMPLE, K, NEAR = 4096, 50, 0.95
# (label, generator, kwargs): the default-selection suite's shapes (benchmarks/defaults.py)
ISSUE = dict(n_clusters=50, spread=0.5, noise=0.1, n_dup_groups=10, dup_fraction=0.05)
GENERATED = [
    ("make_corpus", "corpus", {}),
    ("clusters, issue shape", "clusters", ISSUE),
    ("clusters, quality independent", "clusters", dict(quality="independent")),
    ("clusters, quality anti-correlated with size", "clusters", dict(quality="anti")),
    ("heavy-tailed sizes, quality rises with size", "clusters", dict(sizes="heavy", quality="size")),
    ("low intrinsic dimension (8)", "clusters", dict(intrinsic_dim=8)),
    ("1,000 diffuse clusters", "clusters", dict(n_clusters=1000, spread=2.0)),
]
N_GENERATED = 20_000
REAL = ("man", "pydoc", "packages", "changelog")
# (name, select settings, embedding transform); lam 0.5 and prune 0.5 unless set (BASE: the defaults
# the recorded run had; 0.3's are lam 0.7, no pruning)
BASE = dict(lam=0.5, prune=0.5)
CANDIDATES = [
    ("pairwise", dict(diversity="pairwise", near_duplicate=None), None),
    ("pairwise, paper preset", dict(preset="paper"), None),
    ("pairwise lam 0.2", dict(diversity="pairwise", lam=0.2, near_duplicate=None), None),
    ("pairwise, centred", dict(diversity="pairwise", near_duplicate=None), "centre"),
    ("pairwise + filter", dict(diversity="pairwise"), None),
    ("facility lam 0.2", dict(diversity="facility", lam=0.2, near_duplicate=None), None),
    ("facility lam 0.33", dict(diversity="facility", lam=0.33, near_duplicate=None), None),
    ("facility lam 0.5", dict(diversity="facility", lam=0.5, near_duplicate=None), None),
    ("facility lam 0.7", dict(diversity="facility", lam=0.7, near_duplicate=None), None),
    ("facility lam 0.5, prune 0", dict(diversity="facility", lam=0.5, prune=0.0, near_duplicate=None), None),
    ("facility lam 0.5 + filter", dict(diversity="facility", lam=0.5), None),
    ("facility lam 0.5, prune 0.25 + filter", dict(diversity="facility", lam=0.5, prune=0.25), None),
    ("facility lam 0.33, prune 0 + filter", dict(diversity="facility", lam=0.33, prune=0.0), None),
    ("facility lam 0.5, prune 0 + filter", dict(diversity="facility", lam=0.5, prune=0.0), None),
    ("facility lam 0.7, prune 0 + filter", dict(diversity="facility", lam=0.7, prune=0.0), None),
    ("disf", dict(diversity="disf", near_duplicate=None), None),
    ("topk", dict(method="topk"), None),
    ("random", dict(method="random"), None),
    ("semdedup", dict(method="semdedup"), None),
    ("quadmix", dict(method="quadmix"), None),
]
# the candidates where the redundancy filter runs over facility location's picks (0.3): what --recheck
# measures with the package of another commit beside this tree's
FILTERED = [c for c in CANDIDATES if c[0].endswith("+ filter") and c[1].get("diversity") == "facility"]


def default_candidate() -> str:
    """The candidate whose settings are ``datamask select``'s defaults (tests/test_paper_verdicts.py
    holds them equal), so the docs quote the default's own cells."""
    from datamask.estimator.params import DataMaskParams

    p = DataMaskParams()
    for name, settings, transform in CANDIDATES:
        plain = transform is None and "method" not in settings and "preset" not in settings
        keys = ("diversity", "lam", "prune", "near_duplicate")
        if plain and all({**BASE, **settings}.get(k, getattr(p, k)) == getattr(p, k) for k in keys):
            return name
    raise LookupError("no diversity-suite candidate has datamask select's default settings: add it to CANDIDATES")


# ---------------------------------------------------------------------- cases
def cases(work: Path, quick: bool = False) -> list:
    """``[(case name, loader)]``: real corpora x embeddings, then the generators."""
    out = []
    for name in REAL[:1] if quick else REAL:
        for emb in ("minilm",) if quick else ("minilm", "static"):
            out.append((f"{name} ({emb})", lambda n=name, e=emb: _real(work, n, e)))
    for label, gen, kw in GENERATED[:2] if quick else GENERATED:
        out.append((label, lambda g=gen, k=kw: _generated(g, k, 5_000 if quick else N_GENERATED)))
    return out


def _real(work: Path, name: str, emb: str):
    """(E float32 unit, quality) of a suite corpus's input; static: the same rows' static embeddings."""
    import pandas as pd

    from benchmarks.suite_corpora import build

    c = build(name, work, static=emb == "static")
    scored = pd.concat(
        [pd.read_parquet(f, columns=["id", "quality"]) for f in sorted(Path(c["input"], "data").glob("*.parquet"))]
    )
    src = Path(c["emb_static"] if emb == "static" else c["input"], "data")
    frame = pd.concat([pd.read_parquet(f, columns=["id", "embedding"]) for f in sorted(src.glob("*.parquet"))])
    frame = scored.merge(frame, on="id", how="inner")  # static: the rows it embedded (rows of no known token are not)
    E = np.stack(frame["embedding"].to_numpy()).astype(np.float32)
    norm = np.linalg.norm(E, axis=1)
    ok = norm > 0  # embeddings written before embed dropped zero vectors
    return E[ok] / norm[ok, None], frame["quality"].to_numpy(np.float64)[ok]


def _generated(gen: str, kw: dict, n: int):
    from datamask.core.synthetic import make_clusters, make_corpus

    c = make_corpus(n_rows=n, dim=384, seed=0) if gen == "corpus" else make_clusters(n_rows=n, dim=384, seed=0, **kw)
    return c["embedding"].astype(np.float32), c["quality"].astype(np.float64)


# ---------------------------------------------------------------------- selections
def _centred(E):
    C = E - E.mean(axis=0, dtype=np.float64).astype(np.float32)
    return C / np.maximum(np.linalg.norm(C, axis=1, keepdims=True), 1e-12)


def select(name, settings, transform, E, q, ratio, clusters, seed=0):
    """(mask, seconds) of one candidate."""
    import pyarrow as pa

    from datamask.methods import select as run
    from datamask.pipeline.config import SelectConfig

    cfg = SelectConfig.from_dict({"ratio": ratio, **BASE, **settings, "solver_params": {"n_threads": 1}})
    t0 = time.perf_counter()
    X = _centred(E) if transform == "centre" else E
    table = pa.table({cfg.domain_column: clusters})
    sel = run(X, q, cfg, seed, table=table)
    return np.asarray(sel.mask, bool), time.perf_counter() - t0


# ---------------------------------------------------------------------- scores
def scores(E, q, masks, clusters, K_: int) -> dict:
    from scipy.spatial.distance import jensenshannon

    from datamask.core.scorecard import Scorecard

    card = Scorecard(E, q, sample=SAMPLE, diversities=("facility",), diversity="facility", reference_size=SAMPLE)
    got = card.score_many(masks)
    corpus_p = np.bincount(clusters, minlength=K_) / clusters.shape[0]
    mean = E.mean(axis=0, dtype=np.float64)
    out = {}
    for k, m in masks.items():
        p = np.bincount(clusters[m], minlength=K_) / max(int(m.sum()), 1)
        out[k] = {
            "quality_norm": got[k]["quality_norm"],
            "coverage": got[k]["facility"],
            "near_dup": got[k]["near_duplicates"],
            "cluster_js": float(jensenshannon(p, corpus_p, base=2)),
            "mean_dist": float(np.linalg.norm(E[m].mean(axis=0, dtype=np.float64) - mean)),
            "selected": int(m.sum()),
        }
    return out


def run_case(name, load, ratios, candidates) -> list:
    from datamask.core.kmeans import assign, fit_kmeans

    E, q = load()
    cent = fit_kmeans(E, K, seed=0)
    clusters = np.asarray(assign(E, cent)[0], dtype=np.int64)
    recs = []
    for ratio in ratios:
        masks, secs = {}, {}
        for cand, settings, transform in candidates:
            m, s = select(cand, settings, transform, E, q, ratio, clusters)
            if m is not None:
                masks[cand], secs[cand] = m, s
        for cand, sc in scores(E, q, masks, clusters, K).items():
            recs.append({"case": name, "rows": int(E.shape[0]), "ratio": ratio, "candidate": cand,
                         "seconds": secs[cand], **sc})  # fmt: skip
        print(f"{name} ratio {ratio}: {len(masks)} selections", flush=True)
    return recs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/work/cache/suite", help="the suite corpora's cache (suite_corpora.py)")
    ap.add_argument("--cache", default="/work/cache/diversity", help="one JSON per finished case")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--quick", action="store_true", help="one real corpus, two shapes at 5k rows (a smoke run)")
    ap.add_argument("--render", action="store_true", help="only render diversity.md and the figure from the JSON")
    ap.add_argument("--shard", default=None, metavar="I/N",
                    help="run only every N-th case from the I-th (0-based) into the cache, and write nothing else: "
                         "two shards use the two cores; a run without --shard then assembles the cache")  # fmt: skip
    ap.add_argument("--generated", action="store_true",
                    help="run only the generated cases into the cache, and write nothing else (like --shard): "
                         "they need no suite corpora")  # fmt: skip
    ap.add_argument("--recheck", default=None, metavar="COMMIT",
                    help="re-run the generated cases with this tree, and their facility '+ filter' candidates with "
                         "the datamask package of COMMIT beside them (two processes): diversity_recheck.json and "
                         ".md; diversity.json (the recorded suite) stays as it is")  # fmt: skip
    ap.add_argument("--real", default="", metavar="NAMES",
                    help="with --generated or --recheck: also these real corpora (comma-separated, of: "
                         f"{', '.join(REAL)}), with both embeddings")  # fmt: skip
    ap.add_argument("--only-filtered", action="store_true", help=argparse.SUPPRESS)  # the recheck's 'before'
    args = ap.parse_args(argv)
    real = [x for x in args.real.split(",") if x]
    if set(real) - set(REAL):
        ap.error(f"--real: unknown corpora {sorted(set(real) - set(REAL))}; known: {', '.join(REAL)}")
    if args.recheck:
        return recheck(args.recheck, Path(args.out), Path(args.work), real)
    shard = tuple(int(x) for x in args.shard.split("/")) if args.shard else None
    out = Path(args.out)
    if not args.render:
        cache = Path(args.cache)
        cache.mkdir(parents=True, exist_ok=True)
        t0, load0 = time.time(), os.getloadavg()[0]
        every = cases(Path(args.work), args.quick)
        records, n_real = [], len(every) - len(GENERATED[:2] if args.quick else GENERATED)
        for i, (name, load) in enumerate(every):
            f = cache / (name.replace(" ", "_").replace(",", "").replace("(", "").replace(")", "") + ".json")
            if (shard and i % shard[1] != shard[0]) or (
                args.generated and i < n_real and name.split(" (")[0] not in real
            ):
                continue
            if not f.exists():
                f.write_text(json.dumps(run_case(name, load, RATIOS, FILTERED if args.only_filtered else CANDIDATES)))
            records += json.loads(f.read_text())
        if shard or args.generated:
            return
        meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load": [load0, os.getloadavg()[0]],
                "seconds": time.time() - t0, "quick": args.quick, "sample": SAMPLE, "clusters": K}  # fmt: skip
        out.mkdir(parents=True, exist_ok=True)
        (out / "diversity.json").write_text(json.dumps({"meta": meta, "records": records}, indent=1))
    from benchmarks.diversity_report import render, render_recheck

    render(out / "diversity.json", out, default_candidate())
    if args.render and (out / "diversity_recheck.json").exists():  # the recheck's report too
        render_recheck(out / "diversity_recheck.json", out / "diversity.json", out, default_candidate())


def recheck(commit: str, out: Path, corpora: Path, real: list) -> None:
    """The generated cases (and the ``real`` corpora of ``corpora``, both embeddings) with this tree
    (every candidate) and, beside it in a second process, their
    :data:`FILTERED` candidates with the ``datamask`` package of ``commit``: ``diversity_recheck.json``
    (both sets of records, the commits, the load) and ``diversity_recheck.md`` from it."""
    import subprocess
    import tempfile

    from benchmarks.split_memory import base_tree

    work = Path(tempfile.mkdtemp(prefix="diversity-recheck-"))
    base = base_tree(commit, work / "base")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "datamask"], capture_output=True, text=True
    )
    t0, load0 = time.time(), os.getloadavg()[0]
    runs = {
        "after": ([], {}),
        "before": (["--only-filtered"], {"PYTHONPATH": str(base)}),
    }
    cmd = [sys.executable, __file__, "--generated", "--real", ",".join(real), "--work", str(corpora)]
    procs = {
        k: subprocess.Popen([*cmd, "--cache", str(work / k), *flags], env=dict(os.environ, **env))
        for k, (flags, env) in runs.items()
    }
    for k, p in procs.items():
        if p.wait():
            raise SystemExit(f"diversity.py --recheck: the {k!r} run failed (exit {p.returncode})")
    recs = {k: [r for f in sorted((work / k).glob("*.json")) for r in json.loads(f.read_text())] for k in runs}
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load": [load0, os.getloadavg()[0]],
            "seconds": time.time() - t0, "sample": SAMPLE, "clusters": K, "rows": N_GENERATED, "real": real,
            "after": head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else ""), "before": commit,
            "filtered": [c[0] for c in FILTERED]}  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    path = out / "diversity_recheck.json"
    path.write_text(json.dumps({"meta": meta, "records": recs["after"], "before": recs["before"]}, indent=1))
    from benchmarks.diversity_report import render_recheck

    render_recheck(path, out / "diversity.json", out, default_candidate())


if __name__ == "__main__":
    main()
