"""JSON Lines (a tool's log, an event stream: one JSON object a line) are cut into records, a line
a segment, delivered whole and counted (``[DATA_ROWS: n]``), a record too large to deliver whole cut
into its members as a JSON source is (QA: a ``.jsonl`` file read as a comma-delimited table: its
first record taken for the header, glued to the second and repeated above a later part, the counts
off by one, a long record cut at its commas into broken JSON, and the ERROR record at the top left
out for want of room)."""
from __future__ import annotations

import json
import random
import re

import pytest

from odcf.compressor import Compressor, read_source_file
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.render import join_segments
from odcf.reverify import verify_report
from odcf.stages.rules import RuleStage
from odcf.stages.segment import Segmenter
from odcf.tokens import get_counter
from tests.stages.test_fenced_json import _part_of

PLAN = Plan(domain="t")
COUNTER = get_counter("o200k_base")
QUERY = "which charges failed and why"
ROWS_RE = re.compile(r"\[DATA_ROWS: (\d+)\]")


def _event(i: int) -> dict:
    failed = i % 7 == 0
    return {"ts": f"2026-11-30T10:{i:02d}:00Z", "level": "ERROR" if failed else "INFO", "service": "billing-api",
            "request_id": f"req-{1000 + i}",
            "msg": f"charge for invoice INV-{5000 + i} {'failed: card declined' if failed else 'succeeded'} "
                   f"amount ${100 + i}.00",
            "details": {"attempt": i % 3, "region": "eu-west-1", "latency_ms": 120 + i}}


#: 40 events, and a sixth of over 800 tokens (an ERROR whose message lists 80 declined items)
EVENTS = [_event(i) for i in range(40)]
EVENTS.insert(5, {"ts": "2026-11-30T10:05:30Z", "level": "ERROR", "service": "billing-api",
                  "msg": "x" * 10 + " ".join(f"item{j}: charge {j} EUR, status declined" for j in range(80))})
JSONL = "\n".join(json.dumps(e) for e in EVENTS) + "\n"
#: the same events, as the rules stage leaves them (minified, values unchanged)
LINES = [json.dumps(e, separators=(",", ":")) for e in EVENTS]


def _segments(text: str, kind: str = "json"):
    doc = RuleStage()(Document.from_sources([Source(id="tool.jsonl", text=text, kind=kind)]), PLAN)
    return doc, Segmenter()(doc, PLAN).segments


def _records(body: str, originals: list[dict]) -> tuple[list[int], int]:
    """The index in *originals* of each record delivered in *body* (each line a whole, valid JSON
    record, whole or with its members left out counted, or a mark), and the records its marks count."""
    found: list[int] = []
    marked = 0
    for line in body.splitlines():
        m = ROWS_RE.fullmatch(line)
        if m:
            marked += int(m.group(1))
            continue
        value = json.loads(line)  # a whole record: valid JSON
        k = next(k for k, o in enumerate(originals) if _part_of(value, o))
        assert not found or k > found[-1], body  # in order, and no record twice (none repeated as a header)
        found.append(k)
    return found, marked


def test_json_lines_are_cut_into_records_not_read_as_a_table():
    doc, segs = _segments(JSONL)
    assert doc.sources[0].text == "\n".join(LINES)  # the rules stage minified it line by line
    assert all(s.kind == "json" for s in segs) and not any("table_header" in s.meta and s.meta["table_header"]
                                                          for s in segs)
    whole = [s for s in segs if "json_block" not in s.meta]
    assert [s.text for s in whole] == LINES[:5] + LINES[6:]  # a record a segment, never two
    assert [s.meta["table_rows"] for s in whole] == [[r, 1] for r in range(41) if r != 5]
    assert {s.meta["table_total"] for s in segs} == {41}
    # the record of 800 tokens: cut into its members (never at its commas), rebuilt into valid JSON
    cut = [s for s in segs if "json_block" in s.meta]
    assert len(cut) == 4 and {s.meta["table_rows"][0] for s in cut} == {5}
    assert [json.loads("{" + s.text + "}") for s in cut] == [{k: v} for k, v in EVENTS[5].items()]
    assert join_segments(list(segs)) == doc.sources[0].text  # all delivered: the source as the rules left it
    assert join_segments([cut[0], cut[1]]).split("\n") == [
        "[DATA_ROWS: 5]", '{"ts":"2026-11-30T10:05:30Z","level":"ERROR","[JSON_KEYS: 2]":null}', "[DATA_ROWS: 35]"]


