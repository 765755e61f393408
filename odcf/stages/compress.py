"""Token-level compression: drop the words the fine-tuned classifier deems least needed.

>>> from odcf.stages.compress import TokenCompressor                       # doctest: +SKIP
>>> stage = TokenCompressor(rate=0.4)             # keep 40% of the words of the segments it compresses  # doctest: +SKIP
>>> stage.warm_up()                               # loads the shipped int8 ONNX model once  # doctest: +SKIP
>>> doc = stage(doc, plan)                        # doc after segment / protect / rank  # doctest: +SKIP

What it compresses: live fact/history/reasoning segments that are still verbatim, mainly Latin
script, prose (not code, JSON or tables) and at least ``min_words`` words long. Instruction and
state segments are never touched; segments in another script (Chinese, Cyrillic, ...) skip this
stage because the model's vocabulary is English and uncased — they are left to the sentence-level
stages (rank, budget) — and the trace says how many were skipped and why. A segment holding a
negation, an exception or a condition (a ``connective:`` or ``dep:`` span of a word in
:data:`~odcf.plan.protection.WHOLE_CLAUSE_CONNECTIVES`) is skipped too ("guarded"): what such a
word governs reaches past any span ("cash is not accepted" must not lose "cash", "If the versions
differ, the Chinese version prevails" must not lose its consequence), so the segment is kept or
dropped whole by the budget stage.

How much it keeps (one global decision over all the words it compresses, never per chunk):

* ``threshold=p``: keep every word whose keep probability is at least *p*;
* ``rate=r``: keep the ``r`` share of all words, highest probability first (ties by position);
* neither, with a budget (``doc.budget`` or the role's): if the live segments already fit, nothing
  is compressed; otherwise ``r = (budget - tokens that cannot be compressed) / tokens that can``,
  clamped to ``[min_rate, 1]``, and the words are chosen by falling ``probability / tokens **
  cost_exponent`` (default 0.25: a long word such as a URL must be surer to be needed than a short
  one before it takes the room of several) while their tokens (each word counted with a leading
  space, in the budget's unit) fit ``r`` × the compressible tokens — just enough to fit about the
  budget, and never more than ``1/min_rate`` compression (the budget stage drops the rest by
  priority); a segment that would keep fewer than ``min_share`` of its words is left whole instead
  (thinned that far it says something else), for the budget stage to keep or drop whole;
* neither and no budget: the model's calibrated threshold from its metadata.

With a rate or a budget, a word's probability is first multiplied by its segment's relevance
(the rank/rerank score over the best compressed segment's; ``relevance=False`` switches this off),
so that the kept words gather in the passages that matter for the query rather than thinning
every passage alike. Words that overlap a protected span are always kept and count towards the rate, and so are
the words holding a digit and the content words of the query, whatever the ontology protects
(:func:`asked_and_numbers`: "14 days' written notice" for "termination notice" keeps "notice"), and
the words that say what a protected value is (:func:`value_labels`: "Initial ACV payment =", "5% of Coverage A"). A compressed
segment is rebuilt from its original text: kept words verbatim, each preceded by the whitespace
that preceded it in the original, or the last line break among the words dropped before it (so a line's
words never run onto the line before), nothing re-spaced or re-cased; when the
last word is dropped, the sentence's closing mark (``. ! ? ; :`` or ``。！？；``) ends the rebuilt
text (in place of a comma the new last word carried), so that it never runs into the next sentence.
"""
from __future__ import annotations

import bisect
import dataclasses
import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from odcf.backends.token_classifier import split_words
from odcf.document import Document, Segment, Span, TraceEvent
from odcf.errors import PlanError, StageError
from odcf.plan.model import Plan
from odcf.plan.protection import DEFAULT_CONNECTIVES, WHOLE_CLAUSE_CONNECTIVES
from odcf.render import render
from odcf.stages.base import Stage, call_budget
from odcf.textutil import DANGLING_WORDS, STOPWORDS
from odcf.textutil import words as word_tokens
from odcf.tokens import get_counter
from odcf.training.metrics import (
    COST_EXPONENT,
    closed,
    select_global,
    select_global_tokens,
)

logger = logging.getLogger(__name__)

#: Layers the token stage may compress. Instruction and state are never compressed.
COMPRESSIBLE_LAYERS = frozenset({"fact", "history", "reasoning"})
#: Segment kinds whose words cannot be dropped without breaking them.
STRUCTURED_KINDS = frozenset({"code", "json", "table"})
#: Span rules (``connective:<word>`` from protect, ``dep:<word>`` from entities) whose word keeps its
#: segment out of this stage: a negation, exception or condition governs the whole clause.
GUARD_RULES = frozenset({"connective", "dep"})
_WHOLE_CLAUSE = frozenset(w.casefold() for w in WHOLE_CLAUSE_CONNECTIVES)


def guarding_word(seg: Segment) -> str | None:
    """The negation, exception or condition that keeps *seg* whole (None when there is none).

    >>> from odcf.document import Span
    >>> s = Segment(id="a#0", source_id="a", index=0, text="Cash is not accepted.", original="Cash is not accepted.",
    ...             protected=(Span(8, 20, "not accepted", "connective:not"),))
    >>> guarding_word(s)
    'not'
    """
    for span in seg.protected:
        kind, _, word = span.rule.partition(":")
        if kind in GUARD_RULES and word.casefold() in _WHOLE_CLAUSE:
            return word
    return None


#: A segment with a smaller share of Latin letters skips the token stage (and training skips such documents).
MIN_LATIN_SHARE = 0.5


