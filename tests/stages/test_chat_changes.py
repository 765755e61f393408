"""A user's later change of what they asked for, in a conversation with an agent: linked to what it changes,
so that the stale value never goes out as current."""
import pytest

from odcf.compressor import Compressor
from odcf.document import Segment
from odcf.stages.rank import correction_links


def _turns(*lines):
    """Segments of a transcript, one a line: "speaker: text" gives the speaker; a line without one continues
    the turn before it."""
    out, speaker = [], None
    for i, line in enumerate(lines):
        head, _, rest = line.partition(": ")
        if rest and " " not in head:
            speaker = head + ":"
        out.append(Segment(id=f"s{i}", source_id="a", index=i, text=line, original=line, kind="sentence",
                           meta={"speaker": speaker} if speaker else {}))
    return out


CHAT = ("user: Hello, I'd like a weekend in Porto for 3 people, 9 to 11 May. Our budget is €1,200 total including the train.\n"
        "assistant: Happy to help. Trains from Lisbon take about 3 hours and cost €25–€35 per person. "
        "Would you like a hotel or an apartment?\n"
        "user: An apartment near Ribeira, please.\n"
        "assistant: Casa da Ribeira has a 3-bedroom flat at €180/night; Douro Loft is €150/night with a river view.\n"
        "user: Sorry, our plans moved. Make it under €900 total, train included. And we arrive on 10 May, not 9 May, so two nights.\n"
        "assistant: Understood. I'll look for flats that fit.\n")


def test_a_date_changed_in_a_chat_corrects_the_range_that_held_it():
    # QA: "we'll fly on 15 June, not 14 June" did not correct "14 to 18 June": the range's "14" was read in the
    # unit "to", not "June", and the old dates went out as current
    segs = _turns("user: A trip for me and my partner, 14 to 18 June.", "assistant: Noted, five days.",
                  "user: We fly on 15 June, not 14 June.")
    assert correction_links(segs) == {"s2": ["s0"]}
    # a range in another unit is not the date
    segs = _turns("user: We need 14 to 18 rooms.", "assistant: Noted.", "user: We fly on 15 June, not 14 June.")
    assert correction_links(segs) == {}


def test_a_users_make_it_changes_the_value_of_the_same_kind_they_gave_before():
    # QA: "Make it under €2,000 total, flights included." did not correct "Budget is €3,500 total including
    # flights" (no number shared, one rare word), and the old budget went out as current
    segs = _turns("user: Hi! A trip to Lisbon, 14 to 18 June.", "Budget is €3,500 total including flights.",
                  "assistant: Flights run €250–€400 per person; the hotel is €210/night.",
                  "user: Actually, our budget got cut.", "Make it under €2,000 total, flights included.")
    assert correction_links(segs) == {"s4": ["s1"]}
    for change in ("Change the budget to €2,000 total.", "Actually, we can spend €2,000 total at most."):
        assert correction_links(_turns(*[s.text for s in segs[:4]], change)) == {"s4": ["s1"]}, change
    # not the agent's values, nor what the agent says; not a change inside a condition
    said = _turns("user: Budget is €3,500 total.", "assistant: Make it €2,000 total and you save a lot.")
    assert correction_links(said) == {}
    said = _turns("user: Budget is €3,500 total.", "assistant: Noted.",
                  "user: If flights are over €600, make it 3 nights.")
    assert correction_links(said) == {}


def test_make_it_and_actually_in_prose_or_a_meeting_are_no_change():
    segs = _turns("The mixer draws 1,200 W at full speed.", "To make it 5 times faster, use the turbo blade.",
                  "It actually took 3 weeks to ship, at 1,200 W.")
    assert correction_links(segs) == {}
    segs = _turns("Lena: Budget is €3,500 total for the offsite.", "Tom: Make it €4,000 total, I'd say.")
    assert correction_links(segs) == {}


