"""Presets: named sets of ``select`` settings (``--preset``, a workflow's ``preset:`` key).

A setting given beside a preset overrides it (:func:`with_preset`).
"""

from __future__ import annotations

from ..errors import ConfigError

__all__ = ["PRESETS", "with_preset", "preset_help"]

# Presets: named sets of settings (--preset, a workflow's `preset:` key). "paper" is the
# DATAMASK paper's final recipe (its Section 4.4, "Final Strategies"): quality-aware pruning
# and initialisation, pairwise diversity at lambda 0.5, lr 10, G 128, batch updating on 5%
# of a split, uncapped, for 10,000 steps with no early stopping (docs/design.md).
PRESETS = {
    "paper": {
        "diversity": "pairwise",
        "lam": 0.5,
        "prune": 0.5,
        "near_duplicate": None,
        "init": "quality",
        "lr": 10.0,
        "group_size": 128,
        "batch_ratio": 0.05,
        "batch_max": None,
        "steps": 10_000,
        "patience": None,
        "lr_schedule": "constant",
        "final": "topk",
    }
}


def with_preset(values: dict) -> dict:
    """``values`` over their preset's settings (a setting given beside ``preset`` overrides it)."""
    name = values.get("preset")
    if name is None:
        return values
    if name not in PRESETS:
        raise ConfigError(f"preset must be one of {', '.join(PRESETS)}; got {name!r}")
    return {**PRESETS[name], **values}


def preset_help(name: str) -> str:
    """The preset's settings as `key=value, ...` (for --help)."""
    return ", ".join(f"{k}={'null' if v is None else v}" for k, v in PRESETS[name].items())
