"""The HTML report: every segment coloured by status, legend counts from the record, self-contained."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from odcf.compressor import Compressor
from odcf.document import Document, Segment, Source, Span
from odcf.report.html import record_protected_count, record_status_counts, render_html
from odcf.stages.assemble import Assembler

TEXT = "Keep this $500 line. Drop this line. Squeeze out many words here. Old copy. Restored $7 text."


def _all_statuses_doc(plan):
    src = Source(id="s", text=TEXT + "\n| a | b |\n| 1 | 2 |\n| 3 | 4 |\n| 5 | 6 |", origin="mixed.txt")
    segs = (
        Segment("s#0", "s", 0, "Keep this $500 line.", "Keep this $500 line.",
                protected=(Span(10, 14, "$500", "anchor:money"),), score=0.9, reasons=("rank: score 0.90",)),
        Segment("s#1", "s", 1, "Drop this line.", "Drop this line.", sep=" ", status="dropped",
                reasons=("budget: no room <for> it",)),
        Segment("s#2", "s", 2, "Squeeze words.", "Squeeze out many words here.", sep=" ", status="compressed",
                reasons=("compress: kept 2 of 5 words",)),
        Segment("s#3", "s", 3, "Old copy.", "Old copy.", sep=" ", status="merged", merged_from=("s#0",)),
        Segment("s#4", "s", 4, "Restored $7 text.", "Restored $7 text.", sep=" ", status="reverted",
                protected=(Span(9, 11, "$7", "anchor:money"),), reasons=("verify: lost '$7'; reverted",)),
        Segment("s#5", "s", 5, "| a | b |\n[DATA_ROWS: 2]\n| 5 | 6 |", "| a | b |\n| 1 | 2 |\n| 3 | 4 |\n| 5 | 6 |",
                sep="\n", kind="table", status="folded", reasons=("fold: 2 rows folded",)),
    )
    doc = Document.from_sources([src], budget=100).replace(segments=segs)
    return Assembler()(doc, plan)


def test_legend_counts_match_the_record(plan):
    doc = _all_statuses_doc(plan)
    record = doc.meta["record"]
    page = render_html(doc, record)
    counts = record_status_counts(record)
    for status in ("verbatim", "compressed", "folded", "dropped", "merged", "reverted"):
        assert counts[status] == 1
        m = re.search(rf'<li data-status="{status}" data-count="(\d+)"', page)
        assert m and int(m.group(1)) == counts[status]
        # and the page holds exactly that many segments of the status
        assert len(re.findall(rf'class="seg st-{status}"', page)) == counts[status]
    m = re.search(r'<li data-kind="protected" data-count="(\d+)"', page)
    assert int(m.group(1)) == record_protected_count(record) == 2


def test_segments_show_what_happened(plan):
    doc = _all_statuses_doc(plan)
    page = render_html(doc)
    # protected spans name their rule
    assert '<mark class="prot" data-rule="anchor:money" title="protected by anchor:money">$500</mark>' in page
    # compressed-away words are struck through, kept ones are not
    seg = re.search(r'<span [^>]*data-seg="s#2".*?</span>', page, re.S).group(0)
    assert re.findall(r'<del class="cut">(.*?)</del>', seg) == ["out many ", " here"]
    assert 'data-cut="3"' in seg
    # folded rows are struck through and the fold marker is shown as an insertion
    fold = re.search(r'<span [^>]*data-seg="s#5".*?</span>', page, re.S).group(0)
    assert "| 1 | 2 |" in re.findall(r'<del class="cut">(.*?)</del>', fold, re.S)[0]
    assert '<ins class="add">[DATA_ROWS: 2]' in fold
    # reasons are escaped into the hover title and the side-panel data
    assert "budget: no room &lt;for&gt; it" in page
    assert "<for>" not in page


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href") and v:
                self.urls.append(v)


def test_page_is_self_contained_and_deterministic(plan, stage_switches, contract_text):
    c = Compressor(plan, stages=stage_switches)
    r1 = c.compress([contract_text, "Another source. With two sentences."], budget=50)
    r2 = c.compress([contract_text, "Another source. With two sentences."], budget=50)
    p1, p2 = render_html(r1.document, r1.record), render_html(r2.document, r2.record)
    assert p1 == p2
    col = _Collector()
    col.feed(p1)
    assert col.urls == []  # no external resource of any kind
    assert "link" not in col.tags and "@import" not in p1 and "url(" not in p1
    assert "http://" not in p1 and "https://" not in p1
    # budget use and the bar charts carry the record's numbers
    assert f'data-used="{r1.record["tokens_out"]}" data-budget="50"' in p1
    for src in r1.record["sources"]:
        assert f'data-label="{src["id"]}" data-tokens-in="{src["tokens_in"]}" data-tokens-out="{src["tokens_out"]}"' in p1


def test_needs_a_record(plan):
    doc = Document.from_sources([Source(id="a", text="x")])
    with pytest.raises(ValueError, match="delivery record"):
        render_html(doc)
