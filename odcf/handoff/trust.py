"""Derived claims: a claim is never more certain than the evidence it rests on.

An item with ``derived_from: [ids]`` gets the cap ``min(confidence of its evidence)``. When it
claims more than that, the jump is flagged and the delivered confidence is the cap. Evidence
that is not in the input, or that states no confidence, is reported, and then no cap is known
for that claim.

>>> from odcf.handoff.items import HandoffItem
>>> ev = HandoffItem(id="e1", text="Tool says 3 bags.", confidence=0.6)
>>> claim = HandoffItem(id="c1", text="The user surely has 3 free bags.", confidence=0.95, derived_from=("e1",))
>>> items, flags = cap_confidence((ev, claim))
>>> items[1].confidence, flags[0]["claimed"], flags[0]["cap"]
(0.6, 0.95, 0.6)
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from odcf.handoff.items import HandoffItem


def cap_confidence(items: Sequence[HandoffItem]) -> tuple[tuple[HandoffItem, ...], tuple[dict[str, Any], ...]]:
    """The items with derived claims capped, and one flag per jump or unknowable cap.

    Caps propagate: a claim derived from a capped claim is capped by the capped value.
    """
    by_id = {it.id: it for it in items}
    conf: dict[str, float | None] = {it.id: it.confidence for it in items}
    caps: dict[str, float] = {}
    unknown: dict[str, dict[str, Any]] = {}
    for _ in range(len(items) + 1):  # fixed point; a cycle stops after len(items) passes
        changed = False
        for it in items:
            if not it.derived_from:
                continue
            absent = [e for e in it.derived_from if e not in by_id]
            unrated = [e for e in it.derived_from if e in by_id and conf[e] is None]
            if absent or unrated:
                unknown[it.id] = {"item": it.id, "kind": "cap unknown", "claimed": it.confidence,
                                  "evidence": list(it.derived_from), "absent": absent, "without_confidence": unrated}
                continue
            unknown.pop(it.id, None)
            cap = min(conf[e] for e in it.derived_from)  # type: ignore[type-var]
            caps[it.id] = cap  # type: ignore[assignment]
            new = cap if it.confidence is None else min(it.confidence, cap)  # type: ignore[type-var]
            if conf[it.id] != new:
                conf[it.id] = new
                changed = True
        if not changed:
            break
    out: list[HandoffItem] = []
    flags: list[dict[str, Any]] = []
    for it in items:
        if it.id in unknown:
            flags.append(unknown[it.id])
        elif it.id in caps and it.confidence is not None and it.confidence > caps[it.id]:
            flags.append({"item": it.id, "kind": "confidence jump", "claimed": it.confidence, "cap": caps[it.id],
                          "evidence": list(it.derived_from)})
        out.append(dataclasses.replace(it, confidence=conf[it.id]) if conf[it.id] != it.confidence else it)
    return tuple(out), tuple(flags)
