"""Multi-agent handoff: prepare what one agent hands to the next from the role's contract.

>>> from odcf.handoff import handoff                                         # doctest: +SKIP
>>> r = handoff(plan, role="executor", items="handoff.json", budget=1500)   # doctest: +SKIP
>>> r.text, r.record["missing"], r.record["not_searched"], r.record["conflicts"]  # doctest: +SKIP

Also reachable as ``Compressor.handoff(role=..., items=[...])`` and ``odcf handoff ITEMS.json --role R``.
See docs/handoff.md for the input format and the rules.
"""
from __future__ import annotations

from odcf._lazy import lazy_getattr

_LAZY = {
    "handoff": ("odcf.handoff.engine", "handoff"),
    "HandoffResult": ("odcf.handoff.engine", "HandoffResult"),
    "HandoffItem": ("odcf.handoff.items", "HandoffItem"),
    "ItemBatch": ("odcf.handoff.items", "ItemBatch"),
    "parse_items": ("odcf.handoff.items", "parse_items"),
    "load_items": ("odcf.handoff.items", "load_items"),
    "HandoffError": ("odcf.handoff.errors", "HandoffError"),
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
