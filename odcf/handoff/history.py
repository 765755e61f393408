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
the cut drafts get, each clause tiered by :func:`user_constraint_strength`, so a clause that compress counts as a
user's constraint is one too). So is a user's turn that changes a value of their earlier turn (:func:`user_changes`,
"Actually, budget is now EUR 5,200" after "the total budget is under EUR 4,500"), the stale value never handed over
as the only one. A bullet's values are the turn's values, not the key names of its JSON (an id
used as a key, ``"credit_card_5531920": {…}``, is a value), and
a value the turn denies or replaces ("€40,000 not €50,000", "down from €50,000") is listed last as
"not €50,000".

A user's constraint turn goes only with the agent's later turns that tell what came of what it asks
(:func:`request_outcomes`: done, refused, failed), so a handled request is not handed over as open, and a
tool result only with a later tool result that replaces one of its values (:func:`tool_supersessions`).

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
from odcf.handoff.reasoning import ConstraintCut, constraint_strength, cut_keeping_constraints
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
    corrected_by: tuple[int, ...] = ()        # later turns that change a value of this one (the user's; a tool's)
    resolved_by: tuple[int, ...] = ()         # later agent or tool turns that tell what came of this request

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
        if self.resolved_by:
            out["resolved_by_turns"] = list(self.resolved_by)
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
    conflicts: Sequence[Any] = (),
) -> LayeredHistory:
    """Layer the history *items* (already in turn order) as described in the module docstring.
    *conflicts*: the handoff's (:func:`~odcf.handoff.conflicts.find_conflicts`), for the tool results whose
    values a later tool result replaces (:func:`tool_supersessions`)."""
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
    for k, fixes in tool_supersessions(items, conflicts).items():
        changed[k] = sorted({*changed.get(k, ()), *fixes})
    # a user's change of a value they gave before ("Actually, budget is now EUR 5,200") is what they ask now:
    # a constraint as the turn it changes is, or the stale value went out alone as current
    constraints = {k for k, it in enumerate(items)
                   if speaker_of(it) == "user" and (user_constraint(it.text) or k in changes)}
    resolved, told = request_outcomes(items, constraints, plan)
    for k, it in enumerate(items):
        age = n - k
        body = it.text if it.text.strip() else "(empty)"
        t_in = counter.count(body)
        who = speaker_of(it)
        constraint = k in constraints
        cut: ConstraintCut | None = None
        if age <= verbatim:
            text, mode = f"{who}: {body}", "verbatim"
        elif age <= condensed:
            if constraint or k in told:
                cut = constraint_cut(it, counter, cap=turn_cap) if constraint else outcome_cut(it, told[k], counter,
                                                                                             cap=turn_cap)
                short = cut.text if cut.cut else body
            else:
                short = condense(it, plan, counter, cap=turn_cap, query=query)
            mode = "verbatim" if short == body else "condensed"
            text = f"{who}: {short}"
        else:
            later = "\n".join(x.text for x in items[k + 1:])
            if constraint:  # a user's constraint holds what a condensed turn may, its constraints first
                cut = constraint_cut(it, counter, cap=turn_cap)
            elif k in told:  # so does what came of it, its outcome sentences first
                cut = outcome_cut(it, told[k], counter, cap=turn_cap)
            body_text = gist(it, plan, counter, cap=turn_cap if cut is not None else bullet_cap, later=later, head=cut)
            text, mode = f"- turn {k + 1} {who}: {body_text}", "bullet"
        turn = LayeredTurn(item=it, turn=k + 1, age=age, mode=mode, text=text, tokens_in=t_in,
                           tokens_out=counter.count(text), constraint=constraint,
                           clauses=(cut.kept, cut.total) if cut is not None and cut.cut and constraint else None,
                           corrects=tuple(j + 1 for j in changes.get(k, ())),
                           corrected_by=tuple(j + 1 for j in changed.get(k, ())),
                           resolved_by=tuple(j + 1 for j in resolved.get(k, ())))
        (bullets if mode == "bullet" else recent).append(turn)
    return LayeredHistory(recent=tuple(recent), bullets=tuple(bullets))


