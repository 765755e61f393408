"""Reasoning drafts: truncated with an evidence index when they would crowd out the rest.

A reasoning trace (another agent's draft) reaches a role only when its contract does not forbid
the reasoning layer. When it is allowed but longer than the room it gets (at least ``share``, 25%
of the budget; more when the rest leaves room, see :mod:`odcf.handoff.engine`), it is cut at
sentence boundaries, keeping its constraint sentences first (:func:`constraint_strength`), and an
evidence index says what the omitted part rested on::

    [reasoning truncated: sentences 9–31 of 31 omitted (812 tokens); evidence: source 3, rows 5–7; item t2]

The index lists the citations found in the omitted sentences — ``source 3``, ``item t2``,
``[4]``, a row/line/page range after them, and any known item id that is not a plain word
(``t2``, ``policy-eta``) — plus the item's own
``cites``; with no citation there it says so, and the omitted range alone is the pointer. An omitted
sentence stating a prohibition, obligation or limit (tiers 3 and 2 of :func:`constraint_strength`) is named
after the omitted tokens, ``omitted (107 tokens; sentence 5 states a constraint)``, where the cap leaves room
for it; an opening sentence is kept only beside it (QA: a draft cut to 44 tokens kept "We compared both options
against the policy. Step 1: re-read the order." while its "The refund must go to … gift_card_3491931, never to a
new card." needed 55 with the index, and nothing said it was there).

>>> from odcf.handoff.items import HandoffItem
>>> from odcf.tokens import get_counter
>>> it = HandoffItem(id="r1", layer="reasoning", text="Option B is cheaper. " * 8 + "See source 3, rows 5-7.")
>>> cut = truncate_reasoning(it, cap=40, counter=get_counter("o200k_base"))
>>> cut.text.splitlines()[-1]
'[reasoning truncated: sentences 3–9 of 9 omitted (41 tokens); evidence: source 3, rows 5–7]'
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from odcf.handoff.items import HandoffItem
from odcf.textutil import split_sentences
from odcf.tokens import TokenCounter, get_counter  # noqa: F401 - get_counter for the doctests

REASONING_SHARE = 0.25

_RANGE = r"(?:rows?|lines?|pages?|pp?\.|cells?|§)\s*\d+(?:\s*(?:[-–—]|to)\s*\d+)?"
_CITE_RE = re.compile(
    rf"\b(?P<what>source|item|doc(?:ument)?|ref(?:erence)?|tool output|evidence)\s*#?\s*(?P<id>[A-Za-z0-9_.:-]*\d[A-Za-z0-9_.:-]*|[A-Za-z]\w*\d\w*)"
    rf"(?:\s*[,(]?\s*(?P<range>{_RANGE}))?"
    rf"|\[(?P<num>\d{{1,3}})\]",
    re.IGNORECASE,
)
_RANGE_RE = re.compile(_RANGE, re.IGNORECASE)


@dataclass(frozen=True)
class ReasoningCut:
    """A reasoning item's delivered text and what was cut."""

    item: str
    text: str
    truncated: bool
    tokens_in: int
    tokens_out: int
    kept_sentences: int = 0
    total_sentences: int = 0
    evidence: tuple[str, ...] = ()
    index_line: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item, "truncated": self.truncated, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "kept_sentences": self.kept_sentences,
                "total_sentences": self.total_sentences, "evidence": list(self.evidence),
                "index": self.index_line}


def citations(text: str, known_ids: Iterable[str] = ()) -> list[str]:
    """Citations in *text*, in order of appearance, without repeats."""
    found: list[tuple[int, str]] = []
    for m in _CITE_RE.finditer(text):
        if m.group("num"):
            found.append((m.start(), f"source {m.group('num')}"))
            continue
        label = f"{m.group('what').lower()} {m.group('id').rstrip('.,:;')}"
        if m.group("range"):
            label += ", " + _norm_range(m.group("range"))
        found.append((m.start(), label))
    for kid in known_ids:
        # a plain word ("calc", "constraint") is only a citation when written "item calc"
        lead = r"\bitem\s+" if kid.isalpha() else r"(?<![\w-])"
        for m in re.finditer(lead + re.escape(kid) + r"(?![\w-])", text, re.IGNORECASE if kid.isalpha() else 0):
            found.append((m.start(), f"item {kid}"))
    covered: list[str] = []
    for _, label in sorted(found):
        if label not in covered and not any(c.startswith(label + ",") or c.endswith(" " + label.split(" ", 1)[1])
                                            for c in covered):
            covered.append(label)
    return covered


