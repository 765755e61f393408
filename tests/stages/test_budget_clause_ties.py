"""A numbered clause of a tender notice keeps together what reads only together (QA T1): a sentence that
leans back on the clause's first sentence ("Questions received after that time will not be answered."), a
question and its answer written in one numbered item ("X.6 Question: …? Answer: No. …"), and a clause's
first sentence and the later sentence that limits it ("… is eligible only if …")."""
import pytest

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.budget import _antecedents
from odcf.stages.segment import Segmenter
from odcf.stages.segment.qa import qa_pairs
from odcf.textutil import points_back

CORE = {"rules": False, "fold": False}

NOTICE = (
    "# Contract Notice — Open Procedure\n\n"
    "## Section II. Timetable\n\n"
    "II.1 The tender documents are available free of charge at https://udbud.example.dk/TN-2024-0388 from "
    "15 May 2024.\n\n"
    "II.2 Questions must be submitted in writing via the portal no later than 10 June 2024 at 12:00 CET. "
    "Questions received after that time will not be answered.\n\n"
    "II.3 Answers will be published on the portal no later than 17 June 2024.\n\n"
    "II.4 The deadline for receipt of tenders is 28 June 2024 at 12:00 CET. Tenders received after the deadline "
    "will be rejected without evaluation.\n\n"
    "## Section III. Eligibility and exclusion\n\n"
    "III.4 Economic and financial standing: the tenderer must have had an average annual turnover of at least "
    "DKK 25,000,000 in the last three financial years.\n\n"
    "III.5 The tenderer must have a positive equity in the most recent approved annual report. A tenderer with "
    "negative equity is eligible only if a parent company provides a guarantee covering the full contract value.\n\n"
    "III.6 Technical and professional ability: the tenderer must document at least 3 comparable deliveries within "
    "the last 3 years.\n\n"
    "III.11 Consortia are permitted. Each member of a consortium must submit its own ESPD.\n\n"
    "## Section IX. Additional information\n\n"
    "IX.4 The contracting authority does not reimburse tenderers' costs. This notice was sent for publication in "
    "the Official Journal of the European Union on 13 May 2024.\n\n"
    "## Section X. Clarifications published with the notice\n\n"
    "X.1 Question: Can the turnover requirement in III.4 be met by the combined turnover of consortium members? "
    "Answer: Yes. The combined average annual turnover of all members counts, provided that each member submits "
    "its own ESPD.\n\n"
    "X.3 Question: Must the 99.7% availability under IV.4 be met during the implementation phase? Answer: No. "
    "The availability requirement applies from the go-live date only.\n\n"
    "X.6 Question: Will the municipality accept an invoice in PDF format? Answer: No. Invoices must be in OIOUBL "
    "format, as stated in VI.4.\n\n"
    "X.7 Question: Is a reference older than 3 years accepted under III.6 if the system is still in operation? "
    "Answer: The delivery must have been completed within the last 3 years before the tender deadline; the "
    "operation period does not extend that window.\n"
)

DEADLINE = "II.2 Questions must be submitted in writing via the portal no later than 10 June 2024 at 12:00 CET."
AFTER = "Questions received after that time will not be answered."
EQUITY = "III.5 The tenderer must have a positive equity in the most recent approved annual report."
UNLESS = "A tenderer with negative equity is eligible only if a parent company provides a guarantee"


def _segments(text):
    return Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments


def _by_text(segs):
    return {s.text: s for s in segs}


def test_a_sentence_that_leans_on_that_time_goes_only_with_the_clause_sentence_it_points_to():
    segs = _segments(NOTICE)
    before, _ = _antecedents(Document.from_sources([Source(id="a", text=NOTICE)]).replace(segments=segs))
    by = _by_text(segs)
    assert before[by[AFTER].id] == by[DEADLINE].id
    # an ordinary "the" or "This" ties nothing: "the deadline" and "This notice" name their own
    assert before.get(by["Tenders received after the deadline will be rejected without evaluation."].id) != \
        by["II.4 The deadline for receipt of tenders is 28 June 2024 at 12:00 CET."].id
    notice = next(s for s in segs if s.text.startswith("This notice was sent"))
    assert before.get(notice.id) != by["IX.4 The contracting authority does not reimburse tenderers' costs."].id


