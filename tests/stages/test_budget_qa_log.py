"""A question of a question-and-answer log (a tender's clarification log, an FAQ) goes only with its
answer, and the answer ranks at least as high as its question."""
import pytest

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.budget import _antecedents
from odcf.stages.segment import Segmenter
from odcf.stages.segment.qa import qa_pairs

CORE = {"rules": False, "fold": False}

LOG = ("# Tender 2024/311 — School Catering Services\n"
       "## Clarification Notice No. 2 (issued 4 June 2024)\n\n"
       "Answers below form part of the tender documents and prevail over them.\n\n"
       "**Q6.** Section 2.4 mentions weekly menus. Must menus be approved by the school board?\n\n"
       "**A6.** Yes. Each menu must be approved two weeks before it is served.\n\n"
       "**Q7.** Clause 5.1 refers to a hygiene standard for kitchens. Please confirm the minimum hygiene "
       "rating required.\n\n"
       "**A7.** Every kitchen must hold a food safety score of 4 or higher. A score of 3 is not sufficient.\n\n"
       "**Q8.** What is the required performance guarantee?\n\n"
       "**A8.** The performance guarantee is 5% of the annual contract value, valid until final acceptance.\n\n"
       "**Q9.** May a bidder serve frozen meals?\n\n"
       "**A9.** Frozen meals may be used for up to 20% of servings per week.\n")


def _segments(text):
    return Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments


def test_a_question_of_a_clarification_log_is_delivered_only_with_its_answer(plan):
    # QA: "**Q19.** … Please confirm the minimum technical score." (0.92: it repeats the query) was
    # delivered without "**A19.** The technical score threshold is 65 out of 100 points." (0.77, "no room")
    asked = "Please confirm the minimum hygiene rating required."
    answer = "**A7.** Every kitchen must hold a food safety score of 4 or higher."
    seen = set()
    for budget in range(20, 160, 4):
        r = Compressor(plan, stages=CORE).compress(LOG, query="What is the minimum hygiene rating required?",
                                                   budget=budget, annotate=False)
        assert r.tokens_out <= budget
        for n in (6, 7, 8, 9):  # every question delivered comes with its answer's opening
            if f"**Q{n}.**" in r.text or (n == 7 and asked in r.text):
                assert f"**A{n}.**" in r.text, (budget, r.text)
        seen.add((asked in r.text, answer in r.text))
        segs = {s.text: s for s in r.document.segments}
        # the answer ranks at least as high as its question
        assert segs[answer].score >= max(segs[asked].score, segs["**Q7.** Clause 5.1 refers to a hygiene standard "
                                                                "for kitchens."].score)
        left = segs[asked]
        if left.dropped and answer not in r.text:
            assert "is a later part of a question" in left.reasons[-1] or "no room" in left.reasons[-1], left.reasons
    # the answer goes alone where its question does not fit beside it, and both go where they do
    assert (False, True) in seen and (True, True) in seen and (True, False) not in seen, seen


def test_a_dropped_question_says_that_it_goes_with_its_answer(plan):
    r = Compressor(plan, stages=CORE).compress(LOG, query="What is the required performance guarantee?",
                                               budget=30, annotate=False)
    q8 = next(s for s in r.document.segments if s.text.startswith("**Q8.**"))
    if q8.dropped:
        assert q8.reasons[-1].startswith("budget: is a question and goes only with its answer"), q8.reasons


@pytest.mark.parametrize("text, question, answer", [
    # numbered, answered out of order: by the number
    (("Q1. Is the site open on Sundays?\n\nQ2. Is parking free?\n\nA2. Parking is free for visitors.\n\n"
      "A1. The site is closed on Sundays."), "Q1. Is the site open on Sundays?", "A1. The site is closed on Sundays."),
    # unnumbered: the answer right after the question
    (("Question: Can I return an opened item?\n\nAnswer: Opened items can be returned within 30 days.\n\n"
      "Question: How long does shipping take?\n\nAnswer: Shipping takes three to five working days."),
     "Question: How long does shipping take?", "Answer: Shipping takes three to five working days."),
    # a "Q:" / "A:" transcript
    (("Q: Where were you on the night of 3 May?\nA: I was at home with my sister all evening.\n"
      "Q: Did anyone call you?\nA: Nobody called me that night."),
     "Q: Did anyone call you?", "A: Nobody called me that night."),
])
def test_questions_pair_with_their_answers_by_number_or_else_by_adjacency(text, question, answer):
    segs = _segments(text)
    by_text = {s.text: s.id for s in segs}
    pairs = {p.question[0]: p.answer[0] for p in qa_pairs(segs)}
    assert pairs[by_text[question]] == by_text[answer]
    before, _ = _antecedents(Document.from_sources([Source(id="a", text=text)]).replace(segments=segs))
    assert before[by_text[question]] == by_text[answer]  # the question goes with its answer
    assert before.get(by_text[answer]) != by_text[question]  # the answer needs nothing of its question


def test_no_pairs_without_a_question_and_answer_log():
    # an outline's letters, a chat between two people, a requirement list: nothing to pair
    for text in ("A. Scope\n\nThe supplier delivers meals.\n\nB. Price\n\nThe price is fixed.",
                 "Alice: Did you send the invoice?\nBob: Yes, this morning.\nAlice: Thanks.",
                 "A1. The supplier shall hold ISO 22000.\n\nA2. The supplier shall deliver daily."):
        assert qa_pairs(_segments(text)) == [], text


def test_an_faq_under_question_headings_keeps_each_answer_under_its_question(plan):
    # "### Q: …" over its answer: the heading is a head already, never delivered without a part of its answer
    faq = ("# Returns FAQ\n\n### Q: Can I return an opened item?\n\nA: Yes, opened items can be returned within "
           "30 days with the receipt.\n\n### Q: How long does a refund take?\n\nA: Refunds reach your card within "
           "5 working days of our receiving the item.\n")
    for budget in range(10, 80, 5):
        r = Compressor(plan, stages=CORE).compress(faq, query="how long does a refund take", budget=budget,
                                                   annotate=False)
        if "### Q: How long does a refund take?" in r.text:
            assert "A: Refunds reach your card" in r.text, r.text
