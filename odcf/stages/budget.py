"""Budgeting: fit the delivered segments into the role's budget, in the declared order.

Order of precedence (highest first):

0. the instruction layer — never dropped, never compressed;
1. required material — segments of sources marked ``mandatory`` and the state layer when
   the role requires it;
2. the other segments of required layers, best score first;
3. optional layers, in the role's priority order (the last one is trimmed first), best
   score first.

Forbidden layers, and layers the role does not list, are dropped with their reason.
Segments are taken greedily in that order while they fit ("then fill": a smaller segment
further down may still fit after a larger one did not), each charged what it adds to the text
as assembled (joined to the segment before it in its source when that one is taken: the space
before a sentence is a part of its first word's token). The result is then measured
exactly, as it will be assembled, and trimmed further from the lowest-precedence end if
needed (far over the budget several segments at a time, as many as by a generous estimate take out
no more than half the excess, then measured again; near it one at a time, the same result in fewer
measures); the segments left out are then offered again, in the same order, to the room that
exact measuring leaves (each kept only if the measured text still fits), so no segment is
dropped "for room" that would have fitted. When required material alone exceeds the budget,
``strict`` raises :class:`~odcf.errors.BudgetError` saying by how much; otherwise everything
required is kept and the record says ``over_budget``. ``strict`` also raises when a layer the
role requires has input but none of it fits.

A caller that adds text of its own after the pipeline (a handoff's notes block) passes the room it
holds for it as ``doc.meta["budget_reserve"] = {"tokens": n, "for": "the handoff notes"}``, with
``doc.budget`` the room left for the segments: segments are fitted to ``doc.budget``, every message
and reason quotes the whole budget (``doc.budget + n``) and says what the *n* tokens are held for,
and being over is the caller's to judge and say (it measures the final text, and may shrink its
own), so this stage neither warns nor raises for it.

A sentence that opens by pointing back ("However, …", "Therefore …", "但是，…") goes only with the
sentence before it in its source: taking it takes that sentence too (both must fit), leaving the
earlier one out leaves it out, and when an earlier stage dropped the sentence before it, it is
dropped with that reason (one merged into its duplicate elsewhere counts as delivered). Delivered
alone, "However, this obligation does not apply" would read as an exception to whatever the
compressed text happens to hold above it. A segment whose meta names another in
``budget_needs`` goes only with that one the same way (a handoff links its history turns so).

The same holds for a prohibition opening a sentence whose object only the sentence before it in its
paragraph names ("Do not increase the dose unless …" after "It was restarted at a reduced dose …").
The first piece of a list item (the one holding its number or mark) goes only with the item's later
sentences that open by forbidding ("Do not …", "Never …"), as a segment goes with its corrections (below):
"2. If the logs show `connection refused` …, go to section 4." delivered without "Do not restart the
pods: …" read as the whole step; the later sentence may go without it, written after its number. So does the first
sentence of a numbered clause with the short sentence right after it that limits it ("III.5 The tenderer must have a
positive equity …" with "A tenderer with negative equity is eligible only if a parent company provides a guarantee …":
:func:`_clause_limits`; not with a long one whose "unless" limits something else, QA AA F1). So does a sentence stating a
sum with the sentence right after it that gives the same term another sum for a case ("The theft deductible is EUR
1,000." with "The deductible is EUR 2,500 if the vehicle was not fitted with a working approved tracking device …":
:func:`_case_values`), and a question in a paragraph of prose with its answer later there ("Checked whether Exclusion
5.9 applies." with "Exclusion 5.9 does not apply, despite …": :func:`_answered_later`).

A segment that a later one corrects (meta ``corrected_by``, set by the rank stage: "the figure
"3.50:1" is deleted and replaced with "3.75:1"", "up to 6 hours (previously 8 hours)") goes only with
its corrections: taking it takes them (all must fit), leaving a correction out leaves it out, and
when the corrections cannot be delivered it is dropped saying so. Delivered alone, "shall not
exceed 3.50:1" is a stale value presented as current; the ratio left out is the lesser harm.

A numbered provision goes only with the sentences elsewhere in its source that state an exception to it
by its number, as with its corrections: "(d) has an annual turnover below AUD 10 million …" delivered
without "2.3 Paragraph 2.1(d) does not apply to a consortium member that is not the prime contractor."
would exclude those members (:func:`_cross_limits`). A table's rows go only with the lines of their source that
say how its figures are to be read, the same way ("All figures in GBP thousands unless stated otherwise. Figures in
parentheses are negative." above "| Group | 412,600 | 428,100 | (3.6%) | (1,204) | 7,850 |", which alone read as
£412,600 for £412.6 million: :func:`_unit_lines`).

A markdown section's segments go only with its heading (and a sub-heading with the heading above
it; a plain-text contract's "ARTICLE 10 — INDEMNITY" is a heading too, with the level the segmenter
gave it, and so is a numbered title on a line of its own, "3.4 Service credits", over "3.4.1 …"), and the rows, items or lines of a block go only with the sentence that introduces it (one
ending in ":" right before the block): a heading or such a lead-in is never delivered on its own,
and leaves when the last of what it heads leaves. Delivered without them, "Do not drive for two
weeks" under the heading of another section, or an empty "## Allergies", would mislead.

The same holds for mail: a quoted reply's lines go only with its attribution ("On … wrote:"), and
an email's body only with its From line, which is never delivered alone; its other header lines
(Date/Sent, Subject, To, Cc, "-----Original Message-----") go only with a part of its body. (Each
line a body must bring costs room: with From, Sent and Subject required, a thread's newest "I do NOT
approve" no longer fitted beside the older message it overrules.)
Delivered without them, a quoted and superseded "I approve the carry-over" reads as the latest word.
A ticket's or a thread's message header line ("--- Message 3 — Customer (Farah Haddad) — 2025-04-05 16:20",
"Internal note — Mei Tanaka (engineering) — …": :func:`_message_header`) heads its message the same way, up
to the next one: its content goes only with it, and it only with a part of that (a greeting is no part).
Read as text, Message 3's "Also I would prefer the $198.00 as a refund to the card …", its header left out
for room, sat under Message 1's header; and seven headers with nothing under them took 165 of 244 tokens.

A later sentence of a paragraph that opens with a date or time label ("Day 4 (05/09/2024): Oxygen weaned
off.", "2024-09-05 14:10 — …", "On 3 May: …") goes only with the sentence that holds the label, where that
sentence is the label and a few words: delivered without it, "Blood glucose 9-14 mmol/L on glargine 10 units;
dose increased to 12 units." read as the current dose (QA s33 T2); tied to a long narrative sentence after
"14:02 —", a meeting's decisions were all left out (QA s33 AA F2).

A paragraph under a short label line ending in ":" ("Customer reply:" above it, or its own first line,
"Internal note (not visible to customer) — Priya, 15 April 2025 09:10:") goes only with that line, as
a body with its From line: delivered without it, the note's "Manual refund scheduled in Stripe for 17
April." read as a part of the email to the customer above it, which promised 18 April.

A question of a question-and-answer log ("**Q19.** … Please confirm the minimum technical score.",
"Question 3:", "Q:") goes only with the opening of its answer ("**A19.** The technical score threshold
is 65 out of 100 points.", numbered like it, else right after it: :mod:`odcf.stages.segment.qa`), which
goes alone; the rank stages score that opening at least as high as its question. Delivered without
it, a question that repeats the query's words is the query asked again, not answered. Where the question and its
answer are one numbered item ("X.6 Question: Will the municipality accept an invoice in PDF format? Answer: No. …"),
the answer's opening goes only with its question too (:func:`_asked_in_item`): its "No" answers nothing alone.
"""
from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from odcf.document import Document, Segment, TraceEvent
from odcf.errors import BudgetError, StageError
from odcf.plan.model import Plan, RoleContract
from odcf.plan.protection import ZH_CONNECTIVES, ZH_EXCEPTION_CONDITION
from odcf.render import header, render
from odcf.stages.base import Stage
from odcf.stages.rank import (
    _CURRENCY_KIND,
    _MESSAGE_HEADER_RE,
    _user_turns,
    pleasantries,
    quotation_goes_on,
)
from odcf.stages.segment.headings import (
    TITLE_VERBS,
    WHOLE_TITLE_RE,
    heading_level,
    segment_level,
)
from odcf.stages.segment.lines import LIST_RE
from odcf.stages.segment.mail import MAIL_HEAD_FIELDS, pleasantry
from odcf.stages.segment.qa import QAPair, qa_pairs
from odcf.textutil import (
    HAN_RE,
    NO_OTHER_RE,
    STOPWORDS,
    person_opener,
    points_back,
    refers_back,
)
from odcf.textutil import words as _words
from odcf.tokens import get_counter, short_unit, unit_words

#: The fill measures what a segment adds after the one before it with this many characters of that one
#: (a token never reaches further back than a word and the punctuation after it).
_JOIN_TAIL = 64
#: The fill measures a segment as assembled when the estimate puts it over the budget by at most this many.
_FILL_NEAR = 8
#: The refill stops after this many segments in a row that did not fit when measured.
_REFILL_MISSES = 64



#: Tokens a segment may save beyond its own text when it goes (a separator, a gap mark, a line break): the
#: trim's estimate of what taking out several at once saves errs high by this much per segment.
_TRIM_SLACK = 8

class Budgeter(Stage):
    """Drop what does not fit, recording each drop and its reason."""

    name = "budget"
    requires = frozenset({"segments", "scores"})
    provides = frozenset({"budgeted"})
    lossy = True

    def __init__(self, *, annotate: bool = True, strict: bool = False, max_trim_rounds: int = 2000) -> None:
        self.annotate = annotate
        self.strict = strict
        self.max_trim_rounds = max_trim_rounds

    def __call__(self, doc: Document, plan: Plan) -> Document:
        contract = plan.role(doc.role)
        budget = doc.budget if doc.budget is not None else contract.budget
        if not isinstance(budget, int) or isinstance(budget, bool) or budget <= 0:
            raise StageError(f"budget must be a positive integer, got {budget!r}")
        counter = get_counter(doc.tokenizer or contract.unit or plan.tokenizer)
        strict = bool(doc.meta.get("strict", self.strict))
        annotate = bool(doc.meta.get("annotate", self.annotate))

        decided, tiers = _classify(doc, contract)
        live = [s for s in doc.segments if s.id in tiers]
        cost = {s.id: counter.count(s.text) + (1 if s.index else 0) for s in live}
        pairs = qa_pairs(doc.segments)  # the questions and answers of a question-and-answer log (read once)
        before, heads = _antecedents(doc, pairs)
        required_ids = {sid for sid, t in tiers.items() if t[0] <= 1}  # whole sources: groups stay whole
        corrected_by = {s.id: tuple(s.meta["corrected_by"]) for s in live if s.meta.get("corrected_by")}
        limited_by = {k: v for k, v in {**_item_limits(doc), **_clause_limits(doc)}.items() if k in tiers}
        asked_by = {k: v for k, v in _asked_in_item(doc, pairs, before).items() if k in tiers}
        cased_by = {k: v for k, v in _case_values(doc).items() if k in tiers}
        answered_by = {k: v for k, v in _answered_later(doc, pairs).items() if k in tiers}
        excepted_by = {k: v for k, v in _cross_limits(doc).items() if k in tiers}
        read_by = {k: v for k, v in _unit_lines(doc).items() if k in tiers}
        # what a segment goes only with elsewhere in its source: its corrections, the limits of its list
        # item or numbered clause, the exceptions to it that name it by its number, the lines that say how its
        # table's figures read, the question an answer in the same numbered item answers, the next sentence that
        # sets its sum otherwise for a case, the answer later in its paragraph to a question
        needs = {k: tuple(dict.fromkeys((*corrected_by.get(k, ()), *limited_by.get(k, ()), *excepted_by.get(k, ()),
                                         *read_by.get(k, ()), *asked_by.get(k, ()), *cased_by.get(k, ()),
                                         *answered_by.get(k, ()))))
                 for k in sorted(corrected_by.keys() | limited_by.keys() | excepted_by.keys() | read_by.keys()
                                 | asked_by.keys() | cased_by.keys() | answered_by.keys())}
        courtesy = _pleasantry_messages(doc, live, required_ids)
        groups = _Groups(before, tiers, {s.id for s in doc.segments if s.status == "merged"}, heads,
                         whole=_whole_sentences(doc), corrected_by=needs,
                         titles={s.id for s in live if s.id in heads and (_section_heading(s) or _message_header(s))},
                         courtesy=courtesy)
        probe = doc.replace(segments=tuple(decided.get(s.id, s) for s in doc.segments))

        rules = {s.id for s in live if _RULE_RE.match(s.original.strip())} - required_ids
        lone_rules: set[str] = set()  # the rules left out for separating nothing (their reason says so)

        def fit(annotate: bool) -> tuple[set[str], int, int, int, int, dict[str, str]]:
            lone_rules.clear()
            kept, required_tokens = _fill(doc, live, tiers, cost, required_ids, budget, counter, annotate, groups)
            lone_rules.update(_lone_rules(live, kept, rules))
            kept -= lone_rules
            went_with: dict[str, str] = {}  # a segment the trim took out with another -> that one
            filled = set(kept)
            exact, rounds = self._trim(probe, kept, tiers, required_ids, budget, counter, annotate, groups, went_with, cost)
            # a rule is never offered again: filling the room left with it is what put "---" four
            # times in a row where "do not call me" did not fit
            trimmed = {s.id for s in live if s.id in filled and s.id not in kept}
            exact, refilled = self._refill(probe, [s for s in live if s.id not in rules or s.id in kept], kept, tiers,
                                           exact, budget, counter, annotate, groups, trimmed)
            lone = _lone_rules(live, kept, rules)  # the trim may have taken what a rule stood between
            if lone:
                kept -= lone
                lone_rules.update(lone)
            # the trim may have taken the content of a message whose greeting or sign-off is kept: it goes
            # too, and so does the From line it brought
            bare = {sid for sid, content in courtesy.items() if sid in kept and not content & kept}
            if bare:
                kept -= bare
                groups.prune(bare, kept, required_ids)
            if lone or bare:
                exact = counter.count(render(probe, lambda s: s.id in kept, annotate=annotate)[0])
            return kept, required_tokens, exact, rounds, refilled, went_with

        kept, required_tokens, exact, rounds, refilled, went_with = fit(annotate)
        warnings: list[str] = []
        measured = annotate  # how the smallest segment's need is measured when nothing fits
        best = _first_ranked(live, tiers, groups) if doc.query else None
        annotated_rules = set(lone_rules)  # fit() refills them: a fit tried and not taken must not leave its own
        if annotate and live and not kept:
            # nothing fits beside its source line ("[source 1/1] … | relevance 84%"): the best that
            # fits is delivered without the source lines, and the record says so
            bare = fit(False)
            measured = False
            if not bare[0]:
                lone_rules.clear()
                lone_rules.update(annotated_rules)
            else:
                kept, required_tokens, exact, rounds, refilled, went_with = bare
                annotate = False
                warnings.append(f"the source lines were left out: with them nothing fit in the budget of {budget} "
                                f"{unit_words(counter.name)}")
        elif annotate and best is not None and best.id not in kept and len(doc.sources) == 1:
            # the segment ranked first for the query fits only without the source line: the answer goes
            # before it ("2.1 Port in use" / "… exits with code 98." at 40 tokens, where with its source
            # line "2.2 Slow start" went out instead). Not with several sources, where the source lines
            # say which part came from where (a handoff's drafts and tool results)
            bare = fit(False)
            if best.id in bare[0]:
                kept, required_tokens, exact, rounds, refilled, went_with = bare
                annotate = measured = False
                warnings.append(f"the source lines were left out: with them the segment ranked first for the query, "
                                f"{best.id}, did not fit in the budget of {budget} {unit_words(counter.name)}")
            else:
                lone_rules.clear()
                lone_rules.update(annotated_rules)
        over_by = max(0, exact - budget)
        room = _Room.of(budget, doc.meta.get("budget_reserve"), short_unit(counter.name))
        if over_by and strict and not room.reserved:
            raise BudgetError(
                f"required material needs {exact} {unit_words(counter.name)} but role {contract.name!r} has a "
                f"budget of {budget}: over by {over_by}",
                budget=budget, required=exact,
            )
        if over_by and not room.reserved:
            warnings.append(f"over budget by {over_by} {room.unit}: required material alone needs {exact}")
        final, dropped_by_budget, present = _decide(doc, decided, tiers, kept, cost, budget, contract, before, heads,
                                                    whole=groups.whole, corrected_by=corrected_by, room=room,
                                                    rules=lone_rules,
                                                    courtesy={sid for sid, c in courtesy.items() if not c & kept},
                                                    limited_by=limited_by, pairs=pairs,
                                                    excepted_by=excepted_by, went_with=went_with, read_by=read_by,
                                                    asked_by=asked_by, cased_by=cased_by, answered_by=answered_by)
        warnings += _shortfalls(probe, live, kept, present, cost, exact, budget, counter, measured, groups,
                                strict=strict, role=contract.name, room=room)
        if doc.query and kept:
            warnings += _best_left_out(live, kept, tiers, cost, groups, room, counter, exact)
        if decided and not live:
            layers = sorted({s.layer for s in decided.values()})
            warnings.append(f"nothing delivered: role {contract.name} takes no segment of layer(s) "
                            f"{', '.join(layers)} (forbidden or not in its contract)")

        info: dict[str, Any] = {
            "role": contract.name, "budget": budget, "unit": counter.name, "tokens": exact,
            "over_budget": over_by > 0, "over_by": over_by, "required_tokens": required_tokens,
            "dropped": dropped_by_budget, "forbidden_dropped": len(decided), "trim_rounds": rounds,
            "refilled": refilled,
            "kept_linked": sum(1 for i in kept if i in before and before[i] not in heads),  # with what they need
            "heads_kept": sum(1 for i in kept if i in heads),  # headings and lead-ins, with what they head
            "kept_with_corrections": sum(1 for i in kept if i in corrected_by),  # a stale value with what changes it
            "warnings": warnings,
        }
        if room.reserved:  # the whole budget is the caller's to check
            info["reserved"] = {"tokens": room.reserved, "for": room.held_for}
        meta = dict(doc.meta)
        meta["budget_info"] = info
        meta["annotate"] = annotate
        return doc.with_event(TraceEvent(stage=self.name, data=info), segments=tuple(final), meta=meta)

    def _trim(self, probe: Document, kept: set[str], tiers: dict[str, tuple[int, float, int]],
              required_ids: set[str], budget: int, counter: Any, annotate: bool, groups: _Groups,
              went_with: dict[str, str], cost: dict[str, int]) -> tuple[int, int]:
        """Measure the text exactly as it will be assembled and drop kept optional segments,
        lowest precedence first (with the sentences that point back to them, each ranked at the best
        of those), while it is over *budget*; return (tokens, rounds). *kept* shrinks, and *went_with*
        maps each segment taken out with another to that one; *cost* is each segment's tokens (with a
        separator), the fill's estimate of what taking it out saves."""
        def delivered(seg: Segment) -> bool:
            return seg.id in kept

        text, _ = render(probe, delivered, annotate=annotate)
        exact = counter.count(text)
        rounds = 0
        # a lead-in scored above what it heads was taken at its own score with the best of that (the
        # fill): that part is trimmed at the head's score too, not first for its own ("第十条 …不得有下列
        # 行为：" at 1.0 went out with its items at 0.15, for the effective-date article)
        rank = dict(tiers)
        for head in (groups.heads - groups.titles) & kept:
            best = groups.best_part(head, lambda c: c in kept)
            if head in tiers and best is not None:
                rank[best] = min(tiers[best], tiers[head])
        trimmable = [i for i in kept if i not in required_ids and i not in groups.heads]
        # a segment goes out with the sentences that point back to it: it is trimmed at the rank of the
        # best of them still kept (QA: "Based on the carrier detection, …", 0.56, was trimmed first and
        # took "However, the current status … are not available …", 0.998, with it; the refill put the
        # 0.56 back alone, with "Begin!", 0.07)
        goes = {i: sorted((d for d in groups.dependents(i) - required_ids if d in rank), key=rank.__getitem__)
                for i in trimmable}

        def trim_rank(i: str) -> tuple[tuple[int, float, int], tuple[int, float, int]]:
            # at a tie (a sentence and the one pointing back to it), the sentence with its own rank
            # below goes, with what points back to it: the refill may put it back alone
            return next((rank[d] for d in goes[i] if d in kept), rank[i]), rank[i]

        owners: dict[str, set[str]] = {}  # a segment -> the trimmable ones whose trim rank it sets
        for i, deps in goes.items():
            for d in deps:
                owners.setdefault(d, set()).add(i)
        while exact > budget and trimmable and rounds < self.max_trim_rounds:
            trimmable = [i for i in trimmable if i in kept]  # one may have gone out with another
            if not trimmable:
                break
            trimmable.sort(key=trim_rank, reverse=True)
            # far over the budget, segments go several at a time before the text is measured again: as
            # many as, by a generous estimate of what each saves, take out no more than half the excess
            # (a 20,000-row table at 20% took 554 rounds, each rendering and counting the whole text);
            # near it, one at a time, so that no segment goes that measuring would have kept
            room = (exact - budget) / 2
            while trimmable:
                out = trimmable.pop(0)
                before = set(kept)
                gone = kept.intersection(goes[out])
                kept.difference_update(gone)
                for other in gone - {out}:
                    went_with.setdefault(other, out)
                groups.prune(gone, kept, required_ids)
                removed = before - kept
                room -= sum(cost.get(i, 0) + _TRIM_SLACK for i in removed)
                trimmable = [i for i in trimmable if i in kept]
                if room <= 0 or any(owners.get(i, set()) & kept for i in removed):
                    break  # measured again; or a trim rank changed with what went, and the order is taken again
            text, _ = render(probe, delivered, annotate=annotate)
            exact = counter.count(text)
            rounds += 1
        return exact, rounds

    def _refill(self, probe: Document, live: list[Segment], kept: set[str], tiers: dict[str, tuple[int, float, int]],
                exact: int, budget: int, counter: Any, annotate: bool, groups: _Groups,
                trimmed: Collection[str] = ()) -> tuple[int, int]:
        """Offer the segments left out, in precedence order, to the room that exact measuring left:
        the fill's per-segment estimate counts a separator token that the tokenizer often merges
        away, so a segment it refused (and one the trim took out) may fit after all. Each is kept
        only if the text, measured exactly, stays within *budget*; return (tokens, segments added).
        No segment ranked below one of *trimmed* (those the trim took out) is offered before it."""
        def delivered(seg: Segment) -> bool:
            return seg.id in kept

        words = {s.id: counter.count(s.text) for s in live if s.id not in kept}
        # a member of a cut JSON value may cost nothing once assembled: the last one left out of its
        # container takes the place of its mark ("[JSON_ITEMS: 1]"), which costs as much as the
        # "[JSON_ITEMS: 2]" of a value compressed before (compressed again, it came back as a mark)
        mark = counter.count(',"[JSON_KEYS: 1]":null')
        slack = {s.id: mark for s in live if "json_levels" in s.meta}
        # so may a record of JSON Lines: the last one left out of a run of them takes the place of its
        # "[DATA_ROWS: 1]" (compressed again, JSON Lines delivered in part came back with their marks)
        rows = counter.count("\n[DATA_ROWS: 1]")
        slack.update((s.id, rows) for s in live if s.kind == "json" and "table_rows" in s.meta and s.id not in slack)

        def offer(order: list[Segment], exact: int, trials: int) -> tuple[int, int, int, bool]:
            """One pass over *order*: (tokens, segments added, trials, ended by a run of misses)."""
            added = misses = 0
            for seg in order:
                # each trial renders the delivered text: bounded, and given up after a run of misses
                if exact > budget or trials >= self.max_trim_rounds:
                    break
                if misses >= _REFILL_MISSES:
                    return exact, added, trials, True
                if seg.id in kept or seg.id in groups.heads:
                    continue  # added already, with a sentence that points back to it; a head goes only with what it heads
                group = groups.to_add(seg.id, kept)
                if not group or sum(words.get(i, 0) - slack.get(i, 0) for i in group) - 1 > budget - exact:
                    continue  # cannot fit even if its separator merges away (or its mark goes)
                trials += 1
                kept.update(group)
                tokens = counter.count(render(probe, delivered, annotate=annotate)[0])
                if tokens <= budget:
                    exact, added, misses = tokens, added + len(group), 0
                else:
                    kept.difference_update(group)
                    misses += 1
            return exact, added, trials, False

        left = sorted((s for s in live if s.id not in kept), key=lambda s: tiers[s.id])
        exact, added, trials, gave_up = offer(left, exact, 0)
        if gave_up:
            # a run of misses ended the pass in precedence order (each candidate costs more once
            # assembled than its words: the wrapper of a JSON subset, a table's repeated header);
            # cheapest first then, so that room a small segment fits is not left empty (QA: budgets
            # 110-125 delivered nothing where 105 and 130 delivered something)
            def need(seg: Segment) -> int:
                return sum(words.get(i, 0) for i in groups.to_add(seg.id, set()) or [seg.id])
            # what the trim took out is offered before anything ranked below it, cheap as that may be
            back = sorted((s for s in left if s.id in trimmed), key=lambda s: tiers[s.id])
            order: dict[str, Segment] = {}  # id -> segment, in the order offered
            for seg in sorted(left, key=lambda s: (need(s), tiers[s.id])):
                while back and tiers[back[0].id] <= tiers[seg.id]:
                    first = back.pop(0)
                    order.setdefault(first.id, first)
                order.setdefault(seg.id, seg)
            exact, more, _, _ = offer(list(order.values()), exact, trials)
            added += more
        return exact, added


