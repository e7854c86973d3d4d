"""``datamask search`` as a new user runs it, on real text -> benchmarks/results/search_real.md

The corpus of ``search_corpus.py`` (this machine's Python documentation: MiniLM embeddings,
heuristic quality, 20 k-means clusters, 300 held-out evaluation documents, 10 of them also
left in the input), then the commands a user would type, with the defaults (32 trials, one
seed each, the ``tiny`` proxy on 100k tokens, 3 verification seeds) and a 30% budget::

    datamask search clustered/ search/ --eval eval/ --ratio 0.3
    datamask run search/recipe.yaml --set output=applied/

It reports the wall time, the regressor's cross-validated Spearman, the chosen recipe, the
verification (chosen, default, top-k, random on fresh seeds) and whether the chosen recipe is
within two seed-to-seed spreads of the default or better, and the rows ``recipe.yaml`` kept.

    python benchmarks/search_real.py --round 12      # 44 proxy models: ~13-32 CPU-minutes

It writes search_real.md (this run) and search_real.json (this run as ``latest``, appended to
``runs``), which the docs render from (``python benchmarks/render_docs.py`` afterwards).
    python benchmarks/search_real.py --trials 16 --extra --proxy-tokens 200k
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cli(*args) -> tuple:
    """(wall seconds, CPU seconds of the command and every process it waited for: its Dask workers)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "datamask.cli", *map(str, args)]
    print("$ datamask", " ".join(map(str, args)), flush=True)
    t0, c0 = time.time(), _cpu_children()
    subprocess.run(cmd, check=True, env=env)
    return time.time() - t0, _cpu_children() - c0


def _f(v, p=4):
    return "–" if v is None else v if isinstance(v, str) else f"{v:.{p}f}"


def _regime(p: dict) -> str:
    if "regime" not in p:  # a search.json of an earlier version
        return f"{p['tokens']:,} tokens"
    n = p["passes"]
    return f"{p['regime']}, {n['min']:.2f}-{n['max']:.2f} passes over a selection"


def _cost_lines(s: dict) -> list:
    c = s.get("cost")
    if not c or c.get("train_share") is None:
        return []
    evals = f", the final evaluations {c['eval_seconds'] / 60:.1f}" if "eval_seconds" in c else ""
    lines = [
        f"- the workers' time: **{c['train_share']:.0%} training** (all models' optimiser steps, "
        f"{c['train_seconds'] / 60:.1f} min, over {s['wall_seconds'] / 60:.1f} min x {c['workers']} workers); "
        f"the models' tasks took {c['model_seconds'] / 60:.1f} worker-min in all, of which the selections "
        f"{c['select_seconds'] / 60:.1f}{evals}; **{c['tokens_per_worker_second']:,.0f} trained tokens per "
        "worker-second**"
    ]
    if c.get("phases"):
        lines.append("- the search's wall by phase: " + ", ".join(f"{k} {v:.0f} s" for k, v in c["phases"].items()))
    return lines


def _verified_lines(v: dict) -> list:
    lines = ["| recipe | mean loss | sd over seeds | seeds |", "| --- | --- | --- | --- |"]
    for n in ("chosen", "default", "topk", "random"):
        if n in v:
            lines.append(f"| {n} | {_f(v[n]['mean'])} | {_f(v[n]['sd'])} | {v[n]['seeds']} |")
    lines += ["", *[f"- {d['words']}" for d in v["differences"].values()]]
    return lines