def latin_share(text: str) -> float:
    """Share of letters that are Latin script (Basic Latin to Latin Extended-B and Latin Extended Additional)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 1.0
    latin = sum(1 for c in letters if c < "\u0250" or "\u1e00" <= c <= "\u1eff")
    return latin / len(letters)


@dataclass(frozen=True)
class _Work:
    index: int  # position in doc.segments
    seg: Segment
    words: tuple[tuple[int, int], ...]
    forced: np.ndarray
    labels: int = 0  # forced words that only :func:`value_labels` keeps
    own: tuple[int, int] = (0, 0)  # words kept as a word of the query / as holding a digit (:func:`asked_and_numbers`)
    lead: int = 0  # words of the line's own mark and label ("user:", "3.", "**Tool result:**")
    #: per word, the words it cannot be kept without (:func:`syntax_needs`); None without a parse
    needs: tuple[tuple[int, ...], ...] | None = None


class TokenCompressor(Stage):
    """Keep the words a fine-tuned token classifier (ONNX, int8) marks as needed.

    Options: ``model_path`` (folder or ``.onnx``; default the shipped model), ``rate`` (share of
    words to keep, 0-1), ``threshold`` (keep probability cut-off), ``min_words`` (shorter
    segments are left alone), ``min_rate`` (the most a budget may demand), ``min_share`` (under a budget, a
    segment that would keep fewer than this share of its words is left whole instead, for the budget stage to keep
    or drop whole; default 0.5; 0 switches it off), ``batch_size`` (model
    chunks per run; default 1, so that a segment's result never depends on the other segments:
    see :mod:`odcf.backends.token_classifier`), ``max_len`` (model window in sub-tokens, default
    from the model's metadata), ``relevance`` (weight word probabilities by segment score under
    a rate or budget; default on), ``cost_exponent`` (0-1: how much a word's token count lowers
    its place under a budget; 0 = probability alone; default
    :data:`~odcf.training.metrics.COST_EXPONENT`), ``skeleton`` (keep each sentence's main verb, its subject and
    modal, from spaCy's parse, whatever the model says, and choose a word only with the words it needs in that parse:
    its head up to the root, a preposition's object, a verb's subject and object; default on: see :func:`skeleton_words`
    and :func:`syntax_needs`).
    """

    name = "compress"
    requires = frozenset({"segments", "protected", "scores"})
    provides = frozenset({"compressed"})
    lossy = True

    def __init__(
        self,
        *,
        model_path: str | None = None,
        rate: float | None = None,
        threshold: float | None = None,
        min_words: int = 8,
        min_rate: float = 0.2,
        min_share: float = 0.5,
        batch_size: int = 1,
        max_len: int | None = None,
        threads: int | None = None,
        relevance: bool = True,
        cost_exponent: float = COST_EXPONENT,
        skeleton: bool = True,
    ) -> None:
        if rate is not None and threshold is not None:
            raise StageError("compress: give either rate= or threshold=, not both")
        if rate is not None and not (isinstance(rate, (int, float)) and 0.0 < rate <= 1.0):
            raise StageError(f"compress: rate must be in (0, 1], got {rate!r}")
        if threshold is not None and not (isinstance(threshold, (int, float)) and 0.0 <= threshold <= 1.0):
            raise StageError(f"compress: threshold must be in [0, 1], got {threshold!r}")
        if not (isinstance(min_rate, (int, float)) and 0.0 < min_rate <= 1.0):
            raise StageError(f"compress: min_rate must be in (0, 1], got {min_rate!r}")
        if not (isinstance(min_share, (int, float)) and 0.0 <= min_share <= 1.0):
            raise StageError(f"compress: min_share must be in [0, 1], got {min_share!r}")
        if not (isinstance(cost_exponent, (int, float)) and 0.0 <= cost_exponent <= 1.0):
            raise StageError(f"compress: cost_exponent must be in [0, 1], got {cost_exponent!r}")
        if not isinstance(min_words, int) or min_words < 1:
            raise StageError(f"compress: min_words must be a positive integer, got {min_words!r}")
        self.model_path = model_path
        self.rate = rate
        self.threshold = threshold
        self.min_words = min_words
        self.min_rate = min_rate
        self.min_share = float(min_share)
        self.batch_size = batch_size
        self.max_len = max_len
        self.threads = threads
        self.relevance = bool(relevance)
        self.cost_exponent = float(cost_exponent)
        self.skeleton = bool(skeleton)
        self._clf: Any = None

    def warm_up(self) -> None:
        if self._clf is not None:
            return
        from odcf.backends.token_classifier import TokenClassifier

        self._clf = TokenClassifier.load(self.model_path, max_len=self.max_len, batch_size=self.batch_size,
                                         threads=self.threads)

    # -- the stage ------------------------------------------------------------------------------
    def __call__(self, doc: Document, plan: Plan) -> Document:
        self.warm_up()
        out = self._compress(doc, plan)
        warning = self._clf.warning
        if warning and warning not in out.meta.get("warnings", ()):  # once per record
            out = out.replace(meta={**out.meta, "warnings": [*out.meta.get("warnings", ()), warning]})
        return out

    def _compress(self, doc: Document, plan: Plan) -> Document:
        counter = get_counter(doc.tokenizer or _unit(doc, plan) or plan.tokenizer)
        work, skipped, fixed_tokens = self._select(doc, plan, counter)
        # "model": the sha256's first 16 characters, as before; the full sha256, and the path as given
        # ("bundled" for the shipped model, so that records stay the same on every machine)
        data: dict[str, Any] = {"model": self._clf.sha256[:16], "model_sha256": self._clf.sha256,
                                "model_path": self._clf.path,
                                "skipped": {k: len(v) for k, v in skipped.items() if v}}
        if skipped.get("script"):
            data["skipped_script"] = skipped["script"][:20]
            data["skipped_script_why"] = "not mainly Latin script; the model's vocabulary is English (uncased)"
        if skipped.get("guarded"):
            by_id = {s.id: s for s in doc.segments}
            data["guarded_by"] = dict(sorted(Counter(guarding_word(by_id[i]) or "another part of its sentence"
                                                     for i in skipped["guarded"]).items()))
        if not work:
            data.update({"mode": "none", "segments": 0, "words_in": 0, "words_kept": 0})
            return doc.with_event(TraceEvent(stage=self.name, data=data))

        mode, value, budget_info = self._target(doc, plan, work, fixed_tokens, counter)
        data.update({"mode": mode, "value": value, **budget_info})
        if mode == "fits":
            data.update({"segments": 0, "words_in": sum(len(w.words) for w in work), "words_kept": None})
            return doc.with_event(TraceEvent(stage=self.name, data=data))

        if self.skeleton:
            work, data["skeleton"] = _with_skeleton(work)
        probs = self._clf.word_probs_for([w.seg.original for w in work], [list(w.words) for w in work])
        if self.relevance and mode in ("rate", "budget"):
            probs, data["relevance"] = _relevance_weighted(work, probs)
        if mode == "budget":
            keep = self._fit_budget(doc, plan, work, probs, counter, value, budget_info, data)
        else:
            keep = self._decide(work, probs, mode, value)
        keep = [undangled(w.words, w.seg.original, k, w.forced) for w, k in zip(work, keep)]
        new_segments = list(doc.segments)
        changed = emptied = left_whole = 0
        words_in = words_kept = 0
        for w, k in zip(work, keep):
            n, kept = len(w.words), int(k.sum())
            if mode == "budget" and 0 < kept < n and kept < self.min_share * n:
                # thinned this far a sentence says something else ("Lives with wife, independent in activities of
                # daily living." read "Lives daily."): it is left whole, for the budget stage to keep or drop whole
                new_segments[w.index] = w.seg.with_reason(
                    f"compress: would keep {kept} of {n} words ({kept / n:.0%}), under the {self.min_share:.0%} a "
                    f"thinned segment keeps; left whole")
                left_whole += 1
                k = np.ones(n, dtype=bool)
                kept = n
            words_in += n
            words_kept += kept
            if kept == n:
                continue
            # under a budget the rate is only where the word limit started (clamped to min_rate): the label says the
            # limit the words were chosen under, not "rate 0.20" beside a segment that kept 86% (QA s32)
            label = (f"budget, token limit {data['token_limit']}" if mode == "budget"
                     else f"rate {value:.2f}" if mode == "rate" else f"threshold {value:.3f}")
            if kept == 0 or not k[w.lead:].any():
                # nothing left worth keeping (at most the line's mark or speaker label, "user:"): say so,
                # rather than deliver an empty segment or a bare label
                new_segments[w.index] = w.seg.with_reason(
                    f"compress: no word of {n} kept{' but its label' if kept else ''} ({label}); dropped",
                    status="dropped")
                emptied += 1
            else:
                new_segments[w.index] = w.seg.with_reason(
                    f"compress: kept {kept} of {n} words ({kept / n:.0%}; {label})",
                    text=rebuild(w.seg.original, w.words, k), status="compressed",
                    meta={**w.seg.meta, "dropped_words": tuple(dropped_runs(w.seg.original, w.words, k))})
            changed += 1
        data.update({
            "segments": changed, "emptied": emptied, "left_whole": left_whole, "candidates": len(work),
            "words_in": words_in, "words_kept": words_kept,
            "forced": int(sum(int(w.forced.sum()) for w in work)),
            "labels": {"words": sum(w.labels for w in work)},
            "always_kept": {"query_words": sum(w.own[0] for w in work), "number_words": sum(w.own[1] for w in work)},
            "kept_ratio": round(words_kept / words_in, 4) if words_in else None,
        })
        return doc.with_event(TraceEvent(stage=self.name, data=data), segments=tuple(new_segments))

    # -- pieces -----------------------------------------------------------------------------------
    def _select(self, doc: Document, plan: Plan, counter: Any) -> tuple[list[_Work], dict[str, list[str]], int]:
        forbidden = _forbidden_layers(doc, plan)
        work: list[_Work] = []
        skipped: dict[str, list[str]] = {"instruction": [], "layer": [], "structured": [], "changed": [],
                                         "script": [], "items": [], "short": [], "guarded": []}
        fixed = 0
        asked = query_words(doc.query)
        # a sentence cut for length is guarded whole: the exception in one part governs the others
        group_of: dict[str, str | None] = {}
        guarded_groups: set[str | None] = set()
        first: str | None = None
        for seg in doc.segments:
            if seg.meta.get("cut_part") == 0:
                first = seg.id
            if seg.meta.get("cut_parts"):
                group_of[seg.id] = first
                if guarding_word(seg) is not None:
                    guarded_groups.add(first)
        for i, seg in enumerate(doc.segments):
            if seg.dropped or seg.layer in forbidden:
                continue
            why = None
            if seg.layer == "instruction":
                why = "instruction"
            elif seg.layer not in COMPRESSIBLE_LAYERS:
                why = "layer"
            elif seg.kind in STRUCTURED_KINDS:
                why = "structured"
            elif seg.status != "verbatim" or seg.text != seg.original:
                why = "changed"
            elif latin_share(seg.original) < MIN_LATIN_SHARE:
                why = "script"
            elif _short_items(seg):
                why = "items"
            words = tuple(split_words(seg.original))
            if why is None and len(words) < self.min_words:
                why = "short"
            if why is None and (guarding_word(seg) is not None
                                or (seg.id in group_of and group_of[seg.id] in guarded_groups)):
                why = "guarded"
            if why is not None:
                skipped[why].append(seg.id)
                fixed += counter.count(seg.text)
                continue
            own = asked_and_numbers(words, seg.original, asked)
            work.append(_Work(i, seg, words, *_forced_and_labels(words, seg, own), lead=_lead_words(words, seg.original),
                              own=(int(own[0].sum()), int(own[1].sum()))))
        return work, skipped, fixed

    def _target(self, doc: Document, plan: Plan, work: Sequence[_Work], fixed: int, counter: Any) -> tuple[str, float, dict[str, Any]]:
        if self.threshold is not None:
            return "threshold", float(self.threshold), {}
        if self.rate is not None:
            return "rate", float(self.rate), {}
        budget = call_budget(doc, plan)
        if budget is None:
            return "threshold", self._clf.threshold, {"threshold_from": "model metadata"}
        eligible = sum(counter.count(w.seg.original) for w in work)
        info = {"budget": budget, "fixed_tokens": fixed, "eligible_tokens": eligible}
        if fixed + eligible <= budget:
            return "fits", 1.0, info
        need = (budget - fixed) / eligible if eligible else 1.0
        rate = min(1.0, max(self.min_rate, need))
        info["needed_rate"] = round(need, 4)
        return "budget", rate, info

    def _fit_budget(self, doc: Document, plan: Plan, work: Sequence[_Work], probs: Sequence[np.ndarray], counter: Any,
                    rate: float, info: dict[str, Any], data: dict[str, Any]) -> list[np.ndarray]:
        """Keep masks whose words fit ``rate`` × the compressible tokens, then measured as the budget
        stage will measure them: the live segments assembled (source headers, separators, the closing
        marks the rebuild adds), the word limit lowered by any excess and the words chosen again, a
        few rounds at most. Without this the assembled text ran 1-2 tokens over a tight budget and
        the budget stage dropped a whole segment to make room."""
        costs = _word_costs(work, counter)
        forced = [w.forced for w in work]
        needs = _needs(work)
        limit = first_limit = int(rate * info["eligible_tokens"])
        floor = int(self.min_rate * info["eligible_tokens"])
        budget = int(info["budget"])
        annotate = bool(doc.meta.get("annotate", True))
        forbidden = _forbidden_layers(doc, plan)
        rounds = 0
        while True:
            keep = [undangled(w.words, w.seg.original, k, w.forced)
                    for w, k in zip(work, _split(work, select_global_tokens(probs, costs, limit=limit, forced=forced,
                                                                            cost_exponent=self.cost_exponent,
                                                                            needs=needs)))]
            texts = {w.seg.id: rebuild(w.seg.original, w.words, k) for w, k in zip(work, keep)}
            probe = doc.replace(segments=tuple(dataclasses.replace(s, text=texts[s.id]) if s.id in texts else s
                                               for s in doc.segments))
            assembled = counter.count(render(probe, lambda s: not s.dropped and s.layer not in forbidden,
                                             annotate=annotate)[0])
            excess = assembled - budget
            if excess <= 0 or limit <= floor or rounds >= _FIT_ROUNDS:
                break
            limit = max(floor, limit - excess)
            rounds += 1
        data.update({"rate_token_limit": first_limit, "token_limit": limit,
                     "cost_exponent": self.cost_exponent, "fit_rounds": rounds,
                     "assembled_tokens": assembled,
                     "word_tokens_kept": int(sum(int(c[k].sum()) for c, k in zip(costs, keep)))})
        return keep

    def _decide(self, work: Sequence[_Work], probs: Sequence[np.ndarray], mode: str, value: float) -> list[np.ndarray]:
        if mode == "threshold":
            return [closed((p >= value) | w.forced, w.needs) if w.needs is not None else (p >= value) | w.forced
                    for w, p in zip(work, probs)]
        return _split(work, select_global(probs, rate=value, forced=[w.forced for w in work], needs=_needs(work)))


#: The most words of a list item that is kept or dropped whole by the budget, never thinned.
SHORT_ITEM_WORDS = 12


def _short_items(seg: Segment) -> bool:
    """Whether *seg* is a part of a list of two or more items of at most :data:`SHORT_ITEM_WORDS` words each:
    thinned, "(a) laboratory technicians; (b) site engineers …; (c) reception and facilities staff," under "not
    eligible" became "technicians;", and the two roles left out read as eligible."""
    lines = [line for line in seg.original.splitlines() if line.strip()]
    return (seg.kind == "list" and len(lines) >= 2
            and all(len(line.split()) <= SHORT_ITEM_WORDS for line in lines))


