"""`compare` on the demo corpus, the figures, the HTML page, and the page in headless Chromium."""

from __future__ import annotations

import base64
import html as _html
import os
import shutil
import subprocess

import pandas as pd
import pytest

from datamask.pipeline.config import SelectConfig

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """`compare` on the demo corpus (workflows/demo.yaml's generator settings), scaled down to
    6000 rows of d=32 in 2 files of 2 splits each."""
    from datamask.cli.demo import DEMO_WORKFLOW, write_corpus
    from datamask.stages.corpus.compare_run import run_compare
    from datamask.stages.workflow import load_workflow

    root = tmp_path_factory.mktemp("cmp")
    spec = dict(load_workflow(DEMO_WORKFLOW)["corpus"], n_rows=6000, dim=32, n_files=2)
    write_corpus(root / "corpus", row_group_size=1000, **spec)
    cfg = SelectConfig(split_size=1500, ratio=0.1, seed=0, solver_params=dict(steps=300, eval_every=50))
    table = run_compare(
        root / "corpus", root / "out", cfg=cfg, methods=("datamask", "topk", "random", "semdedup", "quadmix", "greedy")
    )
    return root / "out", table


def test_compare_table_on_demo_corpus(compared):
    out, t = compared
    assert list(t.index) == ["datamask", "topk", "random", "semdedup", "quadmix", "greedy"]
    assert (t["selected"] == 600).all() and (t["rows"] == 6000).all()
    for col in ("quality", "pairwise", "facility", "disf", "near_duplicates", "objective", "mean_tokens", "seconds"):
        assert t[col].notna().all(), col
    # the acceptance claims of the default (facility, the redundancy filter): more coverage and fewer
    # near-duplicates than top-k, better than random and SemDeDup on quality and on the objective (top-k
    # can score higher on it: the filter leaves out the near-copies whose quality the objective counts)
    assert t.loc["datamask", "facility"] > t.loc["topk", "facility"]
    assert t.loc["datamask", "near_duplicates"] < t.loc["topk", "near_duplicates"]
    assert t.loc["datamask", "quality"] > t.loc["random", "quality"]
    assert t.loc["datamask", "quality"] > t.loc["semdedup", "quality"]
    assert t.loc["datamask", "objective"] > max(t.loc[m, "objective"] for m in ("random", "semdedup"))
    per = pd.read_csv(out / "compare_splits.csv")
    assert len(per) == 4 * 6 and per.loc[per["method"] == "semdedup", "eps"].gt(0).all()
    assert pd.read_csv(out / "compare.csv", index_col="method").shape[0] == 6
    sel = pd.read_parquet(out / "selections.parquet")
    assert sel.groupby("method").size().eq(600).all()


def _png_size(data: bytes):
    assert data[:8] == PNG_MAGIC
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return w, h


def test_report_pngs_and_html(compared):
    import matplotlib.image as mpimg

    out, _ = compared
    rep = out / "report"
    html = (rep / "index.html").read_text()
    pngs = sorted(rep.glob("*.png"))
    names = {p.stem for p in pngs}
    assert names == {
        "trajectory",
        "pareto",
        "cluster_heatmap",
        "token_lengths",
        "clusters",
        "projection",
        "cluster_shares",
    }
    for p in pngs:
        data = p.read_bytes()
        w, h = _png_size(data)
        assert 500 <= w <= 3000 and 300 <= h <= 3000, (p.name, w, h)
        img = mpimg.imread(p)
        assert img[..., :3].std() > 0.05, p.name  # not a blank canvas
        assert f"href='{p.name}'" in html  # linked ...
        assert base64.b64encode(data).decode() in html  # ... and embedded
    assert "<table" in html and "pairwise diversity" in html and "semdedup" in html
    # the raw score and the objective's normalised term, each labelled; the compare note, no select's
    assert "mean quality, raw score" in html and "mean quality, normalised (0-1)" in html
    assert "every method on each split at the same budget" in html and "lower is better for" in html
    # beside the diversity columns, what each measures (the table's own columns, no other objective's)
    from datamask.core.diversity import DIVERSITIES

    shown = [d for name, d in DIVERSITIES.items() if f"<th>{d.label}</th>" in html]
    assert shown, "no diversity column in the table"
    for d in shown:
        assert _html.escape(d.measures, quote=True) in html, d.name


def test_report_of_select_output(tmp_path):
    """The report of a real `select` run (pipeline on an in-process cluster)."""
    from distributed import Client, LocalCluster

    from datamask.analysis.report import build_report
    from datamask.cli.demo import write_corpus
    from datamask.stages.split.select import SelectStage, run_select

    write_corpus(tmp_path / "c", n_rows=3000, dim=32, n_files=1, n_topics=8, row_group_size=1000)
    cfg = SelectConfig(
        input=str(tmp_path / "c"), output=str(tmp_path / "o"), split_size=1500, quiet=True, solver_params=dict(steps=50)
    )
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc,
        Client(lc) as client,
    ):
        manifest = run_select(cfg, client=client)
    page = build_report(tmp_path / "o")
    html = page.read_text()
    pngs = {p.stem for p in page.parent.glob("*.png")}
    assert {"token_lengths", "projection", "pareto"} <= pngs  # the quality-diversity plane of the three
    for name in pngs:
        assert f"href='{name}.png'" in html
    # the whole split's row where its objective is recorded (not facility's: 1 by definition)
    assert "selection (datamask)" in html
    assert ("whole split" in html) == (manifest["splits"][0]["before"] is not None)
    assert "wall time (s)" not in html  # no note about a column the table does not have
    _terminal_and_report_agree(SelectStage().summary(manifest, cfg.output), html)


