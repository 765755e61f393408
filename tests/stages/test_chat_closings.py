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