#: A user's saying they do not have an identifier at hand or do not know or remember something ("However, I
#: don't have the reservation ID handy.", "I don't remember the order number"): its "don't" forbids nothing
#: (QA: tau-bench #33's turn 3 was kept whole as a constraint for it at every budget).
_NOT_AT_HAND_RE = re.compile(
    r"\b(?:I|we)\s+(?:do\s+not|don['’]t|did\s+not|didn['’]t)\s+(?:(?:know|remember|recall)\b"
    r"|have\b[^.;!?]{0,60}?\b(?:handy|on me|with me|at hand|on hand|right now|at the moment)\b)", re.IGNORECASE)


def user_constraint_strength(sentence: str) -> int:
    """How strongly a user's sentence (or clause) constrains the next agent: its tier
    (:func:`~odcf.handoff.reasoning.constraint_strength`), a statement of not having or knowing something at
    hand left out (:data:`_NOT_AT_HAND_RE`), and at least 2 (a limit) for a sentence that compress counts as a
    user's constraint (:func:`odcf.stages.rank.states_user_constraint`: "The total budget is under EUR 4,500."),
    so that a constraint turn cut to its room keeps that sentence first, as the budget does.

    >>> [user_constraint_strength(s) for s in ("However, I don't have the reservation ID handy.",
    ...  "I don't have my card handy, so please don't call me.", "The total budget is under EUR 4,500.")]
    [0, 3, 2]
    """
    from odcf.stages.rank import states_user_constraint

    tier = constraint_strength(_NOT_AT_HAND_RE.sub(" ", sentence))
    return tier if tier >= 2 or not states_user_constraint(sentence) else 2


def user_constraint(text: str) -> bool:
    """Whether a user's turn states a constraint: a prohibition, obligation, limit or negation
    (:func:`~odcf.handoff.reasoning.is_constraint`), or a sentence that compress counts as a user's constraint
    (:func:`odcf.stages.rank.states_user_constraint`, the same test: "The total budget is under EUR 4,500",
    "no hostels", "direct flights only", "我对青霉素过敏", "请勿致电给我", not a question), so that handoff keeps
    what compress keeps. QA: "请勿致电给我。", which compress raised, was a plain turn here and trimmed as old.

    A sentence is tested by :func:`user_constraint_strength`, so "I don't have the reservation ID handy." is none.

    >>> user_constraint("The total budget is under EUR 4,500 for flights and hotel together."), user_constraint("Noted, option 7.")
    (True, False)
    """
    return any(user_constraint_strength(line[a:b]) > 0 for line in text.splitlines() for a, b in split_sentences(line))


#: An agent's sentence telling what came of a request: done ("has been successfully canceled", "was refunded"),
#: refused ("it cannot be canceled for a refund", "is not eligible"), or failed ("could not be processed").
_OUTCOME_RE = re.compile(
    r"\b(?:(?:has|have|had)\s+(?:now\s+|already\s+)?been|was|were|is\s+now|are\s+now|successfully)\s+"
    r"(?:\w+\s+){0,2}?(?:cancell?ed|refunded|processed|completed|updated|upgraded|downgraded|modified|changed|booked|"
    r"issued|returned|exchanged|approved|rejected|declined|denied|submitted|applied|removed|added)\b"
    r"|\b(?:cannot|can\s?not|can['’]t|could\s+not|couldn['’]t|unable\s+to|not\s+(?:eligible|allowed|permitted|possible))\b"
    r"|\b(?:fail(?:s|ed)?|refused)\b", re.IGNORECASE)
#: A tool's result that reports a failure: "Error: payment method not found".
_TOOL_ERROR_RE = re.compile(r"\s*(?:Error|Exception|Failed)\b", re.IGNORECASE)
#: A code a request names without a digit in it (a reservation "IFOYYZ"), besides the ids of
#: :func:`~odcf.handoff.conflicts._id_regex`: capitals and digits, 5 to 10 of them.
_CODE_RE = re.compile(r"\b(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,10}\b")


def _request_ids(text: str, plan: Plan | None) -> set[str]:
    from odcf.handoff.conflicts import id_anchors

    patterns = [*_id_regex(id_anchors(plan) if plan is not None else ()), _CODE_RE]
    return {m.group(0) for rx in patterns for m in rx.finditer(text)}