def merge_ranges(labels: list[str]) -> list[str]:
    """Adjacent or overlapping ranges of one source joined: "source 2, rows 5–6", "source 2, rows
    7–9" -> "source 2, rows 5–9" (a draft that cites 400 neighbouring row pairs has one range).

    >>> merge_ranges(["source 2, rows 5–6", "source 2, rows 7–9", "item t2", "source 2, row 12"])
    ['source 2, rows 5–9', 'item t2', 'source 2, row 12']
    """
    out: list[str] = []
    spans: dict[tuple[str, str], int] = {}  # (what, unit) -> index in out of its last range
    for label in labels:
        m = _LABEL_RANGE_RE.match(label)
        if m is None:
            out.append(label)
            continue
        key = (m.group("what"), m.group("unit").rstrip("s"))
        lo, hi = int(m.group("lo")), int(m.group("hi") or m.group("lo"))
        k = spans.get(key)
        if k is not None:
            prev = _LABEL_RANGE_RE.match(out[k])
            assert prev is not None
            plo, phi = int(prev.group("lo")), int(prev.group("hi") or prev.group("lo"))
            if lo <= phi + 1 and hi >= plo - 1:
                a, b = min(lo, plo), max(hi, phi)
                out[k] = f"{key[0]}, {key[1]}s {a}–{b}" if b > a else f"{key[0]}, {key[1]} {a}"
                continue
        spans[key] = len(out)
        out.append(label)
    return out


_LABEL_RANGE_RE = re.compile(r"^(?P<what>.+), (?P<unit>rows?|lines?|pages?) (?P<lo>\d+)(?:–(?P<hi>\d+))?$")


