"""Proxy-LM evaluation: does a selection train a better model?

Train the same small decoder-only LM (same initial weights, seed, optimiser, schedule and
number of training tokens) on each selection and compare held-out loss on evaluation sets
no selection trained on. ``datamask proxy-lm`` and ``datamask compare --proxy-lm`` run it.
torch, transformers and tokenizers are imported only when a run starts.
"""

from .config import PRESETS, ProxyLMConfig
from .runner import CSV_COLUMNS, UNTRAINED, run_proxy_lm

__all__ = ["ProxyLMConfig", "PRESETS", "run_proxy_lm", "CSV_COLUMNS", "UNTRAINED"]
