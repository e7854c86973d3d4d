"""Frank-Wolfe on the relaxed mask (beyond the paper).

Relax the mask to x in [0, 1]^n with sum(x) = S (the capped simplex). For unit rows the
pairwise objective

    F(x) = lam q.x / S - (1 - lam) (|E^T x|^2 - S) / (S (S - 1))

is concave in x, and so is DiSF once the standardisation is fixed over the candidate rows
(a sum of squares of linear functions of x, negated). Frank-Wolfe solves it: the linear
step over the capped simplex is the indicator of the top S entries of the gradient, and F is
quadratic along the step, so the line search has a closed form. Each iteration costs a few
O(n d) products (O(n d^2) for DiSF). The selection is the top S of x, or the last vertex,
whichever scores better on the exact objective (picked by the caller).

Facility location is submodular, not concave: it has no such relaxation here.
"""
from __future__ import annotations

from .backend import get_namespace
from .greedy import standardize

__all__ = ["frank_wolfe"]


def _top_indicator(v, S, xp):
    s = xp.zeros(v.shape[0], dtype=xp.float64)
    if S >= v.shape[0]:
        s[:] = 1.0
    else:
        s[xp.argpartition(-v, S - 1)[:S]] = 1.0
    return s


def frank_wolfe(E, q, S, lam, diversity="pairwise", max_iter=100, tol=1e-9, x0=None, stable_iter=5):
    """Maximise the relaxed objective; return ``(x, last_vertex, n_iter)``.

    Parameters
    ----------
    E : (n, d) unit rows; q : (n,) quality in [0, 1]; S : budget; lam : quality weight
    diversity : {"pairwise", "disf"}
    max_iter : iteration cap
    tol : stop when the Frank-Wolfe gap (an upper bound on F* - F(x)) falls below
        ``tol * max(1, |F(x)|)``
    x0 : optional start; default: the top S rows by quality (a vertex)
    stable_iter : also stop once the top S entries of x (the selection the caller takes)
        have not changed for this many iterations
    """
    if diversity not in ("pairwise", "disf"):
        raise ValueError(
            f"solver='relaxed' supports diversity 'pairwise' or 'disf', not {diversity!r}: "
            "facility location is submodular, not concave; use solver='pg' or 'greedy'"
        )
    xp = get_namespace(E)
    n, d = E.shape
    q = q.astype(xp.float64)
    x = _top_indicator(q, S, xp) if x0 is None else x0.astype(xp.float64)
    s = x
    if diversity == "pairwise":
        X = E.astype(xp.float32, copy=False)  # already float32 from fit(): no copy
        cpair = (1.0 - lam) / (S * (S - 1.0)) if S > 1 else 0.0

        def grad(x):
            u = (X.T @ x.astype(xp.float32)).astype(xp.float64)
            return lam * q / S - 2.0 * cpair * (X @ u.astype(xp.float32)).astype(xp.float64), u

        def curvature(D, u):
            v = (X.T @ D.astype(xp.float32)).astype(xp.float64)
            return cpair * float(v @ v)

        def value(x, u):
            return lam * float(q @ x) / S - cpair * (float(u @ u) - S)
    else:
        Z = standardize(E)
        cd = (1.0 - lam) / (d * (d - 1.0))

        def cov(x):
            return (Z.T * x.astype(xp.float32)) @ Z / S

        def offdiag(A, B):
            return float((A * B).sum() - (xp.diagonal(A) * xp.diagonal(B)).sum())

        def grad(x):
            C = cov(x)
            zc = ((Z @ C) * Z).sum(axis=1) - ((Z * Z) @ xp.diagonal(C))
            return lam * q / S - cd * 2.0 / S * zc.astype(xp.float64), C

        def curvature(D, C):
            CD = cov(D)
            return cd * offdiag(CD, CD)

        def value(x, C):
            return lam * float(q @ x) / S - cd * offdiag(C, C)

    it, stable, top = 0, 0, None
    for it in range(1, max_iter + 1):
        g, aux = grad(x)
        s = _top_indicator(g, S, xp)
        D = s - x
        gap = float(g @ D)
        if gap <= tol * max(1.0, abs(value(x, aux))):
            break
        c = curvature(D, aux)
        gamma = 1.0 if c <= 0 else min(1.0, gap / (2.0 * c))
        x = x + gamma * D
        new_top = xp.sort(xp.argpartition(-x, S - 1)[:S]) if S < n else None
        stable = stable + 1 if top is not None and new_top is not None and bool((new_top == top).all()) else 0
        top = new_top
        if stable >= stable_iter:
            break
    return x, s, it
