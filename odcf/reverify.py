"""Re-verify a delivery record against its sources: did a source change, was delivered text swapped?

A delivery record names, per source, where it came from (``origin``), which part was read
(``read_range``) and the sha256 of that selection (``source_sha256``); per segment it gives
the status and the sha256 of the delivered text. :func:`verify_record` re-reads every file
source, redoes the selection and checks:

1. the selection still hashes to ``source_sha256`` (else: *source changed*);
2. re-running the source-level rules and the segmenter on it (with the record's plan when one
   is given, see below) gives the segments the record lists; every segment delivered
   ``verbatim`` or ``reverted`` must hash to the sha256 the record gives for it, every
   ``dropped``/``merged`` one to the empty text, and every protected span of a live segment
   must occur in its source segment (else: *delivered text substituted*);
3. a source whose delivered segments are all verbatim must re-assemble to the record's
   per-source ``sha256``;
4. with the delivered text (``text=``, the file ``odcf compress --out`` wrote): the whole text
   hashes to the record's ``sha256``, each source block in it to the per-source ``sha256``, and
   every word of a block (outside odcf markers such as ``[DATA_ROWS: 12]``) occurs in its source —
   compression deletes words, it never writes new ones — which catches a substituted compressed
   or folded segment too;
5. the token figures the record's writer makes agree: a dropped or merged segment (and a dropped
   source) delivers 0 tokens, a verbatim or reverted one as many as it read, the record's
   ``tokens_in`` is its sources' sum, and each figure whose text is at hand (the delivered text,
   a source block in it, a verbatim segment re-cut) counts that text.

Read ranges (the same grammar :class:`odcf.document.Source` documents):

``whole``          the whole file, UTF-8, a leading BOM removed (as ``odcf compress`` reads files)
``lines a-b``      lines *a* to *b*, 1-based and inclusive, line ends kept
``bytes a-b``      bytes *a* to *b*, 0-based and inclusive (as HTTP ranges), UTF-8
``/a/0/b``         a JSON pointer (RFC 6901) into a JSON file: a string value as is, any other
                   value as ``json.dumps(value, ensure_ascii=False, indent=2)``

>>> from odcf.reverify import verify_record
>>> problems = verify_record(json.load(open("out.record.json")), text=open("out.txt").read())  # doctest: +SKIP
>>> for p in problems: print(p)                                                                 # doctest: +SKIP
"""
from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from odcf.document import (
    BYTES_RANGE,
    LINES_RANGE,
    Document,
    Segment,
    Source,
    Status,
    read_range_problem,
    sha256,
)
from odcf.errors import InputError
from odcf.fileio import decode_text
from odcf.textutil import check_fields, is_json, json_kind
from odcf.tokens import unit_words

#: How the budget stage's warning begins when nothing fits beside the ``[source i/n]`` lines and it
#: delivers without them (odcf/stages/budget.py).
SOURCE_LINES_LEFT_OUT = "the source lines were left out"


def source_lines_left_out(warnings: Any) -> bool:
    """Whether *warnings* (a record's, or the budget stage's event's) say the budget stage left the source
    lines out: the run asked for them, the text has none."""
    return isinstance(warnings, list) and any(isinstance(w, str) and w.startswith(SOURCE_LINES_LEFT_OUT)
                                              for w in warnings)


logger = logging.getLogger(__name__)

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:(?!\\|/(?!/))")  # tool:search, http://, but not C:\ or /abs
_EMPTY_SHA = sha256("")


@dataclass(frozen=True)
class Problem:
    """One thing that does not check out. ``code`` is stable, ``message`` says what and where."""

    code: str
    message: str
    source: str | None = None
    segment: str | None = None

    def __str__(self) -> str:
        where = self.segment or self.source or "record"
        return f"{where}: {self.code}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "source": self.source, "segment": self.segment}


@dataclass(frozen=True)
class VerifyReport:
    """Everything :func:`verify_report` found: problems (fatal), notes (what could not be checked)."""

    problems: tuple[Problem, ...]
    checked_sources: tuple[str, ...] = ()
    checked_segments: int = 0
    notes: tuple[str, ...] = field(default=())
    #: whether a delivered text was given and compared with the record's ``sha256``
    text_checked: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "problems": [p.to_dict() for p in self.problems],
            "checked_sources": list(self.checked_sources),
            "checked_segments": self.checked_segments,
            "text_checked": self.text_checked,
            "notes": list(self.notes),
        }


# -- selections ----------------------------------------------------------------------------

def select(raw: bytes, read_range: str | None, *, where: str = "<source>") -> str:
    """The text a read range selects from a file's bytes (see the module docstring)."""
    rr = (read_range or "whole").strip()
    problem = read_range_problem(rr)  # the grammar a Source is checked with when it is made
    if problem:
        raise InputError(f"{where}: {problem}")
    if rr == "whole":
        return _decode(raw, where)
    m = LINES_RANGE.match(rr)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        lines = _decode(raw, where).splitlines(keepends=True)  # line 1 without the BOM
        if b > len(lines):
            raise InputError(f"{where}: read range {rr!r} is past the end of the file ({len(lines)} lines)")
        return "".join(lines[a - 1:b])
    m = BYTES_RANGE.match(rr)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        if b >= len(raw):
            raise InputError(f"{where}: read range {rr!r} is past the end of the file ({len(raw)} bytes)")
        try:  # the bytes as they are: a BOM in the range is in the text
            return raw[a:b + 1].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{where}: invalid UTF-8 at byte {a + exc.start} (read range {rr!r})") from exc
    doc = json.loads(_decode(raw, where)) if raw.strip() else None  # a JSON pointer: all read_range_problem leaves
    value = _pointer(doc, rr, where)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)


