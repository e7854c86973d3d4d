"""Regression: no early dip of the top-S objective with the paper's uncapped batch.

With ``batch_max=None`` each step scores masks of thousands of rows, so one row's share of a
mask's score is small and its first updates are mostly noise. With a narrow initial range
(quality mapped onto logits 0..2) that noise reordered the rows near the top-S boundary
before the signal built up, and the objective dipped (``benchmarks/results/init_sweep.md``).
The quality-aware default ``logit_range`` starts the policy close to the quality top-S; the
noise then moves only rows whose order hardly matters. pairwise's default start
(``init="relaxed"``) begins at the relaxed solution and has no dip either.
"""

import numpy as np
import pytest

from datamask.core.synthetic import make_corpus
from tests.helpers.pairwise import PairwiseMask, evaluate


@pytest.fixture(scope="module")
def corpus_100k():
    c = make_corpus(100_000, dim=384, seed=0)
    E, q = c["embedding"], c["quality"]
    best = PairwiseMask(method="relaxed").fit(E, q).objective_["objective"]
    rand = evaluate(E, q, np.random.default_rng(0).permutation(100_000)[:10_000])["objective"]
    return E, q, rand, best - rand


def largest_fall(E, q, rand, gain, **kw):
    points = []
    PairwiseMask(
        seed=0,
        callback=lambda est, rec: points.append(rec["objective"]),
        **kw,
        solver_params=dict(batch_max=None, steps=150, eval_every=50, patience=None),
    ).fit(E, q)
    pct = [100 * (p - rand) / gain for p in points]
    return max(a - b for a, b in zip(pct, pct[1:])), pct


def test_paper_batch_has_no_early_dip_with_the_default_initialisation(corpus_100k):
    fall, pct = largest_fall(*corpus_100k, init="quality")
    assert fall < 1.0, pct  # no fall > 1% of the gain between two evaluation points
    assert pct[-1] > pct[0]  # and it has already improved on the quality top-S
    # the old flat initialisation, same run: the dip this test guards against
    old_fall, old = largest_fall(*corpus_100k, init="quality", logit_range=(0.0, 2.0))
    assert old_fall > 1.0, old
    # the relaxed start (pairwise's default) begins at the relaxed rounding and keeps it
    fall, pct = largest_fall(*corpus_100k)
    assert fall < 1.0 and pct[0] > 99.99, pct


@pytest.mark.parametrize(
    "diversity, init, given, used",
    [
        ("pairwise", None, None, (0.0, 4.0)),  # the relaxed start (tests/core/test_relaxed_start.py)
        ("pairwise", "quality", None, "auto"),  # a pilot picks 0..2 or 0..16 (tests/core/test_auto_start.py)
        ("disf", None, None, (0.0, 4.0)),  # the relaxed start (benchmarks/results/defaults_disf.md)
        ("disf", "quality", None, (0.0, 16.0)),
        ("facility", None, None, (0.0, 4.0)),  # the stochastic greedy start (tests/core/test_stochastic_start.py)
        ("facility", "quality", None, (0.0, 2.0)),  # coverage is far from the quality top-S: a flat start
        ("pairwise", None, (1.0, 3.0), (1.0, 3.0)),
    ],
)
def test_logit_range_default_depends_on_the_diversity(diversity, init, given, used):
    c = make_corpus(600, dim=16, seed=1)
    kw = dict(diversity=diversity, init=init, logit_range=given, reference_size=64)
    m = PairwiseMask(**kw, seed=0, solver_params=dict(steps=2, eval_every=1))
    m.fit(c["embedding"], c["quality"])
    if used == "auto":
        used = m.logit_range_
        assert used == max(m.pilot_, key=m.pilot_.get)
    assert m.logit_range_ == used
    # step 0 is the initialisation: candidates' logits span exactly the range
    L0 = PairwiseMask(**kw, solver_params=dict(steps=0)).fit(c["embedding"], c["quality"]).logits_
    L0 = L0[np.isfinite(L0)]
    assert (L0.min(), L0.max()) == pytest.approx(used)


def test_config_and_flag_fill_logit_range():
    from datamask.errors import ConfigError
    from datamask.pipeline.config import SelectConfig

    assert SelectConfig(input="i", output="o").estimator_params(0)["solver_params"] is None
    cfg = SelectConfig.from_dict({"input": "i", "output": "o", "solver_params": '{"logit_range": [0, 8]}'})
    assert cfg.estimator_params(0)["solver_params"] == {"logit_range": [0, 8]}
    assert cfg.solver("logit_range") == [0, 8] and cfg.solver("steps") is None  # given, and a default
    yaml = SelectConfig.from_dict({"input": "i", "output": "o", "solver_params": {"logit_range": None}})
    assert yaml.solver("logit_range") is None
    with pytest.raises(
        ConfigError,
        match=r"^solver_params \(--solver-params\): logit_range must be two numbers LOW,HIGH with LOW <= HIGH",
    ):
        SelectConfig.from_dict({"input": "i", "output": "o", "solver_params": {"logit_range": [8, 0]}})