def _index_line(kept: list[int], total: int, omitted_tokens: int, evidence: list[str], counter: TokenCounter,
                room: int, constraints: Sequence[int] = ()) -> str:
    """The index line, its evidence list cut to *room* tokens ("…; +37 more") so that the index
    never crowds out the draft it stands for. *kept*: the 0-based indices of the kept sentences;
    *constraints*: those of the sentences stating a prohibition, obligation or limit, which the line
    names when they are omitted ("sentence 5 states a constraint": left out for room, it is not hidden)."""
    keep = set(kept)
    omitted = [k + 1 for k in range(total) if k not in keep]
    binding = [k + 1 for k in constraints if k not in keep]
    said = (f"; sentence {binding[0]} states a constraint" if len(binding) == 1
            else f"; sentences {_ranges(binding)} state constraints" if binding else "")
    head = f"[reasoning truncated: sentences {_ranges(omitted)} of {total} omitted ({omitted_tokens} tokens{said}); "
    if not evidence:
        return head + "evidence: none cited in the omitted part]"
    shown = len(evidence)
    while True:
        rest = len(evidence) - shown
        line = head + f"evidence: {'; '.join(evidence[:shown])}" + (f"; +{rest} more" if rest else "") + "]"
        if shown <= 1 or counter.count(line) <= room:
            return line
        shown = max(1, min(shown - 1, shown * room // max(counter.count(line), 1)))


def _norm_range(r: str) -> str:
    r = re.sub(r"\s*(?:[-—]|to)\s*", "–", r.strip())
    return re.sub(r"\s*–\s*", "–", r)


#: How strongly a sentence constrains the next agent, strongest first: a prohibition, an
#: obligation or a safety need ("do not quote …", "must not be posted", "never …", "required",
#: "severe peanut allergy"), then a limit, condition or exception ("only if …", "unless …",
#: "except …", "until confirmed", "max €160", "at most 25 minutes"), then any other negation
#: ("are not affected", "no injuries"). The same in Chinese for the first two tiers ("请勿…", "必须…", "过敏";
#: "不超过…", "仅…", "除非…"): QA, a user's "请勿直接给客户发邮件" and "总预算不超过人民币30万元" were plain old turns in a
#: handoff and trimmed while "请介绍一下第3份参考资料。" went out. (No Chinese negation tier: "不" is inside too many
#: plain words, 不错, 不同, 不过, to mark a constraint by itself.)
_CONSTRAINT_TIERS = (
    (3, re.compile(r"\b(?:(?:do|does|did|must|should|shall|may|can|need)\s+not|never|cannot|"
                   r"(?:do|does|did|must|should|ca|need)n['’]t|must|avoid|forbidden|prohibited|"
                   r"required|requires?|mandatory|allerg(?:y|ies|ic)|anaphyla\w*|intoleran(?:t|ce))\b"
                   r"|请勿|切勿|不得|不准|不许|禁止|严禁|不可|不能|不要|必须|务必|过敏",
                   re.IGNORECASE)),
    (2, re.compile(r"\b(?:only|unless|except(?:ing)?|until|without|provided that|max(?:imum)?|minimum|"
                   r"at (?:most|least)|no (?:more|less|later|earlier) than)\b"
                   r"|仅|只(?:能|可|限|接受|在|要)|除非|除外|不超过|不高于|不低于|不少于|不多于|不迟于|不早于|至多|至少|最多|以内",
                   re.IGNORECASE)),
    (1, re.compile(r"\b(?:not|no|nor|none|nothing|neither)\b|n['’]t\b", re.IGNORECASE)),
)


def constraint_strength(sentence: str) -> int:
    """3 for a prohibition or obligation, 2 for a limit, condition or exception, 1 for another
    negation, 0 for a sentence that constrains nothing (see ``_CONSTRAINT_TIERS``).

    >>> [constraint_strength(s) for s in ("Step 8: Do not mention Ireland.", "Refund only if asked.",
    ...                                   "K3 models are not affected.", "Step 1: Headline.")]
    [3, 2, 1, 0]
    """
    return next((tier for tier, rx in _CONSTRAINT_TIERS if rx.search(sentence)), 0)


def is_constraint(sentence: str) -> bool:
    """Whether *sentence* states a constraint or a negation (:func:`constraint_strength` > 0).

    >>> is_constraint("Step 8: Do not mention the Netherlands."), is_constraint("Step 1: Headline.")
    (True, False)
    """
    return constraint_strength(sentence) > 0


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """(first, last) positions in *numbers* (ascending) of each run of consecutive numbers."""
    out: list[tuple[int, int]] = []
    k = 0
    while k < len(numbers):
        j = k
        while j + 1 < len(numbers) and numbers[j + 1] == numbers[j] + 1:
            j += 1
        out.append((k, j))
        k = j + 1
    return out


def _ranges(numbers: list[int]) -> str:
    """1-based sentence numbers as ranges: [3, 4, 5, 9] -> "3–5, 9"."""
    return ", ".join(f"{numbers[k]}–{numbers[j]}" if j > k else f"{numbers[k]}" for k, j in _runs(numbers))


def _render_kept(text: str, spans: list[tuple[int, int]], kept: list[int]) -> str:
    """The kept sentences in source order; each run of omitted sentences before or between them
    is marked " … " (a cut after the last one is told by the index line that follows)."""
    parts: list[str] = []
    for k, j in _runs(kept):
        run = text[spans[kept[k]][0]:spans[kept[j]][1]]
        gap = kept[k] > (kept[k - 1] + 1 if k else 0)
        parts.append(("… " if gap else "") + run)
    return " ".join(parts)


def keep_constraints_first(pieces: Sequence[str], costs: Sequence[int], cap: int,
                           fits: Callable[[list[int]], bool],
                           strength: Callable[[str], int] | None = None) -> list[int]:
    """0-based indices (ascending) of the *pieces* to keep within *cap* tokens: the constraint
    pieces first, strongest first (:func:`constraint_strength`), each tier in source order and a
    piece that does not fit skipped; then the other pieces from the start, up to the first that
    does not fit. *costs* are the pieces' tokens; *fits* says whether a trial, written as it will
    be delivered, is within the cap. Drafts (:func:`truncate_reasoning`) and history turns
    (:func:`cut_keeping_constraints`) are cut with it. *strength* tiers a piece (:func:`constraint_strength`
    by default; a user's turn is tiered by :func:`odcf.handoff.history.user_constraint_strength`).
    """
    kept: list[int] = []
    strength = [(strength or constraint_strength)(x) for x in pieces]
    tiers = [([k for k in range(len(pieces)) if strength[k] == tier], True) for tier in (3, 2, 1)]
    for group, skip in (*tiers, ([k for k in range(len(pieces)) if not strength[k]], False)):
        for k in group:
            if sum(costs[j] for j in kept) + costs[k] > cap:
                if skip:
                    continue
                break
            trial = sorted(kept + [k])
            if fits(trial):
                kept = trial
            elif not skip:
                break
    return kept


#: Where a sentence divides into clauses: after ",", ";", ":" or a dash followed by a space, outside
#: brackets ("(procurement@…, ticket PRC-88213)" stays whole).
_CLAUSE_END_RE = re.compile(r"[,;:](?=\s)|\s[—–-](?=\s)")


def split_clauses(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each clause of *text*: its sentences, each divided at commas,
    semicolons, colons and dashes outside brackets; whitespace between clauses excluded.

    >>> t = "Two are vegan, one has a peanut allergy — the kitchen must be peanut-free (all of it, not the dish)."
    >>> [t[a:b] for a, b in split_clauses(t)]
    ['Two are vegan,', 'one has a peanut allergy —', 'the kitchen must be peanut-free (all of it, not the dish).']
    """
    out: list[tuple[int, int]] = []
    for a, b in split_sentences(text):
        start, depth = a, 0
        for k in range(a, b):
            ch = text[k]
            depth += ch in "([{"
            depth -= ch in ")]}" and depth > 0
            if depth == 0 and _CLAUSE_END_RE.match(text, k) and k + 1 < b:
                end = k + 1 if not text[k].isspace() else k + 2
                if text[start:end].strip():
                    out.append((start, end))
                start = end
                while start < b and text[start].isspace():
                    start += 1
        if start < b:
            out.append((start, b))
    return out


@dataclass(frozen=True)
class ConstraintCut:
    """A text cut by :func:`cut_keeping_constraints`."""

    text: str
    kept: int       # pieces kept
    total: int      # pieces in the text

    @property
    def cut(self) -> bool:
        return self.kept < self.total


def cut_keeping_constraints(text: str, *, cap: int, counter: TokenCounter,
                            spans: Sequence[tuple[int, int]] | None = None,
                            strength: Callable[[str], int] | None = None) -> ConstraintCut:
    """*text* within *cap* tokens, keeping its constraint pieces first, as drafts are cut
    (:func:`keep_constraints_first`): the pieces (*spans*; its clauses by default,
    :func:`split_clauses`) kept are written in source order, and " … " marks each cut — before,
    between or after them. The whole text when it fits.

    >>> c = get_counter("o200k_base")
    >>> cut_keeping_constraints("Dates are 16-19 September. Please don't contact Eventos Tejo, ever.", cap=12,
    ...                         counter=c).text
    "… Please don't contact Eventos Tejo, …"
    """
    spans = list(split_clauses(text) if spans is None else spans)
    if counter.count(text) <= cap or not spans:
        return ConstraintCut(text, len(spans), len(spans))
    pieces = [text[a:b] for a, b in spans]

    def render(kept: list[int]) -> str:
        out = _render_kept(text, spans, kept)
        return out + " …" if kept and kept[-1] < len(spans) - 1 else out

    kept = keep_constraints_first(pieces, [counter.count(p) for p in pieces], cap,
                                  lambda trial: counter.count(render(trial)) <= cap, strength)
    return ConstraintCut(render(kept) if kept else "…", len(kept), len(spans))


def truncate_reasoning(
    item: HandoffItem,
    *,
    cap: int,
    counter: TokenCounter,
    known_ids: Iterable[str] = (),
) -> ReasoningCut:
    """Cut *item* to at most *cap* tokens (index line included) at sentence boundaries.

    Constraint sentences are kept first, strongest first (:func:`constraint_strength`: "do not …",
    "must not …", "never …"; then "only …", "unless …", "except …"; then other negations), each
    tier in source order, as many as fit; the room left goes to the other sentences from the start
    of the draft. The kept sentences are written in source
    order, omitted runs between them marked " … ", and the index line names every omitted range.
    """
    text = item.text
    total = counter.count(text)
    spans = split_sentences(text)
    if total <= cap:
        return ReasoningCut(item.id, text, False, total, total, len(spans), len(spans))
    known = [k for k in known_ids if k != item.id]
    sentences = [text[a:b] for a, b in spans]
    costs = [counter.count(s) for s in sentences]
    binding = [k for k, x in enumerate(sentences) if constraint_strength(x) >= 2]

    def render(kept: list[int], flag: bool = False) -> tuple[str, str, list[str]]:
        keep = set(kept)
        omitted_idx = [k for k in range(len(spans)) if k not in keep]
        head = _render_kept(text, spans, kept)
        omitted = " ".join(sentences[k] for k in omitted_idx)
        evidence = citations(omitted, known)
        visible = citations(head, known)
        evidence += [c for c in item.cites if c not in evidence and c not in visible]
        evidence = merge_ranges(evidence)
        line = _index_line(kept, len(spans), counter.count(omitted), evidence, counter, max(40, cap // 2),
                           binding if flag else ())
        return (f"{head}\n{line}" if head else line), line, evidence

    strong = set(binding) | {k for k, x in enumerate(sentences) if constraint_strength(x)}

    def fits(trial: list[int]) -> bool:
        # a constraint sentence is measured without the naming of the omitted ones; an opening sentence gets in
        # only beside it (QA: "We compared both options …" took the room and nothing said sentence 5 "must …")
        return counter.count(render(trial, flag=not strong.issuperset(trial))[0]) <= cap

    kept = keep_constraints_first(sentences, costs, cap, fits)
    named = render(kept, flag=True)
    out, line, evidence = named if counter.count(named[0]) <= cap else render(kept)
    return ReasoningCut(item.id, out, True, total, counter.count(out), len(kept), len(spans),
                        tuple(evidence), line)
