"""Semantic deduplication (stage ``dedup``): merge near-duplicate passages into one.

Only the ``layers`` given are deduplicated (``fact`` by default: a sentence said again in a
later chat turn is a second event, and history has its own layering). Two live segments of
the same layer and of different sources (``within_source=True`` also
compares segments of one source; an exact copy of a block of ``copy_tokens`` or more inside one
source, a log printed again, is merged regardless, and so is an exact copy of a sentence of prose, not
of a row, a list item, a log line or a conversation's turn, whose repeats count, nor one that follows another
thing than its first copy, short or a transcript's answer, see :func:`_said_again`; a line of a log written again
at other times goes out once with its count, see :func:`_log_repeats`) are duplicates when their texts are equal after
whitespace and case folding, or when the cosine of their embeddings is at least
``threshold`` (0.92 by default) — unless they differ in what protection is about: a number,
an anchor, a dictionary term, an entity or a negation. "The fee is 5%" and "The fee is 7%"
are close in embedding space and are *not* duplicates. Nor are two sentences that go on from
different first sentences of their paragraphs ("Participant P-0112 was screened …" / "…P-0114…"):
the same words there say different things.

Of each group, the segment kept is the one whose source is the most confident
(``Source.confidence``), then the most recent (``Source.timestamp``, ISO 8601 compared as
text), then the first in the input. The others get status ``merged`` and a reason naming the
kept segment; the kept one lists them in ``merged_from`` and takes the group's best score.

Segments shorter than ``min_words`` words (5) are left alone: "Yes." answering two
different questions is not one statement. Only the best-scored segments are embedded (the same budget rule as the rerank stage:
``K = budget × 0.6 / mean segment tokens × safety``); exact duplicates are found among all.
When the rerank stage ran first, its vectors come from the shared embedding cache.

>>> from odcf.stages.dedup import SemanticDedup
>>> stage = SemanticDedup(embedder="hash", threshold=0.92)
"""
from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from odcf.document import Document, Segment, Source, TraceEvent
from odcf.plan.model import Plan
from odcf.stages.base import Stage
from odcf.stages.rank import log_template
from odcf.stages.rerank import PINNED_LAYERS, candidate_count
from odcf.textutil import nfc
from odcf.tokens import get_counter

logger = logging.getLogger(__name__)

