"""The handoff rules one by one: mandatory material, dedup, conflicts, confidence caps,
state compaction, reasoning truncation (self-written fixtures)."""
from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odcf.handoff.conflicts import find_conflicts
from odcf.handoff.dedup import merge_near_duplicates
from odcf.handoff.errors import HandoffError
from odcf.handoff.items import HandoffItem
from odcf.handoff.mandatory import decide_mandatory
from odcf.handoff.reasoning import truncate_reasoning
from odcf.handoff.state import compact_state, expand_state
from odcf.handoff.trust import cap_confidence
from odcf.plan.model import schema_problems
from odcf.tokens import get_counter

COUNTER = get_counter("o200k_base")


def test_mandatory_rules_override_the_callers_optional_mark() -> None:
    items = (
        HandoffItem(id="t", text="Move the order to express.", category="task", optional=True),
        HandoffItem(id="m", text="Do not charge the card ending 7447.", mandatory=True),
        HandoffItem(id="c", text="Express is unavailable for PO boxes.", category="counterexamples", optional=True),
        HandoffItem(id="s", text="The fix only touches shipping.py.", category="fix_scope", derived_from=("e",)),
        HandoffItem(id="e", text="grep shows no other caller.", optional=True),
        HandoffItem(id="x", text="Unrelated note."),
    )
    d = decide_mandatory(items, required_categories=("task", "preconditions"), searched=frozenset())
    assert d.reasons["t"] == ("required category task",)
    assert d.reasons["m"] == ("marked mandatory",)
    assert d.reasons["c"] == ("known counterexample",)
    assert d.reasons["s"] == ("scope claim",)
    assert d.reasons["e"] == ("evidence for scope claim s",)
    assert not d.is_mandatory("x")
    assert set(d.overridden) == {"t", "c", "e"}
    assert [(c.category, c.status) for c in d.categories] == [("task", "delivered"), ("preconditions", "not_searched")]


def test_not_searched_is_distinct_from_searched_none_found() -> None:
    d = decide_mandatory((), required_categories=("counterexamples", "preconditions"),
                         searched=frozenset({"counterexamples"}))
    assert [c.category for c in d.searched_none_found] == ["counterexamples"]
    assert [c.category for c in d.not_searched] == ["preconditions"]


def test_scope_claim_with_absent_evidence_is_reported() -> None:
    d = decide_mandatory((HandoffItem(id="s", text="Only a.py changes.", scope_claim=True, derived_from=("gone",)),),
                         required_categories=(), searched=frozenset())
    assert d.missing_evidence[0]["item"] == "gone"


def test_near_duplicates_keep_the_most_confident_and_list_all_sources() -> None:
    items = (
        HandoffItem(id="a", text="Reservation UM3OG5 is round-trip from SEA to DFW.", origin="agent:researcher",
                    confidence=0.7, position=0),
        HandoffItem(id="b", text="reservation UM3OG5 is round trip from SEA to DFW", origin="tool:get_reservation",
                    confidence=0.95, category="task", position=1),
        HandoffItem(id="c", text="Reservation UM3OG5 is round-trip from SEA to ORD.", origin="agent:writer", position=2),
    )
    kept, groups = merge_near_duplicates(items)
    assert [it.id for it in kept] == ["b", "c"]
    assert groups[0].kept == "b" and groups[0].merged == ("a",)
    assert groups[0].sources == ("tool:get_reservation", "agent:researcher")


def test_different_numbers_are_never_duplicates() -> None:
    items = (HandoffItem(id="a", text="Refund amount for order #W123: $50."),
             HandoffItem(id="b", text="Refund amount for order #W123: $45."))
    kept, groups = merge_near_duplicates(items)
    assert len(kept) == 2 and groups == ()


