"""The recipe space ``datamask search`` samples: what ``--space`` names, parsed and checked once.

``--space`` is a comma-separated list of ``NAME=VALUES``: ``lam=0:1`` a range (uniform),
``lam=1:100:log`` a log-uniform one, ``lam=0.3`` one value; ``diversity=pairwise|facility`` a
choice; ``omega[domain]=0.05:1`` (QuaDMix) one value per domain; ``weights=auto`` (QuaDMix) merge
weights of the quality components (every ``quality_<name>`` column, or ``weights=quality_a|quality_b``),
uniform on the simplex, ``weights[domain]=auto`` one set per domain, as QuaDMix merges.

The names depend on the method (:data:`NAMES`): DATAMASK's objective takes ``lam``, ``diversity``,
``prune`` and ``ratio`` (a trial's ``prune`` is capped where pruning leaves just what its ratio
keeps: about the top by quality); QuaDMix its sampling function's ``lam``, ``omega``, ``eta``,
``eps``, the merge ``weights`` and ``ratio``. Every value is checked as ``datamask select`` checks
it before anything runs. :func:`parse_space` checks the text; :meth:`Space.build` expands it once
the input's domains and quality components are known, into a :class:`Space` of unit coordinates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ...errors import ConfigError

__all__ = ["NAMES", "DEFAULT_SPACE", "parse_space", "default_space", "Item", "Space", "Range", "Choice", "Weights"]

DATAMASK_NAMES = ("lam", "diversity", "prune", "ratio")
QUADMIX_NAMES = ("lam", "omega", "eta", "eps", "weights", "ratio")
#: the names each method's space may hold (methods on DATAMASK's objective share them)
NAMES = {"datamask": DATAMASK_NAMES, "greedy": DATAMASK_NAMES, "relaxed": DATAMASK_NAMES, "quadmix": QUADMIX_NAMES}
#: the documented default of ``--space`` per method (``weights=auto`` is added for QuaDMix when the
#: input has two or more quality components; :func:`default_space` adds DATAMASK's ``ratio``)
DEFAULT_SPACE = {
    "datamask": "lam=0:1,diversity=pairwise|facility|disf,prune=0:0.9",
    "greedy": "lam=0:1,diversity=pairwise|facility|disf,prune=0:0.9",
    "relaxed": "lam=0:1,diversity=pairwise|disf,prune=0:0.9",
    "quadmix": "omega[domain]=0.05:1,eta[domain]=0:2,lam=1:50:log,eps=0:0.2",
}
_ITEM = re.compile(r"^\s*([a-z_]+)(\[domain\])?\s*=\s*(.*?)\s*$")


# ---------------------------------------------------------------------- parameters
@dataclass
class Range:
    """A number drawn from ``[lo, hi]`` (log-uniform when ``log``); one per domain when ``domains``."""

    name: str
    lo: float
    hi: float
    log: bool = False
    domains: list | None = None

    @property
    def width(self) -> int:
        return 0 if self.lo == self.hi else (len(self.domains) if self.domains is not None else 1)

    @property
    def columns(self) -> list:
        return [f"{self.name}[{d}]" for d in self.domains] if self.domains is not None else [self.name]

    def values(self, u):
        """(n, len(columns)) numbers of unit coordinates ``u`` (n, width)."""
        if self.width == 0:
            return np.full((u.shape[0], len(self.columns)), self.lo)
        if self.log:
            return np.exp(np.log(self.lo) + u * (np.log(self.hi) - np.log(self.lo)))
        return self.lo + u * (self.hi - self.lo)

    def features(self, u):
        return u

    def average(self, u):
        """The recipe value at the mean of the coordinates ``u`` (rows of the best candidates)."""
        v = self.values(u.mean(axis=0, keepdims=True))[0]
        if self.domains is None:
            return float(v[0])
        return {str(d): float(x) for d, x in zip(self.domains, v)}

    def value_of(self, row):
        """The recipe value of one trial's flat column values."""
        return float(row[0]) if self.domains is None else {str(d): float(x) for d, x in zip(self.domains, row)}

    def features_of(self, value) -> np.ndarray:
        """The coordinates of a recipe value (the inverse of :meth:`values`)."""
        if self.width == 0:
            return np.zeros(0)
        v = np.asarray([value[str(d)] for d in self.domains] if self.domains is not None else [value], dtype=float)
        if self.log:
            return (np.log(v) - np.log(self.lo)) / (np.log(self.hi) - np.log(self.lo))
        return (v - self.lo) / (self.hi - self.lo)