@pytest.mark.parametrize("stale, fresh", [("9 to 11 May", "not 9 May"), ("€1,200 total", "under €900 total")])
def test_a_value_a_user_changed_is_never_delivered_without_the_change(stale, fresh):
    compressor = Compressor.from_ontology("general")
    query = "What budget and dates did the user give for the Porto weekend?"
    delivered = 0
    for budget in range(20, 150, 6):
        r = compressor.compress(CHAT, query=query, budget=budget, annotate=False)
        delivered += fresh in r.text
        if stale in r.text:
            assert fresh in r.text, (budget, r.text)
    assert delivered


@pytest.mark.parametrize("said, raised", [
    ("Yes — no hostels, and the hotel must have air conditioning.", True),
    ("My partner uses a wheelchair, so step-free access is essential.", True),
    ("Please also avoid anything before 10am, my partner needs mornings to rest.", True),
    ("Also we are vegetarian, please suggest restaurants.", True),
    ("Make it under €2,000 total, flights included.", True),
    ("We can't walk more than a kilometre a day.", True),
    ("We'd prefer a quiet street over a view.", True),
    ("Direct flights only, please.", True),
    ("We need to be back in Amsterdam by 6pm on Sunday.", True),
    ("What about day trips?", False),
    ("Must we pay a deposit?", False),
    ("No worries, I have no preference for the area.", False),
    ("I don't know the neighbourhoods yet.", False),
    ("Great, thanks for the list.", False),
])
def test_what_a_user_asks_of_an_agent_is_a_constraint(said, raised):
    # QA: "no hostels … must have air conditioning", "step-free access is essential", "avoid anything before
    # 10am" and "we are vegetarian" were not raised and were left out at 40% of the chat, while the agent's "Do
    # you have any preferences for the hotel?" was delivered
    from odcf.stages.rank import lift_constraints

    segs = _turns("user: Hi, a trip to Lisbon for two.", "assistant: Lisbon is lovely in June.", "The city is hilly.",
                  "Do you have any preferences for the hotel?", f"user: {said}")
    scores = {"s0": 0.9, "s1": 0.8, "s2": 0.5, "s3": 0.4, "s4": 0.1}
    assert lift_constraints(segs, scores)[1] == raised
    # the agent's own words and its questions are no constraint of the user's
    agent = _turns("user: Hi, a trip to Lisbon for two.", "assistant: Lisbon is lovely in June.", "The city is hilly.",
                   "Do you have any preferences for the hotel?", f"assistant: {said}")
    assert lift_constraints(agent, scores)[1] == 0


def test_without_an_agent_what_people_say_must_be_done_is_no_users_constraint():
    from odcf.stages.rank import USER_CONSTRAINT_RE, lift_constraints

    scores = {"s0": 0.9, "s1": 0.8, "s2": 0.1}
    meeting = _turns("Lena: The migration starts on Monday.", "Tom: The vendor confirmed the window.",
                     "Lena: We must finish by Friday and avoid the month-end close.")
    assert lift_constraints(meeting, scores)[1] == 0
    manual = _turns("The drill has two speeds.", "Charge it for 3 hours.", "Avoid direct sunlight; it must stay dry.")
    assert lift_constraints(manual, scores)[1] == 0
    # a diet is the writer's own condition in any text, as an allergy is; a menu's is not
    assert USER_CONSTRAINT_RE.search("We are vegetarian, so no meat dishes please.")
    assert not USER_CONSTRAINT_RE.search("We are vegan-friendly and open late.")
    assert not USER_CONSTRAINT_RE.search("We have vegetarian options every day.")


def test_a_users_constraints_in_a_chat_are_delivered_before_the_agents_small_talk():
    chat = ("user: Hi! We're planning 4 nights in Seville for two adults in October.\n"
            "assistant: Wonderful! October is a great month, around 25°C. Have you been before? "
            "Do you have any preferences for the hotel?\n"
            "user: Yes, the room must have a walk-in shower, and no hotels above a bar. My husband uses a wheelchair, "
            "so step-free access is essential.\n"
            "assistant: Good to know. Hotel Alcazar and Casa Triana both have step-free entrances and walk-in showers.\n"
            "user: Also we are vegan. Please avoid tours that start before 9am.\n"
            "assistant: Noted. I'll draft a plan with Hotel Alcazar and a late-morning Alcazar tour.\n")
    r = Compressor.from_ontology("general").compress(chat, query="Draft the Seville plan.", budget=110, annotate=False)
    for constraint in ("walk-in shower", "step-free access is essential", "we are vegan", "avoid tours"):
        assert constraint in r.text, (constraint, r.text)


