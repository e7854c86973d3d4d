"""The self-contained HTML page: every figure embedded (base64) and linked, tables as HTML."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import pandas as pd

from ...core.diversity import DIVERSITIES
from ...pipeline.side_by_side import COLUMNS, LABELS, coverage_warning, format_value, side_by_side_note
from .data import ReportData, load
from .figures import DPI, FIGURES, make_figures, pyplot

__all__ = ["write_report", "build_report"]


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1200px;
color:#222;background:#fff;padding:0 16px}
h1{font-size:1.6em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em;margin:.6em 0} th,td{border:1px solid #ccc;padding:4px 8px;
text-align:right} th{background:#f2f2f2} td:first-child,th:first-child{text-align:left}
figure{margin:1em 0} img{max-width:100%;border:1px solid #eee} figcaption{font-size:.85em;color:#555}
.notes td{text-align:left} .missing{color:#777;font-size:.9em}
.warning{background:#fff4e5;border:1px solid #f0b36b;padding:8px 12px;border-radius:4px}
table.why-dropped{table-layout:fixed;width:100%} table.why-dropped td,table.why-dropped th{text-align:left;
vertical-align:top;font-size:.85em;overflow-wrap:anywhere} table.why-dropped th:nth-child(3){width:7%}
table.why-dropped th:nth-child(4){width:26%} table.why-shares td:nth-child(2){text-align:left}
table.dedup{table-layout:fixed;width:100%} table.dedup th,table.dedup td{text-align:left;vertical-align:top;\nwhite-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word;font-size:.85em}
table.kept-dropped{table-layout:fixed;width:100%} table.kept-dropped td,table.kept-dropped th{text-align:left;
vertical-align:top;font-size:.85em;overflow-wrap:anywhere} table.kept-dropped ul{margin:0;padding-left:1.1em}
table.kept-dropped th:first-child{width:16%} .q{color:#555;font-weight:600}
"""


_CAPTIONS = {
    "trajectory": "How the selection was made: the start solver's own progress (Frank–Wolfe per iteration, "
    "stochastic greedy as it picks), then the exact objective, quality and diversity of the current top-S mask "
    "over policy-gradient steps.",
    "pareto": "Mean raw quality against pairwise diversity at the same budget (select: the selection, top-k and "
    "random; compare: every method), the numbers of the table above; the grey line joins those no other beats "
    "on both.",
    "cluster_heatmap": "Clusters placed by their mean quality and within-cluster diversity; colour is the share of "
    "documents from clusters in each cell.",
    "token_lengths": "Distribution of document lengths in tokens (log scale).",
    "clusters": "Share of documents per cluster or domain.",
    "projection": "A sample of documents projected to 2-D; selected ones highlighted.",
}


_TABLE_LABELS = {
    **{name: d.label for name, d in DIVERSITIES.items()},
    **LABELS,  # the terminal's labels (datamask.pipeline.side_by_side): the same words on both
    "token_budget": "token budget",
    "seconds": "wall time (s)",
    "rows": "rows",
    "groups": "groups found",
    "removed": "rows removed",
    "diversity": "diversity",
    "holdout_rows": "held-out rows",
    "eps": "SemDeDup eps",
    "proxy_loss": "proxy-LM held-out loss (nats/token)",
    "proxy_perplexity": "proxy-LM perplexity",
}
_PROXY_FIGURES = {
    "loss_curve": "Training loss and held-out loss (on a fixed sample of each evaluation set) against training "
    "tokens; every selection starts from the same weights and trains on the same number of tokens.",
    "final_loss": "Held-out loss after training, overall and per domain; the dashed line is the untrained model.",
}


def _png_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _table_html(t: pd.DataFrame) -> str:
    """The table with the terminal's labels, order and number formats."""
    t = t[[c for c in COLUMNS if c in t.columns] + [c for c in t.columns if c not in COLUMNS]]
    cells = pd.DataFrame({c: [format_value(c, v) for v in t[c]] for c in t.columns}, index=t.index)
    return cells.rename(columns=_TABLE_LABELS).reset_index().to_html(border=0, index=False)


