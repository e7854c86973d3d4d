"""Frank-Wolfe on the relaxed mask (beyond the paper).

Relax the mask to x in [0, 1]^n with sum(x) = S (the capped simplex). For unit rows the
pairwise objective

    F(x) = lam q.x / S - (1 - lam) (|E^T x|^2 - S) / (S (S - 1))

is concave in x, and so is DiSF once the standardisation is fixed over the candidate rows
(a sum of squares of linear functions of x, negated). Frank-Wolfe solves it: the linear
step over the capped simplex is the indicator of the top S entries of the gradient, and F is
quadratic along the step, so the line search has a closed form. Each iteration costs a few
O(n d) products (O(n d^2) for DiSF). The selection is the best 0/1 point met on the way
(each iterate's top S, each vertex), or the top S of the last x where that scores better
on the exact objective (picked by the caller; DiSF's relaxation fixes the standardisation).

Facility location is submodular, not concave: it has no such relaxation here.
"""

from __future__ import annotations

from .backend import get_namespace
from .greedy import standardize
from .validate import BLOCK_ROWS

__all__ = ["frank_wolfe", "pairwise_terms", "disf_terms", "STABLE_ITER"]

# Frank-Wolfe stops once its rounding has not changed for this many iterations: 5 stopped
# too soon on one corpus of the default-selection suite (benchmarks/results/defaults.md).
STABLE_ITER = 10


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

    lin = lam * q / S  # the quality part of the gradient, fixed

    def grad(u):
        return lin - 2.0 * cpair * (X @ u.astype(xp.float32)).astype(xp.float64)

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
        # z^T C z - sum_a z_a^2 C_aa = z^T (C - diag C) z: one product, no (n, d) square
        off = C.astype(xp.float32)
        off[xp.diag_indices(d)] = 0.0
        zc = xp.einsum("ij,ij->i", Z @ off, Z)
        return lam * q / S - cd * 2.0 / S * zc.astype(xp.float64)

    def value(x, C):
        return lam * float(q @ x) / S - quad(C, C)

    if S >= d:
        return rows_sum, grad, quad, value
    Z2 = Z * Z

    def vertex_grad(rows):
        # the gradient at a vertex's state, through its S rows: n S d, not n d^2
        Zs = Z[rows]
        K = Z @ Zs.T  # (n, S)
        zc = xp.einsum("ij,ij->i", K, K) - Z2 @ (Zs * Zs).sum(axis=0)
        return lam * q / S - cd * 2.0 / S**2 * zc.astype(xp.float64)

    return rows_sum, grad, quad, value, vertex_grad


