"""``datamask demo``: a generated corpus with planted structure, selected end to end.

The corpus (``datamask.core.synthetic.make_corpus``) has Zipf-sized topics, near-duplicate
clusters of high and of low quality and a quality spread; it is written as Parquet with
``fixed_size_list<float16>[d]`` embeddings. ``demo.yaml`` (package data, ``datamask/workflows/``,
the same file as the checkout's ``workflows/demo.yaml``) is then run on a local cluster; the
selection is printed beside a random sample and the top-k by quality at the same budget, as the
split's workers scored them (the report's table).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .workflow import add_workflow_overrides

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["write_corpus", "run_demo", "DEMO_WORKFLOW", "packaged_workflow"]


def packaged_workflow(name: str):
    """A workflow shipped inside the package (``datamask/workflows/NAME``), read with
    ``importlib.resources`` so that it is found in an installed wheel as in a checkout."""
    from importlib.resources import files

    return files("datamask") / "workflows" / name


DEMO_WORKFLOW = packaged_workflow("demo.yaml")


def corpus_table(corpus: dict, lo: int = 0, hi: int | None = None, dtype=np.float16) -> pa.Table:
    """Rows ``[lo, hi)`` of a ``make_corpus`` dict as an Arrow table (docs/design.md, "Data")."""
    import pyarrow as pa  # (here, not at the top: the command line's parser is built without it)

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
    import pyarrow.parquet as pq

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


def run_demo(directory="demo-output", workflow=None, overrides=(), quiet=False, rows=None) -> int:
    from ..pipeline.config import SelectConfig
    from ..stages.split.select import SelectStage, run_select
    from ..stages.workflow import load_workflow
    from .common import report_first

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
    manifest = run_select(cfg, finish=report_first(cfg.output))  # the report, then manifest.json
    print(f"selected rows: {Path(cfg.output) / 'data'}   manifest: {Path(cfg.output) / 'manifest.json'}")
    # the selection beside top-k and random, as each split's worker scored them (the report's table)
    print(SelectStage().summary(manifest, cfg.output))
    # the picture last: the HTML report of the selection (figures embedded in one page)
    page = manifest.get("report")
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
    add_workflow_overrides(d)


def _demo(args) -> int:
    from .common import GLOBAL

    given = [f"{k}={getattr(args, k)}" for k in GLOBAL if k != "quiet" and getattr(args, k, None) is not None]
    return run_demo(args.directory, args.workflow, [*given, *args.overrides], bool(args.quiet), args.rows)


COMMANDS = {"demo": _demo}