@dataclass(frozen=True)
class _Room:
    """The budget as messages quote it: the whole budget, and the tokens a caller holds of it for
    its own text (``doc.meta["budget_reserve"]``, see the module docstring)."""

    budget: int
    reserved: int = 0
    held_for: str = ""
    unit: str = "tokens"  # "bytes" under the bytes counter: "no room in 40 tokens" misread a byte budget

    @classmethod
    def of(cls, budget: int, reserve: Any, unit: str = "tokens") -> _Room:
        if not isinstance(reserve, Mapping) or not reserve.get("tokens"):
            return cls(budget, unit=unit)
        tokens = int(reserve["tokens"])
        return cls(budget + tokens, tokens, str(reserve.get("for") or "the caller's own text"), unit)

    @property
    def held(self) -> str:
        """", 24 of them held for the handoff notes" (or nothing)."""
        return f", {self.reserved} of them held for {self.held_for}" if self.reserved else ""


def _shortfalls(probe: Document, live: list[Segment], kept: set[str], present: dict[str, bool], cost: dict[str, int],
                exact: int, budget: int, counter: Any, annotate: bool, groups: _Groups, *, strict: bool,
                role: str, room: _Room) -> list[str]:
    """Warnings for an empty delivery and for required layers that got nothing or had no input;
    with *strict*, a required layer that had input but got nothing is a :class:`BudgetError`."""
    out: list[str] = []
    if live and not kept:
        out.append(f"nothing fit in the budget of {room.budget} {unit_words(counter.name)}{room.held}: the delivered "
                   f"text is empty (the smallest segment, as assembled alone, needs "
                   f"{_smallest_alone(probe, live, cost, counter, annotate, groups)})")
    has_layer = {s.layer for s in live}
    for layer, got in present.items():
        if layer in has_layer and not got:
            if strict:
                need = _smallest_alone(probe, [s for s in live if s.layer == layer], cost, counter, annotate, groups)
                raise BudgetError(
                    f"required layer {layer!r}: nothing fits in the budget of {room.budget} {unit_words(counter.name)}"
                    f"{room.held} for role {role!r} ({exact} already used; its smallest segment, as assembled "
                    f"alone, needs {need})", budget=room.budget, required=exact + need + room.reserved)
            out.append(f"required layer {layer!r}: nothing fit in the budget")
        elif layer not in has_layer and layer != "instruction":
            out.append(f"required layer {layer!r}: no input")
    return out


def _first_ranked(live: list[Segment], tiers: dict[str, tuple[int, float, int]], groups: _Groups) -> Segment | None:
    """The segment ranked first for the query among those the budget may leave out (a title aside)."""
    return min((s for s in live if tiers[s.id][0] > 1 and s.id not in groups.titles and s.score is not None),
               key=lambda s: tiers[s.id], default=None)


def _best_left_out(live: list[Segment], kept: set[str], tiers: dict[str, tuple[int, float, int]], cost: dict[str, int],
                   groups: _Groups, room: _Room, counter: Any, used: int) -> list[str]:
    """A warning when the segment ranked first for the query is not delivered: the text then answers
    from what ranked below it (QA: a 212-token clause that answered the query did not fit in 120
    tokens, two unrelated clauses went out, and the record did not say so). *used*: the tokens of the text
    delivered, so that the warning says how much room was left ("needs 22 tokens, more than the room left in
    the budget of 35" read as a contradiction)."""
    best = _first_ranked(live, tiers, groups)
    if best is None or best.id in kept:
        return []
    # a lead-in ("15.2 The Customer may terminate immediately … if the Supplier:") goes only with a part of
    # its block: what it needs is its best part's chain, which holds it (QA: left out with no warning)
    part = groups.best_part(best.id, lambda c: True) if best.id in groups.heads else None
    need = sum(cost[i] for i in groups.to_add(part or best.id, kept) or {part or best.id})
    return [(f"the segment ranked first for the query, {best.id} (score {best.score:.2f}), was left out: with what "
             f"it goes with it needs {need} {unit_words(counter.name)}, more than the room left in the budget of "
             f"{room.budget}{room.held} ({max(0, room.budget - used)} left after the {used} {room.unit} delivered, source "
             f"header lines included); raise the budget to deliver it")]


def _smallest_alone(probe: Document, segs: list[Segment], cost: dict[str, int], counter: Any, annotate: bool,
                    groups: _Groups) -> int:
    """Tokens the cheapest of *segs* needs when delivered alone (with the heading or sentence it goes
    with), measured as assembled (source header line, repeated table header, row markers); the 20
    cheapest by the fill's estimate are measured. Heads are not delivered alone."""
    options = [(sum(cost[i] for i in g), frozenset(g)) for g in
               (groups.to_add(s.id, set()) for s in segs if s.id not in groups.heads) if g]
    options = sorted(options, key=lambda o: o[0])[:20] or [(0, frozenset({s.id})) for s in segs[:1]]
    return min(counter.count(render(probe, lambda s, g=g: s.id in g, annotate=annotate)[0]) for _, g in options)


def _classify(doc: Document, contract: RoleContract) -> tuple[dict[str, Segment], dict[str, tuple[int, float, int]]]:
    """Segments dropped for their layer (forbidden or not in the contract), and the sort key
    (tier, -score, position) of every other live segment."""
    sources = {s.id: s for s in doc.sources}
    decided: dict[str, Segment] = {}
    tiers: dict[str, tuple[int, float, int]] = {}
    for k, seg in enumerate(doc.segments):
        if seg.dropped:
            continue
        tier = _tier(seg, sources[seg.source_id].mandatory, contract)
        if tier is None:
            why = ("forbidden" if seg.layer in contract.forbidden else "not in the contract")
            decided[seg.id] = seg.with_reason(
                f"budget: layer {seg.layer} is {why} for role {contract.name}", status="dropped")
            continue
        tiers[seg.id] = (tier, -(seg.score if seg.score is not None else 0.0), k)
    return decided, tiers


def _joined_cost(counter: Any, prev: Segment, seg: Segment) -> int:
    """The tokens *seg* adds to the assembled text right after *prev*, the segment before it in its
    source, measured as the assembler joins them: the end of *prev*, the whitespace between them as in
    the source, and *seg*, less the end of *prev* alone. The whitespace is often a part of a token beside
    it (" Offshore", ".\n\n"): charged a token of its own, each sentence went over, and the fill refused
    "Offshore Services is not expected to return to positive EBIT …" (0.77) for boilerplate (0.52, 0.08)
    in a budget that it fitted in their place (QA). Other text before it (a fence) is charged a token."""
    if not seg.sep.strip():
        tail = prev.text[-_JOIN_TAIL:]
        return counter.count(tail + seg.sep + seg.text) - counter.count(tail)
    return counter.count(seg.text) + 1


def _fill(doc: Document, live: list[Segment], tiers: dict[str, tuple[int, float, int]], cost: dict[str, int],
          required_ids: set[str], budget: int, counter: Any, annotate: bool, groups: _Groups) -> tuple[set[str], int]:
    """Required segments, then the others in precedence order while they fit (a source's header
    is paid with its first segment; a sentence that points back, together with the sentences it
    needs); return the kept ids and the tokens of the required ones. A segment is charged *cost* (its
    text and a token for what is written before it: a line break, a mark " … ") unless the segment
    before it in its source is taken: then what it adds right after that one (:func:`_joined_cost`)."""
    sources = {s.id: s for s in doc.sources}
    after: dict[str, str] = {}  # a segment -> the one before it in its source
    for a, b in zip(doc.segments, doc.segments[1:]):
        if a.source_id == b.source_id:
            after[b.id] = a.id
    nxt = {a: b for b, a in after.items()}  # a segment -> the one after it in its source
    by_id = {s.id: s for s in doc.segments}
    joined = {s.id: _joined_cost(counter, by_id[after[s.id]], s) for s in live if s.id in after}

    def charge(group: Collection[str]) -> int:
        """What taking *group* adds to the text: its segments, each joined to the one before it when
        that one is taken, and the gap it closes before a segment taken already (which was charged a
        token for its gap, whatever the order they were taken in)."""
        members = set(group)
        add = sum(joined[i] if after.get(i) in kept or after.get(i) in members else cost[i] for i in group)
        return add + sum(joined[n] - cost[n] for i in members if (n := nxt.get(i)) in kept and n in joined)

    header_cost: dict[str, int] = {}
    for s in live:
        if s.source_id not in header_cost:
            # its header line and the line break after it (one token: "…relevance 90%\n")
            header_cost[s.source_id] = counter.count(header(doc, sources[s.source_id], [s]) + "\n") if annotate else 0
    opened: set[str] = {s.source_id for s in live if s.id in required_ids}
    kept: set[str] = set()
    # and a blank line between two sources' blocks: one token for each source opened after the first
    required_tokens = (charge(required_ids) + sum(header_cost[sid] for sid in opened)
                       + max(0, len(opened) - 1))
    kept.update(required_ids)
    used = required_tokens
    measures = 0
    for seg in sorted((s for s in live if s.id not in required_ids), key=lambda s: tiers[s.id]):
        if seg.id in kept:
            continue  # taken already, as the sentence another one points back to
        if seg.id in groups.titles:
            # a heading names its section: its score says that its words match the query, not that what
            # it heads does ("## Discharge Diagnoses", 0.68 for the discharge medications, took its list,
            # 0.48, ahead of the medication list, 0.63, which was then "no room"): it comes with its parts
            continue
        sid: str | None = seg.id
        while sid is not None and sid in groups.heads:
            # a head goes only with what it heads: a lead-in scored above what is left of it ("6.1 … a
            # proposal will be rejected if:", incomplete without its list) is tried now with the
            # best-scored of that (down through the heads under it)
            sid = groups.best_part(sid, lambda c: c not in kept)
        if sid is None:
            continue
        group = groups.to_add(sid, kept)
        if not group:
            continue
        extra = charge(group) + (0 if seg.source_id in opened else header_cost[seg.source_id] + (1 if opened else 0))
        if used + extra <= budget:
            kept.update(group)
            opened.add(seg.source_id)
            used += extra
        elif used + extra - budget <= _FILL_NEAR and measures < _REFILL_MISSES:
            # a near miss is measured as assembled: the estimate is a token or so off at each source's
            # opening and each gap, and a better segment refused for it left room to worse ones
            measures += 1
            exact = counter.count(render(doc, lambda s, g=kept | set(group): s.id in g, annotate=annotate)[0])
            if exact <= budget:
                kept.update(group)
                opened.add(seg.source_id)
                used = exact
    return kept, required_tokens


