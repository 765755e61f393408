"""Re-verification of a delivery record: changed sources and substituted text are caught."""
from __future__ import annotations

import copy
import importlib.util
import json
import re

import pytest

from odcf.compressor import Compressor, read_source_file
from odcf.document import Source, sha256
from odcf.errors import InputError
from odcf.reverify import foreign_words, read_selection, select, split_blocks, verify_record, verify_report

SWITCHES = {n: False for n in ("rules", "fold") if importlib.util.find_spec(f"odcf.stages.{n}") is None}
NOTES = "Order W1 shipped on 2024-05-01.\nOrder W2 is pending.\nThe customer asked about the refund.\n"


@pytest.fixture
def run(plan, tmp_path, contract_text):
    a = tmp_path / "msa.md"
    a.write_text(contract_text, encoding="utf-8")
    b = tmp_path / "notes.txt"
    b.write_text(NOTES, encoding="utf-8")
    sources = [read_source_file(str(a)), read_source_file(str(b)),
               Source(id="tool", text="Refund of $20 approved.", origin="tool:billing")]
    result = Compressor(plan, stages=SWITCHES).compress(sources, budget=110)
    return a, b, result


def test_a_clean_record_verifies(plan, run):
    _, _, result = run
    report = verify_report(result.record, result.text, plan=plan, stages=SWITCHES)
    assert report.ok, [str(p) for p in report.problems]
    assert len(report.checked_sources) == 2 and report.checked_segments > 0
    assert any("tool:billing" in n for n in report.notes)  # not a file: said, not hidden


def test_a_changed_source_fails(plan, run, contract_text):
    a, _, result = run
    a.write_text(contract_text.replace("90 days", "30 days"), encoding="utf-8")
    problems = verify_record(result.record, plan=plan, stages=SWITCHES)
    assert [p.code for p in problems] == ["source-changed"]
    assert problems[0].source == str(a) and "msa.md" in str(problems[0])


def test_a_missing_source_fails(plan, run):
    a, _, result = run
    a.unlink()
    problems = verify_record(result.record, plan=plan, stages=SWITCHES)
    assert [p.code for p in problems] == ["source-unreadable"]


def _verbatim(record):
    for src in record["sources"]:
        for seg in src["segments"]:
            if seg["status"] == "verbatim":
                return src, seg
    raise AssertionError("no verbatim segment")


def test_a_tampered_segment_sha_fails(plan, run):
    _, _, result = run
    record = copy.deepcopy(dict(result.record))
    src, seg = _verbatim(record)
    seg["sha256"] = sha256("The Supplier's total liability shall not exceed $5,000,000 in any year.")
    problems = verify_record(record, plan=plan, stages=SWITCHES)
    assert any(p.code == "text-substituted" and p.segment == seg["id"] for p in problems)


def test_substituted_text_with_a_forged_record_fails(plan, run):
    """Someone edits the delivered text and rewrites every sha in the record to match, keeping the source."""
    _, _, result = run
    assert "$50,000" in result.text
    forged_text = result.text.replace("$50,000", "$500,000")
    record = copy.deepcopy(dict(result.record))
    record["sha256"] = sha256(forged_text)
    blocks = split_blocks(forged_text, record)
    for src in record["sources"]:
        if src["id"] in blocks:
            src["sha256"] = sha256(blocks[src["id"]])
    # without re-running the selection, the forged record would match the forged text
    assert not [p for p in verify_record(record, forged_text) if p.code == "text-changed"]
    problems = verify_record(record, forged_text, plan=plan, stages=SWITCHES)
    assert {p.code for p in problems} == {"text-substituted", "text-not-derivable"}
    assert any("'500'" in p.message for p in problems if p.code == "text-not-derivable")


