"""A paragraph under a short label line ending in ":" ("Internal note (not visible to customer) — …:",
"Customer reply:") goes only with that line, as an email's body with its From line."""
from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.budget import _antecedents
from odcf.stages.segment import Segmenter

CORE = {"rules": False, "fold": False}

NOTE = "Internal note (not visible to customer) — Dana, 2 May 2025 14:05:"
TICKET = ("Ticket #HD-20417 — Order #B55102 — Status: Open\n\n"
          "From: Support Agent Dana (Tier 2)\nSent: 2 May 2025 14:01\nSubject: RE: Cracked kettle lid\n\n"
          "Dear Sam,\n\n"
          "I am sorry the kettle arrived with a cracked lid. A replacement kettle will ship to you no later than "
          "9 May 2025, and you will receive a tracking number by email.\n\n"
          "Kind regards,\nDana\n\n---\n\n"
          f"{NOTE}\n"
          "Warehouse confirmed stock of model KT-200 in Leeds. Do not send a courier to collect the old unit. "
          "Replacement ships from Leeds on 6 May by standard post.\n")


def _before(text):
    doc = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t"))
    before, heads = _antecedents(doc)
    by_id = {s.id: s.text for s in doc.segments}
    return {s.text: by_id.get(before.get(s.id)) for s in doc.segments}, {by_id[h] for h in heads}


def test_an_internal_note_is_never_delivered_without_its_label_line(plan):
    # QA: "Manual refund scheduled in Stripe for 17 April." went without "Internal note (not visible to
    # customer) — Priya, …:" and read as part of the email that promised the customer 18 April
    later = ("Do not send a courier to collect the old unit.", "Replacement ships from Leeds on 6 May by standard post.")
    seen = set()
    for budget in range(40, 200, 6):
        r = Compressor(plan, stages=CORE).compress(TICKET, query="When will the replacement ship, and how?",
                                                   budget=budget, annotate=False)
        assert r.tokens_out <= budget
        for sentence in later:
            if sentence in r.text:
                assert NOTE in r.text, (budget, r.text)
        seen.add(any(s in r.text for s in later))
        for seg in r.document.segments:
            if seg.text in later and seg.dropped and "was not delivered" in seg.reasons[-1]:
                assert "opens with a label line ending in \":\"" in seg.reasons[-1], seg.reasons
    assert seen == {True, False}, seen


def test_every_sentence_of_a_paragraph_goes_with_the_label_line_above_it_or_on_its_first_line():
    before, heads = _before(
        "Customer reply:\n\nThanks, that works for me. Please only email me after 6 pm.\n\n"
        "Agent notes:\nCustomer called twice about the refund. Refund of $40 approved by K. Osei.\n")
    assert before["Thanks, that works for me."] == "Customer reply:"
    assert before["Please only email me after 6 pm."] == "Customer reply:"  # not only the first sentence
    assert "Customer reply:" in heads  # never delivered alone
    assert before["Refund of $40 approved by K. Osei."] == "Agent notes:\nCustomer called twice about the refund."


def test_a_sentence_ending_in_a_colon_in_running_prose_needs_nothing_more():
    before, _ = _before(
        "The audit covered three sites and found two problems in the cold chain at the depot:\n\n"
        "Freezer 4 was above -15 C for six hours. The logger had no alarm set.\n\n"
        "We reviewed the incident and agreed on two points:\nfirst, the logger gets an alarm. The "
        "second point is training.\n\n"
        "Summary of the findings. In short:\nThe depot failed. The others passed.\n")
    # a long lead-in: only the first sentence of the paragraph under it, as before
    assert before["Freezer 4 was above -15 C for six hours."].startswith("The audit covered")
    assert before.get("The logger had no alarm set.") is None
    # hard-wrapped prose going on in lower case: no label
    assert before.get("The second point is training.") is None
    # a line ending in ":" after a sentence on the same line is no label line of its own
    assert before.get("The others passed.") is None