def _decide(doc: Document, decided: dict[str, Segment], tiers: dict[str, tuple[int, float, int]], kept: set[str],
            cost: dict[str, int], budget: int, contract: RoleContract,
            before: dict[str, str], heads: set[str], *,
            whole: dict[str, tuple[str, ...]] | None = None,
            corrected_by: dict[str, tuple[str, ...]] | None = None,
            room: _Room | None = None, rules: set[str] | frozenset[str] = frozenset(),
            courtesy: set[str] | frozenset[str] = frozenset(),
            limited_by: Mapping[str, tuple[str, ...]] | None = None,
            pairs: Sequence[QAPair] | None = None,
            excepted_by: Mapping[str, tuple[str, ...]] | None = None,
            went_with: Mapping[str, str] | None = None,
            read_by: Mapping[str, tuple[str, ...]] | None = None,
            asked_by: Mapping[str, tuple[str, ...]] | None = None,
            cased_by: Mapping[str, tuple[str, ...]] | None = None,
            answered_by: Mapping[str, tuple[str, ...]] | None = None) -> tuple[list[Segment], int, dict[str, bool]]:
    """Every segment with its final status (a budget drop says why), the number of budget drops,
    and whether each required layer kept anything."""
    by_id = {s.id: s for s in doc.segments}

    def undelivered(links: Mapping[str, tuple[str, ...]] | None, sid: str) -> list[str]:
        """The segments *links* ties *sid* to that were neither delivered nor merged into a copy."""
        return [f for f in (links or {}).get(sid, ()) if f not in kept and by_id[f].status != "merged"]

    def cost_of(ids: Sequence[str]) -> int:
        return sum(cost[f] for f in ids if f in cost)
    room = room or _Room(budget)
    dropped = 0
    present: dict[str, bool] = {layer: False for layer in contract.required}
    final: list[Segment] = []
    keeper_of = {m: s.id for s in doc.segments for m in s.merged_from}
    asks = {sid: pair for pair in (qa_pairs(doc.segments) if pairs is None else pairs)
            for sid in pair.question}  # a question's segments
    after = {s.id: n for s, n in zip(doc.segments, doc.segments[1:])}  # the segment after each
    heads_of: dict[str, list[str]] = {}  # a head -> the segments that go only with it
    for sid, head in before.items():
        heads_of.setdefault(head, []).append(sid)
    for seg in doc.segments:
        if seg.id in decided:
            final.append(decided[seg.id])
            continue
        if seg.status == "merged" and keeper_of.get(seg.id) in tiers and keeper_of[seg.id] not in kept:
            # its words were to be read in its duplicate, which the budget left out: say so
            final.append(seg.with_reason(
                f"budget: its duplicate {keeper_of[seg.id]} was not delivered, so neither is it", status="dropped"))
            continue
        if seg.id in tiers and seg.id not in kept:
            dropped += 1
            t = tiers[seg.id][0]
            where = "required layer" if t == 2 else f"optional layer (priority {t - 2})"
            why = f"no room in {room.budget} {room.unit} for role {contract.name}{room.held}"
            prior = by_id.get(before.get(seg.id, ""))
            partner = by_id.get((went_with or {}).get(seg.id, ""))
            if partner is not None:
                # the trim took it out with the segment it goes only with: say so, not only "no room"
                gone = (f"went out with {partner.id} (score {partner.score or 0:.2f}), which it goes only with, when "
                        f"the text measured over the budget")
                why = (f"{gone}; {partner.id} was offered again and fitted alone, and with it this one did not "
                       f"fit: {why}" if partner.id in kept
                       else f"{gone}, and the two did not fit when offered again: {why}")
            if seg.id in rules:  # left out for separating nothing, not for room
                why = ("a horizontal rule is delivered only between two delivered parts of its source, once: "
                       "this one had none on one side, or another rule before it")
            elif seg.id in courtesy:  # left out for want of its message's content (not delivered), not for room
                why = ("a greeting or sign-off is delivered only with a part of its message's content, and none "
                       "was delivered")
            elif seg.id in heads:
                what = ("a heading" if seg.kind == "heading" else "a numbered title" if _numbered_title(seg)
                        else "a bold title" if _section_heading(seg)
                        else "a speaker's label" if seg.meta.get("label_only")
                        else "an email's header line" if seg.meta.get("mail_field")
                        else "a message's header line" if _message_header(seg)
                        else "a quote's attribution line" if seg.meta.get("quote_head")
                        else "a clause title" if _CLAUSE_TITLE_RE.match(seg.original.strip())
                        else "a title line over the later lines of its paragraph" if _title_alone(seg, after.get(seg.id))
                        else "a YAML key line" if "yaml_block" in seg.meta
                        else "a JSON object's id member" if seg.meta.get("json_id")
                        else "a diff's file header" if seg.meta.get("diff") == "file"
                        else "a diff's hunk line (@@)" if seg.meta.get("diff") == "hunk"
                        else "a line that introduces the block after it")
                why = f"{what} is delivered only with a part of what it heads, and none was delivered"
                copies = [f"{m} into {keeper_of[m]}" for m in heads_of.get(seg.id, ())
                          if by_id[m].status == "merged" and m in keeper_of]
                if copies and len(copies) == len(heads_of[seg.id]):
                    # all it heads was merged into copies of it elsewhere (dedup): say so, not "none was delivered"
                    why = (f"{what} is delivered only with a part of what it heads, and all of that ({len(copies)} "
                           f"segment{'s' if len(copies) > 1 else ''}) was merged into copies elsewhere (dedup: "
                           f"{copies[0]}{', …' if len(copies) > 1 else ''}): alone it would read as an empty output")
            elif prior is not None and prior.id not in heads and prior.id not in kept and prior.status != "merged":
                opener = (points_back(seg.original, prior.original, same_paragraph=seg.paragraph == prior.paragraph)
                          if not seg.meta.get("budget_needs") else None)
                asked = asks.get(seg.id)
                link = (f"is part {seg.meta['cut_part'] + 1} of {seg.meta.get('cut_parts')} of a sentence cut into "
                        "parts (its clauses, or for length) and goes only with its first part" if seg.meta.get("cut_part")
                        else "is a question and goes only with its answer"
                        if asked is not None and prior.id == asked.answer[0]
                        else "is a later part of a question and goes only with its first part, which goes only with "
                        "its answer" if asked is not None and prior.id == asked.question[0]
                        else "is a short reply and goes only with the question it answers"
                        if prior.index < seg.index and "speaker" in seg.meta and _asks(prior)
                        and _SHORT_REPLY_RE.fullmatch(_speech(seg))
                        else "is a question of the other side and goes only with its answer"
                        if prior.index > seg.index and "speaker" in seg.meta and _asks(seg)
                        else f"opens with {opener!r} and goes only with the sentence before it"
                        if opener and seg.original.lstrip("\"'\u201c\u2018([ ").startswith(opener)
                        else f"speaks of the sentence before it ({opener!r}) and goes only with it" if opener
                        else "is a line of an email's header and goes only with a part of its body"
                        if seg.meta.get("mail_field")
                        else f"goes only with {seg.meta.get('budget_needs_what') or 'a newer history turn'}"
                        if seg.meta.get("budget_needs")
                        else "is a later sentence of a paragraph that opens with a bold title and goes only with "
                        "that sentence"
                        if prior.paragraph == seg.paragraph and prior.source_id == seg.source_id
                        and _RUN_IN_RE.match(prior.original)
                        else f"is a later sentence of a paragraph that opens with a date or time label "
                        f"({dated.group(0)[:-1].rstrip()!r}) and goes only with the sentence that holds it"
                        if prior.paragraph == seg.paragraph and prior.source_id == seg.source_id
                        and (dated := _dated(prior)) is not None
                        else "is a later sentence of a paragraph that opens with a label line ending in \":\" and goes "
                        "only with the sentence that holds it"
                        if prior.paragraph == seg.paragraph and prior.source_id == seg.source_id
                        and _opens_with_label(prior)
                        else "is a later sentence of a paragraph that opens with a title line and goes only with the "
                        "sentence that holds it"
                        if prior.paragraph == seg.paragraph and prior.source_id == seg.source_id
                        and _opens_with_label(prior, title=True)
                        else "is a part of a commit's message and goes only with its entry's first piece (its "
                        "commit, Author and Date lines and its subject)"
                        if seg.meta.get("commit_part")
                        else "is a later part of a Python traceback's frames and goes only with the part before it"
                        if seg.meta.get("py_trace")
                        else "holds the first frames of a Python traceback and goes only with its exception line"
                        if prior.meta.get("trace_head") and prior.index - prior.meta["trace_head"] == seg.index
                        else "is a part of a stack trace and goes only with its log entry's line"
                        if seg.meta.get("trace_of")
                        else "is a part of a message and goes only with the segment that holds its header line"
                        if _message_header(prior)
                        else "is a short remark later in a speaker's line and goes only with the sentence before it"
                        if prior.paragraph == seg.paragraph and "speaker" in seg.meta
                        and _REPLY_RE.fullmatch(seg.original.strip())
                        else "is a short remark on the sentence before it and goes only with it"
                        if prior.index == seg.index - 1 and "speaker" not in seg.meta
                        and _REPLY_RE.fullmatch(seg.original.strip()) and len(seg.original.split()) <= 2
                        else "speaks of what the paragraph before it names and goes "
                        "only with the sentence there that names it")
                why = (f"{link} ({prior.id}), which an earlier stage dropped" if prior.dropped
                       else f"{link} ({prior.id}), which was not delivered; {why}")
            elif prior is not None and prior.id not in kept and _message_header(prior):
                # read as text, it would sit under the header above it, another message's (QA round A, F4)
                why = (f"is a part of a message and goes only with its header line ({prior.id}, "
                       f"{cost.get(prior.id, 0)} {room.unit}), which was not delivered: {why}")
            elif (rest := undelivered(limited_by, seg.id)):
                what = ("the first piece of a list item", "item") if seg.kind == "list" else (
                    "the first sentence of a numbered clause", "clause")
                why = (f"is {what[0]} and goes only with the later sentences of the {what[1]} that "
                       f"limit it ({', '.join(rest)}: {cost_of(rest)} {room.unit}), which were "
                       f"not delivered: {why}")
            elif (rest := undelivered(asked_by, seg.id)):
                why = (f"is an answer written in the numbered item of its question and goes only with that question "
                       f"({', '.join(rest)}: {cost_of(rest)} {room.unit}), which was not "
                       f"delivered: {why}")
            elif (rest := undelivered(cased_by, seg.id)):
                term, cue = _case_value(seg, by_id[rest[0]]) or ("its sum", "a condition")
                why = (f"states the {term} that the next sentence of its paragraph ({', '.join(rest)}: "
                       f"{cost_of(rest)} {room.unit}) sets otherwise for a case ({cue!r} …), "
                       f"and goes only with it, which was not delivered: {why}")
            elif (rest := undelivered(answered_by, seg.id)):
                why = (f"is a question and goes only with its answer later in its paragraph ({', '.join(rest)}: "
                       f"{cost_of(rest)} {room.unit}), which was not delivered: {why}")
            elif (rest := undelivered(excepted_by, seg.id)):
                why = (f"is a part of a numbered provision that {', '.join(rest)}, elsewhere in its source, names by its "
                       f"number to state an exception to it or a limit of it, and goes only with that "
                       f"({cost_of(rest)} {room.unit}), which was not delivered: {why}")
            elif (rest := undelivered(read_by, seg.id)):
                said = " ".join(by_id[f].original.strip() for f in rest)
                why = (f"is a part of a table and goes only with the line(s) of its source that say how its figures "
                       f"are to be read, their unit, scale or sign ({', '.join(rest)}: {said!r}, "
                       f"{cost_of(rest)} {room.unit}), which were not delivered"
                       + (f": {why}" if any(f in tiers for f in rest) else " (a layer the role does not take)"))
            elif (pending := undelivered(corrected_by, seg.id)):
                fix = by_id[pending[0]]
                link = (f"is a request whose outcome {fix.id}, a later segment, tells, and goes only with it (a request "
                        "already handled is not handed over as open)" if fix.id in seg.meta.get("resolved_by", ())
                        else f"is corrected by {fix.id}, a later segment that changes what it says, and goes only with "
                        "it (a stale value is not delivered as current)")
                why = (f"{link}; an earlier stage dropped {fix.id}" if fix.dropped or fix.id not in tiers
                       else f"{link}; {fix.id} was not delivered: {why}")
            elif whole and seg.id in whole:
                why += (f": the parts of a sentence that hold a marker go together, and those {len(whole[seg.id])} parts "
                        f"need {sum(cost[i] for i in whole[seg.id])} {room.unit}")
            final.append(seg.with_reason(
                f"budget: {why} ({where} {seg.layer}, score {seg.score if seg.score is not None else 0:.2f}, "
                f"{cost[seg.id]} {room.unit})", status="dropped"))
            continue
        if seg.id in kept:
            present[seg.layer] = True
        final.append(seg)
    return final, dropped, present


#: What a lead-in line introduces as a whole: the members of a fenced JSON block (``json``) too.
_BLOCK_KINDS = frozenset({"table", "code", "list", "json"})
#: A sentence that points to the block after its paragraph without ending in a colon ("The
#: following requirements are mandatory.", "… using the following weights."): a lead-in all the same.
_FORWARD_RE = re.compile(r"\b(?:the following(?! (?:year|month|week|day|morning|evening|night)\b)|as follows"
                         r"|(?:set out|listed|shown|given|described) below|下列|如下)", re.IGNORECASE)
#: A clause's title written as the first sentence of its paragraph: "Section 9.3 Force majeure.",
#: "Article 4 Payment:", "§ 12 Term.", "12.2 Termination for cause."; delivered alone, it would promise a clause that is not there.
_CLAUSE_TITLE_RE = re.compile(
    r"^(?:(?:Section|Sec\.|Clause|Article|Art\.|§)\s*\d+(?:\.\d+)*[.:]?(?:\s+[^\s.!?:;]+){1,6}"
    # any other capitalised name with a number, when the title after it is capitalised too
    # ("Exclusion 3.1 Wear and tear.", "Condition 4 Notice of loss:"; not "Payment 2 was late.")
    r"|[A-Z][a-z]{2,15}\s+\d+(?:\.\d+)*[A-Za-z]?[.:]?\s+[A-Z][^\s.!?:;]*(?:\s+[^\s.!?:;]+){0,5}"
    # a dotted number alone before a capitalised title ("12.2 Termination for cause.")
    # that neither opens with a determiner nor holds a verb ("4.1 The following requirements are
    # mandatory." is the clause itself; "18.7 No proceedings pending or threatened." is a title)
    r"|\d+(?:\.\d+)+\.?\s+(?!(?:The|This|These|That|Those|A|An|Each|Every|Any|All|It|We|You)\b)"
    r"(?![^.!?:;\n]*\b(?:" + TITLE_VERBS + r")\b)"
    r"[A-Z][^\s.!?:;]*(?:\s+[^\s.!?:;]+){0,5}"
    r")[.:](?=\s|$)"
    # Chinese: 第7条 免责条款。 / 第三章 赔偿：
    r"|^第[\d一二三四五六七八九十百千]+(?:\.\d+)*[条章节款项]\s*[^\s。！？；：:，,]{1,16}[。：:]$")


#: A title written in bold on a line of its own ("**Internal note — Tomasz Wójcik (SRE), 09:48 UTC**"):
#: it heads what follows it like a heading below every markdown level, up to the next such title,
#: heading or horizontal rule.
_BOLD_TITLE_RE = re.compile(r"^(\*\*|__)(?=\S)[^*_\n]{1,200}(?<=\S)\1[:.]?$")
_BOLD_LEVEL = 7
#: The dotted number opening a numbered title: "3.4" of "3.4 Service credits".
_TITLE_NUMBER_RE = re.compile(r"(\d{1,2}(?:\.\d{1,2})+)\.?\s")
#: Bold text that says something rather than names a section: a sentence ending in its own full stop,
#: or a prohibition ("**Never exceed 4 g of paracetamol in any 24-hour period.**"): delivered on its own.
_BOLD_STATEMENT_RE = re.compile(r"[.!?](?:\*\*|__)\s*$|\b(?i:not|never|no|must|shall|should|do not|don't|cannot|only)\b")
#: A paragraph opening with a bold run-in title: "**Water & Utilities.** Revenue rose …", "**Note:** …".
_RUN_IN_RE = re.compile(r"^(\*\*|__)(?=\S)[^*_\n]{1,80}?(?:[.:]\1|\1[.:])[ \t]+\S")
#: A date or a time of day, as a label opening a paragraph writes it (:data:`_DATE_LABEL_RE`): "05/09/2024",
#: "2024-09-05", "3 May", "3 May 2024", "May 3, 2024", with a time after it or alone ("14:10", "14:10 UTC").
_MONTH_NAME = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?"
               r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
_LABEL_DATE = (r"(?:\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|\d{4}-\d{2}-\d{2}|\d{1,2}(?:st|nd|rd|th)?\s+" + _MONTH_NAME
               + r"(?:\s+\d{4})?|" + _MONTH_NAME + r"\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?)")
_LABEL_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:\s?(?:am|pm|AM|PM|UTC|GMT|CET|CEST|Z|h))?"
#: A paragraph's first sentence that opens with a date or time label, a colon or a dash after it: "Day 4
#: (05/09/2024): Oxygen weaned off.", "2024-09-05 14:10 — Paged the on-call engineer.", "On 3 May: …",
#: "Week 2: …", "Tuesday, 3 May 2024 at 09:00: …". The paragraph's later sentences happened then: they go only
#: with the sentence that holds the label (:func:`_antecedents`). QA (s33 T2): in a discharge summary's progress
#: notes, "Blood glucose 9-14 mmol/L on glargine 10 units; dose increased to 12 units." and "Creatinine 112
#: µmol/L, eGFR 41 …" were delivered without "Day 4 (05/09/2024): …" and "Day 8 (09/09/2024): …", and read as
#: the current dose and the latest results. Not a sentence that only names a date ("On 3 May the ward …").
_DATE_LABEL_RE = re.compile(
    r"^(?:\*\*|__)?(?:"
    r"(?:Day|Week|Month|Night|Hour|Shift|Cycle|POD|Post-?op(?:erative)? day)\s+\d{1,3}"
    r"(?:\s*\((?:[A-Z][a-z]{2,8},?\s+)?" + _LABEL_DATE + r"(?:,?\s+" + _LABEL_TIME + r")?\))?"
    r"|(?:On\s+)?(?:[A-Z][a-z]{2,8}day,?\s+)?" + _LABEL_DATE + r"(?:,?\s+(?:at\s+)?" + _LABEL_TIME + r")?"
    r"|(?:At\s+)?" + _LABEL_TIME +
    r")(?:\*\*|__)?(?:\s*:|\s+[—–-])(?:\*\*|__)?[ \t]+\S")
#: A remark of three words or fewer, no figure in it, ending in "." or "!": "Not urgent.", "Agreed.",
#: "Yes, do it." (a later sentence of a transcript's line goes only with the one before it).
_REPLY_RE = re.compile(r"[^\W\d_][^\s\d]*(?:[ \t]+[^\s\d]+){0,2}[.!]")
#: A turn of a transcript that is only a short reply, up to three words of these, the first a yes or a no
#: ("OK", "No.", "Sure!", "Yes please", "No thanks", "Please do", "Go ahead", "That's fine"): it says what it
#: answers only with the question before it (:func:`_short_reply`).
_SHORT_REPLY_RE = re.compile(
    r"(?i:(?:yes|yeah|yep|yup|no|nope|nah|ok|okay|k|sure|fine|agreed|agree|correct|right|alright|absolutely|definitely"
    r"|certainly|exactly|please|go|that['’]s|sounds|of|not|deal|done)"
    r"(?:[ \t]*,?[ \t]+(?:yes|no|ok|okay|sure|fine|please|do|thanks|thank|you|ahead|good|great|right|correct|fine"
    r"|course|really|that['’]s|that|is|it|go|deal|sir|ma['’]am)){0,2})[ \t]*[.!]*")
#: The most words of a question that is a whole turn of the other side of a conversation with the one
#: served, delivered only with the answer after it (:func:`_antecedents`): "Doctor: Any fever?".
_ASK_WORDS = 10
#: A paragraph opening with a bold label that ends in a colon ("**Agent:** …", "**User (dana@ops):** …").
_LABEL_RUN_IN_RE = re.compile(r"^(\*\*|__)(?=\S)[^*_\n]{1,80}?(?::\1|\1:)[ \t]+\S")
#: A Chinese section's numbered title on a line of its own: "一、检查范围", "三、工作要求".
_ZH_SECTION_RE = re.compile(r"^[一二三四五六七八九十]{1,3}、[^\s。；;，,]{1,20}$")
#: A horizontal rule ("---", "***", "___", "* * *"): the end of a message or a section.
_RULE_RE = re.compile(r"^(?:-{3,}|\*{3,}|_{3,}|(?:\* ){2,}\*|(?:- ){2,}-)$")
#: What may follow the sender of a thread message's header line (:data:`~odcf.stages.rank._MESSAGE_HEADER_RE`,
#: "Message 3 — Customer (Farah Haddad)") on its line: nothing, or after a dash, a comma, a colon or a bar a date,
#: a time or a channel ("— 2025-04-05 16:20", ", 7 April 09:10 UTC:"), no second sentence; a "From:" line's sender
#: is any text without one. "Order 5 - the blue one (see photo) arrived broken." is no header.
_HEADER_TAIL_RE = re.compile(r"(?:\s*(?:[—–,:|]|-{1,2})\s*(?:(?![.!?]\s+\S)[^\n]){0,60})?")
_FROM_TAIL_RE = re.compile(r"(?:(?![.!?]\s+\S)[^\n]){0,200}")
#: A word ending a sentence: a tail that ends so says something ("Message 3 — Jana (customer): The sync still
#: fails.": the content is on the header's line).
_SAYS_RE = re.compile(r"[^\W\d_]{3}[.!?][\"'”’)\]]*$")
#: A line with a letter or a digit in it.
_WORDY_LINE_RE = re.compile(r"^[^\n]*[^\W_][^\n]*$", re.MULTILINE)


