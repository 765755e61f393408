from odcf.compressor import Compressor

SUPPORT = (
    "Agent: Hello, thanks for contacting Acme support. How can I help?\n"
    "Customer: My order 55120 arrived damaged.\n"
    "Agent: I'm sorry to hear that. Shall I cancel the order and refund the full amount of $89.90?\n"
    "Customer: OK\n"
    "Agent: Great. Or would you prefer a replacement instead?\n"
    "Customer: No\n"
    "Agent: Understood. The refund will be processed within 5 business days.\n"
)
CANCEL = "Shall I cancel the order and refund the full amount of $89.90?"
REPLACE = "Or would you prefer a replacement instead?"

VISIT = (
    "Doctor: What brings you in today?\n"
    "Patient: I've had a cough for 10 days.\n"
    "Doctor: Any fever?\n"
    "Patient: No fever. But I'm short of breath climbing stairs.\n"
    "Doctor: Are you taking any medication?\n"
    "Patient: Only lisinopril 10 mg daily. I'm allergic to penicillin.\n"
    "Doctor: Thanks. I'd like to order a chest X-ray.\n"
    "Patient: Sure\n"
    "Doctor: Great.\n"
)


def _reason(r, text):
    sid = next(s.id for s in r.document.segments if s.original == text)
    return next(g["reason"] for g in r.record["sources"][0]["segments"] if g["id"] == sid)


def test_a_short_reply_turn_goes_only_with_the_question_it_answers(plan):
    # QA s26/qa5 finding 3: "Customer: OK" and "Customer: No" were delivered under "Agent: I'm sorry to hear
    # that." without the questions they answer, so what the customer decided could not be read
    c = Compressor.from_ontology("general")
    linked = 0
    for budget in range(30, 90, 2):
        r = c.compress(SUPPORT, query="What did the customer decide about the order?", budget=budget,
                       annotate=False, timings=False)
        lines = r.text.splitlines()
        for reply, question in (("Customer: OK", CANCEL), ("Customer: No", REPLACE)):
            if reply in lines:
                k = lines.index(reply)
                assert k and lines[k - 1].endswith(question), (budget, r.text)
            else:
                linked += "is a short reply and goes only with the question it answers" in _reason(r, reply)
        if CANCEL in r.text:  # the question, cut from the agent's courtesy, still says who asks it
            assert "Agent: " + CANCEL in r.text or "Agent: I'm sorry to hear that. " + CANCEL in r.text, r.text
    assert linked > 0


def test_a_short_reply_to_no_question_is_not_bound():
    # "Patient: Sure" after "I'd like to order a chest X-ray." answers no question: nothing binds it
    r = Compressor.from_ontology("general").compress(VISIT, query="Summarize the patient's symptoms and allergies",
                                                     budget=200, annotate=False, timings=False)
    assert "Patient: Sure" in r.text


def test_a_question_turn_of_the_other_side_goes_only_with_its_answer(plan):
    # QA s26/qa5 finding 4: "Doctor: Any fever?" was delivered while its answer "Patient: No fever. …" was
    # left out, and the next delivered line of the patient ("I'm allergic to penicillin.") read as the answer
    c = Compressor.from_ontology("general")
    linked = 0
    for budget in range(30, 90, 2):
        r = c.compress(VISIT, query="Summarize the patient's symptoms and allergies", budget=budget,
                       annotate=False, timings=False)
        lines = r.text.splitlines()
        for question, answer in (("Doctor: Any fever?", "Patient: No fever."),
                                 ("Doctor: Are you taking any medication?", "Patient: Only lisinopril"),
                                 ("Doctor: What brings you in today?", "Patient: I've had a cough")):
            if question in lines:
                k = lines.index(question)
                assert k + 1 < len(lines) and lines[k + 1].startswith(answer), (budget, r.text)
            else:
                linked += "is a question of the other side and goes only with its answer" in _reason(r, question)
    assert linked > 0


def test_a_question_in_a_meeting_is_not_bound_to_the_next_line():
    # no side is the one served: a meeting's question may go without the line after it
    meeting = ("Priya Nair: Any blockers?\n"
               "Tom Becker: The FX cache TTL is 900 seconds but we saw age 1834 on the ledger host.\n"
               "Luis Ortega: We raised the pool size from 20 to 40 on Wednesday.\n")
    r = Compressor.from_ontology("general").compress(meeting, query="Any blockers?", budget=14, annotate=False,
                                                     timings=False)
    reason = _reason(r, "Priya Nair: Any blockers?") if "Any blockers?" not in r.text else ""
    assert "goes only with its answer" not in reason