def test_conflicting_amounts_are_listed_not_merged() -> None:
    items = (
        HandoffItem(id="a", text="Refund amount for order #W123: $50.", origin="agent:researcher",
                    timestamp="2024-05-01T10:00:00Z", confidence=0.6),
        HandoffItem(id="b", text="The refund of $45.00 for order #W123 was approved.", origin="tool:refunds",
                    confidence=0.9),
        HandoffItem(id="c", text="Order #W123 was delivered on 2024-05-02.", origin="tool:orders"),
        HandoffItem(id="d", text="Order #W123 was delivered on May 2, 2024.", origin="agent:writer"),
    )
    conflicts = find_conflicts(items)
    assert len(conflicts) == 1  # the two delivery dates agree once normalized
    c = conflicts[0]
    assert (c.entity, c.attribute) == ("#W123", "refund amount")
    assert [v.value for v in c.values] == ["50", "45"]
    assert [v.origins for v in c.values] == [("agent:researcher",), ("tool:refunds",)]
    assert "$50 [item a (agent:researcher) 2024-05-01T10:00:00Z confidence 0.6] vs $45.00" in c.render()


def test_json_tool_output_and_text_are_compared() -> None:
    items = (
        HandoffItem(id="j", text=json.dumps({"order_id": "#W777", "status": "pending"}), kind="json", origin="tool:get"),
        HandoffItem(id="t", text="Order #W777 is cancelled.", origin="agent:researcher"),
    )
    (c,) = find_conflicts(items)
    assert (c.entity, c.attribute, [v.value for v in c.values]) == ("#W777", "status", ["pending", "cancelled"])


def test_a_status_word_acting_on_an_order_or_said_of_a_person_is_no_status() -> None:
    # QA: a tool's {"order_id": "#W1234567", "status": "delivered"} and an agent's "We are processing order
    # #W1234567 now." were listed as "#W1234567 status: delivered vs processing"; so was a log line
    tool = HandoffItem(id="api", text=json.dumps({"order_id": "#W1234567", "status": "delivered"}), kind="json",
                       origin="tool:get_order")

    def statuses(text: str) -> list[tuple[str, str, list[str]]]:
        found = find_conflicts((tool, HandoffItem(id="note", text=text, origin="agent:ops")))
        return [(c.entity, c.attribute, [v.value for v in c.values]) for c in found]

    for text in ("We are processing order #W1234567 now.",
                 "2025-03-11 10:00:31,102 INFO  [main] c.a.OrderService: processing order #W1234567",
                 "We are processing the refund for #W1234567.",
                 "The agent is now processing #W1234567."):
        assert statuses(text) == [], text
    for text in ("Order #W1234567 is processing.", "Order #W1234567 status: processing",
                 "#W1234567: processing", "Status: processing for order #W1234567.",
                 "Order #W1234567 is now processing, we were told."):
        assert statuses(text) == [("#W1234567", "status", ["delivered", "processing"])], text


def test_json_ids_of_any_domain_name_entities() -> None:
    def item(i: str, obj: dict) -> HandoffItem:
        return HandoffItem(id=i, text=json.dumps(obj), kind="json", origin=f"tool:{i}")

    items = (item("a", {"claim_id": "CLM-204817", "status": "denied", "adjuster_id": "A1", "phone_number": "555-0100"}),
             item("b", {"claim_id": "CLM-204817", "status": "open", "adjuster_id": "A1", "phone_number": "555-0199"}),
             item("c", {"policyNumber": "P-9", "premium": 120}), item("d", {"policyNumber": "P-9", "premium": 125}),
             # numbers that are not identifiers: two customers sharing a phone, one seat on two flights
             item("e", {"contact_phone_number": "+1-555-0100", "name": "Lena"}),
             item("f", {"contact_phone_number": "+1-555-0100", "name": "Ravi"}),
             item("g", {"seatNumber": "12A", "flight": "UA100"}), item("h", {"seatNumber": "12A", "flight": "DL200"}))
    got = sorted((c.entity, c.attribute, tuple(v.value for v in c.values)) for c in find_conflicts(items))
    assert got == [("CLM-204817", "phone number", ("555-0100", "555-0199")),
                   ("CLM-204817", "status", ("denied", "open")),
                   ("P-9", "premium", ("120", "125"))]


