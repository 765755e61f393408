"""A user's or customer's prohibitions and hard limits rank as constraints, whoever asks what: in a chat's user turn
opening after the speaker's label, in a ticket whose message headers name the customer before the bracket or with
no bracket at all, and in Chinese; an agent's or assistant's sentences, and a plain "not" in a statement, do not."""
from pathlib import Path

import pytest

from odcf.compressor import Compressor
from odcf.document import Segment
from odcf.stages.rank import _thread_senders, lift_constraints


def _turns(*lines):
    """Segments of a transcript, one a line: "speaker: text" gives the speaker."""
    return [Segment(id=f"s{i}", source_id="a", index=i, text=line, original=line, kind="sentence",
                    meta={"speaker": line.split(": ", 1)[0] + ":"}) for i, line in enumerate(lines)]


def constraint_reasons(segments):
    """:func:`odcf.stages.rank.constraint_reasons`, imported when called (so that, where it is missing, each test
    still fails on the behaviour it checks)."""
    from odcf.stages.rank import constraint_reasons as reasons

    return reasons(segments)


def _lines(*lines):
    """Segments of a plain text, one a line, with no speaker."""
    return [Segment(id=f"s{i}", source_id="a", index=i, text=line, original=line, kind="sentence")
            for i, line in enumerate(lines)]


# QA s33 U F2 (never_email.txt, general, --layer history, --budget 60)
CHAT = ("user: Hi, I need help planning the office relocation from Rotterdam to Utrecht.\n\n"
        "assistant: Happy to help. What are the key constraints for the move?\n\n"
        "user: Never email the client directly; all client communication goes through Marit de Boer.\n\n"
        "assistant: Understood. I will route every client message through Marit de Boer.\n\n"
        "user: What movers operate between Rotterdam and Utrecht?\n\n"
        "assistant: Three firms quote that route: Verhuis BV (EUR 12,400), TransLoc (EUR 14,900) and Van Dijk Moving "
        "(EUR 11,750).\n\n"
        "user: Which weekends in March are free?\n\n"
        "assistant: March 8-9, March 15-16 and March 22-23 are free in the building calendar.\n\n"
        "user: Good. Now prepare the message to send about the confirmed date.\n")


@pytest.mark.parametrize("said", [
    "Never email the client directly; all client communication goes through Marit de Boer.",
    "Please never email the client directly.",
    "Good. Never email the client directly.",
    "Do not book anything before 10am.",
    "请勿直接给客户发邮件，所有沟通必须通过王丽进行。",
    "总预算不超过人民币30万元。",
    "不要给客户打电话。",
    "An upgrade to 2.4 is not allowed before the audit.",
])
def test_a_users_prohibition_in_a_chat_is_raised_and_the_assistants_is_not(said):
    # QA s33 U F2: "user: Never email the client directly; …" (0.31) was left out while the assistant's
    # "Understood. I will route …" (0.46) went out; the Chinese "请勿直接给客户发邮件…" likewise
    lines = ("user: Hi, I need help with the move.", "assistant: What are the key constraints?",
             f"user: {said}", "assistant: Understood. I will route every message through Marit.",
             "user: Now prepare the message.")
    scores = {"s0": 0.3, "s1": 0.6, "s2": 0.3, "s3": 0.45, "s4": 1.0}
    out, raised = lift_constraints(_turns(*lines), scores)
    assert raised == 1 and out["s2"] > out["s3"], out
    assert "s2" in constraint_reasons(_turns(*lines))
    # said by the assistant, it is no constraint of the user's
    agent = (*lines[:2], f"assistant: {said}", *lines[3:])
    assert lift_constraints(_turns(*agent), scores)[1] == 0
    assert constraint_reasons(_turns(*agent)) == {}


