"""JSON and JSON Lines minification: same values, no insignificant whitespace.

The preferred form is ``json.dumps(obj, ensure_ascii=False, separators=(",", ":"))`` (it also
decodes ``\\uXXXX`` escapes, which saves tokens). That form is used only when it is exact:
when an object repeats a key (``json.loads`` would keep only the last one) or a number would be
re-spelled (``1.50`` → ``1.5``, ``1E5`` → ``100000.0``), the text is minified by removing the
whitespace between tokens instead, so every number and key stays as written.

>>> minify_json('{"a": [1, 2.50],\\n "b": "x y"}')
('{"a":[1,2.50],"b":"x y"}', {'format': 'json', 'method': 'whitespace', 'reason': 'number 2.50 would be re-spelled', 'chars_in': 29, 'chars_out': 24})
>>> minify_json('not json')[1]["valid"]
False

In a document (markdown, an agent's log), a fenced block whose body is one JSON object or array
(a tool's answer under ```json, or under an unlabelled fence) is minified the same way, inside its
fences (:func:`minify_fenced_json`); the segmenter then cuts it as it cuts a JSON source.
"""
from __future__ import annotations

import json
import re
from typing import Any

from odcf.textutil import loads_json

#: A line that opens a fenced block, as the segmenter reads it: its indentation, fence and info string.
_FENCE_OPEN_RE = re.compile(r"^([ \t]*)(```|~~~)(.*)$")
#: The info string of a fence whose body is read as JSON when it parses: none, or one that names
#: JSON ("json", "JSON", "jsonc", "json5"); a fence of another language keeps its code lines.
_JSON_INFO_RE = re.compile(r"(?i:json\w*)?(?:\s.*)?$")
#: The info string of a fence whose body is read as JSON Lines when each of its lines is a JSON object or
#: array: one that names JSON ("jsonl", "json"), "ndjson", or none.
_JSON_LINES_INFO_RE = re.compile(r"(?i:json\w*|ndjson)?(?:\s.*)?$")

# A JSON string literal, or a run of whitespace outside strings.
_TOKENS = re.compile(r'("(?:[^"\\]|\\.)*")|[ \t\r\n]+', re.DOTALL)


