"""The fold stage on segments made by the real segmenter and protector."""
from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odcf.document import Document, Segment, Source, Span
from odcf.plan.model import Plan, RerankQuery
from odcf.rules.prefixes import unfold_prefixes
from odcf.stages.fold import FoldStage, query_terms
from odcf.stages.protect import Protector
from odcf.stages.segment import Segmenter

_MARK = re.compile(r"^\[DATA_ROWS: (\d+)\]$")


def _prepare(text: str, plan: Plan, query: str | None = None, kind: str = "markdown") -> Document:
    doc = Document.from_sources([Source(id="s", text=text, kind=kind)], query=query)
    # one table segment (the default cuts a table into parts of ~60 tokens, which rarely need folding), and
    # one list segment (a list's parts are of about 40 tokens)
    return Protector()(Segmenter(max_table_tokens=2000, max_list_tokens=400)(doc, plan), plan)


def _table(rows: list[tuple[str, str, str]]) -> str:
    return "| item | region | amount |\n|---|---|---|\n" + "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)


ROWS = [(f"item{i}", "north" if i != 13 else "Lisbon", f"{i * 10}") for i in range(1, 31)]
ROWS[20] = ("item21", "south", "$4,500")  # a protected money anchor in row 21


def _only(doc: Document, kind: str) -> Segment:
    segs = [s for s in doc.segments if s.kind == kind]
    assert len(segs) == 1
    return segs[0]


def test_table_keeps_header_head_tail_protected_and_query_rows(plan):
    doc = _prepare(_table(ROWS), plan, query="What was sold in Lisbon?")
    out = FoldStage()(doc, plan)
    seg = _only(out, "table")
    assert seg.text == (
        "| item | region | amount |\n|---|---|---|\n"
        "| item1 | north | 10 |\n| item2 | north | 20 |\n[DATA_ROWS: 10]\n"
        "| item13 | Lisbon | 130 |\n[DATA_ROWS: 7]\n| item21 | south | $4,500 |\n[DATA_ROWS: 8]\n"
        "| item30 | north | 300 |"
    )
    assert seg.status == "folded"
    assert seg.reasons[-1] == ("fold: table 30 rows → 5 kept, [DATA_ROWS: 25] in 3 gaps; "
                               "1 row kept for protected spans, 1 row kept for query terms")
    data = out.trace[-1].data
    assert data["tables"] == {"seen": 1, "folded": 1, "rows": 30, "kept": 5, "omitted": 25}
    assert data["segments"][0]["kept_protected"] == 1 and data["segments"][0]["kept_query"] == 1


def test_a_later_part_of_a_long_table_is_all_data_rows_and_its_counts_match_the_text(plan):
    rows = [(f"item{i}", "north" if i != 47 else "Lisbon", f"{i * 10}") for i in range(1, 121)]
    doc = Document.from_sources([Source(id="s", text=_table(rows), kind="markdown")], query="What was sold in Lisbon?")
    doc = Protector()(Segmenter(max_table_tokens=300)(doc, plan), plan)
    parts = [s for s in doc.segments if s.kind == "table"]
    assert len(parts) >= 3 and parts[1].meta["table_part"] == 1 and not parts[1].text.startswith("| item |")
    out = FoldStage()(doc, plan)
    for seg in (s for s in out.segments if s.kind == "table"):
        lines = seg.text.split("\n")
        shown = sum(1 for line in lines if line.startswith("| item") and not line.startswith("| item |"))
        omitted = sum(int(m.group(1)) for line in lines if (m := _MARK.match(line)))
        total = sum(1 for line in seg.original.split("\n") if line.startswith("| item") and not line.startswith("| item |"))
        # every data row is either shown or counted behind a marker; the reason says the same
        assert shown + omitted == total
        if seg.status == "folded":
            assert seg.reasons[-1].startswith(f"fold: table {total} rows → {shown} kept, [DATA_ROWS: {omitted}]")
        else:
            assert omitted == 0 and seg.text == seg.original
    assert sum(s.status == "folded" for s in out.segments) >= 3
    lisbon = next(s for s in out.segments if "Lisbon" in s.original)
    assert lisbon.meta["table_part"] >= 1 and "| item47 | Lisbon | 470 |" in lisbon.text


def test_small_tables_and_other_kinds_are_left_alone(plan):
    doc = _prepare(_table(ROWS[:8]) + "\n\nA sentence about item1.", plan)
    out = FoldStage()(doc, plan)
    assert all(s.status == "verbatim" and s.text == s.original for s in out.segments)
    assert out.trace[-1].data["tables"]["folded"] == 0


