"""Baseline selections DATAMASK is compared with (DESIGN.md section 6).

Pure array functions (numpy, or cupy where noted), then their registration as
``datamask select --method`` methods.

``topk``
    The ``S`` rows of highest quality (FineWeb-Edu / DCLM style filtering).
``random_subset``
    ``S`` rows uniformly at random.
``semdedup``
    SemDeDup: k-means, then within each cluster visit the rows in order of distance to
    the centroid (farthest first by default, as in the SemDeDup paper, which keeps the
    least prototypical member of a duplicate group) and drop a row whose cosine to an
    *earlier kept* row exceeds ``1 - eps``. The visit is blocked: a block of ``block``
    rows is compared with the rows already kept, ``chunk`` of them at a time, and then
    resolved in order inside the block, so memory stays at ``block * max(block, chunk)``
    floats whatever the cluster size. Cosines are float32, so an ``eps`` below
    ``COS_TOL`` (1e-6) acts as ``COS_TOL``: exact duplicates are removed for any
    ``eps > 0``. The first row of every cluster's order is always kept.
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

As ``datamask select --method`` methods, SemDeDup and QuaDMix take their clusters/domains
from ``--domain-column`` (default ``cluster``, as written by ``datamask cluster``) and fall
back to k-means on the partition (``--n-clusters``); QuaDMix weighs percentiles by
``--tokens-column`` when present and reads ``--quadmix-params`` (YAML).
"""
from __future__ import annotations

import math
import time

import numpy as np

from .backend import get_namespace, to_numpy

__all__ = [
    "COS_TOL",
    "topk",
    "random_subset",
    "semdedup",
    "semdedup_eps_for_budget",
    "QuadMixParams",
    "quadmix_params",
    "quadmix_merged_quality",
    "quadmix_percentile",
    "quadmix_sampling",
    "quadmix_expected_counts",
    "quadmix_scale_to_budget",
    "quadmix_sample",
    "quadmix_select",
]

COS_TOL = 1e-6


# ---------------------------------------------------------------------- top-k, random
def topk(quality, S: int):
    """Bool mask of the ``S`` rows of highest quality (ties: lower row index first)."""
    q = to_numpy(quality).astype(np.float64)
    n = q.shape[0]
    _check_budget(S, n)
    mask = np.zeros(n, dtype=bool)
    mask[np.argsort(-q, kind="stable")[:S]] = True
    return mask


def random_subset(n: int, S: int, seed=0):
    """Bool mask of ``S`` of ``n`` rows drawn uniformly without replacement."""
    _check_budget(S, n)
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).choice(n, size=S, replace=False)] = True
    return mask


def _check_budget(S, n):
    if int(S) != S or not 1 <= int(S) <= n:
        raise ValueError(f"budget must be an integer in [1, {n}] (the number of rows), got {S}")


# ---------------------------------------------------------------------- SemDeDup
def _unit(X, xp):
    X = X.astype(xp.float32)
    return X / xp.sqrt((X * X).sum(axis=1, keepdims=True))


def _semdedup_order(E, cluster, centroids, order, xp):
    """Row indices grouped by cluster, each cluster sorted by cosine to its centroid."""
    C = _unit(xp.asarray(centroids), xp)
    cos = (E * C[cluster]).sum(axis=1)
    key = cos if order == "far" else -cos  # far: lowest cosine (largest distance) first
    # lexsort: last key is primary
    idx = xp.lexsort(xp.stack([xp.arange(E.shape[0]), key, cluster.astype(xp.float64)]))
    return idx


