"""QuaDMix sampling (Liu et al., 2025), as a selection method.

``quadmix_*``
    QuaDMix (Liu et al., 2025) sampling. Per domain ``m`` (default: the k-means cluster),
    the merged quality of each document is turned into a token-weighted percentile ``r``
    *within its domain* (``r`` near 0 = best; a document's ``r`` is the share of the
    domain's tokens in better documents plus half its own tie group). The expected number
    of copies of a document is QuaDMix's sigmoid sampling function with a cut-off::

        S_m(r) = (2 / (1 + exp(lam_m * (r - omega_m)))) ** eta_m + eps_m   for r <  omega_m
        S_m(r) = 0                                                         for r >= omega_m

    ``omega_m`` is the cut-off (the best ``omega_m`` share of the domain's tokens is
    eligible), ``lam_m >= 0`` the steepness, ``eta_m >= 0`` the strength of oversampling
    (the best documents get up to ``2 ** eta_m + eps_m`` copies) and ``eps_m >= 0`` the
    floor just before the cut-off: ``S_m(r) -> 1 + eps_m`` as ``r -> omega_m`` from the
    left. ``S_m`` is non-increasing in ``r``. The parametrisation is ours; it follows
    QuaDMix's shape (a per-domain sigmoid of the quality percentile, truncated at a
    cut-off) with exactly these properties.

    Budget: the expected total ``sum_i S(r_i)`` (or ``sum_i S(r_i) * n_tokens_i`` for a
    token budget) is generally not the budget, so every expected count is multiplied by
    one global factor ``c = budget / sum`` (:func:`quadmix_scale_to_budget`). That keeps
    the shape and the domain ratios and makes the expected total equal the budget.
    Realised copies are ``floor(c S) + Bernoulli(c S - floor(c S))`` (unbiased).

    As a ``select`` method (sets, not copies) QuaDMix draws ``S`` distinct rows without
    replacement with probability proportional to the expected count (Gumbel top-S over
    ``log S(r)``), filling from the best remaining rows if fewer than ``S`` are eligible.
"""

from __future__ import annotations

import numpy as np

from ..core.backend import to_numpy
from ..core.budget import check_rows
from .registry import fill_tokens, register, split_clusters

__all__ = [
    "QuadMixParams",
    "quadmix_params",
    "quadmix_merged_quality",
    "quadmix_percentile",
    "quadmix_sampling",
    "quadmix_expected_counts",
    "quadmix_scale_to_budget",
    "quadmix_sample",
    "quadmix_select",
    "select_quadmix",
]


class QuadMixParams:
    """Per-domain QuaDMix parameters as arrays indexed by domain position.

    ``lam`` (steepness), ``omega`` (cut-off percentile), ``eta`` (oversampling strength),
    ``eps`` (value above 1 at the cut-off). Build with :func:`quadmix_params`.
    """

    FIELDS = ("lam", "omega", "eta", "eps")
    DEFAULT = {"lam": 10.0, "omega": 0.5, "eta": 1.0, "eps": 0.0}

    def __init__(self, domains, lam, omega, eta, eps):
        self.domains = list(domains)
        self.lam, self.omega = np.asarray(lam, float), np.asarray(omega, float)
        self.eta, self.eps = np.asarray(eta, float), np.asarray(eps, float)
        for name in self.FIELDS:
            v = getattr(self, name)
            if v.shape != (len(self.domains),):
                raise ValueError(f"{name} must have one value per domain ({len(self.domains)}), got {v.shape}")
        if (self.lam < 0).any() or (self.eta < 0).any() or (self.eps < 0).any():
            raise ValueError("QuaDMix lam, eta and eps must be >= 0")
        if ((self.omega < 0) | (self.omega > 1)).any():
            raise ValueError("QuaDMix omega (cut-off percentile) must be in [0, 1]")

    def index(self, domain):
        """Positions of the values of ``domain`` (array) in ``self.domains``."""
        lookup = {d: i for i, d in enumerate(self.domains)}
        try:
            return np.fromiter((lookup[d] for d in np.asarray(domain).tolist()), dtype=np.int64, count=len(domain))
        except KeyError as e:
            raise ValueError(f"domain {e.args[0]!r} has no QuaDMix parameters (known: {self.domains[:10]})") from None


