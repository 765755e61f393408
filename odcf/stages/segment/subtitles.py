"""Subtitles in the segmenter: a cue of an SRT or WebVTT file is one piece.

A cue is its number (or WebVTT's identifier) on a line of its own, its time line
("00:00:13,600 --> 00:00:18,000", WebVTT's "00:13.600 --> 00:18.000 align:start"), then its text lines,
up to a blank line. Cut into sentences, the number and time line went with the first sentence of the
cue and a later one went alone ("You now need two padlocks, not one." without "The lockout procedure
has changed since March." nor its time): the segmenter makes each cue a piece of its own, its text as
it is. Found by its shape, in a file named ``….srt`` or ``….vtt`` or anywhere else.
"""
from __future__ import annotations

import re

_STAMP = r"(?:\d{1,2}:)?\d{2}:\d{2}[,.]\d{3}"
#: A cue's time line: two time stamps and "-->" (WebVTT's settings may follow).
CUE_TIME_RE = re.compile(r"^[ \t]*" + _STAMP + r"[ \t]+-->[ \t]+" + _STAMP + r"(?:[ \t]+\S.*)?[ \t]*$")
#: A cue's identifier: SRT's number, or a WebVTT identifier in one word ("intro-2"); not a line of prose.
_CUE_ID_RE = re.compile(r"[ \t]*(?:\d{1,6}|[^\s>]{1,40}(?<!-)(?<!>))[ \t]*")
#: The most lines a cue has (its number and time line included); a longer run is no cue.
MAX_CUE_LINES = 12


def cue_end(lines: list[tuple[int, int, str]], i: int) -> int:
    """The end (exclusive) of the cue that opens at line *i* (a line with no blank line above it): its
    identifier line (:data:`_CUE_ID_RE`), a number in SRT, and its time line (:data:`CUE_TIME_RE`), or the time line alone,
    then its text up to a blank line; *i* when no cue opens there.

    >>> from odcf.textutil import iter_lines_with_offsets
    >>> text = "4\\n00:00:13,600 --> 00:00:18,000\\nThe lockout procedure has changed.\\nYou now need two.\\n\\n5"
    >>> cue_end(list(iter_lines_with_offsets(text)), 0)
    4
    """
    n = len(lines)
    if i > 0 and lines[i - 1][2].strip():
        return i
    k = i if CUE_TIME_RE.match(lines[i][2]) else i + 1
    if k >= n or not CUE_TIME_RE.match(lines[k][2]) or (k > i and not _CUE_ID_RE.fullmatch(lines[i][2])):
        return i
    end = k + 1
    while end < n and lines[end][2].strip():
        end += 1
    return end if end - i <= MAX_CUE_LINES else i
