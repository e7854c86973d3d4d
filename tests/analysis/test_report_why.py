"""The report's "why" section (issue 47, item 5): per cluster, the selection's share against
the corpus's; for the best rows left out, the selected row that took their place and their
cosine; a warning at the top when the selection covers the corpus less than random does.

The planted corpus: 600 random unit rows of d=16 with quality below 0.8, and 6 groups of 5
near-copies (cosine >= 0.99 within a group) of quality 0.80-0.82, the corpus's best. A
facility-location selection at lam 0.2 keeps about one row of each group, so the best rows
it leaves out are near-copies of selected ones; the numbers the page shows are checked
against a brute-force search over the corpus and the selected rows. Top-k keeps all 30 and
covers the corpus less than random does: the warning's case."""

from __future__ import annotations

import json
from html import unescape

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from datamask.pipeline.config import SelectConfig
from tests.analysis.test_report import (
    _tables,
    chromium,  # noqa: F401  (the fixture: installs or skips)
)
from tests.analysis.test_report_browser import _shots, browser  # noqa: F401

N, D, GROUPS, COPIES = 600, 16, 6, 5
WORDS = ["hash", "array", "regex", "module", "socket", "thread", "format", "locale", "signal", "unicode"]


def planted():
    rng = np.random.default_rng(0)
    E = rng.normal(size=(N, D))
    q = rng.uniform(0, 0.8, N)
    for g in range(GROUPS):
        r = np.arange(g * COPIES, (g + 1) * COPIES)
        E[r] = E[r[0]] + 0.02 * rng.normal(size=(COPIES, D))
        q[r] = rng.uniform(0.80, 0.82, COPIES)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    return E.astype(np.float32), q.astype(np.float32)


def write_planted(path, n_files=2):
    E, q = planted()
    path.mkdir(parents=True)
    texts = [
        f"doc {i}: " + (f"group {i // COPIES} copy about {WORDS[i // COPIES]} " if i < GROUPS * COPIES else "")
        + " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
        for i in range(N)
    ]  # fmt: skip
    for f, rows in enumerate(np.array_split(np.arange(N), n_files)):
        emb = pa.FixedSizeListArray.from_arrays(pa.array(E[rows].reshape(-1)), D)
        t = pa.table({"id": pa.array(rows.astype(np.int64)), "embedding": emb, "quality": pa.array(q[rows]),
                      "text": pa.array([texts[i] for i in rows])})  # fmt: skip
        pq.write_table(t, path / f"part-{f}.parquet")
    return E, q


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("why") / "corpus"
    E, q = write_planted(d)
    return d, E, q


def _select(corpus_dir, out, **kw):
    from distributed import Client, LocalCluster

    from datamask.analysis.report import build_report
    from datamask.stages.split.select import SelectStage, run_select

    cfg = SelectConfig(input=str(corpus_dir), output=str(out), split_size=300, quiet=True, seed=0, **kw)
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc,
        Client(lc) as client,
    ):
        manifest = run_select(cfg, client=client)
    page = build_report(out, sample_rows=600)
    return manifest, page.read_text(), SelectStage().summary(manifest, cfg.output)


