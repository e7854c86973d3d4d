"""The diversity objectives as objects: :class:`Pairwise`, :class:`Facility`, :class:`DiSF`.

For a selection U of S documents with unit embeddings ``e_i`` (all three are maximised):

``pairwise``
    minus the mean cosine over ordered pairs i != j of U, computed from the sum of the
    embeddings: ``-(||sum e_i||^2 - S) / (S (S - 1))``. O(S d) per mask.
``facility``
    facility location: mean over reference rows x of ``max_{u in U} cos(e_x, e_u)``.
    The reference rows are the split, or a fixed random sample of it.
``disf``
    minus the mean squared off-diagonal entry of the d x d correlation matrix of U's
    embeddings standardised over U, ``-sum_{a != b} C_ab^2 / (d (d - 1))``, so it lies
    in [-1, 0]. Computed through the S x S Gram matrix when S < d.

Each object knows its value on one selection, its statistic over a group of sampled masks
(the ``pg`` step), its greedy and relaxed forms (``relaxed_terms is None``: it has none), and
its ``pg`` defaults (step size, initial logit range). The API takes names
(``diversity="pairwise"``) and resolves them once with :func:`get_diversity`; a new
objective is a subclass here and a line in :data:`DIVERSITIES`.
"""

from __future__ import annotations

from .backend import get_namespace
from .greedy import greedy_disf, greedy_facility, greedy_pairwise
from .metrics import disf_from_moments, disf_groups, disf_one, facility_best, pairwise_from_sums
from .relaxed import disf_terms, pairwise_terms
from .relaxed_tokens import disf_token_terms, pairwise_token_terms
from .stochastic import stochastic_greedy_facility
from .tokens import disf_prefix
from .validate import BLOCK_ROWS

__all__ = ["Diversity", "Pairwise", "Facility", "DiSF", "DIVERSITIES", "get_diversity", "uses_host_kernels"]


class Diversity:
    """A diversity objective f_div(U); subclasses fill in the class attributes and methods."""

    name: str = ""
    label: str = ""  # what reports call it
    measures: str = ""  # what the value measures and what it is blind to, in a sentence (reports; docs/diversity.md)
    lr: float = 3.0  # pg step size when DataMask(lr=None)
    init: str = "quality"  # pg's start when DataMask(init=None) (see default_init): "quality" or "relaxed"
    logit_range: tuple | str = (0.0, 16.0)  # init="quality"'s range when DataMask(logit_range=None); "auto": a pilot
    relaxed_iter: int = 100  # Frank-Wolfe's iteration cap when DataMask(relaxed_iter=None)
    # from a solver's start (relaxed, stochastic greedy): pg's step budget when DataMask(steps=None),
    # and the steps it gets to improve on the start when DataMask(start_patience=None; 0: none)
    start_steps: int = 100
    start_patience: int = 100
    # a solver's start's range (init="relaxed" or "stochastic_greedy") when logit_range=None
    solved_logit_range: tuple | str = (0.0, 4.0)
    uses_reference = False  # scored against reference rows (pg batches those, not candidates)
    row_sums_only = False  # a pg group needs only row sums (the int8 kernel can compute them)
    whole_split_known = False  # its value on the whole split is known without computing it
    remember = False  # an Objective keeps its last value (a costly one: facility location)
    relaxed_terms = None  # relaxed.frank_wolfe's terms, or None: no relaxation
    relaxed_token_terms = None  # relaxed_tokens.frank_wolfe_tokens's terms
    stochastic_greedy = None  # init="stochastic_greedy"'s picks (datamask.core.stochastic), or None
    host_kernels = False  # its numpy fit runs compiled loops (numba): the input check casts with them too

    def value(self, obj, rows) -> float:
        """The diversity of one selection ``rows`` of ``obj`` (an :class:`~.objectives.Objective`)."""
        raise NotImplementedError

    def groups(self, step, B, orders, ref):
        """The diversity of each sampled mask of a ``pg`` step (``orders`` (G, S_b) into the
        batch ``B`` of candidates, or into the candidates with ``ref`` the reference batch)."""
        raise NotImplementedError

    def groups_prefix(self, step, B, orders, padded, ref, K):
        """As :meth:`groups` for the first ``K[g]`` rows of each draw (token budgets);
        ``padded``: the draws with the rows after the prefix replaced by its first row."""
        raise NotImplementedError

    def greedy(self, E, q, S, lam, R=None, progress=False, **budget):
        """Greedy picks (row indices in pick order); ``R``: reference rows when it uses them."""
        raise NotImplementedError

    def default_logit_range(self, init):
        """pg's initial logit range for ``init`` when ``DataMask(logit_range=None)``."""
        return self.solved_logit_range if init in ("relaxed", "stochastic_greedy") else self.logit_range

    def has_relaxation(self, tokens=False) -> bool:
        """Whether Frank-Wolfe can solve its relaxation (under a token budget: the token form)."""
        return (self.relaxed_token_terms if tokens else self.relaxed_terms) is not None

    def default_init(self, tokens=False) -> str:
        """pg's start when ``DataMask(init=None)``: :attr:`init`, or ``"quality"`` where this
        objective cannot start from it (:meth:`has_start`: a subclass that drops its relaxation
        keeps a working default; a token budget has no stochastic greedy)."""
        return self.init if self.has_start(self.init, tokens) else "quality"

    def has_start(self, init, tokens=False) -> bool:
        """Whether pg can start from ``init`` on this objective (under a token budget if ``tokens``)."""
        if init == "relaxed":
            return self.has_relaxation(tokens)
        if init == "stochastic_greedy":
            return self.stochastic_greedy is not None and not tokens
        return True

    def check_start(self, init, tokens=False):
        """A one-line ValueError when pg cannot start from ``init`` here."""
        if init == "relaxed":
            self.check_relaxed("init='relaxed'", tokens)
        elif not self.has_start(init, tokens):
            where = " under a token budget" if tokens and self.stochastic_greedy is not None else ""
            raise ValueError(f"init={init!r} is not defined for diversity={self.name!r}{where}; use init='quality'")

    def check_relaxed(self, what="method='relaxed'", tokens=False):
        """A ValueError when it has no relaxation (``method="relaxed"`` or ``init="relaxed"``)."""
        if not self.has_relaxation(tokens):
            fix = (
                "use init='quality'"
                if what.startswith("init")
                else "use method='datamask' or method='greedy', or give diversity='pairwise' or 'disf' with it"
            )
            raise ValueError(f"{what} is not defined for diversity={self.name!r} ({self.no_relaxed}); {fix}")

    no_relaxed = ""  # why there is no relaxation

    def __repr__(self):
        return f"{type(self).__name__}()"


