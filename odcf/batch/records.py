"""Validate one batch record and turn it into a compression request.

A record is a JSON object (one JSON Lines line or one Parquet row)::

    {"id": "t-17", "context": "long text ...", "query": "refund amount?"}
    {"id": "t-18", "sources": [{"id": "mail", "text": "...", "kind": "text", "layer": "fact"}]}

Rules (each failure is a :class:`RecordError` whose message says what is wrong):

- ``id`` is required: a non-empty string, or an integer (written out as its decimal string).
- exactly one of ``context`` (a string) or ``sources`` (a non-empty list of source objects);
- a source object has ``text`` (a string) and optionally ``id``, ``kind``, ``layer``, ``origin``,
  ``timestamp``, ``confidence``, ``mandatory``, ``category``, ``speaker``, ``read_range``;
  unknown keys are an error (a typo must not pass silently); null means "not given";
- the query comes from the field named by ``query_field`` (default ``query``); absent or null
  means no query;
- a text, query, id or other string of a source holding a lone surrogate (``"\\ud800"`` is valid
  JSON, but no character) is an error naming the field and the character offset;
- a text (``context`` or a source's ``text``) holding a NUL character is binary data, not text: an
  error naming the field and the offset, as ``odcf compress`` refuses a file with a NUL byte;
- a value of a Parquet binary column is read as UTF-8 text (:func:`binary_cell`); one that is not
  text (invalid UTF-8, a NUL byte) is an error where the record uses it (``'context' is a binary
  column value that is not text (invalid UTF-8 at byte 3: …)``) and kept as ``{"base64": …}`` in a
  field the record does not use;
- an empty context (no non-whitespace character in any text) is an error, ``empty context``:
  there is nothing to compress and an empty output would hide an upstream data problem;
- the total number of characters must not exceed ``max_chars`` (``--max-chars``), so that one
  huge record cannot stall a worker or exhaust its memory.

Other top-level keys are allowed and ignored (they are kept in the error file copy of a failed
record, never in the output).

>>> req = to_request({"id": 7, "context": "Pay $5 by May 1."}, query_field="query", max_chars=100)
>>> req.id, req.sources, req.query
('7', 'Pay $5 by May 1.', None)
"""
from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from odcf.document import KINDS, LAYERS, unicode_problem
from odcf.textutil import has_visible_text

#: Default ``--max-chars``: the largest record (all texts together) a worker accepts.
DEFAULT_MAX_CHARS = 2_000_000
#: Default ``--query-field``. Records without it are normal (a query is optional); a job whose
#: records all lack a field named otherwise is warned about (the name may be misspelled).
DEFAULT_QUERY_FIELD = "query"

#: Keys a source object may carry (the fields of :class:`odcf.document.Source` but ``meta``).
SOURCE_KEYS = (
    "id", "text", "kind", "layer", "origin", "timestamp", "confidence",
    "mandatory", "category", "speaker", "read_range",
)


class RecordError(ValueError):
    """A record that cannot be compressed; the message is the reason written to the error file."""


@dataclass(frozen=True)
class Request:
    """What one record asks the compressor for: ``sources`` is a string or a list of mappings."""

    id: str
    sources: str | list[dict[str, Any]]
    query: str | None
    chars: int


class BinaryCell(dict):  # type: ignore[type-arg]
    """A Parquet binary value that is not text: ``{"base64": ...}`` (as the error file writes it),
    and :attr:`why` it is not text, said when a field the record uses holds it."""

    def __init__(self, data: bytes, why: str) -> None:
        super().__init__(base64=base64.b64encode(data).decode("ascii"))
        self.why = why


def binary_cell(data: bytes) -> str | BinaryCell:
    """A Parquet binary value as a record field: its text when it is UTF-8 text, else a
    :class:`BinaryCell` saying why not (invalid UTF-8 at byte N, or a NUL byte: binary data).

    >>> binary_cell("café".encode()), binary_cell(b"caf\\xe9 au lait").why
    ('café', 'invalid UTF-8 at byte 3: invalid continuation byte')
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return BinaryCell(data, f"invalid UTF-8 at byte {exc.start}: {exc.reason}")
    at = text.find("\x00")
    if at >= 0:
        return BinaryCell(data, f"binary data, not text (a NUL byte at byte {len(text[:at].encode('utf-8'))})")
    return text


def record_id(record: Any) -> str | None:
    """The record's id as a string, or None when it has no usable id."""
    if not isinstance(record, Mapping):
        return None
    value = record.get("id")
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def to_request(record: Any, *, query_field: str = DEFAULT_QUERY_FIELD, max_chars: int = DEFAULT_MAX_CHARS) -> Request:
    """Validate *record* and return the request; raise :class:`RecordError` with the reason."""
    if not isinstance(record, Mapping):
        raise RecordError(f"record is a JSON {_json_type(record)}, expected an object")
    rid = _check_id(record)
    has_context = record.get("context") is not None
    has_sources = record.get("sources") is not None
    if has_context and has_sources:
        raise RecordError("record has both 'context' and 'sources'; give one of them")
    if not has_context and not has_sources:
        # QA s32/F #3: `"context": null` (and a null Parquet cell, how a nullable column holds a
        # missing text) was "record has neither 'context' … nor 'sources'": the key is there, its
        # value is the wrong type, said as the other wrong types and a null id are
        if "context" in record:
            raise RecordError("'context' must be a string, got null")
        if "sources" in record:
            raise RecordError("'sources' must be a list of source objects, got null")
        raise RecordError("record has neither 'context' (a string) nor 'sources' (a list)")
    query = _check_query(record, query_field)
    if has_context:
        context = record["context"]
        if not isinstance(context, str):
            _check_binary_cell(context, "'context'")
            raise RecordError(f"'context' must be a string, got a JSON {_json_type(context)}")
        chars = len(context)
        _check_size(chars, max_chars)
        if not has_visible_text(context):
            raise RecordError("empty context: nothing to compress" + (
                "" if not context.strip() else " (only invisible formatting characters)"))
        _check_unicode(context, "'context'")
        _check_binary(context, "'context'")
        return Request(id=rid, sources=context, query=query, chars=chars)
    sources = _check_sources(record["sources"])
    chars = sum(len(s["text"]) for s in sources)
    _check_size(chars, max_chars)
    if not any(has_visible_text(s["text"]) for s in sources):
        raise RecordError("empty context: every source text is empty (or only invisible formatting characters)")
    return Request(id=rid, sources=sources, query=query, chars=chars)


