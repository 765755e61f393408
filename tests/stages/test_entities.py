import pytest

from odcf.document import Document, Source
from odcf.pipeline import Pipeline
from odcf.plan.model import Plan, ProtectionRules
from odcf.stages.entities import EntityGuard, _has_entity_cue
from odcf.stages.protect import Protector
from odcf.stages.segment import Segmenter

pytestmark = pytest.mark.slow  # spaCy-backed

CONNECTIVES = ("not", "never", "no", "despite", "because", "unless", "although", "if", "but", "except",
               "in spite of", "don't", "不得")


def run(texts, *, entities=("DATE", "MONEY", "PERCENT", "ORG"), connectives=CONNECTIVES, layer="fact",
        language="auto", **opts):
    plan = Plan(domain="t", language=language,
                protection=ProtectionRules(entities=tuple(entities), connectives=tuple(connectives)))
    doc = Document.from_sources([Source(id=f"s{i}", text=t, layer=layer) for i, t in enumerate(texts)])
    return Pipeline([Segmenter(), Protector(connectives=False), EntityGuard(**opts)]).run(doc, plan)


def spans(seg, prefix):
    return [(sp.text, sp.rule) for sp in seg.protected if sp.rule.startswith(prefix)]


def covered_words(seg, rule):
    return {w for sp in seg.protected if sp.rule == rule for w in sp.text.split()}


def test_despite_protects_the_drop_and_the_number():
    out = run(["Despite a 15% drop in share price, the company reported strong earnings."])
    seg = out.segments[0]
    words = covered_words(seg, "dep:despite")
    assert {"Despite", "drop"} <= words
    assert any("15%" in sp.text for sp in seg.protected if sp.rule == "dep:despite")
    assert ("15%", "entity:PERCENT") in spans(seg, "entity:")
    for sp in seg.protected:  # offsets point into the original
        assert seg.original[sp.start:sp.end] == sp.text


def test_negation_protects_negator_and_head():
    out = run(["The tenant shall not assign the lease.", "We never shipped the order.",
               "There is no refund for late cancellations.", "I don't approve the budget."])
    a, b, c, d = out.segments
    assert covered_words(a, "dep:not") == {"not", "assign"}
    assert covered_words(b, "dep:never") == {"never", "shipped"}
    assert covered_words(c, "dep:no") == {"no", "refund"}
    assert "don't" in covered_words(d, "dep:don't") and "approve" in covered_words(d, "dep:don't")


def test_subordinator_protects_marker_clause_head_and_subject():
    out = run(["The lease renews automatically unless the landlord objects in writing."])
    words = covered_words(out.segments[0], "dep:unless")
    assert {"unless", "landlord", "objects"} <= words
    assert "lease" not in words  # the main clause is not the subordinator's business


def test_multiword_and_prepositional_connectives():
    out = run(["In spite of the delay, the project finished on time.",
               "Payment is due within 30 days except for government customers."])
    assert {"In", "spite", "of", "delay"} <= covered_words(out.segments[0], "dep:in spite of")
    assert {"except", "for", "customers"} <= covered_words(out.segments[1], "dep:except")


def test_entities_only_for_the_plans_labels():
    out = run(["Acme Corp paid $5,000 on March 3, 2024 in Paris."], entities=("DATE",))
    labels = {r for _, r in spans(out.segments[0], "entity:")}
    assert labels == {"entity:DATE"}


def test_instruction_state_and_chinese_segments_are_skipped():
    out = run(["Do not reveal the price of $5."], layer="instruction")
    assert not spans(out.segments[0], "dep:") and not spans(out.segments[0], "entity:")
    out = run(["乙方不得在2024年3月前转让合同。"])
    assert not spans(out.segments[0], "dep:")
    ev = next(e for e in out.trace if e.stage == "entities")
    assert ev.data["skipped"]["language"] == 1
    assert ev.data["not_english"] == {"zh": [out.segments[0].id]}


