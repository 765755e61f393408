"""History layering: recent turns verbatim, the turns before them condensed, older ones as bullets.

Turns are the history items in input order (one chat message = one turn). Counting back from
the last turn:

- turns 1..``verbatim`` (default 3) are delivered as written;
- turns up to ``condensed`` (default 10) are condensed one by one with the core's sentence
  ranking (segment → protect → rank): the best sentences (JSON members for tool output) are
  kept in their order, up to ``turn_cap`` tokens per turn, protected spans first;
- older turns become one bullet each: the first words of the turn plus the identifiers,
  amounts and dates it holds, up to ``bullet_cap`` tokens.

A user turn stating a constraint (:func:`~odcf.handoff.reasoning.is_constraint`: "don't contact …",
"must be fully accessible", "max €160 per night", "severe peanut allergy") is never cut by
position: condensed or as a bullet it holds up to ``turn_cap`` tokens and, when longer, keeps its
constraint clauses first, the cuts marked " … " (:func:`~odcf.handoff.reasoning.cut_keeping_constraints`,
the cut drafts get). So is a user's turn that changes a value of their earlier turn (:func:`user_changes`,
"Actually, budget is now EUR 5,200" after "the total budget is under EUR 4,500"), the stale value never handed over
as the only one. A bullet's values are the turn's values, not the key names of its JSON (an id
used as a key, ``"credit_card_5531920": {…}``, is a value), and
a value the turn denies or replaces ("€40,000 not €50,000", "down from €50,000") is listed last as
"not €50,000".

Every line keeps its speaker (``user:``, ``assistant:``, ``tool:get_user_details:``) and the
record lists, per turn, how it was delivered and its tokens before and after.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from odcf.document import Document, Segment, Source
from odcf.handoff.conflicts import _VALUE_RE, _id_regex
from odcf.handoff.items import HandoffItem
from odcf.handoff.reasoning import ConstraintCut, cut_keeping_constraints, is_constraint
from odcf.plan.model import Plan
from odcf.render import join_segments
from odcf.textutil import split_sentences
from odcf.tokens import TokenCounter

VERBATIM_TURNS = 3
CONDENSED_TURNS = 10
TURN_CAP = 60
BULLET_CAP = 24


@dataclass(frozen=True)
class LayeredTurn:
    """One history turn as it will be handed over."""

    item: HandoffItem
    turn: int                 # 1-based position in the history
    age: int                  # 1 = the last turn
    mode: str                 # verbatim | condensed | bullet
    text: str                 # with the speaker prefix
    tokens_in: int
    tokens_out: int
    constraint: bool = False                  # a user turn stating a constraint
    clauses: tuple[int, int] | None = None    # (kept, total) when its constraint cut left clauses out
    corrects: tuple[int, ...] = ()            # the user's earlier turns whose value this one changes
    corrected_by: tuple[int, ...] = ()        # the user's later turns that change a value of this one

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"item": self.item.id, "turn": self.turn, "speaker": speaker_of(self.item),
                               "mode": self.mode, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out}
        if self.constraint:
            out["constraint"] = True
        if self.clauses is not None:
            out["clauses_kept"] = f"{self.clauses[0]} of {self.clauses[1]} (constraints first)"
        if self.corrects:
            out["corrects_turns"] = list(self.corrects)
        if self.corrected_by:
            out["corrected_by_turns"] = list(self.corrected_by)
        return out


@dataclass(frozen=True)
class LayeredHistory:
    recent: tuple[LayeredTurn, ...]       # verbatim and condensed turns, oldest first
    bullets: tuple[LayeredTurn, ...]      # older turns, oldest first

    @property
    def turns(self) -> tuple[LayeredTurn, ...]:
        return self.bullets + self.recent

    def bullet_text(self) -> str:
        """The bullets, one paragraph each, so the budget can drop the oldest first."""
        return "\n\n".join(t.text for t in self.bullets)


def bullet_groups(segments: Sequence[Segment]) -> list[list[Segment]]:
    """The segments of the bullets source (:meth:`LayeredHistory.bullet_text`), one list per
    bullet in order: a bullet is a paragraph, so a blank line before a segment starts the next."""
    groups: list[list[Segment]] = []
    for seg in segments:
        if not groups or "\n\n" in seg.sep:
            groups.append([])
        groups[-1].append(seg)
    return groups


def speaker_of(item: HandoffItem) -> str:
    return item.speaker or item.origin or "unknown"


def layer_history(
    items: Sequence[HandoffItem],
    plan: Plan,
    counter: TokenCounter,
    *,
    verbatim: int = VERBATIM_TURNS,
    condensed: int = CONDENSED_TURNS,
    turn_cap: int = TURN_CAP,
    bullet_cap: int = BULLET_CAP,
    query: str | None = None,
) -> LayeredHistory:
    """Layer the history *items* (already in turn order) as described in the module docstring."""
    if verbatim < 0 or condensed < verbatim:
        raise ValueError("history layering needs 0 <= verbatim <= condensed")
    n = len(items)
    recent: list[LayeredTurn] = []
    bullets: list[LayeredTurn] = []
    changes = user_changes(items)
    changed: dict[int, list[int]] = {}
    for fix, stale in changes.items():
        for k in stale:
            changed.setdefault(k, []).append(fix)
    for k, it in enumerate(items):
        age = n - k
        body = it.text if it.text.strip() else "(empty)"
        t_in = counter.count(body)
        who = speaker_of(it)
        # a user's change of a value they gave before ("Actually, budget is now EUR 5,200") is what they ask now:
        # a constraint as the turn it changes is, or the stale value went out alone as current
        constraint = who == "user" and (user_constraint(it.text) or k in changes)
        cut: ConstraintCut | None = None
        if age <= verbatim:
            text, mode = f"{who}: {body}", "verbatim"
        elif age <= condensed:
            if constraint:
                cut = constraint_cut(it, counter, cap=turn_cap)
                short = cut.text if cut.cut else body
            else:
                short = condense(it, plan, counter, cap=turn_cap, query=query)
            mode = "verbatim" if short == body else "condensed"
            text = f"{who}: {short}"
        else:
            later = "\n".join(x.text for x in items[k + 1:])
            if constraint:  # a user's constraint holds what a condensed turn may, its constraints first
                cut = constraint_cut(it, counter, cap=turn_cap)
            body_text = gist(it, plan, counter, cap=turn_cap if constraint else bullet_cap, later=later, head=cut)
            text, mode = f"- turn {k + 1} {who}: {body_text}", "bullet"
        turn = LayeredTurn(item=it, turn=k + 1, age=age, mode=mode, text=text, tokens_in=t_in,
                           tokens_out=counter.count(text), constraint=constraint,
                           clauses=(cut.kept, cut.total) if cut is not None and cut.cut else None,
                           corrects=tuple(j + 1 for j in changes.get(k, ())),
                           corrected_by=tuple(j + 1 for j in changed.get(k, ())))
        (bullets if mode == "bullet" else recent).append(turn)
    return LayeredHistory(recent=tuple(recent), bullets=tuple(bullets))


def user_constraint(text: str) -> bool:
    """Whether a user's turn states a constraint: a prohibition, obligation, limit or negation
    (:func:`~odcf.handoff.reasoning.is_constraint`), or a sentence that compress counts as a user's constraint
    (:func:`odcf.stages.rank.states_user_constraint`, the same test: "The total budget is under EUR 4,500",
    "no hostels", "direct flights only", "我对青霉素过敏", "请勿致电给我", not a question), so that handoff keeps
    what compress keeps. QA: "请勿致电给我。", which compress raised, was a plain turn here and trimmed as old.

    >>> user_constraint("The total budget is under EUR 4,500 for flights and hotel together."), user_constraint("Noted, option 7.")
    (True, False)
    """
    from odcf.stages.rank import states_user_constraint

    return is_constraint(text) or any(states_user_constraint(line[a:b])
                                      for line in text.splitlines() for a, b in split_sentences(line))


def user_changes(items: Sequence[HandoffItem]) -> dict[int, list[int]]:
    """The user's turns of *items* that change a value the user gave in an earlier turn, by the rank stage's
    correction links (:func:`odcf.stages.rank.correction_links`, a user's "Actually, budget is now EUR 5,200"
    changes their "the total budget is under EUR 4,500"): {index of the change: [indexes of the turns it changes]}."""
    from odcf.stages.rank import correction_links

    segs = [Segment(id=f"t{k}", source_id="history", index=k, text=it.text, original=it.text, kind="sentence",
                    meta={"speaker": f"{speaker_of(it)}:"}) for k, it in enumerate(items)]
    users = {f"t{k}" for k, it in enumerate(items) if speaker_of(it) == "user"}
    out: dict[int, list[int]] = {}
    for fix, stale in correction_links(segs).items():
        mine = [int(s[1:]) for s in stale if s in users]
        if fix in users and mine:
            out[int(fix[1:])] = mine
    return out


def _analyzed(item: HandoffItem, plan: Plan, query: str | None) -> Document:
    """The turn segmented, protected and ranked by the core stages."""
    from odcf.stages.protect import Protector
    from odcf.stages.rank import LexicalRanker
    from odcf.stages.segment import Segmenter

    kind = item.kind if item.kind in ("json", "tool") else "chat"
    doc = Document.from_sources([Source(id="turn", text=item.text, kind=kind, layer="fact")], query=query)
    for stage in (Segmenter(), Protector(), LexicalRanker()):
        doc = stage(doc, plan)
    return doc


def condense(item: HandoffItem, plan: Plan, counter: TokenCounter, *, cap: int, query: str | None = None) -> str:
    """The turn's best segments, in order, within *cap* tokens (the whole turn when it fits)."""
    if not item.text.strip():
        return "(empty)"
    if counter.count(item.text) <= cap:
        return item.text
    doc = _analyzed(item, plan, query)
    segs = [s for s in doc.segments if s.text.strip()]
    ranked = sorted(segs, key=lambda s: (0 if s.protected else 1, -(s.score or 0.0), s.index))
    chosen: list[Segment] = []
    used = 0
    for s in ranked:
        c = counter.count(s.text) + 1
        if used + c <= cap:
            chosen.append(s)
            used += c
    if not chosen:
        return gist(item, plan, counter, cap=cap)
    chosen.sort(key=lambda s: s.index)
    text = join_segments(chosen)
    is_json = all("json_member" in s.meta for s in chosen)
    if len(chosen) < len(segs) and not is_json:
        text += f" … [{len(segs) - len(chosen)} of {len(segs)} sentences condensed away]"
    elif len(chosen) < len(segs):
        text += f" [{len(segs) - len(chosen)} of {len(segs)} JSON members condensed away]"
    return text


