"""notebooks/corpus_analysis.ipynb runs top to bottom (nbclient) on a small corpus, as a user
runs it (from notebooks/, with its default output folder): no error, nothing on stderr (no
warning), its figures, the report's map and the map widget shown, its selection written, and
the checkout left as it was (``git status``)."""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "corpus_analysis.ipynb"


def _git_status():
    """``git status --porcelain`` of the checkout (untracked files listed one by one), or None
    outside a git checkout."""
    if shutil.which("git") is None:
        return None
    r = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True
    )
    return r.stdout if r.returncode == 0 else None


def test_corpus_analysis_notebook_executes(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("jscatter", reason="the map widget needs the notebook extra: pip install 'datamask[notebook]'")
    small = {
        "DATAMASK_NB_ROWS": "4000",
        "DATAMASK_NB_DIM": "32",
        "DATAMASK_NB_SPLIT": "2000",
        "DATAMASK_NB_K": "8",
        "DATAMASK_NB_STEPS": "100",
        "DATAMASK_NB_WORKERS": "1",
        "DATAMASK_NB_MAP_ROWS": "800",
        "TMPDIR": str(tmp_path),  # the notebook's default output folder (and Dask's scratch) land here
    }
    for k, v in small.items():
        monkeypatch.setenv(k, v)
    for k in ("DASK_SCHEDULER_ADDRESS", "DATAMASK_NB_CORPUS", "DATAMASK_NB_DIR", "DATAMASK_NB_WIDGET_ROWS"):
        monkeypatch.delenv(k, raising=False)
    before = _git_status()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a cell without an id (MissingIDFieldWarning) fails here
        nb = nbformat.read(NOTEBOOK, as_version=4)
        nbformat.validate(nb)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    stderr = [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert stderr == []  # no warning of ours, Dask's (a worker killed at close), tqdm's or nbformat's
    text = "".join(o.text for o in outputs if o.output_type == "stream")
    assert f"writing to {tmp_path / 'datamask-corpus-analysis'}" in text  # outside the checkout
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) >= 4  # the figures are shown inline
    maps = [o for o in outputs if "corpus-map-points" in str(o.get("data", {}).get("text/html", ""))]
    assert len(maps) == 1 and "BEGIN bokeh.min.js" in maps[0]["data"]["text/html"]  # the map, its JS inline
    widgets = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert widgets  # the map widget (and its buttons) displayed
    assert "The corpus map draws all " in text and "0 rows picked" in text  # no lasso in a headless run
    import pyarrow.parquet as pq

    selected = tmp_path / "datamask-corpus-analysis" / "selected"
    out = pq.read_table(selected).replace_schema_metadata(None).to_pandas()  # its to_parquet
    assert len(out) == 400 and out["id"].is_unique and "selected" not in out.columns
    if before is not None:
        assert _git_status() == before  # nothing written into the checkout
