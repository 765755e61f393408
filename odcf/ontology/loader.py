"""Load and validate ``task_ontology.yaml`` files, reporting every problem at once.

>>> from odcf.ontology.loader import load_ontology, list_bundled
>>> ont = load_ontology("legal_contract")          # a bundled name, or a path
>>> ont.domain
'legal_contract'

A bad file raises one :class:`~odcf.errors.OntologyError` whose ``problems`` are all the
problems of the file, each as ``FILE:LINE: key.path: message``::

    contract.yaml:14: protect.anchors[1].pattern: invalid regex: missing ), unterminated subpattern at position 0
    contract.yaml:31: roles.planner.budget: budget must be a positive integer, got 0

YAML is read with the YAML 1.2 core rules for plain scalars: ``no``, ``on``, ``yes`` and ``off``
stay strings (a connective list may hold ``no``), dates stay strings, and only ``true``/``false``
are booleans.
"""
from __future__ import annotations

import bisect
import difflib
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from odcf.errors import OdcfError, OntologyError, PatternTimeoutError, Problem
from odcf.ontology import state_schema
from odcf.ontology.schema import (
    ESSENTIAL_STAGES,
    LAYERS,
    PRESET_ROLES,
    REGEX_FLAGS,
    STAGE_NAMES,
    Ontology,
    ecma_hint,
    format_path,
    known_keys_at,
)
from odcf.textutil import ambiguous_alternation, backtracking_probe

logger = logging.getLogger(__name__)

PathKey = tuple[Any, ...]
_SUFFIXES = (".yaml", ".yml")
#: Text a zero-width anchor would "match" in; every real anchor must consume characters.
_EMPTY_MATCH_PROBE = "Section 3.2: pay $1,200.00 (5%) by 2024-03-15; 第3.2.1条 ¥1,200 x_y-Z #W1 "
_JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")


# -- YAML with line numbers ---------------------------------------------------------------------
class _Map(dict):
    """A mapping that remembers where it and each of its keys were written."""

    line: int = 1
    key_lines: dict[Any, int]


class _Seq(list):
    """A sequence that remembers where it and each of its items were written."""

    line: int = 1
    item_lines: list[int]


#: libyaml's parser when PyYAML was built with it (about 10x faster), else the pure-Python one.
_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def mark_line(text: str, mark: Any, newlines: list[int] | None = None) -> int:
    """1-based line of a YAML mark in *text*, counting the line ends an editor counts (``\\n``,
    ``\\r\\n`` and a lone ``\\r``), as ``FILE:LINE`` does.

    *newlines*, the offsets of every line end in *text* (:func:`newline_offsets`), makes each call
    a binary search instead of a scan from the start (a loader asks for every node's line).
    """
    index = getattr(mark, "index", None)
    if isinstance(index, int) and 0 <= index <= len(text):
        return bisect.bisect_left(newline_offsets(text) if newlines is None else newlines, index) + 1
    return int(mark.line) + 1


_LINE_END = re.compile(r"\r\n|\r|\n")


def newline_offsets(text: str) -> list[int]:
    """Offsets of every line end in *text* (the ``\\n`` of ``\\r\\n``; a lone ``\\r``), ascending."""
    return [m.end() - 1 for m in _LINE_END.finditer(text)]


def split_lines(text: str) -> list[str]:
    """*text* cut at every line end :func:`newline_offsets` counts."""
    return _LINE_END.split(text)


