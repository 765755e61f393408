"""Prepare one handoff: what a role must see, never what it must not, within its budget.

>>> from odcf.plan.compiler import compile_plan                         # doctest: +SKIP
>>> r = handoff(plan, role="executor", items=[{"role": "user", "content": "Two seats at 7pm."},
...             {"category": "user_constraints", "text": "party size: 2", "origin": "sgd:slots"}])  # doctest: +SKIP
>>> print(r.text); r.record["not_searched"]                             # doctest: +SKIP

The handoff-specific work happens here and in the modules beside it; compressing and budgeting
the material is the core pipeline's (:class:`odcf.compressor.Compressor`), with one extra stage
(:class:`~odcf.handoff.stage.HandoffPriority`) that ranks history by recency. In order:

1. parse the items (:mod:`~odcf.handoff.items`); the role's contract comes from the plan
   (presets overridden by the ontology), and so do its required categories;
2. merge near-duplicate facts, keeping every source (:mod:`~odcf.handoff.dedup`); cap derived
   claims by their evidence (:mod:`~odcf.handoff.trust`); find contradicting facts
   (:mod:`~odcf.handoff.conflicts`);
3. decide mandatory material and the status of each required category (:mod:`~odcf.handoff.mandatory`);
   in strict mode a required category upstream never searched is an error here;
4. shape the layers: state as compact validated JSON (:mod:`~odcf.handoff.state`), reasoning
   drafts cut to their floor share (25% of the budget) with an evidence index when the role allows
   them at all (:mod:`~odcf.handoff.reasoning`), history layered by age (:mod:`~odcf.handoff.history`);
5. lay the sources out in reading order, with history caps fitted to the room
   (:mod:`~odcf.handoff.layout`);
6. run the core pipeline on them with the budget left after the handoff notes, then append the
   notes (:mod:`~odcf.handoff.notes`; details their share left out get the room the material left unused); when what the role must receive does not fit beside the
   notes, the notes give up their details (what is missing is always written) and the core runs
   again in the room that frees; messages and drop reasons quote the whole budget and say what the
   notes take, and being over it (``strict``: an error) is judged on the final text; when drafts were cut and the run left room unused (or the
   budget had to cut a draft itself), the drafts are re-cut to fit and the core run again
   (at most ``DRAFT_PASSES`` more runs, each taken only when it loses nothing the run before had);
   a user's constraint turn the run left out makes the drafts give way to it the same way;
7. make the record tell the handoff's own cuts: ``sources`` entries of cut drafts, condensed turns
   and bullets are ``compressed`` with ``tokens_in`` of the items as given, and ``handoff.history``
   gives each turn's mode after the budget.
"""
from __future__ import annotations

import json
import logging
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from odcf.document import Document, query_problem, sha256
from odcf.handoff.conflicts import find_conflicts
from odcf.handoff.dedup import merge_near_duplicates
from odcf.handoff.errors import HandoffError
from odcf.handoff.history import bullet_groups, layer_history, user_constraint_strength
from odcf.handoff.items import HandoffItem, ItemBatch, load_items, parse_items
from odcf.handoff.layout import EARLIER_ID, HEADER_TOKENS, build_sources, fit_history
from odcf.handoff.mandatory import decide_mandatory
from odcf.handoff.notes import notes_cap, render_notes
from odcf.handoff.reasoning import (
    REASONING_SHARE,
    ReasoningCut,
    truncate_reasoning,
)
from odcf.handoff.stage import HandoffPriority
from odcf.handoff.state import CompactState, compact_state
from odcf.handoff.trust import cap_confidence
from odcf.plan.model import Plan, RoleContract
from odcf.tokens import check_tokenizer, get_counter, short_unit, unit_words

logger = logging.getLogger(__name__)

#: At most this many extra core runs give drafts the room a run left unused, each taken only when
#: it stays within the budget and drops nothing the run before delivered outside the drafts.
DRAFT_PASSES = 4
#: Unused room below this many tokens is not worth another run.
MIN_SLACK = 8