def test_delivered_text_is_checked_against_the_record(plan, run):
    _, _, result = run
    # change the first digit of the delivered text below its first header (with no query, which of the contract's
    # sentences fit 110 tokens follows the ranking; "$50,000" was one of them until the no-query fact share, c0959e1)
    m = re.compile(r"\d").search(result.text, result.text.index("\n"))
    assert m is not None, result.text
    digit = m.start()
    edited = result.text[:digit] + ("8" if result.text[digit] == "9" else "9") + result.text[digit + 1:]
    problems = verify_record(result.record, edited, plan=plan, stages=SWITCHES)
    codes = {p.code for p in problems}
    assert codes == {"text-changed", "text-not-derivable"}
    assert any(p.source is None for p in problems) and any(p.source is not None for p in problems)


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.update(tokens_out=r["tokens_out"] - 3), "tokens_out is"),
    (lambda r: r.update(over_budget=True), "over_budget is True"),
    (lambda r: r.update(over_by=7), "over_by is 7"),
    (lambda r: r["segments"].update(dropped=r["segments"].get("dropped", 0) + 1), "segment counts"),
])
def test_edited_figures_that_no_hash_covers_are_caught(plan, run, edit, message):
    _, _, result = run
    record = copy.deepcopy(result.record)
    edit(record)
    problems = verify_record(record, result.text, plan=plan, stages=SWITCHES)
    assert [p.code for p in problems] == ["record-inconsistent"] and message in problems[0].message


def test_a_dropped_segment_may_not_claim_text(plan, run):
    _, _, result = run
    record = copy.deepcopy(dict(result.record))
    seg = next(s for src in record["sources"] for s in src["segments"] if s["status"] == "dropped")
    seg["sha256"] = sha256("something")
    assert any(p.code == "record-tampered" for p in verify_record(record, plan=plan, stages=SWITCHES))


def _first(record, status):
    return next((src, seg) for src in record["sources"] for seg in src.get("segments") or () if seg["status"] == status)


def _edit_dropped_segment(record):
    _, seg = _first(record, "dropped")
    seg["tokens_out"] = seg["tokens_in"]
    return seg["id"]


def _edit_verbatim_segment(record):
    _, seg = _first(record, "verbatim")
    seg["tokens_out"] = 1
    return seg["id"]


def _edit_verbatim_segment_both(record):
    _, seg = _first(record, "verbatim")
    seg["tokens_in"] = seg["tokens_out"] = 1
    return seg["id"]


def _edit_source(record):
    record["sources"][0]["tokens_out"] = 999


def _edit_tokens_in(record):
    record["tokens_in"] += 5


def _drop_every_segment(record, src):
    """Mark each segment of *src* dropped, the record's segment summary and its sha256s with it."""
    for seg in src["segments"]:
        seg.update(status="dropped", sha256=sha256(""), tokens_out=0)
    counts = {}
    for seg in (seg for s in record["sources"] for seg in s.get("segments") or ()):
        counts[seg["status"]] = counts.get(seg["status"], 0) + 1
    record["segments"] = counts


def _edit_dropped_source(record):
    _drop_every_segment(record, record["sources"][0])


@pytest.mark.parametrize("edit, code, message", [
    # QA s31 F5: verify passed all three of these, in the README tour's record
    (_edit_dropped_segment, "record-tampered", "a dropped segment claims"),
    (_edit_verbatim_segment, "record-inconsistent", "its tokens_out is 1 and its tokens_in"),
    (_edit_source, "record-inconsistent", "tokens_out is 999 but the source's block in the delivered text counts"),
    # both figures edited alike: the verbatim text, re-cut from the source, is counted again
    (_edit_verbatim_segment_both, "record-inconsistent", "tokens_out is 1 but the verbatim text it delivered counts"),
    (_edit_tokens_in, "record-inconsistent", "but its sources' tokens_in add up to"),
    (_edit_dropped_source, "record-inconsistent", "every segment of the source is dropped or merged"),
])
def test_token_figures_the_record_makes_agree_are_checked(plan, run, edit, code, message):
    _, _, result = run
    record = copy.deepcopy(result.record)
    segment = edit(record)  # the segment the edit names, or None
    problems = [p for p in verify_record(record, result.text, plan=plan, stages=SWITCHES)
                if p.code not in ("text-changed", "text-substituted")]  # what the last edit also (rightly) says
    assert {p.code for p in problems} == {code} and message in problems[0].message, [str(p) for p in problems]
    if segment is not None:
        assert problems[0].segment == segment


def test_a_dropped_source_may_not_claim_tokens(plan, run):
    _, _, result = run
    record = copy.deepcopy(result.record)
    src = record["sources"][0]
    src.update(status="dropped", tokens_out=12, sha256=sha256(""))
    _drop_every_segment(record, src)
    problems = verify_record(record, plan=plan, stages=SWITCHES)
    assert [p.code for p in problems] == ["record-tampered"]
    assert "a dropped source claims 12 delivered tokens" in str(problems[0])


