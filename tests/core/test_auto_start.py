"""The quality-aware start's default (``logit_range="auto"``) holds where a fixed wide range does not.

On clustered data whose quality top-S is crowded (quality set by the cluster, tight
clusters, high-quality near-duplicate groups) and a low ``lam``, the optimum is far from the
quality top-S: a start over 0..16 nats (the previous default) keeps the rows the optimum
needs so far down that they are rarely drawn, while 0..2 lets pg reach them. The pilot
finds this on its own. Shape of a case in benchmarks/results/defaults.md, shrunk.
(pairwise's default start is now ``init="relaxed"``: tests/core/test_relaxed_start.py.)
"""

import numpy as np
import pytest

from datamask.core.start import AUTO_RANGES
from tests.helpers.crowded import crowded_corpus
from tests.helpers.pairwise import PairwiseMask


@pytest.fixture(scope="module")
def crowded():
    return crowded_corpus()


def pct(m, rand, gain):
    return 100 * (m.objective_["objective"] - rand) / gain


@pytest.mark.slow
def test_default_start_reaches_greedy_where_the_wide_range_does_not(crowded):
    E, q, rand, gain = crowded
    m = PairwiseMask(lam=0.2, solver_params=dict(steps=3000, init="quality")).fit(E, q)  # the quality-aware default
    assert m.logit_range_ == (0.0, 2.0)
    assert set(m.pilot_) == set(AUTO_RANGES)
    assert m.pilot_[(0.0, 2.0)] > m.pilot_[(0.0, 16.0)]
    assert pct(m, rand, gain) >= 99.5
    wide = PairwiseMask(lam=0.2, solver_params=dict(steps=3000, init="quality", logit_range=(0.0, 16.0))).fit(E, q)
    assert pct(wide, rand, gain) < 99.0


def test_auto_is_the_pilot_winner_and_repeats_its_run(crowded):
    E, q, _, _ = crowded
    kw = dict(lam=0.2, steps=400, eval_every=50, patience=None, init="quality")
    m = PairwiseMask(**kw).fit(E, q)
    assert m.logit_range_ == max(m.pilot_, key=m.pilot_.get)
    fixed = PairwiseMask(**kw, solver_params=dict(logit_range=m.logit_range_)).fit(E, q)
    np.testing.assert_array_equal(m.mask_, fixed.mask_)  # same seed, same draws: the same run
    assert [h["objective"] for h in m.history_] == [h["objective"] for h in fixed.history_]


def test_logit_range_rejects_other_strings():
    with pytest.raises(ValueError, match="logit_range must be auto or two numbers"):
        PairwiseMask(solver_params=dict(logit_range="wide")).fit(np.eye(4, dtype=np.float32), np.arange(4.0))
