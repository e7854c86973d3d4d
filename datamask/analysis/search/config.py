"""``SearchConfig``: ``datamask search``'s settings, one dataclass for flags and YAML keys.

It extends :class:`~datamask.pipeline.config.SelectConfig`: every ``select`` flag is the base
recipe (``--ratio``, ``--steps``, ``--split-size``, columns, cluster), and each trial replaces
the values its point of ``--space`` names. Every setting that changes a result is in the
config fingerprint (a rerun with another one is refused unless ``--overwrite``); each trial's
record carries its own fingerprint (the base recipe, the proxy, the evaluation windows and
its point), so a killed search resumes from the records it finished.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from ...errors import ConfigError
from ...pipeline.config import SelectConfig, parse_tokens
from ...pipeline.config import option as _f
from ...pipeline.flags import parse_solver_params
from ..proxy_lm.config import parse_proxy_tokens
from .space import DEFAULT_SPACE, NAMES, RATIO_RANGE, check_prune, default_space, parse_space

__all__ = [
    "SearchConfig",
    "REGRESSORS",
    "PROXY_KEYS",
    "DEFAULT_SEEDS",
    "DEFAULT_PROXY_TOKENS",
    "DEFAULT_VERIFY",
    "BUDGET_UNITS",
]

REGRESSORS = ("auto", "lightgbm", "gp", "quadratic")
#: proxy-LM settings ``--proxy-options`` may change (the others have flags of their own here)
PROXY_KEYS = (
    "vocab_size",
    "d_model",
    "n_layers",
    "n_heads",
    "d_ff",
    "seq_len",
    "batch_size",
    "lr",
    "min_lr_ratio",
    "warmup",
    "weight_decay",
    "grad_clip",
    "eval_tokens",
    "tokenizer_sample_chars",
    "device",
    "precision",
    "threads",
)
#: proxy repeats per trial, from benchmarks/results/proxy_noise.md: a difference between two recipes
#: on one seed is as noisy as on two (common random numbers cut it 0.9-1.5x at 50k-200k tokens), so a
#: second seed buys what a second trial does, and a trial is a new point of the space (docs/search.md)
DEFAULT_SEEDS = 1
#: 250 optimiser steps of the tiny preset (2,048 tokens a step): at 49 steps (100k tokens) a proxy beat a
#: unigram model of its own training tokens by 0.16 nats/token on package descriptions, at 250 by 0.93
#: (issue 48); below 250 steps the search warns that its proxies measured token frequencies
DEFAULT_PROXY_TOKENS = 512_000
#: paired verification seeds: a 95% t-interval at 4 degrees of freedom (t 2.78; at 2, 4.30)
DEFAULT_VERIFY = 5
#: policy-gradient steps of every trial's selection unless its solver_params say otherwise
TRIAL_STEPS = 300
#: what a trial's ratio counts: the corpus's tokens (equal-size selections) or rows
BUDGET_UNITS = ("tokens", "rows")


def _options(v, name="proxy_options") -> str:
    """``d_model=32,n_layers=2`` (or a YAML mapping) as the canonical ``k=v,k=v`` text."""
    if isinstance(v, dict):
        return ",".join(f"{k}={v[k]}" for k in v)
    return str(v)


def _references_text(v, name="references") -> str:
    """``--references``'s canonical text from the text or a YAML mapping ``{NAME: {KEY: VALUE}}``."""
    if isinstance(v, dict):
        return ";".join(f"{k}:{_options(r)}" for k, r in v.items())
    return str(v)


def parse_references(text) -> dict:
    """``{name: recipe}`` of ``--references`` text (values as YAML reads them; a ``preset`` key expanded)."""
    import yaml

    from ...pipeline.presets import PRESETS, with_preset

    out = {}
    for part in [p for p in str(text or "").split(";") if p.strip()]:
        name, sep, body = part.partition(":")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(f"references {part.strip()!r}: write NAME:KEY=VALUE,... (e.g. paper:preset=paper)")
        if name in ("chosen", "default", "topk", "random") or name in out:
            raise ConfigError(f"references: the name {name!r} is taken; choose another")
        recipe = {}
        for kv in [x for x in body.split(",") if x.strip()]:
            k, eq, val = kv.partition("=")
            if not eq:
                raise ConfigError(f"references {name}: {kv.strip()!r} is not KEY=VALUE")
            recipe[k.strip().replace("-", "_")] = yaml.safe_load(val.strip())
        if "preset" in recipe:
            p = recipe.pop("preset")
            if p not in PRESETS:
                raise ConfigError(f"references {name}: preset must be one of {', '.join(PRESETS)}; got {p!r}")
            recipe = {k: v for k, v in with_preset({**recipe, "preset": p}).items() if k != "preset"}
        out[name] = {"method": "datamask", **recipe}
    return out


