"""Table folding: header + first and last rows + kept rows, omitted rows counted in place.

A table is a markdown pipe table (header line, ``|---|`` line, rows), a CSV/TSV block
(header line, rows; a quoted field may span lines) or command output in columns of spaces (header
line, a line of dashes such as psql's ``---+---``, rows of one line each). Rows that the caller wants kept — because
they hold a protected span or a query term — survive wherever they are; each run of omitted
rows becomes one line ``[DATA_ROWS: k]``. Folding a folded table changes nothing more:
existing markers are read back and merged with any new gap next to them.

>>> rows = "\\n".join(f"| r{i} | {i} |" for i in range(1, 11))
>>> out, stats = fold_table("| name | n |\\n|---|---|\\n" + rows, lambda s, e, t: "r5 " in t)
>>> print(out)
| name | n |
|---|---|
| r1 | 1 |
| r2 | 2 |
[DATA_ROWS: 2]
| r5 | 5 |
[DATA_ROWS: 4]
| r10 | 10 |
>>> stats
{'rows': 10, 'kept': 4, 'omitted': 6, 'gaps': 2}
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

#: The |---| line under a markdown table header (also used by segmentation).
TABLE_SEP_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
#: The line under the header of command output (also used by segmentation): psql's
#: "---------+-----------", or dashes under each column ("----     ------", kubectl's events).
COLUMNS_SEP_RE = re.compile(r"^\s*-+(?:(?:\+| +)-+)+\s*$")
_MARKER = re.compile(r"^\s*\[DATA_ROWS: (\d+)\]\s*$")

#: ``keep(start, end, row_text)``: offsets of the row in the table text.
KeepRow = Callable[[int, int, str], bool]


@dataclass(frozen=True)
class _Item:
    start: int
    end: int
    gap: int = 0  # > 0: an existing [DATA_ROWS: gap] marker


def _lines(text: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


def split_table(text: str, *, header: bool = True, quoted: bool = True) -> tuple[int, list[_Item]] | None:
    """(end offset of the header part, body items), or None when *text* is not a table.
    ``header=False``: *text* is a later part of a long table, data rows only (header end 0).
    ``quoted=False``: a row is a line, whatever its quotes (columns laid out with spaces)."""
    lines = _lines(text)
    if len(lines) < (2 if header else 1):
        return None
    if header:
        sep = text[lines[1][0]:lines[1][1]]
        body_from = 2 if TABLE_SEP_RE.match(sep) or COLUMNS_SEP_RE.match(sep) else 1
        header_end = lines[body_from - 1][1]
        csv = body_from == 1
    else:
        body_from, header_end = 0, 0
        csv = not text.lstrip().startswith("|")
    csv = csv and quoted
    items: list[_Item] = []
    open_start: int | None = None
    quotes = 0
    for start, end in lines[body_from:]:
        line = text[start:end]
        if open_start is None:
            m = _MARKER.match(line)
            if m:
                items.append(_Item(start, end, gap=int(m.group(1))))
                continue
            open_start, quotes = start, 0
        if csv:
            quotes += line.count('"')
            if quotes % 2:  # a quoted field continues on the next line
                continue
        items.append(_Item(open_start, end))
        open_start = None
    if open_start is not None:
        items.append(_Item(open_start, lines[-1][1]))
    return header_end, items


def fold_table(
    text: str,
    keep: KeepRow,
    *,
    max_rows: int = 8,
    head_rows: int = 2,
    tail_rows: int = 1,
    header: bool = True,
    quoted: bool = True,
) -> tuple[str, dict[str, int]] | None:
    """Fold *text* when it has more than *max_rows* data rows; None when nothing changes.
    ``header=False``: *text* holds data rows only (a later part of a long table); ``quoted=False``:
    a row is a line (see :func:`split_table`).

    Stats: ``rows`` (data rows, counting those behind existing markers), ``kept``,
    ``omitted`` and ``gaps`` (markers in the output).
    """
    parsed = split_table(text, header=header, quoted=quoted)
    if parsed is None:
        return None
    header_end, items = parsed
    rows = [it for it in items if not it.gap]
    total = len(rows) + sum(it.gap for it in items)
    if total <= max_rows:
        return None
    keep_ids: set[int] = set()
    for k, it in enumerate(rows):
        if k < head_rows or k >= len(rows) - tail_rows or keep(it.start, it.end, text[it.start:it.end]):
            keep_ids.add(id(it))
    if len(keep_ids) == len(rows):
        return None  # nothing new to omit (e.g. already folded)
    out = [text[:header_end]] if header_end else []
    pending = 0
    gaps = 0
    for it in items:
        if it.gap or id(it) not in keep_ids:
            pending += it.gap or 1
            continue
        if pending:
            out.append(f"[DATA_ROWS: {pending}]")
            gaps += 1
            pending = 0
        out.append(text[it.start:it.end])
    if pending:
        out.append(f"[DATA_ROWS: {pending}]")
        gaps += 1
    kept = len(keep_ids)
    return "\n".join(out), {"rows": total, "kept": kept, "omitted": total - kept, "gaps": gaps}