@dataclass
class Choice:
    """One of ``options``, equally likely; one-hot features for the regressors."""

    name: str
    options: list

    @property
    def width(self) -> int:
        return 0 if len(self.options) == 1 else 1

    @property
    def columns(self) -> list:
        return [self.name]

    def index(self, u):
        if self.width == 0:
            return np.zeros(u.shape[0], dtype=np.int64)
        return np.minimum((u[:, 0] * len(self.options)).astype(np.int64), len(self.options) - 1)

    def values(self, u):
        return np.asarray(self.options, dtype=object)[self.index(u)][:, None]

    def features(self, u):
        if self.width == 0:
            return np.zeros((u.shape[0], 0))
        return np.eye(len(self.options))[self.index(u)]

    def value_of(self, row):
        return str(row[0])

    def features_of(self, value) -> np.ndarray:
        return np.zeros(0) if self.width == 0 else np.eye(len(self.options))[self.options.index(value)]


@dataclass
class Weights:
    """Merge weights of ``components`` (sum 1), uniform on the simplex (Dirichlet(1), from
    exponential transforms of the coordinates); one set per domain when ``domains``."""

    name: str
    components: list
    domains: list | None = None

    @property
    def _groups(self) -> list:
        return [None] if self.domains is None else list(self.domains)

    @property
    def width(self) -> int:
        return len(self.components) * len(self._groups)

    @property
    def columns(self) -> list:
        pre = [f"{self.name}" if g is None else f"{self.name}[{g}]" for g in self._groups]
        return [f"{p}.{c}" for p in pre for c in self.components]

    def values(self, u):
        C = len(self.components)
        x = -np.log1p(-np.clip(u, 0.0, 1.0 - 1e-12)).reshape(u.shape[0], -1, C)
        return (x / np.maximum(x.sum(axis=2, keepdims=True), 1e-300)).reshape(u.shape[0], -1)

    def features(self, u):
        return self.values(u)

    def average(self, u):
        w = self.values(u).mean(axis=0).reshape(len(self._groups), -1)
        return self._nest(w / w.sum(axis=1, keepdims=True))

    def value_of(self, row):
        return self._nest(np.asarray(row, dtype=float).reshape(len(self._groups), -1))

    def features_of(self, value) -> np.ndarray:
        sets = [value] if self.domains is None else [value[str(g)] for g in self._groups]
        return np.asarray([s[c] for s in sets for c in self.components], dtype=float)

    def _nest(self, w):
        sets = [{c: float(x) for c, x in zip(self.components, r)} for r in w]
        return sets[0] if self.domains is None else {str(g): s for g, s in zip(self._groups, sets)}


# ---------------------------------------------------------------------- the text of --space
@dataclass
class Item:
    """One ``NAME=VALUES`` of ``--space``, checked but not expanded (domains unknown yet)."""

    name: str
    per_domain: bool
    kind: str  # "range", "value", "choice", "weights"
    lo: float = 0.0
    hi: float = 0.0
    log: bool = False
    options: list = field(default_factory=list)

    def text(self) -> str:
        key = f"{self.name}[domain]" if self.per_domain else self.name
        if self.kind == "range":
            return f"{key}={self.lo:g}:{self.hi:g}" + (":log" if self.log else "")
        if self.kind == "value":
            return f"{key}={self.lo:g}"
        return f"{key}={'|'.join(self.options)}"


