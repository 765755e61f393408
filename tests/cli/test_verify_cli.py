"""`odcf verify`'s notes and messages say what the user can pass, and a handoff record has a way to pass
on what can be checked (its delivered text), never an "ok" for the sources it could not re-read."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from odcf.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_skipped_segments_note_names_ontology_as_the_fail_line_does(tmp_path, capsys):
    # QA s33 R3: the FAIL line said "pass its ontology (--ontology), --plan or --trace", the note beside it
    # "segment checks skipped (pass --plan or --trace)", leaving out the option that worked
    rec = tmp_path / "record.json"
    ontology = str(ROOT / "examples" / "my_contracts.yaml")
    assert main(["compress", str(ROOT / "examples" / "msa_excerpt.md"), "-O", ontology, "-r", "writer", "-b", "250",
                 "--record", str(rec), "--no-timings"]) == 0
    capsys.readouterr()
    assert main(["verify", str(rec)]) == 1
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if line.startswith("note: ")]
    assert notes and all("pass --plan or --trace" not in n for n in notes)
    assert "segment checks skipped (pass its ontology (--ontology), --plan or --trace)" in notes[0]
    assert main(["verify", str(rec), "--ontology", ontology]) == 0
    assert capsys.readouterr().out.startswith("ok: 1 source(s) re-read, ")


@pytest.fixture
def handoff_run(tmp_path, capsys):
    items = tmp_path / "items.json"
    items.write_text(json.dumps({"instruction": "Reply to the customer.", "items": [
        {"id": "calc", "text": "Refund for order #W4817420 is $45.", "origin": "tool:calculate_refund"},
        {"id": "u1", "text": "Refund to the card, never a gift card."}]}), encoding="utf-8")
    rec, out = tmp_path / "handoff.json", tmp_path / "handoff.txt"
    assert main(["handoff", str(items), "--role", "writer", "--record", str(rec), "--out", str(out),
                 "--no-timings"]) == 0
    capsys.readouterr()
    return rec, out


def test_a_handoff_record_fails_nothing_checked_naming_handoff_and_the_way_on(handoff_run, capsys):
    # QA s33 R4: `odcf verify R --text T` on a handoff record failed with a message naming only "the
    # Python API or a batch job", and no option could pass it
    rec, out = handoff_run
    assert main(["verify", str(rec), "--text", str(out)]) == 1
    fail = capsys.readouterr().out
    assert "nothing-checked:" in fail and "a record of `odcf handoff`" in fail
    assert "--text-only accepts the delivered text's check against the record alone" in fail
    assert main(["verify", str(rec)]) == 1
    assert "give the delivered text with --text FILE --text-only" in capsys.readouterr().out


def test_text_only_passes_a_handoff_text_that_matches_its_record_and_says_what_was_not_checked(handoff_run, capsys):
    rec, out = handoff_run
    assert main(["verify", str(rec), "--text", str(out), "--text-only"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "ok: the delivered text matches the record; 0 source(s) re-read, so the sources were not checked\n"
    assert "accepted (--text-only) on the delivered text, which matches the record's sha256 and token counts; " \
           "the sources themselves were not checked" in captured.err
    assert main(["verify", str(rec), "--text", str(out), "--text-only", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["text_checked"] and report["checked_sources"] == [] \
        and report["checked_segments"] == 0
    # an edited text still fails, with --text-only too
    out.write_text(out.read_text(encoding="utf-8").replace("$45", "$450"), encoding="utf-8")
    assert main(["verify", str(rec), "--text", str(out), "--text-only"]) == 1
    assert "text-changed" in capsys.readouterr().out


def test_text_only_without_text_is_a_usage_error(handoff_run, capsys):
    rec, _ = handoff_run
    assert main(["verify", str(rec), "--text-only"]) == 2
    assert "odcf verify: error: --text-only checks the delivered text against the record: give it with --text FILE" \
        in capsys.readouterr().err