def quadmix_params(domains, spec=None) -> QuadMixParams:
    """Parameters for ``domains`` from a spec dict or a YAML file.

    The spec is ``{"default": {lam, omega, eta, eps}, "domains": {DOMAIN: {...}}}``; any
    key missing for a domain falls back to ``default``, then to
    ``QuadMixParams.DEFAULT``. A string is read as a YAML file of that shape.
    """
    if isinstance(spec, (str, bytes)) or hasattr(spec, "read_text"):
        from pathlib import Path

        import yaml

        spec = yaml.safe_load(Path(spec).read_text()) or {}
    spec = dict(spec or {})
    unknown = set(spec) - {"default", "domains"}
    if unknown:
        raise ValueError(f"QuaDMix parameters: unknown key(s) {sorted(unknown)}; use 'default' and 'domains'")
    base = dict(QuadMixParams.DEFAULT, **(spec.get("default") or {}))
    per = {str(k): v for k, v in (spec.get("domains") or {}).items()}
    domains = list(domains)
    vals = {f: [] for f in QuadMixParams.FIELDS}
    for d in domains:
        p = dict(base, **(per.get(str(d)) or {}))
        bad = set(p) - set(QuadMixParams.FIELDS)
        if bad:
            raise ValueError(f"QuaDMix parameters for domain {d!r}: unknown key(s) {sorted(bad)}")
        for f in QuadMixParams.FIELDS:
            vals[f].append(float(p[f]))
    return QuadMixParams(domains, **vals)


def quadmix_merged_quality(scores, weights=None, domain=None):
    """Merge quality scores: each column min-max normalised over the rows, then a
    weighted sum (weights per column, or per domain as a dict ``{domain: weights}``).
    A 1-D ``scores`` is returned normalised."""
    S = np.asarray(scores, dtype=np.float64)
    if S.ndim == 1:
        S = S[:, None]
    lo, hi = S.min(axis=0), S.max(axis=0)
    Z = (S - lo) / np.where(hi > lo, hi - lo, 1.0)
    if weights is None:
        return Z.mean(axis=1)
    if isinstance(weights, dict):
        if domain is None:
            raise ValueError("per-domain weights need the domain array")
        W = np.stack([np.asarray(weights[d], float) for d in np.asarray(domain).tolist()])
        return (Z * W).sum(axis=1)
    return Z @ np.asarray(weights, float)


def quadmix_percentile(quality, domain, n_tokens=None):
    """Token-weighted percentile of each row's quality within its domain, in (0, 1).

    ``r_i = (tokens of better rows of the domain + tokens of i's tie group / 2) /
    tokens of the domain``; ``r`` near 0 is the best. Without ``n_tokens`` every row
    weighs 1.
    """
    import pandas as pd

    q = np.asarray(quality, dtype=np.float64)
    n = q.shape[0]
    t = np.ones(n) if n_tokens is None else np.asarray(n_tokens, dtype=np.float64)
    if (t < 0).any():
        raise ValueError("n_tokens must be >= 0")
    df = pd.DataFrame({"d": np.asarray(domain), "q": q, "t": t})
    ties = df.groupby(["d", "q"], sort=False)["t"].sum().rename("tie").reset_index()
    ties = ties.sort_values(["d", "q"], ascending=[True, False], kind="stable")
    ties["better"] = ties.groupby("d")["tie"].cumsum() - ties["tie"]
    ties["total"] = ties.groupby("d")["tie"].transform("sum")
    m = df.merge(ties, on=["d", "q"], how="left", sort=False)
    total = m["total"].to_numpy()
    r = (m["better"].to_numpy() + 0.5 * m["tie"].to_numpy()) / np.where(total > 0, total, 1.0)
    return r


