"""Presets: named recipes (``--preset``, a workflow's ``preset:`` key), the estimator's
:data:`datamask.estimator.params.PRESETS` (``DataMask(**PRESETS[name])``): one list of them.

A setting given beside a preset overrides it, ``solver_params`` key by key (:func:`with_preset`).
"""

from __future__ import annotations

from ..errors import ConfigError
from ..estimator.params import PRESETS

__all__ = ["PRESETS", "with_preset", "preset_help"]


def with_preset(values: dict) -> dict:
    """``values`` over their preset's settings (a setting given beside ``preset`` overrides it;
    ``solver_params`` merge key by key)."""
    name = values.get("preset")
    if name is None:
        return values
    if name not in PRESETS:
        raise ConfigError(f"preset must be one of {', '.join(PRESETS)}; got {name!r}")
    out = {**PRESETS[name], **values}
    if "solver_params" in PRESETS[name] and isinstance(values.get("solver_params"), dict):
        out["solver_params"] = {**PRESETS[name]["solver_params"], **values["solver_params"]}
    return out


def preset_help(name: str) -> str:
    """The preset's settings as `key=value, ...` (for --help)."""

    def text(v):
        return "null" if v is None else v

    parts = []
    for k, v in PRESETS[name].items():
        if isinstance(v, dict):
            parts += [f"{k2}={text(v2)}" for k2, v2 in v.items()]
        else:
            parts.append(f"{k}={text(v)}")
    return ", ".join(parts)
