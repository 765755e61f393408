import pytest

from odcf.compressor import Compressor
from odcf.errors import BudgetError, PlanError
from odcf.tokens import get_counter
from tests.stages.sweeps import only_with

CORE = {"rules": False, "fold": False}


def make(plan):
    return Compressor(plan, stages=CORE)


def test_query_ranks_relevant_sentence_first(plan, contract_text):
    r = make(plan).compress(contract_text, query="liability cap amount", budget=1000)
    segs = {s.text: s for s in r.document.segments}
    liability = next(s for t, s in segs.items() if "shall not exceed $50,000" in t)
    weather = next(s for t, s in segs.items() if "weather was nice" in t)
    assert liability.score > weather.score


def test_budget_respected_and_every_drop_recorded(plan, contract_text):
    counter = get_counter("o200k_base")
    for budget in (30, 45, 60, 80, 120):
        r = make(plan).compress(contract_text, query="liability", budget=budget)
        assert r.tokens_out == counter.count(r.text)
        assert r.tokens_out <= budget, (budget, r.text)
        for seg in r.document.segments:
            if seg.status == "dropped":
                assert seg.reasons and seg.reasons[-1].startswith("budget:")
        recorded = [g for s in r.record["sources"] for g in s["segments"]]
        assert len(recorded) == len(r.document.segments)


def test_instruction_first_never_dropped_and_reasoning_forbidden(plan, contract_text):
    r = make(plan).compress(
        [{"id": "task", "text": "Report the liability cap.", "layer": "instruction"},
         {"id": "msa", "text": contract_text, "origin": "msa.md"},
         {"id": "draft", "text": "This option is clearly better.", "layer": "reasoning"}],
        role="writer", budget=60)
    assert r.text.startswith("[source 1/3] task | instruction\nReport the liability cap.")
    assert "clearly better" not in r.text
    draft = next(s for s in r.record["sources"] if s["id"] == "draft")
    assert draft["status"] == "dropped"
    assert "forbidden for role writer" in draft["segments"][0]["reason"]


def test_optional_layers_trimmed_lowest_priority_first(plan):
    history = [{"id": f"h{i}", "text": f"User said item {i} about liability matters here.", "layer": "history"} for i in range(5)]
    facts = [{"id": "f", "text": "Liability is capped at $10,000. Termination needs 30 days notice."}]
    state = [{"id": "s", "text": '{"task_progress": "step_2_of_5"}', "layer": "state", "kind": "json"}]
    # planner: required instruction+state; optional fact, then history (trimmed first)
    r = make(plan).compress(facts + history + state, role="planner", budget=70)
    statuses = {s["id"]: s["status"] for s in r.record["sources"]}
    assert statuses["s"] == "verbatim"
    assert statuses["f"] == "verbatim"
    assert any(statuses[f"h{i}"] == "dropped" for i in range(5))
    assert r.tokens_out <= 70


def test_strict_fails_with_the_overshoot_and_lenient_marks_over_budget(plan):
    instruction = {"id": "i", "text": "Read every clause carefully and report each cap. " * 10, "layer": "instruction"}
    with pytest.raises(BudgetError, match=r"over by \d+"):
        make(plan).compress([instruction, "Some fact."], budget=20, strict=True)
    r = make(plan).compress([instruction, "Some fact."], budget=20)
    assert r.record["over_budget"] is True and r.record["over_by"] == r.tokens_out - 20
    assert any("over budget" in w for w in r.record["warnings"])


def test_unknown_role_is_a_clear_error(plan):
    with pytest.raises(PlanError, match="unknown role 'ghost'.*declared: planner, writer"):
        make(plan).compress("x", role="ghost")


def test_bytes_unit(plan, contract_text):
    r = make(plan).compress(contract_text, budget=200, tokenizer="bytes")
    assert len(r.text.encode("utf-8")) == r.tokens_out <= 200
    assert r.record["unit"] == "bytes"


def test_mandatory_source_kept_before_better_scored(plan):
    r = make(plan).compress(
        [{"id": "m", "text": "Weather notes: it rained on the site visit day.", "mandatory": True},
         {"id": "o", "text": "Liability cap is $1,000,000 for all claims."}],
        query="liability cap", budget=30)
    statuses = {s["id"]: s["status"] for s in r.record["sources"]}
    assert statuses["m"] == "verbatim"


def test_no_segment_left_out_for_room_would_have_fitted(plan, contract_text):
    # the fill estimates a separator token per segment that the tokenizer often merges away; the
    # exact refill must leave no segment out that fits in the room left
    from odcf.render import render

    counter = get_counter("o200k_base")
    full = make(plan).compress(contract_text, budget=100_000).tokens_out
    for budget in (40, 90, full - 12, full - 3, full):
        r = make(plan).compress(contract_text, query="liability", budget=budget)
        assert r.tokens_out <= budget
        doc = r.document
        left_out = [s for s in doc.segments if s.status == "dropped" and s.reasons[-1].startswith("budget: no room")]
        for seg in left_out:
            text, _ = render(doc, lambda s, seg=seg: not s.dropped or s.id == seg.id)
            assert counter.count(text) > budget, (budget, seg.text)
    assert make(plan).compress(contract_text, budget=full).text == make(plan).compress(contract_text, budget=100_000).text


def test_strict_fails_when_a_required_layer_gets_nothing(plan, contract_text):
    with pytest.raises(BudgetError, match=r"required layer 'fact': nothing fits in the budget of 3 o200k_base tokens"):
        make(plan).compress(contract_text, role="writer", budget=3, strict=True)
    r = make(plan).compress(contract_text, role="writer", budget=3)
    assert r.text == "" and "required layer 'fact': nothing fit in the budget" in r.record["warnings"]


def test_an_empty_delivery_says_so_and_what_the_smallest_segment_needs(plan, contract_text):
    r = make(plan).compress(contract_text, budget=3)
    assert r.text == ""
    (warning,) = [w for w in r.record["warnings"] if w.startswith("nothing fit")]
    need = int(warning.rsplit(" ", 1)[1].rstrip(")"))
    assert warning.startswith("nothing fit in the budget of 3 o200k_base tokens: the delivered text is empty")
    assert need > 3 and make(plan).compress(contract_text, budget=need).text != ""


ORPHAN = (
    "Section 9 Liability. Each party's liability shall not exceed $250,000 in any year.\n\n"
    "Section 14 Confidentiality. Employees must keep all customer data confidential at all times and under "
    "every circumstance described in the data handling annex, including backups, logs and archives kept by "
    "subcontractors. However, this obligation does not apply where a court orders disclosure.\n\n"
    "Section 15 Office. The cafeteria serves lunch on Wednesdays and the gym opens at 7am for staff of both parties.\n"
)


def test_a_sentence_that_points_back_never_goes_without_the_one_before_it(plan):
    counter = get_counter("o200k_base")
    seen_with = seen_without = 0
    for budget in range(30, 130, 6):
        r = make(plan).compress(ORPHAN, query="liability cap and court disclosure", budget=budget)
        assert r.tokens_out <= budget
        if "However, this obligation" in r.text:
            seen_with += 1
            assert "Employees must keep all customer data confidential" in r.text, (budget, r.text)
        else:
            seen_without += 1
            seg = next(s for s in r.document.segments if s.original.startswith("However"))
            assert seg.status == "dropped"
            if "Employees must keep" not in r.text:
                assert "opens with 'However' and goes only with the sentence before it" in seg.reasons[-1]
    assert seen_with and seen_without  # both sides of the rule were exercised
    assert counter.count(ORPHAN) > 60


def test_chinese_exception_goes_with_its_article(plan):
    text = ("第十二条 违反本办法规定的，处人民币500万元以下罚款。\n\n"
            "第二十条 工作人员对知悉的个人信息应当依法予以保密，不得泄露或者非法向他人提供、非法使用。"
            "但是，法律、行政法规另有规定的除外。\n")
    outcomes = set()
    for budget in range(20, 120, 5):
        r = make(plan).compress(text, query="罚款", budget=budget)
        assert "但是" not in r.text or "不得泄露" in r.text, (budget, r.text)
        outcomes.add(("但是" in r.text, "不得泄露" in r.text))
    assert (True, True) in outcomes and (False, False) in outcomes


def test_transcript_lines_are_not_paired_but_prose_is():
    from odcf.document import Document, Source
    from odcf.plan.model import Plan
    from odcf.stages.budget import _antecedents
    from odcf.stages.segment import Segmenter

    def pairs(text):
        doc = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t"))
        return {doc.segments[int(k.split("#")[1])].text: v for k, v in _antecedents(doc)[0].items()}

    speech = ("Alice: We will ship the release on May 1 as planned. But the tests must pass first, all of them.\n"
              "Bob: Fine with me, I will tell the team today.\nCarol: Agreed, see you all on Monday then.\n")
    assert pairs(speech) == {}
    prose = "We will ship the release on May 1 as planned. But the tests must pass first, all of them."
    assert list(pairs(prose)) == ["But the tests must pass first, all of them."]


def test_a_sentence_whose_predecessor_was_merged_into_a_duplicate_is_still_delivered(plan):
    a = "Payment is due within 30 days of the invoice date. However, late fees of 2% per month apply after that."
    b = "Payment is due within 30 days of the invoice date. However, the customer may dispute an invoice within 10 days."
    r = Compressor(plan, stages={"rules": False, "fold": False, "dedup": {"embedder": "hash"}}).compress(
        [{"id": "m1", "text": a}, {"id": "m2", "text": b}], budget=2000)
    assert "dispute an invoice within 10 days" in r.text and "late fees of 2%" in r.text
    assert r.text.count("Payment is due within 30 days") == 1


def test_openers_that_look_ahead_are_not_back_references():
    from odcf.textutil import back_reference

    ahead = ["Notwithstanding anything to the contrary in this Agreement, liability is capped.",
             "Instead of cash, pay by card.", "In addition to the fees in Section 4, VAT applies.",
             "In this case study we look at churn.", "Otherwise-unused capacity is released.", "但丁写了神曲。",
             "但凡有争议，提交仲裁。", "Yet another clause follows."]
    assert [back_reference(s) for s in ahead] == [None] * len(ahead)
    assert [back_reference(s) for s in ("Notwithstanding the foregoing, X.", "Instead, pay by card.",
                                        "In that case, the fee doubles.", "但是，除外。")] == [
        "Notwithstanding the foregoing", "Instead", "In that case", "但是"]


def test_a_section_goes_with_its_heading_and_a_heading_never_goes_alone(plan):
    from odcf.document import Document, Source
    from odcf.plan.model import Plan
    from odcf.stages.budget import _antecedents
    from odcf.stages.segment import Segmenter

    text = ("# Discharge summary\n\n## 3. Allergies\n\nHeparin caused thrombocytopenia in November. Never give heparin flushes to this patient.\n\n"
            "## 8. Instructions\n\nDo not drive for two weeks after the discharge. Walk for twenty minutes every day.\n\n### 8.1 Diet\n\nLow salt.\n\n"
            "Stack trace from pod api-7d9f at 14:29 UTC:\n\n```\nTraceback (most recent call last):\n  File a.py\n```\n")
    doc = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t"))
    by_text = {s.text: s.id for s in doc.segments}
    before, heads = _antecedents(doc)
    assert {doc.segments[int(k.split("#")[1])].text: doc.segments[int(v.split("#")[1])].text
            for k, v in before.items()} == {
        "## 3. Allergies": "# Discharge summary", "## 8. Instructions": "# Discharge summary",
        "Heparin caused thrombocytopenia in November.": "## 3. Allergies",
        "Never give heparin flushes to this patient.": "## 3. Allergies",
        "Do not drive for two weeks after the discharge.": "## 8. Instructions",
        "Walk for twenty minutes every day.": "## 8. Instructions",
        "### 8.1 Diet": "## 8. Instructions", "Low salt.": "### 8.1 Diet",
        "Stack trace from pod api-7d9f at 14:29 UTC:": "### 8.1 Diet",
        "```\nTraceback (most recent call last):\n  File a.py\n```": "Stack trace from pod api-7d9f at 14:29 UTC:"}
    assert heads == {by_text[t] for t in ("# Discharge summary", "## 3. Allergies", "## 8. Instructions",
                                          "### 8.1 Diet", "Stack trace from pod api-7d9f at 14:29 UTC:")}
    for budget in range(20, 90, 7):
        r = make(plan).compress(text, query="do not drive", budget=budget, annotate=False)
        lines = [ln for ln in r.text.split("\n") if ln.strip()]
        drive = [k for k, ln in enumerate(lines) if ln.startswith("Do not drive")]
        if drive:  # under its own heading, not under Allergies
            assert lines[drive[0] - 1] == "## 8. Instructions"
        # no heading is delivered without anything under it, nor the lead-in without its block
        for k, ln in enumerate(lines):
            if ln.startswith("#"):
                level = len(ln) - len(ln.lstrip("#"))
                nxt = lines[k + 1] if k + 1 < len(lines) else ""
                assert nxt and (not nxt.startswith("#") or len(nxt) - len(nxt.lstrip("#")) > level), r.text
        assert ("Stack trace from" in r.text) == ("Traceback" in r.text)
        for seg in r.document.segments:
            if seg.dropped and seg.kind == "heading":
                assert any("delivered only with a part of what it heads" in why or "no room" in why
                           for why in seg.reasons)
        assert r.record["budget"] == budget and r.tokens_out <= budget


def test_a_short_sentence_opening_with_a_pronoun_goes_only_with_the_sentence_before_it(plan):
    text = ("Warfarin 3 mg once daily was his anticoagulant before the admission, prescribed in 2019 by the "
            "anticoagulation clinic of the county hospital for atrial fibrillation. It has been stopped "
            "permanently. This must not be restarted.\n\nApixaban 5 mg twice daily is new. It must be continued.")
    seen = set()
    for budget in range(12, 90, 4):
        r = make(plan).compress(text, query="what was stopped and must not be restarted", budget=budget, annotate=False)
        seen.add(r.text)
        if "This must not be restarted." in r.text or "It has been stopped" in r.text:
            assert "Warfarin 3 mg" in r.text, r.text
        if "It must be continued." in r.text:
            assert "Apixaban 5 mg twice daily is new." in r.text
        dropped = [why for s in r.document.segments if s.dropped and s.text.startswith("This must not")
                   for why in s.reasons]
        assert all("goes only with the sentence before it" in why or "no room" in why for why in dropped)
    assert any("This must not be restarted." in t for t in seen) and any("It must be continued." in t for t in seen)


def test_a_long_sentence_whose_subject_is_it_goes_only_with_the_sentence_before_it(plan):
    # `make run` delivered "It renews automatically …" under "## Section 12" without the term it renews
    text = ("## Section 12 Term and Termination\n\nSection 12.1 Term. This Agreement starts on March 1, 2025 and "
            "runs for 36 months (the \"Initial Term\"). It renews automatically for successive 12-month periods "
            "unless either party gives at least 90 days' written notice of non-renewal.\n\nSection 12.2 "
            "Termination for cause. Either party may terminate this Agreement immediately if the other party "
            "commits a material breach that is not cured within 30 days of written notice.")
    seen = set()
    for budget in range(20, 120, 5):
        r = make(plan).compress(text, query="termination notice and renewal", budget=budget, annotate=False)
        seen.add(r.text)
        if "It renews automatically" in r.text:
            assert "This Agreement starts on March 1, 2025" in r.text, r.text
    assert any("It renews automatically" in t for t in seen)


def test_a_sentence_opening_with_he_or_she_goes_only_with_the_sentence_before_it_in_its_paragraph(plan):
    # QA round 3: "He promised to keep it until Friday." went out without "I left it with Señor Ortiz, at number
    # 14.", so nobody could tell who had the key
    text = ("The rain had not stopped for three days when Marta came back to the house on Calle Luna.\n\n"
            "Her brother asked about the key. She set her bag down by the door. I left it with Señor Ortiz, at number "
            "14, she said. He promised to keep it until Friday.\n\n"
            "He looked at her for a long time.\n\nOutside, the bells of San Telmo rang eleven times.")
    seen = set()
    for budget in range(10, 80, 3):
        r = make(plan).compress(text, query="who has the key until Friday", budget=budget, annotate=False)
        seen.add(r.text)
        if "He promised to keep it until Friday." in r.text:
            assert "Señor Ortiz" in r.text, (budget, r.text)
        why = [w for s in r.document.segments if s.dropped and s.text.startswith("He promised") for w in s.reasons]
        assert all("opens with 'He' and goes only with the sentence before it" in w or "no room" in w for w in why), why
        # a paragraph's "He …" is tied to nothing across the paragraph break
        (looked,) = [s for s in r.document.segments if s.text.startswith("He looked")]
        assert not any("sentence before it" in w for w in looked.reasons), looked.reasons
    assert any("He promised to keep it until Friday." in t for t in seen)


def test_a_she_after_a_she_goes_with_the_sentence_that_names_her_not_with_every_one_between(plan):
    # QA round 5: in a biography whose sentences all open with "She", the answer went only with every sentence
    # before it (55 tokens), so at half the document's size it was never delivered
    text = ("Marie Hartmann was born in Graz in 1931. She studied chemistry at the University of Vienna. She left in "
            "1953 without a degree. She worked for twelve years at a dye factory in Linz. She married the engineer "
            "Paul Weber in 1958. She had three children. She returned to university in 1966. She finished her "
            "doctorate on azo pigments in 1970. She joined the BASF laboratory in Ludwigshafen in 1972. She held 14 "
            "patents by 1985. She retired in 1991. She died in 2008 in Mannheim.")
    for budget in (35, 45, 60):
        r = make(plan).compress(text, query="When did she finish her doctorate?", budget=budget, annotate=False)
        assert "She finished her doctorate on azo pigments in 1970." in r.text, (budget, r.text)
        assert r.text.startswith("Marie Hartmann was born in Graz in 1931."), r.text
        if budget == 35:  # nothing of the chain between the two was needed
            assert "She returned to university" not in r.text and "She had three children" not in r.text, r.text


