"""A user's constraint survives however old its turn is; bullets keep their speaker, list values
(not JSON key names), and a correction's bullet does not present the replaced value as the value.

The conversation is an offsite plan written here: the user states a prohibition in turn 3, a
requirement in turn 5, a limit ("max €160") in turn 14 and an allergy in turn 21; the turns
between are tool calls, tool results and the assistant's acknowledgements.
"""
from __future__ import annotations

import json
from typing import Any

import pytest

from odcf.handoff.engine import handoff
from odcf.handoff.history import gist, key_values, layer_history, user_constraint
from odcf.handoff.items import HandoffItem
from odcf.handoff.reasoning import constraint_strength
from odcf.tokens import get_counter

COUNTER = get_counter("o200k_base")
VENDOR = "Please don't contact the vendor Eventos Tejo directly"
ACCESS = "every venue and hotel must be fully accessible"
ALLERGY = ("one has a severe peanut allergy (anaphylaxis) — the caterer must confirm in writing that there are "
           "no peanuts anywhere in the kitchen, not just in the dish.")


def _tool(name: str, data: Any) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": f"[tool call] {name} {{\"city\": \"Lisbon\"}}"},
            {"role": "tool", "name": name, "content": json.dumps(data)}]


def offsite() -> dict[str, Any]:
    results = [{"venue_id": f"LIS-V-0{k}12", "capacity": 40 + k, "day_rate_eur": 3000 + 100 * k, "metro_minutes": 10 + k}
               for k in range(4)]
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "Hi, I need help planning the Q3 offsite in Lisbon for 34 people."},
        {"role": "assistant", "content": "Great, I can help with that. What dates are you considering?"},
        {"role": "user", "content": "Dates are 16-19 September 2025. " + VENDOR + ", we had a dispute with them "
                                    "in 2023 and legal says all communication must go through procurement."},
        {"role": "assistant", "content": "Understood. I will keep Eventos Tejo out of it."},
        {"role": "user", "content": "Also, three attendees use wheelchairs, so " + ACCESS + "."},
        {"role": "assistant", "content": "Noted. Let me search."},
        *_tool("search_venues", {"results": results}),
        {"role": "assistant", "content": "I found four venues; Armazém 16 (LIS-V-0012) costs €3,000 a day."},
        {"role": "user", "content": "Let's go with Armazém 16 then. Can you estimate flights for everyone?"},
        *_tool("estimate_flights", {"quote_id": "FLQ-2025-07-3391", "grand_total": 9557.70}),
        {"role": "assistant", "content": "The flight estimate (quote FLQ-2025-07-3391) is €9,557.70 in total."},
        {"role": "user", "content": "OK. Hotels: we want single rooms for everyone, max €160 per night per room, 3 nights."},
        {"role": "assistant", "content": "Single rooms for 34 people, 3 nights, so at most €16,320 in all."},
        *_tool("search_hotels", {"results": [{"hotel_id": "H-LIS-2201", "rate_eur": 148}]}),
        {"role": "assistant", "content": "Hotel Ribeira Sul (H-LIS-2201) fits at €148 per night."},
        {"role": "user", "content": "Fine, thanks. That sounds good to me."},
        {"role": "assistant", "content": "Understood, the total budget is now €40,000 (down from €50,000). "
                                         "Flights and hotel come to €24,653.70 so far."},
        {"role": "user", "content": "Food: we need catering for lunches on 3 days, and one team dinner. "
                                    "Two people are vegan, " + ALLERGY},
        {"role": "assistant", "content": "Noted: 3 lunches and 1 team dinner, 2 vegan, a peanut-free kitchen."},
    ]
    for k in range(6):  # recent chit-chat that the layers keep verbatim or condensed
        msgs.append({"role": "assistant", "content": f"Update {k}: I am still comparing the caterers' menus and "
                                                     "delivery windows for the three lunch days in detail."})
        msgs.append({"role": "user", "content": f"Thanks, update {k} noted."})
    msgs.append({"role": "user", "content": "Please write the final summary now."})
    return {"instruction": "Prepare the final Lisbon offsite cost summary.", "messages": msgs}


