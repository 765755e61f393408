"""Reasoning drafts: truncated with an evidence index when they would crowd out the rest.

A reasoning trace (another agent's draft) reaches a role only when its contract does not forbid
the reasoning layer. When it is allowed but longer than ``share`` (25%) of the budget, it is cut
at a sentence boundary, and at the cut an evidence index says what the omitted part rested on::

    [reasoning truncated: sentences 9–31 of 31 omitted (812 tokens); evidence: source 3, rows 5–7; item t2]

The index lists the citations found in the omitted sentences — ``source 3``, ``item t2``,
``[4]``, a row/line/page range after them, and any known item id that is not a plain word
(``t2``, ``policy-eta``) — plus the item's own
``cites``; with no citation there it says so, and the omitted range alone is the pointer.

>>> from odcf.handoff.items import HandoffItem
>>> from odcf.tokens import get_counter
>>> it = HandoffItem(id="r1", layer="reasoning", text="Option B is cheaper. " * 8 + "See source 3, rows 5-7.")
>>> cut = truncate_reasoning(it, cap=40, counter=get_counter("o200k_base"))
>>> cut.text.splitlines()[-1]
'[reasoning truncated: sentences 3–9 of 9 omitted (41 tokens); evidence: source 3, rows 5–7]'
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from odcf.handoff.items import HandoffItem
from odcf.textutil import split_sentences
from odcf.tokens import TokenCounter

REASONING_SHARE = 0.25

_RANGE = r"(?:rows?|lines?|pages?|pp?\.|cells?|§)\s*\d+(?:\s*(?:[-–—]|to)\s*\d+)?"
_CITE_RE = re.compile(
    rf"\b(?P<what>source|item|doc(?:ument)?|ref(?:erence)?|tool output|evidence)\s*#?\s*(?P<id>[A-Za-z0-9_.:-]*\d[A-Za-z0-9_.:-]*|[A-Za-z]\w*\d\w*)"
    rf"(?:\s*[,(]?\s*(?P<range>{_RANGE}))?"
    rf"|\[(?P<num>\d{{1,3}})\]",
    re.IGNORECASE,
)
_RANGE_RE = re.compile(_RANGE, re.IGNORECASE)


@dataclass(frozen=True)
class ReasoningCut:
    """A reasoning item's delivered text and what was cut."""

    item: str
    text: str
    truncated: bool
    tokens_in: int
    tokens_out: int
    kept_sentences: int = 0
    total_sentences: int = 0
    evidence: tuple[str, ...] = ()
    index_line: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item, "truncated": self.truncated, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "kept_sentences": self.kept_sentences,
                "total_sentences": self.total_sentences, "evidence": list(self.evidence),
                "index": self.index_line}


def citations(text: str, known_ids: Iterable[str] = ()) -> list[str]:
    """Citations in *text*, in order of appearance, without repeats."""
    found: list[tuple[int, str]] = []
    for m in _CITE_RE.finditer(text):
        if m.group("num"):
            found.append((m.start(), f"source {m.group('num')}"))
            continue
        label = f"{m.group('what').lower()} {m.group('id').rstrip('.,:;')}"
        if m.group("range"):
            label += ", " + _norm_range(m.group("range"))
        found.append((m.start(), label))
    for kid in known_ids:
        # a plain word ("calc", "constraint") is only a citation when written "item calc"
        lead = r"\bitem\s+" if kid.isalpha() else r"(?<![\w-])"
        for m in re.finditer(lead + re.escape(kid) + r"(?![\w-])", text, re.IGNORECASE if kid.isalpha() else 0):
            found.append((m.start(), f"item {kid}"))
    covered: list[str] = []
    for _, label in sorted(found):
        if label not in covered and not any(c.startswith(label + ",") or c.endswith(" " + label.split(" ", 1)[1])
                                            for c in covered):
            covered.append(label)
    return covered