def test_a_later_part_of_a_sentence_cut_for_length_goes_only_with_its_first_part(plan):
    # QA: only the tail "… in which case the Company will pay up to $2,500,000" was delivered; the
    # part holding "shall not be liable" was not: an exclusion read as a promise to pay
    perils = ", ".join(f"peril category {k} as defined in Schedule {k}.{k + 1} of the declarations with a "
                       f"retention of ${1_000_000 + k * 500:,}" for k in range(1, 30))
    text = ("The Company shall not be liable for any loss or damage caused by any of the following: " + perils
            + " unless the insured has purchased Endorsement HO-208, in which case the Company will pay up to "
            "$2,500,000 for peril category 11.\n\nThe insured did not purchase Endorsement HO-208.")
    seen = set()
    for budget in range(60, 800, 40):
        r = make(plan).compress(text, query="does the company pay for peril category 11 losses", budget=budget,
                                annotate=False)
        parts = [s for s in r.document.segments if s.meta.get("cut_parts")]
        assert len(parts) >= 3 and parts[0].meta["cut_part"] == 0
        seen.add(r.text)
        if "will pay up to $2,500,000" in r.text:
            assert "The Company shall not be liable" in r.text, r.text
        if "The Company shall not be liable" in r.text and "will pay up to" not in r.text:
            assert "declarations with a retention of" in r.text and " …" in r.text  # the sentence goes on
        for s in parts[1:]:
            if s.dropped and parts[0].dropped:
                assert any("goes only with its first part" in why or "no room" in why for why in s.reasons)
    assert any("will pay up to $2,500,000" in t for t in seen)
    assert any(" … " in t for t in seen)  # the first and the last part, a middle one left out


def test_a_lead_in_whose_block_was_merged_into_a_copy_may_go_alone():
    from odcf.document import Document, Source
    from odcf.plan.model import Plan
    from odcf.stages.budget import _antecedents
    from odcf.stages.segment import Segmenter

    text = "I will change reservation VA5SGQ to these flights:\n\n- HAT169 on May 17\n- HAT212 on May 20\n- HAT300 on May 21\n"
    doc = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t"))
    lead = doc.segments[0].id
    assert lead in _antecedents(doc)[1]
    merged = doc.replace(segments=tuple(s.replace(status="merged") if s.kind == "list" else s for s in doc.segments))
    assert lead not in _antecedents(merged)[1]


def test_a_bare_label_whose_block_was_merged_into_a_copy_is_not_delivered_alone():
    # QA s34 L2: a step's error output, the same as the step before's, was merged into it (dedup), and
    # "Observation:" went out with nothing under it, read as an empty output
    import re

    from odcf.document import Source

    output = ("```\nYour proposed edit has introduced new syntax error(s). Please understand the fixes and retry "
              "your edit command.\n\nERRORS:\n- E999 SyntaxError: unmatched ')'\n\nThis is how your edit would have "
              "looked if applied\n[File: /repo/pydicom/pixel_data_handlers/numpy_handler.py (374 lines total)]\n"
              "287:    required_elements = ['BitsAllocated', 'Rows', 'Columns']\n288:    if 'PixelData' in ds:\n"
              "289:        required_elements.append('PixelRepresentation')\n290:        )\n```")
    text = ("## Step 7\n\nThought: I will add the PixelRepresentation check to the required elements.\n\n"
            "Action:\n```\nedit 287:290\n```\n\nObservation:\n" + output + "\n\n"
            "## Step 8\n\nThought: It appears there was another syntax error due to an unmatched parenthesis.\n\n"
            "Action:\n```\nedit 287:291\n```\n\nObservation:\n" + output + "\n\n"
            "## Step 9\n\nThought: The edit is applied now and the reproduction prints Result: True.\n")
    c = Compressor.from_ontology("agent_ops")
    said = 0
    for query in (None, "which error is raised"):
        for budget in range(160, 320, 20):
            r = c.compress([Source(id="t.md", text=text, kind="markdown")], query=query, role="reviewer",
                           budget=budget, timings=False)
            assert not re.search(r"^Observation:\n(?:\n(?!```)|\Z)", r.text, re.MULTILINE), (budget, r.text)
            labels = [s for s in r.record["sources"][0]["segments"] if s["index"] == 12]
            if labels[0]["status"] == "dropped" and "merged into copies" in labels[0]["reason"]:
                said += 1  # the record says what became of what it heads
    assert said


def test_an_item_of_a_loose_list_goes_only_with_the_line_that_introduces_the_list(plan):
    # QA: "3. Drop the replication slot" was delivered without "Never do any of the following …:"
    loose = ("Never do any of the following on the production cluster:\n\n1. Run `VACUUM FULL` on the orders "
             "table.\n\n2. Restart pg-primary-03 during business hours.\n\n3. Drop the replication slot "
             "`slot_orders_cdc`.\n\n4. Change `max_connections` without a change ticket.\n\n"
             "Maintenance windows are on Sundays.")
    long_items = ("The insurer will not pay for any of the following:\n\n" + "\n".join(
        f"- Loss or damage of kind {k} caused by water escaping from a fixed installation while the building is "
        f"unoccupied for more than {k}0 consecutive days. We will pay where the insured drained the system."
        for k in range(1, 5)) + "\n\nCondition 4 Notice of loss. The insured must tell us within 30 days.")
    for text, lead, query in ((loose, "Never do any of the following", "can I drop the replication slot"),
                              (long_items, "The insurer will not pay", "is water escaping while unoccupied paid")):
        seen = False
        for budget in range(15, 120, 5):
            r = make(plan).compress(text, query=query, budget=budget, annotate=False)
            items = [ln for ln in r.text.split("\n") if ln[:2] in ("1.", "2.", "3.", "4.", "- ")]
            if items:
                seen = True
                assert lead in r.text, r.text
        assert seen


def test_a_clause_title_alone_is_never_delivered_without_its_clause(plan):
    text = ("Section 9.3 Force majeure. Neither party is liable for delays caused by events beyond its "
            "reasonable control, such as floods or strikes.\n\n"
            "Section 4.1 Fees. Customer shall pay the fees set out in Schedule B within 30 days of the invoice.")
    seen = set()
    for budget in range(8, 90, 4):
        r = make(plan).compress(text, query="force majeure", budget=budget, annotate=False)
        lines = [ln.strip() for ln in r.text.split("\n") if ln.strip()]
        assert "Section 9.3 Force majeure." not in lines, r.text  # a title alone promises a clause not there
        seen.add("Neither party is liable" in r.text)
        for seg in r.document.segments:
            if seg.dropped and seg.text == "Section 9.3 Force majeure.":
                assert ("a clause title is delivered only with a part of what it heads" in seg.reasons[-1]
                        or "no room" in seg.reasons[-1])
    assert seen == {True, False}


@pytest.mark.parametrize("title, body, query", [
    ("Exclusion 3.1 Wear and tear.", "Loss caused by wear and tear is excluded, unless the loss results in a "
     "sudden and accidental discharge.", "is wear and tear covered"),
    ("第7条 免责条款。", "因洪水、地震导致的损失，保险人不承担赔偿责任。", "免责条款"),
    ("12.2 Termination for cause.", ("Either party may terminate this Agreement if the other party commits a "
                                     "material breach that is not cured within 30 days."), "termination for cause"),
    # QA: "25.3 No fiduciary duties." and "18.6 Pari passu ranking." (its clause opening "Its …") went alone
    ("25.3 No fiduciary duties.", "Nothing in this Agreement constitutes the Agent as a trustee or fiduciary "
     "of any other person.", "is the agent a fiduciary"),
    ("18.6 Pari passu ranking.", "Its payment obligations under the Finance Documents rank at least pari passu "
     "with the claims of all its other unsecured creditors.", "pari passu ranking"),
])
def test_clause_titles_other_than_section_and_in_chinese_go_only_with_their_clause(plan, title, body, query):
    # QA: "第7条 免责条款。" and "第8条 赔付时限。" were the whole delivery at a tight budget
    text = f"{title}{' ' if title.isascii() else ''}{body}\n\nClause 9 Subrogation. The insurer may pursue recovery."
    for budget in range(6, 70, 3):
        r = make(plan).compress(text, query=query, budget=budget, annotate=False)
        lines = [ln.strip() for ln in r.text.split("\n") if ln.strip()]
        assert title not in lines, r.text


THREAD = ("## Correspondence\n\n"
          "From: Lina Park (HR)\nTo: Sam Ortega\nDate: 3 June 2024\n\n"
          "Sam, your request to carry over 20 days of PTO is denied. Policy HR-310 caps carry-over at 5 days.\n\n"
          "> On 31 May 2024 Raj Menon (Manager) wrote:\n"
          "> Sam, don't worry about the cap. I approve the carry-over of all 20 days. HR\n"
          "> will process it.\n>\n"
          "> > On 30 May 2024 Sam Ortega wrote:\n> > Can I carry over all 20 days?\n"
          "> Thanks, Raj\n\n"
          "-----Original Message-----\nFrom: Raj Menon (Manager)\nSent: 29 May 2024 09:02\nTo: Sam Ortega\n\n"
          "Sam, you get 20 weeks of parental leave, don't worry. Also you can carry over all your PTO.\n")


def test_a_quote_goes_with_its_attribution_and_an_email_body_with_its_header():
    from odcf.document import Document, Source
    from odcf.plan.model import Plan
    from odcf.stages.budget import _antecedents
    from odcf.stages.segment import Segmenter

    doc = Segmenter()(Document.from_sources([Source(id="a", text=THREAD)]), Plan(domain="t"))
    text = {s.id: s.text for s in doc.segments}
    before, heads = _antecedents(doc)
    assert [(text[s.id], text.get(before.get(s.id))) for s in doc.segments] == [
        ("## Correspondence", None),
        ("From: Lina Park (HR)", "## Correspondence"),
        # a header line other than From goes only with a part of the body (the best-scored)
        ("To: Sam Ortega", "Sam, your request to carry over 20 days of PTO is denied."),
        ("Date: 3 June 2024", "Sam, your request to carry over 20 days of PTO is denied."),
        ("Sam, your request to carry over 20 days of PTO is denied.", "From: Lina Park (HR)"),
        ("Policy HR-310 caps carry-over at 5 days.", "From: Lina Park (HR)"),
        ("> On 31 May 2024 Raj Menon (Manager) wrote:", "From: Lina Park (HR)"),
        ("> Sam, don't worry about the cap. I approve the carry-over of all 20 days. HR\n> will process it.",
         "> On 31 May 2024 Raj Menon (Manager) wrote:"),
        ("> > On 30 May 2024 Sam Ortega wrote:", "> On 31 May 2024 Raj Menon (Manager) wrote:"),
        ("> > Can I carry over all 20 days?", "> > On 30 May 2024 Sam Ortega wrote:"),
        ("> Thanks, Raj", "> On 31 May 2024 Raj Menon (Manager) wrote:"),
        ("-----Original Message-----", "Sam, you get 20 weeks of parental leave, don't worry."),
        ("From: Raj Menon (Manager)", "## Correspondence"),
        ("Sent: 29 May 2024 09:02", "Sam, you get 20 weeks of parental leave, don't worry."),
        ("To: Sam Ortega", "Sam, you get 20 weeks of parental leave, don't worry."),
        ("Sam, you get 20 weeks of parental leave, don't worry.", "From: Raj Menon (Manager)"),
        ("Also you can carry over all your PTO.", "From: Raj Menon (Manager)")]
    assert {text[i] for i in heads} == {
        "## Correspondence", "From: Lina Park (HR)", "From: Raj Menon (Manager)",
        "> On 31 May 2024 Raj Menon (Manager) wrote:", "> > On 30 May 2024 Sam Ortega wrote:"}


def test_the_newest_message_of_a_thread_is_not_crowded_out_by_the_header_lines_of_an_older_one(plan):
    # QA: with From, Sent and Subject required for every body, the older "I approve" was delivered and
    # the newer "I do NOT approve", which overrules it, no longer fitted
    thread = ("From: Lina Park <lina.park@acme-ins.com>\nSent: Monday, June 3, 2024 10:14 AM\n"
              "To: Raj Menon <raj.menon@acme-ins.com>\nCc: Claims Desk <claims@acme-ins.com>\n"
              "Subject: RE: Claim CLM-2024-0587 water damage\n\nRaj,\n\nI do NOT approve the carry-over of the "
              "deductible for CLM-2024-0587. Please reject the supplemental invoice of $14,250.00.\n\n"
              "-----Original Message-----\nFrom: Raj Menon <raj.menon@acme-ins.com>\n"
              "Sent: Friday, May 31, 2024 4:52 PM\nTo: Lina Park <lina.park@acme-ins.com>\n"
              "Subject: Claim CLM-2024-0587 water damage\n\nLina, the contractor sent a supplemental invoice of "
              "$14,250.00 for CLM-2024-0587. I approve the carry-over of the deductible unless you object.\n")
    for budget in (90, 100, 120):
        r = make(plan).compress(thread, query="Was the supplemental invoice for CLM-2024-0587 approved?",
                                budget=budget, annotate=False)
        assert "I do NOT approve" in r.text and "From: Lina Park" in r.text, r.text
    # a reporting period is not an email's header
    report = "Reporting period\nFrom: 1 June 2024\nTo: 30 June 2024\n\nThe loss ratio rose to 71%, above the 65% target."
    r = make(plan).compress(report, query="what was the loss ratio", budget=200, annotate=False)
    assert all("mail_field" not in s.meta for s in r.document.segments)


def test_a_quoted_reply_keeps_its_markers_and_attribution_and_a_message_its_sender(plan):
    quoted = [ln for ln in THREAD.split("\n") if ln.startswith(">")]
    seen = set()
    for budget in range(20, 200, 6):
        r = make(plan).compress(THREAD, query="was the PTO carry-over approved", budget=budget, annotate=False)
        assert r.tokens_out <= budget
        lines = r.text.split("\n")
        for k, ln in enumerate(lines):
            # a line of a quote is delivered whole, marker and all, under its attribution
            assert not ln or ln in quoted or not any(ln in q for q in quoted), r.text
            if ln.startswith("> > ") and "wrote:" not in ln:
                assert "> > On 30 May 2024 Sam Ortega wrote:" in lines[:k], r.text
            elif ln.startswith("> ") and "wrote:" not in ln:
                assert "> On 31 May 2024 Raj Menon (Manager) wrote:" in lines[:k], r.text
            # a message's body goes with its sender: the nearest From line above is its own
            if ln and not ln.startswith(("#", "From:", "To:", "Date:", "Sent:", "-----")):
                sender = [x for x in lines[:k] if x.startswith("From:")]
                own = "From: Raj Menon (Manager)" if "20 weeks" in ln or "all your PTO" in ln else "From: Lina Park (HR)"
                assert sender and sender[-1] == own, r.text
        # no header line is delivered without a part of its message's body, and "To:" is not a speaker
        bodies = [ln for ln in lines if ln and not ln.startswith(("#", "From:", "To:", "Date:", "Sent:", "-----"))]
        assert bodies or not r.text.strip(), r.text
        for seg in r.document.segments:
            if seg.dropped and seg.meta.get("mail_field") == "from":
                assert ("an email's header line is delivered only with a part of what it heads" in seg.reasons[-1]
                        or "no room" in seg.reasons[-1]), seg.reasons
            if seg.dropped and seg.meta.get("quote_head"):
                assert ("a quote's attribution line is delivered only with a part of what it heads" in seg.reasons[-1]
                        or "no room" in seg.reasons[-1]), seg.reasons
            if seg.dropped and seg.meta.get("mail_field") in ("to", "date", "sent", "separator"):
                assert ("header and goes only with a part of its body" in seg.reasons[-1]
                        or "no room" in seg.reasons[-1]), seg.reasons
        seen.add(("is denied" in r.text, "I approve" in r.text, "you get 20 weeks" in r.text))
    # HR's denial alone under its sender, and later the quoted approval and the manager's message too
    assert (True, False, False) in seen and (True, True, True) in seen


def test_the_one_block_of_a_long_log_that_answers_the_query_is_delivered(plan):
    # QA: 3,000 log lines all naming the host; the static first pass and the lift left the PANIC block 21st
    import datetime

    t0 = datetime.datetime(2024, 5, 15, 10, 0, 0)
    lines = [f"{(t0 + datetime.timedelta(seconds=i)):%Y-%m-%d %H:%M:%S} INFO worker: request {i} handled "
             "host=pg-primary-03" for i in range(3000)]
    lines[2250] = "2024-05-15 10:37:02 FATAL worker: PANIC: No space left on device host=pg-primary-03"
    r = make(plan).compress("\n".join(lines), query="did pg-primary-03 PANIC", budget=1000)
    assert "PANIC: No space left on device" in r.text


RELATED = (
    "## 5. Related-party transactions\n\n"
    "During the quarter the Group purchased £2.3m of industrial gases from Arkwright Gas Ltd, a company in which "
    "Ms Helena Voss, a non-executive director, holds 34% of the shares. The purchases were on arm's length terms "
    "and approved by the Audit Committee on 22 July 2025. There were no other related-party transactions in the "
    "quarter other than remuneration of key management personnel.\n\n"
    "## 6. Outlook\n\nThe board expects revenue for the full year to be in line with its expectations and "
    "margins to recover in the fourth quarter as the Leeds restructuring completes.\n"
)


def test_no_other_and_a_definite_noun_go_with_what_they_speak_of(plan):
    """"There were no other related-party transactions" alone says the opposite of the source;
    "The purchases were …" alone speaks of purchases nobody named."""
    seen_with = seen_without = 0
    for budget in range(20, 140, 6):
        r = make(plan).compress(RELATED, query="related-party transactions", budget=budget)
        if "no other related-party" in r.text:
            seen_with += 1
            assert "The purchases were" in r.text and "purchased £2.3m" in r.text, (budget, r.text)
        else:
            seen_without += 1
            seg = next(s for s in r.document.segments if s.original.startswith("There were no other"))
            if seg.status == "dropped" and "The purchases were" not in r.text:
                assert "speaks of the sentence before it ('no other')" in seg.reasons[-1], seg.reasons
        if "The purchases were" in r.text:
            assert "purchased £2.3m" in r.text, (budget, r.text)
    assert seen_with and seen_without


def test_a_sentence_that_points_to_the_list_below_goes_only_with_it(plan):
    text = ("## 4. Mandatory requirements\n\n"
            "4.1 The following requirements are mandatory. A tender that fails any of them will be rejected.\n\n"
            + "\n".join(f"- M-{k:02d} The tenderer must hold certificate {k} for the site proposed, "
                        "issued by an accredited body." for k in range(1, 13)) + "\n\n"
            "## 5. Award\n\nThe contract will be awarded to the most economically advantageous tender. "
            "Data shall be hosted within the United Kingdom or the European Economic Area.\n")
    outcomes = set()
    for budget in range(15, 160, 8):
        r = make(plan).compress(text, query="where must data be hosted", budget=budget)
        has_lead = "The following requirements are mandatory." in r.text
        has_item = "- M-" in r.text
        assert not has_lead or has_item, (budget, r.text)  # never the promise of a list without any of it
        outcomes.add((has_lead, has_item))
    assert (False, False) in outcomes and (True, True) in outcomes


