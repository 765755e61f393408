"""pydantic models of ``task_ontology.yaml``, format 1 (see ONTOLOGY.md), plus the project's
optional extensions: top-level ``tokenizer:`` and ``pipeline:``, role keys ``unit:`` and
``categories:``, anchor key ``flags:``.

These models check one value at a time (types, identifiers, regexes, layer names, budgets).
Checks that need the whole file (duplicate concepts, relations to unknown concepts, ambiguous
abbreviations, state schemas) live in :mod:`odcf.ontology.loader`, which also turns every
error into ``FILE:LINE: key.path: message``. Use :func:`odcf.ontology.load_ontology` rather than
building these models by hand:

>>> from odcf.ontology.schema import Ontology
>>> ont = Ontology.model_validate({"odcf": 1, "domain": "demo", "concepts": [{"name": "refund"}]})
>>> ont.concepts[0].name, ont.protect.connectives
('refund', ('default',))
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictInt,
    StrictStr,
    ValidationInfo,
)

from odcf.errors import Problem
from odcf.textutil import quote_pattern

FORMAT_VERSION = 1

#: The five layers every segment belongs to (see DESIGN.md).
LAYERS: tuple[str, ...] = ("instruction", "fact", "reasoning", "state", "history")
LANGUAGES: tuple[str, ...] = ("en", "zh", "auto")
#: Roles whose contract odcf presets (odcf.plan.presets, which must agree): an ontology may set
#: any field of these and leave the rest to the preset; any other role needs its own budget.
PRESET_ROLES: tuple[str, ...] = ("researcher", "planner", "writer", "reviewer", "executor", "fixer", "default")
#: Names accepted by ``flags:`` on an anchor, mapped to :mod:`re` flags.
REGEX_FLAGS: dict[str, int] = {"IGNORECASE": re.IGNORECASE, "MULTILINE": re.MULTILINE, "DOTALL": re.DOTALL}
TOKENIZERS: tuple[str, ...] = ("o200k_base", "cl100k_base", "bytes")
#: Stage names of :data:`odcf.pipeline.STAGE_ORDER` (kept here because the ontology package must
#: not import the pipeline; a test keeps the two name sets in step).
STAGE_NAMES: tuple[str, ...] = (
    "rules", "segment", "protect", "entities", "fold", "rank", "rerank",
    "dedup", "compress", "verify", "budget", "assemble",
)
#: Stages the pipeline never switches off (:data:`odcf.pipeline.ESSENTIAL`).
ESSENTIAL_STAGES: frozenset[str] = frozenset({"segment", "budget", "assemble"})
#: NER labels the spaCy English pipelines produce (OntoNotes 5); any other label could never match.
ENTITY_LABELS: tuple[str, ...] = (
    "PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW",
    "LANGUAGE", "DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL",
)
DOMAIN_RE = re.compile(r"[a-z0-9_]+")


# -- single-value checks (each raises ValueError with the message the user sees) ---------------
def _closest(word: str, choices: tuple[str, ...] | list[str]) -> str:
    import difflib

    lowered = {c.lower(): c for c in choices}
    if word.lower() in lowered:
        return f" (did you mean {lowered[word.lower()]!r}?)"
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _format_version(value: int) -> int:
    if value != FORMAT_VERSION:
        raise ValueError(f"unsupported format version {value}; this odcf reads format {FORMAT_VERSION} (`odcf: 1`)")
    return value


def _domain(value: str) -> str:
    if not DOMAIN_RE.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid domain: use lowercase letters, digits and _ ([a-z0-9_]+)")
    return value


def _language(value: str) -> str:
    if value not in LANGUAGES:
        raise ValueError(f"unknown language {value!r}{_closest(value, LANGUAGES)}; use one of {', '.join(LANGUAGES)}")
    return value


def _layer(value: str) -> str:
    if value not in LAYERS:
        raise ValueError(f"unknown layer {value!r}{_closest(value, LAYERS)}; layers are {', '.join(LAYERS)}")
    return value


def _regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"invalid regex: {exc}{ecma_hint(value)}") from None
    return value


_ECMA_NAMED_GROUP = re.compile(r"\(\?<(?![=!])(\w+)>")


def ecma_hint(pattern: str) -> str:
    """What to write in Python ``re`` syntax for the ECMA-262 (JavaScript) constructs in *pattern*
    that Python refuses (``(?<year>…)``, ``\\p{Lu}``), as ``"; …"``; ``""`` when it has none."""
    hints: list[str] = []
    named = _ECMA_NAMED_GROUP.search(pattern)
    if named:
        hints.append(f"write a named group as (?P<{named.group(1)}>…), not (?<{named.group(1)}>…)")
    if re.search(r"\\[pP]\{", pattern):
        hints.append("Python's re has no \\p{…} classes: list the characters, e.g. [A-Z] for \\p{Lu}")
    if not hints:
        return ""
    return "; patterns use Python `re` syntax, not ECMA-262 (JavaScript): " + "; ".join(hints)


def _flag(value: str) -> str:
    if value not in REGEX_FLAGS:
        names = tuple(REGEX_FLAGS)
        raise ValueError(f"unknown regex flag {value!r}{_closest(value, names)}; use {', '.join(names)}")
    return value


def _tokenizer(value: str) -> str:
    if value in TOKENIZERS:
        return value
    if value.startswith("hf:") and value[3:].strip():
        return value
    raise ValueError(
        f"unknown tokenizer {value!r}{_closest(value, TOKENIZERS)}; use {', '.join(TOKENIZERS)} or hf:PATH"
    )


def _entity_label(value: str) -> str:
    if value not in ENTITY_LABELS:
        raise ValueError(
            f"unknown entity label {value!r}{_closest(value, ENTITY_LABELS)}; known labels: {', '.join(ENTITY_LABELS)}"
        )
    return value


def _positive_budget(value: int) -> int:
    if value <= 0:
        raise ValueError(f"budget must be a positive integer, got {value}")
    return value


def _connectives(value: Any) -> Any:
    """``default`` -> ``("default",)``; a list passes through (it may itself contain ``default``)."""
    if isinstance(value, str):
        if value != "default":
            raise ValueError(f"must be `default` or a list of words and phrases, got {value!r}")
        return ("default",)
    return value


def _entities_given(value: Any) -> Any:
    """An empty ``entities:`` is an error, as every other empty list key is (absent: the default labels)."""
    if value is None:
        raise ValueError("expected a list, got nothing (an empty value): write `entities: []` to protect no "
                         "labels, or leave the key out for the default labels")
    return value


def _role_list_given(value: Any, info: ValidationInfo) -> Any:
    """An empty ``required:``/``optional:``/``forbidden:``/``categories:`` on a role is an error, as every
    other empty list key is (absent: the preset's list). QA s32: a writer's ``forbidden:`` written to
    forbid nothing was read as absent, and the preset's ``[reasoning]`` stayed forbidden."""
    if value is None:
        key = info.field_name
        raise ValueError(f"expected a list, got nothing (an empty value): write `{key}: []` for none, or leave "
                         "the key out to keep the preset's list")
    return value


def _stage_name(value: str) -> str:
    if value not in STAGE_NAMES:
        raise ValueError(f"unknown stage {value!r}{_closest(value, STAGE_NAMES)}; stages: {', '.join(STAGE_NAMES)}")
    return value


def _stage_section(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, Mapping):
        if "enabled" in value and not isinstance(value["enabled"], bool):
            raise ValueError(f"`enabled` must be true or false, got {value['enabled']!r}")
        for key in value:
            if not isinstance(key, str):
                raise ValueError(f"option names must be strings, got {key!r}")
        return dict(value)
    raise ValueError(f"must be true, false or a mapping of stage options, got {value!r}")


Text = Annotated[StrictStr, AfterValidator(_non_empty)]
Layer = Annotated[StrictStr, AfterValidator(_layer)]
TokenizerName = Annotated[StrictStr, AfterValidator(_tokenizer)]
#: A role's layer list: absent is None (the preset's list); an empty value is an error.
LayerList = Annotated[tuple[Layer, ...] | None, BeforeValidator(_role_list_given)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Task(_Model):
    """``task:`` — what the agent is trying to do; ``goal`` becomes the ``task`` rerank query."""

    goal: Text


class Concept(_Model):
    """One thing the task is about; becomes one rerank query."""

    name: Text
    description: StrictStr = ""
    keywords: tuple[Text, ...] = ()
    attributes: tuple[Text, ...] = ()


class Relation(_Model):
    """``{from: a, to: b, type: t}`` between two declared concepts."""

    source: Text = Field(alias="from")
    target: Text = Field(alias="to")
    type: Text = "related_to"


class Anchor(_Model):
    """A regular expression (Python :mod:`re`); every match is kept verbatim."""

    name: Text
    pattern: Annotated[StrictStr, AfterValidator(_non_empty), AfterValidator(_regex)]
    flags: tuple[Annotated[StrictStr, AfterValidator(_flag)], ...] = ()

    @property
    def re_flags(self) -> int:
        out = 0
        for name in self.flags:
            out |= REGEX_FLAGS[name]
        return out


class Protect(_Model):
    """``protect:`` — what compression must never drop or alter.

    ``entities`` is ``None`` when the key is absent (the compiler uses the default labels; an empty
    ``entities:`` is an error, ``[]`` protects no labels);
    ``connectives`` is a tuple in which ``"default"`` stands for the built-in EN + ZH list.
    """

    anchors: tuple[Anchor, ...] = ()
    terms: tuple[Text, ...] = ()
    entities: Annotated[
        tuple[Annotated[StrictStr, AfterValidator(_entity_label)], ...] | None, BeforeValidator(_entities_given)
    ] = None
    connectives: Annotated[tuple[Text, ...], BeforeValidator(_connectives)] = ("default",)
    markers: tuple[Text, ...] = ()


class Role(_Model):
    """A per-role context contract. Unset fields come from the role preset of the same name."""

    budget: Annotated[StrictInt, AfterValidator(_positive_budget)] | None = None
    required: LayerList = None
    optional: LayerList = None
    forbidden: LayerList = None
    unit: TokenizerName | None = None
    categories: Annotated[tuple[Text, ...] | None, BeforeValidator(_role_list_given)] = None


class Ontology(_Model):
    """A validated task ontology. ``source`` and :meth:`line_of` say where each key was written."""

    odcf: Annotated[StrictInt, AfterValidator(_format_version)]
    domain: Annotated[StrictStr, AfterValidator(_domain)]
    description: StrictStr = ""
    language: Annotated[StrictStr, AfterValidator(_language)] = "auto"
    task: Task | None = None
    concepts: tuple[Concept, ...] = Field(min_length=1)
    relations: tuple[Relation, ...] = ()
    protect: Protect = Protect()
    abbreviations: dict[Text, Text] = Field(default_factory=dict)
    state: dict[Text, Any] = Field(default_factory=dict)
    roles: dict[Text, Role] = Field(default_factory=dict)
    tokenizer: TokenizerName | None = None
    pipeline: dict[
        Annotated[StrictStr, AfterValidator(_stage_name)],
        Annotated[Any, BeforeValidator(_stage_section)],
    ] = Field(default_factory=dict)

    _source: str = PrivateAttr(default="<ontology>")
    _lines: dict[tuple[str | int, ...], int] = PrivateAttr(default_factory=dict)

    @property
    def source(self) -> str:
        """The file this ontology was read from (``<string>`` or ``<ontology>`` when none)."""
        return self._source

    def line_of(self, path: tuple[str | int, ...]) -> int | None:
        """The line *path* (or its nearest written parent) was written on, if known."""
        for end in range(len(path), -1, -1):
            line = self._lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return None

    def problem(self, path: tuple[str | int, ...], message: str) -> Problem:
        """A :class:`~odcf.errors.Problem` located at *path*, for checks made after loading."""
        return Problem(self._source, self.line_of(path), format_path(path), message)


def format_path(path: tuple[str | int, ...] | list[str | int]) -> str:
    r"""``("protect", "anchors", 3, "pattern")`` -> ``protect.anchors[3].pattern``; any other key in
    ``['…']`` as YAML single quotes write it (``patternProperties['^\d+$']``, the regex as written)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[\w$-]+", part):
            out += f".{part}" if out else part
        else:
            out += f"[{quote_pattern(part)}]"  # as YAML single quotes write it: a patternProperties key is a regex
    return out


#: Known keys per position in the file (list items and mapping values as ``"*"``), for
#: "did you mean" suggestions on unknown keys.
KNOWN_KEYS: dict[tuple[str, ...], tuple[str, ...]] = {
    (): tuple(f.alias or n for n, f in Ontology.model_fields.items()),
    ("task",): tuple(Task.model_fields),
    ("concepts", "*"): tuple(Concept.model_fields),
    ("relations", "*"): tuple(f.alias or n for n, f in Relation.model_fields.items()),
    ("protect",): tuple(Protect.model_fields),
    ("protect", "anchors", "*"): tuple(Anchor.model_fields),
    ("roles", "*"): tuple(Role.model_fields),
}


def known_keys_at(path: tuple[str | int, ...]) -> tuple[str, ...]:
    """The keys allowed in the mapping at *path* (empty when any key is allowed)."""
    shape: list[str] = []
    for i, part in enumerate(path):
        if isinstance(part, int) or (i > 0 and path[i - 1] == "roles"):
            shape.append("*")
        else:
            shape.append(str(part))
    return KNOWN_KEYS.get(tuple(shape), ())


__all__ = [
    "Anchor", "Concept", "ENTITY_LABELS", "ESSENTIAL_STAGES", "FORMAT_VERSION", "LANGUAGES", "LAYERS",
    "Ontology", "Protect", "REGEX_FLAGS", "Relation", "Role", "STAGE_NAMES", "TOKENIZERS",
    "Task", "ecma_hint", "format_path", "known_keys_at",
]