def semdedup(E, cluster, centroids, eps: float, order="far", block=1024, chunk=8192):
    """SemDeDup keep-mask.

    Parameters
    ----------
    E : (N, d) float array (numpy or cupy); rows are L2-normalised here
    cluster : (N,) int array of cluster ids in ``[0, k)``
    centroids : (k, d) array
    eps : float >= 0
        A row is dropped when its cosine to an earlier kept row of its cluster exceeds
        ``1 - eps`` (``0`` keeps every row).
    order : {"far", "near"}
        Visit each cluster farthest from (default) or nearest to its centroid first.
    block, chunk : int
        Rows resolved together, and kept rows compared at once (memory bound).

    Returns
    -------
    (N,) bool numpy array, True = kept.
    """
    xp = get_namespace(E)
    if order not in ("far", "near"):
        raise ValueError(f"order must be 'far' or 'near', got {order!r}")
    eps = float(eps)
    if not eps >= 0.0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    n = E.shape[0]
    cluster = xp.asarray(cluster).astype(xp.int64)
    if cluster.shape != (n,):
        raise ValueError(f"cluster must have shape ({n},), got {cluster.shape}")
    keep = np.ones(n, dtype=bool)
    if eps == 0.0 or n == 0:
        return keep
    thr = np.float32(1.0 - max(eps, COS_TOL))
    E = _unit(E, xp)
    idx = _semdedup_order(E, cluster, centroids, order, xp)
    cl_sorted = to_numpy(cluster[idx])
    bounds = np.flatnonzero(np.diff(cl_sorted)) + 1
    starts = np.concatenate([[0], bounds])
    stops = np.concatenate([bounds, [n]])
    idx_np = to_numpy(idx)
    for a, b in zip(starts, stops):
        rows = idx_np[a:b]
        kept_rows = []  # arrays of kept row indices (in order)
        kept_E = None  # (K, d) on the device
        for s0 in range(0, rows.shape[0], block):
            br = rows[s0:s0 + block]
            B = E[xp.asarray(br)]
            alive = np.ones(br.shape[0], dtype=bool)
            if kept_E is not None:
                for k0 in range(0, kept_E.shape[0], chunk):
                    hit = ((B @ kept_E[k0:k0 + chunk].T) > thr).any(axis=1)
                    alive &= ~to_numpy(hit)
            A = to_numpy(B @ B.T) > thr  # within-block similarities
            for i in range(br.shape[0]):
                if alive[i]:
                    alive[i + 1:] &= ~A[i, i + 1:]
            new = br[alive]
            keep[br[~alive]] = False
            if new.shape[0]:
                kept_rows.append(new)
                add = E[xp.asarray(new)]
                kept_E = add if kept_E is None else xp.concatenate([kept_E, add])
    return keep


def _max_cos_to_earlier(E, cluster, centroids, order="far", block=1024, chunk=8192):
    """For every row, the largest cosine to any *earlier* row of its cluster's order
    (``-inf`` for a cluster's first row). One blocked pass, like :func:`semdedup`.

    A row compared with every earlier row is dropped at least as often as one compared
    with the earlier *kept* rows only, so ``#{i: M_i <= 1 - eps}`` is a lower bound of the
    number SemDeDup keeps: its quantile gives the search a tight starting bracket.
    """
    xp = get_namespace(E)
    n = E.shape[0]
    cluster = xp.asarray(cluster).astype(xp.int64)
    E = _unit(E, xp)
    idx = to_numpy(_semdedup_order(E, cluster, centroids, order, xp))
    cl_sorted = to_numpy(cluster)[idx]
    bounds = np.flatnonzero(np.diff(cl_sorted)) + 1
    M = np.full(n, -np.inf, dtype=np.float32)
    for a, b in zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [n]])):
        rows = idx[a:b]
        for s0 in range(0, rows.shape[0], block):
            br = rows[s0:s0 + block]
            B = E[xp.asarray(br)]
            best = np.full(br.shape[0], -np.inf, dtype=np.float32)
            for k0 in range(0, s0, chunk):
                prev = E[xp.asarray(rows[k0:min(k0 + chunk, s0)])]
                best = np.maximum(best, to_numpy((B @ prev.T).max(axis=1)))
            G = to_numpy(B @ B.T)
            G[np.triu_indices(br.shape[0])] = -np.inf  # earlier rows of the block only
            if br.shape[0] > 1:
                best = np.maximum(best, G.max(axis=1))
            M[br] = best
    return M


