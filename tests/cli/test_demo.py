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
    head = next(line for line in out if "selection (datamask)" in line).split()
    assert head == ["selection", "(datamask)", "top-k", "quality", "random"]  # the report's three subsets
    rows = {line[:32].strip(): line[32:].split() for line in out if line.startswith(("objective", "mean quality"))}
    assert set(rows) == {"objective", "mean quality, normalised (0-1)", "mean quality, raw score"}
    assert all(len(v) == 3 for v in rows.values())
    # top-k has the highest raw quality of the three (it takes the best rows at the same budget)
    raw = [float(v) for v in rows["mean quality, raw score"]]
    assert raw[1] == max(raw)
    assert out[-1].startswith("report: ") and out[-1].endswith("index.html")
    page = Path(out[-1].removeprefix("report: "))
    assert page.is_absolute() and page.exists() and page.parent == (tmp_path / "demo" / "selected" / "report").resolve()
    assert "<img" in page.read_text()
