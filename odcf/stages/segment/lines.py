"""What the segmenter's parts share: the line patterns that open a structure, and the piece a
source is cut into."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

FENCE_RE = re.compile(r"^\s*(```|~~~)")
HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+\S")
#: A list item's mark: a bullet, "1." "a)" "(iv)" and a space; or a Chinese enumerator, which needs
#: no space: "（一）" "(三)" "（2）" "1、" "①". ("一、" opens a section heading in Chinese, not an item.)
LIST_RE = re.compile(r"^\s*(?:(?:[-*+\u2022\u00b7]|\d{1,3}[.)]|[a-zA-Z][.)]|\(\w{1,3}\))\s+\S"
                     r"|(?:[（(][一二三四五六七八九十\d]{1,3}[）)]|[\u2460-\u2473])\s*\S|\d{1,3}、\s*[^\s\d])")
#: A Chinese enumerator opening a list item: "（一）" "(三)" "（2）" "①" "1、" (not an English "(1) ").
ZH_ITEM_RE = re.compile(r"^\s*(?:（[一二三四五六七八九十\d]{1,3}）|\([一二三四五六七八九十]{1,3}\)|[\u2460-\u2473]|\d{1,3}、)")
TABLE_PIPE_RE = re.compile(r"^\s*\|.*\|\s*$")
#: A progress line of a test run: pytest's "tests/test_fx.py ..s..F.. [ 17%]", a line of outcomes
#: alone, or a verbose "tests/test_fx.py::test_rate PASSED [ 17%]".
PROGRESS_RE = re.compile(r"^(?:\S+\.py(?:::\S+)?\s+)?(?:[.sSxXfFEp]+|PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)"
                         r"\s+\[\s*\d{1,3}%\]\s*$")
#: A line all in bold ("**Internal note — Maria Lund (Tier 3), 14 Jul 2025 10:05**").
BOLD_LINE_RE = re.compile(r"^\s*(\*\*|__)(?=\S)[^*_\n]{1,200}(?<=\S)\1[:.]?\s*$")


@dataclass(frozen=True)
class Piece:
    start: int
    end: int
    kind: str
    paragraph: int
    meta: dict[str, Any] | None = None


def rstrip(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def line_at(text: str, pos: int) -> str:
    """The line of *text* that holds *pos*."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start:end if end >= 0 else len(text)]
