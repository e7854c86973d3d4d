"""Facility location's default fit at 100k and 1M rows: its phases, and the whole ``select``
command against ``--method topk``, before and after a change.

    python benchmarks/facility_scale.py                     # 100k and 1M rows, before (merge-base) and after
    python benchmarks/facility_scale.py --rows 100000       # quick
    python benchmarks/facility_scale.py --no-base           # this tree only

Per split size N (one split: a generated corpus of N rows, ``datamask.cli.demo.write_corpus``,
384-d float16 embeddings, row groups of 100,000) and per code (``before``: the ``datamask``
package of ``--base`` by ``git archive``; ``after``: this tree), each run a fresh process:

- **phases**: ``DataMask(diversity="facility", ratio=0.1)`` fitted in-process on the split's
  arrays as the worker holds them (float16), its time split by wrapping the functions of
  each phase: the scorer's build (``pg.facility_scorer``: the similarity products and, inside,
  the neighbour lists, whichever function builds them in that code), stochastic greedy's picks
  (``Facility.stochastic_greedy``), the exact objective of a selection (``Facility.value``),
  and the rest of the fit (pruning, the candidates' float32 copy, pg's bookkeeping);
  the process's peak RSS during the fit (VmHWM, reset just before it; else ``ru_maxrss``) above
  its RSS before the fit;
- **commands**: ``run_select`` of the split with ``--diversity facility`` (the method's
  default otherwise) and the same with ``--method topk``, each on a ``LocalCluster`` of one
  worker, one thread, no memory limit, the worker's RSS sampled every 20 ms. rows/s of the
  whole command (cluster start, read, checks, selection, side-by-side scoring, write,
  manifest) and facility's rows/s over top-k's, the issue-47 figure (>= 50% at 1M rows);
  and the same command with the 0.2 default (pairwise, lam 0.5, pruning 0.5, no redundancy
  filter), the issue's other figure (facility's optimiser within 2x of that default's time).

The runs of one size alternate method and code, so each pair sees the same host. Writes
``benchmarks/results/facility_scale.md`` (and the raw runs beside it as JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from split_memory import PeakRSS, base_tree  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "facility_scale.md"
DIM = 384
RATIO = 0.1
# the functions that select the neighbour lists' entries from the similarities, before and
# after the change (module, name): the rest of the scorer's build is the products and sums
LIST_BUILDERS = (
    ("facility", "top_neighbors"),
    ("facility", "list_thresholds"),
    ("facility_lists", "list_thresholds"),
    ("facility_kernels", "scan_block"),
    ("facility_kernels", "screen_block"),
    ("facility_scan", "scan_block"),
    ("facility_scan", "screen_block"),
    ("facility_scan", "screen_block_int"),
)


def _timed(owner, name, acc, key):
    """Wrap ``owner.name`` so the seconds it takes add up in ``acc[key]``."""
    fn = getattr(owner, name)
    raw = fn.__func__ if isinstance(fn, staticmethod) else fn

    def wrapper(*args, **kw):
        t0 = time.perf_counter()
        try:
            return raw(*args, **kw)
        finally:
            acc[key] = acc.get(key, 0.0) + time.perf_counter() - t0

    wrapped = staticmethod(wrapper) if isinstance(owner.__dict__.get(name), staticmethod) else wrapper
    setattr(owner, name, wrapped)


def load_split(corpus_dir):
    """The split's embeddings (float16, as the worker holds them) and quality."""
    import numpy as np
    import pyarrow.parquet as pq

    t = pq.read_table(next(Path(corpus_dir).glob("*.parquet")), columns=["embedding", "quality"])
    col = t.column("embedding").combine_chunks()
    E = np.asarray(col.values.to_numpy(zero_copy_only=False)).reshape(len(col), -1)
    return E, t.column("quality").to_numpy()


def _has(module) -> bool:
    import importlib.util

    return importlib.util.find_spec(f"datamask.core.{module}") is not None


def _reset_peak() -> bool:
    """Reset this process's peak RSS (Linux's VmHWM) to its RSS now: True when it could."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss() -> int:
    """This process's peak RSS in bytes since the last :func:`_reset_peak` (VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmHWM in /proc/self/status")


