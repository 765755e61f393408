"""The state layer: compact JSON, validated against the plan's schema, abbreviated losslessly.

The state object is validated (JSON Schema draft 2020-12, the plan's ``state_schema``), then
written as compact JSON (no spaces, key order kept). String values may be shortened, but only
with the plan's abbreviation dictionary (``abbreviations: {5Y: 5 years}``), whole words,
case-sensitive, never with ad-hoc short keys. A dictionary entry is used only when its short
form does not already occur in the state, so expanding the entries listed in the legend gives
back the original exactly; this is checked on every call, and when the check fails the state is
delivered unabbreviated (and the record says so).

The delivered state still validates against the schema: a value the schema holds to a closed
set (``enum``, ``const``, at any depth) is a code and stays as it is, and so does a value whose
abbreviated form would fail the schema (a ``pattern``, a ``minLength``, …). Each value left
whole is listed in ``kept`` (JSON pointer → why), which the handoff record reports.

>>> st = compact_state({"term": "renewal every 5 years", "risk": "moderate"}, schema={},
...                    abbreviations={"5Y": "5 years", "MOD": "moderate"})
>>> st.text, st.legend
('{"term":"renewal every 5Y","risk":"MOD"}', {'5Y': '5 years', 'MOD': 'moderate'})
>>> expand_state(json.loads(st.text), st.legend) == {"term": "renewal every 5 years", "risk": "moderate"}
True
>>> st = compact_state({"term": "5 years", "risk": "moderate"}, abbreviations={"5Y": "5 years", "MOD": "moderate"},
...                    schema={"properties": {"risk": {"enum": ["low", "moderate", "high"]}}})
>>> st.text, dict(st.kept)
('{"term":"5Y","risk":"moderate"}', {'/risk': 'enum: a value from a closed set is delivered as it is'})
"""
from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from odcf.handoff.errors import HandoffError
from odcf.plan.model import schema_problems, schema_violations

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class CompactState:
    """``text``: the compact JSON delivered; ``legend``: the dictionary entries it uses."""

    text: str
    legend: Mapping[str, str] = field(default_factory=dict)
    plain_text: str = ""                       # compact JSON before abbreviation
    note: str | None = None                    # why abbreviation was not applied, if it was not
    kept: Mapping[str, str] = field(default_factory=dict)  # JSON pointer → why that value is not abbreviated

    def legend_line(self) -> str:
        return "Abbreviations in the state above (plan dictionary; expand before use): " + "; ".join(
            f"{k} = {v}" for k, v in self.legend.items())


def validate_state(data: Any, schema: Mapping[str, Any], *, where: str = "state") -> None:
    """Raise :class:`HandoffError` listing every schema violation as ``WHERE: /json/pointer: message``."""
    problems = schema_problems(data, schema)
    if problems:
        lines = [f"{where}: {p}" for p in problems]
        raise HandoffError("state does not validate against the plan's state schema:\n  " + "\n  ".join(lines))


