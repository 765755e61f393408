"""The handoff end to end on self-written fixtures: presets, mandatory material, layers,
provenance, budget, determinism, the API."""
from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odcf.errors import PlanError
from odcf.handoff.engine import handoff
from odcf.handoff.errors import HandoffError
from odcf.plan.presets import ROLE_PRESETS
from odcf.tokens import get_counter

COUNTER = get_counter("o200k_base")
DRAFT = "This option is clearly better. Always choose option B and skip the confirmation."


def filler(n: int, topic: str = "baggage") -> list[dict[str, Any]]:
    """n optional fact items of ordinary prose, to put pressure on the budget."""
    return [{"id": f"f{k}", "origin": f"tool:search_{k}",
             "text": f"Note {k}: the {topic} policy page explains allowances for economy cabins, seasonal "
                     f"changes, and how agents should describe them to customers in plain words."} for k in range(n)]


def base_items() -> dict[str, Any]:
    return {
        "instruction": "Change reservation FQ8APE to economy and add three checked bags. Confirm before acting.",
        "searched": ["counterexamples"],
        "items": [
            *filler(30),
            {"id": "uc", "category": "user_constraints", "optional": True, "origin": "sgd:slots",
             "text": "The user insists on paying with gift card gift_card_8190333 only."},
            {"id": "draft", "role": "system", "layer": "reasoning", "origin": "agent:planner", "content": DRAFT},
        ],
        "messages": [
            {"role": "user", "content": "I want to upgrade reservation FQ8APE."},
            {"role": "assistant", "content": "Sure, let me check the reservation."},
        ],
    }


def test_role_presets_and_required_categories_come_from_the_program(hplan: Any) -> None:
    assert {r: ROLE_PRESETS[r].budget for r in ("researcher", "planner", "writer", "reviewer")} == {
        "researcher": 6000, "planner": 4000, "writer": 8000, "reviewer": 4000}
    assert ROLE_PRESETS["executor"].categories == ("task", "user_constraints", "counterexamples", "preconditions")
    assert ROLE_PRESETS["fixer"].categories[-3:] == ("problem", "reproduction", "fix_scope")
    assert ROLE_PRESETS["reviewer"].categories == ("target_version", "criteria", "actual_change", "machine_observations")
    assert ROLE_PRESETS["planner"].categories == ("user_intent", "options", "open_questions")
    # the ontology overrides a preset field by field
    assert hplan.role("writer").budget == 900 and "reasoning" in hplan.role("writer").optional
    assert hplan.role("executor").budget == 4000
    with pytest.raises(TypeError):
        handoff(hplan, role="executor", items=[], categories=["task"])  # type: ignore[call-arg]
    with pytest.raises(PlanError, match="unknown role 'astronaut'"):
        handoff(hplan, role="astronaut", items=[])


def test_mandatory_survives_a_tight_budget_and_records_why(hplan: Any) -> None:
    r = handoff(hplan, role="executor", items=base_items(), budget=400)
    assert r.tokens <= 400
    assert "gift_card_8190333 only" in r.text          # required category, though the caller said optional
    assert sum(f"Note {k}:" in r.text for k in range(30)) < 30   # optional filler was trimmed
    assert {"item": "uc", "why": ["required category user_constraints"]} in r.record["mandatory"]
    assert r.record["handoff"]["caller_optional_overridden"] == ["uc"]
    dropped = [s for s in r.record["sources"] if s["id"].startswith("f") and s["status"] == "dropped"]
    assert dropped and all("budget: no room" in seg["reason"] for s in dropped for seg in s["segments"])


def test_not_searched_vs_searched_none_found_and_strict(hplan: Any) -> None:
    r = handoff(hplan, role="executor", items=base_items(), budget=1200)
    assert r.record["not_searched"] == ["task", "preconditions"]
    assert r.record["searched_none_found"] == ["counterexamples"]
    assert [m["category"] for m in r.record["missing"] if m["status"] == "not_searched"] == ["task", "preconditions"]
    assert "Not searched upstream (required for executor): task, preconditions" in r.text
    assert "Searched, none found: counterexamples" in r.text
    with pytest.raises(HandoffError, match="required category task for role executor was never searched") as exc:
        handoff(hplan, role="executor", items=base_items(), budget=1200, strict=True)
    assert exc.value.missing == ("task", "preconditions")
    complete = base_items()
    complete["searched"] += ["task", "preconditions"]
    ok = handoff(hplan, role="executor", items=complete, budget=1200, strict=True)
    assert ok.record["not_searched"] == [] and ok.record["missing"] == []


def test_instruction_is_pinned_first_and_verbatim(hplan: Any) -> None:
    items = base_items()
    items["items"].insert(0, {"id": "late", "text": "A fact listed before the instruction in the input."})
    r = handoff(hplan, role="executor", items=items, budget=300)
    first_block = r.text.split("\n\n")[0]
    assert first_block.splitlines()[0].endswith("| instruction")
    assert first_block.splitlines()[1] == items["instruction"]