def test_csv_table_is_folded(plan):
    csv = "item,region,amount\n" + "\n".join(f"{a},{b},{c}" for a, b, c in ROWS if "$" not in c)
    doc = _prepare(csv, plan)
    seg = _only(FoldStage()(doc, plan), "table")
    assert seg.text.split("\n") == ["item,region,amount", "item1,north,10", "item2,north,20",
                                    "[DATA_ROWS: 26]", "item30,north,300"]


def test_concept_terms_keep_rows_only_when_asked():
    plan = Plan(domain="d", queries=(RerankQuery("geo", "geo", ("lisbon",)),))
    doc = _prepare(_table(ROWS), plan)
    assert "Lisbon" not in _only(FoldStage()(doc, plan), "table").text
    assert "Lisbon" in _only(FoldStage(keep_concept_rows=True)(doc, plan), "table").text


def test_options_change_the_fold(plan):
    doc = _prepare(_table(ROWS), plan)
    seg = _only(FoldStage(max_rows=40)(doc, plan), "table")
    assert seg.status == "verbatim"
    seg = _only(FoldStage(head_rows=0, tail_rows=0)(doc, plan), "table")
    assert seg.text.split("\n")[2:] == ["[DATA_ROWS: 20]", "| item21 | south | $4,500 |", "[DATA_ROWS: 9]"]
    assert _only(FoldStage(tables=False)(doc, plan), "table").status == "verbatim"


LOG = "\n".join(f"- 2024-05-01 12:30:{i:02d} INFO payments.api: charge ch_{i:04d} ok" for i in range(10))


def test_list_prefix_fold_is_lossless_and_recorded(plan):
    doc = _prepare(LOG, plan)
    out = FoldStage()(doc, plan)
    seg = _only(out, "list")
    assert seg.status == "folded" and seg.text.startswith("[PREFIX: - 2024-05-01 12:30:]\n00 INFO")
    assert unfold_prefixes(seg.text) == seg.original
    assert "share a prefix" in seg.reasons[-1]
    lists = out.trace[-1].data["lists"]
    assert lists["folded"] == 1 and lists["lines"] == 10 and lists["tokens_saved"] > 0
    assert _only(FoldStage(prefixes=False)(doc, plan), "list").status == "verbatim"


def test_prefix_fold_stops_before_a_protected_span(plan):
    text = "\n".join(f"- Section 4.{i} applies to the delivery schedule item {i}" for i in range(1, 7))
    doc = _prepare(text, plan)
    seg = _only(doc, "list")
    assert any(s.rule == "anchor:clause" for s in seg.protected)
    out = _only(FoldStage(min_prefix_chars=3)(doc, plan), "list")
    for span in seg.protected:
        assert span.text in out.text
    assert unfold_prefixes(out.text) == seg.original


def test_a_prefix_fold_never_cuts_a_name_the_query_names():
    # QA: "[PREFIX: ledger-worker-]" left "7d9f8c412-x8k2p …": the pod the query asked about was no longer whole
    pods = ["7d9f8c314-yeban", "7d9f8c444-z0emr", "7d9f8c412-x8k2p", "7d9f8c985-z0nar", "7d9f8c111-0hipg"]
    text = "\n".join(f"ledger-worker-{p} restarted after probe failure (exit code {k})" for k, p in enumerate(pods))
    plan = Plan(domain="d")
    seg = _only(_prepare(text, plan, kind="text"), "list")
    folded = _only(FoldStage()(Document(sources=(), segments=(seg,), query="why is ledger-worker-7d9f8c985-z0nar down"),
                               plan), "list")
    assert "ledger-worker-7d9f8c985-z0nar restarted" in folded.text
    assert unfold_prefixes(folded.text) == text
    assert _only(FoldStage()(Document(sources=(), segments=(seg,), query="which worker restarted"), plan),
                 "list").text.startswith("[PREFIX: ledger-worker-]\n7d9f8c314-yeban")  # no name asked for: folded
    from odcf.stages.fold import query_names

    assert query_names('is "db-01.prod" or /var/log/app.log full? ledger-worker-x, ok') == (
        "db-01.prod", "var/log/app.log", "ledger-worker-x")


