"""Reading batch input (JSON Lines, gzipped JSON Lines, Parquet, or a directory of them) lazily,
and writing JSON Lines / Parquet atomically.

Reading never holds more than one record (JSON Lines) or one row batch (Parquet) in memory.
Every input record gets a *key* ``(file number, record number)`` in a deterministic order:
files sorted by their path relative to the input directory, records in file order. Blank
lines in JSON Lines are not records (they are neither read nor counted).

A line that is not JSON, not UTF-8, or longer than the reading limit is still a record: it
comes back as a :class:`RawRecord` with ``error`` set, so that the job reports it instead of
failing.

>>> files = discover_inputs("tests/batch")        # doctest: +SKIP
>>> for raw in read_records(files):               # doctest: +SKIP
...     print(raw.key, raw.where, raw.error)
"""
from __future__ import annotations

import base64
import datetime
import decimal
import gzip
import hashlib
import json
import logging
import math
import os
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from odcf.errors import InputError

logger = logging.getLogger(__name__)

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
_READ_BLOCK = 1 << 20
_WS = b" \t\r\n"

Key = tuple[int, int]


@dataclass(frozen=True)
class InputFile:
    """One input file: its number in the job, its absolute path, and the name reports use."""

    no: int
    path: str
    name: str
    format: str  # "jsonl" | "parquet"
    size: int
    mtime_ns: int

    def fingerprint(self) -> dict[str, Any]:
        """What must not change between a run and its ``--resume``."""
        return {"name": self.name, "format": self.format, "size": self.size, "mtime_ns": self.mtime_ns}


@dataclass(frozen=True)
class RawRecord:
    """A record as read: the parsed JSON value, or why it could not be parsed.

    ``where`` is ``{"file": name, "line": n}`` (JSON Lines, 1-based) or ``{"file": name, "row": n}``
    (Parquet, 0-based). ``detail`` holds what the error file needs when ``record`` is absent:
    ``raw`` (the line as text), ``raw_base64`` (its bytes, for invalid UTF-8), or ``raw_bytes`` and
    ``raw_sha256`` for a line above the reading limit, which is not copied.
    """

    key: Key
    where: dict[str, Any]
    record: Any = None
    error: str | None = None
    #: the id of a record refused after it parsed (nested too deep): its error row names it
    rid: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def format_of(path: str) -> str | None:
    low = path.lower()
    if low.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if low.endswith(PARQUET_SUFFIXES):
        return "parquet"
    return None


