"""Tables in the segmenter: pipe tables, comma- or tab-separated records (read by Python's csv
module where the file name declares the delimiter), and command output laid out in columns of
spaces (``kubectl get pods``, ``docker ps``, ``df -h``, psql results, ``ls -l``)."""
from __future__ import annotations

import csv
import re

from odcf.document import Source
from odcf.rules.tables import COLUMNS_SEP_RE
from odcf.stages.segment.lines import LIST_RE, TABLE_PIPE_RE
from odcf.stages.segment.mail import STAMPED_SPEAKER_RE


def table_run(lines: list[tuple[int, int, str]], i: int) -> int:
    """End index (exclusive) of a table starting at line *i*, or *i* when there is none."""
    n = len(lines)
    if TABLE_PIPE_RE.match(lines[i][2]):
        j = i
        while j < n and TABLE_PIPE_RE.match(lines[j][2]):
            j += 1
        return j if j - i >= 2 else i
    if STAMPED_SPEAKER_RE.match(lines[i][2]):
        return i  # a chat export's line ("03/05/2024, 14:03 - Dana: …"): its comma makes no table
    for delim in ("\t", ","):
        # a record a line first ('6\'4"' is an inch mark, not an open quote); then records whose
        # quoted fields run over lines ("LOA\n(Metres)")
        for multiline, escape in ((False, False), (False, True), (True, False)):
            # escape: a backslash escapes a quote inside a quoted field ("6'4\"")
            j, cols = delimited_record(lines, i, delim, multiline=multiline, escape=escape)
            if cols < 2:
                continue
            records = 1
            while j < n and lines[j][2].strip():
                k, c = delimited_record(lines, j, delim, multiline=multiline, escape=escape)
                if c != cols:
                    break
                j, records = k, records + 1
            if (records >= 3 and not (delim == "," and cols <= 3 and wordy(lines[i:j]))
                    and not all(LIST_RE.match(line[2]) for line in lines[i:j])  # "1. HAT136 via ATL, $152"
                    and not all(line[2][:1] in " \t" for line in lines[i:j])):  # indented: a traceback, code
                return j
    return i


#: psql's footer ("(15 rows)"): no row, so no part of the table.
PSQL_FOOTER_RE = re.compile(r"^\s*\(\d+ rows?\)\s*$")
#: A line of ``ls -l``: permissions, links ("-rw-r--r--  1 ana staff 1204 …", "drwxr-xr-x@ 5 …").
_LS_ROW_RE = re.compile(r"^[-dlcbps][-rwxsStT]{9}[.@+]?\s+\d+\s+\S")
#: The gap between two columns of a header laid out with spaces.
_COLUMN_GAP_RE = re.compile(r"(?<=\S) {2,}(?=\S)")
_SENTENCE_END = (".", "!", "?", ":", ";", ",")


def aligned_run(lines: list[tuple[int, int, str]], i: int) -> tuple[int, int]:
    """(end index, header lines) of a table laid out in columns of spaces that starts at line *i*,
    or (i, 0) when there is none. Rows are whole lines, never joined by a quote (a ``"`` in a cell
    opens nothing). Three layouts:

    - a header of three columns or more, two or more spaces apart ("NAME   READY   STATUS"), maybe
      a line of dashes under each column (header lines: 2), then rows that keep a space inside each
      of the header's gaps (left- or right-aligned cells: ``kubectl``, ``docker ps``, ``df -h``,
      ``ps``) and have a gap of two spaces of their own; two rows at least, or one under dashes;
    - psql: a header with ``|`` between columns, its ``---+---`` line, then rows up to a blank line
      or the ``(N rows)`` footer, which is no row (header lines: 2);
    - ``ls -l``: three lines or more that open with permissions and a link count (no header)."""
    n = len(lines)
    head = lines[i][2].rstrip()
    under = lines[i + 1][2] if i + 1 < n else ""
    sep = bool(COLUMNS_SEP_RE.match(under))
    if i + 2 < n and "|" in head and sep and head.count("|") == under.count("+"):
        j = i + 2
        while j < n and lines[j][2].strip() and not PSQL_FOOTER_RE.match(lines[j][2]) \
                and lines[j][2].count("|") >= head.count("|"):
            j += 1
        return (j, 2) if j > i + 2 else (i, 0)
    if _LS_ROW_RE.match(head):
        j = i + 1
        while j < n and _LS_ROW_RE.match(lines[j][2]):
            j += 1
        return (j, 0) if j - i >= 3 else (i, 0)
    gaps = list(_COLUMN_GAP_RE.finditer(head))
    if len(gaps) < 2:
        return i, 0
    cells = _COLUMN_GAP_RE.split(head.strip())
    if any(len(c) > 40 or c.endswith(_SENTENCE_END) or not any(ch.isalpha() for ch in c) for c in cells):
        return i, 0  # a header names its columns; cells of words that end a sentence are prose
    masks = [set(range(m.start(), m.end())) for m in gaps]
    reach = gaps[1].end()  # a row has a cell in the third column at least
    head_n = 2 if sep and "+" not in under else 1  # dashes under each column ("----   ------")
    j = i + head_n
    while j < n:
        row = lines[j][2].rstrip()
        if len(row) <= reach or not _COLUMN_GAP_RE.search(row):
            break
        kept = [{p for p in mask if p >= len(row) or row[p] == " "} for mask in masks]
        if not all(kept):
            break
        masks = kept
        j += 1
    # two rows at least, or one under a line of dashes
    return (j, head_n) if j - i >= 3 else (i, 0)