def test_reasoning_drafts_are_not_compared() -> None:
    items = (HandoffItem(id="a", text="Order #W9 total $10."),
             HandoffItem(id="b", text="Order #W9 total $99.", layer="reasoning"))
    assert find_conflicts(items) == ()


def test_derived_confidence_is_capped_and_the_jump_flagged() -> None:
    items = (HandoffItem(id="e1", text="3 bags seen.", confidence=0.6),
             HandoffItem(id="e2", text="gold member.", confidence=0.9),
             HandoffItem(id="c", text="All 3 bags are free.", confidence=0.95, derived_from=("e1", "e2")),
             HandoffItem(id="d", text="Fine.", confidence=0.5, derived_from=("e2",)),
             HandoffItem(id="u", text="Unknown.", confidence=0.9, derived_from=("nowhere",)))
    out, flags = cap_confidence(items)
    conf = {it.id: it.confidence for it in out}
    assert conf["c"] == 0.6 and conf["d"] == 0.5 and conf["u"] == 0.9
    assert flags[0] == {"item": "c", "kind": "confidence jump", "claimed": 0.95, "cap": 0.6, "evidence": ["e1", "e2"]}
    assert flags[1]["item"] == "u" and flags[1]["kind"] == "cap unknown" and flags[1]["absent"] == ["nowhere"]


SCHEMA = {"type": "object", "additionalProperties": False,
          "properties": {"task_progress": {"type": "string", "pattern": r"^step_\d+_of_\d+$"},
                         "notes": {"type": "array", "items": {"type": "string"}}}}
ABBR = {"MOD": "moderate", "5Y": "5 years", "GC": "gift card"}


def test_state_is_compact_abbreviated_only_from_the_dictionary_and_round_trips() -> None:
    state = {"task_progress": "step_2_of_5",
             "notes": ["risk is moderate", "contract renews after 5 years", "pay by gift card", "MODerate stays"]}
    cs = compact_state(state, schema=SCHEMA, abbreviations=ABBR)
    assert cs.text == ('{"task_progress":"step_2_of_5","notes":["risk is MOD","contract renews after 5Y",'
                       '"pay by GC","MODerate stays"]}')
    assert dict(cs.legend) == ABBR
    assert expand_state(json.loads(cs.text), cs.legend) == state
    # no ad-hoc short forms: every word of the compact text is in the original or a dictionary key
    original_words = set(re.findall(r"\w+", json.dumps(state)))
    assert set(re.findall(r"\w+", cs.text)) <= original_words | set(ABBR)


def test_short_form_already_in_the_state_is_not_used() -> None:
    state = {"notes": ["MOD review pending", "risk is moderate"]}
    cs = compact_state(state, schema={}, abbreviations=ABBR)
    assert "MOD" not in cs.legend and json.loads(cs.text) == state


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["moderate", "5 years", "gift card", "MOD", "GC", "x", " ", "5", "Y", "-"]),
                         max_size=8).map("".join), max_size=4))
def test_abbreviation_always_round_trips(notes: list[str]) -> None:
    state = {"notes": notes}
    cs = compact_state(state, schema={}, abbreviations=ABBR)
    assert expand_state(json.loads(cs.text), cs.legend) == state


CLOSED_SCHEMA = {
    "type": "object",
    "properties": {
        "letter_type": {"type": "string", "enum": ["reservation of rights", "denial", "payment"]},
        "basis": {"type": "string", "pattern": "^(actual cash value|replacement cost value)$"},
        "notes": {"type": "array", "items": {"type": "string"}},
        "parties": {"type": "array", "items": {"type": "object", "properties": {
            "role": {"const": "reservation of rights"}, "memo": {"type": "string"}}}},
        "codes": {"type": "object", "patternProperties": {"^c_": {"enum": ["actual cash value", "none"]}}},
        "either": {"anyOf": [{"enum": ["actual cash value"]}, {"type": "integer"}]},
        "label": {"type": "string", "minLength": 10},
    },
}
CLOSED_ABBR = {"ROR": "reservation of rights", "ACV": "actual cash value"}
CLOSED_STATE = {"letter_type": "reservation of rights", "basis": "actual cash value",
                "notes": ["settled at actual cash value", "reservation of rights sent"],
                "parties": [{"role": "reservation of rights", "memo": "see actual cash value"}],
                "codes": {"c_1": "actual cash value", "other": "actual cash value"},
                "either": "actual cash value", "label": "actual cash value"}


