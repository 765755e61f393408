"""Checks of the ``state:`` JSON Schemas beyond the draft 2020-12 meta-schema, which accepts any
key (a typo such as ``patern`` is an unknown keyword, silently ignored) and any ``$ref`` (one that
does not resolve fails only when a value is checked, at a handoff).

Each state property's schema is a document of its own: a ``$ref`` resolves within it
(``'#/$defs/NAME'``, with the definitions under the property's ``$defs``). The compiled plan gives
such a schema an ``$id`` (:func:`property_uri`) so that the validator resolves it the same way.

>>> schema = {"$ref": "#/$defs/dec", "$defs": {"dec": {"enun": ["accept", "decline"]}}}
>>> for path, message in schema_problems("decision", schema):
...     print(".".join(path), "-", message.split(":")[0])
$defs.dec.enun - unknown JSON Schema keyword 'enun' (did you mean 'enum'?)
"""
from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

SchemaPath = tuple[Any, ...]

JSON_SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"

#: The keywords of draft 2020-12, by vocabulary.
KEYWORDS: tuple[str, ...] = (
    # core
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
    # applicator
    "prefixItems", "items", "contains", "additionalProperties", "properties", "patternProperties",
    "dependentSchemas", "propertyNames", "if", "then", "else", "allOf", "anyOf", "oneOf", "not",
    # unevaluated
    "unevaluatedItems", "unevaluatedProperties",
    # validation
    "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains", "minContains",
    "maxProperties", "minProperties", "required", "dependentRequired",
    # meta-data, format, content
    "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
    "format", "contentEncoding", "contentMediaType", "contentSchema",
)
#: Keywords a state schema does not take, and why (the rest of KEYWORDS are supported).
UNSUPPORTED: dict[str, str] = {
    "$id": "each state property's schema is a document of its own, identified by odcf; "
           "refer to its parts with '#/$defs/NAME'",
    "$vocabulary": "it belongs in a meta-schema, not in a state schema",
    "$dynamicRef": "use '$ref'",
    "$dynamicAnchor": "use '$anchor'",
}
#: Keywords of older drafts, which draft 2020-12 ignores: what to write instead.
OLD_KEYWORDS: dict[str, str] = {
    "definitions": "use '$defs'",
    "dependencies": "use 'dependentRequired' (lists of names) or 'dependentSchemas' (schemas)",
    "$recursiveRef": "use '$ref'",
    "$recursiveAnchor": "use '$anchor'",
}
_NAMED_SCHEMAS = ("properties", "patternProperties", "$defs", "dependentSchemas")   # name -> schema
_SCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf")
_ONE_SCHEMA = ("items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
               "unevaluatedItems", "unevaluatedProperties", "contentSchema")
#: Keywords whose subschemas apply to the same value (a ``$ref`` loop through them never ends).
_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")


def property_uri(name: str) -> str:
    """The ``$id`` the compiled plan gives the schema of state property *name* when it holds a
    ``$ref``: its refs then resolve within it, not within the whole state object."""
    return "urn:odcf:state:" + quote(name, safe="")


def uses_refs(schema: Any) -> bool:
    """Whether *schema* holds a ``$ref`` in any of its subschemas."""
    return any("$ref" in node for _, node in subschemas(schema))