@pytest.fixture(scope="module")
def facility(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("why") / "facility"
    manifest, html, summary = _select(corpus[0], out, diversity="facility", lam=0.2, solver_params=dict(steps=200))
    ids = pd.read_parquet(out / "data", columns=["id"])["id"].to_numpy()
    return out, manifest, html, summary, ids


def _best_dropped(E, q, selected_ids):
    """Brute force: the highest-quality row left out, its nearest selected row and their cosine."""
    mask = np.zeros(N, bool)
    mask[selected_ids] = True
    left = np.flatnonzero(~mask)
    best = left[np.argmax(q[left])]
    cos = E[mask] @ E[best]
    return int(best), int(np.flatnonzero(mask)[np.argmax(cos)]), float(cos.max())


def _why_rows(html):
    """The rows of the page's why-dropped table (cell texts)."""
    part = html[html.index("<table class='why-dropped'>") :]
    return _tables(part[: part.index("</table>") + len("</table>")])[0][1:]


def test_the_terminal_says_how_many_splits_returned_their_start(facility):
    _, manifest, _, summary, _ = facility
    kept = sum(r["optimizer"]["stopped_by"] == "start" for r in manifest["splits"])
    assert manifest["totals"]["pg_kept_start"] == kept
    said = f"; {kept} returned their start" in summary
    assert said if kept else "returned their start" not in summary


def test_select_report_names_the_selected_copy_that_displaced_a_top_row(corpus, facility):
    _, E, q = corpus
    out, manifest, html, _, ids = facility
    best, near, cos = _best_dropped(E, q, ids)
    assert best < GROUPS * COPIES and near // COPIES == best // COPIES and cos > 0.95  # the planted case
    # the split records hold it, found on the workers
    dropped = [d for r in manifest["splits"] if r.get("why") for d in r["why"]["dropped"]]
    top = max(dropped, key=lambda d: d["quality"])
    assert top["id"] == best and top["nearest_selected"]["id"] == near
    assert top["nearest_selected"]["cosine"] == pytest.approx(cos, abs=1e-5)
    # the page: first row of the table is that row, beside the copy that took its place
    assert "<h2>Why this selection</h2>" in html
    first = _why_rows(html)[0]
    assert f"id {best}" in first[0] and f"id {near}" in first[1] and first[2] == f"{cos:.3f}"
    assert first[3].startswith("a near-duplicate of a selected row")
    assert f"group {best // COPIES} copy" in first[0] and f"group {best // COPIES} copy" in first[1]  # the texts
    assert (out / "report" / "cluster_shares.png").exists()


def test_cluster_shares_add_up(facility):
    from datamask.analysis.report.why_data import cluster_shares

    _, manifest, html, _, ids = facility
    shares, source = cluster_shares(manifest["splits"])
    assert source == "k-means"  # the input has no cluster column: the report's k-means, counted per split
    assert shares["rows"].sum() == N and shares["selected"].sum() == len(ids)
    assert shares["corpus_share"].sum() == pytest.approx(1) and shares["selection_share"].sum() == pytest.approx(1)
    assert (shares["selected"] <= shares["rows"]).all()
    # the most over-represented cluster heads the page's table, with its two shares
    top = shares.sort_values("difference", ascending=False).iloc[0]
    table = html[html.index("<table class='why-shares'>") :]
    row = _tables(table[: table.index("</table>") + 8])[0][1]
    assert row[0] == "over-represented" and row[2] == f"{int(top['rows']):,}"
    assert row[3] == f"{100 * top['corpus_share']:.1f}%" and row[4] == f"{100 * top['selection_share']:.1f}%"


def _coverage(manifest):
    from datamask.pipeline.side_by_side import combine

    t = combine(manifest["splits"], manifest["config"].get("method", "datamask"))
    return float(t["facility"].iloc[0]), float(t.at["random", "facility"])


def test_no_warning_when_the_selection_covers_more_than_random(facility):
    _, manifest, html, summary, _ = facility
    sel, rnd = _coverage(manifest)
    assert sel > rnd
    assert "Warning:" not in html and "warning" not in summary


def test_warning_at_the_top_when_the_selection_covers_less_than_random(corpus, tmp_path):
    manifest, html, summary = _select(corpus[0], tmp_path / "o", method="topk")
    sel, rnd = _coverage(manifest)
    assert sel < rnd  # top-k keeps the 30 near-copies
    assert html.index("<p class='warning'>") < html.index("<table class='notes'>")  # above everything else
    assert f"coverage {sel:.3f} against random's {rnd:.3f}" in unescape(html)
    assert "datamask: warning: This selection covers the corpus less than a random sample" in summary
    assert "below top-k's quality cut" in unescape(html)  # top-k's dropped rows: the reason names its cut


def test_compare_report_explains_datamask(corpus, tmp_path):
    from datamask.stages.corpus.compare_run import WHY_FILE, run_compare

    corpus_dir, E, q = corpus
    cfg = SelectConfig(split_size=300, diversity="facility", lam=0.2, seed=0, solver_params=dict(steps=200))
    run_compare(corpus_dir, tmp_path / "o", cfg=cfg, methods=("datamask", "topk", "random"), sample_rows=300)
    records = json.loads((tmp_path / "o" / WHY_FILE).read_text())
    assert [r["method"] for r in records] == ["datamask", "datamask"] and sum(r["rows_in"] for r in records) == N
    sel = pd.read_parquet(tmp_path / "o" / "selections.parquet")
    best, near, cos = _best_dropped(E, q, sel.loc[sel["method"] == "datamask", "id"].to_numpy())
    html = (tmp_path / "o" / "report" / "index.html").read_text()
    first = _why_rows(html)[0]
    assert f"id {best}" in first[0] and f"id {near}" in first[1] and first[2] == f"{cos:.3f}"
    t = pd.read_csv(tmp_path / "o" / "compare.csv", index_col="method")  # top-k claims no coverage: not checked
    assert ("<p class='warning'>" in html) == (t.at["datamask", "facility"] < t.at["random", "facility"])
    # no method here needs clusters and the input has none: the shares come from the map's sample
    assert all("clusters" not in r["why"] for r in records)
    assert "the map's 300 sampled rows; clusters: k-means fitted on them" in html


def test_share_full_reason():
    """A dropped row with no selected copy, whose cluster the selection already holds more of
    than the split does: the reason says its cluster's share was full."""
    from datamask.analysis.report.why import reason
    from datamask.analysis.report.why_data import dropped_rows
    from datamask.pipeline.why import split_why

    E, q = planted()
    labels = (np.arange(N) % 3).astype(np.int64)
    mask = np.zeros(N, bool)
    mask[np.flatnonzero(labels == 0)[:40]] = True  # cluster 0 holds the whole selection
    q2 = q.copy()
    q2[mask] = 0.1
    r0 = int(np.flatnonzero((labels == 0) & ~mask)[-1])
    q2[r0] = 2.0  # the best row left out, in cluster 0
    w = split_why(E, q2, mask, list(range(N)), labels=labels, source="input")
    d = dropped_rows([{"name": "s", "rows_in": N, "why": w}])[0]
    assert d["id"] == r0 and (d["cluster_rows"], d["cluster_selected"]) == (200, 40)
    cos = E[mask] @ E[r0]
    assert d["nearest_selected"]["id"] == int(np.flatnonzero(mask)[np.argmax(cos)]) and cos.max() < 0.95
    assert reason(d).startswith("its cluster's share was full: its cluster makes up 100.0% of the selection")


def test_why_section_in_chromium(browser, facility, corpus):  # noqa: F811
    from tests.helpers.browser import offline_page

    _, E, q = corpus
    out, _, _, _, ids = facility
    best, near, cos = _best_dropped(E, q, ids)
    page, refused = offline_page(browser)
    page.goto((out / "report" / "index.html").resolve().as_uri())
    table = page.locator("table.why-dropped")
    table.scroll_into_view_if_needed()
    assert table.is_visible()
    row = table.locator("tr").nth(1).inner_text()
    assert f"id {best}" in row and f"id {near}" in row and f"{cos:.3f}" in row
    img = page.locator("img[alt='cluster_shares']")
    assert img.evaluate("e => e.naturalWidth") > 300
    page.screenshot(path=str(_shots(out) / "report-why.png"), full_page=True)
    assert refused == []
    page.close()
