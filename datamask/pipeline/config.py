"""Every stage's config: ``SelectConfig``, the one place every pipeline parameter is named,
defaulted and checked, and the configs of the stages that read raw text (``EmbedConfig``,
``ScoreConfig``, ``DedupConfig``), on the same base (``StageConfig``: data, output and Dask
fields), so a flag or a YAML key means the same thing in every stage; ``dedup`` shares select's
quality and domain columns (``_same``). One concern in one module, longer than the usual line
cap (``tests/test_layout.py``, ``ONE_CONCERN``).

YAML workflow keys and command-line flags fill the same fields under the same names
(``--split-size`` is ``split_size``). The estimator's defaults are read from
``DataMask.__init__`` itself (:class:`~datamask.estimator.params.DataMaskParams`, which imports no
scikit-learn, so the command line builds its flags without it), so they cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from ..core.budget import check_token_budget
from ..core.diversity import DIVERSITIES
from ..errors import ConfigError
from ..estimator.params import METHODS as ESTIMATOR_METHODS
from ..estimator.params import SOLVER_PARAMS, DataMaskParams
from ..methods import REGISTRY
from .flags import parse_solver_params, type_words, with_flag
from .presets import PRESETS, with_preset

__all__ = [
    "option",
    "StageConfig",
    "SelectConfig",
    "METHODS",
    "RESULT_FIELDS",
    "parse_value",
    "TextStageConfig",
    "EmbedConfig",
    "ScoreConfig",
    "DedupConfig",
]

_DM = {
    k: p.default
    for k, p in inspect.signature(DataMaskParams.__init__).parameters.items()  # DataMask.__init__
    if k != "self"
}
# DataMask parameters that are not pipeline settings (set per split or by the runner;
# token_budget: the split's share of the config's corpus budget ``tokens``; method: the
# config's selection method when DataMask runs it, ``datamask``, ``greedy`` or ``relaxed``).
_NOT_CONFIG = {"seed", "callback", "progress", "token_budget", "method"}

# the selection methods, as datamask.methods registers them (one module per method); those
# that run DataMask are DataMask's method of the same name (estimator.params.METHODS)
METHODS = tuple(REGISTRY)


def option(default, help, choices=None, group="selection", result=True, parse=None, metavar=None):
    """A dataclass field with CLI metadata. ``result``: changes the output (fingerprinted);
    ``parse``: converts a YAML value or flag string (instead of the field's type); ``metavar``:
    its value in the usage (default: by type, ``--split-size N``). Every config's fields are
    made by it (the tables below call it ``_f``, short)."""
    meta = {"help": help, "choices": choices, "group": group, "result": result, "metavar": metavar}
    if parse is not None:
        meta["parse"] = parse
    return field(default=default, metadata=meta)


_f = option


_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def parse_tokens(v, name="tokens") -> int:
    """A token count: ``200000``, ``2e5``, ``200k``, ``1.5M``, ``1.5B`` (or ``G``), ``1.5T``."""
    s = str(v).strip().replace("_", "").replace(",", "")
    mult = _SUFFIX.get(s[-1:].lower()) if s else None
    try:
        x = float(s[:-1] if mult else s) * (mult or 1.0)
    except ValueError:
        raise ConfigError(f"{name} must be a token count such as 200000, 2e5, 200k, 1.5B or 1.5T; got {v!r}") from None
    if x != int(x):
        raise ConfigError(f"{name} must be a whole number of tokens, got {v!r} ({x:g})")
    return int(x)


@dataclass
class StageConfig:
    """What every stage shares: where the data is, how it is split, which cluster runs it.

    ``SelectConfig``, ``EmbedConfig`` and ``ScoreConfig`` extend it, so ``--split-size`` or
    ``--scheduler`` mean the same thing (one name, one default, one check) in every stage.
    """

    # --- data
    input: str | None = _f(None, "input directory, file or glob of Parquet / JSONL / JSONL.gz", group="data")
    output: str | None = _f(None, "output directory", group="data", result=False)
    storage_options: str | None = _f(
        None,
        "JSON object of fsspec options for s3://, gs://, az://, hf:// URLs "
        "(e.g. '{\"anon\": true}'); without it each backend reads its standard "
        "environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID...)",
        group="data",
        result=False,
        metavar="JSON",
    )
    id_column: str = _f("id", "name of the unique document id column", group="data")
    split_size: int = _f(1_000_000, "most rows per split (the paper's split)", group="data")
    # --- output
    overwrite: bool = _f(
        False, "delete an existing output directory's results and start over", group="output", result=False
    )
    # --- dask (the Dask scheduler and workers that run the splits)
    device: str = _f("auto", "where the splits run: auto, cpu, gpu", choices=("auto", "cpu", "gpu"), group="dask")
    scheduler: str | None = _f(
        None, "address of an existing Dask scheduler (tcp://host:8786)", group="dask", result=False, metavar="ADDRESS"
    )
    scheduler_file: str | None = _f(
        None, "scheduler file of an existing Dask cluster", group="dask", result=False, metavar="PATH"
    )
    n_workers: int | None = _f(
        None, "workers of the embedded local cluster (default: cores)", group="dask", result=False
    )
    memory_limit: str = _f(
        "auto", "memory limit per local worker (e.g. 4GiB; auto shares RAM)", group="dask", result=False
    )
    connect_timeout: float = _f(10.0, "seconds to wait for a scheduler and a worker", group="dask", result=False)
    quiet: bool = _f(False, "no progress bars", group="dask", result=False)

    #: the fields with a command-line flag of their own (None: all); the others are ``--set KEY=VALUE``
    FLAGS: ClassVar[tuple | None] = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, d: dict, source: str = "config"):
        d = dict(d)
        check_keys(cls, d, source)
        if d.get("solver_params") is not None:  # (a file or JSON text: read before a preset merges into it)
            d["solver_params"] = parse_solver_params(d["solver_params"])
        if "preset" in d and any(f.name == "preset" for f in fields(cls)):
            d = with_preset(d)
        kw = {}
        for f in fields(cls):
            if f.name in d:
                kw[f.name] = parse_value(f, d[f.name], source)
        return cls(**kw).with_preset_merged().validated()

    def with_preset_merged(self):
        """Mark the preset's settings as merged already (by :func:`with_preset`: the
        settings given beside it known), so :meth:`validated` leaves them as they are."""
        self._preset_merged = True
        return self

    def replace(self, **changes):
        new = dataclasses.replace(self, **changes)
        new._preset_merged = getattr(self, "_preset_merged", False)
        return new.validated()

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    # ------------------------------------------------------------------ validation
    def validated(self):
        for f in fields(self):
            ch = f.metadata.get("choices")
            v = getattr(self, f.name)
            if ch and v not in ch and not (v is None and f.default is None):
                raise ConfigError(f"{f.name} must be one of {', '.join(ch)}; got {v!r}")
        if int(self.split_size) < 2:
            raise ConfigError(f"split_size must be >= 2 rows, got {self.split_size}")
        if self.scheduler and self.scheduler_file:
            raise ConfigError("give either scheduler or scheduler_file, not both")
        if self.n_workers is not None and int(self.n_workers) < 1:
            raise ConfigError(f"n_workers must be >= 1, got {self.n_workers}")
        if self.storage_options:
            from ..runtime.storage import parse_options

            parse_options(self.storage_options)
        return self

    def result_dict(self) -> dict:
        """The fields that change the output; two runs with equal result dicts may share
        an output directory."""
        d = self.to_dict()
        return {f.name: d[f.name] for f in fields(self) if f.metadata.get("result", True)}

    def fingerprint(self, device: str) -> str:
        d = dict(self.result_dict(), device=device)
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class SelectConfig(StageConfig):
    FLAGS: ClassVar[tuple] = (
        "preset",
        "method",
        "ratio",
        "budget",
        "tokens",
        "token_ratio",
        "tokenizer",
        "lam",
        "diversity",
        "prune",
        "near_duplicate",
        "solver_params",
        "seed",
        "split_size",
        "holdout",
        "exclude",
        "keep_all",
        "overwrite",
    )
    # --- data
    embedding_column: str = _f("embedding", "name of the embedding column (list of floats)", group="data")
    quality_column: str = _f("quality", "name of the quality score column (higher is better)", group="data")
    dedupe_ids: bool = _f(False, "keep the first row of each duplicated id instead of failing", group="data")
    # --- selection
    preset: str | None = _f(
        None,
        "a named recipe, DataMask(**PRESETS[name]): default (ours) or paper (the DATAMASK paper's final one); "
        "a setting given beside it overrides it (docs/design.md)",
        choices=tuple(PRESETS),
    )
    method: str = _f("datamask", f"selection method: {', '.join(METHODS)}", choices=METHODS)
    ratio: float | None = _f(
        _DM["ratio"],
        "fraction of each split to keep, in (0, 1) (null: unset, for a token budget instead)",
    )
    budget: int | None = _f(_DM["budget"], "rows to keep per split (overrides ratio)")
    tokens: int | None = _f(
        None,
        "token budget of the whole corpus instead of rows (200000, 2e5, 200k, 1.5B), shared out to the "
        "splits (docs/tokens.md)",
        parse=parse_tokens,
    )
    token_ratio: float | None = _f(None, "token budget as a fraction of the corpus's tokens, in (0, 1]")
    tokens_column: str | None = _f(
        None,
        "token-count column; unset: token_count when the input has it (as "
        "FineWeb does), else n_tokens (datamask score), else counted from the text",
    )
    tokenizer: str | None = _f(
        None,
        "tokenizer.json (or folder) that counts the tokens (unset: a token-count column, else whitespace words; "
        "a search's proxies train in it)",
        metavar="PATH",
    )
    text_column: str = _f(
        "text", "text column, read only to count tokens when no token-count column is present", group="data"
    )
    lam: float = _f(_DM["lam"], "weight of quality against diversity, in [0, 1]")
    diversity: str = _f(_DM["diversity"], f"diversity metric: {', '.join(DIVERSITIES)}", choices=tuple(DIVERSITIES))
    prune: float = _f(_DM["prune"], "fraction of lowest-quality rows dropped before optimising")
    near_duplicate: float | None = _f(
        _DM["near_duplicate"],
        "keep out of the selection rows with a better row at cosine >= this (null: keep them, "
        "the paper's recipe; docs/diversity.md)",
    )
    solver_params: dict | None = _f(
        None,
        "the optimiser's fine controls (DataMask's solver_params): inline JSON ('{\"steps\": 500}') or a "
        f".json/.yaml file; keys: {', '.join(SOLVER_PARAMS)}",
        parse=lambda v, name: parse_solver_params(v, name),
    )
    seed: int = _f(0, "base seed (a split's own derives from it and the split)")
    # --- baselines (datamask.methods: --method semdedup / quadmix)
    eps: float | None = _f(
        None,
        "SemDeDup: drop a row whose cosine to an earlier kept row of its cluster "
        "exceeds 1 - eps (default: eps tuned so the budget is kept)",
        group="baselines",
    )
    domain_column: str = _f(
        "cluster",
        "SemDeDup clusters / QuaDMix domains (k-means per split when the column is absent)",
        group="baselines",
    )
    n_clusters: int | None = _f(
        None, "k-means clusters when the domain column is absent (default sqrt(rows/10))", group="baselines"
    )
    quadmix_params: str | None = _f(
        None,
        "QuaDMix parameters, a YAML file {default: {lam, omega, eta, eps}, domains: {ID: {...}}}",
        group="baselines",
    )
    # --- output
    partition_on: str | None = _f(None, "write hive directories COLUMN=value/ for this column", group="output")
    keep_all: bool = _f(False, "write every row with `selected` and `datamask_logit` columns", group="output")
    holdout: float = _f(
        0.0,
        "fraction of every split set aside (seeded) as OUTPUT/holdout/, an evaluation set no method sees",
        group="output",
    )
    exclude: list | None = _f(
        None,
        "evaluation or held-out sets (Parquet/JSONL) kept out of the selection: rows of the same text, or the "
        "ids of a datamask holdout (OUTPUT/holdout/), are removed first",
        group="data",
        parse=lambda v, name: [str(x) for x in ([v] if isinstance(v, str) else v)],
    )

    # ------------------------------------------------------------------ validation
    def validated(self) -> SelectConfig:
        super().validated()
        if self.preset is not None and not getattr(self, "_preset_merged", False):
            # built in Python: the preset fills the settings left at their defaults
            for k, v in with_preset({"preset": self.preset}).items():
                if k == "solver_params":  # key by key: the keys given stay
                    self.solver_params = {**v, **(self.solver_params or {})}
                elif getattr(self, k) == _default_of(type(self), k):
                    setattr(self, k, v)
            self._preset_merged = True
        if self.ratio is None and not self.budget_in_tokens:
            self.ratio = _DM["ratio"]  # null: the default
        from ..estimator.constraints import (
            check_params,  # (scikit-learn's constraints: imported when a config is built)
        )

        try:  # the estimator's own check of every parameter it takes
            check_params(self.estimator_params(0))
        except ValueError as e:
            raise ConfigError(with_flag(str(e), type(self))) from None
        self._check_tokens()
        if not 0.0 <= float(self.holdout) < 1.0:
            raise ConfigError(f"holdout must be in [0, 1), got {self.holdout}; e.g. --holdout 0.05 sets 5% aside")
        if self.eps is not None and float(self.eps) < 0:
            raise ConfigError(f"eps must be >= 0, got {self.eps}")
        if self.n_clusters is not None and int(self.n_clusters) < 1:
            raise ConfigError(f"n_clusters must be >= 1, got {self.n_clusters}")
        if isinstance(self.quadmix_params, str):  # (from Python, also the mapping such a file holds)
            import os

            if not os.path.isfile(self.quadmix_params):
                raise ConfigError(f"quadmix_params file {self.quadmix_params} does not exist")
        return self

    def _check_tokens(self):
        if self.tokens_column and self.tokenizer:
            raise ConfigError(
                f"give a tokens_column ({self.tokens_column}) or --tokenizer ({self.tokenizer}), not both: "
                "one counts the tokens"
            )
        if self.tokens is None and self.token_ratio is None:
            return
        if self.tokens is not None and self.token_ratio is not None:
            raise ConfigError("give --tokens or --token-ratio, not both")
        if self.budget is not None or (self.ratio is not None and float(self.ratio) != _DM["ratio"]):
            given = f"budget={self.budget}" if self.budget is not None else f"ratio={self.ratio}"
            raise ConfigError(
                f"give a row budget (--ratio/--budget) or a token budget (--tokens/--token-ratio), "
                f"not both ({given}; a workflow's can be cleared with --set select.ratio=null)"
            )
        if self.tokens is not None:
            try:
                check_token_budget(self.tokens, flags=True)
            except ValueError as e:
                raise ConfigError(str(e)) from None
        if self.token_ratio is not None and not 0.0 < float(self.token_ratio) <= 1.0:
            raise ConfigError(f"token_ratio must be in (0, 1], got {self.token_ratio}; e.g. --token-ratio 0.1")

    @property
    def budget_in_tokens(self) -> bool:
        """True when the budget is in tokens (``tokens`` or ``token_ratio``)."""
        return self.tokens is not None or self.token_ratio is not None

    # ------------------------------------------------------------------ derived
    def estimator_params(self, seed: int, method: str | None = None) -> dict:
        """Keyword arguments for ``DataMask`` (everything it takes, from this config); its
        ``method`` is the selection method's when DataMask runs it (``datamask``, ``greedy``,
        ``relaxed``), else ``datamask``, unless given."""
        params = {k: getattr(self, k) for k in _DM if k not in _NOT_CONFIG}
        params["method"] = method or (self.method if self.method in ESTIMATOR_METHODS else "datamask")
        params["solver_params"] = dict(self.solver_params) if self.solver_params else None
        params["seed"] = int(seed)
        return params

    def solver(self, name: str):
        """``solver_params[name]``, or its default (:data:`~datamask.estimator.params.SOLVER_PARAMS`)."""
        return (self.solver_params or {}).get(name, SOLVER_PARAMS[name])

    def result_dict(self) -> dict:
        d = super().result_dict()
        if d.get("solver_params"):  # BLAS threads change the time, not the selection
            d["solver_params"] = {k: v for k, v in d["solver_params"].items() if k != "n_threads"} or None
        return d


def _default_of(cls, name: str):
    return next(f.default for f in fields(cls) if f.name == name)


def _same(cls, name: str):
    """The field ``name`` of ``cls`` again (same default, help and checks) for another stage."""
    f = next(f for f in fields(cls) if f.name == name)
    return field(default=f.default, metadata=f.metadata)


RESULT_FIELDS = tuple(f.name for f in fields(SelectConfig) if f.metadata.get("result", True))


def _bool(v, name):
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {v!r}")


def check_keys(cls, d: dict, source: str = "config"):
    """Refuse keys of ``d`` that are not fields of the config dataclass ``cls``, in one line."""
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        moved = [k for k in unknown if k in SOLVER_PARAMS and "solver_params" in names]
        hint = f"; {', '.join(moved)} {'is a key' if len(moved) == 1 else 'are keys'} of solver_params" if moved else ""
        raise ConfigError(
            f"{source}: unknown key(s) {', '.join(unknown)}{hint}; valid keys: {', '.join(sorted(names))}"
        )


def parse_value(f: dataclasses.Field, v: Any, source: str = "config"):
    """Convert a YAML value or a command-line string to the field's type."""
    name, t = f.name, str(f.type)
    if v is None or (isinstance(v, str) and v.strip().lower() in ("none", "null") and "None" in t):
        return None
    if f.metadata.get("parse"):
        return f.metadata["parse"](v, name)
    try:
        if t.startswith("bool"):
            return _bool(v, name)
        if t.startswith("int"):
            if isinstance(v, float) and not v.is_integer():
                raise ValueError
            return int(float(v)) if isinstance(v, str) and "e" in v.lower() else int(v)
        if t.startswith("float"):
            return float(v)
        if isinstance(v, dict) and t.startswith("str"):  # storage_options: a mapping in a workflow
            return json.dumps(v)
        if t.startswith("tuple"):
            parts = v.split(",") if isinstance(v, str) else list(v)
            out = tuple(float(p) for p in parts)
            if len(out) != 2:
                raise ValueError
            return out
        return str(v)
    except ConfigError:
        raise
    except (TypeError, ValueError):
        head = source if source == f"--{name.replace('_', '-')}" else f"{source}: {name}"
        raise ConfigError(f"{head} must be {type_words(t)}, got {v!r}") from None


# The configs of the stages that read raw text: embed, score and dedup.


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
