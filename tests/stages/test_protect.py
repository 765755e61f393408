import pytest

from odcf.document import Document, Source
from odcf.stages.protect import Protector
from odcf.stages.segment import Segmenter


def protect(text, plan, **kw):
    doc = Document.from_sources([Source(id="a", text=text)])
    return Protector(**kw)(Segmenter()(doc, plan), plan)


def rules_of(seg):
    return {(sp.text, sp.rule) for sp in seg.protected}


def test_anchors_terms_connectives_markers(plan, contract_text):
    doc = protect(contract_text, plan)
    by_text = {s.text: s for s in doc.segments}
    # the cap and the sentence that limits it ("This cap does not apply …") are one segment
    money = by_text["Section 4.2 Liability. The Supplier's total liability shall not exceed $50,000 in any year. "
                    "This cap does not apply to gross negligence."]
    assert ("Section 4.2", "anchor:clause") in rules_of(money)
    r = rules_of(money)
    assert ("$50,000", "anchor:money") in r
    assert any(rule == "marker:shall" and t == money.text for t, rule in r)
    assert ("not exceed $50,000 in any", "connective:not") in r
    assert ("gross negligence", "term") in r
    despite = by_text["Despite a 15% drop in share price, the company reported strong earnings."]
    assert ("Despite a 15% drop in", "connective:despite") in rules_of(despite)
    assert ("15%", "anchor:percent") in rules_of(despite)
    # the trace says what was marked
    assert doc.trace[-1].stage == "protect" and doc.trace[-1].data["spans"]["anchor"] >= 4


def test_terms_respect_word_boundaries_and_case(plan):
    doc = protect("Force Majeure applies. Not-force majeured text. xgross negligencex.", plan)
    texts = [sp.text for s in doc.segments for sp in s.protected if sp.rule == "term"]
    assert texts == ["Force Majeure"]


def test_chinese_connectives_and_anchors(plan):
    doc = protect("乙方不得转让本合同，但是经甲方书面同意的除外。", plan)
    rules = {sp.rule for s in doc.segments for sp in s.protected}
    assert "connective:不得" in rules and "connective:但是" in rules


def test_spans_offsets_point_into_original(plan, contract_text):
    doc = protect(contract_text, plan)
    for s in doc.segments:
        for sp in s.protected:
            assert s.original[sp.start:sp.end] == sp.text


def test_switching_rules_off(plan, contract_text):
    doc = protect(contract_text, plan, terms=False, connectives=False, markers=False)
    rules = {sp.rule.split(":")[0] for s in doc.segments for sp in s.protected}
    assert rules == {"anchor"}


def test_an_anchor_that_backtracks_catastrophically_is_a_stage_error_not_a_hang(plan):
    import dataclasses

    import pytest

    from odcf.errors import StageError
    from odcf.plan.model import Anchor

    # a plan built without the loader (which would have refused the pattern)
    bad = dataclasses.replace(plan, protection=dataclasses.replace(
        plan.protection, anchors=plan.protection.anchors + (Anchor("redos", "(a+)+b"),)))
    with pytest.raises(StageError, match=r"anchor 'redos' ran past 0.2 s on a text of 59 characters .* backtracks"):
        protect("Ref 12345 is fine. " + "a" * 40, bad, anchor_seconds=0.2)
    assert protect("Ref 12345 is fine. aab", bad, anchor_seconds=0.2).segments[0].protected


def test_one_character_chinese_negations_do_not_match_inside_words_that_negate_nothing():
    from odcf.plan.protection import DEFAULT_CONNECTIVES
    from odcf.stages.protect import _connective_regex

    rx = _connective_regex(DEFAULT_CONNECTIVES)
    assert [m.group(0) for m in rx.finditer("没收违法所得，非常重要，未来三年，无线网络，不断增长")] == []
    assert [m.group(0) for m in rx.finditer("不得泄露，没有完成，非法使用，未经评估，无需批准")] == ["不得", "没有", "非", "未", "无需"]