def semdedup_eps_for_budget(E, cluster, centroids, budget: int, order="far", tol=None, max_iter=20,
                            eps_max=1.0, **kw):
    """Search ``eps`` so that SemDeDup keeps about ``budget`` rows.

    The number kept falls (almost always monotonically) as ``eps`` grows. A safeguarded
    false-position search (interpolate the kept count linearly between the bracket ends,
    but always cut at least 10% off the bracket) needs about half the SemDeDup passes of
    plain bisection. Returns ``(eps, keep_mask)`` for the largest ``eps`` found that
    still keeps at least ``budget`` rows, stopping within ``tol`` rows (default 1% of the
    budget; the caller trims the surplus) or after ``max_iter`` passes. If even
    ``eps_max`` keeps at least ``budget`` rows, that is returned.
    """
    n = E.shape[0]
    _check_budget(budget, n)
    tol = max(1, int(round(0.01 * budget))) if tol is None else int(tol)
    lo, hi = 0.0, float(eps_max)
    k_lo, k_hi = n, None
    best = (0.0, np.ones(n, dtype=bool))
    keep_hi = semdedup(E, cluster, centroids, hi, order=order, **kw)
    k_hi = int(keep_hi.sum())
    if k_hi >= budget:
        return hi, keep_hi
    if n - budget <= tol:
        return best
    # starting bracket: the eps at which "drop if close to ANY earlier row" keeps the budget
    # keeps at least the budget under the kept-rows rule
    M = np.sort(_max_cos_to_earlier(E, cluster, centroids, order,
                                    **{k: v for k, v in kw.items() if k in ("block", "chunk")}))
    start = float(1.0 - M[budget - 1]) if np.isfinite(M[budget - 1]) else 0.0
    if 0.0 < start < hi:
        keep = semdedup(E, cluster, centroids, start, order=order, **kw)
        k = int(keep.sum())
        if k >= budget:
            lo, k_lo, best = start, k, (start, keep)
            if k - budget <= tol:
                return best
        else:  # the bound failed (float rounding at the threshold): plain search from 0
            hi, k_hi = start, k
    for _ in range(int(max_iter)):
        frac = (k_lo - budget) / max(k_lo - k_hi, 1)
        frac = min(max(frac, 0.1), 0.9)
        mid = lo + frac * (hi - lo)
        keep = semdedup(E, cluster, centroids, mid, order=order, **kw)
        k = int(keep.sum())
        if k >= budget:
            lo, k_lo, best = mid, k, (mid, keep)
            if k - budget <= tol:
                break
        else:
            hi, k_hi = mid, k
    return best


# ---------------------------------------------------------------------- QuaDMix
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
        import yaml
        from pathlib import Path

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


def quadmix_select(quality, domain, params: QuadMixParams, S: int, n_tokens=None, seed=0):
    """A set of ``S`` distinct rows: sampled without replacement with probability
    proportional to the expected count (Gumbel top-S), filled from the best remaining
    percentiles when fewer than ``S`` rows are eligible. Returns a bool mask."""
    q = np.asarray(quality, dtype=np.float64)
    n = q.shape[0]
    _check_budget(S, n)
    r = quadmix_percentile(q, domain, n_tokens)
    i = params.index(domain)
    s = quadmix_sampling(r, params.lam[i], params.omega[i], params.eta[i], params.eps[i])
    rng = np.random.default_rng(seed)
    with np.errstate(divide="ignore"):
        keys = np.log(s) + rng.gumbel(size=n)
    keys = np.where(s > 0, keys, -np.inf)
    order = np.lexsort((r, -keys))  # eligible by key, then the rest by percentile
    mask = np.zeros(n, dtype=bool)
    mask[order[:S]] = True
    return mask


# ---------------------------------------------------------------------- select methods
def _partition_clusters(E, cfg, seed, table=None):
    """(labels, centroids) for a partition: the config's domain column when the table has
    it (centroids are the members' normalised means), else k-means with ``n_clusters``
    (default ``sqrt(rows / 10)``) fitted on the partition."""
    from .clustering import assign, fit_kmeans

    col = getattr(cfg, "domain_column", None)
    if table is not None and col and col in table.schema.names:
        raw = table.column(col).to_numpy(zero_copy_only=False)
        _, lab = np.unique(raw, return_inverse=True)
        X = to_numpy(E).astype(np.float32)
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        cent = np.zeros((int(lab.max()) + 1, X.shape[1]), dtype=np.float64)
        np.add.at(cent, lab, X)
        return lab.astype(np.int64), cent.astype(np.float32)
    n = E.shape[0]
    k = getattr(cfg, "n_clusters", None) or max(1, int(round(math.sqrt(n / 10))))
    cent = fit_kmeans(E, min(int(k), n), seed=seed % 2**31)
    return to_numpy(assign(E, cent)[0]).astype(np.int64), cent


