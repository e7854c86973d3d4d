"""The dataframe functions' keyword parameters, read from the stage config dataclasses.

``select(ddf, ratio=..., lam=...)`` takes the fields of ``SelectConfig`` under the names and
defaults of the CLI flags (``--ratio`` is ``ratio``), less the ones only files and clusters
have (input, output, scheduler...). :func:`takes_config` writes them into the function's
signature and docstring, so ``help(select)`` and a notebook's completion show them, and
builds the validated config from the call: one name, one default, one check.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import MISSING, fields

from ..errors import ConfigError
from ..pipeline.flags import RUNTIME_FIELDS

__all__ = ["FILE_ONLY", "config_fields", "takes_config", "frame_config"]

# Fields that describe files, output directories or a cluster: the frame and the user's own
# client stand in for them.
FILE_ONLY = frozenset(
    {
        *(f for f in RUNTIME_FIELDS if f != "device"),  # the client's; the device is the frame's
        "input",
        "output",
        "overwrite",
        "partition_on",
        "holdout",
        "exclude",  # (a frame is filtered before the call: ddf[~ddf.id.isin(held_ids)])
        "split_size",
    }
)


def config_fields(cls, exclude=(), only=None):
    """The dataclass fields of ``cls`` a dataframe function takes, in declaration order
    (``only``: just these)."""
    skip = FILE_ONLY | set(exclude)
    return [f for f in fields(cls) if f.name not in skip and (only is None or f.name in only)]


def frame_config(cls, params: dict, func: str, exclude=(), only=None):
    """A validated ``cls`` from the keyword arguments of a call; a one-line error for a
    name the function does not take."""
    names = {f.name for f in config_fields(cls, exclude, only)}
    unknown = sorted(set(params) - names)
    if unknown:
        raise TypeError(
            f"{func}() got unexpected keyword argument(s) {', '.join(unknown)}; it takes {', '.join(sorted(names))}"
        )
    try:
        return cls(**params).validated()
    except TypeError as e:  # a value of the wrong type deep in validation
        raise ConfigError(f"{func}(): {e}") from None


def _doc(cls, exclude, only) -> str:
    lines = [
        f"    {f.name} : default {f.default!r}\n        {f.metadata.get('help', '')}"
        for f in config_fields(cls, exclude, only)
    ]
    return (
        f"\n\n    Parameters from ``{cls.__name__}`` (the CLI flags, same names and defaults)\n"
        "    " + "-" * (36 + len(cls.__name__)) + "\n" + "\n".join(lines) + "\n"
    )


def takes_config(cls, exclude=(), only=None):
    """Decorate ``fn(ddf, ..., cfg=None)``: the call's config keywords become ``cfg``.

    The wrapper's signature is ``fn``'s own parameters (``cfg`` removed) followed by the
    config fields as keyword-only parameters with the dataclass defaults."""
    cfg_fields = config_fields(cls, exclude, only)
    names = {f.name for f in cfg_fields}

    def deco(fn):
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.name != "cfg" and p.kind != p.VAR_KEYWORD]
        own_names = {p.name for p in own}
        clash = names & own_names
        assert not clash, f"{fn.__name__} redefines config fields {clash}"

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            params = {k: kwargs.pop(k) for k in list(kwargs) if k not in own_names}
            return fn(*args, cfg=frame_config(cls, params, fn.__name__, exclude, only), **kwargs)

        extra = [
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default if f.default is not MISSING else None
            )
            for f in cfg_fields
        ]
        wrapper.__signature__ = sig.replace(parameters=own + extra)
        wrapper.__doc__ = (fn.__doc__ or "").rstrip() + _doc(cls, exclude, only)
        wrapper.config_class = cls
        return wrapper

    return deco