def frank_wolfe(E, q, S, lam, terms, max_iter=100, tol=1e-9, x0=None, stable_iter=None, trace=None):
    """Maximise the relaxed objective; return ``(x, rows, n_iter)``.

    ``rows`` is the best 0/1 selection seen on the way, by the relaxed objective (exact for
    pairwise on unit rows): each iterate's top S and each vertex. The top S of the *last*
    iterate is not always the best rounding (it can fall while x converges), so tracking
    them makes more iterations never worse.

    Parameters
    ----------
    E : (n, d) unit rows; q : (n,) quality in [0, 1]; S : budget; lam : quality weight
    terms : the diversity's relaxation, ``terms(E, q, S, lam) -> (rows_sum, grad, quad, value)``
        (:func:`pairwise_terms`, :func:`disf_terms`; ``Diversity.relaxed_terms``), and
        optionally a fifth, ``vertex_grad(rows)``: the gradient at a vertex's state
    max_iter : iteration cap
    tol : stop when the Frank-Wolfe gap (an upper bound on F* - F(x)) falls below
        ``tol * max(1, |F(x)|)``
    x0 : optional start; default: the top S rows by quality (a vertex)
    stable_iter : also stop once the top S entries of x (the rounding) have not changed for
        this many iterations (None: :data:`STABLE_ITER`, chosen on the default-selection suite)
    trace : list, optional
        Appended ``(iteration, value)`` after each iteration: the relaxed objective of the
        best 0/1 selection so far (a host float the iteration computes anyway: no added read
        back). For pairwise on unit rows it is the exact objective.
    """
    stable_iter = STABLE_ITER if stable_iter is None else int(stable_iter)
    xp = get_namespace(E)
    n = E.shape[0]
    q = q.astype(xp.float64)
    # The objectives depend on x through a linear "state" (pairwise: u = E^T x; DiSF:
    # C = Z^T diag(x) Z / S). A Frank-Wolfe step x <- (1 - g) x + g s moves the state the
    # same way, and a vertex's state is a sum over its S rows, so each iteration costs one
    # pass over the n rows (the gradient) instead of three.
    # The gradient is affine in the state, so it moves the same way too: where the terms
    # give a vertex's gradient more cheaply than the state's (DiSF with S < d), it is kept
    # as (1 - g) grad + g grad(vertex) instead of recomputed.
    rows_sum, grad, quad, value, *vertex_grad = terms(E, q, S, lam)
    vertex_grad = vertex_grad[0] if vertex_grad else None
    vertices, roundings = _VertexStates(n, rows_sum, xp), _VertexStates(n, rows_sum, xp)
    best = _Best(n, S, value, xp)
    x, rows = _start(x0, q, best, xp)
    state = vertices.state(rows)
    best.offer(rows, x, state)
    g = grad(state)
    it, stable, top = 0, 0, None
    if trace is not None:
        trace.append((0, best.value))
    for it in range(1, max_iter + 1):  # noqa: B007 (returned: the iterations run)
        rows = best.top(g)
        gap = float(g[rows].sum()) - float(g @ x)  # g . (s - x), s the vertex's indicator
        if gap <= tol * max(1.0, abs(value(x, state))):
            break
        vstate = vertices.state(rows)
        best.offer(rows, best.indicator(rows), vstate)
        dstate = vstate - state
        c = quad(dstate, dstate)
        gamma = 1.0 if c <= 0 else min(1.0, gap / (2.0 * c))
        x *= 1.0 - gamma
        x[rows] += gamma
        state = state + gamma * dstate
        g = grad(state) if vertex_grad is None else (1.0 - gamma) * g + gamma * vertex_grad(rows)
        if S >= n:
            continue
        new_top = xp.sort(best.top(x))
        if top is None or not bool((new_top == top).all()):
            best.offer(new_top, best.indicator(new_top), roundings.state(new_top))
            stable = 0
        else:
            stable += 1
        top = new_top
        if trace is not None:
            trace.append((it, best.value))
        if stable >= stable_iter:
            break
    return x, best.rows, it


def _start(x0, q, best, xp):
    """``(x, rows)``: the start vertex, ``x0`` or the top S rows by quality."""
    if x0 is None:
        rows = best.top(q)
        return best.indicator(rows), rows
    x = x0.astype(xp.float64)
    if not bool(((x == 0) | (x == 1)).all()):
        raise ValueError("x0 must be a 0/1 vertex of the capped simplex")
    return x, xp.nonzero(x > 0)[0]


class _Best:
    """The best 0/1 selection offered so far, by the relaxed objective ``value``."""

    def __init__(self, n, S, value, xp):
        self.n, self.S, self.value_of, self.xp = n, S, value, xp
        self.value, self.rows = -float("inf"), None

    def top(self, v):
        xp = self.xp
        return xp.arange(self.n) if self.S >= self.n else xp.argpartition(-v, self.S - 1)[: self.S]

    def indicator(self, rows):
        s = self.xp.zeros(self.n, dtype=self.xp.float64)
        s[rows] = 1.0
        return s

    def offer(self, rows, s, state):
        v = self.value_of(s, state)
        if v > self.value:
            self.value, self.rows = v, rows


class _VertexStates:
    """The state of 0/1 selections, each from the previous one's: consecutive selections
    share most rows, so the update sums only the rows that entered and left."""

    def __init__(self, n, rows_sum, xp):
        self.n, self.rows_sum, self.xp = n, rows_sum, xp
        self.member, self.last = None, None

    def state(self, rows):
        xp = self.xp
        member = xp.zeros(self.n, dtype=bool)
        member[rows] = True
        if self.member is None:
            st = self.rows_sum(rows)
        else:
            entered, left = xp.nonzero(member & ~self.member)[0], xp.nonzero(self.member & ~member)[0]
            st = self.last + self.rows_sum(entered) - self.rows_sum(left)
        self.member, self.last = member, st
        return st
