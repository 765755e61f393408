"""A sentence that qualifies the one before it is delivered only with it (QA round s27/qa6, findings 2, 3, 5, 6, 8)."""
import pytest

from odcf.compressor import Compressor
from tests.stages.sweeps import only_with

CORE = {"rules": False, "fold": False}

LEASE = (
    "## 3. Rent\n\n"
    "3.1 The Rent is GBP 1,450.00 per month, payable in advance on the 1st day of each month.\n\n"
    "3.2 Interest on late Rent accrues at 3% above the Bank of England base rate from the due date.\n\n"
    "3.3 The Landlord may not increase the Rent during the first 12 months. {after} the Rent may be "
    "increased once in any 12-month period by giving not less than 2 months' written notice, and any increase "
    "shall not exceed 5% of the Rent then payable.\n\n"
    "## 4. Deposit\n\n"
    "4.1 The Tenant shall pay a Deposit of GBP 1,673.00 on signing, protected in a government-approved scheme.\n\n"
    "4.2 The Deposit is returned within 10 days of the end of the tenancy, less any agreed deductions.\n\n"
    "4.3 The Landlord may deduct from the Deposit the reasonable cost of repairing damage caused by the Tenant, "
    "unpaid Rent and unpaid bills for which the Tenant is liable. No deduction shall be made for fair wear and tear.\n\n"
    "## 5. Repairs\n\n"
    "5.1 The Landlord shall keep the structure and exterior of the Property in repair.\n\n"
    "5.2 The Tenant shall report any defect to the Landlord in writing within 3 days of noticing it.\n")

FREIGHT = (
    "## 4. Liability\n\n"
    "4.1 The Carrier's liability for loss of or damage to goods is limited to 8.33 SDR per kilogram of gross weight.\n\n"
    "4.2 The limit in Section 4.1 does not apply if the loss results from the Carrier's wilful misconduct.\n\n"
    "4.4 Claims for visible damage must be noted on the proof of delivery. Claims for concealed damage must be "
    "made in writing within 7 days of delivery; claims for delay must be made within 21 days of delivery. "
    "A claim made after these periods will not be accepted.\n\n"
    "## 5. Surcharges\n\n"
    "5.1 The fuel surcharge is adjusted monthly against the diesel index published on the 1st business day.\n\n"
    "5.2 Detention is charged at EUR 55.00 per hour after 2 free hours at loading or unloading. "
    "No detention is charged if the delay is caused by the Carrier arriving outside its booked slot.\n\n"
    "5.3 No other surcharges apply unless agreed in writing before the shipment is booked.\n")

HR = (
    "1. ANNUAL LEAVE\n\n"
    "1.1 Full-time employees are entitled to 25 days of paid annual leave per leave year, plus public holidays.\n\n"
    "1.2 Part-time employees receive leave pro rata to their contracted hours.\n\n"
    "1.3 Up to 5 days of unused leave may be carried over to the next leave year. Carried-over days must be "
    "taken by 30 June, or they are lost.\n\n"
    "Provided that an employee could not take leave because of sickness or family leave, all untaken leave is "
    "carried over and the 30 June limit does not apply.\n\n"
    "1.4 Leave requests of 5 days or more must be submitted at least 20 working days in advance.\n\n"
    "2. REMOTE WORK\n\n"
    "2.1 Employees may work remotely up to 3 days per week with their manager's approval.\n\n"
    "2.2 Remote work from outside the United Kingdom is not permitted, unless approved in writing by HR.\n")


def _sweep(plan, text, query):
    c = Compressor(plan, stages=CORE)
    return lambda budget: c.compress(text, query=query, budget=budget, annotate=False).text


@pytest.mark.parametrize("query, rule, limit", [
    ("Can the landlord keep part of my deposit for wear and tear?",
     "may deduct from the Deposit", "No deduction shall be made for fair wear and tear."),
    ("What can the landlord deduct from the deposit?",
     "may deduct from the Deposit", "No deduction shall be made for fair wear and tear."),
])
def test_a_paragraph_final_no_noun_negating_the_sentence_before_goes_with_it_both_ways(plan, query, rule, limit):
    # QA s27/qa6 #2: "4.3 The Landlord may deduct …" was delivered without "No deduction shall be made for
    # fair wear and tear." (and the protection against wear-and-tear deductions was gone)
    text_at = _sweep(plan, LEASE.format(after="After that,"), query)
    budgets = range(30, 400, 10)
    only_with(text_at, rule, limit, budgets)
    only_with(text_at, limit, rule, budgets)


