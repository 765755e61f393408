"""JSONL traces and replay: header/events/footer, deterministic ids, replay detects a changed source."""
from __future__ import annotations

import importlib.util
import json

import pytest

from odcf.compressor import Compressor, read_source_file
from odcf.document import Source, sha256
from odcf.errors import InputError
from odcf.pipeline import DEFAULT_ENABLED
from odcf.trace import first_difference, read_trace, replay, write_trace

SWITCHES = {n: False for n in ("rules", "fold") if importlib.util.find_spec(f"odcf.stages.{n}") is None}
NOTES = "Order W1 shipped on 2024-05-01.\nOrder W2 is pending.\nThe customer asked about the refund.\n"


def _run(plan, tmp_path, contract_text, **kw):
    path = tmp_path / "msa.md"
    path.write_text(contract_text, encoding="utf-8")
    inputs = [read_source_file(str(path)), NOTES, {"id": "memo", "text": "Despite the delay, pay $1,200.", "layer": "fact"}]
    c = Compressor(plan, stages=SWITCHES)
    result = c.compress(inputs, query="liability cap", budget=120, **kw)
    trace = tmp_path / "run.trace.jsonl"
    trace_id = write_trace(result, trace, inputs=inputs, compressor=c)
    return path, trace, trace_id, result


def test_trace_lines(plan, tmp_path, contract_text):
    path, trace, trace_id, result = _run(plan, tmp_path, contract_text)
    lines = [json.loads(x) for x in trace.read_text(encoding="utf-8").splitlines()]
    head, events, foot = lines[0], lines[1:-1], lines[-1]
    assert head["type"] == "header" and foot["type"] == "footer"
    assert head["trace_id"] == trace_id == foot["trace_id"]
    assert head["plan_hash"] == plan.hash and head["plan"] == plan.to_dict()
    assert head["budget"] == 120 and head["query"] == "liability cap" and head["tokenizer"] == "o200k_base"
    assert head["stages"]["segment"] is not False
    assert (head["stages"]["rerank"] is False) == (not DEFAULT_ENABLED["rerank"])
    assert head["models"]["packages"]["bpe-openai"]  # the tokenizer's package version is pinned in the trace
    # the file source is stored by path and sha256, the others in full
    assert head["inputs"][0]["file"] == str(path.resolve()) and head["inputs"][0]["sha256"] == sha256(contract_text)
    assert "text" not in head["inputs"][0]
    assert head["inputs"][1] == {"form": "text", "text": NOTES}
    assert head["inputs"][2]["text"].startswith("Despite")
    assert [e["stage"] for e in events] == [ev.stage for ev in result.document.trace]
    assert all(e["type"] == "event" and "ms" in e and "decisions" in e for e in events)
    assert foot["output_sha256"] == sha256(result.text) and foot["output"] == result.text
    assert foot["tokens_out"] == result.tokens_out


def test_trace_id_is_deterministic_and_output_unchanged(plan, tmp_path, contract_text):
    _, _, id1, r1 = _run(plan, tmp_path, contract_text)
    _, _, id2, r2 = _run(plan, tmp_path, contract_text)
    assert id1 == id2 and r1.text == r2.text
    _, _, id3, _ = _run(plan, tmp_path, contract_text, role="writer")
    assert id3 != id1


def test_replay_identical(plan, tmp_path, contract_text):
    _, trace, trace_id, _ = _run(plan, tmp_path, contract_text)
    rep = replay(trace)
    assert rep.identical and rep.reproduced and rep.trace_id == trace_id
    assert rep.first_difference is None and rep.input_changes == () and rep.stage_differences == ()
    assert rep.record_identical and rep.plan_hash_ok


def test_replay_detects_a_changed_source(plan, tmp_path, contract_text):
    path, trace, _, result = _run(plan, tmp_path, contract_text)
    assert "$50,000" in result.text
    path.write_text(contract_text.replace("$50,000", "$95,000"), encoding="utf-8")
    rep = replay(trace)
    assert not rep.identical and not rep.reproduced
    assert rep.input_changes and str(path.resolve()) in rep.input_changes[0]
    pos = result.text.index("$50,000") + 1
    assert rep.first_difference == pos
    assert "$50,000" in rep.expected_excerpt and "$95,000" in rep.actual_excerpt


def test_replay_reports_differing_stage_events(plan, tmp_path, contract_text):
    path, trace, _, _ = _run(plan, tmp_path, contract_text)
    path.write_text(contract_text + "\nA new closing sentence adds tokens to the source.\n", encoding="utf-8")
    rep = replay(trace)
    # the new sentence may or may not survive the budget; either way the run is not reproduced
    assert not rep.reproduced and rep.input_changes
    assert rep.stage_differences and rep.stage_differences[0]["traced"]["tokens_in"] < rep.stage_differences[0]["replayed"]["tokens_in"]
    assert not rep.record_identical


