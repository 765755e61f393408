"""History layering: recent turns verbatim, the turns before them condensed, older ones as bullets.

Turns are the history items in input order (one chat message = one turn). Counting back from
the last turn:

- turns 1..``verbatim`` (default 3) are delivered as written;
- turns up to ``condensed`` (default 10) are condensed one by one with the core's sentence
  ranking (segment → protect → rank): the best sentences (JSON members for tool output) are
  kept in their order, up to ``turn_cap`` tokens per turn, protected spans first;
- older turns become one bullet each: the first words of the turn plus the identifiers,
  amounts and dates it holds, up to ``bullet_cap`` tokens.

Every line keeps its speaker (``user:``, ``assistant:``, ``tool:get_user_details:``) and the
record lists, per turn, how it was delivered and its tokens before and after.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from odcf.document import Document, Segment, Source
from odcf.handoff.conflicts import _VALUE_RE, _id_regex
from odcf.handoff.items import HandoffItem
from odcf.plan.model import Plan
from odcf.render import join_segments
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

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item.id, "turn": self.turn, "speaker": speaker_of(self.item), "mode": self.mode,
                "tokens_in": self.tokens_in, "tokens_out": self.tokens_out}


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
    for k, it in enumerate(items):
        age = n - k
        body = it.text if it.text.strip() else "(empty)"
        t_in = counter.count(body)
        who = speaker_of(it)
        if age <= verbatim:
            text, mode = f"{who}: {body}", "verbatim"
        elif age <= condensed:
            short = condense(it, plan, counter, cap=turn_cap, query=query)
            mode = "verbatim" if short == body else "condensed"
            text = f"{who}: {short}"
        else:
            later = "\n".join(x.text for x in items[k + 1:])
            text, mode = f"- turn {k + 1} {who}: {gist(it, plan, counter, cap=bullet_cap, later=later)}", "bullet"
        turn = LayeredTurn(item=it, turn=k + 1, age=age, mode=mode, text=text, tokens_in=t_in,
                           tokens_out=counter.count(text))
        (bullets if mode == "bullet" else recent).append(turn)
    return LayeredHistory(recent=tuple(recent), bullets=tuple(bullets))


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


def gist(item: HandoffItem, plan: Plan, counter: TokenCounter, *, cap: int, later: str = "") -> str:
    """One bullet's content: the first words of the turn plus the protected values it holds.

    Values that later turns repeat (*later*) are listed after the ones only this turn holds, so a
    bullet spends its room on what would otherwise be lost.
    """
    if not item.text.strip():
        return "(empty)"
    spans = key_values(item, plan)
    head_text = " ".join(item.text.split())
    if item.kind in ("json", "tool") and head_text[:1] in ("{", "["):
        head = f"JSON result, {counter.count(item.text)} tokens"
    else:
        head = _head(head_text, counter, max(6, cap // 2))
        if head != head_text:
            head += " …"
    out = head
    values = sorted((v for v in spans if v not in head), key=lambda v: v in later)
    if values:
        shown: list[str] = []
        for v in values:
            trial = f"{head} (values: {', '.join(shown + [v])})"
            if counter.count(trial) > cap and shown:
                break
            shown.append(v)
        extra = len(values) - len(shown)
        out = f"{head} (values: {', '.join(shown)}{f', +{extra} more' if extra else ''})"
    return out


def key_values(item: HandoffItem, plan: Plan) -> list[str]:
    """Identifiers, amounts and dates in the turn, in order of appearance, without repeats:
    the plan's protected anchors and terms, plus the built-in id/amount/date patterns."""
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
    out: list[str] = []
    for _, v in sorted(found):
        v = v.strip()
        if v and v not in out and not any(v in o for o in out):
            out.append(v)
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
