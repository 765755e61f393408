"""The frozen Plan an ontology compiles to. Serializable, hashable, versioned.

A plan carries no I/O and no models: only rerank queries, protection rules, the
state schema, the abbreviation table, role contracts and stage switches.

>>> from odcf.plan.model import Plan, RoleContract
>>> plan = Plan(domain="demo", roles={"writer": RoleContract(name="writer", budget=800)})
>>> plan.role("writer").budget
800
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from odcf.document import to_plain
from odcf.errors import InvalidPlanError, PlanError
from odcf.frozen import EMPTY as _EMPTY
from odcf.frozen import FrozenMap
from odcf.textutil import check_fields, json_kind, quote_pattern

PLAN_FORMAT = 1


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return FrozenMap({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value



@dataclass(frozen=True)
class Concept:
    name: str
    description: str = ""
    keywords: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Relation:
    source: str
    target: str
    type: str


@dataclass(frozen=True)
class RerankQuery:
    """A query text that segments are scored against; ``name`` is a concept or ``task``."""

    name: str
    text: str
    terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Anchor:
    """A protection pattern: every match is kept verbatim."""

    name: str
    pattern: str
    flags: int = 0

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern, self.flags)


@dataclass(frozen=True)
class ProtectionRules:
    anchors: tuple[Anchor, ...] = ()
    terms: tuple[str, ...] = ()
    connectives: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    markers: tuple[str, ...] = ()


@dataclass(frozen=True)
class RoleContract:
    """What a role must, may and must not see, and its budget.

    ``optional`` is in priority order: the last entry is trimmed first.
    ``unit`` is a tokenizer name (``o200k_base``, ``cl100k_base``, ``hf:PATH``) or ``bytes``.
    """

    name: str
    budget: int
    required: tuple[str, ...] = ("instruction",)
    optional: tuple[str, ...] = ("fact", "state", "history")
    forbidden: tuple[str, ...] = ("reasoning",)
    unit: str | None = None
    categories: tuple[str, ...] = ()

    def priority_of(self, layer: str) -> int | None:
        """0 for required layers, 1.. for optional ones in order, None when forbidden/unlisted."""
        if layer in self.required:
            return 0
        if layer in self.optional:
            return 1 + self.optional.index(layer)
        return None


DEFAULT_ROLE = RoleContract(name="default", budget=4000)


def schema_problems(data: Any, schema: Mapping[str, Any]) -> list[str]:
    """Every violation of *schema* (JSON Schema draft 2020-12, e.g. a plan's ``state_schema``) by
    *data*, as ``/json/pointer: message``, in a stable order; ``[]`` when it validates or when
    *schema* is empty."""
    return [f"/{'/'.join(map(str, v.path))}: {v.message}" for v in schema_violations(data, schema)]


@dataclass(frozen=True)
class SchemaViolation:
    """One violation: the JSON path of the failing value (keys and indices), the keywords that
    failed (with those under a failing ``anyOf``/``oneOf``), and jsonschema's message."""

    path: tuple[str | int, ...]
    keywords: frozenset[str]
    message: str


def schema_violations(data: Any, schema: Mapping[str, Any]) -> list[SchemaViolation]:
    """:func:`schema_problems` with the path and the failing keywords of each violation kept apart."""
    if not schema:
        return []
    from referencing.exceptions import Unresolvable

    from odcf.textutil import RegexTimeout, regex_time_limit

    validator = _validator_class()(to_plain(schema))
    try:
        # a schema's "pattern" is a regular expression from the user: one that backtracks
        # catastrophically on a value would hang here (`odcf ontology check` refuses the common cases)
        with regex_time_limit(SCHEMA_SECONDS):
            errors = sorted(validator.iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    except RegexTimeout:
        return [SchemaViolation((), frozenset({"pattern"}),
                                f"checking the value against the state schema ran past {SCHEMA_SECONDS:g} s: "
                                "a \"pattern\" of the schema backtracks catastrophically; rewrite it")]
    except (Unresolvable, RecursionError) as exc:
        # a plan read from JSON is not checked as an ontology is (`odcf ontology check` refuses these)
        why = ("a $ref leads back to itself" if isinstance(exc, RecursionError)
               else f"$ref {getattr(exc, 'ref', '?')!r} does not resolve")
        raise PlanError(f"the plan's state schema cannot be used: {why}") from None
    return [SchemaViolation(tuple(e.absolute_path), frozenset(_keywords(e)), e.message) for e in errors]


@functools.lru_cache(maxsize=1)
def _validator_class() -> Any:
    r"""Draft 2020-12, with ``pattern`` read as JSON Schema means it (ECMA-262): ``$`` is the end of
    the value, so ``^INC-\d{4,6}$`` refuses "INC-20417\n" (Python's ``$`` also matches before a final
    line break). The syntax stays Python ``re``; a message quotes a pattern as written (:func:`quote_pattern`)."""
    from jsonschema import Draft202012Validator, ValidationError, validators

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "string") and re.search(ecma_end(patrn), instance) is None:
            yield ValidationError(f"{instance!r} does not match {quote_pattern(patrn)}")

    additional = Draft202012Validator.VALIDATORS["additionalProperties"]

    def additional_properties(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        # jsonschema lists the patternProperties regexes as Python reprs ('^X-\\d+$'): quote them as written
        regexes = sorted(schema.get("patternProperties") or ()) if isinstance(schema, Mapping) else []
        as_repr = ", ".join(repr(r) for r in regexes)
        for error in additional(validator, value, instance, schema):
            if regexes and error.message.endswith(f"regexes: {as_repr}"):
                error.message = error.message[: -len(as_repr)] + ", ".join(quote_pattern(r) for r in regexes)
            yield error

    return validators.extend(Draft202012Validator, {"pattern": pattern, "additionalProperties": additional_properties})


@functools.lru_cache(maxsize=256)
def ecma_end(pattern: str) -> str:
    r"""*pattern* with each ``$`` that ends the text (not escaped, not in a character class) made to
    match only at the very end, as in ECMA-262 without the m flag; a pattern that turns multi-line
    mode on (``(?m``) is left as it is.

    >>> ecma_end(r"^INC-\d+$"), ecma_end(r"[$]\$x$"), ecma_end("(?m)^a$")
    ('^INC-\\d+(?!\\n)$', '[$]\\$x(?!\\n)$', '(?m)^a$')
    """
    if "(?m" in pattern or "$" not in pattern:
        return pattern
    out: list[str] = []
    escaped = in_class = False
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "$":
            out.append("(?!\\n)$")
            continue
        out.append(ch)
    return "".join(out)


def _keywords(error: Any) -> list[str]:
    return [str(error.validator), *(k for sub in error.context or () for k in _keywords(sub))]


#: The time limit on checking one value against a state schema (its patterns are the user's).
SCHEMA_SECONDS = 5.0


@dataclass(frozen=True)
class Plan:
    """Everything the stages need to know about a domain, compiled once."""

    domain: str
    description: str = ""
    language: str = "auto"
    task_goal: str | None = None
    concepts: tuple[Concept, ...] = ()
    relations: tuple[Relation, ...] = ()
    queries: tuple[RerankQuery, ...] = ()
    protection: ProtectionRules = field(default_factory=ProtectionRules)
    state_schema: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    abbreviations: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    roles: Mapping[str, RoleContract] = field(default_factory=lambda: _EMPTY)
    tokenizer: str = "o200k_base"
    pipeline: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    source_file: str | None = field(default=None, compare=False)
    format: int = PLAN_FORMAT
    #: The roles the ontology itself declares, in its order (set by the compiler; not part of the plan's
    #: JSON or hash: ``None`` on a plan read back from JSON, whose presets :meth:`preset_roles` tells apart
    #: by their contract).
    declared_roles: tuple[str, ...] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "state_schema", _freeze(dict(self.state_schema)))
        object.__setattr__(self, "abbreviations", FrozenMap(dict(self.abbreviations)))
        object.__setattr__(self, "roles", FrozenMap(dict(self.roles)))
        object.__setattr__(self, "pipeline", _freeze(dict(self.pipeline)))

    # -- use -------------------------------------------------------------
    def role(self, name: str | None) -> RoleContract:
        """The contract of *name*; ``None`` gives the default contract."""
        if name is None:
            return self.roles.get("default", DEFAULT_ROLE)
        if not isinstance(name, str):
            raise PlanError(f"role must be a role name (a string), got {type(name).__name__} {name!r}")
        try:
            return self.roles[name]
        except KeyError:
            import difflib

            presets = self.preset_roles()
            declared = self.own_roles()
            close = difflib.get_close_matches(name, declared, n=1, cutoff=0.6) or \
                difflib.get_close_matches(name, presets, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            known = f"declared: {', '.join(declared) or 'none'}"
            if presets:
                known += f"; shipped presets: {', '.join(presets)}"
            raise PlanError(f"unknown role {name!r} for domain {self.domain!r} ({hint}{known})") from None

    def own_roles(self) -> list[str]:
        """The roles of this plan that its ontology declares (in its order; sorted on a plan read back from
        JSON): all but :meth:`preset_roles`."""
        if self.declared_roles is not None:
            return [r for r in self.declared_roles if r in self.roles]
        presets = self.preset_roles()
        return sorted(r for r in self.roles if r not in presets)

    def preset_roles(self) -> tuple[str, ...]:
        """The roles of this plan that come from odcf's shipped presets (:mod:`odcf.plan.presets`), not
        from the ontology: every role the ontology does not declare, or, on a plan read back from JSON,
        every role whose contract is the preset's own.

        >>> from odcf.plan.presets import ROLE_PRESETS
        >>> Plan(domain="d", roles={"triage": RoleContract("triage", budget=300), "writer": ROLE_PRESETS["writer"]},
        ...      declared_roles=("triage",)).preset_roles()
        ('writer',)
        """
        from odcf.plan.presets import ROLE_PRESETS

        if self.declared_roles is not None:
            return tuple(r for r in self.roles if r not in self.declared_roles and r in ROLE_PRESETS)
        return tuple(r for r in self.roles if ROLE_PRESETS.get(r) == self.roles[r])

    def stage_option(self, stage: str, key: str, default: Any = None) -> Any:
        """An option from the ontology's ``pipeline`` section (``pipeline.rerank.enabled``)."""
        section = self.pipeline.get(stage)
        if isinstance(section, Mapping):
            return section.get(key, default)
        if key == "enabled" and isinstance(section, bool):
            return section
        return default

    # -- serialization ---------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "domain": self.domain,
            "description": self.description,
            "language": self.language,
            "task_goal": self.task_goal,
            "tokenizer": self.tokenizer,
            "concepts": [
                {"name": c.name, "description": c.description, "keywords": list(c.keywords),
                 "attributes": list(c.attributes)}
                for c in self.concepts
            ],
            "relations": [{"from": r.source, "to": r.target, "type": r.type} for r in self.relations],
            "queries": [{"name": q.name, "text": q.text, "terms": list(q.terms)} for q in self.queries],
            "protection": {
                "anchors": [{"name": a.name, "pattern": a.pattern, "flags": int(a.flags)} for a in self.protection.anchors],
                "terms": list(self.protection.terms),
                "connectives": list(self.protection.connectives),
                "entities": list(self.protection.entities),
                "markers": list(self.protection.markers),
            },
            "state_schema": to_plain(self.state_schema),
            "abbreviations": dict(self.abbreviations),
            "roles": {
                name: {
                    "budget": r.budget, "required": list(r.required), "optional": list(r.optional),
                    "forbidden": list(r.forbidden), "unit": r.unit, "categories": list(r.categories),
                }
                for name, r in self.roles.items()
            },
            "pipeline": to_plain(self.pipeline),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        """The plan a :meth:`to_dict` mapping (``odcf plan --format json``) describes. Raises
        :class:`InvalidPlanError` naming every field that is missing or of the wrong type.

        >>> Plan.from_dict({"domain": 5, "roles": {"w": {"budget": "80"}}})
        Traceback (most recent call last):
        ...
        odcf.errors.InvalidPlanError: not a valid plan: domain: expected a string, got a number (5); roles.w.budget: expected an integer, got a string ('80')
        """
        problems = plan_problems(data)
        if problems:
            raise InvalidPlanError("not a valid plan: " + "; ".join(problems))
        try:
            prot = data.get("protection", {})
            return cls(
                format=int(data.get("format", PLAN_FORMAT)),
                domain=data["domain"],
                description=data.get("description", ""),
                language=data.get("language", "auto"),
                task_goal=data.get("task_goal"),
                tokenizer=data.get("tokenizer", "o200k_base"),
                concepts=tuple(
                    Concept(c["name"], c.get("description", ""), tuple(c.get("keywords", ())), tuple(c.get("attributes", ())))
                    for c in data.get("concepts", ())
                ),
                relations=tuple(Relation(r["from"], r["to"], r["type"]) for r in data.get("relations", ())),
                queries=tuple(RerankQuery(q["name"], q["text"], tuple(q.get("terms", ()))) for q in data.get("queries", ())),
                protection=ProtectionRules(
                    anchors=tuple(Anchor(a["name"], a["pattern"], int(a.get("flags", 0))) for a in prot.get("anchors", ())),
                    terms=tuple(prot.get("terms", ())),
                    connectives=tuple(prot.get("connectives", ())),
                    entities=tuple(prot.get("entities", ())),
                    markers=tuple(prot.get("markers", ())),
                ),
                state_schema=data.get("state_schema", {}),
                abbreviations=data.get("abbreviations", {}),
                roles={
                    name: RoleContract(
                        name=name, budget=int(r["budget"]), required=tuple(r.get("required", ())),
                        optional=tuple(r.get("optional", ())), forbidden=tuple(r.get("forbidden", ())),
                        unit=r.get("unit"), categories=tuple(r.get("categories", ())),
                    )
                    for name, r in data.get("roles", {}).items()
                },
                pipeline=data.get("pipeline", {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidPlanError(f"not a valid plan: {exc!r}") from exc

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True, indent=2)

    @functools.cached_property
    def hash(self) -> str:
        """sha256 of the canonical JSON form; two plans with the same hash behave the same."""
        canon = json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode("utf-8")).hexdigest()

    @property
    def version(self) -> str:
        return f"{self.domain}@{self.hash[:12]}"


_STRINGS = "array of strings"
#: The fields of a plan mapping and their JSON types (every one optional but ``domain``).
_PLAN_FIELDS: dict[str, tuple[str, bool]] = {
    "format": ("integer", False), "domain": ("string", True), "description": ("string", False),
    "language": ("string", False), "task_goal": ("string", False), "tokenizer": ("string", False),
    "concepts": ("array", False), "relations": ("array", False), "queries": ("array", False),
    "protection": ("object", False), "state_schema": ("object", False), "abbreviations": ("object", False),
    "roles": ("object", False), "pipeline": ("object", False),
}
_ITEM_FIELDS: dict[str, dict[str, tuple[str, bool]]] = {
    "concepts": {"name": ("string", True), "description": ("string", False), "keywords": (_STRINGS, False),
                 "attributes": (_STRINGS, False)},
    "relations": {"from": ("string", True), "to": ("string", True), "type": ("string", True)},
    "queries": {"name": ("string", True), "text": ("string", True), "terms": (_STRINGS, False)},
}
_PROTECTION_FIELDS = {"anchors": ("array", False), "terms": (_STRINGS, False), "connectives": (_STRINGS, False),
                      "entities": (_STRINGS, False), "markers": (_STRINGS, False)}
_ANCHOR_FIELDS = {"name": ("string", True), "pattern": ("string", True), "flags": ("integer", False)}
_ROLE_FIELDS = {"budget": ("integer", True), "required": (_STRINGS, False), "optional": (_STRINGS, False),
                "forbidden": (_STRINGS, False), "unit": ("string", False), "categories": (_STRINGS, False)}


def _fields(obj: Any, spec: Mapping[str, tuple[str, bool]], where: str, out: list[str]) -> bool:
    """:func:`check_fields`, with ``array of strings`` as a type."""
    plain = {k: ("array" if kind == _STRINGS else kind, req) for k, (kind, req) in spec.items()}
    if not check_fields(obj, plain, where, out):
        return False
    for key, (kind, _) in spec.items():
        value = obj.get(key)
        if kind == _STRINGS and isinstance(value, list):
            for i, item in enumerate(value):
                if not isinstance(item, str):
                    out.append(f"{where + '.' if where else ''}{key}[{i}]: expected a string, got {json_kind(item)}")
    return True


def plan_problems(data: Any) -> list[str]:
    """Every field of a plan mapping that is missing or of the wrong JSON type, as ``path: message``
    (``[]`` for a valid plan); a protection pattern must compile too."""
    out: list[str] = []
    if not isinstance(data, Mapping):
        return [f"a plan is a JSON object, got {json_kind(data)}"]
    _fields(data, _PLAN_FIELDS, "", out)
    for key, spec in _ITEM_FIELDS.items():
        if isinstance(data.get(key), list):
            for i, item in enumerate(data[key]):
                _fields(item, spec, f"{key}[{i}]", out)
    prot = data.get("protection")
    if isinstance(prot, Mapping) and _fields(prot, _PROTECTION_FIELDS, "protection", out) \
            and isinstance(prot.get("anchors"), list):
        for i, anchor in enumerate(prot["anchors"]):
            where = f"protection.anchors[{i}]"
            if _fields(anchor, _ANCHOR_FIELDS, where, out) and isinstance(anchor.get("pattern"), str) \
                    and isinstance(anchor.get("flags", 0) or 0, int):
                try:
                    re.compile(anchor["pattern"], anchor.get("flags") or 0)
                except (re.error, ValueError) as exc:
                    out.append(f"{where}.pattern: does not compile: {exc}")
    if isinstance(data.get("abbreviations"), Mapping):
        for key, value in data["abbreviations"].items():
            if not isinstance(value, str):
                out.append(f"abbreviations.{key}: expected a string, got {json_kind(value)}")
    if isinstance(data.get("roles"), Mapping):
        for name, role in data["roles"].items():
            _fields(role, _ROLE_FIELDS, f"roles.{name}", out)
    return out
