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
