"""Drafts get the room the budget leaves, keep their constraints when cut, and the record says so.

The fixture is a recall notice handed to a writer (tests/handoff/data/recall_*): a researcher's
draft, a planner's eight steps (steps 7 and 8 are "Do not …"), a regulator page, and two chat turns.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from odcf.handoff.engine import handoff
from odcf.handoff.items import HandoffItem
from odcf.handoff.reasoning import constraint_strength, truncate_reasoning
from odcf.tokens import get_counter

DATA = Path(__file__).parent / "data"
COUNTER = get_counter("o200k_base")


@pytest.fixture(scope="module")
def recall() -> Any:
    from odcf.compressor import Compressor

    return Compressor.from_ontology(str(DATA / "recall_ont.yaml"))


def run(comp: Any, budget: int) -> Any:
    items = json.loads((DATA / "recall_items.json").read_text(encoding="utf-8"))
    return handoff(comp, role="writer", items=items, budget=budget)


def block(text: str, origin: str) -> str:
    start = text.index(f"] {origin} |")
    end = text.find("\n\n[source ", start)
    return text[start:end if end >= 0 else len(text)]


def test_drafts_get_the_room_left_not_only_their_25_percent(recall: Any) -> None:
    r = run(recall, 1300)
    assert r.tokens <= 1300 and r.tokens > 1000  # was 906: 400 tokens unused while the drafts were cut
    assert not any(c["truncated"] for c in r.record["handoff"]["reasoning"])
    assert "Step 7: Do not quote Dr. Halvorsen's" in r.text and "Step 8: Do not mention the Netherlands" in r.text
    assert "Note that batteries must not be posted" in r.text


def test_a_cut_draft_keeps_its_constraints_with_markers(recall: Any) -> None:
    r = run(recall, 700)
    assert r.tokens <= 700
    plan = block(r.text, "agent:planner")
    assert "Step 8: Do not mention the Netherlands or Ireland until confirmed." in plan
    assert "Step 4: Instructions: stop using and do not charge the battery" in plan
    assert plan.splitlines()[1].startswith("… ")                    # the cut before is marked
    assert re.search(r"\[reasoning truncated: sentences 1–3, 5–7 of 8 omitted", plan)
    research = block(r.text, "agent:researcher")
    assert "batteries must not be posted" in research


def test_the_record_says_a_draft_was_cut_in_every_section(recall: Any) -> None:
    for budget in (700, 900):
        r = run(recall, budget)
        cuts = {c["item"]: c for c in r.record["handoff"]["reasoning"]}
        sources = {s["id"]: s for s in r.record["sources"]}
        for sid, cut in cuts.items():
            src = sources[sid]
            assert src["tokens_in"] == cut["tokens_in"]                    # the draft as given, not the cut text
            if cut["truncated"]:
                assert src["status"] in ("compressed", "dropped"), (budget, sid, src["status"])
                assert "sentences kept" in src["handoff_cut"]
            else:
                assert "handoff_cut" not in src


def test_history_section_agrees_with_the_sources(recall: Any) -> None:
    for budget in (600, 700, 1300):
        r = run(recall, budget)
        sources = {s["id"]: s for s in r.record["sources"]}
        for turn in r.record["handoff"]["history"]:
            src = sources[turn["item"]]
            assert (turn["mode"] == "dropped") == (src["status"] == "dropped"), (budget, turn, src["status"])
            assert turn["tokens_out"] == src["tokens_out"], (budget, turn)
            assert turn["layered_as"] == "verbatim"


def test_a_user_constraint_outlasts_the_acknowledgement_after_it(recall: Any) -> None:
    r = run(recall, 700)
    status = {s["id"]: s["status"] for s in r.record["sources"]}
    assert status["m7"] == "dropped" and status["m6"] != "dropped"
    assert "make sure owners of unaffected bikes are not alarmed." in r.text


def test_truncation_prefers_constraints_in_source_order() -> None:
    text = ("Intro one is neutral and long enough to matter here. Intro two is neutral too. "
            "You may refund only if the item is unopened. Chatty filler sentence number four. "
            "Do not promise a date. Never post the battery.")
    cut = truncate_reasoning(HandoffItem(id="d", layer="reasoning", text=text), cap=40, counter=COUNTER)
    assert cut.truncated and cut.tokens_out <= 40
    body = cut.text.splitlines()[0]
    assert body == "… Do not promise a date. Never post the battery."   # the prohibitions, the cut marked
    assert [constraint_strength(s) for s in ("Do not post.", "Only if asked.", "Not affected.", "Hi.")] == [3, 2, 1, 0]
    # a draft without constraints is still cut from its opening, as before
    plain = truncate_reasoning(HandoffItem(id="p", layer="reasoning", text="A fact. " * 40), cap=30, counter=COUNTER)
    assert plain.text.startswith("A fact.") and re.search(r"sentences \d+–40 of 40 omitted", plain.text)


def test_a_constraint_sentence_a_draft_cut_left_out_is_named_in_its_index() -> None:
    """QA B M6: cut to its room, a draft kept its opening sentences and the index did not say that the
    omitted part held "The refund must go to … gift_card_3491931, never to a new card."."""
    from odcf.handoff.items import HandoffItem
    from odcf.handoff.reasoning import truncate_reasoning
    from odcf.tokens import get_counter

    draft = ("We compared both options against the policy. Step 1: re-read the order. Step 2: check the payment "
             "history (source 2). Step 3: check the user's wishes. The refund must go to the original payment "
             "method gift_card_3491931, never to a new card. Step 4: the amount is $1,122.22 per item calc. "
             "Step 5: tell the user. Option B is clearly better. Step 6: close the ticket.")
    item = HandoffItem(id="draft", layer="reasoning", text=draft)
    counter = get_counter("o200k_base")
    for cap in range(30, 90, 4):
        cut = truncate_reasoning(item, cap=cap, counter=counter, known_ids=["calc"])
        assert cut.tokens_out <= cap
        kept = "never to a new card." in cut.text
        assert not kept or "states a constraint" not in cut.text
        if cap >= 36:
            assert kept != ("sentence 5 states a constraint" in cut.text), cut.text
    assert "sentence 5 states a constraint" in truncate_reasoning(item, cap=44, counter=counter).text
