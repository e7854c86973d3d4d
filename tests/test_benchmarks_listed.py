"""benchmarks/ keeps what regenerates a results file the docs cite (issue 51, item 7).

docs/benchmarks.md, "The scripts", lists every script in ``benchmarks/`` with the results files
it regenerates and its one command, or names it a support module. Computed from the files: a
script added without a row fails, a row for a script that is gone fails, a listed results file
that is missing or that no page of the docs cites (outside that table: README.md or docs/*.md
naming it, or a marked block rendered from it) fails, a support module that no script and no test
uses fails, and so does a file in benchmarks/results/ that the list does not name."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
INDEX = ROOT / "docs" / "benchmarks.md"
SECTION = "## The scripts"
SUPPORT = "### Support modules"
ROW = re.compile(r"^\| `benchmarks/([^`/]+)` \|")
RESULT_LINK = re.compile(r"\]\(\.\./benchmarks/results/([^)#]+)\)")


def _section(text: str) -> str:
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end >= 0 else len(text)]


def _index() -> tuple[dict, list]:
    """``{script: (results files, command)}`` of the table, and the support modules' names."""
    section = _section(INDEX.read_text())
    table, support = section.split(SUPPORT, 1)
    rows = {}
    for line in table.splitlines():
        m = ROW.match(line)
        if m:
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            assert m.group(1) not in rows, f"{m.group(1)} listed twice"
            rows[m.group(1)] = (RESULT_LINK.findall(cells[1]), cells[3])
    names = [re.match(r"- ((?:`benchmarks/[^`]+`(?:, | \(|: )?)+)", ln) for ln in support.splitlines()]
    modules = [n for m in names if m for n in re.findall(r"`benchmarks/([^`]+)`", m.group(1))]
    return rows, modules


ROWS, MODULES = _index()


def _scripts_on_disk() -> set:
    return {p.name for p in BENCH.iterdir() if p.is_file() and p.suffix in (".py", ".sh")}


def _docs_outside_the_table() -> str:
    index = INDEX.read_text()
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(p.read_text() if p != INDEX else index.replace(_section(index), "") for p in pages)


def _rendered_sources() -> set:
    """Results files that a marked block in README.md or docs/*.md is rendered from."""
    sys.path.insert(0, str(BENCH))
    import render_docs as R

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    used = {name for p in pages for name, _, _ in R.marked(p)}
    return {source for name, block in R.registry().items() if name in used for source in block.sources}


def test_the_index_was_read():
    assert len(ROWS) >= 10 and len(MODULES) >= 5, (len(ROWS), len(MODULES))


def test_every_script_is_listed_once_and_every_listed_script_exists():
    listed = list(ROWS) + MODULES
    assert len(listed) == len(set(listed)), "a script both in the table and among the support modules"
    on_disk = _scripts_on_disk()
    assert sorted(on_disk - set(listed)) == [], 'scripts not listed in docs/benchmarks.md, "The scripts"'
    assert sorted(set(listed) - on_disk) == [], "listed in docs/benchmarks.md but not in benchmarks/"


@pytest.mark.parametrize("script", sorted(ROWS))
def test_the_command_runs_the_script(script):
    command = ROWS[script][1]
    runner = "bash" if script.endswith(".sh") else "python"
    assert f"`{runner} benchmarks/{script}" in command or f" {runner} benchmarks/{script}" in command, command


@pytest.mark.parametrize("script", sorted(ROWS))
def test_each_results_file_exists_and_the_docs_cite_it(script):
    results = ROWS[script][0]
    assert results, f"{script}: no results file listed"
    docs, rendered = _docs_outside_the_table(), _rendered_sources()
    for name in results:
        assert (BENCH / "results" / name).is_file(), f"{script}: benchmarks/results/{name} does not exist"
        # a bare name counts unless a page of docs/ has it too (tokens.md, gpu.md: there, results/NAME)
        bare = not (ROOT / "docs" / name).exists() and re.search(rf"(?<![\w/.-]){re.escape(name)}", docs)
        cited = f"results/{name}" in docs or bool(bare) or name in rendered
        assert cited, f"{script}: no page of the docs cites benchmarks/results/{name} (outside the index)"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_support_module_is_used_by_a_script_or_a_test(module):
    stem = Path(module).stem
    uses = re.compile(
        rf"\bimport\s+{stem}\b|\bfrom\s+(?:benchmarks\.)?{stem}\s+import\b|\bfrom\s+benchmarks\s+import\s+{stem}\b"
    )
    users = [BENCH / s for s in (*ROWS, *MODULES) if s != module] + sorted((ROOT / "tests").rglob("*.py"))
    using = [p for p in users if uses.search(t := p.read_text()) or (p.suffix == ".sh" and f"benchmarks/{module}" in t)]
    assert using, f"benchmarks/{module}: a support module that no listed script and no test uses"


def test_every_results_file_is_named_by_the_index():
    """A results file whose script is gone goes with it (its finding, dated, in the CHANGELOG)."""
    section = _section(INDEX.read_text())
    orphans = [p.name for p in sorted((BENCH / "results").iterdir()) if p.is_file() and p.name not in section]
    assert orphans == [], 'results files that docs/benchmarks.md, "The scripts", does not name'