class _LineLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """SafeLoader with YAML 1.2 core scalars that records marks and duplicate keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._text = stream
        self._newlines = newline_offsets(stream)
        #: (mapping, key, line of the repeat, line of the first)
        self.duplicates: list[tuple[_Map, Any, int, int]] = []

    def line_of(self, mark: Any) -> int:
        """1-based line of *mark*, counting ``\\n``, ``\\r\\n`` and ``\\r``: YAML also breaks lines at NEL,
        LS and PS (U+0085, U+2028, U+2029), which an editor shows inside one line."""
        return mark_line(self._text, mark, self._newlines)

    def construct_line_map(self, node: yaml.MappingNode):  # type: ignore[no-untyped-def]
        data = _Map()
        data.line = self.line_of(node.start_mark)
        data.key_lines = {}
        yield data
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                continue
            key = self.construct_object(key_node)
            line = self.line_of(key_node.start_mark)
            if key in seen:
                self.duplicates.append((data, key, line, seen[key]))
            else:
                seen[key] = line
        value = self.construct_mapping(node)  # flattens `<<:` merges, checks hashability
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                data.key_lines.setdefault(self.construct_object(key_node), self.line_of(key_node.start_mark))
        data.update(value)

    def construct_line_seq(self, node: yaml.SequenceNode):  # type: ignore[no-untyped-def]
        data = _Seq()
        data.line = self.line_of(node.start_mark)
        data.item_lines = [self.line_of(item.start_mark) for item in node.value]
        yield data
        data.extend(self.construct_sequence(node))


_BOOL, _INT, _FLOAT, _TIME = (f"tag:yaml.org,2002:{t}" for t in ("bool", "int", "float", "timestamp"))
_LineLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in (_BOOL, _INT, _FLOAT, _TIME)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_LineLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_LineLoader.add_implicit_resolver(_INT, re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+)$"), list("-+0123456789"))
_LineLoader.add_implicit_resolver(
    _FLOAT,
    re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*|[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+)|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."),
)
_LineLoader.add_constructor("tag:yaml.org,2002:map", _LineLoader.construct_line_map)
_LineLoader.add_constructor("tag:yaml.org,2002:seq", _LineLoader.construct_line_seq)


def _parse_yaml(raw: bytes, source: str) -> tuple[Any, dict[PathKey, int], list[Problem]]:
    """Plain data, the line of every key path, and the problems found while reading."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        at = exc.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)  # utf-8-sig counts after the BOM
        line = len(newline_offsets(raw[:at].decode("latin-1"))) + 1   # the bytes before it, as line ends go
        return None, {}, [Problem(source, line, "", f"not valid UTF-8 (byte 0x{raw[at]:02x} at offset {at})")]
    loader = _LineLoader(text)
    try:
        if not loader.check_data():
            return None, {}, [Problem(source, 1, "", "the file is empty; an ontology starts with `odcf: 1`")]
        data = loader.get_data()
        if loader.check_data():
            start = getattr(data, "line", 1)
            marks = [i + 1 for i, ln in enumerate(split_lines(text)) if ln.startswith(("---", "...")) and i + 1 > start]
            extra = marks[0] if marks else None
            return None, {}, [Problem(source, extra, "", "more than one YAML document; an ontology is one mapping")]
    except yaml.MarkedYAMLError as exc:
        return None, {}, [Problem(source, *_yaml_error(text, exc))]
    except yaml.reader.ReaderError as exc:  # a character YAML refuses: it gives only an offset
        return None, {}, [Problem(source, *_reader_error(text, exc))]
    except yaml.YAMLError as exc:  # pragma: no cover - unmarked YAML errors are rare
        return None, {}, [Problem(source, None, "", f"invalid YAML: {exc}")]
    finally:
        loader.dispose()
    if data is None:
        return None, {}, [Problem(source, 1, "", "the file holds no mapping; an ontology starts with `odcf: 1`")]
    if not isinstance(data, dict):
        line = getattr(data, "line", 1)
        kind = _kind(data)
        return None, {}, [Problem(source, line, "", f"the top level must be a mapping of keys, got {kind}")]
    lines: dict[PathKey, int] = {(): data.line}
    where: dict[int, PathKey] = {}
    problems: list[Problem] = []
    try:
        plain = _Plain(lines, where, problems, source).walk(data, (), None)
    except _AliasBomb as bomb:
        message = (f"YAML aliases expand to more than {MAX_ALIAS_NODES} nodes (an alias stands for a copy of "
                   "everything under its anchor, and an alias of an alias multiplies them); odcf reads at most "
                   f"{MAX_ALIAS_NODES} nodes repeated through aliases: write the repeated part out, or repeat it less")
        # an alias in a list has the line of its anchor (libyaml composes both into one node): name the key
        at = bomb.path
        while at and isinstance(at[-1], int):
            at = at[:-1]
        return None, {}, [Problem(source, _line(lines, at), format_path(_str_path(at)), message)]
    for mapping, key, line, first in loader.duplicates:
        path = where.get(id(mapping), ()) + (key,)
        problems.append(Problem(source, line, format_path(_str_path(path)), f"duplicate key {key!r} (first written at line {first})"))
    return plain, lines, problems


def _yaml_error(text: str, exc: yaml.MarkedYAMLError) -> tuple[int | None, str, str]:
    """``(line, path, message)`` of a YAML syntax error. Where the parser gave up and where the
    construct it was reading opened are both said when they differ; a quoted scalar is placed
    where it opened (an unclosed quote makes the parser give up many lines later)."""
    problem = mark_line(text, exc.problem_mark) if exc.problem_mark is not None else None
    context = mark_line(text, exc.context_mark) if exc.context_mark is not None else None
    line = problem if problem is not None else context
    what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
    slip = _look_alike(text, problem) if problem is not None else None
    if slip is not None:
        return slip[0], "", f"invalid YAML: {slip[1]}"
    if problem is not None and "\t" in (split_lines(text)[problem - 1:problem] or [""])[0]:
        what += " (YAML does not allow tabs for indentation)"
    elif exc.context and exc.problem and None not in (problem, context) and problem != context:
        if "quoted scalar" in exc.context:
            line = context
            what = (f"{exc.context} that opens at line {context}: {exc.problem} at line {problem} "
                    "(is its closing quote missing?)")
        else:
            what = f"{exc.context} at line {context}: {exc.problem} at line {problem}"
    if exc.problem and "unknown escape character" in exc.problem:  # only double quotes have escapes
        what += f" (a regex in double quotes? {_SINGLE_QUOTES_HINT})"
    return line, "", f"invalid YAML: {what}"


# QA s31 (a Chinese ontology): `language：zh` (a full-width colon) was "while scanning a simple key at
# line 5: could not find expected ':' at line 6", and an indent of U+3000 ideographic spaces was
# "mapping values are not allowed in this context" on the line after it; neither named the character.
_FULL_WIDTH_COLON, _IDEOGRAPHIC_SPACE = "\uff1a", "\u3000"
_INDENT = re.compile(r"[ \t\u3000]*")
_LOOK_ALIKE_TRIES = 24  # reparses at most, so a long broken file costs little more to report


