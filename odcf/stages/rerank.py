"""Embedding rerank (stage ``rerank``): score segments by meaning against the queries.

Runs after the lexical ``rank`` stage and refines its scores:

1. **Candidates.** Live segments outside the pinned layers (instruction and state keep
   score 1.0). When there are many, only the best by a cheap first pass are embedded with
   MiniLM: ``K = budget × 0.6 / mean segment tokens × safety`` (``safety`` 1.5, at least
   ``min_candidates`` 64), the design's rule of thumb with room to fill. The first pass
   (``first_pass="static"``, default) blends the lexical score half and half with a static
   embedding distilled from the same MiniLM (:class:`~odcf.backends.embedder.StaticEmbedder`,
   microseconds per segment); ``first_pass="lexical"`` uses the lexical score alone. The
   others keep their first-pass order but rank below every candidate.
2. **Semantic score.** Cosine (all-MiniLM-L6-v2 on ONNX Runtime by default) against the
   task query ``doc.query`` and the plan's queries (one per concept, one for the task goal):
   ``sem = (query_weight × cos(task) + max cos(plan)) / (query_weight + 1)`` when both exist,
   else whichever exists, clipped at 0 and scaled so the best candidate has 1.
3. **Blend.** ``score = semantic_weight × sem + (1 − semantic_weight) × lexical``, where
   lexical is the ``rank`` stage's score (BM25 × density, so numbers and terms still count).
   ``semantic_weight`` is 0.85; benchmarks/results/model_stages_eval.md has the NQ numbers
   behind this and behind the static first pass.

MiniLM is English-only: segments whose text is Chinese (or another non-Latin script) keep
their lexical score, which the ``rank`` stage computed over jieba words. The English segments'
scores are compared with those, so where the caller's query is not in English or there is none
(the model compares the English segments with the plan's queries only), the best of them gets
its own lexical score, not 1 (:func:`english_level`: an unrelated English line in a Chinese record
had come first for "过敏史"). ``doc.meta["scorer"]`` and the trace (``english_level``) say which
scorer ran for which language.

``edges=True`` asks the assembler to place the most relevant sources at the start and the
end of the context (lost-in-the-middle): ``doc.meta["order"]`` becomes a list of source ids,
most relevant first, second most relevant last, third second, and so on. Segment order
inside a source is always the original order.

>>> from odcf.stages.rerank import EmbeddingReranker
>>> stage = EmbeddingReranker(embedder="hash")   # deterministic, no model: for tests
"""
from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from odcf.document import Document, Segment, TraceEvent
from odcf.plan.model import Plan
from odcf.stages.base import Stage, in_nfc, with_text_of
from odcf.stages.rank import (
    demote_boilerplate,
    demote_pleasantries,
    fact_density,
    lift_answers,
    lift_cell_outputs,
    lift_constraints,
    lift_corrections,
    lift_final_outcome,
    lift_hits,
    lift_referenced,
    query_hits,
    rank_log_levels,
    recurring_capitals,
    scoring_texts,
    unlift,
)
from odcf.textutil import detect_language, words
from odcf.tokens import get_counter

logger = logging.getLogger(__name__)

PINNED_LAYERS = frozenset({"instruction", "state"})
#: With no caller query, the weight of :func:`~odcf.stages.rank.fact_density` against the blend of
#: the semantic and lexical scores (benchmark wnut entity recall, first form of the fact share, with names
#: counted fully: 0.25 / 0.32 / 0.35 / 0.37 at 0.5 / 0.8 / 0.9 / 1.0, 0.24 without it; names at half weight and
#: defined terms at none, 0.9: 0.33; 1.0 would leave ties among segments with no fact in no order but the text's).
NO_QUERY_FACT_WEIGHT = 0.9


def candidate_count(budget: int | None, mean_tokens: float, *, safety: float, minimum: int) -> int | None:
    """How many segments to embed: ``budget × 0.6 / mean_tokens × safety`` (≥ *minimum*); None = all."""
    if not budget or mean_tokens <= 0:
        return None
    return max(minimum, math.ceil(budget * 0.6 / mean_tokens * safety))


