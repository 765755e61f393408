"""The Python API.

>>> from odcf import Compressor
>>> c = Compressor.from_ontology("legal_contract")                      # doctest: +SKIP
>>> r = c.compress(["contracts/msa.md text ..."], query="liability cap", role="writer", budget=800)  # doctest: +SKIP
>>> print(r.text)                                                        # doctest: +SKIP
>>> r.record["sources"][0]["status"], r.tokens_in, r.tokens_out          # doctest: +SKIP
"""
from __future__ import annotations

import json
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence, ValuesView
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from odcf.document import KINDS, LAYERS, Document, Source, query_problem
from odcf.errors import InputError, InvalidPlanError, OdcfError, OntologyError, PlanError, StageError
from odcf.pipeline import Pipeline
from odcf.plan.model import Plan, schema_problems
from odcf.textutil import loads_json
from odcf.tokens import check_tokenizer, get_counter, unit_words

SourceLike = Union[str, Source, Mapping[str, Any]]

_SOURCE_KEYS = {"id", "text", "kind", "layer", "origin", "timestamp", "confidence", "mandatory",
                "category", "speaker", "read_range", "meta"}


@dataclass(frozen=True)
class CompressionResult:
    """What :meth:`Compressor.compress` returns."""

    text: str
    record: Mapping[str, Any]
    tokens_in: int
    tokens_out: int
    document: Document = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's ``--json`` shape: ``{"text", "tokens_in", "tokens_out", "record"}``."""
        return {"text": self.text, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "record": dict(self.record)}

    def record_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.record, ensure_ascii=False, indent=indent, sort_keys=False)

    @property
    def over_budget(self) -> bool:
        return bool(self.record.get("over_budget"))