def _tokens(cfg, table):
    col = getattr(cfg, "tokens_column", None)
    if table is not None and col and col in table.schema.names:
        return table.column(col).to_numpy(zero_copy_only=False).astype(np.float64)
    return None


def _selection(mask, E, q, cfg, seed, t0, n_steps=0):
    from .selection import Selection, score

    mask = np.asarray(to_numpy(mask), dtype=bool)
    return Selection(mask=mask, logits=None, objective=score(E, q, mask, cfg, seed), budget=int(mask.sum()),
                     n_steps=n_steps, seconds=time.perf_counter() - t0)


def _budget(E, cfg):
    from .selection import budget_for

    S = budget_for(E.shape[0], cfg)
    _check_budget(S, E.shape[0])
    return S


def select_topk(E, q, cfg, seed, callback=None):
    t0 = time.perf_counter()
    return _selection(topk(q, _budget(E, cfg)), E, q, cfg, seed, t0)


def select_random(E, q, cfg, seed, callback=None):
    t0 = time.perf_counter()
    return _selection(random_subset(E.shape[0], _budget(E, cfg), seed % 2**63), E, q, cfg, seed, t0)


def select_semdedup(E, q, cfg, seed, callback=None, table=None):
    """SemDeDup with ``eps`` from the config, or tuned to the budget when it is None;
    a surplus over the budget is trimmed at random (seeded)."""
    t0 = time.perf_counter()
    S = _budget(E, cfg)
    cluster, centroids = _partition_clusters(E, cfg, seed, table)
    eps = getattr(cfg, "eps", None)
    if eps is None:
        eps, keep = semdedup_eps_for_budget(E, cluster, centroids, S)
    else:
        keep = semdedup(E, cluster, centroids, float(eps))
    rows = np.flatnonzero(keep)
    if rows.shape[0] < S:
        raise ValueError(f"SemDeDup with eps={eps:g} keeps {rows.shape[0]} rows, fewer than the budget {S}; "
                         "lower --eps or leave it unset to tune it to the budget")
    if rows.shape[0] > S:
        rows = np.random.default_rng(seed % 2**63).choice(rows, size=S, replace=False)
    mask = np.zeros(E.shape[0], dtype=bool)
    mask[rows] = True
    return _selection(mask, E, q, cfg, seed, t0)


def select_quadmix(E, q, cfg, seed, callback=None, table=None):
    """QuaDMix as a set of S rows; domains from the config's domain column (its raw values
    key the YAML parameters) or per-partition k-means."""
    t0 = time.perf_counter()
    S = _budget(E, cfg)
    col = getattr(cfg, "domain_column", None)
    if table is not None and col and col in table.schema.names:
        domain = table.column(col).to_numpy(zero_copy_only=False)
    else:
        domain, _ = _partition_clusters(E, cfg, seed)
    params = quadmix_params(np.unique(domain).tolist(), getattr(cfg, "quadmix_params", None))
    mask = quadmix_select(to_numpy(q), domain, params, S, n_tokens=_tokens(cfg, table), seed=seed % 2**63)
    return _selection(mask, E, q, cfg, seed, t0)


select_semdedup.wants_table = True
select_quadmix.wants_table = True


def _solver_method(solver):
    def fn(E, q, cfg, seed, callback=None):
        from .selection import REGISTRY

        return REGISTRY["datamask"](E, q, cfg.replace(solver=solver), seed, callback)

    fn.__name__ = f"select_{solver}"
    fn.prunes = True  # runs DataMask, which prunes
    return fn


select_greedy = _solver_method("greedy")
select_relaxed = _solver_method("relaxed")

BASELINE_METHODS = {
    "topk": select_topk,
    "random": select_random,
    "semdedup": select_semdedup,
    "quadmix": select_quadmix,
    "greedy": select_greedy,
    "relaxed": select_relaxed,
}


def register_methods():
    """Add the baselines to ``datamask.selection``'s method registry."""
    from .selection import register

    for name, fn in BASELINE_METHODS.items():
        register(name)(fn)


register_methods()