EARNINGS_CALL = (
    "Operator: Good morning and welcome to the Q3 earnings call of Northwind Logistics.\n"
    "Maria Chen (CFO): Revenue for the quarter was $412 million, up 9% year over year.\n"
    "Maria Chen (CFO): Adjusted EBITDA margin was 14.2%, and we generated $58 million of free cash flow.\n"
    "Operator: Our first question comes from Tom Reyes of Baird.\n"
    "Tom Reyes (Baird): What does guidance assume for fuel surcharges?\n"
    "Maria Chen (CFO): Diesel at $3.80 a gallon. Actually, 60% of the surcharge is passed through.\n"
    "Tom Reyes (Baird): And capex? Last quarter you said $95 million.\n"
    "Maria Chen (CFO): Make it $110 million for the year; we pulled forward two projects.\n"
    "Ana Silva (Jefferies): Can you talk about the Memphis hub? You must be near capacity there.\n"
    "Operator: That concludes today's call.\n")


def test_a_call_with_an_operator_is_no_conversation_with_an_agent():
    # QA: "Operator:" made the earnings call a chat with an agent: the CFO's "Actually, 60% …" and "Make it $110
    # million …" corrected "Adjusted EBITDA margin was 14.2% … $58 million of free cash flow", which went out only
    # with them and was left out, and the analyst's "You must be near capacity there." was raised as a constraint
    from odcf.stages.rank import lift_constraints

    segs = _turns("Operator: Welcome to the call.", "CFO: Adjusted EBITDA margin was 14.2%, free cash flow $58 million.",
                  "Operator: Our first question comes from Baird.", "Analyst: You must be near capacity there.",
                  "CFO: Actually, 60% of the surcharge is passed through.", "CFO: Make it $110 million for the year.")
    assert correction_links(segs) == {}
    assert lift_constraints(segs, {f"s{i}": 0.9 - i / 10 for i in range(6)})[1] == 0
    # an agent's role, however labelled, still makes one
    for agent in ("assistant:", "AI:", "Assistant (gpt-4o):", "[tool get_order]", "[assistant -> get_order]"):
        chat = _turns("user: Budget is €3,500 total.", "x: Noted.", "user: Make it €2,000 total.")
        chat[1] = chat[1].replace(meta={"speaker": agent})
        assert correction_links(chat) == {"s2": ["s0"]}, agent
    r = Compressor.from_ontology("general").compress(
        EARNINGS_CALL, query="What was free cash flow and adjusted EBITDA margin in the quarter?", budget=60,
        annotate=False)
    assert "$58 million of free cash flow" in r.text, r.text
    assert not any("corrected by" in (g.get("reason") or "") for s in r.record["sources"] for g in s["segments"])


def test_a_change_that_names_what_it_changes_corrects_only_a_value_of_that_thing():
    # QA: "Make the flight under €120 please." corrected "I need a hotel in Porto for 3 nights, max €150 a night"
    # on the euro sign alone, and the hotel's cap was left out as stale
    segs = _turns("user: I need a hotel in Porto for 3 nights, max €150 a night.", "assistant: Do you need flights?",
                  "user: Yes, from London on 3 May, returning 6 May.",
                  "assistant: I found BA 482 at €210 return and easyJet 8751 at €95 return.",
                  "user: Make the flight under €120 please.", "assistant: Shall I hold it?",
                  "user: Yes. Also switch the hotel to 4 nights.")
    assert correction_links(segs) == {"s6": ["s0"]}
    # the thing named, in the singular or the plural, next to the old value: linked
    segs = _turns("user: Flights must be under €300 each.", "assistant: Noted.", "user: Make the flight under €120.")
    assert correction_links(segs) == {"s2": ["s0"]}


