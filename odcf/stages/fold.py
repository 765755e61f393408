"""The ``fold`` stage: table folding and list-prefix folding on segments.

- **Tables** (segments of kind ``table``: a markdown pipe table or a CSV/TSV block): with more
  than ``max_rows`` data rows, keep the header (and ``|---|`` line), the first ``head_rows`` and
  last ``tail_rows`` rows, every row holding a protected span, and every row holding a query
  term (words of ``doc.query`` minus stopwords; with ``keep_concept_rows=True`` also the terms of
  the plan's rerank queries). Each run of omitted rows becomes ``[DATA_ROWS: k]``.
- **List prefixes** (segments of kind ``list``): when ``min_prefix_lines`` or more consecutive
  lines share a prefix of ``min_prefix_chars`` or more characters, the prefix is written once as
  ``[PREFIX: ...]`` (lossless; see :func:`odcf.rules.prefixes.unfold_prefixes`); as many identical
  lines are one ``[REPEAT ×n: line]``. Applied only when it saves tokens.

Folded segments get status ``folded`` and a reason such as
``fold: table 120 rows → 4 kept, [DATA_ROWS: 116]``. A fold that would lose a protected span is
not applied (and is listed under ``skipped`` in the trace); the pipeline's guard checks again.

>>> from odcf.document import Document, Segment
>>> from odcf.plan.model import Plan
>>> table = "a,b\\n" + "\\n".join(f"{i},x{i}" for i in range(20))
>>> seg = Segment(id="s#0", source_id="s", index=0, text=table, original=table, kind="table")
>>> doc = Document(sources=(), segments=(seg,), query="what about x7?")
>>> out = FoldStage()(doc, Plan(domain="d")).segments[0]
>>> print(out.text)
a,b
0,x0
1,x1
[DATA_ROWS: 5]
7,x7
[DATA_ROWS: 11]
19,x19
>>> out.reasons[-1]
'fold: table 20 rows → 4 kept, [DATA_ROWS: 16] in 2 gaps; 1 row kept for query terms'
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from odcf.document import Document, Segment, TraceEvent
from odcf.plan.model import Plan
from odcf.rules.prefixes import fold_prefixes
from odcf.rules.tables import fold_table
from odcf.stages.base import Stage
from odcf.textutil import has_value, nfc
from odcf.tokens import get_counter

#: Words a query term list never keeps rows for.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves show find list give tell please""".split()
)
_WORDS = re.compile(r"\w+", re.UNICODE)


def query_terms(texts: Iterable[str]) -> tuple[str, ...]:
    """Lower-cased words of *texts* that are worth matching: no stopwords, no single letters."""
    seen: dict[str, None] = {}
    for text in texts:
        for word in _WORDS.findall(text.lower()):
            if word in STOPWORDS or (len(word) < 2 and word.isascii()):
                continue
            seen.setdefault(word, None)
    return tuple(seen)


