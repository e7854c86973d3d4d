"""User messages about a setting in plain words, naming its flag: no Python type names.

``with_flag`` names the flag of the setting a message starts with (``lam (--lam) must be ...``);
``type_words`` says a field's type as a person would (``float | None``: ``a number``);
``parse_solver_params`` reads ``--solver-params`` (inline JSON or a file) and its YAML key.
"""

from __future__ import annotations

from dataclasses import fields

from ..errors import ConfigError

__all__ = ["with_flag", "type_words", "parse_solver_params", "RUNTIME_FIELDS"]


def with_flag(message: str, cls) -> str:
    """``message`` (``lam must be ...``) with the flag of the field it starts with named:
    ``lam (--lam) must be ...``, so a command-line user and a workflow's author both find it."""
    name = message.split(" ", 1)[0].rstrip(":")  # (``solver_params: lr must be ...``)
    if name in {f.name for f in fields(cls)} and not message.startswith(f"{name} (--"):
        return f"{name} (--{name.replace('_', '-')}){message[len(name) :]}"
    return message


_TYPE_WORDS = {
    "bool": "true or false",
    "int": "a whole number",
    "float": "a number",
    "tuple": "two numbers LOW,HIGH (e.g. 0,4)",
    "list": "a list",
    "str": "text",
}


def type_words(t: str) -> str:
    """``float | None`` in words: ``a number``."""
    kinds = [k.strip() for k in t.split("|") if k.strip() not in ("None", "")]
    return " or ".join(_TYPE_WORDS.get(k, k) for k in kinds) or t


def parse_solver_params(v, name="solver_params") -> dict:
    """``solver_params`` from a mapping (a workflow's YAML), inline JSON (``'{"steps": 500}'``) or
    the path of a .json / .yaml file holding one; its keys and values are checked with the
    estimator's (:func:`datamask.estimator.estimator.check_solver_params`)."""
    if isinstance(v, dict):
        return dict(v)
    import yaml  # (JSON is YAML: '{"steps": 500}' and '{steps: 500}' read alike)

    s = str(v).strip()
    fix = f"{name} must be a JSON object such as '{{\"steps\": 500}}' or a .json/.yaml file holding one"
    if s.startswith("{"):
        try:
            d = yaml.safe_load(s)
        except yaml.YAMLError as e:
            raise ConfigError(f"{fix}; got {s!r} ({str(e).splitlines()[0]})") from None
    elif s.lower().endswith((".json", ".yaml", ".yml")):
        import os

        if not os.path.isfile(s):
            raise ConfigError(f"{name} file {s} does not exist")
        try:
            with open(s) as fh:
                d = yaml.safe_load(fh)
        except yaml.YAMLError as e:
            raise ConfigError(f"{name} file {s}: not YAML or JSON ({str(e).splitlines()[0]})") from None
    else:
        raise ConfigError(f"{fix}; got {s!r}")
    if not isinstance(d, dict):
        raise ConfigError(f"{fix}; got {s!r}")
    return d


#: StageConfig's Dask and storage settings, the same for every stage: the command line gives them
#: to ``datamask`` itself (cli.common.GLOBAL), the dataframe API takes them from the user's client
RUNTIME_FIELDS = ("storage_options", "device", "scheduler", "scheduler_file", "n_workers", "memory_limit",
                  "connect_timeout", "quiet")  # fmt: skip