def test_a_term_is_found_across_a_line_break_or_spaces_and_beside_a_letter_that_lowers_to_two(plan):
    # QA: "actual cash\nvalue" (a hard-wrapped line) and "Replacement  Cost" got no term span, and one
    # "İ" anywhere in a sentence (lower() makes it two characters) switched term matching off in it
    from dataclasses import replace

    plan = replace(plan, protection=replace(plan.protection, terms=(*plan.protection.terms, "actual cash value"),
                                            markers=("final sale",)))
    doc = protect("Claims are paid at actual cash\nvalue after depreciation, force  majeure aside.\n\n"
                  "İzmir office: gross Negligence is excluded.\n\nThe item was a final\nsale.", plan)
    terms = [sp.text for s in doc.segments for sp in s.protected if sp.rule == "term"]
    assert terms == ["actual cash\nvalue", "force  majeure", "gross Negligence"]
    assert any(sp.rule == "marker:final sale" for s in doc.segments for sp in s.protected)
    for s in doc.segments:
        for sp in s.protected:
            assert s.original[sp.start:sp.end] == sp.text


def test_the_verb_provided_and_no_for_number_are_not_connectives(plan):
    import dataclasses

    from odcf.plan.protection import DEFAULT_CONNECTIVES

    plan = dataclasses.replace(plan, protection=dataclasses.replace(plan.protection, connectives=DEFAULT_CONNECTIVES))
    # "provided" the verb (after an auxiliary or a subject, before a preposition or a colon) and "No."
    # before a number guard nothing; the condition "provided (that) …" and the negation "no" still do
    text = ("The data provided by the vendor was wrong. We provided the logs. As provided in Section 5, fees apply. "
            "Service provided: cleaning. See invoice No. 4471 and no.12 today. Use the provided list. "
            "No. of items: 5. "
            "Payment is due in 30 days provided the invoice is correct. "
            "Refunds are issued, provided that the goods are unused. No refunds are given after 14 days.")
    doc = protect(text, plan)
    found = sorted(sp.rule for seg in doc.segments for sp in seg.protected if sp.rule.startswith("connective:")
                   and sp.rule.split(":", 1)[1] in ("provided", "provided that", "no"))
    assert found == ["connective:no", "connective:provided", "connective:provided that"]


def test_an_anchor_that_runs_past_its_limit_is_an_ontology_error_naming_its_file_line_and_field(
        tmp_path, monkeypatch, capsys):
    # a pattern the load-time checks miss stops the run as an ontology error (exit 2) that says where it is
    import dataclasses

    import pytest

    from odcf.cli.main import main
    from odcf.errors import OntologyError, StageError
    from odcf.ontology import loader
    from odcf.plan.compiler import compile_file
    from odcf.rules.guard import ProtectionGuard

    path = tmp_path / "ev.yaml"
    path.write_text("odcf: 1\ndomain: d\nconcepts:\n  - name: refund\nprotect:\n  anchors:\n"
                    "    - {name: ref, pattern: 'Ref \\d+'}\n"
                    "    - {name: redos, pattern: '(a+)+b'}\npipeline:\n  protect: {anchor_seconds: 0.2}\n",
                    encoding="utf-8")
    monkeypatch.setattr(loader, "_backtracking_problem", lambda regex: None)  # as if the probe missed it
    monkeypatch.setattr(loader, "_BACKTRACKING", {})  # and no earlier test's verdict on the pattern is cached
    plan = compile_file(path)
    with pytest.raises(OntologyError) as info:
        protect("Ref 12345 is fine. " + "a" * 40, plan, anchor_seconds=0.2)
    assert isinstance(info.value, StageError) and info.value.exit_code == 2
    assert [str(p) for p in info.value.problems] == [
        f"{path}:8: protect.anchors[1].pattern: anchor 'redos' ran past 0.2 s on a text of 59 characters "
        "('Ref 12345 is fine. aaaaaaaaaaaaaaaaaaaaa'...): its pattern backtracks catastrophically; rewrite it "
        "(`odcf ontology check` probes patterns for the common cases of this)"]
    guard = dataclasses.replace(ProtectionGuard.from_plan(plan), seconds=0.2)
    with pytest.raises(OntologyError, match=r"ev.yaml:8: protect.anchors\[1\].pattern: anchor 'redos' ran past 0.2 s"):
        guard.holds_anchor("a" * 40)
    # the CLI says it in one error and exits 2, as for any ontology error
    doc = tmp_path / "doc.md"
    doc.write_text("Ref 12345 is fine. " + "a" * 40 + "\n", encoding="utf-8")
    assert main(["compress", str(doc), "--ontology", str(path), "--budget", "50"]) == 2
    assert f"{path}:8: protect.anchors[1].pattern: anchor 'redos' ran past 0.2 s" in capsys.readouterr().err


