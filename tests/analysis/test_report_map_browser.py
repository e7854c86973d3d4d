"""The report's corpus map in headless Chromium, on a corpus of 30 clusters with long names:
the names drawn never overlap (at the first view, zoomed out and zoomed in), the largest
clusters are the ones named, and the search box finds a selected row that is not in the
map's sample (and a sampled one). Screenshot ``report-map-search.png`` beside the others
(``DATAMASK_SCREENSHOTS``, see test_report_browser.py)."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.analysis.test_report import chromium  # noqa: F401  (the fixture: installs or skips)
from tests.analysis.test_report_browser import _READY, _open, _shots, browser  # noqa: F401

# every drawn name's box on the page (the cluster tab's label set: one element per name)
_BOXES = """() => {
  const doc = Bokeh.documents[0];
  const view = Bokeh.index.find_one(doc.get_model_by_name('map-labels-cluster'));
  const plot = Bokeh.index.find_one(doc.get_model_by_name('map-cluster')).canvas_view.el.getBoundingClientRect();
  const names = doc.get_model_by_name('corpus-map-labels').data.label;
  const boxes = view.els.filter((e) => e.isConnected && e.style.display !== 'none' && e.textContent)
    .map((e) => { const r = e.getBoundingClientRect();
                  return {text: e.textContent, l: r.left, t: r.top, r: r.right, b: r.bottom}; });
  return {boxes, names: Array.from(names), plot: {l: plot.left, t: plot.top, r: plot.right, b: plot.bottom}};
}"""


def _clustered_corpus(directory, n=1500, k=30, dim=16, seed=0):
    """``k`` clusters of uneven size, each text of its cluster's own six made-up words (so
    each name is three long words), a ``cluster`` column, in two files."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = [["".join(rng.choice(letters, rng.integers(6, 11))) for _ in range(6)] for _ in range(k)]
    topic = rng.choice(k, size=n, p=rng.dirichlet(np.full(k, 2.0)))
    E = (rng.normal(size=(k, dim))[topic] + 0.3 * rng.normal(size=(n, dim))).astype(np.float32)
    texts = [f"doc {i}: " + " ".join(rng.choice(vocab[t] + ["the", "system"], 25)) for i, t in enumerate(topic)]
    quality = rng.normal(size=n).astype(np.float32)
    directory.mkdir(parents=True)
    for f, (lo, hi) in enumerate([(0, n // 2), (n // 2, n)]):
        t = pa.table(
            {
                "id": np.arange(lo, hi, dtype=np.int64),
                "text": texts[lo:hi],
                "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E[lo:hi].reshape(-1)), dim),
                "quality": quality[lo:hi],
                "cluster": topic[lo:hi].astype(np.int32),
            }
        )
        pq.write_table(t, directory / f"part-{f}.parquet")
    return topic


def _assert_apart(page, least):
    got = page.evaluate(_BOXES)
    boxes = got["boxes"]
    assert len(boxes) >= least, got
    assert sorted(b["text"] for b in boxes) == sorted(got["names"])  # the drawn ones are the chosen ones
    for i, a in enumerate(boxes):
        p = got["plot"]
        assert a["l"] >= p["l"] - 1 and a["r"] <= p["r"] + 1 and a["t"] >= p["t"] - 1 and a["b"] <= p["b"] + 1, a
        for b in boxes[i + 1 :]:
            apart = a["r"] <= b["l"] or b["r"] <= a["l"] or a["b"] <= b["t"] or b["b"] <= a["t"]
            assert apart, (a, b)
    return boxes


def test_map_names_never_overlap_and_the_search_finds_rows_beyond_the_sample(browser, tmp_path):  # noqa: F811
    from distributed import Client, LocalCluster

    from datamask.analysis.report import build_report
    from datamask.pipeline.config import SelectConfig
    from datamask.stages.split.select import run_select

    topic = _clustered_corpus(tmp_path / "in")
    cfg = SelectConfig(
        input=str(tmp_path / "in"), output=str(tmp_path / "o"), split_size=750, quiet=True, solver_params=dict(steps=20)
    )
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc,
        Client(lc) as client,
    ):
        run_select(cfg, client=client)
    page, refused = _open(browser, build_report(tmp_path / "o", sample_rows=300))
    page.wait_for_function(_READY, timeout=90_000)
    page.locator(".corpus-map").scroll_into_view_if_needed()
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('corpus-map-labels').data.label.length > 0")
    page.wait_for_timeout(500)
    boxes = _assert_apart(page, 5)
    # the largest cluster (by its sampled rows) is among the names drawn
    sample_ids = [
        int(i) for i in page.evaluate("() => Bokeh.documents[0].get_model_by_name('corpus-map-points').data.id")
    ]
    largest = int(np.bincount(topic[sample_ids]).argmax())
    assert any(b["text"].startswith(f"{largest}: ") for b in boxes), (largest, boxes)
    # zoomed out, names that would meet are dropped; zoomed in, the view's names stay apart
    plot = page.locator(".corpus-map").bounding_box()
    page.mouse.move(plot["x"] + plot["width"] / 2, plot["y"] + plot["height"] / 2)
    for delta in (600, -900):
        page.mouse.wheel(0, delta)
        page.wait_for_timeout(700)
        _assert_apart(page, 1)
    # a selected row beyond the sample: found, said so, a star at its cluster's centre
    kept = pq.read_table(tmp_path / "o" / "data").column("id").to_pylist()
    beyond = next(i for i in kept if i not in set(sample_ids))
    search = page.locator("input[placeholder^='find a row by id']")

    def answer(query):  # type the id, press Enter: the answer line's text, once it is drawn
        search.fill(query)
        search.press("Enter")
        page.get_by_text(f"id {query}", exact=False).first.wait_for(timeout=10_000)  # drawn on the page
        html = page.evaluate("() => Bokeh.documents[0].get_model_by_name('map-search-result').text")
        return re.sub(r"<[^>]+>", "", html)

    text = answer(str(beyond))
    assert text.startswith(f"id {beyond}: selected, not among the map's sampled rows; {topic[beyond]}: "), text
    assert text.endswith("marked (a star) at its cluster's centre"), text
    star = page.evaluate("() => Bokeh.documents[0].get_model_by_name('corpus-map-star').data.x.length")
    assert star == 1
    page.screenshot(path=str(_shots(tmp_path) / "report-map-search.png"))
    # a sampled row: on the map, selected there; an unknown id: not found, and where it looked
    assert answer(str(sample_ids[3])).startswith(f"id {sample_ids[3]}: on the map (a star)")
    assert page.evaluate("() => Bokeh.documents[0].get_model_by_name('corpus-map-points').selected.indices") == [3]
    text = answer("no-such-id")
    assert text.startswith("id no-such-id: not found among the map's 300 sampled rows and the "), text
    assert refused == [], refused
    page.close()


@pytest.mark.parametrize("proxy", [False, True])
def test_pareto_labels_do_not_overlap_when_points_nearly_coincide(proxy):
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from datamask.analysis.report.figures import pareto_plot

    t = pd.DataFrame(
        {"quality": [0.512, 0.5121, 0.40, 0.30, 0.51], "pairwise": [-0.301, -0.3009, -0.25, -0.32, -0.302]},
        index=pd.Index(["datamask", "greedy", "random", "topk", "relaxed"], name="method"),
    )
    if proxy:
        t["proxy_loss"] = [5.01, 5.02, 5.3, 5.1, 5.0]
    fig = pareto_plot(t)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    texts = [a for a in fig.axes[0].texts]
    assert sorted(a.get_text().split("\n")[0] for a in texts) == sorted(t.index)
    boxes = [matplotlib.text.Text.get_window_extent(a, r) for a in texts]  # the text, not its line to the point
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)
