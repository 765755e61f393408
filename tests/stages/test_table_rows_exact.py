"""Every row of a table is delivered as the source has it, blank cells at its ends and all (QA s32 R2:
the TSV row ``2012\\tChris Brown\\tFortune\\tDon't Judge Me\\t18\\t\\t``, the last of a part delivered
without the part after it, came out as ``…\\t18``: five cells under a header of seven, in a segment the
record called verbatim)."""
from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.render import join_segments
from odcf.stages.segment import Segmenter

PLAN = Plan(domain="t")


def _segments(text, origin):
    return Segmenter(max_table_tokens=30)(
        Document.from_sources([Source(id="t", text=text, origin=origin)]), PLAN).segments


def _rows(n, sep, blank):
    # every third row ends in blank cells, every fifth opens with one
    out = []
    for k in range(n):
        cells = [f"{2000 + k}", f"Artist {k}", f"Album {k}", f"Song {k}", str(k % 40 + 1), "", ""]
        if k % 3:
            cells[5], cells[6] = str(k % 7 + 1), str(k % 9 + 1)
        if k % 5 == 0:
            cells[0] = blank
        out.append(sep.join(cells))
    return out


def test_a_part_of_a_tsv_delivered_alone_keeps_the_blank_cells_at_its_rows_ends():
    head = "Year\tArtist\tAlbum\tSong\tHot 100\tR&B\tRap"
    rows = _rows(24, "\t", "")
    text = head + "\n" + "\n".join(rows) + "\n"
    out = _segments(text, "chart.tsv")
    assert {s.kind for s in out} == {"table"} and len(out) > 3
    assert "".join(s.sep + s.text for s in out) == text.rstrip("\n")
    for part in out[1:]:
        first, n = part.meta["table_rows"]
        assert part.text == "\n".join(rows[first:first + n])  # the part's rows, their tabs at both ends too
        body = join_segments([part]).split("\n")
        assert body[0] == head and body[1] == f"[DATA_ROWS: {first}]"
        assert body[2:2 + n] == rows[first:first + n]
        assert all(line.count("\t") == 6 for line in body[2:2 + n])  # seven cells, as under the header


def test_csv_and_pipe_table_rows_keep_their_trailing_whitespace_cells():
    rows = _rows(24, ",", " ")
    rows = [r + " " if k % 4 == 0 else r for k, r in enumerate(rows)]  # a last cell of a space
    text = "Year,Artist,Album,Song,Hot 100,R&B,Rap\n" + "\n".join(rows) + "\n"
    for part in _segments(text, "chart.csv")[1:]:
        first, n = part.meta["table_rows"]
        assert part.text == "\n".join(rows[first:first + n])
    md = ["| Year | Song | Note |", "|---|---|---|"] + [f"| {2000 + k} | Song {k} | |  " for k in range(24)]
    text = "Chart:\n\n" + "\n".join(md) + "\n\nDone.\n"
    parts = [s for s in _segments(text, "notes.md") if s.kind == "table"]
    assert len(parts) > 2
    for part in parts[1:]:
        first, n = part.meta["table_rows"]
        assert part.text == "\n".join(md[2 + first:2 + first + n])


def test_a_tsv_delivered_in_part_at_a_tight_budget_has_only_its_own_lines():
    head = "Year\tArtist\tAlbum\tSong\tHot 100\tR&B\tRap"
    rows = _rows(40, "\t", "")
    text = head + "\n" + "\n".join(rows) + "\n"
    r = Compressor.from_ontology("general").compress([{"id": "chart.tsv", "text": text}], budget=150, timings=False)
    lines = [line for line in r.text.split("\n")[1:] if line and not line.startswith("[")]
    assert len(lines) > 3 and lines[0] == head
    assert [line for line in lines if line not in rows and line != head] == []
    assert all(s["status"] == "verbatim" for s in r.record["sources"][0]["segments"] if s["tokens_out"])
