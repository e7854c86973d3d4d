"""Usage errors and undecodable input: one ``datamask: error:`` line each, exit 2."""

from __future__ import annotations

import pytest

from datamask.cli import main


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["select", "in", "out", "--ratoi", "0.1"], "unrecognized arguments: --ratoi 0.1; did you mean --ratio?"),
        (["select", "in", "out", "--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
        (["selcet", "in", "out"], "invalid choice: 'selcet'"),
        (["embed"], "the following arguments are required: input, output"),
    ],
)
def test_a_usage_error_is_one_line_with_a_help_hint(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("datamask: error: "), err
    assert needle in err and "--help`)" in err, err


def test_a_non_utf8_byte_is_reported_with_its_line(tmp_path, capsys):
    lines = [b'{"id": %d, "text": "plain ascii text number %d"}' % (i, i) for i in range(5000)]
    lines[4321] = b'{"id": 4321, "text": "caf\xe9 cr\xe8me"}'
    (tmp_path / "docs.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert main(["embed", str(tmp_path / "docs.jsonl"), str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "datamask: error: docs.jsonl: line 4322: byte 0xe9 at column 26 is not UTF-8; re-encode the "
        "file as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
    ), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "stage, says",
    [
        ("select", "compute only the missing splits"),  # a split stage keeps its finished splits
        ("cluster", "it is computed again"),  # whole-corpus stages keep no splits
        ("compare", "what it keeps (OUTPUT/dedup/) is reused"),
        ("search", "train only the missing ones"),  # the stage's own words
    ],
)
def test_each_stages_help_ends_with_what_its_stopped_run_leaves(stage, says, capsys):
    assert main([stage, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert says in out, out[-400:]
    assert ("missing splits" in out) == (stage == "select")


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--ratio", "1.5"], "ratio (--ratio) must be a number between 0 and 1, both excluded, got 1.5"),
        (["--ratio", "abc"], "--ratio must be a number, got 'abc'"),
        (["--lam", "2"], "lam (--lam) must be a number from 0 to 1, got 2.0"),
        (
            ["--solver-params", '{"steps": -3}'],
            "solver_params (--solver-params): steps must be a whole number of 0 or more, got -3",
        ),
        (
            ["--set", "solver_params.steps=1.5"],
            "solver_params (--solver-params): steps must be a whole number of 0 or more, got 1.5",
        ),
        (
            ["--solver-params", '{"group_size": 1}'],
            "solver_params (--solver-params): group_size must be a whole number of 2 or more, got 1",
        ),
        (
            ["--solver-params", '{"batch_ratio": 2}'],
            "solver_params (--solver-params): batch_ratio must be a number above 0, at most 1, got 2",
        ),
        (["--prune", "1"], "prune (--prune) must be a number from 0 up to 1, 1 excluded, got 1.0"),
        (
            ["--solver-params", '{"logit_range": [3, 1]}'],
            "solver_params (--solver-params): logit_range must be two numbers LOW,HIGH with LOW <= HIGH",
        ),
        (
            ["--solver-params", '{"logit_range": "1"}'],
            "solver_params (--solver-params): logit_range must be auto or two numbers LOW,HIGH (e.g. 0,4), got '1'",
        ),
        (
            ["--solver-params", '{"stepz": 1}'],
            "solver_params (--solver-params): unknown key(s) stepz; valid keys: group_size, lr, steps,",
        ),
        (["--solver-params", "steps=1"], "solver_params must be a JSON object such as"),
        (["--set", "id_colum=x"], "--set: unknown key(s) id_colum; valid keys:"),
    ],
)
def test_a_bad_value_is_said_in_plain_words_naming_its_flag(flags, says, tmp_path, capsys):
    """No Python in the line (``float``, ``int``, ``None``, ``inf``, ``(0.0, 1.0)``): the flag, what
    it takes in words, the value given."""
    assert main(["select", str(tmp_path), str(tmp_path / "out"), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"datamask: error: {says}" or (says in err and len(err.splitlines()) == 1), err
    for python in ("None", "float", " int ", "inf", "(0.0", "[0.0", "tuple"):
        assert python not in err, (python, err)
