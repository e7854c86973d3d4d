"""``ProxyLMConfig``: every proxy-LM setting, named, defaulted, documented and checked once.

The command-line flags of ``datamask proxy-lm`` and the keys of a YAML workflow fill the same
fields under the same names (``--d-model`` is ``d_model``). Size knobs default to ``None``,
which means "the preset's value" (:data:`PRESETS`); :meth:`ProxyLMConfig.resolved` fills
them in, so the manifest always records the numbers a run used.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, fields
from typing import ClassVar

from ...errors import ConfigError
from ...pipeline.config import check_keys, parse_tokens, parse_value
from ...pipeline.config import option as _f

__all__ = ["ProxyLMConfig", "PRESETS", "SIZE_FIELDS", "parse_proxy_tokens", "passes_of"]

#: Model, data and optimiser sizes of each preset. ``tiny`` trains in a few minutes per
#: selection on 2 CPU cores (≈1.2M parameters, 1M tokens); ``small`` is for a GPU (≈34M
#: parameters, bf16 autocast, 100M tokens).
PRESETS = {
    "tiny": dict(
        vocab_size=4096,
        d_model=128,
        n_layers=4,
        n_heads=4,
        d_ff=256,
        seq_len=128,
        batch_size=16,
        tokens=1_000_000,
        lr=3e-3,
        eval_tokens=100_000,
        curve_tokens=10_000,
        tokenizer_sample_chars=4_000_000,
    ),
    "small": dict(
        vocab_size=16384,
        d_model=512,
        n_layers=8,
        n_heads=8,
        d_ff=1376,
        seq_len=512,
        batch_size=64,
        tokens=100_000_000,
        lr=1e-3,
        eval_tokens=2_000_000,
        curve_tokens=200_000,
        tokenizer_sample_chars=50_000_000,
    ),
}
SIZE_FIELDS = tuple(PRESETS["tiny"])


def _size(help, group="model", parse=None):
    return _f(None, f"{help} (default: the preset's)", group=group, parse=parse)


def parse_proxy_tokens(v, name="tokens"):
    """Training tokens of every proxy model: a count (``200000``, ``200k``, ``1.5M``) or a multiple
    of each selection's own tokens, written ``4x`` (four passes over it; ``0.5x``, ``1x``), kept
    as that text."""
    s = str(v).strip().lower()
    if not s.endswith("x"):
        return parse_tokens(v, name)
    try:
        x = float(s[:-1])
    except ValueError:
        x = float("nan")
    if not (x > 0 and x != float("inf")):
        raise ConfigError(
            f"{name} must be a token count (200000, 200k, 1.5M) or a positive multiple of each selection's "
            f"tokens such as 4x or 0.5x; got {v!r}"
        )
    return f"{x:g}x"


def passes_of(tokens) -> float | None:
    """The passes a ``tokens`` setting asks for (``"4x"`` -> 4.0), or None for a token count."""
    return float(str(tokens)[:-1]) if isinstance(tokens, str) and tokens.endswith("x") else None


@dataclass
class ProxyLMConfig:
    """Train one small causal LM per selection on equal tokens; held-out loss per eval set.

    See :func:`datamask.analysis.proxy_lm.run_proxy_lm` for what a run writes.
    """

    #: the fields with a command-line flag of their own; the others are ``--set KEY=VALUE``
    FLAGS: ClassVar[tuple] = ("eval", "tokenizer", "preset", "tokens", "seed", "device", "overwrite", "no_report")

    # --- data
    selections: list | None = _f(
        None,
        "selections: select output directories, compare output directories "
        "(every method's selection) or any Parquet/JSONL corpus",
        group="data",
    )
    eval: list | None = _f(
        None,
        "evaluation sets: Parquet/JSONL directories or files (e.g. compare/select OUTPUT/holdout), never trained on",
        group="data",
    )
    output: str | None = _f(None, "output directory", group="data", result=False)
    text_column: str = _f("text", "name of the text column", group="data")
    domain_column: str | None = _f(
        None, "evaluation column for per-domain losses (default: cluster when present)", group="data"
    )
    tokenizer: str | None = _f(
        None, "tokenizer.json (or folder) to use instead of training a byte-level BPE on the selections", group="data"
    )
    # --- model (None: the preset's value)
    preset: str = _f("tiny", "model, data and optimiser sizes", choices=tuple(PRESETS), group="model")
    vocab_size: int | None = _size("BPE vocabulary size when the tokenizer is trained")
    d_model: int | None = _size("hidden size")
    n_layers: int | None = _size("decoder layers")
    n_heads: int | None = _size("attention heads")
    d_ff: int | None = _size("feed-forward (SwiGLU) size")
    seq_len: int | None = _size("tokens per training sequence")
    # --- training
    tokens: int | str | None = _size(
        "training tokens per selection: a count (a smaller selection is repeated) or a multiple of each "
        "selection's own tokens, e.g. 4x (four passes over it, rounded up to whole batches)",
        "training",
        parse_proxy_tokens,
    )
    batch_size: int | None = _size("sequences per optimiser step", "training")
    lr: float | None = _size("peak AdamW learning rate", "training")
    min_lr_ratio: float = _f(0.1, "final learning rate of the cosine schedule, as a fraction of lr", group="training")
    warmup: float = _f(0.05, "fraction of the steps with a linear warm-up", group="training")
    weight_decay: float = _f(0.1, "AdamW weight decay", group="training")
    grad_clip: float = _f(1.0, "gradient-norm clip (0: none)", group="training")
    seed: int = _f(0, "seed of the initial weights and the data order", group="training")
    sample_seed: int = _f(
        0,
        "seed of the tokenizer's text sample and of the evaluation sample (kept apart from "
        "seed, so runs with several seeds share the tokenizer and the scored documents)",
        group="training",
    )
    # --- evaluation
    eval_tokens: int | None = _size(
        "most tokens scored per evaluation set (a seeded sample of documents)", "evaluation"
    )
    curve_tokens: int | None = _size("tokens of each evaluation set scored at the loss-curve points", "evaluation")
    curve_points: int = _f(8, "held-out loss evaluations during training (the loss curve)", group="evaluation")
    tokenizer_sample_chars: int | None = _size("characters of selection text the BPE is trained on", "evaluation")
    # --- runtime
    device: str = _f(
        "auto", "where the model trains (auto: cuda when available)", choices=("auto", "cpu", "cuda"), group="runtime"
    )
    precision: str = _f(
        "auto",
        "compute precision (auto: bfloat16 on CUDA and on CPUs with bfloat16 dot products, avx512_bf16 or amx_bf16; else float32)",
        choices=("auto", "float32", "bfloat16"),
        group="runtime",
    )
    threads: int | None = _f(
        None, "torch CPU threads (default: the usable cores); fixed for the run", group="runtime", result=False
    )
    compile: bool = _f(
        False,
        "compile the model and its training loss with torch.compile (inductor; CPU only; needs a C++ "
        "compiler): the tiny preset's steps took 0.8 of the CPU time, losses equal to float32 rounding, "
        "after a compile of about a minute per process and model shape, so it pays from about 430 "
        "steps of one shape per process, e.g. a search's workers (off with one warning when it "
        "cannot run)",
        group="runtime",
        result=False,
    )
    overwrite: bool = _f(False, "delete an existing output's results and start over", group="runtime", result=False)
    quiet: bool = _f(False, "no progress bars", group="runtime", result=False)
    no_report: bool = _f(False, "do not write the HTML report (OUTPUT/report/)", group="runtime", result=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, d: dict, source: str = "config") -> ProxyLMConfig:
        check_keys(cls, d, source)
        kw = {}
        for f in fields(cls):
            if f.name not in d:
                continue
            v = d[f.name]
            if f.name in ("selections", "eval"):
                kw[f.name] = None if v is None else [str(x) for x in ([v] if isinstance(v, str) else v)]
            else:
                kw[f.name] = parse_value(f, v, source)
        return cls(**kw).validated()

    def replace(self, **changes) -> ProxyLMConfig:
        return dataclasses.replace(self, **changes).validated()

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def resolved(self) -> ProxyLMConfig:
        """A copy with every size knob left at ``None`` set to the preset's value."""
        p = PRESETS[self.preset]
        return dataclasses.replace(self, **{k: p[k] for k in SIZE_FIELDS if getattr(self, k) is None})

    def result_dict(self) -> dict:
        """Fields that change the numbers. The selection and evaluation paths are left out: a
        run's result is keyed by the content it read (see ``runner``), so adding a selection or
        an evaluation set reuses the finished runs that it can."""
        d = self.resolved().to_dict()
        return {
            f.name: d[f.name]
            for f in fields(self)
            if f.metadata.get("result", True) and f.name not in ("selections", "eval")
        }

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.result_dict(), sort_keys=True, default=str).encode()).hexdigest()[:16]

    # ------------------------------------------------------------------ validation
    def validated(self) -> ProxyLMConfig:
        for f in fields(self):
            ch = f.metadata.get("choices")
            if ch and getattr(self, f.name) not in ch:
                raise ConfigError(f"{f.name} must be one of {', '.join(ch)}; got {getattr(self, f.name)!r}")
        r = self.resolved()
        if isinstance(r.tokens, str):
            r = dataclasses.replace(r, tokens=parse_proxy_tokens(r.tokens))
        for name in (f for f in SIZE_FIELDS if f not in ("lr", "tokens")):  # every size knob but these two
            if int(getattr(r, name)) < 1:
                raise ConfigError(f"{name} must be a positive integer, got {getattr(r, name)}")
        if int(r.vocab_size) < 260:
            raise ConfigError(f"vocab_size must be >= 260 (the 256 bytes plus merges), got {r.vocab_size}")
        if int(r.d_model) % int(r.n_heads) or (int(r.d_model) // int(r.n_heads)) % 2:
            raise ConfigError(f"d_model ({r.d_model}) must be n_heads ({r.n_heads}) times an even head size")
        if passes_of(r.tokens) is None and int(r.tokens) < int(r.batch_size) * int(r.seq_len):
            raise ConfigError(
                f"tokens ({r.tokens}) must be at least one step, batch_size x seq_len = "
                f"{int(r.batch_size) * int(r.seq_len)}"
            )
        if not float(r.lr) > 0:
            raise ConfigError(f"lr must be > 0, got {r.lr}")
        if not 0.0 <= float(self.min_lr_ratio) <= 1.0:
            raise ConfigError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio}")
        if not 0.0 <= float(self.warmup) < 1.0:
            raise ConfigError(f"warmup must be in [0, 1), got {self.warmup}")
        if float(self.weight_decay) < 0 or float(self.grad_clip) < 0:
            raise ConfigError("weight_decay and grad_clip must be >= 0")
        if int(self.curve_points) < 0:
            raise ConfigError(f"curve_points must be >= 0, got {self.curve_points}")
        if self.threads is not None and int(self.threads) < 1:
            raise ConfigError(f"threads must be >= 1, got {self.threads}")
        return self

    @property
    def passes(self) -> float | None:
        """The passes over each selection asked for (``tokens`` written ``4x``), or None."""
        return passes_of(self.resolved().tokens)

    def steps_for(self, selection_tokens: int) -> int:
        """Optimiser steps of a selection of ``selection_tokens`` tokens: ``tokens`` (or ``passes x
        selection_tokens``) rounded up to whole batches of ``batch_size x seq_len``, so a model trains
        on at least the tokens asked for (and less than one batch more); one step at least."""
        r = self.resolved()
        p = passes_of(r.tokens)
        want = int(r.tokens) if p is None else p * int(selection_tokens)
        return max(1, math.ceil(want / (int(r.batch_size) * int(r.seq_len))))

    @property
    def steps(self) -> int | None:
        """Optimiser steps of every selection (None when ``tokens`` is a multiple: each selection's own)."""
        return None if self.passes is not None else self.steps_for(0)

    @property
    def train_tokens(self) -> int | None:
        """Target tokens every selection is trained on (``steps x batch_size x seq_len``; None for a multiple)."""
        r = self.resolved()
        return None if self.steps is None else self.steps * int(r.batch_size) * int(r.seq_len)
