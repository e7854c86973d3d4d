"""Proxy-LM evaluation: does a selection train a better model?

Train the same small decoder-only LM (same initial weights, seed, optimiser, schedule and
number of training tokens) on each selection and compare held-out loss on evaluation sets
no selection trained on. ``datamask proxy-lm`` and ``datamask compare --proxy-lm`` run it.
torch, transformers and tokenizers are imported only when a run starts; the runner's names
below (pandas, pyarrow) on first use, so the config (``datamask proxy-lm``'s flags, ``datamask
search``'s) reads without them.
"""

from .config import PRESETS, ProxyLMConfig

__all__ = ["ProxyLMConfig", "PRESETS", "run_proxy_lm", "CSV_COLUMNS", "UNTRAINED"]

_RUNNER = ("run_proxy_lm", "CSV_COLUMNS", "UNTRAINED")  # from .runner, on first use


def __getattr__(name):
    if name in _RUNNER:
        from . import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