@pytest.mark.parametrize("sentence, tied", [
    ("Questions received after that time will not be answered.", True),
    ("No claim is accepted after this deadline.", True),
    ("A tenderer that fails this requirement is excluded.", True),
    ("Tenders received after the deadline will be rejected without evaluation.", False),
    ("The tender must be in Danish or English.", False),
    ("This notice was sent for publication in the Official Journal of the European Union on 13 May 2024.", False),
    ("Tenderers are advised that time limits are strict.", False),
    ("Each member of a consortium must submit its own ESPD.", False),
])
def test_which_anaphors_point_back_and_which_do_not(sentence, tied):
    found = points_back(sentence, "II.2 Questions must be submitted no later than 10 June 2024 at 12:00 CET.")
    assert (found is not None) == tied, found


def test_a_question_and_its_answer_in_one_numbered_item_are_a_pair_and_go_together():
    segs = _segments(NOTICE)
    by = _by_text(segs)
    pairs = {p.question[0]: p.answer for p in qa_pairs(segs)}
    q6 = by["X.6 Question: Will the municipality accept an invoice in PDF format?"].id
    ids = {s.id: s for s in segs}
    assert ids[pairs[q6][0]].text.startswith("Answer: No.")
    assert len([q for q in pairs if ids[q].text.startswith("X.")]) == 4
    before, _ = _antecedents(Document.from_sources([Source(id="a", text=NOTICE)]).replace(segments=segs))
    assert before[q6] == pairs[q6][0]  # the question goes only with its answer


@pytest.mark.parametrize("query", ["eligibility criteria and tender deadline", None])
def test_at_every_budget_the_clause_ties_hold_and_the_budget_holds(plan, query):
    seen = {"after": set(), "equity": set(), "qa": set()}
    for budget in range(40, 520, 12):
        r = Compressor(plan, stages=CORE).compress(NOTICE, query=query, budget=budget, annotate=False)
        text = r.text
        assert r.tokens_out <= budget and not r.record["over_budget"], (budget, r.tokens_out)
        # (a) "after that time" only with the II.2 sentence that states the time
        if AFTER in text:
            assert DEADLINE in text, (budget, text)
        seen["after"].add((DEADLINE in text, AFTER in text))
        # (c) the equity rule only with the exception that limits it
        if EQUITY in text:
            assert UNLESS in text, (budget, text)
        seen["equity"].add((EQUITY in text, UNLESS in text))
        # (b) each question only with its answer, and the answer only with its question
        segs = r.document.segments
        for k, q in enumerate(segs):
            if q.text.startswith("X.") and " Question: " in q.text:
                answer = segs[k + 1]
                assert answer.text.startswith("Answer: ") and answer.paragraph == q.paragraph
                assert (q.text in text) == (answer.text in text), (budget, q.text, text)
                seen["qa"].add(q.text in text)
        # every piece left out says which piece it goes with
        _reasons_name_the_tie(r.document.segments)
    # not vacuous: each tie was both kept and left out across the budgets
    assert (True, True) in seen["after"] and (True, True) in seen["equity"], seen
    assert seen["qa"] == {True, False}, seen


def _reasons_name_the_tie(segs):
    by = {s.text: s for s in segs}
    for s in segs:
        if not s.dropped:
            continue
        other = next((x for x in segs if x.index == s.index + 1), None)
        prior = next((x for x in segs if x.index == s.index - 1), None)
        if s.text.startswith("Answer:") and prior.dropped:
            assert (f"is an answer written in the numbered item of its question and goes only with that "
                    f"question ({prior.id}") in s.reasons[-1], s.reasons
        elif s.text.startswith("X.") and other.dropped:
            assert f"is a question and goes only with its answer ({other.id})" in s.reasons[-1], s.reasons
        elif s.text == EQUITY and other.dropped:
            assert (f"is the first sentence of a numbered clause and goes only with the later sentences of the "
                    f"clause that limit it ({other.id}") in s.reasons[-1], s.reasons
        elif s.text == AFTER and by[DEADLINE].dropped:
            assert (f"speaks of the sentence before it ('after that time') and goes only with it "
                    f"({by[DEADLINE].id})") in s.reasons[-1], s.reasons


def test_a_dropped_answer_names_the_question_it_goes_with(plan):
    for budget in (30, 60, 90):
        r = Compressor(plan, stages=CORE).compress(
            NOTICE, query="Will the municipality accept an invoice in PDF format?", budget=budget, annotate=False)
        segs = r.document.segments
        q6 = next(s for s in segs if s.text.startswith("X.6 Question:"))
        a6 = next(s for s in segs if s.index == q6.index + 1)
        assert q6.dropped == a6.dropped, r.text
        _reasons_name_the_tie(segs)