def _parse_failure(text: str) -> int | None:
    """Line where YAML's parser gives up on *text*, or None when it parses (nodes unbuilt)."""
    loader = _BaseLoader(text)
    try:
        while loader.check_event():
            loader.get_event()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark if exc.problem_mark is not None else exc.context_mark
        return mark_line(text, mark) if mark is not None else 0
    except yaml.YAMLError:  # pragma: no cover - a reader error is caught before this is asked
        return 0
    finally:
        loader.dispose()
    return None


def _look_alike(text: str, failed_at: int) -> tuple[int, str] | None:
    """``(line, message)`` of a full-width colon or an ideographic-space indent, at or above line
    *failed_at*, that the parse trips over, or None.

    Only a file YAML's parser refuses is asked, so a valid file with ``：`` or U+3000 inside a
    value is never rejected; and a character is blamed only when its ASCII stand-in (``: ``, spaces)
    lets the parser read past *failed_at*, so one in a value is not blamed for a mistake elsewhere.
    """
    if _parse_failure(text) != failed_at:  # failed while building nodes, not parsing: not a slip of these
        return None
    starts = [0] + [end + 1 for end in newline_offsets(text)]
    lines = split_lines(text)
    tries = 0
    for number in range(min(failed_at, len(lines)), 0, -1):
        line = lines[number - 1]
        indent = _INDENT.match(line).group()  # type: ignore[union-attr]  # matches the empty string
        fixes: list[tuple[int, str, str]] = []
        if _IDEOGRAPHIC_SPACE in indent:
            what = "U+3000 ideographic space at column {} used as indentation; YAML indents with spaces"
            fixes += [(indent.index(_IDEOGRAPHIC_SPACE), indent.replace(_IDEOGRAPHIC_SPACE, pad) + line[len(indent):],
                       what) for pad in (" ", "  ", "")]  # a full-width space is one column, two, or a stray
        if _FULL_WIDTH_COLON in line:
            at = line.index(_FULL_WIDTH_COLON)
            fixes.append((at, line[:at] + ": " + line[at + 1:],
                          "full-width colon U+FF1A at column {} where YAML needs ':'"))
        for column, fixed, what in fixes:
            if tries == _LOOK_ALIKE_TRIES:
                return None
            tries += 1
            start = starts[number - 1]
            after = _parse_failure(text[:start] + fixed + text[start + len(line):])
            if after is None or after > failed_at:
                return number, what.format(column + 1)
    return None


def _reader_error(text: str, exc: yaml.reader.ReaderError) -> tuple[int | None, str, str]:
    """``(line, path, message)`` of a character YAML does not allow (a NUL, another control
    character, U+FFFE): its line and column from the reader's offset, in odcf's words."""
    at = exc.position if isinstance(exc.position, int) and 0 <= exc.position < len(text) else None
    if at is None:  # pragma: no cover - the reader always reads a str here
        return None, "", "invalid YAML: a character YAML does not allow"
    offsets = newline_offsets(text)
    before = bisect.bisect_left(offsets, at)
    column = at - (offsets[before - 1] + 1 if before else 0) + 1
    code = ord(text[at])
    if code < 0x20 or 0x7F <= code <= 0x9F:
        what = (f"control character U+{code:04X} at column {column}; YAML allows no control characters "
                "other than tab and line breaks")
    else:
        what = f"character U+{code:04X} at column {column} is not allowed in YAML"
    return before + 1, "", f"invalid YAML: {what}"


#: The most nodes a file may repeat through YAML aliases (each alias counts every node under its anchor).
#: QA s32: a 324-byte file of seven anchors, each a list of nine aliases of the one before (a "billion
#: laughs"), stood for 9**7 nodes; walking every copy took 62 s and 1.25 GB to report "unknown key".
MAX_ALIAS_NODES = 100_000


class _AliasBomb(Exception):
    """Raised past :data:`MAX_ALIAS_NODES` repeated nodes; *path* is the alias being expanded then."""

    def __init__(self, path: PathKey) -> None:
        super().__init__(path)
        self.path = path


class _Plain:
    """Turns the loader's :class:`_Map`/:class:`_Seq` into plain dicts and lists, recording the line
    of every key path in *lines* and the first path of every mapping in *where*.

    An alias is the same object as its anchor, so it is walked again under the alias's path (its
    keys then have lines there too); the nodes walked again are counted, and past
    :data:`MAX_ALIAS_NODES` the walk stops with :class:`_AliasBomb`: what follows (pydantic, the
    state schema checks, the plan) would walk every copy too.
    """

    def __init__(self, lines: dict[PathKey, int], where: dict[int, PathKey], problems: list[Problem],
                 source: str) -> None:
        self.lines, self.where, self.problems, self.source = lines, where, problems, source
        self.active: set[int] = set()
        self.repeated = 0

    def walk(self, obj: Any, path: PathKey, alias: PathKey | None) -> Any:
        """*obj* as plain data; *alias* is the path of the alias this copy is walked under (None: written)."""
        container = isinstance(obj, (_Map, _Seq))
        if container and id(obj) in self.active:
            self.problems.append(Problem(self.source, obj.line, format_path(_str_path(path)), "recursive YAML alias"))
            return None
        if container and alias is None and id(obj) in self.where:
            alias = path  # walked before: this is an alias (or a `<<:` merge) of it
        if alias is not None:
            self.repeated += 1
            if self.repeated > MAX_ALIAS_NODES:
                raise _AliasBomb(alias)
        if not container:
            return obj
        self.where.setdefault(id(obj), path)
        self.active.add(id(obj))
        try:
            if isinstance(obj, _Map):
                out: dict[Any, Any] = {}
                for key, value in obj.items():
                    child = path + (key,)
                    self.lines[child] = obj.key_lines.get(key, obj.line)
                    out[key] = self.walk(value, child, alias)
                return out
            items: list[Any] = []
            for i, value in enumerate(obj):
                child = path + (i,)
                self.lines[child] = obj.item_lines[i] if i < len(obj.item_lines) else obj.line
                items.append(self.walk(value, child, alias))
            return items
        finally:
            self.active.discard(id(obj))


