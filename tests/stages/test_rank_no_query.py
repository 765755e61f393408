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
    # names weigh half a figure: Supplier, Nordwind, Logistics, GmbH, Acme, Retail, Ltd, EUR (0.5) and 48,500 (1)
    assert facts > 0.3 and generic == 0.0 and menu == 0.0  # a menu's capitals name nothing


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


PREAMBLE = """# Master Supply Agreement

THIS MASTER SUPPLY AGREEMENT is made between Northwind Trading Limited, a Company incorporated in England and Wales, and Contoso Holdings Incorporated, a Delaware Corporation (each a Party and together the Parties).

WHEREAS the Parties wish to set out the Terms and Conditions upon which Northwind Trading Limited will supply Goods to Contoso Holdings Incorporated; WHEREAS the Board of Directors of each Party has Approved this Agreement; NOW THEREFORE the Parties Agree as follows.

The supplier shall deliver the goods within 10 days of each order. The buyer shall pay each invoice within 30 days of receipt. A late payment bears interest at 2% per month.

The liability of either side is capped at the fees paid in the last 12 months. Either side may end the agreement on 90 days written notice.

IN WITNESS WHEREOF the Parties have Executed this Agreement by their Duly Authorised Representatives on the Date first Written Above. Signed for Northwind Trading Limited by John Smith, Director. Signed for Contoso Holdings Incorporated by Mary Jones, Chief Executive Officer.
"""
FIGURES = ("30 days of receipt", "2% per month", "last 12 months", "90 days written notice")


def test_no_query_a_contract_keeps_its_figures_not_its_title_cased_preamble():
    # the Parties / the Agreement recur through the text (defined terms), WHEREAS / IN WITNESS WHEREOF are
    # formula words in capitals, "Duly Authorised … Written Above" is Title Case: none is a fact
    out = run(PREAMBLE)
    for start in ("IN WITNESS WHEREOF",):
        assert score(out, start) < min(score(out, s) for s in ("The buyer", "A late payment", "The liability", "Either side"))
    r = Compressor.from_ontology("legal_contract").compress({"id": "msa", "text": PREAMBLE}, query=None, budget=87)
    assert all(f in r.text for f in FIGURES)
    assert "IN WITNESS WHEREOF" not in r.text and "THIS MASTER SUPPLY AGREEMENT" not in r.text
    assert "dropped" in {g["status"] for s in r.record["sources"] for g in s["segments"]}  # recorded, not cut silently


ARTICLE = """# Water Supply Report

The reservoir fell to 41% of capacity in August. Daily use rose from 180 to 245 litres per person. The utility will cut pressure by 15% from 1 October.

Two of the 6 pumping stations failed during the heat wave. Repairs cost 2.3 million and took 19 days.

Follow Us on Twitter, Facebook and LinkedIn. Privacy Policy. Terms of Use. Contact the Editorial Team at Global Water News.
"""


def test_no_query_a_title_case_footer_ranks_below_every_sentence_with_a_figure():
    from odcf.stages.rank import fact_density

    out = run(ARTICLE)
    footer = next(s for s in out.segments if s.text.startswith("Follow Us"))
    assert fact_density(footer) == 0.0
    assert score(out, "Follow Us") < min(score(out, s) for s in ("Daily use", "Two of the 6", "The reservoir"))
    r = Compressor.from_ontology("general").compress({"id": "a", "text": ARTICLE}, query=None, budget=70)
    assert "180 to 245" in r.text and "2.3 million" in r.text
