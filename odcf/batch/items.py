"""From raw input records to work items, and the rows a part file holds.

Both engines run the same code here, in input order: :func:`prepare` validates each record
(:mod:`odcf.batch.records`), claims its id (a later record with a claimed id is a
``duplicate id`` error), and yields either a *task* for a worker or a finished *error row*.
Because this runs in one place in input order, the local and the Ray engine reject exactly
the same records with exactly the same messages.

A part row is one JSON line::

    {"k": [file, n], "id": "t-17", "ok":  {"id", "text", "tokens_in", "tokens_out", "record"}, "q": 1,
     "w": {"file", "line" | "row", "int"?}}
    {"k": [file, n], "id": null,   "err": {"id", "file", "line" | "row", "error", "record" | "raw", ...}}

``k`` is the record's key (file number, record number in that file). ``err`` is exactly the line
written to ``OUTPUT.errors.jsonl``; ``ok`` is exactly the output row; ``w`` is where the record is
(what a later record with its id is told on resume). ``q`` (present only when
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
#: The ids claimed so far -> where the record that claimed one is (``{"file": …, "line" | "row": …}``), with
#: ``"failed": True`` when it was refused before compression and ``"int": True`` when its id was written as an
#: integer; None where that is unknown (parts of an older run): what a later record with the id is told
#: (:func:`prepare`).
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


def _duplicate(rid: str, first: dict[str, Any] | None, *, as_int: bool = False) -> str:
    """The error of a record whose id *rid* an earlier one claimed: *first* is where that one is
    (:data:`SeenIds`); *as_int*: this record's id is written as an integer."""
    if first is None:
        return f"duplicate id {rid!r}: an earlier record has the same id"
    unit = "line" if "line" in first else "row"
    place = f"{first.get('file')} {unit} {first.get(unit)}"
    if first.get("int") and not as_int:
        written = f"; its id {rid} on {unit} {first.get(unit)}, an integer, is the same id once written as a string"
    elif as_int and not first.get("int"):
        written = f"; this record's id {rid}, an integer, is the same id once written as a string"
    else:
        written = ""
    if not first.get("failed"):
        return f"duplicate id {rid!r}: an earlier record ({place}) has the same id{written}"
    return (f"duplicate id {rid!r}: the earlier record with this id ({place}) failed, and this one is refused "
            f"too: ids are unique, and the first record with an id claims it even when it fails{written}")


def claim_of(where: dict[str, Any], record: Any, *, failed: bool = False) -> dict[str, Any]:
    """What :data:`SeenIds` keeps of the record at *where* that claims an id."""
    as_int = isinstance(record, Mapping) and isinstance(record.get("id"), int)
    return {**where, **({"failed": True} if failed else {}), **({"int": True} if as_int else {})}


def has_field(record: Any, name: str) -> bool:
    """Whether *record* is an object with a key *name* (null or not)."""
    return isinstance(record, Mapping) and name in record


def ok_row(key: Key, rid: str, result: dict[str, Any], *, queried: bool = False,
           where: dict[str, Any] | None = None) -> str:
    """The part row of a compressed record; ``ok`` is the output line, ``w`` *where* it is."""
    out = {
        "id": rid,
        "text": result["text"],
        "tokens_in": result["tokens_in"],
        "tokens_out": result["tokens_out"],
        "record": result["record"],
    }
    return dumps({"k": list(key), "id": rid, "ok": out, **({"q": 1} if queried else {}),
                  **({"w": where} if where is not None else {})})


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
                seen_ids[raw.rid] = claim_of(raw.where, raw.detail.get("record"), failed=True)  # an id read intact
            yield Done(raw.key, error_row(raw.key, raw.rid, raw.where, raw.error, detail=raw.detail,
                                          queried=has_field(raw.detail.get("record"), query_field), refused=claims))
            continue
        rid = record_id(raw.record)
        queried = has_field(raw.record, query_field)
        if rid is not None:
            if rid in seen_ids:
                as_int = isinstance(raw.record.get("id"), int)
                yield Done(raw.key, error_row(raw.key, rid, raw.where, _duplicate(rid, seen_ids[rid], as_int=as_int),
                                              record=raw.record, queried=queried))
                continue
            seen_ids[rid] = claim_of(raw.where, raw.record)
        try:
            req = to_request(raw.record, query_field=query_field, max_chars=max_chars)
        except RecordError as exc:
            if rid is not None:
                seen_ids[rid] = claim_of(raw.where, raw.record, failed=True)
            yield Done(raw.key, error_row(raw.key, rid, raw.where, str(exc), record=raw.record, queried=queried,
                                          refused=rid is not None))
            continue
        yield Task(raw.key, req.id, raw.where, raw.record)
