"""Noise removal: editor marks, invisible characters, decorative and garbage lines.

Each rule is counted separately in the report:

- ``zero_width``: U+200B, U+2060, U+FEFF, soft hyphen U+00AD; ZWJ/ZWNJ only next to ASCII
  (between emoji or in Indic/Persian script they carry meaning and stay);
- ``html_comments``: ``<!-- ... -->`` (a comment alone on its line takes the line with it);
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

Fenced code blocks (``` or ~~~) and the lines of a unified diff's hunks (after ``@@ -a,b +c,d @@``) are
left as they are, but for invisible characters. Nothing that holds a protected
anchor, term or marker is ever removed: the removal is skipped and counted as ``kept_protected``.

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


class _Cleaner:
    def __init__(self, guard: ProtectionGuard, ocr: bool) -> None:
        self.guard = guard
        self.ocr = ocr
        self.counts: Counter[str] = Counter()
        self.examples: list[str] = []

    def _example(self, text: str) -> None:
        text = text.strip()
        if text and len(self.examples) < 3:
            self.examples.append(text[:80])

    def _sub(self, rx: re.Pattern[str], name: str, text: str, repl: Any = "") -> str:
        out: list[str] = []
        pos = 0
        while True:
            m = rx.search(text, pos)
            if m is None:
                break
            if self.guard.holds(m.group(0)):
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

    def inline(self, text: str) -> str:
        text = self._sub(_COMMENT, "html_comments", text)
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
    for is_code, lines in _split_fences(cleaner.invisible(text)):
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


def remove_noise(text: str, guard: ProtectionGuard | None = None, *, ocr: bool = True) -> tuple[str, dict[str, Any]]:
    """Remove editor marks and noise lines. Returns ``(text, report)``.

    The report has one count per rule that fired, ``removed_lines``, ``chars_removed`` and the
    first three ``examples`` of removed text. Leading and trailing blank lines are dropped.
    """
    cleaner = _Cleaner(guard or ProtectionGuard(), ocr)
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