def test_any_subset_of_the_records_is_whole_json_records_and_counts_what_it_leaves_out():
    _, segs = _segments(JSONL)
    rng = random.Random(7)
    for _ in range(80):
        kept = [s for s in segs if rng.random() < 0.3]
        if not kept:
            continue
        found, marked = _records(join_segments(kept), EVENTS)
        assert sorted({s.meta["table_rows"][0] for s in kept}) == found
        assert len(found) + marked == len(EVENTS), join_segments(kept)  # every record left out is counted


def test_a_compressed_json_lines_file_delivers_the_error_records_whole_and_counted():
    # as `odcf compress tool.jsonl -q "which charges failed and why" -b 400` (the general plan, source lines)
    r = Compressor.from_ontology("general").compress([Source(id="tool.jsonl", text=JSONL, kind="json")],
                                                     query=QUERY, budget=400, timings=False)
    assert COUNTER.count(r.text) <= 400
    head, body = r.text.split("\n", 1)
    assert head.startswith("[source 1/1] tool.jsonl")
    found, marked = _records(body, EVENTS)
    assert len(found) + marked == len(EVENTS)
    # the ERROR records are those delivered: whole, five of the six that fit in 400 tokens (72 each)
    lines = [json.loads(ln) for ln in body.splitlines() if not ROWS_RE.fullmatch(ln)]
    assert all(EVENTS[k]["level"] == "ERROR" for k in found)
    assert sum(1 for v in lines if v in EVENTS) >= 4
    segs = r.record["sources"][0]["segments"]
    assert len(segs) == 44 and {s["kind"] for s in segs} == {"json"}
    assert all(s["reason"].startswith("budget: ") for s in segs if s["status"] == "dropped")


@pytest.mark.parametrize("budget", [60, 100, 150, 250, 400, 700, 1200])
def test_json_lines_within_any_budget_are_valid_records_and_compress_again_to_themselves(budget):
    c = Compressor(PLAN)
    for kind in ("json", "tool", "text"):
        once = c.compress([Source(id="tool.jsonl", text=JSONL, kind=kind)], query=QUERY, budget=budget,
                          annotate=False, timings=False)
        assert COUNTER.count(once.text) <= budget
        found, marked = _records(once.text, EVENTS)
        assert found and len(found) + marked == len(EVENTS), once.text
        again = c.compress([Source(id="tool.jsonl", text=once.text, kind=kind)], query=QUERY, budget=budget,
                           annotate=False, timings=False)
        assert again.text == once.text
        same = c.compress([Source(id="tool.jsonl", text=JSONL, kind=kind)], query=QUERY, budget=budget,
                          annotate=False, timings=False)
        assert same.text == once.text and same.record == once.record


def test_lines_that_are_not_json_stay_text():
    text = "\n".join(LINES[:3]) + "\n\n" + "\n".join(LINES[6:9]) + "\n" + LINES[9][:40]  # a blank line, a cut-off last line
    doc, segs = _segments(text)
    assert doc.sources[0].text == text  # not JSON Lines throughout: the rules leave it as it is
    assert [s.kind for s in segs] == ["json"] * 6 + ["sentence"] and segs[-1].text == LINES[9][:40]
    assert [s.meta["table_rows"] for s in segs[:6]] == [[r, 1] for r in range(6)]
    assert join_segments(list(segs)) == text
    r = Compressor(PLAN).compress([Source(id="tool.jsonl", text=text, kind="json")], budget=2000, annotate=False)
    assert r.text == text
    # a line or two of JSON in prose is no JSON Lines; a lead-in line over them does not take them in
    _, segs = _segments('Result: {"a": 1}\n\nThe events:\n' + "\n".join(LINES[:2]), kind="text")
    assert [s.kind for s in segs] == ["sentence", "sentence", "json", "json"]