@pytest.mark.parametrize("said", [
    "Never mind, it works now.",
    "Don't worry about the date.",
    "要不要提前付款？",
    "No change was made to the booking.",
    "No errors since.",
    "Builds 2.3.4 and earlier are not affected.",
])
def test_a_users_statement_with_a_negation_is_no_constraint(said):
    # (a report of what was not done, "No change was made", had read as "no hostels" and was raised)
    lines = ("user: Hi, I need help with the move.", "assistant: What are the key constraints?",
             f"user: {said}", "assistant: Noted.", "user: Now prepare the message.")
    scores = {"s0": 0.3, "s1": 0.6, "s2": 0.3, "s3": 0.45, "s4": 1.0}
    assert lift_constraints(_turns(*lines), scores) == (scores, 0), said


def test_the_users_never_email_goes_out_before_the_assistants_acknowledgement():
    r = Compressor.from_ontology("general").compress(
        [{"text": CHAT, "id": "chat", "layer": "history"}], query="prepare the message about the confirmed move date",
        budget=60, timings=False)
    assert "Never email the client directly" in r.text, r.text
    assert "Understood. I will route" not in r.text, r.text
    seg = next(s for src in r.record["sources"] for s in src["segments"] if s["index"] == 3)
    assert seg["status"] == "verbatim"
    assert seg["reason"].startswith("rank: a constraint the user set, 'Never email' in their turn; ranks right after "
                                    "the 2 best other segments of its source"), seg["reason"]


# QA s33 T4: the ticket's headers name the customer before the bracket ("Message 1 — Customer (Ingrid Solberg, DBA),
# …") or with no bracket ("Message 3 — Customer, …"), so the thread had no customer's part
TICKET = (
    "# Ticket #INC-58213 — Replication lag after upgrade\n\n"
    "Customer: Fjordline Logistics AS. Product: PolarDB Cluster Enterprise.\n\n"
    "**Message 1 — Customer (Ingrid Solberg, DBA), 2024-11-04 07:12 UTC**\n\n"
    "Since 05:40 UTC our application has been getting error PDB-4031 on about 12% of writes. "
    "Replication lag on pdb-03 is 340 seconds and growing. "
    "Important constraints: do not restart the primary under any circumstances during business hours "
    "(06:00-18:00 UTC), because our warehouse scanners cannot reconnect automatically. "
    "We must stay on v2.3 until our certification audit ends on 2024-12-15; an upgrade to 2.4 is not allowed "
    "before then.\n\n"
    "**Message 2 — Support (Maria Ekström, L2), 2024-11-04 08:20 UTC**\n\n"
    "There is a workaround that does not require restarting the primary: on pdb-03 only, set wal_compression = pglz "
    "in /etc/polardb/replica.conf and restart the replica. "
    "However, do not change wal_compression on the primary, because on 2.3.x that requires a primary restart.\n\n"
    "**Message 3 — Customer, 2024-11-04 09:02 UTC**\n\n"
    "Done at 08:51 UTC. Lag dropped from 410 seconds to 0 within 6 minutes. No change was made to pdb-01. "
    "Again: restarting pdb-01 is not an option before 18:00 UTC.\n\n"
    "**Internal note — Support (Rahul Menon, Engineering), 2024-11-04 18:10 UTC (not visible to customer)**\n\n"
    "PDB-BUG-7741 affects 2.3.6 and 2.3.7 only. Builds 2.3.4 and earlier are not affected. "
    "Do not suggest the 2.4.1 upgrade as the fix.\n")


def test_a_customers_constraints_under_role_first_headers_are_raised():
    segs = Compressor.from_ontology("customer_service").compress(TICKET, budget=10_000, annotate=False).document.segments
    mail = {s.original.strip()[:30] for s in segs if s.id in _thread_senders(segs)[0]}
    assert any(t.startswith("Important constraints") for t in mail), mail
    assert any(t.startswith("Again: restarting") for t in mail), mail  # under "Message 3 — Customer, …"
    assert not any(t.startswith(("However, do not", "Do not suggest", "Builds 2.3.4")) for t in mail), mail
    why = {s.original.strip()[:30]: w for s in segs for sid, w in constraint_reasons(segs).items() if sid == s.id}
    assert why == {
        "Important constraints: do not ": "a constraint the customer set, 'do not restart' in their message of the thread",
        "We must stay on v2.3 until our": "a constraint the customer set, 'must' in their message of the thread",
        "Again: restarting pdb-01 is no": "a constraint the customer set, 'is not an option' in their message of the "
                                          "thread",
    }, why