def _number(s: str, item: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise ConfigError(
            f"space {item!r}: {s!r} is not a number; write NAME=LO:HI, NAME=LO:HI:log or NAME=VALUE"
        ) from None
    if not np.isfinite(v):
        raise ConfigError(f"space {item!r}: {s!r} is not a finite number")
    return v


def _parse_item(raw: str, method: str) -> Item:
    m = _ITEM.match(raw)
    names = NAMES[method]
    if not m or not m[3]:
        raise ConfigError(
            f"space {raw!r}: write NAME=LO:HI, NAME=VALUE or NAME=A|B (names for {method}: {', '.join(names)})"
        )
    name, per, val = m[1], bool(m[2]), m[3]
    if name not in names:
        raise ConfigError(f"space {raw!r}: unknown name {name!r} for method {method}; known: {', '.join(names)}")
    if per and (method != "quadmix" or name == "ratio"):
        raise ConfigError(f"space {raw!r}: only QuaDMix's lam, omega, eta, eps and weights take [domain]")
    if name == "weights":
        opts = [o.strip() for o in val.split("|") if o.strip()]
        if not opts or ("auto" in opts and len(opts) > 1):
            raise ConfigError(f"space {raw!r}: weights=auto or weights=COLUMN|COLUMN (two or more quality columns)")
        if opts != ["auto"] and len(set(opts)) < 2:
            raise ConfigError(f"space {raw!r}: merge weights need two or more distinct quality columns")
        return Item(name, per, "weights", options=opts)
    if name == "diversity":
        opts = [o.strip() for o in val.split("|")]
        if any(not o for o in opts):
            raise ConfigError(f"space {raw!r}: an empty option; write diversity=pairwise|facility")
        if len(set(opts)) != len(opts):
            raise ConfigError(f"space {raw!r}: an option is listed twice")
        return Item(name, per, "choice", options=opts)
    if "|" in val:
        raise ConfigError(f"space {raw!r}: {name} is a number; give a range LO:HI or one value, not a choice")
    parts = val.split(":")
    if len(parts) == 1:
        v = _number(parts[0], raw)
        return Item(name, per, "value", lo=v, hi=v)
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "log"):
        raise ConfigError(f"space {raw!r}: write {name}=LO:HI or {name}=LO:HI:log")
    lo, hi = _number(parts[0], raw), _number(parts[1], raw)
    if not lo < hi:
        raise ConfigError(
            f"space {raw!r}: the range {lo:g}:{hi:g} is empty (LO must be below HI); for one value write {name}={lo:g}"
        )
    if len(parts) == 3 and lo <= 0:
        raise ConfigError(f"space {raw!r}: a log range needs LO > 0")
    return Item(name, per, "range", lo=lo, hi=hi, log=len(parts) == 3)


def parse_space(text: str, method: str, check=None) -> list[Item]:
    """The items of ``--space`` for ``method``, in order; one-line ConfigError on bad text.

    ``check(name, value)`` raises ConfigError (or ValueError) for a value ``select`` would refuse;
    it sees each end of a range and every option of a choice."""
    if method not in NAMES:
        raise ConfigError(f"search takes method {', '.join(NAMES)}; got {method!r}")
    raws = [r for r in str(text).split(",") if r.strip()]
    if not raws:
        raise ConfigError(f"space is empty; e.g. --space {DEFAULT_SPACE[method]!r}")
    items, seen = [], set()
    for raw in raws:
        it = _parse_item(raw, method)
        if it.name in seen:
            raise ConfigError(f"space {raw!r}: {it.name} is given twice")
        seen.add(it.name)
        if check is not None and it.kind != "weights":
            for v in it.options if it.kind == "choice" else sorted({it.lo, it.hi}):
                try:
                    check(it.name, v)
                except (ConfigError, ValueError) as e:  # (a value of the space, not of the flag select names)
                    said = str(e).replace(f"{it.name} (--{it.name.replace('_', '-')})", it.name, 1)
                    raise ConfigError(f"space {raw.strip()!r}: {said}") from None
        items.append(it)
    if all(it.kind == "value" or (it.kind == "choice" and len(it.options) == 1) for it in items):
        raise ConfigError(f"space {text!r} fixes every value: give at least one range or choice to search")
    return items


#: the ratio DATAMASK's default space searches when the user fixes no budget (``--ratio``, ``--budget``, ``--tokens``)
RATIO_RANGE = "ratio=0.05:0.5"