def constraint_cut(item: HandoffItem, counter: TokenCounter, *, cap: int) -> ConstraintCut:
    """A user's constraint turn within *cap* tokens, its constraint clauses first (on one line)."""
    return cut_keeping_constraints(" ".join(item.text.split()), cap=cap, counter=counter)


def gist(item: HandoffItem, plan: Plan, counter: TokenCounter, *, cap: int, later: str = "",
         head: ConstraintCut | None = None) -> str:
    """One bullet's content: the first words of the turn (or *head*, a constraint cut of it) plus
    the protected values it holds.

    Values that later turns repeat (*later*) are listed after the ones only this turn holds, so a
    bullet spends its room on what would otherwise be lost; a value the turn denies or replaces
    comes last, as "not VALUE". With *head*, values are added only while they fit *cap*.
    """
    if not item.text.strip():
        return "(empty)"
    spans = key_values(item, plan)
    head_text = " ".join(item.text.split())
    if head is not None:
        text = head.text
    elif item.kind in ("json", "tool") and head_text[:1] in ("{", "["):
        text = f"JSON result, {counter.count(item.text)} tokens"
    else:
        text = _head(head_text, counter, max(6, cap // 2))
        if text != head_text:
            text += " …"
    out = text
    values = sorted(((v, denied) for v, denied in spans if v not in text),
                    key=lambda p: (p[1], p[0] in later))
    values = [f"not {v}" if denied else v for v, denied in values]
    if values:
        shown: list[str] = []
        for v in values:
            trial = f"{text} (values: {', '.join(shown + [v])})"
            if counter.count(trial) > cap and (shown or head is not None):
                break
            shown.append(v)
        extra = len(values) - len(shown)
        if shown:
            out = f"{text} (values: {', '.join(shown)}{f', +{extra} more' if extra else ''})"
    return out


#: Before a value the turn denies or replaces: "€40,000 not €50,000", "down from €50,000",
#: "instead of May 2", "不是500元".
_DENIED_RE = re.compile(r"(?:\b(?:not|never|no longer|instead of|rather than|(?:down|up|changed|corrected|moved) from"
                        r"|formerly|previously)|n't|不是|并非|不)\s*(?:\w+\s+){0,2}$", re.IGNORECASE)
#: After a key name of JSON (or of a tool call's arguments): it names a value, it is not one.
_JSON_KEY_AFTER_RE = re.compile(r'["\']\s*:')


def key_values(item: HandoffItem, plan: Plan) -> list[tuple[str, bool]]:
    """Identifiers, amounts and dates in the turn, in order of appearance, without repeats:
    the plan's protected anchors and terms, plus the built-in id/amount/date patterns; each with
    whether the turn denies or replaces it (:data:`_DENIED_RE`). Key names of JSON are left out,
    unless they hold a digit (an id used as a key: ``{"credit_card_5531920": {…}}``)."""
    found: list[tuple[int, str]] = []
    doc = _analyzed(item, plan, None)
    offset = 0
    for s in doc.segments:
        offset = item.text.find(s.original, offset) if s.original else offset
        for sp in s.protected:
            if sp.rule.startswith(("anchor", "entity", "term")):
                found.append((max(offset, 0) + sp.start, sp.text))
    for rx in (*_id_regex(), _VALUE_RE):
        for m in rx.finditer(item.text):
            if m.lastgroup not in ("status", "qty"):
                found.append((m.start(), m.group(0)))
    out: list[tuple[str, bool]] = []
    # at one position the longer match first: "EUR 1,450" holds the "EUR" an anchor (airport_code) protects
    for pos, v in sorted(found, key=lambda p: (p[0], -len(p[1]), p[1])):
        raw = v
        v = v.strip()
        if not v or any(v == o or v in o for o, _ in out):
            continue
        end = item.text.find(raw, pos)
        end = (end if end >= 0 else pos) + len(raw)
        if _JSON_KEY_AFTER_RE.match(item.text, end) and not any(c.isdigit() for c in v):
            continue  # "caterer_id": names the value after it ("credit_card_5531920": is an id used as a key)
        out.append((v, bool(_DENIED_RE.search(item.text[max(0, pos - 40):pos]))))
    return out


def _head(text: str, counter: TokenCounter, cap: int) -> str:
    """The longest word prefix of *text* within *cap* tokens."""
    words = text.split()
    lo, hi = 0, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(" ".join(words[:mid])) <= cap:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:max(lo, 1)])
