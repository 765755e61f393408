"""Property tests of the pipeline's invariants (core stages; model stages add their own)."""
from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from odcf.compressor import Compressor
from odcf.pipeline import protected_intact
from odcf.tokens import get_counter

WORDS = ["the", "supplier", "liability", "cap", "shall", "not", "exceed", "notice", "payment", "due",
         "despite", "unless", "party", "fees", "gross negligence", "force majeure", "term", "renewal",
         "Section 4.2", "$50,000", "15%", "Clause 7", "data", "weather", "Paris", "meeting"]

sentence = st.lists(st.sampled_from(WORDS), min_size=3, max_size=14).map(lambda ws: " ".join(ws).capitalize() + ".")
paragraph = st.lists(sentence, min_size=1, max_size=5).map(" ".join)
document = st.lists(paragraph, min_size=1, max_size=5).map("\n\n".join)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(text=document, budget=st.integers(min_value=15, max_value=200), query=st.sampled_from([None, "liability cap", "notice"]))
def test_budget_respected_and_protected_spans_survive(plan, text, budget, query):
    r = Compressor(plan).compress(text, budget=budget, query=query)
    counter = get_counter("o200k_base")
    assert r.tokens_out == counter.count(r.text)
    assert r.tokens_out <= budget or r.record["over_budget"]
    for seg in r.document.segments:
        if not seg.dropped:
            assert protected_intact(seg) == []
            assert seg.text in r.text
            for sp in seg.protected:
                assert sp.text in r.text


@SETTINGS
@given(text=document, budget=st.integers(min_value=15, max_value=200))
def test_deterministic(plan, text, budget):
    a = Compressor(plan).compress(text, budget=budget, query="liability")
    b = Compressor(plan).compress(text, budget=budget, query="liability")
    assert a.text == b.text
    strip = lambda rec: {k: v for k, v in rec.items() if k != "stages"}  # noqa: E731 - timings differ
    assert strip(a.record) == strip(b.record)


@SETTINGS
@given(text=document, budget=st.integers(min_value=15, max_value=200))
@example(text="The the the the. The the the the the section 4.2 section 4.2.\n\nThe the the the the. The the the the the "
              "section 4.2 section 4.2. The the the.", budget=36)  # s29: a repeat kept apart by its first sentence
@example(text="\n\n".join(["The the supplier liability section 4.2 section 4.2 supplier the the the the the section 4.2 "
                            "the. The the the the the section 4.2 section 4.2. The the supplier section 4.2 the the the "
                            "section 4.2 the."] * 2), budget=92)  # a paragraph again: found by this test, once
def test_compressing_twice_changes_nothing_more(plan, text, budget):
    c = Compressor(plan)
    once = c.compress(text, budget=budget, annotate=False)
    twice = c.compress(once.text, budget=budget, annotate=False)
    assert twice.text == once.text