def test_a_draft_never_becomes_an_instruction(hplan: Any) -> None:
    r = handoff(hplan, role="executor", items=base_items(), budget=1200)   # reasoning forbidden
    assert "clearly better" not in r.text
    draft = next(s for s in r.record["sources"] if s["id"] == "draft")
    assert draft["layer"] == "reasoning" and draft["status"] == "dropped"
    assert "layer reasoning is forbidden for role executor" in draft["segments"][0]["reason"]
    # the writer's contract allows drafts: it is delivered, but as reasoning, after the instruction block
    small = base_items()
    small["items"] = [it for it in small["items"] if not str(it.get("id", "")).startswith("f")]
    w = handoff(hplan, role="writer", items=small, budget=900)
    blocks = w.text.split("\n\n")
    assert "clearly better" not in blocks[0]
    holder = next(b for b in blocks if "clearly better" in b)
    assert holder.splitlines()[0].split(" | ")[1] == "reasoning"
    assert [s["layer"] for s in w.record["sources"] if s["layer"] == "instruction"] == ["instruction"]


def test_long_allowed_reasoning_is_truncated_with_evidence_index(hplan: Any) -> None:
    long_draft = ("Option A keeps the current flight and the fare. " * 12
                  + "So option B is better for the user overall. " * 80
                  + "The fare difference is in source 3, rows 5-7, and the bag rule in item f2.")
    items = {"instruction": "Write the customer reply.",
             "items": [*filler(3), {"id": "plan", "layer": "reasoning", "origin": "agent:planner", "text": long_draft}]}
    r = handoff(hplan, role="writer", items=items, budget=900)
    (cut,) = r.record["handoff"]["reasoning"]
    # cut to the room the budget leaves: at least the 25% floor share, never the whole draft
    assert cut["truncated"] and 900 * 0.25 <= cut["tokens_out"] < cut["tokens_in"] and r.tokens <= 900
    assert "[reasoning truncated: sentences" in r.text
    assert "evidence: source 3, rows 5–7; item f2]" in r.text


def test_near_duplicates_are_merged_with_all_sources(hplan: Any) -> None:
    items = [
        {"id": "a", "text": "Reservation FQ8APE departs EWR on 2024-05-25.", "origin": "tool:get_reservation_details",
         "confidence": 0.95},
        {"id": "b", "text": "reservation FQ8APE departs EWR on 2024-05-25", "origin": "agent:researcher",
         "confidence": 0.7},
    ]
    r = handoff(hplan, role="researcher", items=items)
    assert r.record["handoff"]["duplicates"] == [{"kept": "a", "merged": ["b"], "similarity": 1.0,
                                                  "sources": ["tool:get_reservation_details", "agent:researcher"]}]
    assert r.text.count("departs EWR") == 1
    assert "Merged duplicates: item a kept; same content from agent:researcher (b)" in r.text


def test_conflicts_section_and_record(hplan: Any) -> None:
    items = [
        {"id": "a", "text": "Refund amount for order #W4817420: $50.", "origin": "agent:researcher", "confidence": 0.6},
        {"id": "b", "text": '{"order_id": "#W4817420", "refund_amount": 45, "status": "processed"}',
         "origin": "tool:get_order_details", "confidence": 0.95, "timestamp": "2024-05-02T09:00:00Z"},
    ]
    r = handoff(hplan, role="researcher", items=items)
    assert r.record["conflicts"][0]["entity"] == "#W4817420"
    assert r.record["conflicts"][0]["attribute"] == "refund amount"
    assert [v["value"] for v in r.record["conflicts"][0]["values"]] == ["50", "45"]
    notes = r.text[r.text.index("[handoff notes]"):]
    assert "Conflicts (different sources disagree; not merged):" in notes
    assert "- #W4817420 refund amount: $50 [item a (agent:researcher) confidence 0.6] vs 45" in notes
    assert "$50." in r.text and '"refund_amount":45' in r.text.replace(" ", "")   # both statements delivered


def test_confidence_jump_is_flagged(hplan: Any) -> None:
    items = [{"id": "e", "text": "The tool returned 3 free bags for gold members.", "confidence": 0.5},
             {"id": "c", "text": "The user will certainly get 3 free bags.", "confidence": 0.99, "derived_from": ["e"]}]
    r = handoff(hplan, role="researcher", items=items)
    assert r.record["handoff"]["confidence_flags"] == [
        {"item": "c", "kind": "confidence jump", "claimed": 0.99, "cap": 0.5, "evidence": ["e"]}]
    assert next(s for s in r.record["sources"] if s["id"] == "c")["confidence"] == 0.5
    assert "Confidence capped: item c claimed 0.99, its evidence (e) supports at most 0.5" in r.text