def write_markdown(path: Path, s: dict, argv: list, walls: dict, load, rows_applied: int, corpus: dict):
    v = s["verified"]
    spread = v["pooled_sd"]
    gap = v["chosen"]["mean"] - v["default"]["mean"]
    ok = spread is not None and gap <= 2 * spread
    cv = ", ".join(f"{k} {x['spearman']:.3f} (sd {x['spearman_sd']:.3f})" for k, x in s["cv"].items())
    noise = s["noise"]["verification"] or {}
    evals = ", ".join(
        f"{e['name']} ({e['docs']} documents, {e['scored_tokens']:,} scored tokens)" for e in s["eval_sets"]
    )
    lines = [
        "# Recipe search on real text",
        "",
        f"Host: {platform.machine()}, {os.cpu_count()} cores shared with other jobs, load average (1 / 5 / 15 min) "
        f"at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}, when the search ended {walls['load_end'][0]:.2f} / "
        f"{walls['load_end'][1]:.2f} / {walls['load_end'][2]:.2f}. "
        f"Command: `python benchmarks/search_real.py {' '.join(sys.argv[1:])}`, "
        "which runs:",
        "",
        "```",
        "datamask " + " ".join(map(str, argv)),
        "datamask run SEARCH/recipe.yaml --set output=APPLIED --quiet",
        "```",
        "",
        f"Corpus (benchmarks/search_corpus.py): {s['rows']:,} input documents "
        f"({', '.join(f'{k} {n:,}' for k, n in corpus['kinds'].items())}; {s['domains']} k-means domains), "
        f"evaluation set {evals}; "
        f"{s['leaks']} input rows hold an evaluation text and were removed from every selection.",
        "",
        f"- wall time of the search: **{walls['search'] / 60:.1f} min**, {walls['search_cpu'] / 60:.1f} CPU-minutes "
        f"(it used {walls['search_cpu'] / walls['search'] / (os.cpu_count() or 1):.0%} of the {os.cpu_count()} cores) "
        f"({s['models']['trained']} proxy models: "
        f"{s['trials']} trials x {s['seeds']} seed + {s['models']['trained'] - s['trials'] * s['seeds']} verification runs; "
        f"{s['proxy']['params']:,}-parameter `{s['proxy']['preset']}` proxy on {_regime(s['proxy'])} each)",
        *_cost_lines(s),
        f"- space: `{s['space']}`",
        f"- regressor: **{s['regressor']}**, cross-validated Spearman **{s['cv_spearman']:.3f}** (all: {cv})",
        f"- chosen: `{json.dumps(s['chosen'])}`, predicted loss {s['predicted_loss']:.4f}",
        "- what the loss tracks (Spearman with trial loss): "
        + ", ".join(f"{k} {_f(x, 2)}" for k, x in s["tracks"].items()),
        "- seed-to-seed noise of the verification: "
        + "; ".join(
            f"{n}: loss sd {_f(e['loss_sd'])}, paired {_f(e['loss_sd_paired'])}; bits/byte sd {_f(e['bits_per_byte_sd'])}, "
            f"paired {_f(e['bits_per_byte_sd_paired'])}"
            for n, e in noise.items()
        ),
        f"- `recipe.yaml` through `datamask run`: {rows_applied:,} rows selected in {walls['run']:.0f} s",
        *[f"- the search warned: {w}" for w in s.get("warnings", ())],
        "",
        "Verification on fresh seeds (loss in nats/token, lower is better):",
        "",
        *_verified_lines(v),
        "",
        f"Chosen minus default: {gap:+.4f} nats/token; two seed-to-seed spreads (pooled sd x 2): "
        f"{_f(2 * spread if spread else None)}. The chosen recipe is "
        + (
            "not judged: one verification seed gives no spread."
            if spread is None
            else "**within two spreads of the default or better**."
            if ok
            else "**worse than the default by more than two spreads**."
        ),
    ]
    path.write_text("\n".join(lines) + "\n")
    print(path.read_text())


def _host() -> str:
    """The CPU, as /proc/cpuinfo names it (runs compare within one host)."""
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    except OSError:
        model = ""
    return f"{platform.machine()} {model}".strip()


def summary(s: dict, walls: dict, load, rows_applied: int, corpus: dict, round_: int, host: str) -> dict:
    """This run as search_real.json's ``latest`` (the fields docs render; benchmarks/doc_blocks.py)."""
    c, v, p = s.get("cost") or {}, s["verified"], s["proxy"]
    cores = os.cpu_count() or 1
    noise = (s["noise"].get("verification") or {}) if s.get("noise") else {}
    return {
        "round": round_,
        "host": host,
        "cores": cores,
        "command": "python benchmarks/search_real.py " + " ".join(sys.argv[1:]),
        "load_start": [round(x, 2) for x in load],
        "load_end": [round(x, 2) for x in walls["load_end"]],
        "rows": s["rows"],
        "kinds": corpus["kinds"],
        "domains": s["domains"],
        "eval_sets": [{k: e[k] for k in ("name", "docs", "scored_tokens")} for e in s["eval_sets"]],
        "leaks": s["leaks"],
        "wall_minutes": walls["search"] / 60,
        "cpu_minutes": walls["search_cpu"] / 60,
        "cpu_share": walls["search_cpu"] / walls["search"] / cores,
        "models": s["models"]["trained"],
        "trials": s["trials"],
        "seeds": s["seeds"],
        "verification_models": s["models"]["trained"] - s["trials"] * s["seeds"],
        "proxy": {
            "params": p["params"],
            "preset": p["preset"],
            "tokens": p.get("proxy_tokens", p.get("tokens")),
            "passes_min": (p.get("passes") or {}).get("min"),
            "passes_max": (p.get("passes") or {}).get("max"),
        },
        "train_share": c.get("train_share"),
        "train_minutes": c["train_seconds"] / 60 if "train_seconds" in c else None,
        "workers": c.get("workers"),
        "tokens_per_worker_second": c.get("tokens_per_worker_second"),
        "phases_seconds": c.get("phases"),
        "space": s["space"],
        "regressor": s["regressor"],
        "cv_spearman": s["cv_spearman"],
        "cv": {k: {"spearman": x["spearman"], "spearman_sd": x["spearman_sd"]} for k, x in s["cv"].items()},
        "chosen": s["chosen"],
        "predicted_loss": s["predicted_loss"],
        "tracks": s["tracks"],
        "noise": noise,
        "applied_rows": rows_applied,
        "applied_seconds": walls["run"],
        "verified": {n: {k: v[n][k] for k in ("mean", "sd", "seeds")} for n in ("chosen", "default", "topk", "random")},
        "differences": {n: {k: d[k] for k in ("mean", "sd", "seeds")} for n, d in v["differences"].items()},
        "two_pooled_sd": 2 * v["pooled_sd"] if v.get("pooled_sd") else None,
        "warnings": s.get("warnings", []),
    }


