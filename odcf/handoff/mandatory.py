"""Which items a role must receive, and which required categories upstream never searched.

The rules are the program's, not the caller's: an item is mandatory when

- its category is one of the role's required categories (from the preset or the ontology),
- it is marked ``mandatory``,
- it is a known counterexample (category ``counterexamples``), or
- it is a scope claim, or evidence a scope claim rests on (``derived_from`` of an item with
  ``scope_claim: true`` or category ``fix_scope``),

even when the caller marked it ``optional`` or listed it last. A required category with no item
is *not searched* unless upstream said it searched it (then: *searched, none found*).

>>> from odcf.handoff.items import HandoffItem
>>> items = (HandoffItem(id="c1", text="Fails for 0 items.", category="counterexamples", optional=True),)
>>> d = decide_mandatory(items, required_categories=("task",), searched=frozenset())
>>> d.reasons["c1"], [c.category for c in d.not_searched]
(('known counterexample',), ['task'])
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from odcf.handoff.items import HandoffItem

#: Category names that hold known counterexamples (always mandatory).
COUNTEREXAMPLE_CATEGORIES = frozenset({"counterexamples", "counterexample"})
#: Category names that make an item a scope claim.
SCOPE_CATEGORIES = frozenset({"fix_scope", "scope"})


@dataclass(frozen=True)
class CategoryStatus:
    """One required category: ``delivered`` (items given), ``searched_none_found`` or ``not_searched``."""

    category: str
    status: str
    items: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"category": self.category, "status": self.status, "items": list(self.items)}


@dataclass(frozen=True)
class MandatoryDecision:
    """Why each mandatory item is mandatory, and what the required categories look like."""

    reasons: Mapping[str, tuple[str, ...]]
    categories: tuple[CategoryStatus, ...] = ()
    overridden: tuple[str, ...] = ()          # marked optional by the caller, mandatory anyway
    missing_evidence: tuple[dict[str, str], ...] = field(default=())

    def is_mandatory(self, item_id: str) -> bool:
        return item_id in self.reasons

    @property
    def not_searched(self) -> tuple[CategoryStatus, ...]:
        return tuple(c for c in self.categories if c.status == "not_searched")

    @property
    def searched_none_found(self) -> tuple[CategoryStatus, ...]:
        return tuple(c for c in self.categories if c.status == "searched_none_found")


def is_scope_claim(item: HandoffItem) -> bool:
    return item.scope_claim or (item.category or "") in SCOPE_CATEGORIES


def decide_mandatory(
    items: Iterable[HandoffItem],
    *,
    required_categories: Iterable[str],
    searched: frozenset[str],
) -> MandatoryDecision:
    """Apply the mandatory rules to *items* (see the module docstring)."""
    items = tuple(items)
    required = tuple(dict.fromkeys(required_categories))
    by_id = {it.id: it for it in items}
    reasons: dict[str, list[str]] = {}

    def add(item_id: str, why: str) -> None:
        lst = reasons.setdefault(item_id, [])
        if why not in lst:
            lst.append(why)

    missing_evidence: list[dict[str, str]] = []
    for it in items:
        if it.category in required:
            add(it.id, f"required category {it.category}")
        if it.mandatory:
            add(it.id, "marked mandatory")
        if (it.category or "") in COUNTEREXAMPLE_CATEGORIES:
            add(it.id, "known counterexample")
        if is_scope_claim(it):
            add(it.id, "scope claim")
            for ev in it.derived_from:
                if ev in by_id:
                    add(ev, f"evidence for scope claim {it.id}")
                else:
                    missing_evidence.append({"item": ev, "claim": it.id,
                                             "why": f"evidence {ev} of scope claim {it.id} is not in the input"})
    categories: list[CategoryStatus] = []
    for cat in required:
        ids = tuple(it.id for it in items if it.category == cat)
        if ids:
            categories.append(CategoryStatus(cat, "delivered", ids))
        elif cat in searched:
            categories.append(CategoryStatus(cat, "searched_none_found"))
        else:
            categories.append(CategoryStatus(cat, "not_searched"))
    overridden = tuple(it.id for it in items if it.optional and it.id in reasons)
    return MandatoryDecision(
        reasons={k: tuple(v) for k, v in reasons.items()},
        categories=tuple(categories),
        overridden=overridden,
        missing_evidence=tuple(missing_evidence),
    )