class Compressor:
    """Compress context to a role's budget under an ontology's plan.

    Build once, call many times: models load on the first call (or :meth:`warm_up`).

    >>> c = Compressor.from_ontology("general")                    # doctest: +SKIP
    >>> c.compress("Payment is due within 30 days.", budget=20).text  # doctest: +SKIP
    """

    def __init__(self, plan: Plan, *, stages: Mapping[str, Any] | None = None, tokenizer: str | None = None) -> None:
        if not isinstance(plan, Plan):
            hint = (f": for an ontology name or YAML path use Compressor.from_ontology({plan!r})"
                    if isinstance(plan, (str, os.PathLike)) else "")
            raise PlanError(f"Compressor needs a compiled Plan, got {type(plan).__name__}{hint}")
        if stages is not None and not isinstance(stages, Mapping):
            raise StageError(f"stages must be a mapping of stage name to true/false or options, "
                             f"got {type(stages).__name__} {stages!r}")
        check_tokenizer(tokenizer)
        if tokenizer is not None:
            get_counter(tokenizer)  # an unknown name or a missing hf: file fails here, not on the first call
        self.plan = plan
        self.stage_options = dict(stages or {})
        self.tokenizer = tokenizer
        self.pipeline = Pipeline.from_plan(plan, self.stage_options)

    def __getstate__(self) -> dict[str, Any]:
        """What a worker process needs to rebuild this compressor: the plan and the options (models
        are not sent; they load again in the worker on its first call)."""
        return {"plan": self.plan, "stages": self.stage_options, "tokenizer": self.tokenizer}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__init__(state["plan"], stages=state["stages"], tokenizer=state["tokenizer"])  # type: ignore[misc]

    @classmethod
    def from_ontology(
        cls,
        ontology: str | os.PathLike[str] | Plan | None = None,
        *,
        stages: Mapping[str, Any] | None = None,
        tokenizer: str | None = None,
    ) -> Compressor:
        """From a bundled ontology name, a YAML path, or an already compiled :class:`Plan`.

        ``None`` uses the bundled general-purpose ontology.
        """
        if isinstance(ontology, Plan):
            return cls(ontology, stages=stages, tokenizer=tokenizer)
        if ontology is not None and not isinstance(ontology, (str, os.PathLike)):
            raise OntologyError(f"ontology must be a bundled ontology name, a YAML path or a compiled Plan, "
                                f"got {type(ontology).__name__} {ontology!r}")
        from odcf.plan.compiler import compile_file

        return cls(compile_file(ontology if ontology is not None else "general"), stages=stages, tokenizer=tokenizer)

    @classmethod
    def from_plan_file(cls, path: str | os.PathLike[str], **kwargs: Any) -> Compressor:
        """From a plan JSON written by ``odcf plan --format json``. A file that cannot be read, is not
        JSON or not a plan raises :class:`~odcf.errors.InvalidPlanError` naming the file."""
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidPlanError(f"plan file must be a path, got {type(path).__name__} {path!r}")
        try:
            data = loads_json(Path(path).read_bytes())
        except OSError as exc:
            raise InvalidPlanError(f"{path}: cannot read the plan: {exc.strerror or exc}") from exc
        except ValueError as exc:  # invalid JSON or UTF-8
            raise InvalidPlanError(f"{path}: not a plan JSON file: {exc}") from exc
        try:
            plan = Plan.from_dict(data)
        except PlanError as exc:
            raise InvalidPlanError(f"{path}: {exc}") from exc
        return cls(plan, **kwargs)

    def warm_up(self) -> Compressor:
        self.pipeline.warm_up()
        return self

    def document(
        self,
        sources: SourceLike | Sequence[SourceLike],
        *,
        query: str | None = None,
        role: str | None = None,
        budget: int | None = None,
        tokenizer: str | None = None,
        strict: bool = False,
        annotate: bool = True,
        timings: bool = True,
    ) -> Document:
        """The input document a :meth:`compress` call would run on."""
        if budget is not None:
            if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or budget <= 0:
                raise StageError(f"budget must be a positive integer, got {budget!r}")
            budget = int(budget)  # numpy integers too
        problem = query_problem(query)
        if problem:
            raise (StageError if not isinstance(query, str) else InputError)(problem)
        for name, flag in (("strict", strict), ("annotate", annotate), ("timings", timings)):
            if not isinstance(flag, bool):  # "no" would read as true
                raise StageError(f"{name} must be True or False, got {flag!r}")
        check_tokenizer(tokenizer)
        srcs = to_sources(sources)
        unit = self.unit_for(role, tokenizer)
        counter = get_counter(unit)
        meta = {
            "strict": strict,
            "annotate": annotate,
            # what the call asked for: the budget stage sets "annotate" to False when it leaves the
            # source lines out, and a trace must rebuild the call, not its outcome (QA s32 J1: a run at
            # --budget 15 traced annotate=false, and its replay never took the "left out" path)
            "annotate_requested": annotate,
            "timings": timings,
            "input_sha256": {s.id: s.sha256 for s in srcs},
            "input_tokens": {s.id: counter.count(s.text) for s in srcs},
        }
        if role is not None:
            self.plan.role(role)  # unknown roles fail here, before any work
            warning = role_unit_warning(self.plan, role, unit) if budget is None else None
            if warning:
                meta["warnings"] = [warning]
        return Document.from_sources(srcs, query=query, role=role, budget=budget, tokenizer=unit, meta=meta)

    def compress(
        self,
        sources: SourceLike | Sequence[SourceLike],
        *,
        query: str | None = None,
        role: str | None = None,
        budget: int | None = None,
        tokenizer: str | None = None,
        strict: bool = False,
        annotate: bool = True,
        timings: bool = True,
        trace: str | os.PathLike[str] | None = None,
    ) -> CompressionResult:
        """Compress *sources* for *role* within *budget* tokens (the role's budget by default).

        *sources*: a string, a :class:`Source`, a mapping ``{"text", "id"?, "kind"?, "layer"?, ...}``
        (a null value is as if the field were not given) or a list of those (a list or tuple: a set is
        refused, as its order, and so the ids and the output, changes from run to run). ``trace=PATH`` also
        writes a JSONL trace that ``odcf replay`` re-runs; ``timings=False`` leaves wall-clock times
        out of the record so the record is byte-identical too.
        """
        if trace is not None and not isinstance(trace, (str, os.PathLike)):
            raise StageError(f"trace must be a file path, got {type(trace).__name__} {trace!r}")
        doc = self.document(sources, query=query, role=role, budget=budget, tokenizer=tokenizer,
                            strict=strict, annotate=annotate, timings=timings)
        problems = self.state_problems(doc.sources)
        if problems and strict:
            raise InputError("the state layer does not validate against the plan's state schema:\n  "
                             + "\n  ".join(problems))
        if not doc.sources:
            # no source at all is empty input as much as compress("") is, and warns alike: a caller's filter
            # that matched nothing gave an empty context without a word (QA s32 J2). Not an error, as
            # compress("") is none, strict or not (the CLI, which reads files, refuses both)
            from odcf.stages.assemble import EMPTY_INPUT

            problems = [*problems, f"no sources: {EMPTY_INPUT}"]
        if problems:
            doc = doc.replace(meta={**doc.meta, "warnings": [*doc.meta.get("warnings", ()), *problems]})
        out = self.pipeline.run(doc, self.plan)
        record = out.meta["record"]
        result = CompressionResult(text=out.meta["text"], record=record, tokens_in=record["tokens_in"],
                                   tokens_out=record["tokens_out"], document=out)
        if trace is not None:
            from odcf.trace import write_trace

            write_trace(result, trace, inputs=sources, compressor=self)
        return result

    def state_problems(self, sources: Iterable[Source]) -> list[str]:
        """What is wrong with the state-layer sources among *sources*: state is compact JSON that
        validates against the plan's ``state_schema``. One line per problem, naming the source;
        :meth:`compress` puts them in the record's warnings (``strict``: raises them all)."""
        out: list[str] = []
        for src in sources:
            if src.layer != "state" or not src.text.strip():
                continue
            try:
                data = loads_json(src.text)
            except ValueError as exc:
                out.append(f"state source {src.id}: not JSON ({exc})")
                continue
            out.extend(f"state source {src.id}: {p}" for p in schema_problems(data, self.plan.state_schema))
        return out

    def unit_for(self, role: str | None, tokenizer: str | None = None) -> str:
        """What a run for *role* counts in: *tokenizer*, else this compressor's, else the role's ``unit:``,
        else the plan's tokenizer."""
        unit = tokenizer or self.tokenizer
        if unit is None and role is not None:
            unit = self.plan.role(role).unit
        return unit or self.plan.tokenizer

    def handoff(self, role: str, items: Sequence[Any], **kwargs: Any) -> Any:
        """Prepare a multi-agent handoff for *role* (see :mod:`odcf.handoff`)."""
        from odcf.handoff.engine import handoff

        return handoff(self, role=role, items=items, **kwargs)