def test_a_row_of_a_table_in_columns_of_spaces_is_a_line_whatever_its_quotes():
    header = "NAME                 STATUS      COMMAND"
    rows = [f'job-{i:02d}               {"Failed " if i == 6 else "Complete"}    {chr(34) if i == 3 else "run"}.sh'
            for i in range(1, 13)]
    plan = Plan(domain="d")
    doc = _prepare(header + "\n" + "\n".join(rows), plan, query="what Failed", kind="text")
    out = _only(FoldStage()(doc, plan), "table")
    assert out.text.split("\n") == [header, rows[0], rows[1], "[DATA_ROWS: 3]", rows[5], "[DATA_ROWS: 5]", rows[11]]


def test_fold_never_applies_when_a_span_would_be_lost():
    # A span whose offsets say row 5, but whose text was changed upstream: the text check refuses.
    table = _table(ROWS[:20])
    seg = Segment(id="s#0", source_id="s", index=0, text=table, original=table, kind="table",
                  protected=(Span(0, 4, "not-in-text", "anchor:x"),))
    out = FoldStage()(Document(sources=(), segments=(seg,)), Plan(domain="d"))
    assert out.segments[0] is seg
    assert out.trace[-1].data["skipped"] == [{"segment": "s#0", "why": "a protected span would be lost"}]


def test_query_terms():
    assert query_terms(["What was the total for order #W123 in Lisbon?"]) == ("total", "order", "w123", "lisbon")
    assert query_terms(["退款 政策"]) == ("退款", "政策")


# -- properties ---------------------------------------------------------------------------

cells = st.sampled_from(["north", "south", "$1,200", "§ 4.2", "7.5%", "alpha", "beta", "42", "gross negligence"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # plan is frozen
@given(rows=st.lists(st.tuples(cells, cells), min_size=1, max_size=40), query=st.sampled_from([None, "beta", "south 42"]))
def test_property_protected_spans_survive_and_folding_twice_changes_nothing(plan, rows, query):
    text = "| a | b |\n|---|---|\n" + "\n".join(f"| {x} | {y} |" for x, y in rows)
    doc = _prepare(text, plan, query=query)
    stage = FoldStage()
    once = stage(doc, plan)
    for before, after in zip(doc.segments, once.segments):
        for span in before.protected:
            assert span.text in after.text
        if after.kind == "table" and after.status == "folded":
            lines = after.text.split("\n")
            kept = [ln for ln in lines[2:] if not _MARK.match(ln)]
            omitted = sum(int(m.group(1)) for ln in lines if (m := _MARK.match(ln)))
            assert len(kept) + omitted == len(rows)
            assert lines[2] == f"| {rows[0][0]} | {rows[0][1]} |"
            assert lines[-1] == f"| {rows[-1][0]} | {rows[-1][1]} |"
    twice = stage(once, plan)
    assert [s.text for s in twice.segments] == [s.text for s in once.segments]


prefixes = st.sampled_from(["2024-05-01 12:30:00 INFO api: ", '"user_id": "', "- [ok] worker.pool.main ", "x"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # plan is frozen
@given(lines=st.lists(st.tuples(prefixes, st.sampled_from(["a", "b 1", "$1,200 paid", "c d", ""])), min_size=1, max_size=30))
def test_property_prefix_folding_is_lossless_and_idempotent(plan, lines):
    text = "\n".join(p + s for p, s in lines)
    seg = Segment(id="s#0", source_id="s", index=0, text=text, original=text, kind="list")
    doc = Protector()(Document(sources=(Source(id="s", text=text),), segments=(seg,)), plan)
    once = FoldStage()(doc, plan)
    out = once.segments[0]
    assert unfold_prefixes(out.text) == text
    for span in doc.segments[0].protected:
        assert span.text in out.text
    assert FoldStage()(once, plan).segments[0].text == out.text


def test_identical_lines_fold_into_one_line_that_says_how_many_times_it_repeats(plan):
    # QA s29/qa3 #7: the record called '[PREFIX: the whole line]' over empty lines a lossless fold
    text = "\n".join(["- Section 9.1 caps liability at $250,000 and may not be exceeded."] * 20)
    seg = _only(FoldStage()(_prepare(text, plan), plan), "list")
    assert seg.status == "folded" and seg.text.startswith("[REPEAT ×") and "[PREFIX" not in seg.text
    assert unfold_prefixes(seg.text) == seg.original
    assert "identical lines in 1 run written once each as [REPEAT ×n: ...] (lossless)" in seg.reasons[-1]
    assert "share a prefix" not in seg.reasons[-1]
