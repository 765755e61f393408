"""A later change of a named drug's dose ("Glargine increased to 14 units.") corrects the earlier segments
that give that drug another dose in the same unit, a change of one too: the budget delivers none of them
without it. QA (s33 T2): "Blood glucose 9-14 mmol/L on glargine 10 units; dose increased to 12 units." was
delivered, and neither the Day 5 increase nor the discharge list's "Insulin glargine 14 units …": 12 units
read as the current dose."""
from odcf.compressor import Compressor
from odcf.document import Segment
from odcf.stages.rank import _dose_changes, _older_dose, correction_links

CORE = {"rules": False, "fold": False}

NOTES = ("# Discharge summary\n\n"
         "## Medications on discharge\n\n"
         "- Insulin glargine 14 units subcutaneously at night (NEW).\n"
         "- Atorvastatin 40 mg orally at night (unchanged).\n\n"
         "## Daily progress notes\n\n"
         "Day 4 (05/09/2024): Oxygen weaned off. SpO2 94% on room air. Blood glucose 9-14 mmol/L on glargine "
         "10 units; dose increased to 12 units.\n\n"
         "Day 5 (06/09/2024): Switched to oral doxycycline 100 mg twice daily. CRP 96 mg/L. Glargine increased "
         "to 14 units. No new symptoms.\n")

STALE = "Blood glucose 9-14 mmol/L on glargine 10 units; dose increased to 12 units."
NEW = "Glargine increased to 14 units."


def _links(texts):
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence", paragraph=i)
            for i, t in enumerate(texts)]
    return correction_links(segs)


def test_a_later_dose_of_the_same_drug_corrects_the_earlier_one():
    # "glargine" is in four segments and "14" in more: too common for the shared-word rule to link them
    links = _links([
        "Creatinine 140 µmol/L on 14/02 and 14.1 mmol/L urea.",
        "Basal insulin glargine 14 units at night from day 2.",
        "Insulin glargine 14 units subcutaneously at night (NEW).",
        STALE,
        "CRP 96 mg/L. Glargine increased to 14 units. No new symptoms.",
    ])
    assert links == {"s4": ["s3"]}


def test_only_another_dose_of_that_drug_in_that_unit_is_stale():
    doses = _dose_changes(NEW)
    assert doses == [("glargine", "14", "units")]
    assert _older_dose(STALE, doses)
    assert not _older_dose("Insulin glargine 14 units subcutaneously at night (NEW).", doses)  # the new dose
    assert not _older_dose("Insulin detemir 10 units at night was stopped.", doses)  # another drug
    assert not _older_dose("Glargine pen needles, 100 per box.", doses)  # the drug, no dose
    assert not _older_dose("Glargine 10 mL vial opened on the ward.", doses)  # another unit
    assert not _older_dose("Glargine was started. Potassium 10 units of nothing.", doses)  # another sentence
    # a change that names no drug ("dose increased to 12 units") has no dose of one to make stale
    assert _dose_changes("Blood glucose high; dose increased to 12 units.") == []
    assert _dose_changes("It has been reduced to 5 mg.") == []
    assert _dose_changes("Apixaban was reduced from 5 mg twice daily to 2.5 mg twice daily.") == [
        ("apixaban", "2.5", "mg")]


def test_the_stale_dose_is_never_delivered_without_its_change(plan):
    seen = False
    for budget in range(30, 200, 7):
        r = Compressor(plan, stages=CORE).compress(NOTES, budget=budget, annotate=False)
        assert r.tokens_out <= budget
        if "glargine 10 units" in r.text:
            seen = True
            assert NEW in r.text, (budget, r.text)
        for seg in r.document.segments:
            if seg.text == STALE and seg.dropped and "is corrected by" in seg.reasons[-1]:
                assert "a stale value is not delivered as current" in seg.reasons[-1]
    assert seen


def _section_links(texts):
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t,
                    kind="heading" if t.startswith("#") else "sentence", paragraph=i)
            for i, t in enumerate(texts)]
    return correction_links(segs)