SUPPORT = ("Customer: Hi, my order 55-8812 arrived damaged. The box was crushed.\n"
           "Agent: I'm sorry to hear that. Can you confirm the shipping address is 12 Elm Street?\n"
           "Customer: Yes. Not urgent. But I need it before March 20.\n"
           "Agent: Thanks. I can offer a replacement or a refund of $149.99.\n"
           "Customer: Replacement please. Actually, make it a refund instead.\n"
           "Agent: Understood. The refund of $149.99 will be issued within 5 business days.\n"
           "Customer: Great. Please don't call me, email only.\n"
           "Agent: Noted. You will receive an email at the address on file.\n")


def test_a_customers_deadline_in_a_support_chat_is_delivered_before_the_agents_courtesy():
    # QA round 3: "Customer: Yes. Not urgent. But I need it before March 20." was not raised and was left out at
    # 110 tokens while "Agent: I'm sorry to hear that." went out
    r = Compressor.from_ontology("customer_service").compress(
        SUPPORT, query="refund amount and contact preference", budget=110, annotate=False)
    assert "But I need it before March 20." in r.text, r.text
    assert "Please don't call me, email only." in r.text, r.text


@pytest.mark.parametrize("agent, customer", [
    ("Agent:", "Customer:"), ("Support:", "Client:"), ("Rep (Dana):", "Caller:"), ("Customer service:", "Maria:"),
    ("Bot:", "User:"), ("Nurse:", "Patient:"), ("Support agent:", "Guest:")])
def test_the_served_side_of_a_support_chat_sets_constraints_and_the_agents_courtesy_ranks_below_them(agent, customer):
    from odcf.stages.rank import lift_constraints

    said = [(customer, "My order 55-8812 arrived damaged."), (agent, "I'm sorry to hear that."),
            (agent, "A refund of $149.99 is issued within 5 days."), (customer, "I need it before March 20.")]
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=f"{who} {t}", original=f"{who} {t}", kind="sentence",
                    meta={"speaker": who}) for i, (who, t) in enumerate(said)]
    scores, raised = lift_constraints(segs, {"s0": 0.9, "s1": 0.6, "s2": 0.5, "s3": 0.1})
    assert raised == 1, (agent, customer)
    # the customer's deadline ranks above the agent's "I'm sorry to hear that.", which had been the floor
    assert scores["s3"] > scores["s1"], scores
    # said by the agent, it is no user's constraint
    agent_says = [s.replace(meta={"speaker": agent}) if s.id == "s3" else s for s in segs]
    assert lift_constraints(agent_says, {"s0": 0.9, "s1": 0.6, "s2": 0.5, "s3": 0.1})[1] == 0


@pytest.mark.parametrize("said, raised", [
    ("But I need it before March 20.", True), ("We need the car by 6pm.", True),
    ("I want my refund no later than Friday.", True),
    ("I need it for the party.", False), ("Do you need it before March 20?", False),
    ("It arrived before March 20.", False)])
def test_a_users_deadline_is_a_constraint(said, raised):
    from odcf.stages.rank import lift_constraints

    segs = _turns("user: Hi, my blender broke.", "assistant: Sorry about that.", "Shall I send a new one?",
                  f"user: {said}")
    assert lift_constraints(segs, {"s0": 0.9, "s1": 0.8, "s2": 0.5, "s3": 0.1})[1] == raised


