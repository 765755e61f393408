"""A small stage the handoff inserts before ``budget``: handoff-specific priorities.

The core ranks by relevance. In a handoff, history is ranked by recency (the last turns are
trimmed last) and a truncated reasoning draft keeps its evidence index longest, so that the
budget stage, trimming lowest score first, cuts the right things. Sources say what they want in
``Source.meta``: ``handoff_score`` (a fixed score for all their segments) or
``handoff_order: "position"`` (earlier segments first, the last one — the evidence index — kept
longest, and segments stating a constraint — "do not …", "only …", "unless …" — before the
others) or ``handoff_order: "ascending"`` (later segments first: history bullets, oldest
dropped first). It also drops a reranker's placement order (``doc.meta["order"]``): a handoff is
read in its own order — instruction, state, facts, drafts, then history oldest to newest.

Recent history turns are linked oldest to newest (segment meta ``budget_needs``, honoured by the
budget stage): a turn is delivered only when the turn after it is, so the history the next agent
reads has no gap — a newer turn left out for room while an older, shorter one got in. The one
exception is a user turn stating a constraint (``handoff_constraint``, set by the layout): it ranks
with the newest turn and needs no later one, so "make sure … are not alarmed" outlasts the
assistant's acknowledgement after it; one whose value a later turn of the user changes
(``handoff_stale_bullets``, a recent turn's ``handoff_corrected_by``) ranks :data:`STALE_BELOW` below
the others, as the rank stage puts a correction above what it corrects: its value is stale, and it goes
only with its change (:func:`_link_corrections`), so the two are worth one constraint, not two.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from odcf.document import Document, TraceEvent
from odcf.handoff.history import bullet_groups, user_constraint_strength
from odcf.handoff.reasoning import is_constraint
from odcf.plan.model import Plan
from odcf.stages.base import Stage


#: How far below the other constraint turns a user's constraint turn ranks when a later turn of theirs changes its
#: value. QA: at 130 tokens a 60-turn chat's stale "under EUR 40,000" (turn 3, first by position among the
#: constraints at one score) went out with its change "Actually, the budget is now EUR 43,500", 47 tokens for one
#: constraint, and "Never email the client directly" and "The move must happen on a weekend" were dropped for room
#: while a plain "Cleaning?" filled what was left.
STALE_BELOW = 0.02


class HandoffPriority(Stage):
    name = "handoff_priority"
    requires = frozenset({"segments", "scores"})
    provides = frozenset({"scores"})

    def __call__(self, doc: Document, plan: Plan) -> Document:
        by_source: dict[str, list[int]] = {}
        for k, seg in enumerate(doc.segments):
            by_source.setdefault(seg.source_id, []).append(k)
        segments = list(doc.segments)
        changed = 0
        for src in doc.sources:
            ks = by_source.get(src.id, [])
            fixed = src.meta.get("handoff_score")
            order = src.meta.get("handoff_order")
            keep = _bullets(segments, ks, src.meta) if order == "ascending" else {}
            stale = _stale_bullets(segments, ks, src.meta) if keep else set()
            for j, k in enumerate(ks):
                seg = segments[k]
                if seg.dropped:
                    continue
                if fixed is not None:
                    score = float(fixed)
                    if src.meta.get("handoff_constraint") and not user_constraint_strength(seg.text):
                        score -= 0.01  # within a user's constraint turn, the constraint goes last
                elif order == "ascending":  # older bullets first to go, all below the condensed turns
                    score = round(0.05 + 0.2 * j / max(1, len(ks)), 6)
                    if k in keep:  # a user's constraint, as a recent one: its constraint part goes last
                        score = 1.0 if keep[k] or user_constraint_strength(seg.text) else 0.99
                        if k in stale:
                            score -= STALE_BELOW
                elif order == "position":
                    last = j == len(ks) - 1 and bool(src.meta.get("handoff_index_last"))
                    if last:
                        score = 1.0
                    elif is_constraint(seg.text):  # "do not …" outlasts the neutral sentences
                        score = round(0.95 - 0.04 * j / max(1, len(ks)), 6)
                    else:
                        score = round(0.9 - 0.5 * j / max(1, len(ks)), 6)
                else:
                    continue
                segments[k] = seg.replace(score=score)
                changed += 1
        labelled = _label_turns(doc, segments, by_source)
        linked = _link_turns(doc, segments, by_source)
        corrected = _link_corrections(doc, segments, by_source)
        meta = dict(doc.meta)
        data: dict[str, object] = {"rescored": changed, "turns_linked": linked}
        if labelled:
            data["turns_labelled"] = labelled
        if corrected:
            data["stale_turns_linked"] = corrected
        if "order" in meta:  # a reranker's placement would shuffle the turns; the handoff keeps reading order
            del meta["order"]
            data["kept_reading_order"] = True
        return doc.with_event(TraceEvent(stage=self.name, data=data), segments=tuple(segments), meta=meta)


def _bullets(segments: list, ks: list[int], meta: Mapping[str, Any]) -> dict[int, bool]:
    """Link each bullet's later segments to its first, which holds its speaker ("- turn 3 user:"),
    so no part of a bullet is delivered without it; return the positions of the segments of
    constraint bullets (``handoff_constraint_bullets``), true for a bullet's first segment."""
    wanted = set(meta.get("handoff_constraint_bullets") or ())
    keep: dict[int, bool] = {}
    pos = {segments[k].id: k for k in ks}
    for b, group in enumerate(bullet_groups([segments[k] for k in ks])):
        head = group[0]
        for seg in group:
            k = pos[seg.id]
            if b in wanted:
                keep[k] = seg is head
            if seg is not head and not seg.dropped and not head.dropped:
                segments[k] = seg.replace(meta={**seg.meta, "budget_needs": head.id,
                                                "budget_needs_what": "the start of its history bullet"})
    return keep