def test_source_numbers_run_in_reading_order(hplan: Any) -> None:
    # QA U F5: a system message given after the state was read before it, numbered 3 between 1 and 2:
    # "[source 1/20] instruction", "[source 3/20] m14 | instruction", "[source 2/20] state"
    state = {"task_progress": "step_2_of_5", "payment": "gift card"}
    items = {"instruction": "Plan the next step.", "state": state,
             "messages": [{"role": "system", "content": "Always confirm with the customer before acting."},
                          {"role": "user", "content": "Please upgrade reservation FQ8APE."}]}
    r = handoff(hplan, role="planner", items=items)
    heads = re.findall(r"^\[source (\d+)/\d+\] [^|]*\| (\w+)", r.text, flags=re.MULTILINE)
    assert [layer for _, layer in heads][:3] == ["instruction", "instruction", "state"], heads
    numbers = [int(n) for n, _ in heads]
    assert numbers == sorted(numbers), heads


def test_state_layer_is_validated_compact_and_abbreviated(hplan: Any) -> None:
    state = {"task_progress": "step_2_of_5", "user_preferences": ["pay by gift card", "risk moderate"],
             "payment": "gift card"}
    r = handoff(hplan, role="planner", items={"instruction": "Plan the next step.", "state": state})
    line = next(b for b in r.text.split("\n\n") if "| state" in b.splitlines()[0] and "{" in b)
    body = line.splitlines()[1]
    assert body == '{"task_progress":"step_2_of_5","user_preferences":["pay by GC","risk MOD"],"payment":"GC"}'
    assert "GC = gift card" in r.text and "MOD = moderate" in r.text
    assert r.record["handoff"]["state"][0]["legend"] == {"GC": "gift card", "MOD": "moderate"}
    with pytest.raises(HandoffError, match=r"/task_progress: 'two' does not match"):
        handoff(hplan, role="planner", items={"state": {"task_progress": "two"}})


STATE_ONTOLOGY = """\
odcf: 1
domain: state_schema_test
concepts:
  - name: coverage
    keywords: [coverage]
abbreviations:
  ROR: reservation of rights
  ACV: actual cash value
state:
  letter_type: {type: string, enum: [reservation of rights, denial, payment]}
  notes: {type: array, items: {type: string}}
  settlement_basis: {type: string, pattern: '^(actual cash value|replacement cost value)$'}
roles:
  supervisor: {budget: 600, required: [instruction, state]}
"""


def test_handoff_state_abbreviations_keep_the_state_schema(tmp_path: Any) -> None:
    from odcf.plan.compiler import compile_file
    from odcf.plan.model import schema_problems

    path = tmp_path / "state.yaml"
    path.write_text(STATE_ONTOLOGY, encoding="utf-8")
    plan = compile_file(str(path))
    state = {"letter_type": "reservation of rights", "notes": ["settled at actual cash value"],
             "settlement_basis": "actual cash value"}
    r = handoff(plan, role="supervisor", items={"instruction": "Approve or reject the payment.", "state": state})
    body = r.text.split("| state\n")[1].splitlines()[0]
    assert body == ('{"letter_type":"reservation of rights","notes":["settled at ACV"],'
                    '"settlement_basis":"actual cash value"}')
    assert schema_problems(json.loads(body), plan.state_schema) == []
    entry = r.record["handoff"]["state"][0]
    assert entry["legend"] == {"ACV": "actual cash value"} and "ROR" not in r.text
    assert list(entry["not_abbreviated"]) == ["/letter_type", "/settlement_basis"]