def test_a_paragraph_final_no_noun_exception_goes_with_its_rule(plan):
    # QA s27/qa6 #5: "No detention is charged if …" was delivered without "Detention is charged at EUR 55.00 …"
    text_at = _sweep(plan, FREIGHT, "Which surcharges can the carrier charge besides the freight rate?")
    budgets = range(20, 300, 10)
    only_with(text_at, "No detention is charged", "Detention is charged at EUR 55.00", budgets)
    only_with(text_at, "Detention is charged at EUR 55.00", "No detention is charged", budgets)


@pytest.mark.parametrize("after", ["After that,", "Thereafter,", "From then on,", "After this period,",
                                   "Subsequently,"])
def test_a_sentence_opening_with_a_time_told_from_the_one_before_goes_only_with_it(plan, after):
    # QA s27/qa6 #3: "After that, the Rent may be increased …" was delivered without "The Landlord may not
    # increase the Rent during the first 12 months."
    text_at = _sweep(plan, LEASE.format(after=after),
                     "What are the rules on rent increases and late payment interest?")
    only_with(text_at, f"{after} the Rent may be increased", "may not increase the Rent during the first 12 months",
              range(30, 400, 10))


def test_a_short_sentence_naming_these_periods_goes_only_with_the_sentence_before(plan):
    # QA s27/qa6 #6: "A claim made after these periods will not be accepted." was delivered without the
    # sentence stating the periods (7 and 21 days)
    only_with(_sweep(plan, FREIGHT, "What is the carrier's liability limit for lost goods and late claims?"),
              "after these periods", "within 7 days of delivery", range(20, 300, 10))


def test_a_paragraph_opening_provided_that_goes_only_with_the_paragraph_above(plan):
    # QA s27/qa6 #8: "Provided that …, the 30 June limit does not apply." was delivered alone, or without
    # the sentence holding "30 June"
    for query in ("Can I carry over unused holiday days if I was off sick?", "Can I work from Spain for a month?"):
        only_with(_sweep(plan, HR, query), "Provided that an employee", "must be taken by 30 June",
                  range(20, 300, 10), must_see=query.startswith("Can I carry"))


@pytest.mark.parametrize("text, query, answer", [
    # QA s27/qa7 #6: "After this Agreement ends, …" names its own event; tied to the sentence before, the answer
    # went out only at 66 tokens
    ("SOFTWARE SUBSCRIPTION AGREEMENT\n\n1. DATA\n\nThe Supplier hosts the Customer Data in data centres located "
     "in Frankfurt and Dublin and replicates it between them every 15 minutes, so that a failure of one site loses "
     "at most 15 minutes of changes. After this Agreement ends, the Supplier shall delete all Customer Data within "
     "30 days.\n", "How soon must the Supplier delete Customer Data after the Agreement ends?",
     "After this Agreement ends, the Supplier shall delete all Customer Data within 30 days."),
    # QA s27/qa7 #9: "Thereafter … in 1968 …" tells its own year; tied to the long sentence before, at 70 tokens
    # that sentence went out and the answer did not
    ("The Harbour Ferry\n\nThe ferry between Kirkwall and Stromness was run by the Halcro family from 1921, and for "
     "most of those years it carried mail, livestock and the occasional doctor on a converted fishing boat. "
     "Thereafter the council took over the route in 1968 and bought the MV Orcadia, which still sails twice a day.\n",
     "When did the council take over the route and which ship did it buy?",
     "Thereafter the council took over the route in 1968 and bought the MV Orcadia"),
])
def test_a_sentence_naming_its_own_event_or_year_goes_without_the_one_before(plan, text, query, answer):
    text_at = _sweep(plan, text, query)
    for budget in (45, 50, 70):
        out = text_at(budget)
        assert answer in out, (budget, out)
    # "After that," and "After this period," still point back (the parametrized test above)


