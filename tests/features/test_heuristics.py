"""Heuristic quality scores on the owned corpus: prose must rank above boilerplate and spam."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from datamask.features.heuristics import HEURISTICS, heuristic_scores, score_heuristics_frame

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"


@pytest.fixture(scope="module")
def scored():
    df = pd.read_json(CORPUS, lines=True)
    return score_heuristics_frame(df, "text")


def test_all_columns_in_unit_interval(scored):
    cols = [f"quality_heuristic_{n}" for n in HEURISTICS] + ["quality_heuristics"]
    for c in cols:
        v = scored[c].to_numpy()
        assert v.dtype == np.float32, c
        assert np.isfinite(v).all() and v.min() >= 0 and v.max() <= 1, c


def test_prose_ranks_above_every_other_kind(scored):
    means = scored.groupby("kind")["quality_heuristics"].mean()
    for kind in ["boilerplate", "links", "code", "repeated", "spam"]:
        assert means["prose"] > means[kind] + 0.15, (kind, means.to_dict())
    auc = roc_auc_score(scored["good"], scored["quality_heuristics"])
    assert auc > 0.95


@pytest.mark.parametrize(
    "kind,rule",
    [
        ("repeated", "dup_lines"),
        ("spam", "top_2gram"),
        ("spam", "stop_words"),
        ("links", "url_ratio"),
        ("boilerplate", "boilerplate_lines"),
        ("code", "line_punct"),
    ],
)
def test_each_rule_catches_its_own_failure(scored, kind, rule):
    col = f"quality_heuristic_{rule}"
    bad = scored.loc[scored["kind"] == kind, col].mean()
    good = scored.loc[scored["kind"] == "prose", col].mean()
    assert good > 0.9 and bad < 0.5, (good, bad)


def test_scores_are_continuous_not_pass_fail():
    base = (
        "Rivers carry sediment from the mountains and drop it where the current slows down. "
        "Meanders form as water erodes the outside of each bend. "
    )
    few, some = base.split()[:20], (base * 3).split()
    s = heuristic_scores([" ".join(few), " ".join(some)], names=["word_count"])
    assert 0 < s["word_count"][0] < s["word_count"][1] <= 1


def test_more_duplicated_lines_score_lower():
    lines = [f"Line number {i} says something different." for i in range(10)]
    docs = ["\n".join(lines), "\n".join(lines[:9] + lines[:1]), "\n".join(lines[:8] + lines[:2])]
    s = heuristic_scores(docs, names=["dup_lines"])["dup_lines"].to_numpy()
    assert s[0] > s[1] > s[2]


def test_null_and_empty_texts_score_zero_and_are_kept():
    df = pd.DataFrame({"id": [1, 2, 3], "text": ["A short but honest sentence about gardens.", None, "  "]})
    out = score_heuristics_frame(df, components=False)
    assert len(out) == 3 and list(out.columns) == ["id", "text", "quality_heuristics"]
    assert out["quality_heuristics"].tolist()[1:] == [0.0, 0.0]


def test_combine_modes_order_and_unknown_names():
    doc = "BUY NOW!!! cheap watches cheap watches cheap watches BUY NOW!!!"
    g, m, n = (heuristic_scores([doc], combine=c)["heuristics"][0] for c in ("geometric", "mean", "min"))
    assert n <= g <= m
    with pytest.raises(ValueError, match="unknown heuristics"):
        heuristic_scores([doc], names=["word_count", "vibes"])
    with pytest.raises(ValueError, match="missing"):
        score_heuristics_frame(pd.DataFrame({"body": ["x"]}))
