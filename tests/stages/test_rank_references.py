"""With no query, a numbered clause's own number is no fact, and a provision that another clause names by its
number ("the cap in Clause 8.1") ranks at least as that clause (QA: the liability cap went out while the
clauses pointing to it were delivered)."""
import re

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.pipeline import Pipeline
from odcf.plan.model import Plan, RerankQuery, RoleContract
from odcf.stages.protect import Protector
from odcf.stages.rank import LexicalRanker, fact_density, provision_references
from odcf.stages.rerank import EmbeddingReranker
from odcf.stages.segment import Segmenter

CONTRACT = """# Supply Agreement

The total contract value is EUR 2,400,000 (the "Contract Value").

## 5. Delay

5.1 If the Supplier delivers late, it shall pay liquidated damages of 1% of the order value per week of delay.

5.2 The total liquidated damages under Clause 5.1 shall not exceed 8% of the order value.

## 8. Limitation of Liability

8.1 Subject to Clause 8.3, each party's total aggregate liability arising out of or in connection with this Agreement, whether in contract, tort or otherwise, shall not exceed 20% of the Contract Value.

8.2 Neither party shall be liable for loss of profit, loss of revenue or any indirect or consequential loss.

8.3 The limitations in Clauses 8.1 and 8.2 do not apply to liability for death or personal injury caused by negligence, for fraud, or for wilful misconduct.

8.4 Liquidated damages paid under Clause 5 count towards the cap in Clause 8.1.

## 9. Confidentiality

9.1 Each party shall keep confidential all information disclosed by the other party and shall not disclose it without prior written consent.

9.2 The obligations in Clause 9.1 survive termination for 4 years.

## 10. Termination

10.1 The Buyer may terminate this Agreement for convenience on 90 days' written notice.

10.2 The Supplier may not terminate this Agreement for convenience.

10.3 Either party may terminate on 30 days' notice if Force Majeure lasts more than 60 days.
"""
PLAN = Plan(domain="t", queries=(RerankQuery("liability", "limits and caps on liability"),),
            roles={"default": RoleContract("default", 400)})


def segments(text):
    return Pipeline([Segmenter(), Protector()]).run(Document.from_sources([Source(id="c", text=text)]), PLAN).segments


def test_a_clause_number_opening_a_clause_is_no_fact():
    # "9.2" counted as a figure gave a short clause a fact in every eleven words (12.2 scored 0.91, QA)
    numbered, bare = (fact_density(s) for s in segments(
        "9.2 The obligations in Clause 9.1 survive termination for 4 years.\n\n"
        "The obligations in Clause 9.1 survive termination for 4 years."))
    assert numbered == bare
    heading, plain = (fact_density(s) for s in segments("## 10. Limitation of Liability\n\n## Limitation of Liability"))
    assert heading == plain
    # a figure opening a sentence is still one
    assert fact_density(segments("3.5 million people voted.")[0]) > 0


def test_provision_references_resolve_dotted_numbers_of_this_text_only():
    segs = [s for s in segments(CONTRACT + "\n11.1 Section 8.1 of the Act and the MSA's clause 9.1 do not apply.\n")]
    by_start = {s.text[:4]: s.id for s in segs if s.kind == "sentence"}
    refs = provision_references(segs)
    assert refs[by_start["8.4 "]] == [by_start["8.1 "]]  # "Clause 5" names a whole section: left out
    assert refs[by_start["8.3 "]] == [by_start["8.1 "], by_start["8.2 "]]
    assert refs[by_start["9.2 "]] == [by_start["9.1 "]]
    assert by_start["11.1"] not in refs  # another document's parts
    assert by_start["10.2"] not in refs


def test_no_query_a_named_provision_scores_at_least_as_the_clause_naming_it():
    stages = [Segmenter(), Protector(), LexicalRanker(), EmbeddingReranker(embedder="hash", first_pass="lexical")]
    out = Pipeline(stages).run(Document.from_sources([Source(id="c", text=CONTRACT)]), PLAN)
    score = {s.text[:4]: s for s in out.segments}
    assert score["8.1 "].score >= max(score["8.3 "].score, score["8.4 "].score)
    assert score["9.1 "].score >= score["9.2 "].score
    assert any("named by its number in" in r for r in score["8.1 "].reasons)  # the record says why
    assert "rank" in {e.stage for e in out.trace} and any(e.data.get("referenced_raised") for e in out.trace)
    # with a query the query steers: no lift
    asked = Pipeline(stages).run(Document.from_sources([Source(id="c", text=CONTRACT)], query="force majeure"), PLAN)
    assert not any("named by its number" in r for s in asked.segments for r in s.reasons)


def test_no_query_a_contract_delivers_the_liability_cap_with_the_clauses_that_point_to_it():
    r = Compressor.from_ontology("legal_contract").compress({"id": "c", "text": CONTRACT}, budget=220, timings=False)
    delivered = re.findall(r"(?m)^(\d+\.\d+) ", r.text)
    assert "8.4" in delivered and "8.1" in delivered  # "the cap in Clause 8.1" with the cap: 20% of the Contract Value
    assert "9.2" not in delivered or "9.1" in delivered
    reasons = {g["id"]: g.get("reason") or "" for s in r.record["sources"] for g in s["segments"]}
    assert any("named by its number in" in v for v in reasons.values())


INTERPRETED = """# Services Agreement

1.1 In this Agreement, capitalised terms have the meanings given in Schedule 1, the headings are for convenience only, words in the singular include the plural and vice versa, a reference to a person includes a body corporate, and a reference to a statute includes that statute as amended or re-enacted from time to time.

4.2 The Customer shall pay the Fees of EUR 96,000 per year within 30 days of the invoice date, as defined in Clause 1.1.

7.3 The Supplier's total liability under this Agreement shall not exceed EUR 250,000, terms as construed under Clause 1.1.

9.4 Either party may terminate this Agreement on 60 days' written notice, subject to the interpretation rules in Clause 1.1.

11.2 Notices shall be sent to the addresses in Schedule 3, read in accordance with Clause 1.1.
"""


def test_no_query_an_interpretation_clause_named_by_every_clause_is_not_lifted_over_them():
    # QA s33 AA F5: "1.1 In this Agreement, capitalised terms have the meanings …", named "as defined in Clause 1.1" by
    # four clauses, took the best of their scores and was all that was delivered at 1/2: fees and cap dropped
    segs = segments(INTERPRETED)
    assert provision_references(segs) == {}
    r = Compressor.from_ontology("legal_contract").compress({"id": "c", "text": INTERPRETED}, budget=95, timings=False)
    assert "EUR 96,000" in r.text and "EUR 250,000" in r.text, r.text
    assert "capitalised terms" not in r.text
    # a clause that depends on what another says still names it
    more = segments(INTERPRETED + "\n7.4 The cap in Clause 7.3 does not apply to fraud.\n")
    by_start = {s.text[:4]: s.id for s in more if s.kind == "sentence"}
    assert provision_references(more) == {by_start["7.4 "]: [by_start["7.3 "]]}