TICKET_THREAD = (
    "# Ticket SUP-1 thread\n\n"
    "**From:** Marcus Hale (customer)\n**Date:** 2025-05-06 09:22 UTC\n\n"
    "Yes, we send the Idempotency-Key header on every POST.\n\n---\n\n"
    "**Internal note — Tomasz Wójcik (SRE), 2025-05-06 09:48 UTC**\n\n"
    "The real cause is the tokenizer connect timeout, cut from 5000 ms to 2000 ms in release 4.12.0.\n\n"
    "We must not roll back 4.12.0 because it contains the CVE-2025-31877 fix.\n\n---\n\n"
    "From: Priya Raman (support)\nDate: 2025-05-06 10:35 UTC\n\nWe are deploying hotfix 4.12.1 today.\n"
)


def test_a_message_ends_at_a_rule_and_a_bold_title_heads_what_follows(plan):
    """The SRE's sentence must never read as the customer's: the message of "**From:** Marcus Hale"
    ends at the horizontal rule, and the bold note title heads the sentences under it."""
    seen = 0
    for budget in range(40, 160, 8):
        r = make(plan).compress(TICKET_THREAD, query="can we roll back 4.12.0?", budget=budget)
        if "We must not roll back" in r.text:
            seen += 1
            assert "**Internal note — Tomasz Wójcik (SRE)" in r.text, (budget, r.text)
            before = r.text.split("We must not roll back")[0]
            assert "Tomasz" in before.split("Marcus Hale")[-1], (budget, r.text)  # the nearest name above is his
        if "Idempotency-Key" in r.text:
            assert "**From:** Marcus Hale" in r.text, (budget, r.text)  # a bold header field is a mail header
    assert seen
    segs = {s.original: s for s in make(plan).compress(TICKET_THREAD, budget=1000).document.segments}
    assert segs["**From:** Marcus Hale (customer)"].meta.get("mail_field") == "from"


NOTES_THREAD = (
    "**Internal note — Jonas Berg, 14 Jul 2025 09:30**\n"
    "Refund of PSP 8825117418 needs Tier 3 approval because the amount is above NOK 10,000.\n"
    "Requested approval from Maria Lund (Tier 3) at 09:28.\n\n"
    "**Internal note — Maria Lund (Tier 3), 14 Jul 2025 10:05**\n"
    "Approved refund of NOK 14,388.00 for PSP 8825117418 to the original payment method.\n"
    "Do not apply the standard 2% goodwill credit here.\n\n"
    "**Internal note — Jonas Berg, 14 Jul 2025 10:20**\n"
    "Correction to my 09:30 note: the incident number is INC-5527, not INC-5521.\n"
    "Refund submitted at 10:18, refund ref RF-2025-07-30991.\n"
)


def test_a_bold_title_with_text_right_under_it_heads_that_text(plan):
    # QA: with no blank line under it, the title was read as the start of the first sentence, dropped
    # with it, and "Refund submitted at 10:18" was delivered right under Maria Lund's note
    seen = 0
    for budget in range(30, 130, 6):
        r = make(plan).compress(NOTES_THREAD, query="refund ref and when it was submitted", budget=budget)
        if "Refund submitted at 10:18" in r.text:
            seen += 1
            before = r.text.split("Refund submitted at 10:18")[0]
            assert before.rstrip().endswith(("**Internal note — Jonas Berg, 14 Jul 2025 10:20**", "not INC-5521.")), (
                budget, r.text)
            assert "Jonas Berg, 14 Jul 2025 10:20" in before.split("Maria Lund (Tier 3), 14 Jul")[-1], (budget, r.text)
    assert seen
    segs = make(plan).compress(NOTES_THREAD, budget=1000).document.segments
    assert [s.original for s in segs if s.original.startswith("**")] == [
        line for line in NOTES_THREAD.split("\n") if line.startswith("**")]


def test_a_bold_warning_is_a_statement_not_a_title_and_no_other_goes_with_the_list_before_it(plan):
    text = ("## Paracetamol dosing for adults\n\nParacetamol is the first-line analgesic on this ward for mild "
            "to moderate pain in adults.\n\n**Never exceed 4 g of paracetamol in any 24-hour period.**\n\n"
            "Record each dose given on the medication chart with the time.\n\n## Ibuprofen\n\nTake it with food.\n")
    r = make(plan).compress(text, query="maximum daily dose of paracetamol", budget=45)
    assert "**Never exceed 4 g of paracetamol in any 24-hour period.**" in r.text, r.text
    items = "\n".join(f"({chr(97 + k)}) loss arising from event number {k} of the schedule;" for k in range(12))
    text = "The Supplier shall not be liable for:\n\n" + items + "\n\nNo other exclusions apply.\n"
    for budget in range(20, 200, 10):
        r = make(plan).compress(text, query="which exclusions apply", budget=budget)
        if "No other exclusions apply." in r.text:
            assert "(l) loss arising" in r.text, (budget, r.text)  # never "no other" without the list it closes


AMENDMENT = (
    "## 2. Amendments to Clause 5 (Fees)\n\n"
    "2.1 Clause 5.1 of the Agreement is deleted and replaced by the following:\n\n"
    "> \"5.1 The Customer shall pay a monthly service fee of USD 84,500 for the Services, invoiced monthly in "
    "arrears, from the service month of March 2024.\"\n\n"
    "2.2 For the avoidance of doubt, the monthly service fee of USD 71,200 set out in Clause 5.1 as amended by "
    "Amendment No. 2 applies to invoices for service months ending on or before 29 February 2024.\n\n"
    "5.3 A new Clause 12.4 is inserted:\n\n"
    "12.4 The limitation in Clause 12.2 shall not apply to the Supplier's indemnity under Clause 16.\n\n"
    "## 6. Board resolutions\n\n"
    "**Resolution 2024/16:** IT WAS RESOLVED that the Glenmoriston project be approved at a capital "
    "expenditure not exceeding £172 million. The Chief Executive Officer was authorised to sign the contract.\n\n"
    "The resolution was carried 5–2, Dr Boateng and Ms Lutz dissenting.\n"
)


def test_a_lead_in_never_goes_without_what_it_introduces_and_a_vote_never_without_its_resolution(plan):
    """"… replaced by the following:" without the quoted clause let the old fee read as the new one;
    "The resolution was carried 5–2" alone does not say which resolution."""
    for budget in range(30, 200, 8):
        r = make(plan).compress(AMENDMENT, query="What is the monthly service fee? Who dissented?", budget=budget)
        if "replaced by the following:" in r.text:
            assert "USD 84,500" in r.text, (budget, r.text)
        if "A new Clause 12.4 is inserted:" in r.text:
            assert "12.4 The limitation" in r.text, (budget, r.text)
        if "The resolution was carried 5–2" in r.text:
            assert "**Resolution 2024/16:** IT WAS RESOLVED" in r.text, (budget, r.text)
    segs = {s.original[:24]: s for s in make(plan).compress(AMENDMENT, budget=20).document.segments}
    why = segs["The resolution was carri"].reasons[-1]
    assert "goes only with" in why and "newer history turn" not in why, why


POSTMORTEM = ("# Incident 42\n\n## What went well\n\n- Paging worked within two minutes.\n"
              "- Recovery was a single command:\n\n```bash\nhelm rollback billing-api 12 --namespace billing\n"
              "kubectl -n billing rollout status deploy/billing-api\n```\n\n## What went wrong\n\n"
              "The canary stage was skipped because the change was marked as config only. Nobody noticed the "
              "error rate for twenty minutes.\n")


def test_a_list_item_that_introduces_a_code_block_goes_only_with_it(plan):
    # QA: "- Rollback was a single command:" was delivered without the helm/kubectl block under it (the
    # lead-in rule held only for a sentence, not a list item): the text ended on a colon
    from odcf.document import Document, Source
    from odcf.plan.model import Plan
    from odcf.stages.budget import _antecedents
    from odcf.stages.segment import Segmenter

    doc = Segmenter()(Document.from_sources([Source(id="a", text=POSTMORTEM)]), Plan(domain="t"))
    (item,) = [s for s in doc.segments if s.original.startswith("- Recovery")]
    (code,) = [s for s in doc.segments if s.kind == "code"]
    before, heads = _antecedents(doc)
    assert before[code.id] == item.id and item.id in heads
    seen = set()
    for budget in range(20, 120, 4):
        r = make(plan).compress(POSTMORTEM, query="how was the recovery done?", budget=budget, annotate=False)
        if "Recovery was a single command:" in r.text:
            assert "helm rollback billing-api 12" in r.text, (budget, r.text)
        seen.add("helm rollback" in r.text)
        for s in r.document.segments:
            if s.dropped and s.original.startswith("- Recovery") and "no room" not in s.reasons[-1]:
                assert "a line that introduces the block after it is delivered only with" in s.reasons[-1]
    assert seen == {True, False}


def test_his_or_her_honour_points_back():
    from odcf.textutil import back_reference

    assert back_reference("Her Honour characterised that decision as wilful default.") == "Her Honour"
    assert back_reference("Honour among thieves is a proverb.") is None


CLAUSES = ("## Section 9 Liability\n\n"
           "Section 9.1 Cap. Each party's total liability shall not exceed $250,000.\n\n"
           "Section 9.2 Exclusions. Neither party is liable for indirect or consequential damages.\n\n"
           "## Section 12 Term and Termination\n\n"
           "Section 12.1 Term. This Agreement runs for 36 months from March 1, 2025.\n\n"
           "Section 12.2 Termination for cause. Either party may terminate this Agreement immediately if the "
           "other party commits a material breach that is not cured within 30 days of written notice.\n\n"
           "Section 12.3 Effect. On termination the Customer pays all fees accrued up to the date of "
           "termination, and Section 9 survives.\n")


@pytest.mark.parametrize("text, query, wanted", [
    (CLAUSES, "What does Section 12.2 say?", "not cured within 30 days"),
    (CLAUSES, "sec. 9.2", "indirect or consequential damages"),
    (CLAUSES.replace("Section 12.", "12."), "clause 12.2", "not cured within 30 days"),  # numbered lines
    (("第四条 付款。买方应在验收后30日内付款。\n\n第五条 质保。质保期为24个月，自验收合格之日起计算。\n\n"
      "第六条 违约责任。逾期付款的，每日按未付金额的0.05%支付违约金。\n"), "第5条说了什么", "24个月"),
])
def test_a_clause_the_query_names_by_number_is_delivered_whole(plan, text, query, wanted):
    # QA: "What does Section 12.2 say?" at budget 110 delivered Sections 9.2 and 12.1, and 12.2's
    # title alone ranked first, so the budget (which never sends a title alone) dropped the clause
    r = Compressor(plan).compress(text, query=query, budget=60, annotate=False)
    assert wanted in r.text, r.text
    assert r.tokens_out <= 60


def test_what_names_a_clause_in_a_query_and_what_it_finds():
    from odcf.stages.rank import (
        clause_references,
        identifier_pattern,
        query_identifiers,
    )

    assert clause_references("the party 5 items, rule of 3, see 12.2") == []
    assert clause_references("Sections 9.1, 9.2 and 14; clause 7 or 8; Section 5, 10 staff") == [
        "Sections 9.1", "Sections 9.2", "Sections 14", "clause 7", "clause 8", "Section 5"]
    assert query_identifiers("What do Section 12.2 and Art. 5(b) say?") == ["Section 12.2", "Art. 5(b)"]
    found = identifier_pattern(["Section 12.2"])
    assert [bool(found.search(t)) for t in (
        "Section 12.2 Termination", "## 12.2 Termination", "see § 12.2(a)", "Sec. 12.2.1 Notice",
        "Section 12.20", "Section 12.3", "a fee of 12.2 million", "Article 12.2", "x 12.2 y")] == [
        True, True, True, True, False, False, False, False, False]
    bare = identifier_pattern(["Section 5"])
    assert [bool(bare.search(t)) for t in ("Section 5 Fees", "5. Fees", "Section 5.3 Late fees")] == [True, False, True]
    zh = identifier_pattern(["第12条"])
    assert [bool(zh.search(t)) for t in ("第十二条 保密", "第 12 条", "第二条", "第一百二十条")] == [True, True, False, False]


def test_a_larger_budget_never_delivers_nothing_where_a_smaller_one_delivered_something():
    # QA: an API response of 200 orders delivered 81 tokens at budget 100 and 0 at 110-125: each order
    # fits by its words but not with the JSON around it, and the refill gave up after a run of such
    # misses before it reached the small top-level members
    import json
    import random

    rng = random.Random(7)
    data = [{"order_id": f"ORD-2025-{100000 + 37 * k}", "customer_id": f"cus_{rng.randrange(10000, 99999)}",
             "status": rng.choice(["shipped", "refunded", "cancelled", "delivered"]),
             "total": {"amount": round(rng.uniform(10, 900), 2), "currency": "EUR"},
             "items": [{"sku": f"SKU-{rng.randrange(1000, 9999)}", "qty": rng.randrange(1, 5),
                        "unit_price": round(rng.uniform(5, 200), 2)}],
             "shipping": {"carrier": "DHL", "tracking": f"TRK{rng.randrange(10**9, 10**10)}"}} for k in range(200)]
    doc = json.dumps({"request_id": "req_9f2c1e", "api_version": "2025-06-01",
                      "page": {"number": 3, "size": 200, "has_more": True}, "data": data}, indent=2)
    c = Compressor.from_ontology("customer_service")
    best = 0
    for budget in range(60, 130, 5):
        r = c.compress(doc, query="status of order ORD-2025-999999 and can we refund it", budget=budget)
        assert r.tokens_out <= budget
        assert r.tokens_out > 0 or best == 0, (budget, r.record["warnings"])
        best = max(best, r.tokens_out)
    assert best > 0


def test_a_marker_sentence_cut_for_length_goes_whole_or_not_at_all(plan):
    # QA: a 1,500-character indemnity ("Tenant shall indemnify … provided, however, … in no event …")
    # was cut for length, and its first part delivered without the carve-outs in the second
    rule = ("Tenant shall indemnify, defend and hold harmless Landlord, its members, managers, officers, "
            "employees, agents and mortgagees from and against any and all claims, actions, damages, "
            "liabilities, costs and expenses, including reasonable attorneys' fees, " * 6
            + "arising from the use of the Premises, provided, however, that Tenant is not liable for claims "
            "caused by the gross negligence or wilful misconduct of Landlord, and in no event is Tenant liable "
            "for consequential damages.")
    text = "Section 10.1 Indemnity. " + rule + "\n\nSection 11 Notices. Notices are given in writing to the addresses above."
    seen = set()
    for budget in (120, 200, 300, 420, 520, 700):
        r = make(plan).compress(text, query="does the tenant indemnify the landlord", budget=budget, annotate=False)
        has_rule, has_proviso = "Tenant shall indemnify" in r.text, "in no event is Tenant liable" in r.text
        assert has_rule == has_proviso, (budget, r.text)
        seen.add(has_rule)
        if not has_rule:
            first = next(s for s in r.document.segments if "Tenant shall indemnify" in s.text)
            assert "the parts of a sentence that hold a marker go together" in first.reasons[-1]
    assert seen == {True, False}


@pytest.mark.parametrize("text, orphan", [
    ("Interstitial lung disease of any grade: permanently discontinue. Do not rechallenge.\n\n"
     "For Grade 3 events, interrupt dosing, then restart at 10 mg once the event resolves to Grade 1.",
     "Do not rechallenge."),
    ("The inverters are supplied by Voltaro GmbH under frame agreement FA-2291 of 3 May 2024. "
     "Their rated output is exactly 750 W.\n\nThe invoice is payable within 30 days.",
     "Their rated output is exactly 750 W."),
])
def test_a_short_last_sentence_and_a_possessive_opener_go_with_the_sentence_before(plan, text, orphan):
    # QA: "Do not rechallenge." was delivered after the Grade 3 rules, where it read as theirs, and
    # "Their rated output is exactly 750 W." after an unrelated line
    for budget in range(8, 80, 4):
        r = make(plan).compress(text, query="grade 3 dose output rated", budget=budget, annotate=False)
        if orphan in r.text:
            at = r.text.index(orphan)
            assert at > 0 and r.text[:at].rstrip().endswith(("discontinue.", "3 May 2024.")), (budget, r.text)


@pytest.mark.parametrize("text, query, stale, fresh", [
    ("| Item | Date |\n|---|---|\n| Submission deadline | 8 August 2025, 14:00 |\n| Site visit | 22 July 2025 |\n\n"
     "Bidders bear all costs of preparing their bid. Questions go to the portal only.\n\n"
     "Addendum 2 (10 July 2025): the submission deadline is extended to 15 August 2025, 14:00 CET.",
     "bid checklist: deadline, mandatory requirements, price ceiling", "8 August 2025", "15 August 2025"),
    ("user: Sabores do Rio quoted 3 lunches x 34 x €24 = €2,448, total €4,420 with dinners.\n"
     "assistant: Noted, catering is Sabores do Rio.\n"
     "user: The venue has step-free access and a quiet room.\n"
     "user: Wait, correction: it's 36 people, not 34, two contractors are joining.",
     "catering totals per category", "€4,420", "36 people, not 34"),
])
def test_a_correction_ranks_with_what_it_corrects(plan, text, query, stale, fresh):
    # QA: the table row "8 August 2025" was delivered and "Addendum 2 … extended to 15 August 2025"
    # dropped; the €4,420 catering total was delivered and "correction: it's 36 people, not 34" dropped
    for budget in range(20, 120, 6):
        r = Compressor(plan).compress(text, query=query, budget=budget, annotate=False)
        if stale in r.text:
            assert fresh in r.text, (budget, r.text)