def _stale_bullets(segments: list, ks: list[int], meta: Mapping[str, Any]) -> set[int]:
    """The positions of the segments of the constraint bullets whose value a later turn changes
    (``handoff_stale_bullets``)."""
    wanted = set(meta.get("handoff_stale_bullets") or ())
    if not wanted:
        return set()
    pos = {segments[k].id: k for k in ks}
    return {pos[seg.id] for b, group in enumerate(bullet_groups([segments[k] for k in ks])) if b in wanted
            for seg in group}


def _label_turns(doc: Document, segments: list, by_source: dict[str, list[int]]) -> int:
    """Give each segment of a recent history turn its speaker (source meta ``handoff_speaker``, "user:") and
    its turn, and the one that holds the label ``opens_line``, as the segmenter does for a transcript's lines:
    the assembler then writes the label before the first part delivered of a turn whose first part was not
    (QA: a turn trimmed to its constraint went out as "Please do not call me.", whose words?). Returns how
    many turns were labelled."""
    labelled = 0
    for src in doc.sources:
        speaker = src.meta.get("handoff_speaker")
        ks = by_source.get(src.id, [])
        if not speaker or not ks or src.meta.get("handoff_turn") is None:
            continue
        for j, k in enumerate(ks):
            seg = segments[k]
            if "speaker" in seg.meta:
                continue
            meta = {**seg.meta, "speaker": speaker, "turn": f"handoff {src.meta['handoff_turn']}"}
            if j == 0 and seg.original.lstrip().startswith(speaker):
                meta["opens_line"] = True
            segments[k] = seg.replace(meta=meta)
        labelled += 1
    return labelled