@pytest.fixture(scope="module")
def general() -> Any:
    from odcf.compressor import Compressor

    return Compressor.from_ontology("general")


def bullets_block(text: str) -> str:
    start = text.index("as bullets |")
    end = text.find("\n\n[source ", start)
    return text[text.index("\n", start) + 1:end if end >= 0 else len(text)]


@pytest.mark.parametrize("budget", [700, 900])
def test_an_early_user_constraint_outlasts_plain_older_turns(general: Any, budget: int) -> None:
    r = handoff(general, role="writer", items=offsite(), budget=budget)
    assert r.tokens <= budget
    for words in (VENDOR, ACCESS, "max €160 per night per room", "severe peanut allergy (anaphylaxis)"):
        assert words in r.text, (budget, words)
    turns = {t["turn"]: t for t in r.record["handoff"]["history"]}
    assert all(turns[k]["constraint"] and turns[k]["mode"] == "bullet" for k in (3, 5, 14, 21)), budget
    # plain older turns went first: some bullet of the assistant or a tool was left out
    assert any(t["mode"] == "dropped" and t["speaker"] != "user" for t in turns.values())
    # the record agrees with the text: a dropped turn's words are not there
    assert turns[2]["mode"] == "dropped" and "What dates are you considering" not in r.text


def test_a_bullet_is_never_delivered_without_its_speaker(general: Any) -> None:
    for budget in range(500, 1000, 50):
        r = handoff(general, role="writer", items=offsite(), budget=budget)
        if "as bullets |" not in r.text:
            continue
        for para in bullets_block(r.text).split("\n\n"):
            assert para.startswith("- turn "), (budget, para)


def test_a_cut_constraint_turn_keeps_its_constraint_clauses(general: Any) -> None:
    food = HandoffItem(id="food", layer="history", speaker="user",
                       text="Food: we need catering for lunches on 3 days, and one team dinner. Two people are vegan, "
                            + ALLERGY)
    filler = [HandoffItem(id=f"f{k}", layer="history", speaker="assistant", text=f"Reply {k}.") for k in range(11)]
    layered = layer_history([food, *filler], general.plan, COUNTER, turn_cap=40)
    bullet = layered.bullets[0]
    assert bullet.constraint and bullet.tokens_out <= 40 + 8     # the cap holds the body, not "- turn 1 user: "
    assert "severe peanut allergy (anaphylaxis) — the caterer must confirm in writing" in bullet.text
    assert "… " in bullet.text                                    # the cut is marked, as in a draft
    assert bullet.to_dict()["clauses_kept"].endswith("(constraints first)")
    # the same cut as the drafts', by clause: a limit counts, a plain clause does not
    from odcf.handoff.reasoning import cut_keeping_constraints

    cut = cut_keeping_constraints("We want single rooms for everyone, max €160 per night, 3 nights in all.",
                                  cap=9, counter=COUNTER)
    assert cut.text == "… max €160 per night, …" and cut.cut
    assert constraint_strength("max €160 per night") == 2 and constraint_strength("a severe peanut allergy") == 3


def test_bullet_values_are_values_and_a_correction_keeps_the_new_value(general: Any) -> None:
    tool = HandoffItem(id="t", layer="history", kind="json", speaker="tool:search_caterers", text=json.dumps(
        {"results": [{"caterer_id": "CAT-117", "name": "Sabores do Rio", "lunch_pp_eur": 24, "dinner_pp_eur": 58},
                     {"caterer_id": "CAT-204", "name": "Mesa Tejo", "lunch_pp_eur": 19, "dinner_pp_eur": 49}]}))
    out = gist(tool, general.plan, COUNTER, cap=48)
    assert "CAT-117" in out and "24" in out
    assert not any(key in out for key in ("caterer_id", "lunch_pp_eur", "dinner_pp_eur"))
    fix = HandoffItem(id="c", layer="history", speaker="assistant",
                      text="Actually, the budget is €40,000 not €50,000 — finance cut it this morning. Everything else stays.")
    out = gist(fix, general.plan, COUNTER, cap=24)
    assert "€40,000" in out and "(values: €50,000" not in out
    assert out.index("€40,000") < out.find("€50,000") or "€50,000" not in out
    down = HandoffItem(id="d", layer="history", speaker="assistant",
                       text="Understood, the total budget is now €40,000 (down from €50,000). Running total so far: "
                            "flights €9,557.70 + hotel €15,096, which is €24,653.70.")
    out = gist(down, general.plan, COUNTER, cap=24)
    assert "(values: €50,000" not in out and "€40,000" in out


