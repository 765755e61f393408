"""The stage protocol.

A stage is a small class with a declared contract::

    class MyStage(Stage):
        name = "my_stage"
        requires = frozenset({"segments"})
        provides = frozenset({"scores"})

        def __init__(self, *, threshold: float = 0.5) -> None:   # cheap, serializable options
            self.threshold = threshold

        def warm_up(self) -> None:                                 # heavy loading, idempotent
            ...

        def __call__(self, doc: Document, plan: Plan) -> Document:
            ...
            return doc.with_event(TraceEvent(stage=self.name, data={...}), segments=new_segments)

The pipeline checks every ``requires`` against the ``provides`` of earlier stages before
anything runs. Capabilities used so far:

``sources``     normalized source text (after source-level rules)
``segments``    the document is segmented
``protected``   protected spans are marked on segments
``scores``      each live segment has a relevance ``score`` in [0, 1]
``deduped``     near-duplicates are merged
``compressed``  lossy token-level compression ran
``verified``    lossy changes were checked against entities/anchors
``budgeted``    segments outside the budget are dropped
``assembled``   ``doc.meta['text']`` and ``doc.meta['record']`` are set
"""
from __future__ import annotations

import abc
from bisect import bisect_left
from typing import Any, ClassVar

from odcf.document import Document, Segment, Span
from odcf.errors import PlanError
from odcf.plan.model import Plan
from odcf.textutil import nfc, nfc_map


class Stage(abc.ABC):
    """Base class of every pipeline stage."""

    name: ClassVar[str] = "stage"
    requires: ClassVar[frozenset[str]] = frozenset()
    provides: ClassVar[frozenset[str]] = frozenset()
    #: True when the stage may alter or drop segment text (checked by the protection guard).
    lossy: ClassVar[bool] = False

    def warm_up(self) -> None:
        """Load models or build indexes. Idempotent; the pipeline calls it once."""

    @abc.abstractmethod
    def __call__(self, doc: Document, plan: Plan) -> Document:
        """Return a new document; never mutate *doc*."""

    def config(self) -> dict[str, Any]:
        """The stage's options, for traces and replay. Override when options are not plain attributes."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_") and _plain_value(v)}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{type(self).__name__}({opts})"


def _plain_value(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool, type(None), tuple, list))


def call_budget(doc: Document, plan: Plan) -> int | None:
    """The budget a stage works to before the budget stage: the call's, else its role's (None when
    neither is a positive integer, or the role is unknown: the budget stage says so)."""
    if doc.budget is not None:
        return int(doc.budget)
    try:
        b = plan.role(doc.role).budget
    except (PlanError, KeyError, AttributeError):
        return None
    return int(b) if isinstance(b, int) and not isinstance(b, bool) and b > 0 else None


def _in_nfc(seg: Segment) -> Segment:
    text, original = nfc(seg.text), nfc(seg.original)
    if text == seg.text and original == seg.original:
        return seg
    norm, pos = nfc_map(seg.original)
    spans = tuple(Span(a := bisect_left(pos, sp.start), b := bisect_left(pos, sp.end), norm[a:b], sp.rule)
                  for sp in seg.protected)
    return seg.replace(text=text, original=original, protected=spans)


def in_nfc(doc: Document) -> Document:
    """*doc* as a scoring stage reads it: each segment's text and original, its protected spans and
    the query in Unicode NFC (:func:`~odcf.textutil.nfc`), so that the same text typed with combining
    accents ("Rene\u0301e", as text copied from a PDF is) scores and matches as the composed spelling.
    A stage that only scores runs on this and hands back :func:`with_text_of` its result: the
    delivered text keeps the source's characters."""
    return doc.replace(segments=tuple(_in_nfc(s) for s in doc.segments),
                       query=nfc(doc.query) if doc.query is not None else None)


def with_text_of(out: Document, doc: Document) -> Document:
    """*out* (a stage's result on :func:`in_nfc` of *doc*) with the text, original and protected
    spans of each segment, and the query, as *doc* has them."""
    before = {s.id: s for s in doc.segments}
    segments = tuple(s.replace(text=b.text, original=b.original, protected=b.protected)
                     if (b := before.get(s.id)) is not None and s.text == nfc(b.text) and s.original == nfc(b.original)
                     and (s.text, s.original, s.protected) != (b.text, b.original, b.protected) else s
                     for s in out.segments)
    return out.replace(segments=segments, query=doc.query)