def test_the_token_figures_of_an_unannotated_text_are_counted(plan, tmp_path, contract_text):
    a = tmp_path / "msa.md"
    a.write_text(contract_text, encoding="utf-8")
    result = Compressor(plan, stages=SWITCHES).compress([read_source_file(str(a))], budget=80, annotate=False)
    assert verify_report(result.record, result.text, plan=plan, stages=SWITCHES).ok
    record = copy.deepcopy(result.record)
    record["sources"][0]["tokens_out"] += 1
    problems = verify_record(record, result.text, plan=plan, stages=SWITCHES)
    assert [p.code for p in problems] == ["record-inconsistent"] and "block" in problems[0].message


def test_not_a_record():
    assert [p.code for p in verify_record({"nope": 1})] == ["record-invalid"]


def test_read_ranges(tmp_path):
    f = tmp_path / "f.txt"
    f.write_bytes("\ufeffline one\nline two\nline three\n".encode("utf-8"))
    assert read_selection(f, "whole") == "line one\nline two\nline three\n"
    assert read_selection(f, "lines 2-3") == "line two\nline three\n"
    assert select(b"0123456789", "bytes 2-4") == "234"
    data = json.dumps({"orders": [{"id": "W1", "items": [1, 2]}, {"a/b~c": "W2"}]}).encode()
    assert select(data, "/orders/0/id") == "W1"
    assert select(data, "/orders/0/items") == "[\n  1,\n  2\n]"
    assert select(data, "/orders/1/a~1b~0c") == "W2"
    with pytest.raises(InputError, match="past the end"):
        read_selection(f, "lines 2-9")
    with pytest.raises(InputError, match="no key 'nope'"):
        select(data, "/nope")
    with pytest.raises(InputError, match="unknown read range"):
        select(data, "chars 1-2")


def test_a_line_range_source_verifies(plan, tmp_path):
    f = tmp_path / "log.txt"
    f.write_text("header\nPay $10 by Friday.\nShip order W7.\nfooter\n", encoding="utf-8")
    text = read_selection(f, "lines 2-3")
    src = Source(id="log", text=text, origin=str(f), read_range="lines 2-3")
    result = Compressor(plan, stages=SWITCHES).compress([src], budget=100)
    assert verify_record(result.record, result.text, plan=plan, stages=SWITCHES) == []
    f.write_text("header\nPay $99 by Friday.\nShip order W7.\nfooter\n", encoding="utf-8")
    assert [p.code for p in verify_record(result.record, plan=plan, stages=SWITCHES)] == ["source-changed"]
    f.write_text("HEADER CHANGED\nPay $10 by Friday.\nShip order W7.\nfooter\n", encoding="utf-8")
    assert verify_record(result.record, plan=plan, stages=SWITCHES) == []  # outside the range


@pytest.mark.skipif("fold" in SWITCHES, reason="this build has no fold stage")
def test_a_substituted_folded_table_fails(plan, tmp_path):
    rows = "\n".join(f"| W{k:03d} | {k * 7} units | shipped |" for k in range(40))
    f = tmp_path / "orders.md"
    f.write_text("Orders this week.\n\n| order | amount | status |\n|---|---|---|\n" + rows + "\n", encoding="utf-8")
    whole = {**SWITCHES, "segment": {"max_table_tokens": 2000}}  # one table segment, folded
    result = Compressor(plan, stages=whole).compress([read_source_file(str(f))], budget=400)
    assert "folded" in result.record["segments"], result.record["segments"]
    assert verify_record(result.record, result.text, plan=plan, stages=whole) == []
    forged = result.text.replace("shipped", "refunded", 1)
    record = copy.deepcopy(dict(result.record))
    record["sha256"] = sha256(forged)
    for sid, body in split_blocks(forged, record).items():
        next(s for s in record["sources"] if s["id"] == sid)["sha256"] = sha256(body)
    problems = verify_record(record, forged, plan=plan, stages=whole)
    assert [p.code for p in problems] == ["text-not-derivable"] and "'refunded'" in problems[0].message