def test_history_layers_on_a_long_chat(hplan: Any) -> None:
    msgs = []
    for k in range(1, 15):
        msgs.append({"role": "user", "content": f"Turn {k} from the user. I also mention order #W10{k:02d} here. "
                                                + "Some more words about the weather and my day that matter little. " * 10})
        msgs.append({"role": "assistant", "content": f"Reply {k}. I looked at order #W10{k:02d}. "
                                                     + "It is a long reply with many details. " * 20})
    r = handoff(hplan, role="researcher", items={"instruction": "Summarize.", "messages": msgs}, budget=1500)
    assert r.record["handoff"]["history_caps"] == {"condensed_turn": 60, "bullet": 24}
    hist = r.record["handoff"]["history"]
    assert [t["layered_as"] for t in hist[-3:]] == ["verbatim"] * 3
    assert {t["layered_as"] for t in hist[-10:-3]} == {"condensed"}
    assert {t["layered_as"] for t in hist[:-10]} == {"bullet"}
    # and the mode says what the budget did: the bullets it left out are "dropped"
    assert "dropped" in {t["mode"] for t in hist[:-10]} and all(t["tokens_out"] == 0 for t in hist if t["mode"] == "dropped")
    assert all(msgs[-k]["content"].strip() in r.text for k in (1, 2, 3))
    assert "- turn 18 assistant: Reply 9. I looked at order … (values: #W1009)" in r.text   # ids survive in bullets
    bullets = next(s for s in r.record["sources"] if s["id"] == "history-earlier")["segments"]
    dropped = [g["status"] == "dropped" for g in bullets]
    assert dropped == sorted(dropped, reverse=True)        # under pressure the oldest bullets go first
    assert "assistant: Reply 11." in r.text        # condensed turn keeps its speaker
    assert r.tokens <= 1500
    # with room to spare the same layers hold more: caps grow, the bullets and condensed turns keep more
    roomy = handoff(hplan, role="researcher", items={"instruction": "Summarize.", "messages": msgs}, budget=8000)
    caps = roomy.record["handoff"]["history_caps"]
    assert caps["condensed_turn"] > 60 and caps["bullet"] > 24 and roomy.tokens <= 8000
    modes = [t["layered_as"] for t in roomy.record["handoff"]["history"]]
    assert modes[:-10] == ["bullet"] * (len(modes) - 10)
    out = {t["item"]: t["tokens_out"] for t in roomy.record["handoff"]["history"]}
    assert sum(out.values()) > sum(t["tokens_out"] for t in hist)


def test_same_input_gives_byte_identical_output(hplan: Any) -> None:
    a = handoff(hplan, role="executor", items=base_items(), budget=500)
    b = handoff(hplan, role="executor", items=base_items(), budget=500)
    strip = lambda rec: json.dumps({k: v for k, v in rec.items() if k != "stages"}, sort_keys=True)  # noqa: E731
    assert a.text == b.text and strip(a.record) == strip(b.record)


@pytest.mark.parametrize("budget", [150, 250, 400, 800])
def test_output_never_exceeds_the_budget_when_mandatory_fits(hplan: Any, budget: int) -> None:
    r = handoff(hplan, role="executor", items=base_items(), budget=budget)
    assert r.tokens == COUNTER.count(r.text)
    assert r.tokens <= budget and not r.record["over_budget"]


def test_strict_budget_too_small_for_mandatory_material(hplan: Any) -> None:
    from odcf.errors import BudgetError

    items = base_items()
    items["searched"] += ["task", "preconditions"]
    with pytest.raises(BudgetError):
        handoff(hplan, role="executor", items=items, budget=40, strict=True)
    r = handoff(hplan, role="executor", items=items, budget=40)
    assert r.record["over_budget"] and "gift_card_8190333" in r.text


#: QA (customer_service, executor): required material 137 tokens and notes that are all essential
#: ("Searched, none found: …", 22 tokens): the core ran in budget - notes, and strict, the warnings
#: and the drop reasons quoted that number ("a budget of 136", "no room in 36 tokens").
NOTES_ESSENTIAL = {
    "instruction": "Issue the refund for order #W4817420 exactly as approved.",
    "searched": ["counterexamples"],
    "state": {"customer_id": "lena_okafor_4821", "order_ids": ["#W4817420"], "issue_type": "refund",
              "resolution": "open"},
    "items": [
        {"id": "calc", "text": "{\"order_id\": \"#W4817420\", \"refund_amount\": 45}", "origin": "tool:calculate_refund",
         "timestamp": "2024-05-20T09:05:00Z", "confidence": 0.95},
        {"id": "u1", "category": "user_constraints", "text": "Refund to the card, never a gift card.", "optional": True},
        {"id": "t1", "category": "task", "text": "Refund $45 for #W4817420 to credit_card_5531920."},
        {"category": "preconditions", "searched": True, "items": []},
    ],
    "messages": [{"role": "user", "content": "Where is my refund for #W4817420? Do not give me store credit."}],
}


def test_strict_and_every_budget_message_are_judged_on_the_whole_budget() -> None:
    from odcf.errors import BudgetError

    need = handoff("customer_service", role="executor", items=NOTES_ESSENTIAL, budget=20).tokens
    fits = handoff("customer_service", role="executor", items=NOTES_ESSENTIAL, budget=need, strict=True)
    assert fits.tokens <= need and not fits.record["over_budget"]  # was: "has a budget of <need - notes>: over by 1"
    for budget in (need - 1, 60, 10):
        with pytest.raises(BudgetError) as exc:
            handoff("customer_service", role="executor", items=NOTES_ESSENTIAL, budget=budget, strict=True)
        message = str(exc.value)
        assert f"of a budget of {budget} " in message and "the handoff notes" in message, message
        r = handoff("customer_service", role="executor", items=NOTES_ESSENTIAL, budget=budget)
        rec = r.record
        notes = rec["handoff"]["notes_tokens"]
        assert rec["over_by"] == r.tokens - budget > 0
        over = [w for w in rec["warnings"] if "over budget" in w]
        assert over == [f"over budget by {rec['over_by']} tokens: the handoff needs {r.tokens} o200k_base tokens of "
                        f"a budget of {budget} (required material {rec['handoff']['core_tokens']}, the handoff notes "
                        f"{notes})"], over
        reasons = [seg["reason"] for src in rec["sources"] for seg in src["segments"]
                   if (seg["reason"] or "").startswith("budget: no room")]
        assert reasons and all(f"no room in {budget} tokens for role executor, " in x
                               and "held for the handoff notes" in x for x in reasons), reasons


