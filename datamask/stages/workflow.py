"""Workflow files and the stages they chain.

A workflow is YAML whose keys are config fields (the CLI flags' names), plus ``--set
key=value`` overrides; relative paths are taken from the current directory. With a
``stages: [...]`` list it chains stages: stage *k* reads stage *k-1*'s ``OUTPUT/<stage>/data``.
The stages are those of :data:`datamask.stages.registry.STAGES`.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from ..errors import ConfigError

__all__ = ["load_workflow", "apply_overrides", "stage_list", "stage_configs", "run_workflow"]


def apply_overrides(raw: dict, overrides) -> dict:
    import yaml

    for item in overrides or ():
        if "=" not in item:
            raise ConfigError(f"--set expects key=value, got {item!r}")
        key, value = item.split("=", 1)
        key, value = key.strip().replace("-", "_"), yaml.safe_load(value) if value.strip() else None
        head, sep, sub = key.rpartition("solver_params.")
        if sep and sub and head in ("", *(f"{n}." for n in _stage_names())):  # one key of the mapping
            block = raw if not head else _mapping(raw, head[:-1], head[:-1])
            sp = _mapping(block, "solver_params", f"{head}solver_params")
            sp[sub] = None if isinstance(value, str) and value.lower() in ("none", "null") else value
        else:
            raw[key] = value
    return raw


def _stage_names():
    from .registry import STAGES

    return list(STAGES)


def _mapping(d: dict, key: str, name: str) -> dict:
    """``d[key]``, a mapping (made when absent), to set one key of."""
    if d.get(key) is None:
        d[key] = {}
    if not isinstance(d[key], dict):
        raise ConfigError(f"--set {name}.KEY=VALUE needs {name} to be a mapping, not {d[key]!r}")
    return d[key]


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


def stage_list(raw: dict, source: str = "workflow") -> list:
    """The names in a workflow's ``stages`` (a list, or a comma-separated string), checked."""
    from .registry import STAGES

    names = raw["stages"]
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    if not isinstance(names, list) or not names or any(n not in STAGES for n in names):
        raise ConfigError(f"{source}: stages must be a list of {', '.join(STAGES)}; got {names!r}")
    if len(set(names)) != len(names):
        raise ConfigError(f"{source}: a stage is listed twice in stages ({names})")
    return names


def stage_configs(raw: dict, source: str = "workflow") -> list:
    """``[(stage, config)]`` of a chaining workflow (``stages: [embed, score, select]``).

    Top-level keys go to every stage that has them (``split_size``, ``device``...); a block
    named after a stage holds that stage's own keys. Stage *k* reads stage *k-1*'s
    ``OUTPUT/<stage>/data`` and writes ``OUTPUT/<stage>``; the first reads ``input``."""
    from ..pipeline.runner import DATA_DIR
    from .registry import STAGES

    raw = dict(raw)
    names = stage_list(raw, source)
    raw.pop("stages")
    for k in [k for k in raw if "." in k]:  # --set select.ratio=0.2
        stage, _, key = k.partition(".")
        if stage in STAGES:
            block = raw.setdefault(stage, {}) or {}
            block[key] = raw.pop(k)
            raw[stage] = block
    blocks = {}
    for n in STAGES:
        b = raw.pop(n, None) or {}
        if not isinstance(b, dict):
            raise ConfigError(f"{source}: {n} must be a mapping of {n} keys")
        if n not in names and b:
            raise ConfigError(f"{source}: block {n!r} given but {n} is not in stages")
        blocks[n] = b
    inp, out = raw.pop("input", None), raw.pop("output", None)
    if not inp or not out:
        raise ConfigError(f"{source}: the workflow needs input and output keys (or --set input=... --set output=...)")
    classes = {n: STAGES[n].config for n in names}
    known = {f.name for n in names for f in fields(classes[n])}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)} for stages {', '.join(names)}")
    from ..runtime.storage import location, resolve

    out = resolve(out)  # on the client, before any stage is sent to a worker
    cfgs, prev = [], resolve(inp)
    for n in names:
        cls = classes[n]
        own = {f.name for f in fields(cls)}
        d = {k: v for k, v in raw.items() if k in own}
        d.update(blocks[n])
        d["input"], d["output"] = prev, str(location(out) / n)
        cfgs.append((n, cls.from_dict(d, source=f"{source} ({n})")))
        prev = str(location(out) / n / DATA_DIR)
    return cfgs


def run_workflow(raw: dict, source: str = "workflow", on_stage=None, finish=None) -> list:
    """Run a chaining workflow on one client; returns ``[(stage, manifest)]``. ``on_stage(name,
    cfg, manifest)`` runs after each stage; ``finish(name, cfg)`` may give a stage's ``finish``
    hook (the report, run before its manifest is written)."""
    from ..runtime.client import close_client, get_client
    from ..runtime.gpu import select_level
    from .registry import STAGES

    cfgs = stage_configs(raw, source)
    first = cfgs[0][1]
    level = select_level(first.device, needs=STAGES[cfgs[0][0]].needs)
    client = get_client(first, level.device, level=level)
    try:
        results = []
        for name, cfg in cfgs:
            hook = finish(name, cfg) if finish is not None else None
            m = STAGES[name].run(cfg, client=client, finish=hook) if hook else STAGES[name].run(cfg, client=client)
            results.append((name, m))
            if on_stage is not None:
                on_stage(name, cfg, m)
        return results
    finally:
        close_client(client)
