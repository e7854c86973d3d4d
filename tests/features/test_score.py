"""The score stage's building blocks chained over Dask: components -> corpus stats -> quality."""

from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from datamask.features.aggregate import aggregate_frame, compute_stats
from datamask.features.score import components_meta, count_unusable, score_components_frame

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"


@pytest.fixture(scope="module")
def corpus():
    return pd.read_json(CORPUS, lines=True)


def test_meta_matches_output(corpus):
    for kw in [{}, {"heuristic_components": True}, {"heuristics": False, "n_tokens": True}]:
        out = score_components_frame(corpus.head(5), **kw)
        meta = components_meta(corpus.iloc[:0], **kw)
        assert list(out.columns) == list(meta.columns)
        assert list(out.dtypes) == list(meta.dtypes)


def test_two_pass_scoring_over_dask_ranks_prose_first(corpus):
    ddf = dd.from_pandas(corpus, npartitions=4)
    parts = ddf.map_partitions(score_components_frame, "text", meta=components_meta(ddf._meta))
    with dask.config.set(scheduler="threads"):
        stats = compute_stats(parts, ["quality_heuristics"])
        out = parts.map_partitions(aggregate_frame, {"quality_heuristics": 1.0}, stats, normalize="rank").compute()
    assert len(out) == len(corpus) and out["quality"].dtype == np.float32
    assert roc_auc_score(out["good"], out["quality"]) > 0.95
    assert (out["n_tokens"] == corpus["text"].str.split().str.len()).all()


def test_unusable_rows_are_kept_scored_zero_and_counted():
    df = pd.DataFrame({"id": [1, 2, 3], "text": ["Plain words in a plain sentence.", None, ""]})
    out = score_components_frame(df)
    assert out["quality_heuristics"].tolist()[1:] == [0.0, 0.0]
    assert out["n_tokens"].tolist() == [6, 0, 0]
    assert count_unusable(df) == 2
