"""JSON in the segmenter: the members of a container, found without parsing it again, and the lines
of JSON Lines."""
from __future__ import annotations

import json
import re

from odcf.rules.jsonmin import json_record
from odcf.stages.segment.lines import rstrip

#: The key of an object's id member (searched): "id", "order_id", "user-id", "orderId", "ID"; not "paid".
ID_KEY_RE = re.compile(r"^(?:id|Id|ID)$|[_-](?:id|ID)$|[a-z0-9](?:Id|ID)$")
#: The key of a number that names an object without an id member (searched): "flight_number", "orderNumber",
#: "invoice_no"; not a phone's or a fax's. QA s34: a flight's prices went out without "flight_number", which
#: of four flights they were of unsaid.
NUMBER_KEY_RE = re.compile(r"^(?!(?i:phone|fax|mobile|cell|tel)).+(?:[_-](?:number|no)|(?<=[a-z])(?:Number|No))$")


#: The line odcf writes where records of JSON Lines are left out (odcf.render): delivered JSON Lines
#: read again (compressed twice) are still JSON Lines, the mark a line of its own among them.
ROWS_MARK_RE = re.compile(r"^\s*\[DATA_ROWS: \d+\]\s*$")


def json_lines_run(lines: list[tuple[int, int, str]], i: int, *, most: int | None = None) -> int:
    """End (exclusive) of the JSON Lines that start at line *i*: two lines or more, each one JSON
    object or array (:func:`json_record`), blank lines and odcf's marks of records left out
    (:data:`ROWS_MARK_RE`) between them allowed (not after the last); *i* when there are none.
    A line between two records that opens as one but is no JSON (a record cut off, "{"ts": "10:12",
    "msg": "trunc") is a line of the run, so that the records after it stay records; one after the
    last record is not. *most*: stop after that many records (enough to know a run starts).

    >>> lines = [(0, 0, '{"a": 1}'), (0, 0, ""), (0, 0, "[DATA_ROWS: 4]"), (0, 0, '{"a": 2}'), (0, 0, "done"),
    ...          (0, 0, '{"a": 3}'), (0, 0, '{"a": 4, "b": "cut'), (0, 0, '{"a": 5}'), (0, 0, '{"a": 6')]
    >>> json_lines_run(lines, 0), json_lines_run(lines, 3), json_lines_run(lines, 4), json_lines_run(lines, 5)
    (4, 3, 4, 8)
    """
    if not json_record(lines[i][2]):
        return i
    end, records = i + 1, 1
    broken = False  # the line before was a record cut off: the next one must be a record
    for k in range(i + 1, len(lines)):
        if most is not None and records >= most:
            break
        line = lines[k][2]
        if not line.strip() or ROWS_MARK_RE.match(line):
            continue
        if json_record(line):
            end, records, broken = k + 1, records + 1, False
        elif not broken and line.lstrip()[:1] in ("{", "["):
            broken = True
        else:
            break
    return end if records >= 2 else i


def member_key(text: str, ms: int, me: int) -> str | None:
    """The key of the JSON object member text[ms:me] (None when it opens with no string).

    >>> member_key('{"order_id": "#W1"}', 1, 18), member_key("[1]", 1, 2)
    ('order_id', None)
    """
    if text[ms] != '"':
        return None
    k = ms + 1
    while k < me and text[k] != '"':
        k += 2 if text[k] == "\\" else 1
    try:
        key = json.loads(text[ms:k + 1])
    except ValueError:
        return None
    return key if isinstance(key, str) else None


def value_container(text: str, ms: int, me: int) -> int | None:
    """Where the container that is the value of the JSON member text[ms:me] opens (the member
    itself for an array item, after ``"key":`` for an object member), or None for a scalar."""
    k = ms
    if text[k] == '"':  # an object member: skip its key
        k += 1
        while k < me and text[k] != '"':
            k += 2 if text[k] == "\\" else 1
        k += 1
        while k < me and text[k].isspace():
            k += 1
        if k >= me or text[k] != ":":
            return None
        k += 1
        while k < me and text[k].isspace():
            k += 1
    return k if k < me and text[k] in "[{" and text[me - 1] == {"[": "]", "{": "}"}[text[k]] else None


def top_level_members(text: str, start: int, end: int) -> list[tuple[int, int]] | None:
    """Character ranges of the top-level members of the JSON container text[start:end]."""
    depth = 0
    in_str = False
    esc = False
    members: list[tuple[int, int]] = []
    member_start: int | None = None
    for k in range(start, end):
        ch = text[k]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
            if depth == 1 and member_start is None:
                member_start = k
            continue
        if ch in "[{":
            depth += 1
            if depth == 2 and member_start is None:
                member_start = k
            continue
        if ch in "]}":
            depth -= 1
            if depth == 0:
                if member_start is not None:
                    members.append((member_start, rstrip(text, member_start, k)))
                return members
            continue
        if depth == 1:
            if ch == ",":
                if member_start is None:
                    return None
                members.append((member_start, rstrip(text, member_start, k)))
                member_start = None
            elif not ch.isspace() and member_start is None:
                member_start = k
    return None
