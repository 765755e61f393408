"""Noise removal: editor marks, invisible characters, decorative and garbage lines.

Each rule is counted separately in the report:

- ``zero_width``: U+200B, U+2060, U+FEFF, soft hyphen U+00AD; ZWJ/ZWNJ only next to ASCII
  (between emoji or in Indic/Persian script they carry meaning and stay);
- ``html_comments``: ``<!-- ... -->`` (a comment alone on its line takes the line with it), whatever words,
  terms or markers it holds (``<!-- internal draft, do not circulate -->``): only an anchor keeps it;
- ``draft_marks``: ``[draft]`` in any case;
- ``track_changes``: CriticMarkup ``{++ins++}`` → ins, ``{--del--}`` → nothing, ``{~~old~>new~~}`` → new,
  ``{==hl==}`` → hl, ``{>>comment<<}`` → nothing;
- ``todo_lines``: lines that start with ``TODO:`` or ``FIXME:`` (after a bullet or comment marker);
- ``decorative_lines``: a line of only ``= - * _ ~ # + .`` (3 or more) right after another one
  (blank lines between them ignored): the first is kept;
- ``blank_lines``: runs of blank lines become one blank line;
- ``trailing_spaces``: spaces and tabs at line ends;
- ``ocr_lines`` (``ocr=True``; the rules stage uses it for documents, not tool output): lines that
  look like OCR garbage: 6+ visible characters, no vowel, no non-ASCII letter, mark or symbol
  (emoji and flags are content), under 30% digits,
  at least half punctuation with two different marks, and not shaped like code (``}``/``)`` first,
  ``{``/``;``/``,`` last); a line number opening the line (``237:``) is not counted.
- ``page_numbers`` (``pages=True``; the rules stage uses it for documents, as ``ocr``): the page
  numbers of text extracted from a PDF, on a line of their own: "Page 4 of 14", "Seite 4 von 14",
  "Página 4 de 14" anywhere; "Page 4", "- 4 -", "4 / 14" alone in their paragraph (blank lines or a
  form feed around); a bare number alone in its paragraph only beside a running line (below) or a
  form feed;
- ``running_lines`` (``pages=True``): a running header or footer: a line of 2 to 15 words, alone in
  its paragraph, repeated verbatim three times or more with other text between, that ends no sentence
  (no ``.``, ``!``, ``?``, ``:``, ``;``, ``,``), is no markdown heading, list item, quote, table row or
  ``key: value`` field and holds no code marks (``{}=<>`|``), and stands in a paged text (page numbers or
  form feeds), or holds a number and stands twice or more beside a page's bare number ("Journal of Applied Battery Research 14
  (2023) 211–224" over a "4" alone): its first occurrence is kept, the others go. A line that recurs in a
  text without pages ("Build 42 passed" in a CI summary) is the text's own and stays.

Fenced code blocks (``` or ~~~) and the lines of a unified diff's hunks (after ``@@ -a,b +c,d @@``) are
left as they are, but for invisible characters. Nothing that holds a protected
anchor, term or marker is ever removed (an HTML comment, which no reader sees, only for an anchor): the removal is skipped and counted as ``kept_protected`` (but
for a page's number, which only a term or marker keeps, and a later copy of a running line, whose first
copy keeps what it holds).

>>> text, rep = remove_noise("Intro [DRAFT]\\nTODO: fix\\n\\n\\n\\nBody.  ")
>>> text
'Intro\\n\\nBody.'
>>> rep["todo_lines"], rep["blank_lines"], rep["draft_marks"]
(1, 2, 1)
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from itertools import pairwise
from typing import Any

from odcf.rules.guard import ProtectionGuard

_ZERO_WIDTH = re.compile(r"[\u200b\u2060\ufeff\u00ad]")
# ZWJ/ZWNJ only where both neighbours are ASCII (judged after the others are gone)
_JOINERS = re.compile(r"(?<![^\x00-\x7f])[\u200c\u200d](?![^\x00-\x7f])")
#: What this module removes as invisible, in one pattern (odcf analyze counts with it).
INVISIBLE = re.compile(f"(?:{_ZERO_WIDTH.pattern}|{_JOINERS.pattern})+")
# A comment alone on its line takes the line with it; any other comment goes alone.
_COMMENT = re.compile(r"^[ \t]*<!--(?:(?!-->).)*-->[ \t]*(?:\n|$)|<!--.*?-->", re.DOTALL | re.MULTILINE)
_DRAFT = re.compile(r"[ \t]?\[draft\][ \t]?", re.IGNORECASE)
_CRITIC = re.compile(
    r"\{\+\+(?P<ins>.*?)\+\+\}|\{--(?P<del>.*?)--\}|\{~~(?P<old>.*?)~>(?P<new>.*?)~~\}"
    r"|\{==(?P<hl>.*?)==\}|\{>>(?P<com>.*?)<<\}",
    re.DOTALL,
)
_TODO = re.compile(r"^\s*(?:(?://|#+|--|;|\*|-|>|<!--)\s*)?(?:TODO|FIXME)\b\s*(?:\([^)]*\))?\s*:")
#: A whole TODO/FIXME line, as this module removes it (odcf analyze counts with it).
TODO_LINE = re.compile(_TODO.pattern + r".*$", re.MULTILINE)
_DECOR = re.compile(r"^[ \t]*(?:[=\-*_~#+.][ \t]*){3,}$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_VOWELS = set("aeiouyAEIOUY")

#: A page's number with the count of pages, a footer wherever it stands on a line of its own.
_PAGE_OF_RE = re.compile(r"(?i:page|seite|p[aá]gina)[ \t]+(\d{1,4})[ \t]*(?i:of|von|de|di|sur|/)[ \t]*(\d{1,4})")
#: A page's number in a shorter form, a footer only alone in its paragraph: "Page 4", "- 4 -", "4 / 14".
_PAGE_SHORT_RE = re.compile(r"(?i:page|seite|p[aá]gina)[ \t]+(\d{1,4})|[-–—][ \t]*(\d{1,4})[ \t]*[-–—]"
                            r"|(\d{1,4})[ \t]+/[ \t]+(\d{1,4})")
_BARE_NUMBER_RE = re.compile(r"\d{1,4}")
_DIGITS_RE = re.compile(r"\d+")
#: What a running header or footer does not look like: a markdown heading, a list item, a quote, a table
#: row, a field or label ("User: …", "kind: Service"), code.
_NOT_RUNNING_RE = re.compile(r"^(?:[#>*+\-\u2022]|\d{1,3}[.)][ \t]|\(?[A-Za-z0-9]{1,3}\)[ \t]|[^\s:]+:(?:[ \t]|$))|[{}=<>`|]")
_SENTENCE_END = (".", "!", "?", ":", ";", ",", "。", "！", "？", "：", "；", "，")


#: A unified diff's hunk header, and the first characters of the lines of a hunk: inside one, a
#: context line of a single space is an empty line of the file, and "- TODO: x" a removed line;
#: no line rule applies there.
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")
_HUNK_LINE = (" ", "+", "-", "\\")


#: A line number that opens a line of a numbered listing ("237:", "12|", "  40 ").
_LINE_NUMBER = re.compile(r"^\s*\d+(?:[:|]|\s{2,})")


def _is_script(c: str) -> bool:
    """A letter, digit, mark or symbol of some script, emoji and flags included ("😀", "🇩🇪", "✓",
    "©"): what OCR garbage, a soup of ASCII punctuation, is not made of."""
    return c.isalnum() or unicodedata.category(c) in ("Mn", "Mc", "Me", "So", "Sk", "Cf")


def _is_garbage(line: str) -> bool:
    s = _LINE_NUMBER.sub("", line, count=1).strip()  # "237:    ----------" is a listing's rule line
    visible = [c for c in s if not c.isspace()]
    if len(visible) < 6 or s.startswith(("|", "}", "]", ")")) or s.endswith(("{", ";", ",", "[", "(")):
        return False
    if _DECOR.match(s) or any(c in _VOWELS or (ord(c) > 127 and _is_script(c)) for c in visible):
        return False
    if sum(c.isdigit() for c in visible) >= 0.3 * len(visible):
        return False
    punct = [c for c in visible if not c.isalnum()]
    return len(punct) >= 0.5 * len(visible) and len(set(punct)) >= 2


def _key(line: str) -> str:
    return line.strip(" \t\f")


def _page_number(line: str, alone: bool) -> bool:
    """Whether *line* is a page's number (:data:`_PAGE_OF_RE` anywhere, :data:`_PAGE_SHORT_RE` *alone*
    in its paragraph); a page's number is never above the count of pages ("Page 15 of 14" is no footer)."""
    s = _key(line)
    m = _PAGE_OF_RE.fullmatch(s) or (_PAGE_SHORT_RE.fullmatch(s) if alone else None)
    if m is None:
        return False
    numbers = [int(g) for g in m.groups() if g is not None]
    return len(numbers) < 2 or 0 < numbers[0] <= numbers[1]