def quadmix_sampling(r, lam, omega, eta, eps):
    """QuaDMix's sampling function (module doc): expected copies at percentile ``r``.

    All arguments broadcast (per-row parameters come from ``QuadMixParams``).
    """
    r = np.asarray(r, dtype=np.float64)
    lam, omega = np.asarray(lam, float), np.asarray(omega, float)
    eta, eps = np.asarray(eta, float), np.asarray(eps, float)
    z = np.clip(lam * (r - omega), -700.0, 700.0)
    val = (2.0 / (1.0 + np.exp(z))) ** eta + eps
    return np.where(r < omega, val, 0.0)


def quadmix_expected_counts(quality, domain, params: QuadMixParams, n_tokens=None):
    """Expected copies of each row: ``S_m(r)`` with the row's domain parameters."""
    r = quadmix_percentile(quality, domain, n_tokens)
    i = params.index(domain)
    return quadmix_sampling(r, params.lam[i], params.omega[i], params.eta[i], params.eps[i])


def quadmix_scale_to_budget(expected, budget: float, n_tokens=None):
    """Multiply every expected count by one factor so the expected total equals the
    budget: documents (``sum c S_i = budget``) or tokens (``sum c S_i t_i = budget``)."""
    s = np.asarray(expected, dtype=np.float64)
    total = float((s * (1.0 if n_tokens is None else np.asarray(n_tokens, float))).sum())
    if total <= 0:
        raise ValueError("every expected count is 0 (all rows above their domain's cut-off omega); raise omega")
    return s * (float(budget) / total)


def quadmix_sample(expected, seed=0):
    """Realised copies ``floor(S) + Bernoulli(S - floor(S))`` (int64), unbiased."""
    s = np.asarray(expected, dtype=np.float64)
    base = np.floor(s)
    u = np.random.default_rng(seed).random(s.shape[0])
    return (base + (u < (s - base))).astype(np.int64)


def quadmix_select(quality, domain, params: QuadMixParams, S: int, n_tokens=None, seed=0, tokens=None):
    """A set of ``S`` distinct rows: sampled without replacement with probability
    proportional to the expected count (Gumbel top-S), filled from the best remaining
    percentiles when fewer than ``S`` rows are eligible. Returns a bool mask.

    ``tokens``: a token budget instead (``S`` ignored, ``n_tokens`` needed): the rows of
    the same draw order are taken while they fit."""
    q = np.asarray(quality, dtype=np.float64)
    n = q.shape[0]
    if tokens is None:
        check_rows(S, n)
    r = quadmix_percentile(q, domain, n_tokens)
    i = params.index(domain)
    s = quadmix_sampling(r, params.lam[i], params.omega[i], params.eta[i], params.eps[i])
    rng = np.random.default_rng(seed)
    with np.errstate(divide="ignore"):
        keys = np.log(s) + rng.gumbel(size=n)
    keys = np.where(s > 0, keys, -np.inf)
    order = np.lexsort((r, -keys))  # eligible by key, then the rest by percentile
    if tokens is not None:
        return fill_tokens(order, n_tokens, tokens)
    mask = np.zeros(n, dtype=bool)
    mask[order[:S]] = True
    return mask


@register("quadmix")
def select_quadmix(E, q, cfg, seed, budget, table=None):
    """QuaDMix as a set of S rows (or rows within a token budget: QuaDMix's token-weighted
    percentiles and sampling order, filled to the budget); domains from the config's domain
    column (its raw values key the YAML parameters) or per-split k-means."""
    col = getattr(cfg, "domain_column", None)
    if table is not None and col and col in table.schema.names:
        domain = table.column(col).to_numpy(zero_copy_only=False)
    else:
        domain, _ = split_clusters(E, cfg, seed)
    params = quadmix_params(np.unique(domain).tolist(), getattr(cfg, "quadmix_params", None))
    n_tokens = None if budget.lengths is None else budget.lengths.astype(np.float64)
    return quadmix_select(
        to_numpy(q), domain, params, budget.rows, n_tokens=n_tokens, seed=seed % 2**63, tokens=budget.split_tokens
    )