AMENDED = [
    ("21.2 Financial condition\n\n"
     "(a) Leverage: the Leverage Ratio in respect of any Relevant Period shall not exceed 3.50:1, provided that in "
     "respect of the Relevant Periods ending on 31 March 2025 and 30 June 2025 the Leverage Ratio shall not exceed 4.00:1;\n\n"
     "(b) Interest Cover: Interest Cover in respect of any Relevant Period shall not be less than 4.00:1.\n\n"
     "29. AMENDMENTS AND WAIVERS\n\n"
     "29.1 Any term of the Finance Documents may be amended or waived only with the consent of the Majority Lenders.\n\n"
     "AMENDMENT LETTER NO. 1\n\n"
     "2. The Majority Lenders have consented to the following amendments with effect from 1 January 2025:\n\n"
     "(a) In paragraph (a) of Clause 21.2 (Financial condition), the figure \"3.50:1\" is deleted and replaced with "
     "\"3.75:1\", and the proviso relating to the Relevant Periods ending on 31 March 2025 and 30 June 2025 is deleted "
     "in its entirety.\n\n"
     "(b) In Clause 22.5 (Dividends), paragraph (b) is amended by replacing \"2.00:1\" with \"1.75:1\".",
     "What is the maximum Leverage Ratio for the Relevant Period ending 30 June 2025?", "exceed 3.50:1", "3.75:1"),
    ("### 6.1 Dosing\n\nEach dose consists of two tablets taken with water. A missed dose may be taken up to 8 hours "
     "after the usual dosing time. Participants must not take two doses on the same day.\n\n"
     "### 6.2 Dose Modification\n\n| Laboratory finding | Action |\n|---|---|\n"
     "| ALT or AST > 3x ULN | Repeat within 72 hours |\n| ALT or AST > 5x ULN | Permanently discontinue |\n\n"
     "## 15. Summary of Changes\n\nThe following changes apply to all sites:\n\n"
     "- **Exclusion criterion 7** is changed: participants with eGFR below 45 (previously 60) at Screening are excluded.\n"
     "- **Section 6.2** is changed: the threshold for permanent discontinuation for ALT or AST is lowered from > 5x ULN "
     "to > 4x ULN.\n"
     "- **Section 6.1** is clarified: a missed dose may be taken up to 6 hours (previously 8 hours) after the usual "
     "dosing time.\n"
     "- Minor editorial corrections throughout.",
     "How late can a missed dose still be taken?", "up to 8 hours after", "6 hours"),
    ("## 5. Retention\n\n| Data category | Retention period | Starts from |\n|---|---|---|\n"
     "| Payment Data | 6 years | End of the financial year |\n| Support Data | 2 years | Ticket closure |\n"
     "| Usage Data | 14 months | Collection |\n\n## 11. Changes to this Policy\n\n"
     "We will notify you in the app at least 30 days before any material change takes effect.\n\n"
     "### Update of 15 November 2024\n\n"
     "With effect from 1 January 2025, the retention period for Usage Data is reduced from 14 months to 9 months, and "
     "the retention period for Support Data is reduced from 2 years to 18 months.",
     "How long is Support Data kept after a ticket is closed?", "| 2 years", "18 months"),
]


@pytest.mark.parametrize("text, query, stale, fresh", AMENDED)
def test_an_amended_value_is_never_delivered_without_its_amendment(text, query, stale, fresh):
    # QA: clause 21.2(a) "shall not exceed 3.50:1" was delivered and the amendment letter's "deleted and replaced
    # with 3.75:1" dropped; "up to 8 hours" without "6 hours (previously 8 hours)"; "Support Data | 2 years" without
    # "reduced from 2 years to 18 months" (cues not recognised, and nothing kept the two together)
    compressor = Compressor.from_ontology("general")
    delivered = 0
    for budget in range(20, 260, 8):
        r = compressor.compress(text, query=query, budget=budget, annotate=False)
        delivered += fresh in r.text
        if stale in r.text:
            assert fresh in r.text, (budget, r.text)
    assert delivered


def test_a_stale_value_whose_correction_cannot_be_delivered_is_dropped_saying_so(plan):
    text = ("The submission deadline is 8 August 2025 at 14:00 CET.\n\n"
            "Addendum 2: the submission deadline is extended to 15 August 2025 at 14:00 CET, and bidders who already "
            "submitted may resubmit their complete bid through the portal until the new deadline without penalty.")
    r = make(plan).compress(text, query="When is the submission deadline?", budget=30, annotate=False)
    assert "8 August" not in r.text, r.text
    old = next(s for s in r.document.segments if "8 August" in s.text)
    fix = next(s for s in r.document.segments if "15 August" in s.text)
    assert old.meta["corrected_by"] == [fix.id]
    assert fix.dropped and old.dropped
    assert f"is corrected by {fix.id}" in old.reasons[-1] and "not delivered" in old.reasons[-1], old.reasons
    assert any(why.startswith(f"rank: corrected by {fix.id}") for why in old.reasons), old.reasons


def test_a_correction_rises_only_above_what_it_corrects():
    # QA: "Section 9.2(b) is changed … (previously three or more) … Minor editorial corrections" was raised just
    # above the bullet changing exclusion criterion 7 (the answer, which it shares only "changed" and "previously"
    # with) and pushed it out; a loan agreement's amendment rose above any clause naming a "Clause" and a "paragraph"
    from odcf.document import Segment
    from odcf.stages.rank import lift_corrections

    texts = ["7. Estimated glomerular filtration rate (eGFR) below 60 mL/min/1.73 m2 at Screening.",
             "- **Exclusion criterion 7** is changed: participants with eGFR below 45 mL/min/1.73 m2 (previously 60 "
             "mL/min/1.73 m2) at Screening are excluded.",
             "- **Section 9.2(b)** is changed: enrolment is paused at two or more cases (previously three or more) of "
             "venous thromboembolism. Minor editorial corrections throughout."]
    clauses = [f"Clause {k}.1 Notices: a notice under paragraph (a) of this Clause is given in writing." for k in range(4)]
    texts += clauses + ["(b) In paragraph (c) of Clause 21.2, the figure \"GBP 9,000,000\" is deleted and replaced "
                        "with \"GBP 11,500,000\"."]
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence") for i, t in enumerate(texts)]
    scores = {"s0": 0.9, "s1": 1.0, "s2": 0.5, "s3": 0.8, "s4": 0.2, "s5": 0.2, "s6": 0.2, "s7": 0.3}
    lifted, raised = lift_corrections(segs, scores)
    assert lifted["s2"] == 0.5 and lifted["s7"] == 0.3 and lifted["s1"] == 1.0
    assert raised == 0


def test_a_plain_text_contract_heading_goes_with_its_section_and_never_alone(plan):
    # "ARTICLE 10 — INDEMNITY" was a sentence: delivered alone (the whole output, when the clause under
    # it did not fit), and "Section 7.1 … holdover" was delivered under "ARTICLE 5 — RENEWAL OPTION"
    text = ("OFFICE LEASE\n\nARTICLE 5 — RENEWAL OPTION\n\nSection 5.1 Option. Tenant may extend the Term once for "
            "five (5) years by notice given twelve (12) months before the Expiration Date.\n\n"
            "ARTICLE 7 — HOLDOVER\n\nSection 7.1 If Tenant remains in possession after the Expiration Date, Tenant "
            "shall pay Base Rent at one hundred fifty percent (150%) of the last rate.\n\n"
            "ARTICLE 8 — SUBORDINATION\n\nSection 8.1 This Lease is subordinate to every mortgage on the Building.\n\n"
            "ARTICLE 10 — INDEMNITY\n\nSection 10.1 Indemnity. Tenant shall indemnify, defend and hold harmless "
            "Landlord from any claim arising from the use of the Premises, except for the gross negligence of "
            "Landlord.")
    heads = ("ARTICLE 5 — RENEWAL OPTION", "ARTICLE 7 — HOLDOVER", "ARTICLE 8 — SUBORDINATION", "ARTICLE 10 — INDEMNITY")
    seen = set()
    for query in ("Does the tenant indemnify the landlord?", "holdover rent after expiration"):
        for budget in range(8, 130, 6):
            r = make(plan).compress(text, query=query, budget=budget, annotate=False)
            assert r.tokens_out <= budget
            assert r.text == r.text.strip()
            paragraphs = r.text.split("\n\n") if r.text else []
            seen.add(r.text)
            for k, par in enumerate(paragraphs):
                if par in heads:  # never alone, never as the last word, always above its own section
                    assert k + 1 < len(paragraphs) and not paragraphs[k + 1].startswith("ARTICLE"), r.text
                    assert paragraphs[k + 1].startswith(f"Section {par.split()[1]}."), r.text
                elif par.startswith("Section"):
                    assert k > 0 and paragraphs[k - 1] == next(h for h in heads if h.split()[1] == par.split()[1].split(".")[0]), r.text
            for seg in r.document.segments:
                if seg.dropped and seg.kind == "heading":
                    assert any("delivered only with a part of what it heads" in why or "no room" in why
                               for why in seg.reasons)
    assert "ARTICLE 7 — HOLDOVER\n\nSection 7.1 If Tenant remains" in "\n".join(seen)


def _pods() -> tuple[str, list[str]]:
    header = ("NAME                                   READY   STATUS             RESTARTS        AGE     "
              "IP             NODE              NOMINATED NODE   READINESS GATES")
    rows = []
    for k, app in enumerate(["ledger-api", "ledger-worker", "fx-rates", "webhook-dispatcher", "recon-batch",
                             "notifier"] * 6):
        status, restarts = {7: ("CrashLoopBackOff", "37 (2m14s ago)"), 17: ("OOMKilled", "5 (11m ago)"),
                            22: ("Pending", "0")}.get(k, ("Running", "0"))
        name = f"{app}-7d9f8c{100 + 7 * k}-{chr(97 + k % 26)}{k:02d}x"
        cells = [name, "1/1" if status == "Running" else "0/1", status, restarts, f"{k + 1}d",
                 f"10.42.{k % 10}.{k + 3}", f"k8s-node-{100 + k}", "<none>"]
        rows.append("".join(f"{c:<{w}}" for c, w in zip(cells, (39, 8, 19, 16, 8, 15, 18, 17))) + "<none>")
    return header + "\n" + "\n".join(rows), rows


def test_kubectl_and_psql_output_is_cut_as_a_table_and_the_rows_a_query_names_come_whole(plan):
    # QA: space-aligned rows came out as list and sentence blocks, the 8-line block holding the
    # OOMKilled and Pending rows was too big and dropped, and "[PREFIX: ledger-worker-]" cut pod names
    text, rows = _pods()
    header = text.split("\n")[0]
    r = Compressor(plan).compress(text, query='which pods are "OOMKilled" or "Pending"', budget=300, annotate=False)
    lines = r.text.split("\n")
    assert lines[0] == header and rows[17] in lines and rows[22] in lines, r.text
    assert any(line.startswith("[DATA_ROWS: ") for line in lines) and "[PREFIX" not in r.text
    assert all(line in rows or line == header or line.startswith("[DATA_ROWS: ") for line in lines), r.text
    named = rows[7].split()[0]
    r = Compressor(plan).compress(text, query=f"why is {named} crashing?", budget=120, annotate=False)
    assert r.text.split("\n")[0] == header and rows[7] in r.text.split("\n"), r.text
    psql = (" version |       applied_at        | applied_by |     checksum     | success \n"
            "---------+-------------------------+------------+------------------+---------\n"
            + "\n".join(f"      {v} | 2025-06-{v - 20:02d} 10:04:24.140 | {'mkowalski' if v % 3 else 'deploy-bot'} | "
                        f"89c6948f6d30c0{v:02d} | {'f' if v == 41 else 't'}" for v in range(41, 26, -1))
            + "\n(15 rows)")
    r = Compressor(plan).compress(psql, query="which migration version failed (success = f)?", budget=120,
                                  annotate=False)
    lines = [line.rstrip() for line in psql.split("\n")]  # (the rules stage drops spaces at the end of a line)
    assert r.text.startswith("\n".join(lines[:3]) + "\n"), r.text
    out = r.text.split("\n")
    marked = sum(int(line[12:-1]) for line in out if line.startswith("[DATA_ROWS: "))
    assert marked + sum(line in lines[2:17] for line in out) == 15, r.text  # "(15 rows)" is no row


def test_an_email_disclaimer_ranks_below_what_the_message_says(plan):
    # QA: "If you are not the intended recipient, please notify the sender …" (0.68) was delivered and
    # the agent's instructions (0.41-0.55) dropped
    text = ("From: Maria Lund\nDate: 14 July 2025\n\nApproved refund of NOK 14,388.00 to the card ending 4417. "
            "Please notify the customer that the refund is on its way and do not apply any credit.\n\n"
            "CONFIDENTIALITY NOTICE: This e-mail and any attachments are confidential. If you are not the intended "
            "recipient, please notify the sender immediately and delete this e-mail.\n")
    r = Compressor(plan).compress(text, query="what to do about the e-mail", budget=200, annotate=False)
    scores = {s.text[:24]: s.score for s in r.document.segments}
    notice = max(v for k, v in scores.items() if k.startswith(("CONFIDENTIALITY", "If you are not")))
    assert notice < scores["Please notify the custom"] and notice < scores["Approved refund of NOK 1"]
    assert any(e.data.get("boilerplate_demoted") for e in r.document.trace if e.stage in ("rank", "rerank"))


@pytest.mark.parametrize("text, query, answer", [
    # "updated on 30 January" shares only "30" with the answer, and "updated" corrects nothing
    ("3. INDEMNITY\n\nThe Supplier shall indemnify the Customer against all losses arising from any claim that the "
     "Services infringe a third party's rights, provided that the Customer notifies the Supplier within 30 days.\n\n"
     "5. NOTICES\n\nThe office address in Schedule 3 was updated on 30 January to reflect the Supplier's move.",
     "What does the Supplier indemnify the Customer against?", "indemnify the Customer against all losses"),
    # a sentence naming "Section 2" in running prose opens no part that lifts the rest of the memo
    ("Hi all,\n\nRollback must be approved by the incident commander on duty. Section 2 of the rollout plan was "
     "reviewed by legal last week. The cafeteria will be closed on Friday. Please submit expense reports by the "
     "end of the month. New laptops arrive next Tuesday.", "Per section 2, who approves a rollback?",
     "approved by the incident commander"),
])
def test_common_words_and_a_named_section_in_prose_do_not_outrank_the_answer(plan, text, query, answer):
    # QA of this stop's changes: both answers were dropped for the sentence after them
    r = Compressor(plan).compress(text, query=query, budget=60, annotate=False)
    assert answer in r.text, r.text


def test_a_shell_command_goes_only_with_its_output(plan):
    # QA: "tool (bash): $ kubectl -n prod get pods …" was delivered twice with nothing under it (both
    # tables dropped): a command without output reads as "No resources found", and the only status
    # left was the stale CrashLoopBackOff
    text = ("user: payments-api in prod is crashing. Raise the memory limit to 1Gi.\n\n"
            "tool (bash): $ kubectl -n prod get pods -l app=payments-api\n"
            "NAME                           READY   STATUS             RESTARTS      AGE\n"
            "payments-api-7d9f8c6b5-x2k4q   0/1     CrashLoopBackOff   7 (2m ago)    105m\n"
            "payments-api-7d9f8c6b5-q8w1z   0/1     CrashLoopBackOff   6 (4m ago)    105m\n\n"
            "assistant: Both pods are in CrashLoopBackOff with OOMKilled as last state.\n\n"
            "tool (bash): $ kubectl -n prod get pods -l app=payments-api\n"
            "NAME                           READY   STATUS    RESTARTS   AGE\n"
            "payments-api-5c4b7a9d2-m3n6p   1/1     Running   0          95s\n"
            "payments-api-5c4b7a9d2-t7r2k   1/1     Running   0          60s\n")
    seen = set()
    for budget in range(20, 160, 7):
        r = make(plan).compress(text, query="what is the current status of the payments-api pods?", budget=budget,
                                annotate=False)
        lines = r.text.split("\n")
        for k, line in enumerate(lines):
            if "$ kubectl" in line:
                assert k + 1 < len(lines) and lines[k + 1].startswith(("NAME", "payments-api-")), (budget, r.text)
        seen.add("Running" in r.text)
    assert seen == {True, False}


def test_a_query_about_a_failure_lifts_the_lines_that_report_it(plan):
    # QA: over a CI log without its summary, "which test failed and what were the assertion values?"
    # never got the "E  AssertionError: assert Decimal('32.49') == …" line below 6,000 tokens: it scored
    # 0.06 and the 400 PASSED lines about 0.6
    lines, k = [], 0
    for f in ("invoice", "tax", "currency", "ledger", "refund", "webhooks", "export"):
        for i in range(58):
            status = "FAILED" if (f, i) == ("refund", 41) else "PASSED"
            lines.append(f"tests/test_{f}.py::test_case_{i:03d} {status}{' ' * 39}[{k * 100 // 406:3d}%]")
            k += 1
    text = ("\n".join(lines) + "\n\n=================================== FAILURES ===================================\n"
            "___________________________ test_case_041 ___________________________\n\n"
            "    def test_case_041():\n        order = make_order(total=Decimal(\"129.99\"), currency=\"EUR\")\n"
            "        refund = compute_partial_refund(order, ratio=0.25)\n"
            ">       assert refund.amount == Decimal(\"32.50\")\n"
            "E       AssertionError: assert Decimal('32.49') == Decimal('32.50')\n"
            "E        +  where Decimal('32.49') = Refund(amount=Decimal('32.49'), currency='EUR').amount\n\n"
            "tests/test_refund.py:218: AssertionError\n")
    for budget in (200, 600, 1200):
        r = make(plan).compress(text, query="which test failed and what were the assertion values?", budget=budget)
        assert "Decimal('32.49')" in r.text, (budget, r.text)
    # not for a query that asks about something else, nor where every line reports an error
    from odcf.stages.rank import failure_hits

    segs = r.document.segments
    assert failure_hits(segs, "how many tests passed?") == set()
    noisy = [s.replace(text="ERROR: disk full") for s in segs]
    assert failure_hits(noisy, "what error stopped the job?") == set()


def test_a_shared_number_in_another_unit_is_no_correction_and_an_amount_is_no_command(plan):
    # QA of this stop's changes: "… cache limit was raised to 64 MB …" was taken for the correction of
    # "The database server has 64 GB of RAM", which then went only with it and was dropped; "Amount due:
    # $ 1,250.00" was read as a shell command introducing the list under it, and dropped with it
    from odcf.stages.rank import correction_links

    infra = ("Infrastructure overview\n\nThe database server has 64 GB of RAM and 16 CPU cores.\n\n"
             "The web tier runs behind a load balancer with health checks every 10 seconds.\n\n"
             "In an unrelated change last spring, the frontend page cache limit was raised to 64 MB after the "
             "marketing team asked for faster page loads during the seasonal campaign, which also required new "
             "CDN rules and a review by the security team.")
    for budget in (25, 40):
        r = make(plan).compress(infra, query="how much RAM does the database server have", budget=budget,
                                annotate=False)
        assert "64 GB of RAM" in r.text, r.text
    assert correction_links(r.document.segments) == {}
    invoice = ("Invoice 2024-117 for Northwind Ltd\n\nAmount due: $ 1,250.00\n\n- Consulting, 10 hours at $ 100\n"
               "- Travel to the Leeds site, 2 days\n- Hotel, 2 nights\n- Printing of the workshop material\n"
               "- Rental of the projector and screen\n\nPayment is due within 30 days of the invoice date.")
    r = make(plan).compress(invoice, query="what is the amount due", budget=20, annotate=False)
    assert "Amount due: $ 1,250.00" in r.text, r.text


