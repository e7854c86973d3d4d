"""The notebook's corpus-map widget: which library, by measurement in a real JupyterLab.

Each candidate draws the same map frame (x, y, id, quality, cluster and its name, selected, a
200-character snippet: :func:`frame`) as a widget in a JupyterLab notebook, coloured by
cluster, with hover text (id, quality, cluster, snippet) and a lasso tool:

* ``jupyter-scatter`` (regl-scatterplot, WebGL; an anywidget);
* ``plotly`` (a ``FigureWidget`` of ``Scattergl``; an anywidget in plotly >= 6);
* ``bokeh`` (WebGL scatter in a ``jupyter_bokeh.BokehModel`` widget, which syncs the
  selection back to Python);
* ``datashader`` (``holoviews`` + ``datashader``: the kernel rasterises, the browser draws an
  image through bokeh; hover shows counts per pixel, not rows).

``datamapplot`` is not measured: its interactive page loads deck.gl, d3 and jQuery from a CDN
(``cdn_url``), and its offline mode needs those files fetched from the internet once; its pip
package ships none of them. Its lasso does not return rows to Python either.

The measurement: a JupyterLab server on 127.0.0.1 (its own static files, every other request
refused) and headless Chromium (the system's, software WebGL) driven by Playwright. For each
library and size a notebook loads the frame (not timed), then the draw cell runs:

* time to first draw: from the draw cell's Shift+Enter to the first screenshot of its output
  in which coloured points cover 0.5 % of the pixels (screenshots every ~0.2 s);
* kernel memory: the kernel's peak RSS (``VmHWM``) after the draw minus its RSS before the
  draw cell (the frame already loaded);
* browser memory: proportional set size of every process of the browser after the draw minus
  before the draw cell (the JupyterLab page already open), and the page's JS heap after.

Needs, beside the ``notebook`` extra: ``pip install plotly jupyter_bokeh datashader holoviews``.

    python benchmarks/notebook_map.py                  # 100k and 1M points; notebook_map.{json,md}
    python benchmarks/notebook_map.py --sizes 1000000 --libraries bokeh --merge   # one library, merged
    python benchmarks/notebook_map.py --sizes 20000 --libraries jupyter-scatter   # a quick look
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
LIBRARIES = ("jupyter-scatter", "plotly", "bokeh", "datashader")
WORDS = (  # noqa: SIM905
    "kernel module driver interrupt device memory page scheduler socket packet address interface route "
    "firewall port protocol printer queue spool job archive compress file extract directory option value "
    "default system user the of a to and in is for with on by this that be are from or"
).split()


def frame(n, k=50, seed=0):
    """``n`` map rows in ``k`` Gaussian clusters of uneven size, with a 200-character snippet
    each (5,000 distinct texts, repeated: the bytes a page must carry are the same)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    sizes = rng.dirichlet(np.full(k, 0.7))
    cluster = rng.choice(k, size=n, p=sizes)
    centres = rng.normal(scale=8.0, size=(k, 2))
    xy = centres[cluster] + rng.normal(scale=rng.uniform(0.4, 1.5, k)[cluster, None], size=(n, 2))
    texts = [" ".join(rng.choice(WORDS, size=60))[:200] for _ in range(5000)]
    names = np.array([f"{c}: " + " ".join(rng.choice(WORDS, size=3)) for c in range(k)], dtype=object)
    return pd.DataFrame(
        {
            "x": xy[:, 0].astype(np.float32),
            "y": xy[:, 1].astype(np.float32),
            "id": np.arange(n).astype(str),
            "quality": rng.normal(size=n).astype(np.float32),
            "cluster": cluster.astype(np.int32),
            "label": names[cluster],
            "selected": rng.random(n) < 0.1,
            "snippet": np.array(texts, dtype=object)[np.arange(n) % len(texts)],
        }
    )


_SETUP = """\
import json, os, time
import pandas as pd
df = pd.read_parquet({path!r}).head({n})
df["label"] = df["label"].astype("category")
def rss():
    s = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    return {{k: int(s[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM")}}
before = rss()
"""

