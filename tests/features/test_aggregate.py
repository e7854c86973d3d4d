"""Score aggregation: corpus statistics out-of-core, normalisation, weights, domains, bins."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

from datamask.features.aggregate import (
    ColumnStats,
    aggregate_frame,
    check_score_columns,
    compute_stats,
    normalize,
    parse_weights,
)


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(0)
    n = 6000
    return pd.DataFrame(
        {
            "edu": rng.integers(0, 6, n).astype("float32"),  # few distinct values (like FineWeb-Edu)
            "dclm": rng.beta(2, 5, n),  # continuous, skewed
            "domain": rng.choice(["news", "forum", "wiki"], n),
        }
    )


@pytest.fixture(scope="module")
def stats(corpus):
    return compute_stats(dd.from_pandas(corpus, npartitions=6), ["edu", "dclm"])


def test_parse_weights():
    assert parse_weights("fineweb_edu:1,dclm:0.5") == {"fineweb_edu": 1.0, "dclm": 0.5}
    assert parse_weights("a, b:2") == {"a": 1.0, "b": 2.0}
    for bad, msg in [("a:x", "not a number"), ("a:1,a:2", "twice"), ("", "empty"), ("a:inf", "finite")]:
        with pytest.raises(ValueError, match=msg):
            parse_weights(bad)


def test_dask_stats_match_exact_stats(corpus, stats):
    exact = compute_stats(corpus, ["edu", "dclm"])
    for c in ["edu", "dclm"]:
        a, b = stats[c], exact[c]
        assert a.count == b.count == len(corpus)
        assert a.min == b.min and a.max == b.max
        assert a.mean == pytest.approx(b.mean) and a.std == pytest.approx(b.std)
        assert np.all(np.diff(a.quantile_values) >= 0)
    assert ColumnStats.from_dict(stats["dclm"].to_dict()) == stats["dclm"]


def test_rank_is_the_corpus_percentile(corpus, stats):
    exact = rankdata(corpus["dclm"]) / len(corpus)
    got = normalize(corpus["dclm"], stats["dclm"], "rank")
    assert np.abs(got - exact).max() < 0.01
    # tied values get the mid-rank of their group, not the ends
    edu = normalize(corpus["edu"], stats["edu"], "rank")
    mid = pd.Series(rankdata(corpus["edu"]) / len(corpus)).groupby(corpus["edu"].to_numpy()).mean()
    assert np.abs(pd.Series(edu).groupby(corpus["edu"].to_numpy()).mean() - mid).max() < 0.03


def test_minmax_and_zscore(corpus, stats):
    mm = normalize(corpus["dclm"], stats["dclm"], "minmax")
    assert mm.min() == 0 and mm.max() == 1
    z = normalize(corpus["dclm"], stats["dclm"], "zscore")
    assert abs(z.mean()) < 1e-9 and z.std(ddof=1) == pytest.approx(1)
    const = compute_stats(pd.DataFrame({"c": [3.0] * 5}), ["c"])["c"]
    assert set(normalize([3.0], const, "minmax")) == {0.5} and set(normalize([3.0], const, "rank")) == {0.5}


def test_weighted_sum_is_partition_independent(corpus, stats):
    w = {"edu": 1.0, "dclm": 2.0}
    whole = aggregate_frame(corpus, w, stats, normalize="minmax")["quality"].to_numpy()
    parts = np.concatenate(
        [
            aggregate_frame(p, w, stats, normalize="minmax")["quality"].to_numpy()
            for p in (corpus.iloc[i : i + 900] for i in range(0, len(corpus), 900))
        ]
    )
    assert whole.dtype == np.float32 and np.array_equal(whole, parts)
    expected = corpus["edu"] / 5 + 2 * (corpus["dclm"] - corpus["dclm"].min()) / np.ptp(corpus["dclm"])
    assert np.allclose(whole, expected, atol=1e-5)


def test_bins_reproduce_the_paper_integer_scale(corpus, stats):
    out = aggregate_frame(corpus, {"edu": 1, "dclm": 1}, stats, normalize="rank", bins=6)["quality"]
    assert np.all(out == np.round(out)) and out.min() >= 0 and out.max() <= 10
    single = aggregate_frame(corpus, {"dclm": 1}, stats, normalize="rank", bins=6)["quality"]
    counts = single.value_counts()
    assert sorted(counts.index) == [0, 1, 2, 3, 4, 5]
    assert counts.min() > 0.8 * len(corpus) / 6  # equal-frequency bins under rank
    with pytest.raises(ValueError, match="bounded"):
        aggregate_frame(corpus, {"dclm": 1}, stats, normalize="zscore", bins=4)


def test_per_domain_weights(corpus, stats):
    out = aggregate_frame(corpus, {"edu": 1.0}, stats, domain_column="domain", domain_weights={"news": {"dclm": 1.0}})
    news = out["domain"] == "news"
    assert np.allclose(out.loc[~news, "quality"], corpus.loc[~news, "edu"] / 5, atol=1e-6)
    assert np.allclose(out.loc[news, "quality"], normalize(corpus.loc[news, "dclm"], stats["dclm"]), atol=1e-6)


def test_per_domain_weights_match_an_integer_domain_column(corpus, stats):
    """Keys from the command line or YAML are text (``--domain-weights 3=dclm:1``); a cluster column
    is int32: the rows of cluster 3 still take its weights."""
    df = corpus.assign(cluster=(np.arange(len(corpus)) % 4).astype(np.int32))
    out = aggregate_frame(df, {"edu": 1.0}, stats, domain_column="cluster", domain_weights={"3": {"dclm": 1.0}})
    three = (df["cluster"] == 3).to_numpy()
    assert three.any() and not three.all()
    assert np.allclose(out.loc[three, "quality"], normalize(df.loc[three, "dclm"], stats["dclm"]), atol=1e-6)
    assert np.allclose(out.loc[~three, "quality"], df.loc[~three, "edu"] / 5, atol=1e-6)


def test_nan_scores_and_absent_columns_are_clear_errors(corpus, stats):
    bad = corpus.copy()
    bad.loc[17, "dclm"] = np.nan
    with pytest.raises(ValueError, match=r"'dclm' has 1 NaN"):
        compute_stats(dd.from_pandas(bad, npartitions=3), ["dclm"])
    with pytest.raises(ValueError, match=r"'dclm' has 1 NaN"):
        aggregate_frame(bad, {"dclm": 1}, stats)
    with pytest.raises(ValueError, match=r"\['fineweb'\].*absent"):
        check_score_columns(corpus.columns, {"fineweb": 1, "edu": 1})
    with pytest.raises(ValueError, match="absent"):
        compute_stats(corpus, ["fineweb"])
    with pytest.raises(ValueError, match="not a number"):
        compute_stats(corpus, ["domain"])
    with pytest.raises(ValueError, match="domain column"):
        aggregate_frame(corpus, {"edu": 1}, stats, domain_weights={"news": {"edu": 1}})