def request_outcomes(items: Sequence[HandoffItem], requests: set[int] | frozenset[int],
                     plan: Plan | None = None) -> tuple[dict[int, list[int]], dict[int, list[str]]]:
    """What came of the user's *requests* (indexes of their turns in *items*): for each identifier a request
    names ("cancel the reservations IFOYYZ and NQNU5R"), the last later turn of the agent that tells, on a
    line naming it, an outcome (:data:`_OUTCOME_RE`: "NQNU5R has been successfully canceled", "IFOYYZ …
    cannot be canceled for a refund"), or the agent's call naming it with the tool's error right after it
    ("Error: payment method not found"). Returns ``{request: [its outcome turns]}`` and, for each outcome
    turn, its sentences that tell it (the line's sentence naming the id and its outcome sentences), which
    its cut keeps first (:func:`outcome_cut`). A request handed over without these would read as still open.

    >>> from odcf.handoff.items import HandoffItem as H
    >>> turns = [H(id="u", layer="history", speaker="user", text="I won't need ABC123 after all, please cancel it."),
    ...          H(id="a", layer="history", speaker="assistant", text="Booking ABC123 has been cancelled.")]
    >>> request_outcomes(turns, {0})
    ({0: [1]}, {1: ['Booking ABC123 has been cancelled.']})
    """
    resolved: dict[int, list[int]] = {}
    told: dict[int, list[str]] = {}
    for k in sorted(requests):
        ids = _request_ids(items[k].text, plan)
        last: dict[str, tuple[list[int], list[str], int]] = {}  # id -> (turns, sentences, turn of the sentences)
        for j in range(k + 1, len(items)):
            it = items[j]
            who = speaker_of(it)
            if who == "user":
                continue
            if who.startswith("tool") and _TOOL_ERROR_RE.match(it.text) and j > k + 1 \
                    and speaker_of(items[j - 1]) == "assistant":
                for v in ids & _request_ids(items[j - 1].text, plan):  # the call that failed, then its error
                    last[v] = ([j - 1, j], [" ".join(it.text.split())], j)
                continue
            if who.startswith("tool") and it.text.lstrip()[:1] in "{[":
                continue  # a tool's JSON: its status is read in the agent's words that report it
            for line in it.text.splitlines():
                named = {v for v in ids if re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", line)}
                if not named or not _OUTCOME_RE.search(line):
                    continue
                sentences = [" ".join(line[a:b].split()) for a, b in split_sentences(line)]
                key = [x for x in sentences if _OUTCOME_RE.search(x) or any(v in x for v in named)]
                for v in named:
                    turns, said, at = last.get(v, ([], [], -1))
                    last[v] = ([j], (said if at == j else []) + key, j)
        out = sorted({j for turns, _, _ in last.values() for j in turns})
        if out:
            resolved[k] = out
        for turns, said, at in last.values():
            told.setdefault(at, [])
            told[at] += [x for x in said if x not in told[at]]
    return resolved, told


def outcome_cut(item: HandoffItem, sentences: Sequence[str], counter: TokenCounter, *, cap: int) -> ConstraintCut:
    """An agent's turn that tells what came of a request, within *cap* tokens: its *sentences* that tell it
    first (:func:`request_outcomes`), then its other sentences from the start, the cuts marked " … "."""
    text = " ".join(item.text.split())
    key = set(sentences)
    return cut_keeping_constraints(text, cap=cap, counter=counter, spans=split_sentences(text),
                                   strength=lambda piece: 3 if " ".join(piece.split()) in key else 0)


def tool_supersessions(items: Sequence[HandoffItem], conflicts: Sequence[Any]) -> dict[int, list[int]]:
    """The tool results of *items* a value of which a later tool result replaces, by the handoff's
    *conflicts* (one entity and attribute, different values: "M20IZO / HAT268 on 2024-05-22 price: 136"
    in ``get_reservation_details`` and 430 in the later ``update_reservation_flights``):
    {index of the stale result: [index of the newest result that holds another value]}. Only tool results
    against tool results; what an agent or the user said is left to the conflicts' notes."""
    pos = {it.id: k for k, it in enumerate(items) if speaker_of(it).startswith("tool")}
    out: dict[int, set[int]] = {}
    for c in conflicts:
        at = [(k, v.value) for v in c.values for i in v.items if (k := pos.get(i)) is not None]
        if len({value for _, value in at}) < 2:
            continue
        newest, value = max(at)
        for k, old in at:
            if old != value and k < newest:
                out.setdefault(k, set()).add(newest)
    return {k: sorted(v) for k, v in sorted(out.items())}


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
    return cut_keeping_constraints(" ".join(item.text.split()), cap=cap, counter=counter,
                                   strength=user_constraint_strength)


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