def _link_turns(doc: Document, segments: list, by_source: dict[str, list[int]]) -> int:
    """Each live segment of a recent history turn needs the first live segment of the next turn."""
    turns = [src for src in doc.sources if src.layer == "history" and src.meta.get("handoff_score") is not None]
    firsts = [next((segments[k].id for k in by_source.get(src.id, []) if not segments[k].dropped), None)
              for src in turns]
    linked = 0
    for src, newer in zip(turns, firsts[1:]):
        if newer is None or src.meta.get("handoff_constraint"):
            continue
        for k in by_source.get(src.id, []):
            seg = segments[k]
            if not seg.dropped:
                segments[k] = seg.replace(meta={**seg.meta, "budget_needs": newer})
                linked += 1
    return linked


def _link_corrections(doc: Document, segments: list, by_source: dict[str, list[int]]) -> int:
    """Each live segment of a history turn that a later turn changes a value of (source meta
    ``handoff_corrected_by``, from :attr:`~odcf.handoff.history.LayeredTurn.corrected_by`: a user's change, a
    tool result that replaces a tool's value) goes only with the live segments of those later turns (segment
    meta ``corrected_by``, honoured by the budget stage as for compress: taking it takes them, and when they
    do not fit it is dropped saying so); so does a user's request with the turns that tell what came of it
    (``handoff_resolved_by``, :attr:`~odcf.handoff.history.LayeredTurn.resolved_by`; segment meta
    ``resolved_by`` too, for the drop reason). Returns how many turns were linked.

    QA: tau-bench #26 at 400 and 800 tokens handed over turn 3's "I want to cancel the reservations with IDs
    IFOYYZ and NQNU5R" as a constraint without turn 10 (IFOYYZ cannot be canceled for a refund) or turn 14
    (NQNU5R has been canceled), and at 400 turn 19's prices 136 and 109 without turn 29's 430 and 412.

    QA: at 150 tokens, turn 3's "The total budget is under EUR 40,000" went out as a bullet while turn 45's
    "Actually, the budget is now EUR 43,500 …" (24 tokens, at the same score) did not fit after it, and a plain
    "Cleaning?" filled the room: the stale budget was handed over as the current one."""
    turn_ids: dict[int, list[str]] = {}  # turn number -> the ids of its segments (one an earlier stage
    # dropped too: the budget stage then leaves the stale turn out, saying so; one merged into its duplicate is read)
    stale: list[tuple[list[str], list[int]]] = []  # (segment ids of a turn, the turns that change it)
    for src in doc.sources:
        ks = by_source.get(src.id, [])
        if src.layer != "history" or not ks:
            continue
        if src.meta.get("handoff_bullet_turns") is not None:
            groups = bullet_groups([segments[k] for k in ks])
            turns = list(src.meta["handoff_bullet_turns"])
            if len(groups) != len(turns):
                continue  # not one group per bullet: no safe way to tell which segments are which turn's
            parts = {turn: [seg.id for seg in group] for turn, group in zip(turns, groups)}
        elif src.meta.get("handoff_turn") is not None:
            parts = {int(src.meta["handoff_turn"]): [segments[k].id for k in ks]}
        else:
            continue
        turn_ids.update(parts)
        stale += [(parts.get(turn, []), fixes, False) for turn, fixes in src.meta.get("handoff_corrected_by") or ()]
        stale += [(parts.get(turn, []), ends, True) for turn, ends in src.meta.get("handoff_resolved_by") or ()]
    pos = {seg.id: k for k, seg in enumerate(segments)}
    linked = 0
    for ids, fixes, request in stale:
        need = [i for turn in fixes for i in turn_ids.get(turn, ())]
        live = [i for i in ids if not segments[pos[i]].dropped]
        if not live or not need:
            continue  # a change delivered elsewhere (a mandatory turn, whole), or nothing of the stale turn left
        for i in live:
            seg = segments[pos[i]]
            meta = {**seg.meta, "corrected_by": list(dict.fromkeys((*seg.meta.get("corrected_by", ()), *need)))}
            if request:  # the budget's drop reason says what the link is
                meta["resolved_by"] = list(dict.fromkeys((*seg.meta.get("resolved_by", ()), *need)))
            segments[pos[i]] = seg.replace(meta=meta)
        linked += 1
    return linked