def test_abbreviation_never_breaks_the_state_schema() -> None:
    cs = compact_state(CLOSED_STATE, schema=CLOSED_SCHEMA, abbreviations=CLOSED_ABBR)
    delivered = json.loads(cs.text)
    assert schema_problems(delivered, CLOSED_SCHEMA) == []
    assert delivered == {"letter_type": "reservation of rights", "basis": "actual cash value",
                         "notes": ["settled at ACV", "ROR sent"],
                         "parties": [{"role": "reservation of rights", "memo": "see ACV"}],
                         "codes": {"c_1": "actual cash value", "other": "ACV"},
                         "either": "actual cash value", "label": "actual cash value"}
    assert dict(cs.legend) == CLOSED_ABBR
    assert expand_state(delivered, cs.legend) == CLOSED_STATE
    # every value left whole is reported, with its reason
    assert set(cs.kept) == {"/letter_type", "/basis", "/parties/0/role", "/codes/c_1", "/either", "/label"}
    assert cs.kept["/letter_type"].startswith("enum: ") and cs.kept["/parties/0/role"].startswith("const: ")
    assert cs.kept["/basis"] == ("abbreviated, it would fail the schema: "
                                 "'ACV' does not match '^(actual cash value|replacement cost value)$'")
    assert "is too short" in cs.kept["/label"]


def test_no_legend_when_every_abbreviation_is_left_out() -> None:
    state = {"letter_type": "reservation of rights"}
    cs = compact_state(state, schema=CLOSED_SCHEMA, abbreviations=CLOSED_ABBR)
    assert json.loads(cs.text) == state and not cs.legend
    assert list(cs.kept) == ["/letter_type"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["reservation of rights", "actual cash value", "ROR", "x", " "]),
                max_size=6).map("".join),
       st.sampled_from(["reservation of rights", "denial", "payment"]),
       st.sampled_from(["actual cash value", "replacement cost value"]))
def test_abbreviated_state_always_validates_and_round_trips(note: str, letter: str, basis: str) -> None:
    state = {"letter_type": letter, "basis": basis, "notes": [note], "label": note + " label text"}
    cs = compact_state(state, schema=CLOSED_SCHEMA, abbreviations=CLOSED_ABBR)
    assert schema_problems(json.loads(cs.text), CLOSED_SCHEMA) == []
    assert expand_state(json.loads(cs.text), cs.legend) == state


def test_invalid_state_names_the_path() -> None:
    with pytest.raises(HandoffError, match=r"state: /task_progress: 'step 2' does not match"):
        compact_state({"task_progress": "step 2"}, schema=SCHEMA, abbreviations={})
    with pytest.raises(HandoffError, match=r"Additional properties are not allowed \('prio' was unexpected\)"):
        compact_state({"prio": 1}, schema=SCHEMA, abbreviations={})


def test_long_reasoning_is_cut_with_an_evidence_index() -> None:
    text = ("Option A keeps the current flight. " * 5
            + "Option B is cheaper per source 3, rows 5-7. The fare table in item t2 confirms it. "
            + "Therefore option B is clearly better. " * 5)
    it = HandoffItem(id="r1", text=text, layer="reasoning")
    cut = truncate_reasoning(it, cap=60, counter=COUNTER, known_ids=["t2", "r1"])
    assert cut.truncated and cut.tokens_out <= 60
    assert cut.text.startswith("Option A keeps the current flight.")
    assert cut.index_line is not None and cut.text.endswith(cut.index_line)
    assert "evidence: source 3, rows 5–7; item t2" in cut.index_line
    assert re.search(r"sentences \d+–12 of 12 omitted", cut.index_line)


