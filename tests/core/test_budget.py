"""The one budget check (datamask.core.budget): the estimator, the methods' registry, select's
plan and its splits all call it, so a budget that does not fit fails alike everywhere, in one
line naming the option as its user spells it."""

from __future__ import annotations

import pytest

from datamask.core.budget import (
    check_budget,
    check_corpus_tokens,
    check_token_budget,
    row_budget,
    rows_after_pruning,
)
from tests.helpers.pairwise import PairwiseMask


def test_the_row_rule():
    assert row_budget(1000, ratio=0.1) == 100 and row_budget(1000, ratio=0.1, budget=7) == 7
    assert rows_after_pruning(1001, 0.5) == 501
    assert check_budget(1000, ratio=0.1, prune=0.5) == 100
    assert check_budget(1000, budget=600, prune=0.5, prunes=False) == 600  # top-k does not prune
    assert check_budget(1000, ratio=0.1, tokens=5000) is None  # a token budget: no S


@pytest.mark.parametrize(
    "kw,flags,message",
    [
        (dict(budget=1200), True, "budget 1200 is larger than the split's 1000 rows; lower --budget or use --ratio"),
        (dict(budget=1200), False, "budget 1200 is larger than the split's 1000 rows; lower budget or use ratio"),
        (dict(ratio=0.0001), True, "ratio 0.0001 of 1000 rows rounds to 0 rows; raise --ratio or --split-size"),
        (
            dict(budget=800, prune=0.5),
            True,
            "budget 800 is larger than the 500 rows left after pruning (prune 0.5 of 1000 rows); "
            "lower --prune, --ratio or --budget",
        ),
        (dict(tokens=0), True, "--tokens must be a positive integer token budget, got 0; e.g. --tokens 200k"),
        (dict(tokens=2.5), False, "token_budget must be a positive integer token budget, got 2.5"),
        (dict(tokens=100, budget=5), False, "give budget (rows) or token_budget (tokens), not both"),
    ],
)
def test_one_line_naming_the_option_and_the_fix(kw, flags, message):
    with pytest.raises(ValueError) as e:
        check_budget(1000, **kw, flags=flags)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_token_budgets():
    check_token_budget(5)
    check_corpus_tokens(100, 100)
    with pytest.raises(ValueError, match=r"token budget 101 is larger than the corpus's 100 tokens \(counted from x\)"):
        check_corpus_tokens(101, 100, "x")


def test_every_caller_checks_through_it():
    """The estimator, the registry and select's split share the check and its messages."""
    import numpy as np

    from datamask.errors import DataError
    from datamask.methods.registry import split_budget
    from datamask.pipeline.config import SelectConfig

    E = np.eye(20, 8, dtype=np.float32) + 0.01
    with pytest.raises(ValueError, match="budget 30 is larger than the split's 20 rows; lower budget"):
        PairwiseMask(budget=30).fit(E, np.arange(20.0))
    with pytest.raises(
        DataError, match=r"^f \(rows 0-20\): budget 30 is larger than the split's 20 rows; lower --budget"
    ):
        split_budget(20, SelectConfig(budget=30), where="f (rows 0-20)")
    assert split_budget(20, SelectConfig(budget=15, method="topk")).rows == 15  # top-k does not prune
    with pytest.raises(DataError, match="left after pruning"):
        split_budget(20, SelectConfig(budget=15, prune=0.5))
