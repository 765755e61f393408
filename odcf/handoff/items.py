"""Handoff items: what one agent hands to the next, and the JSON format they are read from.

A handoff input is either a JSON list of entries or an object::

    {
      "instruction": "Book the cheapest refundable flight.",      # optional, pinned first
      "searched": ["counterexamples"],                            # categories upstream searched
      "state": {"task_progress": "step_2_of_5"},                  # optional state object (id "state")
      "items": [ ... ],                                           # facts, tool output, drafts
      "messages": [ {"role": "user", "content": "..."} , ... ]    # chat history, OpenAI style
    }

Each entry of ``items`` (or of a top-level list) is one of:

- an **item**: ``{"id", "text" | "content", "layer", "kind", "category", "origin", "timestamp",
  "confidence", "mandatory", "optional", "speaker", "derived_from", "scope_claim", "cites",
  "searched", "read_range"}`` (only ``text``/``content`` is required);
- an **OpenAI-style message**: ``{"role": "user"|"assistant"|"tool"|"system", "content": ...,
  "name", "tool_calls", "tool_call_id"}`` plus any item key. Messages are history turns,
  except ``system``, which is an instruction; an explicit ``layer`` always wins, so a draft
  that claims ``"role": "system"`` but says ``"layer": "reasoning"`` stays a draft;
- a **category result**: ``{"category": "counterexamples", "searched": true, "items": [...]}``,
  which says upstream searched that category, and found ``items`` (possibly none).

"searched" means a search for the category ran; an empty result then reads "searched, none found",
while a required category that no entry mentions reads "not searched".

>>> batch = parse_items([{"role": "user", "content": "Two seats, please."},
...                      {"category": "counterexamples", "searched": True, "items": []}])
>>> batch.items[0].layer, batch.items[0].speaker, sorted(batch.searched)
('history', 'user', ['counterexamples'])
"""
from __future__ import annotations

import json
import math
import pathlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from odcf.document import (
    KINDS,
    LAYERS,
    Source,
    nul_problem,
    real_number,
    unicode_problem,
)
from odcf.errors import InputError
from odcf.fileio import decode_text
from odcf.handoff.errors import HandoffError, raise_problems
from odcf.textutil import loads_json

MESSAGE_ROLES = ("user", "assistant", "tool", "system", "developer")
ITEM_KEYS = frozenset({
    "id", "text", "content", "layer", "kind", "category", "origin", "timestamp", "confidence",
    "mandatory", "optional", "speaker", "derived_from", "scope_claim", "cites", "searched",
    "read_range", "turn",
})
MESSAGE_KEYS = frozenset({"role", "name", "tool_calls", "tool_call_id", "function_call"}) | ITEM_KEYS
GROUP_KEYS = frozenset({"category", "searched", "items"})
TOP_KEYS = frozenset({"instruction", "searched", "state", "items", "messages"})


@dataclass(frozen=True)
class HandoffItem:
    """One piece of handed-over material with its provenance.

    ``optional`` records the caller's wish; the mandatory rules (:mod:`odcf.handoff.mandatory`)
    override it. ``derived_from`` lists the ids of the items a claim rests on; a
    ``scope_claim`` makes that evidence mandatory. ``cites`` are free-text citations of a
    reasoning item (``"source 3, rows 5-7"``). ``data`` holds the parsed JSON of a state item.
    ``position`` is the item's place in the input (history order). ``call_args`` holds the scalar
    arguments of the tool call a ``tool`` message answers (matched by ``tool_call_id``).
    """

    id: str
    text: str
    layer: str = "fact"
    kind: str = "text"
    category: str | None = None
    origin: str | None = None
    timestamp: str | None = None
    confidence: float | None = None
    mandatory: bool = False
    optional: bool = False
    speaker: str | None = None
    derived_from: tuple[str, ...] = ()
    scope_claim: bool = False
    cites: tuple[str, ...] = ()
    read_range: str = "whole"
    position: int = 0
    call_args: tuple[tuple[str, str], ...] = ()
    data: Any = field(default=None, compare=False)

    @property
    def label(self) -> str:
        return self.origin or self.id

    def to_source(self, **changes: Any) -> Source:
        """The core pipeline's view of this item (``changes`` override fields, e.g. ``text``)."""
        fields: dict[str, Any] = {
            "id": self.id, "text": self.text, "kind": self.kind, "layer": self.layer,
            "origin": self.origin, "timestamp": self.timestamp, "confidence": self.confidence,
            "mandatory": self.mandatory, "category": self.category, "speaker": self.speaker,
            "read_range": self.read_range,
        }
        fields.update(changes)
        return Source(**fields)