def check_prune(items, ratio) -> None:
    """A ``prune`` whose lowest value leaves fewer rows than the highest ratio keeps is refused."""
    got = {it.name: it for it in items}
    p, r = got.get("prune"), got.get("ratio")
    top = r.hi if r is not None else ratio
    if p is not None and top is not None and p.lo + float(top) > 1.0 + 1e-12:
        raise ConfigError(
            f"space {p.text()!r}: pruning {p.lo:g} of the rows leaves fewer than the ratio {float(top):g} keeps; "
            f"keep prune + ratio <= 1 (e.g. prune=0:{max(0.0, 1.0 - float(top)):g})"
        )


def default_space(method: str, ratio="free") -> str:
    """``--space``'s default. DATAMASK's: ``ratio`` "free" adds :data:`RATIO_RANGE`, a number caps ``prune``
    at ``1 - ratio``, None (a budget in rows or tokens) leaves ``prune`` at the base recipe's."""
    text = DEFAULT_SPACE[method]
    if method == "quadmix":
        return text
    if ratio == "free":
        return f"{text},{RATIO_RANGE}"
    cap = min(0.9, round(1.0 - float(ratio), 6)) if ratio is not None else 0.0
    return text.replace("prune=0:0.9", f"prune=0:{cap:g}") if cap > 0 else text.replace(",prune=0:0.9", "")