def _str_path(path: PathKey) -> tuple[str | int, ...]:
    return tuple(p if isinstance(p, (str, int)) and not isinstance(p, bool) else str(p) for p in path)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (an empty value)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, str):
        short = value if len(value) <= 40 else value[:37] + "..."
        return f"string {short!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _line(lines: dict[PathKey, int], path: PathKey) -> int | None:
    for end in range(len(path), -1, -1):
        line = lines.get(tuple(path[:end]))
        if line is not None:
            return line
    return None


# -- pydantic errors -> problems ------------------------------------------------------------------
_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "bool_type": "true or false",
    "tuple_type": "a list",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _pydantic_problems(exc: ValidationError, lines: dict[PathKey, int], source: str,
                       data: Mapping[Any, Any]) -> list[Problem]:
    out: list[tuple[PathKey | None, Problem]] = []  # (the missing key's path, for a "missing" problem)
    errors = exc.errors(include_url=False)
    # a required key that is missing, by the mapping it is missing from, and why it is required ("": the schema says so)
    missing: dict[PathKey, dict[str, str]] = {}
    for err in errors:
        if err["type"] == "missing" and err["loc"] and err["loc"][-1] != "[key]":
            missing.setdefault(tuple(err["loc"][:-1]), {})[str(err["loc"][-1])] = ""
    for role_name in _roles_missing_budget(data):
        missing.setdefault(("roles", role_name), {})["budget"] = _not_a_preset(role_name)
    merged: set[PathKey] = set()  # missing keys an unknown key's "did you mean" names
    for err in errors:
        loc = tuple(err["loc"])
        is_key = bool(loc) and loc[-1] == "[key]"
        if is_key:
            loc = loc[:-1]
        kind = err["type"]
        value = err.get("input")
        if is_key and kind in ("string_type", "invalid_key"):
            line = _line(lines, loc)
            path = format_path(_str_path(loc[:-1]) + (str(loc[-1]),))
            out.append((None, Problem(source, line, path, f"keys must be strings, got {_kind(loc[-1])} (quote it)")))
            continue
        if kind == "missing":
            message = f"required key {loc[-1]!r} is missing"
            if loc == ("odcf",):
                message += " (the format version: write `odcf: 1`)"
        elif kind == "extra_forbidden":
            key = loc[-1]
            known = known_keys_at(loc[:-1])
            closest = _closest_key(str(key), known)
            hint = f" (did you mean {closest!r}?)" if closest else ""
            why = missing.get(loc[:-1], {}).get(closest or "")
            if why is not None:
                # QA s32: `{from: c, too: c}` was two problems, "required key 'to' is missing" first, which
                # sends the user to add a key they wrote: one problem, the typo, saying the key is required
                hint = f" (did you mean {closest!r}? {closest!r} is required{': ' + why if why else ''})"
                merged.add(loc[:-1] + (closest,))
            message = f"unknown key {key!r}{hint}"
            if known:
                message += f"; known keys here: {', '.join(known)}"
        elif kind == "invalid_key":
            message = f"keys must be strings, got {_kind(loc[-1])} (quote it)"
        elif kind == "value_error":
            message = str(err.get("ctx", {}).get("error", err["msg"]))
        elif kind == "too_short" and loc == ("concepts",):
            if value:  # pydantic counts only the items that validated; those are reported already
                continue
            message = "at least one concept is required"
        elif kind in _EXPECTED:
            message = f"expected {_EXPECTED[kind]}, got {_kind(value)}"
            if kind == "int_type" and loc[-1] == "budget":
                message = f"budget must be a positive integer, got {_kind(value)}"
        else:
            message = err["msg"]
        line = _line(lines, loc)
        out.append((loc if kind == "missing" else None, Problem(source, line, format_path(_str_path(loc)), message)))
    return [problem for loc, problem in out if loc not in merged]


def _suggest(word: str, known: tuple[str, ...] | list[str]) -> str:
    closest = _closest_key(word, known)
    return f" (did you mean {closest!r}?)" if closest else ""


def _closest_key(word: str, known: tuple[str, ...] | list[str]) -> str | None:
    """The one of *known* that *word* is likely a slip for (a case slip first), or None."""
    if not known:
        return None
    by_case = {k.lower(): k for k in known}
    if word.lower() in by_case:
        return by_case[word.lower()]
    match = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return match[0] if match else None


def _roles_missing_budget(data: Mapping[Any, Any]) -> list[Any]:
    """The roles of *data* that are not preset roles and give no budget (which they must)."""
    roles = data.get("roles")
    if not isinstance(roles, dict):
        return []
    return [name for name, role in roles.items()
            if isinstance(role, dict) and name not in PRESET_ROLES and role.get("budget") is None]