#: What a thread message's header names it by: the message itself ("Message 3", "Reply", "Internal note") or its
#: sender's role ("(customer)", "Agent (Dana Ortiz)").
_MESSAGE_WORD_RE = re.compile(
    r"\b(?:message|msg|reply|response|comment|note|update|email|e-mail|mail|post|customer|client|caller|patient|"
    r"guest|requester|requestor|agent|support|engineer|engineering|admin|administrator|user|staff|operator|"
    r"technician|representative|rep|manager|supervisor|assignee|reporter|billing|sales|bot|assistant|system)\b",
    re.IGNORECASE)
#: A person's name in a header: two or three capitalised words ("Farah Haddad", "Mei Tanaka").
_PERSON_NAME_RE = re.compile(r"\b[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+){1,2}\b")


def _names_a_sender(header: str) -> bool:
    """Whether a match of :data:`~odcf.stages.rank._MESSAGE_HEADER_RE` names a message or its sender (a word of
    :data:`_MESSAGE_WORD_RE` or a person's name), as "Message 3 — Customer (Farah Haddad)" does and a minutes' agenda
    line "Item 3 — Budget (Finance)" or a runbook's sentence "Overview — scope of this runbook (all on-call
    engineers)" does not (QA: the sentence then headed every later segment of the runbook as its "message")."""
    if header.rstrip().lower().endswith("from:"):
        return True
    return bool(_MESSAGE_WORD_RE.search(header) or _PERSON_NAME_RE.search(header))


def _message_header(seg: Segment) -> str | None:
    """``"alone"`` when *seg* is a ticket's or a thread's message header line (:data:`~odcf.stages.rank.
    _MESSAGE_HEADER_RE`: "--- Message 3 — Customer (Farah Haddad) — 2025-04-05 16:20", "Internal note — Mei
    Tanaka (engineering) — …", a "From: Jana Novak (client)" line that no email header holds), maybe between
    lines of punctuation ("=====") and over a greeting ("Hello,"), with nothing of its message's content;
    ``"with"`` when such a line opens a segment that goes on with content ("Message 2 — Agent (Dana Ortiz) —
    2025-04-03 09:02  Order #W4817026 shipped …", a thread joined into one line); else None. A heading, an
    email's header line, a speaker's line or a quoted one is none (each heads what it heads its own way)."""
    if (seg.kind != "sentence" or "mail_field" in seg.meta or "speaker" in seg.meta or seg.meta.get("quote")
            or seg.meta.get("quote_head")):
        return None
    # its first line with a letter or a digit: a line of "=====" or "---" over it is none
    first = _WORDY_LINE_RE.search(seg.original)
    m = _MESSAGE_HEADER_RE.match(first.group(0).strip()) if first is not None else None
    if m is None or _section_heading(seg) or not _names_a_sender(m.group(0)):
        return None
    tail = first.group(0).strip()[m.end():]
    if ((_FROM_TAIL_RE if m.group(0).rstrip().lower().endswith("from:") else _HEADER_TAIL_RE).fullmatch(tail)
            and not _SAYS_RE.search(tail)):
        rest = (line.strip() for line in _WORDY_LINE_RE.findall(seg.original, first.end()))
        return "alone" if all(pleasantry(line) for line in rest) else "with"
    # the content on the header's own line, after a sentence's end or a wide gap ("… 09:02  Order …")
    return "with" if re.match(r"\s*(?:[—–,:|]|-{1,2})", tail) else None


def _speech(seg: Segment) -> str:
    """What *seg* says, its speaker's label (and a time stamp before it) left out."""
    text, speaker = seg.original.strip(), str(seg.meta.get("speaker") or "")
    at = text.find(speaker) if speaker and seg.meta.get("opens_line") else -1
    return text[at + len(speaker):].strip() if at >= 0 else text


def _whole_turn(seg: Segment, nxt: Segment | None) -> bool:
    """Whether transcript line *seg*, which holds its speaker's label, is its whole turn: *nxt*, the
    segment after it, opens another (or is no line of a transcript)."""
    return bool(seg.meta.get("opens_line")) and (
        nxt is None or nxt.source_id != seg.source_id or "speaker" not in nxt.meta or bool(nxt.meta.get("opens_line"))
        or nxt.meta.get("speaker") != seg.meta.get("speaker") or nxt.meta.get("turn") != seg.meta.get("turn"))


def _asks(seg: Segment) -> bool:
    """Whether *seg* ends in a question mark (maybe in quotes or brackets)."""
    return seg.original.rstrip().rstrip("\"'”’)]*_ ").endswith(("?", "？"))


def _short_reply(seg: Segment, prev: Segment | None, nxt: Segment | None) -> bool:
    """Whether *seg* is a turn of a transcript that is only a short reply (:data:`_SHORT_REPLY_RE`: "Customer: OK")
    to a question that ends the turn before it, another speaker's (*prev*: "Agent: … Shall I cancel the order
    and refund the full amount of $89.90?")."""
    return (prev is not None and prev.source_id == seg.source_id and seg.kind == "sentence" and prev.kind == "sentence"
            and "speaker" in seg.meta and "speaker" in prev.meta and prev.meta["speaker"] != seg.meta["speaker"]
            and prev.paragraph < seg.paragraph and not prev.meta.get("label_only") and _whole_turn(seg, nxt)
            and _asks(prev) and _SHORT_REPLY_RE.fullmatch(_speech(seg)) is not None)


def _short_remark(seg: Segment, prev: Segment, nxt: Segment | None) -> bool:
    """Whether *seg*, a remark of two words or fewer (:data:`_REPLY_RE`: "Verified.", "Not verified."), is a
    sentence of prose after *prev*, in its paragraph or as a paragraph of its own right after it: it says
    something of that sentence only ("Step 3: … 2,100 psi, below the 2,800 psi minimum. Not verified."). Three
    words of prose may say something of their own ("The others passed.")."""
    if "speaker" in seg.meta or "speaker" in prev.meta or len(seg.original.split()) > 2:
        return False
    return prev.paragraph == seg.paragraph or (
        nxt is None or nxt.source_id != seg.source_id or nxt.paragraph != seg.paragraph)


def _heading_level(seg: Segment) -> int:
    """1–6 for a markdown heading (its ``#``), the level the segmenter gave a plain-text one
    ("ARTICLE 10 — INDEMNITY": 2, see :mod:`odcf.stages.segment.headings`), 7 for a bold title, and for a
    numbered title in a paragraph of its own 7 and one more for each part of its number after the second
    ("3.4 Service credits": 7, "3.4.1 Tier 1 sites": 8)."""
    if seg.kind != "heading":
        number = _numbered_title(seg)
        return _BOLD_LEVEL + (number.count(".") - 1 if number else 0)
    return segment_level(seg)


def _section_heading(seg: Segment) -> bool:
    """A markdown heading that names a section: short, no link, no second ``#`` (a line of hashtags
    written "# corvette # auction 2017 …" is a post, not a heading); or a bold title on a line of
    its own (:data:`_BOLD_TITLE_RE`) that is not a statement (one that is, over a list, introduces
    that list: see :func:`_antecedents`); or a numbered title on a line of its own
    (:func:`_numbered_title`)."""
    if _numbered_title(seg):
        return True
    if seg.kind == "sentence" and "\n" not in seg.original.strip() and _BOLD_TITLE_RE.match(seg.original.strip()):
        return len(seg.original.split()) <= 16 and "mail_field" not in seg.meta and not _BOLD_STATEMENT_RE.search(seg.original)
    if seg.kind != "heading":
        return False
    body = seg.original.lstrip().lstrip("#")
    return len(body.split()) <= 16 and "://" not in body and " # " not in body


def _numbered_title(seg: Segment) -> str | None:
    """The number of *seg* when it is a dotted number and a title in ordinary case on a line of its own,
    with no verb and no closing stop ("3.4 Service credits" over "3.4.1 If monthly availability …"; see
    :func:`~odcf.stages.segment.headings.heading_level`), else None. The segmenter makes such a line a
    heading only in a plain-text document; in a markdown one it heads what follows it all the same, up to
    the next heading or a paragraph whose number is not one of its parts ("3.5 …")."""
    line = seg.original.strip()
    if (seg.kind != "sentence" or "\n" in line or "speaker" in seg.meta or "mail_field" in seg.meta
            or seg.meta.get("lone_number")):
        return None
    m = _TITLE_NUMBER_RE.match(line)
    return m.group(1) if m and heading_level(line) == (4, True) else None


def _numbered_heading(seg: Segment) -> str | None:
    """The dotted number of a plain-text heading that is a numbered title ("3.2 Lithium plating"), else None."""
    line = seg.original.strip()
    m = _TITLE_NUMBER_RE.match(line) if seg.kind == "heading" and "\n" not in line else None
    return m.group(1) if m and heading_level(line) == (4, True) else None


def _titled_paragraph(seg: Segment) -> re.Match[str] | None:
    """The whole number's title (:data:`WHOLE_TITLE_RE`) on the first line of *seg*, a paragraph whose
    next line goes on in prose ("4. Conclusions" / "Charging LFP cells at 0 °C is safe only if …"), else None."""
    first, _, rest = seg.original.strip().partition("\n")
    rest = rest.lstrip()
    if not rest[:1].isupper() or _TITLE_NUMBER_RE.match(rest) or "speaker" in seg.meta or "mail_field" in seg.meta:
        return None
    return WHOLE_TITLE_RE.fullmatch(first.strip())


