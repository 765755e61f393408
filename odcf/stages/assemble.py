"""Assembly: the delivered text, annotated with sources, and the delivery record.

The record says, per source and per segment, what was delivered verbatim, compressed,
folded, reverted, merged or dropped, with token counts, the sha256 of the delivered text
and the reason. ``doc.meta["text"]`` and ``doc.meta["record"]`` hold the result.
"""
from __future__ import annotations

from typing import Any

from odcf import __version__
from odcf.document import Document, Segment, Source, TraceEvent, sha256
from odcf.plan.model import Plan
from odcf.render import render
from odcf.stages.base import Stage
from odcf.tokens import get_counter

#: 2: a record that leaves out the per-segment entries says so (``"segment_details": false``).
RECORD_FORMAT = 2



#: The reason a source without text carries in the record.
EMPTY_INPUT = "empty input: no text to compress"
#: ... and one the rules stage left without text (``"rules removed all text (noise: todo_lines): ..."``).
RULES_EMPTIED = "rules removed all text"


def empty_reason(src: Source) -> str:
    """The record's reason for a source without text: given empty, or emptied by a named rule."""
    by = src.meta.get("emptied_by")
    return f"{RULES_EMPTIED} ({by}): nothing to compress" if by else EMPTY_INPUT


def is_empty_reason(reason: object) -> bool:
    """True for the reason of a source that had (or was left with) no text."""
    return isinstance(reason, str) and (reason == EMPTY_INPUT or reason.startswith(RULES_EMPTIED + " ("))


class Assembler(Stage):
    name = "assemble"
    requires = frozenset({"budgeted"})
    provides = frozenset({"assembled"})

    def __init__(self, *, annotate: bool = True, segment_details: bool = True) -> None:
        self.annotate = annotate
        self.segment_details = segment_details

    def __call__(self, doc: Document, plan: Plan) -> Document:
        annotate = bool(doc.meta.get("annotate", self.annotate))
        info = dict(doc.meta.get("budget_info", {}))
        counter = get_counter(info.get("unit") or doc.tokenizer or plan.tokenizer)
        text, bodies = render(doc, annotate=annotate)
        tokens_out = counter.count(text)
        input_sha = doc.meta.get("input_sha256", {})
        input_tokens = doc.meta.get("input_tokens", {})
        sources = []
        status_counts: dict[str, int] = {}
        for n, src in enumerate(doc.sources, start=1):
            segs = doc.segments_of(src.id)
            for s in segs:
                status_counts[s.status] = status_counts.get(s.status, 0) + 1
            sources.append(self._source_entry(n, src, segs, bodies.get(src.id, ""), counter,
                                              input_sha.get(src.id), input_tokens.get(src.id)))
        tokens_in = sum(e["tokens_in"] for e in sources)
        budget = info.get("budget")
        over_by = max(0, tokens_out - budget) if isinstance(budget, int) else 0
        record: dict[str, Any] = {
            "odcf": __version__,
            "record_format": RECORD_FORMAT,
            "domain": plan.domain,
            "plan_hash": plan.hash,
            "role": info.get("role", doc.role),
            "budget": budget,
            "unit": counter.name,
            "query": doc.query,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "ratio": round(tokens_in / tokens_out, 3) if tokens_out else None,
            "over_budget": over_by > 0,
            "over_by": over_by,
            "scorer": doc.meta.get("scorer"),
            "sha256": sha256(text),
            "segments": dict(sorted(status_counts.items())),
            "sources": sources,
            "stages": _stage_events(doc),
            "warnings": list(doc.meta.get("warnings", ())) + list(info.get("warnings", [])) + [
                f"source {e['id']}: {e['reason']}" for e in sources if e.get("reason")],
        }
        if not self.segment_details:
            record["segment_details"] = False  # so that `odcf verify` can tell this from removed entries
        for key in ("missing", "conflicts", "not_searched"):
            if key in doc.meta:
                record[key] = doc.meta[key]
        meta = dict(doc.meta)
        meta["text"] = text
        meta["record"] = record
        event = TraceEvent(stage=self.name, data={"tokens_out": tokens_out, "sources_delivered": len(bodies)})
        return doc.with_event(event, meta=meta)

    def _source_entry(self, n: int, src: Source, segs: tuple[Segment, ...], body: str, counter: Any,
                      input_sha: str | None, input_tokens: int | None) -> dict[str, Any]:
        live = [s for s in segs if not s.dropped]
        # the segments are cut from the text after the rules stage: a source it edited (comments,
        # editor marks, TODO lines removed) is not delivered verbatim even when every segment is
        edited = src.meta.get("original_sha256", src.sha256) != src.sha256
        if not segs or not live:
            status = "dropped"
        elif all(s.status == "verbatim" for s in segs):
            status = "compressed" if edited else "verbatim"
        elif all(s.status in ("verbatim", "folded") for s in segs):
            status = "folded"
        elif all(s.status in ("verbatim", "reverted") for s in segs):
            status = "reverted"
        else:
            status = "compressed"
        entry: dict[str, Any] = {
            "id": src.id,
            "n": n,
            "origin": src.origin,
            "kind": src.kind,
            "layer": src.layer,
            "status": status,
            "tokens_in": input_tokens if input_tokens is not None else counter.count(src.text),
            "tokens_out": counter.count(body),
            "sha256": sha256(body),
            "source_sha256": input_sha or src.sha256,
            "read_range": src.read_range,
        }
        for key in ("timestamp", "confidence", "category", "speaker"):
            value = getattr(src, key)
            if value is not None:
                entry[key] = value
        if not src.text.strip():
            entry["reason"] = empty_reason(src)
        if src.mandatory:
            entry["mandatory"] = True
        if src.meta.get("original_kind"):  # the kind as read (before rules), for `odcf verify` to redo the selection
            entry["original_kind"] = src.meta["original_kind"]
        if self.segment_details:
            entry["segments"] = [_segment_entry(s, counter) for s in segs]
        return entry


def _stage_events(doc: Document) -> list[dict[str, Any]]:
    """Trace events for the record; ``timings=False`` leaves out the wall-clock ``ms`` so that the
    record, not only the text, is byte-identical across runs."""
    events = [ev.to_dict() for ev in doc.trace]
    if not doc.meta.get("timings", True):
        for ev in events:
            ev.pop("ms", None)
    return events


def _segment_entry(seg: Segment, counter: Any) -> dict[str, Any]:
    delivered = "" if seg.dropped else seg.text
    out: dict[str, Any] = {
        "id": seg.id,
        "index": seg.index,
        "kind": seg.kind,
        "status": seg.status,
        "tokens_in": counter.count(seg.original),
        "tokens_out": counter.count(delivered),
        "sha256": sha256(delivered),
        "score": seg.score,
        "reason": "; ".join(seg.reasons) if seg.reasons else None,
    }
    if seg.protected:
        out["protected"] = [{"text": sp.text, "rule": sp.rule} for sp in seg.protected]
    if seg.status == "compressed" and seg.meta.get("dropped_words"):
        # what the token stage thinned away, verbatim: the reason alone gave counts ("kept 12 of 22 words"), and a
        # reader of the record could not see that the clause "… is excluded" was gone (QA s32)
        out["dropped_words"] = list(seg.meta["dropped_words"])
    if seg.merged_from:
        out["merged_from"] = list(seg.merged_from)
    return out
