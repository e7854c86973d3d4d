"""DATAMASK's set objective, bound to one split's rows, and ``evaluate``.

For a selection U of S documents with unit embeddings ``e_i`` and quality ``q_i``::

    f(U) = lam * f_qua(U) + (1 - lam) * f_div(U)
    f_qua(U) = mean of q over U, with q min-max normalised to [0, 1] over the split

and ``f_div`` one of the objectives of :mod:`datamask.core.diversity` (pairwise, facility,
disf), whose array kernels are in :mod:`datamask.core.metrics`. ``evaluate``, which scores a
selection with ``DataMask()``'s defaults, is :mod:`datamask.estimator.evaluate`.
"""

from __future__ import annotations

import numpy as np

from .backend import get_namespace
from .diversity import DIVERSITIES, get_diversity
from .validate import unit_rows

__all__ = [
    "DIVERSITIES",
    "normalize_quality",
    "best_first",
    "Objective",
]


def normalize_quality(quality):
    """Min-max normalise quality to [0, 1] (float64). A constant column maps to zeros."""
    xp = get_namespace(quality)
    q = quality.astype(xp.float64)
    lo, hi = q.min(), q.max()
    span = float(hi - lo)
    if span <= 0.0:
        return xp.zeros_like(q)
    return (q - lo) / span


def best_first(qn, xp):
    """The rows, best quality first (ties by row order; cupy's argsort is always stable and rejects `kind`)."""
    return xp.argsort(-qn, kind="stable") if xp is np else xp.argsort(-qn)


class Objective:
    """``f = lam * quality + (1 - lam) * diversity`` bound to one partition's rows.

    Parameters
    ----------
    embeddings : (N, d) array, numpy or cupy
        Unit-norm rows.
    quality_norm : (N,) array
        Quality already normalised to [0, 1] over the partition.
    lam : float
        Weight of quality, in [0, 1].
    diversity : {"pairwise", "facility", "disf"} or a :class:`~datamask.core.diversity.Diversity`
    reference : array of int, optional
        Row indices of the facility-location reference set (default: all rows).
    norms : (N,) array, optional
        Row norms, when the rows are not unit: rows are rescaled as they are gathered.

    The embeddings are kept as given (float16 storage included, no copy); only the rows
    a selection touches are gathered into float32.
    """

    def __init__(self, embeddings, quality_norm, lam=0.5, diversity="pairwise", reference=None, norms=None):
        self.div = get_diversity(diversity)
        self.E = embeddings
        self.q = quality_norm
        self.lam = float(lam)
        self.diversity = self.div.name
        self.norms = norms
        xp = get_namespace(embeddings)
        self.reference = xp.arange(embeddings.shape[0]) if reference is None else reference
        self._last = None  # (sorted rows, diversity) of the last selection scored, when the diversity keeps it

    def rows(self, rows):
        """Float32 unit embeddings of ``rows``."""
        return unit_rows(self.E, rows, self.norms)

    def diversity_of(self, rows):
        """Diversity of one selection given as row indices. A diversity whose value costs a
        pass over the reference rows (``div.remember``: facility location) keeps its last
        value: a fit scores its start and then its result, often the same rows."""
        xp = get_namespace(self.E)
        rows = xp.asarray(rows)
        if not self.div.remember:
            return self.div.value(self, rows)
        key = xp.sort(rows)
        last = self._last
        if last is not None and last[0].shape == key.shape and bool(xp.all(last[0] == key)):
            return last[1]
        value = self.div.value(self, rows)
        self._last = (key, value)
        return value

    def remember(self, rows, diversity):
        """Keep ``diversity`` as the value of the selection ``rows`` (a solver that computed it
        on the way, from the same float32 cosines: stochastic greedy's picks), when the
        diversity keeps its last value (``div.remember``)."""
        if self.div.remember:
            xp = get_namespace(self.E)
            self._last = (xp.sort(xp.asarray(rows)), float(diversity))

    def evaluate_rows(self, rows) -> dict:
        """``{"objective", "quality", "diversity"}`` of the selection ``rows``."""
        xp = get_namespace(self.E)
        rows = xp.asarray(rows)
        qual = float(self.q[rows].mean()) if rows.shape[0] else 0.0
        div = self.diversity_of(rows)
        return {
            "objective": self.lam * qual + (1.0 - self.lam) * div,
            "quality": qual,
            "diversity": div,
        }
