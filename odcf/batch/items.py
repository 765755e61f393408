"""From raw input records to work items, and the rows a part file holds.

Both engines run the same code here, in input order: :func:`prepare` validates each record
(:mod:`odcf.batch.records`), claims its id (a later record with a claimed id is a
``duplicate id`` error), and yields either a *task* for a worker or a finished *error row*.
Because this runs in one place in input order, the local and the Ray engine reject exactly
the same records with exactly the same messages.

A part row is one JSON line::

    {"k": [file, n], "id": "t-17", "ok":  {"id", "text", "tokens_in", "tokens_out", "record"}, "q": 1}
    {"k": [file, n], "id": null,   "err": {"id", "file", "line" | "row", "error", "record" | "raw", ...}}

``k`` is the record's key (file number, record number in that file). ``err`` is exactly the line
written to ``OUTPUT.errors.jsonl``; ``ok`` is exactly the output row. ``q`` (present only when
true) says that the record has the job's query field: a job none of whose records has it warns
that the field's name may be wrong, and the parts are the one place that sees every record,
those of an interrupted run included.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from odcf.batch.io import Key, RawRecord, dumps
from odcf.batch.records import RecordError, record_id, to_request


@dataclass(frozen=True)
class Task:
    """A record that passed validation: the worker compresses it."""

    key: Key
    id: str
    where: dict[str, Any]
    record: dict[str, Any]


@dataclass(frozen=True)
class Done:
    """A record already settled before compression (an error): its part row, as JSON text."""

    key: Key
    row: str


WorkItem = Task | Done
#: The ids claimed so far -> where the record that claimed one is (``{"file": …, "line": …}``) when it was
#: refused before compression, else None: what a later record with the id is told (:func:`prepare`).
SeenIds = dict[str, dict[str, Any] | None]


def error_row(key: Key, rid: str | None, where: dict[str, Any], error: str, *,
              record: Any = None, detail: dict[str, Any] | None = None, queried: bool = False,
              refused: bool = False) -> str:
    """The part row of a failed record; ``err`` is the error-file line. *refused*: it failed before
    compression, having claimed its id (``"v": 1``, which a resumed run reads back into :data:`SeenIds`)."""
    err: dict[str, Any] = {"id": rid, **where, "error": error}
    if detail:
        err.update(detail)
    else:
        err["record"] = record
    return dumps({"k": list(key), "id": rid, "err": err, **({"q": 1} if queried else {}),
                  **({"v": 1} if refused else {})})


def _duplicate(rid: str, refused: dict[str, Any] | None) -> str:
    """The error of a record whose id *rid* an earlier one claimed: *refused* is where that one is when
    it was refused before compression (:data:`SeenIds`)."""
    if refused is None:
        return f"duplicate id {rid!r}: an earlier record has the same id"
    place = (f"{refused.get('file')} line {refused['line']}" if "line" in refused
             else f"{refused.get('file')} row {refused.get('row')}")
    return (f"duplicate id {rid!r}: the earlier record with this id ({place}) failed, and this one is refused "
            "too: ids are unique, and the first record with an id claims it even when it fails")


def has_field(record: Any, name: str) -> bool:
    """Whether *record* is an object with a key *name* (null or not)."""
    return isinstance(record, Mapping) and name in record


def ok_row(key: Key, rid: str, result: dict[str, Any], *, queried: bool = False) -> str:
    """The part row of a compressed record; ``ok`` is the output line."""
    out = {
        "id": rid,
        "text": result["text"],
        "tokens_in": result["tokens_in"],
        "tokens_out": result["tokens_out"],
        "record": result["record"],
    }
    return dumps({"k": list(key), "id": rid, "ok": out, **({"q": 1} if queried else {})})


def prepare(raws: Iterable[RawRecord | Key], *, query_field: str, max_chars: int,
            seen_ids: SeenIds) -> Iterator[WorkItem | Key]:
    """Validate records in input order; bare keys (records skipped on resume) pass through.

    *seen_ids* holds the ids claimed so far (on resume: those in the finished parts) and is
    updated in place. A record claims its id as soon as it has a usable one, even when it then
    fails validation, so the first record with an id always wins; a later one's error names where
    that record is, and says so when it failed.
    """
    for raw in raws:
        if isinstance(raw, tuple):
            yield raw
            continue
        if raw.error is not None:
            claims = raw.rid is not None and raw.rid not in seen_ids
            if claims:
                seen_ids[raw.rid] = raw.where  # an id parsed or read intact: claimed, as by a refused record
            yield Done(raw.key, error_row(raw.key, raw.rid, raw.where, raw.error, detail=raw.detail,
                                          queried=has_field(raw.detail.get("record"), query_field), refused=claims))
            continue
        rid = record_id(raw.record)
        queried = has_field(raw.record, query_field)
        if rid is not None:
            if rid in seen_ids:
                yield Done(raw.key, error_row(raw.key, rid, raw.where, _duplicate(rid, seen_ids[rid]),
                                              record=raw.record, queried=queried))
                continue
            seen_ids[rid] = None
        try:
            req = to_request(raw.record, query_field=query_field, max_chars=max_chars)
        except RecordError as exc:
            if rid is not None:
                seen_ids[rid] = raw.where
            yield Done(raw.key, error_row(raw.key, rid, raw.where, str(exc), record=raw.record, queried=queried,
                                          refused=rid is not None))
            continue
        yield Task(raw.key, req.id, raw.where, raw.record)