def _check_id(record: Mapping[str, Any]) -> str:
    if "id" not in record:
        raise RecordError("record has no 'id'")
    if record["id"] is None:
        raise RecordError("'id' must be a string or an integer, got null")
    rid = record_id(record)
    if rid is None:
        value = record["id"]
        _check_binary_cell(value, "'id'")
        if isinstance(value, str):
            raise RecordError("'id' is an empty string")
        raise RecordError(f"'id' must be a string or an integer, got a JSON {_json_type(value)}")
    # the id is written into every output row: one that cannot be encoded as UTF-8 would break a
    # Parquet output when it is assembled, at the very end of the job
    _check_unicode(rid, "'id'")
    return rid


def _check_query(record: Mapping[str, Any], field: str) -> str | None:
    query = record.get(field)
    if query is None:
        return None
    if not isinstance(query, str):
        _check_binary_cell(query, f"query field {field!r}")
        raise RecordError(f"query field {field!r} must be a string, got a JSON {_json_type(query)}")
    _check_unicode(query, f"query field {field!r}")
    return query or None


def _check_unicode(text: str, where: str) -> None:
    problem = unicode_problem(text)
    if problem:
        raise RecordError(f"{where} {problem}")


def _check_binary_cell(value: Any, where: str) -> None:
    if isinstance(value, BinaryCell):
        raise RecordError(f"{where} is a binary column value that is not text ({value.why}); "
                          "the record holds its bytes as base64")


def _check_binary(text: str, where: str) -> None:
    """A NUL character is binary data, not text (a PDF or an image read as a string upstream):
    refused as ``odcf compress`` refuses a file holding a NUL byte, never passed through."""
    at = text.find("\x00")
    if at >= 0:
        raise RecordError(f"{where} is binary data, not text (a NUL character at character {at}); odcf "
                          "reads UTF-8 text: extract the text first")


def _check_size(chars: int, max_chars: int) -> None:
    if chars > max_chars:
        raise RecordError(
            f"record too large: {chars:,} characters, above the limit of {max_chars:,} "
            "(raise --max-chars or split the record)"
        )


def _check_sources(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise RecordError(f"'sources' must be a list of source objects, got a JSON {_json_type(value)}")
    if not value:
        raise RecordError("empty context: 'sources' is an empty list")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, src in enumerate(value):
        where = f"sources[{i}]"
        if not isinstance(src, Mapping):
            raise RecordError(f"{where} must be an object, got a JSON {_json_type(src)}")
        # A null value means "not given" (Parquet struct columns carry every field on every row).
        unknown = sorted(k for k, v in src.items() if k not in SOURCE_KEYS and v is not None)
        if unknown:
            raise RecordError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(SOURCE_KEYS)})")
        clean = {k: v for k, v in src.items() if v is not None}
        for key in SOURCE_KEYS:
            _check_binary_cell(clean.get(key), f"{where}.{key}")
        text = clean.get("text")
        if not isinstance(text, str):
            raise RecordError(f"{where}.text must be a string, got a JSON {_json_type(text)}")
        for key in SOURCE_KEYS:  # every string of a source is hashed, counted or written out
            if isinstance(clean.get(key), str):
                _check_unicode(clean[key], f"{where}.{key}")
        _check_binary(text, f"{where}.text")
        if "id" in clean:
            sid = clean["id"]
            if isinstance(sid, int) and not isinstance(sid, bool):
                sid = str(sid)
            if not isinstance(sid, str) or not sid:
                raise RecordError(f"{where}.id must be a non-empty string")
            if sid in seen:
                raise RecordError(f"{where}.id {sid!r} repeats an earlier source id")
            seen.add(sid)
            clean["id"] = sid
        if clean.get("kind", "text") not in KINDS:
            raise RecordError(f"{where}.kind {clean['kind']!r} is not one of {', '.join(KINDS)}")
        if clean.get("layer", "fact") not in LAYERS:
            raise RecordError(f"{where}.layer {clean['layer']!r} is not one of {', '.join(LAYERS)}")
        out.append(clean)
    return out


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
