"""Protection: mark the spans no later stage may remove or alter.

- anchors: every match of the plan's regular expressions (``anchor:<name>``);
- terms: the non-compressible dictionary, matched with Aho-Corasick, case-insensitive,
  on word boundaries for Latin script (``term``);
- connectives: a guarded connective and the clause it introduces, up to the next
  punctuation mark or ``clause_words`` words (``connective:<word>``) — the lexical guard;
  the dependency-parse guard is the ``entities`` stage;
- markers: a sentence holding a marker is protected whole (``marker:<marker>``).

Spans are offsets into ``segment.original``. Overlapping spans are kept as they are
(each says which rule made it); the invariant is only that every span's text survives.
"""
from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable
from typing import Any

from odcf.document import Document, Segment, Span, TraceEvent
from odcf.plan.model import Plan
from odcf.plan.protection import not_a_connective
from odcf.stages.base import Stage
from odcf.textutil import HAN_RE as _CJK
from odcf.textutil import RegexTimeout, fold, nfc_map, phrase_regex, regex_time_limit

_WORD_CHAR = re.compile(r"\w", re.UNICODE)
# punctuation that ends a clause; a comma or dot inside a number ("$50,000", "3.5") does not
_CLAUSE_END = re.compile(r"[,.](?!\d)|[;:!?()\[\]\n\u3001\u3002\uff0c\uff1b\uff1a\uff01\uff1f]")
_WORD_RE = re.compile(r"\S+")


class _Matchers:
    """Per-plan compiled matchers (Aho-Corasick automaton for terms, regex for connectives)."""

    def __init__(self, plan: Plan) -> None:
        self.terms = _build_automaton(plan.protection.terms)
        self.connectives = _connective_regex(plan.protection.connectives)
        self.markers = tuple(m for m in plan.protection.markers if m)
        self.anchors = tuple((a.name, a.regex) for a in plan.protection.anchors)
        self.source_file = plan.source_file


def _build_automaton(terms: Iterable[str]) -> Any:
    terms = [t for t in terms if t and t.strip()]
    if not terms:
        return None
    import ahocorasick

    auto = ahocorasick.Automaton()
    for term in terms:
        key = fold(term.strip())[0]
        auto.add_word(key, (len(key), term))
    auto.make_automaton()
    return auto


#: One-character Chinese negations that also open words that negate nothing: 没收 (confiscate),
#: 非常 (very), 未来 (future), 无线 (wireless) and 不断 (continually) are not "not".
_CJK_NOT_BEFORE = {"没": "(?!收)", "非": "(?!常)", "未": "(?!来)", "无": "(?!线)", "不": "(?!断)"}


def _connective_regex(connectives: Iterable[str]) -> re.Pattern[str] | None:
    latin = sorted({c for c in connectives if c and not _CJK.search(c)}, key=len, reverse=True)
    cjk = sorted({c for c in connectives if c and _CJK.search(c)}, key=len, reverse=True)
    parts: list[str] = []
    if latin:
        parts.append(r"(?<![\w'])(?:" + "|".join(re.escape(c) for c in latin) + r")(?![\w'])")
    if cjk:
        parts.append("(?:" + "|".join(re.escape(c) + _CJK_NOT_BEFORE.get(c, "") for c in cjk) + ")")
    if not parts:
        return None
    return re.compile("|".join(parts), re.IGNORECASE)