def _antecedents(doc: Document, pairs: Sequence[QAPair] | None = None) -> tuple[dict[str, str], set[str]]:
    """What each segment goes only with (id -> id), and the ids of the heads (headings and lead-ins).
    *pairs*: the question-and-answer pairs of *doc* (:func:`~odcf.stages.segment.qa.qa_pairs`, read
    here when not given).

    - a sentence that points back (:func:`~odcf.textutil.points_back`: "However, …", "After that, …",
      "Provided that …" (opening a paragraph too: -> the last sentence of the one above), "no other …",
      in its own paragraph a definite noun the sentence before names, opening it or as the object of a
      prohibition opening it, "Do not increase the dose …", or "these periods", "after that time" in a short one) -> the
      segment before it in its source, when that one is a sentence too (a heading or a table row is not what "However"
      answers), or a part of the same numbered paragraph. Lines of a transcript are left out: a
      delivered sentence there is written after its speaker's label, and speech opens many
      sentences with "But" that answer nothing in particular (pairing them cost QMSum evidence
      recall 0.619 -> 0.584 at 4x);
    - a later sentence of a quotation ("Never use the retail box as the shipping box; …" after "Your returns
      page says: Items must be returned within 30 days …": :func:`~odcf.stages.rank.quotation_goes_on`) -> the
      sentence before it, so that the rule a customer quotes never goes alone as the customer's own;
    - a sentence opening a paragraph with a definite noun the paragraph above names ("The resolution
      was carried 5–2") -> the first sentence of that paragraph that names it (else its first);
      "No other exclusions apply." after a
      list -> the list's last part;
    - a segment of a table, code block, list or quoted block right after a sentence ending in ":",
      or after a paragraph with a sentence saying "the following" -> that lead-in (a segment of a
      table, code block or quoted block right after a list item ending in ":" too); the first
      sentence of the paragraph under a sentence ending in ":" -> that sentence; a sentence on a later line of the
      paragraph of a sentence ending in ":" ("… caused by:" / "1.4 Escape of water …" / "1.5 Storm or flood.") -> that
      sentence, a head;
    - a segment of a chat turn whose speaker label stands on a line of its own ("tool:") -> that line;
    - a remark of three words or fewer later in a speaker's line ("… we saw age 1834. Not urgent."), or of two
      after a sentence of prose in its paragraph or as a paragraph of its own ("Verified.", :func:`_short_remark`) ->
      the sentence before it;
    - a transcript's turn that is only a short reply ("Customer: OK", :func:`_short_reply`) -> the question
      ending the turn before it, another speaker's; in a conversation with the one served
      (:func:`~odcf.stages.rank._user_turns`), a short question that is a whole turn of the other side
      ("Doctor: Any fever?") -> the served side's answer on the line after it;
    - a segment whose meta names a segment it is ``under`` (its index): a node of a YAML config ->
      its parent key line, a part of a diff's hunk -> the hunk's ``@@`` line -> its file's header
      lines; the one above is a head;
    - a later part of a sentence cut for length -> its first part, which holds the main clause;
    - a part of a stack trace in a log -> its entry's line, or the part before it (``trace_of``); the first
      part of a long Python traceback's frames -> its exception line, a part of its own that goes alone
      (``trace_head`` on that part);
    - a question of a question-and-answer log -> the opening of its answer, and a later segment of the
      question -> its first (:func:`_link_questions`);
    - a sentence of a paragraph whose first sentence is a clause title alone ("Section 9.3 Force
      majeure.") -> that title;
    - a later sentence of a paragraph that opens with a bold run-in title ("**Note:** …"), with a
      label line (:func:`_opens_with_label`) or with a date or time label ("Day 4 (05/09/2024): …",
      :func:`_dated`; a later line with a label of its own starts its own run) -> its first sentence, which
      holds it; every sentence of the
      paragraph under a label line alone in its paragraph ("Customer reply:") -> that line;
    - a quoted line -> the attribution of its quote ("On … wrote:"), and a nested quote's attribution
      -> the one of the quote around it;
    - an email's header: its From line (-> the heading above), and a segment of its body -> that
      line; its other header lines ("Sent:", "Subject:", "To:", "-----Original Message-----") -> the
      best-scored segment of its body, so that none is delivered alone;
    - a segment of a ticket's or thread's message -> its header line (:func:`_message_header`, "--- Message
      3 — Customer (Farah Haddad) — 2025-04-05 16:20"), up to the next one, a markdown heading or an email,
      a head like a heading (a bold title inside the message -> that line too); the header line goes with
      the heading above it, never with the message before it. A header line with content on it (a thread
      joined into one line: "Message 2 — Agent (Dana Ortiz) — … 09:02  Order #W… shipped …") is no head: it
      may go alone, and the rest of its message goes with it;
    - any other segment under a markdown heading (or a bold title on a line of its own, up to a
      horizontal rule) -> that heading; a heading -> the nearest heading above it of a higher level.
      Headings dropped by an earlier stage head nothing. A horizontal rule ends an email message."""
    out: dict[str, str] = {}
    heads: set[str] = set()
    mail = _Mail(out, heads)
    prev: Segment | None = None
    stack: list[tuple[int, str]] = []  # live headings of the current source: (level, id)
    lead: tuple[int, str] | None = None  # (paragraph of the block it introduces, lead-in id)
    label: tuple[Any, str] | None = None  # (chat turn, id) of a speaker label on a line of its own
    title: tuple[int, str] | None = None  # (paragraph, id) of a clause title alone opening its paragraph
    runin: tuple[int, str] | None = None  # (paragraph, id) of a sentence opening its paragraph with a bold title
    labelled: tuple[int, str] | None = None  # (paragraph, id of the label line alone in the paragraph above it)
    quotes: list[tuple[Any, int, str]] = []  # (quote block, depth, id) of the open attribution lines
    thread: tuple[str, int] | None = None  # (id, headings open above it) of the thread message's header line
    first_cut: str | None = None  # the first part of the over-long sentence being cut into parts
    cut_text = ""  # the text of that sentence's parts so far
    ahead: tuple[int, str] | None = None  # (paragraph, id) of a sentence that points to what follows
    inline: tuple[int, str] | None = None  # (paragraph, id) of a sentence ending in ":" over the lines after it there
    above: tuple[int, str | None, list[str], list[str]] | None = None  # (paragraph, its first sentence, its sentences, their ids)
    by_index: dict[int, Segment] = {}  # the current source's segments by index, for the ``under`` links
    by_id = {s.id: s for s in doc.segments}
    users = _user_turns(doc.segments)  # the lines of the one served by the other side (a customer, a patient)
    quoted = quotation_goes_on(doc.segments)  # the later sentences of a quotation -> the sentence before each
    for k, seg in enumerate(doc.segments):
        if prev is None or prev.source_id != seg.source_id:
            stack, lead, label, title, quotes, first_cut, ahead, above = [], None, None, None, [], None, None, None
            runin = labelled = thread = inline = None
            mail.close()
            by_index = {}
        by_index[seg.index] = seg
        heading = _section_heading(seg)
        nxt = doc.segments[k + 1] if k + 1 < len(doc.segments) else None
        whole = None
        if (seg.kind in ("sentence", "list") and (prev is None or prev.paragraph != seg.paragraph)
                and (opens := _TITLE_NUMBER_RE.match(seg.original.lstrip()) or (whole := (
                    (nxt is None or nxt.paragraph != seg.paragraph or nxt.source_id != seg.source_id)
                    and WHOLE_TITLE_RE.fullmatch(seg.original.strip()) or _titled_paragraph(seg))))):
            # "3.5 …" (or "4.1 …", or the title "2 Troubleshooting", or "4. Conclusions" over its paragraph)
            # ends the section of "3.4 Service credits"; "3.4.1 …" is a part of it. A whole number's title
            # ends a plain-text heading's section too ("3.2 Lithium plating", which the segmenter made a heading)
            while stack and (number := _numbered_title(by_id[stack[-1][1]])
                             or (whole and _numbered_heading(by_id[stack[-1][1]]))) \
                    and not opens.group(1).startswith(number + "."):
                stack.pop()
        if (not heading and seg.kind == "sentence" and _LABEL_RUN_IN_RE.match(seg.original)
                and (prev is None or prev.paragraph != seg.paragraph)):
            # a paragraph opening with a bold label ("**Agent:** Staging is healthy.") is the next turn
            # after a bold label over a block ("**Tool result:**" and its JSON), not a part of it; a
            # plain paragraph under "**Plan:**" and its table still is
            while stack and stack[-1][0] >= _BOLD_LEVEL and _ends_in_colon(by_id[stack[-1][1]].original):
                stack.pop()
        if (not heading and seg.kind == "sentence" and "\n" not in seg.original.strip()
                and _BOLD_TITLE_RE.match(seg.original.strip()) and nxt is not None and nxt.kind == "list"
                and nxt.source_id == seg.source_id):
            # a bold statement over a list ("**HELD — do not take …**" after "**CONTINUE (unchanged)**" and
            # its list) ends the bold title's section above it: it titles its own list (below)
            while stack and stack[-1][0] >= _BOLD_LEVEL:
                stack.pop()
        if _RULE_RE.match(seg.original.strip()):
            mail.close()  # a message, or the section of a bold title, ends at a horizontal rule
            while stack and stack[-1][0] >= _BOLD_LEVEL:
                stack.pop()
        if seg.meta.get("cut_part") == 0:
            first_cut, cut_text = seg.id, seg.original
        elif seg.meta.get("cut_part"):
            cut_text += " " + seg.original
        # what the sentence before says: all of it when it was cut into parts
        said = cut_text if prev is not None and prev.meta.get("cut_parts") else (prev.original if prev else "")
        field = seg.meta.get("mail_field")
        if heading or (field and seg.meta.get("mail") != mail.number):
            mail.close(seg.meta.get("mail") if field else None)
        opens = None if heading or field else _message_header(seg)  # a thread message's header line
        if opens is not None:
            mail.close()
        if thread is not None and (opens is not None or field):
            del stack[thread[1]:]  # a bold title inside the message ends with it
        if opens is not None or field or (heading and seg.kind == "heading"):
            thread = None  # the next message, an email's, or a section's
        attribution = _quote_context(seg, quotes)
        if seg.meta.get("budget_needs"):  # set by an earlier stage (a handoff links history turns)
            out[seg.id] = str(seg.meta["budget_needs"])
        elif seg.meta.get("cut_part") and first_cut is not None:
            out[seg.id] = first_cut
        elif seg.meta.get("trace_of") and (line := by_index.get(seg.index - seg.meta["trace_of"])) is not None:
            # a part of a stack trace goes only with its log line, a part of a commit's message with its
            # commit's header and subject (odcf.stages.segment)
            out[seg.id] = line.id
        elif seg.meta.get("under") is not None:
            # a node of a YAML config under its key line, a diff's hunk under its file's header lines
            # (odcf.stages.segment.yamlparts, .diffparts), a member of a JSON object under the object's id
            # member (odcf.stages.segment): the key or header line or id heads it; one that an
            # earlier stage dropped is not delivered, so neither is this
            parent = by_index.get(seg.meta["under"])
            out[seg.id] = parent.id if parent is not None else ""
            if parent is not None and not parent.dropped:
                heads.add(parent.id)
        elif field:
            if field in MAIL_HEAD_FIELDS and (mail.chain or stack):
                out[seg.id] = mail.chain[-1] if mail.chain else stack[-1][1]
        elif opens is not None:
            # a message's header line opens its message: it never goes with the message before it
            if stack:
                out[seg.id] = stack[-1][1]  # "# Ticket CS-1001" over its messages
        elif seg.id in quoted:
            # "Never use the retail box as the shipping box; …" after "Your returns page says: Items must be
            # returned within 30 days …": alone, the shop's rule the customer quotes reads as the customer's own
            out[seg.id] = quoted[seg.id]
        elif (prev is not None and prev.source_id == seg.source_id and (
                (seg.kind == "sentence" and prev.kind == "sentence")
                # a long numbered paragraph cut into parts: "Her Honour characterised that decision …"
                or (seg.kind == "list" and prev.kind == "list" and seg.paragraph == prev.paragraph))
                and ("speaker" not in seg.meta or "turn" in seg.meta)
                and "mail_field" not in prev.meta
                and (back := points_back(seg.original, said, same_paragraph=seg.paragraph == prev.paragraph))):
            out[seg.id] = prev.id
            if prev.id in out and back == person_opener(seg.original) == person_opener(prev.original):
                # "She …" after "She …": both speak of whom the sentence before them names, so it goes with
                # that one, not with every "She …" between (a biography's answer needed its whole paragraph)
                out[seg.id] = out[prev.id]
            if title is not None and title[1] == prev.id:
                heads.add(prev.id)  # "18.6 Pari passu ranking. Its payment obligations …": still only a title
        elif (prev is not None and prev.source_id == seg.source_id and seg.kind == "sentence"
                and prev.kind == "sentence" and _REPLY_RE.fullmatch(seg.original.strip())
                and ((prev.paragraph == seg.paragraph and "speaker" in seg.meta and not seg.meta.get("opens_line"))
                     or _short_remark(seg, prev, nxt))):
            # "Tom Becker: … the TTL is 900 seconds but we saw age 1834. Not urgent.": a short remark later in
            # a speaker's line says something of the sentence before it, never of what is delivered above it;
            # so does a checklist's "Verified." after its step, in the step's paragraph or as one of its own
            out[seg.id] = prev.id
        elif _short_reply(seg, prev, nxt) and prev is not None:
            # "Customer: OK" after "Agent: … Shall I cancel the order and refund the full amount of $89.90?":
            # alone, or under another question, it says nothing of what was decided
            out[seg.id] = prev.id
        elif (prev is not None and prev.source_id == seg.source_id and seg.kind == "sentence"
                and above is not None and above[1] is not None and above[0] == seg.paragraph - 1
                and prev.paragraph == above[0]
                and "speaker" not in seg.meta and refers_back(seg.original, " ".join(above[2]))):
            # "The resolution was carried 5–2 …" opening the paragraph under "**Resolution 2024/16:** IT WAS
            # RESOLVED …": it goes with the first sentence of that paragraph that names the resolution
            # (its first, unless a later one alone does: "The conflict is caused by:" goes with pip's
            # "ERROR: … conflicting dependencies.", not with the 400 tokens of "Collecting …" above it)
            out[seg.id] = next((sid for sid, text in zip(above[3], above[2]) if refers_back(seg.original, text)),
                               above[1])
        elif (prev is not None and prev.source_id == seg.source_id and seg.kind == "sentence"
                and prev.kind in _BLOCK_KINDS and NO_OTHER_RE.search(seg.original)):
            out[seg.id] = prev.id  # "No other exclusions apply." after the list of exclusions
        elif heading:
            level = _heading_level(seg)
            while stack and stack[-1][0] >= level:
                stack.pop()
            if thread is not None and len(stack) <= thread[1]:
                out[seg.id] = thread[0]  # a bold title inside a thread's message
            elif stack:
                out[seg.id] = stack[-1][1]
        elif attribution is not None:
            out[seg.id] = attribution
        elif lead is not None and _block_like(seg) and (seg.paragraph == lead[0] or (
                # a loose list: its items in paragraphs of their own, one after another (the item right
                # after the one the lead-in took: "3. Update …" after "2. Promote the standby:" and its code
                # block is no item of that block)
                seg.kind == "list" and prev is not None and prev.kind == "list" and seg.paragraph == lead[0] + 1
                and prev.paragraph == lead[0])):
            lead = (seg.paragraph, lead[1])
            out[seg.id] = lead[1]
            heads.add(lead[1])
        elif inline is not None and seg.paragraph == inline[0] and seg.kind == "sentence":
            # "We cover loss or damage to the buildings caused by:" / "1.4 Escape of water …" / "1.5 Storm or flood."
            # on the lines after it in its paragraph: alone, the lead-in went out with nothing after it, and "1.5
            # Storm or flood." means nothing without it (QA s34 A F6)
            out[seg.id] = inline[1]
            heads.add(inline[1])
        elif label is not None and seg.meta.get("turn") == label[0]:
            out[seg.id] = label[1]
        elif title is not None and seg.paragraph == title[0]:
            out[seg.id] = title[1]
            heads.add(title[1])
        elif (runin is not None and seg.paragraph == runin[0] and seg.kind == "sentence"
                and not (_dated(seg) and _dated(by_id[runin[1]]))):
            # "**Water & Utilities.** Revenue rose 7.7% … Margin 14.8%.": the paragraph's later sentences
            # speak of what its bold run-in title names, and go with the sentence that holds it (and so
            # with a label line over them: "Internal note (not visible to customer) — Priya, 15 April:")
            out[seg.id] = runin[1]
        elif labelled is not None and seg.paragraph == labelled[0] and seg.kind == "sentence":
            # every sentence of the paragraph under a label line ("Customer reply:"), not only its first
            out[seg.id] = labelled[1]
        elif mail.chain:
            out[seg.id] = mail.chain[-1]
        elif thread is not None and len(stack) <= thread[1]:
            # read as text, a message's content is under the header line above it: "Also I would prefer the
            # $198.00 as a refund to the card …" of Message 3, its header left out for room, was delivered
            # under "--- Message 1 — Customer (Farah Haddad) — 2025-04-02 08:14" (QA round A, F4)
            out[seg.id] = thread[0]
        elif stack:
            out[seg.id] = stack[-1][1]
        if opens is not None and not seg.dropped:
            thread = (seg.id, len(stack))
            if opens == "alone":
                # and delivered without any of its content, seven headers took 165 of 244 tokens (QA round A, F5)
                heads.add(seg.id)
        if field:
            mail.header(seg, field)
        elif mail.number is not None and not heading:
            mail.body(seg)
        if (prev is not None and prev.source_id == seg.source_id and seg.id in users and prev.id not in users
                and prev.kind == "sentence" and seg.kind == "sentence" and "speaker" in prev.meta
                and not prev.meta.get("label_only") and _whole_turn(prev, seg) and seg.meta.get("opens_line")
                and prev.id not in out and out.get(seg.id) != prev.id and _asks(prev)
                and len(_speech(prev).split()) <= _ASK_WORDS):
            # "Doctor: Any fever?" a whole turn of the other side of a conversation with the one served: alone,
            # the patient's next line delivered reads as its answer ("Patient: I'm allergic to penicillin.")
            out[prev.id] = seg.id
        if seg.meta.get("trace_head") and (first := by_index.get(seg.index - seg.meta["trace_head"])) is not None \
                and out.get(first.id) == out.get(seg.id):
            # a Python traceback's exception line goes alone, and the first part of its frames only with it
            # (odcf.stages.segment): "Traceback (most recent call last):" and three frames delivered without
            # "json.decoder.JSONDecodeError: Expecting value" say that something failed, not what
            out[first.id] = seg.id
        if seg.meta.get("quote_head") and not seg.dropped:
            quotes.append((seg.meta.get("quote_block"), int(seg.meta.get("quote", 0)), seg.id))
            heads.add(seg.id)
        if (seg.kind == "sentence" and not seg.dropped
                and (prev is None or prev.source_id != seg.source_id or prev.paragraph != seg.paragraph)):
            m = _CLAUSE_TITLE_RE.match(seg.original.strip())
            # a clause title alone as the first sentence ("Section 9.3 Force majeure.") heads its paragraph
            # and so does a title line over the later lines of its paragraph ("2025-03-11 10:00 Release 4.2.0")
            title = (seg.paragraph, seg.id) if (m and m.end() == len(seg.original.strip())) or _title_alone(seg, nxt) else None
            runin = (seg.paragraph, seg.id) if title is None and (
                _RUN_IN_RE.match(seg.original) or _opens_with_label(seg) or _opens_with_label(seg, title=True)
                or _dated(seg, short=True)) else None
        elif runin is not None and seg.paragraph == runin[0] and _dated(seg) and _dated(by_id[runin[1]]):
            # a later line of a timeline with a date label of its own ("2024-09-05 14:20 — Rolled back.")
            # happened then, not at the paragraph's first label: the lines after it go with it (if it is short)
            runin = (seg.paragraph, seg.id) if _dated(seg, short=True) else None
        if seg.meta.get("label_only") and not seg.dropped:
            label = (seg.meta.get("turn"), seg.id)
            heads.add(seg.id)
        if heading and not seg.dropped:
            stack.append((_heading_level(seg), seg.id))
            heads.add(seg.id)
        if (prev is not None and prev.source_id == seg.source_id and seg.paragraph == prev.paragraph + 1
                and (prev.kind == "sentence" or (prev.kind == "list" and seg.kind != "list" and _one_item(prev)))
                and not prev.meta.get("label_only")):
            # a line ending in ":" introduces the block under it, and so does a shell command its output
            # ("tool (bash): $ kubectl get pods" over the pods' table: never delivered without it); a list
            # item too ("- Rollback was a single command:" over its code block)
            colon = not prev.dropped and (_ends_in_colon(prev.original)
                                          # a Chinese section's title over its items ("三、工作要求" over （一）…)
                                          or _ZH_SECTION_RE.match(prev.original.strip()) is not None
                                          or _COMMAND_RE.search(prev.original.rstrip().rsplit("\n", 1)[-1]) is not None
                                          # a bold statement over a list ("**HELD — do not take until told by
                                          # your doctor**"): the title of that list, not of what follows it
                                          or (seg.kind == "list" and _BOLD_TITLE_RE.match(prev.original.strip())
                                              is not None and "\n" not in prev.original.strip()))
            if _block_like(seg):
                if colon:
                    lead = (seg.paragraph, prev.id)
                elif ahead is not None and ahead[0] == prev.paragraph:
                    # "4.1 The following requirements are mandatory. A tender that fails any of them …"
                    lead = (seg.paragraph, ahead[1])
                if lead is not None and lead[0] == seg.paragraph:
                    out[seg.id] = lead[1]
                    heads.add(lead[1])
            elif (colon and seg.kind == "sentence" and prev.kind == "sentence" and not heading and "mail_field" not in prev.meta
                    and "mail_field" not in seg.meta and opens is None and "speaker" not in seg.meta and "quote_head" not in prev.meta):
                # "5.3 A new Clause 12.4 is inserted:" and the clause in the paragraph under it
                out[seg.id] = prev.id
                heads.add(prev.id)
                if _label_line(prev.original) and (k < 2 or doc.segments[k - 2].source_id != prev.source_id
                                                   or doc.segments[k - 2].paragraph != prev.paragraph):
                    labelled = (seg.paragraph, prev.id)  # a label alone in its paragraph: "Customer reply:"
        if seg.kind == "sentence" and not seg.dropped and "mail_field" not in seg.meta:
            # the paragraph just read: (number, its first sentence, its sentences)
            if above is None or above[0] != seg.paragraph or above[1] is None:
                above = (seg.paragraph, seg.id, [seg.original], [seg.id])
            else:
                above[2].append(seg.original)  # a list: a long paragraph is joined once, when asked
                above[3].append(seg.id)
        elif above is not None and above[0] == seg.paragraph:
            above = (above[0], None, [], [])  # something else inside the paragraph: nothing to go with
        if inline is not None and inline[0] != seg.paragraph:
            inline = None
        if (inline is None and nxt is not None and nxt.source_id == seg.source_id and nxt.paragraph == seg.paragraph
                and seg.kind == nxt.kind == "sentence" and "\n" in nxt.sep and not seg.dropped
                and _ends_in_colon(seg.original) and not seg.meta.get("label_only")
                and not any(k in m.meta for m in (seg, nxt) for k in ("speaker", "mail_field", "quote_block"))):
            inline = (seg.paragraph, seg.id)  # what follows on its lines, in its paragraph, it introduces
        if seg.kind == "sentence" and not seg.dropped and _FORWARD_RE.search(seg.original):
            ahead = (seg.paragraph, seg.id)
        elif ahead is not None and seg.paragraph != ahead[0]:
            ahead = None
        prev = seg
    mail.close()
    _link_questions(out, heads, [p for p in (qa_pairs(doc.segments) if pairs is None else pairs)
                                 if not by_id[p.question[0]].meta.get("budget_needs")])
    return out, heads - _heads_left_by_copies(doc, out)


def _link_questions(out: dict[str, str], heads: set[str], pairs: list[QAPair]) -> None:
    """A question of a question-and-answer log goes only with its answer (its opening segment, which
    holds its number: "**Q19.** … Please confirm the minimum technical score." without "**A19.** The
    threshold is 65 points." asks, and the text does not answer), and its later segments with its first;
    the answer needs nothing of its question. Not when the answer opens with a head (a lead-in over a
    list: the question would bring that without a part of its list), nor when an earlier stage linked the
    question (a handoff's history turn, meta ``budget_needs``: *pairs* leaves those out)."""
    for pair in pairs:
        first, opening = pair.question[0], pair.answer[0]
        if opening in heads or first in heads:
            continue
        if out.get(opening) in pair.question:  # "**A3.** The threshold …" pointing back at the question
            if first in out:
                out[opening] = out[first]
            else:
                del out[opening]
        out[first] = opening
        for sid in pair.question[1:]:
            if out.get(sid) not in pair.question:
                out[sid] = first


#: A shell command on the last line of a sentence, after the prompt "$ " (maybe after a speaker's
#: label, "tool (bash): $ kubectl …"): what follows it is its output. A command starts with a letter
#: or a path, not a digit ("Amount due: $ 1,250.00" is an amount).
_COMMAND_RE = re.compile(r"(?:^|:[ \t]+)\$[ \t]+[A-Za-z_./~][^\n]*$")
#: The most words of a title line that heads the later lines of its paragraph (:func:`_title_line`).
_TITLE_WORDS = 8
#: What ends a sentence, or a line that goes on in the next (a title line ends in none of these).
_SENTENCE_ENDS = (".", "!", "?", ";", ":", ",", "。", "！", "？", "；", "：", "，", "*", "_", ")", "]", "-", "–", "—")
#: The most Han characters of a title line (:func:`_title_line`): a notice's long title,
#: "关于印发《某市政府采购管理办法》的通知" (17), is one; a line of Chinese prose wrapped at the width of a PDF
#: page (about 40) is not.
_TITLE_HAN = 24
#: A mark inside a line of Chinese prose that no title holds: a clause's comma or semicolon, a sentence's end.
_HAN_CLAUSE_RE = re.compile(r"[，；。！？]")


def _lone_rules(live: list[Segment], kept: set[str], rules: set[str]) -> set[str]:
    """The kept horizontal rules (*rules*) of *live* that separate nothing: with no kept segment of
    their source before or after them, or with only another kept rule since the last kept segment.

    >>> from odcf.document import Segment
    >>> segs = [Segment(id=str(i), source_id="a", index=i, text=t, original=t, kind="sentence")
    ...         for i, t in enumerate(["---", "Hello.", "---", "---", "Bye.", "---"])]
    >>> sorted(_lone_rules(segs, {"0", "1", "2", "3", "4", "5"}, {"0", "2", "3", "5"}))
    ['0', '3', '5']
    """
    lone: set[str] = set()
    pending: str | None = None  # a kept rule after a kept segment, waiting for the next one
    last_source: str | None = None
    seen = False  # a kept segment of this source came before
    for seg in live:
        if seg.source_id != last_source:
            if pending is not None:
                lone.add(pending)
            pending, seen, last_source = None, False, seg.source_id
        if seg.id not in kept:
            continue
        if seg.id in rules:
            if not seen or pending is not None:
                lone.add(seg.id)
            else:
                pending = seg.id
        else:
            seen, pending = True, None
    if pending is not None:
        lone.add(pending)
    return lone


