"""A ticket thread whose lines were joined into one (an export into a CSV cell, a scraped page): a
separator run after a sentence's end ("… within 4 days.  --- Message 3 — Agent …") opens the next
message, a sentence and a paragraph of its own, so that no segment, and no run of delivered text, holds
one message's order next to another message's refund."""
import re

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.segment import Segmenter
from odcf.textutil import split_sentences

CORE = {"rules": False, "fold": False}
ORDER_RE = re.compile(r"#W\d+")
REFUND_RE = re.compile(r"Refund of \$\d+\.00")


def _thread(n: int = 12, *, short_end: bool = False) -> tuple[str, dict[str, str]]:
    """The thread on one line, and the order each refund belongs to."""
    msgs, owner = [], {}
    for i in range(1, n + 1):
        order, refund = f"#W{4817000 + i * 13}", f"Refund of ${i * 5}.00"
        owner[refund] = order
        end = f"{refund}." if short_end else f"{refund} was requested, unless the replacement arrives within {i % 10 + 2} days."
        msgs.append(f"Message {i} — {'Agent (Dana Ortiz)' if i % 2 else 'Customer (Marta Lindqvist)'} — "
                    f"2025-04-{i + 1:02d} 09:{i:02d}  Order {order} shipped with gateway GW-{7700 + i}. "
                    f"The device shows error E{i * 7:03d} after firmware 5.{i % 4}.{i}. {end}")
    return "  --- ".join(msgs) + "\n", owner


def _segments(text):
    return Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments


def test_a_separator_after_a_sentence_end_opens_a_new_sentence_and_paragraph():
    # QA: "Refund of $10.00 … within 4 days.  --- Message 3 — … 09:03  Order #W4817039 shipped …" was one
    # segment: message 2's refund glued to message 3's header and order
    text, owner = _thread(3)
    segs = _segments(text)
    for s in segs:
        assert len(ORDER_RE.findall(s.text)) <= 1 and not (ORDER_RE.search(s.text) and REFUND_RE.search(s.text)), s.text
    heads = [s for s in segs if s.text.startswith("--- Message")]
    assert [h.text[:13] for h in heads] == ["--- Message 2", "--- Message 3"]
    refund_2 = next(s for s in segs if s.text.startswith("Refund of $10.00"))
    assert refund_2.paragraph == heads[0].paragraph != heads[1].paragraph  # each message a paragraph
    # a short last sentence ("Refund of $10.00.") is not joined to the next message as a lead-in
    text, _ = _thread(3, short_end=True)
    assert any(s.text == "Refund of $10.00." for s in _segments(text))


def test_a_separator_ends_a_sentence_even_after_an_abbreviation_and_ordinary_prose_is_not_cut():
    text = "Shipped by Acme Ltd.  --- Message 4 — Agent — 2025-04-05 09:04  Order #W1 shipped."
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "Shipped by Acme Ltd.", "--- Message 4 — Agent — 2025-04-05 09:04  Order #W1 shipped."]
    text = "Customer waited. agent: I refunded the order. customer (vip): thanks"
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "Customer waited.", "agent: I refunded the order.", "customer (vip): thanks"]
    for prose in ("Subject: Re: refund for order #W1 was approved.",
                  "The unit failed; Note: do not reset it --- the log is needed.",
                  "It stopped. note: it restarted", "See e.g. user: name"):
        assert len(split_sentences(prose)) == 1, prose


def test_a_joined_thread_delivers_no_refund_after_another_messages_order(plan):
    text, owner = _thread(12)
    seen = False
    for budget in (120, 200, 300):
        r = Compressor(plan, stages=CORE).compress(text, query="refund for order #W4817013", budget=budget,
                                                   annotate=False)
        assert r.tokens_out <= budget
        for seg in r.document.segments:
            assert not (ORDER_RE.search(seg.text) and REFUND_RE.search(seg.text)), seg.text
        # in the delivered text, the order a refund reads as its own (the last one written before it,
        # in its paragraph and message) is its own order
        for block in r.text.split("\n\n"):
            for part in block.split("--- "):
                for m in REFUND_RE.finditer(part):
                    orders = ORDER_RE.findall(part[:m.start()])
                    seen = seen or bool(orders)
                    assert not orders or orders[-1] == owner[m.group()], (budget, part)
    assert seen  # some refund was delivered with its own order


def test_a_separator_run_that_ends_its_line_closes_the_sentence_before_it():
    # QA4: "… approves it. ***" at a line end opened a new paragraph, and "However, …" on the next line
    # went out after a stray "***" without the sentence it answers
    from odcf.textutil import split_sentences

    text = ("Escalate to Tier 2 when the order value exceeds $500. *** Do not promise a refund before Tier 2 "
            "approves it. ***\nHowever, the warehouse may still ship a replacement.")
    got = [text[a:b] for a, b in split_sentences(text)]
    assert not any(s.startswith("***") and "Do not promise" not in s for s in got), got
    at = next(i for i, s in enumerate(got) if "However" in s)
    assert "approves it. ***" in got[at] or got[at - 1].endswith("approves it. ***"), got