def discover_inputs(path: str | os.PathLike[str], *, warn: bool = True) -> list[InputFile]:
    """The input files of a job: *path* itself, or every JSON Lines / Parquet file under a directory
    (recursively, hidden entries skipped), sorted by relative path so the order is deterministic.
    With *warn*, the files left unread (another format, hidden ones) are named in one warning."""
    root = Path(path)
    if not root.exists():
        raise InputError(f"{root}: no such file or directory")
    st = root.stat()
    if stat.S_ISREG(st.st_mode):
        fmt = format_of(root.name)
        if fmt is None:
            raise InputError(
                f"{root}: unknown input format (use {', '.join(JSONL_SUFFIXES + PARQUET_SUFFIXES)})"
            )
        return [InputFile(0, str(root.resolve()), root.name, fmt, st.st_size, st.st_mtime_ns)]
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(f"{root}: {_not_regular(st.st_mode)}")
    found: list[tuple[str, Path, str]] = []
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        skipped.extend((Path(dirpath) / d).relative_to(root).as_posix() + "/ (hidden folder)"
                       for d in dirnames if d.startswith("."))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for fn in filenames:
            fmt = format_of(fn)
            if fn.startswith(".") or fmt is None:
                if fn.startswith(".") and fmt is not None:  # a data file, hidden: say so
                    skipped.append((Path(dirpath) / fn).relative_to(root).as_posix() + " (hidden)")
                elif not fn.startswith(".") and not fn.startswith("_"):  # _SUCCESS and the like are markers
                    skipped.append((Path(dirpath) / fn).relative_to(root).as_posix())
                continue
            full = Path(dirpath) / fn
            rel = full.relative_to(root).as_posix()
            try:
                mode = full.stat().st_mode
            except OSError as exc:  # a link to a file that is gone
                raise InputError(f"{root}: {rel} cannot be read ({exc.strerror or exc}); a broken link?") from exc
            if not stat.S_ISREG(mode):
                raise InputError(f"{root}: {rel} {_not_regular(mode)}")
            found.append((rel, full, fmt))
    if not found:
        raise InputError(
            f"{root}: no input files in this directory (looked for {', '.join(JSONL_SUFFIXES + PARQUET_SUFFIXES)})"
        )
    if skipped and warn:
        skipped.sort()
        logger.warning("%s: %d file(s) or folder(s) are not read (hidden, or not %s): %s%s", root, len(skipped),
                       ", ".join(JSONL_SUFFIXES + PARQUET_SUFFIXES), ", ".join(skipped[:5]),
                       f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
    found.sort(key=lambda t: t[0])
    out = []
    for no, (name, full, fmt) in enumerate(found):
        st = full.stat()
        out.append(InputFile(no, str(full.resolve()), name, fmt, st.st_size, st.st_mtime_ns))
    return out


def _not_regular(mode: int) -> str:
    """Why an input path that is neither a regular file nor a folder cannot be read. A job reads
    its input more than once (to count the records, to compress them, and again on ``--resume``)
    and fingerprints it by size and time: a pipe can be read only once and has neither."""
    if stat.S_ISFIFO(mode):
        kind = "a FIFO: a named pipe, or a process substitution such as <(zcat x.gz)"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a device"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    else:
        kind = "not a plain file"
    return (f"is not a regular file or folder ({kind}); a batch job reads its input more than once "
            "(to count, to compress, and on --resume): write it to a file first")


def line_limit(max_chars: int) -> int:
    """Longest JSON Lines line read into memory: a character may take up to 6 bytes in JSON
    (``\\uXXXX``), plus 1 MiB for the other fields. Longer lines are reported, not read."""
    return 6 * max_chars + (1 << 20)


# --------------------------------------------------------------------------- reading


def _open_binary(f: InputFile) -> IO[bytes]:
    if f.path.lower().endswith(".gz"):
        return gzip.open(f.path, "rb")  # type: ignore[return-value]
    return open(f.path, "rb")


def _file_lines(f: InputFile, limit: int) -> Iterator[tuple[int, bytes | None, int, str]]:
    """:func:`_lines` of a JSON Lines file; a file that cannot be read to its end (a corrupt or
    truncated gzip, a read error) is one :class:`InputError` naming it and the last line read."""
    lineno = 0
    if f.size == 0 and f.path.lower().endswith(".gz"):
        # gzip.open reads an empty file as no lines: a failed upload would pass as an empty input
        raise InputError(f"{f.name}: not a readable gzip file (it is empty: 0 bytes); no line could be read")
    try:
        with _open_binary(f) as fh:
            if fh.peek(2)[:2] in (b"\xff\xfe", b"\xfe\xff"):  # type: ignore[attr-defined]
                # read as UTF-8 every line would be an error of its own, none saying why
                raise InputError(f"{f.name}: is UTF-16 (it opens with a UTF-16 byte order mark); JSON Lines "
                                 "must be UTF-8: convert it first (iconv -f UTF-16 -t UTF-8)")
            for item in _lines(fh, limit):
                lineno = item[0]
                yield item
    except (OSError, EOFError, zlib.error) as exc:
        kind = "gzip file" if f.path.lower().endswith(".gz") else "file"
        raise InputError(f"{f.name}: not a readable {kind} ({exc}); "
                         + (f"it breaks after line {lineno}" if lineno else "no line could be read")) from exc


def _lines(fh: IO[bytes], limit: int) -> Iterator[tuple[int, bytes | None, int, str]]:
    """Yield ``(line number, bytes or None when too long, size, sha256 of a too-long line)`` for
    every non-blank line, reading at most *limit* bytes of a line into memory."""
    lineno = 0
    while True:
        chunk = fh.readline(limit + 1)
        if not chunk:
            return
        lineno += 1
        if lineno == 1 and chunk.startswith(b"\xef\xbb\xbf") and not chunk[3:].strip(_WS):
            continue  # a byte order mark alone on the first line: no record
        if len(chunk) <= limit or chunk.endswith(b"\n"):
            if chunk.strip(_WS):
                yield lineno, chunk, len(chunk), ""
            continue
        # Too long: stream the rest of the line through a hash without keeping it.
        digest = hashlib.sha256(chunk)
        size = len(chunk)
        while not chunk.endswith(b"\n"):
            chunk = fh.readline(_READ_BLOCK)
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
        yield lineno, None, size, digest.hexdigest()


def _parse_line(key: Key, where: dict[str, Any], data: bytes | None, size: int, sha: str,
                limit: int) -> RawRecord:
    if data is None:
        return RawRecord(key, where, error=(
            f"line too long: {size:,} bytes, above the reading limit of {limit:,} bytes "
            "(raise --max-chars); the record is not copied here, it stays in the input"
        ), detail={"raw_bytes": size, "raw_sha256": sha})
    body = data.rstrip(b"\r\n")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RawRecord(key, where, error=f"invalid UTF-8 at byte {exc.start}: {exc.reason}", detail={
            "raw": body.decode("utf-8", errors="replace"),
            "raw_base64": base64.b64encode(body).decode("ascii"),
        })
    if key[1] == 0 and text.startswith("\ufeff"):
        text = text[1:]  # a byte order mark that a Windows tool put before the first record
    repeated: list[_Repeated] = []
    try:
        value = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_object_hook(repeated))
    except json.JSONDecodeError as exc:
        hint = ""
        if "\r" in text and exc.msg == "Extra data":
            hint = ("; the line holds carriage returns: the file may end its lines with CR alone "
                    "(old Mac style), which JSON Lines does not; convert them to LF (tr '\\r' '\\n')")
        return RawRecord(key, where, error=f"invalid JSON: {exc.msg} at column {exc.colno}{hint}",
                         detail={"raw": text})
    except RecursionError:
        return RawRecord(key, where, error="invalid JSON: nested too deeply", detail={"raw": text})
    except ValueError as exc:  # NaN / Infinity, an integer of over 4,300 digits
        return RawRecord(key, where, error=f"invalid JSON: {exc}", detail={"raw": text})
    depth = nesting_depth(value)
    if depth > MAX_DEPTH:
        return RawRecord(key, where, error=(
            f"record nested {depth} levels deep, above the limit of {MAX_DEPTH} (it could not be "
            "handed to a worker process)"), detail={"raw": text}, rid=_usable_id(value))
    if repeated:
        # json.loads keeps the last of two values silently; which one the writer meant is a guess
        path, name = _first_repeat(value) or ("", repeated[0].key)
        return RawRecord(key, where, error=(
            f"duplicate key {name!r} in {path or 'the record'}: it is given twice, and which value is "
            "meant cannot be told"), detail={"raw": text},
            rid=None if (path, name) == ("", "id") else _usable_id(value))
    return RawRecord(key, where, record=value)


