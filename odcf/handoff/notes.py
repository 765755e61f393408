"""The ``[handoff notes]`` block appended after the core text.

What is missing is always written: required categories not searched, searched with nothing
found, mandatory items that cannot be delivered. Merged duplicates, confidence caps and conflicts
follow while the block stays within its share of the budget; the rest is counted in a last line
that points at the record, which lists them all.
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
    return max(NOTES_MIN_TOKENS, int(budget * NOTES_SHARE))


def render_notes(contract: RoleContract, decision: MandatoryDecision, missing: Sequence[Mapping[str, Any]],
                 duplicates: Sequence[Any], flags: Sequence[Mapping[str, Any]], conflicts: Sequence[Conflict],
                 *, counter: Any, max_tokens: int) -> str:
    """The notes block ("" when there is nothing to say), within *max_tokens* (see the module docstring)."""
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
    details: list[tuple[str, str]] = []
    for g in duplicates:
        details.append(("duplicates", f"Merged duplicates: item {g.kept} kept; same content from "
                        + ", ".join(g.sources[1:]) + f" ({', '.join(g.merged)})"))
    for f in flags:
        if f["kind"] == "confidence jump":
            details.append(("confidence_flags", f"Confidence capped: item {f['item']} claimed {f['claimed']:g}, its "
                            f"evidence ({', '.join(f['evidence'])}) supports at most {f['cap']:g}"))
        else:
            details.append(("confidence_flags", f"Confidence unverifiable: item {f['item']} rests on "
                            + ", ".join(f["evidence"]) + " (absent or without confidence)"))
    for k, c in enumerate(conflicts):
        if k == 0:
            details.append(("", "Conflicts (different sources disagree; both kept, not merged):"))
        details.append(("conflicts", c.render()))
    if not lines and not details:
        return ""
    used = counter.count("\n".join([head, *lines]))
    left: dict[str, int] = {}
    for n, (key, line) in enumerate(details):
        cost = counter.count(line) + 1
        if not left and used + cost <= max_tokens - 30:  # keep room for the closing count line
            lines.append(line)
            used += cost
        elif key:
            left[key] = left.get(key, 0) + 1
    if left:
        lines.append("Not shown here for lack of room (all listed in the record): "
                     + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in left.items()))
    return head + "\n" + "\n".join(lines)