def test_source_objects_round_trip(plan, tmp_path):
    inputs = [Source(id="a", text="Pay $10 now.", layer="fact", origin="tool:billing", confidence=0.5)]
    c = Compressor(plan, stages=SWITCHES)
    result = c.compress(inputs, budget=40)
    write_trace(result, tmp_path / "t.jsonl", inputs=inputs, compressor=c)
    assert replay(tmp_path / "t.jsonl").identical


def test_broken_traces_say_where(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "header", "plan": {}, "stages": {}, "inputs": []}\nnot json\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.jsonl:2: not JSON"):
        read_trace(bad)
    bad.write_text('{"type": "header", "plan": {}, "stages": {}, "inputs": []}\n', encoding="utf-8")
    with pytest.raises(InputError, match="no footer"):
        read_trace(bad)


def test_first_difference():
    assert first_difference("abc", "abc") is None
    assert first_difference("abc", "abd") == 2
    assert first_difference("ab", "abc") == 2


def test_compress_trace_keyword_writes_a_replayable_trace(plan, tmp_path, contract_text):
    c = Compressor(plan, stages=SWITCHES)
    trace = tmp_path / "api.trace.jsonl"
    result = c.compress([contract_text, NOTES], query="liability cap", budget=100, trace=trace)
    rep = replay(trace)
    assert rep.identical and read_trace(trace).header["budget"] == 100
    assert json.loads(trace.read_text(encoding="utf-8").splitlines()[-1])["output"] == result.text


def test_a_trace_whose_inputs_are_not_a_list_is_one_clear_error():
    from odcf.trace import load_inputs

    with pytest.raises(InputError, match="'inputs' must be a list"):
        load_inputs("abc")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="input 1: trace entry must be an object"):
        load_inputs(["abc"])  # type: ignore[list-item]


def _rewrite(trace, edit):
    """Apply *edit* to the trace's parsed lines (or write the lines it returns) and write them back."""
    lines = [json.loads(x) for x in trace.read_text(encoding="utf-8").splitlines()]
    lines = edit(lines) or lines
    trace.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def test_replay_of_a_trace_without_stage_events_fails(plan, tmp_path, contract_text):
    _, trace, _, _ = _run(plan, tmp_path, contract_text)
    _rewrite(trace, lambda lines: [lines[0], lines[-1]])
    rep = replay(trace)
    assert rep.identical and rep.record_identical and not rep.reproduced
    assert rep.traced_events == 0 and rep.failures == ("the trace holds no stage events, so no stage was compared",)


def test_replay_of_a_trace_with_a_removed_or_edited_stage_event_fails(plan, tmp_path, contract_text):
    _, trace, _, _ = _run(plan, tmp_path, contract_text)
    _rewrite(trace, lambda lines: lines.pop(2) and None)
    rep = replay(trace)
    assert rep.identical and not rep.reproduced and rep.stage_differences
    # lined up by stage: the one removed event is the one difference, not every event after it
    (removed,) = rep.stage_differences
    assert removed["n"] == 1 and removed["traced"] is None and removed["replayed"]["stage"] == removed["stage"]
    _, trace, _, _ = _run(plan, tmp_path, contract_text)
    _rewrite(trace, lambda lines: lines[1].update(tokens_out=lines[1]["tokens_out"] + 1))
    rep = replay(trace)
    assert not rep.reproduced and [d["n"] for d in rep.stage_differences] == [0]


def test_replay_of_a_plan_that_is_not_the_header_s_fails_unless_ignored(plan, tmp_path, contract_text):
    _, trace, _, _ = _run(plan, tmp_path, contract_text)
    # the plan edited after the run, its plan_hash left as it was
    _rewrite(trace, lambda lines: lines[0]["plan"]["protection"]["terms"].append("weather"))
    rep = replay(trace)
    assert not rep.plan_hash_ok and not rep.reproduced
    assert any(f.startswith("plan-mismatch: the plan in the trace hashes to") for f in rep.failures)
    rep = replay(trace, ignore_plan_hash=True)
    assert rep.plan_hash_ignored and any("--ignore-plan-hash" in n for n in rep.notes)
    assert "plan-mismatch" not in " ".join(rep.failures)


def test_replay_ignoring_the_plan_hash_reproduces_a_run_whose_plan_edit_steers_nothing(plan, tmp_path, contract_text):
    # QA1 finding 5: the record embeds the plan's hash, so every edit failed "the delivery record differs"
    _, trace, _, _ = _run(plan, tmp_path, contract_text)
    _rewrite(trace, lambda lines: lines[0]["plan"].update(description="edited after the run"))
    assert not replay(trace).reproduced
    rep = replay(trace, ignore_plan_hash=True)
    assert rep.reproduced and rep.record_identical and rep.record_difference is None and rep.plan_hash_ignored
    # a trace written before the footer held the record; and one whose header's plan_hash is the edit
    _rewrite(trace, lambda lines: lines[-1].pop("record") and None)
    assert replay(trace, ignore_plan_hash=True).reproduced
    _, trace, _, _ = _run(plan, tmp_path, contract_text)
    _rewrite(trace, lambda lines: lines[0].update(plan_hash="ab") or lines[-1].pop("record") and None)
    assert replay(trace, ignore_plan_hash=True).reproduced