def test_a_definite_noun_goes_with_the_sentence_above_that_names_it_not_the_paragraphs_first(plan):
    # QA: pip's "The conflict is caused by:" (the answer, score 1.0) went only with the first sentence of
    # the paragraph above, 400 tokens of "Collecting …" lines, so it was dropped at a budget of 150 while
    # the "ERROR: … conflicting dependencies." sentence that names the conflict fitted
    collecting = "".join(f"Collecting pkg{k}=={k}.0.0 (from -r requirements.txt (line {k}))\n"
                         f"  Using cached pkg{k}-{k}.0.0-py3-none-any.whl.metadata (24 kB)\n" for k in range(20))
    text = ("$ pip install -r requirements.txt\n" + collecting +
            "INFO: pip is looking at multiple versions of langchain-core. This could take a while.\n"
            "ERROR: Cannot install -r requirements.txt (line 2) and langchain-core==0.1.52 because these package "
            "versions have conflicting dependencies.\n\n"
            "The conflict is caused by:\n    The user requested pydantic==1.10.13\n"
            "    langchain-core 0.1.52 depends on pydantic<3 and >=2.5.2\n")
    r = make(plan).compress(text, query="which package's pydantic requirement conflicts with pydantic==1.10.13?",
                            budget=150, annotate=False)
    assert "langchain-core 0.1.52 depends on pydantic<3" in r.text, r.text
    assert "conflicting dependencies." in r.text  # with the sentence that names the conflict


def test_a_sub_part_the_query_names_is_read_in_the_part_its_heading_opens(plan):
    # QA: "What does Section 5.2(b) say …?" delivered the sentences citing "Section 5.2(b)" and left out
    # the list under "### 5.2 Exceptions to deletion" that holds item b: the heading does not say "(b)"
    text = ("# Privacy Policy\n\n## 5. Retention\n\n### 5.1 Deletion on request\n\nYou can delete your account "
            "at any time in Settings.\n\n### 5.2 Exceptions to deletion\n\nWe will not delete data where:\n\n"
            "a. the data is subject to a legal hold because of litigation;\n"
            "b. clinician notes must be kept longer under the NHS Records Management Code of Practice, which "
            "for notes about a child requires retention until the child's 25th birthday;\n"
            "c. you have contributed data to the Research Dataset.\n\n## 6. Your Rights\n\n"
            "The right to erasure does not apply to clinician notes that we are required to keep under "
            "Section 5.2(b).\n\n## 8. Children\n\nWe do not knowingly collect data from children under 13, "
            "subject to Section 5.2(a).\n")
    from odcf.stages.rank import exact_hits

    query = "What does Section 5.2(b) say about clinician notes for children?"
    r = make(plan).compress(text, query=query, budget=150, annotate=False)
    assert "25th birthday" in r.text, r.text
    segs = r.document.segments
    names, hits = exact_hits(segs, query)
    assert names == ["Section 5.2(b)"]
    # the part under "### 5.2 …" (its lead-in and the parts of its list; the heading goes with them) and
    # the sentence citing 5.2(b); not 5.1's part, nor the sentence citing 5.2(a)
    assert {s.text.split("\n")[0][:30] for s in segs if s.id in hits} == {
        "We will not delete data where:", "a. the data is subject to a le", "b. clinician notes must be kep",
        "c. you have contributed data t", "The right to erasure does not "}


MED_LISTS = (
    "## Discharge medication list\n\n"
    "**CONTINUE (unchanged)**\n- Apixaban 5 mg by mouth twice daily.\n- Atorvastatin 40 mg by mouth at bedtime.\n"
    "- Levothyroxine 75 mcg by mouth once daily before breakfast.\n\n"
    "**HELD — do not take until told by your doctor**\n"
    "- Lisinopril 20 mg daily (kidney injury and high potassium). Nephrology will decide at follow-up.\n\n"
    "**STOPPED — do not take**\n- Spironolactone 25 mg daily (high potassium twice).\n"
    "- Glipizide 5 mg daily (low blood sugar).\n\n"
    "## Follow-up\n\nPrimary care in 7 days with a repeat basic metabolic panel.\n"
)


def test_a_bold_statement_over_a_list_titles_that_list_and_ends_the_title_above(plan):
    # QA: "**HELD — do not take until told by your doctor**" read as a statement, not a title, so the held
    # lisinopril was delivered right under "**CONTINUE (unchanged)**"
    seen = 0
    for budget in range(25, 140, 5):
        r = make(plan).compress(MED_LISTS, query="is lisinopril held and who decides", budget=budget)
        if "Lisinopril 20 mg" in r.text:
            seen += 1
            above = r.text.split("Lisinopril 20 mg")[0].rstrip().rsplit("\n", 2)[-2:]
            assert above[0] == "**HELD — do not take until told by your doctor**", (budget, r.text)
        for title in ("**HELD", "**STOPPED", "**CONTINUE"):  # under a title, only what its list says, and some
            if title in r.text:
                own = MED_LISTS.split(title)[1].split("**\n", 1)[1].split("\n\n")[0]
                under = [line.strip() for line in r.text.split(title)[1].split("**\n", 1)[1].split("**")[0]
                         .split("## ")[0].split("\n") if line.strip() and not line.startswith("[…")]
                assert under and all(part in own for line in under for part in line.split(" … ")), (budget, r.text)
    assert seen


def _segs(*texts):
    from odcf.document import Segment

    return [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence") for i, t in enumerate(texts)]


def test_what_a_correction_corrects_holds_its_old_value_or_gives_a_value_for_its_subject():
    # QA: "(previously 1000 mg twice daily)" in the metformin line linked, through "1.73" of "mL/min/1.73m2",
    # the CKD diagnosis (the answer, dropped as "corrected"); "metoprolol 50 mg … increased to 100 mg" linked
    # "insulin … with D50"; "(not 5% of the total score)" was read as a correction of the bid bond of 5%; and
    # "The proposal due date is extended to 21 March" found neither "Proposal due date: 14 March 2025 (see
    # Addendum 1 below)" (itself read as a correction) nor the schedule's row
    from odcf.stages.rank import correction_links

    segs = _segs(
        "Chronic kidney disease, stage 3b: baseline eGFR 38 mL/min/1.73m2, diabetic kidney disease.",
        "In the ED she received insulin regular 5 units IV with D50.",
        "Metformin is restarted at 500 mg/day (previously 1000 mg, as recorded in 1.73m2 units).",
        "Home metoprolol succinate 50 mg daily was increased to 100 mg daily on 9/4.")
    assert correction_links(segs) == {}
    segs = _segs("A bid bond of 5% of the total proposed price must be uploaded with the proposal.",
                 "A local preference of 5% of the price points (not 5% of the total score) is applied.")
    assert correction_links(segs) == {}
    segs = _segs("Issue date: 3 February 2025\nProposal due date: 14 March 2025, 14:00 (see Addendum 1 below)",
                 "| Event | Date |\n|---|---|\n| Proposal due date | 14 March 2025, 14:00 |",
                 "Proposals must be received no later than the proposal due date and time.",
                 "A1.1 The proposal due date is extended to 21 March 2025, 14:00 local time.")
    assert correction_links(segs) == {"s3": ["s0", "s1"]}
    segs = _segs("Metformin 1000 mg twice daily was taken at home.", "Lunch is at noon on the ward.",
                 "Metformin is restarted at 500 mg twice daily (previously 1000 mg twice daily).")
    assert correction_links(segs) == {"s2": ["s0"]}



def test_a_change_inside_a_condition_or_naming_a_subject_without_its_value_corrects_nothing():
    # QA: a board resolution approving an acquisition "provided that the top client's contract is extended to at
    # least December 2027" was read as a correction: the CEO's proposal and the approval of the last minutes
    # (words shared: "acquisition", "completion"; "approved", "December") were recorded "corrected by" it; and
    # "The proposal due date is extended to 11 April 2025" corrected the bid security "valid for 120 days after
    # the proposal due date", on the words of the date it names
    from odcf.stages.rank import correction_links

    segs = _segs("The minutes of the meeting held on 4 December 2024 were approved as a true record.",
                 "The CEO presented the proposal to acquire Hale Freight Ltd for £14.5m, subject to completion.",
                 "IT WAS RESOLVED that the acquisition be approved, subject to completion of due diligence and provided "
                 "that the top client's contract is extended to at least December 2027 before completion.")
    assert correction_links(segs) == {}
    segs = _segs("A16. The bid security is EUR 45,000, valid for 120 days after the proposal due date.",
                 "The proposal due date is 28 March 2025.",
                 "A23. The proposal due date is extended to 11 April 2025 at 14:00 CET.")
    assert correction_links(segs) == {"s2": ["s1"]}
    # a change that is no condition still corrects what it shares words with
    segs = _segs("The top client's contract runs to December 2026 under the master agreement.",
                 "Lunch is at noon.", "If asked, say so. The top client's contract is extended to December 2027.")
    assert correction_links(segs) == {"s2": ["s0"]}


_DISCHARGE = """# Discharge Summary

## Medications on Discharge

- Bisoprolol 2.5 mg once daily (NEW)
- Sacubitril/valsartan 24/26 mg twice daily (NEW), not before 36 hours after the last ramipril dose
- Apixaban 2.5 mg twice daily (NEW) for atrial fibrillation
- Omeprazole 20 mg once daily

## Medications Stopped

- Ramipril 5 mg — STOPPED (replaced by sacubitril/valsartan)
- Aspirin 75 mg — STOPPED (now on apixaban; do not take both)

## Follow-up

Renal function and potassium in 1 week at the GP surgery.
"""


def test_a_medicine_stopped_and_replaced_by_another_corrects_no_line():
    # QA: "- Ramipril 5 mg — STOPPED (replaced by sacubitril/valsartan)" in a discharge summary's "Medications
    # Stopped" was read as a correction of the discharge medicines it shares drug names with, which then went
    # only with it: the dose a query asked for was not delivered, the stopped list was
    from odcf.stages.rank import correction_links

    segs = _segs("- Sacubitril/valsartan 24/26 mg twice daily (NEW), after the last ramipril dose\n- Apixaban 2.5 mg",
                 "- Ramipril 5 mg — STOPPED (replaced by sacubitril/valsartan)\n- Aspirin 75 mg — stopped",
                 "Warfarin was discontinued and replaced by apixaban 2.5 mg twice daily.")
    assert correction_links(segs) == {}
    # an amendment's "replaced by" still corrects the value it replaces
    segs = _segs("The ramipril dose is 5 mg once daily.", "Lunch is at noon on the ward.",
                 "The ramipril dose of 5 mg once daily is replaced by 2.5 mg once daily.")
    assert correction_links(segs) == {"s2": ["s0"]}
    c = Compressor.from_ontology("medical_records")
    for budget in (70, 80):
        r = c.compress({"id": "d.md", "text": _DISCHARGE}, query="What is the sacubitril/valsartan dose?",
                       budget=budget)
        assert "- Sacubitril/valsartan 24/26 mg twice daily (NEW)" in r.text, (budget, r.text)
        assert correction_links(r.document.segments) == {}


def test_a_head_scored_above_what_it_heads_is_tried_with_its_first_part():
    # QA: "6.1 … a proposal will be rejected if:" (score 0.78, the answer's lead-in) waited for its list
    # (0.65), by then crowded out by "3.6 All proposals must be in English." and other lesser sentences
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "fixtures" / "rfp_sections_3_to_6.md").read_text()
    for budget in (250, 300):  # at 200 the list (85 tokens) does not fit after the two best sentences
        r = Compressor.from_ontology("tender_rfp").compress(
            text, query="On what grounds will a proposal be rejected, and are there exceptions for late proposals?",
            budget=budget)
        assert "a proposal will be rejected if:\n(a) it is received after the due date" in r.text, (budget, r.text)


def test_a_later_sentence_of_a_paragraph_goes_with_the_one_holding_its_bold_run_in_title(plan):
    # QA: "Excluding the exited contracts, revenue grew 3.1%." was delivered alone under "## Divisional
    # performance", where it reads as the group's figure (the group's revenue fell 4.1%)
    text = ("## Divisional performance\n\n"
            "**Water & Utilities.** Revenue rose 7.7%, driven by UK framework awards. Margin 14.8%. The division's "
            "backlog is £612 million, up 18%.\n\n"
            "**Industrial Services.** Revenue down 18.8% following the exit from the North Sea contracts in H1. "
            "Excluding the exited contracts, revenue grew 3.1%. The division remains under strategic review.\n")
    seen = 0
    for budget in range(20, 90, 5):
        r = make(plan).compress(text, query="excluding the exited contracts how much did revenue grow", budget=budget)
        if "revenue grew 3.1%" in r.text:
            seen += 1
            assert "**Industrial Services.** Revenue down 18.8%" in r.text, (budget, r.text)
        if "Margin 14.8%" in r.text:
            assert "**Water & Utilities.**" in r.text, (budget, r.text)
    assert seen


def test_a_tokenizer_that_is_not_the_unit_of_the_roles_budget_is_a_warning(plan, contract_text):
    # QA: a role with budget 600 in bytes, called with tokenizer o200k_base, delivered 1,523 bytes and said nothing
    from dataclasses import replace

    from odcf.plan.model import RoleContract

    plan = replace(plan, roles={**plan.roles, "byter": RoleContract(name="byter", budget=300, unit="bytes")})
    quiet = make(plan).compress(contract_text, role="byter")
    assert quiet.record["unit"] == "bytes" and quiet.record["warnings"] == []
    told = make(plan).compress(contract_text, role="byter", tokenizer="o200k_base")
    assert told.record["unit"] == "o200k_base"
    assert ("role 'byter' gives its budget of 300 in bytes; it is counted in o200k_base here, the tokenizer this call "
            "was given: 300 o200k_base tokens, about 3 to 4 times the text the role's contract allows (to count it "
            "in bytes, give the tokenizer bytes or none)") in told.record["warnings"]
    assert make(plan).compress(contract_text, role="byter", tokenizer="o200k_base", budget=90).record["warnings"] == []


def test_a_role_without_unit_counted_in_another_tokenizer_is_a_warning_too(plan, contract_text):
    # QA: a role's budget with no `unit:` is in the plan's tokenizer; tokenizer="bytes" counted it as bytes silently
    from dataclasses import replace

    from odcf.plan.model import RoleContract

    plan = replace(plan, roles={**plan.roles, "plain": RoleContract(name="plain", budget=300)})
    assert plan.roles["plain"].unit is None and plan.tokenizer == "o200k_base"
    quiet = make(plan).compress(contract_text, role="plain")
    assert quiet.record["unit"] == "o200k_base" and quiet.record["warnings"] == []
    told = make(plan).compress(contract_text, role="plain", tokenizer="bytes")
    assert told.record["unit"] == "bytes"
    assert ("role 'plain' gives its budget of 300 in o200k_base (the plan's tokenizer: the role declares no unit); "
            "it is counted in bytes here, the tokenizer this call was given: 300 bytes, about a third to a quarter of "
            "the text the role's contract allows (to count it in o200k_base, give the tokenizer o200k_base or none)"
            ) in told.record["warnings"]
    assert make(plan).compress(contract_text, role="plain", tokenizer="o200k_base").record["warnings"] == []
    assert make(plan).compress(contract_text, role="plain", tokenizer="bytes", budget=900).record["warnings"] == []


NQ_LIKE = ("Document [1](Title: Emergency Response Guidebook) The third section, with blue page borders, references "
           "the material in alphabetical order of its name and identifies the appropriate guide number to reference "
           "in the Orange Section. Items highlighted in green in this section will also have evacuation distances "
           "included in the Green Section.")


def test_under_a_small_budget_the_best_sentence_comes_without_its_source_line_or_in_part(plan):
    # benchmark (NQ, one passage, 2x): 10 of 60 deliveries were empty: the answer's sentence and its source
    # line overran a budget of 36, so nothing was delivered
    q = "what color pages in the emergency response guidebook list compounds by name"
    r = make(plan).compress(NQ_LIKE, query=q, budget=30)
    assert r.text and r.tokens_out <= 30, r.text
    # nothing fits beside the source line: delivered without it, and the record says so
    assert not r.text.startswith("[source") and any(w.startswith("the source lines were left out") for w in
                                                        r.record["warnings"])
    # with budget_cuts, a small budget cuts long sentences shorter: the best one comes in part
    cut = Compressor(plan, stages={**CORE, "segment": {"budget_cuts": True}}).compress(NQ_LIKE, query=q, budget=30)
    assert cut.tokens_out <= 30 and "blue page borders, … " in cut.text, cut.text
    # a larger budget keeps the sentence whole, with its source line
    r = make(plan).compress(NQ_LIKE, query=q, budget=200)
    assert r.text.startswith("[source 1/1]") and NQ_LIKE.split(") ", 1)[1].split(" Items")[0] in r.text



TICKET = """# Ticket #48213 — replacement for damaged blender

**Customer (Maria Lopez), 2 Nov:** Hi, my order ORD-77120 arrived yesterday and the blender jar was cracked. I have attached two photos. Please do not call me, I work night shifts; email only. I do not want a refund, I want a replacement unit.

**Agent (Tom), 2 Nov:** Thank you Maria, I'm sorry to hear that. I have opened a damage claim DC-5521 with the carrier. Could you confirm the serial number on the base?

**Customer (Maria Lopez), 3 Nov:** The serial is BX-9920-114. Also the box was left in the rain by the courier, the outer carton was soaked.

**Agent (Tom), 3 Nov:** Thanks. The carrier usually needs 3 to 5 business days to review a claim. Our warehouse in Reno has stock of the same model.

**Agent (Priya), 5 Nov:** Hello, I'm following up on the claim. The carrier approved DC-5521 this morning. We can ship the replacement within 2 business days once you confirm the delivery address.

**Customer (Maria Lopez), 5 Nov:** Same address as the order, 14 Elm Street, Apt 3B, Springfield. Please leave it with the building concierge, not at the door.

**Agent (Priya), 6 Nov:** Noted. Our promotions team also wanted to let you know about our holiday sale: 20% off all kitchen appliances until 30 Nov, free shipping on orders over $50, and a loyalty program with points on every purchase. You can also subscribe to our newsletter for weekly recipes and tips from our chefs. Our store locator lists 140 stores nationwide. We also offer extended warranties of 2 or 3 years on all blenders.
"""


@pytest.mark.slow
def test_a_customers_constraint_ranks_near_the_top_without_displacing_the_answer():
    # QA: "Please do not call me, I work night shifts; email only." ranked below the serial number for
    # "how should we contact the customer?" and was left out at a third of the ticket
    c = Compressor.from_ontology("customer_service")
    r = c.compress(TICKET, query="how should we contact the customer", budget=120)
    assert "Please do not call me, I work night shifts; email only." in r.text
    assert any(e.stage == "rerank" and e.data.get("constraints_raised") for e in r.document.trace)
    # the question's own answer keeps its place ahead of the constraints
    for query, answer in (("what is the serial number", "BX-9920-114"),
                          ("where should the replacement be delivered", "14 Elm Street")):
        assert answer in c.compress(TICKET, query=query, budget=120).text, query


