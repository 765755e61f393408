import pytest

from odcf.document import Document, Source, TraceEvent
from odcf.pipeline import Pipeline
from odcf.plan.model import Anchor, Plan, ProtectionRules
from odcf.stages.base import Stage
from odcf.stages.segment import Segmenter
from odcf.stages.verify import Verifier, fallback_entities

PLAN = Plan(domain="t", protection=ProtectionRules(
    anchors=(Anchor("clause", r"(?:Section|§)\s*\d+(?:\.\d+)*"),),
    terms=("force majeure",), entities=("DATE", "PERSON", "MONEY")))


class Cutter(Stage):
    """A lossy stage that deletes given substrings (no protection spans: verify must catch it)."""

    name = "cutter"
    requires = frozenset({"segments"})
    lossy = True

    def __init__(self, *cuts: str) -> None:
        self.cuts = cuts

    def __call__(self, doc, plan):
        segs = []
        for s in doc.segments:
            text = s.text
            for c in self.cuts:
                text = text.replace(c, "")
            segs.append(s.replace(text=text, status="compressed") if text != s.text else s)
        return doc.with_event(TraceEvent(stage=self.name), segments=tuple(segs))


def run(texts, cuts, *, plan=PLAN, **opts):
    doc = Document.from_sources([Source(id=f"s{i}", text=t) for i, t in enumerate(texts)])
    return Pipeline([Segmenter(), Cutter(*cuts), Verifier(**opts)]).run(doc, plan)


@pytest.mark.slow
def test_dropped_date_is_reverted_and_recorded():
    text = "The lease ends on March 3, 2026 and the tenant must leave quietly."
    out = run([text], [" on March 3, 2026", " quietly"])
    (seg,) = out.segments
    assert seg.status == "reverted" and seg.text == seg.original == text
    assert seg.reasons[-1] == "verify: lost entity 'March 3, 2026' (DATE); reverted"
    ev = next(e for e in out.trace if e.stage == "verify")
    assert ev.data["reverted"] == 1
    assert ev.data["reverts"][0]["entity"] == "March 3, 2026" and ev.data["reverts"][0]["label"] == "DATE"


@pytest.mark.slow
def test_harmless_compression_is_kept():
    text = "The lease ends on March 3, 2026 and the tenant must leave quietly."
    out = run([text], [" quietly"])
    (seg,) = out.segments
    assert seg.status == "compressed" and "quietly" not in seg.text


def test_anchor_term_and_number_losses_revert_without_spacy():
    out = run(["Under Section 4.2 the parties agree.", "A force majeure event excuses delay.",
               "Delivery takes 14 working days."],
              ["Section 4.2 ", "force majeure ", "14 "], ner=False)
    a, b, c = out.segments
    assert a.status == b.status == c.status == "reverted"
    assert "anchor:clause" in a.reasons[-1] and "'force majeure' (term)" in b.reasons[-1]
    assert "'14' (NUMBER)" in c.reasons[-1]


def test_a_number_before_a_comma_is_checked_and_named_without_the_comma():
    # QA: "verify: lost entity '32,' (NUMBER)" for "valve type HV-32, exclusive of VAT", "'74,'" for "(age 65-74,
    # hypertension": the comma that ends the clause was taken as part of the number
    price = "The price is EUR 318.00 for valve type HV-32, exclusive of VAT."
    age = "CHA2DS2-VASc score is 3 (age 65-74, hypertension)."
    assert fallback_entities(price) == [("318.00", "NUMBER"), ("32", "NUMBER")]
    assert fallback_entities(age) == [("3", "NUMBER"), ("65", "NUMBER"), ("74", "NUMBER")]
    assert fallback_entities("Pay $1,200, then 8,000.50, or 1,000,000 units.") == [
        ("$1,200", "MONEY"), ("8,000.50", "NUMBER"), ("1,000,000", "NUMBER")]  # a comma between digits stays
    a, b = run([price, age], ["HV-32", "-74"], ner=False).segments
    assert a.reasons[-1] == "verify: lost entity '32' (NUMBER); reverted"
    assert b.reasons[-1] == "verify: lost entity '74' (NUMBER); reverted"
    # and the check was held to the comma: "HV-32." kept the number, yet the segment was reverted
    (kept,) = run([price], [", exclusive of VAT"], ner=False).segments
    assert kept.status == "compressed" and kept.text == "The price is EUR 318.00 for valve type HV-32."


def test_chinese_uses_the_pattern_fallback():
    text = "合同于2024年3月1日生效，租金为5000元。"
    out = run([text], ["2024年3月1日"], ner=False)
    (seg,) = out.segments
    assert seg.status == "reverted" and "(DATE)" in seg.reasons[-1]
    assert ("5000元", "MONEY") in fallback_entities(text)