def test_replay_names_the_first_record_field_that_differs(plan, tmp_path, contract_text):
    from odcf.trace import record_digest

    _, trace, _, result = _run(plan, tmp_path, contract_text)
    status = result.record["sources"][1]["status"]

    def edit(lines):  # the traced run delivered the second source otherwise
        rec = lines[-1]["record"]
        rec["sources"][1]["status"] = "dropped" if status != "dropped" else "verbatim"
        lines[-1]["record_sha256"] = record_digest(rec)
    _rewrite(trace, edit)
    rep = replay(trace)
    want = f"sources[1].status: {'dropped' if status != 'dropped' else 'verbatim'!r} != {status!r}"
    assert rep.identical and not rep.reproduced and rep.record_difference == want
    assert f"the delivery record differs at {want}" in rep.failures and rep.to_dict()["record_difference"] == want


def test_replay_of_a_trace_of_record_format_1_is_reproduced(plan, tmp_path, contract_text):
    from odcf.trace import record_digest

    _, trace, _, result = _run(plan, tmp_path, contract_text)
    assert result.record["record_format"] == 2
    old = record_digest({**result.record, "record_format": 1})
    _rewrite(trace, lambda lines: lines[-1].update(record_sha256=old))
    rep = replay(trace)
    assert rep.reproduced and any("format 1" in n for n in rep.notes)


@pytest.mark.parametrize("edit, message", [
    (lambda lines: lines[0].update(plan="x"), "header.plan: expected an object, got a string ('x')"),
    (lambda lines: lines[0].update(stages=[1]), "header.stages: expected an object, got an array"),
    (lambda lines: lines[0]["stages"].update(fold=3), "header.stages.fold: expected false or an object of options"),
    (lambda lines: lines[0].update(trace_format="abc"), "header.trace_format: expected an integer or null, got a string ('abc')"),
    (lambda lines: lines[0].update(strict="yes"), "header.strict: expected a boolean or null"),
    (lambda lines: lines[0].pop("inputs") and None, "header.inputs: missing"),
    (lambda lines: lines[1].update(stage=5), "line 2 (event).stage: expected a string, got a number (5)"),
    (lambda lines: lines[-1].pop("output_sha256") and None, "(footer).output_sha256: missing"),
    (lambda lines: lines[0].update(plan={}), "header.plan: not a valid plan"),
    (lambda lines: lines[0]["inputs"][0].update(form="weird"), "input 1: unknown form 'weird'"),
])
def test_a_malformed_trace_is_one_clear_error_naming_the_field(plan, tmp_path, contract_text, edit, message):
    _, trace, _, _ = _run(plan, tmp_path, contract_text)
    _rewrite(trace, edit)
    with pytest.raises(InputError) as info:
        replay(trace)
    assert message in str(info.value)


NOEOL = "Liability is capped at $5,000. Payment is due within 30 days."


def test_replay_of_a_run_whose_budget_left_the_source_lines_out_is_reproduced(plan, tmp_path):
    # QA s32 J1: at 15 tokens nothing fits beside "[source 1/1] …"; the budget stage delivers without it and
    # sets the document's annotate to False. The header held that outcome, replay ran with annotate=False,
    # never took the "left out" path, and reported NOT REPRODUCED for an unchanged run
    c = Compressor(plan, stages=SWITCHES)
    trace = tmp_path / "tight.trace.jsonl"
    result = c.compress([{"id": "n", "text": NOEOL}], query="liability cap", budget=15, trace=trace)
    assert not result.text.startswith("[source") and any(
        w.startswith("the source lines were left out") for w in result.record["warnings"])
    head = read_trace(trace).header
    assert head["annotate"] is True  # what the call asked for, not what the budget stage made of it
    rep = replay(trace)
    assert rep.identical and rep.reproduced, rep.failures
    # the id is derived from the requested setting: a run asked with annotate=False is another run
    other = tmp_path / "bare.trace.jsonl"
    c.compress([{"id": "n", "text": NOEOL}], query="liability cap", budget=15, annotate=False, trace=other)
    assert read_trace(other).header["annotate"] is False and read_trace(other).trace_id != rep.trace_id
    assert replay(other).reproduced


def test_replay_of_an_older_trace_that_holds_the_budget_stage_s_annotate_is_reproduced(plan, tmp_path):
    c = Compressor(plan, stages=SWITCHES)
    trace = tmp_path / "old.trace.jsonl"
    c.compress([{"id": "n", "text": NOEOL}], query="liability cap", budget=15, trace=trace)
    _rewrite(trace, lambda lines: lines[0].update(annotate=False))  # as an odcf before the fix wrote it
    rep = replay(trace)
    assert rep.reproduced, rep.failures
    assert any("annotate=false is the budget stage's outcome" in n for n in rep.notes)