@pytest.mark.parametrize("sentence, constraint", [
    ("Please note: do not call me, I work night shifts.", True),
    ("Email only, please.", True),
    ("If a technician has to come, it must never be before 9am.", True),
    ("I do not want a refund.", True),
    ("I want a replacement, not a repair.", True),
    ("Again, nothing before 9am, and not on a Friday.", True),
    ("If a new installation is needed, I expect not to be charged again.", True),
    ("Also I cannot leave before 10:00 because I have a meeting.", True),
    ("My wife keeps her flight on 14 May, please do not change her ticket.", True),
    ("Charge any difference to my Visa, never to the gift card.", True),
    ("I'm allergic to penicillin.", True),
    ("请勿致电给我，只接受邮件。", True),
    ("我不要退款，只要换货。", True),
    # QA: conditions said without "do not … me"
    ("No calls before 4 pm, please.", True),
    ("Contact me by email, not phone.", True),
    ("晚上八点以后不要给我打电话。", True),
    ("以后别再打扰我了。", True),
    ("I don't think we should do that.", False),
    ("Don't worry about it.", False),
    ("Don't get me wrong, it works.", False),
    ("The tenant shall not sublet.", False),
    ("We need to discuss the budget.", False),
    ("I want to talk about the remote.", False),
    ("Please confirm your address.", False),
    ("Yeah, I don't know.", False),
    ("该条款仅在工作日适用。", False),
    # QA: prohibitions and preferences that are not the writer's conditions on how they are treated
    ("Do not expose the drill to rain or wet conditions.", False),
    ("Never carry the charger by its cord.", False),
    ("请勿在工作时间以外致电。", False),
    ("Lena: I don't want to rush the migration.", False),
    ("Please don't forget the minutes.", False),
    ("We prefer the second candidate.", False),
    ("We require the contractor to maintain insurance.", False),
    ("Please note that the office is closed on Monday, not Tuesday.", False),
    ("They never told us about the price increase.", False),
    ("Our revenue grew in the third quarter, not in the second.", False),
    ("The support line is open on weekdays only.", False),
    ("Never before in the company's history was revenue this high.", False),
    ("Don't let the perfect be the enemy of the good.", False),
    ("我们不同意对方提出的延期方案。", False),
    ("请别忘了周五提交周报。", False),
    ("There were no delays before 9 am.", False),
    ("Our team met on Friday, not Monday.", False),
    ("不要让客户等待超过十分钟。", False),
])
def test_what_counts_as_a_user_constraint(sentence, constraint):
    from odcf.stages.rank import USER_CONSTRAINT_RE

    assert bool(USER_CONSTRAINT_RE.search(sentence)) is constraint


def test_constraints_rank_after_the_two_best_other_segments_of_their_source_headings_aside():
    from odcf.document import Segment
    from odcf.stages.rank import lift_constraints

    texts = [("# Ticket 7: replacement", "heading"), ("The serial is BX-9920-114.", "sentence"),
             ("Please do not call me; email only.", "sentence"), ("It shipped on 2 May.", "sentence"),
             ("Coffee was served.", "sentence")]
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind=k) for i, (t, k) in enumerate(texts)]
    scores, raised = lift_constraints(segs, {"s0": 1.0, "s1": 0.9, "s2": 0.1, "s3": 0.5, "s4": 0.3})
    assert raised == 1 and scores["s2"] == pytest.approx(0.5 - 1e-6)
    assert lift_constraints(segs, {"s0": 1.0, "s1": 0.9, "s2": 0.95, "s3": 0.5, "s4": 0.3})[0]["s2"] == 0.95  # never lowered
    # a system prompt's or an agent's "Do not …" is policy, not the user's constraint (an airline policy's
    # prohibitions, raised, took the room of booking codes); a user's turn is raised
    for speaker, raised in (("[system]", 0), ("[assistant -> get_order]", 0), ("Agent:", 0), ("[user]", 1),
                            ("dana (dba):", 1)):
        said = [s.replace(meta={"speaker": speaker}) if s.id == "s2" else s for s in segs]
        assert lift_constraints(said, {"s0": 1.0, "s1": 0.9, "s2": 0.1, "s3": 0.5, "s4": 0.3})[1] == raised, speaker


def test_a_warning_says_when_the_best_match_for_the_query_did_not_fit(plan):
    # QA: the 212-token clause that answered the query did not fit in 120 tokens; two unrelated
    # clauses went out and the record had no warning
    long_clause = ("2.1 The Tenant is not liable for management fees above 3% of the gross rent, for structural "
                   "repairs, for land tax or for insurance excess, " + "and for any other outgoing of the building "
                   "that the Landlord incurs for its own benefit, " * 8 + "whatever the lease says elsewhere.")
    text = long_clause + "\n\n3.1 The Premises are used as offices.\n\n6.1 Holding over is monthly."
    query = "which outgoings is the tenant not liable for, and the cap on management fees"
    r = make(plan).compress(text, query=query, budget=40)
    (warning,) = [w for w in r.record["warnings"] if "ranked first for the query" in w]
    assert "#0 (score 1.00), was left out" in warning and "budget of 40" in warning
    # and how much room was left: "needs 22 tokens, more than the room left in the budget of 35" read as a contradiction
    assert f"({40 - r.tokens_out} left after the {r.tokens_out} tokens delivered" in warning, warning
    assert "management fees above 3%" not in r.text
    wide = make(plan).compress(text, query=query, budget=400)
    assert "management fees above 3%" in wide.text
    assert not [w for w in wide.record["warnings"] if "ranked first for the query" in w]


def test_a_warning_says_when_a_lead_in_that_ranks_first_did_not_fit_with_its_list(plan):
    # QA: "15.2 The Customer may terminate immediately … if the Supplier:" ranked first and went out with none of its
    # items (a lead-in goes only with a part of its block), and the record had no warning
    items = "\n".join(f"({c}) suffers an insolvency event of kind {c}, as defined in Schedule 4, part {k}, which "
                      "applies to each of its group companies;" for k, c in enumerate("abcd", 1))
    text = ("15.1 Either party may terminate on 6 months' notice.\n\n15.2 The Customer may terminate immediately "
            "by notice if the Supplier:\n\n" + items + "\n\n16.1 Fees are due in 30 days.")
    query = "may the customer terminate immediately by notice if the supplier"
    r = make(plan).compress(text, query=query, budget=30)
    segs = {s.id: s for s in r.document.segments}
    top = max(segs.values(), key=lambda s: s.score or 0)
    assert top.text.startswith("15.2") and "15.2" not in r.text
    (warning,) = [w for w in r.record["warnings"] if "ranked first for the query" in w]
    assert f"{top.id} (score" in warning and "budget of 30" in warning


def test_a_heading_corrects_nothing():
    # QA: "## Addendum 1 (issued 20 March 2025)" was read as a correction ("addendum") of the RFP's "Issued by …
    # Issue date" block, which was then delivered only with the heading and recorded as stale; the addendum's
    # own change under it (14 April -> 28 April) stays linked
    from dataclasses import replace

    from odcf.stages.rank import correction_links

    segs = _segs("**Issued by:** City of Brennfeld, Procurement Office\n**Issue date:** 3 March 2025",
                 "| Proposal due date | 14 April 2025, 14:00 CET |",
                 "## Addendum 1 (issued 20 March 2025)",
                 "Q3. The proposal due date is extended to 28 April 2025, 14:00 CET.")
    segs[2] = replace(segs[2], kind="heading")
    assert correction_links(segs) == {"s3": ["s1"]}


EN_CLAUSES = (
    "Section 7 Liability for breach\n"
    "7.1 If the Seller delivers late, it shall pay liquidated damages of 0.5% of the contract price per day of delay; "
    "where the delay exceeds 30 days the Buyer may terminate.\n"
    "7.2 Liquidated damages for late delivery shall not exceed 10% of the contract price.\n"
    "7.3 If the Buyer pays late, it shall pay interest of 0.3% per day on the overdue amount, capped at 5% of the "
    "overdue amount.\n"
    "7.4 If the equipment does not meet the quality standard, the Buyer may reject it. Besides replacing it, the Seller "
    "shall pay damages of 5% of the price of the nonconforming equipment.\n"
    "7.5 If the Seller fails to respond within the warranty period as required by Section 6.2, it shall pay RMB 5,000 "
    "per occurrence. After more than 3 occurrences, the Buyer may deduct the amount from the retention.\n"
    "7.6 A party prevented by force majeure is not liable for breach, but must notify the other party within 5 days and "
    "provide evidence within 15 days. Failing timely notice, the party shall not be released from liability.")


def test_a_clause_line_delivered_in_part_stays_under_its_own_number_within_the_budget():
    # QA: "Besides replacing it, …" (7.4) and "Failing timely notice, …" (7.6) were appended to the line of 7.3, so
    # 7.3 read as holding the damages for nonconforming equipment
    own = {line.split(" ", 1)[0]: line for line in EN_CLAUSES.split("\n")[1:]}
    c = Compressor.from_ontology("legal_contract")
    counter = get_counter("o200k_base")
    seen = 0
    for budget in range(50, 230, 15):
        r = c.compress(EN_CLAUSES, query="how much must the Seller pay for nonconforming equipment or late payment "
                                         "interest", budget=budget)
        assert r.tokens_out <= budget and counter.count(r.text) == r.tokens_out, (budget, r.text)  # marks counted
        for line in r.text.split("\n")[1:]:
            if line in ("", "…") or line.startswith("Section 7"):
                continue
            number, rest = line.split(" ", 1)
            assert number in own and all(part.strip() in own[number] for part in rest.split("…") if part.strip()), (
                budget, line)
        seen += "7.4 … Besides replacing it" in r.text
    assert seen


def test_an_item_of_a_short_list_left_out_is_counted_where_it_is(plan):
    # QA: the Metformin item of a two-item HELD list vanished with no mark, so the text read "the held
    # medication is lisinopril"; so did the Stopped list's items
    text = ("# Discharge medications\n\n**HELD — do not take until told by your doctor:**\n\n"
            "- Metformin 1000 mg twice daily: held for AKI; restart at no more than 500 mg twice daily only if eGFR "
            "≥30 mL/min/1.73m2.\n- Lisinopril 20 mg once daily: held for AKI and low blood pressure; review at "
            "follow-up.\n\n**Stopped:**\n\n- Ibuprofen as needed: stopped permanently. Do not take NSAIDs (ibuprofen, "
            "naproxen, diclofenac) because of chronic kidney disease and apixaban.\n- Codeine: stopped (intolerance).\n")
    c = Compressor.from_ontology("medical_records")
    seen = 0
    for budget in range(40, 140, 8):
        r = c.compress(text, query="Which medicines are held, and is lisinopril held because of low blood pressure?",
                       budget=budget)
        assert r.tokens_out <= budget
        for title in ("**HELD", "**Stopped"):
            if title not in r.text:
                continue
            under = r.text.split(title)[1].split("**\n", 1)[1].split("\n\n**")[0]
            items = [ln for ln in under.split("\n") if ln.startswith("- ")]
            marks = [int(ln[len("[…"):].split()[0]) for ln in under.split("\n") if ln.startswith("[…")]
            assert len(items) + sum(marks) == 2, (budget, r.text)  # every item there, or counted where it was
            seen += bool(marks)
    assert seen


def test_a_heading_lends_its_score_to_nothing_it_heads():
    # QA: asked for the discharge medications, "## Discharge Diagnoses" (0.68) took its list (0.48, 88 tokens)
    # at its own score, ahead of the "Continue / new" list (0.63), which was left out for "no room": the section
    # read as if the patient went home on no active drugs. A lead-in still brings its list (see above)
    from odcf.document import Document, Source
    from odcf.plan.model import Plan
    from odcf.stages.budget import Budgeter
    from odcf.stages.segment import Segmenter

    text = ("## Discharge Diagnoses\n\n" + "\n".join(f"{k}. Diagnosis number {k} of this admission, coded (I{k}0.{k})"
                                                      for k in range(1, 7)) +
            "\n\n## Discharge Medications\n\n**Continue / new:**\n\n- Cefuroxime 500 mg by mouth twice daily.\n"
            "- Apixaban 2.5 mg by mouth twice daily.\n- Furosemide 20 mg by mouth once daily.\n\n"
            "**HELD — do not take until told by your doctor:**\n\n- Lisinopril 20 mg once daily: held for AKI.\n")
    plan = Plan(domain="t")
    doc = Segmenter(max_list_tokens=100)(Document.from_sources([Source(id="d", text=text, kind="markdown")]), plan)
    scores = {"## Discharge Diagnoses": 0.68, "1.": 0.48, "6.": 0.4, "## Discharge Medications": 0.96,
              "**Continue": 0.3, "- Cefuroxime": 0.63, "**HELD": 0.8, "- Lisinopril": 0.66}
    segs = tuple(s.replace(score=next(v for k, v in scores.items() if s.text.startswith(k))) for s in doc.segments)
    diagnoses, continued = (next(s.id for s in segs if s.text.startswith(k)) for k in ("1.", "- Cefuroxime"))
    counter = get_counter("o200k_base")
    seen = 0
    for budget in range(30, 160, 4):
        out = Budgeter(annotate=False)(doc.replace(segments=segs, budget=budget), plan)
        kept = {s.id for s in out.segments if not s.dropped}
        assert counter.count(next(s.text for s in segs if s.id == diagnoses)) > counter.count(
            next(s.text for s in segs if s.id == continued))
        # the larger, lesser list never goes where the better one had no room
        assert diagnoses not in kept or continued in kept, budget
        seen += continued in kept and diagnoses not in kept
    assert seen


@pytest.mark.parametrize("stale, fix", [
    ("The recommended dose is 1000 mg per cycle.", "Correction: the dose is now 800 mg per cycle (previously 1,000 mg)."),
    ("The recommended dose is 1,000 mg per cycle.", "Correction: the dose is now 800 mg per cycle (previously 1000 mg)."),
    ("The equipment is warranted for a period of two (2) years from delivery.",
     "Amendment 1: the warranty period is reduced from 2 years to 18 months."),
])
def test_a_correction_links_its_old_value_however_the_figures_are_written(stale, fix):
    # QA: "(previously 1,000 mg)" linked nothing to "1000 mg", nor "from 2 years" to "two (2) years", and the
    # superseded dose and term went out as current
    from odcf.document import Segment
    from odcf.stages.rank import correction_links

    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence")
            for i, t in enumerate([stale, "Lunch is served at noon.", fix])]
    assert correction_links(segs) == {"s2": ["s0"]}


def test_the_step_a_query_asks_for_is_delivered_from_a_long_procedure_at_a_small_budget(plan):
    # QA: step 8 of a 12-step procedure, the one asked for, was in a part of about 100 tokens (five steps)
    # that did not fit a budget of 70: only the title and the last line were delivered
    steps = [f"- Step {k}: check valve V-{100 + k} and log the reading in the shift book." for k in range(1, 13)]
    steps[7] = "- Step 8: close valve V-108 if the pressure exceeds 6.5 bar, then call the duty engineer."
    text = "Shutdown procedure.\n\n" + "\n".join(steps) + "\n\nEnd of procedure.\n"
    for budget in (50, 70):
        r = make(plan).compress(text, query="what to do if the pressure exceeds 6.5 bar?", budget=budget)
        assert r.tokens_out <= budget
        assert steps[7] in r.text, (budget, r.text)
        lines = r.text.split("\n")[1:]
        marks = [int(ln[len("[…"):].split()[0]) for ln in lines if ln.startswith("[…")]
        assert lines[0].startswith("[…") and len([ln for ln in lines if ln.startswith("- Step")]) + sum(marks) == 12


def test_the_end_of_a_sentence_that_runs_over_a_list_and_limits_it_goes_with_the_list():
    # QA: "9.3 … neither party shall be liable for:" and its items (a)-(c) were delivered, "except that the Customer
    # may recover its reasonable costs … up to £250,000." left out: the exclusion read as absolute
    text = ("9.1 The Supplier's total liability is capped at £2,000,000.\n\n"
            "9.3 Subject to clause 9.1, neither party shall be liable for:\n(a) loss of profits;\n"
            "(b) loss of business or goodwill;\n(c) indirect or consequential loss,\n"
            "except that the Customer may recover its reasonable costs of procuring substitute Deliverables up to "
            "£250,000.\n\n9.4 Service Credits are capped at 15% of the monthly Charges.\n\n"
            "10.1 Invoices shall quote the purchase order number.\n")
    c = Compressor.from_ontology("legal_contract")

    def text_at(budget):
        r = c.compress(text, query="What is the supplier's liability cap and what is excluded from it?", budget=budget)
        assert r.tokens_out <= budget
        return r.text

    only_with(text_at, "(c) indirect or consequential loss,",
              "(c) indirect or consequential loss,\nexcept that the Customer may recover", range(40, 200, 8))


def test_the_drug_a_query_asks_for_is_delivered_from_a_long_nested_list_item_with_its_parent_line():
    # QA: "- Cardiac" and its four drugs were one part of 140 tokens: at 120-151 tokens the apixaban dose asked
    # for was never delivered; now the item is cut at its sub-items, each delivered under "- Cardiac"
    drugs = ["Bisoprolol 2.5 mg once daily (NEW), uptitrate every 2 weeks to a target of 10 mg if the heart rate is over 60",
             "Furosemide 40 mg once daily in the morning (dose REDUCED from 80 mg), weigh daily and call if up 2 kg",
             "Sacubitril/valsartan 24/26 mg twice daily (NEW), not until 36 hours after the last ramipril dose",
             "Apixaban 2.5 mg twice daily (NEW), a reduced dose for creatinine over 133 and weight under 60 kg"]
    text = ("# Discharge Summary\n\n## Medications on Discharge\n\n- Cardiac\n"
            + "".join(f"  - {d}\n" for d in drugs)
            + "- Diabetes\n  - Empagliflozin 10 mg once daily (NEW)\n- Other\n  - Omeprazole 20 mg once daily\n\n"
            "## Follow-up\n\nRenal function and potassium in 1 week at the GP surgery.\n")
    c = Compressor.from_ontology("medical_records")
    for budget in (80, 100, 120):
        r = c.compress({"id": "d.md", "text": text}, query="What is the apixaban dose?", budget=budget)
        assert r.tokens_out <= budget
        assert f"  - {drugs[3]}\n[…2 items]" in r.text, (budget, r.text)
        # under its parent line, the other cardiac drugs delivered or counted
        cardiac = r.text.split("\n- Cardiac\n", 1)[1].split("\n[…2 items]", 1)[0].split("\n")
        marks = [int(ln[len("  […"):].split()[0]) for ln in cardiac if ln.startswith("  […")]
        assert all(ln.startswith(("  - ", "  […")) for ln in cardiac) and len(cardiac) - len(marks) + sum(marks) == 4
        if budget == 80:  # the answer alone under its parent line
            assert "\n- Cardiac\n  […3 items]\n  - Apixaban" in r.text, r.text



