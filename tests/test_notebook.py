"""notebooks/corpus_analysis.ipynb runs top to bottom (nbclient) on a small corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "corpus_analysis.ipynb"


def test_corpus_analysis_notebook_executes(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    small = {
        "DATAMASK_NB_DIR": str(tmp_path / "work"),
        "DATAMASK_NB_ROWS": "4000",
        "DATAMASK_NB_DIM": "32",
        "DATAMASK_NB_SPLIT": "2000",
        "DATAMASK_NB_K": "8",
        "DATAMASK_NB_STEPS": "100",
        "DATAMASK_NB_WORKERS": "1",
        "DATAMASK_NB_MAP_ROWS": "800",
    }
    for k, v in small.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    monkeypatch.delenv("DATAMASK_NB_CORPUS", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) >= 4  # the figures are shown inline
    maps = [o for o in outputs if "corpus-map-points" in str(o.get("data", {}).get("text/html", ""))]
    assert len(maps) == 1 and "BEGIN bokeh.min.js" in maps[0]["data"]["text/html"]  # the map, its JS inline
    import pyarrow.parquet as pq

    out = pq.read_table(tmp_path / "work" / "selected").replace_schema_metadata(None).to_pandas()  # its to_parquet
    assert len(out) == 400 and out["id"].is_unique and "selected" not in out.columns
