"""Token counters: ``o200k_base`` (default), ``cl100k_base``, a Hugging Face tokenizer by
local path (``hf:/path/to/tokenizer.json`` or a folder holding one), or ``bytes`` (UTF-8).

>>> from odcf.tokens import get_counter
>>> get_counter("bytes").count("héllo")
6
"""
from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from typing import Protocol

from odcf.errors import InputError, OdcfError

DEFAULT_TOKENIZER = "o200k_base"
#: bpe-openai refuses very long single inputs; longer texts are counted in pieces cut after newlines.
_CHUNK_CHARS = 16_000


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class _CachedCounter:
    """Counting is called on the same segment text many times; cache small results."""

    def __init__(self, name: str, maxsize: int = 65_536) -> None:
        self.name = name
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._maxsize = maxsize
        self._lock = threading.Lock()

    def _count(self, text: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def count(self, text: str) -> int:
        if not text:
            return 0
        if len(text) > 4096:
            return self._count_long(text)
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        n = self._count(text)
        with self._lock:
            self._cache[text] = n
            if len(self._cache) > self._maxsize:
                self._cache.popitem(last=False)
        return n

    def _count_long(self, text: str) -> int:
        total = 0
        for piece in _pieces(text, _CHUNK_CHARS):
            total += self._count(piece)
        return total

    def __repr__(self) -> str:
        return f"<token counter {self.name}>"


def _pieces(text: str, size: int) -> list[str]:
    """Cut *text* into pieces of at most about *size* chars, after a newline or a space when possible."""
    out: list[str] = []
    start = 0
    n = len(text)
    while start < n:
        end = min(n, start + size)
        if end < n:
            cut = text.rfind("\n", start + size // 2, end)
            if cut < 0:
                cut = text.rfind(" ", start + size // 2, end)
            if cut >= 0:
                end = cut + 1
        out.append(text[start:end])
        start = end
    return out


class BpeCounter(_CachedCounter):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        try:
            import bpe_openai
        except ImportError as exc:  # pragma: no cover - core dependency
            raise OdcfError("token counting needs `bpe-openai`: pip install bpe-openai") from exc
        self._enc = bpe_openai.get_encoding(name)

    def _count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))


class HFCounter(_CachedCounter):
    def __init__(self, path: str) -> None:
        super().__init__(f"hf:{path}")
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - core dependency
            raise OdcfError("a Hugging Face tokenizer needs `tokenizers`: pip install tokenizers") from exc
        file = os.path.join(path, "tokenizer.json") if os.path.isdir(path) else path
        if not os.path.isfile(file):
            raise OdcfError(f"tokenizer {path!r}: no tokenizer.json found there")
        try:
            self._tok = Tokenizer.from_file(file)
        except Exception as exc:  # the Rust side raises a bare Exception ("Model missing.", a JSON error)
            what = "" if file == path else f"{file} "
            raise InputError(f"tokenizer {path!r}: {what}is not a readable Hugging Face tokenizer.json "
                             f"({' '.join(str(exc).split()) or type(exc).__name__})") from exc

    def _count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)


class ByteCounter:
    name = "bytes"

    def count(self, text: str) -> int:
        return len(text.encode("utf-8"))

    def __repr__(self) -> str:
        return "<token counter bytes>"


def check_tokenizer(name: object) -> None:
    """Raise :class:`OdcfError` unless *name* can name a tokenizer (a string, or None for the default)."""
    if name is not None and not isinstance(name, str):
        raise OdcfError(f"tokenizer must be a string (o200k_base, cl100k_base, bytes, or hf:PATH), "
                        f"got {type(name).__name__} {name!r}")


def get_counter(name: str | None = None) -> TokenCounter:
    """A shared counter by name. Unknown names raise :class:`OdcfError` with the choices."""
    check_tokenizer(name)  # before the cache, which cannot take a list
    return _counter(name or DEFAULT_TOKENIZER)


@functools.lru_cache(maxsize=16)
def _counter(name: str) -> TokenCounter:
    if name in ("bytes", "utf-8", "utf8"):
        return ByteCounter()
    if name in ("o200k_base", "cl100k_base"):
        return BpeCounter(name)
    if name.startswith("hf:"):
        return HFCounter(name[3:])
    if os.path.exists(name):
        return HFCounter(name)
    raise OdcfError(
        f"unknown tokenizer {name!r}: use o200k_base, cl100k_base, bytes, or hf:PATH to a tokenizer.json"
    )