def test_a_ticket_delivers_the_customers_constraints_before_filler():
    # QA s33 T4: at 642 of 2,570 tokens, with a query naming the customer's constraints, "Important constraints: do
    # not restart the primary …" (0.56) and "We must stay on v2.3 …" (0.41) were dropped while "Builds 2.3.4 and
    # earlier are not affected." (0.60) and "No change was made to pdb-01." went out; with no query, at 0.14 and 0.29
    text = (Path(__file__).parent.parent / "fixtures" / "ticket_inc58213.md").read_text(encoding="utf-8")
    q = "what constraints did the customer give and what workaround was applied"
    for query in (q, None):
        r = Compressor.from_ontology("customer_service").compress(
            [{"text": text, "id": "ticket.md"}], query=query, budget=642, timings=False)
        assert "do not restart the primary under any circumstances during business hours" in r.text, (query, r.text)
        assert "We must stay on v2.3 until our certification audit ends" in r.text, (query, r.text)
        assert "restarting pdb-01 is not an option before 18:00 UTC" in r.text, (query, r.text)
        assert "Builds 2.3.4 and earlier are not affected." not in r.text, (query, r.text)
        rank = next(e["data"] for e in r.record["stages"] if e["stage"] == "rank")
        assert rank["constraints_raised"] >= 3, rank
        reasons = [g["reason"] for src in r.record["sources"] for g in src["segments"] if g["reason"]]
        assert any(w.startswith("rank: a constraint the customer set, 'do not restart' in their message of the thread; "
                                "ranks right after the 2 best other segments of its source") for w in reasons), reasons


def test_an_agents_prohibition_in_a_thread_with_a_customer_is_not_the_customers():
    # "Do not suggest the 2.4.1 upgrade" is the support's own note; "please do not call me" in an agent's message of
    # a thread where the customer writes is the agent's too, and a "From: Jana Novak" mail with no roles keeps it
    segs = _lines("Message 1 — Jana Novak (customer) — 2024-03-11", "The sync fails.",
                  "Message 2 — Rafael Ortiz (agent) — 2024-03-11", "Please do not call me on Fridays.")
    assert constraint_reasons(segs) == {}
    mail = _lines("From: Jana Novak", "The sync fails.", "Please do not call me on Fridays.")
    assert list(constraint_reasons(mail)) == ["s2"]


THREAD_QUOTING = """# Ticket #88213 — Refund for damaged espresso machine

Message 1 — Customer (Marta Lindqvist), 2025-02-03 10:12

Hello, my espresso machine (order #W55120, EUR 649) arrived with a cracked water tank. Your returns page says: Do not send items back without an RMA number. Never use the original box for returns of heavy items. I do not have the original receipt any more, but the order is in my account. I would like a replacement, and please deliver it after 17:00 on a weekday.

Message 2 — Agent (Tom Becker), 2025-02-03 11:40

Thank you, Marta. I have issued RMA 771-2045 and booked a courier pick-up for 5 February between 08:00 and 12:00. Never ship the machine with water left in the boiler, as it can leak in transit. A replacement unit will ship once the courier scans the return, usually within 2 business days.

Message 3 — Customer (Marta Lindqvist), 2025-02-03 12:05

The morning pick-up does not work for me: I am at work until 16:30. The replacement must arrive before 14 February, as it is a birthday present.
"""


def test_a_rule_the_customer_quotes_and_what_they_lack_are_not_their_constraints():
    # QA s33 AA F4: the shop's policy quoted after "Your returns page says:" and "I do not have the original receipt"
    # were raised as the customer's, and at 1/4 took the room of the customer's "must arrive before 14 February"
    segs = Compressor.from_ontology("customer_service").compress(
        THREAD_QUOTING, budget=10_000, annotate=False).document.segments
    why = {s.original.strip()[:30]: w for s in segs for sid, w in constraint_reasons(segs).items() if sid == s.id}
    assert why == {
        "I would like a replacement, an": "a constraint the customer set, 'please deliver it after' in their message of "
                                          "the thread",
        "The replacement must arrive be": "a constraint the customer set, 'must' in their message of the thread",
    }, why
    r = Compressor.from_ontology("customer_service").compress(THREAD_QUOTING, budget=69, timings=False)
    assert "Your returns page says" not in r.text and "must arrive before 14 February" in r.text, r.text