TRIP = ("User: Hi, I need a trip to Lisbon for 2 people from 14 June to 18 June.\n"
        "Assistant: Sure. What's your budget and any preferences?\n"
        "User: Budget is €3,500 total. We'd like a hotel in Alfama with breakfast.\n"
        "Assistant: Got it. I found Hotel Convento do Salvador at €180 a night and Memmo Alfama at €260 a night.\n"
        "User: My partner uses a wheelchair, so step-free access is essential.\n"
        "Assistant: Memmo Alfama has step-free access and an elevator. Flights TAP TP1351 leave at 07:40.\n"
        "User: Please avoid anything before 10am.\n"
        "Assistant: Then TP1357 at 11:15 works, €240 per person.\n"
        "User: Actually, make it 15 June, not 14 June. And make it under €2,000 total.\n"
        "Assistant: Understood, I will search again for 15 June to 18 June under €2,000.\n"
        "User: We are vegetarian, by the way.\n"
        "Assistant: Noted, I will include vegetarian restaurant suggestions.\n")


def test_a_users_change_ranks_with_their_constraints_and_keeps_the_rest_of_what_it_changes():
    # QA round 2, finding 7: "Actually, make it 15 June, not 14 June." kept its own score (0.69), below the
    # constraints, and "I need a trip to Lisbon for 2 people from 14 June to 18 June", which goes only with it,
    # was left out as corrected: at 90 tokens the output never said Lisbon or 2 people
    compressor = Compressor.from_ontology("general")
    r = compressor.compress([{"id": "chat.txt", "text": TRIP}], query="Book the flight and hotel", budget=90)
    assert "trip to Lisbon for 2 people from 14 June to 18 June" in r.text, r.text
    assert "Actually, make it 15 June, not 14 June." in r.text, r.text
    # the old dates still never go out without the change
    for budget in range(40, 200, 10):
        r = compressor.compress([{"id": "chat.txt", "text": TRIP}], query="Book the flight and hotel", budget=budget)
        assert "14 June to 18 June" not in r.text or "make it 15 June" in r.text, (budget, r.text)


def test_what_a_users_change_changes_is_raised_with_it_only_where_it_says_more():
    from odcf.stages.rank import lift_constraints

    segs = _turns("user: A trip to Lisbon for 2 people from 14 June to 18 June.", "assistant: Lisbon is lovely.",
                  "user: Budget is €3,500 total.", "assistant: Flights TAP TP1351 leave at 07:40.",
                  "The hotel has a pool.", "user: Actually, make it 15 June, not 14 June.",
                  "user: And make it under €2,000 total.")
    assert correction_links(segs) == {"s5": ["s0"], "s6": ["s2"]}
    scores, _ = lift_constraints(segs, {"s0": 0.3, "s1": 0.9, "s2": 0.2, "s3": 0.8, "s4": 0.7, "s5": 0.3, "s6": 0.4})
    # the change, and the request it changes, which still says where and for how many, rank with the constraints
    assert scores["s5"] == scores["s0"] == scores["s6"] == 0.799999, scores
    # "Budget is €3,500 total" says nothing "under €2,000 total" does not replace: it keeps its own score
    assert scores["s2"] == 0.2
    # said by the agent, a change is no user's
    agent = [s.replace(meta={"speaker": "assistant:"}) if s.id == "s5" else s for s in segs]
    scores, _ = lift_constraints(agent, {"s0": 0.3, "s1": 0.9, "s2": 0.2, "s3": 0.8, "s4": 0.7, "s5": 0.3, "s6": 0.4})
    assert scores["s0"] == 0.3 and scores["s5"] == 0.3


_BOOKING = ("user: Hi, I need a trip to Lisbon for 2 people from 14 June to 18 June.",
            "assistant: Sure. What's your budget?", "user: Budget is €3,500 total. Please book the 07:40 flight.",
            "assistant: Memmo Alfama is €260 a night. Flights TAP TP1351 leave at 07:40.",
            "user: We are vegetarian.", "assistant: Then TP1357 at 11:15 works, €240 per person.")


@pytest.mark.parametrize("change, changed", [
    ("Change the dates to 15 June.", "s0"), ("Change the dates to 15 to 19 July.", "s0"),
    ("Move the time to 11:15.", "s2"), ("Change the amount to €2,000.", "s2"), ("Change the budget to €2,000.", "s2"),
    ("Change the dates to 3 people.", None), ("Change the time to 15 June.", None)])