def _not_a_preset(role_name: Any) -> str:
    return f"{role_name!r} is not a preset role (presets: {', '.join(r for r in PRESET_ROLES if r != 'default')})"


# -- checks that need the whole file ------------------------------------------------------------
Report = Callable[[PathKey, str], None]


def _check_concepts(data: Mapping[Any, Any], report: Report, line: Callable[[PathKey], int | None]) -> set[str] | None:
    concepts = data.get("concepts")
    if not isinstance(concepts, list):
        return None
    names: dict[str, int] = {}
    for i, concept in enumerate(concepts):
        if not isinstance(concept, dict) or not isinstance(concept.get("name"), str):
            continue
        name = concept["name"].strip()
        key = name.casefold()
        if key in names:
            report(("concepts", i, "name"), f"duplicate concept {name!r} (first defined at line {names[key]})")
        else:
            names[key] = line(("concepts", i, "name")) or 0
    return {n for n in names}


def _check_relations(data: Mapping[Any, Any], concepts: set[str] | None, report: Report) -> None:
    relations = data.get("relations")
    if concepts is None or not isinstance(relations, list):
        return
    known = sorted(concepts)
    for i, rel in enumerate(relations):
        if not isinstance(rel, dict):
            continue
        for key in ("from", "to"):  # QA s32: an unknown `from` was "relation to unknown concept"
            target = rel.get(key)
            if isinstance(target, str) and target.strip() and target.strip().casefold() not in concepts:
                report(("relations", i, key),
                       f"relation {key} unknown concept {target!r}{_suggest(target, known)}; concepts: {', '.join(known)}")


def _check_anchors(data: Mapping[Any, Any], report: Report, line: Callable[[PathKey], int | None]) -> None:
    protect = data.get("protect")
    anchors = protect.get("anchors") if isinstance(protect, dict) else None
    if not isinstance(anchors, list):
        return
    names: dict[str, int] = {}
    for i, anchor in enumerate(anchors):
        if not isinstance(anchor, dict):
            continue
        name = anchor.get("name")
        if isinstance(name, str) and name.strip():
            if name in names:
                report(("protect", "anchors", i, "name"), f"duplicate anchor name {name!r} (first defined at line {names[name]})")
            else:
                names[name] = line(("protect", "anchors", i, "name")) or 0
        pattern = anchor.get("pattern")
        flags = 0
        raw_flags = anchor.get("flags")
        if isinstance(raw_flags, list):
            for f in raw_flags:
                flags |= REGEX_FLAGS.get(f, 0) if isinstance(f, str) else 0
        if not isinstance(pattern, str) or not pattern.strip():
            continue
        control = _control_character(pattern)
        if control:
            report(("protect", "anchors", i, "pattern"), control)
            continue
        try:
            regex = re.compile(pattern, flags)
        except re.error:
            continue  # reported by the schema
        if _max_width(pattern, flags) == 0:  # lookarounds alone: '(?=EUR)' marks a place, keeps nothing
            report(("protect", "anchors", i, "pattern"),
                   "pattern matches only empty text (lookarounds or anchors alone); an anchor must match the "
                   "text to keep")
            continue
        if regex.fullmatch("") is not None or any(m.end() == m.start() for m in regex.finditer(_EMPTY_MATCH_PROBE)):
            report(("protect", "anchors", i, "pattern"),
                   "pattern can match the empty string; an anchor must match the text to keep")
            continue
        problem = _backtracking(regex)
        if problem:
            report(("protect", "anchors", i, "pattern"), problem)


# what a YAML double-quoted scalar turns a regex escape into: "\bID\b" holds two backspaces
_YAML_ESCAPES = {"\x00": "\\0", "\x07": "\\a", "\x08": "\\b", "\x0b": "\\v", "\x0c": "\\f",
                 "\x0d": "\\r", "\x1b": "\\e"}
_SINGLE_QUOTES_HINT = ("write regexes in single quotes, where a backslash stays a backslash "
                       "('\\bIR-\\d{4}\\b', not \"\\bIR-\\d{4}\\b\")")


def _control_character(pattern: str) -> str | None:
    """The problem of a pattern holding a C0 control character other than tab and newline, or None.
    It is almost always a regex escape that YAML double quotes read as their own ("\\b" is U+0008),
    and the pattern then never matches what it was written for; one that is meant (ESC of an ANSI
    colour code) is written as its regex escape in single quotes ('\\x1b'), which the message says."""
    for ch in pattern:
        if ord(ch) < 0x20 and ch not in "\t\n":
            escape = _YAML_ESCAPES.get(ch)
            was = f" (a YAML double-quoted {escape})" if escape else ""
            return (f"pattern holds a control character U+{ord(ch):04X}{was}; {_SINGLE_QUOTES_HINT}; to match "
                    f"this character on purpose, write its regex escape in single quotes ('\\x{ord(ch):02x}')")
    return None


def _backtracking(regex: re.Pattern[str]) -> str | None:
    """The problem of a pattern that backtracks catastrophically (see ``backtracking_probe``), or None."""
    # a verdict per pattern text: a batch loads its ontology in each worker, a service may load it per call
    # (the main thread's only: elsewhere the probe's timer cannot arm, and its None proves nothing)
    key = (regex.pattern, regex.flags)
    if key in _BACKTRACKING:
        return _BACKTRACKING[key]
    problem = _backtracking_problem(regex)
    if threading.current_thread() is threading.main_thread():
        if len(_BACKTRACKING) >= 4096:
            _BACKTRACKING.clear()
        _BACKTRACKING[key] = problem
    return problem