#: Dependency labels of a clause's subject ("The patch was scheduled …", "Employees may work …").
_SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "expl"})
#: Dependency labels of what the main verb acts on or says of its subject ("requires notice", "is liable").
_OBJECT_DEPS = frozenset({"dobj", "attr", "acomp", "oprd", "xcomp"})


def skeleton_words(words: Sequence[tuple[int, int]], parsed: Any) -> np.ndarray:
    """Words of a parsed segment (*parsed*: its spaCy ``Doc``, over the text *words* index) that say who does
    what: each sentence's main verb, its subject with the subject's determiner and the noun words compounded
    into it, its auxiliaries ("may", "must", "will be", "was"), negation and particle, and the head of its object
    or complement ("requires notice", "is liable"). Thinned without them, "The patch was scheduled for 2026-02-15 but
    was postponed" read "scheduled for 2026-02-15 but was postponed …", "3.1 Employees may work remotely up
    to 3 days per week" read "3.1 up to 3 days per week.", "A proposal … will be rejected" read "A proposal will
    rejected" and "I was charged twice" "I charged"."""
    keep = np.zeros(len(words), dtype=bool)
    if not words:
        return keep
    starts = [s for s, _ in words]
    chosen: set[int] = set()
    heads = []
    for root in parsed:  # labels only: the shared pipeline has no tagger (:data:`odcf.backends.ner.EXCLUDE`)
        if root.dep_ != "ROOT" or not root.text[:1].isalpha() or root.lower_ in DANGLING_WORDS:
            continue  # a preposition parsed as a root ("… by Fri. at the latest") is a misparse, not a verb
        heads.append(root)
        if root.i + 1 < len(parsed) and parsed[root.i + 1].text == ":":
            # "Currency: a 10% strengthening … would reduce annual operating profit …": the parser makes the
            # label the root; the clause after it has a verb of its own
            heads.extend(t for t in root.children if t.dep_ in ("acl", "relcl", "appos", "ccomp", "advcl")
                         and t.i > root.i + 1)
    for root in heads:
        chosen.add(root.i)
        for tok in root.children:  # the main clause's: a subordinate clause's subject is the model's to keep
            if tok.dep_ in _SUBJECT_DEPS:
                chosen.add(tok.i)
                chosen.update(c.i for c in tok.children if c.dep_ in ("compound", "det"))
            elif tok.dep_ in ("aux", "auxpass", "neg", "prt"):
                # "will be rejected", "was charged", "are fixed": without them the voice, tense or mood changes
                chosen.add(tok.i)
            elif tok.dep_ in _OBJECT_DEPS and tok.text[:1].isalnum() and tok.lower_ not in DANGLING_WORDS:
                # what the verb does it to: "requires written notice", not "requires."
                chosen.add(tok.i)
                chosen.update(c.i for c in tok.children if c.dep_ in ("compound", "neg"))
    for i in chosen:
        tok = parsed[i]
        k = bisect.bisect_right(starts, tok.idx) - 1
        if k >= 0 and words[k][1] > tok.idx:
            keep[k] = True
    return keep