def edge_order(ranked_ids: Sequence[str]) -> list[str]:
    """Best first, second best last, third second, …: the middle gets the least relevant.

    >>> edge_order(["a", "b", "c", "d", "e"])
    ['a', 'c', 'e', 'd', 'b']
    """
    front = list(ranked_ids[0::2])
    back = list(ranked_ids[1::2])
    return front + back[::-1]



#: Segments naming the query's identifier, best by the lexical rank, embedded beyond the first pass's candidates.
_NAMED_EXTRA = 8

#: Where a query asks a second question: after "?", at ";", or at "and"/"or" before a question word
#: ("What is the liability cap, and what are the payment terms?"); not before "are" ("Which suppliers
#: hold ISO 9001 and are based in Germany?" asks one thing).
_QUERY_PART_RE = re.compile(
    r"(?<=\?)\s+|;\s+|,?\s+(?:and|or)\s+(?=(?:what|how|when|where|which|who|whom|whose|why)\b)", re.IGNORECASE)
#: A part that asks something: it opens with a question word or ends with "?" (not "Please answer in
#: one sentence.", "ignore boilerplate").
_QUESTION_RE = re.compile(
    r"^(?:what|how|when|where|which|who|whom|whose|why|is|are|was|were|does|do|did|can|could|should|will|would|"
    r"has|have|may|must)\b|\?$", re.IGNORECASE)


def query_parts(query: str) -> list[str]:
    """The questions a compound query asks (parts that ask nothing are left out of the split); one part,
    the query, when it asks fewer than two.

    >>> query_parts("What is the liability cap for a data breach, and what are the payment terms?")
    ['What is the liability cap for a data breach', 'what are the payment terms?']
    >>> query_parts("terms and conditions of payment"), query_parts("When is it due? Please answer briefly.")
    (['terms and conditions of payment'], ['When is it due? Please answer briefly.'])
    """
    asked = [p.strip() for p in _QUERY_PART_RE.split(query)
             if p and len(p.split()) >= 2 and _QUESTION_RE.search(p.strip())]
    if len(asked) >= 2:
        return asked
    return topic_list(query) or [query]


def topic_list(query: str) -> list[str] | None:
    """The topics of a query that lists three or more and asks no question ("liability cap, termination
    notice periods and most favoured customer price"), or None: each is asked for as a question of its own
    (the one clause naming the third had ranked below 300 templated liability clauses). Items of one to
    six words, split at commas and at the last "and"/"or"; two items ("terms and conditions") are no list.

    >>> topic_list("liability cap, termination notice periods and most favoured customer price")
    ['liability cap', 'termination notice periods', 'most favoured customer price']
    >>> topic_list("terms and conditions, payment, and delivery"), topic_list("Acme, Inc. and its liability cap")
    (['terms and conditions', 'payment', 'delivery'], None)
    """
    q = query.strip().rstrip(".")
    if any(ch in q for ch in "?;:!.") or _QUESTION_RE.search(q):
        return None
    items = [p.strip() for p in q.split(",")]
    if len(items) < 2:
        return None
    last = re.match(r"(?:and|or)\s+(.*)", items[-1], re.IGNORECASE | re.DOTALL)
    if last:
        items[-1] = last.group(1).strip()
    else:
        split = re.split(r"\s+(?:and|or)\s+", items[-1], flags=re.IGNORECASE)
        if len(split) == 2:
            items[-1:] = split
    if len(items) < 3 or not all(1 <= len(i.split()) <= 6 for i in items):
        return None
    return items


