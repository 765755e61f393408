"""What a batch worker does with one record: build the compressor once, then compress.

:class:`BatchConfig` is everything that decides the output of a record (the ontology or plan,
role, budget, tokenizer, stage switches, limits). It is small and picklable: the local engine
sends it to each worker process, the Ray engine to each actor, and ``--resume`` refuses to
continue a job whose config changed.

>>> w = Worker(BatchConfig(ontology="general"))       # doctest: +SKIP
>>> w.warm_up()                                        # doctest: +SKIP
>>> w.run(task).row                  # a part row, JSON text  # doctest: +SKIP
"""
from __future__ import annotations

import logging
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from odcf.batch.io import Key
from odcf.batch.items import Done, Task, WorkItem, claim_of, error_row, has_field, ok_row
from odcf.batch.records import DEFAULT_MAX_CHARS, DEFAULT_QUERY_FIELD, RecordError, to_request
from odcf.stages.assemble import EMPTY_INPUT, is_empty_reason

if TYPE_CHECKING:  # pragma: no cover
    from odcf.compressor import Compressor

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchConfig:
    """How every record of a job is compressed.

    ``ontology`` is a bundled name or a YAML path (None: the bundled general ontology);
    ``plan`` (a :meth:`Plan.to_dict` mapping) is used instead when given, e.g. by tests and by
    callers that compiled a plan themselves.
    """

    ontology: str | None = None
    plan: Mapping[str, Any] | None = None
    role: str | None = None
    budget: int | None = None
    query_field: str = DEFAULT_QUERY_FIELD
    tokenizer: str | None = None
    strict: bool = False
    annotate: bool = True
    stages: Mapping[str, Any] = field(default_factory=dict)
    max_chars: int = DEFAULT_MAX_CHARS
    #: False drops the per-stage ``ms`` timings from each delivery record, so that two runs of
    #: the same job give byte-identical output files (timings are the only varying field).
    timings: bool = True

    def __post_init__(self) -> None:
        """Every field is checked here, once, so that a bad value is one error before any work
        (not the same error on every record); numpy integers are taken as ints."""
        def integer(name: str, value: Any) -> int:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            return int(value)

        object.__setattr__(self, "max_chars", integer("max_chars", self.max_chars))
        if self.budget is not None:
            object.__setattr__(self, "budget", integer("budget", self.budget))
        for name in ("ontology", "role", "tokenizer"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string or None, got {value!r}")
        if not isinstance(self.query_field, str) or not self.query_field:
            raise ValueError(f"query_field must be a field name, got {self.query_field!r}")
        for name in ("strict", "annotate", "timings"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if not isinstance(self.stages, Mapping):
            raise ValueError(f"stages must be a mapping of stage name to switch or options, "
                             f"got {self.stages!r}")
        if self.plan is not None and not isinstance(self.plan, Mapping):
            to_dict = getattr(self.plan, "to_dict", None)
            if not callable(to_dict):
                raise ValueError(f"plan must be a Plan or its to_dict() mapping, got {type(self.plan).__name__}")
            object.__setattr__(self, "plan", to_dict())  # a compiled Plan: sent to workers as its mapping

    def build_compressor(self) -> Compressor:
        """A compressor for this config (cheap: no model loads until :meth:`Compressor.warm_up`)."""
        from odcf.compressor import Compressor

        if self.plan is not None:
            from odcf.plan.model import Plan

            return Compressor(Plan.from_dict(self.plan), stages=dict(self.stages), tokenizer=self.tokenizer)
        return Compressor.from_ontology(self.ontology, stages=dict(self.stages), tokenizer=self.tokenizer)

    def fingerprint(self, plan_hash: str) -> dict[str, Any]:
        """What must not change between a run and its ``--resume`` (the plan by its hash)."""
        return {
            "plan_hash": plan_hash, "role": self.role, "budget": self.budget,
            "query_field": self.query_field, "tokenizer": self.tokenizer, "strict": self.strict,
            "annotate": self.annotate, "stages": dict(sorted(self.stages.items())),
            "max_chars": self.max_chars, "timings": self.timings,
        }


class Outcome(NamedTuple):
    """A finished record: its key, its part row (JSON text) and, when compressed, its tokens."""

    key: Key
    row: str
    ok: bool
    tokens_in: int = 0
    tokens_out: int = 0


class Worker:
    """Compresses tasks into part rows. One per process (local) or per actor (Ray)."""

    def __init__(self, config: BatchConfig) -> None:
        self.config = config
        self._compressor: Compressor | None = None

    def warm_up(self) -> Worker:
        if self._compressor is None:
            compressor = self.config.build_compressor()
            compressor.warm_up()
            self._compressor = compressor
        return self

    def run(self, item: WorkItem) -> Outcome:
        """The outcome of *item*; a failure becomes an error row, never an exception."""
        if isinstance(item, Done):
            return Outcome(item.key, item.row, False)
        return self._compress(item)

    def run_many(self, items: list[WorkItem]) -> list[Outcome]:
        return [self.run(item) for item in items]

    def _compress(self, task: Task) -> Outcome:
        cfg = self.config
        queried = has_field(task.record, cfg.query_field)
        self.warm_up()  # outside the try: a compressor that cannot load is the job's error, not the record's
        try:
            req = to_request(task.record, query_field=cfg.query_field, max_chars=cfg.max_chars)
            assert self._compressor is not None
            result = self._compressor.compress(
                req.sources, query=req.query, role=cfg.role, budget=cfg.budget,
                tokenizer=cfg.tokenizer, strict=cfg.strict, annotate=cfg.annotate,
            ).to_dict()
            sources = result["record"].get("sources") or []
            if sources and all(is_empty_reason(src.get("reason")) for src in sources):
                # only invisible characters, or text a rule removed (a page without text): as an
                # empty context, an error, which names the rule as the record would
                named = [f"source {src['id']}: {src['reason']}" for src in sources if src["reason"] != EMPTY_INPUT]
                raise RecordError("empty context: " + ("; ".join(named) or "no text left once invisible "
                                                       "characters and markup are removed"))
            if not cfg.timings:
                result["record"] = without_timings(result["record"])
            row = ok_row(task.key, task.id, result, queried=queried, where=claim_of(task.where, task.record))
            return Outcome(task.key, row, True,
                           result["tokens_in"], result["tokens_out"])
        except RecordError as exc:
            message = str(exc)
        except Exception as exc:  # one bad record must not end the job; the error file says why
            logger.debug("record %s (%s) failed", task.id, task.where, exc_info=True)
            message = f"{type(exc).__name__}: {exc}"
        return Outcome(task.key, error_row(task.key, task.id, task.where, message, record=task.record,
                                           queried=queried), False)


def without_timings(record: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a delivery record without the per-stage ``ms`` timings."""
    out = dict(record)
    stages = out.get("stages")
    if isinstance(stages, list):
        out["stages"] = [{k: v for k, v in ev.items() if k != "ms"} if isinstance(ev, Mapping) else ev
                         for ev in stages]
    return out
