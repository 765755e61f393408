"""Frozen data that flows through the pipeline: sources, segments, spans, trace.

This module imports nothing else from odcf but its error classes and frozen maps. Stages never
mutate a document;
they return ``doc.replace(...)`` with a new trace event appended.

>>> from odcf.document import Source, Document
>>> doc = Document.from_sources([Source(id="a", text="Hello.")])
>>> doc.sources[0].layer
'fact'
"""
from __future__ import annotations

import dataclasses
import decimal
import hashlib
import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from odcf.errors import SourceError
from odcf.frozen import EMPTY as _EMPTY
from odcf.frozen import FrozenMap

Kind = Literal["text", "markdown", "html", "json", "chat", "tool"]
Layer = Literal["instruction", "fact", "reasoning", "state", "history"]
Status = Literal["verbatim", "compressed", "folded", "dropped", "reverted", "merged"]

KINDS: tuple[str, ...] = ("text", "markdown", "html", "json", "chat", "tool")
LAYERS: tuple[str, ...] = ("instruction", "fact", "reasoning", "state", "history")
STATUSES: tuple[str, ...] = ("verbatim", "compressed", "folded", "dropped", "reverted", "merged")

#: Segment shapes produced by segmentation.
SEGMENT_KINDS: tuple[str, ...] = (
    "sentence", "heading", "list", "table", "code", "json", "turn", "block",
)



def sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of *text*."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def unicode_problem(text: str) -> str | None:
    """Why *text* is not valid Unicode text, worded to follow the name of what holds it; None when it is.

    A string can hold a surrogate code point that is no character (JSON's ``"\\ud800"`` decodes
    to one); it cannot be hashed, counted or written as UTF-8, so it is refused where text comes in.

    >>> unicode_problem("abc\\ud800def")
    'holds a lone surrogate (U+D800) at character 3; it is not valid Unicode text'
    """
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:  # only a surrogate fails to encode as UTF-8
        return (f"holds a lone surrogate (U+{ord(text[exc.start]):04X}) at character {exc.start}; "
                "it is not valid Unicode text")
    return None


def nul_problem(text: str) -> str | None:
    """Why *text* is binary data, not text (it holds a NUL character: a PDF or an image read as a
    string upstream), worded to follow the name of what holds it; None when it holds none. A
    :class:`Source` refuses it, and a handoff items file lists it with the file's other problems.

    >>> nul_problem("bad \\x00 here")
    'holds a NUL character at character 4: binary data, not text'
    """
    at = text.find("\x00")
    return None if at < 0 else f"holds a NUL character at character {at}: binary data, not text"


def query_problem(query: Any) -> str | None:
    """Why *query* cannot be a query (not a string, or not valid Unicode text); None when it can.

    >>> query_problem(["cap"]), query_problem("liability cap")
    ('query must be a string, got list', None)
    """
    if query is None:
        return None
    if not isinstance(query, str):
        return f"query must be a string, got {type(query).__name__}"
    problem = unicode_problem(query)
    return f"query {problem}" if problem else None


