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
from .validate import BLOCK_ROWS

__all__ = ["frank_wolfe", "pairwise_terms", "disf_terms"]


def pairwise_terms(E, q, S, lam):
    """Pairwise diversity's relaxation: its state is ``u = E^T x``."""
    xp = get_namespace(E)
    X = E.astype(xp.float32, copy=False)  # already float32 from fit(): no copy
    d = E.shape[1]
    cpair = (1.0 - lam) / (S * (S - 1.0)) if S > 1 else 0.0

    def rows_sum(rows):  # sum of the rows, in blocks (no (S, d) copy)
        u = xp.zeros(d, dtype=xp.float64)
        for i0 in range(0, rows.shape[0], BLOCK_ROWS):
            u += X[rows[i0 : i0 + BLOCK_ROWS]].sum(axis=0, dtype=xp.float64)
        return u

    def grad(u):
        return lam * q / S - 2.0 * cpair * (X @ u.astype(xp.float32)).astype(xp.float64)

    def quad(a, b):
        return cpair * float(a @ b)

    def value(x, u):
        return lam * float(q @ x) / S - cpair * (float(u @ u) - S)

    return rows_sum, grad, quad, value


def disf_terms(E, q, S, lam):
    """DiSF's relaxation (standardisation fixed over the candidates): its state is
    ``C = Z^T diag(x) Z / S``."""
    xp = get_namespace(E)
    Z = standardize(E)
    d = E.shape[1]
    cd = (1.0 - lam) / (d * (d - 1.0))

    def rows_sum(rows):
        Zs = Z[rows]
        return (Zs.T @ Zs).astype(xp.float64) / S

    def quad(A, B):
        return cd * float((A * B).sum() - (xp.diagonal(A) * xp.diagonal(B)).sum())

    def grad(C):
        C32 = C.astype(xp.float32)
        zc = ((Z @ C32) * Z).sum(axis=1) - ((Z * Z) @ xp.diagonal(C32))
        return lam * q / S - cd * 2.0 / S * zc.astype(xp.float64)

    def value(x, C):
        return lam * float(q @ x) / S - quad(C, C)

    return rows_sum, grad, quad, value


def frank_wolfe(E, q, S, lam, terms, max_iter=100, tol=1e-9, x0=None, stable_iter=5):
    """Maximise the relaxed objective; return ``(x, last_vertex, n_iter)``.

    Parameters
    ----------
    E : (n, d) unit rows; q : (n,) quality in [0, 1]; S : budget; lam : quality weight
    terms : the diversity's relaxation, ``terms(E, q, S, lam) -> (rows_sum, grad, quad, value)``
        (:func:`pairwise_terms`, :func:`disf_terms`; ``Diversity.relaxed_terms``)
    max_iter : iteration cap
    tol : stop when the Frank-Wolfe gap (an upper bound on F* - F(x)) falls below
        ``tol * max(1, |F(x)|)``
    x0 : optional start; default: the top S rows by quality (a vertex)
    stable_iter : also stop once the top S entries of x (the selection the caller takes)
        have not changed for this many iterations
    """
    xp = get_namespace(E)
    n = E.shape[0]
    q = q.astype(xp.float64)
    # The objectives depend on x through a linear "state" (pairwise: u = E^T x; DiSF:
    # C = Z^T diag(x) Z / S). A Frank-Wolfe step x <- (1 - g) x + g s moves the state the
    # same way, and a vertex's state is a sum over its S rows, so each iteration costs one
    # pass over the n rows (the gradient) instead of three.
    rows_sum, grad, quad, value = terms(E, q, S, lam)

    # Consecutive vertices share most rows: a vertex's state is the previous vertex's plus
    # the rows that entered minus the rows that left.
    vertex = {"member": None, "state": None}

    def state_of(rows):
        member = xp.zeros(n, dtype=bool)
        member[rows] = True
        prev = vertex["member"]
        if prev is None:
            st = rows_sum(rows)
        else:
            st = vertex["state"] + rows_sum(xp.nonzero(member & ~prev)[0]) - rows_sum(xp.nonzero(prev & ~member)[0])
        vertex["member"], vertex["state"] = member, st
        return st

    def top_rows(v):
        return xp.arange(n) if S >= n else xp.argpartition(-v, S - 1)[:S]

    def indicator(rows):
        s = xp.zeros(n, dtype=xp.float64)
        s[rows] = 1.0
        return s

    if x0 is None:
        rows = top_rows(q)
        x, state = indicator(rows), state_of(rows)
    else:
        x = x0.astype(xp.float64)
        state = state_of(xp.nonzero(x > 0)[0]) if bool(((x == 0) | (x == 1)).all()) else None
        if state is None:
            raise ValueError("x0 must be a 0/1 vertex of the capped simplex")
    s = x
    it, stable, top = 0, 0, None
    for it in range(1, max_iter + 1):  # noqa: B007 (returned: the iterations run)
        g = grad(state)
        rows = top_rows(g)
        s = indicator(rows)
        gap = float(g @ (s - x))
        if gap <= tol * max(1.0, abs(value(x, state))):
            break
        dstate = state_of(rows) - state
        c = quad(dstate, dstate)
        gamma = 1.0 if c <= 0 else min(1.0, gap / (2.0 * c))
        x = (1.0 - gamma) * x + gamma * s
        state = state + gamma * dstate
        new_top = xp.sort(top_rows(x)) if S < n else None
        stable = stable + 1 if top is not None and new_top is not None and bool((new_top == top).all()) else 0
        top = new_top
        if stable >= stable_iter:
            break
    return x, s, it