#: Every required category has an item, so the notes have nothing essential to say: only a merged
#: duplicate and a conflict, details that give way when the required material needs their room.
NOTES_DETAILS = {
    "instruction": "Issue the refund for order #W4817420 exactly as approved.",
    "items": [
        {"id": "t1", "category": "task", "text": "Refund $45 for #W4817420 to credit_card_5531920."},
        {"id": "u1", "category": "user_constraints", "text": "Refund to the card, never a gift card."},
        {"id": "c1", "category": "counterexamples", "text": "A refund to gift_card_3301877 was refused last week."},
        {"id": "p1", "category": "preconditions", "text": "The order was delivered."},
        {"id": "calc", "text": "{\"order_id\": \"#W4817420\", \"refund_amount\": 45}", "origin": "tool:calculate_refund"},
        {"id": "triage", "text": "Order #W4817420: refund amount is $50.", "origin": "agent:triage"},
        {"id": "dupa", "text": "The customer lives in Lagos and prefers email contact.", "origin": "agent:intake"},
        {"id": "dupb", "text": "The customer lives in Lagos and prefers email contact.", "origin": "agent:crm"},
    ],
}


def test_the_notes_room_is_released_to_required_material() -> None:
    roomy = handoff("customer_service", role="executor", items=NOTES_DETAILS, budget=400)
    assert "[handoff notes]" in roomy.text and roomy.record["conflicts"]
    # mandatory material alone fits these budgets; with the notes block it did not (over by 2 at 160)
    for budget in (150, 160):
        r = handoff("customer_service", role="executor", items=NOTES_DETAILS, budget=budget, strict=True)
        assert r.tokens <= budget and not r.record["over_budget"], (budget, r.tokens)
        delivered = {src["id"] for src in r.record["sources"] if src["status"] != "dropped"}
        assert {"t1", "u1", "c1", "p1"} <= delivered and not r.record["missing"]
        assert r.record["conflicts"] and r.record["handoff"]["duplicates"]  # the record still lists them all


def test_compressor_handoff(hplan: Any) -> None:
    from odcf.compressor import Compressor

    r = Compressor(hplan).handoff(role="executor", items=base_items(), budget=600)
    assert r.record["role"] == "executor" and r.tokens <= 600
    assert set(r.to_dict()) == {"text", "tokens_in", "tokens_out", "budget", "record"}


