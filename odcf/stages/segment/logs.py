"""Application logs in the segmenter: where a log entry opens and which lines go on under it.

A log's entry is its line (a time stamp and/or a level first: logback's and log4j's
"2025-03-11 10:00:33,561 ERROR [scheduler-1] c.a.Job: …", Python's "ERROR:root:…", syslog's
"Mar 11 10:00:33 host sshd[42]: …") and the lines under it that go on from it without a stamp of
their own: a stack trace ("org.x.FooException: …", "\\tat …", "Caused by: …", "\\t... 14 more",
"Traceback (most recent call last):", "  File …"), any indented line, or, between two entries, any
line at all (a message that runs on at the margin: "slow query took 4210 ms:", then its SQL). The
segmenter makes each entry a piece (a long trace cut in whole lines), so that the one ERROR line that
answers a query is never held in a 350-token block of INFO lines, nor a trace cut at the ";" of its
message.
"""
from __future__ import annotations

import re

from odcf.stages.segment.mail import LOG_LEVELS, STAMPED_SPEAKER_RE

_DATE = r"\d{4}-\d{2}-\d{2}"
_CLOCK = r"\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
_LEVEL = r"(?:" + LOG_LEVELS + r")\b"
#: A line that opens a log entry: an ISO date and time with seconds ("2025-03-11 10:00:33,561 …") or a
#: "T" ("[2025-03-11T10:00Z] …"), or a date (and a time) and a level ("2024-05-15 INFO …",
#: "2025-03-11 10:00 WARN …"), not notes' "2025-03-11 09:40 Inspection of pier 3 …"; a time with seconds then
#: a level, maybe after a thread in brackets ("10:00:33.561 [main] INFO …"); syslog's
#: "Mar 11 10:00:33 "; glog's "E0311 10:00:33.561 "; a level in brackets before a date
#: ("[ERROR] 2025-03-11 …"); Python's default "ERROR:root:…". Not a chat line with a time stamp
#: ("[2024-05-03 14:02] priya: …", :data:`STAMPED_SPEAKER_RE`).
LOG_LINE_RE = re.compile(
    r"^\[?" + _DATE + r"(?:T\d{2}:\d{2}| \d{2}:\d{2}(?::\d{2}|[ \t]+(?:\[[^\]\n]{1,60}\][ \t]+)?\[?" + _LEVEL
    + r")|[ \t]+\[?" + _LEVEL + r")"
    + r"|^\[?" + _CLOCK + r"\]?[ \t]+(?:\[[^\]\n]{1,60}\][ \t]+)?\[?" + _LEVEL
    + r"|^(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:\d{2}:\d{2} "
    + r"|^[IWEF]\d{4} " + _CLOCK + r" "
    + r"|^\[" + _LEVEL + r"\][ \t]+\[?" + _DATE
    + r"|^(?:" + LOG_LEVELS + r"):[\w.]+:")
#: A timeline's event: an ISO date and a time with seconds, then words with no log level or thread in brackets
#: before them ("2026-03-09 16:40:12 srv-fin-02 isolated from the network …"; not "2026-03-08 02:14:10 INFO …").
_EVENT_RE = re.compile(r"\[?" + _DATE + r"[ T]" + _CLOCK + r"\]?[ \t]+(?!\[|(?:" + LOG_LEVELS + r")\b)[A-Za-z0-9]")
#: A line that goes on from the log entry above it: an indented line (a frame "\tat …", "\t... 14 more",
#: a Python frame "  File …", a message's next lines), an exception's class opening it
#: ("org.springframework.dao.DataAccessResourceFailureException: …", "ValueError: …"), a cause
#: ("Caused by: …", "Suppressed: …"), a Python traceback's first line, a Go panic's lines.
_GOES_ON_RE = re.compile(
    r"^[ \t]+\S"
    r"|^[A-Za-z_$][\w.$]*(?:Error|Exception|Throwable|Warning|Exit|Interrupt|Fault)\b"
    r"|^(?:Caused by|Suppressed|Wrapped by): "
    r"|^Traceback \(most recent call last\):"
    r"|^Exception in thread \""
    r"|^(?:panic: |goroutine \d+ \[)")
#: The fewest entries a run of log lines has (one line stamped alike in prose is no log).
MIN_ENTRIES = 2


def opens_entry(line: str) -> bool:
    """Whether *line* opens a log entry (:data:`LOG_LINE_RE`), not a chat message."""
    return LOG_LINE_RE.match(line) is not None and STAMPED_SPEAKER_RE.match(line) is None


def opens_logged_entry(line: str) -> bool:
    """Whether *line* opens a log entry (:func:`opens_entry`) that is no timeline's event (:data:`_EVENT_RE`)."""
    return opens_entry(line) and _EVENT_RE.match(line) is None


def log_entries(lines: list[tuple[int, int, str]], i: int) -> list[tuple[int, int]]:
    """The entries of the log that opens at line *i*, ``(first line, end)`` each: the blank lines
    between two entries are the log's, a line without a stamp between two entries goes on from the one
    above, and the log ends at the first line after its last entry that neither opens an entry nor
    goes on from one (or at a blank line); [] when line *i* opens no entry or the run holds fewer than
    :data:`MIN_ENTRIES`.

    >>> text = ("2025-03-11 10:00:33,561 ERROR [s-1] c.a.Job: batch 88412 failed; not retried\\n"
    ...         "java.lang.IllegalStateException: pool exhausted; giving up\\n\\tat c.a.Job.run(Job.java:118)\\n"
    ...         "\\t... 14 more\\n2025-03-11 10:00:34,002 INFO  [s-1] c.a.Job: next\\nThat is all.")
    >>> from odcf.textutil import iter_lines_with_offsets
    >>> log_entries(list(iter_lines_with_offsets(text)), 0)
    [(0, 4), (4, 5)]
    """
    n = len(lines)
    out: list[tuple[int, int]] = []
    j = i
    while j < n and opens_entry(lines[j][2]):
        k = j + 1
        while k < n and lines[k][2].strip() and not opens_entry(lines[k][2]):
            if _GOES_ON_RE.match(lines[k][2]):
                k += 1
                continue
            # a message that runs on at the margin ("slow query took 4210 ms:" and its SQL on two lines of
            # their own): lines without a stamp between two entries (no blank line) are the one above's
            m = k
            while m < n and lines[m][2].strip() and not opens_entry(lines[m][2]):
                m += 1
            if m == n or not lines[m][2].strip():
                break  # after the last entry, up to a blank line: what follows the log, not of it
            k = m
        out.append((j, k))
        j = k
        while j < n and not lines[j][2].strip():
            j += 1  # blank lines between two entries: the log goes on (a log left out whole is marked too)
    return out if len(out) >= MIN_ENTRIES else []