# ---------------------------------------------------------------------- the expanded space
@dataclass
class Space:
    """The parameters of one search, each a slice of the unit cube's coordinates; ``ratio``: the base
    recipe's (None: a budget in rows or tokens); ``prune_cap``: ratios to the largest ``prune`` each
    leaves room for (None: ``1 - ratio``; in tokens ``TokenCounts.room``, :mod:`datamask.pipeline.split_job`)."""

    params: list
    method: str
    ratio: float | None = None
    prune_cap: object = None

    def cap_at(self, ratios) -> np.ndarray:
        r = np.asarray(ratios, dtype=float)  # the largest prune that leaves each ratio its rows (or tokens)
        return 1.0 - r if self.prune_cap is None else np.asarray(self.prune_cap(r), dtype=float)

    @classmethod
    def build(cls, items, method: str, domains=(), components=(), ratio=None, prune_cap=None) -> Space:
        """Expand ``items`` for the input's ``domains`` (sorted, as strings) and quality ``components``."""
        check_prune(items, ratio)
        params = []
        for it in items:
            doms = [str(d) for d in domains] if it.per_domain else None
            if it.per_domain and not domains:
                raise ConfigError(f"space {it.text()!r}: the input has no domain column to take one value per domain")
            if it.kind in ("range", "value"):
                params.append(Range(it.name, it.lo, it.hi, it.log, doms))
            elif it.kind == "choice":
                params.append(Choice(it.name, list(it.options)))
            else:
                comps = list(components) if it.options == ["auto"] else list(it.options)
                missing = [c for c in comps if c not in components]
                if missing or len(comps) < 2:
                    have = ", ".join(components) or "none"
                    raise ConfigError(
                        f"space {it.text()!r}: merge weights need two or more quality component columns of the "
                        f"input (quality_<name>; present: {have})"
                        + (f"; {', '.join(missing)} missing" if missing else "")
                    )
                params.append(Weights(it.name, comps, doms))
        return cls(params, method, None if ratio is None else float(ratio), prune_cap)

    def feasible(self, U) -> np.ndarray:
        """``U`` with each point's ``prune`` coordinate lowered to where its value is :meth:`cap_at` its
        ratio (pruning must leave what the ratio keeps; at that cap the selection is about the top by quality)."""
        got = {p.name: (p, s) for p, s in self._slices()}
        (p, s), (r, rs) = got.get("prune", (None, None)), got.get("ratio", (None, None))
        if p is None or not p.width or (r is None and self.ratio is None):
            return U
        ratios = r.values(U[:, rs])[:, 0] if r is not None else np.full(U.shape[0], self.ratio)
        cap = np.clip(self.cap_at(ratios), p.lo, p.hi)
        c = np.log(cap / p.lo) / np.log(p.hi / p.lo) if p.log else (cap - p.lo) / (p.hi - p.lo)
        U = np.array(U, dtype=float, copy=True)
        U[:, s.start] = np.minimum(U[:, s.start], c)
        return U

    def _cap(self, recipe: dict) -> dict:
        r = recipe.get("ratio", self.ratio)
        if isinstance(recipe.get("prune"), float) and r is not None:
            recipe["prune"] = min(recipe["prune"], max(0.0, float(self.cap_at([float(r)])[0])))
        return recipe

    @property
    def width(self) -> int:
        return sum(p.width for p in self.params)

    def _slices(self):
        i = 0
        for p in self.params:
            yield p, slice(i, i + p.width)
            i += p.width

    def design(self, n: int, seed: int) -> np.ndarray:
        """``n`` points of the unit cube: scrambled Sobol, seeded (the first ``n`` of the sequence)."""
        import warnings

        from scipy.stats import qmc

        with warnings.catch_warnings():  # balance is a property of 2^m points; the first n still fill
            warnings.simplefilter("ignore", UserWarning)
            return self.feasible(qmc.Sobol(d=self.width, scramble=True, seed=int(seed)).random(int(n)))

    @property
    def columns(self) -> list:
        return [c for p in self.params for c in p.columns]

    def frame(self, U):
        """One row per point, one column per parameter value (``omega[3]``, ``weights.quality_a``)."""
        import pandas as pd

        parts = {}
        for p, s in self._slices():
            v = p.values(U[:, s])
            for j, c in enumerate(p.columns):
                parts[c] = v[:, j]
        return pd.DataFrame(parts)

    def recipe(self, u) -> dict:
        """The recipe of one point: ``{name: value}`` (a float, an option, or a dict per domain/component)."""
        u = np.asarray(u, dtype=float).reshape(1, -1)
        return self._cap({p.name: p.value_of(p.values(u[:, s])[0]) for p, s in self._slices()})

    def features(self, U) -> np.ndarray:
        """What the regressors see: each coordinate (a range, on its own scale in [0, 1]), one-hot
        choices and the merge weights."""
        cols = [p.features(U[:, s]) for p, s in self._slices() if p.width]
        return np.concatenate(cols, axis=1) if cols else np.zeros((U.shape[0], 0))

    def recipe_features(self, recipe: dict) -> np.ndarray:
        """The regressors' features of one recipe (as :meth:`features` gives them for a point)."""
        parts = [p.features_of(recipe[p.name]) for p in self.params if p.width]
        return np.concatenate(parts) if parts else np.zeros(0)

    def average(self, U) -> dict:
        """The recipe of the best candidates ``U`` (best first): the most frequent combination of
        choices among them (ties: the one of the best candidate), then every number averaged over
        the candidates that have it (ranges at their mean coordinate, weights at their mean)."""
        U = np.atleast_2d(np.asarray(U, dtype=float))
        choices = [(p, s) for p, s in self._slices() if isinstance(p, Choice) and p.width]
        if choices:
            keys = [tuple(int(p.index(U[i : i + 1, s])[0]) for p, s in choices) for i in range(U.shape[0])]
            counts = {k: keys.count(k) for k in keys}
            mode = next(k for k in keys if counts[k] == max(counts.values()))
            U = U[[k == mode for k in keys]]
        out = {
            p.name: p.options[int(p.index(U[:1, s])[0])] if isinstance(p, Choice) else p.average(U[:, s])
            for p, s in self._slices()
        }
        return self._cap(out)

    def describe(self) -> str:
        parts = []
        for p in self.params:
            if isinstance(p, Choice):
                parts.append(f"{p.name}={'|'.join(p.options)}")
            elif isinstance(p, Weights):
                parts.append(f"{p.name}{'[domain]' if p.domains else ''}={'|'.join(p.components)}")
            else:
                key = f"{p.name}[domain]" if p.domains else p.name
                parts.append(f"{key}={p.lo:g}" if p.lo == p.hi else f"{key}={p.lo:g}:{p.hi:g}{':log' if p.log else ''}")
        return ",".join(parts)