def test_reasoning_without_citations_says_so() -> None:
    it = HandoffItem(id="r", text="I think so. " * 40, layer="reasoning")
    cut = truncate_reasoning(it, cap=40, counter=COUNTER)
    assert cut.index_line is not None and cut.index_line.endswith("evidence: none cited in the omitted part]")


def test_a_denied_value_supports_no_side_and_chinese_amounts_are_compared() -> None:
    items = (
        HandoffItem(id="m1", text="Refund for order #W1234567 is $1,200.", origin="agent:a"),
        HandoffItem(id="n1", text="Refund for order #W1234567 is not $1,200.", origin="agent:b"),
        HandoffItem(id="z1", text="订单#W1234567的退款金额为人民币450元。", origin="agent:zh"),
        HandoffItem(id="z2", text="订单#W7654321的退款金额为人民币5万元。", origin="agent:zh2"),
        HandoffItem(id="z3", text="Refund amount for order #W7654321: RMB 50,000.", origin="agent:c"),
    )
    conflicts = {c.entity: c for c in find_conflicts(items)}
    assert [(v.value, v.items) for v in conflicts["#W1234567"].values] == [("1200", ("m1",)), ("450", ("z1",))]
    assert "#W7654321" not in conflicts  # 人民币5万元 is RMB 50,000: no conflict (50,000 EUR would be one)


@pytest.mark.parametrize(("a", "b", "values"), [
    ("The budget is EUR 40,000.", "The budget is USD 40,000.", ["40000 EUR", "40000 USD"]),
    ("The budget is $40,000.", "The budget is €40,000.", ["40000 USD", "40000 EUR"]),
    ("Refund amount for order #W123: £50.", "Refund amount for order #W123: 50 EUR.", ["50 GBP", "50 EUR"]),
    ("The budget is EUR 40,000.", "The budget is 40,000 EUR.", None),
    ("The budget is EUR 40,000.", "The budget is €40,000.", None),
    ("The budget is 40,000 dollars.", "The budget is $40,000.", None),
    ("The budget is USD 40k.", "The budget is USD 40,000.", None),
    ("The budget is €2.5m.", "The budget is €2,500,000.", None),
    ("The budget is USD 40k.", "The budget is USD 45,000.", ["40000", "45000"]),
    ("The budget is EUR 40,000.", "The budget is 40,000.", None),
])
def test_amounts_are_compared_with_their_currency(a: str, b: str, values: list[str] | None) -> None:
    # QA: "budget EUR 40,000" and "budget USD 40,000" (and "$40,000" and "€40,000") were the same value, no
    # conflict; "USD 40k" was read as "USD 40" and conflicted with "USD 40,000"
    found = find_conflicts((HandoffItem(id="a", text=a, origin="tool:x"), HandoffItem(id="b", text=b, origin="tool:y")))
    assert [[v.value for v in c.values] for c in found] == ([values] if values else [])


def test_reasoning_index_merges_neighbouring_ranges_and_stays_small() -> None:
    text = " ".join(f"Step {k}: per source 2, rows {k}-{k + 1}, the refund is $45 (item calc)." for k in range(400))
    it = HandoffItem(id="d", layer="reasoning", text=text)
    cut = truncate_reasoning(it, cap=120, counter=COUNTER, known_ids=["calc", "d"])
    assert cut.truncated and COUNTER.count(cut.text) <= 120
    assert cut.index_line is not None and COUNTER.count(cut.index_line) <= 60
    assert "evidence: source 2, rows " in cut.index_line and "item calc" in cut.index_line
    assert cut.text.splitlines()[-1] == cut.index_line  # the index is whole, at the end
    many = " ".join(f"See source {k}, row {3 * k}." for k in range(300))
    cut = truncate_reasoning(HandoffItem(id="e", layer="reasoning", text="Start. " + many), cap=80, counter=COUNTER)
    assert COUNTER.count(cut.text) <= 80 and re.search(r"; \+\d+ more\]$", cut.index_line or "")