class Protector(Stage):
    """Mark protected spans on every segment.

    >>> from odcf.document import Document, Source
    >>> from odcf.plan.model import Plan, ProtectionRules, Anchor
    >>> from odcf.stages.segment import Segmenter
    >>> plan = Plan(domain="d", protection=ProtectionRules(anchors=(Anchor("pct", r"\\d+%"),)))
    >>> doc = Segmenter()(Document.from_sources([Source(id="a", text="Fees rise 5% yearly.")]), plan)
    >>> [s.text for s in Protector()(doc, plan).segments[0].protected]
    ['5%']
    """

    name = "protect"
    requires = frozenset({"segments"})
    provides = frozenset({"protected"})

    def __init__(self, *, anchors: bool = True, terms: bool = True, connectives: bool = True,
                 markers: bool = True, clause_words: int = 4, anchor_seconds: float = 5.0) -> None:
        self.anchors = anchors
        # per text, all anchors: past it a pattern is backtracking (a timer signal: the main thread
        # only; called from another thread the matching runs without a limit)
        self.anchor_seconds = anchor_seconds
        self.terms = terms
        self.connectives = connectives
        self.markers = markers
        self.clause_words = clause_words
        self._cache: dict[str, _Matchers] = {}
        self._lock = threading.Lock()

    def _matchers(self, plan: Plan) -> _Matchers:
        with self._lock:
            m = self._cache.get(plan.hash)
            if m is None:
                m = self._cache[plan.hash] = _Matchers(plan)
            return m

    def __call__(self, doc: Document, plan: Plan) -> Document:
        m = self._matchers(plan)
        counts: dict[str, int] = {}
        out: list[Segment] = []
        for seg in doc.segments:
            spans = self.spans_for(seg.original, m)
            for sp in spans:
                key = sp.rule.split(":", 1)[0]
                counts[key] = counts.get(key, 0) + 1
            if spans:
                merged = _dedupe(seg.protected + tuple(spans))
                meta = dict(seg.meta)
                if any(sp.rule.startswith("marker:") for sp in spans):
                    meta["marker"] = True
                seg = seg.replace(protected=merged, meta=meta)
            out.append(seg)
        event = TraceEvent(stage=self.name, data={"spans": dict(sorted(counts.items())),
                                                  "segments_protected": sum(1 for s in out if s.protected)})
        return doc.with_event(event, segments=tuple(out))

    def spans_for(self, text: str, m: _Matchers) -> list[Span]:
        """The protected spans of *text*, matched in its NFC form (:func:`~odcf.textutil.nfc_map`): a
        term or anchor written with combining accents ("Mu\u0308ller") is found as in the composed
        spelling, and each span points at the characters of *text* as written."""
        norm, pos = nfc_map(text)
        if norm == text:
            return self._spans(text, m)
        return [Span(pos[sp.start], pos[sp.end], text[pos[sp.start]:pos[sp.end]], sp.rule)
                for sp in self._spans(norm, m)]

    def _spans(self, text: str, m: _Matchers) -> list[Span]:
        spans: list[Span] = []
        if self.anchors and m.anchors:
            name = ""
            try:
                with regex_time_limit(self.anchor_seconds):
                    for name, rx in m.anchors:
                        for hit in rx.finditer(text):
                            if hit.end() > hit.start():
                                spans.append(Span(hit.start(), hit.end(), hit.group(0), f"anchor:{name}"))
            except RegexTimeout:
                from odcf.ontology.loader import anchor_timeout_error

                raise anchor_timeout_error(
                    m.source_file, [n for n, _ in m.anchors], name,
                    f"anchor {name!r} ran past {self.anchor_seconds:g} s on a text of {len(text):,} characters "
                    f"({text[:40]!r}...): its pattern backtracks catastrophically; rewrite it "
                    "(`odcf ontology check` probes patterns for the common cases of this)") from None
        if self.terms and m.terms is not None:
            low, pos = fold(text)
            for end_idx, (length, _term) in m.terms.iter(low):
                start = pos[end_idx - length + 1]
                end = pos[end_idx] + 1
                if _word_bounded(text, start, end):
                    spans.append(Span(start, end, text[start:end], "term"))
        if self.connectives and m.connectives is not None:
            for hit in m.connectives.finditer(text):
                if not_a_connective(text, hit.start(), hit.end()):
                    continue
                end = _clause_end(text, hit.end(), self.clause_words)
                spans.append(Span(hit.start(), end, text[hit.start():end], f"connective:{hit.group(0).lower()}"))
        if self.markers:
            low = text.lower()
            for marker in m.markers:
                if _find_marker(text, low, marker):
                    spans.append(Span(0, len(text), text, f"marker:{marker}"))
                    break
        spans.sort(key=lambda s: (s.start, -s.end, s.rule))
        return spans


def _word_bounded(text: str, start: int, end: int) -> bool:
    if _CJK.search(text[start:end]):
        return True
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not _WORD_CHAR.match(before) and not _WORD_CHAR.match(after)


def _find_marker(text: str, low: str, marker: str) -> bool:
    if _CJK.search(marker) or not marker[0].isalnum():
        return marker in text
    return _marker_regex(marker).search(low) is not None


@functools.lru_cache(maxsize=1024)
def _marker_regex(marker: str) -> re.Pattern[str]:
    """A marker's pattern, built once: every segment is tried against every marker of the plan."""
    return re.compile(phrase_regex(marker.lower()) + r"(?!\w)")


def _clause_end(text: str, pos: int, max_words: int) -> int:
    """End of the clause a connective introduces: next punctuation, or *max_words* words on."""
    stop = _CLAUSE_END.search(text, pos)
    limit = stop.start() if stop else len(text)
    if _CJK.search(text[pos:pos + 2] or ""):
        # CJK: no spaces; take up to 8 characters of the clause
        return min(limit, pos + 8)
    end = pos
    for count, w in enumerate(_WORD_RE.finditer(text, pos, limit)):
        if count >= max_words:
            break
        end = w.end()
    return end


def _dedupe(spans: tuple[Span, ...]) -> tuple[Span, ...]:
    seen: set[tuple[int, int, str]] = set()
    out: list[Span] = []
    for sp in sorted(spans, key=lambda s: (s.start, -s.end, s.rule)):
        key = (sp.start, sp.end, sp.rule)
        if key not in seen:
            seen.add(key)
            out.append(sp)
    return tuple(out)
