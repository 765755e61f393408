"""Compile a validated :class:`~odcf.ontology.schema.Ontology` into a frozen
:class:`~odcf.plan.model.Plan`. Pure: no I/O, no models; the same ontology always gives the
same plan (and ``plan.hash``).

>>> from odcf.ontology import load_ontology
>>> from odcf.plan.compiler import compile_plan
>>> plan = compile_plan(load_ontology("legal_contract"))
>>> [q.name for q in plan.queries][-1], plan.role("writer").budget
('task', 8000)

What the plan holds:

- ``queries``: one :class:`RerankQuery` per concept (text from name, description, keywords and
  attributes; ``terms`` = keywords + attributes + the words of the name) and one named ``task``
  for ``task.goal``;
- ``protection``: anchors with their regex flags, the term dictionary, the connective list
  (``default`` expanded to the built-in English + Chinese list), entity labels (sorted: a set; the
  default labels when the ontology names none), markers;
- ``state_schema``: a draft 2020-12 object schema over ``state:`` with
  ``additionalProperties: false`` (``{}`` when the ontology declares no state);
- ``abbreviations``; ``roles``: the presets of :mod:`odcf.plan.presets` overridden field by field
  and extended by the ontology's ``roles:``; ``pipeline`` and ``tokenizer``.
"""
from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

from odcf.errors import OntologyError, PlanError, Problem
from odcf.ontology.schema import Ontology
from odcf.ontology.schema import Role as RoleSpec
from odcf.ontology.state_schema import JSON_SCHEMA_DRAFT, property_uri, uses_refs
from odcf.plan.model import (
    DEFAULT_ROLE,
    Anchor,
    Concept,
    Plan,
    ProtectionRules,
    Relation,
    RerankQuery,
    RoleContract,
)
from odcf.plan.presets import ROLE_PRESETS
from odcf.plan.protection import default_entity_labels, resolve_connectives

DEFAULT_TOKENIZER = "o200k_base"

#: Words too common to help a lexical ranker find the task's evidence.
_STOPWORDS = frozenset("""
a an and are as at be been by can could did do does for from had has have how in into is it its
of on or our should that the their them then there these they this those to was were what when
where which who whom why will with would all any each find give get make show list their your
""".split())
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'_-]{2,}")
_LABELS = {"zh": ("关键词", "属性"), "default": ("Keywords", "Attributes")}


def compile_plan(ontology: Ontology) -> Plan:
    """The plan of *ontology*. Raises :class:`OntologyError` (with ``FILE:LINE``) for a role that
    is not a preset and sets no budget — the only check that needs the presets."""
    if not isinstance(ontology, Ontology):
        hint = (f": for a bundled name or a YAML path use odcf.compile_plan(odcf.load_ontology({ontology!r}))"
                if isinstance(ontology, (str, os.PathLike)) else "")
        raise PlanError(f"compile_plan needs a loaded Ontology, got {type(ontology).__name__}{hint}")
    problems: list[Problem] = []
    roles = _roles(ontology, problems)
    if problems:
        raise OntologyError(problems)
    concepts = tuple(
        Concept(name=c.name, description=c.description, keywords=c.keywords, attributes=c.attributes)
        for c in ontology.concepts
    )
    by_key = {c.name.strip().casefold(): c.name for c in ontology.concepts}
    relations = tuple(
        Relation(source=by_key.get(r.source.strip().casefold(), r.source),
                 target=by_key.get(r.target.strip().casefold(), r.target), type=r.type)
        for r in ontology.relations
    )
    return Plan(
        domain=ontology.domain,
        description=" ".join(ontology.description.split()),
        language=ontology.language,
        task_goal=ontology.task.goal if ontology.task else None,
        concepts=concepts,
        relations=relations,
        queries=_queries(ontology),
        protection=_protection(ontology),
        state_schema=state_schema(ontology.state),
        abbreviations=dict(ontology.abbreviations),
        roles=roles,
        declared_roles=tuple(ontology.roles),
        tokenizer=ontology.tokenizer or DEFAULT_TOKENIZER,
        pipeline={name: (dict(section) if isinstance(section, dict) else section)
                  for name, section in ontology.pipeline.items()},
    )


def compile_file(path_or_name: str | os.PathLike[str]) -> Plan:
    """Load, validate and compile a file or bundled ontology name; sets ``plan.source_file``."""
    from odcf.ontology.loader import load_ontology, resolve_ontology

    plan = compile_plan(load_ontology(path_or_name))
    return dataclasses.replace(plan, source_file=str(resolve_ontology(path_or_name)))