@pytest.mark.parametrize("language", ["zh", "en", "auto"])
def test_each_segments_own_language_decides_whether_ner_runs(language):
    # a zh domain quotes an English invoice: its names need the English NER all the same
    out = run(["Buyer: Qingdao Haichuan Precision Machinery Co., Ltd. paid on March 4, 2024.",
               "乙方不得在2024年3月前转让合同。"], language=language)
    en, zh = out.segments
    assert any("Haichuan" in text for text, _ in spans(en, "entity:ORG"))
    assert spans(en, "entity:DATE")
    assert not spans(zh, "entity:") and not spans(zh, "dep:")
    ev = next(e for e in out.trace if e.stage == "entities")
    assert ev.data["skipped"] == {"language": 1} and ev.data["not_english"] == {"zh": [zh.id]}


def test_trace_counts_and_switches():
    out = run(["Despite the delay, Acme paid on May 1."], parse=False)
    seg = out.segments[0]
    assert not spans(seg, "dep:") and spans(seg, "entity:")
    ev = next(e for e in out.trace if e.stage == "entities")
    assert ev.data["ner_only"] == 1 and ev.data["parsed"] == 0


def test_prefilter_skips_segments_without_entity_cues():
    assert not _has_entity_cue("yeah i think so, that sounds good to me.")
    assert not _has_entity_cue("So we should look at it again.")
    assert _has_entity_cue("we talked to Susan about it.")
    assert _has_entity_cue("it costs 5 dollars")
    assert _has_entity_cue("the meeting is on monday")
    out = run(["yeah that sounds good to me.", "We talked to Acme about it."], connectives=())
    ev = next(e for e in out.trace if e.stage == "entities")
    assert ev.data["skipped"] == {"no_cue": 1} and ev.data["ner_only"] == 1


def test_same_input_same_spans():
    texts = ["Despite a 15% drop, Acme did not cut the dividend because profits rose in 2023."]
    assert run(texts).segments == run(texts).segments


def test_auto_scope_parses_only_the_budgets_best_segments():
    from odcf.stages.rank import LexicalRanker

    plan = Plan(domain="t", protection=ProtectionRules(entities=("DATE",), connectives=("not",)))
    texts = [f"Item {i} was not shipped on May {i % 28 + 1}." for i in range(40)]
    texts.append("The tenant did not pay the rent on May 3.")
    doc = Document.from_sources([Source(id=f"s{i}", text=t) for i, t in enumerate(texts)],
                                query="tenant rent", budget=30)
    stages = [Segmenter(), Protector(), LexicalRanker(), EntityGuard()]
    out = Pipeline(stages).run(doc, plan)
    ev = next(e for e in out.trace if e.stage == "entities")
    assert ev.data["parsed"] < 41 and ev.data["skipped"]["below_budget"] == 41 - ev.data["parsed"]
    best = max(out.segments, key=lambda s: s.score)
    assert best.source_id == "s40" and spans(best, "dep:not") and spans(best, "entity:DATE")
    everything = Pipeline(stages[:-1] + [EntityGuard(scope="all")]).run(doc, plan)
    assert next(e for e in everything.trace if e.stage == "entities").data["parsed"] == 41


def test_the_verb_provided_and_no_for_number_guard_nothing():
    connectives = (*CONNECTIVES, "provided", "provided that")
    out = run(["The data provided by the vendor was wrong.", "Soldiers are being provided insulated huts.",
               "See invoice No. 4471 for the amount.",
               "Payment is due in 30 days provided the invoice is correct.",
               "Refunds are issued, provided that the goods are unused."], connectives=connectives)
    verb, passive, number, condition, that = out.segments
    assert spans(verb, "dep:") == [] and spans(passive, "dep:") == [] and spans(number, "dep:") == []
    assert "provided" in covered_words(condition, "dep:provided")
    assert {"provided", "that"} <= covered_words(that, "dep:provided that")
