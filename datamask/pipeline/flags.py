"""User messages about a setting in plain words, naming its flag: no Python type names.

``with_flag`` names the flag of the setting a message starts with (``lam (--lam) must be ...``);
``type_words`` says a field's type as a person would (``float | None``: ``a number``).
"""

from __future__ import annotations

from dataclasses import fields

__all__ = ["with_flag", "type_words"]


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
