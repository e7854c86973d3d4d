"""The ``DataMask`` estimator: choose S rows maximising quality + diversity.

``method="datamask"`` is DATAMASK (policy-gradient mask learning; docs/design.md, "DATAMASK, exactly");
``"greedy"`` and ``"relaxed"`` solve the same objective another way. All three share the
paper's quality-aware pruning, and report the chosen mask on the same exact objective.
"""

from __future__ import annotations

import math
import time

import numpy as np
from sklearn.base import BaseEstimator

from ..core.backend import default_rng, get_namespace
from ..core.budget import check_budget, rows_after_pruning
from ..core.diversity import get_diversity, uses_host_kernels
from ..core.objectives import Objective, best_first, normalize_quality
from ..core.provenance import optimizer_record, start_trajectory
from ..core.solvers import filters_picks, solve
from ..core.state import FITTED, FitState
from ..core.tokens import candidate_tokens, check_lengths
from ..core.validate import check_inputs, needs_rescale
from . import constraints
from .constraints import PARAMETER_CONSTRAINTS, SOLVER_CONSTRAINTS
from .params import BATCH_MAX, SOLVER_PARAMS, DataMaskParams, solver_settings  # noqa: F401 (BATCH_MAX: read here by benchmarks/optimizer.py)

__all__ = ["DataMask", "tokens_after_pruning"]

# lr=None / logit_range=None: each diversity's own (datamask.core.diversity: lr, default_logit_range(init))


