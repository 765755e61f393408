"""Reading batch input (JSON Lines, gzipped JSON Lines, Parquet, or a directory of them) lazily,
and writing JSON Lines / Parquet atomically.

Reading never holds more than one record (JSON Lines) or one row batch (Parquet) in memory.
Every input record gets a *key* ``(file number, record number)`` in a deterministic order:
files sorted by their path relative to the input directory, records in file order. Blank
lines in JSON Lines are not records (they are neither read nor counted).

A line that is not JSON, not UTF-8, longer than the reading limit, or that gives a key twice
is still a record: it comes back as a :class:`RawRecord` with ``error`` set, so that the job
reports it instead of failing. So does a Parquet row holding a value that cannot be read
(invalid UTF-8), and each row of a row group that cannot be read (a corrupt page).

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
import re
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from odcf.batch.records import binary_cell, record_id
from odcf.errors import InputError

logger = logging.getLogger(__name__)

JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
_READ_BLOCK = 1 << 20
_WS = b" \t\r\n"

Key = tuple[int, int]


@dataclass(frozen=True)
class InputFile:
    """One input file: its number in the job, its absolute path, the name error records use (its own
    name for a file given alone, its path from the input folder) and *given*, the path the user gave
    it by (the folder given joined with that name), which messages about the whole file use."""

    no: int
    path: str
    name: str
    format: str  # "jsonl" | "parquet"
    size: int
    mtime_ns: int
    given: str = ""

    @property
    def shown(self) -> str:
        """The file as messages name it: the path as given (``b/in.jsonl``), not only its name."""
        return self.given or self.name

    def fingerprint(self) -> dict[str, Any]:
        """What must not change between a run and its ``--resume``."""
        return {"name": self.name, "format": self.format, "size": self.size, "mtime_ns": self.mtime_ns}


@dataclass(frozen=True)
class RawRecord:
    """A record as read: the parsed JSON value, or why it could not be parsed.

    ``where`` is ``{"file": name, "line": n}`` (JSON Lines, 1-based) or ``{"file": name, "row": n}``
    (Parquet, 0-based). ``detail`` holds what the error file needs when ``record`` is absent:
    ``raw`` (the line as text), ``raw_base64`` (its bytes, for invalid UTF-8), or ``raw_bytes`` and
    ``raw_sha256`` for a line above the reading limit, which is not copied; for Parquet, ``record``
    (the row as far as it could be read) or ``row_group`` (the row group that could not be read).
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
    return discover(path, warn=warn)[0]


def discover(path: str | os.PathLike[str], *, warn: bool = True) -> tuple[list[InputFile], str]:
    """:func:`discover_inputs`, and the warning that names the entries of a folder left unread
    ("" when none is; logged with *warn*): a batch job also puts it in its summary's warnings."""
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
        return [InputFile(0, str(root.resolve()), root.name, fmt, st.st_size, st.st_mtime_ns, os.fspath(path))], ""
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
    unread = ""
    if skipped:
        skipped.sort()
        unread = (f"{root}: {len(skipped)} file(s) or folder(s) are not read (hidden, or not "
                  f"{', '.join(JSONL_SUFFIXES + PARQUET_SUFFIXES)}): {', '.join(skipped[:5])}"
                  + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""))
        if warn:
            logger.warning("%s", unread)
    found.sort(key=lambda t: t[0])
    out = []
    for no, (name, full, fmt) in enumerate(found):
        st = full.stat()
        out.append(InputFile(no, str(full.resolve()), name, fmt, st.st_size, st.st_mtime_ns,
                             os.path.join(os.fspath(path), name)))
    return out, unread


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
    return f"is not a regular file or folder ({kind}); {READS_TWICE}"