def child_phases(a):
    """One fit, timed by phase (run in a fresh interpreter with the code under test first on sys.path)."""
    import importlib
    import resource

    import psutil

    from datamask import DataMask
    from datamask.core import diversity, pg, start

    E, q = load_split(a.corpus)
    acc = {}
    for owner in (start, pg):  # start.py holds its own binding of the function
        _timed(owner, "facility_scorer", acc, "build")
    for module, name in LIST_BUILDERS:
        try:
            owner = importlib.import_module(f"datamask.core.{module}")
        except ImportError:  # not in this code
            continue
        if hasattr(owner, name):
            _timed(owner, name, acc, "lists")
    _timed(diversity.Facility, "stochastic_greedy", acc, "picks")
    from datamask.core import facility

    if hasattr(facility.FacilityGroups, "build_lists"):  # the lists' pass, run by the picks since round 19
        _timed(facility.FacilityGroups, "build_lists", acc, "pass")
    _timed(diversity.Facility, "value", acc, "evaluate")
    try:  # the redundancy filter's search (0.3), over the candidates or over the picks (its refills: picks)
        from datamask.core import redundancy

        _timed(redundancy, "near_duplicate_candidates", acc, "filter")
    except ImportError:  # not in this code
        pass
    # compiled code loaded (or built) first, the large pass's screen too (a fresh 'before' tree
    # compiled it inside the timed fit until round 19)
    lists = importlib.import_module("datamask.core.facility_lists") if _has("facility_lists") else None
    saved = getattr(lists, "BF16_MIN_PAIRS", None)
    if saved is not None:
        lists.BF16_MIN_PAIRS = 0
    DataMask(diversity="facility", ratio=RATIO, seed=0).fit(E[:4000], q[:4000])
    if saved is not None:
        lists.BF16_MIN_PAIRS = saved
    acc.clear()
    reset = _reset_peak()  # else ru_maxrss: the process's peak since it started (loading the split included)
    rss0 = psutil.Process().memory_info().rss
    t0 = time.perf_counter()
    # one BLAS thread: n_threads' default (solver_params' in 0.3, a keyword before), the same in every version timed
    m = DataMask(diversity="facility", ratio=RATIO, seed=0).fit(E, q)
    fit = time.perf_counter() - t0
    peak = _peak_rss() if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if "pass" in acc:  # the scorer's build, though stochastic greedy runs it after its first picks
        moved = acc.pop("pass")
        acc["build"], acc["picks"] = acc.get("build", 0.0) + moved, acc["picks"] - moved
    print(
        json.dumps(
            {
                "fit": fit,
                **{k: round(v, 3) for k, v in acc.items()},
                "added_rss": peak - rss0,
                "peak_source": "VmHWM, reset before the fit" if reset else "ru_maxrss",
                "objective": m.objective_["objective"],
                "n_picks": m.optimizer_["start_iterations"],
            }
        )
    )


def _defaults() -> str:
    """This tree's select defaults that the facility rows run with, in words."""
    from datamask.estimator.params import DataMaskParams

    p = DataMaskParams()
    return f"lam {p.lam}, prune {p.prune}, near_duplicate {p.near_duplicate}"


def _settings(method, config) -> dict:
    """``pairwise``: the 0.2 default (pairwise, lam 0.5, pruning 0.5, no redundancy filter);
    otherwise facility location with the tree's other defaults (0.3: lam 0.7, no pruning, the
    redundancy filter at 0.95)."""
    if method != "pairwise":
        return {"diversity": "facility"}
    old = {"diversity": "pairwise", "lam": 0.5, "prune": 0.5}
    if "near_duplicate" in getattr(config, "__dataclass_fields__", {}):
        old["near_duplicate"] = None
    return old


def child_command(a):
    """One ``select`` command on a one-worker LocalCluster."""
    import logging

    import psutil
    from distributed import Client, LocalCluster

    from datamask.pipeline.config import SelectConfig

    try:
        from datamask.stages.split.select import run_select
    except ImportError:  # a 'before' tree from before 0.3's folders (issue 51)
        from datamask.stages.select import run_select

    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.ERROR,
            memory_limit=0,
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        pid = next(iter(client.run(os.getpid).values()))
        idle = psutil.Process(pid).memory_info().rss
        mon = PeakRSS(pid)
        mon.start()
        cfg = SelectConfig(
            input=a.corpus,
            output=a.out,
            split_size=a.rows,
            method="topk" if a.method == "topk" else "datamask",
            **_settings(a.method, SelectConfig),
            ratio=RATIO,
            quiet=True,
            overwrite=True,
            device="cpu",
        )
        t0 = time.perf_counter()
        m = run_select(cfg, client=client)
        wall = time.perf_counter() - t0
        mon.stop.set()
        mon.join()
    p = m.get("splits", m.get("partitions", []))[0]
    print(
        json.dumps(
            {
                "rows": m["totals"]["rows_in"],
                "wall": wall,
                "select_seconds": p.get("select_seconds"),
                "split_seconds": p.get("wall_seconds"),
                "peak_rss": mon.peak,
                "idle_rss": idle,
                "objective": (p.get("after") or {}).get("objective"),
            }
        )
    )


