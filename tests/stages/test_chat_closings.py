"""A user's turn that only closes a conversation with thanks ("USER: That sounds great, thanks.", "USER: Yes,
that is all, thanks for your help.") ranks below every turn that says something (QA round 2, finding 3: on
SGD dialogues at 4x such closings, scored by the query's "user" matching every "USER:" label, took the room
of the turns naming the cities and dates asked for)."""
from odcf.compressor import Compressor
from odcf.document import Segment

DIALOGUE = ("USER: I need a table for 3 people at Osteria Lupo in Fresno.\n"
            "SYSTEM: What time would you like?\n"
            "USER: Book it for 7:15 pm on the 12th of May.\n"
            "SYSTEM: Your table at Osteria Lupo is booked for 3 at 7:15 pm on 12 May.\n"
            "USER: That sounds great, thanks.\n"
            "SYSTEM: Is there anything else I can help you with?\n"
            "USER: Yes, that is all, thanks for your help.\n"
            "SYSTEM: Have a good evening.\n")
QUERY = "What did the user ask to book, and with which exact details (date, time, place, number of people)?"
CLOSINGS = ("USER: That sounds great, thanks.", "USER: Yes, that is all, thanks for your help.")


def _turn(text: str) -> Segment:
    return Segment(id="a", source_id="s", index=0, text=text, original=text, kind="sentence", meta={"speaker": "USER:"})


def test_a_closing_turn_is_told_from_a_confirmation_or_a_request():
    from odcf.stages.rank import closing

    assert all(closing(_turn(t)) for t in CLOSINGS + ("USER: No nothing else for now, thanks for trying",
                                                      "USER: Thank you, goodbye!", "USER: No, thank you. That will be all."))
    assert not any(closing(_turn(t)) for t in ("USER: Yes.", "USER: Sure, book it.", "USER: That sounds all right.",
                                                "USER: Thanks, book it for 2 people.", "USER: Yes please, thanks.",
                                                "USER: Thanksgiving is on the 27th."))
    # a sentence with no speaker is no chat turn
    plain = Segment(id="a", source_id="s", index=0, text="Thanks!", original="Thanks!", kind="sentence")
    assert not closing(plain)


def test_closing_turns_rank_below_the_turns_that_give_the_booking_details():
    c = Compressor.from_ontology("customer_service")
    full = c.compress([{"id": "d", "text": DIALOGUE}], query=QUERY, budget=10_000, timings=False)
    score = {s.text: s.score for s in full.document.segments}
    said = [score[t] for t in score if t.startswith("USER:") and t not in CLOSINGS]
    assert max(score[t] for t in CLOSINGS) < min(said)
    for budget, wanted in ((30, ("7:15 pm on the 12th of May",)), (60, ("Fresno", "7:15 pm on the 12th of May"))):
        r = c.compress([{"id": "d", "text": DIALOGUE}], query=QUERY, budget=budget, timings=False)
        assert all(w in r.text for w in wanted) and not any(t in r.text for t in CLOSINGS)
        segs = [g for src in r.record["sources"] for g in src["segments"]]
        dropped = [g for g in segs if g["status"] == "dropped"]
        assert len(dropped) >= 2 and all(g.get("reason") for g in dropped)


BOOKING = ("USER: I need a hotel in Cambridge for 2 nights from Friday, for 2 people, with free parking.\n"
           "SYSTEM: I found the Hotel Adler with free parking at GBP 120 per night. Shall I book it?\n"
           "USER: Yes, thanks.\n"
           "SYSTEM: Booked, reference HX4471. Would you also like travel insurance for GBP 15?\n"
           "USER: No, thanks.\n"
           "SYSTEM: Alright. Is there anything else I can help you with?\n"
           "USER: No, that is all. Thank you!\n")


def test_a_yes_or_no_with_thanks_answers_the_question_before_it():
    # QA s28/qa3 #5: "USER: No, thanks." declining the insurance was taken for a goodbye, scored 0.0 and dropped
    # while the question it answers was delivered
    from odcf.stages.rank import closing

    assert not any(closing(_turn(t)) for t in ("USER: No, thanks.", "USER: Yes, thanks.", "USER: Okay, thanks.",
                                                "USER: Fine, thanks."))
    assert all(closing(_turn(t)) for t in ("USER: No, that is all. Thank you!", "USER: Yes, thanks, goodbye.",
                                           "USER: No, I'm all set, thanks."))
    c = Compressor.from_ontology("customer_service")
    query = "Did the user take the travel insurance, and did they confirm the hotel booking?"
    for budget in (50, 70):
        r = c.compress([{"id": "d", "text": BOOKING}], query=query, budget=budget, timings=False)
        assert "Would you also like travel insurance for GBP 15?\nUSER: No, thanks." in r.text, (budget, r.text)
        assert "USER: No, that is all." not in r.text