FENCED = ("# Billing run\n\nThe worker logged:\n\n```jsonl\n" + "\n".join(json.dumps(e) for e in EVENTS[:12])
          + "\n```\n\nThe run ended at 10:12.\n")


@pytest.mark.parametrize("info", ["jsonl", "ndjson", "json", ""])
def test_a_fenced_block_of_json_lines_is_cut_into_records_inside_its_fences(info):
    text = FENCED.replace("```jsonl", "```" + info)
    _, segs = _segments(text, kind="markdown")
    records = [s for s in segs if "table_rows" in s.meta]
    assert {s.meta["jsonl_fence"][0] for s in records} == {"```" + info}
    assert len({s.meta["table_rows"][0] for s in records}) == 12 and {s.kind for s in records} == {"json"}
    assert len(records) > 12  # the long record in its members
    rng = random.Random(3)
    for _ in range(60):
        kept = [s for s in segs if rng.random() < 0.3]
        out = join_segments(kept)
        if not any(s in records for s in kept):
            assert "```" not in out
            continue
        fences = list(re.finditer(r"^```\w*$", out, re.MULTILINE))
        assert [m.group() for m in fences] == ["```" + info, "```"], out  # opened and closed once
        body = out[fences[0].end() + 1:fences[1].start() - 1]
        found, marked = _records(body, EVENTS[:12])
        assert len(found) + marked == 12, out


def test_a_fenced_block_with_a_line_that_is_not_json_stays_code():
    text = FENCED.replace(json.dumps(EVENTS[3]), json.dumps(EVENTS[3])[:-1])  # a record cut off
    _, segs = _segments(text, kind="markdown")
    assert not any("table_rows" in s.meta for s in segs)
    assert any(s.kind == "code" for s in segs)


@pytest.mark.parametrize("budget", [80, 150, 250, 400])
def test_a_compressed_log_delivers_fenced_json_lines_whole_and_compresses_again_to_itself(budget):
    c = Compressor(PLAN)
    once = c.compress([Source(id="log.md", text=FENCED, kind="markdown")], query=QUERY, budget=budget,
                      annotate=False, timings=False)
    assert COUNTER.count(once.text) <= budget
    if "```jsonl" in once.text:
        body = once.text.split("```jsonl\n", 1)[1].split("\n```", 1)[0]
        found, marked = _records(body, EVENTS[:12])
        assert len(found) + marked == 12
    again = c.compress([Source(id="log.md", text=once.text, kind="markdown")], query=QUERY, budget=budget,
                       annotate=False, timings=False)
    assert again.text == once.text


def test_compressed_json_lines_verify(tmp_path):
    path = tmp_path / "tool.jsonl"
    path.write_text(JSONL, encoding="utf-8")
    r = Compressor(PLAN).compress([read_source_file(str(path))], query=QUERY, budget=400)
    records = [json.loads(line) for line in r.text.splitlines() if line.startswith("{")]
    assert len(records) >= 4 and all(e["level"] == "ERROR" for e in records), r.text  # the failed charges
    assert ROWS_RE.search(r.text)  # the records left out counted
    report = verify_report(r.record, r.text, plan=PLAN)
    assert report.ok, [str(p) for p in report.problems]


#: 30 events, an ERROR every seventh, and a record cut off (no JSON) after the twelfth (QA: the records
#: after it were read as a comma-delimited table, its header the line cut off, and at 150 tokens
#: eighteen of them left out with no mark)
CUT = json.dumps(EVENTS[12])[:70]
BROKEN = "\n".join([json.dumps(e) for e in EVENTS[:12]] + [CUT] + [json.dumps(e) for e in EVENTS[13:31]]) + "\n"