def wordy(lines: list[tuple[int, int, str]]) -> bool:
    """Whether comma-separated lines read as prose: more than 5 words a cell on average. Clause
    lines such as "The insurer shall acknowledge the claim within 5 days, unless … (Clause 7.3)"
    have two or three such "cells"; no table of WikiTableQuestions with at most 3 columns does."""
    cells = [c for line in lines for c in line[2].split(",")]
    head = lines[0][2].split(",")  # a CSV opens with a header of short names ("term,definition")
    return sum(len(c.split()) for c in cells) > 5 * len(cells) and sum(len(c.split()) for c in head) > 3 * len(head)


def one_record_a_line(lines: list[tuple[int, int, str]]) -> bool:
    """Whether every line of a delimited table is a record of the same width (then a stray quote,
    as in an inch mark, never joins lines)."""
    for delim in ("\t", ","):
        for escape in (False, True):
            widths = {delimited_cols(line[2], delim, escape=escape) for line in lines}
            if len(widths) == 1 and min(widths) >= 2:
                return True
    return False


def delimited_record(lines: list[tuple[int, int, str]], i: int, delim: str, *, multiline: bool = True,
                     escape: bool = False) -> tuple[int, int]:
    """(end line index, columns) of the delimited record starting at line *i*: with *multiline*, a
    quoted field may hold newlines ("LOA\n(Metres)"), so a record runs over lines while a quote is
    open (at most 10)."""
    text, j = lines[i][2], i + 1
    while multiline and text.count('"') % 2 and j < len(lines) and j - i < 10:
        text += "\n" + lines[j][2]
        j += 1
    if text.count('"') % 2:
        return i + 1, delimited_cols(lines[i][2], delim, escape=escape)
    return j, delimited_cols(text, delim, escape=escape)


def declared_delimiter(source: Source) -> str | None:
    """The delimiter a source's file name declares: ``,`` for ``.csv``, a tab for ``.tsv``."""
    name = source.label.lower()
    if name.endswith(".csv"):
        return ","
    if name.endswith((".tsv", ".tab")):
        return "\t"
    return None


def csv_records(lines: list[tuple[int, int, str]], delim: str) -> list[list[tuple[int, int, str]]] | None:
    """The records of a delimited file, each as the lines it spans, read by Python's csv module: a
    quoted field may hold line breaks and blank lines, and where the plain reading fails, a
    backslash may escape a quote (``"A prior \\"incarnation\\" of the 37"``, as in the
    WikiTableQuestions files). None when the text is no table: it does not parse, or has fewer than
    three records, or fewer than two thirds of them share one width of two columns or more. Rows
    of another width (a short row, a long row with extra cells) are kept as they are."""
    for escape in (None, "\\"):
        # every line fed with its break, so that line_num counts source lines; a BOM is no part of a cell
        feed = (line.lstrip("\ufeff") + "\n" if k == 0 else line + "\n" for k, (_, _, line) in enumerate(lines))
        reader = csv.reader(feed, delimiter=delim, strict=True, escapechar=escape)
        records: list[list[tuple[int, int, str]]] = []
        widths: list[int] = []
        done = 0  # lines read before the record being read
        try:
            for row in reader:
                if len(row) > 1 or "".join(row).strip():  # a blank line is no record
                    records.append(lines[done:reader.line_num])
                    widths.append(len(row))
                done = reader.line_num
        except csv.Error:
            continue
        if len(records) < 3:
            return None
        width = max(set(widths), key=widths.count)
        if width >= 2 and 3 * widths.count(width) >= 2 * len(records):
            return records
        return None
    return None


def delimited_cols(line: str, delim: str, *, escape: bool = False) -> int:
    if not line.strip():
        return 0
    try:
        cells = next(csv.reader([line], delimiter=delim, escapechar="\\" if escape else None))
    except (csv.Error, StopIteration):
        return 0
    if delim == ",":
        # prose has commas too: require short cells and no sentence punctuation at the end
        if line.rstrip().endswith((".", "!", "?", ":")) and not line.rstrip().endswith('"'):
            return 0
        if any(len(c) > 80 for c in cells):
            return 0
    return len(cells)
