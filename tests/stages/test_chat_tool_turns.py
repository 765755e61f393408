"""A plain-text agent transcript with ``user:`` / ``assistant:`` lines, ``assistant [tool call] NAME {…}``
lines and ``tool:NAME: …`` results (tau-bench as a transcript; odcf's handoff writes a tool's turn as
``tool:NAME: …`` too): each line is its own speaker's turn, never delivered after another speaker's label
(QA s34 H1: "user: tool:update_reservation_flights: Error: payment method not found", recorded verbatim),
and a tool's JSON after its label is cut into whole members as a JSON source is, valid JSON after the label
(QA s34 M1: a 286-token result holding the "$1194" charge was dropped whole at half the input; H3: a handoff
delivered a tail of a tool's JSON, prices without their flight)."""
from __future__ import annotations

import json
import re

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.render import join_segments
from odcf.stages.segment import Segmenter
from odcf.tokens import get_counter
from tests.stages.test_fenced_json import _part_of


def _reservation(rid: str, payments: list[tuple[str, int]]) -> str:
    return json.dumps({
        "reservation_id": rid, "user_id": "mia_khan_4411", "origin": "JFK", "destination": "MCO",
        "flight_type": "one_way", "cabin": "business",
        "flights": [{"origin": "JFK", "destination": "ATL", "flight_number": "HAT268", "date": "2024-05-22",
                     "price": 1194},
                    {"origin": "ATL", "destination": "MCO", "flight_number": "HAT010", "date": "2024-05-22",
                     "price": 310}],
        "passengers": [{"first_name": "Mia", "last_name": "Khan", "dob": "1987-03-09"},
                       {"first_name": "Omar", "last_name": "Khan", "dob": "1985-11-30"}],
        "payment_history": [{"payment_id": p, "amount": a} for p, a in payments],
        "created_at": "2024-05-10T08:12:44", "total_baggages": 1, "nonfree_baggages": 0, "insurance": "no"})


CHAT = (
    "user: Hi, I want to upgrade reservation Q7RX2P to business class.\n\n"
    "assistant: Sure. Which payment method would you like to use for the fare difference?\n\n"
    "user: Please use my credit card ending in 7334 for any additional charges.\n\n"
    'assistant [tool call] update_reservation_flights {"reservation_id":"Q7RX2P","cabin":"business",'
    '"payment_id":"credit_card_7334"}\n\n'
    "tool:update_reservation_flights: Error: payment method not found\n\n"
    "assistant: I found the correct payment method in your profile. Please confirm that I may use it.\n\n"
    "user: Yes, please go ahead with that card.\n\n"
    'assistant [tool call] update_reservation_flights {"reservation_id":"Q7RX2P","cabin":"business",'
    '"payment_id":"credit_card_9074831"}\n\n'
    "tool:update_reservation_flights: "
    + _reservation("Q7RX2P", [("credit_card_4959530", 490), ("credit_card_9074831", 1194)]) + "\n\n"
    "assistant: Your reservation Q7RX2P has been upgraded to business class. The additional charge was "
    "applied to your card ending in 7334.\n")

RESULT = json.loads(CHAT.split("tool:update_reservation_flights: ")[2].split("\n")[0])


def _segments(text: str, kind: str = "text") -> tuple:
    doc = Document.from_sources([Source(id="a", text=text, kind=kind)])
    return Segmenter()(doc, Plan(domain="t")).segments


def test_a_tool_call_line_and_a_tool_result_line_are_turns_of_their_own():
    segs = _segments(CHAT)
    said = {s.text.split(" {")[0].split(":")[0]: s.meta.get("speaker") for s in segs if s.meta.get("opens_line")}
    assert said["assistant [tool call] update_reservation_flights"] == "assistant [tool call]"
    assert said["tool"] == "tool:update_reservation_flights:"
    error = next(s for s in segs if "payment method not found" in s.text)
    assert error.meta["speaker"] == "tool:update_reservation_flights:"
    # the tool's JSON: members after the label, each of the tool's turn, none of the user's
    members = [s for s in segs if "json_label" in s.meta]
    assert len(members) > 3
    assert {s.meta["speaker"] for s in members} == {"tool:update_reservation_flights:"}
    assert {s.meta["json_label"] for s in members} == {"tool:update_reservation_flights: "}
    # delivered all together, they are the source's line
    line = next(ln for ln in CHAT.split("\n") if ln.startswith("tool:update_reservation_flights: {"))
    assert json.loads(join_segments(members)[len("tool:update_reservation_flights: "):]) == RESULT
    assert join_segments(members).startswith("tool:update_reservation_flights: {")
    assert line.startswith(join_segments(members)[:40])