class DataMask(DataMaskParams, BaseEstimator):
    """Select ``S`` of ``N`` rows that maximise ``lam * quality + (1 - lam) * diversity``.

    Parameters
    ----------
    ratio : float, default 0.1
        Fraction of rows to keep, in (0, 1); ``S = round(ratio * N)``. Ignored when
        ``budget`` is given.
    budget : int, optional
        Absolute number of rows to keep.
    token_budget : int, optional
        Token budget T (instead of ``budget``; ``ratio`` ignored): keep rows whose ``lengths``
        (given to :meth:`fit`) sum to at most T, to within one row. See docs/tokens.md.
        ``datamask select --tokens`` is a corpus's budget, shared out to the splits as theirs.
    lam : float, default 0.7
        Weight of quality (normalised to [0, 1] over the partition) against diversity.

        .. versionchanged:: 0.3
           0.7 (was 0.5), with facility, no pruning and the filter: the diversity suite's
           best worst case (docs/diversity.md); ``--preset paper`` keeps the paper's recipe.
    diversity : {"pairwise", "facility", "disf"}, default "facility"
        See :mod:`datamask.core.objectives` and docs/diversity.md (what each measures).

        .. versionchanged:: 0.3
           "facility" (was "pairwise", which sees only the selection's mean embedding).
    method : {"datamask", "greedy", "relaxed"}, default "datamask"
        ``datamask``: DATAMASK's policy gradient ("pg" in the fitted attributes: ``pg_steps``).
        The same names as ``datamask select --method``. ``greedy``: best marginal
        gain, one row at a time. ``relaxed``: Frank-Wolfe on the concave relaxation (pairwise
        and DiSF only).
    prune : float, default 0.0
        Quality-aware pruning: drop this fraction of rows with the lowest quality before
        optimising (every solver). 0 keeps all.

        .. versionchanged:: 0.3
           0 (was 0.5): pruning cost coverage below random's (docs/diversity.md).
    near_duplicate : float in (0, 1] or None, default 0.95
        The redundancy filter: after pruning, drop every candidate that has a better
        candidate (higher quality) at cosine >= this, so the selection holds no two rows
        that close (:mod:`datamask.core.redundancy`; the report's near-duplicate line).
        None keeps them (the paper's recipe). When the filter leaves fewer candidates (or
        tokens) than the budget, the best dropped rows return until it fits. Where
        stochastic greedy's picks are the selection (facility location's default fit), the
        filter runs over the picks instead, each dropped pick replaced by the picks
        continued, for at most 8 rounds: the same rule over a tenth of the rows at the
        default ratio (:func:`datamask.core.redundancy.picks_without_near_duplicates`).

        .. versionadded:: 0.3
    solver_params : dict or None, default None
        The optimiser's fine controls, each key optional (an unknown key is refused in one
        line naming the valid ones; :data:`datamask.estimator.params.SOLVER_PARAMS`). The same
        mapping as ``datamask select --solver-params`` and a workflow's ``solver_params:``
        key. Named recipes set them with the objective: ``DataMask(**PRESETS["paper"])``
        (:data:`datamask.estimator.params.PRESETS`, ``--preset``). The keys:

        group_size : int, default 128
            Masks sampled per step (G).
        lr : float or None, default None
            Step size of the logit update on group-normalised advantages. None picks 3 for
            pairwise and DiSF and 1 for facility location. The paper uses 10, which gets close
            fastest but then stalls short of the best objective (the lr sweep in
            benchmarks/results/optimizer.md). Facility location samples from every candidate
            each step (no batch updating) and takes the smaller step.
        steps : int or None, default None
            Maximum policy-gradient steps (``patience`` usually stops a run sooner). None
            scales the budget with the problem: from quality or uniform, enough steps for every
            candidate row to be drawn about 2,000 times (``steps * group_size * S_b /
            n_candidates``, S_b the rows of one batch's masks), at least 5,000 and at most
            50,000 (small ratios and large splits need more than the 5,000 that suffice
            elsewhere; benchmarks/results/defaults.md); from a solver's start (``init="relaxed"``
            or ``"stochastic_greedy"``), the objective's short polish (100 steps), since pg
            rarely improves on those starts and greedy's time is the bar (docs/defaults.md).
        batch_ratio : float or None, default 0.05
            Batch updating: each step samples masks from this fraction of the candidate rows,
            with the budget scaled to match (for facility location the fraction applies to the
            reference rows instead). ``None`` or 1 uses every row every step. The batches of
            one pass are disjoint slices of a random permutation, so every row is updated once
            per pass.
        batch_max : int or None, default 512
            Upper bound on the rows of one batch (``batch_ratio`` of a large partition is
            capped to it); None: no bound, the paper's recipe. A step costs time in proportion
            to its rows while the steps needed stay about the same (each row's update is less
            noisy in a smaller batch), so on CPU small batches reach a given objective sooner;
            see the batch-size table in benchmarks/results/optimizer.md.
        init : {"relaxed", "stochastic_greedy", "quality", "uniform"} or None, default None
            Initial logits, mapped linearly onto ``logit_range``: ``"quality"`` (the paper's),
            ``"relaxed"`` (beyond the paper: the relaxed solution, averaged with its best
            rounding, so pg starts where ``method="relaxed"`` ends and searches around it on
            the exact objective; pairwise and DiSF only; :mod:`datamask.core.start`),
            ``"stochastic_greedy"`` (facility location, row budgets: stochastic greedy's picks,
            :mod:`datamask.core.stochastic`), or ``"uniform"`` (equal). None picks
            ``"relaxed"`` for pairwise and DiSF and ``"stochastic_greedy"`` for facility
            location, the choices of the default-selection suite by its worst case
            (docs/defaults.md), and ``"quality"`` where the objective cannot start from its
            choice (no relaxation; facility location under a token budget;
            :meth:`~datamask.core.diversity.Diversity.default_init`).

            .. versionchanged:: 0.3
               None (pairwise and DiSF: ``"relaxed"``; facility location:
               ``"stochastic_greedy"``) replaces the default ``"quality"``.
        logit_range : (float, float), "auto" or None, default None
            ``(l_min, l_max)`` the initial scores are mapped onto, or ``"auto"``: a short pilot
            (:mod:`datamask.core.start`) runs pg from (0, 2) and from (0, 16) and starts from
            the one whose top-S scores higher, then continues that run (the cost: the other
            range's pilot, at most 500 steps).
            None picks (0, 4) for ``init="relaxed"`` and ``"stochastic_greedy"``; for ``init="quality"``, ``"auto"`` for
            pairwise, (0, 16) for DiSF and (0, 2) for facility location. A wide quality range
            starts the policy near the quality top-S (fast where the optimum is near it, no
            early dip with large batches), a narrow one leaves pg free to reach rows far below
            it; neither fixed range held on every corpus of the default-selection suite
            (benchmarks/results/defaults.md; DiSF and facility location were not in that
            suite: benchmarks/results/init_sweep.md).
        final : {"topk", "sample"}, default "topk"
            Final mask: the S largest logits (the best top-S mask seen at the evaluation
            points is kept), or one Plackett-Luce draw from the final logits.
        reference_size : int or None, default 2048
            Facility location: size of the fixed random reference sample (None: all rows).
        eval_every : int, default 100
            Steps between evaluations of the top-S mask on the exact objective (history,
            best-mask tracking, early stopping).
        patience : int or None, default 10
            Stop when the mean objective of the last ``patience`` evaluations is no more than
            ``tol`` times the gain over the start (the objective at step 0) above the mean of
            the ``patience`` before them. Window means, not the best so far, because a top-S mask
            that dipped early and is climbing back is still improving; the gain, not the
            objective's size, because with few selected rows per batch the rise per evaluation
            is tiny next to the objective yet steady. One rule for every diversity. None never
            stops early.
        tol : float, default 1e-5
        start_patience : int or None, default None
            Steps pg is given to improve on its start: at the first evaluation point this many
            steps in (one is added there), a run whose best top-S mask is no more than ``tol``
            times its size above step 0's stops and returns the start. None: the objective's
            from a solver's start (``init="relaxed"``, ``"stochastic_greedy"``), which pg did
            not improve on in the defaults suite: 20 steps for pairwise, 0 for facility
            location and DiSF (the start is returned, no pg step; docs/defaults.md); never from
            quality or uniform, nor with ``patience=None`` (which keeps meaning no early stop).
        lr_schedule : {"constant", "cosine"}, default "constant"
        relaxed_iter : int or None, default None
            Frank-Wolfe iteration cap for ``method="relaxed"`` and for ``init="relaxed"``'s start.
            None: the objective's (100 for pairwise, 20 for DiSF: a DiSF iteration costs
            ``n d^2``, and at ratio 0.01 a hundred of them cost more than greedy's S picks;
            docs/defaults.md).

            .. versionchanged:: 0.3
               None (the objective's cap) replaces 100.
        n_threads : int or None, default 1
            BLAS threads during ``fit``. One, because a Dask worker runs one partition per core;
            a single fit on an idle machine can use more for greedy and relaxed (a pg step gains
            little from more threads: see the threads table in benchmarks/results/optimizer.md).
            None leaves the library default.

        .. versionchanged:: 0.3
           One mapping for the 16 keys above, which were keyword parameters of their own.
    seed : int, default 0
    callback : callable, optional
        ``callback(estimator, record)`` after each evaluation point; return ``True`` to
        stop early. A ``logit_range="auto"`` pilot runs without it (the winning pilot's
        points are given to it once the pilot ends), so a time cap kept by a callback does
        not shorten the pilot: give a fixed ``logit_range`` for the callback to see every pg step.
    progress : bool, default False
        Show a progress bar over steps (or greedy picks).

    Attributes
    ----------
    Every fit sets every one of them (:data:`datamask.core.state.FITTED`); one that does not
    apply to the method or start that ran is ``None``, so a refit leaves nothing stale.

    mask_ : (N,) bool ndarray (numpy or cupy, like the input)
    objective_ : dict
        ``objective``, ``quality``, ``diversity`` of the final mask (see
        :func:`datamask.estimator.evaluate.evaluate`).
    history_ : list of dict
        One record per evaluation point: ``step``, ``seconds``, ``objective``,
        ``quality``, ``diversity``.
    budget_ : int
        S (the rows kept, under a token budget).
    tokens_, covers_all_ : int or None, bool
        Tokens kept (when ``lengths`` were given); True when ``token_budget`` kept every row.
    n_candidates_ : int
        Rows left after pruning (and the redundancy filter, where it filters the candidates
        first; over the picks it leaves them all).
    n_near_duplicates_ : int
        Candidates the redundancy filter dropped (``near_duplicate``); 0 without it. Over
        the picks: the picks it dropped and replaced.
    n_near_duplicates_left_ : int
        Over the picks: picks that still have a better near-duplicate among the picks when
        the filter's rounds ran out (or the pool ran dry); 0 otherwise.
    n_steps_ : int
        Steps run (pg) or iterations (relaxed) or picks (greedy); 0 when there was nothing
        to choose.
    fit_seconds_ : float
    order_ : (S,) int array or None
        ``method="greedy"``: the rows in pick order.
    x_ : (N,) float array or None
        ``method="relaxed"``: the relaxed mask (0 on pruned rows).
    logits_ : (N,) float array or None
        pg: the learned logits; pruned rows are ``-inf``.
    steps_ : int or None
        pg's step budget (``steps``, or the one ``steps=None`` chose).
    lr_, init_, logit_range_ : float, str, (float, float) or None
        The step size, start and initial logit range pg used (``lr``, ``init`` and
        ``logit_range``, or their per-diversity defaults when None; the pilot's choice for
        ``"auto"``); pg only.
    relaxed_iter_ : int or None
        ``init="relaxed"``: the Frank-Wolfe iterations of the start.
    pilot_ : dict or None
        ``"auto"`` only: each candidate range's top-S objective at the end of its pilot.
    stopped_by_ : str or None
        Why pg stopped: ``"steps"`` (the budget), ``"patience"``, ``"start"`` (no gain on
        its start, ``start_patience``) or ``"callback"``.
    start_history_ : list of dict or None
        The start solver's own progress, ``iteration`` and ``objective`` (Frank-Wolfe per
        iteration, under a row or a token budget; stochastic greedy every S/50 picks;
        :mod:`datamask.core.provenance`).
    solver_params_ : :class:`~datamask.estimator.params.SolverParams`
        The solver settings the fit ran with: ``solver_params`` over their defaults (``None``
        where the objective picks its own; ``lr_``, ``init_`` ... say what it picked).
    optimizer_ : dict
        How the selection was made: ``start``, ``pg_steps``, ``pg_improved``, ``pg_gain``,
        ``stopped_by``, ``objective_start``, ``objective_end``
        (:func:`~datamask.core.provenance.optimizer_record`). In a default fit the start
        solver makes the selection and pg only polishes it (often not at all).
    reference_cover_ : :class:`~datamask.core.facility_lists.ReferenceCover` or None
        Facility location on numpy: the scorer's threshold lists by split row (each reference
        row's closest candidates: about 56 MiB at 1M rows and the default's 2,048 reference
        rows, the lists and each candidate's first entry), from which ``select``'s side-by-side reads
        each subset's objective; None elsewhere.

        .. versionadded:: 0.3
    """

    # the constructor and its defaults: DataMaskParams (estimator.params), read without scikit-learn;
    # the checks of every parameter, here and in every config: estimator.constraints (one table)
    _parameter_constraints: dict = PARAMETER_CONSTRAINTS
    _solver_constraints: dict = SOLVER_CONSTRAINTS

    def _check_params(self, n_rows):
        """The parameters (``get_params``), checked; S (None under a token budget)
        and the rows left after pruning."""
        p = self.get_params(deep=False)
        constraints.check_params(p)  # (the one check: estimator.constraints)
        self.solver_params_ = solver_settings(p["solver_params"])
        S = check_budget(n_rows, ratio=p["ratio"], budget=p["budget"], tokens=p["token_budget"], prune=p["prune"])
        return p, S, rows_after_pruning(n_rows, p["prune"])

    # ------------------------------------------------------------------ fit
    def fit(self, embeddings, quality, lengths=None):
        """Learn the selection for one partition.

        Parameters
        ----------
        embeddings : (N, d) float array, numpy or cupy; rows are L2-normalised here if
            they are not already (a zero row is an error)
        quality : (N,) float array, higher is better
        lengths : (N,) array of non-negative integer token counts, optional
            Needed with ``token_budget``; otherwise only counted into ``tokens_``.

        Returns
        -------
        self
        """
        given = self.solver_params if isinstance(self.solver_params, dict) else {}  # (checked in _fit)
        n_threads = given.get("n_threads", SOLVER_PARAMS["n_threads"])
        if n_threads is None:
            return self._fit(embeddings, quality, lengths)
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=int(n_threads)):
            return self._fit(embeddings, quality, lengths)

    def _fit(self, embeddings, quality, lengths=None):
        t0 = time.perf_counter()
        xp = get_namespace(embeddings)
        quality = xp.asarray(quality)
        # DataMask's own fit of an objective with compiled loops loads them anyway: the check casts with them
        if xp is np and self.method == "datamask" and uses_host_kernels(self.diversity):
            from ..core.halfcast import load

            load()
        norms = check_inputs(embeddings, quality)
        N = embeddings.shape[0]
        params, S, n_keep = self._check_params(N)
        T = None if params["token_budget"] is None else int(params["token_budget"])
        t = None if T is None and lengths is None else check_lengths(lengths, N, xp)
        covers_all = T is not None and T >= float(t.sum())
        n_keep = N if covers_all else n_keep
        # Memory: the input stays as given (float16 storage is fine); the only copy is the
        # candidate rows, float32 (or int8 planes, 3/4 of that, for a pairwise pg step),
        # half the partition with the default pruning.
        scale = norms if needs_rescale(norms) else None
        qn = normalize_quality(quality)
        cand = _candidates(qn, n_keep, xp)
        n_near = 0
        div = get_diversity(self.diversity)
        filter_on = self.near_duplicate is not None and not covers_all and (S is None or S < n_keep)
        over_picks = filter_on and filters_picks(self, div, params["method"], T is not None)
        if filter_on and not over_picks:  # the candidates first; else the picks (in the start)
            from ..core.redundancy import without_near_duplicates

            cand, n_near = without_near_duplicates(embeddings, qn, cand, self, S, T, t, scale, xp)
            n_keep = int(cand.shape[0])
        reference = None
        ref_size = self.solver_params_.reference_size
        if div.uses_reference and ref_size is not None and ref_size < N:
            reference = default_rng(xp, self.seed).subset(N, int(ref_size))
        objective = Objective(embeddings, qn, self.lam, div, reference, norms=scale)
        qc = qn[cand]
        lengths_c = None
        if T is not None and not covers_all:
            lengths_c, S = candidate_tokens(t, cand, qc, T, self.prune)
        state = FitState(self, objective, cand, S, method=params["method"], lengths=lengths_c, token_budget=T, t0=t0)
        state.picks_filter = float(self.near_duplicate) if over_picks else None
        if not S or S == n_keep:  # nothing to choose (S 0: no candidate fits the token budget)
            rows = xp.arange(0 if S == 0 else n_keep)
            state.fitted["n_steps"] = 0
        else:
            rows = solve(state, embeddings, scale, qc, xp)
        mask = xp.zeros(N, dtype=bool)
        mask[cand[rows]] = True
        fitted = dict.fromkeys(FITTED)  # every fitted attribute, on every fit
        fitted.update(state.fitted, solver_params=self.solver_params_)
        fitted.update(
            mask=mask,
            budget=int(rows.shape[0]),
            tokens=None if t is None else int(t[mask].sum()),
            covers_all=covers_all,
            objective=(
                objective.evaluate_rows(xp.nonzero(mask)[0])
                if rows.shape[0]
                else dict.fromkeys(("objective", "quality", "diversity"), math.nan)
            ),
            history=state.history,
            n_candidates=int(n_keep),
            n_near_duplicates=int(state.fitted.get("n_near_duplicates") or n_near),
            n_near_duplicates_left=int(state.fitted.get("n_near_duplicates_left") or 0),
            fit_seconds=time.perf_counter() - t0,
        )
        fitted.update(start_history=start_trajectory(fitted, state.history))
        fitted.update(reference_cover=_reference_cover(state, cand, objective.reference))
        fitted.update(optimizer=optimizer_record(self, fitted, params["method"]))
        for name, value in fitted.items():
            setattr(self, name + "_", value)
        return self


