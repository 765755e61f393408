"""Verify-and-revert (stage ``verify``): a changed segment that lost an entity is restored.

Runs after the lossy stages. For every live segment that a stage changed (status
``compressed``, or any text that differs from ``original`` except table/list folding, whose
dropped rows are recorded by the fold stage itself), it collects from the *original*:

- named entities — spaCy NER for English text, labels from ``plan.protection.entities``
  (the built-in default list when the plan names none); each segment's own detected language
  decides, whatever the plan's ``language``, and the trace lists the changed segments that got
  no NER for their language under ``not_english``;
- numbers, dates and amounts — a regular-expression fallback used for every language (so
  Chinese text, which spaCy's English model cannot read, is still checked);
- every match of the plan's anchors and every dictionary term.

Each must still appear in the segment's text, white space aside, as a whole value: a number
found only as part of a longer one does not count (a lost "8" is not found in "80", "1.8" or
"8,000"). NER is the costly part: with ``scope="auto"`` it runs on the best-scored changed
segments whose current texts fill ``budget_factor`` (3) × the budget — those the budget can
deliver — and the others get the
pattern, anchor and term checks only; the trace counts both (``ner_checked``,
``patterns_only``). ``scope="all"`` runs NER on every changed segment. A segment that lost
one is reverted: ``text = original``, status ``reverted``, reason
``verify: lost entity 'March 3' (DATE)``. A revert is data, not an exception: the trace event
lists every revert with the entity that triggered it.

>>> from odcf.stages.verify import Verifier
>>> stage = Verifier(ner=False)      # regex/anchor/term checks only, no spaCy
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

from odcf.document import Document, Segment, TraceEvent
from odcf.plan.model import Plan
from odcf.plan.protection import default_entity_labels
from odcf.stages.base import Stage
from odcf.textutil import fold, has_value, not_for_english_ner
from odcf.tokens import get_counter

logger = logging.getLogger(__name__)

#: A number's digits, thousands separators only between digits: the comma after "HV-32, exclusive of VAT" or
#: "(age 65-74, hypertension" ends the clause, not the number (QA: taken with it, "32," was checked and named in
#: the reason, ``lost entity '32,'``, and a text that kept "HV-32." without the comma was reverted).
_DIGITS = r"\d(?:[\d,]*\d)?(?:\.\d+)?"
#: Dates, amounts and numbers (language-independent, incl. Chinese forms).
_FALLBACK: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("DATE", re.compile(r"\d{4}\s*年\s*\d{1,2}\s*月(?:\s*\d{1,2}\s*日)?|\d{1,2}\s*月\s*\d{1,2}\s*日"
                        r"|\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b")),
    ("MONEY", re.compile(rf"[$€£¥]\s?{_DIGITS}|{_DIGITS}\s*(?:万元|亿元|元|美元|欧元|英镑)")),
    ("PERCENT", re.compile(r"\d+(?:\.\d+)?\s*(?:%|％)|百分之[零一二三四五六七八九十百点\d]+")),
    ("NUMBER", re.compile(rf"(?<![\w.]){_DIGITS}")),
)

def fallback_entities(text: str) -> list[tuple[str, str]]:
    """``(text, label)`` of dates, amounts, percentages and numbers found by pattern.

    A number inside an already found date or amount is not listed again.
    """
    out: list[tuple[str, str]] = []
    taken: list[tuple[int, int]] = []
    for label, rx in _FALLBACK:
        for m in rx.finditer(text):
            if any(a <= m.start() and m.end() <= b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            out.append((m.group(0).strip(), label))
    return out


class Verifier(Stage):
    """Revert changed segments that lost an entity, a number, an anchor match or a term.

    Options: ``ner`` (spaCy on English originals), ``numbers`` (the pattern fallback on all
    text), ``check_folded`` (also verify table/list folds), ``batch_size``, ``model``.
    """

    name = "verify"
    requires = frozenset({"segments"})
    provides = frozenset({"verified"})

    def __init__(self, *, ner: bool = True, numbers: bool = True, check_folded: bool = False,
                 scope: str = "auto", budget_factor: float = 3.0,
                 batch_size: int = 64, model: str | None = None) -> None:
        if scope not in ("auto", "all"):
            raise ValueError(f"verify: scope must be 'auto' or 'all', got {scope!r}")
        self.ner = ner
        self.scope = scope
        self.budget_factor = float(budget_factor)
        self.numbers = numbers
        self.check_folded = check_folded
        self.batch_size = int(batch_size)
        self.model = model

    def warm_up(self) -> None:
        if self.ner:
            from odcf.backends.ner import get_nlp

            get_nlp(self.model)

    def _changed(self, seg: Segment) -> bool:
        if seg.dropped or seg.status == "reverted":
            return False
        if seg.status == "folded" and not self.check_folded:
            return False
        return seg.status == "compressed" or seg.text != seg.original

    def _ner_scope(self, doc: Document, plan: Plan, segs: list[Segment]) -> set[str] | None:
        """``scope="auto"``: NER for the best-scored changed segments whose originals fill
        ``budget_factor`` × the budget (the ones that can be delivered); ``None`` = all."""
        if self.scope == "all" or not segs or any(s.score is None for s in segs):
            return None
        budget = doc.budget if doc.budget is not None else plan.role(doc.role).budget
        if not budget:
            return None
        counter = get_counter(doc.tokenizer or plan.tokenizer)
        room = budget * self.budget_factor
        chosen: set[str] = set()
        for seg in sorted(segs, key=lambda s: -(s.score or 0.0)):
            if room <= 0:
                break
            chosen.add(seg.id)
            room -= counter.count(seg.text)
        return chosen

    def __call__(self, doc: Document, plan: Plan) -> Document:
        todo = [s for s in doc.segments if self._changed(s)]
        labels = frozenset(plan.protection.entities or default_entity_labels)
        not_english: dict[str, list[str]] = {}
        english: list[Segment] = []
        for seg in todo:  # each segment's own language decides (see textutil.not_for_english_ner)
            lang = not_for_english_ner(seg.original, plan.language)
            if lang is None:
                english.append(seg)
            else:
                not_english.setdefault(lang, []).append(seg.id)
        ner_scope = self._ner_scope(doc, plan, english)
        english = [s for s in english if ner_scope is None or s.id in ner_scope]
        ner_ents: dict[str, list[tuple[str, str]]] = {}
        if self.ner and english and labels:
            from odcf.backends.ner import pipe

            for seg, sdoc in zip(english, pipe([s.original for s in english], parse=False,
                                               batch_size=self.batch_size, model=self.model)):
                ner_ents[seg.id] = [(e.text.strip(), e.label_) for e in sdoc.ents
                                    if e.label_ in labels and e.text.strip()]
        updates: dict[str, Segment] = {}
        reverts: list[dict[str, Any]] = []
        for seg in todo:
            lost = self._lost(seg, plan, ner_ents.get(seg.id, ()))
            if not lost:
                continue
            what, label = lost[0]
            updates[seg.id] = seg.with_reason(f"verify: lost entity {what!r} ({label}); reverted",
                                              text=seg.original, status="reverted")
            reverts.append({"segment": seg.id, "entity": what, "label": label,
                            "lost": [{"text": t, "label": lbl} for t, lbl in lost[:5]]})
        if reverts:
            logger.info("verify reverted %d of %d changed segment(s)", len(reverts), len(todo))
        segments = tuple(updates.get(s.id, s) for s in doc.segments)
        event = TraceEvent(stage=self.name, data={
            "checked": len(todo), "ner_checked": len(ner_ents),
            "patterns_only": len(todo) - len(ner_ents),
            "not_english": dict(sorted(not_english.items())),
            "reverted": len(reverts), "reverts": reverts,
        })
        return doc.with_event(event, segments=segments)

    def _lost(self, seg: Segment, plan: Plan, ents: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """What the original holds and the current text lacks, in the order checked."""
        text = seg.text
        lost: list[tuple[str, str]] = []
        seen: set[tuple[str, str]] = set()

        def check(needle: str, label: str, *, fold_case: bool = False, at: int | None = None) -> None:
            # a whole value, white space aside: a lost "8" is not found in the "80" kept beside it; where the
            # original holds it inside a longer value ("00" of "00:03"), as it stands there
            if not needle:
                return
            edges = seg.original[max(0, at - 1):at] + seg.original[at + len(needle):at + len(needle) + 2] if at is not None else ""
            if (needle, edges) in seen:
                return
            seen.add((needle, edges))
            if not has_value(text, needle, spaces=True, ignore_case=fold_case, original=seg.original, at=at):
                lost.append((needle, label))

        for what, label in ents:
            check(what, label)
        for anchor in plan.protection.anchors:
            for m in anchor.regex.finditer(seg.original):
                check(m.group(0), f"anchor:{anchor.name}", at=m.start())
        if plan.protection.terms:
            low, pos = fold(seg.original)
            for term in plan.protection.terms:
                key = fold(term.strip())[0] if term else ""
                at = low.find(key) if key else -1
                if at >= 0:  # the term as the original writes it ("actual cash\nvalue")
                    check(seg.original[pos[at]:pos[at + len(key) - 1] + 1], "term", fold_case=True)
        if self.numbers:
            for what, label in fallback_entities(seg.original):
                check(what, label)
        return lost