def test_no_line_is_delivered_after_another_speakers_label_and_a_tool_result_is_whole_members():
    c = Compressor.from_ontology("agent_ops")
    counter = get_counter("o200k_base")
    seen_charge = False
    for query in (None, "which payment method was charged and how much"):
        for budget in (60, 90, 120, 160, 220, 300):
            r = c.compress([Source(id="chat.txt", text=CHAT)], query=query, role="executor", budget=budget,
                           timings=False)
            assert counter.count(r.text) <= budget, (budget, r.text)
            body = r.text.split("\n", 1)[1] if r.text.startswith("[source ") else r.text
            for line in body.split("\n"):
                # never "user: tool:…" nor "user: assistant [tool call] …"
                assert not re.match(r"(?:user|assistant):\s+(?:tool:|assistant\b)", line), (budget, r.text)
                if line.startswith("tool:update_reservation_flights: {"):
                    value = json.loads(line[len("tool:update_reservation_flights: "):])  # valid JSON
                    assert value["reservation_id"] == "Q7RX2P"  # the members go with the object's id
                    assert _part_of(value, RESULT), (budget, r.text)  # whole members, what is left out counted
                    if any(p.get("amount") == 1194 for p in value.get("payment_history", ())):
                        seen_charge = True
                elif "reservation_id" in line or '"amount"' in line:
                    assert line.startswith("assistant [tool call] "), (budget, r.text)
    assert seen_charge  # the decisive member goes out without the whole result


def test_a_handoff_tool_turn_is_cut_into_whole_items_never_a_tail():
    flights = [{"flight_number": f"HAT{n:03d}", "origin": "JFK", "destination": "ATL",
                "scheduled_departure_time_est": f"{7 + k * 3:02d}:00:00", "status": "available",
                "available_seats": {"basic_economy": 10 - k, "economy": 20 - k, "business": 19 - 4 * k},
                "prices": {"basic_economy": 62 + k, "economy": 109 + 20 * k, "business": 480 - 90 * k}}
               for k, n in enumerate((57, 136, 218, 268))]
    text = "tool:search_direct_flight: " + json.dumps(flights)
    c = Compressor.from_ontology("agent_ops")
    delivered = 0
    for budget in (60, 100, 150, 200, 300):
        r = c.compress([Source(id="m4", text=text, kind="chat")], query="business price of HAT268",
                       role="executor", budget=budget, timings=False)
        body = r.text.split("\n", 1)[1] if r.text.startswith("[source ") else r.text  # no header at 60
        if not body.strip():
            continue
        delivered += 1
        assert body.startswith("tool:search_direct_flight: ["), (budget, r.text)  # the speaker, then JSON
        value = json.loads(body[len("tool:search_direct_flight: "):])
        assert _part_of(value, flights), (budget, r.text)
        items = [v for v in value if isinstance(v, dict)]
        assert items and all("flight_number" in v for v in items), (budget, r.text)  # each with its number
    assert delivered


def test_a_small_tool_result_is_one_piece_with_its_label_never_cut_at_its_commas():
    value = json.dumps({"flight_number": "HAT268", "origin": "JFK", "destination": "ATL", "status": "available",
                        "available_seats": {"basic_economy": 2, "economy": 9, "business": 20},
                        "prices": {"basic_economy": 73, "economy": 132, "business": 237}})
    text = "tool:search_direct_flight: " + value
    segs = _segments(text, kind="chat")
    assert [s.text for s in segs] == [text]
    doc = Document.from_sources([Source(id="a", text=text, kind="chat")])
    cut = Segmenter(max_sentence_chars=100, clause_cut_chars=60)(doc, Plan(domain="t")).segments
    assert [s.text for s in cut] == [text]


def test_labels_that_are_no_tool_turn_are_read_as_before():
    # a meeting's line with JSON in a sentence, code with type annotations, a log with tool names,
    # "assistant [tool call]" inside a sentence: no JSON cut, no new speaker
    meeting = _segments('Alice: We ship Friday.\nBob: {"a": 1} is the config.\nAlice: OK.')
    assert [s.text for s in meeting][1] == 'Bob: {"a": 1} is the config.'
    assert not any("json_label" in s.meta for s in meeting)
    code = _segments("def login(user: User, tool: str) -> bool:\n    user: User = get_user()\n    return check(user)\n")
    assert not any(s.meta.get("speaker") for s in code)
    log = _segments("2024-05-15 10:02:11 INFO tool:fetch: started\n2024-05-15 10:02:12 ERROR tool:fetch: timeout\n")
    assert not any(s.meta.get("speaker") for s in log)
    prose = _segments("assistant [tool call] is how the benchmark writes a call. It holds the call's JSON.")
    assert not any(s.meta.get("speaker") for s in prose)
