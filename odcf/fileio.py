"""Reading text files the one way odcf reads them, and writing files safely: atomic replacement
that respects links, devices and permissions.

Imports nothing from odcf but its errors, so the CLI, the batch runner, the report writers and
``odcf verify`` can all use it.
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Any

from odcf.errors import InputError

_BOM = "\ufeff"


def decode_text(raw: bytes, where: str, *, allow_nul: bool = False) -> str:
    """The text of a file's bytes as odcf reads it: UTF-8, a leading byte-order mark removed.

    The BOM is an encoding marker, not text: ``odcf compress`` does not deliver it, and the
    record's ``source_sha256`` is the hash of the text without it, which is what ``odcf verify``
    re-reads. A UTF-16 file (its BOM) and invalid UTF-8 are an :class:`InputError`, invalid UTF-8
    naming its line, column and byte offset in the file (``a.txt:2: invalid UTF-8 at byte 29 (line 2,
    column 9): b'\\xff…'``); so is a NUL byte (binary data, not text) unless *allow_nul*.

    >>> decode_text(b"\\xef\\xbb\\xbfPay $5.", "a.txt")
    'Pay $5.'
    """
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError(f"{where}: a UTF-16 file (it starts with a byte-order mark); odcf reads UTF-8: convert it")
    if not allow_nul and b"\x00" in raw:
        raise InputError(f"{where}: binary data, not text (a NUL byte at offset {raw.index(0)}); odcf reads "
                         "UTF-8 text: extract the text first")
    try:
        text = raw.decode("utf-8")  # not utf-8-sig: an error's offset counts the BOM's bytes too
    except UnicodeDecodeError as exc:
        # FILE:LINE as for an ontology's problems: a byte offset alone needs a hex editor in a long log
        line = raw.count(b"\n", 0, exc.start) + 1
        start = raw.rfind(b"\n", 0, exc.start) + 1
        before = raw[start:exc.start].decode("utf-8")  # what precedes the bad byte decodes
        column = len(before[1:] if start == 0 and before.startswith(_BOM) else before) + 1  # a BOM is no text
        raise InputError(f"{where}:{line}: invalid UTF-8 at byte {exc.start} (line {line}, column {column}): "
                         f"{raw[exc.start:exc.start + 4]!r}") from exc
    return text[1:] if text.startswith(_BOM) else text


def read_text(path: str | os.PathLike[str], *, allow_nul: bool = False) -> str:
    """Read *path* with :func:`decode_text`; a file that cannot be read is an :class:`InputError` too."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return decode_text(raw, str(path), allow_nul=allow_nul)


#: sha256 of files, by (resolved path, mtime_ns, size): a 17 MB model is hashed once per process.
_SHA256: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file (hex), computed once per path, modification time and size."""
    resolved = Path(path).resolve()
    st = resolved.stat()
    key = (str(resolved), st.st_mtime_ns, st.st_size)
    digest = _SHA256.get(key)
    if digest is None:
        h = hashlib.sha256()
        with open(resolved, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        digest = _SHA256[key] = h.hexdigest()
    return digest


class AtomicFile:
    """A file written under a temporary name in the target's folder, fsynced, then renamed over
    the target with :func:`os.replace`: readers see the old file or the complete new one.

    A symbolic link is written through (the file it names is replaced, the link stays); a target
    that exists and is not a regular file (``/dev/stdout``, a FIFO) is written directly, as there
    is nothing to rename over. A new file gets the permissions the umask allows (not the 0600 of a
    temporary file); a replaced one keeps its own. Missing folders are created.

    >>> with AtomicFile("out.jsonl") as fh:     # doctest: +SKIP
    ...     fh.write(b'{"id":"a"}\\n')
    """

    def __init__(self, target: str | os.PathLike[str]) -> None:
        self.target = Path(target)
        self._fh: IO[bytes] | None = None
        self._tmp: str | None = None
        self._real = self.target

    def __enter__(self) -> IO[bytes]:
        self._real = Path(os.path.realpath(self.target))
        if self._real.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(self.target))
        if self._real.exists() and not self._real.is_file():
            self._fh = open(self._real, "wb")  # noqa: SIM115 - closed in __exit__
            return self._fh
        for folder in (self._real.parent, *self._real.parent.parents):
            if folder.exists():
                if not folder.is_dir():
                    raise NotADirectoryError(errno.ENOTDIR, f"{folder} is a file, not a folder", str(self.target))
                break
        self._real.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(self._real.stat().st_mode) if self._real.exists() else 0o666 & ~_umask()
        fd, self._tmp = tempfile.mkstemp(prefix=f".{self._real.name}.", suffix=".tmp", dir=self._real.parent)
        os.chmod(self._tmp, mode)
        self._fh = os.fdopen(fd, "wb")
        return self._fh

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        assert self._fh is not None
        if self._tmp is None:  # written directly
            self._fh.close()
            return
        done = False
        try:
            if exc_type is None:
                self._fh.flush()
                os.fsync(self._fh.fileno())
            self._fh.close()
            if exc_type is None:
                os.replace(self._tmp, self._real)
                done = True
                fsync_dir(self._real.parent)
        finally:
            if not done and os.path.exists(self._tmp):  # failed, here or in the with-block
                os.unlink(self._tmp)

    @property
    def temp_path(self) -> str:
        assert self._tmp is not None
        return self._tmp


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write *text* as UTF-8, atomically (:class:`AtomicFile`), line endings as they are; an
    :class:`OSError` becomes one :class:`~odcf.errors.InputError` naming the path."""
    try:
        with AtomicFile(path) as fh:
            fh.write(text.encode("utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename in *path* durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