def test_a_line_that_is_no_json_between_records_leaves_the_records_after_it_records():
    _, segs = _segments(BROKEN)
    assert not any(s.meta.get("table_header") for s in segs)
    rows = [s for s in segs if "table_rows" in s.meta]
    assert {s.meta["table_total"] for s in rows} == {31} and len({s.meta["table_rows"][0] for s in rows}) == 31
    assert [s.text for s in rows if s.meta["table_rows"][0] == 12] == [CUT]  # a line of its own, as it is
    c = Compressor(PLAN)
    for budget in (100, 150, 300, 600):
        once = c.compress([Source(id="tool.jsonl", text=BROKEN, kind="json")], query=QUERY, budget=budget,
                          annotate=False, timings=False)
        assert COUNTER.count(once.text) <= budget
        lines = once.text.splitlines()
        cut = lines.count(CUT)
        found, marked = _records("\n".join(ln for ln in lines if ln != CUT), EVENTS[:12] + EVENTS[13:31])
        # every line is delivered or counted: the records on both sides of the line cut off, and that line
        assert found and len(found) + cut + marked == 31, once.text
        if budget >= 300:
            assert any(k >= 12 for k in found), once.text  # the ERROR records after it (at 10:14, 10:21, 10:28)
        again = c.compress([Source(id="tool.jsonl", text=once.text, kind="json")], query=QUERY, budget=budget,
                           annotate=False, timings=False)
        assert again.text == once.text
    # a line cut off after the last record is no record: text, as before
    _, segs = _segments(BROKEN + CUT)
    assert segs[-1].kind == "sentence" and segs[-1].text == CUT and "table_rows" not in segs[-1].meta


def _small_event(i: int) -> dict:
    failed = i % 12 == 7
    return {"ts": f"2026-11-30T10:{i:02d}:00Z", "level": "ERROR" if failed else "INFO",
            "service": ["orders", "auth", "search", "billing-api"][i % 4],
            "msg": f"charge ch_{4400 + i} failed: card_declined (insufficient_funds) for customer cus_{77 + i}"
            if failed else f"request {1000 + i} handled in {(i * 37) % 900} ms"}


SMALL = [_small_event(i) for i in range(20)]
INCIDENT = ("# Incident 5521 notes\n\nThe billing API failed several charges overnight. Events below.\n\n```jsonl\n"
            + "\n".join(json.dumps(e) for e in SMALL)
            + "\n```\n\nNext step: refund the failed charges within 5 business days.\n")


@pytest.mark.parametrize("info", ["jsonl", "ndjson", "json"])
@pytest.mark.parametrize("budget", [80, 110])
def test_a_fenced_block_delivered_with_one_record_compresses_again_to_itself(info, budget):
    # QA: "[DATA_ROWS: 7]" / one record / "[DATA_ROWS: 12]" in the fences, compressed again, was read as
    # code: "[CODE_LINES: 1]" in place of "[DATA_ROWS: 7]", the count of the records left out lost
    text = INCIDENT.replace("```jsonl", "```" + info)
    c = Compressor(PLAN)
    once = c.compress([Source(id="log.md", text=text, kind="markdown")], query=QUERY, budget=budget,
                      annotate=False, timings=False)
    body = once.text.split(f"```{info}\n", 1)[1].split("\n```", 1)[0]
    found, marked = _records(body, SMALL)
    assert found in ([7], [19]) and marked == 19, once.text  # an ERROR record; those left out counted
    again = c.compress([Source(id="log.md", text=once.text, kind="markdown")], query=QUERY, budget=budget,
                       annotate=False, timings=False)
    assert again.text == once.text
    _, segs = _segments(once.text, kind="markdown")
    rows = [s.meta["table_rows"] for s in segs if "table_rows" in s.meta]
    assert rows == [[0, 0], [0, 1], [1, 0]] or rows == [[0, 0], [0, 1]], once.text  # records, not code lines