class Pairwise(Diversity):
    name = "pairwise"
    label = "pairwise diversity"
    measures = (
        "minus the mean pairwise cosine, a function of the selection's mean embedding alone (higher when it "
        "is nearer the origin); blind to near-duplicates and to what the selection misses"
    )
    init = "relaxed"  # the default-selection suite's choice (benchmarks/results/defaults.md)
    logit_range = "auto"  # the suite's choice for init="quality"
    # round 5: the polish never improved on the relaxed start (14 of 14 cases); 20 steps to try
    # kept 0.82 x greedy's time at worst where 100 took 1.81 (20k, ratio 0.01; greedy 0.14 s)
    start_patience = 20
    row_sums_only = True
    relaxed_terms = staticmethod(pairwise_terms)
    relaxed_token_terms = staticmethod(pairwise_token_terms)

    def value(self, obj, rows):
        xp = get_namespace(obj.E)
        S = int(rows.shape[0])
        s = xp.zeros(obj.E.shape[1], dtype=xp.float64)
        for i0 in range(0, S, BLOCK_ROWS):  # a blocked sum: no (S, d) copy
            s += obj.rows(rows[i0 : i0 + BLOCK_ROWS]).sum(axis=0, dtype=xp.float64)
        return float(pairwise_from_sums(float((s * s).sum()), S))

    def groups(self, step, B, orders, ref):
        sums = step.rows.sums(step.rows.take(B), orders)
        return pairwise_from_sums((sums * sums).sum(axis=1), step.S_b)

    def groups_prefix(self, step, B, orders, padded, ref, K):
        xp = step.xp
        sums = step.rows.sums(step.rows.take(B), padded)  # a 0/1 selection matrix: the copies count once
        k = K.astype(xp.float64)
        return xp.where(k >= 2, -((sums * sums).sum(axis=1) - k) / xp.maximum(k * (k - 1.0), 1.0), 0.0)

    def greedy(self, E, q, S, lam, R=None, progress=False, **budget):
        return greedy_pairwise(E, q, S, lam, progress=progress, **budget)