def subschemas(schema: Any, path: SchemaPath = ()) -> Iterator[tuple[SchemaPath, dict[Any, Any]]]:
    """Every schema object of *schema* (itself included) with its path; values that are data
    (``enum``, ``const``, ``default``, ``examples``) and annotations are not entered."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key, value in schema.items():
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            for name, sub in value.items():
                yield from subschemas(sub, path + (key, name))
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for i, sub in enumerate(value):
                yield from subschemas(sub, path + (key, i))
        elif key in _ONE_SCHEMA:
            yield from subschemas(value, path + (key,))


def patterns(schema: Any) -> list[tuple[SchemaPath, str]]:
    """Every regular expression of *schema* (``pattern`` values and ``patternProperties`` keys)."""
    out: list[tuple[SchemaPath, str]] = []
    for path, node in subschemas(schema):
        if isinstance(node.get("pattern"), str):
            out.append((path + ("pattern",), node["pattern"]))
        if isinstance(node.get("patternProperties"), dict):
            out.extend((path + ("patternProperties", k), k) for k in node["patternProperties"] if isinstance(k, str))
    return out


def schema_problems(name: str, schema: Any, *, siblings: tuple[str, ...] = ()) -> list[tuple[SchemaPath, str]]:
    """``(path within the schema, message)`` for every unknown or unsupported keyword of the
    schema of state property *name*, and every ``$ref`` that does not resolve within it or loops
    back to itself. *siblings* are the other state properties (for a hint)."""
    out: list[tuple[SchemaPath, str]] = []
    for path, node in subschemas(schema):
        for key in node:
            message = _keyword_problem(key, node[key])
            if message:
                out.append((path + (key,), message))
    out.extend(_ref_problems(name, schema, siblings))
    return out


def _keyword_problem(key: Any, value: Any) -> str | None:
    if not isinstance(key, str):
        return f"a JSON Schema keyword is a string, got {key!r}"
    if key.startswith("x-"):
        return None  # the custom annotation convention
    if key in UNSUPPORTED:
        return f"{key!r} is not supported in a state schema: {UNSUPPORTED[key]}"
    if key == "$schema":
        if value == JSON_SCHEMA_DRAFT:
            return None
        return f"the state schema is JSON Schema draft 2020-12 ('{JSON_SCHEMA_DRAFT}'); remove '$schema'"
    if key in OLD_KEYWORDS:
        return f"{key!r} is a keyword of an older draft, which draft 2020-12 ignores: {OLD_KEYWORDS[key]}"
    if key in KEYWORDS:
        return None
    lowered = {k.lower(): k for k in KEYWORDS}
    close = [lowered[key.lower()]] if key.lower() in lowered else difflib.get_close_matches(key, KEYWORDS, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown JSON Schema keyword {key!r}{hint}: it would be ignored; a custom annotation starts with 'x-'"


def _ref_problems(name: str, schema: Any, siblings: tuple[str, ...]) -> list[tuple[SchemaPath, str]]:
    refs = [(path, node["$ref"]) for path, node in subschemas(schema) if isinstance(node.get("$ref"), str)]
    if not refs:
        return []
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    uri = property_uri(name)
    root = {**schema, "$id": uri}
    resolver = Registry().with_resource(uri, DRAFT202012.create_resource(root)).crawl().resolver(base_uri=uri)
    out: list[tuple[SchemaPath, str]] = []
    targets: dict[int, Any] = {}   # id of a schema holding a $ref -> what it resolves to
    for path, ref in refs:
        at = path + ("$ref",)
        if not ref.startswith("#"):
            out.append((at, _OUTSIDE.format(ref=ref)))
            continue
        try:
            target = resolver.lookup(ref).contents
            target = schema if target is root else target   # '#': the schema itself, not its copy with the $id
        except (Unresolvable, LookupError, TypeError, ValueError) as exc:
            sibling = any(ref.startswith(f"#/properties/{s}") for s in siblings)
            out.append((at, f"$ref {ref!r} does not resolve ({_why(exc)}); {_SIBLING if sibling else _WITHIN}"))
            continue
        targets[id(_node_at(schema, path))] = target
    for path in _loops(schema, lambda node: targets.get(id(node))):
        ref = _node_at(schema, path)["$ref"]
        out.append((path + ("$ref",), _LOOP.format(ref=ref)))
    return out


_OUTSIDE = ("$ref {ref!r} points outside this schema: a state schema fetches no documents; refer to a part "
            "of this property's own schema, as '#/$defs/NAME' with the definition under its '$defs'")
_WITHIN = "a $ref resolves within this property's own schema, e.g. '#/$defs/NAME' with the definition under its '$defs'"
_SIBLING = ("a $ref resolves within this property's own schema, not the whole state object: put the shared "
            "schema under '$defs'")
_LOOP = "$ref {ref!r} leads back to itself without going into the value (checking any value would never end)"


def _why(exc: Exception) -> str:
    from referencing.exceptions import NoSuchAnchor, PointerToNowhere

    if isinstance(exc, PointerToNowhere):
        return f"nothing at {exc.ref!r}"
    if isinstance(exc, NoSuchAnchor):
        return f"no '$anchor' named {exc.anchor!r}"
    return type(exc).__name__


def _node_at(schema: Any, path: SchemaPath) -> Any:
    for part in path:
        schema = schema[part]
    return schema


def _loops(schema: Any, target_of: Callable[[Any], Any]) -> list[SchemaPath]:
    """Paths of the schemas whose ``$ref`` closes a loop of references and in-place applicators
    (``allOf``, ``not``, ``if``, …): a loop that never enters a part of the value."""
    paths = {id(node): path for path, node in subschemas(schema)}
    done: set[int] = set()
    stack: list[Any] = []          # the schemas being visited, each entered from the one before it
    by_ref: list[bool] = []        # whether each was entered through a $ref
    closing: list[SchemaPath] = []

    def in_place(node: dict[Any, Any]) -> Iterator[tuple[bool, Any]]:
        target = target_of(node)
        if target is not None:
            yield True, target
        for key in _IN_PLACE:
            value = node.get(key)
            if isinstance(value, list):
                yield from ((False, v) for v in value)
            elif key == "dependentSchemas" and isinstance(value, dict):
                yield from ((False, v) for v in value.values())
            elif value is not None:
                yield False, value

    def visit(node: Any, through_ref: bool) -> None:
        stack.append(node)
        by_ref.append(through_ref)
        for ref_edge, child in in_place(node):
            if not isinstance(child, dict) or id(child) in done:
                continue
            on_stack = [i for i, n in enumerate(stack) if n is child]
            if on_stack:  # a loop: report the last schema in it that left through its $ref
                entered = list(zip(stack[on_stack[0]:], by_ref[on_stack[0] + 1:] + [ref_edge]))
                sources = [n for n, ref in entered if ref and id(n) in paths]
                if sources:
                    closing.append(paths[id(sources[-1])])
                continue
            visit(child, ref_edge)
        stack.pop()
        by_ref.pop()
        done.add(id(node))

    for _, node in subschemas(schema):
        if id(node) not in done:
            visit(node, False)
    return sorted(set(closing), key=lambda p: [str(x) for x in p])


__all__ = ["JSON_SCHEMA_DRAFT", "KEYWORDS", "patterns", "property_uri", "schema_problems", "subschemas", "uses_refs"]