@dataclass(frozen=True)
class HandoffResult:
    """What :func:`handoff` returns: the text for the next agent, its record, and token counts."""

    text: str
    record: Mapping[str, Any]
    tokens: int
    tokens_in: int
    budget: int
    document: Document | None = field(default=None, repr=False, compare=False)

    @property
    def tokens_out(self) -> int:
        return self.tokens

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "tokens_in": self.tokens_in, "tokens_out": self.tokens,
                "budget": self.budget, "record": dict(self.record)}


def _compressor(target: Any, stages: Mapping[str, Any] | None) -> Any:
    from odcf.compressor import Compressor

    if isinstance(target, Compressor):
        if stages:
            raise TypeError("stages= applies when handoff() builds the compressor; this one is already built")
        return target
    if isinstance(target, Plan):
        return Compressor(target, stages=stages)
    if isinstance(target, (str, os.PathLike)) or target is None:
        return Compressor.from_ontology(target, stages=stages)
    raise TypeError(f"handoff() needs a Plan, a Compressor or an ontology name/path, got {type(target).__name__}")


def _check_arguments(*, query: Any, tokenizer: Any, strict: Any, searched: Any,
                     history: tuple[Any, Any, Any], timings: Any = True) -> tuple[str, ...]:
    """Refuse argument values of the wrong type before any work, each naming the argument;
    returns *searched* as a tuple (a string would otherwise read as one category per letter)."""
    problem = query_problem(query)
    if problem:
        raise HandoffError(problem)
    check_tokenizer(tokenizer)
    for name, flag in (("strict", strict), ("timings", timings)):
        if not isinstance(flag, bool):  # "no" would read as true
            raise HandoffError(f"{name} must be True or False, got {flag!r}")
    if isinstance(searched, (str, bytes)) or not isinstance(searched, Iterable):
        raise HandoffError(f"searched must be a list of category names, got {type(searched).__name__} {searched!r}")
    searched = tuple(searched)
    if not all(isinstance(c, str) and c for c in searched):
        raise HandoffError(f"searched must be a list of category names, got {list(searched)!r}")
    for name, value, least in zip(("verbatim_turns", "condensed_turns", "turn_cap"), history, (0, 0, 1)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
            raise HandoffError(f"{name} must be an integer of at least {least}, got {value!r}")
    if history[1] < history[0]:
        raise HandoffError(f"condensed_turns ({history[1]}) must be at least verbatim_turns ({history[0]})")
    return searched


def handoff(
    target: Any,
    *,
    role: str,
    items: Any,
    budget: int | None = None,
    strict: bool = False,
    searched: Sequence[str] = (),
    query: str | None = None,
    tokenizer: str | None = None,
    verbatim_turns: int = 3,
    condensed_turns: int = 10,
    turn_cap: int = 60,
    stages: Mapping[str, Any] | None = None,
    timings: bool = True,
) -> HandoffResult:
    """Prepare the handoff to *role* from *items* (a list, a handoff object, an :class:`ItemBatch`
    or a path to a JSON file; see :mod:`odcf.handoff.items`).

    *target*: a :class:`~odcf.plan.model.Plan`, a :class:`~odcf.compressor.Compressor`, or an
    ontology name/path (for the last two, *stages* switches pipeline stages as for ``Compressor``).
    *budget* overrides the role's budget. *strict*: missing required material (a required
    category never searched, evidence of a scope claim absent, a mandatory item the role cannot
    receive) raises :class:`HandoffError` naming it, and a final text over the budget (required
    material that does not fit beside what the notes must say) raises :class:`~odcf.errors.BudgetError`. *verbatim_turns*, *condensed_turns* and *turn_cap*
    shape the history layers (:mod:`odcf.handoff.history`). ``timings=False`` leaves the stages'
    wall-clock ``ms`` out of the record, so that the same handoff gives a byte-identical record.
    """
    searched = _check_arguments(query=query, tokenizer=tokenizer, strict=strict, searched=searched,
                                history=(verbatim_turns, condensed_turns, turn_cap), timings=timings)
    comp = _compressor(target, stages)
    plan: Plan = comp.plan
    contract = plan.role(role)
    own_budget = budget is None  # the role's: given in its unit, which may not be the call's
    budget = contract.budget if budget is None else budget
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget <= 0:
        raise HandoffError(f"budget must be a positive integer, got {budget!r}")
    budget = int(budget)  # numpy integers too
    if isinstance(items, (str, os.PathLike)):
        batch = load_items(items)
        batch = ItemBatch(batch.items, batch.searched | frozenset(searched))
    else:
        batch = parse_items(items, searched=searched)
    unit = tokenizer or comp.tokenizer or contract.unit or plan.tokenizer
    counter = get_counter(unit)
    query = query if query is not None else plan.task_goal
    hist = (verbatim_turns, condensed_turns, turn_cap)
    prep = _prepare(batch, plan, contract, budget, counter, query, strict, history=hist)
    run = _run_core(comp, prep, contract, counter, budget, query, role, unit, strict, timings)
    # the drafts' share is then fitted to what the budget did: room a run left unused goes to the
    # drafts cut to their floor share; when the budget had to cut the drafts themselves, they are
    # cut again here to that size, keeping their constraint sentences (the budget stage would cut
    # by position). A pass is taken only when it stays within the budget (or gets closer to it),
    # drops no more of the drafts, and drops nothing outside the drafts that the run before
    # delivered — except history turns while the drafts stay within their floor share. A user's
    # constraint turn is not such a turn: when a run leaves one out, the drafts give way to it (they
    # are cut by what it needs, below their floor share if need be), and no pass may leave it out
    # again (QA: at 700 tokens the drafts' floor share took the room of "make sure owners of
    # unaffected bikes are not alarmed" once the budget's fill measured its room exactly).
    extra, slack = 0, budget - run.tokens
    for _ in range(DRAFT_PASSES):
        if run.draft_dropped:
            step = -max(run.draft_dropped, MIN_SLACK)
        elif run.constraints_left and prep.reasoning_cuts:
            step = -max(sum(run.constraints_left.values()), MIN_SLACK)
        elif slack >= MIN_SLACK and any(c.truncated for c in prep.reasoning_cuts.values()):
            step = slack
        else:
            break
        trial_prep = _prepare(batch, plan, contract, budget, counter, query, strict, history=hist,
                              draft_extra=extra + step)
        if trial_prep.reasoning_cuts == prep.reasoning_cuts:
            break
        trial = _run_core(comp, trial_prep, contract, counter, budget, query, role, unit, strict, timings)
        # within the drafts' floor share they may displace history turns (the share is theirs)
        lost = {sid for sid in trial.dropped_other - run.dropped_other
                if not (extra + step <= 0 and trial.layers.get(sid) == "history")}
        lost |= trial.constraints_left.keys() - run.constraints_left.keys()
        if run.constraints_left and not run.draft_dropped and step < 0 and \
                len(trial.constraints_left) >= len(run.constraints_left):
            break  # cutting the drafts did not bring the constraint turn in: the run before stands
        if trial.tokens <= max(budget, run.tokens) and not lost and trial.draft_dropped <= run.draft_dropped:
            extra += step
            prep, run = trial_prep, trial
            slack = budget - run.tokens
        elif step > 0:
            slack //= 2
        else:
            break
    shown, core_budget, out = run.shown, run.core_budget, run.out
    core_text = out.meta["text"]
    record = dict(out.meta["record"])
    _mark_handoff_cuts(record, prep, batch, counter)

    prep.missing += _dropped_mandatory(prep.kept, prep.decision, prep.allowed, record)
    dropped = [m for m in prep.missing if m["status"] == "dropped"]
    if strict and dropped:
        raise HandoffError(f"role {contract.name}: mandatory material was dropped: "
                           + "; ".join(m["why"] for m in dropped), missing=[_name(m) for m in prep.missing])
    # the notes again, now that what was delivered is known (conflicting items not delivered are
    # marked); within the room reserved for them, unless a missing mandatory item must be said
    delivered = frozenset(s["id"] for s in record.get("sources", []) if s.get("status") != "dropped")
    notes, _ = prep.notes(contract, counter, budget, delivered=delivered, details=None if dropped else shown,
                          max_tokens=run.notes_room)
    # the details the notes' share left out get the room the material left unused: "lack of room" is then
    # true (QA: "1 conflicts not shown for lack of room" with 289 of 600 tokens used, and the two delivered
    # facts that disagree were not flagged)
    if not dropped and notes:
        room = budget - counter.count(core_text) - (2 if core_text else 0)
        more, more_shown = prep.notes(contract, counter, budget, delivered=delivered, max_tokens=room)
        if more_shown > shown and counter.count(core_text + ("\n\n" + more if core_text else more)) <= budget:
            notes = more

    text = core_text + ("\n\n" + notes if notes and core_text else notes)
    tokens = counter.count(text)
    over_by = max(0, tokens - budget)
    tokens_in = sum(counter.count(it.text) for it in batch.items)
    record.update({
        "tokens_in": tokens_in,
        "budget": budget,
        "tokens_out": tokens,
        "ratio": round(tokens_in / tokens, 3) if tokens else None,
        "over_budget": over_by > 0,
        "over_by": over_by,
        "sha256": sha256(text),
        "missing": list(record.get("missing", [])) + prep.missing,
        "not_searched": [c.category for c in prep.decision.not_searched],
        "searched_none_found": [c.category for c in prep.decision.searched_none_found],
        "conflicts": [c.to_dict() for c in prep.conflicts],
        "mandatory": [{"item": k, "why": list(v)} for k, v in sorted(prep.decision.reasons.items())],
        "handoff": {
            **prep.record_entries(contract, counter, record=record, document=out),
            "notes_tokens": counter.count(notes) if notes else 0,
            "core_budget": core_budget,
            "core_tokens": counter.count(core_text),
            "core_tokens_in": out.meta["record"]["tokens_in"],
            "core_sha256": sha256(core_text),
            "items": len(batch.items),
            "searched": sorted(batch.searched),
        },
    })
    # (a module-level import would be circular)
    from odcf.compressor import role_unit_warning

    unit_warning = role_unit_warning(plan, role, unit) if own_budget else None
    if unit_warning and unit_warning not in record.get("warnings", ()):
        record["warnings"] = [unit_warning, *record.get("warnings", ())]
    if over_by:
        message = over_budget_message(record)
        if strict:
            from odcf.errors import BudgetError

            raise BudgetError(f"role {contract.name!r}: {message}", budget=budget, required=tokens)
        record["warnings"] = [*record.get("warnings", ()), message]
    return HandoffResult(text=text, record=record, tokens=tokens, tokens_in=record["tokens_in"],
                         budget=budget, document=out)


@dataclass
class _Prepared:
    """Steps 2-4 of a handoff: what was kept and flagged, what is mandatory or missing, and the
    sources laid out for the core pipeline."""

    kept: list[HandoffItem]
    duplicates: list[Any]
    confidence_flags: list[Any]
    conflicts: list[Any]
    decision: Any
    allowed: set[str]
    missing: list[dict[str, Any]]
    states: dict[str, Any]
    reasoning_cuts: dict[str, ReasoningCut]
    layered: Any
    caps: tuple[int, int]
    sources: list[Any]

    def notes(self, contract: RoleContract, counter: Any, budget: int, *, delivered: frozenset[str] | None = None,
              details: int | None = None, max_tokens: int | None = None) -> tuple[str, int]:
        """The notes block within *max_tokens* (their share of *budget* by default)."""
        return render_notes(contract, self.decision, self.missing, self.duplicates, self.confidence_flags,
                            self.conflicts, counter=counter,
                            max_tokens=notes_cap(budget) if max_tokens is None else max_tokens,
                            delivered=delivered, details=details)

    def record_entries(self, contract: RoleContract, counter: Any, *, record: Mapping[str, Any] | None = None,
                       document: Document | None = None) -> dict[str, Any]:
        """The record's ``handoff`` entries that the preparation decides; the history turns as the
        budget left them when the core's *record* and *document* are given."""
        return {
            "role": contract.name,
            "required_categories": list(contract.categories),
            "categories": [_category_entry(c, self.kept, self.allowed) for c in self.decision.categories],
            "caller_optional_overridden": list(self.decision.overridden),
            "duplicates": [g.to_dict() for g in self.duplicates],
            "confidence_flags": [dict(f) for f in self.confidence_flags],
            "history": _history_entries(self.layered, record, document, counter),
            "history_caps": {"condensed_turn": self.caps[0], "bullet": self.caps[1]},
            "state": _state_entries(self.states, counter),
            "reasoning": [c.to_dict() for c in self.reasoning_cuts.values()],
        }


def _prepare(batch: ItemBatch, plan: Plan, contract: RoleContract, budget: int, counter: Any, query: str | None,
             strict: bool, *, history: tuple[int, int, int], draft_extra: int = 0) -> _Prepared:
    """Provenance and trust (2), mandatory material (3) and layers (4); *history* is
    (verbatim turns, condensed turns, turn cap). Drafts get their floor share of the budget plus
    *draft_extra* tokens; history is fitted to the room the drafts at their floor share leave."""
    # 2. provenance and trust
    kept, duplicates = merge_near_duplicates(batch.items)
    kept, confidence_flags = cap_confidence(kept)
    conflicts = find_conflicts(kept, plan=plan)

    # 3. mandatory material
    decision = decide_mandatory(kept, required_categories=contract.categories, searched=batch.searched)
    allowed = _allowed_layers(contract)
    missing = _missing_before(kept, decision, contract, allowed)
    if strict and missing:
        raise HandoffError(f"role {contract.name}: missing required material: "
                           + "; ".join(m["why"] for m in missing), missing=[_name(m) for m in missing])

    # 4. layers
    states = {it.id: _state(it, plan) for it in kept if it.layer == "state"}
    floor_cuts = _reasoning(kept, contract, budget, counter, allowed)
    reasoning_cuts = _reasoning(kept, contract, budget, counter, allowed, extra=draft_extra) if draft_extra else floor_cuts
    hist_items = [it for it in kept if it.layer == "history" and not decision.is_mandatory(it.id)]
    # the room history gets is what the sources the role receives leave (a draft of a layer the
    # role may not see is dropped by the core pipeline and takes no room)
    others = [s for s in build_sources(kept, decision, states, floor_cuts, layer_history((), plan, counter))
              if s.layer in allowed]
    verbatim, condensed, turn_cap = history
    layered, caps = fit_history(hist_items, others, plan=plan, counter=counter, budget=budget,
                                verbatim=verbatim, condensed=condensed, turn_cap=turn_cap, query=query,
                                conflicts=conflicts)
    sources = build_sources(kept, decision, states, reasoning_cuts, layered)
    return _Prepared(list(kept), list(duplicates), list(confidence_flags), list(conflicts), decision, allowed,
                     missing, states, reasoning_cuts, layered, caps, sources)


def _missing_before(kept: Sequence[HandoffItem], decision: Any, contract: Any, allowed: set[str]) -> list[dict[str, Any]]:
    """What is missing before the pipeline runs: required categories never searched, evidence of a
    scope claim absent, and mandatory items in a layer the role may not receive."""
    missing: list[dict[str, Any]] = [
        {"category": c.category, "status": "not_searched",
         "why": f"required category {c.category} for role {contract.name} was never searched upstream"}
        for c in decision.not_searched
    ] + [dict(m, status="absent") for m in decision.missing_evidence]
    for it in kept:
        if decision.is_mandatory(it.id) and it.layer not in allowed:
            why = "forbidden" if it.layer in contract.forbidden else "not in the contract"
            missing.append({"item": it.id, "status": "not_allowed",
                            "why": f"item {it.id} is mandatory ({'; '.join(decision.reasons[it.id])}) "
                                   f"but layer {it.layer} is {why} for role {contract.name}"})
    return missing


def _dropped_mandatory(kept: Sequence[HandoffItem], decision: Any, allowed: set[str],
                       record: dict[str, Any]) -> list[dict[str, Any]]:
    """Mandatory items the role may receive but the core pipeline dropped (by its record)."""
    delivered = {s["id"]: s for s in record.get("sources", [])}
    out = []
    for it in kept:
        if decision.is_mandatory(it.id) and it.layer in allowed:
            entry = delivered.get(it.id)
            if entry is not None and entry.get("status") == "dropped":
                out.append({"item": it.id, "status": "dropped",
                            "why": f"item {it.id} is mandatory ({'; '.join(decision.reasons[it.id])}) "
                                   "but was dropped by the core pipeline"})
    return out


def _state_entries(states: Mapping[str, Any], counter: Any) -> list[dict[str, Any]]:
    return [{"item": k, "legend": dict(v.legend), "note": v.note, "not_abbreviated": dict(v.kept),
             "tokens_plain": counter.count(v.plain_text), "tokens": counter.count(v.text)}
            for k, v in states.items()]


def _category_entry(c: Any, items: Sequence[HandoffItem], allowed: set[str]) -> dict[str, Any]:
    """A required category's record entry; items the role may not see do not count as delivered."""
    entry = c.to_dict()
    layer = {it.id: it.layer for it in items}
    if c.status == "delivered" and not any(layer.get(i) in allowed for i in c.items):
        entry["status"] = "not_allowed"
    return entry


def _name(m: Mapping[str, Any]) -> str:
    return str(m.get("category") or m.get("item"))


def _allowed_layers(contract: RoleContract) -> set[str]:
    layers = {"instruction"} | set(contract.required) | set(contract.optional)
    return layers - set(contract.forbidden) | {"instruction"}


def _pipeline(comp: Any) -> Any:
    from odcf.pipeline import Pipeline

    stages = list(comp.pipeline.stages)
    at = next((k for k, s in enumerate(stages) if s.name == "budget"), len(stages))
    return Pipeline(stages[:at] + [HandoffPriority()] + stages[at:])


def _state(item: HandoffItem, plan: Plan) -> CompactState:
    if item.data is None:
        raise HandoffError(f"state item {item.id!r}: holds no JSON object")
    return compact_state(item.data, schema=plan.state_schema, abbreviations=plan.abbreviations,
                         where=f"state item {item.id!r}")


def _reasoning(items: Sequence[HandoffItem], contract: RoleContract, budget: int, counter: Any,
               allowed: set[str], *, extra: int = 0) -> dict[str, ReasoningCut]:
    """The drafts cut to ``REASONING_SHARE`` of the budget plus *extra* tokens (fewer when *extra*
    is negative), split so that a draft shorter than its equal part leaves the rest to the others
    (see :func:`_split_room`)."""
    drafts = [it for it in items if it.layer == "reasoning"]
    if not drafts or "reasoning" not in allowed:
        return {}
    sizes = [counter.count(it.text) for it in drafts]
    caps = _split_room(max(len(drafts), int(budget * REASONING_SHARE) + extra), sizes)
    ids = [it.id for it in items]
    return {it.id: truncate_reasoning(it, cap=max(cap, 1), counter=counter, known_ids=ids)
            for it, cap in zip(drafts, caps)}


def _split_room(room: int, sizes: Sequence[int]) -> list[int]:
    """*room* split over drafts of *sizes* tokens: equal parts, a draft that needs less than its
    part takes what it needs and the rest goes to the others (in input order for the remainder).

    >>> _split_room(100, [10, 80, 80]), _split_room(500, [10, 80])
    ([10, 45, 45], [10, 80])
    """
    caps = [0] * len(sizes)
    open_ = list(range(len(sizes)))
    while open_:
        part = room // len(open_)
        small = [k for k in open_ if sizes[k] <= part]
        if not small:
            for j, k in enumerate(open_):
                caps[k] = part + (1 if j < room - part * len(open_) else 0)
            break
        for k in small:
            caps[k] = sizes[k]
            room -= sizes[k]
        open_ = [k for k in open_ if k not in small]
    return caps


@dataclass
class _CoreRun:
    """One run of the core pipeline on prepared sources."""

    out: Document
    notes: str
    shown: int
    core_budget: int
    tokens: int
    dropped_other: frozenset[str]   # ids of dropped segments outside the reasoning layer
    draft_dropped: int              # tokens of draft segments the budget dropped
    layers: dict[str, str]          # the layer of each segment in dropped_other
    notes_room: int                 # the tokens the notes may take (their share, or what required material left)
    constraints_left: dict[str, int]  # the constraint sentences of users' turns the budget dropped -> tokens needed


def _run_core(comp: Any, prep: _Prepared, contract: RoleContract, counter: Any, budget: int, query: str | None,
              role: str, unit: Any, strict: bool, timings: bool = True) -> _CoreRun:
    """Step 6: the core pipeline within the budget left after the notes. When the material the
    role must receive needs more than that, the notes' room is released to it: they are rendered
    again within what the material leaves (their details give way; what is missing stays) and the
    core runs again."""
    notes_room = notes_cap(budget)
    notes, shown = prep.notes(contract, counter, budget, max_tokens=notes_room)
    out, core_budget = _core(comp, prep, notes, counter, budget, query, role, unit, strict, timings)
    need = counter.count(out.meta["text"])
    if notes and need > core_budget:
        room = max(0, budget - need - 2)
        fewer, fewer_shown = prep.notes(contract, counter, budget, max_tokens=room)
        if counter.count(fewer) < counter.count(notes):
            notes, shown, notes_room = fewer, fewer_shown, room
            out, core_budget = _core(comp, prep, notes, counter, budget, query, role, unit, strict, timings)
    core_text = out.meta["text"]
    # counted with the notes as they will be written (they mark conflicting items not delivered)
    delivered = frozenset(s["id"] for s in out.meta["record"].get("sources", []) if s.get("status") != "dropped")
    final_notes, _ = prep.notes(contract, counter, budget, delivered=delivered, details=shown, max_tokens=notes_room)
    tokens = counter.count(core_text + ("\n\n" + final_notes if final_notes and core_text else final_notes))
    layers = {src.id: src.layer for src in out.sources}
    dropped = frozenset(seg.id for seg in out.segments if seg.dropped and layers.get(seg.source_id) != "reasoning")
    seg_layers = {seg.id: layers.get(seg.source_id, "") for seg in out.segments if seg.id in dropped}
    draft_dropped = sum(counter.count(seg.original) for seg in out.segments
                        if seg.dropped and layers.get(seg.source_id) == "reasoning") if "reasoning" in prep.allowed else 0
    constraints_left = _constraints_left(out, counter)
    return _CoreRun(out, notes, shown, core_budget, tokens, dropped, draft_dropped, seg_layers, notes_room,
                    constraints_left)


def _constraints_left(out: Document, counter: Any) -> dict[str, int]:
    """The constraint sentences of users' constraint turns (all of a turn's segments when none reads as
    one) that the budget dropped, each with its tokens, and a source header's for the first of a turn
    delivered in nothing."""
    left: dict[str, int] = {}
    for src in out.sources:
        if not src.meta.get("handoff_constraint"):
            continue
        segs = [seg for seg in out.segments if seg.source_id == src.id]
        parts = [seg for seg in segs if user_constraint_strength(seg.original)] or segs
        header = 0 if any(not seg.dropped for seg in segs) else HEADER_TOKENS
        for seg in parts:
            if seg.dropped and any(r.startswith("budget:") for r in seg.reasons):
                left[seg.id] = counter.count(seg.original) + header
                header = 0
    return left


def _core(comp: Any, prep: _Prepared, notes: str, counter: Any, budget: int, query: str | None, role: str,
          unit: Any, strict: bool, timings: bool = True) -> tuple[Document, int]:
    """The core pipeline on the prepared sources, in the budget the *notes* leave (the budget stage
    quotes the whole budget and leaves being over it to :func:`handoff`, which measures the final
    text); the document and the core's budget."""
    notes_cost = counter.count(notes) + 2 if notes else 0
    core_budget = max(1, budget - notes_cost)
    doc = comp.document(prep.sources, query=query, role=role, budget=core_budget, tokenizer=unit, strict=strict,
                        timings=timings)
    meta = dict(doc.meta)
    meta.update({"conflicts": [c.to_dict() for c in prep.conflicts],
                 "not_searched": [c.category for c in prep.decision.not_searched],
                 "budget_reserve": {"tokens": budget - core_budget, "for": "the handoff notes"}})
    doc = doc.replace(meta=meta)
    return _pipeline(comp).run(doc, comp.plan), core_budget


def over_budget_message(record: Mapping[str, Any]) -> str:
    """What a handoff record over its budget says about it, in the whole budget's terms:
    ``over budget by 9 tokens: the handoff needs 159 o200k_base tokens of a budget of 150 (required
    material 137, the handoff notes 22)``. "required material" when the core kept nothing else
    (it was over the room the notes left it), "the material delivered" otherwise."""
    h = record.get("handoff") or {}
    core, notes, core_budget = h.get("core_tokens", 0), h.get("notes_tokens", 0), h.get("core_budget", 0)
    what = "required material" if core > core_budget else "the material delivered"
    parts = f"{what} {core}, " + (f"the handoff notes {notes}" if notes else "no handoff notes")
    return (f"over budget by {record.get('over_by')} {short_unit(record.get('unit'))}: the handoff needs {record.get('tokens_out')} "
            f"{unit_words(record.get('unit'))} of a budget of {record.get('budget')} ({parts})")


def _mark_handoff_cuts(record: dict[str, Any], prep: _Prepared, batch: ItemBatch, counter: Any) -> None:
    """Make ``record["sources"]`` tell what the handoff cut before the core ran: a truncated draft,
    a condensed turn and the history bullets are ``compressed`` (unless the budget dropped them),
    with ``tokens_in`` of the item as given and a ``handoff_cut`` saying how; every other source
    that stands for one item counts that item as given too (as ``handoff.history`` does)."""
    items = {it.id: it for it in batch.items}
    cuts = prep.reasoning_cuts
    turns = {t.item.id: t for t in prep.layered.recent}
    sources = []
    for entry in record.get("sources", []):
        entry = dict(entry)
        sid = entry.get("id")
        how = None
        if sid in cuts and cuts[sid].truncated:
            c = cuts[sid]
            how = (f"reasoning: {c.kept_sentences} of {c.total_sentences} sentences kept "
                   f"({c.tokens_in} -> {c.tokens_out} tokens) before the budget; see handoff.reasoning")
        elif sid in turns and turns[sid].mode == "condensed":
            t = turns[sid]
            how = f"history: turn {t.turn} condensed ({t.tokens_in} -> {t.tokens_out} tokens); see handoff.history"
        elif sid == EARLIER_ID and prep.layered.bullets:
            b = prep.layered.bullets
            how = (f"history: turns {b[0].turn}–{b[-1].turn} as one bullet each "
                   f"({sum(t.tokens_in for t in b)} -> {sum(t.tokens_out for t in b)} tokens); see handoff.history")
            entry["tokens_in"] = sum(t.tokens_in for t in b)
        if sid in items and not str(sid).endswith(".legend"):
            entry["tokens_in"] = counter.count(items[sid].text)
        if how is not None:
            entry["handoff_cut"] = how
            if entry.get("status") != "dropped":
                entry["status"] = "compressed"
        sources.append(entry)
    record["sources"] = sources


def _history_entries(layered: Any, record: Mapping[str, Any] | None, document: Document | None,
                     counter: Any) -> list[dict[str, Any]]:
    """``handoff.history``: each turn as layered (``layered_as``: verbatim, condensed, bullet) and
    as delivered: ``mode`` is ``dropped`` (``tokens_out`` 0, ``reason`` the budget's) when the budget left the turn out,
    ``trimmed`` when it kept only part of it, the layered mode otherwise; ``tokens_out`` is what
    was delivered (the layering alone without *record*)."""
    out = [t.to_dict() for t in layered.turns]
    if record is None or document is None:
        return out
    by_id = {s.get("id"): s for s in record.get("sources", [])}
    earlier = bullet_groups([s for s in document.segments if s.source_id == EARLIER_ID])
    for t, entry in zip(layered.turns, out):
        entry["layered_as"] = entry["mode"]
        if t.mode == "bullet":  # the bullets are the paragraphs of one source, in turn order
            k = layered.bullets.index(t)
            mine = earlier[k] if k < len(earlier) else []
        else:
            mine = list(document.segments_of(t.item.id))
        live = [s for s in mine if not s.dropped]
        if not mine:
            continue
        if not live:
            entry["mode"], entry["tokens_out"] = "dropped", 0
            # why, as the budget said it of the turn's first segment ("no room …", "is corrected by …")
            reason = next(("; ".join(s.reasons) for s in mine if s.reasons), None)
            if reason:
                entry["reason"] = reason
        elif len(live) < len(mine):
            entry["mode"] = "trimmed"
            src = by_id.get(t.item.id)
            entry["tokens_out"] = (int(src["tokens_out"]) if src and t.mode != "bullet"
                                   else counter.count(" ".join(s.text for s in live)))
    return out


def result_json(result: HandoffResult) -> str:
    return json.dumps(result.to_dict(), ensure_ascii=False, indent=2)