def test_prose_ids_from_anchors_named_no_and_a_fee_after_an_amount_is_its_own_value() -> None:
    import types

    from odcf.plan.model import Anchor

    plan = types.SimpleNamespace(protection=types.SimpleNamespace(anchors=(
        Anchor("claim_no", r"\bCLM-\d{6}\b"), Anchor("policy_nr", r"\bHP-\d{2}-\d{7}\b"))))
    items = (HandoffItem(id="a", text="Policy HP-24-0091733 deductible is $2,500.", origin="tool:policy"),
             HandoffItem(id="b", text="Policy HP-24-0091733 deductible is $1,000.", origin="agent:adjuster"))
    assert [(c.entity, [v.value for v in c.values]) for c in find_conflicts(items, plan=plan)] == [
        ("HP-24-0091733", ["2500", "1000"])]
    assert find_conflicts(items) == ()  # without the plan's anchor it is no identifier
    fee = (HandoffItem(id="a", text="Refund for order #W4817420 is $50 after the $5 restocking fee.", origin="x"),
           HandoffItem(id="b", text="Refund for order #W4817420 is $45.", origin="y"),
           HandoffItem(id="c", text="Order #W4817420: deposit of $500 and the fee $20.", origin="z"))
    assert sorted((c.attribute, tuple(v.value for v in c.values)) for c in find_conflicts(fee)) == [
        ("fee", ("5", "20")), ("refund amount", ("50", "45"))]  # $500 is the deposit, not a fee


def test_a_bare_number_keys_no_conflict_and_a_named_subject_is_an_attribute() -> None:
    import types

    from odcf.plan.model import Anchor

    for anchor in (Anchor("number", r"\b\d+(?:,\d{3})*\b"), Anchor("count_no", r"\b\d+(?:,\d{3})*\b")):
        plan = types.SimpleNamespace(protection=types.SimpleNamespace(anchors=(anchor,)))
        items = (HandoffItem(id="a", origin="agent:a", text="Lunches: 3 x 34 x €24 = €2,448; dinner 34 x €58 = €1,972."),
                 HandoffItem(id="b", origin="agent:b", text="Lunches: 3 x 36 x €24 = €2,592; dinner 36 x €58 = €2,088."),
                 HandoffItem(id="old", origin="agent:intake", text="Headcount is 34 people."),
                 HandoffItem(id="new", origin="user", text="Headcount is 36 people."))
        found = find_conflicts(items, plan=plan)
        # "3", "24", "58" are amounts and counts, not entities; the headcount is what differs
        assert [(c.entity, c.attribute, [v.value for v in c.values]) for c in found] == [
            ("", "headcount", ["34 people", "36 people"])], anchor.name
        assert found[0].render().startswith("- headcount: 34 people [item old (agent:intake)")
    # a subject stated by one item only, or a pronoun, is no conflict
    assert find_conflicts((HandoffItem(id="x", text="It is 3 days."), HandoffItem(id="y", text="It is 4 days."))) == ()


def _invoices(*pairs: tuple[str, str]) -> tuple[HandoffItem, ...]:
    return tuple(HandoffItem(id=f"i{k}", text=f"Invoice {ref} amount is {amount}.", origin=f"tool:erp{k}")
                 for k, (ref, amount) in enumerate(pairs))


@pytest.mark.parametrize("ontology", ["customer_service", "general"])
def test_a_bundled_id_anchor_takes_the_whole_id(ontology: str) -> None:
    # QA: the order_id anchor matched "PO-2024" of "PO-2024-17": two invoices conflicted
    from odcf.plan.compiler import compile_file

    plan = compile_file(ontology)
    assert find_conflicts(_invoices(("PO-2024-17", "$1,200"), ("PO-2024-18", "$1,500")), plan=plan) == ()
    same = find_conflicts(_invoices(("PO-2024-17", "$1,200"), ("PO-2024-17", "$1,500")), plan=plan)
    assert [(c.entity, [v.value for v in c.values]) for c in same] == [("PO-2024-17", ["1200", "1500"])]