def test_a_table_delivered_in_parts_with_row_markers_verifies(plan, tmp_path):
    rows = "\n".join(f"| W{k:03d} | {k * 7} units | {'held' if k == 23 else 'shipped'} |" for k in range(40))
    f = tmp_path / "orders.md"
    f.write_text("Orders this week.\n\n| order | amount | status |\n|---|---|---|\n" + rows + "\n", encoding="utf-8")
    result = Compressor(plan, stages=SWITCHES).compress([read_source_file(str(f))], query="which order is held?",
                                                        budget=160)
    assert "[DATA_ROWS:" in result.text and "| W023 | 161 units | held |" in result.text
    assert verify_record(result.record, result.text, plan=plan, stages=SWITCHES) == []
    forged = result.text.replace("[DATA_ROWS: ", "[DATA_ROWS: 1", 1)
    assert verify_record(result.record, forged, plan=plan, stages=SWITCHES) != []


def test_a_list_delivered_in_part_with_item_marks_verifies(plan, tmp_path):
    rules = "\n".join(f"- Rule {k}: the agent must log step {k} of the refund process." for k in range(1, 9))
    f = tmp_path / "policy.md"
    f.write_text("Refund policy for agents.\n\n" + rules.replace("step 6 of", "step 6 and quote order W6 of")
                 + "\n", encoding="utf-8")
    result = Compressor(plan, stages=SWITCHES).compress([read_source_file(str(f))], query="order W6", budget=130)
    assert "W6" in result.text and "[…" in result.text, result.text
    assert "Rule 2:" not in result.text  # so a mark stands for it
    assert verify_record(result.record, result.text, plan=plan, stages=SWITCHES) == []
    (body,) = split_blocks(result.text, result.record).values()
    assert foreign_words(body, f.read_text(encoding="utf-8")) == []  # the mark's words are odcf's
    forged = result.text.replace("[…", "[…1", 1)
    assert verify_record(result.record, forged, plan=plan, stages=SWITCHES) != []


@pytest.mark.skipif("rules" in SWITCHES, reason="this build has no rules stage")
def test_an_html_fragment_is_reselected_as_html(plan, tmp_path):
    f = tmp_path / "frag.html"
    f.write_text("<p>Pay <b>$10</b> by Friday.</p><p>Ship order W7 today.</p>", encoding="utf-8")
    result = Compressor(plan, stages=SWITCHES).compress([read_source_file(str(f))], budget=100)
    entry = result.record["sources"][0]
    assert entry["kind"] != "html" and entry["original_kind"] == "html"
    assert verify_record(result.record, result.text, plan=plan, stages=SWITCHES) == []


def test_an_unannotated_text_is_checked_as_a_whole(plan, tmp_path, contract_text):
    a = tmp_path / "msa.md"
    a.write_text(contract_text, encoding="utf-8")
    result = Compressor(plan, stages=SWITCHES).compress([read_source_file(str(a))], budget=110, annotate=False)
    report = verify_report(result.record, result.text, plan=plan, stages=SWITCHES)
    assert report.ok and any("--no-annotate" in n for n in report.notes)
    forged = result.text.replace("$50,000", "$500,000")
    record = dict(result.record, sha256=sha256(forged))
    codes = {p.code for p in verify_record(record, forged, plan=plan, stages=SWITCHES)}
    assert "text-not-derivable" in codes


def test_a_text_whose_source_lines_the_budget_left_out_is_not_said_to_be_no_annotate(plan, tmp_path):
    # QA s32 J1: `odcf verify` of a run at --budget 15 said "(--no-annotate)", an option the run was never given
    a = tmp_path / "noeol.txt"
    a.write_text("Liability is capped at $5,000. Payment is due within 30 days.", encoding="utf-8")
    result = Compressor(plan, stages=SWITCHES).compress([read_source_file(str(a))], query="liability cap", budget=15)
    assert not result.text.startswith("[source")
    report = verify_report(result.record, result.text, plan=plan, stages=SWITCHES)
    said = [n for n in report.notes if "no [source i/n] headers" in n]
    assert report.ok and said and "the budget stage left them out" in said[0] and "--no-annotate" not in said[0]


