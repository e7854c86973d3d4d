"""The reports in a real browser: headless Chromium (the system's, driven by Playwright), every
request other than a local file refused. The select and compare reports draw their corpus
map (every sampled point in bokeh's data source, a WebGL canvas) and hovering a point shows
its text; the dedup and search reports render their tables and figures. Screenshots
``report-*.png`` go to ``tmp_path``, or to the folder ``DATAMASK_SCREENSHOTS`` names
(relative to the repository: ``DATAMASK_SCREENSHOTS=docs`` refreshes ``docs/``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.analysis.test_report import chromium  # noqa: F401  (the fixture: installs or skips)
from tests.analysis.test_report_map import text_corpus
from tests.helpers.browser import launch_options, offline_page

ROOT = Path(__file__).resolve().parents[2]
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


def _shots(tmp_path) -> Path:
    """Where the screenshots go: ``$DATAMASK_SCREENSHOTS`` when set, else the test's tmp_path."""
    where = os.environ.get("DATAMASK_SCREENSHOTS")
    path = ROOT / where if where else Path(tmp_path)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _open(browser, page_path):
    page, refused = offline_page(browser)
    page.goto(Path(page_path).resolve().as_uri())
    return page, refused


def _check_map(browser, page_path, rows, shot):  # shot: the screenshot's path
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
    page.screenshot(path=str(shot))
    assert refused == [], refused  # nothing fetched from a network
    page.close()


def test_select_report_map_draws_and_hovers(browser, corpus, tmp_path):
    from distributed import Client, LocalCluster

    from datamask.analysis.report import build_report
    from datamask.pipeline.config import SelectConfig
    from datamask.stages.split.select import run_select

    cfg = SelectConfig(
        input=str(corpus), output=str(tmp_path / "o"), split_size=600, quiet=True, solver_params=dict(steps=40)
    )
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc,
        Client(lc) as client,
    ):
        run_select(cfg, client=client)
    page = build_report(tmp_path / "o", sample_rows=600)
    text = page.read_text()
    assert "<h2>Kept and dropped</h2>" in text and "doc " in text
    _check_map(browser, page, 600, _shots(tmp_path) / "report-select.png")


def test_compare_report_map_draws_and_hovers(browser, corpus, tmp_path):
    from datamask.pipeline.config import SelectConfig
    from datamask.stages.corpus.compare_run import run_compare

    cfg = SelectConfig(split_size=600, ratio=0.2, seed=0, solver_params=dict(steps=40, eval_every=20))
    run_compare(corpus, tmp_path / "o", cfg=cfg, methods=("datamask", "topk", "random"), sample_rows=800)
    _check_map(browser, tmp_path / "o" / "report" / "index.html", 800, _shots(tmp_path) / "report-compare.png")


def test_dedup_report_renders_offline(browser, tmp_path, address):
    from datamask.analysis.report import build_report
    from datamask.cli import main
    from tests.helpers.dedup_data import write_planted

    write_planted(tmp_path / "in")
    argv = ["dedup", str(tmp_path / "in"), str(tmp_path / "o"), "--scheduler", address, "--quiet", "--no-report"]
    assert main(argv) == 0
    page, refused = _open(browser, build_report(tmp_path / "o"))
    assert page.locator("table.dedup").count() > 0 and page.locator("h1").inner_text() == "datamask dedup"
    page.screenshot(path=str(_shots(tmp_path) / "report-dedup.png"))
    assert refused == []
    page.close()


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """A tiny search: the repository's text corpus with hashed embeddings, 4 trials of one
    seed with a 37k-parameter proxy, no verification."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import json

    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from datamask.cli import main
    from tests.helpers.text_embed import hashed_embeddings

    root = tmp_path_factory.mktemp("search_browser")
    corpus = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"
    df = pd.DataFrame([json.loads(line) for line in corpus.read_text().splitlines()])
    held = df.index[df.kind == "prose"][:30]
    (root / "eval").mkdir()
    df.loc[held, ["id", "text"]].to_parquet(root / "eval" / "eval.parquet")
    df = df.drop(index=held)
    E = hashed_embeddings(df.text.tolist())
    q = (df.good.to_numpy() + np.random.default_rng(1).uniform(0, 0.5, len(df))).astype(np.float32)
    t = pa.table(
        {
            "id": df.id.to_numpy(),
            "text": df.text.tolist(),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), E.shape[1]),
            "quality": q,
        }
    )
    (root / "in").mkdir()
    pq.write_table(t, root / "in" / "corpus.parquet")
    proxy = "vocab_size=512,d_model=32,n_layers=2,n_heads=2,d_ff=64,seq_len=64,batch_size=8,lr=1e-2,eval_tokens=2000"
    argv = ["search", str(root / "in"), str(root / "out"), "--eval", str(root / "eval"), "--trials", "4", "--set", 'seeds=1', "--verify", "0", "--set", 'solver_params.steps=20', "--ratio", "0.3", "--split-size", "200", "--proxy-tokens", "4096", "--set", f"proxy_options={proxy}", "--set", 'candidates=500', "--set", 'regressor=quadratic', "--space", "lam=0:1", "--quiet", "--n-workers", "1"]  # fmt: skip
    assert main(argv) == 0
    return root / "out"


def test_search_report_renders_offline(browser, searched, tmp_path):
    page, refused = _open(browser, searched / "report" / "index.html")
    assert page.locator("h1").inner_text().startswith("datamask")
    heads = page.locator("h2").all_inner_texts()
    for head in ("Chosen recipe", "Regressor", "What the loss tracks"):
        assert any(head in h for h in heads), heads
    imgs = page.locator("img")
    assert imgs.count() >= 2
    for i in range(imgs.count()):  # every figure decoded and drawn at a visible size
        box = imgs.nth(i).bounding_box()
        assert imgs.nth(i).evaluate("(e) => e.complete && e.naturalWidth > 0") and box["width"] > 100, i
    page.screenshot(path=str(_shots(tmp_path) / "report-search.png"), full_page=False)
    assert refused == [], refused
    page.close()