def test_provided_after_its_subject_with_no_verb_of_a_condition_is_the_verb_not_a_connective(plan):
    import dataclasses

    plan = dataclasses.replace(plan, protection=dataclasses.replace(
        plan.protection, connectives=plan.protection.connectives + ("provided", "provided that")))
    text = ("The insured provided receipts for several contents items. The adjuster then provided an estimate. "
            "Cover applies provided notice is given within 30 days. Payment is due in 30 days provided the invoice "
            "is correct. Provided the roof is sound, the claim is paid. Refunds are issued, provided that the goods "
            "are unused.")
    doc = protect(text, plan)
    found = sorted(sp.text for s in doc.segments for sp in s.protected if sp.rule.startswith("connective:provided"))
    assert found == ["Provided the roof is sound", "provided notice is given within",
                     "provided that the goods are unused", "provided the invoice is correct"], found


@pytest.mark.parametrize("sentence", [
    "The discount applies provided you order by Friday.",
    "You may cancel provided you give 30 days' written notice.",
    "Tenant may sublet provided Landlord consents in writing.",
    "We will refund provided the customer returns the goods within 14 days.",
    "Overtime is paid provided the manager approves it in advance.",
    "Access continues provided you keep your subscription current.",
    "The loan converts provided the borrower meets the covenants.",
    "Claims are covered provided they arise during the policy period.",
])
def test_provided_after_a_clause_of_its_own_is_the_condition_whatever_verb_follows(sentence):
    # the verb reading had asked only that no listed finite verb follow, and "you order", "you give",
    # "Landlord consents" were read as "The insured provided receipts": the condition lost its guard and
    # the token stage thinned it to "Access continues keep subscription current."
    from odcf.plan.protection import not_a_connective

    at = sentence.index("provided")
    assert not not_a_connective(sentence, at, at + len("provided"))


@pytest.mark.parametrize("sentence", [
    "The insured provided receipts for several contents items.",
    "The adjuster then provided an estimate.",
    "Our team provided support for 3 months.",
    "Acme Corp provided the logs on Monday.",
])
def test_provided_after_a_one_noun_subject_or_a_name_is_the_verb(sentence):
    from odcf.plan.protection import not_a_connective

    at = sentence.index("provided")
    assert not_a_connective(sentence, at, at + len("provided"))


def test_a_marker_pattern_is_built_once_not_once_per_segment(monkeypatch):
    import odcf.stages.protect as protect_module

    built: list[str] = []
    real = protect_module.phrase_regex
    monkeypatch.setattr(protect_module, "phrase_regex", lambda p: built.append(p) or real(p))
    protect_module._marker_regex.cache_clear() if hasattr(protect_module, "_marker_regex") else None
    texts = ["This agreement is strictly confidential.", "Nothing here.", "Confidentiality survives.",
             "It is CONFIDENTIAL"]
    found = [protect_module._find_marker(t, t.lower(), "Confidential") for t in texts]
    assert found == [True, False, False, True]  # a whole word: "Confidentiality" is not the marker
    assert built == ["confidential"]
