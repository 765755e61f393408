"""The ``rules`` stage: deterministic source-level normalization before segmentation.

Three rules, each switchable (constructor keyword, or the ontology's
``pipeline: {rules: {html: false}}``):

- ``html``: an ``html`` source, or a text/markdown/tool source that clearly is an HTML
  document, becomes semantic markdown-like text (:mod:`odcf.rules.html`); its kind becomes
  ``markdown`` and ``meta["original_kind"]`` says it was ``html``.
- ``json_minify``: a ``json``/``tool`` source whose text is JSON or JSON Lines is minified
  with its values unchanged (:mod:`odcf.rules.jsonmin`); invalid JSON is left as it is and
  the trace says where it fails to parse. In any other source (a markdown agent log), a fenced
  block whose body is one JSON object or array (```json, or an unlabelled fence) is minified
  inside its fences.
- ``noise``: editor marks, invisible characters, decorative/blank-line runs, trailing spaces
  and (in documents, not tool output) OCR-garbage lines, page numbers and running headers or footers
  (:mod:`odcf.rules.noise`). Text that
  holds a protected anchor, term or marker of the plan is never removed. JSON sources that
  parsed are not touched by it.

Sources of the ``instruction`` layer are passed through untouched: instructions are never
compressed. A changed source keeps its id and gets ``meta["original_sha256"]`` (the hash of the text as
given), so a delivery record can still be checked against the input; a source the rules leave
without text gets ``meta["emptied_by"]`` (``"noise: todo_lines"``), which its record entry's
``reason`` names. The stage appends one
trace event: ``data = {"sources": {id: {rule: report}}, "changed": n, "chars_in": .., "chars_out": ..}``.

>>> from odcf.document import Document, Source
>>> from odcf.plan.model import Plan
>>> doc = Document.from_sources([Source(id="t", kind="tool", text='{"a": 1,  "b": [1, 2]}')])
>>> out = RuleStage()(doc, Plan(domain="d"))
>>> out.sources[0].text
'{"a":1,"b":[1,2]}'
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any

from odcf.document import Document, Source, TraceEvent, sha256
from odcf.plan.model import Plan
from odcf.rules.guard import ProtectionGuard
from odcf.rules.html import html_to_text, looks_like_html
from odcf.rules.jsonmin import minify_fenced_json, minify_json
from odcf.rules.noise import INVISIBLE, remove_noise
from odcf.stages.base import Stage
from odcf.stages.segment.codefiles import declared_code, odcf_headers
from odcf.stages.segment.tables import declared_delimiter
from odcf.textutil import has_visible_text

logger = logging.getLogger(__name__)

#: Kinds scanned for OCR garbage lines, page numbers and running headers (documents, not machine output).
_OCR_KINDS = frozenset({"text", "markdown", "html"})


class RuleStage(Stage):
    """Normalize sources: HTML → text, JSON minify, noise removal. Each rule is switchable.

    >>> RuleStage(html=False).config()
    {'html': False, 'json_minify': True, 'noise': True}
    """

    name = "rules"
    requires = frozenset()
    provides = frozenset({"sources"})
    lossy = False

    def __init__(self, *, html: bool = True, json_minify: bool = True, noise: bool = True) -> None:
        for key, value in (("html", html), ("json_minify", json_minify), ("noise", noise)):
            if not isinstance(value, bool):
                raise TypeError(f"rules.{key} must be true or false, got {value!r}")
        self.html = html
        self.json_minify = json_minify
        self.noise = noise

    def __call__(self, doc: Document, plan: Plan) -> Document:
        guard = ProtectionGuard.from_plan(plan)
        sources: list[Source] = []
        reports: dict[str, dict[str, Any]] = {}
        chars_in = chars_out = changed = 0
        for source in doc.sources:
            new, report = self._one(source, guard)
            chars_in += len(source.text)
            chars_out += len(new.text)
            if report:
                reports[source.id] = report
            if new is not source:
                changed += 1
            sources.append(new)
        data = {"sources": reports, "changed": changed, "chars_in": chars_in, "chars_out": chars_out}
        if changed:
            logger.debug("rules changed %d source(s): %d → %d chars", changed, chars_in, chars_out)
        return doc.with_event(TraceEvent(stage=self.name, data=data), sources=tuple(sources))

    def _one(self, source: Source, guard: ProtectionGuard) -> tuple[Source, dict[str, Any]]:
        text = source.text
        kind = source.kind
        report: dict[str, Any] = {}
        if source.layer == "instruction":
            return source, report
        parsed_json = False
        # a source file (".py", ".tsx": odcf.stages.segment.codefiles) is delivered line for line: its JSX is
        # no HTML page, its "# TODO" lines and blank lines are the file's, a fenced block in a docstring stays
        code = declared_code(source)
        lined = code or declared_delimiter(source) is not None  # a file whose lines are its content
        if self.html and not code and (kind == "html" or (kind in ("text", "markdown", "tool") and looks_like_html(text))):
            text, report["html"] = html_to_text(text)
            kind = "markdown"
        elif self.json_minify and kind in ("json", "tool"):
            minified, rep = minify_json(text)
            if rep.get("valid", True):
                text = minified
                parsed_json = True
            elif kind == "json" or text.lstrip()[:1] in ("{", "["):
                # A tool result in prose is normal; a json source or a broken object is worth saying.
                rep = {"applied": False, **rep}
            else:
                rep = {}
            if rep:
                report["json_minify"] = rep
        if self.noise and lined:
            # a .csv/.tsv file: its lines are records, and a blank line, trailing spaces or a row
            # that looks like OCR garbage can be a cell's value; only invisible characters go (so too
            # in a source file)
            cleaned, n = INVISIBLE.subn("", text)
            # a source file's output compressed again: the "[source 1/1] … | fact" lines odcf wrote above it
            # are no lines of the file (a new one is written), never read as code
            cleaned, headers = odcf_headers(cleaned) if code else (cleaned, [])
            if n or headers:
                text = cleaned
                report["noise"] = {**({"zero_width": n} if n else {}), "chars_removed": len(source.text) - len(cleaned),
                                   **({"odcf_headers": len(headers), "examples": headers[:1]} if headers else {})}
        elif self.noise and not parsed_json and not (kind == "json"):
            document = source.kind in _OCR_KINDS
            cleaned, rep = remove_noise(text, guard, ocr=document, pages=document)
            if cleaned != text:
                text = cleaned
                report["noise"] = rep
            elif rep.get("kept_protected"):
                report["noise"] = rep
        if self.json_minify and not parsed_json and kind != "json" and not lined:
            # a document's fenced JSON (a tool's answer in an agent's log) is minified as a JSON source is
            # (after the noise rule, which leaves fenced blocks alone but for invisible characters)
            text, rep = minify_fenced_json(text)
            if rep:
                report["json_minify"] = {**report["json_minify"], "fenced": rep} if "json_minify" in report else rep
        if text == source.text and kind == source.kind:
            return source, report
        meta = dict(source.meta)
        meta.setdefault("original_sha256", sha256(source.text))
        if not has_visible_text(text) and has_visible_text(source.text):
            meta["emptied_by"] = _rules_fired(report)  # the record says which rule left nothing
        if kind != source.kind:
            meta.setdefault("original_kind", source.kind)
        return dataclasses.replace(source, text=text, kind=kind, meta=meta), report

    def config(self) -> dict[str, Any]:
        return {"html": self.html, "json_minify": self.json_minify, "noise": self.noise}


#: Report keys of :func:`remove_noise` that are bookkeeping, not rules.
_NOT_RULES = frozenset({"removed_lines", "chars_removed", "examples", "kept_protected"})


def _rules_fired(report: dict[str, Any]) -> str:
    """The rules that changed a source, as a record names them: ``"noise: html_comments, todo_lines"``."""
    parts = []
    for rule, rep in report.items():
        fired = sorted(k for k in rep if k not in _NOT_RULES) if rule == "noise" and isinstance(rep, dict) else []
        parts.append(f"{rule}: {', '.join(fired)}" if fired else rule)
    return "; ".join(parts) or "rules"
