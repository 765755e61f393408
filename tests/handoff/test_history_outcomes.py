"""A user's request goes with what came of it, and a tool's value with the later tool result that replaces it.

QA B H4: tau-bench #26 handed over at 400 and 800 tokens kept turn 3, "I want to cancel the reservations with IDs
IFOYYZ and NQNU5R", as a constraint bullet while dropping the turns that tell that NQNU5R was canceled and that
IFOYYZ cannot be canceled for a refund, so an executor read an open request to cancel both; at 400 it also
delivered turn 19's prices 136 and 109 without turn 29's update to 430 and 412. The dialogue here is written in
the same shape.
"""
from __future__ import annotations

import json
from typing import Any

import pytest

from odcf.handoff.history import request_outcomes, tool_supersessions
from odcf.handoff.items import HandoffItem

REQUEST = "I want to cancel the reservations QXKTRA and PLM4NB."
REFUSED = "Unfortunately, it cannot be canceled for a refund due to the airline's policy."
DONE = "The reservation PLM4NB has been successfully canceled."


def _reservation(rid: str, price: int, **extra: Any) -> str:
    return json.dumps({"reservation_id": rid, "user_id": "mia_li_3668", "cabin": "economy",
                       "flights": [{"flight_number": "HAT268", "date": "2024-05-22", "price": price,
                                    "origin": "JFK", "destination": "ATL"}],
                       "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-01-02"}],
                       "payment_history": [{"payment_id": "credit_card_4421486", "amount": price}], **extra})


def dialogue() -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "Hi! I need help with my reservations."},
        {"role": "assistant", "content": "Sure. What is your user id and which reservations are they?"},
        {"role": "user", "content": "My user id is mia_li_3668. " + REQUEST + " I won't be needing those flights."},
        {"role": "assistant", "content": "[tool call] get_reservation_details {\"reservation_id\": \"QXKTRA\"}"},
        {"role": "tool", "name": "get_reservation_details", "content": _reservation("QXKTRA", 51)},
        {"role": "assistant", "content": "Here's the situation:\n\n1. **Reservation QXKTRA**: This is a basic economy "
                                         "ticket booked more than 24 hours ago without insurance. " + REFUSED
                                         + "\n\n2. **Reservation PLM4NB**: This is a business ticket, which can be "
                                         "canceled. Shall I go ahead with PLM4NB?"},
        {"role": "user", "content": "Yes, please go ahead with PLM4NB. I understand about QXKTRA."},
        {"role": "assistant", "content": "[tool call] cancel_reservation {\"reservation_id\": \"PLM4NB\"}"},
        {"role": "tool", "name": "cancel_reservation", "content": _reservation("PLM4NB", 1377, status="cancelled")},
        {"role": "assistant", "content": DONE + " The refund goes to your original payment method in 5 to 7 days."},
        {"role": "user", "content": "Thanks. I also want to upgrade M20IZO to business class."},
        {"role": "assistant", "content": "[tool call] get_reservation_details {\"reservation_id\": \"M20IZO\"}"},
        {"role": "tool", "name": "get_reservation_details", "content": _reservation("M20IZO", 136)},
        {"role": "assistant", "content": "The upgrade of M20IZO to business costs extra. Shall I proceed?"},
        {"role": "user", "content": "Yes, please proceed with the upgrade."},
        {"role": "assistant", "content": "[tool call] update_reservation_flights {\"payment_id\": \"credit_card_7334\"}"},
        {"role": "tool", "name": "update_reservation_flights", "content": "Error: payment method not found"},
        {"role": "assistant", "content": "[tool call] get_user_details {\"user_id\": \"mia_li_3668\"}"},
        {"role": "tool", "name": "get_user_details",
         "content": json.dumps({"user_id": "mia_li_3668", "payment_methods": {"credit_card_4421486": {"last4": "7334"}}})},
        {"role": "assistant", "content": "I found your card ending in 7334 as credit_card_4421486. Shall I use it?"},
        {"role": "user", "content": "Yes, use that card."},
        {"role": "assistant", "content": "[tool call] update_reservation_flights {\"reservation_id\": \"M20IZO\"}"},
        {"role": "tool", "name": "update_reservation_flights",
         "content": _reservation("M20IZO", 430, cabin_after="business")},
        {"role": "assistant", "content": "Your reservation M20IZO has been upgraded to business class."},
        {"role": "user", "content": "Thank you, that's all."},
    ]
    return {"instruction": "Continue serving this airline customer under the airline policy.", "messages": msgs}


def _items() -> list[HandoffItem]:
    from odcf.handoff.items import parse_items

    return [it for it in parse_items(dialogue()).items if it.layer == "history"]


def test_the_outcome_turns_of_a_request_are_found() -> None:
    items = _items()
    resolved, told = request_outcomes(items, {2})
    assert resolved == {2: [5, 9]}  # the refusal for QXKTRA, the cancellation of PLM4NB
    assert REFUSED in told[5] and any("**Reservation QXKTRA**" in s for s in told[5])
    assert told[9] == [DONE]
    # counter-examples: a turn that asks, or that says what can be done, tells no outcome
    plain = [HandoffItem(id="u", layer="history", speaker="user", text="Please don't cancel QXKTRA yet."),
             HandoffItem(id="a", layer="history", speaker="assistant",
                         text="QXKTRA can be canceled at any time. Would you like me to cancel QXKTRA?")]
    assert request_outcomes(plain, {0}) == ({}, {})


@pytest.fixture(scope="module")
def agent_ops() -> Any:
    from odcf.compressor import Compressor

    return Compressor.from_ontology("agent_ops")


def test_a_request_is_never_handed_over_without_what_came_of_it(agent_ops: Any) -> None:
    delivered = 0
    for budget in range(300, 1300, 50):
        r = agent_ops.handoff(role="executor", items=dialogue(), budget=budget, timings=False)
        assert r.tokens <= budget
        turn = next(h for h in r.record["handoff"]["history"] if h["turn"] == 3)
        assert turn["resolved_by_turns"] == [6, 10]
        if REQUEST in r.text:
            delivered += 1
            assert REFUSED in r.text and DONE in r.text, (budget, r.text)
        else:  # left out, the budget saying why
            assert turn["mode"] == "dropped"
    assert delivered >= 5


def test_a_tool_value_goes_only_with_the_later_tool_result_that_replaces_it(agent_ops: Any) -> None:
    items = _items()
    from odcf.handoff.conflicts import find_conflicts

    assert tool_supersessions(items, find_conflicts(items, plan=agent_ops.plan)) == {12: [22]}
    stale_shown = 0
    for budget in range(300, 1600, 50):
        r = agent_ops.handoff(role="executor", items=dialogue(), budget=budget, timings=False)
        turn = next(h for h in r.record["handoff"]["history"] if h["turn"] == 13)
        assert turn["corrected_by_turns"] == [23]
        if turn["mode"] != "dropped":
            stale_shown += 1
            assert '"price": 430' in r.text, (budget, r.text)
    assert stale_shown