_DRAW = {
    "jupyter-scatter": """\
import jscatter
t0 = time.perf_counter()
sc = jscatter.Scatter(data=df, x="x", y="y", color_by="cluster", size=2, opacity=0.6, lasso_initiator=True,
                      tooltip=True, tooltip_properties=["id", "quality", "label"], tooltip_preview="snippet",
                      height=560)
w = sc.show()
made = time.perf_counter() - t0
w
""",
    "plotly": """\
import plotly.graph_objects as go
t0 = time.perf_counter()
w = go.FigureWidget(go.Scattergl(x=df["x"].to_numpy(), y=df["y"].to_numpy(), mode="markers",
    marker={"size": 3, "color": df["cluster"].to_numpy(), "colorscale": "Turbo", "opacity": 0.6},
    customdata=df[["id", "quality", "label", "snippet"]].astype(str).to_numpy(),
    hovertemplate="id %{customdata[0]} · quality %{customdata[1]} · %{customdata[2]}<br>%{customdata[3]}<extra></extra>"),
    layout={"height": 560, "dragmode": "lasso", "margin": {"l": 10, "r": 10, "t": 10, "b": 10}})
made = time.perf_counter() - t0
w
""",
    "bokeh": """\
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.plotting import figure
from bokeh.palettes import Turbo256
from bokeh.transform import linear_cmap
from bokeh.io import output_notebook
from bokeh.resources import INLINE
from jupyter_bokeh import BokehModel
t0 = time.perf_counter()
output_notebook(INLINE, hide_banner=True)
src = ColumnDataSource({c: df[c].to_numpy() for c in ("x", "y", "id", "quality", "cluster", "snippet")} | {"label": df["label"].astype(str).to_numpy()})
p = figure(height=560, sizing_mode="stretch_width", output_backend="webgl", tools="pan,wheel_zoom,lasso_select,reset")
p.scatter("x", "y", source=src, size=3, alpha=0.6, color=linear_cmap("cluster", Turbo256, 0, 50))
p.add_tools(HoverTool(tooltips="<b>id @id</b> · quality @quality · @label<br>@snippet"))
w = BokehModel(p)
made = time.perf_counter() - t0
w
""",
    "datashader": """\
import datashader as ds
import holoviews as hv
from holoviews.operation.datashader import datashade, dynspread
hv.extension("bokeh", inline=True)
t0 = time.perf_counter()
pts = hv.Points(df, ["x", "y"], ["cluster"])
from bokeh.palettes import Turbo256
key = [Turbo256[(i * 5 + 20) % 256] for i in range(50)]
w = dynspread(datashade(pts, aggregator=ds.count_cat("cluster"), color_key=key)).opts(height=560, responsive=True, tools=["lasso_select"])
made = time.perf_counter() - t0
w
""",
}

_AFTER = """\
after = rss()
json.dump({{"rss_before": before["VmRSS"], "hwm_after": after["VmHWM"], "rss_after": after["VmRSS"],
           "made_s": made}}, open({path!r}, "w"))
"""


def _notebook(path, lib, n, data, out):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(_SETUP.format(path=str(data), n=n)),
        nbformat.v4.new_code_cell(_DRAW[lib]),
        nbformat.v4.new_code_cell(_AFTER.format(path=str(out))),
    ]
    if lib == "jupyter-scatter":  # the lasso tool on, then (after a lasso drawn in the browser) its rows in the kernel
        nb.cells.append(nbformat.v4.new_code_cell('sc.mouse("lasso")'))
        nb.cells.append(nbformat.v4.new_code_cell('print(f"lasso picked {len(sc.selection())} rows")'))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(root):
    """A JupyterLab server on 127.0.0.1, no token, nothing it would fetch (news, updates)."""
    port = _free_port()
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}", "--IdentityProvider.token=", "--ServerApp.password=",
        "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--ServerApp.disable_check_xsrf=True", "--allow-root", "--LabApp.extension_manager=readonly",
    ]  # fmt: skip
    log = open(Path(root) / "lab.log", "w")  # noqa: SIM115  (the server's log, open while it runs)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=root)
    url = f"http://127.0.0.1:{port}"
    import urllib.request

    for _ in range(240):
        try:
            urllib.request.urlopen(url + "/api/status", timeout=2)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"JupyterLab did not start: see {root}/lab.log")


