"""Labels beside points that do not overlap: the Pareto plot's method names."""

from __future__ import annotations

__all__ = ["annotate_apart"]

# (dx, dy) in points, and the text's alignment: right-above first, then the other corners and sides
_OFFSETS = (
    (6, 5, "left", "bottom"),
    (6, -5, "left", "top"),
    (-6, 5, "right", "bottom"),
    (-6, -5, "right", "top"),
    (0, 9, "center", "bottom"),
    (0, -9, "center", "top"),
    (10, 0, "left", "center"),
    (-10, 0, "right", "center"),
)


def annotate_apart(ax, xs, ys, labels, fontsize=9, marker_pt=9.0):
    """Write each label beside its point at the first offset (eight directions, then two to
    six times as far) where its box lies inside the figure and meets no label written
    before it, no other point's marker (``marker_pt`` points across) and not the legend;
    else the first inside the figure that meets no label; else right-above the point. A label
    three steps out or farther gets a thin line to its point.
    The figure's layout must be final (call after ``tight_layout``): boxes are measured on it."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    half = marker_pt * fig.dpi / 72 / 2
    centres = [ax.transData.transform((x, y)) for x, y in zip(xs, ys)]
    legend = ax.get_legend()
    placed = [legend.get_window_extent(renderer)] if legend is not None else []
    page = fig.bbox
    candidates = [(dx * k, dy * k, ha, va) for k in (1, 2, 3, 4, 5, 6) for dx, dy, ha, va in _OFFSETS]
    for i, (x, y, label) in enumerate(zip(xs, ys, labels)):
        others = [c for j, c in enumerate(centres) if j != i]

        def fits(box, markers=True, others=others):
            inside = page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1
            hit = markers and any(
                box.x0 < cx + half and cx - half < box.x1 and box.y0 < cy + half and cy - half < box.y1
                for cx, cy in others
            )
            return inside and not hit and not any(box.overlaps(p) for p in placed)

        boxes = []
        for dx, dy, ha, va in candidates:
            t = ax.annotate(label, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=fontsize)
            boxes.append(t.get_window_extent(renderer).padded(2))
            t.remove()
        best = next((k for k, b in enumerate(boxes) if fits(b)), None)
        if best is None:
            best = next((k for k, b in enumerate(boxes) if fits(b, markers=False)), 0)
        dx, dy, ha, va = candidates[best]
        far = {"arrowprops": {"arrowstyle": "-", "color": "0.5", "lw": 0.6}} if best >= 2 * len(_OFFSETS) else {}
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(dx, dy), ha=ha, va=va, fontsize=fontsize, **far)
        placed.append(boxes[best])