def _table_note(data: ReportData) -> str:
    """What the comparison's numbers are, and which of its columns are better lower."""
    t = data.table
    lower = [_TABLE_LABELS[c] for c in ("near_duplicates", "seconds", "proxy_loss", "proxy_perplexity") if c in t]
    subsets = "every method on each split at the same budget" if data.title == "datamask compare" else None
    note = side_by_side_note(data.reference_size, subsets)
    if "whole split" in t.index:
        note += "; whole split: every row of each split, on the run's objective"
    tail = f"; lower is better for {', '.join(lower)}" if lower else ""
    what = "; ".join(f"{d.label}: {d.measures}" for name, d in DIVERSITIES.items() if name in t.columns)
    what = f" What each diversity column measures — {what} (docs/diversity.md)." if what else ""
    return (
        f"<p class='missing'>{html.escape(note)}. Higher is better for every other number{tail}.{html.escape(what)}</p>"
    )


def _coverage_warning(data: ReportData) -> str | None:
    """``select``'s selection (or ``compare``'s methods) covering the corpus less than random."""
    t = data.table
    if t is None or data.dedup_examples is not None:
        return None
    if data.title == "datamask select":
        return coverage_warning(t, [i for i in t.index if str(i).startswith("selection")])
    return coverage_warning(t, [i for i in t.index if i not in ("topk", "random")])  # topk claims no diversity


def _dedup_html(examples) -> str:
    """Example groups: the kept text and its duplicates side by side, one table per group."""
    parts = [
        "<h2>Example duplicate groups</h2>",
        "<p class='missing'>The largest groups of each kind (texts cut at 600 characters): the kept row "
        "first, then up to three removed rows. Loosen or tighten --threshold / --eps from what you see.</p>",
    ]
    if not examples:
        parts.append("<p class='missing'>No duplicate group was found.</p>")
    for i, g in enumerate(examples, 1):
        cells = [("kept", g["kept"])] + [("removed", r) for r in g["duplicates"]]
        head = "".join(f"<th>{html.escape(label)} (id {html.escape(str(x['id']))})</th>" for label, x in cells)
        body = "".join(
            f"<td>{html.escape(str(x['text'] if x['text'] is not None else '(null)'))}</td>" for _, x in cells
        )
        parts.append(
            f"<h3>{html.escape(g['kind'])} group {i}</h3><table class='dedup'><tr>{head}</tr><tr>{body}</tr></table>"
        )
    return "\n".join(parts)


def _proxy_html(proxy: dict, d: Path) -> str:
    """The proxy-LM section: loss per selection and evaluation set, then its two figures."""
    t = proxy["table"]
    m = proxy["manifest"]
    overall = t[t["domain"] == "all"]
    wide = overall.pivot_table(index="selection", columns="eval_set", values="loss", sort=False)
    wide.columns = [f"loss on {c} (nats/token)" for c in wide.columns]
    if "unigram_margin" in overall:  # (runs before issue 48 have no baseline)
        margin = overall.pivot_table(index="selection", columns="eval_set", values="unigram_margin", sort=False)
        margin.columns = [f"unigram margin on {c}" for c in margin.columns]
        wide = wide.join(margin)
    keep = [c for c in ("tokens", "passes", "steps", "seconds") if c in overall]
    info = overall.drop_duplicates("selection").set_index("selection")[keep]
    wide = wide.join(
        info.rename(columns={"tokens": "training tokens", "steps": "optimiser steps", "seconds": "wall time (s)"})
    )
    parts = [
        *(f"<p class='missing'><b>Warning:</b> {html.escape(w)}.</p>" for w in m.get("warnings", ())),
        f"<h2>Proxy-LM evaluation</h2><p>One {m['params']:,}-parameter decoder trained per selection from the "
        f"same initial weights on {m.get('regime') or format(m['train_tokens'], ',') + ' tokens'} (a smaller "
        "selection is repeated: passes), then "
        "scored on evaluation sets no selection trained on. Lower loss is better; compare differences with the "
        "seed-to-seed spread before reading much into them. The unigram margin is what a model learned beyond "
        "token frequencies: a unigram model's loss (add-1/2 counts of the tokens it trained on) minus the "
        "model's, on the same tokens; under 0.3 nats/token the model measured frequencies, not content. "
        "Per-domain losses are in "
        f"<code>{html.escape(str(proxy['dir']))}/proxy.csv</code>.</p>",
        wide.rename_axis("selection")
        .reset_index()
        .to_html(float_format=lambda v: f"{v:.4g}", border=0, na_rep="–", index=False),
    ]
    for name, caption in _PROXY_FIGURES.items():
        src = Path(proxy["dir"]) / f"{name}.png"
        if not src.exists():
            continue
        png = src.read_bytes()
        (d / f"proxy_{name}.png").write_bytes(png)
        b64 = base64.b64encode(png).decode()
        parts.append(
            f"<figure><img src='data:image/png;base64,{b64}' alt='proxy {name}' data-file='proxy_{name}.png'>"
            f"<figcaption>{html.escape(caption)} (<a href='proxy_{name}.png'>proxy_{name}.png</a>)"
            "</figcaption></figure>"
        )
    return "\n".join(parts)