def test_an_anchor_whose_matches_look_like_ids_keys_conflicts_and_a_code_does_not() -> None:
    # QA: an anchor named "inv" ('INV-\d{4}') was not an identifier: its name says no id/ref/...
    import types

    from odcf.plan.model import Anchor

    def plan(*anchors: Anchor) -> Any:
        return types.SimpleNamespace(protection=types.SimpleNamespace(anchors=anchors))

    inv = plan(Anchor("inv", r"INV-\d{4}"))
    found = find_conflicts(_invoices(("INV-2024", "$1,200"), ("INV-2024", "$1,500")), plan=inv)
    assert [(c.entity, [v.value for v in c.values]) for c in found] == [("INV-2024", ["1200", "1500"])]
    # a match that stops inside an id is taken whole: INV-2024-17 and INV-20241 are other invoices
    assert find_conflicts(_invoices(("INV-2024-17", "$1,200"), ("INV-2024-18", "$1,500")), plan=inv) == ()
    assert find_conflicts(_invoices(("INV-2024", "$1,200"), ("INV-20241", "$1,500")), plan=inv) == ()
    # an anchor named ...code names kinds (errors, airports), and a match without the shape is no id
    for other in (Anchor("error_code", r"ERR-\d{3}"), Anchor("amount_word", r"amount")):
        assert find_conflicts(_invoices(("ERR-500", "$1,200"), ("ERR-500", "$1,500")), plan=plan(other)) == ()


def _host_conflicts(a: str, b: str) -> list[tuple[str, str, list[str]]]:
    """The conflicts between a tool's item *a* and an agent's item *b* under a plan whose own anchors name hosts
    and IPv4 addresses: (entity, attribute, raw values) each."""
    import types

    from odcf.plan.model import Anchor

    plan = types.SimpleNamespace(protection=types.SimpleNamespace(anchors=(
        Anchor("host", r"\b(?:srv|wks|dc)-[a-z]{2,4}-\d{2,3}\b"), Anchor("ipv4", r"\b(?:\d{1,3}\.){3}\d{1,3}\b"))))
    items = (HandoffItem(id="a", text=a, origin="tool:x"), HandoffItem(id="b", text=b, origin="agent:y"))
    return [(c.entity, c.attribute, [v.raw for v in c.values]) for c in find_conflicts(items, plan=plan)]


def test_a_users_anchors_key_conflicts_on_hosts_and_addresses_and_different_events_do_not_conflict() -> None:
    # QA: hosts (srv-fin-02) and IPs of the user's own anchors were no entities: disagreeing items went unlisted
    assert _host_conflicts("Host srv-fin-02 was isolated on 2026-03-09.", "Host srv-fin-02 was isolated on 2026-03-10.") == [
        ("srv-fin-02", "isolated on", ["2026-03-09", "2026-03-10"])]
    assert _host_conflicts("Host srv-fin-02 downtime is 31 hours.", "Host srv-fin-02 downtime is 26 hours.") == [
        ("srv-fin-02", "downtime", ["31 hours", "26 hours"])]
    assert _host_conflicts("Firewall: 3.2 GB sent to 185.220.101.47 before the block.",
                 "Analyst note: 4.1 GB sent to 185.220.101.47 before the block.") == [
        ("185.220.101.47", "sent to", ["3.2 GB", "4.1 GB"])]
    # different facts about one id, and the same fact about two ids, are no conflict
    assert _host_conflicts("Host srv-fin-02 was isolated on 2026-03-09.", "Host srv-fin-02 was restored on 2026-03-12.") == []
    assert _host_conflicts("Host srv-fin-02 downtime is 31 hours.", "Host srv-fin-02 uptime is 26 hours.") == []
    assert _host_conflicts("3.2 GB sent to 185.220.101.47.", "0.4 GB received from 185.220.101.47.") == []
    assert _host_conflicts("Host srv-fin-02 was isolated on 2026-03-09.", "Host srv-fin-03 was isolated on 2026-03-10.") == []
    assert _host_conflicts("Host srv-fin-02 deposit is $500.", "Host srv-fin-02 deposit is $500.00.") == []


