"""The corpus map's page fragment, drawn by bokeh: tabs, labels that never overlap, a search box.

:func:`map_html` writes one bokeh layout: a search box (any row by id: the map's sampled rows,
and the selected rows that are not in the sample, placed at their cluster's centre), then
one tab per colouring (cluster, quality, selected, duplicate group) sharing one data source
and one zoom, WebGL points, hover text, pan and wheel zoom.

Cluster names are placed in the browser, after every change of the view: the largest
clusters first, a name kept only where its box (the text's measured width, a margin
around it) meets no name already kept and lies inside the plot, at most
:data:`MAX_LABELS` of them; every other cluster is named in its points' hover text. bokeh's
JavaScript is inlined: the page fetches nothing.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

__all__ = ["MAX_LABELS", "COLOURINGS", "map_html", "label_table"]

MAX_LABELS = 25  # the most cluster names drawn at once (the rest: hover)
COLOURINGS = ("cluster", "quality", "selected", "duplicate group")
_FONT_PX = 12
_FONT = "sans-serif"

# Chooses the names to draw for the current view (the labels source's data), largest first;
# ``all`` holds every cluster's name, centre and size, sorted by size.
_PLACE_JS = """
const fig = figs.find((f) => f.inner_width > 0 && f.inner_height > 0);
if (!fig) return;
const W = fig.inner_width, H = fig.inner_height;
const x0 = xr.start, x1 = xr.end, y0 = yr.start, y1 = yr.end;
if (![x0, x1, y0, y1].every(Number.isFinite) || x1 === x0 || y1 === y0) return;
const ctx = (window.__datamask_measure ||= document.createElement('canvas').getContext('2d'));
ctx.font = `${font_px}px ${font}`;
const kept = [], out = {x: [], y: [], label: []};
for (let i = 0; i < all.label.length && out.label.length < max_labels; i++) {
  const sx = (all.x[i] - x0) / (x1 - x0) * W, sy = (1 - (all.y[i] - y0) / (y1 - y0)) * H;
  const w = ctx.measureText(all.label[i]).width + 2 * pad, h = font_px * 1.4 + 2 * pad;
  const b = [sx - w / 2, sy - h / 2, sx + w / 2, sy + h / 2];
  if (b[0] < 0 || b[1] < 0 || b[2] > W || b[3] > H) continue;
  if (kept.some((o) => b[0] < o[2] && o[0] < b[2] && b[1] < o[3] && o[1] < b[3])) continue;
  kept.push(b);
  out.x.push(all.x[i]); out.y.push(all.y[i]); out.label.push(all.label[i]);
}
const old = labels.data.label;
if (old.length !== out.label.length || old.some((l, i) => l !== out.label[i] || labels.data.x[i] !== out.x[i])) {
  labels.data = out;
}
"""

# Finds a row by id: in the map's source (selected there, the view centred on it), else among
# the selected rows beyond the sample (a star at its cluster's centre), else says where it looked.
_SEARCH_JS = """
const q = String(input.value || '').trim();
const say = (t) => { result.text = t; };
const esc = (t) => String(t).replace(/[&<>]/g, (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;'}[c]));
if (!q) { star.data = {x: [], y: []}; src.selected.indices = []; say(''); return; }
const centre = (x, y) => {
  const dx = (xr.end - xr.start) / 2, dy = (yr.end - yr.start) / 2;
  xr.setv({start: x - dx, end: x + dx}); yr.setv({start: y - dy, end: y + dy});
};
const i = src.data.id.indexOf(q);
if (i >= 0) {
  src.selected.indices = [i];
  star.data = {x: [src.data.x[i]], y: [src.data.y[i]]};
  centre(src.data.x[i], src.data.y[i]);
  say(`<b>id ${esc(q)}</b>: on the map (a star), ${esc(src.data.selected[i])}, ${esc(src.data.cluster[i])}, ` +
      `quality ${Number(src.data.quality[i]).toFixed(3)}`);
  return;
}
src.selected.indices = [];
const j = more.data.id.indexOf(q);
if (j < 0) {
  star.data = {x: [], y: []};
  say(`<b>id ${esc(q)}</b>: not found among the map's ${src.data.id.length.toLocaleString()} sampled rows ` +
      `and the ${more.data.id.length.toLocaleString()} selected rows beyond them.`);
  return;
}
const c = more.data.cluster[j], k = all.cluster.indexOf(c);
let where = '; its cluster is not on the map';
if (c >= 0 && k >= 0) {
  star.data = {x: [all.x[k]], y: [all.y[k]]};
  centre(all.x[k], all.y[k]);
  where = '; marked (a star) at its cluster\\'s centre';
} else {
  star.data = {x: [], y: []};
}
say(`<b>id ${esc(q)}</b>: selected, not among the map's sampled rows; ${esc(more.data.label[j])}, ` +
    `quality ${Number(more.data.quality[j]).toFixed(3)}${where}`);
"""


def label_table(frame: pd.DataFrame) -> dict:
    """Every cluster's name, id, centre (the median of its sampled points) and size, largest first."""
    if not len(frame):
        return {"x": [], "y": [], "label": [], "cluster": [], "size": []}
    g = frame.groupby("cluster").agg(x=("x", "median"), y=("y", "median"), size=("x", "size"), label=("label", "first"))
    g = g.reset_index().sort_values(["size", "cluster"], ascending=[False, True])
    return {  # lists: a few hundred entries at most, read by the page's scripts as plain arrays
        "x": [float(v) for v in g["x"]],
        "y": [float(v) for v in g["y"]],
        "label": [str(v) for v in g["label"]],
        "cluster": [int(v) for v in g["cluster"]],
        "size": [int(v) for v in g["size"]],
    }


def _source_data(frame):
    dup = frame["dup_group"].to_numpy()
    big = pd.Series(dup[dup >= 0]).value_counts().index[:19]  # the largest groups get a colour each
    return {
        "x": frame["x"].to_numpy(),
        "y": frame["y"].to_numpy(),
        "id": frame["id"].to_numpy(),
        "quality": frame["quality"].to_numpy(),
        "cluster": frame["label"].astype(str).to_numpy(),
        "selected": np.where(frame["selected"], "selected", "not selected"),
        "dup": np.where(dup < 0, "no group", np.where(np.isin(dup, big), "group " + dup.astype(str), "other group")),
        "snippet": frame["snippet"].to_numpy(),
    }


def _colour(kind, data):
    from bokeh.palettes import Category20, Turbo256, Viridis256
    from bokeh.transform import factor_cmap, linear_cmap

    if kind == "quality":
        q = data["quality"]
        return linear_cmap("quality", Viridis256, float(np.nanmin(q)), float(np.nanmax(q))) if len(q) else "grey"
    field = {"cluster": "cluster", "selected": "selected", "duplicate group": "dup"}[kind]
    factors = sorted(set(data[field].tolist()), key=lambda s: (s in ("no group", "not selected", "other group"), s))
    if kind == "selected":
        palette = ["#d62728", "#c8c8c8"][: len(factors)]
    elif kind == "duplicate group":
        palette = [("#dddddd" if f == "no group" else "#888888" if f == "other group" else None) for f in factors]
        cycle = iter(Category20[20])
        palette = [p or next(cycle) for p in palette]
    else:
        step = max(1, 256 // max(len(factors), 1))
        palette = [Turbo256[(i * step + 20) % 256] for i in range(len(factors))]
    return factor_cmap(field, palette, factors)


def _figure(kind, source, labels, star, data, ranges):
    from bokeh.core.properties import value
    from bokeh.models import ColorBar, HoverTool, HTMLLabelSet
    from bokeh.plotting import figure

    x_range, y_range = ranges or (None, None)
    kw = {"x_range": x_range, "y_range": y_range} if ranges else {}
    fig = figure(
        height=620,
        sizing_mode="stretch_width",
        output_backend="webgl",
        tools="pan,wheel_zoom,box_zoom,reset,save",
        active_scroll="wheel_zoom",
        name=f"map-{kind.replace(' ', '-')}",
        **kw,
    )
    fill = _colour(kind, data)
    pts = fig.scatter("x", "y", source=source, size=4, color=fill, alpha=0.75, name="points")
    fig.scatter("x", "y", source=star, marker="star", size=22, color="black", fill_color="#ffd700", line_width=1.5)
    fig.add_tools(
        HoverTool(
            renderers=[pts],
            tooltips="<div class='map-tip' style='max-width:360px;white-space:normal'><b>id @id</b> · quality "
            "@quality{0.000} · @cluster<br>@snippet</div>",
        )
    )
    if kind == "quality" and len(data["x"]):
        fig.add_layout(ColorBar(color_mapper=fill["transform"], title="quality"), "right")
    fig.add_layout(
        HTMLLabelSet(
            x="x",
            y="y",
            text="label",
            source=labels,
            text_font=value(_FONT),
            text_font_size=f"{_FONT_PX}px",
            text_align="center",
            text_baseline="middle",
            background_fill_color="white",
            background_fill_alpha=0.85,
            name=f"map-labels-{kind.replace(' ', '-')}",
        )
    )
    fig.axis.visible = fig.grid.visible = False
    return fig


def _search(source, more, table, star, ranges):
    """The search box and its answer line."""
    from bokeh.models import CustomJS, Div, TextInput

    box = TextInput(
        placeholder="find a row by id (Enter)", title="Search by id", name="map-search", width=320, height=56
    )
    result = Div(text="", name="map-search-result", sizing_mode="stretch_width")
    args = dict(input=box, result=result, src=source, more=more, all=table, star=star, xr=ranges[0], yr=ranges[1])
    box.js_on_change("value", CustomJS(args=args, code=_SEARCH_JS))
    return box, result


def _search_rows(more: pd.DataFrame | None, frame: pd.DataFrame) -> dict:
    """The selected rows beyond the sample (id, cluster, its name, quality) the search finds."""
    if more is None or not len(more):
        return {"id": [], "cluster": [], "label": [], "quality": []}
    names = frame.drop_duplicates("cluster").set_index("cluster")["label"].astype(str)
    cl = more["cluster"].to_numpy(np.int64) if "cluster" in more else np.full(len(more), -1)
    label = [names.get(c, f"cluster {c}") if c >= 0 else "no cluster" for c in cl]
    return {
        "id": more["id"].astype(str).to_numpy(),
        "cluster": cl.astype(np.int32),
        "label": np.array(label, dtype=object),
        "quality": more["quality"].to_numpy(np.float64),
    }


def map_html(frame: pd.DataFrame, title=None, more: pd.DataFrame | None = None) -> str:
    """An HTML fragment (bokeh's JavaScript inlined, no request to any server) that draws
    ``frame`` (:func:`~.corpus_map.map_frame`'s columns): a search box, one tab per colouring,
    sharing zoom and data. ``more``: selected rows beyond the sample (``id``, ``quality``,
    ``cluster``) that the search also finds."""
    from bokeh.embed import components
    from bokeh.embed.bundle import bundle_for_objs_and_resources
    from bokeh.layouts import column, row
    from bokeh.models import ColumnDataSource, CustomJS, TabPanel, Tabs
    from bokeh.resources import INLINE

    data = _source_data(frame)
    source = ColumnDataSource(data, name="corpus-map-points")
    table = label_table(frame)
    labels = ColumnDataSource({"x": [], "y": [], "label": []}, name="corpus-map-labels")
    star = ColumnDataSource({"x": [], "y": []}, name="corpus-map-star")
    more_src = ColumnDataSource(_search_rows(more, frame), name="corpus-map-search")
    panels, figs, ranges = [], [], None
    for kind in COLOURINGS:
        if kind == "duplicate group" and (frame["dup_group"] < 0).all():
            continue
        fig = _figure(kind, source, labels, star, data, ranges)
        ranges = ranges or (fig.x_range, fig.y_range)
        figs.append(fig)
        panels.append(TabPanel(child=fig, title=f"colour: {kind}"))
    place = CustomJS(
        args=dict(
            figs=figs, labels=labels, all=table, xr=ranges[0], yr=ranges[1], max_labels=MAX_LABELS, pad=4,
            font_px=_FONT_PX, font=_FONT,
        ),
        code=_PLACE_JS,
    )  # fmt: skip
    for r in ranges:
        r.js_on_change("start", place)
        r.js_on_change("end", place)
    for fig in figs:
        fig.js_on_change("inner_width", place)
        fig.js_on_change("inner_height", place)
    tabs = Tabs(tabs=panels, sizing_mode="stretch_width", name="corpus-map")
    box, result = _search(source, more_src, table, star, ranges)
    layout = column(row(box, result, sizing_mode="stretch_width"), tabs, sizing_mode="stretch_width")
    script, div = components(layout)
    bundle = bundle_for_objs_and_resources([layout], INLINE)
    head = f"<p class='missing'>{html.escape(title)}</p>" if title else ""
    return f"{bundle._render_css()}{bundle._render_js()}{head}<div class='corpus-map'>{div}</div>{script}"
