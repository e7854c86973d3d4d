"""`datamask demo` (what `make demo` runs), scaled down: the selection, the comparison it
prints, and the HTML report's path printed last."""

from __future__ import annotations

from pathlib import Path

from datamask.cli import main


def test_demo_ends_with_the_report_path(tmp_path, capsys):
    corpus = "{n_rows: 8000, dim: 32, n_files: 2, n_topics: 8, n_dup_groups: 4, dup_fraction: 0.1, seed: 0}"
    rc = main(
        [
            "demo",
            str(tmp_path / "demo"),
            "--set",
            f"corpus={corpus}",
            "--set",
            "split_size=4000",
            "--set",
            "steps=60",
            "--set",
            "eval_every=20",
            "--set",
            "n_workers=1",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out.strip().splitlines()
    assert rc == 0, out
    table = [line.split()[0] for line in out if line.split() and line.split()[0] in ("selection", "random", "top-k")]
    assert table == ["selection", "random", "top-k"]  # the comparison it printed before
    assert out[-1].startswith("report: ") and out[-1].endswith("index.html")
    page = Path(out[-1].removeprefix("report: "))
    assert page.is_absolute() and page.exists() and page.parent == (tmp_path / "demo" / "selected" / "report").resolve()
    assert "<img" in page.read_text()