@dataclass
class SearchConfig(SelectConfig):
    """``datamask search INPUT OUTPUT --eval EVAL``: recipes sampled, proxy LMs trained, a
    regressor fitted, the best recipe chosen and verified (docs/search.md)."""

    FLAGS: ClassVar[tuple] = (
        "eval",
        "target",
        "method",
        "space",
        "trials",
        "ratio",
        "budget",
        "tokens",
        "token_ratio",
        "budget_unit",
        "tokenizer",
        "prune",
        "references",
        "verify",
        "proxy_preset",
        "proxy_tokens",
        "solver_params",
        "seed",
        "split_size",
        "exclude",
        "overwrite",
        "no_report",
    )

    ratio: float | None = _f(
        None,
        "fraction of each split to keep, in (0, 1); unset (and no --budget/--tokens/--token-ratio): "
        f"DATAMASK's default space searches {RATIO_RANGE}, the other methods keep select's 0.1",
    )
    solver_params: dict | None = _f(
        None,
        "the optimiser's fine controls of every trial's selection, as select's --solver-params (JSON or a "
        f".json/.yaml file); steps defaults to {TRIAL_STEPS} here (select's scales to 5000-50000; a trial must "
        "select in seconds, and recipe.yaml keeps this value so it selects as the trial did)",
        parse=lambda v, name: parse_solver_params(v, name),
    )
    text_column: str = _f(
        "text",
        "text column: what every proxy model trains on (and counts tokens when no token-count column is present)",
        group="data",
    )
    eval: list | None = _f(
        None,
        "evaluation sets (Parquet/JSONL directories or files) every proxy model is judged on; their "
        "texts are removed from every selection",
        group="search",
        parse=lambda v, name: [str(x) for x in ([v] if isinstance(v, str) else v)],
    )
    space: str | None = _f(
        None,
        "the recipes to sample, e.g. 'lam=0:1,diversity=pairwise|facility' (default per method: "
        + "; ".join(f"{m}: {s}" for m, s in DEFAULT_SPACE.items() if m in ("datamask", "quadmix"))
        + f"; datamask's adds {RATIO_RANGE} when no --ratio/--budget/--tokens/--token-ratio is given)",
        group="search",
    )
    trials: int = _f(32, "recipes sampled (scrambled Sobol points of the space)", group="search")
    seeds: int = _f(
        DEFAULT_SEEDS,
        "proxy models per trial (seeds of initial weights and data order, shared by every trial)",
        group="search",
    )
    proxy_preset: str = _f("tiny", "proxy-LM size (datamask proxy-lm's presets)", group="search")
    proxy_tokens: int | str = _f(
        DEFAULT_PROXY_TOKENS,
        "training tokens of every proxy model: a count (512k: 250 optimiser steps of the tiny preset's 2,048 "
        "tokens; the fixed-token regime) or a multiple of each selection's own tokens (4x: four passes over it; "
        "the fixed-pass regime, whose steps follow each selection's size), rounded up to whole batches; "
        "docs/search.md",
        group="search",
        parse=parse_proxy_tokens,
    )
    proxy_options: str | None = _f(
        None,
        "other proxy-LM settings, KEY=VALUE,... under proxy-lm's flag names (d_model=64,n_layers=2)",
        group="search",
        parse=lambda v, name: _options(v, name),
    )
    trial_eval_tokens: int | None = _f(
        None,
        "evaluation tokens each trial's models are scored on (50000, 50k): the first documents of every "
        "evaluation set (in its seeded order) up to this count; the verification scores the whole set (default: "
        "half the proxy's eval_tokens, tiny: 50k; a set of at most this many tokens is scored whole); docs/search.md",
        group="search",
        parse=parse_tokens,
    )
    regressor: str = _f(
        "auto",
        "model of loss against the recipe (auto: the best cross-validated Spearman of the three)",
        choices=REGRESSORS,
        group="search",
    )
    candidates: int = _f(100_000, "recipes the regressor predicts to choose from", group="search")
    top: int = _f(10, "best predicted candidates averaged into the chosen recipe", group="search")
    verify: int = _f(
        DEFAULT_VERIFY,
        "fresh proxy seeds that retrain the chosen, default (lam 0.5, pairwise), top-k and random recipes, paired; "
        "a difference is beyond noise when its paired t-interval at the 0.95 level excludes zero (0: no verification)",
        group="search",
    )
    references: str | None = _f(
        None,
        "more recipes the verification trains beside the chosen, default, top-k and random ones, on the same "
        "seeds and budget: NAME:KEY=VALUE,...;NAME2:... (a KEY is a select flag's name; preset=paper expands "
        "the paper's recipe), e.g. 'paper:preset=paper;mine:lam=0.3,diversity=pairwise' (--references)",
        group="search",
        parse=lambda v, name: _references_text(v, name),
    )
    budget_unit: str = _f(
        "tokens",
        "what --ratio (or a searched ratio) counts: tokens (a share of the corpus's tokens, as --token-ratio: "
        "every recipe selects and trains on the same amount of text) or rows (each recipe keeps that share of "
        "the rows, whatever their length: the comparison then mixes each selection's size with its content)",
        choices=BUDGET_UNITS,
        group="search",
    )
    target: str | None = _f(
        None,
        "the evaluation set the regressor fits and the recommendation judges, by its name (its folder or "
        "file name, as search.json's eval_sets name it); default: the first --eval. Every set is reported",
        group="search",
    )
    no_report: bool = _f(False, "do not write the HTML report", group="output", result=False)

    def validated(self) -> SearchConfig:
        free = self.ratio is None  # unset stays unset: the default space searches it (select_config() has 0.1)
        super().validated()
        if "steps" not in (self.solver_params or {}):  # (after a preset's, which may set them)
            self.solver_params = {**(self.solver_params or {}), "steps": TRIAL_STEPS}
        if free:
            self.ratio = None
        if self.method not in NAMES:
            raise ConfigError(f"search takes --method {', '.join(NAMES)}; got {self.method!r}")
        for name in ("trials", "seeds", "candidates", "top"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if float(self.holdout):
            raise ConfigError(
                "search sets no holdout aside (its trials select every row); make the evaluation set first, e.g. "
                "datamask select INPUT SEL --holdout 0.05, and pass --eval SEL/holdout"
            )
        if int(self.trials) < 4:
            raise ConfigError(f"trials must be >= 4 (the regressor is cross-validated), got {self.trials}")
        if int(self.top) > int(self.candidates):
            raise ConfigError(f"top ({self.top}) must not exceed candidates ({self.candidates})")
        if self.trial_eval_tokens is not None and int(self.trial_eval_tokens) < 1:
            raise ConfigError(f"trial_eval_tokens must be >= 1, got {self.trial_eval_tokens}")
        if int(self.verify) < 0:
            raise ConfigError(f"verify must be >= 0, got {self.verify}")
        self._check_unit()
        self.proxy_config()  # the proxy settings' own checks
        for name, recipe in self.reference_recipes().items():  # each reference as select checks it
            try:
                self.replace_unchecked(**{k: v for k, v in recipe.items() if k != "ratio"})
            except (ConfigError, TypeError, ValueError) as e:
                raise ConfigError(f"references {name}: {e}") from None
        self.items()  # the space's
        return self

    def _check_unit(self) -> None:
        if self.budget_unit not in BUDGET_UNITS:
            raise ConfigError(f"budget_unit must be one of {', '.join(BUDGET_UNITS)}; got {self.budget_unit!r}")
        if self.budget_unit == "rows" and self.budget_in_tokens:
            given = "--tokens" if self.tokens is not None else "--token-ratio"
            raise ConfigError(f"--budget-unit rows is for a row ratio; {given} already counts tokens (drop one)")
        if self.budget_unit == "tokens" and self.budget is not None:
            raise ConfigError(
                f"--budget {self.budget} counts rows: the trials would compare selections of different sizes; give "
                "--tokens or --token-ratio, or --budget-unit rows to compare at a row budget (size mixed with content)"
            )

    @property
    def ratio_in_tokens(self) -> bool:
        """True when a trial's ratio (``--ratio``, select's default or a searched one) is a share of
        the corpus's tokens (``--budget-unit tokens``, no budget of its own)."""
        return self.budget_unit == "tokens" and self.budget is None and not self.budget_in_tokens

    @property
    def counts_tokens(self) -> bool:
        """True when every trial selects to a token budget (given, or its ratio in tokens)."""
        return bool(self.budget_in_tokens) or self.ratio_in_tokens

    def reference_recipes(self) -> dict:
        """``--references``'s recipes by name (checked as select checks its settings)."""
        return parse_references(self.references)

    def items(self):
        """The parsed ``--space`` (its default for the method when unset)."""
        text = self.default_space() if self.space is None else self.space
        items = parse_space(text, self.method, self._check_value)
        check_prune(items, self.base_ratio())
        return items

    def base_ratio(self) -> float | None:
        """The ratio a trial keeps when its recipe has none (None: a budget in rows or tokens)."""
        return None if self.budget is not None or self.budget_in_tokens else self.select_config().ratio

    def default_space(self) -> str:
        """``--space``'s default here: DATAMASK's searches ``ratio`` when no budget is given (docs/search.md)."""
        base = self.base_ratio()
        return default_space(self.method, "free" if base is not None and self.ratio is None else base)

    def _check_value(self, name, value):
        from ...methods.quadmix import QuadMixParams

        if name == "ratio":
            if self.budget is not None or self.budget_in_tokens:
                given = (
                    "--budget"
                    if self.budget is not None
                    else "--tokens"
                    if self.tokens is not None
                    else "--token-ratio"
                )
                raise ConfigError(f"ratio is searched only with a row budget by ratio (drop {given})")
            self.replace_unchecked(ratio=value)
        elif self.method == "quadmix" and name != "diversity":
            p = dict(QuadMixParams.DEFAULT, **{name: value})
            QuadMixParams(["d"], *([p[k]] for k in QuadMixParams.FIELDS))
        else:
            self.replace_unchecked(**{name: value})

    def replace_unchecked(self, **changes) -> SelectConfig:
        """A :class:`SelectConfig` of this base recipe with ``changes`` (checked as select checks them)."""
        base = {f.name: getattr(self, f.name) for f in fields(SelectConfig)}
        return SelectConfig(**dict(base, **changes)).validated()

    def proxy_config(self, seed: int = 0):
        """The proxy-LM config of every trial (seed ``seed``), validated."""
        from ..proxy_lm.config import PRESETS, ProxyLMConfig

        if self.proxy_preset not in PRESETS:
            raise ConfigError(f"proxy_preset must be one of {', '.join(PRESETS)}; got {self.proxy_preset!r}")
        opts = {}
        for part in [p for p in str(self.proxy_options or "").split(",") if p.strip()]:
            k, sep, v = part.partition("=")
            k = k.strip().replace("-", "_")
            if not sep or k not in PROXY_KEYS:
                raise ConfigError(
                    f"proxy_options {part.strip()!r}: write KEY=VALUE with KEY one of {', '.join(PROXY_KEYS)}"
                )
            opts[k] = v.strip()
        base = {"preset": self.proxy_preset, "tokens": parse_proxy_tokens(self.proxy_tokens, "proxy_tokens")}
        base["seed"] = int(seed)
        d = dict(base, sample_seed=int(self.seed), curve_points=0, quiet=True, threads=1, no_report=True)
        d.update(opts)
        return ProxyLMConfig.from_dict(d, source="proxy_options")

    def trial_eval_cap(self) -> int:
        """The evaluation tokens a trial's model scores per set: ``trial_eval_tokens``, else half
        the proxy's ``eval_tokens``. On search_real's 90,816-token evaluation set, 50,000 tokens
        took 0.57 of the whole set's evaluation time and moved a difference between two models by
        an sd of 0.006 nats/token over random subsets, about a tenth of a model's seed-to-seed sd
        (0.050): benchmarks/results/trial_eval.md."""
        if self.trial_eval_tokens is not None:
            return int(self.trial_eval_tokens)
        return max(1, int(self.proxy_config().resolved().eval_tokens) // 2)

    def excluded_sets(self) -> list:
        """The sets whose rows no selection holds: the evaluation sets, then ``--exclude``'s."""
        return [*(self.eval or []), *(self.exclude or [])]

    def select_config(self) -> SelectConfig:
        """The base recipe as a plain :class:`SelectConfig` (what ``datamask select`` would run)."""
        return self.replace_unchecked()