_BACKTRACKING: dict[tuple[str, int], str | None] = {}


def _backtracking_problem(regex: re.Pattern[str]) -> str | None:
    ambiguous = ambiguous_alternation(regex)
    if ambiguous is not None:
        text, words = ambiguous
        spelt = f": {text!r} is" if text else " text is"
        return (f"pattern backtracks catastrophically: a repetition of {'|'.join(words)!r}{spelt} spelt by its "
                "branches in more than one way, so a run of it that fails to match is tried every way; rewrite "
                "the branches so that no text splits into them two ways (e.g. '(a|aa)+' as 'a+')")
    probe = backtracking_probe(regex)
    if probe is None:
        return None
    return (f"pattern backtracks catastrophically: searching {probe[:-1][:12]!r}… ({len(probe) - 1} characters) "
            "took over 0.5 s (a repetition inside a repetition, as in '(a+)+'); rewrite it (e.g. '(a+)+' as 'a+')")


def _max_width(pattern: str, flags: int) -> int | None:
    """The most characters a match of *pattern* can span (None when the parser is unavailable)."""
    try:
        import re._parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover
        import sre_parse  # type: ignore[no-redef]
    try:
        return int(sre_parse.parse(pattern, flags).getwidth()[1])
    except Exception:  # pragma: no cover - a private API: never fail a check on it
        return None


def _check_roles(data: Mapping[Any, Any], report: Report, line: Callable[[PathKey], int | None]) -> None:
    roles = data.get("roles")
    if not isinstance(roles, dict):
        return
    for role_name, role in roles.items():
        if not isinstance(role, dict):
            continue
        slip = any(_closest_key(str(k), known_keys_at(("roles", role_name))) == "budget"
                   for k in role if k not in known_keys_at(("roles", role_name)))
        if role_name not in PRESET_ROLES and role.get("budget") is None and not slip:  # a slip: said at the unknown key
            report(("roles", role_name, "budget"), f"required key 'budget' is missing: {_not_a_preset(role_name)}")
        first: dict[str, tuple[str, int]] = {}
        for list_name in ("required", "optional", "forbidden"):
            layers = role.get(list_name)
            if not isinstance(layers, list):
                continue
            for i, layer in enumerate(layers):
                if not isinstance(layer, str) or layer not in LAYERS:
                    continue
                path = ("roles", role_name, list_name, i)
                if list_name == "forbidden" and layer == "instruction":
                    report(path, "layer 'instruction' cannot be forbidden: the instruction layer is always "
                                 "delivered (pinned first, never compressed)")
                    continue
                if layer in first:
                    where, at = first[layer]
                    if where == list_name:
                        report(path, f"layer {layer!r} is listed twice (first at line {at})")
                    else:
                        report(path, f"layer {layer!r} is both {where} (line {at}) and {list_name}")
                else:
                    first[layer] = (list_name, line(path) or 0)


def _check_abbreviations(data: Mapping[Any, Any], report: Report, line: Callable[[PathKey], int | None]) -> None:
    table = data.get("abbreviations")
    if not isinstance(table, dict):
        return
    pairs = [(k, v) for k, v in table.items() if isinstance(k, str) and isinstance(v, str) and k.strip() and v.strip()]

    def norm(text: str) -> str:
        return " ".join(text.split()).casefold()

    keys: dict[str, str] = {}
    expansions: dict[str, str] = {}
    for key, value in pairs:
        nk, nv = norm(key), norm(value)
        at = ("abbreviations", key)
        if nk in keys:
            other = keys[nk]
            report(at, f"abbreviation {key!r} clashes with {other!r} (line {line(('abbreviations', other))}) when case is ignored")
        if nv in expansions:
            other = expansions[nv]
            report(at, f"ambiguous abbreviation: {key!r} and {other!r} (line {line(('abbreviations', other))}) "
                       f"both expand to {value!r}, so {value!r} has no single short form")
        keys.setdefault(nk, key)
        expansions.setdefault(nv, key)
    for key, value in pairs:
        nk = norm(key)
        for other, other_value in pairs:
            if other != key and norm(other_value) == nk:
                report(("abbreviations", key),
                       f"ambiguous abbreviation: {key!r} is also the expansion of {other!r} "
                       f"(line {line(('abbreviations', other))}), so it cannot be expanded unambiguously")
                break