@pytest.mark.parametrize("said", [
    "The manual states: never use bleach on the seals.",
    "According to your website, items must be returned within 30 days.",
    'The label on the box reads "Do not stack", so I left it upright.',
    "I do not have a printer at home.",
])
def test_a_quoted_rule_or_a_report_of_what_one_lacks_is_no_constraint(said):
    assert constraint_reasons(_turns("assistant: How can I help?", f"user: {said}")) == {}


def test_a_users_own_prohibition_after_a_quoted_rule_in_another_paragraph_or_after_I_said_is_still_raised():
    assert list(constraint_reasons(_turns("assistant: Noted.", "user: As I said: never call after 8 pm."))) == ["s1"]
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence", paragraph=p,
                    meta={"speaker": t.split(": ", 1)[0] + ":"})
            for i, (t, p) in enumerate([("assistant: Hi.", 0), ("user: Your FAQ says: do not reply to this mail.", 1),
                                        ("user: Never email the client directly.", 2)])]
    assert list(constraint_reasons(segs)) == ["s2"]


THREAD_QUOTED_POLICY = """# Ticket #90417 — Return of a damaged stand mixer

Message 1 — Customer (Helena Brandt), 2025-03-10 09:14

Hello, I ordered a KitchenPro stand mixer (order #W61877, EUR 429.00) on 2 March and it arrived on 7 March with a cracked bowl lock. Your returns page says: Items must be returned within 30 days of delivery in their original condition, with all accessories, manuals and packaging inserts included. Never use the retail box as the shipping box; put it inside a shipping carton. I would like a replacement rather than a refund, and please deliver it after 17:00 on a weekday, as nobody is home before then.

Message 2 — Agent (Jonas Weber), 2025-03-10 11:02

Thank you for the photos, Helena, and sorry about the bowl lock. I have issued RMA 5520-8841 for order #W61877: print the label from this mail, tape it to the outer carton and drop the parcel at a DHL point by 24 March. A replacement mixer is reserved for you and ships as soon as the return is scanned.

Message 3 — Customer (Helena Brandt), 2025-03-10 12:30

Thanks. I no longer have a printer at home. Can the DHL point print the label for me?

Message 4 — Agent (Jonas Weber), 2025-03-10 13:05

Yes: show the QR code in this mail at the counter and they will print the label. I have also noted the evening delivery window on the replacement order.

Message 5 — Customer (Helena Brandt), 2025-03-12 18:20

I dropped the parcel at the DHL point on Hauptstrasse today, receipt number 00340434161234. When will the replacement ship?

Message 6 — Agent (Jonas Weber), 2025-03-13 08:45

The return was scanned this morning. The replacement ships today with tracking number 1Z999AA10123456784 and will be delivered on 14 March between 17:00 and 20:00.
"""


@pytest.mark.parametrize("budget", [100, 104, 108, 116, 166, 206])
def test_a_quoted_policys_later_sentence_is_never_delivered_without_its_lead_in(budget):
    # QA: at about 1/4 "Never use the retail box as the shipping box; …", the second sentence of the shop's policy the
    # customer quotes after "Your returns page says:", went out alone as filler (99-110, 163-169, 203-208 of 464
    # tokens), and read as the customer's own instruction
    r = Compressor.from_ontology("customer_service").compress(THREAD_QUOTED_POLICY, budget=budget, timings=False)
    assert "Never use the retail box" not in r.text or "Your returns page says: Items must" in r.text, r.text
    assert "please deliver it after 17:00" in r.text, r.text


def quotation_goes_on(segments):
    from odcf.stages.rank import quotation_goes_on as goes_on

    return goes_on(segments)