def budget_change(cur: str) -> dict[str, Any]:
    """A chat whose user states a budget early and changes it eight turns before the end, the turns around it the
    assistant's options."""
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "Hi, an offsite in Lisbon for 6 people, 14 to 17 October."},
        {"role": "assistant", "content": "Happy to help. What are the ground rules?"},
        {"role": "user", "content": f"Never book anything before 9 am. The total budget is under {cur}4,500 for "
                                    "flights and hotel together. Do not contact the supplier directly."},
        {"role": "assistant", "content": f"Understood: nothing before 9 am and a total under {cur}4,500."}]
    for k in range(12):
        msgs.append({"role": "assistant", "content": f"Option {k + 1}: hotel number {k + 1} in Baixa at {cur}{150 + 5 * k} "
                                                     "per night, breakfast included, ten minutes from the venue."})
        msgs.append({"role": "user", "content": f"Noted, option {k + 1}."})
        if k == 8:
            msgs.append({"role": "user", "content": f"Actually, budget is now {cur}5,200 - finance approved the extra."})
    msgs.append({"role": "user", "content": "Which option should we take?"})
    return {"instruction": "Recommend which hotel option to book.", "messages": msgs}


@pytest.mark.parametrize("cur", ["€", "EUR "])
def test_a_users_change_of_an_earlier_constraint_is_delivered_with_it(general: Any, cur: str) -> None:
    # QA2 finding 1: the user's early "under EUR 4,500" went out as a constraint bullet while their later
    # "Actually, budget is now EUR 5,200" was dropped as a plain recent turn: the planner saw only the stale budget
    for budget in (200, 300):
        r = handoff(general, role="writer", items=budget_change(cur), budget=budget)
        assert r.tokens <= budget
        assert f"budget is now {cur}5,200" in r.text, (budget, r.text)
        turns = {t["turn"]: t for t in r.record["handoff"]["history"]}
        change = next(t for t in turns.values() if t.get("corrects_turns"))
        assert change["constraint"] and change["corrects_turns"] == [3] and change["mode"] != "dropped", change
        assert turns[3]["corrected_by_turns"] == [change["turn"]], turns[3]


@pytest.mark.parametrize("cur", ["€", "EUR "])
def test_a_users_plain_limit_is_a_constraint_turn(general: Any, cur: str) -> None:
    # QA s29/qa4 #7: "The total budget is under EUR 4,500 …" (no must, no never) was no constraint in handoff,
    # though compress's chat rules count "under €2,000 total" as one: it was dropped while "Noted, option 7."
    # went out as a bullet
    msgs = [{"role": "user", "content": "A team offsite in Lisbon for 6 people, 14 to 17 October."},
            {"role": "assistant", "content": "Happy to help."},
            {"role": "user", "content": f"The total budget is under {cur}4,500 for flights and hotel together."},
            {"role": "assistant", "content": "Understood."}]
    for k in range(12):
        msgs.append({"role": "assistant", "content": f"Option {k + 1}: hotel number {k + 1} in Baixa at {cur}{150 + 5 * k} "
                                                     "per night, breakfast included, ten minutes from the venue."})
        msgs.append({"role": "user", "content": f"Noted, option {k + 1}."})
    msgs.append({"role": "user", "content": "Which option should we take?"})
    items = {"instruction": "Recommend which hotel option to book.", "messages": msgs}
    for budget in (300, 400):
        r = handoff(general, role="writer", items=items, budget=budget)
        assert r.tokens <= budget
        assert f"under {cur}4,500" in r.text, (budget, r.text)
        turn = r.record["handoff"]["history"][2]
        assert turn["constraint"] and turn["mode"] != "dropped", turn