def _usable_id(value: Any) -> str | None:
    """The id a record refused while reading claims (as :func:`odcf.batch.records.record_id`)."""
    rid = value.get("id") if isinstance(value, dict) else None
    return str(rid) if isinstance(rid, (str, int)) and not isinstance(rid, bool) and str(rid).strip() else None


class _Repeated(dict):  # type: ignore[type-arg]
    """A JSON object whose text gives a key twice (``key`` is the first one repeated)."""

    key: str


def _object_hook(found: list[_Repeated]) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    """An ``object_pairs_hook`` that builds dicts as json does and marks (and collects in
    *found*) the objects that give a key twice."""
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        marked = _Repeated(obj)
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                marked.key = k
                break
            seen.add(k)
        found.append(marked)
        return marked
    return hook


def _first_repeat(value: Any, path: str = "") -> tuple[str, str] | None:
    """``(path, key)`` of the outermost, first object in *value* that gives a key twice (path
    ``""`` is the record itself). There is one whenever the hook marked any object: a marked
    object that was dropped as an overwritten value sits under an object that repeats a key."""
    if isinstance(value, _Repeated):
        return path, value.key
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in children:
        if isinstance(v, (dict, list)):
            found = _first_repeat(v, f"{path}[{k}]" if isinstance(k, int) else (f"{path}.{k}" if path else str(k)))
            if found is not None:
                return found
    return None


#: Deepest record structure accepted: deeper ones cannot be pickled to worker processes (nor
#: sent to Ray), so a job's result would depend on its worker count.
MAX_DEPTH = 100


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """Levels of lists and objects in *value* (a scalar is 0), counted up to ``limit + 1``.

    >>> nesting_depth({"a": [1, {"b": []}]}), nesting_depth("x")
    (4, 0)
    """
    depth, level = 0, [value]
    while level and depth <= limit:
        nxt: list[Any] = []
        for v in level:
            if isinstance(v, dict):
                nxt.extend(v.values())
            elif isinstance(v, list):
                nxt.extend(v)
        if not any(isinstance(v, (dict, list)) for v in level):
            break
        depth += 1
        level = nxt
    return depth


