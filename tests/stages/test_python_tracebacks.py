"""A Python traceback is cut in whole frames, its exception line a part that can go alone (QA s32 R1: a
chained traceback of 354 tokens was two code segments of 219 and 123 tokens and a sentence, so that at 88
tokens nothing was delivered, not even the exception line that says what went wrong)."""
from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.segment import Segmenter

PLAN = Plan(domain="t")

FIRST = (
    "Traceback (most recent call last):\n"
    '  File "/opt/billing/service/scheduler.py", line 311, in tick\n'
    "    batch = self.collect(pending_invoices)\n"
    '  File "/opt/billing/service/scheduler.py", line 276, in collect\n'
    "    rows = self.store.fetch(invoice_ids, columns=INVOICE_COLUMNS_V2)\n"
    '  File "/opt/billing/service/storage/postgres.py", line 88, in fetch\n'
    "    cursor.execute(query, parameters)\n"
    '  File "/opt/venv/lib/python3.12/site-packages/psycopg/cursor.py", line 732, in execute\n'
    "    raise ex.with_traceback(None)\n"
    "psycopg.errors.UndefinedColumn: column \"tax_region\" does not exist\n")
SECOND = (
    "Traceback (most recent call last):\n"
    '  File "/opt/billing/service/main.py", line 40, in <module>\n'
    "    Scheduler(region=\"eu-west-2\").run_forever()\n"
    '  File "/opt/billing/service/scheduler.py", line 120, in run_forever\n'
    "    self.tick()\n"
    '  File "/opt/billing/service/scheduler.py", line 318, in tick\n'
    "    raise BatchFailed(batch_id) from exc\n"
    "billing.errors.BatchFailed: batch 2024-06-01T00:00Z failed\n")
CHAIN = FIRST + "\nThe above exception was the direct cause of the following exception:\n\n" + SECOND
EXCEPTIONS = ('psycopg.errors.UndefinedColumn: column "tax_region" does not exist',
              "billing.errors.BatchFailed: batch 2024-06-01T00:00Z failed")


def _segments(text):
    return Segmenter()(Document.from_sources([Source(id="t", text=text)]), PLAN).segments


def test_a_chained_traceback_is_cut_in_whole_frames_with_its_exception_lines_parts_of_their_own():
    out = _segments(CHAIN)
    assert {s.kind for s in out} == {"code"} and len(out) > 4
    assert "".join(s.sep + s.text for s in out) == CHAIN.rstrip("\n")
    texts = [s.text for s in out]
    assert [t for t in texts if t.startswith(EXCEPTIONS)] == list(EXCEPTIONS)  # alone, whole
    for s in out:  # every part opens a traceback, a frame or an exception: a frame's lines are never split
        assert s.text.startswith(("Traceback", "  File ", "The above exception") + EXCEPTIONS), s.text
    # the chain's line opens the second traceback's first part, not a sentence of its own
    chain = next(s for s in out if s.text.startswith("The above exception"))
    assert chain.text.split("\n")[2] == "Traceback (most recent call last):"
    # the first part of each traceback goes only with its exception line, a later part with the part before
    exc = [s for s in out if s.text.startswith(EXCEPTIONS)]
    assert [out[s.index - s.meta["trace_head"]].text.split("\n")[0] for s in exc] == [
        "Traceback (most recent call last):", "The above exception was the direct cause of the following exception:"]
    later = [s for s in out if s.text.startswith("  File ")]
    assert later and all(s.meta["trace_of"] == 1 for s in later)
    assert all("trace_of" not in s.meta for s in exc)


def test_a_short_traceback_stays_one_part():
    text = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n    1/0\n"
            "ZeroDivisionError: division by zero\n")
    assert [s.text for s in _segments(text)] == [text.rstrip("\n")]


def _compress(text, budget, origin="trace.txt"):
    return Compressor.from_ontology("general").compress([{"id": origin, "text": text}], budget=budget, timings=False)


def test_at_a_tight_budget_an_exception_line_is_delivered_and_frames_never_without_it():
    for budget in (40, 60, 90, 140):
        r = _compress(CHAIN, budget)
        assert r.tokens_out <= budget
        lines = [line for line in r.text.split("\n")[1:] if line and not line.startswith("[")]
        assert any(line in EXCEPTIONS for line in lines), (budget, r.text)
        assert all(line in CHAIN.split("\n") for line in lines)
        delivered = {s["id"] for s in r.record["sources"][0]["segments"] if s["status"] != "dropped"}
        for exc in (s for s in r.document.segments if s.meta.get("trace_head")):
            first = r.document.segments[exc.index - exc.meta["trace_head"]]
            if first.id in delivered:  # frames only with the exception they lead to
                assert exc.id in delivered, (budget, r.text)
    r = _compress(CHAIN, 60)
    reasons = [s["reason"] or "" for s in r.record["sources"][0]["segments"]]
    assert any("goes only with its exception line" in why for why in reasons)
    assert any("is a later part of a Python traceback's frames and goes only with the part before it" in why
               for why in reasons)


def test_a_fenced_traceback_delivers_its_exception_line_inside_the_fences():
    text = ("# Incident 7\n\nThe nightly billing run stopped at 00:00 and no invoices went out.\n\n```\n"
            + CHAIN + "```\n\nWe added the column and ran the batch again.\n")
    r = _compress(text, 70, origin="incident.md")
    assert any(e in r.text for e in EXCEPTIONS), r.text
    body = r.text.split("```")
    assert len(body) == 3  # opened and closed