def relocation() -> dict[str, Any]:
    """A 60-turn chat: the user's budget "under EUR 40,000" in turn 3, "Never email the client" in turn 5, weekend
    only in turn 7, and in turn 45 the change "Actually, the budget is now EUR 43,500"; the rest questions and the
    assistant's answers (QA U's chat60)."""
    msgs: list[dict[str, Any]] = []
    for role, text in (
            ("user", "Hi, I need help planning the office relocation from Rotterdam to Utrecht."),
            ("assistant", "Happy to help. What are the key constraints for the move?"),
            ("user", "The total budget is under EUR 40,000, including movers, IT and furniture."),
            ("assistant", "Noted, budget under EUR 40,000."),
            ("user", "Never email the client directly; all client communication goes through Marit de Boer."),
            ("assistant", "Understood. I will route every client message through Marit de Boer."),
            ("user", "The move must happen on a weekend; the office cannot close on a weekday."),
            ("assistant", "Got it, weekend only.")):
        msgs.append({"role": role, "content": text})
    fillers = [("How long would the IT cutover take?", "About 14 hours for 38 workstations, per estimate IT-77."),
               ("Which weekends in March are free?", "March 8-9, March 15-16 and March 22-23 are free."),
               ("How many boxes?", "Roughly 420 boxes, at EUR 2.10 each: EUR 882."),
               ("Cleaning?", "End-of-lease cleaning by SchoonNL costs EUR 1,450.")]
    k = 0
    while len(msgs) < 60:
        if len(msgs) == 44:
            msgs += [{"role": "user", "content": "Actually, the budget is now EUR 43,500 because the partners approved extra."},
                     {"role": "assistant", "content": "Updated: budget under EUR 43,500."}]
            continue
        q, a = fillers[k % len(fillers)]
        msgs += [{"role": "user", "content": q + (f" (follow-up {k})" if k >= len(fillers) else "")},
                 {"role": "assistant", "content": a}]
        k += 1
    return {"instruction": "Continue assisting the user with the relocation plan.", "messages": msgs}


@pytest.mark.parametrize("budget", [132, 150])
def test_a_stale_value_is_never_handed_over_without_the_users_change(budget: int) -> None:
    # QA U F1: at 150 tokens turn 3's "under EUR 40,000" went out as a bullet, turn 45's "Actually, the budget is
    # now EUR 43,500" (the same score, 24 tokens) did not fit after it and was dropped, and a plain "Cleaning?" took
    # the room: the next agent read the stale budget as the current one
    from odcf.compressor import Compressor

    r = handoff(Compressor.from_ontology("agent_ops"), role="executor", items=relocation(), budget=budget)
    assert r.tokens <= budget
    turns = {t["turn"]: t for t in r.record["handoff"]["history"]}
    assert turns[45]["corrects_turns"] == [3] and turns[3]["corrected_by_turns"] == [45]
    assert ("under EUR 40,000" in r.text) <= ("EUR 43,500" in r.text), (budget, r.text)
    assert (turns[3]["mode"] != "dropped") <= (turns[45]["mode"] != "dropped"), (turns[3], turns[45])
    if turns[3]["mode"] == "dropped":  # then the record says why, not silently: for want of its change when that
        # went too (it ranks below the current constraints, so it may also go for room beside its change)
        earlier = next(s for s in r.record["sources"] if s["id"] == "history-earlier")["segments"]
        assert turns[3]["reason"].startswith("budget: "), turns[3]
        if turns[45]["mode"] == "dropped":
            assert "is corrected by" in turns[3]["reason"], turns[3]
            assert any("is corrected by" in (seg.get("reason") or "") for seg in earlier), earlier