def _check_state(data: Mapping[Any, Any], report: Report) -> None:
    state = data.get("state")
    if not isinstance(state, dict):
        return
    if state.get("type") == "object" and isinstance(state.get("properties"), dict):
        # a whole JSON Schema written where its properties go: one clear message, not three that
        # contradict each other ("'object' is not of type 'object'")
        report(("state",), "takes the properties of the task state directly, not a whole JSON Schema: move the "
               "entries under state.properties up to state, and leave out type, required and additionalProperties "
               "(the plan makes it an object of those properties, additionalProperties false)")
        return
    from jsonschema import Draft202012Validator

    meta = Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
    names = tuple(k for k in state if isinstance(k, str))
    for prop, schema in state.items():
        if not isinstance(prop, str):
            continue
        errors = sorted(meta.iter_errors(schema), key=lambda e: [str(p) for p in e.path])
        for error in errors:
            sub = tuple(error.path)
            message = f"not a valid JSON Schema: {error.message}"
            if error.validator == "format" and error.validator_value == "regex" and isinstance(error.instance, str):
                if sub and sub[-1] == "patternProperties":
                    sub += (error.instance,)
                message = _python_regex_problem(error.instance)
            elif sub and sub[-1] == "type" and not isinstance(error.instance, list):
                hint = _suggest(error.instance, _JSON_TYPES) if isinstance(error.instance, str) else ""
                message = (f"not a valid JSON Schema: {error.instance!r} is not a JSON type{hint}; "
                           f"types: {', '.join(_JSON_TYPES)}")
            report(("state", prop) + sub, message)
        # a typo ('patern') or a $ref that does not resolve passes the meta-schema
        for sub, message in state_schema.schema_problems(prop, schema, siblings=tuple(n for n in names if n != prop)):
            report(("state", prop) + sub, message)
        for path, pattern in state_schema.patterns(schema):
            control = _control_character(pattern)
            if control:
                report(("state", prop) + path, control)
                continue
            try:
                regex = re.compile(pattern)
            except re.error:
                continue  # the meta-schema above said so ("is not a 'regex'")
            problem = _backtracking(regex)  # a state value is checked against it at every handoff: it would hang there
            if problem:
                report(("state", prop) + path, problem)


def _python_regex_problem(pattern: str) -> str:
    """Why *pattern* is not a Python ``re`` pattern (what the validator uses for ``pattern``)."""
    try:
        re.compile(pattern)
    except re.error as exc:
        why = str(exc)
    else:  # pragma: no cover - the meta-schema's format check compiles it the same way
        why = "refused by the JSON Schema format check"
    hint = ecma_hint(pattern) or "; state schema patterns use Python `re` syntax"
    return f"not a Python `re` regular expression ({why}){hint}"


def _check_pipeline(data: Mapping[Any, Any], report: Report) -> None:
    pipeline = data.get("pipeline")
    if not isinstance(pipeline, dict):
        return
    for stage, section in pipeline.items():
        off = section is False or (isinstance(section, dict) and section.get("enabled") is False)
        if stage in ESSENTIAL_STAGES and off:
            report(("pipeline", stage), f"stage {stage!r} cannot be switched off (without it there is no output)")
    sections = {k: v for k, v in pipeline.items() if k in STAGE_NAMES and isinstance(v, dict)
                and all(isinstance(o, str) for o in v)}
    if any(set(v) - {"enabled"} for v in sections.values()):
        for path, message in _stage_option_problems(sections):
            report(("pipeline",) + path, message)


