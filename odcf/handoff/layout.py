"""Lay out a handoff for the core pipeline: which sources, in which reading order, and how much
room the history layers get.

Reading order: instruction, state (and its abbreviation legend), facts (with mandatory history
turns), drafts, then history from the oldest bullets to the newest turn. Each source tells the
:class:`~odcf.handoff.stage.HandoffPriority` stage how to rank its segments (``Source.meta``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from odcf.document import Source
from odcf.handoff.history import BULLET_CAP, LayeredHistory, LayeredTurn, layer_history, speaker_of
from odcf.handoff.items import HandoffItem
from odcf.handoff.mandatory import MandatoryDecision
from odcf.handoff.reasoning import ReasoningCut
from odcf.handoff.stage import STALE_BELOW
from odcf.handoff.state import CompactState
from odcf.plan.model import Plan
from odcf.tokens import TokenCounter

#: Rough cost of one source header in the assembled text, for estimates before the core runs.
HEADER_TOKENS = 14
#: Per-turn caps of condensed turns and bullets are the defaults times the largest of these
#: factors whose layered history still fits the room the budget leaves.
HISTORY_CAP_SCALES = (1, 2, 4, 8)
EARLIER_ID = "history-earlier"


def fit_history(
    history: Sequence[HandoffItem],
    others: Sequence[Source],
    *,
    plan: Plan,
    counter: TokenCounter,
    budget: int,
    verbatim: int,
    condensed: int,
    turn_cap: int,
    query: str | None,
    conflicts: Sequence[Any] = (),
) -> tuple[LayeredHistory, tuple[int, int]]:
    """Layer *history* by age with the largest caps whose result fits the room *others* leave.

    The layering is fixed by age; how much a condensed turn or a bullet may hold grows with the
    room, so a roomy budget is not spent on cuts. Returns the layers and ``(turn_cap, bullet_cap)``.
    """
    room = budget - sum(counter.count(s.text) + HEADER_TOKENS for s in others)
    layered: LayeredHistory | None = None
    caps = (turn_cap, BULLET_CAP)
    for scale in HISTORY_CAP_SCALES:
        trial_caps = (turn_cap * scale, BULLET_CAP * scale)
        trial = layer_history(history, plan, counter, verbatim=verbatim, condensed=condensed,
                              turn_cap=trial_caps[0], bullet_cap=trial_caps[1], query=query, conflicts=conflicts)
        over = history_cost(trial) > room
        if layered is not None and (over or trial.turns == layered.turns):
            break
        layered, caps = trial, trial_caps
        if over or len(history) <= verbatim:
            break
    assert layered is not None  # the loop runs at least once
    return layered, caps


def history_cost(layered: LayeredHistory) -> int:
    """Estimated tokens of the layered history in the assembled text."""
    return sum(t.tokens_out + HEADER_TOKENS for t in layered.recent) + sum(t.tokens_out for t in layered.bullets)


def build_sources(items: Sequence[HandoffItem], decision: MandatoryDecision, states: Mapping[str, CompactState],
                  cuts: Mapping[str, ReasoningCut], layered: LayeredHistory) -> list[Source]:
    """Core sources in reading order (see the module docstring): every instruction before every state, so
    that the blocks' numbers ``[source i/n]`` run in the order they are read (QA: a system message given after
    the state was read before it as "[source 3/20]", after "[source 1/20]" and before "[source 2/20]")."""
    first: list[Source] = []
    state_sources: list[Source] = []
    facts: list[Source] = []
    drafts: list[Source] = []
    for it in items:
        mand = decision.is_mandatory(it.id)
        meta = {"handoff_why": list(decision.reasons.get(it.id, ()))} if mand else {}
        if it.layer == "instruction":
            first.append(it.to_source(mandatory=mand, meta=meta))
        elif it.layer == "state":
            st = states[it.id]
            state_sources.append(it.to_source(text=st.text, kind="json", mandatory=mand, meta=meta))
            if st.legend:  # required exactly when its state is: a legend forced in beside a dropped state
                state_sources.append(Source(id=f"{it.id}.legend", text=st.legend_line(), kind="text", layer="state",
                                    origin="odcf:abbreviations", mandatory=mand))
        elif it.layer == "reasoning":
            cut = cuts.get(it.id)
            meta.update({"handoff_order": "position", "handoff_index_last": bool(cut and cut.truncated)})
            drafts.append(it.to_source(text=cut.text if cut else it.text, kind="text", mandatory=mand, meta=meta))
        elif it.layer == "history":
            if mand:  # mandatory turns are kept whole wherever they are in the history
                who = it.speaker or it.origin or "unknown"
                facts.append(it.to_source(text=f"{who}: {it.text}", kind="chat", mandatory=True, meta=meta))
        else:
            facts.append(it.to_source(mandatory=mand, meta=meta))
    history: list[Source] = []
    if layered.bullets:
        first_t, last_t = layered.bullets[0].turn, layered.bullets[-1].turn
        # a user's constraint ranks with the newest turn however old it is (see HandoffPriority)
        keep = [k for k, t in enumerate(layered.bullets) if t.constraint]
        # ... but one whose value a later turn changed just below the others (HandoffPriority)
        stale = [k for k, t in enumerate(layered.bullets) if t.constraint and t.corrected_by]
        history.append(Source(id=EARLIER_ID, text=layered.bullet_text(), kind="text", layer="history",
                              origin=f"odcf:history turns {first_t}–{last_t} as bullets",
                              # its source line names the turns, the record what became of each: no
                              # […n items] for the older ones left out (odcf.stages.segment.items)
                              meta={"handoff_order": "ascending", "handoff_constraint_bullets": keep,
                                    "handoff_stale_bullets": stale,
                                    "handoff_bullet_turns": [t.turn for t in layered.bullets],
                                    "handoff_corrected_by": _corrected_by(layered.bullets),
                                    "handoff_resolved_by": _resolved_by(layered.bullets),
                                    "list_marks": False}))
    n = len(layered.recent)
    for k, t in enumerate(layered.recent):
        score = round(0.3 + 0.7 * (k + 1) / n, 6) if n else 1.0
        meta = {"handoff_score": score, "handoff_mode": t.mode, "handoff_turn": t.turn,
                "handoff_speaker": f"{speaker_of(t.item)}:",
                "handoff_corrected_by": _corrected_by((t,)), "handoff_resolved_by": _resolved_by((t,))}
        if t.constraint:
            # a user's constraint ("do not …", "make sure … are not alarmed") ranks with the newest
            # turn and is kept without the turns after it (which link to it as before); one whose value a
            # later turn changed, just below the other constraints (see HandoffPriority)
            meta.update(handoff_score=1.0 - (STALE_BELOW if t.corrected_by else 0.0), handoff_constraint=True)
        history.append(t.item.to_source(text=t.text, kind="chat", meta=meta))
    return first + state_sources + facts + drafts + history


def _corrected_by(turns: Sequence[LayeredTurn]) -> list[list[int]]:
    """``[turn, [its user's later turns that change a value of it]]`` for each of *turns* that has some:
    :class:`~odcf.handoff.stage.HandoffPriority` delivers such a turn only with them."""
    return [[t.turn, list(t.corrected_by)] for t in turns if t.corrected_by]


def _resolved_by(turns: Sequence[LayeredTurn]) -> list[list[int]]:
    """``[turn, [the agent's or tool's later turns that tell what came of it]]`` for each of *turns* (a user's
    request) that has some: :class:`~odcf.handoff.stage.HandoffPriority` delivers such a turn only with them."""
    return [[t.turn, list(t.resolved_by)] for t in turns if t.resolved_by]