def test_a_dose_change_corrects_no_other_patients_dose():
    # QA (s33 AA F3): a ward handover; Bed 7's ramipril increase made Bed 3's ramipril stale and Bed 3's whole
    # section was left out, and the ward's furosemide maximum was "corrected by" Bed 7's reduction
    links = _section_links([
        "## Bed 3 — Mr D. Haldane, 67 y",
        "Takes ramipril 2.5 mg once daily and bisoprolol 1.25 mg once daily.",
        "## Bed 7 — Mrs L. Brennan, 74 y",
        "Ramipril was increased to 10 mg this afternoon after review by the registrar.",
    ])
    assert links == {}
    links = _links([  # no headings: a "Bed N" label opens each patient's block
        "Bed 3: takes ramipril 2.5 mg once daily.",
        "Patient 7: ramipril was increased to 10 mg this afternoon.",
    ])
    assert links == {}
    # under one heading, the same patient's later change still corrects
    links = _section_links([
        "## Bed 7 — Mrs L. Brennan, 74 y",
        "Takes ramipril 2.5 mg once daily.",
        "Ramipril was increased to 10 mg this afternoon after review by the registrar.",
    ])
    assert links == {"s2": ["s1"]}


def test_a_limit_is_no_dose_a_change_corrects():
    assert not _older_dose("Maximum furosemide dose on this ward is 80 mg IV twice daily.",
                           _dose_changes("Furosemide was reduced to 40 mg orally."))
    assert not _older_dose("Paracetamol 1 g up to four times daily; never exceed paracetamol 4 g in 24 hours.",
                           _dose_changes("Paracetamol increased to 1 g four times daily regularly."))
    assert _older_dose("Takes furosemide 80 mg once daily.", _dose_changes("Furosemide was reduced to 40 mg orally."))


def test_a_planned_change_is_no_change():
    # QA (s33 AA): "If her creatinine rises above 133 µmol/L, apixaban should be reduced to 2.5 mg …" had made the
    # current "Apixaban 5 mg twice daily" stale
    assert _dose_changes("If her creatinine rises above 133 µmol/L, apixaban is reduced to 2.5 mg twice daily.") == []
    assert _dose_changes("Apixaban is reduced to 2.5 mg twice daily if creatinine rises above 133 µmol/L.") == []
    assert _dose_changes("Apixaban was reduced to 2.5 mg twice daily. If creatinine rises, call the GP.") == [
        ("apixaban", "2.5", "mg")]
    links = _links([
        "Apixaban 5 mg twice daily for atrial fibrillation.",
        ("If her creatinine rises above 133 µmol/L, apixaban should be reduced to 2.5 mg twice daily; her creatinine "
         "today is 98 µmol/L, so no change is needed."),
    ])
    assert links == {}


def test_a_correction_in_one_patients_block_corrects_nothing_in_anothers_on_shared_words():
    # QA: in a ward handover with no headings, Bed 4's "Correction: paracetamol …" was linked to Bed 3's paracetamol
    # on the words (or the dose) they share, and Bed 3's sentence went only with Bed 4's correction
    assert _links([
        "Bed 3: Mrs Elin Sand, 81, hip fracture; regular paracetamol for pain, physiotherapist review booked.",
        "Bed 4: Mr Arvid Holm, 67, pneumonia.",
        "Correction: paracetamol stopped, physiotherapist review cancelled.",
    ]) == {}
    assert _links([
        "Bed 3: Mrs Elin Sand, 81, hip fracture; paracetamol 500 mg four times daily.",
        "Bed 4: Mr Arvid Holm, 67, pneumonia.",
        "Correction: paracetamol 1 g, not 500 mg.",
    ]) == {}
    # the same patient's block still: a later "Bed 3" line is Bed 3's
    assert _links([
        "Bed 3: Mrs Elin Sand, 81, hip fracture; paracetamol 500 mg four times daily.",
        "Bed 4: Mr Arvid Holm, 67, pneumonia.",
        "Bed 3 update: correction, paracetamol 1 g, not 500 mg.",
    ]) == {"s2": ["s0"]}


def test_a_limit_of_a_drug_is_not_corrected_by_a_change_of_its_dose_on_shared_words():
    # QA: "Never exceed paracetamol 4 g per day …" was "corrected by" "Paracetamol increased to 1 g …" on the words
    # they share, and went only with it, as if the limit had changed
    for change in ("Paracetamol increased to 1 g four times daily, her body weight allows it.",
                   "Correction: paracetamol increased to 1 g four times daily, her body weight allows it."):
        assert _links(["Bed 3: Mrs Elin Sand, 81, hip fracture.",
                       "Never exceed paracetamol 4 g per day because of her low body weight.", change]) == {}
    # an older dose beside the limit is still stale
    assert _links(["Bed 3: Mrs Elin Sand, 81, hip fracture.",
                   "Paracetamol 0.5 g four times daily; never exceed paracetamol 4 g per day.",
                   "Paracetamol increased to 1 g four times daily."]) == {"s2": ["s1"]}
