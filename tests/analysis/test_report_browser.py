"""The reports in a real browser: headless Chromium (the system's, driven by Playwright), every
request other than a local file refused. The select and compare reports draw their corpus
map (every sampled point in bokeh's data source, a WebGL canvas) and hovering a point shows
its text; the dedup report renders its groups. Screenshots go to ``docs/report-*.png``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis.test_report import chromium  # noqa: F401  (the fixture: installs or skips)
from tests.analysis.test_report_map import text_corpus
from tests.helpers.browser import launch_options, offline_page

DOCS = Path(__file__).resolve().parents[2] / "docs"
_READY = (
    "() => window.Bokeh && Bokeh.documents.length > 0 && "
    "Bokeh.index.find_one(Bokeh.documents[0].get_model_by_name('map-cluster')) != null"
)
# a point's position on the page: the cluster tab's plot view maps data to canvas pixels
_POINT = """(i) => {
  const doc = Bokeh.documents[0];
  const src = doc.get_model_by_name('corpus-map-points');
  const view = Bokeh.index.find_one(doc.get_model_by_name('map-cluster'));
  const rect = view.canvas_view.el.getBoundingClientRect();
  const canvas = view.canvas_view.el.shadowRoot ? view.canvas_view.el.shadowRoot.querySelector('canvas') : null;
  return {n: src.get_length(), x: rect.left + view.frame.x_scale.compute(src.data.x[i]),
          y: rect.top + view.frame.y_scale.compute(src.data.y[i]), snippet: src.data.snippet[i],
          id: src.data.id[i], webgl: !!(canvas || document.querySelector('canvas'))};
}"""


@pytest.fixture(scope="module")
def browser(chromium):  # noqa: F811
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(**dict(launch_options(), executable_path=chromium))
        yield b
        b.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("browser") / "corpus"
    text_corpus(d, n_rows=1200, n_files=2)
    return d


def _open(browser, page_path):
    page, refused = offline_page(browser)
    page.goto(Path(page_path).resolve().as_uri())
    return page, refused


def _check_map(browser, page_path, rows, shot):
    page, refused = _open(browser, page_path)
    page.wait_for_function(_READY, timeout=90_000)
    page.locator(".corpus-map").scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    # the data source holds every sampled row, and a point sits where the plot draws it
    for i in (0, rows // 2):
        p = page.evaluate(_POINT, i)
        assert p["n"] == rows and p["webgl"]
        page.mouse.move(p["x"], p["y"])
        tip = page.locator(".map-tip").filter(has_text=p["snippet"][:40]).first
        tip.wait_for(state="visible", timeout=15_000)
        assert f"id {p['id']}" in tip.inner_text()  # the hovered point's own id beside its text
    page.screenshot(path=str(DOCS / shot))
    assert refused == [], refused  # nothing fetched from a network
    page.close()


def test_select_report_map_draws_and_hovers(browser, corpus, tmp_path):
    from distributed import Client, LocalCluster

    from datamask.analysis.report import build_report
    from datamask.pipeline.config import SelectConfig
    from datamask.pipeline.stages.select import run_select

    cfg = SelectConfig(input=str(corpus), output=str(tmp_path / "o"), split_size=600, steps=40, quiet=True)
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc,
        Client(lc) as client,
    ):
        run_select(cfg, client=client)
    page = build_report(tmp_path / "o", sample_rows=600)
    text = page.read_text()
    assert "<h2>Kept and dropped</h2>" in text and "doc " in text
    _check_map(browser, page, 600, "report-select.png")


def test_compare_report_map_draws_and_hovers(browser, corpus, tmp_path):
    from datamask.analysis.compare_run import run_compare
    from datamask.pipeline.config import SelectConfig

    cfg = SelectConfig(split_size=600, ratio=0.2, steps=40, eval_every=20, seed=0)
    run_compare(corpus, tmp_path / "o", cfg=cfg, methods=("datamask", "topk", "random"), sample_rows=800)
    _check_map(browser, tmp_path / "o" / "report" / "index.html", 800, "report-compare.png")


def test_dedup_report_renders_offline(browser, tmp_path, address):
    from datamask.analysis.report import build_report
    from datamask.cli import main
    from tests.helpers.dedup_data import write_planted

    write_planted(tmp_path / "in")
    argv = ["dedup", str(tmp_path / "in"), str(tmp_path / "o"), "--scheduler", address, "--quiet", "--no-report"]
    assert main(argv) == 0
    page, refused = _open(browser, build_report(tmp_path / "o"))
    assert page.locator("table.dedup").count() > 0 and page.locator("h1").inner_text() == "datamask dedup"
    page.screenshot(path=str(DOCS / "report-dedup.png"))
    assert refused == []
    page.close()
