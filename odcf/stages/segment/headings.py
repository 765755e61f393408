"""Plain-text headings: the capitalised title lines of contracts, policies and statutes written
without markdown ("ARTICLE 10 — INDEMNITY", "PART II GENERAL CONDITIONS", "1. DEFINITIONS",
"SCHEDULE B", "第三章 违约责任").

A heading is a short line on its own: the text starts or a blank line comes before it; it is in
capitals (or a Chinese 第…编/章/节/条 number and a short title), ends without sentence punctuation,
and is neither a table row, a mail field, code, nor a statement shouted in capitals ("DO NOT EXCEED
4 G PER DAY", "WARNING: KEEP AWAY FROM CHILDREN"). Something that is not a heading of its level or
above must follow it (two capitalised lines of one level in a row are a title page or an address
block; a run of numbered capitalised lines is a list). Its level, like a markdown heading's:

====  ===================================================================================
1     PART, BOOK, DIVISION, TITLE with a number; 第…编
2     ARTICLE, CHAPTER, SCHEDULE, EXHIBIT, ANNEX, APPENDIX, ATTACHMENT, ADDENDUM, DOCUMENT,
      ENCLOSURE; 第…章
3     SECTION, CLAUSE, §, a number with a full stop ("1. DEFINITIONS"), a capitalised title
      without a number ("BASIC LEASE INFORMATION"); 第…节, 第…条; a whole number before a title
      in ordinary case over its first part ("2 Troubleshooting" over "2.1 Port in use")
4     a dotted number ("10.2 INDEMNITY PROCEDURE"), also before a title in ordinary case
      ("22.1 Authorisations", "2.1 The Facilities"; no verb)
====  ===================================================================================

A title in capitals may end in a note in brackets in any case ("DOCUMENT 13 — LETTER FROM INSURER
(2 April 2024)").

A numbered heading may go on in a capitalised title on the next line ("ARTICLE 10" / "INDEMNITY"):
one heading of two lines. The segmenter looks for these only in a source without markdown
headings, so that the two kinds of level never mix.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from odcf.stages.segment.lines import LIST_RE

if TYPE_CHECKING:
    from odcf.document import Segment

_KEYWORD_LEVEL = {
    "PART": 1, "BOOK": 1, "DIVISION": 1, "TITLE": 1,
    "ARTICLE": 2, "CHAPTER": 2, "SCHEDULE": 2, "EXHIBIT": 2, "ANNEX": 2, "APPENDIX": 2, "ATTACHMENT": 2,
    "ADDENDUM": 2, "DOCUMENT": 2, "ENCLOSURE": 2,
    "SECTION": 3, "CLAUSE": 3, "§": 3,
}
_ROMAN = r"[IVXLC]{1,6}"
#: A heading's number: a clause word with a number, letter or roman numeral ("ARTICLE 10",
#: "SCHEDULE B", "PART II", "§ 4"), or a number with a full stop ("1.", "4.2", "4.2.")
_NUMBERED_RE = re.compile(
    r"^(?P<word>PART|BOOK|DIVISION|TITLE|ARTICLE|CHAPTER|SCHEDULE|EXHIBIT|ANNEX|APPENDIX|ATTACHMENT|ADDENDUM|DOCUMENT"
    r"|ENCLOSURE"
    r"|SECTION|CLAUSE|§)\s*(?:\d{1,3}(?:\.\d{1,3})*[A-Z]?|" + _ROMAN + r"|[A-Z](?:-\d{1,2})?)\.?(?=\s|$)"
    r"|^(?P<dotted>\d{1,2}(?:\.\d{1,2})+)\.?(?=\s)"
    r"|^(?P<num>\d{1,2}|" + _ROMAN + r")\.(?=\s)")
#: A Chinese heading: 第三章 违约责任, 第5条 付款方式 (the title up to 20 characters, no punctuation of a sentence).
_ZH_RE = re.compile(r"^第[\d一二三四五六七八九十百千零〇]{1,6}(?P<unit>编|部分|章|节|条)(?:\s*[^\s。！？；，,.:：;!?]{1,20})?$")
_ZH_LEVEL = {"编": 1, "部分": 1, "章": 2, "节": 3, "条": 3}
#: What a capitalised heading may hold besides capital letters and digits.
_HEADING_MARKS = frozenset(" \t.,&/'’()-–—:§")
#: A line in capitals that says something rather than names a part.
_STATEMENT_RE = re.compile(r"\b(?:MUST|SHALL|SHOULD|WILL|WOULD|CANNOT|CAN'T|NEVER|DON'T|DOESN'T|DO NOT|DOES NOT"
                           r"|DID NOT|MAY NOT|NOT TO)\b")
_LETTERS_RE = re.compile(r"[^\W\d_]{3,}")
#: Sentence punctuation a heading does not end with.
_ENDS = (".", "!", "?", ";", ":", ",", "。", "！", "？", "；", "：", "，")
#: A date or note in brackets after a title in capitals, in any case: "LETTER FROM INSURER TO INSURED
#: (2 April 2024)", "DIARY NOTE (6 February 2024)".
_TRAILING_NOTE_RE = re.compile(r"\s+\([^()\n]{1,40}\)$")
#: A clause's dotted number and its title in ordinary case, on a line of its own: "22.1 Authorisations",
#: "22.2 Negative pledge", "2.1 The Facilities" (up to eight words after the number, no verb: "2.1 The
#: fees are due" says something).
#: Verbs that make a numbered line a statement, not a title ("2.1 The fees are due"; also the
#: budget's clause titles written as a paragraph's first sentence).
TITLE_VERBS = r"is|are|was|were|be|been|shall|must|will|may|can|could|should|would|has|have|had|does|do|did"
_TITLE_CASE_RE = re.compile(
    r"^\d{1,2}(?:\.\d{1,2})+\.?\s+(?![^\n]*\b(?:" + TITLE_VERBS + r")\b)[A-Z][\w'’()&/-]*(?:\s+[\w'’()&/,-]+){0,7}$")
_MAX_WORDS = 12
_MAX_WORDS_UNNUMBERED = 8
#: A whole number and a title in ordinary case on a line of its own, no verb and no closing stop: "2
#: Troubleshooting", "3. Support". A heading of level 3 only over its first part, "2.1 Port in use", after a
#: blank line, or after an intro paragraph (:func:`_whole_title`): alone, or over "4.5 Bathrooms", "4 Bedrooms" may
#: be a line of a listing. Heading
#: or not, it ends the section of a numbered title of another number above it, "1.7 Run" (the budget's
#: ``_antecedents``).
WHOLE_TITLE_RE = re.compile(r"(\d{1,2})\.?[ \t]+(?![^\n]*\b(?:" + TITLE_VERBS + r")\b)"
                             r"[A-Z][\w'’()&/-]*(?:[ \t]+[\w'’()&/,-]+){0,7}")


def heading_level(line: str) -> tuple[int, bool] | None:
    """(level, numbered) of *line* read as a plain-text heading, or None when it cannot be one.

    >>> [heading_level(s) for s in ("ARTICLE 10 — INDEMNITY", "PART II GENERAL CONDITIONS", "1. DEFINITIONS",
    ...  "10.2 INDEMNITY PROCEDURE", "BASIC LEASE INFORMATION", "第三章 违约责任")]
    [(2, True), (1, True), (3, True), (4, True), (3, False), (2, True)]
    >>> [heading_level(s) for s in ("DO NOT EXCEED 4 G PER DAY.", "DO NOT EXCEED 4 G PER DAY", "WARNING: HOT SURFACE",
    ...  "| A | B |", "Article 10 — Indemnity", "MAX_RETRIES = 3", "第五条 甲方应于合同签订后五日内付款。", "OK")]
    [None, None, None, None, None, None, None, None]
    """
    text = line.strip()
    if not text or text.endswith(_ENDS) or len(text) > 120:
        return None
    z = _ZH_RE.match(text)
    if z:
        return _ZH_LEVEL[z.group("unit")], True
    if _TITLE_CASE_RE.match(text):
        return 4, True
    caps = _TRAILING_NOTE_RE.sub("", text)
    if not all((ch.isalpha() and ch.isupper()) or ch.isdigit() or ch in _HEADING_MARKS for ch in caps):
        return None
    if not _LETTERS_RE.search(caps) or _STATEMENT_RE.search(caps):
        return None
    words = len(text.split())
    m = _NUMBERED_RE.match(text)
    if m is None:
        # "WARNING: HOT SURFACE" labels what it says; a title without a number has no colon
        return (3, False) if words <= _MAX_WORDS_UNNUMBERED and ":" not in text else None
    if words > _MAX_WORDS:
        return None
    if m.group("word"):
        return _KEYWORD_LEVEL[m.group("word")], True
    return (4 if m.group("dotted") else 3), True


def plain_heading(lines: list[tuple[int, int, str]], i: int) -> tuple[int, int] | None:
    """(end line index, exclusive; level) of a plain-text heading that opens at line *i*, or None."""
    if i > 0 and lines[i - 1][2].strip():
        return None  # inside a paragraph
    first = heading_level(lines[i][2])
    if first is None:
        return _whole_title(lines, i)
    if lone_numbered_title(lines, i):
        return None  # "4.5 Bathrooms" alone in a listing: a value, no part of a numbering
    n = len(lines)
    end = i + 1
    if end < n and lines[end][2].strip()[:1].islower():
        return None  # a sentence wrapped over lines ("4.2 Tonnes of packaging waste" / "were recycled …")
    if end < n and lines[end][2].strip():
        nxt = heading_level(lines[end][2])
        letters = [ch for ch in lines[end][2] if ch.isalpha()]
        if nxt is None and len(letters) >= 3 and sum(ch.isupper() for ch in letters) >= 0.6 * len(letters):
            return None  # a sentence in capitals wrapped over lines ("EXCEPT AS … AGREEMENT" / "THE SERVICE …,")
        if nxt is not None:
            # "ARTICLE 10" / "INDEMNITY": a number, then its title on the next line; any other
            # lines in capitals in a row are not a heading
            if not first[1] or nxt[1] or LIST_RE.match(lines[end][2]):
                return None
            end += 1
            if end < n and lines[end][2].strip() and heading_level(lines[end][2]) is not None:
                return None
    k = end
    while k < n and not lines[k][2].strip():
        k += 1
    if k == n:
        return None  # heads nothing
    after = heading_level(lines[k][2]) if k > end else None
    if after is not None and after[0] <= first[0]:
        return None  # heads nothing: the next line is a heading of its level or above (or a list's next item)
    return end, first[0]


#: A line opening with a dotted number: its first part ("4" of "4.5 Bathrooms", "22" of "22.1 Authorisations").
_DOTTED_RE = re.compile(r"\s*(\d{1,2})\.\d{1,2}(?:\.\d{1,2})*\.?\s")


def lone_numbered_title(lines: list[tuple[int, int, str]], i: int) -> bool:
    """Whether line *i* is a dotted number and a title in ordinary case ("4.5 Bathrooms"; in capitals, "10.2 NOTICE
    OF CLAIMS", it is a contract's heading whatever else is numbered) that no other line
    of *lines* numbers alike (:func:`_numbered_kin`): a listing's value, neither a heading nor a title that heads
    the paragraphs after it (the budget's numbered titles)."""
    text = lines[i][2].strip()
    return not text.isupper() and _TITLE_CASE_RE.match(text) is not None and not _numbered_kin(lines, i)


def _numbered_kin(lines: list[tuple[int, int, str]], i: int) -> bool:
    """Whether another line of *lines* opens with a dotted number of the same first part as line *i*'s ("22.2 …"
    beside "22.1 Authorisations", "4.1.3 …" under "4.1 …"), or a "2.1 …" has the whole number's title "2 …" above
    it: a title in ordinary case numbered "4.5" with no kin is a listing's "4.5 Bathrooms", not a part of a
    numbered text."""
    m = _DOTTED_RE.match(lines[i][2])
    if m is None:
        return True
    top = m.group(1)
    first = lines[i][2].lstrip().startswith(top + ".1 ")  # "2.1 Port in use" under "2 Troubleshooting"
    n = len(lines)
    # nearest lines first: kin is mostly close by, so a numbered text is not read once per title
    for k in (j for d in range(1, n) for j in (i - d, i + d) if 0 <= j < n):
        line = lines[k][2]
        d = _DOTTED_RE.match(line)
        if d is not None and d.group(1) == top:
            return True
        if first and k < i and (w := WHOLE_TITLE_RE.fullmatch(line.strip())) is not None and w.group(1) == top:
            return True
    return False


def _whole_title(lines: list[tuple[int, int, str]], i: int) -> tuple[int, int] | None:
    """(i + 1, 3) when line *i* is a whole number's title (:data:`WHOLE_TITLE_RE`, "2 Troubleshooting")
    and the next line that is not blank, after a blank one, is the title of its first part ("2.1 Port in
    use", a dotted number of level 4 that opens with "2.1"; not "4.5 Bathrooms" under "4 Bedrooms"), or is
    one paragraph of prose (a chapter's intro, ending a sentence) with that title after it and a blank line,
    else None."""
    m = WHOLE_TITLE_RE.fullmatch(lines[i][2].strip())
    if m is None or i + 1 >= len(lines) or lines[i + 1][2].strip():
        return None
    n = len(lines)
    k = i + 1
    while k < n and not lines[k][2].strip():
        k += 1
    if k < n and heading_level(lines[k][2]) is None and not LIST_RE.match(lines[k][2]):
        # an intro paragraph: its lines up to a blank one, the last ending a sentence
        end = k
        while end < n and lines[end][2].strip():
            end += 1
        if not lines[end - 1][2].rstrip().endswith((".", "!", "?", ":")) or end == n:
            return None
        k = end
        while k < n and not lines[k][2].strip():
            k += 1
    if k == n or heading_level(lines[k][2]) != (4, True):
        return None
    first_part = re.match(re.escape(m.group(1)) + r"\.1(?!\d)", lines[k][2].strip())
    return (i + 1, 3) if first_part else None


def segment_level(seg: Segment) -> int:
    """A heading segment's level: the one this module gave a plain-text heading (``heading_level`` in its meta),
    else its markdown ``#`` count (0 with neither)."""
    if "heading_level" in seg.meta:
        return int(seg.meta["heading_level"])
    return len(seg.original.lstrip()) - len(seg.original.lstrip().lstrip("#"))
