"""Frank-Wolfe on the relaxed mask under a token budget (docs/tokens.md).

The relaxed mask is ``x`` in ``{x in [0, 1]^n : sum t_i x_i = T}``. Its linear step is a
fractional knapsack (:func:`datamask.core.tokens.knapsack_vertex`). Under a token budget
the size of the selection is free, so the objective is relaxed in its mean form, with
``s = sum x`` in place of S:

    pairwise: F(x) = lam q.x / s - (1 - lam) (|E^T x|^2 - s) / (s (s - 1))
    disf:     F(x) = lam q.x / s - sum_{a != b} C_ab^2 / (d (d - 1)),  C = Z^T diag(x) Z / s

(Z standardised over the candidates, as in :mod:`datamask.core.relaxed`). Both agree with
the exact f(U) on 0/1 vectors (pairwise exactly, DiSF up to its fixed standardisation), but
they are not concave: Frank-Wolfe with a line search still never lowers F, and stops at a
point where no vertex improves it to first order. Each objective depends on x through
(s, q.x, a linear state), so the line search evaluates F on a grid of step sizes cheaply.
"""

from __future__ import annotations

from .backend import get_namespace
from .greedy import standardize
from .tokens import fill, knapsack_vertex

__all__ = ["frank_wolfe_tokens", "pairwise_token_terms", "disf_token_terms"]

# Step sizes the line search tries (plus a finer grid around the best).
_GRID = 32


def pairwise_token_terms(E, q, lam):
    """Pairwise diversity's relaxation in its mean form: the linear state is ``E^T x``."""
    xp = get_namespace(E)
    X = E.astype(xp.float32, copy=False)

    def linear(x):  # E^T x over the rows x touches
        nz = xp.nonzero(x)[0]
        return (X[nz].astype(xp.float64) * x[nz, None]).sum(axis=0)

    def value(s, qx, u):
        pair = (float(u @ u) - s) / (s * (s - 1.0)) if s > 1.0 else 0.0
        return lam * qx / s - (1.0 - lam) * pair

    def grad(s, qx, u):
        uu = float(u @ u)
        dots = (X @ u.astype(xp.float32)).astype(xp.float64)
        den = s * (s - 1.0) if s > 1.0 else 1.0
        dpair = (2.0 * dots - 1.0) / den - (uu - s) * (2.0 * s - 1.0) / den**2
        return lam * (q - qx / s) / s - (1.0 - lam) * dpair

    return linear, value, grad


def disf_token_terms(E, q, lam):
    """DiSF's relaxation in its mean form: the linear state is ``Z^T diag(x) Z``."""
    xp = get_namespace(E)
    d = E.shape[1]
    Z = standardize(E)
    cd = (1.0 - lam) / (d * (d - 1.0))

    def linear(x):  # Z^T diag(x) Z over the rows x touches
        nz = xp.nonzero(x)[0]
        Zs = Z[nz].astype(xp.float64)
        return (Zs * x[nz, None]).T @ Zs

    def off2(C):
        return float((C * C).sum() - (xp.diagonal(C) ** 2).sum())

    def value(s, qx, A):
        return lam * qx / s - cd * off2(A / s)

    def grad(s, qx, A):
        C = (A / s).astype(xp.float32)
        zc = ((Z @ C) * Z).sum(axis=1) - ((Z * Z) @ xp.diagonal(C))
        ddiv = 2.0 / s * (zc.astype(xp.float64) - off2(A / s))
        return lam * (q - qx / s) / s - cd * ddiv

    return linear, value, grad


def _mix(a, b, g):
    """The state of ``(1 - g) x + g s`` from the states ``a`` of x and ``b`` of s."""
    return tuple((1.0 - g) * ai + g * bi for ai, bi in zip(a, b))


def _line_search(value, a, b):
    """``(step, F there)``: the best step in [0, 1] on a grid, refined once around the best point."""
    vals = {}

    def f(g):
        if g not in vals:
            vals[g] = value(*_mix(a, b, g))
        return vals[g]

    best = max((i / _GRID for i in range(_GRID + 1)), key=f)
    fine = [min(1.0, max(0.0, best + (i - _GRID // 2) / _GRID**2)) for i in range(_GRID + 1)]
    g = max(fine + [best], key=f)
    return g, vals[g]


def frank_wolfe_tokens(E, q, lengths, T, lam, terms, max_iter=100, tol=1e-9, stable_iter=5, trace=None):
    """Maximise the relaxed objective within ``T`` tokens.

    Returns ``(x, rows_x, rows_vertex, n_iter)``: the relaxed mask and two selections filling
    the budget, from x and from the last vertex (each in decreasing order of its entries).

    Parameters
    ----------
    E : (n, d) unit rows; q : (n,) quality in [0, 1]; lengths : (n,) token counts
    T : token budget, below ``lengths.sum()``; lam : quality weight
    terms : the diversity's relaxation, ``terms(E, q, lam) -> (linear, value, grad)``
        (:func:`pairwise_token_terms`, :func:`disf_token_terms`; ``Diversity.relaxed_token_terms``)
    max_iter, tol, stable_iter : as :func:`datamask.core.relaxed.frank_wolfe`, except that
        ``stable_iter`` stays 5 and only the last x and vertex are rounded (the token-budget
        form was not in the suite that chose ``STABLE_ITER`` and best-rounding tracking)
    trace : list, optional
        Appended ``(iteration, value)`` at the start and after each iteration: the relaxed
        objective F of x (fractional, never falling), the value the line search chose (a host
        float the iteration computes anyway: no added read back). Unlike
        :func:`datamask.core.relaxed.frank_wolfe`'s it is x's, not a rounding's: the selection
        is one of the roundings returned.
    """
    xp = get_namespace(E)
    n = E.shape[0]
    q = q.astype(xp.float64)
    lam = float(lam)
    linear, value, grad = terms(E, q, lam)

    def state(x):
        return float(x.sum()), float(q @ x), linear(x)

    def top_rows(v):
        return xp.sort(fill(xp.argsort(-v), lengths, T))

    x = xp.zeros(n, dtype=xp.float64)
    x[top_rows(q)] = 1.0  # start: the quality order filled to T
    sx = state(x)
    fx = value(*sx)  # F(x), kept from the line search after this
    if trace is not None:
        trace.append((0, fx))
    s = x
    it, stable, top = 0, 0, None
    for it in range(1, max_iter + 1):  # noqa: B007 (returned: the iterations run)
        g = grad(*sx)
        s = knapsack_vertex(g, lengths, T)
        gap = float(g @ (s - x))
        if gap <= tol * max(1.0, abs(fx)):
            break
        ss = state(s)
        gamma, f_new = _line_search(value, sx, ss)
        if gamma <= 0.0:
            break
        x = (1.0 - gamma) * x + gamma * s
        sx, fx = _mix(sx, ss, gamma), f_new
        if trace is not None:
            trace.append((it, fx))
        new_top = top_rows(x)
        same = top is not None and new_top.shape == top.shape and bool((new_top == top).all())
        stable = stable + 1 if same else 0
        top = new_top
        if stable >= stable_iter:
            break
    # rounding that fills the budget: x, and the last vertex, in decreasing order
    return x, top_rows(x), top_rows(s), it