RUNBOOK = ("# Failover runbook\n\n1. Page the on-call DBA.\n2. Promote the standby:\n```\n"
           "pg_ctl promote -D /var/lib/postgresql/16/main\n```\n"
           "3. Update the DATABASE_URL secret to point at pg-standby-2 and restart the pods.\n"
           "4. Check the error rate on the payments dashboard for 10 minutes.\n"
           "5. DO NOT flush the Redis idempotency cache; duplicate charges will follow.\n"
           "6. Unfreeze deploys and remove the deploy-freeze label.\n")


def test_a_list_after_an_items_code_block_goes_on_the_list_not_the_item():
    # regression QA: "2. Promote the standby:" introduced its code block, and the part of the list after the code
    # ("5. DO NOT flush …") was then tied to it too: the step went out ending on a colon, without its code, and
    # the mark for item 2 came after item 6
    c = Compressor.from_ontology("agent_ops")

    def text_at(budget):
        r = c.compress({"id": "rb.md", "text": RUNBOOK}, query="can I flush the redis cache?", budget=budget)
        assert r.tokens_out <= budget
        return r.text

    only_with(text_at, "2. Promote the standby:", "2. Promote the standby:\n```\npg_ctl promote", range(30, 160, 5))
    assert "5. DO NOT flush the Redis idempotency cache" in text_at(60)
    seen = 0
    for budget in range(30, 160, 5):  # items 1 and 5 delivered: every item is there or counted where it was
        text = text_at(budget)
        if "1. Page the on-call DBA." in text and "5. DO NOT" in text:
            seen += 1
            items = [ln for ln in text.split("\n") if ln[:2] in {f"{k}." for k in range(1, 7)}]
            marks = [int(ln[len("[…"):].split()[0]) for ln in text.split("\n") if ln.startswith("[…")]
            assert len(items) + sum(marks) == 6, (budget, text)
    assert seen


def test_the_end_of_a_sentence_over_a_list_in_parts_goes_with_every_part():
    # regression QA: with the list in two parts, "(a) … (b) loss or corruption of data …" went out without
    # "except that the Customer may recover the reasonable costs of restoring lost data …", which is the answer
    text = ("## 15. Limitation of Liability\n\n15.1 Neither party shall be liable to the other for:\n"
            "(a) loss of profits, revenue or anticipated savings;\n"
            "(b) loss or corruption of data, save where caused by a breach of clause 16;\n"
            "(c) loss of goodwill or reputation;\n(d) any indirect or consequential loss,\n"
            "except that the Customer may recover the reasonable costs of restoring lost data up to £250,000 in "
            "aggregate.\n\n15.2 The Supplier's total liability in any contract year shall not exceed 125% of the "
            "Charges paid in that year.\n")
    c = Compressor.from_ontology("legal_contract")
    for shown in ("(a) loss of profits", "(b) loss or corruption of data"):
        only_with(lambda b: c.compress(text, query="Is the supplier liable for loss of data?", budget=b).text,
                  shown, "except that the Customer may recover", range(40, 200, 10))


def test_a_run_line_and_a_last_item_ending_in_a_colon_go_with_their_code_blocks():
    # regression QA: "4. Drain traffic from the primary region. Run:" (its "Run:" a piece of its own, no list
    # mark) and "3. Confirm replica lag … on the standby:" (in a part with item 2) went out without their code
    text = ("# Runbook\n\n## Procedure\n\n1. Announce the failover in #incident-payments and page the on-call DBA.\n"
            "2. Freeze deploys: set the deploy-freeze label on the payments-api repository.\n"
            "3. Confirm replica lag is below 5 seconds on the standby:\n```\n"
            "psql -h pg-standby-2 -c \"select now() - pg_last_xact_replay_timestamp();\"\n```\n"
            "4. Drain traffic from the primary region. Run:\n```\n"
            "kubectl -n payments scale deploy/payments-api --replicas=0 --context=eu-west-1\n```\n"
            "5. Promote the standby:\n```\npg_ctl promote -D /var/lib/postgresql/16/main\n```\n"
            "6. Update the DATABASE_URL secret and restart the pods.\n")
    c = Compressor.from_ontology("agent_ops")
    for query in ("how do I promote the standby database", "how to drain traffic from the primary"):
        def text_at(budget, query=query):
            return c.compress({"id": "runbook.md", "text": text}, query=query, budget=budget).text

        for lead, code in (("Run:", "kubectl -n payments scale"), ("on the standby:", "psql -h pg-standby-2")):
            only_with(text_at, lead, code, range(30, 200, 10))  # 190: all of it
            only_with(text_at, code, lead, range(30, 200, 10))


ONCALL = ("# orders-api — On-call Runbook\n\nOwner: team-orders (#orders-oncall). Last reviewed: 2025-04-11.\n\n"
          "## 1. Service overview\n\norders-api runs on Kubernetes in the `orders` namespace, 4 replicas behind the "
          "`orders-gw` ingress. It depends on PostgreSQL cluster `pg-ord-02` (primary in us-east-1a) and Redis "
          "`redis-ord-cache`.\n\n## 2. Alert: OrdersHighErrorRate\n\nFires when the 5xx rate exceeds 3% for 5 minutes.\n\n"
          "1. Check the pods:\n\n```bash\nkubectl -n orders get pods -l app=orders-api\n"
          "kubectl -n orders logs deploy/orders-api --since=10m | grep -E \"ERROR|FATAL\"\n```\n\n"
          "2. If the logs show `connection refused` to `pg-ord-02`, go to section 4. Do not restart the pods: "
          "restarting drops in-flight idempotency keys and can cause double charges.\n\n"
          "3. If the error is `rate limit exceeded` from the payment gateway, enable the degraded mode flag:\n\n"
          "```bash\ncurl -X POST https://flags.internal/api/v1/flags/orders.degraded_mode \\\n"
          "  -H \"Authorization: Bearer $FLAG_TOKEN\" \\\n  -d '{\"enabled\": true, \"ttl_minutes\": 30}'\n```\n\n"
          "Degraded mode queues orders under USD 300 and rejects larger ones. Never leave it on for more than 30 "
          "minutes without paging the orders lead.\n\n## 3. Database failover\n\nFailover to the replica in us-east-1b "
          "is manual and requires approval from the incident commander.\n\n```bash\n"
          "patronictl -c /etc/patroni/pg-ord-02.yml failover --candidate pg-ord-02-b --force\n"
          "kubectl -n orders rollout restart deploy/orders-api\n```\n\n## 4. Escalation\n\n"
          "- Orders lead: page via PagerDuty service `ORD-LEAD` (P1 only).\n"
          "- Security incidents: do not investigate yourself; page `SEC-ONCALL` immediately.\n")


def test_a_later_sentence_of_a_list_item_that_limits_it_goes_with_its_first():
    # regression QA: "2. If the logs show `connection refused` …, go to section 4." (score 1.0) was delivered at
    # 240-250 tokens without the rest of its step, "Do not restart the pods: …" (0.95, 20 tokens): its room went
    # to "It depends on … pg-pay-01" (a hit) with the sentence it needs (0.50) and then to a 0.28 filler, and the
    # step read as whole next to a failover block that restarts the pods
    c = Compressor.from_ontology("agent_ops")
    query = "What do I do when logs show connection refused to pg-ord-02? Is restarting the pods ok?"
    results = {}

    def text_at(budget):
        r = results[budget] = c.compress({"id": "runbook.md", "text": ONCALL}, query=query, budget=budget)
        assert r.tokens_out <= budget
        return r.text

    only_with(text_at, "go to section 4.", "go to section 4. Do not restart the pods: restarting drops", range(60, 320, 4))
    reasons = [why for r in results.values() for s in r.document.segments
               if s.dropped and s.text.startswith("2. If the logs show") for why in s.reasons
               if why.startswith("budget:")]
    assert reasons and all("goes only with the later sentences of the item that limit it" in why or "no room" in why
                           for why in reasons)
    assert any("goes only with the later sentences of the item that limit it" in why for why in reasons)


MED_NOTE = ("# Medication Reconciliation — Discharge\n\nPatient: MRN 118-204-5531, 81-year-old male\n"
            "Admission: 3 June 2025, urinary tract infection (N39.0)\nDischarge: 10 June 2025\n"
            "Allergies: penicillin (anaphylaxis), sulfa drugs (rash)\n\n## Background\n\n"
            "The patient has type 2 diabetes (E11.9), atrial fibrillation (I48.91) and stage 3b chronic kidney disease "
            "(N18.32). eGFR on admission was 36 mL/min/1.73m2, falling to 29 mL/min/1.73m2 on day 2 and recovering "
            "to 34 mL/min/1.73m2 at discharge. He lives with his wife, who manages his medications using a weekly "
            "pill organiser.\n\n## Pre-admission medications\n\n- Metformin 1000 mg twice daily\n"
            "- Apixaban 5 mg twice daily\n- Bisoprolol 2.5 mg once daily\n- Atorvastatin 40 mg at bedtime\n"
            "- Furosemide 40 mg once daily\n- Ibuprofen 400 mg as needed for back pain\n\n"
            "## Changes during admission\n\nMetformin was held on admission because of the acute kidney injury. "
            "It was restarted at a reduced dose of 500 mg twice daily on day 5, as eGFR remained above 30 "
            "mL/min/1.73m2. Do not increase the dose unless eGFR is above 45 mL/min/1.73m2 on two consecutive "
            "tests.\n\nApixaban was reduced from 5 mg twice daily to 2.5 mg twice daily because the patient meets "
            "two dose-reduction criteria (age 81 and creatinine 1.7 mg/dL).\n\nIbuprofen was stopped permanently. "
            "Do not restart NSAIDs.\n\nNitrofurantoin 100 mg twice daily was given for 5 days and completed on 8 June "
            "2025. It was chosen instead of amoxicillin because of the penicillin allergy.\n\nFurosemide was held "
            "from day 1 to day 3 and restarted at 20 mg once daily (previously 40 mg).\n\n## Discharge medications\n\n"
            "- Metformin 500 mg twice daily (reduced)\n- Apixaban 2.5 mg twice daily (reduced)\n"
            "- Bisoprolol 2.5 mg once daily (unchanged)\n- Atorvastatin 40 mg at bedtime (unchanged)\n"
            "- Furosemide 20 mg once daily (reduced)\n- Paracetamol 1 g up to four times daily as needed for back pain "
            "(new; maximum 3 g per day because of weight under 60 kg)\n\n## Follow-up\n\nRepeat renal function and "
            "potassium within 7 days at the GP practice. The GP should review the furosemide dose if weight increases "
            "by more than 2 kg in 3 days. Anticoagulation clinic appointment on 19 June 2025.\n\nHis wife was counselled "
            "and given an updated medication list. She asked that the pharmacy not switch apixaban to a generic brand "
            "without telling her, because the tablet colour confused her husband last time.\n")


def test_a_sentence_that_points_back_is_ranked_with_the_sentence_it_points_back_to():
    # regression QA: "It was restarted at a reduced dose of 500 mg …", the discharge dose asked for, names metformin
    # only through "It": ranked alone it came below a furosemide dose nobody asked about, and "Metformin was held on
    # admission …" went out without it (the paragraph read as if metformin stayed on hold); "Do not increase the
    # dose unless …" was left out too, and delivered alone would forbid it of whatever drug the text above names
    c = Compressor.from_ontology("medical_records")
    query = "What are the discharge doses of metformin and apixaban, and any restrictions on changing them?"
    full = c.compress({"id": "med.md", "text": MED_NOTE}, query=query, budget=100000)
    seg = {s.text: s for s in full.document.segments}
    restarted = next(s for t, s in seg.items() if t.startswith("It was restarted"))
    furosemide = next(s for t, s in seg.items() if t.startswith("Furosemide was held"))
    assert restarted.score > furosemide.score
    r = c.compress({"id": "med.md", "text": MED_NOTE}, query=query, budget=round(full.tokens_in * 0.4))
    assert "It was restarted at a reduced dose of 500 mg" in r.text and "Do not increase the dose unless" in r.text, r.text

    def text_at(budget):
        return c.compress({"id": "med.md", "text": MED_NOTE}, query=query, budget=budget).text

    only_with(text_at, "Do not increase the dose", "mL/min/1.73m2. Do not increase the dose", range(60, 360, 20))


def test_a_prohibition_points_back_only_to_what_the_sentence_before_names():
    from odcf.textutil import points_back

    assert points_back("Do not increase the dose unless eGFR is above 45.", "It was restarted at a reduced dose.")
    assert points_back("Never leave it on for more than 30 minutes.", "Degraded mode queues charges.")
    assert not points_back("Never leave it on for more than 30 minutes.", "Degraded mode queues charges.",
                           same_paragraph=False)  # across paragraphs, a prohibition stands alone
    for alone in ("Do not restart the pods.", "Do not increase the dose of insulin.", "Do not give the Supplier notice.",
                  "Increase the service level."):
        assert not points_back(alone, "Restart the service at the new dose level."), alone


LANES = ("## 2. Transit times\n\n"
         "2.1 The Carrier shall deliver each shipment within the transit time of its lane below.\n\n"
         "2.2 On-time delivery is measured monthly per lane against the target below; a missed target "
         "earns the credit in the last column.\n\n"
         "| Lane | Mode | Transit days | OTD target | Credit |\n|---|---|---|---|---|\n"
         + "\n".join(f"| {a}-{b} | {m} | {d} | {t}% | EUR {c}.00 |" for a, b, m, d, t, c in (
             ("DEHAM", "PLWAW", "FTL", 2, "96.0", 80), ("DEHAM", "PLWAW", "LTL", 3, "94.5", 60),
             ("DEMUC", "ITMIL", "FTL", 2, "95.5", 90), ("DEMUC", "ITMIL", "LTL", 4, "94.0", 66),
             ("DEBER", "CZPRG", "FTL", 1, "97.0", 70), ("DEBER", "CZPRG", "LTL", 2, "95.0", 55),
             ("DEFRA", "FRPAR", "FTL", 2, "96.5", 85), ("DEFRA", "FRPAR", "LTL", 3, "94.0", 62),
             ("DEHAM", "DKCPH", "FTL", 1, "97.5", 75), ("DEHAM", "DKCPH", "LTL", 2, "95.5", 58),
             ("DESTR", "ATVIE", "FTL", 2, "96.0", 82), ("DESTR", "ATVIE", "LTL", 3, "94.5", 64)))
         + "\n\n2.3 Transit time runs from collection to delivery, excluding weekends and public holidays. "
         "The OTD target of a lane applies to each month separately, and a missed target is credited "
         "on the next invoice.\n")


def test_a_word_of_a_shape_the_plan_declares_is_an_identifier_the_query_names(plan):
    # QA: the user's anchor `\b[A-Z]{5}-[A-Z]{5}\b` declares lanes; "DEMUC-ITMIL" in the question did not
    # count as named (no digit), its row scored 0.78 and was left out at 25%, where "DEMUC-ITMIL7" came first
    from dataclasses import replace

    from odcf.plan.model import Anchor
    from odcf.stages.rank import query_identifiers

    lanes = replace(plan, protection=replace(plan.protection, anchors=(
        *plan.protection.anchors, Anchor("lane", r"\b[A-Z]{5}-[A-Z]{5}\b"),
        Anchor("party", r"\b(?:the\s)?(?:Customer|Carrier)\b"))))
    query = "What is the transit time and OTD target for DEMUC-ITMIL LTL, and what credit applies if it is missed?"
    r = Compressor(lanes).compress(LANES, query=query, budget=110, annotate=False)
    assert "| DEMUC-ITMIL | LTL | 4 | 94.0% | EUR 66.00 |" in r.text, r.text
    assert r.tokens_out <= 110
    ranks = [e.data for e in r.document.trace if e.stage in ("rank", "rerank")]
    assert all(d.get("query_identifiers") == ["DEMUC-ITMIL"] for d in ranks), ranks
    # a plain word an anchor matches ("Customer", a party) is not an identifier; nor without the anchor
    anchors = [a.regex for a in lanes.protection.anchors]
    assert query_identifiers("What must the Customer pay for DEHAM-PLWAW?", anchors) == ["DEHAM-PLWAW"]
    assert query_identifiers("What must the Customer pay for DEHAM-PLWAW?") == []


DPA = ("Data Processing Addendum\n\n"
       "This Addendum forms part of the Master Services Agreement and is entered into in accordance with the GDPR and "
       "the UK GDPR. Terms defined in the GDPR have the same meaning in this Addendum. The Processor shall keep records "
       "of processing as required by Article 30 GDPR. Each party shall appoint a contact for GDPR matters and notify "
       "the other of any change.\n\n"
       "The Processor shall notify the Controller of a Personal Data Breach without undue delay and in any event within "
       "36 hours after becoming aware of it, giving the categories and approximate number of data subjects concerned.\n\n"
       "Sub-processors are listed in Annex 3. The Processor shall give 30 days' notice of a new sub-processor.\n")


def test_an_acronym_a_broad_anchor_matches_is_no_identifier_the_query_names(plan):
    # QA s27/qa7 #8: under a user's anchor for tickers and codes, `\b[A-Z]{2,6}\b`, the query's "GDPR" was an
    # identifier: the four GDPR boilerplate sentences ranked first and the 36-hour answer was left out at 50 and 70
    from dataclasses import replace

    from odcf.plan.model import Anchor
    from odcf.stages.rank import query_identifiers

    acro = replace(plan, protection=replace(plan.protection, anchors=(
        *plan.protection.anchors, Anchor("acronym", r"\b[A-Z]{2,6}\b"), Anchor("lane", r"\b[A-Z]{5}-[A-Z]{5}\b"))))
    query = "Under GDPR, within how many hours must the Processor notify a breach?"
    for budget in (50, 70):
        r = Compressor(acro).compress(DPA, query=query, budget=budget, annotate=False)
        assert "within 36 hours after becoming aware of it" in r.text, r.text
        assert r.tokens_out <= budget
        ranks = [e.data for e in r.document.trace if e.stage in ("rank", "rerank")]
        assert all(not d.get("query_identifiers") for d in ranks), ranks
    anchors = [a.regex for a in acro.protection.anchors]
    assert query_identifiers("Is HTTP or GDPR NOTE in scope for DEMUC-ITMIL?", anchors) == ["DEMUC-ITMIL"]


