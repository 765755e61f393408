"""Python tracebacks in the segmenter: a traceback's header line, its frames and its exception line(s),
so that a long one is cut in whole frames and its exception line, the line that says what went wrong,
can be delivered alone (QA s32 R1: a 219-token traceback was one segment, so that at 88 tokens nothing
was delivered, not even ``json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)``)."""
from __future__ import annotations

import re
from collections.abc import Sequence

#: A traceback's first line.
TRACEBACK_RE = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
#: The line between two tracebacks of a chain: it opens the next one, as "Caused by:" does in Java.
CHAIN_RE = re.compile(r"^\s*(?:During handling of the above exception, another exception occurred"
                      r"|The above exception was the direct cause of the following exception):\s*$")
#: A frame's first line ("  File \"/srv/app/worker.py\", line 214, in run").
FRAME_RE = re.compile(r"^\s+File \".*\", line \d+")


def traceback_units(lines: Sequence[tuple[int, int, str]]) -> list[tuple[int, int, str]] | None:
    """The units of a run of lines that holds a Python traceback: ``(first, end, role)`` over *lines*,
    in order and covering them all, *role* one of ``head`` (a chain's line before a traceback, the
    blank lines around it and the ``Traceback (most recent call last):`` line), ``frame`` (a ``File …``
    line with the lines indented under it: its source line, ``^^^^`` marks), ``exception`` (the lines
    after the last frame up to a blank line or the next traceback: ``app.errors.JobFailed: job … failed``
    and what its message runs on to) and ``other`` (any line before the first traceback, or after an
    exception's blank line and not opening the next: a shell prompt, a fence). A blank line goes with the
    unit before it. None when no line opens a traceback."""
    if not any(TRACEBACK_RE.match(line[2]) for line in lines):
        return None
    units: list[tuple[int, int, str]] = []
    n = len(lines)
    i = 0
    state = "other"  # other -> head -> frame -> exception -> other
    while i < n:
        text = lines[i][2]
        if CHAIN_RE.match(text) or TRACEBACK_RE.match(text):
            j = i
            while j < n and not TRACEBACK_RE.match(lines[j][2]) and (
                    CHAIN_RE.match(lines[j][2]) or not lines[j][2].strip()):
                j += 1  # the chain's line and the blank lines under it, up to the traceback it opens
            if j < n and TRACEBACK_RE.match(lines[j][2]):
                units.append((i, j + 1, "head"))
                i, state = j + 1, "head"
                continue
        if state in ("head", "frame") and FRAME_RE.match(text):
            j = i + 1
            while j < n and lines[j][2][:1] in (" ", "\t") and lines[j][2].strip() and not FRAME_RE.match(lines[j][2]):
                j += 1  # its source line, its ^^^^ marks
            units.append((i, j, "frame"))
            i, state = j, "frame"
        elif state == "frame" and text.strip():
            j = i + 1
            while j < n and lines[j][2].strip() and not (TRACEBACK_RE.match(lines[j][2]) or CHAIN_RE.match(lines[j][2])):
                j += 1
            units.append((i, j, "exception"))
            i, state = j, "exception"
        elif not text.strip() and units:
            units[-1] = (units[-1][0], i + 1, units[-1][2])  # a blank line goes with the unit before it
            i += 1
        else:
            if units and units[-1][2] == "other":
                units[-1] = (units[-1][0], i + 1, "other")
            else:
                units.append((i, i + 1, "other"))
            i += 1
            if state == "exception":
                state = "other"
    return units
