"""With no caller query, segments that carry facts (amounts, dates, names) rank above generic text."""
import pytest

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.pipeline import Pipeline
from odcf.plan.model import Plan, RerankQuery, RoleContract
from odcf.stages import rank
from odcf.stages.protect import Protector
from odcf.stages.rank import LexicalRanker
from odcf.stages.rerank import EmbeddingReranker
from odcf.stages.segment import Segmenter

GENERIC = ("Each party shall act reasonably and shall use its best efforts to resolve any questions that may "
           "arise in the course of the cooperation under this agreement.")
FACTS = "The Supplier, Nordwind Logistics GmbH, will invoice Acme Retail Ltd EUR 48,500 per quarter."
CONTRACT = f"""Service Agreement

This Agreement sets out the general terms under which the parties intend to cooperate in good faith and in a spirit of mutual trust. The parties acknowledge that this document reflects their shared understanding and that they will work together constructively throughout its duration.

{FACTS}

{GENERIC}

The term runs from 1 March 2025 to 28 February 2027, and either party may terminate on 90 days' written notice to Jane Whitfield, Head of Procurement.

The parties further agree that communication should be open, timely and respectful, and that regular meetings may be held as the parties consider appropriate from time to time.

Liability of the Supplier is capped at EUR 250,000 per contract year, except for breaches of Clause 14 (Data Protection).
"""
PLAN = Plan(domain="t", queries=(RerankQuery("obligations", "obligations and duties of each party under the agreement"),),
            roles={"default": RoleContract("default", 400)})


def run(text, *, query=None):
    doc = Document.from_sources([Source(id="c", text=text)], query=query)
    stages = [Segmenter(), Protector(), LexicalRanker(), EmbeddingReranker(embedder="hash", first_pass="lexical")]
    return Pipeline(stages).run(doc, PLAN)


def score(doc, start):
    return next(s.score for s in doc.segments if s.text.startswith(start))


def test_fact_density_counts_names_numbers_and_handles_not_sentence_openers():
    from odcf.stages.rank import fact_density

    doc = Pipeline([Segmenter(), Protector()]).run(
        Document.from_sources([Source(id="a", text=f"{FACTS}\n\n{GENERIC}\n\nHome About Contact Careers Blog")]), PLAN)
    facts, generic, menu = (fact_density(s) for s in doc.segments)
    assert facts > 0.4 and generic == 0.0 and menu == 0.0  # a menu's capitals name nothing


def test_no_query_ranks_the_fact_dense_segment_above_the_generic_one():
    out = run(f"{GENERIC}\n\n{FACTS}")
    assert score(out, "The Supplier") > score(out, "Each party")


def test_no_query_delivers_amounts_dates_and_names_not_boilerplate():
    r = Compressor.from_ontology("general").compress({"id": "contract", "text": CONTRACT}, query=None, budget=130)
    assert "EUR 48,500" in r.text and "EUR 250,000" in r.text and "28 February 2027" in r.text
    assert "communication should be open" not in r.text and "best efforts" not in r.text


def test_with_a_query_fact_density_plays_no_part(monkeypatch):
    query = "what must each party do to resolve questions"
    before = [s.score for s in run(CONTRACT, query=query).segments]
    monkeypatch.setattr(rank, "fact_density", lambda seg: pytest.fail("fact_density used with a query"), raising=False)
    import odcf.stages.rerank as rerank
    monkeypatch.setattr(rerank, "fact_density", lambda seg: pytest.fail("fact_density used with a query"), raising=False)
    assert [s.score for s in run(CONTRACT, query=query).segments] == before