def test_a_change_that_names_the_kind_of_value_changes_the_users_last_value_of_that_kind(change, changed):
    # QA: "Change the dates to 15 June" did not correct "from 14 June to 18 June", which says no "dates", and
    # the old dates could go out as current
    links = correction_links(_turns(*_BOOKING, f"user: {change}"))
    assert links == ({"s6": [changed]} if changed else {}), links
    # only a user's change in a chat with an agent: not in a meeting
    meeting = [s.replace(meta={"speaker": "Tom:" if s.meta["speaker"] == "assistant:" else "Lena:"})
               for s in _turns(*_BOOKING, f"user: {change}")]
    assert correction_links(meeting) == {}


_OFFSITE = ("user: A team offsite in Lisbon for 6 people, 14 to 17 October.\n\n"
            "assistant: Happy to help. What are the ground rules?\n\n"
            "user: Never book anything before 9 am. The total budget is under {cur}4,500 for flights and hotel.\n\n"
            "assistant: Understood.\n\n"
            + "".join(f"assistant: Option {n}: hotel {h} at {{cur}}{p} per night, breakfast included, 10 minutes from the "
                      f"venue.\n\nuser: Is there a gym?\n\nassistant: Yes, open from 6 am.\n\n"
                      for n, h, p in ((1, "Alfama Stay", 180), (2, "Baixa House", 210), (3, "Rio Tejo", 165)))
            + "user: Actually, budget is now {cur}5,200 - finance approved the extra.\n\n"
            "assistant: Great.\n\n"
            "user: Which option should we take, given everything I've told you?\n")


@pytest.mark.parametrize("cur", ["€", "EUR ", "USD "])
def test_a_users_change_in_a_chat_pasted_with_blank_lines_corrects_the_earlier_value_in_any_currency(cur):
    # QA2 finding 2: in a chat whose messages are separated by blank lines, and with "EUR 5,200" (an ISO code
    # before the amount, of no value kind), "Actually, budget is now EUR 5,200" was dropped while the stale
    # "under EUR 4,500" was delivered as current
    text = _OFFSITE.replace("{cur}", cur)
    compressor = Compressor.from_ontology("agent_ops")
    for budget in (60, 90, 120):
        r = compressor.compress([{"id": "chat.txt", "text": text}], query="Which option should we take?", budget=budget)
        assert f"budget is now {cur}5,200" in r.text, (budget, r.text)
        # the stale value never goes alone: delivered with the change, or left out as corrected by it
        stale = next(s.id for s in r.document.segments if f"under {cur}4,500" in s.text)
        said = next(g for s in r.record["sources"] for g in s["segments"] if g["id"] == stale)
        assert "rank: corrected by chat.txt#" in said["reason"], said


def test_a_currency_code_before_or_after_an_amount_is_its_kind():
    from odcf.stages.rank import _value_kinds

    assert _value_kinds("under EUR 4,500 total") == {"eur", "total"}
    assert _value_kinds("now 5,200 EUR") == {"eur"}
    assert _value_kinds("USD 1,200") == {"usd"} and _value_kinds("CHF 300 a night") == {"chf"}


@pytest.mark.parametrize("new", ["5,200 euros", "5,200 EUR", "€5,200", "EUR 5,200"])
def test_a_currency_written_as_a_word_is_the_kind_of_its_code_and_sign(new):
    # QA s29/qa4 #4: "Actually, budget is now 5,200 euros" was no change of "under EUR 4,500" ("euros" was
    # another kind than "eur"), and the stale budget went out alone
    segs = _turns("user: The total budget must stay under EUR 4,500 for flights and hotel together.",
                  "assistant: Noted.", f"user: Actually, budget is now {new} - finance approved the extra.")
    assert correction_links(segs) == {"s2": ["s0"]}
    from odcf.stages.rank import _value_kinds

    assert _value_kinds("5,200 euros") == _value_kinds("EUR 4,500") == _value_kinds("€4,500") == {"eur"}
    assert _value_kinds("300 dollars") == _value_kinds("$300") == {"usd"}
    assert _value_kinds("40 pounds") == _value_kinds("£40") and _value_kinds("900 yen") == _value_kinds("JPY 900")