def _pleasantry_messages(doc: Document, live: list[Segment], required: set[str]) -> dict[str, set[str]]:
    r"""Each optional greeting and sign-off of *live* (:func:`~odcf.stages.rank.pleasantries`: "Hi Daniel,",
    "Regards,\nMarta") -> the ids of the content of its message: the other segments of the email it ends
    (after its header, up to the next; the quoted reply under it aside) or of the ticket's or thread's
    message (after its header line, :func:`_message_header`, up to the next), or of the quoted message it is
    in (same quote block and depth), or of its source; header lines, attributions and headings are no
    content. It goes only with one of those: "From: Marta … / Hi Daniel, / Regards, Marta" said nothing at
    all, nor did "--- Message 1 — Customer (Farah Haddad) — … / Hi," (QA round A, F5)."""
    noise = pleasantries(live) - required
    if not noise:
        return {}
    ids = {s.id for s in live}
    keys: dict[str, tuple[Any, ...]] = {}
    mail: dict[str, Any] = {}  # each source's email being read
    for seg in doc.segments:
        if seg.meta.get("mail_field"):
            mail[seg.source_id] = seg.meta.get("mail")
            continue
        if (opens := _message_header(seg)) is not None:
            mail[seg.source_id] = ("thread", seg.id)
            if opens == "alone":
                continue
        if seg.id not in ids or seg.kind == "heading" or seg.meta.get("quote_head"):
            continue
        keys[seg.id] = ((seg.source_id, "quote", seg.meta.get("quote_block"), seg.meta["quote"])
                        if seg.meta.get("quote") else (seg.source_id, "mail", mail.get(seg.source_id)))
    content: dict[tuple[Any, ...], set[str]] = {}
    for sid, key in keys.items():
        if sid not in noise:
            content.setdefault(key, set()).add(sid)
    return {sid: content.get(keys[sid], set()) for sid in noise if sid in keys}


#: The most words of a label line: "Customer reply:", "Internal note (not visible to customer) — Priya, 15 April
#: 2025 09:10:" (a longer line ending in ":" is a sentence that introduces what follows).
_LABEL_WORDS = 12


def _label_line(text: str) -> bool:
    """Whether *text* is a short label on a line of its own ending in ":" ("Agent notes:", "**Customer
    reply:**"): no sentence ends inside it."""
    line = text.strip()
    return ("\n" not in line and _ends_in_colon(line) and len(line.split()) <= _LABEL_WORDS
            and re.search(r"[.!?。！？]\s", line) is None)


def _title_line(text: str) -> bool:
    """Whether *text* is a short title on a line of its own that ends no sentence ("2025-03-11 10:00
    Release 4.2.0" over the release's notes): at most :data:`_TITLE_WORDS` words, opening with a
    capital or a digit, not a shell command."""
    line = text.strip()
    return ("\n" not in line and 0 < len(line.split()) <= _TITLE_WORDS and line[:1].isalnum()
            and not line[:1].islower() and not line.endswith(_SENTENCE_ENDS)
            and re.search(r"[^\W\d_]", line) is not None and _COMMAND_RE.search(line) is None
            and not _han_prose(line))


def _han_prose(line: str) -> bool:
    """Whether *line* is a line of Chinese prose, never a title: it holds a clause's comma or semicolon or a
    sentence's end ("，", "；", "。"), or more Han characters than a title (:data:`_TITLE_HAN`). Chinese has no
    spaces, so its line is one word, and no case, so a line that goes on in lower case (:func:`_opens_with_label`)
    is no sign of a wrap: a line break inside a Chinese sentence is a wrap, not a title's end. QA (s31 F4): in a
    tender notice wrapped at 40 characters, "根据《中华人民共和国政府采购法》及相关规定，某市人民医院就64排螺旋CT及配套"
    was a title line over "设备采购项目进行公开招标，……" and the paragraph's later sentences, so the ceiling price
    (score 1.0) went only with that preamble (0.26) and, at 80 tokens, the preamble alone was delivered."""
    return HAN_RE.search(line) is not None and (
        _HAN_CLAUSE_RE.search(line) is not None or len(HAN_RE.findall(line)) > _TITLE_HAN)


def _title_alone(seg: Segment, nxt: Segment | None) -> bool:
    """Whether *seg*, a paragraph's first segment, is a title line (:func:`_title_line`) over the later
    lines of its paragraph, which start at *nxt*: it heads them like a clause title."""
    return (seg.kind == "sentence" and nxt is not None and nxt.source_id == seg.source_id
            and nxt.paragraph == seg.paragraph and nxt.kind == "sentence" and "\n" in nxt.sep
            and not nxt.original.lstrip()[:1].islower()
            and "speaker" not in seg.meta and "mail_field" not in seg.meta and _title_line(seg.original))


def _opens_with_label(seg: Segment, title: bool = False) -> bool:
    """Whether *seg*, a paragraph's first sentence, opens with a label line over the lines after it
    ("Internal note (not visible to customer) — Priya, 15 April 2025 09:10:" / "Refund approved …"):
    the paragraph's later sentences go with it, as with a bold run-in title. (A line going on in lower
    case is hard-wrapped prose: "We agreed on two points:" / "first, …".) With *title*, a title line
    (:func:`_title_line`) instead: "2025-02-20 14:15 Release 4.1.2" / "Minor translation updates."."""
    first, nl, rest = seg.original.strip().partition("\n")
    return (seg.kind == "sentence" and bool(nl) and not rest.lstrip()[:1].islower() and bool(rest.strip())
            and "speaker" not in seg.meta
            and "mail_field" not in seg.meta and (_title_line(first) if title else _label_line(first)))


#: The most words after its label that a paragraph's labelled first sentence holds for its later sentences to go
#: only with it (:func:`_dated`): "Day 4 (05/09/2024): Oxygen weaned off." (3), "Week 2: The patient walked unaided
#: in the corridor." (7).
_DATE_LABEL_WORDS = 10


def _dated(seg: Segment, short: bool = False) -> re.Match[str] | None:
    """The date or time label (:data:`_DATE_LABEL_RE`) opening *seg*, a sentence of prose (not a speaker's line
    nor an email's header line), else None: "Day 4 (05/09/2024): Oxygen weaned off.". With *short*, only where
    the sentence is the label and a few words (:data:`_DATE_LABEL_WORDS`), which a later sentence of its paragraph
    can go with at little cost. QA (s33 AA F2): steering-committee minutes, each paragraph "14:02 — The chair
    opened the meeting, welcomed … (50 words) The go-live date is confirmed as 2 December 2024.": tied to the
    whole narrative sentence, every decision was left out and 1/4 delivered only "14:55 — Meeting closed.", 23 of
    58 tokens."""
    if seg.kind != "sentence" or "speaker" in seg.meta or "mail_field" in seg.meta:
        return None
    text = seg.original.lstrip()
    m = _DATE_LABEL_RE.match(text)
    if m is None or (short and len(text[m.end() - 1:].split()) > _DATE_LABEL_WORDS):
        return None
    return m


def _ends_in_colon(text: str) -> bool:
    """Whether *text* ends in a colon, maybe inside its bold ("Smoke test:", "**Tool result:**")."""
    return text.rstrip().rstrip("*_").rstrip().endswith((":", "："))


def _one_item(seg: Segment) -> bool:
    """Whether *seg*, a piece of a list, holds one item or a part of one ("- Rollback was a single command:",
    "Run:", the last sentence of "4. Drain traffic from the primary region. Run:"): one that ends in ":"
    introduces the block after it (a part of several items is not held back for it)."""
    return sum(1 for line in seg.original.split("\n") if LIST_RE.match(line)) <= 1


def _block_like(seg: Segment) -> bool:
    """A table, code block (fenced JSON too) or list, or a part of a quoted block ("> 5.1 The monthly fee is …"):
    what a lead-in line ending in ":" introduces as a whole."""
    return seg.kind in _BLOCK_KINDS or seg.meta.get("quote_block") is not None


def _quote_context(seg: Segment, quotes: list[tuple[Any, int, str]]) -> str | None:
    """The attribution line ("On … wrote:") that *seg*, a part of a quoted block, goes with: the
    nearest one above it of its block at its depth or less (for an attribution, of a lower depth).
    *quotes* is updated to hold only those."""
    block = seg.meta.get("quote_block")
    if block is None:
        return None
    if quotes and quotes[0][0] != block:
        quotes.clear()
    depth = int(seg.meta.get("quote", 0))
    while quotes and (quotes[-1][1] >= depth if seg.meta.get("quote_head") else quotes[-1][1] > depth):
        quotes.pop()
    return quotes[-1][2] if quotes else None


class _Mail:
    """The email message being read by :func:`_antecedents`: its header lines that its body goes with
    (From: a head, in a chain of one), and its other header lines, which go only with the
    best-scored segment of its body once the message ends (heads, never delivered, when it has none)."""

    def __init__(self, out: dict[str, str], heads: set[str]) -> None:
        self.out = out
        self.heads = heads
        self.number: Any = None
        self.chain: list[str] = []
        self.others: list[str] = []
        self.body_ids: list[tuple[float, str]] = []  # (-score, id) of the live segments of its body

    def header(self, seg: Segment, field: str) -> None:
        if seg.dropped:
            return
        if field in MAIL_HEAD_FIELDS:
            self.chain.append(seg.id)
            self.heads.add(seg.id)
        else:
            self.others.append(seg.id)

    def body(self, seg: Segment) -> None:
        if not seg.dropped and seg.status != "merged":
            # its own lines first: a reply quoted under it is another message ("Subject: RE: …" of Marta's
            # went only with Daniel's quoted text, 97 tokens with its attribution, not with her own)
            self.body_ids.append((bool(seg.meta.get("quote")), -(seg.score or 0.0), seg.id))

    def close(self, number: Any = None) -> None:
        """End the message (its other header lines get what they go with) and start message *number*."""
        # heads (a lead-in, an attribution) are known once the message is read; min: the first of the best
        best = min((key for key in self.body_ids if key[2] not in self.heads), default=None,
                   key=lambda key: key[:2])
        for sid in self.others:
            if best is not None:
                self.out[sid] = best[2]
            else:
                self.heads.add(sid)
        self.number, self.chain, self.others, self.body_ids = number, [], [], []


def _heads_left_by_copies(doc: Document, before: dict[str, str]) -> set[str]:
    """Heads whose segments were all merged into copies elsewhere (dedup): they head nothing left
    here, so they may go on their own ("I will change reservation VA5SGQ to:" before a list
    delivered in an earlier turn); not a bare label (:func:`_bare_label`, "Observation:"), which
    alone reads as an empty output (QA s34: a step's repeated error output was merged into the
    step before, and "Observation:" went out with nothing under it)."""
    status = {s.id: s.status for s in doc.segments}
    text = {s.id: s.original for s in doc.segments}
    live: set[str] = set()
    merged: set[str] = set()
    for sid, head in before.items():
        if status.get(sid) == "merged":
            merged.add(head)
        elif status.get(sid) != "dropped":
            live.add(head)
    return {h for h in merged - live if not _bare_label(text.get(h, ""))}


#: The most words of a bare label (:func:`_bare_label`).
_BARE_LABEL_WORDS = 3


def _bare_label(text: str) -> bool:
    """Whether *text* is a label and nothing else, on a line of its own: a few words ending in ":"
    ("Observation:", "Tool result:"), no sentence that says something ("I will change reservation
    VA5SGQ to:")."""
    return _label_line(text) and len(text.split()) <= _BARE_LABEL_WORDS


def _whole_sentences(doc: Document) -> dict[str, tuple[str, ...]]:
    """The parts of a sentence cut for length that go together, by each one's id: its first part
    (the main clause) and every later part that holds a marker (the ontology's "a sentence holding
    one is kept whole": "provided, however, …" or "in no event …" in a later part must not be left
    out of the obligation it limits). Later parts without a marker may still be left out, marked " … ".
    And the end of a sentence that runs over a list, when it limits it ("except that …"): it with the list's
    last part, and every part of the list with it."""
    out: dict[str, tuple[str, ...]] = {}
    parts: list[Segment] = []
    prev: Segment | None = None
    run: list[Segment] = []  # the parts of the list just read
    # segments an earlier stage dropped take no part (the compress stage may keep no word of a list: QA, a
    # KeyError when "except that …" was tied to it)
    for seg in (*(s for s in doc.segments if not s.dropped), None):
        if (seg is not None and prev is not None and prev.kind == "list" and seg.kind == "sentence"
                and prev.source_id == seg.source_id and seg.text[:1].islower() and _limits(seg)):
            # the end of a sentence that runs over a list ("… liable for:" / "(c) indirect loss," / "except that
            # the Customer may recover …"): it goes with the list's last part, and every part of the list with
            # it (QA: the exclusions were delivered without "except that …" and read as absolute)
            out[seg.id] = (prev.id, seg.id)
            for part in run:
                out[part.id] = (part.id, seg.id)
        if seg is not None and seg.kind == "list":
            run = run + [seg] if run and run[-1].paragraph == seg.paragraph and run[-1].source_id == seg.source_id else [seg]
        else:
            run = []
        prev = seg
        if seg is not None and seg.meta.get("cut_part") and parts and seg.source_id == parts[0].source_id:
            parts.append(seg)
            continue
        ids = tuple(p.id for k, p in enumerate(parts) if k == 0 or p.meta.get("marker") or _limits(p))
        if len(ids) > 1:
            out.update(dict.fromkeys(ids, ids))
        parts = [seg] if seg is not None and seg.meta.get("cut_part") == 0 else []
    return out


#: A sentence that opens by forbidding: "Do not restart the pods: …", "Never leave it on …", "Avoid …".
_PROHIBITION_OPENER_RE = re.compile(r"^[\"'\u201c\u2018(\[*_]*(?i:do\s+not|don['’]t|never|avoid)\b")


def _item_limits(doc: Document) -> dict[str, tuple[str, ...]]:
    """What the first piece of a list item (the one holding its number or mark) goes only with: the later
    sentences of the item that open by forbidding (:data:`_PROHIBITION_OPENER_RE`: "2. If the logs show
    `connection refused`, go to section 4. Do not restart the pods: …"). Delivered without them, the step
    reads as whole (QA: "go to section 4" went without "Do not restart the pods", and section 4 restarts
    them); they may go without it, written after its number ("2. … Do not restart the pods: …"). Pieces an
    earlier stage dropped are not waited for. Not every later sentence holding a marker or a limiting
    connective: with those, the policy bullets of an agent's prompt ("- Change flights: … cannot … The
    agent must make sure …") took the room of the tool calls' ids (tau-bench 4x id recall 0.556 -> 0.483)."""
    first_of: dict[tuple[str, int], Segment] = {}
    out: dict[str, list[str]] = {}
    for seg in doc.segments:
        label = seg.meta.get("item_label")
        if seg.kind != "list":
            continue
        if not label:
            first_of[(seg.source_id, seg.index)] = seg
            continue
        first = first_of.get((seg.source_id, label[1]))
        if (first is not None and not first.dropped and not seg.dropped and first.paragraph == seg.paragraph
                and _PROHIBITION_OPENER_RE.match(seg.original.lstrip())):
            out.setdefault(first.id, []).append(seg.id)
    return {k: tuple(v) for k, v in out.items()}


#: A paragraph's first sentence opening with a clause's number: "III.5 The tenderer must …", "2.1 A tenderer …",
#: "X.3 Question: …", "Clause 4.2 The Buyer …" (not "2. …", which is any list's item, nor a year, "2024 was …").
_CLAUSE_OPENS_RE = re.compile(r"[ \t>*_]*(?:(?:[IVXLC]{1,6}|[A-Z]|\d{1,3})(?:\.\d{1,3})+|(?i:clause|section|article"
                              r"|paragraph|para\.|rule|§)\s*\d{1,3}(?:\.\d{1,3})*)\.?[ \t]+(?=\S)")
#: What limits a clause in a later sentence of it: "A tenderer with negative equity is eligible only if a parent company
#: provides a guarantee …", "… unless …", "… except …", "Provided that …", "… save that …". Not every limiting
#: connective of :data:`_LIMITING` ("if", "not", "no", "but" are in most sentences of a rule).
_CLAUSE_LIMIT_RE = re.compile(r"\b(?i:only\s+if|only\s+where|only\s+when|unless|except|excepting"
                              r"|provided(?:,\s*however,)?\s+that|save\s+that|save\s+where)\b")


#: A limit that bears on the clause's first sentence is short and says so early: "A tenderer with negative equity is
#: eligible only if …" (22 words, the limiter at its 8th). A long sentence with an "unless" deep inside it limits
#: what it says itself (QA AA F1: "… and the Supplier shall have no liability for any defect … unless the Buyer could
#: not reasonably have discovered it …", 106 tokens after "3.1 The Supplier shall deliver the Goods … no later than
#: 1 March 2025."; tied, the delivery date, the price and the notice period went undelivered at 1/4).
_CLAUSE_LIMIT_MAX_WORDS = 30
_CLAUSE_LIMIT_WITHIN_WORDS = 12


def _clause_limit(first: Segment, seg: Segment) -> bool:
    """Whether *seg*, the sentence right after *first* (a numbered clause's first sentence), limits it: at most
    :data:`_CLAUSE_LIMIT_MAX_WORDS` words, a limiter of :data:`_CLAUSE_LIMIT_RE` in its first
    :data:`_CLAUSE_LIMIT_WITHIN_WORDS` words ("A tenderer with negative equity is eligible only if …", "Unless …",
    "Provided that …"), and a word of *first* after its number ("tenderer", "equity"), so that the limit is on
    what the first sentence says (QA T1), not on something else the clause goes on to say (QA AA F1)."""
    text = seg.original.strip()
    m = _CLAUSE_LIMIT_RE.search(text)
    if m is None or len(text.split()) > _CLAUSE_LIMIT_MAX_WORDS \
            or len(text[:m.start()].split()) >= _CLAUSE_LIMIT_WITHIN_WORDS:
        return False
    head = first.original[(o.end() if (o := _CLAUSE_OPENS_RE.match(first.original)) else 0):]
    return bool(_stems(head) & _stems(text))


