"""JSON in the segmenter: the members of a container, found without parsing it again."""
from __future__ import annotations

import json
import re

from odcf.stages.segment.lines import rstrip

#: The key of an object's id member (searched): "id", "order_id", "user-id", "orderId", "ID"; not "paid".
ID_KEY_RE = re.compile(r"^(?:id|Id|ID)$|[_-](?:id|ID)$|[a-z0-9](?:Id|ID)$")


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