_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_NEGATION = re.compile(r"\b(?:not|no|never|none|nor|neither|without|cannot)\b|n't|不|没|未|无|非", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
#: A sentence of prose this short or shorter is never merged with its repeat in its source (its context is its meaning).
_SHORT_WORDS = 6
#: A transcript's question or answer label ("Q: …", "A: …", "Answer: …").
_QA_LABEL = re.compile(r"\s*(?:Q|A|Question|Answer)\s*:\s", re.IGNORECASE)
#: Protection rules whose span texts must agree for two segments to merge.
_VALUE_RULES = ("anchor:", "term", "entity:")


def _paragraphs(doc: Document) -> dict[tuple[str, int], str]:
    """The text of each paragraph of each source, its segments joined, whitespace and case folded."""
    parts: dict[tuple[str, int], list[str]] = {}
    for seg in doc.segments:
        parts.setdefault((seg.source_id, seg.paragraph), []).append(seg.text)
    return {key: _norm(" ".join(texts)) for key, texts in parts.items()}


def _same_long_block(a: Segment, b: Segment, blocks: dict[tuple[str, int], str] | None, counter: Any,
                     copy_tokens: int) -> bool:
    """Whether *a* and *b* (one text) are in two paragraphs of one source that are the same block of
    *copy_tokens* or more, a block printed again: its sentences, each shorter than that, are copies too
    (delivered twice, and merged when the delivered text, its sentences joined by " … ", was compressed
    again: the second pass changed what the first delivered)."""
    if blocks is None or a.source_id != b.source_id or a.paragraph == b.paragraph:
        return False
    text = blocks.get((a.source_id, a.paragraph))
    return text is not None and text == blocks.get((b.source_id, b.paragraph)) and counter.count(text) >= copy_tokens


def _prose(seg: Segment) -> bool:
    """Whether *seg* is a sentence of prose, whose exact repeat inside its source says nothing more ("The
    Supplier shall maintain ISO 9001 certification …" 20 times in one contract): not a table row, a log or
    code line, a list item, whose repeats count (two identical order lines are two orders, a log line
    41 times is 41 failures), nor a turn of a conversation, where a second "Seat selection is not included"
    is said again at another time."""
    return seg.kind == "sentence" and "speaker" not in seg.meta


def _said_again(a: Segment, b: Segment, leads: dict[str, str] | None) -> bool:
    """Whether *b*, the same sentence of prose as *a* in their source, is *a* said again rather than a
    statement about another thing: it has more than ``_SHORT_WORDS`` words (a short "Yes.", "Verified.",
    "Agreed." means what it answers), is no answer or question of a Q/A transcript ("A: I do not remember
    doing that." after two different questions), and both copies follow the same thing (:func:`_leads`:
    "The motion was carried by a majority vote." after "Item 3. …" and after "Item 4. …" records two
    decisions, a refrain after each stanza is sung each time)."""
    if min(len(a.text.split()), len(b.text.split())) <= _SHORT_WORDS or _QA_LABEL.match(a.text):
        return False
    leads = leads or {}
    return leads.get(a.id) == leads.get(b.id)


def _leads(doc: Document) -> dict[str, str]:
    """For each sentence that opens its paragraph and is read with what comes before it, that (the
    paragraph before, folded): a sentence that is a paragraph of its own, or that opens the paragraph
    right after a heading, a list item or a question, says something about that heading, item or
    question. A sentence opening a paragraph of several sentences of prose stands on its own."""
    by_para: dict[tuple[str, int], list[Segment]] = {}
    for seg in doc.segments:
        by_para.setdefault((seg.source_id, seg.paragraph), []).append(seg)
    out: dict[str, str] = {}
    before: list[Segment] | None = None
    source = None
    for (source_id, _), segs in by_para.items():
        if source_id != source:
            before, source = None, source_id
        first = segs[0]
        if before is not None and first.kind == "sentence":
            prev = before[-1]
            if len(segs) == 1 or prev.kind in ("heading", "list") or prev.text.rstrip().endswith("?"):
                out[first.id] = _norm(" ".join(s.original for s in before))
        before = segs
    return out


def _log_line(seg: Segment) -> str | None:
    """The one line of a log that *seg* is (a line of a code block or of a log, its block's fence aside), or None."""
    if not (seg.kind == "code" or "code_part" in seg.meta) or "speaker" in seg.meta:
        return None
    lines = [line for line in seg.text.split("\n") if line.strip() and not line.lstrip().startswith(("```", "~~~"))]
    return lines[0] if len(lines) == 1 else None


def _stamp(line: str, parts: tuple[tuple[str, int, int], ...]) -> str:
    """The time a log *line* was written: its first run of date and time parts ("2024-03-12T21:33:10Z")."""
    times = [(a, b) for kind, a, b in parts if kind == "time"]
    start, end = times[0]
    for a, b in times[1:]:
        if a - end > 1:
            break
        end = b
    return line[start:end]


def _log_repeats(live: Sequence[Segment], position: dict[str, int], doc: Document) -> dict[str, Segment]:
    """A line of one log block said again with another time and nothing else changed but its varying
    parts (:func:`odcf.stages.rank.log_template`: durations, pids, hex and request ids, addresses,
    counters, a worker's or thread's number) goes out once: the first copy, with `` [REPEATED: ×n, last <time>]``
    at its end (how many times the log wrote it, and when last), the later copies merged into it with
    a reason that names it and what differed. A log line is written with its time; one that has none,
    or copies all alike (two identical lines, which may be two events), keep their repeats, and so does
    a line that differs in any other value (status=502 / status=503, 91% / 99%, another host), and a
    line with a stack trace under it (each trace its own: "… ERROR … Unhandled exception" over another cause)."""
    # the line each part of a stack trace goes with (odcf.stages.segment: its ``trace_of``, pieces back)
    heads = {doc.segments[i - k].id for i, seg in enumerate(doc.segments)
             if (k := seg.meta.get("trace_of")) and 0 <= i - k}
    groups: dict[tuple[str, int, str, str], list[tuple[Segment, str, tuple[tuple[str, int, int], ...]]]] = {}
    for seg in live:
        line = _log_line(seg)
        if line is None or seg.id in heads:
            continue
        template, parts = log_template(line)
        if any(kind == "time" for kind, _, _ in parts):
            groups.setdefault((seg.source_id, seg.paragraph, seg.layer, template), []).append((seg, line, parts))
    updates: dict[str, Segment] = {}
    for members in groups.values():
        if len(members) < 2 or all(line == members[0][1] for _, line, _ in members):
            continue
        members.sort(key=lambda m: position[m[0].id])
        keeper, kline, kparts = members[0]
        _, last_line, last_parts = members[-1]
        last = _stamp(last_line, last_parts)
        note = (f" [REPEATED: ×{len(members)}, last {last}]" if last != _stamp(kline, kparts)
                else f" [REPEATED: ×{len(members)}]")
        for seg, line, parts in members[1:]:
            kinds = list(dict.fromkeys(kind for (kind, a, b), (_, c, d) in zip(kparts, parts) if kline[a:b] != line[c:d]))
            what = (" but for its " + (", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1 else kinds[0])
                    if kinds else ", said again")
            updates[seg.id] = seg.with_reason(f"dedup: same log line as {keeper.id}{what}; kept {keeper.id} "
                                              f"(the first in the log)", status="merged")
        lines = keeper.text.split("\n")
        lines[lines.index(kline)] = kline + note
        merged = tuple(seg.id for seg, _, _ in members[1:])
        best = max(seg.score or 0.0 for seg, _, _ in members)
        updates[keeper.id] = keeper.with_reason(
            f"dedup: kept over {', '.join(merged)}, the same log line at other times; '{note.strip()}' added",
            text="\n".join(lines), status="folded", merged_from=keeper.merged_from + merged,
            score=round(best, 6) if keeper.score is not None else keeper.score)
    return updates


def _norm(text: str) -> str:
    # NFC: the same sentence typed with combining accents is the same sentence (odcf.textutil.nfc)
    return _SPACE.sub(" ", nfc(text)).strip().casefold()


def signature(seg: Segment) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """What must be equal for a merge: numbers, protected values, negations."""
    numbers = frozenset(_NUMBER.findall(seg.text))
    values = frozenset(_norm(sp.text) for sp in seg.protected if sp.rule.startswith(_VALUE_RULES))
    negations = frozenset(m.group(0).lower() for m in _NEGATION.finditer(seg.text))
    return numbers, values, negations


def _keeper_key(seg: Segment, src: Source, position: int) -> tuple[Any, ...]:
    conf = src.confidence if src.confidence is not None else -1.0
    # Most confident, then most recent (missing timestamps last), then first.
    return (-conf, 0 if src.timestamp else 1, _Desc(src.timestamp or ""), position)


class _Desc:
    """Reverse ordering for strings inside a sort key."""

    __slots__ = ("v",)

    def __init__(self, v: str) -> None:
        self.v = v

    def __lt__(self, other: _Desc) -> bool:
        return self.v > other.v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.v == other.v


class SemanticDedup(Stage):
    """Merge near-duplicate segments, keeping the most confident / most recent / first.

    Options: ``threshold`` (cosine), ``embedder`` (``minilm``, ``hash`` or an ONNX path),
    ``threads``, ``safety`` and ``min_candidates`` (how many segments are embedded),
    ``min_words`` (shorter segments are never merged), ``within_source`` (also merge near repeats
    inside one source: off, since a source's own repetitions are part of what it says),
    ``copy_tokens`` (an exact copy of a block at least this long inside one source — a log or
    a file listing printed again — is merged all the same; 0 switches that off), ``layers``
    (the layers deduplicated), ``log_repeats`` (a log line written again at other times goes out once,
    with its count: :func:`_log_repeats`; False keeps every copy).
    """

    name = "dedup"
    requires = frozenset({"scores"})
    provides = frozenset({"deduped"})
    lossy = True

    def __init__(self, *, threshold: float = 0.92, embedder: str = "minilm", threads: int | None = None,
                 safety: float = 1.5, min_candidates: int = 64, min_words: int = 5,
                 within_source: bool = False, copy_tokens: int = 40, layers: Sequence[str] = ("fact",),
                 log_repeats: bool = True) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"dedup: threshold must be within (0, 1], got {threshold}")
        self.threshold = float(threshold)
        self.embedder = embedder
        self.threads = threads
        self.safety = float(safety)
        self.min_candidates = int(min_candidates)
        self.min_words = int(min_words)
        self.within_source = bool(within_source)
        self.copy_tokens = int(copy_tokens)
        self.layers = tuple(layers)
        self.log_repeats = bool(log_repeats)
        self._embedder: Any = None

    def _model(self) -> Any:
        if self._embedder is None:
            from odcf.backends.embedder import get_embedder

            opts = {"threads": self.threads} if self.embedder != "hash" else {}
            self._embedder = get_embedder(self.embedder, **opts)
        return self._embedder

    def warm_up(self) -> None:
        self._model().warm_up()

    def __call__(self, doc: Document, plan: Plan) -> Document:
        sources = {s.id: s for s in doc.sources}
        position = {s.id: k for k, s in enumerate(doc.segments)}
        # Short fragments ("Yes.", "OK, thanks.") repeat without being the same statement.
        live = [s for s in doc.segments if not s.dropped and s.layer in self.layers
                and s.layer not in PINNED_LAYERS and len(s.text.split()) >= self.min_words]
        n_live = len(live)
        # a log line written again at another time: out once, with its count (before the rest, which
        # keeps a log line's exact repeats and would block these on their differing numbers)
        log_updates = _log_repeats(live, position, doc) if self.log_repeats else {}
        live = [s for s in live if s.id not in log_updates]

        counter = get_counter(doc.tokenizer or plan.tokenizer)
        # Exact duplicates (after whitespace/case folding) among all live segments.
        pairs: dict[tuple[str, str], float] = {}
        by_text: dict[tuple[str, str], list[Segment]] = {}
        for s in live:
            by_text.setdefault((s.layer, _norm(s.text)), []).append(s)
        blocks: dict[tuple[str, int], str] | None = None  # each paragraph's text, read when a copy may need it
        leads: dict[str, str] | None = None  # what a sentence opening its paragraph follows, read when needed
        for group in by_text.values():
            if len(group) < 2:
                continue
            # identical texts: link each copy to the group's keeper only (linear; every pair of a
            # group of thousands of repeated lines was quadratic), which the grouping below
            # resolves exactly as it would the full clique
            best = min(group, key=lambda s: _keeper_key(s, sources[s.source_id], position[s.id]))
            copy = 0 < self.copy_tokens <= counter.count(best.text)  # a long block printed again
            prose = self.copy_tokens > 0 and all(_prose(s) for s in group)  # a sentence said again
            if prose:
                leads = leads if leads is not None else _leads(doc)
            if not copy and not self.within_source and self.copy_tokens > 0:
                blocks = blocks if blocks is not None else _paragraphs(doc)
            for other in group:
                if other is not best and (self.within_source or copy or other.source_id != best.source_id
                                          or (prose and _said_again(best, other, leads))
                                          or _same_long_block(best, other, blocks, counter, self.copy_tokens)):
                    a, b = sorted((best, other), key=lambda s: position[s.id])
                    pairs[(a.id, b.id)] = 1.0

        # Near duplicates among the best-scored candidates.
        cands = live
        k = None
        if live:
            mean_tokens = sum(counter.count(s.text) for s in live) / len(live)
            budget = doc.budget if doc.budget is not None else plan.role(doc.role).budget
            k = candidate_count(budget, mean_tokens, safety=self.safety, minimum=self.min_candidates)
            if k is not None and k < len(live):
                cands = sorted(live, key=lambda s: (-(s.score or 0.0), position[s.id]))[:k]
                cands.sort(key=lambda s: position[s.id])
        sims = None
        if len(cands) > 1:
            vecs = self._model().encode([s.text for s in cands])
            sims = vecs @ vecs.T
            ii, jj = np.nonzero(np.triu(sims >= self.threshold - 1e-6, k=1))
            for i, j in zip(ii.tolist(), jj.tolist()):
                a, b = cands[i], cands[j]
                if a.layer == b.layer and (self.within_source or a.source_id != b.source_id):
                    pairs.setdefault((a.id, b.id), round(float(sims[i, j]), 4))

        openers = _openers(doc)
        merged, kept, blocked, apart = self._groups(live, pairs, sources, position, _contexts(doc, openers))
        by_id = {s.id: s for s in live}
        updates: dict[str, Segment] = dict(log_updates)
        # the same sentence said in one source after two different first sentences ("The investigator confirmed …"
        # under "Participant P-0112 …" and under "Participant P-0114 …") is kept apart, and each copy then goes
        # only with the first sentence of its paragraph: delivered without it, it reads as the other copy (and a
        # second compression, no longer seeing the first sentences, would merge the two)
        for sid in sorted(apart, key=lambda i: position[i]):
            seg, opener = by_id[sid], openers.get(sid)
            if opener is not None and not seg.meta.get("budget_needs"):
                updates[sid] = seg.replace(meta={**seg.meta, "budget_needs": opener.id,
                                                 "budget_needs_what": "the first sentence of its paragraph (the same "
                                                 "words follow another sentence elsewhere in the source)"})
        decisions: list[dict[str, Any]] = [{"kept": s.id, "merged": m, "cosine": 1.0, "log_line": True}
                                           for s in log_updates.values() if s.status == "folded" for m in s.merged_from]
        for keeper_id, members in kept.items():
            keeper = by_id[keeper_id]
            best = max([keeper.score or 0.0] + [by_id[m].score or 0.0 for m, _ in members])
            for mid, cos in members:
                seg = by_id[mid]
                updates[mid] = seg.with_reason(
                    f"dedup: near-duplicate of {keeper_id} (cosine {cos:.3f}); kept {keeper_id} "
                    f"({_why(sources[keeper.source_id], sources[seg.source_id])})",
                    status="merged")
                decisions.append({"kept": keeper_id, "merged": mid, "cosine": cos})
            updates[keeper_id] = updates.get(keeper_id, keeper).with_reason(
                f"dedup: kept over {', '.join(m for m, _ in members)}",
                merged_from=keeper.merged_from + tuple(m for m, _ in members),
                score=round(best, 6) if keeper.score is not None else keeper.score)
        segments = tuple(updates.get(s.id, s) for s in doc.segments)
        event = TraceEvent(stage=self.name, data={
            "segments": n_live, "embedded": len(cands) if len(cands) > 1 else 0, "k": k,
            "threshold": self.threshold, "merged": len(merged) + sum(s.status == "merged" for s in log_updates.values()),
            "blocked": blocked,
            "decisions": decisions[:200],
        })
        return doc.with_event(event, segments=segments)

    def _groups(self, live: Sequence[Segment], pairs: dict[tuple[str, str], float],
                sources: dict[str, Source], position: dict[str, int], contexts: dict[str, str] | None = None,
                ) -> tuple[set[str], dict[str, list[tuple[str, float]]], int, set[str]]:
        """Greedy grouping: the best keeper claims its duplicates first. Two segments whose
        *contexts* differ are never one (see :func:`_contexts`); the last item returned holds the
        copies of one sentence in one source kept apart so (each goes only with its first sentence)."""
        contexts = contexts or {}
        by_id = {s.id: s for s in live}
        neighbours: dict[str, dict[str, float]] = {}
        for (a, b), cos in pairs.items():
            neighbours.setdefault(a, {})[b] = cos
            neighbours.setdefault(b, {})[a] = cos
        order = sorted((by_id[i] for i in neighbours),
                       key=lambda s: _keeper_key(s, sources[s.source_id], position[s.id]))
        merged: set[str] = set()
        kept: dict[str, list[tuple[str, float]]] = {}
        blocked: set[tuple[str, str]] = set()
        apart: set[str] = set()
        sig_cache: dict[str, Any] = {}

        def sig(s: Segment) -> Any:
            if s.id not in sig_cache:
                sig_cache[s.id] = signature(s)
            return sig_cache[s.id]

        for keeper in order:
            if keeper.id in merged:
                continue
            for other_id, cos in sorted(neighbours[keeper.id].items(), key=lambda kv: position[kv[0]]):
                if other_id in merged or other_id in kept:
                    continue
                # the same text says the same values, whatever spans the entity stage marked in each (it reads
                # only the budget's candidates: "English" was an entity in one copy of a sentence, not the other)
                same = _norm(keeper.text) == _norm(by_id[other_id].text)
                if (not same and sig(keeper) != sig(by_id[other_id])) \
                        or not _same_context(keeper, by_id[other_id], contexts):
                    blocked.add(tuple(sorted((keeper.id, other_id))))  # type: ignore[arg-type]
                    if same and keeper.source_id == by_id[other_id].source_id:
                        apart.update((keeper.id, other_id))  # said again after another first sentence
                    continue
                merged.add(other_id)
                kept.setdefault(keeper.id, []).append((other_id, cos))
        return merged, kept, len(blocked), apart


def _contexts(doc: Document, openers: dict[str, Segment]) -> dict[str, str]:
    """For each sentence that is not the first of its paragraph, that first sentence (folded): what
    it goes on from. "The investigator confirmed a diagnosis of diabetic kidney disease …" under
    "Participant P-0112 was screened …" and the same words under "Participant P-0114 …" are two
    statements, and merging them took P-0114's diagnosis out of what was delivered of P-0114. A first
    sentence said more than once in its source (:func:`_prose`) names nothing the sentences after it go
    on from: a contract whose paragraphs of boilerplate open with "Notices under this Section …" or
    "Schedule B sets out …" said "The Supplier shall maintain ISO 9001 certification …" once."""
    said = Counter((seg.source_id, _norm(seg.original)) for seg in doc.segments if _prose(seg))
    out: dict[str, str] = {}
    for sid, opener in openers.items():
        context = _norm(opener.original)
        if not (_prose(opener) and said[(opener.source_id, context)] > 1):
            out[sid] = context
    return out


def _openers(doc: Document) -> dict[str, Segment]:
    """For each sentence that is not the first of its paragraph (*openers* of :func:`_contexts`), that first segment."""
    first: dict[tuple[str, int], Segment] = {}
    out: dict[str, Segment] = {}
    for seg in doc.segments:
        opener = first.setdefault((seg.source_id, seg.paragraph), seg)
        if opener is not seg and seg.kind == "sentence":
            out[seg.id] = opener
    return out


def _same_context(a: Segment, b: Segment, contexts: dict[str, str]) -> bool:
    """Whether *a* and *b* go on from the same thing: both open their paragraphs, or go on from
    the same first sentence, or one goes on from the other (a sentence said twice in a row)."""
    ca, cb = contexts.get(a.id), contexts.get(b.id)
    return ca == cb or (ca is None and cb == _norm(a.original)) or (cb is None and ca == _norm(b.original))


def _why(keeper: Source, other: Source) -> str:
    if keeper.confidence != other.confidence:
        return f"confidence {keeper.confidence} over {other.confidence}"
    if keeper.timestamp != other.timestamp and keeper.timestamp:
        return f"more recent: {keeper.timestamp}"
    return "first in the input"