def test_a_record_without_segment_details_says_so_and_verifies(plan, tmp_path, contract_text):
    a = tmp_path / "msa.md"
    a.write_text(contract_text, encoding="utf-8")
    stages = {**SWITCHES, "assemble": {"segment_details": False}}
    result = Compressor(plan, stages=stages).compress([read_source_file(str(a))], budget=110)
    record = result.record
    assert record["segment_details"] is False and record["record_format"] == 2
    assert not record["sources"][0].get("segments") and sum(record["segments"].values()) > 0
    report = verify_report(record, result.text, plan=plan, stages=stages, sources_only=True)
    assert report.ok and report.checked_segments == 0 and any("segment_details=False" in n for n in report.notes)
    # without sources_only, as `odcf verify` without --sources-only: nothing re-checked is not an "ok"
    assert [p.code for p in verify_record(record, result.text, plan=plan, stages=stages)] == ["segments-unchecked"]
    # a declaration that contradicts the lists is not believed
    listed = copy.deepcopy(dict(Compressor(plan, stages=SWITCHES).compress([read_source_file(str(a))],
                                                                          budget=110).record))
    listed["segment_details"] = False
    assert "record-inconsistent" in {p.code for p in verify_record(listed, plan=plan, stages=SWITCHES)}


@pytest.mark.parametrize("remove", [
    lambda src: src.update(segments=[]),
    lambda src: src.update(segments=None),
    lambda src: src.pop("segments"),
])
def test_a_record_whose_segment_entries_were_removed_fails(plan, run, remove):
    """Removing every per-segment entry (and so every drop reason) must not verify as "0 segments re-checked"."""
    _, _, result = run
    record = copy.deepcopy(dict(result.record))
    assert record["record_format"] == 2 and "segment_details" not in record
    for src in record["sources"]:
        remove(src)
    for sources_only in (False, True):  # this format says when it lists no segment: removed entries fail either way
        problems = verify_record(record, result.text, plan=plan, stages=SWITCHES, sources_only=sources_only)
        assert [p.code for p in problems] == ["segments-missing"], problems
        assert "summary counts" in problems[0].message
    # with the summary emptied too, the sources still say they delivered text
    record["segments"] = {}
    assert [p.code for p in verify_record(record, result.text, plan=plan, stages=SWITCHES)] == ["segments-missing"]


def test_a_format_1_record_without_segment_entries_passes_only_with_sources_only(plan, run):
    """Older odcf wrote records without lists (segment_details=False) and without saying so: --sources-only accepts them."""
    _, _, result = run
    record = copy.deepcopy(dict(result.record))
    record["record_format"] = 1
    for src in record["sources"]:
        src["segments"] = []
    problems = verify_record(record, result.text, plan=plan, stages=SWITCHES)
    assert [p.code for p in problems] == ["segments-missing"] and "--sources-only" in problems[0].message
    report = verify_report(record, result.text, plan=plan, stages=SWITCHES, sources_only=True)
    assert report.ok and any("segment_details=False" in n for n in report.notes)


def test_one_source_without_its_segment_entries_fails_even_with_the_summary_edited(plan, run):
    _, _, result = run
    record = copy.deepcopy(dict(result.record))
    gone = next(src for src in record["sources"] if src["status"] != "dropped" and src["segments"])
    for seg in gone["segments"]:
        record["segments"][seg["status"]] -= 1
    gone["segments"] = []
    for sources_only in (False, True):
        problems = verify_record(record, result.text, plan=plan, stages=SWITCHES, sources_only=sources_only)
        assert [(p.code, p.source) for p in problems] == [("segments-missing", gone["id"])]