def write_report(data: ReportData, directory, figures=FIGURES, projection="auto") -> Path:
    """Write the PNGs and ``index.html`` into ``directory``; returns the HTML path.
    ``projection``: the corpus map's (:func:`.corpus_map.project`)."""
    from ...runtime.storage import location

    plt = pyplot()
    d = location(directory)  # a URL: each PNG one object, index.html last
    d.mkdir(parents=True, exist_ok=True)
    if (data.proxy is not None or data.search is not None) and data.corpus.empty:  # no corpus figures to draw
        figures = ()
    figs, missing = make_figures(data, figures)
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(data.title)}</title>",
        f"<style>{_CSS}</style></head><body><h1>{html.escape(data.title)}</h1>",
    ]
    warning = _coverage_warning(data)
    if warning:  # first thing on the page: the selection covers less than random
        parts.append(f"<p class='warning'><b>Warning:</b> {html.escape(warning)}.</p>")
    if data.notes:
        rows = "".join(
            f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in data.notes.items()
        )
        parts.append(f"<table class='notes'>{rows}</table>")
    if data.dedup_examples is not None:  # a dedup output: counts per kind and example groups, no figure
        figures = ()
        if data.table is not None and len(data.table):
            parts.append("<h2>Duplicates by kind</h2>" + _table_html(data.table))
        parts.append(_dedup_html(data.dedup_examples))
    if data.dedup_examples is None:  # the table, why, the corpus map and the texts kept and dropped
        from .corpus_map import map_section
        from .kept_dropped import examples_section
        from .why import why_section

        section, frame = map_section(data, projection)
        if data.table is not None:
            parts.append("<h2>Comparison</h2>" + _table_html(data.table) + _table_note(data))
        parts += [why_section(data, frame, d), section, examples_section(data, frame)]
    if data.proxy is not None:
        parts.append(_proxy_html(data.proxy, d))
    if data.search is not None:
        from .search_html import search_html

        parts.append(search_html(data.search))
    for name in figures:
        if name in figs:
            png = _png_bytes(figs[name])
            (d / f"{name}.png").write_bytes(png)
            plt.close(figs[name])
            b64 = base64.b64encode(png).decode()
            parts.append(
                f"<h2>{name.replace('_', ' ').capitalize()}</h2><figure>"
                f"<img src='data:image/png;base64,{b64}' alt='{name}' data-file='{name}.png'>"
                f"<figcaption>{html.escape(_CAPTIONS[name] + ' ' + getattr(figs[name], 'caption', ''))} "
                f"(<a href='{name}.png'>{name}.png</a>)</figcaption></figure>"
            )
        elif name in missing:
            parts.append(f"<p class='missing'>{name.replace('_', ' ')}: not drawn ({html.escape(missing[name])}).</p>")
    parts.append("</body></html>")
    out = d / "index.html"
    out.write_text("\n".join(parts), encoding="utf-8")
    return out


def build_report(directory, out=None, manifest=None, **kw) -> Path:
    """``datamask report OUTPUT_DIR``: load the directory and write ``OUTPUT_DIR/report/``;
    ``manifest``: a select or dedup run's, before it is written (the run writes it after its report)."""
    from ...runtime.storage import location, resolve

    data = load(resolve(directory), manifest=manifest, **kw)
    return write_report(data, location(resolve(out)) if out else location(resolve(directory)) / "report")
