"""``datamask train-quality`` (``embed`` and ``score`` are stages: :mod:`.stages`)."""

from __future__ import annotations

__all__ = ["add_parsers", "COMMANDS"]


def add_parsers(sub):
    t = sub.add_parser("train-quality", help="train a fastText quality classifier (positive vs negative documents)")
    t.add_argument(
        "--positive", required=True, help="high-quality documents: .txt, .jsonl(.gz), .parquet or a directory"
    )
    t.add_argument("--negative", required=True, help="other documents, same formats")
    t.add_argument("--output", required=True, help="where the .bin model is written")
    t.add_argument("--text-column", default="text", help="text field in JSONL/Parquet (default: text)")
    t.add_argument("--epoch", type=int, default=10, help="training epochs (default: 10)")
    t.add_argument("--seed", type=int, default=0, help="seed (default: 0)")


def _train_quality(args) -> int:
    from ..stages.split.score import run_train_quality

    info = run_train_quality(
        args.positive, args.negative, args.output, text_column=args.text_column, epoch=args.epoch, seed=args.seed
    )
    print(
        f"datamask: trained on {info['n_positive']:,} positive and {info['n_negative']:,} negative "
        f"documents -> {info['path']}"
    )
    return 0


COMMANDS = {"train-quality": _train_quality}
USES_GLOBAL = {"train-quality": ()}  # (no Dask job, no object storage)