def _freeze(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not mapping:
        return _EMPTY
    return FrozenMap(dict(mapping))


@dataclass(frozen=True)
class Source:
    """One input: a file, a tool result, a chat message, a state object.

    ``origin`` is where it came from (a path, a URL, ``tool:search``); ``read_range``
    says which part of the origin was read (``whole``, ``lines 3-40``, ``bytes 0-99``,
    or a JSON pointer ``/orders/2``) so that a record can be re-verified later.
    """

    id: str
    text: str
    kind: Kind = "text"
    layer: Layer = "fact"
    origin: str | None = None
    timestamp: str | None = None
    confidence: float | None = None
    mandatory: bool = False
    category: str | None = None
    speaker: str | None = None
    read_range: str = "whole"
    meta: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SourceError(f"source {self.id!r}: unknown kind {self.kind!r} (expected one of {', '.join(KINDS)})")
        if self.layer not in LAYERS:
            raise SourceError(f"source {self.id!r}: unknown layer {self.layer!r} (expected one of {', '.join(LAYERS)})")
        if not isinstance(self.id, str):
            raise SourceError(f"source id must be a string, got {type(self.id).__name__} {self.id!r}")
        for name in ("text", "read_range"):
            if not isinstance(getattr(self, name), str):
                raise SourceError(f"source {self.id!r}: {name} must be a string, got {getattr(self, name)!r}")
        for name in ("origin", "timestamp", "category", "speaker"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise SourceError(f"source {self.id!r}: {name} must be a string, got {getattr(self, name)!r}")
        # every string is hashed and written as UTF-8 into the record: a lone surrogate in any of them
        # would fail there, far from its cause
        problem = unicode_problem(self.id)
        if problem:
            raise SourceError(f"source id {self.id!r} {problem}")
        for name in ("text", "read_range", "origin", "timestamp", "category", "speaker"):
            value = getattr(self, name)
            problem = unicode_problem(value) if value is not None else None
            if problem:
                raise SourceError(f"source {self.id!r}: {name} {problem}")
        problem = read_range_problem(self.read_range)
        if problem:  # verify reads the range with the same grammar: a record of this source could never verify
            raise SourceError(f"source {self.id!r}: read_range: {problem}")
        problem = nul_problem(self.text)
        if problem:  # as a file (odcf compress) or a batch record with one is refused
            raise SourceError(f"source {self.id!r}: text {problem}")
        if not isinstance(self.mandatory, bool):  # "false" would be true
            raise SourceError(f"source {self.id!r}: mandatory must be true or false, got {self.mandatory!r}")
        if self.confidence is not None:
            conf = real_number(self.confidence)
            if conf is None:
                raise SourceError(f"source {self.id!r}: confidence must be a number within [0, 1], "
                                  f"got {self.confidence!r}")
            if not (0.0 <= conf <= 1.0):
                raise SourceError(f"source {self.id!r}: confidence must be within [0, 1], got {self.confidence}")
            object.__setattr__(self, "confidence", conf)  # a numpy scalar or Decimal as a float (JSON writes it)
        if self.meta is not None and not isinstance(self.meta, Mapping):
            raise SourceError(f"source {self.id!r}: meta must be a mapping, got {type(self.meta).__name__}")
        object.__setattr__(self, "meta", _freeze(self.meta))

    @property
    def label(self) -> str:
        """What the assembled text calls this source."""
        return self.origin or self.id

    @property
    def sha256(self) -> str:
        return sha256(self.text)


LINES_RANGE = re.compile(r"^lines\s+(\d+)\s*-\s*(\d+)$")
BYTES_RANGE = re.compile(r"^bytes\s+(\d+)\s*-\s*(\d+)$")


def read_range_problem(read_range: str | None) -> str | None:
    """What is wrong with *read_range* as ``odcf verify`` reads it (``whole``, ``lines a-b`` 1-based with
    a <= b, ``bytes a-b`` with a <= b, or a JSON pointer ``/a/0``); ``None`` when it parses. Whether the
    range fits the file is verify's to find out.

    A source is checked when it is made: ``read_range="pages 1-2"`` was accepted by compress, and every
    verify of its record then failed with ``source-unreadable`` on an unchanged file (QA s32 J3).

    >>> read_range_problem("lines 5-1")
    "bad read range 'lines 5-1': lines are 1-based and a <= b"
    """
    rr = (read_range or "whole").strip()
    if rr == "whole" or rr == "" or rr.startswith("/"):
        return None
    m = LINES_RANGE.match(rr)
    if m:
        return None if 1 <= int(m.group(1)) <= int(m.group(2)) else f"bad read range {rr!r}: lines are 1-based and a <= b"
    m = BYTES_RANGE.match(rr)
    if m:
        return None if int(m.group(1)) <= int(m.group(2)) else f"bad read range {rr!r}: a <= b"
    return f"unknown read range {rr!r} (use whole, 'lines a-b', 'bytes a-b' or a JSON pointer /a/0)"


def real_number(value: Any) -> float | int | None:
    """*value* when it is a real number, as a plain ``int`` or ``float`` (a numpy scalar, a
    :class:`~decimal.Decimal` or a :class:`~fractions.Fraction` as a float); ``None`` for anything
    else, a bool included (``True`` is no confidence).

    >>> from decimal import Decimal
    >>> real_number(Decimal("0.5")), real_number(1), real_number(True), real_number("0.5")
    (0.5, 1, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, decimal.Decimal)):
        return None
    if type(value) in (int, float):
        return value
    try:
        return float(value)
    except (TypeError, ValueError, ArithmeticError):  # Decimal("sNaN")
        return None


@dataclass(frozen=True)
class Span:
    """A protected span: ``text`` must survive byte-for-byte.

    ``start``/``end`` are offsets into the segment's ``original`` text; ``rule`` says what
    protected it (``anchor:money``, ``term``, ``connective``, ``marker``, ``entity:DATE``,
    ``dep:despite``).
    """

    start: int
    end: int
    text: str
    rule: str

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "text": self.text, "rule": self.rule}


@dataclass(frozen=True)
class Segment:
    """A piece of a source that stages keep, change or drop as a unit.

    ``original`` is the text as segmented; ``text`` is what the segment currently holds.
    ``sep`` is the whitespace that preceded the segment in its source, so that keeping
    every segment reproduces the (normalized) source exactly. ``paragraph`` groups
    segments of one block for assembly.
    """

    id: str
    source_id: str
    index: int
    text: str
    original: str
    layer: Layer = "fact"
    kind: str = "sentence"
    sep: str = ""
    paragraph: int = 0
    status: Status = "verbatim"
    protected: tuple[Span, ...] = ()
    score: float | None = None
    reasons: tuple[str, ...] = ()
    merged_from: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "meta", _freeze(self.meta))

    def replace(self, **changes: Any) -> Segment:
        return dataclasses.replace(self, **changes)

    def with_reason(self, reason: str, **changes: Any) -> Segment:
        return dataclasses.replace(self, reasons=self.reasons + (reason,), **changes)

    @property
    def dropped(self) -> bool:
        return self.status in ("dropped", "merged")

    @property
    def is_protected(self) -> bool:
        return bool(self.protected)


@dataclass(frozen=True)
class TraceEvent:
    """What one stage did: counts, decisions and timing. The record is made of these."""

    stage: str
    tokens_in: int | None = None
    tokens_out: int | None = None
    ms: float | None = None
    data: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", _freeze(self.data))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": self.stage}
        if self.tokens_in is not None:
            out["tokens_in"] = self.tokens_in
        if self.tokens_out is not None:
            out["tokens_out"] = self.tokens_out
        if self.ms is not None:
            out["ms"] = round(self.ms, 3)
        if self.data:
            out["data"] = to_plain(self.data)
        return out


def to_plain(value: Any) -> Any:
    """Turn mapping proxies and tuples into JSON-ready dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Document:
    """The unit a pipeline transforms: sources, their segments, the query and the trace."""

    sources: tuple[Source, ...]
    segments: tuple[Segment, ...] = ()
    query: str | None = None
    role: str | None = None
    budget: int | None = None
    tokenizer: str | None = None
    trace: tuple[TraceEvent, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "meta", _freeze(self.meta))
        seen: set[str] = set()
        for s in self.sources:
            if s.id in seen:
                raise SourceError(f"duplicate source id {s.id!r}")
            seen.add(s.id)

    @classmethod
    def from_sources(
        cls,
        sources: Iterable[Source],
        *,
        query: str | None = None,
        role: str | None = None,
        budget: int | None = None,
        tokenizer: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Document:
        return cls(
            sources=tuple(sources), query=query, role=role, budget=budget,
            tokenizer=tokenizer, meta=_freeze(meta),
        )

    def replace(self, **changes: Any) -> Document:
        return dataclasses.replace(self, **changes)

    def with_event(self, event: TraceEvent, **changes: Any) -> Document:
        """Return a copy with *changes* applied and *event* appended to the trace."""
        return dataclasses.replace(self, trace=self.trace + (event,), **changes)

    def source(self, source_id: str) -> Source:
        for s in self.sources:
            if s.id == source_id:
                return s
        raise KeyError(source_id)

    def segments_of(self, source_id: str) -> tuple[Segment, ...]:
        return tuple(seg for seg in self.segments if seg.source_id == source_id)

    @property
    def live_segments(self) -> tuple[Segment, ...]:
        return tuple(seg for seg in self.segments if not seg.dropped)

    def update_segments(self, updated: Sequence[Segment]) -> tuple[Segment, ...]:
        """Segments with those in *updated* (matched by id) swapped in, order kept."""
        by_id = {s.id: s for s in updated}
        return tuple(by_id.get(s.id, s) for s in self.segments)
