"""Figures and a self-contained HTML report of a selection or a comparison.

``build_report(OUTPUT_DIR)`` reads what ``datamask compare`` (``compare.json`` and its
files), ``datamask select`` (``manifest.json``, ``data/`` and the input it names) or
``datamask dedup`` (``manifest.json``: groups per kind and example groups, shown side by
side) left in a directory and writes ``OUTPUT_DIR/report/``: one PNG per figure and ``index.html``,
which embeds every PNG (base64, so the page is one file that can be mailed) and links the
PNG files next to it.

:class:`ReportData` holds the inputs; build one yourself (e.g. in Jupyter) and call
:func:`make_figures` / :func:`write_report`. Figures: :mod:`.figures`; the page:
:mod:`.html`; loading a directory: :mod:`.data`.
"""

from .data import ReportData, load, load_compare, load_dedup, load_select
from .figures import FIGURES, make_figures, pareto_front, pareto_plot
from .html import build_report, write_report

__all__ = [
    "ReportData",
    "load_compare",
    "load_select",
    "load_dedup",
    "load",
    "make_figures",
    "write_report",
    "build_report",
    "FIGURES",
    "pareto_front",
    "pareto_plot",
]
