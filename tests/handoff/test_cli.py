"""`odcf handoff` end to end, called through odcf.cli.main.main."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from odcf.cli.main import main

ITEMS = {
    "instruction": "Issue the refund for order #W4817420 exactly as approved.",
    "searched": ["counterexamples", "preconditions"],
    "items": [
        {"id": "t", "category": "task", "text": "Refund order #W4817420 to the original card."},
        {"id": "u", "category": "user_constraints", "text": "The user wants the refund before Friday."},
        {"id": "a", "text": "Refund amount for order #W4817420: $50.", "origin": "agent:researcher"},
        {"id": "b", "text": "{\"order_id\": \"#W4817420\", \"refund_amount\": 45}", "origin": "tool:get_order_details"},
    ],
    "messages": [{"role": "user", "content": "Where is my refund for #W4817420?"},
                 {"role": "assistant", "content": "Let me check that order."}],
}


def write(tmp_path: Path, obj: object) -> Path:
    p = tmp_path / "items.json"
    p.write_text(json.dumps(obj), encoding="utf-8")
    return p


def test_cli_text_json_and_record(tmp_path: Path, capsys: pytest.CaptureFixture[str], ontology_path: Path) -> None:
    p = write(tmp_path, ITEMS)
    rec = tmp_path / "rec.json"
    assert main(["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path),
                 "--budget", "500", "--record", str(rec)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("[source 1/") and "Conflicts (different sources disagree" in out
    record = json.loads(rec.read_text(encoding="utf-8"))
    assert record["role"] == "executor" and record["budget"] == 500 and record["not_searched"] == []
    assert main(["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"text", "tokens_in", "tokens_out", "budget", "record"}
    assert payload["record"]["conflicts"][0]["entity"] == "#W4817420"


def test_cli_out_dash_writes_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str], ontology_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # as `odcf compress --out -` (QA1 finding 3): stdout, not a file named "-"
    monkeypatch.chdir(tmp_path)
    p = write(tmp_path, ITEMS)
    args = ["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--budget", "500"]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert main([*args, "--out", "-"]) == 0
    assert capsys.readouterr().out == plain and plain.startswith("[source 1/") and not (tmp_path / "-").exists()


def test_cli_strict_names_the_missing_category(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               ontology_path: Path) -> None:
    items = dict(ITEMS, searched=["counterexamples"])
    p = write(tmp_path, items)
    assert main(["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--strict"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("odcf handoff: error: role executor: missing required material:")
    assert "preconditions" in err and "Traceback" not in err
    assert main(["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--strict",
                 "--searched", "preconditions"]) == 0


def test_cli_bad_file_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, [{"text": "ok"}, {"txt": "typo"}])
    assert main(["handoff", str(p), "--role", "researcher"]) == 1
    err = capsys.readouterr().err
    assert "[1].txt: unknown key" in err and "Traceback" not in err


def test_cli_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                         ontology_path: Path) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(json.dumps(ITEMS).encode())))
    assert main(["handoff", "-", "--role", "researcher", "--ontology", str(ontology_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["record"]["role"] == "researcher"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"[{")))
    assert main(["handoff", "-", "--role", "researcher"]) == 1
    assert "<stdin>:1:3: invalid JSON" in capsys.readouterr().err


def test_cli_reads_an_items_file_or_stdin_with_a_byte_order_mark(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 ontology_path: Path) -> None:
    # QA: "Unexpected UTF-8 BOM" for an items file saved with a BOM (compress removes it, as odcf reads files)
    import io

    data = json.dumps(ITEMS).encode("utf-8")
    p = tmp_path / "items.json"
    p.write_bytes(data)
    argv = ["--role", "executor", "--ontology", str(ontology_path), "--budget", "500", "--no-timings", "--json"]
    assert main(["handoff", str(p), *argv]) == 0
    plain = json.loads(capsys.readouterr().out)
    p.write_bytes(b"\xef\xbb\xbf" + data)
    assert main(["handoff", str(p), *argv]) == 0
    assert json.loads(capsys.readouterr().out) == plain
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbf" + data)))
    assert main(["handoff", "-", *argv]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == plain["text"]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'[{"text": "\xc3"}]')))
    assert main(["handoff", "-", "--role", "researcher"]) == 1  # invalid UTF-8: one line, not a traceback
    err = capsys.readouterr().err
    assert err.startswith("odcf handoff: error: <stdin>:1: invalid UTF-8 at byte 11") and "Traceback" not in err


def test_cli_out_file_is_exactly_the_handoff_text(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  ontology_path: Path) -> None:
    # QA: `handoff --out` appended a newline, so the file's sha256 was not the record's (compress --out's is)
    import hashlib

    p = write(tmp_path, ITEMS)
    out, rec = tmp_path / "out.txt", tmp_path / "rec.json"
    argv = ["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--budget", "500"]
    assert main([*argv, "--out", str(out), "--record", str(rec)]) == 0
    assert capsys.readouterr().out == ""
    record = json.loads(rec.read_text(encoding="utf-8"))
    assert hashlib.sha256(out.read_bytes()).hexdigest() == record["sha256"]
    assert main(argv) == 0
    assert capsys.readouterr().out == out.read_text(encoding="utf-8") + "\n"  # stdout still ends the line
    assert main([*argv, "--out", str(out), "--json"]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["record"]["sha256"] == record["sha256"]


def test_cli_over_budget_warning_quotes_the_budget_and_the_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 ontology_path: Path) -> None:
    # QA: "over budget by 9 tokens (mandatory material alone exceeds it)" when mandatory material was
    # 137 of a budget of 150 and the notes block pushed it over
    p = write(tmp_path, ITEMS)
    rec = tmp_path / "rec.json"
    assert main(["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--budget", "60",
                 "--record", str(rec)]) == 0
    record = json.loads(rec.read_text(encoding="utf-8"))
    err = capsys.readouterr().err
    assert record["over_budget"] and "alone exceeds" not in err
    assert (f"warning: over budget by {record['over_by']} tokens: the handoff needs {record['tokens_out']} "
            f"o200k_base tokens of a budget of 60 (") in err and "the handoff notes" in err, err
    assert main(["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--budget", "60",
                 "--strict"]) == 1
    err = capsys.readouterr().err
    assert "of a budget of 60 " in err and len(err.strip().splitlines()) == 1, err


def test_cli_no_timings_gives_byte_identical_records(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    ontology_path: Path) -> None:
    # QA: compress and batch had --no-timings, handoff did not: two identical runs differed in "ms"
    p = write(tmp_path, ITEMS)
    recs = [tmp_path / "a.json", tmp_path / "b.json"]
    for rec in recs:
        assert main(["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--budget", "300",
                     "--record", str(rec), "--no-timings"]) == 0
    record = json.loads(recs[0].read_text(encoding="utf-8"))
    assert record["stages"] and not any("ms" in ev for ev in record["stages"])
    assert recs[0].read_bytes() == recs[1].read_bytes()
    assert main(["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--budget", "300",
                 "--record", str(recs[0]), "--no-timings"]) == 0
    capsys.readouterr()
    assert main(["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--budget", "300",
                 "--record", str(recs[1])]) == 0
    assert any("ms" in ev for ev in json.loads(recs[1].read_text(encoding="utf-8"))["stages"])


def test_cli_prints_the_record_warnings_of_an_empty_handoff(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           ontology_path: Path) -> None:
    # QA: an item no budget of 300 could hold was delivered as an empty text, exit 0, and nothing on
    # stderr, while the record warned "nothing fit in the budget ..." (`odcf compress` prints it)
    words = " ".join(f"word{i}" for i in range(400))
    p = write(tmp_path, {"items": [{"id": "a", "text": f"Order #W1234567 shipped with tracking {words}."}]})
    rec, out = tmp_path / "rec.json", tmp_path / "out.txt"
    argv = ["handoff", str(p), "--role", "researcher", "--ontology", str(ontology_path), "--budget", "60"]
    assert main([*argv, "--record", str(rec), "--out", str(out)]) == 0  # delivered, as documented: exit 0
    err = capsys.readouterr().err
    record = json.loads(rec.read_text(encoding="utf-8"))
    assert out.read_text(encoding="utf-8") == "" and any(w.startswith("nothing fit in the budget")
                                                         for w in record["warnings"])
    assert err.splitlines()[:len(record["warnings"])] == [f"odcf handoff: warning: {w}" for w in record["warnings"]]
    assert main([*argv, "--json"]) == 0  # with --json too: stdout holds the JSON alone
    captured = capsys.readouterr()
    assert json.loads(captured.out)["record"]["warnings"] == record["warnings"] and captured.err == err
    # an item without text: the record says so, and so does stderr
    p = write(tmp_path, {"items": [{"id": "a", "text": ""}]})
    assert main(["handoff", str(p), "--role", "researcher", "--ontology", str(ontology_path), "--json"]) == 0
    captured = capsys.readouterr()
    warnings = json.loads(captured.out)["record"]["warnings"]
    assert any("empty input" in w for w in warnings), warnings
    assert all(f"odcf handoff: warning: {w}\n" in captured.err for w in warnings), captured.err


def test_cli_says_over_budget_once(tmp_path: Path, capsys: pytest.CaptureFixture[str], ontology_path: Path) -> None:
    # the record's own over-budget warning is the one printed; it is not said a second time
    p = write(tmp_path, ITEMS)
    assert main(["handoff", str(p), "--role", "executor", "--ontology", str(ontology_path), "--budget", "60",
                 "--json"]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)["record"]
    assert record["over_budget"] and captured.err.count("over budget") == 1, captured.err
    assert [line for line in captured.err.splitlines() if "warning:" in line] == [
        f"odcf handoff: warning: {w}" for w in record["warnings"]]


def test_cli_names_the_file_and_the_entry_of_a_nul_character(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # QA: "odcf handoff: error: source 'b': text holds a NUL character at character 4: binary data, not text"
    p = write(tmp_path, {"items": [{"id": "a", "text": "Order #W1234567 shipped."}, {"id": "b", "text": "bad \u0000 here"}]})
    assert main(["handoff", str(p), "--role", "researcher"]) == 1
    assert capsys.readouterr().err == (f"odcf handoff: error: 1 problem in {p}:\n"
                                       "  items[1]: text holds a NUL character at character 4: binary data, not text\n")
