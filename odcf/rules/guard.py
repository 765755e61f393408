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


@dataclass(frozen=True)
class ProtectionGuard:
    """Anchors (regex), terms (case-insensitive) and markers (exact) of a plan, ready to test text."""

    anchors: tuple[re.Pattern[str], ...] = ()
    terms: re.Pattern[str] | None = None
    markers: tuple[str, ...] = ()

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
        )

    def holds(self, text: str) -> bool:
        """True when *text* holds an anchor match, a dictionary term or a marker."""
        if not text:
            return False
        if any(m in text for m in self.markers):
            return True
        if self.terms is not None and self.terms.search(text):
            return True
        return any(rx.search(text) for rx in self.anchors)

    def __bool__(self) -> bool:
        return bool(self.anchors or self.terms is not None or self.markers)