def read_selection(path: str | os.PathLike[str], read_range: str | None = "whole") -> str:
    """Read *path* and return the part *read_range* selects. Errors are :class:`InputError`."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return select(raw, read_range, where=str(path))


def _decode(raw: bytes, where: str) -> str:
    """The file's text as ``odcf compress`` reads it (:func:`odcf.fileio.decode_text`: one reader
    for both, so an unchanged file hashes the same); a NUL byte is not refused here, as a source
    given through the API may hold one and its hash is what is checked."""
    return decode_text(raw, where, allow_nul=True)


def _pointer(doc: Any, pointer: str, where: str) -> Any:
    if pointer == "":
        return doc
    value = doc
    for raw_part in pointer.split("/")[1:]:
        part = raw_part.replace("~1", "/").replace("~0", "~")
        if isinstance(value, Mapping):
            if part not in value:
                raise InputError(f"{where}: JSON pointer {pointer!r}: no key {part!r}")
            value = value[part]
        elif isinstance(value, list):
            if not part.isdigit() or int(part) >= len(value):
                raise InputError(f"{where}: JSON pointer {pointer!r}: no index {part!r} (array of {len(value)})")
            value = value[int(part)]
        else:
            raise InputError(f"{where}: JSON pointer {pointer!r}: cannot step into a {type(value).__name__} at {part!r}")
    return value


def is_file_origin(origin: str | None) -> bool:
    """True when *origin* names a local file (not ``tool:...``, a URL, ``<stdin>``, the text of a
    command-line option such as ``--instruction``, or nothing)."""
    if not origin or origin in ("-", "<stdin>") or origin.startswith("--"):
        return False
    return not _SCHEME.match(origin) or origin.startswith("file://")


def search_dirs(bases: Sequence[str | os.PathLike[str]] = ()) -> list[str]:
    """The folders a relative origin is looked up in, in order, each once: *bases*, then the current
    folder unless a base is it (``odcf verify`` passes its ``--base`` folders, the current folder and
    the record's folder)."""
    out: list[str] = []
    for base in [*bases, os.getcwd()]:
        folder = os.path.abspath(base)
        if folder not in out:
            out.append(folder)
    return out


def resolve_origin(origin: str, bases: Sequence[str | os.PathLike[str]] = ()) -> Path:
    """The file an origin names: absolute, or relative to the first of :func:`search_dirs` where it exists."""
    path = origin[len("file://"):] if origin.startswith("file://") else origin
    p = Path(path)
    if p.is_absolute():
        return p
    for base in search_dirs(bases):
        cand = Path(base) / p
        if cand.exists():
            return cand
    return p


# -- re-running the selection ----------------------------------------------------------------

def reselect(source: Source, plan: Any, *, tokenizer: str | None = None,
             stages: Mapping[str, Any] | None = None, budget: int | None = None,
             role: str | None = None) -> Document:
    """Run the plan's source rules and segmenter on *source*, as the pipeline does; the document after them.

    *stages* are the stage switches the run used (a trace header's ``stages``); *budget* and *role* the
    run's (a small budget cuts long sentences shorter: :meth:`Segmenter._sentence_chars`).
    """
    import importlib

    from odcf.pipeline import STAGE_ORDER, resolve_stage_options

    chosen = resolve_stage_options(plan, {k: v for k, v in (stages or {}).items() if k in ("rules", "segment")})
    doc = Document.from_sources([source], tokenizer=tokenizer or plan.tokenizer,
                                budget=budget if isinstance(budget, int) and not isinstance(budget, bool) else None,
                                role=role if isinstance(role, str) and role in getattr(plan, "roles", {}) else None)
    for name, spec in STAGE_ORDER:
        if name not in ("rules", "segment") or chosen.get(name) is None:
            continue
        module_name, _, cls_name = spec.partition(":")
        try:
            klass = getattr(importlib.import_module(module_name), cls_name)
        except ModuleNotFoundError:
            if name == "rules":
                continue
            raise
        stage = klass(**chosen[name])
        stage.warm_up()
        doc = stage(doc, plan)
    return doc


def resegment(source: Source, plan: Any, *, tokenizer: str | None = None,
              stages: Mapping[str, Any] | None = None) -> tuple[Segment, ...]:
    """The segments :func:`reselect` gives."""
    return reselect(source, plan, tokenizer=tokenizer, stages=stages).segments


#: Text later stages write into a delivered block that is not from the source: ``[DATA_ROWS: 12]``, ``[PREFIX: ..]``,
#: and a JSON object's count of the keys it leaves out, ``"[JSON_KEYS: 2]":null`` (the ``null`` is odcf's too),
#: and the items of a list left out, ``[…3 items]`` (odcf.render.items_mark).
_MARKER = re.compile(r'"\[JSON_KEYS: \d+\]":null|\[[A-Z][A-Z_]*:[^\]\n]*\]|\[…\d+ items?\]')
_WORD_RE = re.compile(r"\w+")


def foreign_words(delivered: str, *sources: str, allowed: Sequence[str] = ()) -> list[str]:
    """Words of *delivered* (outside odcf markers) that occur in none of *sources*, in order, once each."""
    vocab = set(allowed)
    for text in sources:
        vocab.update(_WORD_RE.findall(text))
    out: list[str] = []
    for word in _WORD_RE.findall(_MARKER.sub(" ", delivered)):
        if word not in vocab and word not in out:
            out.append(word)
    return out


def split_blocks(text: str, record: Mapping[str, Any]) -> dict[str, str]:
    """Each delivered source body in an annotated text (``[source i/n] label | layer ...`` blocks)."""
    sources = list(record.get("sources", ()))
    total = len(sources)
    heads: list[tuple[int, int, str]] = []  # (header start, body start, source id)
    for src in sources:
        label = src.get("origin") or src.get("id")
        head = f"[source {src.get('n')}/{total}] {label} | {src.get('layer')}"
        pos = -1
        for m in re.finditer(re.escape(head) + r"[^\r\n]*\r?\n", text):
            if m.start() == 0 or text[m.start() - 2:m.start()] == "\n\n" or text[m.start() - 4:m.start()] == "\r\n\r\n":
                pos = m.start()
                heads.append((pos, m.end(), str(src.get("id"))))
                break
    heads.sort()
    out: dict[str, str] = {}
    for k, (_, body_start, sid) in enumerate(heads):
        if k + 1 < len(heads):  # the blank line between blocks (CRLF when every block is CRLF)
            end = heads[k + 1][0]
            end -= 4 if text[end - 4:end] == "\r\n\r\n" else 2
        else:
            end = len(text)
            notes = _NOTES_HEAD_RE.search(text, body_start) if record.get("handoff") else None
            if notes is not None:  # a handoff's notes block after the last source (odcf.handoff.notes)
                end = notes.start()
        out[sid] = text[body_start:end]
    return out


#: The head of the notes block a handoff appends after its sources, with the blank line before it.
_NOTES_HEAD_RE = re.compile(r"\r?\n\r?\n\[handoff notes\] [^\r\n]*(?:\r?\n|$)")


# -- the record's shape ---------------------------------------------------------------------

#: What a delivery record says a source and a segment became.
SOURCE_STATUSES = ("verbatim", "folded", "reverted", "compressed", "dropped")
SEGMENT_STATUSES = tuple(get_args(Status))

#: field -> (JSON type, required): the fields :func:`verify_report` reads (and the token counts and
#: reasons a reader of the record relies on), at each level of a record.
_RECORD_FIELDS: dict[str, tuple[str, bool]] = {
    "record_format": ("integer", False), "sources": ("array", True), "segments": ("object", False),
    "segment_details": ("boolean", False), "sha256": ("string", False), "domain": ("string", False),
    "plan_hash": ("string", False), "unit": ("string", False), "tokens_out": ("integer", False),
    "budget": ("integer", False), "over_budget": ("boolean", False), "over_by": ("integer", False),
}
_SOURCE_FIELDS: dict[str, tuple[str, bool]] = {
    "id": ("string", True), "n": ("integer", False), "status": ("string", True), "origin": ("string", False),
    "read_range": ("string", False), "kind": ("string", False), "original_kind": ("string", False),
    "layer": ("string", False), "sha256": ("string", False), "source_sha256": ("string", False),
    "tokens_in": ("integer", False), "tokens_out": ("integer", False), "segments": ("array", False),
}
_SEGMENT_FIELDS: dict[str, tuple[str, bool]] = {
    "id": ("string", True), "index": ("integer", True), "status": ("string", True), "sha256": ("string", False),
    "tokens_in": ("integer", False), "tokens_out": ("integer", False), "reason": ("string", False),
    "protected": ("array", False), "dropped_words": ("array", False),
}
_SPAN_FIELDS: dict[str, tuple[str, bool]] = {"text": ("string", True), "rule": ("string", False)}


def record_problems(record: Any) -> list[Problem]:
    """Every field of *record* that :func:`verify_report` reads and that is not of its JSON type (or
    missing, or a status no odcf writes), as ``record-invalid`` problems naming its JSON path:
    ``sources[0].segments[3].index: expected an integer, got a string ('x')``.

    >>> for p in record_problems({"sources": [{"id": "a", "status": "verbatim", "origin": 5}, 7]}): print(p)
    record: record-invalid: sources[0].origin: expected a string or null, got a number (5)
    record: record-invalid: sources[1]: expected an object, got a number (7)
    """
    from odcf.stages.assemble import RECORD_FORMAT

    if not isinstance(record, Mapping):
        return [Problem("record-invalid", f"not a delivery record: expected a JSON object, got {json_kind(record)}")]
    out: list[str] = []
    check_fields(record, _RECORD_FIELDS, "", out)
    fmt = record.get("record_format")
    if is_json(fmt, "integer") and fmt > RECORD_FORMAT:
        out.append(f"record_format: {fmt} is newer than this odcf reads ({RECORD_FORMAT})")
    counts = record.get("segments")
    if isinstance(counts, Mapping):
        for status, n in counts.items():
            if not is_json(n, "integer") or n < 0:
                out.append(f"segments.{status}: expected a count (an integer >= 0), got {json_kind(n)}")
    for k, src in enumerate(record.get("sources") if isinstance(record.get("sources"), list) else ()):
        where = f"sources[{k}]"
        if not check_fields(src, _SOURCE_FIELDS, where, out):
            continue
        _status(src, SOURCE_STATUSES, where, out)
        for j, seg in enumerate(src.get("segments") if isinstance(src.get("segments"), list) else ()):
            at = f"{where}.segments[{j}]"
            if not check_fields(seg, _SEGMENT_FIELDS, at, out):
                continue
            _status(seg, SEGMENT_STATUSES, at, out)
            if is_json(seg.get("index"), "integer") and seg["index"] < 0:
                out.append(f"{at}.index: expected an integer >= 0, got {seg['index']}")
            for i, span in enumerate(seg.get("protected") if isinstance(seg.get("protected"), list) else ()):
                check_fields(span, _SPAN_FIELDS, f"{at}.protected[{i}]", out)
    return [Problem("record-invalid", message) for message in out]


def _status(obj: Mapping[str, Any], known: Sequence[str], where: str, out: list[str]) -> None:
    status = obj.get("status")
    if isinstance(status, str) and status not in known:
        out.append(f"{where}.status: {status!r} is no status odcf writes ({', '.join(known)})")


def verify_report(
    record: Mapping[str, Any],
    text: str | None = None,
    *,
    plan: Any | None = None,
    stages: Mapping[str, Any] | None = None,
    base_dirs: Sequence[str | os.PathLike[str]] = (),
    sources_only: bool = False,
    text_only: bool = False,
) -> VerifyReport:
    """Check *record* against its sources (and *text* when given); see the module docstring.

    *plan* is the :class:`~odcf.plan.model.Plan` the record was made with (from a trace or a
    plan file); without it, segment checks use the bundled ontology named by the record's
    ``domain`` when its hash matches ``plan_hash``, and are skipped (with a note) otherwise.
    *stages*: the stage switches of the run (a trace header's ``stages``), when not the plan's defaults.
    *sources_only*: accept, with a note, a record of format 1 that lists no segment although it counts
    some (an older odcf wrote those with ``segment_details=False``); by default that is ``segments-missing``.
    A record of a field of the wrong type is ``record-invalid``, one problem per field, and nothing else is checked.
    A record with nothing else wrong is not "ok" when nothing was checked: ``nothing-checked`` when no source
    could be re-read (their origins are not files), ``segments-unchecked`` when it has segments but none was
    re-checked (no plan for it, or none listed) and *sources_only* is false — as ``odcf verify`` reports.
    *text_only*: accept, with a note, a record none of whose sources could be re-read (a handoff's items,
    the API's texts) when *text* was given and checks out against it (its sha256, each source's block,
    the token figures); the sources themselves are then not checked, and the note says so.
    """
    problems: list[Problem] = []
    notes: list[str] = []
    invalid = record_problems(record)
    if invalid:  # checks that read fields of the wrong type would only crash or pass by accident
        return VerifyReport(tuple(invalid))

    if text is not None:
        want = record.get("sha256")
        if want is None:
            notes.append("record has no total sha256; delivered text not compared as a whole")
        elif sha256(text) != want:
            problems.append(Problem("text-changed", f"delivered text sha256 {sha256(text)[:16]}… "
                                                    f"does not match the record's {str(want)[:16]}…"))
    problems += _figure_problems(record, text)
    problems += _listing_problems(record, notes, sources_only=sources_only)
    if plan is not None and record.get("plan_hash") is not None and plan.hash != record.get("plan_hash"):
        # segments re-cut with another plan prove nothing about this record
        problems.append(Problem("plan-mismatch", f"the plan given (domain {plan.domain!r}, hash {plan.hash[:12]}) "
                                f"is not the one the record was made with (domain {record.get('domain')!r}, "
                                f"hash {str(record.get('plan_hash'))[:12]})"))
        plan = None
        notes.append("segment checks skipped: the plan given is not the record's")
    elif plan is None:
        plan = _plan_for(record, notes)
    blocks = split_blocks(text, record) if text is not None else {}
    delivered = [s for s in record["sources"] if s.get("status") != "dropped"]
    unannotated = bool(text is not None and text and delivered and not blocks)
    if unannotated:
        # the budget stage leaves them out when nothing fits beside them, and its warning in the record says
        # so; "--no-annotate" there named an option the run was never given (QA s32 J1, noeol.txt at --budget 15)
        left_out = source_lines_left_out(record.get("warnings"))
        why = "the budget stage left them out to fit" if left_out else "--no-annotate"
        notes.append(f"the delivered text has no [source i/n] headers ({why}): checked as a whole, "
                     "not per source")
    run = _Run(blocks=blocks, text=text, unannotated=unannotated, plan=plan, stages=stages,
               base_dirs=base_dirs, unit=record.get("unit"), problems=problems, notes=notes,
               budget=record.get("budget"), role=record.get("role"))
    for k, src in enumerate(record["sources"]):
        run.check_source(str(src.get("id", f"#{k + 1}")), src)
    if unannotated and plan is not None and text is not None \
            and all(str(s.get("id")) in run.checked for s in delivered) and run.vocab_texts:
        extra = foreign_words(text, *run.vocab_texts, allowed=_abbreviation_words(plan))
        if extra:
            problems.append(Problem("text-not-derivable", "delivered words in none of the sources: "
                                    + ", ".join(repr(w) for w in extra[:5])))
    text_checked = text is not None and record.get("sha256") is not None
    if not problems and text_only and text_checked and not run.checked and record.get("sources"):
        counted = " and token counts" if _counter(record.get("unit")) is not None else ""
        notes.append("no source could be re-read (their origins are not files): accepted (--text-only) on the "
                     f"delivered text, which matches the record's sha256{counted}; the sources themselves "
                     "were not checked")
    elif not problems:
        problems += _unchecked_problems(record, run.checked, run.n_segments, sources_only=sources_only,
                                        text_given=text is not None)
    return VerifyReport(tuple(problems), tuple(run.checked), run.n_segments, tuple(notes), text_checked)


def _unchecked_problems(record: Mapping[str, Any], checked: Sequence[str], n_segments: int, *,
                        sources_only: bool, text_given: bool = False) -> list[Problem]:
    """A record that found nothing wrong only because nothing was checked is not "ok":
    ``nothing-checked`` when no source could be re-read, ``segments-unchecked`` when no segment
    was re-cut (no plan, or no segment listed) and *sources_only* does not accept that."""
    if not checked and record.get("sources"):
        # a record of the API or a batch job names no file: an "ok" here would have checked nothing
        # QA s33 R4: a handoff record (`odcf handoff --record`) is one too, and the message named no way on
        how = ("--text-only accepts the delivered text's check against the record alone" if text_given else
               "give the delivered text with --text FILE --text-only to check it against the record alone")
        return [Problem("nothing-checked", "no source could be re-read (see the notes: their origins are not "
                        "files, as in a record of `odcf handoff`, the Python API or a batch job), so nothing was "
                        f"verified against its source; {how}")]
    if not n_segments and not sources_only and has_segments(record):
        # nothing was re-cut: an "ok" here would tell a CI job that the segments were checked
        why = (f"no segment was re-checked without the record's plan (see the notes): {PASS_THE_PLAN}, "
               "or --sources-only to accept this" if lists_segments(record) else
               "the record lists no segment (it was written with segment_details=False), so none was re-checked: "
               "pass --sources-only to accept this")
        return [Problem("segments-unchecked", why)]
    return []


@dataclass
class _Run:
    """One :func:`verify_report` pass: what it checks against, and what it has found so far."""

    blocks: Mapping[str, str]
    text: str | None
    unannotated: bool
    plan: Any
    stages: Mapping[str, Any] | None
    base_dirs: Sequence[str | os.PathLike[str]]
    unit: Any
    problems: list[Problem]
    notes: list[str]
    budget: Any = None
    role: Any = None
    checked: list[str] = field(default_factory=list)
    n_segments: int = 0
    vocab_texts: list[str] = field(default_factory=list)
    _count_with: Any = False  # the token counter, not loaded yet

    def check_source(self, sid: str, src: Mapping[str, Any]) -> None:
        """The record entry of one source against its delivered block, its file and a re-run selection."""
        segs = list(src.get("segments") or ())
        self._check_delivered(sid, src, segs)
        origin = src.get("origin")
        if not is_file_origin(origin):
            self.notes.append(f"{sid}: origin {origin!r} is not a file; not re-read")
            return
        path = resolve_origin(str(origin), self.base_dirs)
        try:
            selected = read_selection(path, src.get("read_range"))
        except InputError as exc:
            message = str(exc)
            if not path.is_absolute() and not path.exists():
                # a relative path found in no folder: say which were tried (QA s31 F4: "m4.md: cannot
                # read: No such file or directory" left open whether --base was used at all)
                message += f"; not found in any of {', '.join(search_dirs(self.base_dirs))} (tried in this order)"
            self.problems.append(Problem("source-unreadable", message, sid))
            return
        self.checked.append(sid)
        want = src.get("source_sha256")
        if want is None:
            self.problems.append(Problem("record-invalid", "no source_sha256 for a file source", sid))
        elif sha256(selected) != want:
            self.problems.append(Problem(
                "source-changed",
                f"{path} ({src.get('read_range') or 'whole'}) now hashes to {sha256(selected)[:16]}…, "
                f"the record says {str(want)[:16]}…", sid))
            return  # segment checks against a changed source would only repeat the news
        if self.plan is None or not segs:
            return
        self._check_selection(sid, src, segs, selected, origin)

    def _check_delivered(self, sid: str, src: Mapping[str, Any], segs: list[Any]) -> None:
        for seg in segs:
            if seg.get("status") in ("dropped", "merged") and seg.get("sha256") not in (None, _EMPTY_SHA):
                self.problems.append(Problem("record-tampered", "a dropped segment has a non-empty delivered sha256",
                                             sid, str(seg.get("id"))))
        self.problems.extend(_token_problems(sid, src, segs))
        body = None
        if self.text is not None and src.get("status") != "dropped" and not self.unannotated:
            body = self.blocks.get(sid)
            if body is None:
                self.problems.append(Problem("text-changed", "no block for this source in the delivered text", sid))
            elif src.get("sha256") and sha256(body) != src["sha256"]:
                self.problems.append(Problem("text-changed", "delivered block does not match the record's sha256 "
                                                             "for this source", sid))
                body = None
        elif self.text is not None and self.unannotated and src.get("sha256") == sha256(self.text):
            body = self.text  # the one source an unannotated text holds
        t_out, counter = src.get("tokens_out"), self.counter()
        if body is not None and isinstance(t_out, int) and counter is not None:
            # the block hashes to the record's sha256 for the source: the source's tokens_out counts it
            counted = counter.count(body)
            if counted != t_out:
                self.problems.append(Problem("record-inconsistent", f"tokens_out is {t_out} but the source's block "
                                             f"in the delivered text counts {counted} {unit_words(self.unit)}", sid))

    def counter(self) -> Any | None:
        """The record's token counter (None without one), loaded once."""
        if self._count_with is False:
            self._count_with = _counter(self.unit)
        return self._count_with

    def _check_selection(self, sid: str, src: Mapping[str, Any], segs: list[Any], selected: str, origin: Any) -> None:
        """Re-run the selection on the re-read source and compare segments and delivered words."""
        try:
            kind = src.get("original_kind") or src.get("kind", "text")
            source = Source(id=sid, text=selected, kind=kind, layer=src.get("layer", "fact"),
                            origin=origin, read_range=src.get("read_range") or "whole")
            again = reselect(source, self.plan, tokenizer=self.unit, stages=self.stages, budget=self.budget,
                             role=self.role)
            fresh = again.segments
        except Exception as exc:  # a stage failing here is a finding, not a crash
            self.problems.append(Problem("reselect-failed", f"re-running the selection failed: {exc}", sid))
            return
        self.n_segments += len(segs)
        self.problems.extend(_check_segments(sid, segs, fresh, src, self.counter()))
        self.vocab_texts += [selected, again.sources[0].text]
        body = self.blocks.get(sid)
        if body is not None:
            # every word delivered for this source must come from it (compression deletes, it never writes)
            extra = foreign_words(body, selected, again.sources[0].text, allowed=_abbreviation_words(self.plan))
            if extra:
                shown = ", ".join(repr(w) for w in extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
                self.problems.append(Problem("text-not-derivable", f"delivered words not in the source: {shown}", sid))


def _abbreviation_words(plan: Any) -> list[str]:
    return [w for pair in plan.abbreviations.items() for w in _WORD_RE.findall(" ".join(pair))]


def verify_record(
    record: Mapping[str, Any],
    text: str | None = None,
    *,
    plan: Any | None = None,
    stages: Mapping[str, Any] | None = None,
    base_dirs: Sequence[str | os.PathLike[str]] = (),
    sources_only: bool = False,
    text_only: bool = False,
) -> list[Problem]:
    """The problems :func:`verify_report` finds; an empty list means the record checks out."""
    return list(verify_report(record, text, plan=plan, stages=stages, base_dirs=base_dirs,
                              sources_only=sources_only, text_only=text_only).problems)


def _check_segments(sid: str, segs: list[Mapping[str, Any]], fresh: Sequence[Segment],
                    src: Mapping[str, Any], counter: Any | None = None) -> list[Problem]:
    from odcf.render import join_segments

    out: list[Problem] = []
    by_index = {s.index: s for s in fresh}
    if len(fresh) != len(segs):
        out.append(Problem("reselect-mismatch", f"the source re-segments into {len(fresh)} segments, the record "
                                                f"lists {len(segs)} (different plan or changed record)", sid))
    delivered: list[Segment] = []
    all_plain = True
    for seg in segs:
        seg_id = str(seg.get("id"))
        status = seg.get("status")
        idx = seg.get("index")
        again = by_index.get(idx) if isinstance(idx, int) else None
        if again is None:
            out.append(Problem("reselect-mismatch", f"no segment {idx!r} when the source is re-segmented", sid, seg_id))
            all_plain = False
            continue
        if status in ("verbatim", "reverted"):
            if seg.get("sha256") != sha256(again.original):
                out.append(Problem("text-substituted", f"delivered {status} text does not hash to the source's "
                                                       f"segment {idx} (text substituted or record edited)", sid, seg_id))
            elif counter is not None and isinstance(seg.get("tokens_out"), int) \
                    and seg["tokens_out"] != (counted := counter.count(again.original)):
                # it delivered the source segment as it is: its tokens_out counts that text
                out.append(Problem("record-inconsistent", f"tokens_out is {seg['tokens_out']} but the {status} "
                                                          f"text it delivered counts {counted} {unit_words(counter.name)}", sid, seg_id))
            delivered.append(again)
        elif status in ("dropped", "merged"):
            pass
        else:
            all_plain = False
        for span in seg.get("protected") or ():
            if status not in ("dropped", "merged") and str(span.get("text", "")) not in again.original:
                out.append(Problem("text-substituted", f"protected span {span.get('text')!r} ({span.get('rule')}) "
                                                       "is not in the source segment", sid, seg_id))
    if all_plain and delivered and src.get("sha256"):
        body = join_segments(sorted(delivered, key=lambda s: s.index))
        if sha256(body) != src["sha256"]:
            out.append(Problem("text-substituted", "the source's delivered verbatim segments do not re-assemble "
                                                   "to the record's sha256 for it", sid))
    return out


def _figure_problems(record: Mapping[str, Any], text: str | None) -> list[Problem]:
    """The record's own figures against each other (and the text): tokens out, the budget flags
    and the segment counts. An edited figure that no hash covers is caught here."""
    out: list[Problem] = []

    def bad(message: str) -> None:
        out.append(Problem("record-inconsistent", message))

    tokens_out, budget = record.get("tokens_out"), record.get("budget")
    counter = _counter(record.get("unit")) if text is not None else None
    if counter is not None and isinstance(tokens_out, int):
        counted = counter.count(text or "")
        if counted != tokens_out:
            bad(f"tokens_out is {tokens_out} but the delivered text counts {counted} {unit_words(record['unit'])}")
    tokens_in = record.get("tokens_in")
    ins = [src.get("tokens_in") for src in record["sources"]]
    if "handoff" not in record and isinstance(tokens_in, int) and all(isinstance(n, int) for n in ins) \
            and sum(ins) != tokens_in:
        # the assembler sums its sources' (a handoff counts its items as given: odcf.handoff.engine)
        bad(f"tokens_in is {tokens_in} but its sources' tokens_in add up to {sum(ins)}")
    if isinstance(tokens_out, int) and isinstance(budget, int):
        over = max(0, tokens_out - budget)
        if record.get("over_budget") is not None and bool(record["over_budget"]) != (over > 0):
            bad(f"over_budget is {record['over_budget']} but tokens_out {tokens_out} against budget {budget}")
        if isinstance(record.get("over_by"), int) and record["over_by"] != over:
            bad(f"over_by is {record['over_by']} but tokens_out {tokens_out} - budget {budget} gives {over}")
    counts = record.get("segments")
    if isinstance(counts, Mapping) and lists_segments(record):
        seen: dict[str, int] = {}
        for src in record["sources"]:
            for seg in src.get("segments") or ():
                if isinstance(seg, Mapping) and seg.get("status"):
                    seen[str(seg["status"])] = seen.get(str(seg["status"]), 0) + 1
        if {k: v for k, v in counts.items() if v} != seen:
            bad(f"segment counts {dict(counts)} do not match the segments listed {dict(sorted(seen.items()))}")
    return out


def _counter(unit: Any) -> Any | None:
    """The record's token counter, or None when there is none to count with (no unit, or an
    ``hf:PATH`` tokenizer that is not on this machine)."""
    if not unit:
        return None
    try:
        from odcf.tokens import get_counter

        return get_counter(str(unit))
    except Exception:  # an hf:PATH tokenizer that is not here: nothing to count with
        return None


def _token_problems(sid: str, src: Mapping[str, Any], segs: list[Any]) -> list[Problem]:
    """The token figures of one source and its segments that the assembler makes agree by construction
    (odcf.stages.assemble: a segment's ``tokens_out`` counts what it delivered, the empty text when it
    was dropped or merged, its ``tokens_in`` its original, which a verbatim or reverted segment delivers
    as it is; a source without a live segment delivers nothing). QA s31 edited a record three ways that
    verify passed: a dropped segment claiming its 26 tokens, the 63-token verbatim segment claiming 1,
    a source claiming 999 tokens of a 241-token text (the last one is recounted with the text: _Run)."""
    out: list[Problem] = []
    for seg in segs:
        status, t_in, t_out = seg.get("status"), seg.get("tokens_in"), seg.get("tokens_out")
        if not isinstance(t_out, int):
            continue
        if (status in ("dropped", "merged") or seg.get("sha256") == _EMPTY_SHA) and t_out != 0:
            # a segment left out delivers the empty text, which counts 0 tokens in every unit
            code = "record-tampered" if status in ("dropped", "merged") else "record-inconsistent"
            out.append(Problem(code, f"a {status} segment claims {t_out} delivered tokens (tokens_out); "
                                     "a segment that delivers no text counts 0", sid, str(seg.get("id"))))
        elif status in ("verbatim", "reverted") and isinstance(t_in, int) and t_out != t_in:
            out.append(Problem("record-inconsistent", f"a {status} segment delivers its text as it is, but its "
                                                      f"tokens_out is {t_out} and its tokens_in {t_in}",
                               sid, str(seg.get("id"))))
    t_out = src.get("tokens_out")
    live = [seg for seg in segs if seg.get("status") not in ("dropped", "merged")]
    if src.get("status") == "dropped":
        if (isinstance(t_out, int) and t_out != 0) or src.get("sha256") not in (None, _EMPTY_SHA):
            what = f"{t_out} delivered tokens (tokens_out)" if isinstance(t_out, int) and t_out else "a delivered sha256"
            out.append(Problem("record-tampered", f"a dropped source claims {what}; a dropped source delivers "
                                                  "no text", sid))
        if live:
            out.append(Problem("record-inconsistent", f"the source is dropped, but {len(live)} of its segments "
                                                      f"are not (the first: {live[0].get('id')!r}, "
                                                      f"{live[0].get('status')})", sid))
    elif segs and not live:
        out.append(Problem("record-inconsistent", f"every segment of the source is dropped or merged, but its "
                                                  f"status is {src.get('status')!r}, not 'dropped'", sid))
    elif src.get("sha256") == _EMPTY_SHA and isinstance(t_out, int) and t_out != 0:
        out.append(Problem("record-inconsistent", f"the source delivered the empty text (its sha256) but claims "
                                                  f"{t_out} tokens (tokens_out)", sid))
    return out


def _listing_problems(record: Mapping[str, Any], notes: list[str], *, sources_only: bool) -> list[Problem]:
    """A record that does not list the segments it counts. A genuine record lists every segment of
    every source, with its status and reason, or says ``segment_details: false``; a record whose
    entries were removed would otherwise verify with nothing re-checked (and every drop reason gone)."""
    counts = record.get("segments") if isinstance(record.get("segments"), Mapping) else {}
    counted = sum(counts.values())
    summary = {k: v for k, v in counts.items() if v}
    listed = [src for src in record["sources"] if src.get("segments")]
    # a source that delivered text has segments (a source without any is "dropped")
    unlisted = [src for src in record["sources"] if not src.get("segments")
                and (src.get("status") != "dropped" or (src.get("tokens_out") or 0) > 0)]
    if record.get("segment_details") is False:
        if listed:
            return [Problem("record-inconsistent", f"segment_details is false, but {len(listed)} source(s) "
                                                   "list their segments")]
        if counted or unlisted:
            notes.append(f"the record was written with segment_details=False: it lists none of its {counted} "
                         "segment(s), so none is re-checked")
        return []
    if listed:  # segment_details is one switch for the whole record: all sources list theirs, or none does
        return [Problem("segments-missing", f"the source delivered text ({src.get('status')}, "
                        f"{src.get('tokens_out')} tokens) but lists no segment, while other sources list "
                        "theirs: its segment entries were removed", str(src.get("id"))) for src in unlisted]
    if not counted and not unlisted:
        return []  # nothing to list: every source was empty
    said = f"its summary counts {summary}" if counted else f"{len(unlisted)} source(s) say they delivered text"
    older = not isinstance(record.get("record_format"), int) or record["record_format"] < 2
    if older and sources_only:
        notes.append(f"the record lists no segment although {said}: accepted (--sources-only) as a record of "
                     "format 1 written with segment_details=False; its segments are not re-checked")
        return []
    how = ("; a format-1 record written with segment_details=False by an older odcf looks the same: "
           "--sources-only accepts it") if older else " (a record lists them unless it says segment_details: false)"
    return [Problem("segments-missing", f"the record lists no segment, but {said}: the segment entries, each "
                                        f"with its status and drop reason, were removed{how}")]


def lists_segments(record: Any) -> bool:
    """Whether a delivery record lists its segments (``segment_details``; a record without them
    lists none to count or re-check)."""
    return isinstance(record, Mapping) and any(
        isinstance(src, Mapping) and src.get("segments") for src in record.get("sources") or ())


def has_segments(record: Any) -> bool:
    """Whether a delivery record has segments to re-check: it lists some, or its summary counts some."""
    counts = record.get("segments") if isinstance(record, Mapping) else None
    return lists_segments(record) or (isinstance(counts, Mapping) and any(
        isinstance(n, int) and n > 0 for n in counts.values()))


#: How a note of a skipped segment check says what to pass: the record's own ontology works as the
#: plan or trace do (QA s33 R3: the note said "pass --plan or --trace" beside a FAIL line naming --ontology).
PASS_THE_PLAN = "pass its ontology (--ontology), --plan or --trace"


def _plan_for(record: Mapping[str, Any], notes: list[str]) -> Any | None:
    """The bundled plan named by the record's domain, when its hash matches the record."""
    domain = record.get("domain")
    if not domain:
        notes.append(f"record names no domain; segment checks skipped ({PASS_THE_PLAN})")
        return None
    try:
        from odcf.plan.compiler import compile_file

        plan = compile_file(str(domain))
    except Exception as exc:  # no bundled ontology of that name
        notes.append(f"no bundled ontology {domain!r} ({exc}); segment checks skipped ({PASS_THE_PLAN})")
        return None
    if plan.hash != record.get("plan_hash"):
        notes.append(f"bundled ontology {domain!r} has plan hash {plan.hash[:12]}, the record "
                     f"{str(record.get('plan_hash'))[:12]}; segment checks skipped ({PASS_THE_PLAN})")
        return None
    return plan