def run_child(tree, kind, **kw):
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "--child", kind]
    for k, v in kw.items():
        cmd += [f"--{k}", str(v)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if res.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def corpus(work: Path, rows: int) -> Path:
    from datamask.cli.demo import write_corpus

    path = work / f"corpus-{rows}"
    if not (path / "shard-0000.parquet").exists():
        write_corpus(path, n_rows=rows, dim=DIM, n_files=1, row_group_size=100_000)
    return path


def _git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


def _phase_table(runs):
    lines = [
        "| rows | code | fit s | redundancy filter s | scorer build s | of it: lists s | picks s | exact objective s "
        "| rest s | fit RSS added | objective |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        rest = r["fit"] - sum(r.get(k, 0) for k in ("filter", "build", "picks", "evaluate"))
        lines.append(
            f"| {r['rows']:,} | {r['code']} | {r['fit']:.1f} | {r.get('filter', 0):.1f} | {r.get('build', 0):.1f} | "
            f"{r.get('lists', 0):.1f} | {r.get('picks', 0):.1f} | {r.get('evaluate', 0):.1f} | {rest:.1f} | "
            f"{r['added_rss'] / 2**20:,.0f} MiB | "
            f"{r['objective']:.6f} |"
        )
    return lines


def _command_table(runs):
    lines = [
        "| rows | code | method | rows/s, whole command | wall s | select s | peak worker RSS | "
        "/ split embedding bytes | objective | facility / top-k rows/s | facility / pairwise: wall, select s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        emb = r["rows"] * DIM * 2

        def mate(method, r=r):
            key = (r["rows"], r["code"], r["rep"], method)
            return next((x for x in runs if (x["rows"], x["code"], x["rep"], x["method"]) == key), None)

        topk, pw = mate("topk"), mate("pairwise")
        ratio = f"{topk['wall'] / r['wall']:.0%}" if r["method"] == "datamask" and topk else ""
        vs_pw = ""
        if r["method"] == "datamask" and pw:
            vs_pw = f"{r['wall'] / pw['wall']:.2f}x, {r['select_seconds'] / pw['select_seconds']:.2f}x"
        label = {"datamask": "datamask, facility", "pairwise": "datamask, pairwise"}.get(r["method"], r["method"])
        lines.append(
            f"| {r['rows']:,} | {r['code']} | {label} | {r['rows'] / r['wall']:,.0f} | {r['wall']:.1f} | "
            f"{r['select_seconds']:.1f} | {r['peak_rss'] / 2**30:.2f} GiB | {r['peak_rss'] / emb:.2f}x | "
            f"{r['objective']:.6f} | {ratio} | {vs_pw} |"
        )
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="100000,1000000", help="comma-separated split sizes (one split each)")
    ap.add_argument("--base", default=None, help="the 'before' commit (default: git merge-base HEAD main)")
    ap.add_argument("--no-base", action="store_true", help="measure this tree only")
    ap.add_argument("--after", default=None, help="the 'after' commit (default: this working tree)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--out-json", default=str(RESULTS.with_suffix(".json")))
    ap.add_argument("--child", choices=("phases", "command"), help=argparse.SUPPRESS)
    ap.add_argument("--corpus", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--method", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        a.rows = int(a.rows)
        return child_phases(a) if a.child == "phases" else child_command(a)
    import psutil

    work = Path(a.workdir or tempfile.mkdtemp(prefix="datamask-facility-"))
    trees, base = {"after": ROOT}, None
    if a.after:
        trees["after"] = base_tree(a.after, work / f"after-{a.after}")
    if not a.no_base:
        base = _git("rev-parse", "--short", a.base or _git("merge-base", "HEAD", "main"))
        trees = {"before": base_tree(base, work / f"base-{base}"), "after": trees["after"]}
    load = [os.getloadavg()[0]]
    phases, commands = [], []
    for rows in [int(r) for r in a.rows.split(",")]:
        c = corpus(work, rows)
        for rep in range(a.repeat):
            for code, tree in trees.items():
                r = run_child(tree, "phases", corpus=c, rows=rows)
                r.update(rows=rows, code=code, rep=rep)
                print(json.dumps(r), flush=True)
                phases.append(r)
                for method in ("topk", "pairwise", "datamask"):
                    r = run_child(tree, "command", corpus=c, rows=rows, out=work / "out", method=method)
                    r.update(code=code, method=method, rep=rep)
                    print(json.dumps(r), flush=True)
                    commands.append(r)
                load.append(os.getloadavg()[0])
    Path(a.out_json).write_text(json.dumps({"phases": phases, "commands": commands, "load": load}, indent=1) + "\n")
    head = _git("rev-parse", "--short", a.after or "HEAD")
    try:  # the after code's products at 1M rows on this host (facility_lists: float32, or an int8 or bfloat16 screen)
        from datamask.core.facility_lists import screen_kernel

        product = f"the `after` scorer's products: {screen_kernel(1_000_000 * 2048)} at 1M rows on this host"
    except ImportError:
        product = "float32 products"
    lines = [
        "# Facility location's default fit at scale (`benchmarks/facility_scale.py`)",
        "",
        f"One split of N rows per run (generated, {DIM}-d float16 embeddings, row groups of 100,000), "
        f'`diversity="facility"` with every other setting at the code\'s default (ratio {RATIO}; `after`: '
        f"{_defaults()}; 2,048 reference rows, stochastic greedy's start returned with no pg step). `before` is the package at "
        f"{base or '-'}, `after` at {head}; each run a fresh process, one BLAS thread. Machine: "
        f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB, "
        f"{platform.processor() or platform.machine()}; load average (1 min) {min(load):.1f}-{max(load):.1f} "
        "over the run (run alone on the host: no other benchmark or build beside it); "
        f"{product}.",
        "",
        "## The fit, by phase",
        "",
        '`DataMask(diversity="facility", ratio=0.1).fit(E, q)` in-process on the split\'s float16 arrays. '
        "*redundancy filter*: its search for near-duplicates (`near_duplicate_candidates`; 0.3, none before), over "
        "the candidates before the optimiser or, since the filter over the picks, over the picks (the refills' "
        "picks count as picks); *scorer build*: the similarity products, the first gains and the neighbour lists (*of it: lists*, "
        "the selection of the lists' entries from the similarities: `top_neighbors` before, the thresholds "
        "and `scan_block` (float32), `screen_block` (bfloat16 screen) or `screen_block_int` (int8 screen) after; since round 19 the lists' pass, `FacilityGroups.build_lists`, runs inside stochastic greedy after its first picks and counts here, with its stage bounds); *picks*: stochastic greedy (with the filter's refills; less the lists' pass); *exact objective*: every exact "
        "evaluation of a selection (the start's, and the fit's result); *rest*: pruning, the candidates' "
        "float32 copy (before; none after), bookkeeping. *fit RSS added*: the process's peak RSS during the fit (Linux's "
        "VmHWM, reset just before it; until round 20 `ru_maxrss`, whose peak could be the split's loading, not the "
        "fit) above its RSS before the fit (its float16 input not counted).",
        "",
        *_phase_table(phases),
        "",
        "## The whole `select` command",
        "",
        '`run_select` with `diversity="facility"` on a `LocalCluster` of one worker (one thread, no memory '
        "limit): the default method (`datamask`), `--method topk` (read, checks, top-k, the same "
        "side-by-side scoring, write) and the 0.2 default (`--diversity pairwise --lam 0.5 --prune 0.5`, no redundancy filter). *facility / "
        "top-k rows/s*: top-k's wall over datamask's, of the same code in the same repetition (issue 47: "
        ">= 50% at 1M rows); *facility / pairwise*: facility's whole command and its split's selection time "
        "(`select s`) over the pairwise default's (issue 47: within 2x). The worker's RSS sampled every 20 ms; "
        "the split's embedding bytes are N x 768.",
        "",
        *_command_table(commands),
    ]
    RESULTS.write_text("\n".join(lines) + "\n")
    print(RESULTS.read_text())


if __name__ == "__main__":
    main()