def write_json(path: Path, latest: dict, label: str, code_of: int, note: str | None):
    """search_real.json: this run as ``latest`` and one more row of ``runs`` (the earlier kept)."""
    old = json.loads(path.read_text()) if path.exists() else {"targets": {}, "runs": []}
    old["latest"] = latest
    old["runs"].append(
        {
            "round": latest["round"],
            "label": label,
            "code": note or "",
            "host": latest["host"],
            "load_start_end": [latest["load_start"][0], latest["load_end"][0]],
            "wall_minutes": latest["wall_minutes"],
            "cpu_share": latest["cpu_share"],
            "train_share": latest["train_share"],
            "tokens_per_worker_second": latest["tokens_per_worker_second"],
            "cv_spearman": latest["cv_spearman"],
            "note": None,
            "code_of": code_of,
        }
    )
    path.write_text(json.dumps(old, indent=1) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=str(ROOT / "benchmarks" / ".cache" / "search"))
    ap.add_argument("--trials", type=int, default=None, help="(default: the command's)")
    ap.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more datamask search flags")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "search_real.md"))
    ap.add_argument(
        "--json",
        default=str(ROOT / "benchmarks" / "results" / "search_real.json"),
        help="the results the docs render from (this run becomes 'latest' and one more row of 'runs')",
    )
    ap.add_argument("--round", type=int, required=True, help="the project round this run belongs to")
    ap.add_argument("--label", default=None, help="the run's row label (default: round N)")
    ap.add_argument("--code-of", type=int, default=None, help="the round whose code ran (default: --round)")
    ap.add_argument("--code", default=None, help="what the code changed, for the runs table")
    ap.add_argument("--host", default=None, help="the host's name in the runs table (default: the CPU model)")
    args = ap.parse_args(argv)
    import pyarrow.parquet as pq

    from benchmarks.search_corpus import prepare

    load = os.getloadavg()
    corpus = prepare(Path(args.work))
    out, applied = Path(args.work) / "search-real", Path(args.work) / "search-real-applied"
    for d in (out, applied):
        shutil.rmtree(d, ignore_errors=True)
    cmd = ["search", corpus["input"], out, "--eval", corpus["eval"], "--ratio", "0.3"]
    cmd += (["--trials", args.trials] if args.trials else []) + args.extra
    walls = {}
    walls["search"], walls["search_cpu"] = _cli(*cmd)
    walls["load_end"] = os.getloadavg()
    walls["run"], _ = _cli("run", out / "recipe.yaml", "--set", f"output={applied}", "--quiet")
    s = json.loads((out / "search.json").read_text())
    rows = sum(pq.read_metadata(f).num_rows for f in sorted((applied / "data").glob("*.parquet")))
    write_markdown(Path(args.out), s, cmd, walls, load, rows, corpus)
    latest = summary(s, walls, load, rows, corpus, args.round, args.host or _host())
    label = args.label or f"round {args.round}"
    write_json(Path(args.json), latest, label, args.code_of or args.round, args.code)
    print(f"wrote {args.json}; now: python benchmarks/render_docs.py")


if __name__ == "__main__":
    main()