def _term_regex(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    if not terms:
        return None
    parts = []
    for t in sorted(terms, key=len, reverse=True):
        # Latin words match whole words; a CJK run matches anywhere (no spaces to lean on).
        parts.append(rf"(?<!\w){re.escape(t)}(?!\w)" if t.isascii() else re.escape(t))
    return re.compile("|".join(parts))


#: A name in a query: a run of word characters joined by "-", ".", "/", ":" or "_" (a pod, a host, a path).
_NAME_RE = re.compile(r"\w+(?:[-./:]\w+)+")


def query_names(query: str) -> tuple[str, ...]:
    """The compound names of a query (``ledger-worker-7d9f8c412-x8k2p``, ``db-01.prod``): a line-prefix
    fold ends between words, so it could cut one of these, never a plain word."""
    return tuple(dict.fromkeys(_NAME_RE.findall(query)))


def _occurrences(text: str, names: tuple[str, ...]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for name in names:
        pos = text.find(name)
        while pos >= 0:
            out.append((pos, pos + len(name)))
            pos = text.find(name, pos + 1)
    return out


def _span_ranges(seg: Segment) -> list[tuple[int, int]]:
    """Protected ranges in ``seg.text``: the spans' own offsets while the text is the original,
    otherwise every place where a span's text occurs."""
    if seg.text == seg.original:
        return [(s.start, s.end) for s in seg.protected if s.end > s.start]
    out: list[tuple[int, int]] = []
    for span in seg.protected:
        if not span.text:
            continue
        pos = seg.text.find(span.text)
        while pos >= 0:
            out.append((pos, pos + len(span.text)))
            pos = seg.text.find(span.text, pos + 1)
    return out


def _spans_survive(seg: Segment, text: str) -> bool:
    return all(has_value(text, span.text, original=seg.original, at=span.start) for span in seg.protected)


class FoldStage(Stage):
    """Fold long tables and repeated line prefixes in segments. Options are keyword arguments."""

    name = "fold"
    requires = frozenset({"segments", "protected"})
    provides = frozenset({"segments"})
    lossy = True

    def __init__(
        self,
        *,
        tables: bool = True,
        prefixes: bool = True,
        max_rows: int = 8,
        head_rows: int = 2,
        tail_rows: int = 1,
        keep_concept_rows: bool = False,
        min_prefix_lines: int = 4,
        min_prefix_chars: int = 12,
    ) -> None:
        for key, value in (("max_rows", max_rows), ("head_rows", head_rows), ("tail_rows", tail_rows),
                           ("min_prefix_lines", min_prefix_lines), ("min_prefix_chars", min_prefix_chars)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"fold.{key} must be a non-negative integer, got {value!r}")
        if min_prefix_lines < 2 or min_prefix_chars < 1:
            raise ValueError("fold.min_prefix_lines must be at least 2 and fold.min_prefix_chars at least 1")
        self.tables = tables
        self.prefixes = prefixes
        self.max_rows = max_rows
        self.head_rows = head_rows
        self.tail_rows = tail_rows
        self.keep_concept_rows = keep_concept_rows
        self.min_prefix_lines = min_prefix_lines
        self.min_prefix_chars = min_prefix_chars

    def __call__(self, doc: Document, plan: Plan) -> Document:
        texts = [nfc(doc.query or "")]  # matched in NFC, rows as the query (odcf.textutil.nfc)
        if self.keep_concept_rows:
            texts.extend(t for q in plan.queries for t in q.terms)
        terms = _term_regex(query_terms(texts))
        names = query_names(doc.query or "")
        counter = get_counter(doc.tokenizer or plan.tokenizer)
        stats: dict[str, Any] = {
            "tables": {"seen": 0, "folded": 0, "rows": 0, "kept": 0, "omitted": 0},
            "lists": {"seen": 0, "folded": 0, "runs": 0, "lines": 0, "tokens_saved": 0},
        }
        details: list[dict[str, Any]] = []
        skipped: list[dict[str, str]] = []
        changed: list[Segment] = []
        for seg in doc.segments:
            if seg.dropped:
                continue
            new: Segment | None = None
            if seg.kind == "table" and self.tables:
                stats["tables"]["seen"] += 1
                new = self._table(seg, terms, stats["tables"], details)
            elif seg.kind == "list" and self.prefixes:
                stats["lists"]["seen"] += 1
                new = self._list(seg, counter, stats["lists"], details, names)
            if new is None:
                continue
            if not _spans_survive(seg, new.text):
                skipped.append({"segment": seg.id, "why": "a protected span would be lost"})
                continue
            changed.append(new)
        data: dict[str, Any] = dict(stats)
        if details:
            data["segments"] = details
        if skipped:
            data["skipped"] = skipped
        return doc.with_event(TraceEvent(stage=self.name, data=data), segments=doc.update_segments(changed))

    def _table(self, seg: Segment, terms: re.Pattern[str] | None, stats: dict[str, int],
               details: list[dict[str, Any]]) -> Segment | None:
        ranges = _span_ranges(seg)
        why = {"protected": 0, "query": 0}

        def keep(start: int, end: int, row: str) -> bool:
            if any(s < end and e > start for s, e in ranges):
                why["protected"] += 1
                return True
            if terms is not None and terms.search(nfc(row).lower()):
                why["query"] += 1
                return True
            return False

        result = fold_table(seg.text, keep, max_rows=self.max_rows, head_rows=self.head_rows,
                            tail_rows=self.tail_rows,
                            # a later part, or a table without a header (ls -l): data rows only
                            header=not seg.meta.get("table_part") and seg.meta.get("table_header") != "",
                            quoted=not seg.meta.get("table_aligned"))
        if result is None:
            return None
        text, st = result
        for key in ("rows", "kept", "omitted"):
            stats[key] += st[key]
        stats["folded"] += 1
        reason = f"fold: table {st['rows']} rows → {st['kept']} kept, [DATA_ROWS: {st['omitted']}]"
        if st["gaps"] > 1:
            reason += f" in {st['gaps']} gaps"
        notes = [f"{n} row{'s' if n != 1 else ''} kept for {label}"
                 for label, n in (("protected spans", why["protected"]), ("query terms", why["query"])) if n]
        if notes:
            reason += "; " + ", ".join(notes)
        details.append({"segment": seg.id, "kind": "table", **st, "kept_protected": why["protected"],
                        "kept_query": why["query"]})
        return seg.with_reason(reason, text=text, status="folded")

    def _list(self, seg: Segment, counter: Any, stats: dict[str, int],
              details: list[dict[str, Any]], names: tuple[str, ...] = ()) -> Segment | None:
        # a name the query asks about ("ledger-worker-7d9f8c412-x8k2p") stays whole, like a protected span
        spans = _span_ranges(seg) + _occurrences(seg.text, names)
        text, st = fold_prefixes(seg.text, min_lines=self.min_prefix_lines, min_chars=self.min_prefix_chars,
                                 spans=spans)
        if not st["runs"] or text == seg.text:
            return None
        before, after = counter.count(seg.text), counter.count(text)
        if after >= before:
            return None
        stats["folded"] += 1
        stats["runs"] += st["runs"]
        stats["lines"] += st["lines"]
        stats["tokens_saved"] += before - after
        details.append({"segment": seg.id, "kind": "list", **st, "tokens_in": before, "tokens_out": after})
        parts = []
        prefixed, lines = st["runs"] - st["repeats"], st["lines"] - st["repeated"]
        if prefixed:
            parts.append(f"{lines} lines in {f'{prefixed} runs' if prefixed > 1 else '1 run'} share a prefix, "
                         "written once as [PREFIX: ...]")
        if st["repeats"]:
            parts.append(f"{st['repeated']} identical lines in {st['repeats']} run{'s' if st['repeats'] > 1 else ''}"
                         " written once each as [REPEAT ×n: ...]")
        reason = f"fold: {'; '.join(parts)} (lossless)"
        return seg.with_reason(reason, text=text, status="folded")