def role_unit_warning(plan: Plan, role: str, unit: str) -> str | None:
    """The record's warning when *role*'s own budget is counted in *unit* though it is given in
    another (its ``unit:``, or with none the plan's tokenizer); None when they agree."""
    contract = plan.role(role)
    declared = contract.unit or plan.tokenizer
    if declared == unit:
        return None
    how = "" if contract.unit else " (the plan's tokenizer: the role declares no unit)"
    n = contract.budget
    # a token of English text is 3-4 bytes: the budget's text grows or shrinks that much
    scale = (", about 3 to 4 times the text the role's contract allows" if declared == "bytes"
             else ", about a third to a quarter of the text the role's contract allows" if unit == "bytes" else "")
    return (f"role {role!r} gives its budget of {n} in {declared}{how}; "
            f"it is counted in {unit} here, the tokenizer this call was given: {n} {unit_words(unit)}{scale} "
            f"(to count it in {declared}, give the tokenizer {declared} or none)")


def to_sources(sources: SourceLike | Sequence[SourceLike] | Iterable[SourceLike]) -> list[Source]:
    """Coerce API input into sources with unique ids (``source-1``, ``source-2`` … by default)."""
    if isinstance(sources, (str, Source, Mapping)):
        items: list[SourceLike] = [sources]
    elif isinstance(sources, (bytes, bytearray, memoryview)):
        raise InputError("sources are bytes: decode them first (odcf reads text; files through read_source_file)")
    elif not isinstance(sources, Iterable):
        raise InputError(f"sources must be a string, a Source, a mapping or a list of those, "
                         f"got {type(sources).__name__}")
    elif isinstance(sources, (AbstractSet, ValuesView)):  # a set, a frozenset, a dict's keys/values/items
        # a set's order changes from run to run (PYTHONHASHSEED): so would the ids, the numbering and the output
        why = ("its order changes from run to run (PYTHONHASHSEED), and with it the source ids, their numbering "
               "and the output" if isinstance(sources, (set, frozenset)) else "pass list(...) of it")
        raise InputError(f"sources must be a list (or tuple) of sources, not a {type(sources).__name__}: {why}")
    else:
        items = list(sources)
    out: list[Source] = []
    seen: set[str] = set()
    # ids the caller gave: a generated "source-k" must not take one ({"text": …}, {"id": "source-1", …})
    given = {item.id if isinstance(item, Source) else str(item["id"]) for item in items
             if isinstance(item, Source) or (isinstance(item, Mapping) and item.get("id") is not None)}
    for k, item in enumerate(items, start=1):
        src = _one_source(item, k, given)
        if src.id in seen:
            raise InputError(f"source {k}: duplicate source id {src.id!r}")
        seen.add(src.id)
        out.append(src)
    return out