CLAIM = (
    "## 1. Loss summary\n\n"
    "Water escaped from a failed supply line under the kitchen sink on 3 October 2025. The insured reported the "
    "loss on 5 October 2025 and the adjuster inspected on 9 October 2025.\n\n"
    "## 2. Relevant policy wording\n\n"
    "Coverage A pays for direct physical loss to the dwelling, less the $2,500 deductible. "
    "Endorsement HO-490 Mold. Mold remediation is covered up to $5,000 only if the mold results from a covered "
    "water loss and is reported within 30 days of discovery. Mold is not covered unless both conditions are met.\n\n"
    "## 3. Depreciation\n\n"
    "Recoverable depreciation of $2,918.20 is paid when the repairs are complete, if claimed within 180 days.\n")


def test_a_short_sentence_naming_both_conditions_goes_only_with_the_sentence_stating_them(plan):
    # QA s28/qa1 #4: "Mold is not covered unless both conditions are met." was delivered without the sentence
    # stating the conditions (a covered water loss, reported within 30 days), which was dropped "no room"
    only_with(_sweep(plan, CLAIM, "Is the mold covered, and what is the recoverable depreciation deadline?"),
              "unless both conditions are met", "reported within 30 days of discovery", range(20, 300, 5))


BID_NOTE = (
    "## 2. Compliance\n\n"
    "The bid security of USD 96,000 is a bank guarantee valid for 180 days from the submission deadline.\n\n"
    "My recommendation: go, but only if (a) the ISO 20000-1 re-audit is passed before the deadline, and (b) we "
    "sign a teaming agreement with a local night-shift partner by 2024-06-07. If either fails, we should not bid: "
    "both are pass/fail and failing one means disqualification.\n\n"
    "## 3. Pricing\n\n"
    "The ceiling price is USD 4,800,000 for the initial 4 years, excluding taxes.\n")


def test_a_sentence_opening_with_either_alone_goes_only_with_the_conditions_it_stands_for(plan):
    # QA s29/qa5 #2: "If either fails, we should not bid: …" (15 words, "either" with no noun) was delivered
    # while the sentence stating the two conditions was dropped "no room": a no-bid rule about nothing
    only_with(_sweep(plan, BID_NOTE, "When should we not bid?"),
              "If either fails, we should not bid", "(b) we sign a teaming agreement", range(20, 200, 5))


@pytest.mark.parametrize("sentence", ["Either party may terminate on 90 days' notice.",
                                      "The notice binds both parties."])
def test_either_party_names_the_parties_not_the_sentence_before(sentence):
    from odcf.textutil import points_back
    assert points_back(sentence, "The Supplier invoices monthly in arrears.") is None


@pytest.mark.parametrize("text, query, answer", [
    # QA s28/qa3 #4: "both legs", "both directions" name their own pair; tied to the long sentence before, the
    # answer was dropped with it ("speaks of the sentence before it ('both legs')") and the budget blamed
    ("Patient is a 67-year-old male admitted on 2 March 2025 for community-acquired pneumonia, with a history of "
     "type 2 diabetes, chronic kidney disease stage 3 and hypertension treated with lisinopril 20 mg daily. "
     "Pitting edema is present in both legs. Chest X-ray shows no consolidation.\n",
     "Does the patient have edema?", "Pitting edema is present in both legs."),
    ("The annual marathon starts at 09:00 from the city hall square and follows the river embankment to the "
     "botanical garden and back. Ring Road is closed in both directions from 07:00 to 15:00. Shuttle buses run "
     "every 10 minutes from the main station.\n",
     "Is Ring Road closed?", "Ring Road is closed in both directions from 07:00 to 15:00."),
])
def test_both_with_a_noun_naming_its_own_pair_goes_without_the_sentence_before(plan, text, query, answer):
    text_at = _sweep(plan, text, query)
    for budget in (25, 30, 40):
        out = text_at(budget)
        assert answer in out, (budget, out)