@pytest.mark.parametrize(("sentences", "tied"), [
    (["Your returns page says: Items must be returned within 30 days.", "Never use the retail box as the shipping box."],
     {"s1": "s0"}),
    (["According to your policy: items must be returned within 30 days.", "Do not send them without an RMA number."],
     {"s1": "s0"}),
    (['Your FAQ says: "Items must be returned within 30 days.', 'Returns must include the original receipt."',
      "Never call me before 9:00."], {"s1": "s0"}),
    (["The manual states “Keep the unit upright.", "Do not lay it on its side.”", "Do not close the ticket."],
     {"s1": "s0"}),
    (["Your returns page says: Items must be returned within 30 days.", "Never call me before 9:00."], {}),
    # a colon over steps, a note, a header, the writer's own words, a closed quotation, inches: no quotation goes on
    (["To return the mixer: unplug it and let it cool.", "Do not use the retail box."], {}),
    (["Note: do not stack the boxes.", "Never lift them alone."], {}),
    (["Subject: Do not ship order #W61877", "Never mind the earlier mail."], {}),
    (["As I said: never call after 8 pm.", "Do not email me either."], {}),
    (['The label reads "Do not stack", so I left it upright.', "Never send it by post."], {}),
    (['The 27" monitor arrived with a dead pixel.', "Do not send another one."], {}),
])
def test_which_sentences_go_on_with_a_quotation(sentences, tied):
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence")
            for i, t in enumerate(sentences)]
    assert quotation_goes_on(segs) == tied


def test_the_paragraph_under_a_line_ending_in_says_goes_on_with_it_and_one_under_steps_does_not():
    paras = [["My mixer arrived broken.", "Your returns page says:"],
             ["Items must be returned within 30 days.", "Never use the retail box as the shipping box."],
             ["Please deliver it after 17:00.", "Thanks."], ["To return it:"], ["Unplug the mixer.", "Never use tape."]]
    placed = [(p, t) for p, para in enumerate(paras) for t in para]
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence", paragraph=p)
            for i, (p, t) in enumerate(placed)]
    assert quotation_goes_on(segs) == {"s3": "s2"}


# QA s34 A F1: insurance claim files, whose emails name no sender's role ("From: Grace Okafor <…>"), so no message is
# the customer's by its header; the claimant's deadlines, prohibitions and limits were raised only when worded "do not
# call me", and went out at none of the budgets, half of the file included
CLAIM = """# Claim CLM-2024-207716 — escape of water

## 1. Policy excerpt

Section 3 Excess. The standard excess is GBP 250. For escape of water claims the excess is GBP 1,000.

Condition 8.3 You must take all reasonable steps to prevent further damage. The Supplier shall not subcontract the repair without our consent.

## 2. Adjuster notes

2024-03-07 — Site visit. Kitchen ceiling collapsed. The owner said he did not want to wait for the assessor. Homeowners say they noticed a small stain around Christmas.

## 3. Emails

From: Grace Okafor <grace.okafor@example.co.uk>
To: claims@homeinsure.example
Subject: Claim CLM-2024-207716

Hello,

My husband works nights, so please do not arrange any site visits before 11:00. Please email rather than phone.

We are hosting my mother from 22 April, so we really need a working kitchen by 20 April. Do we need the contractor's quote by 3 April?

Also, please note we do not want the contractors to use the side gate. I do not have the original invoice for the units. No leaks since.

Grace

From: Johanna Berger <j.berger@mailbox.example>
To: claims@versicherung.example
Subject: Accident 4 May

I need the car back before 12 June because I start a new job on 12 June. Please make sure the repairer does not replace the headlamp with a non-original part. If you need the keys, I can bring them to your office on a Friday afternoon only. Your letter says: please do not send originals before 1 May.

From: Priya Raman <p.raman@crawford-partners.example>
To: Grace Okafor
Subject: RE: Claim CLM-2024-207716

Dear Mrs Okafor,

The damage is covered under Section 1.4. I have noted that visits should not be before 11:00.
"""


