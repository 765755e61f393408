"""One exit-code rule for every command, as the README states it: 2 for an ontology that does not load
or a command-line usage error (argparse's own and odcf's checks of options), 1 for every other error.

QA s33 R1: `--budget abc` and a non-UTF-8 `--query` exited 2 while `--record -` exited 1, and the README
said only an ontology error exits 2, so a script could not tell a bad argument from a failed run."""
from __future__ import annotations

import json

import pytest

from odcf.cli.main import main

TEXT = "Section 9.1 Cap. Each party's total liability shall not exceed $250,000 in any contract year.\n"


@pytest.fixture
def files(tmp_path):
    doc = tmp_path / "msa.md"
    doc.write_text(TEXT, encoding="utf-8")
    items = tmp_path / "items.json"
    items.write_text(json.dumps({"instruction": "Reply.", "items": [{"id": "a", "text": "Refund is $5."}]}),
                     encoding="utf-8")
    batch_in = tmp_path / "in.jsonl"
    batch_in.write_text(json.dumps({"id": "r1", "context": TEXT}) + "\n", encoding="utf-8")
    return {"doc": str(doc), "items": str(items), "in": str(batch_in), "tmp": str(tmp_path)}


def _code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's usage errors
        return int(exc.code)


USAGE = [
    # argparse's own
    ["compress", "{doc}", "--layer", "bogus"],
    ["compress", "{doc}", "--budget", "abc"],
    ["compress", "{doc}", "--query", "q\udcff"],  # a non-UTF-8 byte in argv (README: "… is not UTF-8 text")
    ["handoff", "{items}", "--role", "writer", "--budget", "abc"],
    ["batch", "{in}", "{tmp}/o.jsonl", "--workers", "x"],
    # odcf's own checks of the options
    ["compress", "{doc}", "--record", "-"],
    ["compress", "{doc}", "--html", "-"],
    ["compress", "{doc}", "--enable", "compress", "--disable", "compress"],
    ["compress", "{doc}", "--model", "m.onnx", "--disable", "compress"],
    ["handoff", "{items}", "--role", "writer", "--record", "-"],
    ["analyze", "{doc}", "--html", "-"],
    ["analyze", "{doc}", "--enable", "dedup", "--disable", "dedup"],
    ["batch", "-", "{tmp}/o.jsonl", "--workers", "0"],
    ["batch", "{in}", "{tmp}/o.parquet", "--format", "jsonl", "--workers", "0"],
    ["batch", "{in}", "{tmp}/o.txt", "--workers", "0"],
    ["batch", "{in}", "{tmp}/o.jsonl", "--enable", "dedup", "--disable", "dedup", "--workers", "0"],
]

OTHER = [
    ["compress", "{tmp}/missing.md"],
    ["compress", "{doc}", "--out", "{doc}"],  # found on disk: an output that is an input file
    ["compress", "{doc}", "--budget", "0"],
    ["compress", "{doc}", "--role", "ghost"],
    ["verify", "{tmp}/missing.json"],
    ["handoff", "{tmp}/missing.json", "--role", "writer"],
]


@pytest.mark.parametrize("argv", USAGE, ids=lambda a: " ".join(a[:1] + a[2:]))
def test_a_usage_error_exits_2_with_an_error_line(files, capsys, argv):
    assert _code([a.format(**files) for a in argv]) == 2
    err = capsys.readouterr().err
    assert f"odcf {argv[0]}: error: " in err and "Traceback" not in err


@pytest.mark.parametrize("argv", OTHER, ids=lambda a: " ".join(a[:1] + a[2:]))
def test_other_errors_exit_1(files, capsys, argv):
    assert _code([a.format(**files) for a in argv]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_an_ontology_that_does_not_load_exits_2(files, capsys):
    assert _code(["compress", files["doc"], "-O", "no_such_ontology"]) == 2
