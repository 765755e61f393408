"""Near-duplicate items: keep one copy, list every source.

Two fact items are near-duplicates when their normalized texts (case, punctuation and
whitespace folded) are at least ``threshold`` similar (difflib ratio) *and* they hold exactly
the same "hard" tokens — numbers, amounts, identifiers, all-caps codes. Two reports that differ in a number
are never merged: that is a conflict (:mod:`odcf.handoff.conflicts`), not a duplicate.

The copy kept is the most confident, then the most recent, then the first; it inherits the
category and the mandatory mark of the ones it absorbs, and the record lists all their sources.

>>> from odcf.handoff.items import HandoffItem
>>> a = HandoffItem(id="a", text="Order #W1 was delivered on 2024-05-02.", origin="tool:get_order", confidence=0.9)
>>> b = HandoffItem(id="b", text="order #W1 was delivered on 2024-05-02", origin="agent:researcher", confidence=0.6)
>>> kept, groups = merge_near_duplicates((a, b))
>>> [it.id for it in kept], groups[0].merged
(['a'], ('b',))
"""
from __future__ import annotations

import dataclasses
import difflib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from odcf.handoff.items import HandoffItem

DEFAULT_THRESHOLD = 0.9
_HARD = re.compile(r"[#$€£¥]?\w*\d[\w.,:/-]*")
_CODE = re.compile(r"\b[A-Z]{2,}\b")
_PUNCT = re.compile(r"[^\w\s#$€£¥%.]|(?<!\d)\.|\.(?!\d)")


def normalize(text: str) -> str:
    """Case-, punctuation- and whitespace-folded text used for comparison."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = _PUNCT.sub(" ", t)
    return " ".join(t.split())


def hard_tokens(text: str) -> frozenset[str]:
    """Numbers, amounts and identifiers: tokens that hold a digit, and all-caps codes (``SEA``,
    ``DFW``), trailing punctuation removed."""
    t = unicodedata.normalize("NFKC", text)
    out = {m.group(0).rstrip(".,:;") for m in _HARD.finditer(t.casefold())}
    out.update(m.group(0) for m in _CODE.finditer(t))
    return frozenset(out)


@dataclass(frozen=True)
class DuplicateGroup:
    kept: str
    merged: tuple[str, ...]
    sources: tuple[str, ...]          # origins (or ids) of every copy, kept one first
    similarity: float

    def to_dict(self) -> dict[str, object]:
        return {"kept": self.kept, "merged": list(self.merged), "sources": list(self.sources),
                "similarity": round(self.similarity, 3)}


def _keep_order(it: HandoffItem) -> tuple[float, str, int]:
    conf = it.confidence if it.confidence is not None else -1.0
    # most confident, then most recent (ISO timestamps sort as text), then first
    return (-conf, _neg(it.timestamp or ""), it.position)


def _neg(s: str) -> str:
    return "".join(chr(0x10FFFF - ord(c)) for c in s) if s else "\U0010ffff"


def merge_near_duplicates(
    items: Sequence[HandoffItem],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    layers: Iterable[str] = ("fact",),
) -> tuple[tuple[HandoffItem, ...], tuple[DuplicateGroup, ...]]:
    """Return the items with near-duplicates merged (input order kept) and the merge groups."""
    layers = frozenset(layers)
    cands = [it for it in items if it.layer in layers and it.text.strip()]
    norm = {it.id: normalize(it.text) for it in cands}
    hard = {it.id: hard_tokens(it.text) for it in cands}
    parent: dict[str, str] = {}
    best_sim: dict[str, float] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for i, a in enumerate(cands):
        for b in cands[i + 1:]:
            if hard[a.id] != hard[b.id]:
                continue
            na, nb = norm[a.id], norm[b.id]
            if min(len(na), len(nb)) < threshold * max(len(na), len(nb)):
                continue
            sim = 1.0 if na == nb else difflib.SequenceMatcher(None, na, nb, autojunk=False).ratio()
            if sim >= threshold:
                ra, rb = find(a.id), find(b.id)
                if ra != rb:
                    parent[rb] = ra
                    best_sim[ra] = min(best_sim.get(ra, 1.0), best_sim.pop(rb, 1.0), sim)
    groups: dict[str, list[HandoffItem]] = {}
    for it in cands:
        groups.setdefault(find(it.id), []).append(it)
    replaced: dict[str, HandoffItem] = {}
    dropped: set[str] = set()
    out_groups: list[DuplicateGroup] = []
    for root, members in groups.items():
        if len(members) < 2:
            continue
        ordered = sorted(members, key=_keep_order)
        keep, rest = ordered[0], ordered[1:]
        category = keep.category or next((m.category for m in rest if m.category), None)
        replaced[keep.id] = dataclasses.replace(
            keep, category=category, mandatory=any(m.mandatory for m in members),
        )
        dropped.update(m.id for m in rest)
        out_groups.append(DuplicateGroup(
            kept=keep.id, merged=tuple(m.id for m in rest),
            sources=tuple(m.label for m in ordered), similarity=best_sim.get(root, 1.0),
        ))
    kept = tuple(replaced.get(it.id, it) for it in items if it.id not in dropped)
    out_groups.sort(key=lambda g: g.kept)
    return kept, tuple(out_groups)