def _tables(html: str) -> list:
    """Every table of the page as rows of cell texts (the standard library's parser)."""
    from html.parser import HTMLParser

    tables, cell = [], [False]

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "table":
                tables.append([])
            elif tag == "tr":
                tables[-1].append([])
            elif tag in ("td", "th"):
                tables[-1][-1].append("")
                cell[0] = True

        def handle_endtag(self, tag):
            if tag in ("td", "th", "tr", "table"):
                cell[0] = False

        def handle_data(self, data):
            if cell[0] and tables and tables[-1] and tables[-1][-1]:
                tables[-1][-1][-1] += data.strip()

    P().feed(html)
    return tables


def _terminal_and_report_agree(summary: str, html: str):
    """Every number the terminal printed for the selection, top-k and random is the report's
    cell under the same label, subset by subset."""
    from datamask.pipeline.side_by_side import LABELS

    rows = next(t for t in _tables(html) if LABELS["near_duplicates"] in t[0])
    report = pd.DataFrame(rows[1:], columns=rows[0]).set_index("subset")
    lines = summary.splitlines()
    head = next(i for i, line in enumerate(lines) if "selection (datamask)" in line)
    subsets = ["selection (datamask)", "top-k quality", "random"]
    labels = {v: k for k, v in LABELS.items()}
    seen = set()
    for line in lines[head + 1 :]:
        label = next((lab for lab in labels if line.startswith(lab)), None)
        if label is None:
            break
        cells = line[len(label) :].split()
        assert len(cells) == 3, line
        for subset, cell in zip(subsets, cells):
            assert report.at[subset, label] == cell, (subset, label, report.at[subset, label], cell)
        seen.add(labels[label])
    assert {"objective", "quality", "quality_norm", "pairwise", "facility", "near_duplicates"} <= seen
    # labelled apart: the raw score and the normalised term differ
    assert report.at["top-k quality", LABELS["quality"]] != report.at["top-k quality", LABELS["quality_norm"]]
    # top-k takes the best rows: the highest raw quality of the three at the same budget
    raw = {s: float(report.at[s, LABELS["quality"]]) for s in subsets}
    assert max(raw, key=raw.get) == "top-k quality"


# ---------------------------------------------------------------------- headless Chromium
def _chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name) or (f"/usr/bin/{name}" if os.path.exists(f"/usr/bin/{name}") else None)
        if path:
            return path
    return None


@pytest.fixture(scope="session")
def chromium():
    """Path to chromium; installs the Debian packages when absent (we run as root)."""
    path = _chromium()
    if path is None and shutil.which("apt-get"):
        cmd = ["apt-get", "install", "-y", "-q", "chromium", "chromium-driver"]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if subprocess.run(cmd, env=env, capture_output=True, timeout=900).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
            subprocess.run(cmd, env=env, capture_output=True, timeout=900)
        path = _chromium()
    if path is None:
        pytest.skip("chromium is not installed and apt-get could not install it")
    return path


def test_html_renders_in_headless_chromium(compared, chromium, tmp_path):
    import matplotlib.image as mpimg

    out, _ = compared
    shot = tmp_path / "shot.png"
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}",
        "--window-size=1200,900",
        (out / "report" / "index.html").resolve().as_uri(),
    ]
    r = subprocess.run(cmd, capture_output=True, timeout=120)
    assert shot.exists(), r.stderr.decode(errors="replace")[-2000:]
    img = mpimg.imread(shot)[..., :3]
    assert img.shape[:2] == (900, 1200)
    assert img.std() > 0.05  # text, tables and figures, not a blank page
    assert (img.mean(axis=2) < 0.9).mean() > 0.01  # enough dark pixels


@pytest.mark.parametrize("width", [4.6, 13.8])
def test_a_figure_title_fits_its_figure(width):
    """The one-panel projection of a `datamask select` report is 4.6 in wide, narrower than
    its title sentence: the title wraps instead of being clipped at both edges."""
    from datamask.analysis.report.figures import pyplot, suptitle

    plt = pyplot()
    fig = plt.figure(figsize=(width, 4.3), dpi=110)
    t = suptitle(fig, "2-D PCA projection of a sample of the corpus; selected documents highlighted")
    fig.canvas.draw()
    box = t.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width
    assert ("\n" in t.get_text()) == (width < 8)
    plt.close(fig)