# -- parts ----------------------------------------------------------------------------------------
def _queries(ontology: Ontology) -> tuple[RerankQuery, ...]:
    kw_label, attr_label = _LABELS["zh"] if ontology.language == "zh" else _LABELS["default"]
    zh = ontology.language == "zh"
    sep, comma, space = ("：", "、", "") if zh else (": ", ", ", " ")
    out: list[RerankQuery] = []
    for c in ontology.concepts:
        name_text = _humanize(c.name)
        head = name_text + (sep + " ".join(c.description.split()) if c.description.strip() else "")
        parts = [_sentence(head)]
        if c.keywords:
            parts.append(_sentence(f"{kw_label}{sep}" + comma.join(c.keywords)))
        if c.attributes:
            parts.append(_sentence(f"{attr_label}{sep}" + comma.join(_humanize(a) for a in c.attributes)))
        terms = _unique([*c.keywords, *(_humanize(a) for a in c.attributes), *_name_words(c.name)])
        out.append(RerankQuery(name=c.name, text=space.join(parts), terms=terms))
    if ontology.task is not None:
        goal = " ".join(ontology.task.goal.split())
        terms = _unique([w for w in _WORD.findall(goal) if w.lower() not in _STOPWORDS])
        out.append(RerankQuery(name="task", text=goal, terms=terms))
    return tuple(out)


def _protection(ontology: Ontology) -> ProtectionRules:
    p = ontology.protect
    return ProtectionRules(
        anchors=tuple(Anchor(name=a.name, pattern=a.pattern, flags=int(a.re_flags)) for a in p.anchors),
        terms=_unique(" ".join(t.split()) for t in p.terms),
        connectives=resolve_connectives(p.connectives),
        # a set: sorted, so that the order it is written in does not change the plan (or its hash)
        entities=tuple(sorted(set(p.entities if p.entities is not None else default_entity_labels))),
        markers=tuple(dict.fromkeys(p.markers)),
    )


def state_schema(properties: dict[str, Any]) -> dict[str, Any]:
    """The draft 2020-12 schema of the state object (``{}`` when no properties are declared).
    The schema of a property that holds a ``$ref`` gets an ``$id`` (:func:`~odcf.ontology.state_schema.property_uri`),
    so that its refs resolve within it as they do at ``odcf ontology check``."""
    if not properties:
        return {}
    return {
        "$schema": JSON_SCHEMA_DRAFT,
        "type": "object",
        # a property schema holding a $ref is a document of its own ('#/$defs/NAME' within it)
        "properties": {name: ({"$id": property_uri(name), **schema} if uses_refs(schema) else schema)
                       for name, schema in properties.items()},
        "additionalProperties": False,
    }


def _roles(ontology: Ontology, problems: list[Problem]) -> dict[str, RoleContract]:
    roles: dict[str, RoleContract] = dict(ROLE_PRESETS)
    for name, spec in ontology.roles.items():
        base = ROLE_PRESETS.get(name) or (DEFAULT_ROLE if name == "default" else None)
        if base is None and spec.budget is None:
            problems.append(ontology.problem(
                ("roles", name, "budget"),
                f"required key 'budget' is missing: {name!r} is not a preset role "
                f"(presets: {', '.join(ROLE_PRESETS)})",
            ))
            continue
        roles[name] = merge_role(name, spec, base or DEFAULT_ROLE)
    return roles


def merge_role(name: str, spec: RoleSpec, base: RoleContract) -> RoleContract:
    """*base* with the fields *spec* sets replaced. A layer list the ontology sets also removes
    its layers from the lists it leaves to the preset, so a layer is never in two lists
    (``optional: [reasoning]`` on a preset role takes ``reasoning`` out of ``forbidden``)."""
    given = {k: getattr(spec, k) for k in ("required", "optional", "forbidden") if getattr(spec, k) is not None}
    claimed = {layer for layers in given.values() for layer in layers}
    lists = {
        key: tuple(given[key]) if key in given else tuple(x for x in getattr(base, key) if x not in claimed)
        for key in ("required", "optional", "forbidden")
    }
    return RoleContract(
        name=name,
        budget=spec.budget if spec.budget is not None else base.budget,
        required=lists["required"],
        optional=lists["optional"],
        forbidden=lists["forbidden"],
        unit=spec.unit if spec.unit is not None else base.unit,
        categories=tuple(spec.categories) if spec.categories is not None else base.categories,
    )


# -- text helpers ---------------------------------------------------------------------------------
def _humanize(identifier: str) -> str:
    return " ".join(identifier.replace("_", " ").split())


def _name_words(name: str) -> list[str]:
    return [w for w in re.split(r"[\s_\-/]+", name) if w and w.lower() not in _STOPWORDS]


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?", "。", "！", "？")) else text + ("。" if _is_cjk(text[-1:]) else ".")


def _is_cjk(ch: str) -> bool:
    return bool(ch) and "\u3000" <= ch <= "\u9fff"


def _unique(words: Any) -> tuple[str, ...]:
    out: dict[str, str] = {}
    for w in words:
        w = w.strip()
        if w:
            out.setdefault(w.casefold(), w)
    return tuple(out.values())


__all__ = ["compile_file", "compile_plan", "merge_role", "state_schema"]