@pytest.mark.parametrize("edit, path", [
    (lambda r: r["sources"][0].update(segments=[1, 2]), "sources[0].segments[0]: expected an object, got a number (1)"),
    (lambda r: r["sources"][0].update(origin=5), "sources[0].origin: expected a string or null, got a number (5)"),
    (lambda r: r["sources"][0].update(read_range={"a": 1}), "sources[0].read_range: expected a string or null, got an object"),
    (lambda r: r["sources"][0]["segments"][0].update(index="x"), "sources[0].segments[0].index: expected an integer"),
    (lambda r: r["sources"][0]["segments"][0].update(index=-1), "sources[0].segments[0].index: expected an integer >= 0"),
    (lambda r: r["sources"][0]["segments"][0].update(status="weird"), "sources[0].segments[0].status: 'weird' is no status"),
    (lambda r: r["sources"][0]["segments"][0].update(tokens_out="12"), "sources[0].segments[0].tokens_out: expected an integer"),
    (lambda r: r["sources"][0]["segments"][0].update(protected=[5]), "sources[0].segments[0].protected[0]: expected an object"),
    (lambda r: r["sources"][0].pop("id"), "sources[0].id: missing"),
    (lambda r: r["sources"].append("x"), "sources[3]: expected an object, got a string ('x')"),
    (lambda r: r.update(sources=None), "sources: expected an array, got null"),
    (lambda r: r.update(segments={"verbatim": "3"}), "segments.verbatim: expected a count"),
    (lambda r: r.update(domain=3), "domain: expected a string or null, got a number (3)"),
    (lambda r: r.update(tokens_out=True), "tokens_out: expected an integer or null, got a boolean (true)"),
    (lambda r: r.update(record_format=99), "record_format: 99 is newer than this odcf reads (2)"),
])
def test_a_malformed_record_is_record_invalid_naming_the_field(plan, run, edit, path):
    _, _, result = run
    record = copy.deepcopy(dict(result.record))
    edit(record)
    problems = verify_record(record, result.text, plan=plan, stages=SWITCHES)
    assert problems and {p.code for p in problems} == {"record-invalid"}
    assert problems[0].message.startswith(path), problems[0].message


def test_every_malformed_field_is_named_at_once():
    record = {"sources": [{"id": "a", "status": "verbatim", "origin": 5, "read_range": [1],
                           "segments": [{"id": "a#0", "index": 0, "status": "verbatim"}, 7]}]}
    assert [p.message for p in verify_record(record)] == [
        "sources[0].origin: expected a string or null, got a number (5)",
        "sources[0].read_range: expected a string or null, got an array",
        "sources[0].segments[1]: expected an object, got a number (7)",
    ]


def test_crlf_files_verify_with_their_crlf_blocks(plan, tmp_path, contract_text):
    a, b = tmp_path / "msa.md", tmp_path / "notes.txt"
    a.write_bytes(contract_text.replace("\n", "\r\n").encode("utf-8"))
    b.write_bytes(NOTES.replace("\n", "\r\n").encode("utf-8"))
    result = Compressor(plan, stages=SWITCHES).compress([read_source_file(str(a)), read_source_file(str(b))],
                                                        budget=150)
    assert result.text.count("[source ") == 2 and "\r\n\r\n[source 2/2]" in result.text
    assert set(split_blocks(result.text, result.record)) == {s["id"] for s in result.record["sources"]}
    assert verify_record(result.record, result.text, plan=plan, stages=SWITCHES) == []
    forged = result.text.replace("W2", "W9")
    assert verify_record(result.record, forged, plan=plan, stages=SWITCHES) != []


def test_a_json_subset_that_counts_the_keys_it_leaves_out_verifies(plan, tmp_path):
    # the subset ends an object with "[JSON_KEYS: n]":null; the null is odcf's, not a word the source lacks
    data = {"user": "u_551", "note": "the customer wrote a long note about nothing in particular " * 6,
            "orders": [{"order_id": f"#W{1000 + i}", "status": "cancelled" if i % 4 == 0 else "delivered"}
                       for i in range(40)]}
    f = tmp_path / "orders.json"
    f.write_text(json.dumps(data), encoding="utf-8")
    result = Compressor(plan, stages=SWITCHES).compress([read_source_file(str(f))], budget=150,
                                                        query="cancelled orders")
    assert re.search(r'"\[JSON_KEYS: \d+\]":null}$', result.text) and "null" not in f.read_text(encoding="utf-8")
    assert verify_record(result.record, result.text, plan=plan, stages=SWITCHES) == []


def test_the_last_block_of_a_handoff_ends_before_its_notes():
    # QA: 'odcf verify' of a handoff record failed 'text-changed' for the last source: its block ran on
    # into the '[handoff notes]' block appended after it
    record = {"handoff": {"notes_tokens": 9}, "sources": [
        {"id": "u1", "n": 1, "layer": "fact"}, {"id": "t1", "n": 2, "layer": "fact"}]}
    text = ("[source 1/2] u1 | fact | relevance 72%\nRefund to the card.\n\n"
            "[source 2/2] t1 | fact | relevance 68%\nRefund $45 for #W4817420.\n\n"
            "[handoff notes] odcf | role executor\nSearched, none found: counterexamples")
    assert split_blocks(text, record) == {"u1": "Refund to the card.", "t1": "Refund $45 for #W4817420."}
    plain = {k: v for k, v in record.items() if k != "handoff"}  # not a handoff: the text is the source's
    assert split_blocks(text, plain)["t1"].endswith("counterexamples")