def _running_shape(line: str) -> bool:
    """Whether *line* can be a running header or footer: 2 to 15 words at the margin, no end of a sentence,
    no mark of structure or code (:data:`_NOT_RUNNING_RE`), a letter in it."""
    s = _key(line)
    return (line.lstrip("\f")[:1] not in (" ", "\t") and 2 <= len(s.split()) <= 15
            and not s.endswith(_SENTENCE_END) and _NOT_RUNNING_RE.search(s) is None
            and any(c.isalpha() for c in s))


class _Cleaner:
    def __init__(self, guard: ProtectionGuard, ocr: bool, pages: bool = False) -> None:
        self.guard = guard
        self.ocr = ocr
        self.pages = pages
        self.counts: Counter[str] = Counter()
        self.examples: list[str] = []

    def _example(self, text: str) -> None:
        text = text.strip()
        if text and len(self.examples) < 3 and text[:80] not in self.examples:
            self.examples.append(text[:80])

    def _sub(self, rx: re.Pattern[str], name: str, text: str, repl: Any = "", *, anchors_only: bool = False) -> str:
        """*text* without the matches of *rx*, but those that hold protected text (only an anchor's, with
        *anchors_only*)."""
        out: list[str] = []
        pos = 0
        keeps = self.guard.holds_anchor if anchors_only else self.guard.holds
        while True:
            m = rx.search(text, pos)
            if m is None:
                break
            if keeps(m.group(0)):
                # Keep the opening character and look again inside: a protected match must
                # not shelter a smaller removable one (that would make a second pass differ).
                self.counts["kept_protected"] += 1
                out.append(text[pos:m.start() + 1])
                pos = m.start() + 1
                continue
            self.counts[name] += 1
            self._example(m.group(0))
            out.append(text[pos:m.start()])
            out.append(repl(m) if callable(repl) else repl)
            pos = max(m.end(), pos + 1) if m.end() == m.start() else m.end()
        out.append(text[pos:])
        return "".join(out)

    def invisible(self, text: str) -> str:
        for rx in (_ZERO_WIDTH, _JOINERS):
            text, n = rx.subn("", text)
            self.counts["zero_width"] += n
        if not self.counts["zero_width"]:
            del self.counts["zero_width"]
        return text

    def _drop(self, rule: str, line: str, guarded: str | None = None) -> bool:
        """Count *line* as removed by *rule*, unless *guarded* (the line by default) holds protected text."""
        if self.guard.holds(line if guarded is None else guarded):
            self.counts["kept_protected"] += 1
            return False
        self.counts[rule] += 1
        self._example(line)
        return True

    def page_lines(self, runs: list[tuple[bool, list[str]]]) -> list[tuple[bool, list[str]]]:
        """*runs* without the page numbers and running lines of a paged text (module doc), code left as it is."""
        flat: list[str | None] = []  # every line; None for a line of code, which is never blank
        for is_code, lines in runs:
            flat.extend([None] * len(lines) if is_code else lines)
        n = len(flat)
        blank = [line is not None and not _key(line) for line in flat]
        prev = [-1] * n  # the nearest line before that is not blank, -1 for none
        nxt = [n] * n
        for k in range(1, n):
            prev[k] = k - 1 if not blank[k - 1] else prev[k - 1]
        for k in range(n - 2, -1, -1):
            nxt[k] = k + 1 if not blank[k + 1] else nxt[k + 1]

        def alone(k: int) -> bool:
            return (k == 0 or blank[k - 1]) and (k == n - 1 or blank[k + 1])

        def beside_break(k: int) -> bool:
            return any("\f" in (flat[j] or "") for j in range(max(prev[k], 0), min(nxt[k], n - 1) + 1))

        def beside_number(k: int) -> bool:
            return any(0 <= j < n and flat[j] is not None and alone(j) and _BARE_NUMBER_RE.fullmatch(_key(flat[j] or ""))
                       is not None for j in (prev[k], nxt[k]))

        drop: set[int] = set()
        pages = 0
        for k, line in enumerate(flat):
            # a page's number is no figure of the text (an anchor of numbers does not keep it); a term does
            if line is not None and not blank[k] and _page_number(line, alone(k) or beside_break(k)):
                pages += 1  # a page's number, even one a protected term keeps, makes the text paged
                if self._drop("page_numbers", line, _DIGITS_RE.sub("", line)):
                    drop.add(k)
        paged = pages > 0 or any("\f" in (line or "") for line in flat)
        seen: dict[str, list[int]] = {}
        for k, line in enumerate(flat):
            if line is not None and k not in drop and alone(k) and _running_shape(line):
                seen.setdefault(_key(line), []).append(k)
        running: set[int] = set()
        for key, where in seen.items():
            # in a text with no page numbers or form feeds, only a line beside a page's bare number: a
            # status line that recurs with a number in it ("Build 42 passed") is the text's, not a page's
            if len(where) < 3 or not (paged or any(c.isdigit() for c in key)
                                      and sum(beside_number(k) for k in where) >= 2):
                continue
            if any(nxt[a] == b or all(j in drop for j in range(nxt[a], b) if not blank[j])
                   for a, b in pairwise(where)):
                continue  # nothing else between two of them: a repeated line, not a page's
            running.update(where)
            # whatever it holds, its first copy keeps it
            drop.update(k for k in where[1:] if self._drop("running_lines", flat[k] or "", ""))
            if key not in self.examples:
                # what repeats says more than its page numbers: it leads the examples
                self.examples = [key[:80], *self.examples][:3]
        for k, line in enumerate(flat):
            if (line is not None and k not in drop and alone(k) and _BARE_NUMBER_RE.fullmatch(_key(line))
                    and (prev[k] in running or nxt[k] in running or beside_break(k))
                    and self._drop("page_numbers", line, "")):
                drop.add(k)
        if not drop:
            return runs
        out: list[tuple[bool, list[str]]] = []
        k = 0
        for is_code, lines in runs:
            out.append((is_code, lines if is_code else [line for j, line in enumerate(lines, k) if j not in drop]))
            k += len(lines)
        return out

    def inline(self, text: str) -> str:
        # A comment is never rendered: the words in it are no text of the document, whatever they say
        # ("do not circulate"); only a number or id in it (an anchor) keeps it, as on a TODO line.
        text = self._sub(_COMMENT, "html_comments", text, anchors_only=True)
        text = self._sub(_DRAFT, "draft_marks", text, _draft_repl)
        return self._sub(_CRITIC, "track_changes", text, _critic_repl)

    def lines(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        last_decor = False
        in_hunk = False
        for line in lines:
            if _HUNK.match(line):
                in_hunk = True
            elif in_hunk and line[:1] in _HUNK_LINE:
                out.append(line)  # a unified diff's line: its first character is its meaning
                last_decor = False
                continue
            else:
                in_hunk = False
            trimmed = line.rstrip(" \t")
            if trimmed != line:
                self.counts["trailing_spaces"] += 1
                line = trimmed
            if not line.strip():
                if out and not out[-1].strip():
                    self.counts["blank_lines"] += 1
                    continue
                out.append(line)
                continue
            rule = None
            if _TODO.match(line):
                rule = "todo_lines"
            elif _DECOR.match(line):
                rule = "decorative_lines" if last_decor else None
            elif self.ocr and _is_garbage(line):
                rule = "ocr_lines"
            if rule is not None and self.guard.holds(line):
                self.counts["kept_protected"] += 1
                rule = None
            if rule is not None:
                self.counts[rule] += 1
                self._example(line)
                continue  # a removed line does not separate its neighbours
            last_decor = bool(_DECOR.match(line))
            out.append(line)
        return out


def _draft_repl(m: re.Match[str]) -> str:
    s = m.group(0)
    # Keep one space when the mark sat between two words.
    return " " if s.startswith((" ", "\t")) and s.endswith((" ", "\t")) else ""


def _critic_repl(m: re.Match[str]) -> str:
    for group in ("ins", "new", "hl"):
        if m.group(group) is not None:
            return m.group(group)
    return ""


def _split_fences(text: str) -> list[tuple[bool, list[str]]]:
    """Split into runs of lines: (is_code, lines). An unclosed fence runs to the end."""
    runs: list[tuple[bool, list[str]]] = []
    current: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence is None and m:
            if current:
                runs.append((False, current))
            current = [line]
            fence = m.group(1)
        elif fence is not None and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                and not line.strip().strip(fence[0]):
            current.append(line)
            runs.append((True, current))
            current = []
            fence = None
        else:
            current.append(line)
    if current:
        runs.append((fence is not None, current))
    return runs


def _clean_once(text: str, cleaner: _Cleaner) -> str:
    out: list[str] = []
    # Invisible characters go first, everywhere: one hidden before ``` would hide the fence.
    runs = _split_fences(cleaner.invisible(text))
    if cleaner.pages:
        runs = cleaner.page_lines(runs)  # a running line is judged over the whole text, not one run
    for is_code, lines in runs:
        if is_code:
            out.extend(lines)
            continue
        block = cleaner.inline("\n".join(lines))
        out.extend(cleaner.lines(block.split("\n")))
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return "\n".join(out)


def remove_noise(text: str, guard: ProtectionGuard | None = None, *, ocr: bool = True,
                 pages: bool = True) -> tuple[str, dict[str, Any]]:
    """Remove editor marks and noise lines. Returns ``(text, report)``.

    The report has one count per rule that fired, ``removed_lines``, ``chars_removed`` and the
    first three ``examples`` of removed text. Leading and trailing blank lines are dropped.
    """
    cleaner = _Cleaner(guard or ProtectionGuard(), ocr, pages)
    result = text
    # A removal can uncover more noise (a comment hiding a fence, a mark hiding a TODO): repeat
    # until nothing changes, so that a second call never finds anything (bounded: text only shrinks).
    for _ in range(8):
        cleaner.counts.pop("kept_protected", None)  # counted again by the last pass
        new = _clean_once(result, cleaner)
        if new == result:
            break
        result = new
    report: dict[str, Any] = dict(sorted(cleaner.counts.items()))
    removed = len(text.splitlines()) - len(result.splitlines())
    if removed:
        report["removed_lines"] = removed
    report["chars_removed"] = len(text) - len(result)
    if cleaner.examples:
        report["examples"] = cleaner.examples
    return result, report
