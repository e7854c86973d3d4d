"""The configs of the stages that read raw text: ``embed``, ``score`` and ``dedup``.

They extend :class:`~datamask.pipeline.config.StageConfig` (data, output and Dask fields), so
a flag or a YAML key means the same thing in every stage; ``dedup`` shares select's quality
and domain columns (``_same``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..errors import ConfigError
from .config import SelectConfig, StageConfig, _f, _same

__all__ = ["TextStageConfig", "EmbedConfig", "ScoreConfig", "DedupConfig"]


@dataclass
class TextStageConfig(StageConfig):
    """The stages that read raw text (embed, score)."""

    text_column: str = _f("text", "name of the text column", group="data")


@dataclass
class EmbedConfig(TextStageConfig):
    """``datamask embed``: text in, an L2-normalised ``embedding`` column added."""

    FLAGS: ClassVar[tuple] = (
        "model",
        "backend",
        "batch_size",
        "max_length",
        "chunk",
        "dtype",
        "compute",
        "cache_dir",
        "split_size",
        "overwrite",
    )

    embedding_column: str = _same(SelectConfig, "embedding_column")
    model: str | None = _f(
        None,
        "local sentence-transformers folder (default: offline all-MiniLM-L6-v2, 384-d), never "
        "downloaded; static[:PATH]: a fast static model distilled from it (docs/embedding.md)",
        group="embed",
    )
    backend: str = _f(
        "torch",
        "CPU runtime (onnx/openvino: datamask[fast-embed]; GPU: torch)",
        choices=("torch", "onnx", "openvino"),
        group="embed",
    )
    cache_dir: str | None = _f(
        None,
        "exported/static model cache; unset: $DATAMASK_CACHE_DIR, else ~/.cache/datamask",
        group="embed",
        result=False,
    )
    batch_size: int | None = _f(
        None,
        "texts per forward pass (default: 32 on CPU; on CUDA the most that fits in "
        "half the free GPU memory, up to 4096)",
        group="embed",
        result=False,
    )
    max_length: int | None = _f(
        None,
        "token window (default: the model's own, 256 for MiniLM); longer texts are truncated unless --chunk",
        group="embed",
    )
    prefix: str = _f("", "prepended to every text (E5 models: 'passage: ')", group="embed")
    chunk: bool = _f(False, "embed long texts window by window and mean-pool instead of truncating", group="embed")
    dtype: str = _f("float32", "element type of the stored vectors", choices=("float32", "float16"), group="embed")
    compute: str = _f(
        "auto",
        "precision the model runs in (auto: float16 on CUDA, bfloat16 on CPUs with AMX, else float32)",
        choices=("auto", "float32", "float16", "bfloat16"),
        group="embed",
    )

    def validated(self) -> EmbedConfig:
        super().validated()
        if self.batch_size is not None and int(self.batch_size) < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.max_length is not None and int(self.max_length) < 8:
            raise ConfigError(f"max_length must be >= 8 tokens, got {self.max_length}")
        return self


@dataclass
class ScoreConfig(TextStageConfig):
    """``datamask score``: component scores normalised over the corpus and summed into ``quality``."""

    FLAGS: ClassVar[tuple] = (
        "scores",
        "heuristics",
        "fasttext",
        "fasttext_label",
        "normalize",
        "domain_column",
        "domain_weights",
        "bins",
        "tokenizer",
        "split_size",
        "overwrite",
    )

    quality_column: str = _same(SelectConfig, "quality_column")
    scores: str | None = _f(
        None, "existing score columns and weights, NAME:WEIGHT,NAME:WEIGHT (e.g. fineweb_edu:1,dclm:1)", group="score"
    )
    normalize: str = _f(
        "minmax", "normalisation of each component over the corpus", choices=("minmax", "rank", "zscore"), group="score"
    )
    heuristics: bool = _f(
        False, "add the built-in heuristic score quality_heuristics (weight 1 unless named in --scores)", group="score"
    )
    fasttext: str | None = _f(
        None,
        "fastText classifier .bin; adds quality_fasttext = P(positive) (weight 1 unless named in --scores)",
        group="score",
    )
    fasttext_label: str | None = _f(
        None, "the fastText label that means high quality (default: __label__pos or __label__hq)", group="score"
    )
    domain_column: str | None = _f(None, "column whose value picks per-domain weights", group="score")
    domain_weights: str | None = _f(
        None, "per-domain weights, DOMAIN=NAME:W,NAME:W;DOMAIN=... (QuaDMix); other domains use --scores", group="score"
    )
    bins: int | None = _f(None, "bin each normalised component into 0..K-1 before summing", group="score")
    tokenizer: str | None = _f(
        None, "tokenizer.json (or folder) for n_tokens (default: whitespace words)", group="score"
    )

    def validated(self) -> ScoreConfig:
        super().validated()
        if not (self.scores or self.heuristics or self.fasttext):
            raise ConfigError("nothing to score: pass --scores NAME:WEIGHT,..., --heuristics or --fasttext MODEL.bin")
        if self.domain_weights and not self.domain_column:
            raise ConfigError("--domain-weights need --domain-column")
        if self.bins is not None:
            if int(self.bins) < 2:
                raise ConfigError(f"bins must be >= 2, got {self.bins}")
            if self.normalize == "zscore":
                raise ConfigError("--bins need a bounded normalisation: use --normalize minmax or rank")
        return self


@dataclass
class DedupConfig(TextStageConfig):
    """``datamask dedup``: duplicate groups found across the whole corpus, one row kept per group."""

    FLAGS: ClassVar[tuple] = (
        "kind",
        "ngram",
        "num_perm",
        "bands",
        "threshold",
        "eps",
        "n_clusters",
        "keep_all",
        "split_size",
        "overwrite",
    )

    quality_column: str = _same(SelectConfig, "quality_column")
    embedding_column: str = _same(SelectConfig, "embedding_column")
    kind: str = _f(
        "exact,fuzzy",
        "duplicate kinds, comma-separated: exact (normalised text), fuzzy "
        "(MinHash-LSH on word n-grams), semantic (SemDeDup within clusters)",
        group="dedup",
    )
    ngram: int = _f(5, "fuzzy: words per shingle", group="dedup")
    num_perm: int = _f(128, "fuzzy: MinHash permutations (signature length)", group="dedup")
    bands: int | None = _f(
        None,
        "fuzzy: LSH bands, dividing num_perm (default: chosen from the threshold, "
        "bands x rows <= num_perm, so a few permutations may go unused: at --threshold 0.5, "
        "42 bands x 3 rows use 126 of 128)",
        group="dedup",
    )
    threshold: float = _f(
        0.7,
        "fuzzy: Jaccard similarity in (0, 1] (estimated from the signatures) from which two "
        "documents are duplicates; 1: identical shingle sets only",
        group="dedup",
    )
    eps: float = _f(
        0.05,
        "semantic: remove a document whose cosine to a kept one of its cluster exceeds 1 - eps, in (0, 1)",
        group="dedup",
    )
    domain_column: str = _f(
        "cluster", "semantic: the cluster column (k-means on a sample of the corpus when it is absent)", group="dedup"
    )
    n_clusters: int | None = _f(
        None, "semantic: k-means clusters when the cluster column is absent (default sqrt(rows/10))", group="dedup"
    )
    seed: int = _f(0, "k-means seed (semantic without a cluster column)", group="dedup")
    keep_all: bool = _f(
        False,
        "write every row with a duplicate_of column (the kept row's id, null for kept "
        "rows) instead of the kept rows only",
        group="output",
    )

    def validated(self) -> DedupConfig:
        from ..dedup.deduplicator import parse_kinds
        from ..dedup.minhash import lsh_params

        super().validated()
        self.kind = ",".join(parse_kinds(self.kind))
        lsh_params(self.ngram, self.num_perm, self.bands, self.threshold)
        if not 0.0 < float(self.eps) < 1.0:  # 0 would remove nothing (no cosine exceeds 1)
            raise ConfigError(f"--eps must be in (0, 1), got {self.eps}; use e.g. 0.05 (the default)")
        if self.n_clusters is not None and int(self.n_clusters) < 1:
            raise ConfigError(f"n_clusters must be >= 1, got {self.n_clusters}")
        return self