@pytest.mark.parametrize("sentence, expected", [
    # QA s28/qa3 #11: a contract's defined term after "Such"/"The above" speaks of the sentence before ...
    ("Such Confidential Information shall be returned within 10 days.", "Such Confidential Information"),
    ("The above Fees are exclusive of VAT.", "The above Fees"),
    ("Either option is accepted by the Carrier.", "Either option"),
    # ... an intensifier, a body's pair, a way of speaking and the parties do not
    ("It was such good news.", None),
    ("Use both hands.", None),
    ("Both spouses must sign the form.", None),
    ("Either way, the fee is due on 1 May.", None),
    ("The valve must be open on either side.", None),
    ("Both Parties must sign.", None),
    ("Either Party may terminate.", None),
])
def test_what_both_either_such_point_back_to(sentence, expected):
    from odcf.textutil import demonstrative_back
    assert demonstrative_back(sentence) == expected


def test_it_opening_a_long_sentence_with_a_number_before_to_still_points_back():
    # QA3: "It was restarted at a reduced dose of 500 mg on 7 March after creatinine returned to …" (the
    # README's own example) was read as a dummy "it" ("It is likely that …") because of the "to" far on,
    # and delivered alone at 30 and 45 tokens: what was restarted is named only in the sentence before
    text = ("Metformin 1000 mg twice daily was stopped on 4 March 2025 because of lactic acidosis risk before the "
            "contrast CT. It was restarted at a reduced dose of 500 mg on 7 March after creatinine returned to "
            "1.1 mg/dL. Lisinopril 20 mg daily was continued throughout the stay. The patient was discharged "
            "home on 9 March with follow-up in 2 weeks.")
    c = Compressor.from_ontology("medical_records")
    for budget in (30, 45, 60, 80):
        out = c.compress(text, query="When was metformin restarted and at what dose?", budget=budget).text
        if "It was restarted" in out:
            assert "Metformin 1000 mg twice daily was stopped" in out, (budget, out)
    assert "It was restarted" in c.compress(text, query="When was metformin restarted and at what dose?",
                                            budget=80).text


MOTOR = (
    "## Emails\n\n"
    "From: Johanna Berger <j.berger@mailbox.example>\n"
    "To: claims@versicherung.example\n"
    "Subject: Accident 4 May\n\n"
    "Dear Sir or Madam,\n\n"
    "My son Lukas had an accident with my car on Saturday. I attach the photos and the police report number.\n\n"
    "I need the car back before 12 June because I start a new job in Augsburg on 12 June and there is no train "
    "connection for the early shift. {fallback}\n\n"
    "Kind regards,\nJohanna Berger\n")


@pytest.mark.parametrize("fallback", [
    "If that is not possible, I need a hire car until then.", "If not, I need a hire car until that day.",
    "Failing that, a hire car would help.", "Otherwise, a hire car would help.", "A hire car would help until then."])
def test_a_fallback_or_until_then_goes_only_with_the_sentence_it_refers_to(plan, fallback):
    # QA s34 A F4: "If that is not possible, I need a hire car until then." (0.996) went out without "I need the car
    # back before 12 June …" (0.84): a hire car "until then", and no date
    text_at = _sweep(plan, MOTOR.format(fallback=fallback), "Does the customer need a hire car?")
    only_with(text_at, fallback, "I need the car back before 12 June", range(10, 200, 5))


@pytest.mark.parametrize("sentence, expected", [
    ("If that is not possible, I need a hire car until then.", "If that is not possible"),
    ("If this isn't feasible, email me.", "If this isn't feasible"),
    ("If not, we pay the bank directly.", "If not"),
    ("Failing that, call me after 19:00.", "Failing that"),
    ("If not for the rain, we would have gone.", None),
    ("If that is possible, call me.", None),
    ("If nothing else works, call me.", None),
    ("Failing grades are reported to the board.", None),
])
def test_what_opens_a_fallback_to_the_sentence_before(sentence, expected):
    from odcf.textutil import back_reference
    assert back_reference(sentence) == expected


@pytest.mark.parametrize("sentence, expected", [
    ("I need a hire car until then.", "until then"),
    ("We cannot pay the invoice by then.", "by then"),
    ("Please hold the room till then!", "till then"),
    ("We start on 12 June and need a car until then.", None),  # it names its own time
    ("By then the fee was due, so we paid it in full.", None),
    ("Until then, nothing changes for existing customers of the bank.", None),
])
def test_a_sentence_ending_with_until_then_points_back(sentence, expected):
    from odcf.textutil import demonstrative_back
    assert demonstrative_back(sentence) == expected