def _generated_id(k: int, given: set[str]) -> str:
    """``source-k``, or ``source-k-2``, ``-3``… when the caller gave that id to another source."""
    sid, n = f"source-{k}", 1
    while sid in given:
        n += 1
        sid = f"source-{k}-{n}"
    return sid


def _one_source(item: SourceLike, k: int, given: set[str] = frozenset()) -> Source:  # type: ignore[assignment]
    """One source from API input; a mapping's null values mean "not given" (as in a batch record)."""
    if isinstance(item, Source):
        return item
    if isinstance(item, str):
        data: dict[str, Any] = {"id": _generated_id(k, given), "text": item}
    elif isinstance(item, Mapping):
        unknown = set(item) - _SOURCE_KEYS
        if unknown:
            raise InputError(f"source {k}: unknown field(s) {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(sorted(_SOURCE_KEYS))}")
        if "text" not in item or not isinstance(item["text"], str):
            raise InputError(f"source {k}: needs a string 'text'")
        data = {key: value for key, value in item.items() if value is not None}
        data["id"] = str(data["id"]) if "id" in data else _generated_id(k, given)
    else:
        raise InputError(f"source {k}: expected a string, a Source or a mapping, got {type(item).__name__}")
    data.setdefault("kind", guess_kind(data["text"]))
    if data["kind"] not in KINDS:
        raise InputError(f"source {data['id']!r}: unknown kind {data['kind']!r} (known: {', '.join(KINDS)})")
    if data.get("layer", "fact") not in LAYERS:
        raise InputError(f"source {data['id']!r}: unknown layer {data['layer']!r} (known: {', '.join(LAYERS)})")
    try:
        return Source(**data)
    except (TypeError, ValueError) as exc:  # Source's own messages name the source
        message = str(exc)
        raise InputError(message if message.startswith("source ") else f"source {data['id']!r}: {message}") from exc


def guess_kind(text: str, path: str | None = None) -> str:
    """``html``/``json``/``markdown``/``text`` from a file extension, else from the content."""
    if path:
        ext = os.path.splitext(path)[1].lower()
        if ext in (".html", ".htm", ".xhtml"):
            return "html"
        if ext in (".json", ".jsonl", ".ndjson"):
            return "json"
        if ext in (".md", ".markdown"):
            return "markdown"
        if ext in (".txt", ".log", ".csv", ".tsv"):
            return "text"
    head = text.lstrip()[:200].lower()
    if head.startswith(("<!doctype html", "<html")) or ("<body" in head and "</" in text[:5000]):
        return "html"
    if head[:1] in ("{", "["):
        try:
            loads_json(text)
            return "json"
        except ValueError:
            pass
    return "text"


def read_source_file(path: str, *, index: int = 1, layer: str = "fact", kind: str | None = None) -> Source:
    """Read a file as a source, as :func:`odcf.fileio.decode_text` reads it (UTF-8, a leading BOM
    removed: ``odcf verify`` re-reads it the same way); invalid UTF-8, UTF-16 or binary data (a NUL
    byte) is an :class:`InputError` naming the byte offset."""
    from odcf.fileio import decode_text, read_text

    if path == "-":
        import sys

        origin = "<stdin>"
        text = decode_text(sys.stdin.buffer.read(), origin)
    else:
        origin = path
        text = read_text(path)
    return Source(id=origin if path != "-" else "stdin", text=text, kind=kind or guess_kind(text, path),  # type: ignore[arg-type]
                  layer=layer, origin=origin)  # type: ignore[arg-type]


__all__ = ["Compressor", "CompressionResult", "OdcfError", "to_sources", "read_source_file", "guess_kind"]
