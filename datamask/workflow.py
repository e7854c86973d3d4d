"""Workflow files: YAML whose keys are ``SelectConfig`` fields, plus ``--set key=value``
overrides. Relative paths are taken from the current directory."""
from __future__ import annotations

from pathlib import Path

from .errors import ConfigError

__all__ = ["load_workflow", "apply_overrides"]


def apply_overrides(raw: dict, overrides) -> dict:
    import yaml

    for item in overrides or ():
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        raw[key.strip().replace("-", "_")] = yaml.safe_load(value) if value.strip() else None
    return raw


def load_workflow(path, overrides=()) -> dict:
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except OSError as e:
        raise ConfigError(f"cannot read workflow {path} ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"workflow {path} is not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"workflow {path} must be a mapping of SelectConfig keys")
    raw.pop("description", None)
    return apply_overrides(raw, overrides)
