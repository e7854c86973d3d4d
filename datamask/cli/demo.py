"""``datamask demo``: a generated corpus with planted structure, selected end to end.

The corpus (``datamask.core.synthetic.make_corpus``) has Zipf-sized topics, near-duplicate
clusters of high and of low quality and a quality spread; it is written as Parquet with
``fixed_size_list<float16>[d]`` embeddings. ``demo.yaml`` (package data, ``datamask/workflows/``,
the same file as the checkout's ``workflows/demo.yaml``) is then run on a local cluster and the selection is compared with a random sample and the top-k by quality, on the
same objective, split by split.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["write_corpus", "compare", "run_demo", "DEMO_WORKFLOW", "packaged_workflow"]


def packaged_workflow(name: str):
    """A workflow shipped inside the package (``datamask/workflows/NAME``), read with
    ``importlib.resources`` so that it is found in an installed wheel as in a checkout."""
    from importlib.resources import files

    return files("datamask") / "workflows" / name


DEMO_WORKFLOW = packaged_workflow("demo.yaml")


def corpus_table(corpus: dict, lo: int = 0, hi: int | None = None, dtype=np.float16) -> pa.Table:
    """Rows ``[lo, hi)`` of a ``make_corpus`` dict as an Arrow table (docs/design.md, "Data")."""
    hi = len(corpus["id"]) if hi is None else hi
    E = np.ascontiguousarray(corpus["embedding"][lo:hi].astype(dtype))
    emb = pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), E.shape[1])
    cols = {k: pa.array(v[lo:hi]) for k, v in corpus.items() if k != "embedding"}
    cols["embedding"] = emb
    return pa.table(cols)


def write_corpus(
    directory, n_rows=200_000, dim=384, n_files=4, seed=0, dtype=np.float16, row_group_size=50_000, **kw
) -> list:
    """Generate a corpus and write it as ``n_files`` Parquet files; returns their paths."""
    from ..core.synthetic import make_corpus
    from ..pipeline.io import dictionary_columns

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    corpus = make_corpus(n_rows=n_rows, dim=dim, seed=seed, **kw)
    bounds = np.linspace(0, n_rows, n_files + 1).round().astype(int)
    paths = []
    for i in range(n_files):
        p = directory / f"shard-{i:04d}.parquet"
        t = corpus_table(corpus, bounds[i], bounds[i + 1], dtype)
        pq.write_table(t, p, row_group_size=row_group_size, use_dictionary=dictionary_columns(t.schema))
        paths.append(p)
    return paths


def compare(manifest: dict, cfg) -> dict:
    """Mean (raw) quality and diversity of the selection, a random sample and the top-k by
    quality, averaged over splits; plus the objective on the same scale."""
    from ..core.objectives import evaluate
    from ..pipeline.io import Split, read_split
    from ..pipeline.output import split_records
    from ..pipeline.schema import Columns, check_table

    cols = Columns.from_config(cfg)
    out = Path(cfg.output) / "data"
    acc = {k: [] for k in ("selection", "random", "top-k quality")}
    for rec in split_records(manifest):
        if not rec["files"]:
            continue
        root = Path(cfg.input)
        s = Split(str(root / rec["source"]), rec["source"], "parquet", rec["start"], rec["stop"])
        table = read_split(s, cols)
        E, q = check_table(table, s.where(), cols, s.start)
        E = E.astype(np.float32)
        E /= np.linalg.norm(E, axis=1, keepdims=True)
        ids = table.column(cols.id).to_numpy()
        chosen = np.concatenate([pq.read_table(out / f, columns=[cols.id]).column(0).to_numpy() for f in rec["files"]])
        S = len(chosen)
        masks = {
            "selection": np.isin(ids, chosen),
            "random": np.random.default_rng(rec["seed"] % 2**32).permutation(len(ids)) < S,
            "top-k quality": np.isin(np.arange(len(ids)), np.argsort(-q, kind="stable")[:S]),
        }
        for name, m in masks.items():
            r = evaluate(E, q, m, lam=cfg.lam, diversity=cfg.diversity, reference_size=cfg.reference_size)
            acc[name].append({"quality": float(q[m].mean()), "diversity": r["diversity"], "objective": r["objective"]})
    return {
        k: {m: float(np.mean([x[m] for x in v])) for m in ("quality", "diversity", "objective")} for k, v in acc.items()
    }


def format_table(manifest, scores) -> str:
    from ..pipeline.output import n_splits

    t = manifest["totals"]
    lines = [
        f"rows in {t['rows_in']:,}  ->  rows out {t['rows_out']:,}  ({n_splits(t)} splits, "
        f"{manifest['wall_seconds']:.0f} s)",
        "",
        f"{'subset':<16}{'mean quality':>14}{'diversity':>12}{'objective':>12}",
    ]
    for name, s in scores.items():
        lines.append(f"{name:<16}{s['quality']:>14.3f}{s['diversity']:>12.4f}{s['objective']:>12.4f}")
    lines.append(
        "(diversity: minus the mean pairwise cosine; objective: lam*quality01 + (1-lam)*diversity,"
        " averaged over splits)"
    )
    return "\n".join(lines)


def run_demo(directory="demo-output", workflow=None, overrides=(), quiet=False, rows=None) -> int:
    from ..pipeline.config import SelectConfig
    from ..pipeline.stages.select import run_select
    from ..pipeline.workflow import load_workflow
    from .common import write_report_after

    directory = Path(directory)
    wf = Path(workflow) if workflow else Path(str(DEMO_WORKFLOW))
    raw = load_workflow(wf, overrides)
    corpus_spec = raw.pop("corpus", {}) or {}
    if rows:
        corpus_spec["n_rows"] = int(rows)
    corpus_dir = directory / "corpus"
    stamp = corpus_dir / "_corpus.json"
    if not stamp.exists() or json.loads(stamp.read_text()) != corpus_spec:
        t0 = time.perf_counter()
        if corpus_dir.exists():
            import shutil

            shutil.rmtree(corpus_dir)
        write_corpus(corpus_dir, **corpus_spec)
        stamp.write_text(json.dumps(corpus_spec))
        if not quiet:
            print(f"wrote corpus {corpus_dir} ({corpus_spec}) in {time.perf_counter() - t0:.0f} s")
    raw.update(input=str(corpus_dir), output=str(directory / "selected"))
    if quiet:
        raw["quiet"] = True
    cfg = SelectConfig.from_dict(raw, source=str(wf))
    manifest = run_select(cfg)
    scores = compare(manifest, cfg)
    print(f"selected rows: {Path(cfg.output) / 'data'}   manifest: {Path(cfg.output) / 'manifest.json'}")
    print(format_table(manifest, scores))
    # the picture last: the HTML report of the selection (figures embedded in one page)
    page = write_report_after(cfg.output, quiet=True)
    if page is not None:
        print(f"report: {Path(page).resolve()}")
    return 0 if page is not None else 1


def add_parsers(sub):
    d = sub.add_parser(
        "demo", help="generate a corpus and run the packaged demo.yaml (workflows/demo.yaml) on a local cluster"
    )
    d.add_argument("directory", nargs="?", default="demo-output")
    d.add_argument("--workflow", default=None, help="workflow file (default: the demo.yaml shipped in the package)")
    d.add_argument("--rows", type=int, default=None, help="corpus rows (default: from the workflow)")
    d.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    d.add_argument("--quiet", action="store_true")


def _demo(args) -> int:
    return run_demo(args.directory, args.workflow, args.overrides, args.quiet, args.rows)


COMMANDS = {"demo": _demo}