def test_a_claimants_deadlines_prohibitions_and_limits_are_raised_with_what_made_them_one():
    segs = Compressor.from_ontology("general").compress(CLAIM, budget=10_000, annotate=False).document.segments
    why = {s.original.strip()[:30]: w for s in segs for sid, w in constraint_reasons(segs).items() if sid == s.id}
    assert why == {
        "My husband works nights, so pl": "a prohibition its writer sets, 'please do not arrange any site visits before "
                                          "11:00'",
        "Please email rather than phone": "a condition its writer sets on how they are treated, 'Please email rather "
                                          "than phone'",
        "We are hosting my mother from ": "a deadline its writer sets, 'we really need a working kitchen by 20 April'",
        "Also, please note we do not wa": "a prohibition its writer sets, 'we do not want the contractors to use'",
        "I need the car back before 12 ": "a deadline its writer sets, 'I need the car back before 12 June'",
        "Please make sure the repairer ": "a prohibition its writer sets, 'Please make sure the repairer does not "
                                          "replace'",
        "If you need the keys, I can br": "a limit its writer sets, 'I can bring them to your office on a Friday "
                                          "afternoon only'",
    }, why  # not the contract's "shall not", the note's "he did not want to", a question, a quoted rule, a report


@pytest.mark.parametrize("said", [
    "The Supplier shall not assign this Agreement before 1 June.",
    "He did not want to wait for the assessor.",
    "She needed the car back before 12 June.",
    "The customer said he needed the car by 12 June.",
    "Do we need the contractor's quote by 3 April?",
    "We need to discuss the budget before 3 May.",
    "I need the figures before the meeting.",
    "We need a 20% margin by 2025.",
    "Please don't forget to send the form before 5 May.",
    "Please do not hesitate to call us after 10:00.",
    "Please make sure you do not miss the deadline.",
    "The support line is open on weekdays only.",
    "I can only guess what happened.",
    "Customers now email rather than phone.",
    "They did not want the contractors to use the gate.",
    "Your policy says: please do not send originals before 1 May.",
])
def test_what_is_no_writers_deadline_prohibition_or_limit(said):
    from odcf.stages.rank import states_user_constraint

    assert not states_user_constraint(said, to_agent=False), said
    assert constraint_reasons(_lines("From: Jana Novak", said)) == {}, said


def test_a_writers_own_request_after_a_quoted_rule_is_theirs_and_a_please_going_on_with_the_quote_is_not():
    segs = _lines("From: Jana Novak", "Your policy says: repairs must be done at an approved repairer.",
                  "I need the car back before 12 June.")
    assert list(constraint_reasons(segs)) == ["s2"]
    segs = _lines("From: Jana Novak", "Your policy says: do not move the car.",
                  "Please do not arrange repairs before 3 May.")
    assert constraint_reasons(segs) == {}


def test_a_writers_request_in_the_other_sides_message_or_turn_is_not_raised():
    # the agent's "please make sure …" in a ticket thread with the customer's messages, a nurse's deadline in a
    # chat with a patient: theirs, not the served side's
    segs = _lines("Message 1 — Jana Novak (customer) — 2024-03-11", "The car was hit.",
                  "Message 2 — Rafael Ortiz (agent) — 2024-03-11",
                  "Please make sure the repairer does not replace the headlamp.", "I need the form back by 3 May.")
    assert constraint_reasons(segs) == {}
    turns = _turns("Patient: My knee hurts.", "Nurse: I need the form back by 3 May.",
                   "Patient: I can come on a Friday afternoon only.")
    assert list(constraint_reasons(turns)) == ["s2"]
    assert constraint_reasons(turns)["s2"] == ("a limit its writer sets, 'I can come on a Friday afternoon only' in "
                                               "their turn")


def test_a_claimants_constraints_are_delivered_at_half_the_budget():
    # QA s34 A F1: at 850 of 1,700 tokens none of the claimant's constraints went out, a "From:" line did
    c = Compressor.from_ontology("general")
    full = c.compress(CLAIM, budget=100_000, timings=False).tokens_in
    r = c.compress(CLAIM, budget=full // 2, timings=False)
    for said in ("please do not arrange any site visits before 11:00", "we really need a working kitchen by 20 April",
                 "we do not want the contractors to use the side gate", "I need the car back before 12 June",
                 "does not replace the headlamp with a non-original part", "on a Friday afternoon only"):
        assert said in r.text, (said, r.text)
