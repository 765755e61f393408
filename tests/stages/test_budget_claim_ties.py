"""An insurance claim file keeps together what reads only together (QA s34 A): a stale value and a correction worded
"Corrected: …" or "GBP 4,950 instead of GBP 9,200" (F2)."""
import pytest

from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.rank import correction_links
from odcf.stages.segment import Segmenter

CLAIM = (
    "# Claim CLM-2024-309455 — theft of vehicle\n\n"
    "## Policy excerpt\n\n"
    "Section 1 Buildings — insured perils. We cover loss or damage to the buildings caused by:\n"
    "1.4 Escape of water from any fixed water or heating installation, washing machine or dishwasher.\n"
    "1.5 Storm or flood.\n\n"
    "Section 3.2 Deductible. The theft deductible is EUR 1,000. The deductible is EUR 2,500 if the vehicle was not "
    "fitted with a working approved tracking device at the time of the theft.\n\n"
    "Section 3.6 Waiting period. A claim for theft is paid no earlier than 30 days after the police report.\n\n"
    "## Adjuster notes\n\n"
    "2024-07-04 — Market value: EUR 52,300 (DAT valuation 2024-07-03). Vehicle not recovered.\n\n"
    "2024-07-09 — Building work: the customer had a garage extension built in May 2024. Checked whether Exclusion 5.9 "
    "applies. The extension work was on the other side of the house and the car was parked in the street. Exclusion 5.9 "
    "does not apply, despite the building work during the period.\n\n"
    "2024-07-20 — Contractor estimate (quote YHR-3340): locks GBP 640; kitchen units GBP 9,200; flooring GBP 2,640.\n\n"
    "2024-07-22 — Initially the reserve was EUR 51,300 (EUR 52,300 minus EUR 1,000). Corrected: the deductible is "
    "EUR 2,500 because of the lapsed tracker, so the reserve is EUR 49,800.\n\n"
    "2024-07-25 — Review: only the damaged run of units is replaced: GBP 4,950 instead of GBP 9,200.\n\n"
    "2024-07-31 — Settlement: EUR 52,300 market value minus EUR 2,500 deductible = EUR 49,800.\n"
)

BASE = "The theft deductible is EUR 1,000."
CASE = "The deductible is EUR 2,500 if the vehicle was not fitted"
ASKED = "Checked whether Exclusion 5.9 applies."
ANSWER = "Exclusion 5.9 does not apply, despite the building work during the period."
LEAD = "We cover loss or damage to the buildings caused by:"
ITEMS = ("1.4 Escape of water", "1.5 Storm or flood.")
STALE = "Initially the reserve was EUR 51,300"
FIXED = "Corrected: the deductible is EUR 2,500"
ESTIMATE = "kitchen units GBP 9,200"
INSTEAD = "GBP 4,950 instead of GBP 9,200."


def _doc(text):
    doc = Document.from_sources([Source(id="a", text=text)])
    return doc.replace(segments=Segmenter()(doc, Plan(domain="t")).segments)


def _find(doc, start):
    return next(s for s in doc.segments if start in s.text)


def _links(text):
    """{correction's text: [texts of what it corrects]}"""
    doc = _doc(text)
    by = {s.id: s.text for s in doc.segments}
    return {by[k]: [by[v] for v in vs] for k, vs in correction_links(doc.segments).items()}


# --- F2: "Corrected: …" and "… instead of GBP 9,200" link the value they correct --------------------------------------

def test_a_correction_label_corrects_the_value_right_before_it_in_its_paragraph():
    doc = _doc(CLAIM)
    links = correction_links(doc.segments)
    assert links[_find(doc, FIXED).id] == [_find(doc, STALE).id]


def test_a_value_instead_of_another_corrects_the_segment_that_holds_the_other():
    doc = _doc(CLAIM)
    links = correction_links(doc.segments)
    assert links[_find(doc, INSTEAD).id] == [_find(doc, ESTIMATE).id]


@pytest.mark.parametrize("text", [
    # a label over a sentence of another paragraph: what it corrects is not said
    "The reserve was EUR 51,300.\n\nCorrected: the deductible is EUR 2,500 because of the lapsed tracker.",
    # the sentence before gives no value
    "The customer called about the delay. Corrected: the deductible is EUR 2,500 because of the lapsed tracker.",
    # "correction" not as a label opening the sentence
    "The reserve was EUR 51,300. A correction of EUR 2,500 was discussed with the broker.",
    # a value of another kind
    "The car was kept for 14 days. Corrected: the deductible is EUR 2,500.",
    # "instead of" before a word, not a value
    "The hire car costs EUR 42 per day. The customer took the train instead of the hire car for EUR 42 a day.",
])
def test_no_correction_link_where_nothing_says_what_is_corrected(text):
    assert _links(text) == {}