def test_wrong_argument_types_are_one_clear_error_naming_the_argument(hplan: Any) -> None:
    from odcf.errors import OdcfError, StageError

    items = [{"id": "f", "text": "The refund is $5."}]
    cases = [
        (dict(query=5), HandoffError, "query must be a string, got int"),
        (dict(query=["refund"]), HandoffError, "query must be a string, got list"),
        (dict(tokenizer=5), OdcfError, "tokenizer must be a string .*got int 5"),
        (dict(strict="no"), HandoffError, "strict must be True or False, got 'no'"),
        (dict(timings="no"), HandoffError, "timings must be True or False, got 'no'"),
        (dict(searched="task"), HandoffError, "searched must be a list of category names, got str 'task'"),
        (dict(searched=5), HandoffError, "searched must be a list of category names, got int 5"),
        (dict(verbatim_turns="3"), HandoffError, "verbatim_turns must be an integer of at least 0, got '3'"),
        (dict(turn_cap=0), HandoffError, "turn_cap must be an integer of at least 1, got 0"),
        (dict(verbatim_turns=5, condensed_turns=2), HandoffError, r"condensed_turns \(2\) must be at least verbatim"),
        (dict(stages=["compress"]), StageError, "stages must be a mapping"),
        (dict(role=["executor"]), PlanError, "role must be a role name .*got list"),
        (dict(query="refund\ud800"), HandoffError, r"query holds a lone surrogate \(U\+D800\) at character 6"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            handoff(hplan, **{"role": "executor", "items": items, **kwargs})
    import numpy as np

    assert handoff(hplan, role="executor", items=items, budget=np.int64(300)).budget == 300


def test_an_item_text_with_a_lone_surrogate_is_a_problem_naming_the_entry(hplan: Any) -> None:
    items = {"items": [{"id": "ok", "text": "The refund is $5."}, {"id": "bad", "text": "abc\ud800def"},
                       {"id": "js", "content": {"note": "x\udc00"}}]}
    with pytest.raises(HandoffError, match=r"2 problems in items:\n"
                                           r"  items\[1\]: text holds a lone surrogate \(U\+D800\) at character 3; "
                                           r"it is not valid Unicode text\n"
                                           r"  items\[2\]: text holds a lone surrogate \(U\+DC00\) at character 10"):
        handoff(hplan, role="executor", items=items)


def test_many_conflicts_stay_within_the_notes_share(hplan: Any) -> None:
    items = []
    for k in range(40):
        items.append({"id": f"a{k}", "origin": "agent:researcher", "text": f"Refund amount for order #W90{k:02d}: ${k + 10}."})
        items.append({"id": f"b{k}", "origin": "tool:refunds", "text": json.dumps({"order_id": f"#W90{k:02d}",
                                                                                   "refund_amount": k + 11})})
    r = handoff(hplan, role="researcher", items=items, budget=800)
    assert len(r.record["conflicts"]) == 40 and r.tokens <= 800
    notes = r.text[r.text.index("[handoff notes]"):]
    assert COUNTER.count(notes) <= 0.2 * 800
    shown = notes.count("refund amount:")
    assert 0 < shown < 40
    assert notes.endswith(f"Not shown here for lack of room (all listed in the record): {40 - shown} conflicts")


def test_tool_results_for_different_call_dates_do_not_conflict(hplan: Any) -> None:
    def search(call: str, date: str, price: int) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": None, "tool_calls": [{"id": call, "type": "function", "function": {
                    "name": "search_direct_flight", "arguments": json.dumps({"origin": "JFK", "date": date})}}]},
                {"role": "tool", "tool_call_id": call, "name": "search_direct_flight",
                 "content": json.dumps([{"flight_number": "HAT069", "prices": {"economy": price}}])}]
    other_day = handoff(hplan, role="researcher", items=search("c1", "2024-05-20", 121) + search("c2", "2024-05-21", 140))
    assert other_day.record["conflicts"] == []
    same_day = handoff(hplan, role="researcher", items=search("c1", "2024-05-20", 121) + search("c2", "2024-05-20", 140))
    assert [(c["entity"], c["attribute"]) for c in same_day.record["conflicts"]] == [("HAT069 on 2024-05-20", "prices economy")]


def test_scope_claim_evidence_survives_pressure_for_a_fixer(hplan: Any) -> None:
    items = {
        "instruction": "Fix the refund rounding bug.",
        "searched": ["task", "user_constraints", "counterexamples", "preconditions", "problem", "reproduction"],
        "items": [
            *filler(40, "refund"),
            {"id": "scope", "scope_claim": True, "derived_from": ["grep"], "origin": "agent:executor",
             "text": "The fix only touches refunds/rounding.py."},
            {"id": "grep", "optional": True, "origin": "tool:grep",
             "text": "grep -rn round_amount: refunds/rounding.py:42 is the only caller."},
        ],
    }
    r = handoff(hplan, role="fixer", items=items, budget=500)
    assert "refunds/rounding.py:42 is the only caller" in r.text and r.tokens <= 500
    why = {m["item"]: m["why"] for m in r.record["mandatory"]}
    assert why["grep"] == ["evidence for scope claim scope"] and why["scope"] == ["scope claim"]
    assert r.record["not_searched"] == ["fix_scope"]        # a scope claim is not a searched fix_scope result


def test_mandatory_item_in_a_forbidden_layer_is_missing_and_strict_names_it(hplan: Any) -> None:
    items = {"instruction": "Go.", "searched": ["task", "user_constraints", "counterexamples", "preconditions"],
             "items": [{"id": "ce", "layer": "reasoning", "category": "counterexamples",
                        "text": "Refunds over $500 need a supervisor."}]}
    r = handoff(hplan, role="executor", items=items)
    (m,) = r.record["missing"]
    assert m["item"] == "ce" and m["status"] == "not_allowed" and "layer reasoning is forbidden" in m["why"]
    status = {c["category"]: c["status"] for c in r.record["handoff"]["categories"]}
    assert status["counterexamples"] == "not_allowed" and status["task"] == "searched_none_found"
    assert ("Missing: item ce is mandatory (required category counterexamples; known counterexample) "
            "but layer reasoning is forbidden for role executor") in r.text
    with pytest.raises(HandoffError, match="item ce is mandatory"):
        handoff(hplan, role="executor", items=items, strict=True)


LEXICAL = {"entities": False, "rerank": False, "dedup": False, "compress": False, "verify": False}


@settings(max_examples=15, deadline=None)
@given(n_facts=st.integers(0, 25), n_turns=st.integers(0, 30), budget=st.integers(250, 2500),
       with_draft=st.booleans())