def _browser_pss():
    """Proportional set size of every Chromium process this script started (through Playwright)."""
    import psutil

    total = 0
    for p in psutil.Process().children(recursive=True):
        try:
            if "chromium" in " ".join(p.cmdline()[:1]):
                total += p.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def _coloured_share(png):
    """Share of the pixels that are saturated and of one of the 5 most common of 12 hues,
    each of which must hold 0.05 % of the pixels (points coloured by cluster; axes, text and
    a one-colour error box do not count)."""
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    a = np.asarray(img, dtype=np.int16)
    sat = (a.max(axis=2) - a.min(axis=2)) > 60
    hue = np.asarray(img.convert("HSV"), dtype=np.int16)[..., 0] * 12 // 256
    counts = np.bincount(hue[sat], minlength=12)
    top = np.sort(counts)[-5:]
    return float(top.sum() / sat.size) if (top >= 0.0005 * sat.size).all() else 0.0


def _run_cell(page, i):
    cell = page.locator(CELLS).nth(i)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Shift+Enter")
    return cell


def _wait_done(cell, timeout_s):
    """Until the cell shows an execution count (not ``[*]``)."""
    prompt = cell.locator(".jp-InputArea-prompt")
    t_end = time.time() + timeout_s
    while time.time() < t_end:
        txt = prompt.inner_text().strip()
        if txt.startswith("[") and "*" not in txt and txt != "[ ]:":
            return True
        time.sleep(0.2)
    return False


def _lasso(page, draw):
    """Turn the widget's lasso tool on (``sc.mouse("lasso")``, as its toolbar button does), drag
    a square around the plot's centre, then ask the kernel how many rows the selection holds."""
    _wait_done(_run_cell(page, 3), 60)
    draw.locator("canvas").first.scroll_into_view_if_needed()
    box = draw.locator("canvas").first.bounding_box()
    cx, cy, r = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, min(box["width"], box["height"]) / 4
    page.mouse.move(cx - r, cy - r)
    page.mouse.down()
    for x, y in ((cx + r, cy - r), (cx + r, cy + r), (cx - r, cy + r), (cx - r, cy - r)):
        page.mouse.move(x, y, steps=8)
        page.wait_for_timeout(100)
    page.mouse.up()
    page.wait_for_timeout(2000)
    cell = _run_cell(page, 4)
    _wait_done(cell, 120)
    text = cell.locator(".jp-OutputArea").inner_text()
    return int(text.split("lasso picked ")[1].split()[0]) if "lasso picked " in text else None


MIN_FREE = 4 * 2**30  # a draw is stopped when the machine has less memory available than this