def lead_with_each_question(segs: Sequence[Segment], sims: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """*scores* with the segment (not a heading) most similar to each question of a compound query
    (*sims*: one column a question, :func:`query_parts`) raised to just below the best score, in the
    order the questions come: a query asking two things is answered on both before anything else (a
    general liability clause outranked the payment term asked for, which was left out).

    >>> from odcf.document import Segment
    >>> segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence")
    ...         for i, t in enumerate(["Liability is capped at EUR 2m.", "Liability is capped at 125%.", "Pay in 45 days."])]
    >>> lead_with_each_question(segs, np.array([[0.9, 0.1], [0.8, 0.2], [0.1, 0.7]]), np.array([1.0, 0.9, 0.6])).tolist()
    [1.0, 0.9, 0.999998]
    """
    out = np.array(scores, dtype=np.float64)
    if not len(out):
        return out
    top = float(out.max())
    for j, best in enumerate(question_leads(segs, sims)):
        if best is not None:
            out[best] = max(out[best], round(top - 1e-6 * (j + 1), 6))
    return out


def question_leads(segs: Sequence[Segment], sims: np.ndarray) -> list[int | None]:
    """For each question (a column of *sims*), the index of the segment of *segs* (not a heading) most
    similar to it; None where there is none.

    >>> from odcf.document import Segment
    >>> segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind=k)
    ...         for i, (t, k) in enumerate([("## Fees", "heading"), ("Pay in 45 days.", "sentence")])]
    >>> question_leads(segs, np.array([[0.9, 0.8], [0.1, 0.7]]))
    [1, 1]
    """
    answerable = np.array([s.kind != "heading" for s in segs], dtype=bool)
    leads: list[int | None] = []
    for j in range(sims.shape[1]):
        col = np.where(answerable, sims[:, j], -np.inf)
        best = int(np.argmax(col)) if len(col) else 0
        leads.append(best if len(col) and np.isfinite(col[best]) else None)
    return leads


#: A query that asks about what is not so ("which requirements do we not meet", "which checks failed",
#: "items missing"); the "fail" of "pass/fail" asks nothing of the kind.
_ASKS_NEGATION_RE = re.compile(
    r"\b(?:not|never|cannot|unmet|missing|non-?compliant|(?<!/)fail(?:s|ed|ing)?(?!/))\b|n't", re.IGNORECASE)
#: A cell that says it is not so: "NOT MET — …", "No", "Non-compliant", "Failed", "Missing", "n/a" is none.
_SAYS_NEGATION_RE = re.compile(
    r"\b(?:not|no|never|none|cannot|without|unmet|missing|non-\w+|fail(?:s|ed|ing)?)\b|n't", re.IGNORECASE)


def rows_by_query_words(segs: Sequence[Segment], scores: dict[str, float], query: str) -> tuple[dict[str, float], int]:
    """*scores* with the parts of each table (rows, see odcf.stages.segment) reordered by how many of
    *query*'s distinct words (stopwords left out) their cells hold, then by their own score: the table's
    scores are handed out again in that order, so that the table keeps its share against the rest. A
    row's cells embed as noise (MiniLM put "SUP-10236,…,P3,closed,Question about pricing tiers" closest
    to "which P1 tickets are open", and the one row holding ``P1``, ``open`` and "Workaround:" last); the
    header's column names count for no row. A query asking about what is not so (:data:`_ASKS_NEGATION_RE`,
    "which requirements do we not meet") counts its negation as a word that a row saying one in its cells
    (:data:`_SAYS_NEGATION_RE`, "NOT MET — certificate expired") holds, and such a row ranks at least at
    the table's best score: "not" is a stopword and "meet" is no "met", so the one "Met" row had gone out
    for the two failing ones. Returns the scores and how many segments changed score.

    >>> from odcf.document import Segment
    >>> rows = ["id,prio,state\\nA-1,P3,closed", "A-2,P1,open", "A-3,P1,pending"]
    >>> segs = [Segment(id=f"s{i}", source_id="t", index=i, text=t, original=t, kind="table",
    ...                 meta={"table_header": "id,prio,state", "table_part": i}) for i, t in enumerate(rows)]
    >>> rows_by_query_words(segs, {"s0": 0.9, "s1": 0.4, "s2": 0.6}, "which P1 tickets are open")
    ({'s0': 0.4, 's1': 0.9, 's2': 0.6}, 2)
    >>> rows = ["req,status\\nR-1,Met", "R-2,NOT MET", "R-3,Met", "R-4,Not met"]
    >>> segs = [Segment(id=f"s{i}", source_id="t", index=i, text=t, original=t, kind="table",
    ...                 meta={"table_header": "req,status", "table_part": i}) for i, t in enumerate(rows)]
    >>> rows_by_query_words(segs, {"s0": 0.9, "s1": 0.4, "s2": 0.6, "s3": 0.2}, "which do we not meet?")
    ({'s0': 0.4, 's1': 0.9, 's2': 0.2, 's3': 0.899999}, 4)
    """
    negated = bool(_ASKS_NEGATION_RE.search(query))
    asked = set(words(query, stop=True)) | ({"\0not"} if negated else set())
    tables: dict[tuple[str, int], list[Segment]] = {}
    for seg in segs:
        part = seg.meta.get("table_part")
        if asked and seg.kind == "table" and isinstance(part, int) and seg.id in scores:
            tables.setdefault((seg.source_id, seg.index - part), []).append(seg)
    out = dict(scores)
    moved = 0
    for parts in tables.values():
        held: dict[str, int] = {}
        nays: list[Segment] = []  # the rows saying the negation asked about
        for seg in parts:
            header = seg.meta.get("table_header") or ""
            cells = seg.text[len(header):] if header and seg.text.startswith(header) else seg.text
            said = {"\0not"} if negated and _SAYS_NEGATION_RE.search(cells) else set()
            held[seg.id] = len(asked & (set(words(cells, stop=True)) | said))
            nays += [seg] if said else []
        if len(set(held.values())) < 2:
            continue
        values = sorted((scores[s.id] for s in parts), reverse=True)
        ranked = sorted(parts, key=lambda s: (-held[s.id], -scores[s.id], s.index))
        nays.sort(key=ranked.index)
        floor = min((max(values[0] - 1e-6 * i, 0.0) for i in range(len(nays))), default=None)
        for k, (seg, v) in enumerate(zip(ranked, values)):
            if seg in nays:  # they answer the query: at the table's best, in rank order
                v = max(v, round(values[0] - 1e-6 * nays.index(seg), 6))
            elif floor is not None and v >= floor:
                # and the other rows below them, where the table's scores tie (every row 1.0 from the rank
                # stage, the same cosine): handed out again in order, tied values had changed nothing
                v = round(max(floor - 1e-6 * (k + 1), 0.0), 6)
            if out[seg.id] != v:
                out[seg.id] = v
                moved += 1
    return out, moved


def english_level(english: Sequence[Segment], other: Sequence[Segment], task: str) -> float | None:
    """The score the best of the segments MiniLM scored (*english*) gets, where the rerank's "best
    candidate has 1" would set them above segments it did not score (*other*, other languages, which
    keep the rank stage's lexical scores): the best lexical score among *english*, the one scale the
    rank stage put every language on. None (best at 1, as before) when the document has no segment
    in another language, or when the caller's query (*task*, empty when there is none or it is not
    in English) is one the model compares with every segment it scores.

    Without this, a Chinese medical record queried "过敏史" delivered its one English line, "Room 12B,
    bed 3, ward phone ext. 4471.", at 1.0, level with "无过敏史", and left the dosage sentences
    (0.12, 0.14) out: the model had compared it with the plan's English queries only and scaled it to
    the top (QA s31 F3). Its lexical score, 0.07, is what the Chinese sentences are measured against.

    >>> from odcf.document import Segment
    >>> def seg(i, t, s): return Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence", score=s)
    >>> en, zh = [seg(0, "Room 12B, bed 3.", 0.071429)], [seg(1, "患者既往体健，无过敏史。", 1.0)]
    >>> english_level(en, zh, ""), english_level(en, zh, "what is the room number"), english_level(en, [], "")
    (0.071429, None, None)
    """
    if not english or not other or task:
        return None
    level = round(max(s.score or 0.0 for s in english), 6)
    return level if level < 1.0 else None


class EmbeddingReranker(Stage):
    """Blend embedding similarity to the queries into the segment scores.

    Options: ``embedder`` (``minilm``, ``hash`` or a path to an ONNX model), ``threads``
    (ONNX Runtime intra-op threads), ``query_weight`` (task query against plan queries),
    ``semantic_weight`` (embedding against lexical score), ``safety`` and
    ``min_candidates`` (prefilter size), ``edges`` (lost-in-the-middle placement).
    """

    name = "rerank"
    requires = frozenset({"segments"})
    provides = frozenset({"scores"})

    def __init__(self, *, embedder: str = "minilm", threads: int | None = None,
                 query_weight: float = 2.0, semantic_weight: float = 0.85,
                 safety: float = 1.5, min_candidates: int = 64, edges: bool = False,
                 first_pass: str = "static") -> None:
        if first_pass not in ("lexical", "static"):
            raise ValueError(f"rerank: first_pass must be 'lexical' or 'static', got {first_pass!r}")
        if not 0.0 <= semantic_weight <= 1.0:
            raise ValueError(f"rerank: semantic_weight must be within [0, 1], got {semantic_weight}")
        self.embedder = embedder
        self.threads = threads
        self.query_weight = float(query_weight)
        self.semantic_weight = float(semantic_weight)
        self.safety = float(safety)
        self.min_candidates = int(min_candidates)
        self.edges = bool(edges)
        self.first_pass = first_pass
        self._embedder: Any = None
        self._static: Any = None

    def _model(self) -> Any:
        if self._embedder is None:
            from odcf.backends.embedder import get_embedder

            opts = {"threads": self.threads} if self.embedder != "hash" else {}
            self._embedder = get_embedder(self.embedder, **opts)
        return self._embedder

    def _static_model(self) -> Any:
        if self._static is None:
            from odcf.backends.embedder import get_embedder

            self._static = get_embedder("static", threads=self.threads)
        return self._static

    def warm_up(self) -> None:
        models = [self._model()] + ([self._static_model()] if self.first_pass == "static" else [])
        for m in models:
            warm = getattr(m, "warm_up", None)
            if warm is not None:
                warm()

    def _first_pass_order(self, segs: Sequence[Segment], qtexts: Sequence[str], n_task: int,
                          hits: set[str], failing: set[str], scored_as: dict[str, str]) -> list[Segment]:
        """Segments best first by the cheap score: lexical, or lexical blended with static embeddings."""
        if self.first_pass == "lexical":
            return sorted(segs, key=lambda s: -(s.score or 0.0))  # stable: ties keep document order
        static = self._static_model()
        sem = self._semantic(static.encode([scored_as[s.id] for s in segs]), static.encode(list(qtexts)), n_task)
        lex = self._lexical(segs, hits, failing)
        cheap = 0.5 * sem + 0.5 * lex
        order = sorted(range(len(segs)), key=lambda i: (-round(float(cheap[i]), 6), i))
        return [segs[i] for i in order]

    @staticmethod
    def _lexical(segs: Sequence[Segment], hits: set[str], failing: Collection[str] = ()) -> np.ndarray:
        """The rank stage's scores of *segs*, best scaled to 1; with *hits* (segments naming what the
        query names, which the rank stage lifted above the rest) and *failing* (the lines reporting a
        failure, lifted below them), as they were before the lift: the lift comes again after the blend."""
        tiered = bool(hits) and bool(failing)
        named = any(s.id in hits or s.id in failing for s in segs)
        lex = np.array([(s.score or 0.0) if not named
                        else unlift(s.score or 0.0, s.id in hits, s.id in failing) if tiered
                        else unlift(s.score or 0.0, s.id in hits or s.id in failing) for s in segs], dtype=np.float64)
        top = float(lex.max()) if len(lex) else 0.0
        return lex / top if top > 0 else lex

    def _semantic(self, svec: np.ndarray, qvec: np.ndarray, n_task: int) -> np.ndarray:
        """Per segment: weighted task/plan query similarity, clipped at 0, best scaled to 1.

        The first *n_task* query vectors are the task query and, when it asks more than one question,
        each question (:func:`query_parts`): the task similarity is the best over them, each scaled so
        that its best segment scores as the best of all (a compound query's vector sits between its
        questions, and the payment terms had ranked below clauses nobody asked about)."""
        sims = svec @ qvec.T  # (n, q)
        if not n_task:
            sem = sims.max(axis=1)
        else:
            task = sims[:, :n_task]
            if n_task > 1 and len(task):
                tops = task.max(axis=0)
                best = float(tops.max())
                task = task * np.where(tops > 0, best / np.where(tops > 0, tops, 1.0), 1.0)
            task_sim = task.max(axis=1)
            if qvec.shape[0] > n_task:
                sem = (self.query_weight * task_sim + sims[:, n_task:].max(axis=1)) / (self.query_weight + 1.0)
            else:
                sem = task_sim
        sem = np.clip(sem.astype(np.float64), 0.0, None)
        top = float(sem.max()) if len(sem) else 0.0
        return sem / top if top > 0 else sem

    def __call__(self, doc: Document, plan: Plan) -> Document:
        # scored in NFC: the same text with combining accents scores the same (odcf.stages.base.in_nfc)
        return with_text_of(self._score(in_nfc(doc), plan), doc)

    def _score(self, doc: Document, plan: Plan) -> Document:
        live = [s for s in doc.segments if not s.dropped and s.layer not in PINNED_LAYERS]
        langs = {s.id: detect_language(s.text[:400]) for s in live}
        english = [s for s in live if langs[s.id] == "en"]
        other = [s for s in live if langs[s.id] != "en"]

        queries = [q.text + (" " + " ".join(q.terms) if q.terms else "") for q in plan.queries]
        task = (doc.query or "").strip()
        new_scores: dict[str, float] = {}
        data: dict[str, Any] = {"segments": len(live), "embedded": 0, "queries": len(queries) + bool(task)}
        # what the query names exactly, and the segments holding it
        names, hits, failing = query_hits(english, task, [a.regex for a in plan.protection.anchors],
                                          [(a.name, a.regex) for a in plan.protection.anchors])
        leads: set[str] = set()  # the best segment for each question of a compound query
        # MiniLM's vocabulary is English: a Chinese query ("质保期") embedded by it scores English
        # segments by noise (a bilingual contract's "Article 5 Acceptance" heading came first);
        # queries in another script steer through the lexical scores alone
        foreign = [q for q in ([task] if task else []) + queries if detect_language(q) != "en"]
        if foreign:
            data["not_embedded"] = len(foreign)
            queries = [q for q in queries if q not in foreign]
            task = "" if task in foreign else task

        if english and (task or queries):
            scored_as = dict(zip((s.id for s in english), scoring_texts(doc, english)))
            counter = get_counter(doc.tokenizer or plan.tokenizer)
            mean_tokens = sum(counter.count(s.text) for s in english) / len(english)
            budget = doc.budget if doc.budget is not None else plan.role(doc.role).budget
            k = candidate_count(budget, mean_tokens, safety=self.safety, minimum=self.min_candidates)
            parts = query_parts(task) if task else []
            asked = [task, *parts] if len(parts) > 1 else parts  # the whole query, then each question it asks
            if len(asked) > 1:
                data["query_parts"] = len(asked) - 1
            qtexts = asked + queries
            if k is None or k >= len(english):
                chosen, rest = list(english), []
            else:
                ranked = self._first_pass_order(english, qtexts, len(asked), hits, failing, scored_as)
                chosen, rest = ranked[:k], ranked[k:]
                # the segments naming what the query names that the lexical rank put first are
                # embedded too: when the named host is in every block of a log, the static first pass
                # can leave out the one block that also says "PANIC"
                best = sorted((s for s in rest if s.id in hits | failing), key=lambda s: -(s.score or 0.0))[:_NAMED_EXTRA]
                if best:
                    extra = {s.id for s in best}
                    chosen = chosen + [s for s in rest if s.id in extra]
                    rest = [s for s in rest if s.id not in extra]
            data.update({"candidates": len(chosen), "k": k, "first_pass": self.first_pass if rest else None,
                         "mean_segment_tokens": round(mean_tokens, 2)})

            model = self._model()
            from odcf.backends.embedder import encode_lasting

            # the plan's queries are the same on every call: a large ontology's are kept on disk
            qvec = np.vstack([model.encode(asked), encode_lasting(model, queries)]) if queries else model.encode(asked)
            svec = model.encode([scored_as[s.id] for s in chosen])
            data["embedded"] = len(chosen)
            data["embedded_tokens"] = sum(counter.count(s.text) for s in chosen)
            sem = self._semantic(svec, qvec, len(asked))
            lex = self._lexical(chosen, hits, failing)
            blended = self.semantic_weight * sem + (1.0 - self.semantic_weight) * lex
            if not doc.query:
                # no caller query: similarity to the plan's generic queries says little about which
                # segment holds the facts, so the share of words that carry one leads (fact_density)
                recurring = recurring_capitals([s for s in doc.segments if not s.dropped and s.layer not in PINNED_LAYERS])
                facts = np.array([fact_density(s, recurring.get(s.source_id, frozenset())) for s in chosen],
                                 dtype=np.float64)
                blended = NO_QUERY_FACT_WEIGHT * facts + (1.0 - NO_QUERY_FACT_WEIGHT) * blended
                top = float(blended.max()) if len(blended) else 0.0
                blended = blended / top if top > 0 else blended
            if len(asked) > 2:
                blended = lead_with_each_question(chosen, svec @ qvec[1:len(asked)].T, blended)
                leads = {chosen[i].id for i in question_leads(chosen, svec @ qvec[1:len(asked)].T) if i is not None}
            for seg, v in zip(chosen, blended):
                new_scores[seg.id] = round(float(v), 6)
            if rest:
                # Below every candidate, in first-pass order.
                floor = min(new_scores[s.id] for s in chosen)
                for pos, seg in enumerate(rest):
                    new_scores[seg.id] = round(0.99 * floor * (1.0 - pos / len(rest)), 6)
            level = english_level(english, other, task)
            if level is not None:
                new_scores = {sid: round(v * level, 6) for sid, v in new_scores.items()}
                data["english_level"] = level
            new_scores, reordered = rows_by_query_words(english, new_scores, task)
            if reordered:
                data["table_rows_reordered"] = reordered
        elif english:
            data["note"] = "no query: lexical scores kept"
        if new_scores:
            new_scores, boilerplate = demote_boilerplate(english, new_scores)
            if boilerplate:
                data["boilerplate_demoted"] = boilerplate
            # below every other segment, whatever language each was scored in ("Hi Daniel," may not read as English)
            mixed = {s.id: new_scores.get(s.id, s.score or 0.0) for s in live}
            demoted, courtesies = demote_pleasantries(live, mixed)
            new_scores.update((sid, v) for sid, v in demoted.items() if v != mixed[sid])
            if courtesies:
                data["pleasantries_demoted"] = courtesies
            if not doc.query:
                # a log's errors first, as the rank stage put them (odcf.stages.rank.rank_log_levels)
                mixed = {s.id: new_scores.get(s.id, s.score or 0.0) for s in live}
                levelled, moved = rank_log_levels(doc.segments, mixed, query=False)
                new_scores.update((sid, v) for sid, v in levelled.items() if v != mixed[sid])
                if moved:
                    data["log_levels_ranked"] = moved
                # the end of an agent trajectory, its submission, as the rank stage put it
                mixed = {s.id: new_scores.get(s.id, s.score or 0.0) for s in live}
                ended, raised = lift_final_outcome(live, mixed)
                new_scores.update((sid, v) for sid, v in ended.items() if v != mixed[sid])
                if raised:
                    data["outcome_raised"] = raised
        if names:
            # a segment holding what the query names exactly (an id, a host, a quoted phrase) comes
            # first; among those, the rest of the query orders them
            own = {s.id: new_scores.get(s.id, s.score or 0.0) for s in english}
            # (the lines reporting a failure below them, each question's best above those)
            new_scores.update(lift_hits(own, hits, failing=failing, leads=leads))
            data.update({"query_identifiers": names, "exact_matches": len(hits | failing)})

        if new_scores:
            new_scores, answers = lift_answers(doc.segments, new_scores)
            if answers:
                data["answers_raised"] = answers
            # what each correction corrects, as the rank stage found it (and recorded for the budget)
            links: dict[str, list[str]] = {}
            for seg in english:
                for fix in seg.meta.get("corrected_by", ()):
                    links.setdefault(fix, []).append(seg.id)
            new_scores, corrected = lift_corrections(english, new_scores, links)
            if corrected:
                data["corrections_raised"] = corrected
            new_scores, constraints = lift_constraints(english, new_scores, links)
            if constraints:
                data["constraints_raised"] = constraints
            new_scores, outputs = lift_cell_outputs(english, new_scores)
            if outputs:
                data["cell_outputs_raised"] = outputs
            if not doc.query:
                # a numbered provision at least as the segments naming it by number, as the rank stage found them
                named_by = {s.id: s.meta["named_by"] for s in english if s.meta.get("named_by")}
                new_scores, referenced = lift_referenced(new_scores, named_by)
                if referenced:
                    data["referenced_raised"] = referenced
            if doc.query:  # the level of a log's line breaks ties only
                mixed = {s.id: new_scores.get(s.id, s.score or 0.0) for s in live}
                levelled, moved = rank_log_levels(doc.segments, mixed, query=True)
                new_scores.update((sid, v) for sid, v in levelled.items() if v != mixed[sid])
                if moved:
                    data["log_levels_ranked"] = moved
        segments = tuple(s.replace(score=new_scores[s.id]) if s.id in new_scores else s for s in doc.segments)
        counts = Counter(langs.values())
        scorers: dict[str, str] = {}
        if english:
            scorers["en"] = (f"{self._model().name} cosine blended with lexical (weight {self.semantic_weight})"
                             if new_scores else "lexical")
            if "english_level" in data:
                scorers["en"] += f", best at its lexical score {data['english_level']} (query not in English)"
        for lang in sorted({langs[s.id] for s in other}):
            scorers[lang] = "lexical (bm25 over jieba words)" if lang == "zh" else "lexical (bm25)"
        data["languages"] = dict(sorted(counts.items()))
        data["scorers"] = scorers
        meta = dict(doc.meta)
        meta["scorer"] = "; ".join(f"{lang}: {how}" for lang, how in scorers.items()) or meta.get("scorer", "none")
        if self.edges:
            meta["order"] = self._edge_order(doc, segments)
            data["order"] = list(meta["order"])
        return doc.with_event(TraceEvent(stage=self.name, data=data), segments=segments, meta=meta)

    @staticmethod
    def _edge_order(doc: Document, segments: Sequence[Segment]) -> list[str]:
        best: dict[str, float] = {}
        for s in segments:
            if not s.dropped and s.score is not None:
                best[s.source_id] = max(best.get(s.source_id, 0.0), s.score)
        position = {src.id: k for k, src in enumerate(doc.sources)}
        pinned = [src.id for src in doc.sources if src.layer in PINNED_LAYERS]
        ranked = sorted((src.id for src in doc.sources if src.layer not in PINNED_LAYERS),
                        key=lambda sid: (-best.get(sid, 0.0), position[sid]))
        return pinned + edge_order(ranked)