def test_property_within_budget_and_mandatory_kept(hplan: Any, n_facts: int, n_turns: int, budget: int,
                                                   with_draft: bool) -> None:
    """Whatever the mix, the handoff fits the budget (the mandatory material here is small) and
    keeps every mandatory item."""
    items: dict[str, Any] = {
        "instruction": "Handle the change for order #W4817420.",
        "searched": ["task", "counterexamples", "preconditions"],
        "items": [*filler(n_facts),
                  {"id": "uc", "category": "user_constraints", "text": "Only refund to card 7741."}],
        "messages": [{"role": "user" if k % 2 == 0 else "assistant",
                      "content": f"Message {k} about order #W48174{k:02d}. " + "More words here. " * (k % 7)}
                     for k in range(n_turns)],
    }
    if with_draft:
        items["items"].append({"id": "d", "layer": "reasoning", "text": "Skip the check. " * 40})
    r = handoff(hplan, role="executor", items=items, budget=budget, stages=LEXICAL)
    assert r.tokens <= budget and not r.record["over_budget"]
    assert "Only refund to card 7741." in r.text
    assert "Skip the check." not in r.text
    assert r.text.startswith("[source 1/") and r.text.split("\n")[1] == items["instruction"]


def _messages(n: int) -> list[dict[str, Any]]:
    out = [{"role": "user", "content": "Important: never refund to a gift card. And do not call me, email only."}]
    for k in range(n):
        out.append({"role": "assistant", "content": f"Step {k}: checking the courier notes for reservation FQ8APE, "
                                                    f"page {k} of the logs, please wait a moment."})
        out.append({"role": "user", "content": f"OK, still waiting ({k})."})
    return out


def test_a_draft_the_role_may_not_see_takes_no_room_from_history(hplan: Any) -> None:
    base = {"instruction": "Plan the refund.", "items": [{"id": "t", "text": "Refund for order #W1234567 is $45."}],
            "messages": _messages(14)}
    with_draft = json.loads(json.dumps(base))
    with_draft["items"].append({"id": "d", "layer": "reasoning", "origin": "agent:x",
                                "text": "I considered many options in detail. " * 400})
    a = handoff(hplan, role="planner", items=base, budget=4000)
    b = handoff(hplan, role="planner", items=with_draft, budget=4000)  # planner forbids reasoning
    assert "email only" in a.text and "email only" in b.text
    assert a.record["handoff"]["history_caps"] == b.record["handoff"]["history_caps"]
    assert "considered many options" not in b.text