def measure(browser, url, root, lib, n, data, timeout_s):
    import psutil

    nb = Path(root) / f"bench_{lib}_{n}.ipynb"
    out = Path(root) / f"bench_{lib}_{n}.json"
    _notebook(nb, lib, n, data, out)
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
    refused = []

    def route(r):
        if r.request.url.startswith((url, "data:", "blob:", "about:", "ws://127.0.0.1")):
            return r.continue_()
        refused.append(r.request.url)
        return r.abort()

    ctx.route("**/*", route)
    page = ctx.new_page()
    row = {"library": lib, "points": n}
    try:
        page.goto(f"{url}/lab/tree/{nb.name}?reset", timeout=180_000)
        page.locator(CELLS).nth(2).wait_for(timeout=180_000)
        page.wait_for_function(
            "() => !!document.querySelector('.jp-Notebook-ExecutionIndicator[data-status=idle]')"
            " || !!document.querySelector('.jp-Toolbar-kernelStatus')",
            timeout=180_000,
        )
        page.wait_for_timeout(3000)  # the kernel started
        setup = _run_cell(page, 0)
        if not _wait_done(setup, timeout_s):
            raise TimeoutError("setup cell")
        cdp = ctx.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.wait_for_timeout(1000)
        pss0 = _browser_pss()
        t0 = time.perf_counter()
        draw = _run_cell(page, 1)
        output = draw.locator(".jp-OutputArea")
        drawn = raise_error = None
        while time.perf_counter() - t0 < timeout_s:
            if psutil.virtual_memory().available < MIN_FREE:  # the machine is shared: stop before it runs out
                raise MemoryError(f"stopped: under {MIN_FREE / 2**30:.0f} GiB of memory left on the machine")
            try:
                if output.locator(
                    "[data-mime-type='application/vnd.jupyter.stderr'], .jp-RenderedText[data-mime-type*=error]"
                ).count():
                    raise_error = output.first.inner_text()[-300:]
                    break
                if output.count() and output.first.bounding_box() and output.first.bounding_box()["height"] > 50:
                    share = _coloured_share(output.first.screenshot(timeout=30_000))
                    if share > 0.005:
                        drawn = time.perf_counter() - t0
                        break
            except Exception:  # noqa: BLE001  (the output area is being replaced)
                pass
            time.sleep(0.2)
        row["time to first draw (s)"] = drawn
        if raise_error:
            row["note"] = "error: " + " ".join(raise_error.split())[-150:]
        elif drawn is None:
            row["note"] = f"not drawn within {timeout_s} s"
        _wait_done(draw, timeout_s)
        page.wait_for_timeout(1000)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        row["browser MB"] = (_browser_pss() - pss0) / 1e6
        row["page JS heap MB"] = metrics.get("JSHeapUsedSize", float("nan")) / 1e6
        after = _run_cell(page, 2)
        _wait_done(after, 120)
        page.wait_for_timeout(500)
        k = json.loads(out.read_text()) if out.exists() else {}
        if k:
            row["kernel MB"] = (k["hwm_after"] - k["rss_before"]) / 1e6
            row["widget built in kernel (s)"] = k["made_s"]
        if lib == "jupyter-scatter":
            row["lasso rows"] = _lasso(page, draw)
        if SHOTS:
            page.screenshot(path=str(Path(SHOTS) / f"notebook_map_{lib}_{n}.png"))
    except Exception as e:  # noqa: BLE001  (record the failure and go on)
        row["note"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
    finally:
        row["refused requests"] = len(refused)
        if refused:
            row["refused"] = sorted(set(refused))[:3]
        import urllib.request

        try:  # stop this notebook's kernel
            sessions = json.loads(urllib.request.urlopen(url + "/api/sessions").read())
            for s in sessions:
                req = urllib.request.Request(f"{url}/api/sessions/{s['id']}", method="DELETE")
                urllib.request.urlopen(req)
        except OSError:
            pass
        ctx.close()
    print(row, flush=True)
    return row


SIZES = (100_000, 1_000_000)
SHOTS = None  # a folder for one screenshot per library and size (--screenshots)
CELLS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell"


def _fmt(v, digits=1):
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    return f"{v:,.{digits}f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)


def write_md(result, path):
    cols = [
        "library", "points", "time to first draw (s)", "kernel MB", "browser MB", "page JS heap MB", "lasso rows", "note",
    ]  # fmt: skip
    lines = [
        "# The notebook's corpus-map widget: library by measurement",
        "",
        f"`{result['command']}`; {result['machine']}; load before the run: {result['load']}. "
        "Rendered from `notebook_map.json` by the same script.",
        "",
        "Each library draws the same frame (x, y, id, quality, cluster and its name, selected, a 200-character "
        "snippet) as a widget in JupyterLab " + result["jupyterlab"] + ", coloured by cluster, with hover text and a "
        "lasso; headless " + result["chromium"] + " with software WebGL (SwiftShader: no GPU), every request "
        "other than the local JupyterLab server refused. Time to first draw: the draw cell's Shift+Enter to the "
        "first screenshot of its output with coloured points on 0.5 % of its pixels. Kernel MB: the kernel's "
        "peak RSS after the draw minus its RSS before the draw cell (frame loaded). Browser MB: PSS of all the "
        "browser's processes after the draw minus before the draw cell. Lasso rows (jupyter-scatter): its lasso tool "
        "on (`sc.mouse('lasso')`), a square dragged around the plot's centre, then the kernel's count of "
        "`sc.selection()`. One load each.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for r in result["rows"]:
        lines.append("| " + " | ".join(_fmt(r.get(c)) if c != "note" else r.get(c, "") for c in cols) + " |")
    lines += ["", "Versions: " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()) + "."]
    if result.get("notes"):
        lines += [""] + [f"- {n}" for n in result["notes"]]
    Path(path).write_text("\n".join(lines) + "\n")


def _versions():
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("jupyter-scatter", "plotly", "bokeh", "jupyter_bokeh", "datashader", "holoviews", "jupyterlab"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def _versions_one(name):
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _notes():
    """What the table does not say (written under it)."""
    return [
        "Contended figures: the runs held one of the machine's two CPU slots (`benchmarks/`' rule is both, "
        "`--exclusive`; another session's job held the other for over an hour), one load each; compare "
        "the libraries row by row.",
        "datamapplot (" + _versions_one("datamapplot") + ") is not measured: its interactive page loads deck.gl, d3 "
        "and jQuery from a CDN, its offline mode needs them fetched from the internet once, and its pip package "
        "ships none of them; its lasso does not return rows to Python either.",
        "datashader: the kernel rasterises the points and the browser draws an image, so its hover shows no "
        "row's text and its lasso selects no row; its first draw includes the kernel's aggregation.",
        "jupyter-scatter keeps the hover text in the kernel and fetches one row's on hover; plotly and bokeh "
        "send every row's text to the browser with the points.",
        "plotly and bokeh at 1,000,000 points have no row: in each run that reached them (plotly twice, bokeh once; "
        "2026-12-03) the run ended there, Playwright's "
        "driver process out of memory (V8 'Zone Allocation failed', the machine itself with 13 GB free) while "
        "the widget's data (every row's text with its point) went to the page; datashader's 1M row comes from a run "
        "of its own (--merge).",
        "Lasso rows: at 1,000,000 points the drag picked 605,987 rows, read back in the kernel; at 100,000 the "
        "same drag picked 0 in both runs (not explained: the lasso is checked in the kernel by "
        "tests/analysis/test_report_widget.py only through the widget's selection, not by a drag).",
        "datashader's page asked for files on cdn.holoviz.org (panel's theme CSS: refused; it drew without them).",
    ]


def _write(args, argv, load, rows, base):
    """OUT.json (with ``base``'s rows of other libraries and sizes: an earlier run's, --merge) and OUT.md."""
    from tests.helpers.browser import launch_options

    chromium = subprocess.run([launch_options()["executable_path"], "--version"], capture_output=True, text=True)
    import jupyterlab

    result = {
        "command": "python benchmarks/notebook_map.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": f"{os.cpu_count()} cores",
        "load": f"{load[0]:.1f} (1-min load average)",
        "jupyterlab": jupyterlab.__version__,
        "chromium": chromium.stdout.strip(),
        "versions": _versions(),
        "rows": rows,
        "notes": _notes(),
    }
    if base is not None:
        old = base
        mine = {(r["library"], r["points"]) for r in rows}
        kept = [r for r in old["rows"] if (r["library"], r["points"]) not in mine]
        result["rows"] = sorted(kept + rows, key=lambda r: (r["points"], LIBRARIES.index(r["library"])))
        result["command"] = f"{old['command']}; then {result['command']}"
        result["load"] = f"{old['load']}; then {result['load']}"
    Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    write_md(result, args.out + ".md")


def main(argv=None):
    global SIZES
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--libraries", default=",".join(LIBRARIES))
    ap.add_argument("--timeout", type=int, default=300, help="seconds a draw may take")
    ap.add_argument("--out", default=str(RESULTS / "notebook_map"))
    ap.add_argument("--screenshots", default=None, help="a folder for a screenshot of each draw")
    ap.add_argument(
        "--merge", action="store_true", help="keep the other libraries' rows of OUT.json (this run's replace theirs)"
    )
    ap.add_argument("--render", action="store_true", help="only write OUT.md again from OUT.json (its notes refreshed)")
    args = ap.parse_args(argv)
    if args.render:
        result = json.loads(Path(args.out + ".json").read_text())
        result["notes"] = _notes()
        Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
        return write_md(result, args.out + ".md")
    SIZES = tuple(int(s) for s in args.sizes.split(","))
    global SHOTS
    SHOTS = args.screenshots
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    from tests.helpers.browser import launch_options

    load = os.getloadavg()
    base = (
        json.loads(Path(args.out + ".json").read_text()) if args.merge and Path(args.out + ".json").exists() else None
    )
    with tempfile.TemporaryDirectory() as root:
        data = Path(root) / "frame.parquet"
        frame(max(SIZES)).to_parquet(data)
        lab, url = start_lab(root)
        rows = []
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(**launch_options())
                for n in SIZES:
                    for lib in args.libraries.split(","):
                        rows.append(measure(browser, url, root, lib, n, data, args.timeout))
                        _write(args, argv, load, rows, base)  # after every row: a crash keeps what ran
        finally:
            lab.terminate()
            lab.wait(30)
    _write(args, argv, load, rows, base)


if __name__ == "__main__":
    main()
