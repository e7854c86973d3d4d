"""``SelectConfig``: the one place every pipeline parameter is named, defaulted and checked.

YAML workflow keys and command-line flags fill the same fields under the same names
(``--split-size`` is ``split_size``). The estimator's defaults are read from
``DataMask.__init__`` itself, so they cannot drift apart.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
from dataclasses import dataclass, field, fields
from typing import Any

from .errors import ConfigError
from .optimizer import DataMask

__all__ = ["SelectConfig", "METHODS", "RESULT_FIELDS", "parse_value"]

_DM = {k: p.default for k, p in inspect.signature(DataMask.__init__).parameters.items() if k != "self"}
# DataMask parameters that are not pipeline settings (set per partition or by the runner).
_NOT_CONFIG = {"seed", "callback", "progress"}

METHODS = ("datamask",)  # baselines register more in datamask.selection


def _f(default, help, choices=None, group="selection", result=True):
    """A dataclass field with CLI metadata. ``result``: changes the output (fingerprinted)."""
    return field(default=default, metadata={"help": help, "choices": choices, "group": group, "result": result})


@dataclass
class SelectConfig:
    # --- data
    input: str | None = _f(None, "input directory, file or glob of Parquet / JSONL / JSONL.gz", group="data")
    output: str | None = _f(None, "output directory", group="data", result=False)
    id_column: str = _f("id", "name of the unique document id column", group="data")
    embedding_column: str = _f("embedding", "name of the embedding column (list of floats)", group="data")
    quality_column: str = _f("quality", "name of the quality score column (higher is better)", group="data")
    split_size: int = _f(1_000_000, "maximum rows per partition (the paper's split)", group="data")
    dedupe_ids: bool = _f(False, "keep the first row of each duplicated id instead of failing", group="data")
    # --- selection
    method: str = _f("datamask", "selection method", choices=METHODS)
    ratio: float = _f(_DM["ratio"], "fraction of each partition to keep, in (0, 1)")
    budget: int | None = _f(_DM["budget"], "rows to keep per partition (overrides ratio)")
    lam: float = _f(_DM["lam"], "weight of quality against diversity, in [0, 1]")
    diversity: str = _f(_DM["diversity"], "diversity metric", choices=("pairwise", "facility", "disf"))
    solver: str = _f(_DM["solver"], "optimiser", choices=("pg", "greedy", "relaxed"))
    group_size: int = _f(_DM["group_size"], "masks sampled per policy-gradient step")
    lr: float = _f(_DM["lr"], "policy-gradient step size")
    steps: int = _f(_DM["steps"], "maximum policy-gradient steps")
    batch_ratio: float | None = _f(_DM["batch_ratio"], "fraction of rows per step (batch updating)")
    prune: float = _f(_DM["prune"], "fraction of lowest-quality rows dropped before optimising")
    init: str = _f(_DM["init"], "initial logits", choices=("quality", "uniform"))
    logit_range: tuple = _f(tuple(_DM["logit_range"]), "l_min,l_max for quality-aware initialisation")
    final: str = _f(_DM["final"], "final mask", choices=("topk", "sample"))
    reference_size: int | None = _f(_DM["reference_size"], "facility location reference sample size")
    eval_every: int = _f(_DM["eval_every"], "steps between exact evaluations")
    patience: int | None = _f(_DM["patience"], "evaluations without improvement before stopping")
    tol: float = _f(_DM["tol"], "relative improvement counted as progress")
    lr_schedule: str = _f(_DM["lr_schedule"], "step-size schedule", choices=("constant", "cosine"))
    relaxed_iter: int = _f(_DM["relaxed_iter"], "Frank-Wolfe iterations (solver relaxed)")
    n_threads: int | None = _f(_DM["n_threads"], "BLAS threads per partition", result=False)
    seed: int = _f(0, "base seed; each partition's seed derives from it and the partition's identity")
    # --- output
    partition_on: str | None = _f(None, "write hive directories COLUMN=value/ for this column", group="output")
    keep_all: bool = _f(False, "write every row with `selected` and `datamask_logit` columns", group="output")
    overwrite: bool = _f(False, "delete an existing output directory's results and start over",
                         group="output", result=False)
    # --- cluster
    device: str = _f("auto", "where partitions run", choices=("auto", "cpu", "gpu"), group="cluster")
    scheduler: str | None = _f(None, "address of an existing Dask scheduler (tcp://host:8786)",
                               group="cluster", result=False)
    scheduler_file: str | None = _f(None, "scheduler file of an existing Dask cluster", group="cluster", result=False)
    n_workers: int | None = _f(None, "workers of the embedded local cluster (default: cores)",
                               group="cluster", result=False)
    memory_limit: str = _f("auto", "memory limit per local worker (e.g. 4GiB; auto shares RAM)",
                           group="cluster", result=False)
    connect_timeout: float = _f(10.0, "seconds to wait for a scheduler and a worker", group="cluster", result=False)
    quiet: bool = _f(False, "no progress bars", group="cluster", result=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, d: dict, source: str = "config") -> "SelectConfig":
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(names))}")
        kw = {}
        for f in fields(cls):
            if f.name in d:
                kw[f.name] = parse_value(f, d[f.name], source)
        return cls(**kw).validated()

    def replace(self, **changes) -> "SelectConfig":
        return dataclasses.replace(self, **changes).validated()

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["logit_range"] = list(self.logit_range)
        return d

    # ------------------------------------------------------------------ validation
    def validated(self) -> "SelectConfig":
        for f in fields(self):
            ch = f.metadata.get("choices")
            v = getattr(self, f.name)
            if ch and v not in ch:
                raise ConfigError(f"{f.name} must be one of {', '.join(ch)}; got {v!r}")
        if self.budget is None and not 0.0 < float(self.ratio) < 1.0:
            raise ConfigError(f"ratio must be in (0, 1), got {self.ratio}; e.g. --ratio 0.1 keeps 10% of each partition")
        if self.budget is not None and int(self.budget) < 1:
            raise ConfigError(f"budget must be a positive number of rows, got {self.budget}")
        if not 0.0 <= float(self.lam) <= 1.0:
            raise ConfigError(f"lam must be in [0, 1], got {self.lam}")
        if not 0.0 <= float(self.prune) < 1.0:
            raise ConfigError(f"prune must be in [0, 1), got {self.prune}")
        if int(self.split_size) < 2:
            raise ConfigError(f"split_size must be >= 2 rows, got {self.split_size}")
        if self.scheduler and self.scheduler_file:
            raise ConfigError("give either scheduler or scheduler_file, not both")
        if self.n_workers is not None and int(self.n_workers) < 1:
            raise ConfigError(f"n_workers must be >= 1, got {self.n_workers}")
        if self.solver == "relaxed" and self.diversity == "facility":
            raise ConfigError("solver relaxed is not defined for diversity facility; use --solver pg or greedy")
        return self

    # ------------------------------------------------------------------ derived
    def estimator_params(self, seed: int) -> dict:
        """Keyword arguments for ``DataMask`` (everything it takes, from this config)."""
        params = {k: getattr(self, k) for k in _DM if k not in _NOT_CONFIG}
        params["logit_range"] = tuple(self.logit_range)
        params["seed"] = int(seed)
        return params

    def result_dict(self) -> dict:
        """The fields that change the output; two runs with equal result dicts may share
        an output directory."""
        d = self.to_dict()
        return {f.name: d[f.name] for f in fields(self) if f.metadata.get("result", True)}

    def fingerprint(self, device: str) -> str:
        d = dict(self.result_dict(), device=device)
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:16]


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


def parse_value(f: dataclasses.Field, v: Any, source: str = "config"):
    """Convert a YAML value or a command-line string to the field's type."""
    name, t = f.name, str(f.type)
    if v is None or (isinstance(v, str) and v.strip().lower() in ("none", "null") and "None" in t):
        return None
    try:
        if t.startswith("bool"):
            return _bool(v, name)
        if t.startswith("int"):
            if isinstance(v, float) and not v.is_integer():
                raise ValueError
            return int(float(v)) if isinstance(v, str) and "e" in v.lower() else int(v)
        if t.startswith("float"):
            return float(v)
        if t == "tuple":
            parts = v.split(",") if isinstance(v, str) else list(v)
            out = tuple(float(p) for p in parts)
            if len(out) != 2:
                raise ValueError
            return out
        return str(v)
    except ConfigError:
        raise
    except (TypeError, ValueError):
        raise ConfigError(f"{source}: {name} has the wrong type ({v!r}); expected {t}") from None
