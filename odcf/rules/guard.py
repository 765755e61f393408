"""Ask whether a piece of text holds something the plan protects.

The ``rules`` stage runs before segmentation and protection, so it cannot look at
``seg.protected``; before it removes a line or a mark it asks this guard instead.

>>> from odcf.plan.model import Plan, ProtectionRules, Anchor
>>> plan = Plan(domain="d", protection=ProtectionRules(anchors=(Anchor("id", r"#W\\d+"),), terms=("force majeure",)))
>>> g = ProtectionGuard.from_plan(plan)
>>> g.holds("TODO: check #W2611340"), g.holds("TODO: Force Majeure clause"), g.holds("TODO: tidy up")
(True, True, False)
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from odcf.plan.model import Plan
from odcf.textutil import RegexTimeout, regex_time_limit


@dataclass(frozen=True)
class ProtectionGuard:
    """Anchors (regex), terms (case-insensitive) and markers (exact) of a plan, ready to test text.

    A user's anchor that backtracks catastrophically on a line would hang the rules stage: each
    test runs under the same time limit as the protect stage (``seconds``), and past it is a
    :class:`~odcf.errors.PatternTimeoutError` (a stage and an ontology error) naming the anchor."""

    anchors: tuple[re.Pattern[str], ...] = ()
    terms: re.Pattern[str] | None = None
    markers: tuple[str, ...] = ()
    names: tuple[str, ...] = ()  # the anchors' names, for the error
    seconds: float = 5.0
    source_file: str | None = None  # the ontology's, for the error

    @classmethod
    def from_plan(cls, plan: Plan | None) -> ProtectionGuard:
        if plan is None:
            return cls()
        prot = plan.protection
        terms = sorted({t for t in prot.terms if t}, key=len, reverse=True)
        term_re = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE) if terms else None
        return cls(
            anchors=tuple(a.regex for a in prot.anchors),
            terms=term_re,
            markers=tuple(m for m in prot.markers if m),
            names=tuple(a.name for a in prot.anchors),
            source_file=plan.source_file,
        )

    def holds(self, text: str) -> bool:
        """True when *text* holds an anchor match, a dictionary term or a marker."""
        if not text:
            return False
        if any(m in text for m in self.markers):
            return True
        if self.terms is not None and self.terms.search(text):
            return True
        return self.holds_anchor(text)

    def holds_anchor(self, text: str) -> bool:
        """True when *text* holds an anchor match (a number, an id): words, terms and markers aside."""
        if not text:
            return False
        k = 0
        try:
            with regex_time_limit(self.seconds):
                for k, rx in enumerate(self.anchors):
                    if rx.search(text):
                        return True
        except RegexTimeout:
            from odcf.ontology.loader import anchor_timeout_error

            name = self.names[k] if k < len(self.names) else str(k)
            raise anchor_timeout_error(
                self.source_file, self.names, name,
                f"anchor {name!r} ran past {self.seconds:g} s on a line of {len(text):,} characters ({text[:40]!r}...): "
                "its pattern backtracks catastrophically; rewrite it (`odcf ontology check` probes patterns for "
                "the common cases of this)") from None
        return False

    def __bool__(self) -> bool:
        return bool(self.anchors or self.terms is not None or self.markers)
