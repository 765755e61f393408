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
