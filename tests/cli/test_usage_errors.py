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
        (["--steps", "-3"], "steps (--steps) must be a whole number of 0 or more, got -3"),
        (["--steps", "1.5"], "--steps must be a whole number, got '1.5'"),
        (["--group-size", "1"], "group_size (--group-size) must be a whole number of 2 or more, got 1"),
        (["--batch-ratio", "2"], "batch_ratio (--batch-ratio) must be a number above 0, at most 1, got 2.0"),
        (["--prune", "1"], "prune (--prune) must be a number from 0 up to 1, 1 excluded, got 1.0"),
        (["--logit-range", "3,1"], "logit_range (--logit-range) must be two numbers LOW,HIGH with LOW <= HIGH"),
        (["--logit-range", "1"], "--logit-range must be two numbers LOW,HIGH (e.g. 0,4), got '1'"),
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