def test_a_bullet_keeps_an_amount_written_with_its_iso_code_first() -> None:
    # QA U F4: "costs EUR 1,450." was no value (agent_ops's airport_code anchor protects "EUR" alone), so the bullet
    # read "… costs EUR …" with the amount gone
    from odcf.compressor import Compressor

    plan = Compressor.from_ontology("agent_ops").plan
    turn = HandoffItem(id="m51", layer="history", speaker="assistant",
                       text="End-of-lease cleaning by SchoonNL costs EUR 1,450.")
    assert key_values(turn, plan) == [("EUR 1,450", False)]
    assert "EUR 1,450" in gist(turn, plan, COUNTER, cap=24)


ZH_CONSTRAINTS = ("请勿直接给客户发邮件，所有沟通必须通过王丽进行。", "总预算不超过人民币30万元。", "不要给我打电话。",
                  "我对青霉素过敏。", "请勿致电给我。")


def test_chinese_user_constraints_are_constraint_turns(general: Any) -> None:
    # QA U F3: handoff read none of these as a user's constraint (compress did read README's "请勿致电给我"), so each
    # was a plain old turn, trimmed while "请介绍一下第3份参考资料。" went out
    for text in ZH_CONSTRAINTS:
        assert user_constraint(text), text
    from odcf.stages.rank import states_user_constraint

    # one test with compress's: what compress counts as a user's constraint, handoff does
    for text in ("请勿致电给我。", "我对青霉素过敏。", "Direct flights only.", "No hostels, please.", "Must we pay a deposit?"):
        assert user_constraint(text) >= states_user_constraint(text), text
    assert not user_constraint("请介绍一下第3份参考资料。") and not user_constraint("谢谢，我知道了。")
    filler = [HandoffItem(id=f"f{k}", layer="history", speaker="assistant" if k % 2 else "user",
                          text=f"第{k}份参考资料介绍了该市的历史。") for k in range(11)]
    for text in ZH_CONSTRAINTS:
        layered = layer_history([HandoffItem(id="c", layer="history", speaker="user", text=text), *filler],
                                general.plan, COUNTER)
        assert layered.bullets[0].constraint and text.rstrip("。") in layered.bullets[0].text, text


def kitchen() -> dict[str, Any]:
    """A 60-turn chat planning a kitchen renovation: the user's budget "under EUR 28,000" in turn 3, "No gas
    appliances" in turn 5, "must finish before 20 March" in turn 7, and in turn 41 "Actually, the budget is now
    EUR 31,000"; the rest questions and the assistant's answers."""
    msgs: list[dict[str, Any]] = []
    for role, text in (
            ("user", "Hi, we want to renovate the kitchen in our flat on Keizersgracht, about 14 square metres."),
            ("assistant", "Happy to help. What budget and constraints should I plan around?"),
            ("user", "The total budget is under EUR 28,000, including appliances and labour."),
            ("assistant", "Noted, EUR 28,000 all in."),
            ("user", "No gas appliances at all; the building is going fully electric."),
            ("assistant", "Understood, induction hob and electric oven only."),
            ("user", "The work must finish before 20 March, because my mother moves in that week."),
            ("assistant", "Got it, completion before 20 March.")):
        msgs.append({"role": role, "content": text})
    fillers = [("What about the worktop?", "A quartz worktop of 3.2 metres costs about EUR 2,900 fitted."),
               ("Cabinets?", "Handleless cabinets from KeukenPlus run EUR 6,400 for this layout."),
               ("How long for the tiling?", "Tiling takes about 3 days for 9 square metres."),
               ("Lighting?", "Six LED spots and under-cabinet strips: EUR 780 installed.")]
    k = 0
    while len(msgs) < 60:
        if len(msgs) == 40:
            msgs += [{"role": "user", "content": "Actually, the budget is now EUR 31,000 since the bank approved a top-up."},
                     {"role": "assistant", "content": "Updated: budget EUR 31,000."}]
            continue
        q, a = fillers[k % len(fillers)]
        msgs += [{"role": "user", "content": q + (f" (follow-up {k})" if k >= len(fillers) else "")},
                 {"role": "assistant", "content": a}]
        k += 1
    return {"instruction": "Continue helping the customer plan the kitchen renovation.", "messages": msgs}