#: Dependency labels of a preposition's object ("outside the permitted range", "because of an HbA1c value").
_PREP_OBJECT_DEPS = frozenset({"pobj", "pcomp"})
#: Dependency labels of a verb's subject and direct object, which a kept verb keeps in any clause: "Participants who
#: fail screening because of …" thinned to "Participants fail because of …" read as a main clause, and "our guidance
#: assumes foreign exchange rates as of the end of September" to "guidance assumes as of the end of September".
_ARGUMENT_DEPS = frozenset({"nsubj", "nsubjpass", "csubj", "csubjpass", "expl", "dobj"})


def syntax_needs(words: Sequence[tuple[int, int]], parsed: Any) -> tuple[tuple[int, ...], ...]:
    """For each of *words* (over the text of *parsed*, its spaCy ``Doc``), the words it cannot be kept without:
    the word holding its syntactic head (so, followed on, every word above it up to its sentence's root), for a
    preposition the word holding its object (pobj, pcomp), for a verb the words holding its subject and direct
    object (the head word of each: "who", "screening", not the whole phrase), and for a conjunct the coordinating word between it and
    the conjunct it joins ("and", "or"). A word made of several tokens ("Third-quarter", "$1.214") needs what any
    of them needs outside it; a punctuation token's attachment is no need (a comma hangs anywhere).

    The token stage keeps a word only with all of these (:func:`~odcf.training.metrics.closed`), so a kept phrase
    never hangs from a dropped word. QA s32 (token stage on), thinned without them: "… up 11% year over year and
    above the top end of our guidance range of $1.17 billion …" read "… up 11% year guidance range of $1.17 billion
    …", "estimated between EUR 65,000 and EUR 80,000" read "estimated EUR 65,000 and EUR 80,000", "per housing set"
    read "per housing", "an HbA1c value outside the permitted range" read "value outside", and "Units with serial
    numbers above …" read "Units serial numbers above …".

    >>> from types import SimpleNamespace as T
    >>> toks = [T(i=0, idx=0, dep_="ROOT", is_punct=False), T(i=1, idx=5, dep_="prep", is_punct=False),
    ...         T(i=2, idx=10, dep_="pobj", is_punct=False)]                 # "sold with care"
    >>> for t, h in zip(toks, (0, 0, 1)): t.head, t.children = toks[h], [c for c in toks if c is not t and h == c.i]
    >>> syntax_needs([(0, 4), (5, 9), (10, 14)], toks)
    ((), (0, 2), (1,))
    """
    starts = [s for s, _ in words]
    n = len(words)

    def word_of(tok: Any) -> int:
        k = bisect.bisect_right(starts, tok.idx) - 1
        return k if k >= 0 and words[k][1] > tok.idx else -1

    tokens = list(parsed)
    at = [word_of(t) for t in tokens]
    punct = [bool(t.is_punct or t.dep_ == "punct") for t in tokens]
    only_punct = [True] * n
    for t, w in zip(tokens, at):
        if w >= 0 and not punct[t.i]:
            only_punct[w] = False
    needs: list[set[int]] = [set() for _ in range(n)]
    for t, w in zip(tokens, at):
        if w < 0 or (punct[t.i] and not only_punct[w]):
            continue
        h = at[t.head.i]
        if h < 0 or h == w:
            continue
        needs[w].add(h)
        if t.dep_ in _PREP_OBJECT_DEPS or t.dep_ in _ARGUMENT_DEPS:
            needs[h].add(w)  # "outside the permitted range", not "value outside"; "who fail", not "fail"
        if t.dep_ == "conj":
            # "between EUR 65,000 and EUR 80,000": the "and" (or "or") joins the second to the first
            for c in t.head.children:
                if c.dep_ == "cc" and t.head.i < c.i < t.i and at[c.i] >= 0 and at[c.i] != w:
                    needs[w].add(at[c.i])
    return tuple(tuple(sorted(x)) for x in needs)


def _needs(work: Sequence[_Work]) -> list[tuple[tuple[int, ...], ...] | None] | None:
    """Each work item's :func:`syntax_needs` for the selection, or None when no item has them (no parse)."""
    out = [w.needs for w in work]
    return out if any(x is not None for x in out) else None