class Facility(Diversity):
    name = "facility"
    label = "facility-location coverage"
    measures = (
        "the mean over a sample of the split of each row's best cosine to the selection: how well every kind "
        "of row has a selected neighbour; a near-copy of a selected row adds nothing"
    )
    lr = 1.0
    init = "stochastic_greedy"  # the suite under facility location (benchmarks/results/defaults_fit_facility.md)
    # pg's polish never improved on stochastic greedy on that suite (13 of 13 cases stopped by
    # "start" after 100 steps, about half the fit): with start_patience=None the start is returned
    start_patience = 0
    logit_range = (0.0, 2.0)  # init="quality"'s range
    uses_reference = True
    remember = True  # its value is S x r products
    whole_split_known = True  # every row is its own nearest neighbour: 1
    stochastic_greedy = staticmethod(stochastic_greedy_facility)
    host_kernels = True  # the lists' pass and stochastic greedy's picks (facility_scan, facility_kernels)
    no_relaxed = "facility location is submodular, not concave"

    def value(self, obj, rows):
        xp = get_namespace(obj.E)
        R, best = obj.rows(obj.reference), None
        for i0 in range(0, int(rows.shape[0]), BLOCK_ROWS):  # blocked: no (S, d) copy
            best = facility_best(R, obj.rows(rows[i0 : i0 + BLOCK_ROWS]), best)
        return float(best.astype(xp.float64).mean()) if best is not None else 0.0

    def groups(self, step, B, orders, ref):
        return step.fac.values(orders, ref)

    def groups_prefix(self, step, B, orders, padded, ref, K):
        return step.fac.values(padded, ref)

    def greedy(self, E, q, S, lam, R=None, progress=False, **budget):
        return greedy_facility(E, q, S, lam, R, progress=progress, **budget)


class DiSF(Diversity):
    name = "disf"
    label = "DiSF"
    measures = (
        "minus the mean squared correlation between the selection's embedding dimensions: how far the "
        "selection is from collapsing onto few directions; blind to near-duplicates and to coverage"
    )
    init = "relaxed"  # the suite under DiSF (benchmarks/results/defaults_disf.md)
    relaxed_iter = 20  # an iteration costs n d^2 (benchmarks/results/defaults_fit_disf.md)
    # the same gain to 0.001% of greedy's without the polish on that suite, which cost up to 99% of the fit
    start_patience = 0
    relaxed_terms = staticmethod(disf_terms)
    relaxed_token_terms = staticmethod(disf_token_terms)

    def value(self, obj, rows):
        xp = get_namespace(obj.E)
        S, d = int(rows.shape[0]), obj.E.shape[1]
        if S < d:
            return float(disf_one(obj.rows(rows)))
        total = xp.zeros(d, dtype=xp.float64)
        outer = xp.zeros((d, d), dtype=xp.float64)
        for i0 in range(0, S, BLOCK_ROWS):  # blocked: no (S, d) float64 copy
            blk = obj.rows(rows[i0 : i0 + BLOCK_ROWS]).astype(xp.float64)
            total += blk.sum(axis=0)
            outer += blk.T @ blk
        return disf_from_moments(total, outer, S)

    def groups(self, step, B, orders, ref):
        return disf_groups(step.rows.take(B), orders)

    def groups_prefix(self, step, B, orders, padded, ref, K):
        return disf_prefix(step.rows.take(B), orders, K)

    def greedy(self, E, q, S, lam, R=None, progress=False, **budget):
        return greedy_disf(E, q, S, lam, progress=progress, **budget)


# name -> objective, in the order the CLI lists them
DIVERSITIES = {d.name: d for d in (Pairwise(), Facility(), DiSF())}


def uses_host_kernels(diversity) -> bool:
    """The objective's numpy fit runs compiled loops (:attr:`Diversity.host_kernels`); False for
    a name that is none (the fit's parameter check says so)."""
    try:
        return bool(get_diversity(diversity).host_kernels)
    except ValueError:
        return False


def get_diversity(diversity) -> Diversity:
    """The objective named ``diversity`` (a :class:`Diversity` is returned as it is)."""
    if isinstance(diversity, Diversity):
        return diversity
    try:
        return DIVERSITIES[diversity]
    except (KeyError, TypeError):
        raise ValueError(f"diversity must be one of {tuple(DIVERSITIES)}, got {diversity!r}") from None