def _read_jsonl(f: InputFile, skip: Callable[[Key], bool], limit: int) -> Iterator[RawRecord | Key]:
    n = 0
    for lineno, data, size, sha in _file_lines(f, limit):
        key = (f.no, n)
        n += 1
        if skip(key):
            yield key
            continue
        yield _parse_line(key, {"file": f.name, "line": lineno}, data, size, sha, limit)


def _read_parquet(f: InputFile, skip: Callable[[Key], bool], batch_rows: int) -> Iterator[RawRecord | Key]:
    pq = _pyarrow_parquet()
    try:
        pfile = pq.ParquetFile(f.path)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise InputError(f"{f.name}: not a readable Parquet file: {exc}") from exc
    n = 0
    with pfile:
        for batch in pfile.iter_batches(batch_size=batch_rows):
            keys = [(f.no, n + i) for i in range(batch.num_rows)]
            if all(skip(k) for k in keys):
                yield from keys
                n += batch.num_rows
                continue
            rows = batch.to_pylist()
            for i, (key, row) in enumerate(zip(keys, rows)):
                if skip(key):
                    yield key
                    continue
                yield RawRecord(key, {"file": f.name, "row": n + i}, record=jsonable(row))
            n += batch.num_rows


def read_records(files: Iterable[InputFile], *, skip: Callable[[Key], bool] | None = None,
                 max_chars: int = 2_000_000, batch_rows: int = 64) -> Iterator[RawRecord | Key]:
    """Every record of *files* in order. Records whose key *skip* accepts are yielded as their bare
    key (counted, not parsed): that is how ``--resume`` passes over finished parts."""
    skip = skip or (lambda key: False)
    limit = line_limit(max_chars)
    for f in files:
        if f.format == "jsonl":
            yield from _read_jsonl(f, skip, limit)
        else:
            yield from _read_parquet(f, skip, batch_rows)


def count_records(files: Iterable[InputFile], *, max_chars: int = 2_000_000) -> list[int]:
    """Records per file, counted independently of processing (used to reconcile the job's totals
    and for the progress bar's ETA). Parquet counts come from the file footer."""
    counts = []
    limit = line_limit(max_chars)
    for f in files:
        if f.format == "parquet":
            pq = _pyarrow_parquet()
            try:
                counts.append(pq.ParquetFile(f.path).metadata.num_rows)
            except Exception as exc:
                raise InputError(f"{f.name}: not a readable Parquet file: {exc}") from exc
        else:
            counts.append(sum(1 for _ in _file_lines(f, limit)))
    return counts


def _pyarrow_parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise InputError("Parquet needs pyarrow: pip install 'odcf[parquet]'") from exc
    return pq


# --------------------------------------------------------------------------- JSON helpers


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of a Parquet row value: bytes become base64 text, dates ISO strings,
    decimals strings, non-finite floats ``{"float": "nan"}`` (JSON has no NaN; an object, so that
    a NaN where text is expected is refused as not a string instead of read as the text "nan")."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": str(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (datetime.date, datetime.time, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return jsonable(value.tolist())
    return str(value)


def dumps(obj: Any) -> str:
    """Compact, deterministic JSON; a lone surrogate (legal in JSON input, not encodable as
    UTF-8) falls back to ``\\u`` escapes so the line stays valid UTF-8."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    return text


# --------------------------------------------------------------------------- atomic writing


#: Columns of a Parquet output file (``record`` is the delivery record as a JSON string).
OUTPUT_COLUMNS = ("id", "text", "tokens_in", "tokens_out", "record")


class ParquetRowsWriter:
    """Streams output rows into one Parquet file, a row group per :meth:`write` call."""

    def __init__(self, fh: IO[bytes]) -> None:
        import pyarrow as pa

        pq = _pyarrow_parquet()
        self._pa = pa
        self.schema = pa.schema([
            ("id", pa.string()), ("text", pa.string()), ("tokens_in", pa.int64()),
            ("tokens_out", pa.int64()), ("record", pa.string()),
        ])
        self._writer = pq.ParquetWriter(fh, self.schema, compression="zstd")

    def write(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        cols = {
            "id": [r["id"] for r in rows],
            "text": [r["text"] for r in rows],
            "tokens_in": [r["tokens_in"] for r in rows],
            "tokens_out": [r["tokens_out"] for r in rows],
            "record": [dumps(r["record"]) for r in rows],
        }
        self._writer.write_table(self._pa.table(cols, schema=self.schema))

    def close(self) -> None:
        self._writer.close()
