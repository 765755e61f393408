"""The ``[handoff notes]`` block appended after the core text.

What is missing is always written: required categories not searched, searched with nothing
found, mandatory items that cannot be delivered. Merged duplicates, confidence caps and conflicts
follow while the block stays within its share of the budget (once the material is known, within the room
it left unused too: :func:`odcf.handoff.engine.handoff`); the rest is counted in a last line that points at
the record, which lists them all. When not even the heading and that line fit the
share (a budget of a few dozen tokens) and nothing is missing, there is no block: the record has it all.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from odcf.handoff.conflicts import Conflict
from odcf.handoff.mandatory import MandatoryDecision
from odcf.plan.model import RoleContract

#: The notes block may use this share of the budget (at least NOTES_MIN_TOKENS).
NOTES_SHARE = 0.2
NOTES_MIN_TOKENS = 120


def notes_cap(budget: int) -> int:
    """Tokens the notes may use: their share of the budget, or up to NOTES_MIN_TOKENS while that
    is at most a third of it (a 120-token handoff gave its notes 106 tokens and its facts none)."""
    return max(min(NOTES_MIN_TOKENS, budget // 3), int(budget * NOTES_SHARE))


def render_notes(contract: RoleContract, decision: MandatoryDecision, missing: Sequence[Mapping[str, Any]],
                 duplicates: Sequence[Any], flags: Sequence[Mapping[str, Any]], conflicts: Sequence[Conflict],
                 *, counter: Any, max_tokens: int, delivered: frozenset[str] | None = None,
                 details: int | None = None) -> tuple[str, int]:
    """The notes block ("" when there is nothing to say), within *max_tokens* (see the module
    docstring), and how many detail lines it shows. *delivered*: the item ids the handoff text
    holds, once known; before, every conflicting item is marked "not delivered" (the longest the
    block can get). *details*: show exactly this many detail lines (those a first rendering chose,
    so that the final block, no longer than the first, fits the room reserved for it)."""
    head = f"[handoff notes] odcf | role {contract.name}"
    lines: list[str] = []
    if decision.not_searched:
        lines.append(f"Not searched upstream (required for {contract.name}): "
                     + ", ".join(c.category for c in decision.not_searched))
    if decision.searched_none_found:
        lines.append("Searched, none found: " + ", ".join(c.category for c in decision.searched_none_found))
    for m in missing:
        if m.get("status") != "not_searched":
            lines.append(f"Missing: {m['why']}")
    detail_lines: list[tuple[str, str]] = []
    for g in duplicates:
        detail_lines.append(("duplicates", f"Merged duplicates: item {g.kept} kept; same content from "
                             + ", ".join(g.sources[1:]) + f" ({', '.join(g.merged)})"))
    for f in flags:
        if f["kind"] == "confidence jump":
            detail_lines.append(("confidence_flags", f"Confidence capped: item {f['item']} claimed {f['claimed']:g}, "
                                 f"its evidence ({', '.join(f['evidence'])}) supports at most {f['cap']:g}"))
        else:
            detail_lines.append(("confidence_flags", f"Confidence unverifiable: item {f['item']} rests on "
                                 + ", ".join(f["evidence"]) + " (absent or without confidence)"))
    for k, c in enumerate(conflicts):
        line = c.render(delivered if delivered is not None else frozenset())
        if k == 0:  # the heading goes with the first conflict or not at all
            line = "Conflicts (different sources disagree; not merged):\n" + line
        detail_lines.append(("conflicts", line))
    if not lines and not detail_lines:
        return "", 0
    essential = bool(lines)  # what is missing is always written
    used = counter.count("\n".join([head, *lines]))
    left: dict[str, int] = {}
    shown = 0
    for n, (key, line) in enumerate(detail_lines):
        cost = counter.count(line) + 1
        # room for the count line, unless this is the last detail
        fits = n < details if details is not None else used + cost <= max_tokens - (30 if n < len(detail_lines) - 1 else 1)
        if not left and fits:
            lines.append(line)
            used += cost
            shown += 1
        else:
            left[key] = left.get(key, 0) + 1
    if left:
        lines.append("Not shown here for lack of room (all listed in the record): "
                     + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in left.items()))
    text = head + "\n" + "\n".join(lines)
    if not essential and counter.count(text) > max_tokens:
        # not even the heading and the count fit the notes' share (a tiny budget): the record
        # lists every duplicate, cap and conflict, and the budget goes to the material
        return "", 0
    return text, shown