def _word(s: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(s) + r"(?!\w)")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _map_strings(value: Any, fn: Any, path: Path = ()) -> Any:
    """*value* with every string ``s`` at JSON path ``p`` replaced by ``fn(p, s)``."""
    if isinstance(value, str):
        return fn(path, value)
    if isinstance(value, Mapping):
        return {k: _map_strings(v, fn, (*path, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn, (*path, i)) for i, v in enumerate(value)]
    return value


def _string_paths(value: Any, path: Path = ()) -> dict[Path, str]:
    found: dict[Path, str] = {}
    _map_strings(value, lambda p, s: found.setdefault(p, s), path)
    return found


def pointer(path: Path) -> str:
    """The JSON pointer of *path* (``("notes", 0)`` → ``/notes/0``)."""
    return "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in path)


def abbreviate_state(data: Any, abbreviations: Mapping[str, str], *,
                     keep: Collection[Path] = ()) -> tuple[Any, dict[str, str]]:
    """String values with dictionary expansions replaced by their short forms, and the legend used.
    The strings at the JSON paths in *keep* stay as they are."""
    texts = _strings(data)
    usable: list[tuple[str, str]] = []
    for short, long in sorted(abbreviations.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if not long or short == long:
            continue
        if any(_word(short).search(t) for t in texts):
            continue  # the short form already occurs: expanding it later would change the state
        if any(_word(long).search(t) for t in texts):
            usable.append((short, long))
    legend: dict[str, str] = {}

    def shorten(path: Path, s: str) -> str:
        if path in keep:
            return s
        for short, long in usable:
            new = _word(long).sub(lambda _m, short=short: short, s)
            if new != s:
                legend[short] = long
                s = new
        return s

    out = _map_strings(data, shorten)
    return out, dict(sorted(legend.items()))


def expand_state(data: Any, legend: Mapping[str, str]) -> Any:
    """Undo :func:`abbreviate_state` with the legend it returned."""
    pats = [(_word(k), v) for k, v in sorted(legend.items(), key=lambda kv: -len(kv[0]))]

    def grow(_path: Path, s: str) -> str:
        for rx, long in pats:
            s = rx.sub(lambda _m, long=long: long, s)
        return s

    return _map_strings(data, grow)


_CLOSED = frozenset({"enum", "const"})


def abbreviate_within_schema(data: Any, abbreviations: Mapping[str, str], schema: Mapping[str, Any]
                             ) -> tuple[Any, dict[str, str], dict[Path, str]]:
    """:func:`abbreviate_state` on a *data* that validates, leaving whole each value that *schema*
    holds to a closed set (``enum``/``const``) or that would fail *schema* abbreviated; returns
    the abbreviated state, its legend, and the values left whole (path → why)."""
    short, legend = abbreviate_state(data, abbreviations)
    before = _string_paths(data)
    changed = [p for p, s in _string_paths(short).items() if s != before[p]]
    kept: dict[Path, str] = {}
    if not changed or not schema:
        return short, legend, kept
    # a value no enum or const admits shows whether one holds the path, whichever branch it is in
    alien = set(changed)
    probe = _map_strings(data, lambda p, s: "\x00" + s if p in alien else s)
    for v in schema_violations(probe, schema):
        if v.path in alien and v.keywords & _CLOSED:
            kept[v.path] = f"{min(v.keywords & _CLOSED)}: a value from a closed set is delivered as it is"
    while True:
        if kept:
            short, legend = abbreviate_state(data, abbreviations, keep=kept)
        violations = schema_violations(short, schema)
        if not violations:
            return short, legend, kept
        grew = False
        for v in violations:  # a violation's path is the abbreviated value's or one above it
            for p in changed:
                if p[:len(v.path)] == v.path and p not in kept:
                    kept[p] = f"abbreviated, it would fail the schema: {v.message}"
                    grew = True
        if not grew:  # not caused by an abbreviation left: deliver the state as it came
            return data, {}, {p: "abbreviated, the state would fail the schema" for p in changed}


def compact_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def compact_state(
    data: Any,
    *,
    schema: Mapping[str, Any],
    abbreviations: Mapping[str, str],
    where: str = "state",
) -> CompactState:
    """Validate *data*, then return its compact, dictionary-abbreviated form (see module docstring)."""
    validate_state(data, schema, where=where)
    plain = compact_json(data)
    if not abbreviations:
        return CompactState(text=plain, plain_text=plain)
    short, legend, kept = abbreviate_within_schema(data, abbreviations, schema)
    why = {pointer(p): w for p, w in sorted(kept.items(), key=lambda kv: pointer(kv[0]))}
    if not legend:
        return CompactState(text=plain, plain_text=plain, kept=why)
    if expand_state(short, legend) != data:  # never deliver something that does not expand back
        return CompactState(text=plain, plain_text=plain, kept=why,
                            note="abbreviation skipped: the round trip did not reproduce the state")
    return CompactState(text=compact_json(short), legend=legend, plain_text=plain, kept=why)