def test_verify_record_reports_a_record_whose_sources_are_no_files_as_nothing_checked(plan):
    # QA: verify_record returned [] ("checks out") where `odcf verify` failed nothing-checked
    result = Compressor(plan, stages=SWITCHES).compress("Refund of $20 approved for order W1.", budget=60)
    problems = verify_record(result.record, result.text, plan=plan, stages=SWITCHES)
    assert [p.code for p in problems] == ["nothing-checked"]
    assert not verify_report(result.record, result.text, plan=plan, stages=SWITCHES).ok
    assert [p.code for p in verify_record(result.record, result.text, sources_only=True)] == ["nothing-checked"]


def test_verify_record_without_the_plan_reports_segments_unchecked(plan, run):
    # QA: verify_record returned [] where `odcf verify` failed segments-unchecked (no plan: nothing re-cut)
    _, _, result = run
    assert verify_record(result.record, result.text, plan=plan, stages=SWITCHES) == []
    report = verify_report(result.record, result.text)  # a custom plan, not given: no segment re-checked
    assert report.checked_segments == 0 and len(report.checked_sources) == 2
    assert [p.code for p in report.problems] == ["segments-unchecked"] and not report.ok
    assert "pass its ontology (--ontology), --plan or --trace" in report.problems[0].message
    assert verify_record(result.record, result.text, sources_only=True) == []


MEETING = ("Weekly sync, 18 March 2025\n\n"
           "Priya: OK, let us start now. First item is the settlement failure last Tuesday.\n"
           "Tom: Sure, I can summarise it. Batch 88412 failed at 10:00 UTC because the pool was full.\n"
           "Ana: Did any merchant notice the failure?\n"
           "Tom: Two merchants opened tickets, and both are closed.\n"
           "Luis: The reporting role also should not have write access to the database.\n"
           "Priya: Agreed, so that is settled. Tom, you own the connection cap, by 21 March. "
           "Luis, you own removing write access from the reporting role, by 28 March.\n"
           "Luis: OK, 28 March works for me.\n")


#: The meeting as a chat with an agent (the user's later messages are marked "… ": odcf.render).
CHAT = MEETING.replace("Priya:", "user:")
for _name in ("Tom:", "Ana:", "Luis:"):
    CHAT = CHAT.replace(_name, "assistant:")


def test_a_transcript_cut_between_turns_names_each_turns_speaker_and_verifies(plan, tmp_path):
    # QA: "Luis, you own …" was written under the user's "First item …" with the turns between left out: no
    # label, no mark, and it read as the rest of that first message
    path = tmp_path / "chat.txt"
    path.write_text(CHAT, encoding="utf-8")
    source_lines = CHAT.split("\n")
    comp = Compressor(plan, stages=SWITCHES)
    seen = set()
    for budget in range(30, 130, 11):
        result = comp.compress([read_source_file(str(path))], query="who owns which action item, by when",
                               budget=budget, annotate=False)
        assert verify_report(result.record, result.text, plan=plan, stages=SWITCHES).ok, result.text
        lines = result.text.split("\n")
        for k, line in enumerate(lines):
            if not line or re.match(r"(user|assistant): ", line):
                continue
            if line.startswith("… "):  # a later line of the speaker of the line above, lines left out between
                seen.add("…")
                continue
            at = next(i for i, src in enumerate(source_lines) if line[:20] in src)
            if ": " not in source_lines[at]:
                continue  # the title
            # a transcript line without its speaker's label goes on the one above it in the source, nothing between
            above = next(i for i, src in enumerate(source_lines) if lines[k - 1][-20:] in src)
            assert at == above + 1 and source_lines[at].split(":")[0] == source_lines[above].split(":")[0], result.text
        seen.update("Luis" for line in lines if line.startswith(("user: Luis, you own", "… Luis, you own")))
    assert seen == {"Luis", "…"}