@pytest.mark.slow
def test_english_segments_of_a_zh_domain_get_the_ner_check():
    plan = Plan(domain="t", language="zh", protection=ProtectionRules(entities=("ORG",)))
    texts = ["The servo motors were made by Siam Servo Co., Ltd. in Chonburi.", "合同于2024年3月1日生效，租金为5000元。"]
    out = run(texts, ["Siam Servo Co., Ltd. ", "生效"], plan=plan)
    en, zh = out.segments
    assert en.status == "reverted" and "(ORG)" in en.reasons[-1]
    assert zh.status == "compressed"  # no number lost; the English model does not read it
    ev = next(e for e in out.trace if e.stage == "verify")
    assert ev.data["ner_checked"] == 1 and ev.data["patterns_only"] == 1
    assert ev.data["not_english"] == {"zh": [zh.id]}


def test_unchanged_and_folded_segments_are_not_checked():
    out = run(["Nothing changes in 2024."], [], ner=False)
    ev = next(e for e in out.trace if e.stage == "verify")
    assert ev.data["checked"] == 0


def test_auto_scope_runs_ner_on_the_budgets_best_segments_only():
    from odcf.stages.rank import LexicalRanker

    texts = [f"Shipment {i} left the depot on a rainy evening in the north." for i in range(30)]
    doc = Document.from_sources([Source(id=f"s{i}", text=t) for i, t in enumerate(texts)],
                                query="shipment 7", budget=20)
    out = Pipeline([Segmenter(), LexicalRanker(), Cutter(" rainy"), Verifier(ner=False)]).run(doc, PLAN)
    ev = next(e for e in out.trace if e.stage == "verify")
    assert ev.data["checked"] == 30 and ev.data["reverted"] == 0
    assert ev.data["ner_checked"] == 0 and ev.data["patterns_only"] == 30


@pytest.mark.slow
def test_auto_scope_limits_ner_but_patterns_still_check_everything():
    from odcf.stages.rank import LexicalRanker

    texts = [f"Shipment {i} left the depot on a rainy evening in the north." for i in range(30)]
    doc = Document.from_sources([Source(id=f"s{i}", text=t) for i, t in enumerate(texts)],
                                query="shipment 7", budget=20)
    out = Pipeline([Segmenter(), LexicalRanker(), Cutter(" rainy", "Shipment 2 "), Verifier()]).run(doc, PLAN)
    ev = next(e for e in out.trace if e.stage == "verify")
    assert 0 < ev.data["ner_checked"] < 30 and ev.data["patterns_only"] == 30 - ev.data["ner_checked"]
    assert [r["segment"] for r in ev.data["reverts"]] == ["s2#0"]  # the lost number, found by pattern


def test_a_term_written_over_a_line_break_or_after_a_two_character_lowercase_is_checked_where_it_is():
    # QA: "İzmir … actual cash value" reported "lost entity 'ctual cash value,'" (offsets of casefold()
    # applied to the original); a term over a line break was not checked at all
    from dataclasses import replace

    plan = replace(PLAN, protection=replace(PLAN.protection, terms=("actual cash value",)))
    out = run(["İzmir claims are paid at actual cash value, after depreciation.",
               "Claims are paid at actual cash\nvalue after depreciation."], ["actual ", "actual "], plan=plan, ner=False)
    a, b = out.segments
    assert a.status == b.status == "reverted"
    assert "'actual cash value' (term)" in a.reasons[-1] and "'actual cash\\nvalue' (term)" in b.reasons[-1]  # the reason quotes it as repr does


def test_a_lost_number_is_not_found_inside_a_longer_one_kept_beside_it():
    # "8" was found as the first digit of "80", so the compressed sentence passed as safe
    text = "The commit set the maximum pool size to 8 instead of 80."
    out = run([text], ["the maximum pool size to 8 "], ner=False)
    (seg,) = out.segments
    assert seg.status == "reverted" and seg.text == text
    assert seg.reasons[-1] == "verify: lost entity '8' (NUMBER); reverted"
    # nor inside a decimal or a thousands group; a number kept whole still passes, whatever follows it
    out = run(["Version 1.8 ships 8 fixes.", "It took 8,000 tries, not 8 alone.", "The 8th run and 80 more."],
              [" 8 fixes", "not 8 alone", " more"], ner=False)
    a, b, c = out.segments
    assert a.status == b.status == "reverted" and "'8' (NUMBER)" in a.reasons[-1] + b.reasons[-1]
    assert c.status == "compressed" and c.text == "The 8th run and 80."
    # nor in a time or a fraction (QA4: "8" was found in "8:30" and "3/8")
    out = run(["Start at 8:30 with 8 people.", "Fill 3/8 of the 8 tanks."], [" with 8 people", " the 8 tanks"], ner=False)
    assert [s.status for s in out.segments] == ["reverted", "reverted"], [s.text for s in out.segments]


def test_a_lost_single_word_term_is_reverted():
    # the term check compared against the folded original, so a one-word term was never missed
    plan = Plan(domain="t", protection=ProtectionRules(terms=("subrogation",)))
    out = run(["Subrogation rights pass to the insurer."], ["Subrogation "], plan=plan, ner=False)
    (seg,) = out.segments
    assert seg.status == "reverted" and seg.reasons[-1] == "verify: lost entity 'Subrogation' (term); reverted"