@dataclass(frozen=True)
class ItemBatch:
    """Parsed handoff input: the items in input order and the categories upstream searched."""

    items: tuple[HandoffItem, ...]
    searched: frozenset[str] = frozenset()

    def by_id(self) -> dict[str, HandoffItem]:
        return {it.id: it for it in self.items}


def load_items(path: str | pathlib.Path) -> ItemBatch:
    """Read and parse a JSON file of handoff items; errors name the file and the entry."""
    p = pathlib.Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise HandoffError(f"{p}: cannot read: {exc.strerror or exc}") from exc
    return parse_items(decode_items(raw, str(p)), where=str(p))


def decode_items(raw: bytes, where: str) -> Any:
    """The JSON value of an items file's bytes (or stdin's), read as ``odcf compress`` reads a file
    (:func:`odcf.fileio.decode_text`: UTF-8, a leading byte-order mark removed); what cannot be
    read is a :class:`HandoffError` naming *where*."""
    try:
        text = decode_text(raw, where)
    except InputError as exc:
        raise HandoffError(str(exc)) from exc
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        raise HandoffError(f"{where}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc


def parse_items(obj: Any, *, where: str = "items", searched: Iterable[str] = ()) -> ItemBatch:
    """Parse a list of entries or a handoff object (see the module docstring).

    Every problem is collected and raised at once as a :class:`HandoffError`, each line
    naming the entry (``items[3].confidence: ...``).
    """
    if isinstance(obj, ItemBatch):
        return ItemBatch(obj.items, obj.searched | frozenset(searched))
    parser = _Parser(where)
    for cat in searched:
        parser.searched.add(str(cat))
    if isinstance(obj, Mapping):
        parser.top(obj)
    elif isinstance(obj, (list, tuple)):
        parser.entries(obj, "")
    else:
        raise HandoffError(f"{where}: expected a JSON list of items or an object with 'items'/'messages', "
                           f"got {type(obj).__name__}")
    raise_problems(parser.problems, where)
    return ItemBatch(tuple(parser.items), frozenset(parser.searched))


def _iso_time(value: str) -> bool:
    """Whether *value* is an ISO 8601 date or date-time (``Z`` allowed) or a time of day."""
    import datetime

    text = value.strip()
    for parse in (datetime.datetime.fromisoformat, datetime.time.fromisoformat):
        try:
            parse(text[:-1] + "+00:00" if text.endswith(("Z", "z")) and len(text) > 10 else text)
            return True
        except ValueError:
            continue
    return False


class _Parser:
    def __init__(self, where: str) -> None:
        self.where = where
        self.items: list[HandoffItem] = []
        self.searched: set[str] = set()
        self.problems: list[str] = []
        self._ids: set[str] = set()
        self._calls: dict[str, tuple[tuple[str, str], ...]] = {}

    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path or '<root>'}: {message}")

    # -- containers -------------------------------------------------------
    def top(self, obj: Mapping[str, Any]) -> None:
        for key in sorted(set(obj) - TOP_KEYS):
            self.problem(str(key), f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
        if "instruction" in obj:
            ins = obj["instruction"]
            if isinstance(ins, str):
                self.add({"text": ins, "layer": "instruction", "id": "instruction"}, "instruction")
            elif isinstance(ins, Mapping):
                self.add({"layer": "instruction", **ins}, "instruction")
            else:
                self.problem("instruction", "must be a string or an item object")
        if "searched" in obj:
            self.searched_list(obj["searched"], "searched")
        if "state" in obj:  # the state object itself; a state with provenance goes in items
            self.add({"layer": "state", "content": obj["state"], "id": "state"}, "state")
        for key in ("items", "messages"):
            if key in obj:
                seq = obj[key]
                if isinstance(seq, (list, tuple)):
                    self.entries(seq, key)
                else:
                    self.problem(key, f"must be a list, got {type(seq).__name__}")

    def searched_list(self, value: Any, path: str) -> None:
        if isinstance(value, (list, tuple)) and all(isinstance(c, str) and c for c in value):
            self.searched.update(value)
        else:
            self.problem(path, "must be a list of category names")

    def entries(self, seq: Sequence[Any], path: str, category: str | None = None) -> None:
        for i, entry in enumerate(seq):
            p = f"{path}[{i}]"
            if not isinstance(entry, Mapping):
                self.problem(p, f"expected an object, got {type(entry).__name__}")
            elif "items" in entry:
                self.group(entry, p)
            elif path == "messages" and "role" not in entry:
                self.problem(p, "a message needs 'role' (user, assistant, tool, system, developer); "
                                "put plain items in 'items'")
            else:
                self.add(entry, p, category=category)

    def group(self, entry: Mapping[str, Any], path: str) -> None:
        for key in sorted(set(entry) - GROUP_KEYS):
            self.problem(f"{path}.{key}", f"unknown key in a category result (known: {', '.join(sorted(GROUP_KEYS))})")
        cat = entry.get("category")
        if not isinstance(cat, str) or not cat:
            self.problem(f"{path}.category", "a category result needs a category name")
            return
        searched = entry.get("searched", True)
        if not isinstance(searched, bool):
            self.problem(f"{path}.searched", "must be true or false")
        elif searched:
            self.searched.add(cat)
        items = entry.get("items")
        if not isinstance(items, (list, tuple)):
            self.problem(f"{path}.items", "must be a list")
            return
        if items and searched is False:
            self.problem(f"{path}.searched", "false, but the category result lists items")
        self.entries(items, f"{path}.items", category=cat)

    # -- one entry ---------------------------------------------------------
    def add(self, entry: Mapping[str, Any], path: str, category: str | None = None) -> None:
        is_message = "role" in entry and "text" not in entry
        allowed = MESSAGE_KEYS if is_message else ITEM_KEYS
        for key in sorted(set(entry) - allowed):
            hint = " (an OpenAI-style message needs 'role' and 'content')" if key == "role" else ""
            self.problem(f"{path}.{key}", f"unknown key{hint} (known: {', '.join(sorted(allowed))})")
        n_before = len(self.problems)
        position = len(self.items)

        role = entry.get("role") if is_message else None
        if is_message and role not in MESSAGE_ROLES:
            self.problem(f"{path}.role", f"unknown message role {role!r} (expected one of {', '.join(MESSAGE_ROLES)})")
        if "text" in entry and "content" in entry:
            self.problem(path, "give either 'text' or 'content', not both")
        body = entry.get("text", entry.get("content"))
        if body is None and not (is_message and ("tool_calls" in entry or "content" in entry)):
            self.problem(path, "missing 'text' (or 'content')")

        layer, kind = self.layer_and_kind(entry, path, role, body, is_message)
        text, data = self.body_text(body, entry, path, layer)
        if is_message and entry.get("tool_calls"):
            text = _with_tool_calls(text, entry["tool_calls"], f"{path}.tool_calls", self)
        problem = unicode_problem(text)
        if problem:  # JSON may carry one ("\ud800"); no stage could hash, count or write it
            self.problem(path, f"text {problem}")
        # a NUL ("\u0000") too, with the file's other problems, not later as the one error of its source
        # (QA: "source 'b': text holds a NUL character ...", naming neither the file nor items[1])
        problem = nul_problem(text)
        if problem:
            self.problem(path, f"text {problem}")

        given = entry.get("confidence")
        conf = real_number(given)  # numpy scalars and Decimal too, as a float
        if given is not None and (conf is None or not math.isfinite(conf) or not 0.0 <= conf <= 1.0):
            self.problem(f"{path}.confidence", f"must be a number in [0, 1], got {given!r}")

        strs, bools, lists = self.typed_fields(entry, path)
        self.searched.update(lists["searched"])

        cat = strs["category"] or category
        if category is not None and strs["category"] not in (None, category):
            self.problem(f"{path}.category", f"{strs['category']!r} inside the result of category {category!r}")
        if strs["timestamp"] is not None and not _iso_time(strs["timestamp"]):
            self.problem(f"{path}.timestamp", f"not an ISO 8601 date or time: {strs['timestamp']!r} "
                                              "(e.g. 2024-05-20T09:05:00Z; timestamps order statements by age)")
        item_id = strs["id"] or (f"m{position + 1}" if is_message else f"i{position + 1}")
        if strs["id"] is not None or len(self.problems) == n_before:
            # a written id is claimed even by an entry with problems, so a later duplicate is named too
            if item_id in self._ids:
                self.problem(f"{path}.id", f"duplicate id {item_id!r}")
            self._ids.add(item_id)
        if len(self.problems) > n_before:
            return
        speaker = strs["speaker"]
        if speaker is None and role is not None:
            speaker = f"tool:{entry['name']}" if role == "tool" and isinstance(entry.get("name"), str) else role
        origin = strs["origin"]
        if origin is None and role == "tool" and isinstance(entry.get("name"), str):
            origin = f"tool:{entry['name']}"
        call_args: tuple[tuple[str, str], ...] = ()
        if is_message and isinstance(entry.get("tool_calls"), list):
            self._remember_calls(entry["tool_calls"])
        if role == "tool" and isinstance(entry.get("tool_call_id"), str):
            call_args = self._calls.get(entry["tool_call_id"], ())
        self.items.append(HandoffItem(
            id=item_id, text=text, layer=layer, kind=kind, category=cat, origin=origin,
            timestamp=strs["timestamp"], confidence=None if conf is None else float(conf),
            mandatory=bools["mandatory"], optional=bools["optional"], speaker=speaker,
            derived_from=lists["derived_from"], scope_claim=bools["scope_claim"], cites=lists["cites"],
            read_range=strs["read_range"] or "whole", position=position, call_args=call_args, data=data,
        ))

    def layer_and_kind(self, entry: Mapping[str, Any], path: str, role: Any, body: Any,
                       is_message: bool) -> tuple[Any, Any]:
        """The entry's layer and kind, defaulted from what it is (a message, a tool result, JSON)."""
        layer = entry.get("layer")
        if layer is None:
            layer = _default_layer(role, body, entry)
        elif layer not in LAYERS:
            self.problem(f"{path}.layer", f"unknown layer {layer!r} (expected one of {', '.join(LAYERS)})")
        kind = entry.get("kind")
        if kind is None:
            if role == "tool":
                kind = "tool"
            elif is_message:
                kind = "chat"
            else:
                kind = "json" if isinstance(body, (Mapping, list)) else "text"
        elif kind not in KINDS:
            self.problem(f"{path}.kind", f"unknown kind {kind!r} (expected one of {', '.join(KINDS)})")
        return layer, kind

    def typed_fields(self, entry: Mapping[str, Any], path: str) -> tuple[
            dict[str, str | None], dict[str, bool], dict[str, tuple[str, ...]]]:
        """The entry's string, boolean and list fields, each checked (a bad one is a problem and
        reads as absent); an integer id reads as its string."""
        strs: dict[str, str | None] = {}
        for key in ("id", "category", "origin", "timestamp", "speaker", "read_range"):
            v = entry.get(key)
            if v is not None and not isinstance(v, str):
                if key == "id" and isinstance(v, int) and not isinstance(v, bool):
                    v = str(v)
                else:
                    self.problem(f"{path}.{key}", f"must be a string, got {type(v).__name__}")
                    v = None
            strs[key] = v
        bools: dict[str, bool] = {}
        for key in ("mandatory", "optional", "scope_claim"):
            v = entry.get(key, False)
            if not isinstance(v, bool):
                self.problem(f"{path}.{key}", f"must be true or false, got {v!r}")
                v = False
            bools[key] = v
        lists: dict[str, tuple[str, ...]] = {}
        for key in ("derived_from", "cites", "searched"):
            v = entry.get(key, ())
            if isinstance(v, str):
                v = (v,)
            if not isinstance(v, (list, tuple)) or not all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in v):
                self.problem(f"{path}.{key}", "must be a list of strings")
                v = ()
            lists[key] = tuple(str(x) for x in v)
        return strs, bools, lists

    def _remember_calls(self, calls: list[Any]) -> None:
        for call in calls:
            fn = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(fn, Mapping) or not isinstance(call.get("id"), str):
                continue
            args = fn.get("arguments")
            if isinstance(args, str):
                try:
                    args = loads_json(args)
                except json.JSONDecodeError:
                    args = None
            if isinstance(args, Mapping):
                scalars = {str(k): str(v) for k, v in args.items()
                           if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
                self._calls[call["id"]] = tuple(sorted(scalars.items()))

    def body_text(self, body: Any, entry: Mapping[str, Any], path: str, layer: str) -> tuple[str, Any]:
        """The item's text, and for JSON bodies (or state items) the parsed value."""
        if body is None:
            return "", None
        if isinstance(body, str):
            if layer == "state":
                try:
                    return body, loads_json(body)
                except json.JSONDecodeError as exc:
                    self.problem(path, f"a state item must hold JSON: {exc.msg} at column {exc.colno}")
                    return body, None
            return body, None
        if isinstance(body, (Mapping, list)):
            if isinstance(body, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in body) and body:
                # OpenAI content parts: [{"type": "text", "text": "..."}]
                return "\n".join(str(p.get("text", "")) for p in body), None
            return json.dumps(body, ensure_ascii=False, separators=(",", ":")), body
        self.problem(path, f"text must be a string or JSON object, got {type(body).__name__}")
        return "", None


def _default_layer(role: str | None, body: Any, entry: Mapping[str, Any]) -> str:
    if role == "system" or role == "developer":
        return "instruction"
    if role is not None:
        return "history"
    return "fact"


def _with_tool_calls(text: str, calls: Any, path: str, parser: _Parser) -> str:
    if not isinstance(calls, list):
        parser.problem(path, "must be a list")
        return text
    lines = [text] if text else []
    for i, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            parser.problem(f"{path}[{i}]", "expected {'function': {'name': ..., 'arguments': ...}}")
            continue
        args = fn.get("arguments", "")
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"[tool call] {fn['name']} {args}".rstrip())
    return "\n".join(lines)