def merge_ranges(labels: list[str]) -> list[str]:
    """Adjacent or overlapping ranges of one source joined: "source 2, rows 5–6", "source 2, rows
    7–9" -> "source 2, rows 5–9" (a draft that cites 400 neighbouring row pairs has one range).

    >>> merge_ranges(["source 2, rows 5–6", "source 2, rows 7–9", "item t2", "source 2, row 12"])
    ['source 2, rows 5–9', 'item t2', 'source 2, row 12']
    """
    out: list[str] = []
    spans: dict[tuple[str, str], int] = {}  # (what, unit) -> index in out of its last range
    for label in labels:
        m = _LABEL_RANGE_RE.match(label)
        if m is None:
            out.append(label)
            continue
        key = (m.group("what"), m.group("unit").rstrip("s"))
        lo, hi = int(m.group("lo")), int(m.group("hi") or m.group("lo"))
        k = spans.get(key)
        if k is not None:
            prev = _LABEL_RANGE_RE.match(out[k])
            assert prev is not None
            plo, phi = int(prev.group("lo")), int(prev.group("hi") or prev.group("lo"))
            if lo <= phi + 1 and hi >= plo - 1:
                a, b = min(lo, plo), max(hi, phi)
                out[k] = f"{key[0]}, {key[1]}s {a}–{b}" if b > a else f"{key[0]}, {key[1]} {a}"
                continue
        spans[key] = len(out)
        out.append(label)
    return out


_LABEL_RANGE_RE = re.compile(r"^(?P<what>.+), (?P<unit>rows?|lines?|pages?) (?P<lo>\d+)(?:–(?P<hi>\d+))?$")


def _index_line(kept: int, total: int, omitted_tokens: int, evidence: list[str], counter: TokenCounter,
                room: int) -> str:
    """The index line, its evidence list cut to *room* tokens ("…; +37 more") so that the index
    never crowds out the draft it stands for."""
    head = f"[reasoning truncated: sentences {kept + 1}–{total} of {total} omitted ({omitted_tokens} tokens); "
    if not evidence:
        return head + "evidence: none cited in the omitted part]"
    shown = len(evidence)
    while True:
        rest = len(evidence) - shown
        line = head + f"evidence: {'; '.join(evidence[:shown])}" + (f"; +{rest} more" if rest else "") + "]"
        if shown <= 1 or counter.count(line) <= room:
            return line
        shown = max(1, min(shown - 1, shown * room // max(counter.count(line), 1)))


def _norm_range(r: str) -> str:
    r = re.sub(r"\s*(?:[-—]|to)\s*", "–", r.strip())
    return re.sub(r"\s*–\s*", "–", r)


def truncate_reasoning(
    item: HandoffItem,
    *,
    cap: int,
    counter: TokenCounter,
    known_ids: Iterable[str] = (),
) -> ReasoningCut:
    """Cut *item* to at most *cap* tokens (index line included) at a sentence boundary."""
    text = item.text
    total = counter.count(text)
    spans = split_sentences(text)
    if total <= cap:
        return ReasoningCut(item.id, text, False, total, total, len(spans), len(spans))
    known = [k for k in known_ids if k != item.id]
    kept = len(spans)
    while True:
        kept -= 1
        head = text[: spans[kept - 1][1]] if kept > 0 else ""
        omitted = text[spans[kept][0]:] if kept < len(spans) else ""
        evidence = citations(omitted, known)
        visible = citations(head, known)
        evidence += [c for c in item.cites if c not in evidence and c not in visible]
        evidence = merge_ranges(evidence)
        line = _index_line(kept, len(spans), counter.count(omitted), evidence, counter, max(40, cap // 2))
        out = f"{head}\n{line}" if head else line
        if counter.count(out) <= cap or kept == 0:
            return ReasoningCut(item.id, out, True, total, counter.count(out), kept, len(spans),
                                tuple(evidence), line)
