"""``evaluate``: score any selection of one partition on DATAMASK's objective, by default the
one ``DataMask()`` fits (its defaults read from :mod:`.params`, so the two cannot drift).

Beside the estimator rather than in :mod:`datamask.core.objectives` because its defaults are
the estimator's parameters; the objective itself (:class:`~datamask.core.objectives.Objective`)
is core's.
"""

from __future__ import annotations

import inspect

from ..core.backend import default_rng, get_namespace
from ..core.diversity import get_diversity
from ..core.objectives import Objective, normalize_quality
from ..core.validate import check_inputs, check_mask, needs_rescale
from .params import SOLVER_PARAMS, DataMaskParams

__all__ = ["evaluate"]


def _defaults() -> dict:
    return {**SOLVER_PARAMS, **{k: p.default for k, p in inspect.signature(DataMaskParams.__init__).parameters.items()}}


_FIT_DEFAULTS = _defaults()  # evaluate() scores DataMask()'s objective unless told otherwise


def evaluate(
    embeddings,
    quality,
    mask,
    lam=_FIT_DEFAULTS["lam"],
    diversity=_FIT_DEFAULTS["diversity"],
    reference_size=_FIT_DEFAULTS["reference_size"],
    seed=0,
):
    """Score any selection of one partition with DATAMASK's objective (by default the one
    ``DataMask()`` fits: facility location, ``lam`` 0.7, 2,048 reference rows).

    Parameters
    ----------
    embeddings : (N, d) array (numpy or cupy), unit-norm rows
    quality : (N,) array; normalised to [0, 1] over these N rows before use
    mask : (N,) bool array, or an integer array of selected row indices
    lam : float, default 0.7
        Weight of quality.
    diversity : {"facility", "pairwise", "disf"}, default "facility"
    reference_size : int or None, default 2048
        Facility location only: score against a fixed random sample of this many rows
        (drawn with ``seed``, as ``DataMask(seed=seed)`` draws them); None: all N rows.
    seed : int

    Returns
    -------
    dict
        ``objective``, ``quality`` (mean normalised quality), ``diversity``.

    .. versionchanged:: 0.3
       The defaults are ``DataMask``'s (facility, ``lam`` 0.7, ``reference_size`` 2048; were
       pairwise, 0.5, None), so ``evaluate(E, q, DataMask().fit(E, q).mask_)`` scores the
       objective that fit maximised.
    """
    norms = check_inputs(embeddings, quality)
    xp = get_namespace(embeddings)
    rows = check_mask(mask, embeddings.shape[0], xp)
    reference = None
    if get_diversity(diversity).uses_reference and reference_size is not None and reference_size < embeddings.shape[0]:
        reference = default_rng(xp, seed).subset(embeddings.shape[0], int(reference_size))
    obj = Objective(
        embeddings, normalize_quality(quality), lam, diversity, reference, norms=norms if needs_rescale(norms) else None
    )
    return obj.evaluate_rows(rows)
