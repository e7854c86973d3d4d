"""The docs' benchmark figures are rendered from the results files (benchmarks/render_docs.py).

Every marked block of README.md, docs/*.md and CHANGELOG.md's latest entry must be what its
function writes from benchmarks/results/ now (a number edited by hand, or a results file
changed without rerunning the renderer, fails), and every number in a block must have come
from a results file (a number typed into a block function's text fails)."""

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import render_docs as R  # noqa: E402

BLOCKS = R.registry()
FOUND = [(p, name, old) for p in R.doc_files() for name, old, _ in R.marked(p)]


def test_every_marked_block_has_a_function_and_every_function_is_used():
    used = {name for _, name, _ in FOUND}
    assert used, "no marked block in the docs"
    assert sorted(used - set(BLOCKS)) == [], "marked blocks with no function in benchmarks/doc_blocks.py"
    assert sorted(set(BLOCKS) - used) == [], "block functions no document marks"


@pytest.mark.parametrize(("path", "name", "old"), FOUND, ids=[f"{p.name}:{n}" for p, n, _ in FOUND])
def test_block_is_what_the_results_render_now(path, name, old):
    new = R.fill(BLOCKS[name].render(), old)
    assert new == old, f"{path.name}: block {name} differs from its results: run python benchmarks/render_docs.py"


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_every_number_in_a_block_comes_from_its_results(name):
    with R.trace():
        text = BLOCKS[name].render()
    assert R.TRACE_OPEN in text  # it does quote results
    assert R.untraced_digits(text) == [], f"block {name}: numbers with no results file behind them"


def test_num_refuses_a_number_that_no_results_file_gave():
    with pytest.raises(R.UnsourcedNumber, match=r"num\(14.8\)"):
        R.num(14.8)
    with pytest.raises(R.UnsourcedNumber):
        R.num(True)
    a, b = R.Num(6.4870), R.Int(3)
    # what is computed from results is sourced: differences, ratios, powers, counts, rounding
    for value in (a - 6.4633, 6.5510 - a, 2 * a / b**0.5, b / 2, -a, abs(-a), round(a, 2), b + 1, R.count([1, 2])):
        assert isinstance(value, (R.Num, R.Int)), value
        R.num(value)
    assert R.num(a - 6.4633, ".4f") == "0.0237"
    with R.trace():
        text = f"round 11's {R.num(b)} runs, `--ratio 0.3`"
    assert R.untraced_digits(text) == ["11's"]  # code spans may hold digits; prose may not


def test_loaders_give_sourced_numbers(tmp_path, monkeypatch):
    (tmp_path / "a.json").write_text(json.dumps({"x": 1.5, "n": [2, None, True, "s"]}))
    (tmp_path / "b.csv").write_text("name,loss,seeds\nchosen,6.4633,3\n")
    monkeypatch.setattr(R, "RESULTS", tmp_path)
    a, b = R.load("a.json"), R.load("b.csv")
    assert type(a["x"]) is R.Num and type(a["n"][0]) is R.Int and a["n"][1:] == [None, True, "s"]
    assert b == [{"name": "chosen", "loss": 6.4633, "seeds": 3}] and type(b[0]["seeds"]) is R.Int
    assert type(b[0]["name"]) is R.Text and type(a["n"][3]) is R.Text and R.txt(a["n"][3]) == "s"
    with pytest.raises(R.UnsourcedNumber):
        R.txt("round 9 host")
    with pytest.raises(ValueError, match="JSON or CSV"):
        R.load("search_real.md")


def test_a_changed_result_changes_the_docs_and_a_hand_edit_is_caught(tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    shutil.copytree(R.RESULTS, results)
    sr = json.loads((results / "search_real.json").read_text())
    sr["latest"]["verified"]["default"]["mean"] = 6.4999
    (results / "search_real.json").write_text(json.dumps(sr))
    monkeypatch.setattr(R, "RESULTS", results)
    search = ROOT / "docs" / "search.md"
    new = R.rendered(search, BLOCKS)
    assert "6.4999" in new and "6.4999" not in search.read_text()
    assert R.main(["--check"]) == 1  # the docs are now stale; --check writes nothing
    assert "docs/search.md: search_figures" in capsys.readouterr().out
    assert "6.4999" not in search.read_text()

    monkeypatch.setattr(R, "RESULTS", ROOT / "benchmarks" / "results")
    edited = tmp_path / "search.md"
    text = search.read_text()
    i = text.index("<!-- render: search_figures -->")
    edited.write_text(text[:i] + re.sub(r"6\.4870", "6.4871", text[i:], count=1))
    assert R.rendered(edited, BLOCKS) == R.rendered(search, BLOCKS)  # the renderer restores it ...
    (name, old, _), *_ = [b for b in R.marked(edited) if b[0] == "search_figures"]
    assert R.fill(BLOCKS[name].render(), old) != old  # ... and the check above fails on it


def test_changelog_blocks_live_in_its_latest_entry_only(tmp_path):
    log = tmp_path / "CHANGELOG.md"
    log.write_text(
        "# Changelog\n\n## [Unreleased]\n\n- <!-- render: a --><!-- /render -->\n\n"
        "## [0.2.0]\n\n- <!-- render: b --><!-- /render -->\n"
    )
    with pytest.raises(ValueError, match=r"CHANGELOG.md: block\(s\) b outside the latest entry"):
        R.marked(log)


def test_display_blocks_are_wrapped_and_inline_blocks_kept_on_their_line():
    long = " ".join(["word"] * 60)
    display = R.fill(long + "\n\n| a | b |\n| --- | --- |", "\nold\n")
    assert display.startswith("\n") and display.endswith("|\n")
    assert max(len(line) for line in display.split("\n")) <= R.WIDTH
    assert "\n\n| a | b |\n| --- | --- |\n" in display  # a table is left as it is
    assert R.fill(long, "old") == long


def test_trial_eval_md_is_what_its_json_writes():
    import trial_eval

    r = json.loads((R.RESULTS / "trial_eval.json").read_text())
    suite = [(x["corpus"], x["docs"], x["scored_tokens"]) for x in r["suite"]]
    assert trial_eval.report(r) + "\n".join(trial_eval.suite_lines(suite)) == (R.RESULTS / "trial_eval.md").read_text()


def test_the_design_docs_example_block_renders(monkeypatch):
    text = (ROOT / "docs" / "design.md").read_text().split("## From a benchmark to the docs", 1)[1]
    code = re.search(r"```python\n# benchmarks/doc_blocks.py\n(.*?)```", text, flags=re.S).group(1)
    monkeypatch.setattr(R, "BLOCKS", {})
    exec(code, {"block": R.block, "num": R.num, "txt": R.txt})
    (name,) = R.BLOCKS
    with R.trace():
        out = R.BLOCKS[name].render()
    assert R.untraced_digits(out) == [] and "0.0501" in out