INCIDENT = ("# Incident Report IR-2026-014 — Ransomware precursor on the finance file server\n\n"
            "## Summary\n\n"
            "On 2026-03-08 an attacker gained access through the unpatched gateway and hijacked a session of the "
            "service account svc-backup. The attacker moved to srv-fin-02 and staged 41.7 GB of finance data. "
            "Exfiltration of 3.2 GB to 185.220.101.47 is confirmed; the rest was blocked by the firewall.\n\n"
            "## Root cause\n\n"
            "The gateway gw-ext-01 ran build 13.1-48.47, which is vulnerable to CVE-2023-4966. The patch was "
            "scheduled for 2026-02-15 but was postponed because the change window was cancelled.\n\n"
            "## Impact\n\n"
            "- 3.2 GB exfiltrated: payroll exports for 2,418 employees. Customer card data was not affected.\n"
            "- srv-fin-02 offline for 31 hours; month-end close delayed by 2 business days.\n\n"
            "## Remediation\n\n"
            "1. Patch gw-ext-01 to build 13.1-49.15 and terminate all sessions. Done 2026-03-09.\n"
            "2. Rebuild srv-fin-02 from a backup taken before 2026-03-08 02:14.\n")


@pytest.mark.parametrize("text, query, budget, wanted", [
    (INCIDENT, "what was the impact", 75, ["2,418 employees", "offline for 31 hours"]),
    (INCIDENT, "root cause of the impact", 75, ["vulnerable to CVE-2023-4966"]),
    (CLAUSES.replace("## Section 12 Term and Termination", "## 12. Termination"),
     "What does the agreement say about termination?", 60, ["not cured within 30 days"]),
])
def test_a_section_the_query_names_by_its_short_title_ranks_first(plan, text, query, budget, wanted):
    # QA: "what was the impact" scored "## Impact" 1.00 and its bullets 0.38 and below: the heading was
    # dropped (never sent alone) and the Impact bullets left out; a short title whose words the query
    # names as its topic now brings its section, as "Section 12" does
    for stages in (CORE, None):
        r = Compressor(plan, stages=stages).compress(text, query=query, budget=budget, annotate=False)
        assert all(w in r.text for w in wanted), r.text
        assert r.tokens_out <= budget


def test_which_headings_a_query_names_by_title():
    from odcf.document import Document, Source
    from odcf.plan.model import Plan
    from odcf.stages.rank import titled_hits
    from odcf.stages.segment import Segmenter

    segs = Segmenter()(Document.from_sources([Source(id="a", text=INCIDENT)]), Plan(domain="t")).segments
    heads = {s.id: s.text for s in segs if s.kind == "heading"}

    def named(query):
        names, hits = titled_hits(segs, query)
        return names, sorted(heads[h] for h in hits if h in heads)

    assert named("what was the impact") == (['(section "Impact")'], ["## Impact"])
    assert named("root cause of the impact") == (['(section "Root cause")'], ["## Root cause"])
    # a heading sharing one word with a longer query, or whose words the query does not all name: nothing
    assert named("which employees' payroll data was exfiltrated, and what was the impact on card data?") == ([], [])
    assert named("summary of the incident") == (['(section "Summary")'], ["## Summary"])
    assert named("ransomware") == ([], [])


REVIEW = ("# Vendor Risk Review: Northwind Logistics\n\n"
          "## Summary\n\n"
          "Northwind Logistics has been a carrier for the group since 2017 and handled 41,200 shipments in 2025, mostly on "
          "the Rotterdam to Milan lane. The review team met the vendor's operations manager twice and visited the Venlo "
          "depot on 14 October 2025. Overall, the relationship is considered strategic and the vendor's service levels "
          "were rated good by 3 of the 4 business units that use it.\n\n"
          "## Risk Factors\n\n"
          "- Concentration: 62% of the group's southbound freight volume goes through Northwind, and no second carrier is "
          "contracted on that lane.\n"
          "- Financial: Northwind's net debt rose to EUR 48.5 million, 4.1x EBITDA, breaching the 3.5x threshold in our "
          "vendor policy.\n"
          "- Cyber: the vendor has no ISO 27001 certificate and failed 2 of 9 controls in our questionnaire.\n\n"
          "## Notes\n\n"
          "Meeting minutes are filed under VR-2025-118.\n")

LEASE = ("# Flat 3B lease\n\n## Rent\n\nRent is EUR 1,450 per month, due on the 1st.\n\n### Notes\n\n"
         "The tenant asked to pay by standing order.\n\n## Deposit\n\nThe deposit is EUR 2,900, returned within 10 "
         "days of the end of the tenancy.\n\n### Notes\n\nThe previous tenant's deposit dispute was settled in March "
         "2025.\n")


def test_a_generic_title_the_query_names_yields_to_the_heading_its_other_words_name(plan):
    # QA s27/qa7 #2: "summary of the risks" named "## Summary" (one word of two): its sentences ranked first as a
    # section and no risk was delivered at 60 or 90 tokens; a title that names a part of any text ("Summary",
    # "Notes") is the query's topic only when its other words name no other heading than those it stands under
    from odcf.document import Document, Source
    from odcf.plan.model import Plan
    from odcf.stages.rank import titled_hits
    from odcf.stages.segment import Segmenter

    def named(text, query):
        segs = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments
        heads = {s.id: f"{s.text} ({s.index})" for s in segs if s.kind == "heading"}
        names, hits = titled_hits(segs, query)
        return names, sorted(heads[h] for h in hits if h in heads)

    assert named(REVIEW, "summary of the risks") == ([], [])
    assert named(REVIEW, "summary") == (['(section "Summary")'], ["## Summary (1)"])
    assert named(REVIEW, "summary of the vendor review")[0] == ['(section "Summary")']  # the title it stands under
    # the notes under "## Deposit", not those under "## Rent"
    assert named(LEASE, "notes about the deposit") == (['(section "Deposit")', '(section "Notes")'], ["## Deposit (5)", "### Notes (7)"])
    for budget in (60, 90):
        r = Compressor(plan).compress(REVIEW, query="summary of the risks", budget=budget, annotate=False)
        assert "## Risk Factors" in r.text and "- Cyber: the vendor has no ISO 27001 certificate" in r.text, r.text
        assert "## Summary" not in r.text and "considered strategic" not in r.text, r.text
        assert r.tokens_out <= budget


def test_a_failure_repeated_in_a_log_is_one_line_and_ranks_below_what_the_query_names(plan):
    # QA: "Why did the rollback not help, what was the root cause, and which P1 action items …?" over a
    # postmortem whose log repeats "… pooler error: no more connections allowed" 41 times (other times,
    # pids, clients): all 41 were lifted as lines reporting a failure, and 15 of them took the whole
    # budget; the "## Root cause" section and the rollback's explanation were dropped
    log = "\n".join(
        f"2025-09-17 13:{m // 2:02d}:{(m * 7) % 60:02d}.{m * 37 % 1000:03d} UTC [{1000 + m * 131}] " + (
            f"WARNING C-0x{(m * 2654435761) % 2**32:08x}: checkout/app@10.42.{m * 3 % 250}.{m * 11 % 250}:"
            f"{30000 + m * 977} pooler error: no more connections allowed (max_client_conn)" if m % 3 == 0 else
            f"LOG stats: {1800 + m * 7} xacts/s, {2000 + m * 5} queries/s, wait {3000000 + m * 4099} us")
        for m in range(120))
    text = ("# Postmortem INC-20931: checkout outage\n\n## Summary\n\n"
            "Checkout returned HTTP 503 for 61% of requests between 13:02 and 14:47 UTC. The rollback of "
            "checkout-api to v4.18.1 did not help because the faulty setting lived in the proxy.\n\n"
            "## Root cause\n\nA pool size meant for staging, 40 instead of 400, was applied to the production "
            "proxy by OPS-7713.\n\n## Log excerpts\n\n```\n" + log + "\n```\n\n## Action items\n\n"
            "| ID | Action | Owner | Due | Priority |\n|---|---|---|---|---|\n"
            "| OPS-7720 | Split the values file per environment | Carlos Ibanez | 2025-09-26 | P1 |\n"
            "| OPS-7721 | Add a manual gate to production syncs | Lena Vogt | 2025-10-03 | P2 |\n")
    query = "Why did the rollback not help, what was the root cause, and which P1 action items are owned by whom?"
    r = make(plan).compress(text, query=query, budget=160, annotate=False)
    assert "40 instead of 400" in r.text, r.text
    assert "faulty setting lived in the proxy" in r.text, r.text
    assert r.text.count("pooler error") <= 1, r.text
    # what a failure hit is still for: the line reporting it, once, when the query asks about a failure
    r = make(plan).compress(text, query="what error did the proxy report?", budget=160, annotate=False)
    assert r.text.count("pooler error: no more connections allowed") >= 1, r.text


def test_a_failure_line_is_one_hit_per_template():
    from odcf.document import Segment
    from odcf.stages.rank import failure_hits

    lines = ["2025-10-02 08:38:12 ERROR [4411] CommitFailedException: Commit cannot be completed",
             "ok: 12 records indexed", "ok: 9 records indexed", "ok: 3 records indexed",
             "2025-10-02 08:43:20 ERROR [4502] CommitFailedException: Commit cannot be completed",
             "ok: 15 records indexed", "ok: 1 record indexed",
             "2025-10-02 08:44:02 ERROR [4502] TimeoutException: poll took 412 s"]
    segs = [Segment(id=f"s{i}", source_id="log", index=i, text=t, original=t, kind="code") for i, t in enumerate(lines)]
    # the second CommitFailedException (another time, another pid) says nothing the first did not
    assert failure_hits(segs, "why did restarting the consumers not help?") == {"s0", "s7"}
    # another charge's failure, another exit code or HTTP status is another failure, not a repeat
    # (QA: "ch_4407" / "ch_4481", "code 1" / "code 137", "HTTP 500" / "HTTP 503" each read as one)
    for pair in (["10:08:40 ERROR charge ch_4407 declined", "10:22:13 ERROR charge ch_4481 declined"],
                 ["2025-03-01T10:05:30Z ERROR worker exited with code 1",
                  "2025-03-01T10:20:30Z ERROR worker exited with code 137"],
                 ["09:14:02 [311] ERROR upstream returned HTTP 500", "09:15:40 [311] ERROR upstream returned HTTP 503"],
                 ["ERROR node07 down after 30 s", "ERROR node08 down after 45 s"]):
        segs = [Segment(id=f"c{i}", source_id="log", index=i, text=t, original=t, kind="code")
                for i, t in enumerate(pair + ["ok"] * 4)]
        assert failure_hits(segs, "which jobs failed and why") == {"c0", "c1"}, pair


def test_lines_reporting_a_failure_rank_below_the_section_and_the_answers_the_query_asks_for(plan):
    # QA: with "root cause" in the query, the lines reporting a failure were lifted with the "## Root
    # cause" section the query names, and above the best sentence for each of its questions: five
    # different errors of a log took the room of the root cause, the rollback's explanation and the owner
    errors = ["ERROR: checkout-api readiness probe failed: HTTP 503 from /healthz on pod checkout-7f9c",
              "ERROR: payment-worker lost its lease on the orders queue and stopped consuming",
              "FATAL: db-proxy-03 refused the connection: too many clients already for role checkout",
              "ERROR: cache-warmer timed out fetching the product catalogue from the catalogue service",
              "ERROR: order-history circuit breaker opened after consecutive upstream timeouts"]
    lines = []
    for i in range(30):
        lines.append(f"13:{i:02d}:10 INFO request completed route=/v2/cart status=200 duration_ms={100 + i * 7}")
        if i % 6 == 0:
            lines.append(f"13:{i:02d}:20 " + errors[i // 6])
    text = ("# Incident INC-9\n\n## Summary\n\nCheckout failed for 90 minutes. The rollback did not help because the "
            "fault was in the proxy configuration, not in the application.\n\n## Root cause\n\n"
            "A pool size meant for staging, 40 instead of 400, was applied to the production proxy by OPS-7713.\n\n"
            "## Logs\n\n```\n" + "\n".join(lines) + "\n```\n\n## Owners\n\nCarlos Ibanez owns the fix, due 2025-09-26.\n")
    for budget in (80, 100, 120):
        r = make(plan).compress(text, query="what was the root cause?", budget=budget, annotate=False)
        assert "40 instead of 400" in r.text, (budget, r.text)
        r = make(plan).compress(text, query="Why did the rollback not help, what was the root cause, and who owns the fix?",
                                budget=budget, annotate=False)
        for answer in ("40 instead of 400", "fault was in the proxy configuration", "Carlos Ibanez owns the fix"):
            assert answer in r.text, (budget, answer, r.text)
    # the lines reporting a failure still come next, before the rest of the log
    r = make(plan).compress(text, query="what was the root cause?", budget=120, annotate=False)
    assert "40 instead of 400" in r.text and any(e in r.text for e in errors), r.text


SUPPLY = ("# Supply Agreement\n\n## 3 Price and Payment\n\n"
          "Section 3.1 Prices are fixed for 12 months. Section 3.2 The Buyer shall pay each undisputed invoice within "
          "45 days of receipt, but disputed amounts may be withheld.\n\n## 9 Liability\n\n"
          "Section 9.1 Each party's total liability shall not exceed EUR 250,000 or 5% of the fees paid in the 12 months "
          "before the claim, whichever is lower.\n\n## 12 Term and Termination\n\n"
          "Section 12.1 This Agreement runs for 3 years and renews automatically for successive 1-year terms. "
          "Section 12.2 Either party may terminate for convenience on 90 days' written notice.\n\n"
          + "".join(f"Notices under this Section shall be given in English to the addresses in Schedule C. Each party "
                    f"shall keep complete and accurate records for at least {k} years. The Supplier shall maintain ISO "
                    f"9001 certification throughout the Term.\n\n" for k in range(4, 10)))


def test_common_words_of_a_list_of_questions_do_not_name_a_section_title():
    # QA s29/qa2 #3: "What are the liability cap, payment terms and termination notice?" named the section
    # "12 Term and Termination" ("terms" of "payment terms", "termination" of "termination notice"): its
    # boilerplate ranked first and Sections 9.1 and 3.2 were left out; a title joined by "and" is named only
    # when no other word of substance is glued to it ("What does it say about term and termination?")
    from odcf.document import Document, Source
    from odcf.plan.model import Plan
    from odcf.stages.rank import titled_hits
    from odcf.stages.segment import Segmenter

    segs = Segmenter()(Document.from_sources([Source(id="a", text=SUPPLY)]), Plan(domain="t")).segments
    query = "What are the liability cap, payment terms and termination notice?"
    assert titled_hits(segs, query)[0] == []
    assert titled_hits(segs, "What does the agreement say about term and termination?")[0] == [
        '(section "12 Term and Termination")']
    assert titled_hits(segs, "price and payment")[0] == ['(section "3 Price and Payment")']
    for stages in (CORE, None):
        r = Compressor(Plan(domain="t"), stages=stages).compress(SUPPLY, query=query, budget=150, annotate=False)
        for answer in ("shall not exceed EUR 250,000", "within 45 days of receipt", "90 days' written notice"):
            assert answer in r.text, (stages, answer, r.text)
        assert r.tokens_out <= 150


def test_a_title_said_word_for_word_is_named_whatever_stands_around_it():
    # QA s29/qa4 #5: after the rule above, "What are the termination and renewal terms?", "termination &
    # renewal", "termination/renewal" and "termination and renewal notice" named no section, and all of
    # "## 5 Termination and Renewal" was dropped; the title's words in order, in the same forms ("&", "/",
    # "," as "and"), name it whatever is glued around; "terms" is another form of "Term" and still glued
    from odcf.document import Document, Source
    from odcf.plan.model import Plan
    from odcf.stages.rank import titled_hits
    from odcf.stages.segment import Segmenter

    text = ("# Agreement\n\n## 4 Notices\n\nNotices are given in writing to the addresses above, and a notice of "
            "termination or non-renewal is valid only when signed.\n\n## 5 Termination and Renewal\n\n"
            "Section 5.1 The agreement runs for 3 years from 1 April 2024. Section 5.2 It renews for 12 months "
            "unless a party objects 120 days before expiry.\n\n## 6 Effects of Termination\n\n"
            "On termination or non-renewal, each party returns the other's confidential information.\n\n"
            "## 12 Term and Termination\n\nSection 12.2 Either party may terminate on 90 days' written notice.\n")
    segs = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments
    for query in ("What are the termination and renewal terms?", "termination & renewal", "termination/renewal",
                  "termination and renewal notice", "Termination, renewal"):
        assert titled_hits(segs, query)[0] == ['(section "5 Termination and Renewal")'], query
    for query in ("payment terms and termination notice", "payment terms & termination notice",
                  "payment terms/termination notice"):
        assert titled_hits(segs, query)[0] == [], query
    assert titled_hits(segs, "term & termination")[0] == ['(section "12 Term and Termination")']
    r = Compressor(Plan(domain="t")).compress(text, query="What are the termination and renewal terms?",
                                             budget=60, annotate=False)
    assert "Section 5.1" in r.text and "Effects of Termination" not in r.text, r.text


def test_far_over_the_budget_the_trim_takes_several_segments_per_measure_with_the_same_result(monkeypatch):
    # QA5: a 20,000-row CSV at 20% took 554 trim rounds (54 s), each rendering and counting the whole text
    from odcf.compressor import Compressor
    from odcf.stages import budget as budget_stage

    rows = "\n".join(f"2026-03-01T00:{k // 60:02d}:{k % 60:02d}Z,web-{k % 5},INFO,billing,req-{k:06d},{k % 90},"
                     f"{500 if k % 37 == 0 else 200},{'gateway timeout' if k % 37 == 0 else 'ok'}" for k in range(1500))
    text = "ts,host,level,svc,req,ms,status,msg\n" + rows + "\n"

    def run():
        c = Compressor.from_ontology("general")
        r = c.compress([{"id": "log.csv", "text": text}], query="failed requests, gateway timeout",
                       budget=2500, timings=False)
        ev = next(e for e in r.record["stages"] if e["stage"] == "budget")["data"]
        return r.text, ev["trim_rounds"]

    batched, rounds = run()
    monkeypatch.setattr(budget_stage, "_TRIM_SLACK", 10 ** 9)  # every segment measured on its own, as before
    single, single_rounds = run()
    assert batched == single
    assert rounds * 2 <= single_rounds, (rounds, single_rounds)