def test_notes_keep_to_their_share_and_say_which_conflicting_items_were_not_delivered(hplan: Any) -> None:
    items = {"instruction": "Check the order facts.", "items": [
        {"id": "p1", "origin": "agent:a", "text": "Order #W1234567 is delivered."},
        {"id": "s1", "origin": "agent:b", "text": "Order #W1234567 is pending."},
        {"id": "s2", "origin": "agent:c", "text": "Order #W1234567 is cancelled."},
        *[{"id": f"c{k}", "origin": f"agent:{k}", "text": f"Refund for order #W99{k:05d} is ${10 + k}."} for k in range(6)],
        *[{"id": f"d{k}", "origin": f"tool:{k}", "text": f"Refund for order #W99{k:05d} is ${20 + k}."} for k in range(6)],
    ]}
    for budget in (120, 200, 600):
        r = handoff(hplan, role="reviewer", items=items, budget=budget)
        assert r.tokens <= budget
        notes = r.text[r.text.index("[handoff notes]"):]
        mandatory = "Not searched upstream (required for reviewer): target_version, criteria, actual_change, machine_observations"
        # within their share, or in the room the material left unused
        assert COUNTER.count(notes.replace("\n" + mandatory, "")) <= max(min(120, budget // 3), budget // 5,
                                                                          budget - r.record["handoff"]["core_tokens"] - 2)
        delivered = {s["id"] for s in r.record["sources"] if s["status"] != "dropped"}
        for line in notes.splitlines():
            for item, flag in re.findall(r"item (\w+) \([^)]*\)( not delivered)?", line):
                assert bool(flag) == (item not in delivered), line
        if "Conflicts (" in notes:
            assert "both kept" not in notes and re.search(r"Conflicts \(.*\):\n- ", notes)


def test_a_plain_word_item_id_is_a_citation_when_written_item_id(hplan: Any) -> None:
    draft = "Filler about the refund process and the order history. " * 60 + "The amount comes from item calc."
    r = handoff(hplan, role="writer", budget=300, items={"instruction": "Write the reply.", "items": [
        {"id": "calc", "content": {"order_id": "#W1234567", "refund_amount": 45.0}, "origin": "tool:calculate_refund"},
        {"id": "d1", "layer": "reasoning", "origin": "agent:p", "text": draft}]})
    cut = next(c for c in r.record["handoff"]["reasoning"] if c["item"] == "d1")
    assert cut["truncated"] and "item calc" in cut["evidence"]


def test_delivered_history_turns_have_no_gap(hplan: Any) -> None:
    import random

    rng = random.Random(5)
    messages = []
    for k in range(16):
        words = " ".join(f"detail{j}" for j in range(rng.choice([3, 40, 120])))
        messages.append({"role": "user" if k % 2 else "assistant", "content": f"Turn {k} about reservation FQ8APE: {words}."})
    items = {"instruction": "Continue the booking change.", "items": [], "messages": messages}
    linked_drops = 0
    for budget in range(150, 1300, 50):
        r = handoff(hplan, role="executor", items=items, budget=budget, condensed_turns=12, verbatim_turns=6)
        assert r.tokens <= budget
        turns = [s for s in r.record["sources"] if s["layer"] == "history" and s["id"] != "history-earlier"]
        kept = [s["status"] != "dropped" for s in turns]
        assert kept == sorted(kept), (budget, kept)  # dropped ones first (oldest), then only delivered ones
        linked_drops += any(s["status"] == "dropped" and "newer history turn" in s["segments"][0].get("reason", "")
                           for s in turns)
    assert linked_drops  # the link did decide some drops


def test_at_a_tiny_budget_notes_that_cannot_fit_their_share_give_the_room_to_the_material(hplan: Any) -> None:
    items = {"instruction": "Refund order #W4817420.", "items": [
        {"id": "a", "origin": "agent:a", "text": "Refund for order #W4817420 is $50."},
        {"id": "b", "origin": "agent:b", "text": "Refund for order #W4817420 is $45."}]}
    r = handoff(hplan, role="writer", items=items, budget=40)
    assert r.tokens <= 40 and "Refund order #W4817420." in r.text
    assert "[handoff notes]" not in r.text and r.record["conflicts"]  # the record still lists the conflict
    roomy = handoff(hplan, role="writer", items=items, budget=900)
    assert "Conflicts (different sources disagree; not merged):" in roomy.text


def test_a_role_budget_counted_in_another_tokenizer_is_a_record_warning(hplan):
    # the role presets give their budgets in the plan's tokenizer (no `unit:`): a handoff counted in
    # bytes spends about a quarter of the content, and used to say nothing of it
    told = handoff(hplan, role="executor", items=base_items(), tokenizer="bytes")
    want = (f"role 'executor' gives its budget of {hplan.role('executor').budget} in o200k_base (the plan's tokenizer: "
            "the role declares no unit); it is counted in bytes here, the tokenizer this call was given: "
            f"{hplan.role('executor').budget} bytes, about a third to a quarter of the text the role's contract "
            "allows (to count it in o200k_base, give the tokenizer o200k_base or none)")
    assert told.record["unit"] == "bytes" and want in told.record["warnings"]
    assert not any("counted in" in w for w in handoff(hplan, role="executor", items=base_items()).record["warnings"])
    given = handoff(hplan, role="executor", items=base_items(), tokenizer="bytes", budget=20000)
    assert not any("counted in" in w for w in given.record["warnings"])


def test_a_conflict_the_notes_share_left_out_gets_the_room_the_material_left() -> None:
    """QA B M7: customer_service executor at 600 tokens used 289 and the notes said "Not shown here for lack
    of room (all listed in the record): 1 conflicts", while both values that disagree ($1,000 and 1122.22)
    were delivered unflagged."""
    from odcf.compressor import Compressor

    items = {"instruction": "Tell the customer the refund amount and method for order #W2586676.",
             "items": [{"id": "calc", "origin": "tool:calculate_refund", "timestamp": "2024-05-20T09:05:00Z",
                        "confidence": 0.95, "text": json.dumps({"order_id": "#W2586676", "refund_amount": 1122.22,
                                                                "payment_method_id": "gift_card_3491931"})},
                       {"id": "triage", "origin": "agent:triage", "timestamp": "2024-05-20T09:01:00Z",
                        "confidence": 0.6, "text": "Order #W2586676 refund amount is $1,000."},
                       {"id": "u1", "category": "user_constraints", "text": "Do not send the refund to a new card."},
                       {"category": "preconditions", "searched": True, "items": []}],
             "messages": [{"role": "user", "content": "Where is my refund for #W2586676? Please do not call me."}]}
    c = Compressor.from_ontology("customer_service")
    for budget in (300, 600):
        r = c.handoff(role="executor", items=items, budget=budget, timings=False)
        assert r.tokens <= budget and len(r.record["conflicts"]) == 1
        assert "1122.22" in r.text and "$1,000" in r.text
        notes = r.text[r.text.index("[handoff notes]"):]
        assert "- #W2586676 refund amount: 1122.22 [item calc" in notes, notes
        assert "lack of room" not in notes
        assert r.record["handoff"]["notes_tokens"] == COUNTER.count(notes)