def _with_skeleton(work: Sequence[_Work]) -> tuple[list[_Work], dict[str, Any]]:
    """*work* with each segment's :func:`skeleton_words` forced to keep, with its :func:`syntax_needs` (one parse
    per segment), and with what forced words need forced too; and what the trace says of it."""
    from odcf.backends.ner import pipe

    try:
        docs = list(pipe([w.seg.original for w in work], parse=True, ner=False))
    except (ImportError, OSError, StageError) as exc:  # no spaCy pipeline: the model decides alone, and the trace says so
        return list(work), {"words": 0, "unavailable": f"{type(exc).__name__}: {exc}"[:200]}
    out: list[_Work] = []
    added = needed = 0
    for w, parsed in zip(work, docs):
        skeleton = skeleton_words(w.words, parsed)
        added += int((skeleton & ~w.forced).sum())
        needs = syntax_needs(w.words, parsed)
        forced = closed(w.forced | skeleton, needs)
        needed += int((forced & ~(w.forced | skeleton)).sum())
        out.append(dataclasses.replace(w, forced=forced, needs=needs))
    return out, {"words": added, "needed_words": needed}


def _relevance_weighted(work: Sequence[_Work], probs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Word probabilities times their segment's relevance (its rank score over the best one).

    A word's worth is the chance that a reader needs it *if* its passage matters, times the
    chance that the passage matters: so the global ranking spends the tokens on the passages the
    rank/rerank stages scored highest instead of thinning every passage alike. Segments without a
    score count as fully relevant.
    """
    scores = np.asarray([w.seg.score if w.seg.score is not None else np.nan for w in work], dtype=np.float64)
    known = scores[~np.isnan(scores)]
    top = float(known.max()) if len(known) and known.max() > 0 else 0.0
    if top <= 0.0:
        return list(probs), {"applied": False, "why": "no positive segment scores"}
    weights = np.where(np.isnan(scores), 1.0, np.clip(scores / top, 0.0, 1.0))
    return [p * wt for p, wt in zip(probs, weights)], {"applied": True, "min_weight": round(float(weights.min()), 4)}


def _split(work: Sequence[_Work], flat: np.ndarray) -> list[np.ndarray]:
    """A flat keep mask over the words of all *work* items, cut back into one mask per item."""
    out: list[np.ndarray] = []
    pos = 0
    for w in work:
        out.append(flat[pos:pos + len(w.words)])
        pos += len(w.words)
    return out


def _word_costs(work: Sequence[_Work], counter: Any) -> list[np.ndarray]:
    """Tokens of each word of every work item in the budget's unit (see :func:`word_costs`)."""
    cache: dict[str, int] = {}
    return [word_costs(w.seg.original, w.words, counter, cache) for w in work]


def word_costs(text: str, words: Sequence[tuple[int, int]], counter: Any,
               cache: dict[str, int] | None = None) -> np.ndarray:
    """Tokens of each word ``(start, end)`` of *text*, counted with one leading space (as it
    stands after another word); *cache* counts a repeated word once."""
    cache = {} if cache is None else cache
    costs = np.empty(len(words), dtype=np.int64)
    for i, (s, e) in enumerate(words):
        word = text[s:e]
        c = cache.get(word)
        if c is None:
            c = cache[word] = counter.count(" " + word)
        costs[i] = c
    return costs


#: What opens a line and says what it is: a heading's or a list item's mark, a quote's ">", then a
#: speaker's or field's label ("**User (dana@ops):**", "Agent:", "**Tool result:**"); forced to keep.
_LEAD_RE = re.compile(r"^\s*(?:(?:#{1,6}|>|[-*+\u2022]|\d{1,3}[.)])(?=\s))?\s*"
                      r"(?:(?:\*\*|__)(?=\S)[^*_\n]{1,60}?(?:[:.]\*\*|:__|\*\*:|__:)"
                      r"|[A-Za-z][\w.@-]{0,30}(?:\s\([^()\n]{1,40}\))?:(?=\s))?")


def _lead_words(words: Sequence[tuple[int, int]], text: str) -> int:
    """How many of the first *words* are the line's own mark and label (:data:`_LEAD_RE`)."""
    head = _LEAD_RE.match(text)
    if head is None:
        return 0
    return sum(1 for s, _ in words if s < head.end())


#: Numbers written as words, kept like numbers written in digits: "two charges of $1,188.00" is the complaint,
#: "charges of $1,188.00" is not ("one" is left out: "one of the", "the one that" count nothing).
NUMBER_WORDS = frozenset(
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion "
    "trillion once twice thrice half dozen zero".split())
#: Number words that multiply or divide what follows them, determiner and all: "capped at twice the fees paid",
#: not "capped twice" (a cap the source never stated).
_MULTIPLIERS = frozenset({"twice", "thrice", "half", "double", "triple", "quadruple"})
#: Marks stripped from a word's edges before it is looked up in a word list.
_WORD_MARKS = ".,;:!?()[]{}\"'“”‘’«»"

#: A character of a script the English model does not read, or of CJK punctuation (CJK, kana, hangul, full-width
#: forms): a word holding one is kept. Mixed into a mainly Latin sentence, "… next week, 剩余部分七月十日前发出。"
#: had its whole Chinese clause, one whitespace-separated "word" to the model, dropped.
_OTHER_SCRIPT_RE = re.compile(r"[\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
#: A quotation in straight or curly double quotes, guillemets or corner brackets, on one line.
_QUOTE_RE = re.compile(r'"[^"\n]{1,200}"|“[^”\n]{1,200}”|«[^»\n]{1,200}»|「[^」\n]{1,200}」')
#: The most words of a quotation kept whole by the token stage.
QUOTE_WORDS = 12

#: Words that are a comparison or tolerance sign: "eGFR < 30" must not become "eGFR 30".
OPERATOR_WORDS = frozenset({"<", ">", "<=", ">=", "=<", "=>", "≤", "≥", "=", "==", "≠", "!=", "±", "+/-", "≈", "~"})


def query_words(query: str | None) -> frozenset[str]:
    """The content words of *query* (lower-cased, stopwords left out) that a segment keeps wherever it holds them.

    >>> sorted(query_words("What is the liability cap and the termination notice?"))
    ['cap', 'liability', 'notice', 'termination']
    """
    return frozenset(word_tokens(query, stop=True)) if query and query.strip() else frozenset()


def asked_and_numbers(words: Sequence[tuple[int, int]], text: str,
                      asked: frozenset[str] = frozenset()) -> tuple[np.ndarray, np.ndarray]:
    """Two masks over *words* of *text*: the words that are a content word of the query (*asked*, see
    :func:`query_words`; "notice." for "… termination notice"), and the words holding a digit ("500", "2.7.1",
    "3f9a2c7be41d"). Both are kept like protected spans, whatever the ontology protects: the question's
    own words say what the passage answers, and odcf keeps exact numbers.

    >>> t = "Either party may terminate on 14 days' written notice under release 2.7.1."
    >>> w = [(m.start(), m.end()) for m in re.finditer(r"\\S+", t)]
    >>> q, n = asked_and_numbers(w, t, frozenset({"notice"}))
    >>> [t[s:e] for (s, e), k in zip(w, q) if k], [t[s:e] for (s, e), k in zip(w, n) if k]
    (['notice'], ['14', '2.7.1.'])
    """
    asked_mask = np.zeros(len(words), dtype=bool)
    digits = np.zeros(len(words), dtype=bool)
    for i, (s, e) in enumerate(words):
        word = text[s:e]
        digits[i] = any(ch.isdigit() for ch in word) or word.strip(_WORD_MARKS).casefold() in NUMBER_WORDS
        if asked and not digits[i]:
            asked_mask[i] = any(tok in asked for tok in word_tokens(word))
    return asked_mask, digits


def forced_words(words: Sequence[tuple[int, int]], seg: Segment, asked: frozenset[str] = frozenset()) -> np.ndarray:
    """Words of ``seg.original`` that overlap a protected span, hold a digit, are a word of the query
    (*asked*, see :func:`asked_and_numbers`) or are a comparison sign, and the words that say what a
    protected value is (see :func:`value_labels`): all must be kept."""
    return _forced_and_labels(words, seg, asked_and_numbers(words, seg.original, asked))[0]


def _forced_and_labels(words: Sequence[tuple[int, int]], seg: Segment,
                       own: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, int]:
    """:func:`forced_words` (*own*: the masks of :func:`asked_and_numbers`), and how many of them only
    :func:`value_labels` keeps (for the trace)."""
    forced = np.zeros(len(words), dtype=bool)
    if not words:
        return forced, 0
    text = seg.original
    starts = np.fromiter((s for s, _ in words), dtype=np.int64, count=len(words))
    ends = np.fromiter((e for _, e in words), dtype=np.int64, count=len(words))
    for i, (s, e) in enumerate(words):
        if (e - s <= 3 and text[s:e] in OPERATOR_WORDS) or _OTHER_SCRIPT_RE.search(text, s, e):
            forced[i] = True
    # a short quotation is quoted whole: '("keep it as simple as possible")' thinned to '("keep possible")' put
    # words in someone's mouth
    for q in _QUOTE_RE.finditer(text):
        if len(q.group(0).split()) <= QUOTE_WORDS:
            forced |= (starts < q.end()) & (ends > q.start())
    # the line's own mark and label: who says it ("**User (dana@ops):**" over "Never touch prod"),
    # which heading or item it is ("#", "3.", "-")
    forced[:_lead_words(words, text)] = True
    numbers = own[1] if own is not None else np.zeros(len(words), dtype=bool)
    if not seg.protected and not numbers.any():
        return _with_own(forced, own), 0
    # a number is a protected value whatever the ontology protects: what joins two of them and what
    # one measures stay with it ("between 2.6 and 2.7.1", not "2.6 2.7.1")
    protected = numbers.copy()
    for span in seg.protected:
        protected |= (starts < _lead_in_trimmed(text, span)) & (ends > span.start)
    out = _bridged(words, text, forced | protected)
    out = _with_own(out, own) | _counted(words, text, numbers)
    labels = value_labels(words, text, protected) & ~out
    return out | labels, int(labels.sum())


def _lead_in_trimmed(text: str, span: Span) -> int:
    """Where a protected *span* ends for the token stage: a connective's span ("despite a 15% drop in", its clause
    up to a word limit) without the words at its end that only lead into what follows (:data:`DANGLING_WORDS`),
    which forced alone were delivered dangling ("… a 15% drop in."); any other span where it ends."""
    if not span.rule.startswith("connective:"):
        return span.end
    end = span.end
    while True:
        inner = text[span.start:end].rstrip()
        cut = inner.rfind(" ")
        if cut <= 0 or inner[cut + 1:].casefold() not in DANGLING_WORDS:
            return end
        end = span.start + cut


def _with_own(forced: np.ndarray, own: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """*forced* plus the query's words and the numbers (:func:`asked_and_numbers`): kept, like protected spans."""
    return forced if own is None else forced | own[0] | own[1]


#: The most words between two kept protected words that are kept with them: what joins two amounts
#: ("$10,000 less $1,000", "$29,174.90 − $2,150.00", "$18.00 per RSF") says how they relate.
BRIDGE_WORDS = 2


def _bridged(words: Sequence[tuple[int, int]], text: str, forced: np.ndarray) -> np.ndarray:
    """*forced* plus the words of each gap of at most :data:`BRIDGE_WORDS` between two forced words
    in one sentence, and a field's label ("Buyer:", "Deductible:") right before a forced word.

    >>> t = "Net: $10,000 less $1,000 = $9,000 due now"
    >>> w = [(m.start(), m.end()) for m in re.finditer(r"\\S+", t)]
    >>> f = np.array([False, True, False, True, True, True, False, False])
    >>> _bridged(w, t, f).tolist()
    [True, True, True, True, True, True, False, False]
    """
    out = forced.copy()
    idx = np.flatnonzero(forced)
    for a, b in zip(idx[:-1], idx[1:]):
        if 1 < b - a <= BRIDGE_WORDS + 1 and not any(ch in text[words[a][1]:words[b][0]] for ch in ".!?;。！？；\n"):
            out[a + 1:b] = True
    for i in idx:
        if i > 0 and not out[i - 1] and text[words[i - 1][0]:words[i - 1][1]].endswith(":"):
            out[i - 1] = True
    for i in idx:
        if i > 0 and not forced[i - 1]:
            out[_measured(words, text, i):i] = True
    return out


#: The most words after a number that say what it counts ("1,988 new hires", "13 sites", "24 महीने").
COUNTED_WORDS = 2


def _counted(words: Sequence[tuple[int, int]], text: str, numbers: np.ndarray) -> np.ndarray:
    """The words right after each number (*numbers*) that say what it counts: up to :data:`COUNTED_WORDS`
    in one phrase, stopping at a stop word or a mark that ends the phrase, so that "reached 33.1% on 1,988
    new hires across 13 sites" keeps "1,988 new hires" and "13 sites", not "1,988 across 13".

    >>> t = "reached 33.1% on 1,988 new hires across 13 sites, and 5 mg twice in 2025 unless"
    >>> w = [(m.start(), m.end()) for m in re.finditer(r"\\S+", t)]
    >>> n = np.array([any(c.isdigit() for c in t[a:b]) for a, b in w])
    >>> [t[a:b] for (a, b), k in zip(w, _counted(w, t, n)) if k]
    ['new', 'hires', 'sites,', 'mg']
    """
    out = np.zeros(len(words), dtype=bool)
    for i in np.flatnonzero(numbers):
        if text[words[i][1] - 1] in _PHRASE_BREAK:
            # "£(4,274) thousand": the scale after a bracketed figure is still the figure's (a 1000x error without it)
            if (text[words[i][1] - 1] == ")" and i + 1 < len(words) and words[i + 1][0] == words[i][1] + 1
                    and text[words[i + 1][0]:words[i + 1][1]].strip(_WORD_MARKS).casefold() in _SCALES):
                out[i + 1] = True
            continue
        first = i + 1
        if (text[words[i][0]:words[i][1]].casefold() in _MULTIPLIERS and first < len(words)
                and text[words[first][0]:words[first][1]].casefold() in ("the", "a", "an", "its", "their", "his", "her")):
            out[first] = True  # "twice the fees": the determiner is part of what is multiplied
            first += 1
        for j in range(first, min(len(words), first + COUNTED_WORDS)):
            word = text[words[j][0]:words[j][1]]
            bare = word.strip(_PHRASE_BREAK + "\"'").casefold()
            if numbers[j] or bare in STOPWORDS or bare in _CONNECTIVE_WORDS:
                break
            if any(ch in _PHRASE_BREAK for ch in text[words[j - 1][1]:words[j][0]]):
                break
            out[j] = True
            # a unit ("5 mg", "3 kg") is what the number counts: what follows it is not
            if word[-1] in _PHRASE_BREAK or (j == i + 1 and bare in _UNITS):
                break
    return out


#: Units written after a number: the number counts them, and the words after them are not what it counts.
_UNITS = frozenset("mg mcg µg g kg t ml l cl dl mm cm m km in ft yd mi lb lbs oz s ms sec secs min mins h hr hrs "
                   "kb mb gb tb kbps mbps gbps hz khz mhz ghz w kw kwh mw v ma mah pcs pc x bps".split())
#: Scale words after an amount: "£(4,274) thousand", "(1.2) million".
_SCALES = frozenset({"thousand", "thousands", "million", "millions", "billion", "billions", "trillion", "bn", "mn",
                     "m", "k", "000", "000s"})
#: Single connective words, which open a clause of their own and say nothing of the number before them.
_CONNECTIVE_WORDS = frozenset(w for w in DEFAULT_CONNECTIVES if " " not in w)


#: What may open an amount whose measured word is kept with it: a digit or a currency sign.
_AMOUNT_START_RE = re.compile(r"[\d$€£¥₹]")
#: Marks between two words that end the phrase: the word before them does not name the amount after.
_PHRASE_BREAK = ".!?;:,)]}\n。！？；，"


def _measured(words: Sequence[tuple[int, int]], text: str, i: int) -> int:
    """The first word of what the amount opening at word *i* measures, or *i* when none: the
    content word right before it ("metformin 500 mg", "creatinine 1.9"), or the content word and
    one short word between ("capped at 5%", "falls below 1.3"), in the same phrase.

    >>> t = "treated with azithromycin 500 mg daily, liability capped at 5% and 10 units"
    >>> w = [(m.start(), m.end()) for m in re.finditer(r"\\S+", t)]
    >>> [_measured(w, t, i) for i in (3, 9, 12)]
    [2, 7, 12]
    """
    if not _AMOUNT_START_RE.match(text, words[i][0]):
        return i
    j = i
    for _ in range(2):
        if j == 0 or any(ch in _PHRASE_BREAK for ch in text[words[j - 1][1] - 1:words[j][0]]):
            return i
        j -= 1
        word = text[words[j][0]:words[j][1]]
        if not any(ch.isalpha() for ch in word):
            return i
        if word.casefold() not in STOPWORDS:
            return j
    return i


#: The most words of a label before "=" or ":" kept with the value after it ("Initial ACV payment = $13,325.80").
LABEL_WORDS = 6
#: The most words of a clause before a value, with no "=" or ":" between, kept with it ("paid in full on 24 February
#: 2025", "Plus mitigation $6,840.00"); a longer clause is the model's and the skeleton's to thin.
CLAUSE_WORDS = 4
#: The most words of the "of <noun phrase>" after a percentage kept with it ("5% of Coverage A").
OF_WORDS = 4
#: Marks that end a label or clause when a word ends with one (or a line break follows it).
_CLAUSE_END = ".!?;:,。！？；，"
#: Words that bound or round the value right after them: "under €4,500" must not become "€4,500" (an upper
#: limit read as an exact figure), nor "about 40 staff" "40 staff".
BOUND_WORDS = frozenset({
    "under", "over", "below", "above", "beneath", "exceeding", "around", "about", "approximately", "approx.",
    "roughly", "nearly", "almost", "circa", "ca.", "max", "max.", "maximum", "min", "min.", "minimum",
})
#: Words that name a share ("5 percent of the fee").
_PERCENT_WORDS = frozenset({"percent", "per cent", "pct"})


def value_labels(words: Sequence[tuple[int, int]], text: str, protected: np.ndarray) -> np.ndarray:
    """Words that say what a protected value (a run of protected words with a digit in its first two) is: the
    words of its line or clause before an ``=`` or ``:`` right before it (at most :data:`LABEL_WORDS`:
    "Covered RCV = $1,722.00 + …", "Named storm deductible: 5%"), else its whole clause before it when
    that is at most :data:`CLAUSE_WORDS` words ("…, paid in full on 24 February 2025"), and the "of"
    phrase after a percentage (at most :data:`OF_WORDS` words after "of": "5% of Coverage A ($20,600)").
    A label longer than its limit keeps none of its words: the model and the skeleton decide. A word of
    :data:`BOUND_WORDS` right before the value is kept in any case ("the total budget is under €4,500").

    >>> t = "Fee: 5% of the contract value, due. Initial ACV payment = $900, paid in full on 2 May."
    >>> w = [(m.start(), m.end()) for m in re.finditer(r"\\S+", t)]
    >>> p = np.array([x in ("5%", "$900,", "2", "May.") for x in t.split()])
    >>> " ".join(t[s:e] for (s, e), k in zip(w, value_labels(w, t, p)) if k)
    'Fee: of the contract value, Initial ACV payment = paid in full on'
    """
    out = np.zeros(len(words), dtype=bool)
    n = len(words)

    def word(k: int) -> str:
        return text[words[k][0]:words[k][1]]

    def ends_clause(k: int) -> bool:  # word k closes a clause: its last mark, or a line break after it
        nxt = words[k + 1][0] if k + 1 < n else len(text)
        return word(k)[-1] in _CLAUSE_END or "\n" in text[words[k][1]:nxt]

    k = 0
    while k < n:
        if not protected[k]:
            k += 1
            continue
        first = k
        while k + 1 < n and protected[k + 1] and not ends_clause(k):
            k += 1
        last = k
        k += 1
        if not any(ch.isdigit() for ch in text[words[first][0]:words[min(last, first + 1)][1]]):
            continue  # a value opens with its number ("$5,000", "March 3"), not a long clause that holds one
        if first > 0 and not protected[first - 1] and word(first - 1).casefold() in BOUND_WORDS:
            out[first - 1] = True  # "under €4,500": the bound is part of the value
        # the label before it: "label = value" / "label: value", else the clause it opens
        j = first - 1
        op = j >= 0 and not protected[j] and "\n" not in text[words[j][1]:words[first][0]] and (
            word(j) in ("=", ":") or (word(j).endswith(":") and len(word(j)) > 1))
        limit = LABEL_WORDS if op else CLAUSE_WORDS
        colon_word = j if op and word(j) not in ("=", ":") else -1  # "deductible:" is the label's own last word
        if op and colon_word < 0:
            out[j] = True
            j -= 1
        i = j
        while i >= 0 and j - i <= limit and not protected[i] and (i == colon_word or not ends_clause(i)):
            i -= 1
        if j - i <= limit and (i < 0 or (protected[i] and (op or ends_clause(i)))
                                or (not protected[i] and i != colon_word)):
            out[i + 1:j + 1] = True
        # "5% of <noun phrase>"
        tail = word(last).rstrip(_CLAUSE_END + ")")
        if ((tail.endswith("%") or tail.casefold() in _PERCENT_WORDS) and not ends_clause(last)
                and last + 1 < n and word(last + 1) == "of" and not ends_clause(last + 1)):
            out[last + 1] = True
            content = False
            for m in range(last + 2, min(n, last + 2 + OF_WORDS)):
                w = word(m)
                if protected[m] or w[:1] in "([{" or (content and w in STOPWORDS):
                    break
                out[m] = True
                content = content or w not in STOPWORDS
                if ends_clause(m):
                    break
    return out


def undangled(words: Sequence[tuple[int, int]], text: str, keep: np.ndarray, forced: np.ndarray) -> np.ndarray:
    """*keep* without the words of :data:`DANGLING_WORDS` left at the end of a clause whose following words were
    all dropped: thinned, "Revenue grew 4% despite a 15% drop in unit sales." read "… a 15% drop in.", a
    preposition that promises what the text no longer says. A forced word (protected, a connective, part of a
    value) stays; a word that itself ends the clause ("log in.") is not dangling.

    >>> t = "Revenue grew 4% despite a 15% drop in unit sales. Notice goes to the agency."
    >>> w = [(m.start(), m.end()) for m in re.finditer(r"\\S+", t)]
    >>> k = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0], dtype=bool)
    >>> " ".join(t[a:b] for (a, b), x in zip(w, undangled(w, t, k, np.zeros(len(w), dtype=bool))) if x)
    'Revenue grew 4% despite a 15% drop Notice goes'
    """
    out = keep.copy()
    n = len(words)
    clause_open = False  # some word after the current one, up to the clause end, was dropped and none kept
    for i in range(n - 1, -1, -1):
        word = text[words[i][0]:words[i][1]]
        nxt = words[i + 1][0] if i + 1 < n else len(text)
        if i == n - 1 or word[-1] in _CLAUSE_END or "\n" in text[words[i][1]:nxt]:
            # word i closes a clause: the words before it dangle only if it went too; it never dangles itself
            clause_open = not out[i]
            continue
        if not clause_open:
            continue
        if out[i] and not forced[i] and word.casefold() in DANGLING_WORDS:
            out[i] = False
        elif out[i]:
            clause_open = False
    return out


def dropped_runs(text: str, words: Sequence[tuple[int, int]], keep: np.ndarray) -> list[str]:
    """The words of *text* that *keep* drops, as maximal runs of consecutive dropped words, each verbatim from
    *text* (its inner whitespace and marks as they were): what the record's ``dropped_words`` says a thinned
    segment lost. QA s32: the record said only "kept 12 of 22 words", not that "The cost of repairing the part
    that failed is excluded" was gone.

    >>> t = "The cost is excluded; only the water damage is covered."
    >>> w = [(m.start(), m.end()) for m in re.finditer(r"\\S+", t)]
    >>> dropped_runs(t, w, np.array([0, 0, 0, 0, 1, 1, 0, 1, 1, 1], dtype=bool))
    ['The cost is excluded;', 'water']
    """
    out: list[str] = []
    i, n = 0, len(words)
    while i < n:
        if keep[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and not keep[j + 1]:
            j += 1
        out.append(text[words[i][0]:words[j][1]])
        i = j + 1
    return out


#: Rounds of measuring the assembled text and choosing the words again under a budget.
_FIT_ROUNDS = 4


#: Marks that close a sentence or clause; a compressed segment that lost its last word keeps its own.
SENTENCE_END = ".!?;:。！？；"
#: A trailing comma of the new last word gives way to that mark ("every day," -> "every day.").
_TRAILING_COMMA = ",，、"


def rebuild(original: str, words: Sequence[tuple[int, int]], keep: np.ndarray) -> str:
    """The kept words of *original*, each after the whitespace that preceded it there (or the last line
    break among the words dropped before it: a line's words never join the line before); when the
    last word is dropped, ended with the original's closing mark (see :data:`SENTENCE_END`).

    >>> rebuild("Take 5 mg daily.", [(0, 4), (5, 6), (7, 9), (10, 16)], np.array([1, 1, 1, 0], dtype=bool))
    'Take 5 mg.'
    """
    parts: list[str] = []
    last = -1
    for i in np.flatnonzero(keep):
        s, e = words[i]
        if parts:
            # a sentence that ended among the dropped words still ends: "SpO2 95% on room air. eGFR was 52" thinned
            # reads "SpO2 95%. eGFR was 52", not "SpO2 95% eGFR was 52" (one measurement)
            mark = _dropped_end(original, words, last, i)
            if mark and parts[-1][-1:] not in SENTENCE_END:
                parts[-1] = (parts[-1].rstrip(_TRAILING_COMMA) or parts[-1]) + mark
            space = original[words[i - 1][1]:s] or " "
            if "\n" not in space:
                # a line break among the dropped words still ends the kept word's line: the next line's
                # words are never joined onto it ("mitigation $6,840.00.\n= $13,325.80", not "… $6,840.00. = …")
                breaks = [m.group(0) for m in re.finditer(r"\s*\n\s*", original[words[last][1]:s])]
                space = breaks[-1] if breaks else space
            parts.append(space)
        parts.append(original[s:e])
        last = i
    text = "".join(parts)
    end = original.rstrip()[-1:]
    if text and words and not keep[-1] and end and end in SENTENCE_END and text[-1] not in SENTENCE_END:
        text = (text.rstrip(_TRAILING_COMMA) or text) + end
    return text


#: Short words ending in "." that do not end a sentence ("Dr.", "No.", "e.g.", "approx."); see :func:`_dropped_end`.
_ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "no", "nos", "vs", "etc", "approx", "incl", "excl",
                            "fig", "figs", "art", "sec", "para", "ref", "dept", "est", "jan", "feb", "mar", "apr", "jun",
                            "jul", "aug", "sep", "sept", "oct", "nov", "dec", "co", "inc", "ltd", "corp", "jr", "sr",
                            "mt", "ft", "op", "cf", "al", "viz", "resp", "calif", "gov", "sen", "rep", "pres", "gen",
                            "col", "capt", "lt", "sgt", "hon", "rev", "atty", "supt", "govt", "univ", "assn", "bros",
                            "ave", "blvd", "rd", "vol", "vols", "pp", "ed", "eds", "max", "mon", "tue", "tues", "wed",
                            "thu", "thur", "thurs", "fri", "sat", "sun", "wk", "mo", "yr", "yrs", "hr", "hrs", "min",
                            "mins", "secs", "qty", "dia", "ext", "tel", "abbr", "mfg", "intl", "natl",
                            "ariz", "colo", "conn", "fla", "ill", "ind", "kan", "mass", "mich", "minn", "miss", "nev",
                            "okla", "ore", "penn", "tenn", "tex", "va", "wash", "wis"})


def _dropped_end(original: str, words: Sequence[tuple[int, int]], last: int, nxt: int) -> str:
    """The mark that ends a sentence or clause among the words dropped between kept words *last* and *nxt*
    (the last such mark: ``. ! ? ;`` or ``。！？；``), or "" when none does. A word ending in "." ends a sentence
    unless it is an abbreviation ("Dr.", "e.g.") or an initial."""
    mark = ""
    for j in range(last + 1, nxt):
        word = original[words[j][0]:words[j][1]]
        end = word[-1:]
        if end in "!?;。！？；":
            mark = end
        elif end == ".":
            core = word.rstrip(".").lstrip("([{\"'“‘").casefold()
            if len(core) > 1 and "." not in core and core not in _ABBREVIATIONS:
                mark = "."
    return mark


def _forbidden_layers(doc: Document, plan: Plan) -> frozenset[str]:
    try:
        return frozenset(plan.role(doc.role).forbidden)
    except (PlanError, KeyError, AttributeError):
        return frozenset()


def _unit(doc: Document, plan: Plan) -> str | None:
    try:
        return plan.role(doc.role).unit
    except (PlanError, KeyError, AttributeError):
        return None