def _stems(text: str) -> set[str]:
    """The content words of *text*, a plural's "s" off ("Goods", "goods" and "good" alike)."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in _words(text, stop=True) if w.isalpha()}


def _clause_limits(doc: Document) -> dict[str, tuple[str, ...]]:
    """What the first sentence of a numbered clause (a paragraph opening with a clause's number,
    :data:`_CLAUSE_OPENS_RE`) goes only with: the sentence right after it in its paragraph, where that one limits
    it (:func:`_clause_limit`), as the first piece of a list item with its prohibitions (:func:`_item_limits`):
    "III.5 The tenderer must have a positive equity in the most recent approved annual report." was delivered
    without "A tenderer with negative equity is eligible only if a parent company provides a guarantee …",
    and read as "negative equity excludes" (QA T1). The limit may go without it. Not a later sentence that
    holds an "unless"/"except" about something else (QA AA F1, :data:`_CLAUSE_LIMIT_MAX_WORDS`). Sentences an
    earlier stage dropped are not waited for, nor the later parts of a sentence cut for length."""
    out: dict[str, list[str]] = {}
    first: Segment | None = None
    prev: Segment | None = None
    for seg in doc.segments:
        if prev is None or prev.source_id != seg.source_id or prev.paragraph != seg.paragraph:
            first = seg if seg.kind == "sentence" and _CLAUSE_OPENS_RE.match(seg.original) else None
        elif first is not None and seg.kind == "sentence" and seg.meta.get("cut_part"):
            pass  # a later part of a sentence cut for length is no later sentence (:func:`_whole_sentences`)
        else:
            if (first is not None and seg.kind == "sentence" and not first.dropped and not seg.dropped
                    and _clause_limit(first, seg)):
                out.setdefault(first.id, []).append(seg.id)
            first = None  # only the sentence right after it; a block inside the paragraph ends the clause too
        prev = seg
    return {k: tuple(v) for k, v in out.items()}


#: A sum of money or a percentage a sentence states: "EUR 1,000", "€500", "GBP 1,000", "1,250 euros", "20%". Groups: the
#: sign or code before the figure, the figure; or the figure, and the code, name or "%" after it.
_SUM_CODES = r"EUR|USD|GBP|CHF|JPY|CNY|AUD|CAD|NZD|SEK|NOK|DKK|PLN|CZK|INR|HKD|SGD|ZAR"
_SUM_RE = re.compile(r"(?:([€$£¥])\s?|\b(" + _SUM_CODES + r")\s?)(\d[\d,]*(?:\.\d+)?)"
                     r"|(?<![\w.,])(\d[\d,]*(?:\.\d+)?)\s?(%|(?:" + _SUM_CODES + r"|euros?|pounds?|dollars?)\b)")
#: The case a sentence sets its value for: "… is EUR 2,500 if the vehicle was not fitted with …", "Where the vehicle was
#: driven by a named driver under 25 …", "For escape of water claims the excess is GBP 1,000.", "… unless …", "… when …",
#: "… for drivers under 25".
_CASE_RE = re.compile(r"^[\W\d]*(?i:for|in\s+the\s+case\s+of)\b|\b(?i:if|where|when|whenever|unless|provided\s+that"
                      r"|in\s+(?:the\s+)?case\s+of|for\s+(?:[^\W\d_]+\s+){0,3}(?:under|over|aged|below|above|younger|older))\b")
#: Words before a sum that do not make it another term's: "the total deductible" is "the deductible".
_SAME_TERM_WORDS = frozenset({"total", "overall", "applicable", "full"})
#: The most words of either sentence of a case value (:func:`_case_value`): a policy's sentences, not a long paragraph's.
_CASE_VALUE_WORDS = 40
#: The most content words before a sum that name what it is the value of ("The theft deductible is EUR 1,000").
_TERM_WORDS = 6


def _sums(text: str) -> list[tuple[str, str, list[str]]]:
    """The sums of *text* (:data:`_SUM_RE`): (kind, figure without separators, the words before it in its clause,
    lower-cased, at most :data:`_TERM_WORDS` content words back): "The theft deductible is EUR 1,000." ->
    [("eur", "1000", ["the", "theft", "deductible", "is"])]."""
    out = []
    for m in _SUM_RE.finditer(text):
        kind = (m.group(1) or m.group(2) or m.group(5)).lower()
        figure = (m.group(3) or m.group(4)).replace(",", "")
        clause = re.split(r"[,;:()\n]|[.!?](?=\s)", text[:m.start()])[-1]
        said = [w.lower() for w in re.findall(r"[^\W\d_][\w'-]*", clause)]
        content = [k for k, w in enumerate(said) if w not in STOPWORDS]
        said = said[content[-_TERM_WORDS]:] if len(content) > _TERM_WORDS else said
        out.append((_CURRENCY_KIND.get(kind, kind), figure, said))
    return out


def _case_value(base: Segment, case: Segment) -> tuple[str, str] | None:
    """The term and the condition where *case*, the sentence right after *base* in its paragraph (not on a line of its
    own: the lines of a list of rules are each their own), gives a sum of that term another value for a case
    (:data:`_CASE_RE`) that *base* states with no condition: "The theft deductible is EUR 1,000." / "The deductible is
    EUR 2,500 if the vehicle was not fitted with a working approved tracking device …" -> ("deductible", "if"). The term
    is a word before a sum of one kind in both, and in *case* with no other word before it that *base* does not say
    there (:data:`_SAME_TERM_WORDS` aside): "the total deductible is EUR 1,250" is the deductible, "a late payment fee of
    EUR 25" no "fee is EUR 50"'s. Else None."""
    if (base.kind != "sentence" or case.kind != "sentence" or "\n" in case.sep or _ends_in_colon(base.original)
            or any(k in s.meta for s in (base, case) for k in ("speaker", "mail_field", "quote_block"))
            or any(len(s.original.split()) > _CASE_VALUE_WORDS for s in (base, case))
            or _CASE_RE.search(base.original) or not (cue := _CASE_RE.search(case.original))):
        return None
    stated = _sums(base.original)
    for kind, figure, said in _sums(case.original):
        for base_kind, _, base_said in stated:
            if kind != base_kind or figure in {f for k, f, _ in stated if k == kind}:
                continue
            terms = {w for w in base_said if w not in STOPWORDS}
            head = next((k for k in range(len(said) - 1, -1, -1) if said[k] in terms), None)
            if head is None:
                continue
            k = head - 1
            while k >= 0 and said[k] not in STOPWORDS and (said[k] in terms or said[k] in _SAME_TERM_WORDS):
                k -= 1
            if k < 0 or said[k] in STOPWORDS:
                return said[head], re.sub(r"^[\W\d]+", "", cue.group(0)).lower()
    return None


def _case_values(doc: Document) -> dict[str, tuple[str, ...]]:
    """What a sentence stating a sum goes only with: the sentence right after it in its paragraph that gives that sum
    another value for a case (:func:`_case_value`), as a numbered clause's first sentence with the sentence that limits
    it (:func:`_clause_limits`): "Section 3.2 Deductible. The theft deductible is EUR 1,000." delivered without "The
    deductible is EUR 2,500 if the vehicle was not fitted with a working approved tracking device …" told an adjuster
    EUR 1,000 where the tracker had lapsed, and "The deductible for own damage is EUR 500 per claim." without "Where the
    vehicle was driven by a named driver under 25 …, so the total deductible is EUR 1,250." a reply writer EUR 500 (QA
    s34 A F3). The case may go without it. Sentences an earlier stage dropped are not waited for."""
    out: dict[str, tuple[str, ...]] = {}
    prev: Segment | None = None
    for seg in doc.segments:
        if (prev is not None and prev.source_id == seg.source_id and prev.paragraph == seg.paragraph
                and not prev.dropped and not seg.dropped and not seg.meta.get("cut_part")
                and not prev.meta.get("cut_parts") and _case_value(prev, seg) is not None):
            out[prev.id] = (seg.id,)
        prev = seg
    return out


#: A sentence that says something was asked or checked, and what: "Checked whether Exclusion 5.9 applies.", "We asked if
#: the car was locked." (a date or a label before it aside); what follows "whether"/"if" is the question.
_ASKED_RE = re.compile(r"[\W\d]*(?:[^\W\d_][\w'’-]*:?\s+){0,3}?(?i:check(?:ed|ing)?|verif(?:y|ied|ying)|confirm(?:ed|ing)?"
                       r"|ask(?:ed|ing)?|quer(?:y|ied|ying)|review(?:ed|ing)?|assess(?:ed|ing)?|establish(?:ed|ing)?"
                       r"|investigat(?:e|ed|ing)|determin(?:e|ed|ing))\s+(?i:whether|if)\b")
#: An answer's opening "Yes" or "No" ("No, the joint was not touched.").
_YES_NO_RE = re.compile(r"[\W]*(?i:yes|no)\b[,.;:!—–-]")
#: The most words of a question that goes only with its answer later in its paragraph (:func:`_answered_later`).
_ASK_MAX_WORDS = 25
#: How many sentences after a question its answer is looked for, in its paragraph.
_ANSWER_WITHIN = 4


def _question_keys(text: str) -> set[str]:
    """The words and numbers of *text* an answer to it repeats: its content words, a plural's or a verb's "s" off
    ("applies", "apply" -> apply), and its numbers with their marks ("5.9", "1.4(a)")."""
    keys = set()
    for w in re.findall(r"\d+(?:\.\d+)*(?:\([a-z0-9]{1,3}\))*|[^\W\d_][\w'’-]*", text.lower()):
        if w[0].isdigit():
            keys.add(w)
        elif w not in STOPWORDS and len(w) > 2:
            keys.add(w[:-3] + "y" if w.endswith("ies") and len(w) > 4
                     else w[:-1] if w.endswith("s") and not w.endswith("ss") and len(w) > 3 else w)
    return keys


def _answered_later(doc: Document, pairs: Sequence[QAPair]) -> dict[str, tuple[str, ...]]:
    """What a question written in a paragraph of prose goes only with: its answer later in that paragraph. The question
    ends in "?" or says what was checked ("Checked whether Exclusion 5.9 applies.", :data:`_ASKED_RE`; at most
    :data:`_ASK_MAX_WORDS` words); the answer is the first of the :data:`_ANSWER_WITHIN` sentences after it there that
    repeats every word and number of the question (:func:`_question_keys`, at least two: "Exclusion 5.9 does not apply,
    despite the building work during the period."), or, right after a question ending in "?", one opening with "Yes" or
    "No". Delivered without it, the note left the reader asking whether the building-work exclusion applies (QA s34 A
    F5). The answer may go alone. Not a question of a question-and-answer log (*pairs*, :func:`_link_questions`), nor
    a speaker's line, an email's header or a quoted line."""
    paired = {sid for pair in pairs for sid in (*pair.question, *pair.answer)}
    segs = doc.segments
    out: dict[str, tuple[str, ...]] = {}
    for k, seg in enumerate(segs):
        if (seg.kind != "sentence" or seg.dropped or seg.id in paired or len(seg.original.split()) > _ASK_MAX_WORDS
                or any(key in seg.meta for key in ("speaker", "mail_field", "quote_block"))):
            continue
        text = seg.original.strip()
        asks = text.rstrip("*_\"'”’)").endswith(("?", "？"))
        m = None if asks else _ASKED_RE.match(text)
        if not asks and m is None:
            continue
        # what is asked: after "whether", or after a label or date before the question ("Notes: Does … apply?")
        keys = _question_keys(text[m.end():] if m else re.split(r"[:—–]\s+", text)[-1])
        for j, later in enumerate(segs[k + 1:k + 1 + _ANSWER_WITHIN]):
            if later.source_id != seg.source_id or later.paragraph != seg.paragraph or later.kind != "sentence":
                break
            if later.dropped or later.original.rstrip().endswith(("?", "？")):
                continue
            if (len(keys) >= 2 and keys <= _question_keys(later.original)) or (
                    asks and j == 0 and _YES_NO_RE.match(later.original)):
                out[seg.id] = (later.id,)
                break
    return out