#: Why a batch job's input must be a regular file or folder (a pipe, stdin, can be read only once).
READS_TWICE = "a batch job reads its input more than once (to count, to compress, and on --resume): write it to a file first"


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
        raise InputError(f"{f.shown}: not a readable gzip file (it is empty: 0 bytes); no line could be read")
    try:
        with _open_binary(f) as fh:
            if fh.peek(2)[:2] in (b"\xff\xfe", b"\xfe\xff"):  # type: ignore[attr-defined]
                # read as UTF-8 every line would be an error of its own, none saying why
                raise InputError(f"{f.shown}: is UTF-16 (it opens with a UTF-16 byte order mark); JSON Lines "
                                 "must be UTF-8: convert it first (iconv -f UTF-16 -t UTF-8)")
            for item in _lines(fh, limit):
                lineno = item[0]
                yield item
    except (OSError, EOFError, zlib.error) as exc:
        kind = "gzip file" if f.path.lower().endswith(".gz") else "file"
        raise InputError(f"{f.shown}: not a readable {kind} ({exc}); "
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


#: A record's opening when its first key is "id": a string or an integer value.
_LEADING_ID_RE = re.compile(r'\s*\{\s*"id"\s*:\s*("(?:[^"\\\x00-\x1f]|\\.)*"|-?(?:0|[1-9][0-9]*)(?![0-9.eE]))')


def _leading_id(text: str) -> str | None:
    """The id of a record that cannot be parsed whole, when ``"id"`` is its first key (``{"id": "deep", …``)."""
    m = _LEADING_ID_RE.match(text)
    if not m:
        return None
    try:
        return record_id({"id": json.loads(m.group(1))})
    except ValueError:
        return None


def _deep_column(text: str) -> int | None:
    """The 1-based column of the bracket that opens level ``MAX_DEPTH + 1`` of *text* (strings skipped)."""
    depth = 0
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return i + 1
        elif ch in "]}":
            depth -= 1
    return None


def _readable_id(raw: str) -> str | None:
    """The id of a line that is not valid UTF-8, when the rest of it parses and the id itself was read
    intact (the error row then names the record, not ``null``)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    rid = record_id(value)
    return rid if rid is not None and "\ufffd" not in rid else None


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
        raw = body.decode("utf-8", errors="replace")
        return RawRecord(key, where, error=f"invalid UTF-8 at byte {exc.start}: {exc.reason}", detail={
            "raw": raw, "raw_base64": base64.b64encode(body).decode("ascii"),
        }, rid=_readable_id(raw))
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
        return RawRecord(key, where, error=f"invalid JSON: {exc.msg}{' ' if exc.msg.endswith(' at') else ' at '}column {exc.colno}{hint}",
                         detail={"raw": text})
    except RecursionError:  # deeper than Python's JSON reader goes: the id is read from the line's opening
        return _too_deep(key, where, text, _leading_id(text))
    except ValueError as exc:  # NaN / Infinity, an integer of over 4,300 digits
        return RawRecord(key, where, error=f"invalid JSON: {exc}", detail={"raw": text})
    if nesting_depth(value) > MAX_DEPTH:
        return _too_deep(key, where, text, record_id(value))
    if repeated:
        # json.loads keeps the last of two values silently; which one the writer meant is a guess
        path, name = _first_repeat(value) or ("", repeated[0].key)
        return RawRecord(key, where, error=(
            f"duplicate key {name!r} in {path or 'the record'}: it is given twice, and which value is "
            "meant cannot be told"), detail={"raw": text},
            rid=None if (path, name) == ("", "id") else record_id(value))
    return RawRecord(key, where, record=value)


def _too_deep(key: Key, where: dict[str, Any], text: str, rid: str | None) -> RawRecord:
    """The error row of a record nested deeper than :data:`MAX_DEPTH`, with the column where it passes
    the limit: the same whether Python's JSON reader gave up on it or read it (a record 101 to about
    1,000 levels deep), as the README gives it (QA s31: 101 levels were "record nested 101 levels deep,
    above the limit of 100 (it could not be handed to a worker process)", without the column)."""
    column = _deep_column(text)
    at = f" at column {column}" if column else ""
    error = f"record nested more than {MAX_DEPTH} levels deep (the limit){at}: too deep to read"
    return RawRecord(key, where, error=error, detail={"raw": text}, rid=rid)


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


def _open_parquet(f: InputFile) -> Any:
    """The ``ParquetFile`` of *f*; one :class:`InputError` for a file that does not open, or
    whose schema gives a column (or a struct field) name twice: a record is a mapping, so one
    of the two would be dropped without a word (pyarrow's own ``read_table`` refuses them)."""
    pq = _pyarrow_parquet()
    try:
        pfile = pq.ParquetFile(f.path)
    except Exception as exc:  # pyarrow raises several types for unreadable files
        raise InputError(f"{f.shown}: not a readable Parquet file: {_one_line(exc)}") from exc
    twice = _repeated_name(pfile.schema_arrow)
    if twice is not None:
        pfile.close()
        raise InputError(f"{f.shown}: {twice}; a record cannot hold both: rename one of them")
    return pfile


def _repeated_name(fields: Iterable[Any], where: str = "") -> str | None:
    """How a schema repeats a name (``two columns are named 'x'``), or None."""
    import pyarrow as pa

    seen: set[str] = set()
    for fld in fields:
        if fld.name in seen:
            return f"two fields of column {where!r} are named {fld.name!r}" if where else \
                f"two columns are named {fld.name!r}"
        seen.add(fld.name)
        t = fld.type
        while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            t = t.value_type
        if pa.types.is_struct(t):
            inner = _repeated_name(list(t), f"{where}.{fld.name}" if where else fld.name)
            if inner is not None:
                return inner
    return None


def _read_parquet(f: InputFile, skip: Callable[[Key], bool], batch_rows: int) -> Iterator[RawRecord | Key]:
    """The rows of *f*, one row group at a time. A row group that cannot be read (a corrupt
    page) does not end the job: each of its rows not yet read becomes a record with the error,
    and the next row group is read as usual. A value that cannot be converted (invalid UTF-8
    in a string) makes its row such a record too (see :func:`_batch_rows`)."""
    pfile = _open_parquet(f)
    with pfile:
        meta = pfile.metadata
        n = 0
        for group in range(meta.num_row_groups):
            end = n + meta.row_group(group).num_rows
            if all(skip((f.no, i)) for i in range(n, end)):  # resumed: not even decoded
                yield from ((f.no, i) for i in range(n, end))
                n = end
                continue
            batches = pfile.iter_batches(batch_size=batch_rows, row_groups=[group])
            failure = ""
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    break
                except Exception as exc:  # noqa: BLE001 - pyarrow raises OSError, ArrowInvalid, ... for a bad page
                    failure = f"{type(exc).__name__}: {_one_line(exc)}"
                    break
                yield from _batch_records(f, batch, n, skip)
                n += batch.num_rows
            if n < end:
                failure = failure or "it holds fewer rows than its footer says"
                reason = (f"row group {group} of the Parquet file cannot be read from row {n} on (rows {n} "
                          f"to {end - 1}, the rest of the group): {failure}")
                for i in range(n, end):
                    key = (f.no, i)
                    yield key if skip(key) else RawRecord(key, {"file": f.name, "row": i}, error=reason,
                                                           detail={"row_group": group})
                n = end


def _batch_records(f: InputFile, batch: Any, first: int, skip: Callable[[Key], bool]) -> Iterator[RawRecord | Key]:
    keys = [(f.no, first + i) for i in range(batch.num_rows)]
    if all(skip(k) for k in keys):
        yield from keys
        return
    rows, problems = _batch_rows(batch)
    for i, (key, row) in enumerate(zip(keys, rows)):
        if skip(key):
            yield key
        elif i in problems:
            found = problems[i]
            more = f" (and {len(found) - 1} more value(s) of the row)" if len(found) > 1 else ""
            yield RawRecord(key, {"file": f.name, "row": first + i}, error=found[0] + more,
                            detail={"record": row}, rid=record_id(row))
        else:
            yield RawRecord(key, {"file": f.name, "row": first + i}, record=row)


def _batch_rows(batch: Any) -> tuple[list[dict[str, Any]], dict[int, list[str]]]:
    """The rows of a record batch as JSON-ready dicts, and for each row that holds a value that
    cannot be converted, why (the value is kept in the row as well as it can be: the bytes of
    invalid UTF-8 as ``{"base64": ...}``, else null)."""
    columns: list[list[Any]] = []
    problems: dict[int, list[str]] = {}
    for name, arr in zip(batch.schema.names, batch.columns):
        values, bad = _column_values(name, arr)
        columns.append(values)
        for i, why in bad.items():
            problems.setdefault(i, []).append(why)
    if not columns:
        return [{} for _ in range(batch.num_rows)], problems
    names = batch.schema.names
    return [dict(zip(names, row)) for row in zip(*columns)], problems


def _column_values(name: str, arr: Any) -> tuple[list[Any], dict[int, str]]:
    """JSON-ready values of one column, and the problem of each row whose value cannot be read.

    The fast path is pyarrow's ``to_pylist``. Nanosecond times never take it: pyarrow turns them
    into pandas objects when pandas is installed and fails without it, so they are converted
    here, the same way with or without pandas. A column whose ``to_pylist`` fails is read again
    with its strings as bytes, to find the rows at fault and keep the others."""
    fast = None if _has_nanoseconds(arr.type) else _plain_values(arr)
    if fast is not None:
        return fast, {}
    bad: dict[int, str] = {}
    try:
        raw = arr.cast(_raw_type(arr.type)).to_pylist()
    except Exception:  # noqa: BLE001 - a type the raw cast does not cover: value by value
        values: list[Any] = []
        for i in range(len(arr)):
            try:
                values.append(jsonable(arr[i].as_py()))
            except Exception as exc:  # noqa: BLE001
                values.append(None)
                bad[i] = f"column {name!r}: the value cannot be read ({type(exc).__name__}: {_one_line(exc)})"
        return values, bad
    out: list[Any] = []
    for i, value in enumerate(raw):
        found: list[str] = []
        try:
            out.append(_from_raw(value, arr.type, name, "", found))
        except Exception as exc:  # noqa: BLE001 - a time out of Python's range, say
            out.append(None)
            found.insert(0, f"column {name!r}: the value cannot be read ({type(exc).__name__}: {_one_line(exc)})")
        if found:
            bad[i] = found[0]
    return out, bad


def _plain_values(arr: Any) -> list[Any] | None:
    """The column's values by pyarrow's ``to_pylist``; None when that fails (on invalid UTF-8,
    say: :func:`_column_values` then finds the rows at fault)."""
    try:
        return [jsonable(v) for v in arr.to_pylist()]
    except Exception:  # noqa: BLE001 - any failure is located row by row
        return None


def _is_ns(t: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_duration(t)) and t.unit == "ns"


def _children(t: Any) -> list[Any]:
    """The child fields of a nested Arrow type (struct fields, list items, map keys and items)."""
    import pyarrow as pa

    if pa.types.is_struct(t):
        return list(t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [t.value_field]
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if pa.types.is_dictionary(t):
        return [pa.field("value", t.value_type)]
    return []


def _has_nanoseconds(t: Any) -> bool:
    return _is_ns(t) or any(_has_nanoseconds(c.type) for c in _children(t))


def _raw_type(t: Any) -> Any:
    """*t* with strings read as bytes (decoded, and checked, in :func:`_from_raw`) and nanosecond
    times as their integer count."""
    import pyarrow as pa

    if pa.types.is_string(t):
        return pa.binary()
    if pa.types.is_large_string(t):
        return pa.large_binary()
    if _is_ns(t):
        return pa.int64()
    if pa.types.is_struct(t):
        return pa.struct([c.with_type(_raw_type(c.type)) for c in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_raw_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_raw_type(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_raw_type(t.value_type)), t.list_size)
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_raw_type(t.key_type)), t.item_field.with_type(_raw_type(t.item_type)))
    if pa.types.is_dictionary(t):
        return _raw_type(t.value_type)
    return t


def _from_raw(value: Any, t: Any, column: str, path: str, problems: list[str]) -> Any:
    """The JSON-ready value of *value*, read as :func:`_raw_type` of *t*; a string that is not
    UTF-8 is appended to *problems* and kept as its bytes."""
    import pyarrow as pa

    if value is None:
        return None
    if pa.types.is_dictionary(t):
        return _from_raw(value, t.value_type, column, path, problems)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            at = f" ({column}{path})" if path else ""
            problems.append(f"invalid UTF-8 in column {column!r}{at} at byte {exc.start}: {exc.reason} "
                            "(the record holds its bytes as base64)")
            return jsonable(value)
    if _is_ns(t):
        return _nanoseconds(value, t)
    if pa.types.is_struct(t):
        return {c.name: _from_raw(value[c.name], c.type, column, f"{path}.{c.name}", problems) for c in t}
    if pa.types.is_map(t):
        return [[_from_raw(k, t.key_type, column, f"{path}[{i}].key", problems),
                 _from_raw(v, t.item_type, column, f"{path}[{i}].value", problems)]
                for i, (k, v) in enumerate(value)]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [_from_raw(v, t.value_type, column, f"{path}[{i}]", problems) for i, v in enumerate(value)]
    return jsonable(value)


def _nanoseconds(count: int, t: Any) -> Any:
    """A nanosecond time as pandas would give it (its text, ISO 8601 with nine fraction digits
    when the nanoseconds are not whole microseconds), without pandas; a duration in seconds."""
    import pyarrow as pa

    if pa.types.is_duration(t):
        return count / 1e9
    micros, nanos = divmod(count, 1000)
    value = pa.scalar(micros, pa.timestamp("us", t.tz) if pa.types.is_timestamp(t) else pa.time64("us")).as_py()
    if not nanos:
        return value.isoformat()
    whole = value.replace(microsecond=0).isoformat()  # "…T10:20:30" then the offset, if any
    cut = whole.index(":") + 6
    return f"{whole[:cut]}.{value.microsecond:06d}{nanos:03d}{whole[cut:]}"


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line of printable text (pyarrow's span several lines, and
    a corrupt file's bytes can end up in them)."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(exc))
    return " ".join(text.split()) or type(exc).__name__


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
            with _open_parquet(f) as pfile:
                counts.append(pfile.metadata.num_rows)
        else:
            counts.append(sum(1 for _ in _file_lines(f, limit)))
    return counts


def parquet_columns(f: InputFile) -> list[str]:
    """The top-level column names of a Parquet input file (from its footer)."""
    with _open_parquet(f) as pfile:
        return list(pfile.schema_arrow.names)


def _pyarrow_parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise InputError("Parquet needs pyarrow: pip install 'odcf[parquet]'") from exc
    return pq


# --------------------------------------------------------------------------- JSON helpers


def jsonable(value: Any) -> Any:
    """A JSON-ready copy of a Parquet row value: bytes (a binary column) their UTF-8 text, or
    ``{"base64": ...}`` saying why they are not text (:func:`~odcf.batch.records.binary_cell`), dates ISO strings,
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
        return binary_cell(bytes(value))
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
    """Streams output rows into one Parquet file, in row groups of :attr:`GROUP_ROWS` rows whatever
    the calls to :meth:`write` (so the file's bytes do not depend on ``--chunk-size``)."""

    GROUP_ROWS = 1024

    def __init__(self, fh: IO[bytes]) -> None:
        import pyarrow as pa

        pq = _pyarrow_parquet()
        self._pa = pa
        self.schema = pa.schema([
            ("id", pa.string()), ("text", pa.string()), ("tokens_in", pa.int64()),
            ("tokens_out", pa.int64()), ("record", pa.string()),
        ])
        self._writer = pq.ParquetWriter(fh, self.schema, compression="zstd")
        self._pending: list[dict[str, Any]] = []

    def write(self, rows: list[dict[str, Any]]) -> None:
        self._pending.extend(rows)
        while len(self._pending) >= self.GROUP_ROWS:
            self._group(self._pending[:self.GROUP_ROWS])
            del self._pending[:self.GROUP_ROWS]

    def _group(self, rows: list[dict[str, Any]]) -> None:
        cols = {
            "id": [r["id"] for r in rows],
            "text": [r["text"] for r in rows],
            "tokens_in": [r["tokens_in"] for r in rows],
            "tokens_out": [r["tokens_out"] for r in rows],
            "record": [dumps(r["record"]) for r in rows],
        }
        self._writer.write_table(self._pa.table(cols, schema=self.schema))

    def close(self) -> None:
        if self._pending:
            self._group(self._pending)
            self._pending = []
        self._writer.close()