class _Inexact(Exception):
    """json.dumps would not reproduce the input's keys or numbers exactly."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _Inexact(f"duplicate key {dup!r}")
    return obj


def _float(s: str) -> float:
    value = float(s)
    if json.dumps(value) != s:
        raise _Inexact(f"number {s} would be re-spelled")
    return value


def _int(s: str) -> int:
    value = int(s)
    if str(value) != s:  # -0
        raise _Inexact(f"number {s} would be re-spelled")
    return value


def _strip_whitespace(text: str) -> str:
    return _TOKENS.sub(lambda m: m.group(1) or "", text)


def _minify_one(text: str) -> tuple[str, str, str | None]:
    """Minify one JSON value. Returns (text, method, reason). Raises ValueError when invalid."""
    try:
        obj = loads_json(text, object_pairs_hook=_pairs, parse_float=_float, parse_int=_int)
    except _Inexact as exc:
        loads_json(text)  # still validates; raises ValueError when the text is not JSON at all
        return _strip_whitespace(text.strip()), "whitespace", str(exc)
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")), "json.dumps", None


def _where(exc: json.JSONDecodeError, line_offset: int = 0) -> str:
    return f"line {exc.lineno + line_offset} column {exc.colno}: {exc.msg}"


def minify_json(text: str) -> tuple[str, dict[str, Any]]:
    """Minify a JSON document or JSON Lines. Returns ``(text, report)``.

    Invalid input is returned unchanged with ``report == {"valid": False, "error": "line L column C: ..."}``.
    JSON Lines (one value per non-blank line) are minified line by line; blank lines are
    dropped and counted in ``report["blank_lines"]``.
    """
    stripped = text.strip()
    if not stripped:
        return text, {"valid": False, "error": "empty text"}
    try:
        out, method, reason = _minify_one(stripped)
        fmt = "json"
        blank = 0
    except json.JSONDecodeError as first:
        lines = text.split("\n")
        if len([ln for ln in lines if ln.strip()]) < 2:
            return text, {"valid": False, "error": _where(first)}
        parts: list[str] = []
        methods: set[str] = set()
        reason = None
        blank = 0
        for i, line in enumerate(lines):
            if not line.strip():
                blank += 1
                continue
            try:
                piece, m, r = _minify_one(line.strip())
            except json.JSONDecodeError as exc:
                # Not JSON Lines either: report where the whole text first failed to parse.
                del exc
                return text, {"valid": False, "error": _where(first), "jsonl_error": f"line {i + 1}: not a JSON value"}
            parts.append(piece)
            methods.add(m)
            reason = reason or r
        out = "\n".join(parts)
        fmt = "jsonl"
        method = "whitespace" if "whitespace" in methods else "json.dumps"
        blank = max(0, blank - (1 if text.endswith("\n") else 0))
    report: dict[str, Any] = {"format": fmt, "method": method}
    if reason:
        report["reason"] = reason
    if blank:
        report["blank_lines"] = blank
    report["chars_in"] = len(text)
    report["chars_out"] = len(out)
    return out, report


def json_fence(opening: str, body: str) -> bool:
    """Whether a fenced block opened by the line *opening* ("```json", "```") holds in *body* one
    JSON object or array (:func:`json_record`), which the segmenter cuts as it cuts a JSON source.

    >>> json_fence("```json", '{"a": [1, 2]}'), json_fence("```", "[1]"), json_fence("```python", "[1]")
    (True, True, False)
    >>> json_fence("```json", '{"a": 1} {"b": 2}')  # JSON Lines: one value a line, not one value
    False
    """
    m = _FENCE_OPEN_RE.match(opening)
    return m is not None and _JSON_INFO_RE.match(m.group(3).strip()) is not None and json_record(body)


def json_record(line: str) -> bool:
    """Whether *line* is one JSON object or array (a record of JSON Lines).

    >>> json_record('{"level": "ERROR", "id": 7}'), json_record("[1, 2]"), json_record('{"a": 1},')
    (True, True, False)
    """
    stripped = line.strip()
    if stripped[:1] not in ("{", "[") or stripped[-1:] not in ("}", "]"):
        return False
    try:
        loads_json(stripped)
    except ValueError:
        return False
    return True


def json_lines_fence(opening: str) -> bool:
    """Whether a fenced block opened by the line *opening* may hold JSON Lines, which the segmenter
    cuts into records when each of its lines is a JSON object or array.

    >>> json_lines_fence("```jsonl"), json_lines_fence("~~~ndjson"), json_lines_fence("```"), json_lines_fence("```py")
    (True, True, True, False)
    """
    m = _FENCE_OPEN_RE.match(opening)
    return m is not None and _JSON_LINES_INFO_RE.match(m.group(3).strip()) is not None


def minify_fenced_json(text: str) -> tuple[str, dict[str, Any]]:
    """Minify the body of each fenced block of *text* that holds one JSON object or array
    (:func:`json_fence`), inside its fences and at the fence's indentation, the values unchanged
    (as :func:`minify_json`). A fence closes at the next line that opens with the same fence, as
    the segmenter reads it; an unclosed fence is left as it is. Returns ``(text, report)``, the
    report empty when no block changed.

    >>> out, rep = minify_fenced_json('Result:\\n\\n```json\\n{\\n  "id": 7,\\n  "ok": true\\n}\\n```\\n')
    >>> print(out)
    Result:
    <BLANKLINE>
    ```json
    {"id":7,"ok":true}
    ```
    <BLANKLINE>
    >>> rep
    {'format': 'fenced json', 'blocks': 1, 'chars_in': 49, 'chars_out': 40}
    """
    lines = text.split("\n")
    out: list[str] = []
    blocks = 0
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN_RE.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(m.group(2)):
            j += 1
        if j >= len(lines):  # unclosed: the rest of the text, as it is
            out.extend(lines[i:])
            break
        body = "\n".join(lines[i + 1:j])
        cr = "\r" if lines[i].endswith("\r") else ""
        if json_fence(lines[i], body):
            minified, _, _ = _minify_one(body.strip())
            line = m.group(1) + minified + cr
            if lines[i + 1:j] != [line]:
                out.extend([lines[i], line, lines[j]])
                blocks += 1
                i = j + 1
                continue
        out.extend(lines[i:j + 1])
        i = j + 1
    if not blocks:
        return text, {}
    result = "\n".join(out)
    return result, {"format": "fenced json", "blocks": blocks, "chars_in": len(text), "chars_out": len(result)}