def _asked_in_item(doc: Document, pairs: Sequence[QAPair], before: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """The question that the opening of an answer goes only with, by the answer's id, where both are written in
    one paragraph, a numbered clause's ("X.6 Question: Will the municipality accept an invoice in PDF format?
    Answer: No. Invoices must be in OIOUBL format …"): the answer has no number of its own, and its "No" answers
    nothing without the question (QA T1). The question already goes only with the answer (:func:`_link_questions`;
    not where that link was not made, a head in the pair). An answer in a paragraph of its own ("**A19.** The
    threshold is 65 points.") goes alone, as before."""
    by_id = {s.id: s for s in doc.segments}
    out: dict[str, tuple[str, ...]] = {}
    for pair in pairs:
        question, answer = by_id[pair.question[0]], by_id[pair.answer[0]]
        if (question.source_id == answer.source_id and question.paragraph == answer.paragraph
                and before.get(question.id) == answer.id and not question.dropped):
            out[answer.id] = (question.id,)
    return out


#: A numbered part of the document named in a sentence: a clause word and its number ("Paragraph
#: 2.1(d)", "clause 4.2", "Section 7", "Art. 10", "§ 5"); group 1 the number, maybe with its sub-parts.
_REF_NUMBER = r"\d+(?:\.\d+)*(?:\([a-z0-9]{1,4}\))*"
_REF = (r"(?<![\w§])(?i:(?:sub-?)?(?:paragraphs?|paras?\.|clauses?|cl\.|sections?|secs?\.|articles?|arts?\.|rules?)"
        r"|§§?)\s*(" + _REF_NUMBER + r")(?![\w.]\d|\w)")
#: More numbers after a reference: "Paragraphs 2.1(c) and 2.1(d)", "clauses 4.2, 4.3 or 4.5".
_MORE_REF = r"(?:\s*(?:,|\band\b|\bor\b)\s*" + _REF_NUMBER + r"(?![\w.]\d|\w))*"
#: A note in brackets after a reference: "Paragraph 2.1(d) (turnover)".
_REF_NOTE = r"(?:\s*\([^()\n]{1,40}\))?"
#: A sentence that states an exception to, or a limit of, a numbered part it names: "Paragraph 2.1(d)
#: does not apply to …", "Clause 4.2 shall apply only …", "Section 7 is subject to …", "Notwithstanding
#: clause 4.2, …", "By way of exception to Article 10, …". Not "Subject to Section 7, the Supplier may …"
#: nor "… except as provided in clause 3.1": those say, where they stand, that a limit exists.
_EXCEPTION_RE = re.compile(
    r"(?i:\b(?:notwithstanding|by way of (?:an )?exception to|as an exception to|in derogation (?:of|from))"
    r"\s+(?:(?:the provisions of|anything (?:contained )?in)\s+)?)(?P<a>" + _REF + _MORE_REF + r")"
    r"|(?P<b>" + _REF + _MORE_REF + r")" + _REF_NOTE +
    r"\s+(?i:(?:does|do|shall|will|must|is|are)\s+not\s+(?:apply|be\s+applicable|applicable|extend)"
    r"|(?:is|are|shall\s+be)\s+(?:disapplied|subject\s+to)|(?:shall\s+)?(?:applies|apply)\s+only|only\s+applies)\b")
#: Another instrument named in a sentence, so that a number it cites may be that instrument's: a name after
#: "in", "under", "of", "to", "pursuant to", "for the purposes of" … ("under the MSA", "in the Master Services
#: Agreement", "of Schedule 2", "to the Act"; never "this Agreement" nor "these Terms"), or one owning the
#: number ("the MSA's clause 4.1"). An acronym is one only when it ends in "A" (MSA, SLA, DPA: an agreement
#: or an act) or is SOW, GDPR, UCC: "report to the CFO" names none.
_INSTRUMENT = (r"(?:(?:[A-Z][\w&'’-]*|of|and|for|on)\s+){0,6}(?:Agreements?|Acts?|Regulations?|Rules|Code|Directive"
               r"|Treaty|Convention|Contract|Deed|Schedules?|Annex(?:es)?|Appendix|Appendices|Exhibit|Terms|Policy"
               r"|Statute|Ordinance|Charter|Protocol|Framework)\b(?:\s+(?:[A-Z]|\d+)\b)?"
               r"|\b(?:[A-Z]{1,4}A|SOW|GDPR|UCC)s?\b")
_OTHER_INSTRUMENT_RE = re.compile(
    r"(?<![\w-])(?i:in|under|of|to|within|from|by|pursuant\s+to|for\s+the\s+purposes?\s+of|according\s+to)\s+"
    r"(?:(?i:the)\s+)?(?:" + _INSTRUMENT + r")")
#: A possessive right before a reference: "the MSA's clause 4.1", "the Master Agreement's section 3".
_POSSESSIVE_RE = re.compile(r"\w(?:['’]s|s['’])\s*$")
#: The number a provision opens with: a heading ("## 2. Eligibility", "ARTICLE 10 — INDEMNITY", "3.4 Service
#: credits") or a paragraph's first sentence with a dotted number or a clause word ("2.1 A tenderer …", "Clause
#: 4.2 The Buyer …"; not "2. …", which is any list's item).
_OPENS_NUMBER_RE = re.compile(
    r"[ \t>#*_]*(?:(?i:paragraph|para\.|clause|section|sec\.|article|art\.|rule|§)\s*(\d+(?:\.\d+)*)"
    r"|(\d+(?:\.\d+)+))\.?(?=[\s:)—–-]|$)")
#: A heading's plain number: "## 2. Eligibility".
_HEADING_NUMBER_RE = re.compile(r"[ \t#*_]*(\d+(?:\.\d+)*)[.:)]?(?=\s|$)")
#: A sub-part's label opening a line of a list: "(d) has an annual turnover …", "d) …", "(iv) …".
_SUB_LABEL_RE = re.compile(r"^[ \t>*_-]*\(?([a-z]{1,2}|[ivx]{1,5}|\d{1,2})[).](?=\s)", re.MULTILINE)


def _cross_limits(doc: Document) -> dict[str, tuple[str, ...]]:
    """What a numbered provision goes only with elsewhere in its source: the sentences that state an
    exception to it or a limit of it by its number (:data:`_EXCEPTION_RE`: "2.3 Paragraph 2.1(d) does not
    apply to a consortium member that is not the prime contractor."), by the id of every segment of the
    provision. Delivered without them, "(d) has an annual turnover below AUD 10 million …" excluded the
    consortium members that 2.3 exempts (QA). The number must open exactly one provision of the source,
    a heading or a paragraph ("2.1 A tenderer …", "## 2. Eligibility"; "2.1" is not "2.10" nor "12.1"),
    and a sub-part ("(d)") an item of that provision's list; a provision runs to the next one or the next
    heading (a section holds its numbered parts: "Section 2" is all of "## 2. Eligibility"). A part of
    another document ("notwithstanding section 7 of the Act", "the MSA's clause 4.1") is none, nor is any
    number in a sentence that names another instrument (:data:`_OTHER_INSTRUMENT_RE`: "Under the MSA,
    clause 4.1 does not apply …"); exceptions an earlier stage dropped are not waited for."""
    opens: dict[tuple[str, str], int] = {}  # (source, number) -> how many segments open it
    parts: dict[tuple[str, str], list[str]] = {}  # (source, "2.1" or "2.1(d)") -> its segments
    refs: list[tuple[Segment, list[str]]] = []  # (exception, the numbers it names)
    prev: Segment | None = None
    current: str | None = None  # the number of the innermost provision open
    sub: str | None = None  # the label of the item of its list being read ("d")
    for seg in doc.segments:
        first = prev is None or prev.source_id != seg.source_id or prev.paragraph != seg.paragraph
        if prev is None or prev.source_id != seg.source_id:
            current, sub = None, None
        number = None
        if seg.kind == "heading":
            m = _OPENS_NUMBER_RE.match(seg.original)
            h = _HEADING_NUMBER_RE.match(seg.original)
            number = (m.group(1) or m.group(2)) if m else h.group(1) if h else None
            current, sub = number, None  # a heading without a number ends the numbered part above it
        elif seg.kind == "sentence" and first and (m := _OPENS_NUMBER_RE.match(seg.original)):
            number = m.group(1) or m.group(2)
            current, sub = number, None
        if number is not None:
            opens[(seg.source_id, number)] = opens.get((seg.source_id, number), 0) + 1
        if current is not None:
            if seg.kind == "list" or (first and seg.kind == "sentence"):
                # an item's label opening a line ("(d) has an annual turnover …"), else the item being read goes on
                labels = _SUB_LABEL_RE.findall(seg.original) or ([sub] if seg.kind == "list" and sub else [])
            else:
                labels = [sub] if sub and seg.kind == "sentence" else []
            sub = labels[-1] if labels else None
            for k in range(len(current) + 1):
                if k == len(current) or current[k] == ".":  # "3.4.1" is a part of "3.4" and of "3"
                    parts.setdefault((seg.source_id, current[:k]), []).append(seg.id)
            for label in labels:
                parts.setdefault((seg.source_id, f"{current}({label})"), []).append(seg.id)
        if seg.kind in ("sentence", "list") and seg.status != "dropped":
            named = []
            # a sentence naming another instrument may cite its parts: "Under the MSA, clause 4.1 does not apply
            # …" linked this schedule's own 4.1 (QA); when in doubt no link, for a false one costs the provision
            other = _OTHER_INSTRUMENT_RE.search(seg.original) is not None
            for m in _EXCEPTION_RE.finditer(seg.original) if not other else ():
                group = "a" if m.group("a") else "b"
                if (re.match(r"\s+of\s+(?!this\b|these\b)", seg.original[m.end(group):], re.IGNORECASE)
                        or _POSSESSIVE_RE.search(seg.original[:m.start(group)])):
                    continue  # "notwithstanding section 7 of the Act", "the MSA's clause 4.1": another document's part
                named += re.findall(_REF_NUMBER, m.group(group))
            if named:
                refs.append((seg, named))
        prev = seg
    out: dict[str, list[str]] = {}
    for seg, numbers in refs:
        for number in dict.fromkeys(numbers):
            base, _, rest = number.partition("(")
            if opens.get((seg.source_id, base)) != 1:
                continue  # no such provision here, or more than one: not one of this document's
            key = f"{base}({rest.split(')', 1)[0]})" if rest else base  # "(d)" of "2.1(d)(ii)": its item
            for sid in parts.get((seg.source_id, key), ()):
                if sid != seg.id and seg.id not in out.setdefault(sid, []):
                    out[sid].append(seg.id)
    return {k: tuple(v) for k, v in out.items()}


#: A currency in a line that states a table's unit, by its sign, code or name ("£", "US$", "GBP", "euros").
_CURRENCY = (r"(?:US\$|A\$|C\$|NZ\$|HK\$|S\$|R\$|[£$€¥₹]"
             r"|(?:GBP|USD|EUR|AUD|CAD|CHF|JPY|CNY|RMB|HKD|SGD|NZD|SEK|NOK|DKK|INR|ZAR)\b"
             r"|(?:(?:U\.?S\.?|Australian|Canadian|Hong\s+Kong|Singapore|New\s+Zealand)\s+)?dollars\b|euros?\b"
             r"|pounds(?:\s+sterling)?\b|sterling\b|yen\b|yuan\b|renminbi\b|(?:Swiss\s+)?francs\b|kronor\b|kroner\b"
             r"|rupees\b)")
#: A scale: "thousands", "millions", "'000", "000s", "m", "bn".
_SCALE = r"(?:thousands?|millions?|billions?|[‘'’]\s?000s?|000s|k|m|mn|bn)\b"
#: What a table's figures are in: "GBP thousands", "£m", "€ '000", "thousands of euros", "$ millions", "euros".
_AMOUNT = (r"(?:" + _CURRENCY + r"\s*" + _SCALE + r"|" + _SCALE + r"\s+of\s+" + _CURRENCY + r"|" + _CURRENCY
           + r"|(?:thousands|millions|billions))")
#: The figures a line speaks of: "All figures", "Amounts in this table", "The numbers".
_FIGURES = (r"(?:(?:all|the)\s+)?(?:figures|amounts|numbers|values|sums|totals|data)"
            r"(?:\s+(?:in|of)\s+(?:this|the)\s+(?:table|report|section|statement|schedule|document))?")
#: One statement of how figures are to be read: their unit or scale ("All figures in GBP thousands",
#: "Amounts are expressed in thousands of euros", "in $ millions", "€ '000"), their sign convention
#: ("Figures in parentheses are negative", "Negative amounts are shown in brackets"), or that they are
#: unaudited; maybe with "unless stated otherwise" or "except per share data".
_UNIT_STATEMENT = (
    r"(?:" + _FIGURES + r"\s+(?:(?:are|is)\s+)?(?:(?:stated|shown|presented|expressed|reported|given|denominated"
    r"|quoted)\s+)?in\s+" + _AMOUNT
    + r"|(?:(?:stated|shown|presented|expressed|reported|denominated)\s+)?in\s+" + _AMOUNT
    + r"|" + _CURRENCY + r"\s*" + _SCALE + r"|" + _SCALE + r"\s+of\s+" + _CURRENCY
    + r"|" + _FIGURES + r"\s+(?:(?:shown|given|stated)\s+)?in\s+(?:round\s+)?(?:parentheses|brackets)\s+(?:are|denote"
    r"|indicate|represent|show)\s+(?:negative(?:\s+(?:figures|amounts|numbers|values))?|negatives|losses|deductions"
    r"|debits|credits|outflows|decreases)"
    r"|negative\s+(?:figures|amounts|numbers|values)\s+(?:are\s+)?(?:shown|presented|given|stated|reported)\s+in\s+"
    r"(?:round\s+)?(?:parentheses|brackets)"
    r"|(?:parentheses|brackets)\s+(?:denote|indicate|show|represent)\s+negative\s+(?:figures|amounts|numbers|values)"
    r"|(?:" + _FIGURES + r"\s+(?:(?:are|is)\s+)?)?unaudited"
    r")(?:,?\s+(?:unless\s+(?:otherwise\s+)?(?:stated|indicated|noted|specified)(?:\s+otherwise)?"
    r"|except\s+(?:where|as|when)\s+(?:otherwise\s+)?(?:stated|indicated|noted|specified)(?:\s+otherwise)?"
    r"|except\s+(?:for\s+)?(?:per[-\s]share\s+(?:amounts|data|figures)|percentages|ratios)))?")
_UNIT_STATEMENTS = _UNIT_STATEMENT + r"(?:\s*(?:[;,]|\band\b)\s*" + _UNIT_STATEMENT + r")*"
#: A Chinese unit line: "单位：万元", "金额单位：人民币元", "单位：元 币种：人民币", "（未经审计）".
_ZH_UNIT = (r"(?:(?:金额)?单位\s*[：:]\s*(?:人民币|美元|港元|港币|欧元|日元)?\s*(?:千|万|百万|千万|亿)?元"
            r"(?:\s*[，,；;]?\s*币种\s*[：:]\s*(?:人民币|美元|港元|港币|欧元|日元))?|未经审计)")
#: A sentence that does nothing but state how the figures near it are to be read (:func:`_unit_lines`): "All
#: figures in GBP thousands unless stated otherwise.", "Figures in parentheses are negative.", "(€ '000)",
#: "Note: amounts in $ millions.", "单位：万元". Never a sentence that also says something of its own ("Revenue was
#: 412,600 in GBP thousands"): the whole of it must be such a statement.
_UNIT_LINE_RE = re.compile(
    r"[ \t>*_]*(?:(?i:notes?)\s*[:.]\s*)?[(\[（]?\s*(?i:" + _UNIT_STATEMENTS + r")\s*[)\]）]?[ \t*_]*[.。]?[ \t*_]*"
    r"|[ \t>*_]*[（(]?\s*" + _ZH_UNIT + r"\s*[)）]?[。]?[ \t*_]*")
#: A table's caption holding its unit in brackets: "Segment results (£'000)", "Table 2: Revenue by region (in $
#: millions, unaudited)", "分部业绩（单位：万元）"; a unit line only right before or after its table.
_UNIT_CAPTION_RE = re.compile(r"[(\[（]\s*(?:(?i:" + _UNIT_STATEMENTS + r")|" + _ZH_UNIT + r")\s*[)\]）]")
#: The most words of a caption line (:data:`_UNIT_CAPTION_RE`).
_CAPTION_WORDS = 16
#: The most characters of a unit line (:data:`_UNIT_LINE_RE`): a longer sentence says more than that (and a
#: 60k-character line is not matched against it at all).
_UNIT_LINE_CHARS = 240


def _unit_lines(doc: Document) -> dict[str, tuple[str, ...]]:
    """What each part of a table goes only with: the lines of its source that state how its figures are to be
    read (:data:`_UNIT_LINE_RE`: their unit or scale, their sign convention, that they are unaudited), by the id
    of every part of the table (QA: "| Group | 412,600 | 428,100 | (3.6%) | (1,204) | 7,850 |" went without "All
    figures in GBP thousands unless stated otherwise. Figures in parentheses are negative.", and £412,600
    thousand read as £412,600). A paragraph is such a line when every sentence of it is one; it governs:

    - the tables after it in its section, up to the next heading of its section's level or above (a note under
      a report's title, as in the QA's, the whole report; one before any heading, the whole source);
    - a paragraph of them right after a table, with no table right after it, is that table's note: it
      governs that table only ("Figures in parentheses are negative." under it);
    - a caption line right before or right after a table holding its unit in brackets ("Segment results
      (£'000)", :data:`_UNIT_CAPTION_RE`) governs that table only.

    Not any sentence naming a scale or a currency ("Revenue was £412.6 million", "in thousands of cases"), nor
    the figures of a sentence or a list (they state their unit where they stand: "Revenue of £412.6 million");
    a heading needs nothing here, as the parts of its section go with it already. Lines an earlier stage
    dropped are not waited for."""
    runs: list[list[Segment]] = []  # the source's paragraphs, in order
    for seg in doc.segments:
        if runs and runs[-1][0].source_id == seg.source_id and runs[-1][0].paragraph == seg.paragraph:
            runs[-1].append(seg)
        else:
            runs.append([seg])

    def table(run: list[Segment]) -> list[str]:
        return [s.id for s in run if s.kind == "table"]

    def note(run: list[Segment]) -> list[str]:
        """The ids of *run* when it is a paragraph of unit lines (those an earlier stage dropped left out)."""
        ok = all(s.kind == "sentence" and "speaker" not in s.meta and "mail_field" not in s.meta
                 and len(s.original.strip()) <= _UNIT_LINE_CHARS and _UNIT_LINE_RE.fullmatch(s.original.strip())
                 for s in run)
        return [s.id for s in run if s.status != "dropped"] if ok else []

    def caption(run: list[Segment]) -> list[str]:
        seg = run[-1]
        line = seg.original.strip()
        return ([seg.id] if len(run) == 1 and seg.kind == "sentence" and seg.status != "dropped" and "\n" not in line
                and len(line.split()) <= _CAPTION_WORDS and _UNIT_CAPTION_RE.search(line) else [])

    out: dict[str, tuple[str, ...]] = {}
    notes: list[tuple[int, list[str]]] = []  # (level of the section it is in, its ids) of the notes in force
    level = 0  # the level of the heading whose section is being read (0 before any)
    for k, run in enumerate(runs):
        prev = runs[k - 1] if k and runs[k - 1][0].source_id == run[0].source_id else None
        nxt = runs[k + 1] if k + 1 < len(runs) and runs[k + 1][0].source_id == run[0].source_id else None
        if prev is None:
            notes, level = [], 0
        for seg in run:
            if seg.kind == "heading":
                level = segment_level(seg) or level
                notes = [(lv, ids) for lv, ids in notes if lv < level]
        if parts := table(run):
            ids = [i for _, ids in notes for i in ids]
            if prev is not None and not table(prev):
                ids += note(prev) or caption(prev)  # a caption over the table, or a note right before it
            if nxt is not None and not table(nxt) and not (
                    k + 2 < len(runs) and runs[k + 2][0].source_id == run[0].source_id and table(runs[k + 2])):
                ids += note(nxt) or caption(nxt)  # a note under the table, not over the next one
            ids = list(dict.fromkeys(ids))
            if ids:
                out.update(dict.fromkeys(parts, tuple(ids)))
        elif (ids := note(run)) and not (prev is not None and table(prev) and not (nxt is not None and table(nxt))):
            notes.append((level, ids))  # in force to the end of its section (a table's own note is not)
    return out

#: Connectives whose clause limits or conditions the main clause: a part of a cut sentence holding one
#: goes with the first part ("…; provided, however, that the Supplier has no obligation …").
_LIMITING = ("except", "unless", "provided", "however", "but", "only if", "subject to", "save that", "other than",
             "notwithstanding", "if", "not", "no", "never")
#: The same in Chinese, for a sentence over 240 characters cut at its "；" as an English one is at ";" (QA: "第6.1条规定的
#: 违约金为合同总价款的百分之五；" went out without "但是，因不可抗力导致的延误除外。"): the exceptions and conditions of
#: odcf.plan.protection but its obligations and deeming words (应当, 必须, 视为: as "shall" is not above), and its
#: contrast words. Not its negations: "不" is in most clauses of a Chinese rule ("不得", "不超过"), and a cut
#: sentence would go whole or not at all.
_ZH_LIMITING = tuple(w for w in ZH_EXCEPTION_CONDITION if w not in ("应当", "必须", "视为")) + tuple(
    ZH_CONNECTIVES[ZH_CONNECTIVES.index("但是"):ZH_CONNECTIVES.index("不过") + 1])
#: "除……外" around what it excepts ("除本办法另有规定外", "除不可抗力外"): no connective span holds it. Not the 除 of
#: a word ("解除", "删除", "免除": "解除合同外的其他责任").
_ZH_EXCEPT_RE = re.compile(r"(?<![解删排免清去拆开扣废剔消])除[^，,。；;：:！？]{1,30}?外")


def _limits(seg: Segment) -> bool:
    """Whether *seg* holds a connective span that limits or conditions what it goes on from."""
    return any(sp.rule.startswith(("connective:", "dep:")) and sp.rule.split(":", 1)[1].startswith(_LIMITING + _ZH_LIMITING)
               for sp in seg.protected) or _ZH_EXCEPT_RE.search(seg.original) is not None


def _chain(sid: str, before: dict[str, str], present: Callable[[str], bool]) -> list[str]:
    """*sid* and the segments it needs (back to the first one *present* or that needs none), the
    needed ones first. A link back to a segment already in the chain ends it."""
    out, seen = [sid], {sid}
    while out[-1] in before and not present(before[out[-1]]) and before[out[-1]] not in seen:
        out.append(before[out[-1]])
        seen.add(out[-1])
    return out[::-1]


class _Groups:
    """Which segments go in and out together: a sentence that points back needs the one before it."""

    def __init__(self, before: dict[str, str], tiers: dict[str, tuple[int, float, int]],
                 merged: set[str] | None = None, heads: set[str] | None = None,
                 whole: dict[str, tuple[str, ...]] | None = None,
                 corrected_by: dict[str, tuple[str, ...]] | None = None,
                 titles: set[str] | None = None, courtesy: Mapping[str, set[str]] | None = None) -> None:
        self.before = before
        # a greeting or sign-off -> the content of its message, one of which must be delivered for it to be
        self.courtesy = courtesy or {}
        # the heads that are headings, bold titles or a thread message's header lines: they lend no score
        self.titles = titles or set()
        self.tiers = tiers
        self.merged = merged or set()
        self.heads = heads or set()
        self.whole = whole or {}  # each part of a sentence that goes whole -> all its parts
        self.after: dict[str, list[str]] = {}
        for sid, prior in before.items():
            self.after.setdefault(prior, []).append(sid)
        self.corrected_by = corrected_by or {}  # a stale value -> the later segments that correct it
        self.corrects: dict[str, list[str]] = {}
        for sid, fixes in self.corrected_by.items():
            for fix in fixes:
                self.corrects.setdefault(fix, []).append(sid)

    def best_part(self, head: str, ok: Callable[[str], bool]) -> str | None:
        """The best-ranked segment that *head* heads and that passes *ok*, or None."""
        kids = [c for c in self.after.get(head, ()) if c in self.tiers and ok(c)]
        return min(kids, key=self.tiers.__getitem__) if kids else None

    def to_add(self, sid: str, kept: set[str]) -> list[str]:
        """What taking *sid* takes: it and the sentences it needs (every part of a sentence that
        goes whole), and what corrects any of them with what that needs, or [] when one of those
        cannot be delivered (dropped earlier, or a layer the role does not take), or when *sid* is a
        greeting or sign-off none of whose message's content is in *kept*. A sentence merged
        into its duplicate elsewhere (dedup) counts as delivered: its words are there to read."""
        if sid in self.courtesy and not self.courtesy[sid] & kept:
            return []
        out: list[str] = []
        taken: set[str] = set()  # the ids in *out*
        todo, seen = deque([sid]), {sid}
        # every part of a sentence that goes whole maps to the same tuple of parts: each such sentence
        # is walked once, by the tuple's identity (walking it again for each of its parts, n chains n
        # times, made one 60k-word line with no sentence break, cut into 350 parts, run over 300 s)
        walked: set[int] = set()

        def present(i: str) -> bool:
            return i in kept or i in self.merged

        while todo:  # the parts of a sentence that go whole, for every sentence the chain takes
            parts = self.whole.get(todo.popleft(), ()) or (sid,)
            if id(parts) in walked:
                continue
            walked.add(id(parts))
            for part in parts:
                chain = _chain(part, self.before, present)
                if not all(i in self.tiers or i in self.merged for i in chain):
                    return []
                for i in chain:
                    if i not in self.merged and i not in taken:
                        out.append(i)
                        taken.add(i)
                    if i in self.whole and i not in seen and i not in kept:
                        seen.add(i)
                        if id(self.whole[i]) not in walked:
                            todo.append(i)
        for i in list(out):
            fixes = self.corrected_by.get(i)
            if not fixes or taken.issuperset(fixes):
                continue  # taken already (a figure repeated in every part corrects them all: one check each)
            for fix in fixes:
                if fix in kept or fix in self.merged or fix in taken:
                    continue
                more = self.to_add(fix, kept | taken)
                if not more:
                    return []
                for j in more:
                    if j not in taken:
                        out.append(j)
                        taken.add(j)
        return out

    def prune(self, gone: set[str], kept: set[str], required: set[str]) -> None:
        """After *gone* left *kept*: a head (heading, lead-in) none of whose segments is still kept
        leaves too, and so on up its headings."""
        todo = [self.before[g] for g in gone if g in self.before]
        while todo:
            head = todo.pop()
            if (head in self.heads and head in kept and head not in required
                    and not any(ch in kept for ch in self.after.get(head, ()))):
                kept.discard(head)
                if head in self.before:
                    todo.append(self.before[head])

    def dependents(self, sid: str) -> set[str]:
        """*sid* and every sentence that, directly or through others, points back to it (and the
        other parts of a sentence that goes whole, and what it corrects)."""
        out, todo = {sid}, [sid]
        while todo:
            cur = todo.pop()
            for nxt in (*self.after.get(cur, ()), *self.whole.get(cur, ()), *self.corrects.get(cur, ())):
                if nxt not in out:
                    out.add(nxt)
                    todo.append(nxt)
        return out


def _tier(seg: Segment, mandatory: bool, contract: RoleContract) -> int | None:
    if seg.layer == "instruction":
        return 0
    if seg.layer in contract.forbidden:
        return None
    priority = contract.priority_of(seg.layer)
    if priority is None:
        return None
    if mandatory or (seg.layer == "state" and priority == 0):
        return 1
    return 2 + priority