def test_two_occurrences_of_an_event_of_one_host_or_address_do_not_conflict() -> None:
    # QA: first/last seen, two dated transfers, two nightly backups and two patches were listed as conflicts
    # an order word stays in the event's name
    assert _host_conflicts("Host srv-fin-02 was first seen on 2026-03-01.", "Host srv-fin-02 was last seen on 2026-03-09.") == []
    assert _host_conflicts("Host srv-fin-02 was first seen on 2026-03-01.", "Host srv-fin-02 was first seen on 2026-03-02.") == [
        ("srv-fin-02", "first seen on", ["2026-03-01", "2026-03-02"])]
    # a date in a size's clause names which transfer it was; it is no fact of its own
    assert _host_conflicts("3.2 GB sent to 185.220.101.47 on 2026-03-08.", "1.1 GB sent to 185.220.101.47 on 2026-03-10.") == []
    assert _host_conflicts("3.2 GB sent to 185.220.101.47 on 2026-03-08.", "1.1 GB sent to 185.220.101.47 on 2026-03-08.") == [
        ("185.220.101.47 on 2026-03-08", "sent to", ["3.2 GB", "1.1 GB"])]
    # a recurring or repeated event has no single date or size
    assert _host_conflicts("Nightly backup of srv-fin-02 wrote 41 GB on 2026-03-07.",
                 "Nightly backup of srv-fin-02 wrote 43 GB on 2026-03-08.") == []
    assert _host_conflicts("Host srv-fin-02 was isolated on 2026-03-09.", "Host srv-fin-02 was isolated again on 2026-03-10.") == []
    # an identifier right after the date names what the event was of: two patches
    assert _host_conflicts("Host srv-fin-02 was patched on 2026-03-05 (KB5034441).",
                 "Host srv-fin-02 was patched on 2026-03-20 (KB5035845).") == []
    assert _host_conflicts("Host srv-fin-02 was patched on 2026-03-05 (KB5034441).",
                 "Host srv-fin-02 was patched on 2026-03-07 (KB5034441).") == [
        ("srv-fin-02 / KB5034441", "patched on", ["2026-03-05", "2026-03-07"])]
    # one event stated twice still conflicts
    assert _host_conflicts("Host srv-fin-02 was isolated on 2026-03-09.", "Host srv-fin-02 was isolated on 2026-03-10.") == [
        ("srv-fin-02", "isolated on", ["2026-03-09", "2026-03-10"])]


def test_amounts_with_the_iso_code_first_conflict_as_the_dollar_form_does() -> None:
    # QA U F4: "EUR 1,450" vs "EUR 1,950" from two tools was no conflict, "$1,450" vs "$1,950" was
    items = (
        HandoffItem(id="a", text="The quote for order #W4817420 is EUR 1,450.", origin="tool:quote_v1"),
        HandoffItem(id="b", text="The quote for order #W4817420 is EUR 1,950.", origin="tool:quote_v2"),
        HandoffItem(id="c", text="The quote for order #W5550001 is $1,450.", origin="tool:quote_v1"),
        HandoffItem(id="d", text="The quote for order #W5550001 is $1,950.", origin="tool:quote_v2"),
        HandoffItem(id="e", text="The quote for order #W6660001 is EUR 700.", origin="tool:quote_v1"),
        HandoffItem(id="f", text="The quote for order #W6660001 is 700 EUR.", origin="tool:quote_v2"),
    )
    found = {c.entity: [v.raw for v in c.values] for c in find_conflicts(items)}
    assert found == {"#W4817420": ["EUR 1,450", "EUR 1,950"], "#W5550001": ["$1,450", "$1,950"]}
