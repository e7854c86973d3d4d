"""Every number of one selection on the same footing: the report's side-by-side table.

:func:`selection_scores` scores any mask of one split (the chosen selection, top-k and
random at the same budget in ``datamask select``; every method in ``datamask compare``):

``quality``         mean raw quality score of the selected rows (the input's scale)
``quality_norm``    mean quality min-max normalised over the split (0-1: the objective's term)
``objective``       DATAMASK's objective with the run's ``lam`` and diversity
``pairwise``, ``facility``, ``disf``  each diversity of :mod:`.diversity`; ``facility`` is the
                    coverage: the mean over rows of their best cosine to the selection
                    (over a seeded sample of ``sample`` rows, else ``reference_size``)
``near_duplicates`` share of selected rows whose nearest other selected row has cosine
                    >= :data:`NEAR_DUPLICATE_COSINE` (over a seeded sample of selected rows)
``tokens``, ``mean_tokens``  kept tokens and mean length, when token counts are known

Numpy or cupy arrays alike; the cost is O(S d) for pairwise and O(r S d) for coverage and
near-duplicates (r = the sample), never O(N S d). :func:`score_sample` bounds r S.
"""

from __future__ import annotations

import numpy as np

from .backend import default_rng, get_namespace, to_numpy
from .diversity import DIVERSITIES, get_diversity
from .objectives import Objective, normalize_quality
from .validate import check_inputs, needs_rescale, unit_rows

__all__ = [
    "selection_scores",
    "near_duplicate_share",
    "score_sample",
    "NEAR_DUPLICATE_COSINE",
    "SCORE_SAMPLE",
    "SCORE_PAIRS",
    "SCORE_SAMPLE_MIN",
]

# semantic dedup's default eps (0.05): rows with cosine above 1 - eps are near-duplicates there
NEAR_DUPLICATE_COSINE = 0.95
# rows sampled for coverage and near-duplicates when the run sets no reference_size
SCORE_SAMPLE = 2048
# the most row pairs (sample x selected) one sampled number compares, and the fewest rows it samples:
# coverage and near-duplicates of a 20,000-row selection sample 256 rows, not 2,048 (side-by-side
# scoring stays under ~10% of a default select's split time at 200k rows, benchmarks/side_by_side.py)
SCORE_PAIRS = 1 << 22
SCORE_SAMPLE_MIN = 256
_BLOCK = 1 << 22  # floats per similarity block


def score_sample(selected: int, size=None) -> int:
    """Rows sampled for coverage and near-duplicates of a ``selected``-row subset: ``size``
    (default :data:`SCORE_SAMPLE`), fewer when ``size x selected`` passes :data:`SCORE_PAIRS`,
    never under :data:`SCORE_SAMPLE_MIN`."""
    size = int(size or SCORE_SAMPLE)
    return max(min(size, SCORE_PAIRS // max(int(selected), 1)), min(size, SCORE_SAMPLE_MIN))


def near_duplicate_share(E, rows, threshold=NEAR_DUPLICATE_COSINE, sample=SCORE_SAMPLE, seed=0, norms=None) -> float:
    """Share of the selected ``rows`` (a seeded sample of ``sample`` of them) whose nearest
    other selected row has cosine >= ``threshold``; 0 for fewer than two rows."""
    xp = get_namespace(E)
    rows = xp.asarray(rows)
    S = int(rows.shape[0])
    if S < 2:
        return 0.0
    pos = default_rng(xp, seed).subset(S, sample) if S > sample else xp.arange(S)
    pos = xp.sort(pos)
    A = unit_rows(E, rows[pos], norms)
    best = xp.full(A.shape[0], -np.inf, dtype=xp.float32)
    per = max(1, _BLOCK // A.shape[0])
    local = xp.arange(A.shape[0])
    for c0 in range(0, S, per):
        G = A @ unit_rows(E, rows[c0 : c0 + per], norms).T
        own = (pos >= c0) & (pos < c0 + G.shape[1])  # a row is not its own neighbour
        G[local[own], pos[own] - c0] = -np.inf
        best = xp.maximum(best, G.max(axis=1))
    return float((best >= threshold).mean())


def selection_scores(
    E,
    q,
    mask,
    lengths=None,
    lam=0.5,
    diversity="pairwise",
    reference_size=None,
    seed=0,
    sample=None,
    diversities=None,
    norms=False,
) -> dict:
    """Every number of the selection ``mask`` of one split's ``E`` (N, d) and quality ``q``
    (see the module doc); ``lengths``: the rows' token counts, or None. The objective is
    the run's (``reference_size``: its facility reference set, None for every row); the
    diversity columns use ``sample`` rows instead when given, and near-duplicates a sample of
    ``sample or reference_size or`` :data:`SCORE_SAMPLE` selected rows. ``diversities``: the
    columns to compute (default: every one of :data:`~.diversity.DIVERSITIES`). ``norms``:
    the rows' norms as :func:`~.validate.check_inputs` returned them for ``E`` (None: unit
    rows) when the caller has checked the inputs already; False (default) checks them here."""
    xp = get_namespace(E)
    mask = xp.asarray(mask).astype(bool)
    q = xp.asarray(q)
    if norms is False:  # once: every number below reads these rows' norms
        norms = check_inputs(E, q)
        norms = norms if needs_rescale(norms) else None
    rows, qn = xp.nonzero(mask)[0], normalize_quality(q)
    cover = reference_size if sample is None else int(sample)

    def div_of(name, size):  # evaluate()'s value, without its checks again
        ref = None
        if get_diversity(name).uses_reference and size is not None and size < E.shape[0]:
            ref = default_rng(xp, seed).subset(E.shape[0], int(size))
        return float(Objective(E, qn, lam, name, ref, norms=norms).diversity_of(rows))

    out = {"selected": int(mask.sum()), "quality": float(q[mask].astype(xp.float64).mean()) if mask.any() else np.nan}
    for name in dict.fromkeys([*(diversities or DIVERSITIES), diversity]):
        out[name] = div_of(name, cover)
    out["quality_norm"] = float(qn[mask].mean()) if mask.any() else 0.0
    uses_ref = get_diversity(diversity).uses_reference and cover != reference_size
    run_div = div_of(diversity, reference_size) if uses_ref else out[diversity]  # the run's reference set
    out["objective"] = float(lam) * out["quality_norm"] + (1.0 - float(lam)) * run_div
    ref = int(sample or reference_size or SCORE_SAMPLE)
    out["near_duplicates"] = near_duplicate_share(E, rows, sample=ref, seed=seed, norms=norms)
    if lengths is not None:
        t = np.asarray(to_numpy(lengths), dtype=np.float64)[np.asarray(to_numpy(mask))]
        out["tokens"] = float(t.sum())
        out["mean_tokens"] = float(t.mean()) if len(t) else np.nan
    else:
        out["tokens"] = out["mean_tokens"] = np.nan
    return out
