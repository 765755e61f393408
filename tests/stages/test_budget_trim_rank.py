"""The trim (the text measured over the budget after the fill) takes a segment out with the sentences
that point back to it: it ranks it at the best of them, and the record says what went out with what."""
import pytest

from odcf.compressor import Compressor
from odcf.stages import budget as budget_stage

CORE = {"rules": False, "fold": False}

TEXT = "\n\n".join([
    "Parcel tracking for shipment YT2003521266065328 was requested by the customer on Monday. "
    "The office kitchen was repainted in a pale green colour last spring.",
    "Parking permits are renewed at the front desk every January. Based on the carrier detection, the package is "
    "being handled by Yun Express. However, the current tracking status and destination for shipment "
    "YT2003521266065328 are not available.",
    "The quarterly newsletter features staff birthdays and new hires. The tracking number YT2003521266065328 was "
    "checked against three carriers. Visitors must sign in at reception and wear a badge.",
    "Begin!",
    "Thank you for your assistance!",
]) + "\n"
QUERY = "what is the tracking status and destination of shipment YT2003521266065328"


@pytest.fixture
def overfilled(monkeypatch):
    # the fill's estimate is a few tokens off on real traces (a 52.8k-token ToolBench trace at 420 tokens):
    # here it takes everything, so that the exact measure trims it down to the budget
    def fill(doc, live, tiers, cost, required_ids, budget, counter, annotate, groups):
        return {s.id for s in live}, 0
    monkeypatch.setattr(budget_stage, "_fill", fill)


def _run(plan, budget):
    r = Compressor(plan, stages=CORE).compress(TEXT, query=QUERY, budget=budget)
    segs = r.document.segments
    return r, next(s for s in segs if s.text.startswith("Based on")), next(s for s in segs if s.text.startswith("However"))


def test_the_trim_ranks_a_sentence_at_the_best_of_what_points_back_to_it(plan, overfilled):
    # QA: the trim took out "Based on the carrier detection, …" (0.56) first, and with it "However, the
    # current status and destination … are not available …" (0.998); the refill put the 0.56 back alone,
    # with "Begin!" (0.07) and "Thank you for your assistance!" (0.26), and 0.998 was "no room"
    for budget in range(40, 75):
        r, lead, however = _run(plan, budget)
        assert r.tokens_out <= budget
        assert lead.score < however.score
        info = next(e for e in r.document.trace if e.stage == "budget").data
        assert info["trim_rounds"] > 0
        if however.dropped:
            # only what ranks at least as high as it was delivered in its place
            assert all(s.score >= however.score for s in r.document.segments if not s.dropped and s is not lead), (
                budget, r.text)
        else:
            assert not lead.dropped
            worse = [s for s in r.document.segments if s.dropped and s.score > however.score]
            assert not worse, (budget, r.text)
    r, lead, however = _run(plan, 60)
    assert not however.dropped and "Begin!" not in r.text, r.text


def test_a_sentence_trimmed_with_another_names_it_in_its_reason(plan, overfilled):
    reasons = set()
    for budget in range(20, 75):
        r, lead, however = _run(plan, budget)
        if however.dropped and not lead.dropped:
            reasons.add(str(however.reasons[-1]))
    assert reasons
    for reason in reasons:
        assert "no room" in reason and "went out with" in reason and "source-1#3" in reason, reason
