"""The notebook's corpus-map widget: every row of a Dask DataFrame projected on the workers
(or a stated sample), clusters named by their words, and the lasso's rows as a DataFrame
(jupyter-scatter's own selection, set here as its lasso sets it)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.analysis.test_report_map import TOPICS, text_corpus

pytest.importorskip("jscatter", reason="the notebook extra: pip install 'datamask[notebook]'")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("widget") / "corpus"
    names, topic = text_corpus(d, n_rows=1200, n_files=2)
    return d, names, topic


def test_every_row_is_drawn_with_its_cluster_named_and_the_lasso_returns_rows(corpus):
    import dask

    import datamask.dask as dmd
    from datamask.analysis.report.widget import CorpusMapWidget, widget_frame

    d, names, topic = corpus
    with dask.config.set(scheduler="threads"):
        frame = widget_frame(dmd.read(d, split_size=400), fit_rows=600)
    assert len(frame) == 1200 and frame.attrs["sampled"] is False and frame.attrs["rows"] == 1200
    assert sorted(frame["id"].astype(int)) == list(range(1200))  # every row, once
    assert np.isfinite(frame[["x", "y"]].to_numpy()).all()
    t = topic[frame["id"].astype(int).to_numpy()]
    # k-means on the fit sample (8 clusters for 600 rows): each cluster within one topic, named by its words
    assert frame["cluster"].nunique() == 8
    for c, rows in frame.groupby("cluster"):
        share = np.bincount(t[rows.index], minlength=len(names)) / len(rows)
        words = TOPICS[names[int(share.argmax())]].split()
        assert share.max() > 0.9 and any(w in str(rows["label"].iloc[0]) for w in words), (
            c,
            share,
            rows["label"].iloc[0],
        )
    m = CorpusMapWidget(frame)
    assert "all 1,200 rows" in m.note()
    m.scatter.selection([17, 3, 900])  # what the lasso leaves in the widget
    picked = m.selection
    assert list(picked.index) == [3, 17, 900] and list(picked.columns) == list(frame.columns)
    assert picked["id"].tolist() == frame["id"].iloc[[3, 17, 900]].tolist()
    for by in ("quality", "selected", "cluster"):
        assert m.colour(by).colouring == by
    with pytest.raises(ValueError, match="colour must be one of cluster, quality, selected"):
        m.colour("size")


def test_a_frame_over_the_cap_is_a_stated_sample(corpus):
    import dask

    import datamask.dask as dmd
    from datamask.analysis.report.widget import CorpusMapWidget, widget_frame

    d, _, _ = corpus
    with dask.config.set(scheduler="threads"):
        frame = widget_frame(dmd.read(d, split_size=400), max_rows=300, fit_rows=200)
    assert frame.attrs["sampled"] is True and frame.attrs["rows"] == 1200
    assert 200 < len(frame) < 400 and frame["id"].is_unique
    assert f"a seeded sample of {len(frame):,} of its 1,200 rows" in CorpusMapWidget(frame).note()