@pytest.mark.parametrize("budget", [125, 130, 140])
def test_a_stale_constraint_turn_ranks_below_the_current_ones(budget: int) -> None:
    # QA: at 130 tokens the stale "under EUR 28,000" (turn 3, first by position among the constraint turns at one
    # score) went out with its change (turn 41), 47 tokens for one constraint, while "No gas appliances" and "must
    # finish before 20 March" were dropped for room and a plain "Lighting?" filled what was left
    from odcf.compressor import Compressor

    r = handoff(Compressor.from_ontology("agent_ops"), role="executor", items=kitchen(), budget=budget)
    assert r.tokens <= budget
    assert "No gas appliances" in r.text and "before 20 March" in r.text, (budget, r.text)
    turns = {t["turn"]: t for t in r.record["handoff"]["history"]}
    assert turns[3]["corrected_by_turns"] == [41] and turns[41]["corrects_turns"] == [3]
    current = [t for t in turns.values() if t.get("constraint") and not t.get("corrected_by_turns")]
    if turns[3]["mode"] != "dropped":  # the stale turn only after every current constraint
        assert all(t["mode"] != "dropped" for t in current), current
    for t in turns.values():  # the record says why each turn left out was left out
        assert t["mode"] != "dropped" or t["reason"].startswith("budget: "), t


def test_a_turn_trimmed_to_its_constraint_keeps_its_speaker() -> None:
    """QA B L1: at 200 tokens the user's turn went out as "Please do not call me." alone, whose words
    the next agent could not tell; the assembler writes the turn's label before the part delivered."""
    from odcf.compressor import Compressor

    items = {"instruction": "Tell the customer the refund amount and method for order #W2586676.",
             "state": {"order_ids": ["#W2586676"], "resolution": "refunded"},
             "items": [{"id": "u1", "category": "user_constraints", "text": "Do not send the refund to a new card."},
                       {"category": "preconditions", "searched": True, "items": []}],
             "messages": [{"role": "user", "content": "Where is my refund for #W2586676? Please do not call me."},
                          {"role": "assistant", "content": "Let me check."}]}
    c = Compressor.from_ontology("customer_service")
    trimmed = 0
    for budget in (140, 150, 160, 170):
        r = c.handoff(role="executor", items=items, budget=budget, timings=False)
        assert r.tokens <= budget
        turn = next(h for h in r.record["handoff"]["history"] if h["turn"] == 1)
        if turn["mode"] == "trimmed":
            trimmed += 1
            assert "\nuser: Please do not call me." in r.text, r.text
            assert "Where is my refund" not in r.text
        elif turn["mode"] != "dropped":
            assert "\nuser: Where is my refund for #W2586676? Please do not call me." in r.text
        assert "\nPlease do not call me." not in r.text
    assert trimmed, "no budget trimmed the turn to its constraint"


def test_not_having_an_id_at_hand_is_no_constraint_but_a_wish_still_is() -> None:
    """QA B H5: tau-bench #33's "However, I don't have the reservation ID handy." was kept whole as a
    constraint turn at every budget for its "don't"."""
    assert not user_constraint("However, I don't have the reservation ID handy.")
    assert not user_constraint("I don't remember the order number, sorry.")
    for text in ("I don't want a window seat.", "We don't eat pork.", "I don't have a credit card.",
                 "Please don't call me, I don't have my phone handy.", "Don't book anything without asking me."):
        assert user_constraint(text), text


def test_a_cut_user_turn_keeps_the_sentence_compress_counts_as_a_constraint() -> None:
    """A user's turn is a constraint turn for a sentence that compress counts as a user's constraint (no
    "must", "only" in it); cut to its room, it keeps that sentence, not its opening thanks."""
    from odcf.handoff.history import constraint_cut

    limit = "The total budget is under EUR 4,500 for flights and hotel together."
    text = ("Thanks a lot for all the options you sent over yesterday evening, they look great and the team liked "
            "the photos of the venues. " + limit)
    assert constraint_strength(limit) == 0 and user_constraint(text)
    cut = constraint_cut(HandoffItem(id="u", layer="history", text=text, speaker="user"), COUNTER, cap=24)
    assert cut.text == "… " + limit