def test_an_actually_change_of_another_thing_changes_nothing():
    # QA s29/qa4 #12: "Actually, the hotel deposit alone is EUR 900" was recorded as correcting "The total
    # budget must stay under EUR 4,500 for flights and hotel together": it names the hotel, not its deposit
    head = "user: The total budget must stay under EUR 4,500 for flights and hotel together."
    segs = _turns(head, "assistant: Noted.", "user: Actually, the hotel deposit alone is EUR 900, paid by card.")
    assert correction_links(segs) == {}
    for change in ("Actually, the total budget is now EUR 5,200.", "Actually, we can spend EUR 5,200 in total."):
        assert correction_links(_turns(head, "assistant: Noted.", f"user: {change}")) == {"s2": ["s0"]}, change


THREAD = (
    "Ticket CS-1001 — sync failing since the v5.2 upgrade\n\n"
    "================================\n"
    "Message 1 — Jana Novak (customer) — 2024-03-11 08:02 UTC\n"
    "================================\n"
    "Hello,\n\n"
    "since you upgraded our tenant to version 5.2, the shipment sync fails for about 12 orders in every batch of 500. "
    "Our warehouse cannot print labels for them.\n\n"
    "Important constraints on our side:\n"
    "- Do NOT roll back to 5.1 — our customs module depends on the new 5.2 API.\n"
    "- Any change to production must be made outside our warehouse hours (06:00–22:00 CET).\n"
    "- We cannot share the carrier API key by e-mail; it must go through the secure upload link only.\n\n"
    "================================\n"
    "Message 2 — Rafael Ortiz (agent) — 2024-03-11 09:15 UTC\n"
    "================================\n"
    "Hi Jana,\n\n"
    "thank you for the detailed report. The failing calls go to the carrier gateway in the EU region and time out "
    "after 30 seconds. Our engineers will check whether the new batching sends too many requests in parallel. "
    "We can reduce the batch size from 500 to 100 for your tenant as a workaround. "
    "The gateway rate-limits at 50 requests per second per tenant. "
    "Do not retry the stuck orders by hand; they are re-queued automatically every 15 minutes.\n\n"
    "================================\n"
    "Internal note — Mei Tanaka (engineering) — 2024-03-12 13:10 UTC\n"
    "================================\n"
    "Root cause likely: 5.2 raised max_parallel from 4 to 16 per worker. Never deploy on Fridays.\n")


def test_a_customers_constraints_in_a_ticket_thread_are_raised_as_in_a_chat():
    # QA s29/qa5 #4: in a ticket thread (messages under "Message 1 — Jana Novak (customer) — …" headers, no chat
    # labels) "Do NOT roll back to 5.1" and "… must go through the secure upload link only" were ranked like any
    # fact and dropped at 10%/25% and even at the role budget, while the agent's findings went out
    r = Compressor.from_ontology("customer_service").compress(
        THREAD, query="What constraints did the customer set on changes to production?", budget=120, annotate=False)
    assert "Do NOT roll back to 5.1" in r.text, r.text
    assert "secure upload link only" in r.text, r.text
    from odcf.stages.rank import _thread_senders, lift_constraints

    segs = r.document.segments
    mail = _thread_senders(segs)[0]
    said = {s.original.strip() for s in segs if s.id in mail}
    assert any("Do NOT roll back" in t for t in said) and any("print labels" in t for t in said)
    # the agent's and the engineer's messages are no customer's: their "Do not retry …", "Never deploy …" stay as scored
    assert not any("Do not retry" in t or "Never deploy" in t or "thank you" in t for t in said)
    scores = {s.id: 0.5 for s in segs}
    raised = {s.original.strip()[:20] for s in segs if lift_constraints(segs, scores)[0][s.id] != 0.5}
    assert not any(t.startswith(("Do not retry", "Never deploy")) for t in raised), raised