def _reference_cover(state, cand, reference):
    """The fit's threshold lists by split row (facility location's numpy scorer, when its
    lists pass ran), else None."""
    fac = state.cache.get("facility")
    if fac is None or fac.xp is not np or fac.method != "neighbors" or fac.pending:
        return None
    from ..core.facility_lists import ReferenceCover

    return ReferenceCover(fac.lists, cand, reference)


def _candidates(qn, n_keep, xp):
    """Quality-aware pruning: the ``n_keep`` best rows by quality (ties by row order), sorted."""
    N = qn.shape[0]
    if n_keep >= N:
        return xp.arange(N)
    return xp.sort(best_first(qn, xp)[:n_keep])


def tokens_after_pruning(lengths, quality, prunes) -> list:
    """The tokens of the rows a fit keeps as candidates after pruning each of ``prunes`` (the
    rows' token counts ``lengths``, numpy; ``quality`` as the fit takes it): a token budget
    must stay below them (:func:`~datamask.core.budget.check_tokens_left`). One sort for all."""
    t = np.asarray(lengths, dtype=np.int64)
    order = best_first(normalize_quality(np.asarray(quality, dtype=np.float64)), np)
    left = np.concatenate([[0], np.cumsum(t[order])])
    return [int(left[rows_after_pruning(t.shape[0], p)]) for p in prunes]