def _stage_option_problems(sections: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """The pipeline's :func:`~odcf.pipeline.stage_option_problems`: options are checked against the
    stages' own signatures, which only the stage classes know. Imported here, against the usual
    direction, so that `odcf ontology check`, `odcf plan` and a run refuse the same file with the
    same ``FILE:LINE`` problems; only a file that sets stage options loads the stage modules."""
    from odcf.pipeline import stage_option_problems

    try:
        return stage_option_problems(sections)
    except OdcfError:  # pragma: no cover - a stage module missing from this build: building the pipeline says so
        return []


def _whole_file_problems(data: Mapping[Any, Any], lines: dict[PathKey, int], source: str) -> list[Problem]:
    out: list[Problem] = []

    def line(path: PathKey) -> int | None:
        return _line(lines, path)

    def report(path: PathKey, message: str) -> None:
        out.append(Problem(source, line(path), format_path(_str_path(path)), message))

    concepts = _check_concepts(data, report, line)
    _check_relations(data, concepts, report)
    _check_anchors(data, report, line)
    _check_roles(data, report, line)
    _check_abbreviations(data, report, line)
    _check_state(data, report)
    _check_pipeline(data, report)
    return out


# -- public API -----------------------------------------------------------------------------------
def anchor_timeout_error(source_file: str | None, anchors: Sequence[str], name: str, message: str
                         ) -> PatternTimeoutError:
    """The error of anchor *name* (one of the plan's *anchors*, in order) that ran past its time limit:
    ``FILE:LINE: protect.anchors[i].pattern: message`` when the plan came from *source_file* and the file
    still reads, *message* alone otherwise."""
    index = anchors.index(name) if name in anchors else None
    if source_file is None or index is None:
        return PatternTimeoutError(message)
    path: PathKey = ("protect", "anchors", index, "pattern")
    try:
        _data, lines, _problems = _parse_yaml(Path(source_file).read_bytes(), source_file)
    except OSError:
        lines = {}
    return PatternTimeoutError([Problem(source_file, _line(lines, path), format_path(_str_path(path)), message)])


def loads_ontology(text: str | bytes, source: str = "<string>") -> Ontology:
    """Validate an ontology given as YAML text; *source* names it in problems."""
    raw = text.encode("utf-8") if isinstance(text, str) else text
    data, lines, problems = _parse_yaml(raw, source)
    if data is None:
        raise OntologyError(problems)
    ontology: Ontology | None = None
    try:
        ontology = Ontology.model_validate(data)
    except ValidationError as exc:
        problems.extend(_pydantic_problems(exc, lines, source, data))
    problems.extend(_whole_file_problems(data, lines, source))
    if problems or ontology is None:
        raise OntologyError(_sorted_unique(problems))
    ontology._source = source
    ontology._lines = {_str_path(k): v for k, v in lines.items()}
    return ontology


def load_ontology(path_or_name: str | os.PathLike[str]) -> Ontology:
    """Load a ``task_ontology.yaml`` file, or a bundled ontology by name (``"legal_contract"``)."""
    if not isinstance(path_or_name, (str, os.PathLike)):
        raise OntologyError(f"ontology must be a bundled ontology name or a YAML path, "
                            f"got {type(path_or_name).__name__} {path_or_name!r}")
    target = _locate(path_or_name)
    try:
        raw = target.read_bytes()
    except OSError as exc:
        raise OntologyError(f"{path_or_name}: cannot read the ontology: {exc.strerror or exc}") from exc
    source = str(path_or_name) if isinstance(target, Path) else str(target)
    return loads_ontology(raw, source=source)


def resolve_ontology(name_or_path: str | os.PathLike[str]) -> Path:
    """The file behind *name_or_path*: an existing path, or a bundled ontology's name (without
    ``.yaml``: a name with the suffix or a folder is a file, which must exist)."""
    target = _locate(name_or_path)
    return target if isinstance(target, Path) else Path(str(target))


def list_bundled() -> list[tuple[str, str]]:
    """``(name, description)`` of every bundled ontology, sorted by name."""
    out: list[tuple[str, str]] = []
    for entry in sorted(_bundled_files(), key=lambda e: e.name):
        description = ""
        try:
            data = yaml.load(entry.read_text(encoding="utf-8"), Loader=_LineLoader)  # noqa: S506 - safe subclass
            if isinstance(data, dict) and isinstance(data.get("description"), str):
                description = " ".join(data["description"].split())
        except (yaml.YAMLError, UnicodeDecodeError, OSError):  # pragma: no cover - bundled files are tested
            logger.warning("bundled ontology %s does not parse", entry.name)
        out.append((entry.name.rsplit(".", 1)[0], description))
    return out


def bundled_names() -> list[str]:
    """Names of the bundled ontologies (what ``--ontology NAME`` accepts), sorted."""
    return [name for name, _ in list_bundled()]


def _bundled_dir() -> Traversable:
    return resources.files("odcf").joinpath("data", "ontologies")


def _bundled_files() -> list[Traversable]:
    folder = _bundled_dir()
    if not folder.is_dir():  # pragma: no cover - a broken install
        return []
    return [e for e in folder.iterdir() if e.is_file() and e.name.endswith(_SUFFIXES)]


def _locate(name_or_path: str | os.PathLike[str]) -> Path | Traversable:
    """The file *name_or_path* names, or the bundled ontology of that name. A name with a ``.yaml`` or
    ``.yml`` suffix or a folder in it is a file name: a bundled ontology is named without either."""
    if not str(name_or_path).strip():  # Path("") is ".", the working folder
        raise OntologyError(f"no ontology named: got {str(name_or_path)!r}; give a bundled ontology's name "
                            f"({', '.join(bundled_names())}) or a file")
    path = Path(name_or_path)
    if path.is_file():
        return path
    if path.is_dir():
        raise OntologyError(f"{path}: is a directory, not an ontology file")
    name = str(name_or_path)
    suffix = next((s for s in _SUFFIXES if name.endswith(s)), "")
    if suffix or "/" in name or os.sep in name:
        stem = name[: -len(suffix)] if suffix else ""
        bundled = stem in bundled_names() if stem else False
        hint = f" (the bundled ontology of that name is {stem!r}, without {suffix!r})" if bundled else ""
        raise OntologyError(f"{name}: no such ontology file{hint}")
    for entry in _bundled_files():
        if entry.name in (f"{name}.yaml", f"{name}.yml"):
            return entry
    listed = ", ".join(bundled_names()) or "none"
    raise OntologyError(f"{name}: no such ontology file, and no bundled ontology of that name (bundled: {listed})")


def _sorted_unique(problems: list[Problem]) -> list[Problem]:
    seen: set[Problem] = set()
    unique = [p for p in problems if not (p in seen or seen.add(p))]
    return sorted(unique, key=lambda p: (p.line if p.line is not None else 0, p.path))


#: The largest role budget `odcf ontology check` takes without a warning, in tokens (and about 4 bytes a
#: token for a role counted in bytes): more than the context window of any model one could deliver to.
MAX_SENSIBLE_BUDGET = 2_000_000


def check_warnings(ontology: Ontology) -> list[Problem]:
    """What is valid in *ontology* but likely a slip, for `odcf ontology check` to warn of (never an
    error: the file loads and runs): a role budget over :data:`MAX_SENSIBLE_BUDGET` tokens, e.g.
    ``roles.reviewer.budget: 50000000 tokens is more than any model's context window …``."""
    out: list[Problem] = []
    for name, role in ontology.roles.items():
        in_bytes = role.unit == "bytes"
        limit = MAX_SENSIBLE_BUDGET * (4 if in_bytes else 1)
        if role.budget is not None and role.budget > limit:
            unit = "bytes" if in_bytes else "tokens"
            out.append(ontology.problem(
                ("roles", name, "budget"),
                f"warning: {role.budget} {unit} is more than any model's context window (odcf warns above "
                f"{limit} {unit}); a slip of a few zeros?"))
    return out
