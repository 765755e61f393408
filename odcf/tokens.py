"""Token counters: ``o200k_base`` (default), ``cl100k_base``, a Hugging Face tokenizer by
local path (``hf:/path/to/tokenizer.json`` or a folder holding one), or ``bytes`` (UTF-8).

Counts are exact: the count of a text is the length of its encoding. ``bpe-openai`` refuses very long
inputs, so a text over 16,000 characters is counted in pieces cut only where the encoder's
pre-tokenizer splits anyway (after a newline, before " word", at the edges of a number and every
third digit of one, between a word and a punctuation mark), which changes nothing. Only a run of
over 50,000 characters with no such place in it (one "word" of 50,000 letters) is cut where it
must be, and each such cut may change the count by a token or two. A Hugging Face tokenizer counts
the whole text in one call, without the padding and truncation its tokenizer.json may set.

>>> from odcf.tokens import get_counter
>>> get_counter("bytes").count("héllo")
6
>>> get_counter("o200k_base").count("1234567890" * 2000)   # in pieces, yet as one encoding counts
6667
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import unicodedata
from collections import OrderedDict
from typing import Protocol

from odcf.errors import InputError, OdcfError

DEFAULT_TOKENIZER = "o200k_base"
#: A text up to this many characters is counted in one call; a longer one in pieces of about this size.
_CHUNK_CHARS = 16_000
#: The longest piece counted in one call when no split point is nearer: at most 4 tokens a character
#: keeps it under bpe-openai's 200,000-token and 1,000,000-character limits.
_MAX_PIECE_CHARS = 50_000
#: A text longer than this is counted by :meth:`_CachedCounter._count_long` (in pieces, for bpe-openai).
_LONG_TEXT_CHARS = 4_096
#: Texts up to this many characters are cached (long ones too: the compressor and the pipeline's
#: first stage both count every whole source) ...
_CACHE_TEXT_CHARS = 1_048_576
#: ... up to this many bytes of text in all (CJK takes 2 bytes a character, emoji 4).
_CACHE_BYTES = 32 * 2**20


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class _CachedCounter:
    """Counting is called on the same segment text many times; cache the counts of texts up to a
    million characters, bounded by the bytes of text held (not the number of texts: 4,096 emoji take
    16 KiB)."""

    def __init__(self, name: str, max_bytes: int = _CACHE_BYTES) -> None:
        self.name = name
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()

    def _count(self, text: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def count(self, text: str) -> int:
        if not text:
            return 0
        if len(text) > _CACHE_TEXT_CHARS:
            return self._count_long(text)
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        n = self._count(text) if len(text) <= _LONG_TEXT_CHARS else self._count_long(text)
        size = sys.getsizeof(text)
        with self._lock:
            if text not in self._cache:
                self._cache[text] = n
                self._bytes += size
                while self._bytes > self._max_bytes:
                    old, _ = self._cache.popitem(last=False)
                    self._bytes -= sys.getsizeof(old)
        return n

    def _count_long(self, text: str) -> int:
        return sum(self._count(piece) for piece in _pieces(text, _CHUNK_CHARS))

    def __repr__(self) -> str:
        return f"<token counter {self.name}>"


def _is_number(c: str) -> bool:
    return "0" <= c <= "9" or (c > "\x7f" and unicodedata.category(c)[0] == "N")


def _splits(text: str, i: int) -> bool:
    """True where the o200k_base and cl100k_base pre-tokenizers certainly end a piece before text[i],
    so that the counts of text[:i] and text[i:] add up to the count of text.

    Inside a run of digits (cut in threes from its start) this says False: :func:`_split_before`
    and :func:`_split_after` find those places.
    """
    if i <= 0 or i >= len(text):
        return False
    a, b = text[i - 1], text[i]
    if a in "\r\n":  # a newline ends a piece unless more space or the "/" of "!\n/" follows
        return not b.isspace() and b != "/"
    if a.isspace():  # spaces at the end of a text may form other pieces (cl100k's \s++$)
        return False
    if b == " ":  # " word" is one piece, so what is before it has ended
        return i + 1 < len(text) and text[i + 1].isalpha()
    na, nb = _is_number(a), _is_number(b)
    if na or nb:  # only a run of digits holds a digit
        return na != nb
    # a word ends before a punctuation mark or symbol (not "'", which may open "'s")
    return a.isalpha() and b != "'" and unicodedata.category(b)[0] in "PS"


def _digit_run(text: str, i: int) -> tuple[int, int]:
    """The start and end of the run of digits that holds text[i]."""
    start, end = i, i + 1
    while start > 0 and _is_number(text[start - 1]):
        start -= 1
    while end < len(text) and _is_number(text[end]):
        end += 1
    return start, end


def _inside_digits(text: str, i: int) -> bool:
    return 0 < i < len(text) and _is_number(text[i - 1]) and _is_number(text[i])


def _split_before(text: str, lo: int, hi: int) -> int:
    """The last place in (lo, hi] where the pre-tokenizer splits, or -1."""
    i = hi
    while i > lo:
        if _inside_digits(text, i):
            start, _ = _digit_run(text, i)
            cut = start + (i - start) // 3 * 3
            if cut > max(lo, start):
                return cut
            i = start  # the run's start: an edge, which _splits judges
            continue
        if _splits(text, i):
            return i
        i -= 1
    return -1


def _split_after(text: str, lo: int, hi: int) -> int:
    """The first place in [lo, hi) where the pre-tokenizer splits, or -1."""
    i = lo
    while i < hi:
        if _inside_digits(text, i):
            start, end = _digit_run(text, i)
            cut = start + -(-(i - start) // 3) * 3
            if cut < end:
                return cut if cut < hi else -1
            i = end
            continue
        if _splits(text, i):
            return i
        i += 1
    return -1


def _pieces(text: str, size: int) -> list[str]:
    """Cut *text* into pieces of about *size* characters where the pre-tokenizer splits anyway, so
    that the counts of the pieces add up to the count of the text. A stretch of over
    ``_MAX_PIECE_CHARS`` characters with no such place is cut at that length: the one inexact case."""
    out: list[str] = []
    start, n = 0, len(text)
    while n - start > size:
        end = _split_before(text, start, start + size)
        if end < 0:
            end = _split_after(text, start + size + 1, min(n, start + _MAX_PIECE_CHARS))
        if end < 0:
            end = min(n, start + _MAX_PIECE_CHARS)
        out.append(text[start:end])
        start = end
    if start < n:
        out.append(text[start:])
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
        # tokenizer.json may ask for padding and truncation (MiniLM's: both at 128), which would
        # make every text count as the padded or truncated length
        self._tok.no_padding()
        self._tok.no_truncation()

    def _count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def _count_long(self, text: str) -> int:
        # pre-tokenizers differ (a sentencepiece "▁" opens a text): cut nowhere, count in one call
        return self._count(text)


class ByteCounter:
    name = "bytes"

    def count(self, text: str) -> int:
        return len(text.encode("utf-8"))

    def __repr__(self) -> str:
        return "<token counter bytes>"


def unit_words(unit: str | None) -> str:
    """``bytes`` or ``cl100k_base tokens``: what a count or a budget of *unit* is in. Every message that
    names the unit says it this way: "the budget of 20 bytes tokens" read as a slip (QA s32 J4)."""
    return "bytes" if unit == "bytes" else f"{unit} tokens"


def short_unit(unit: str | None) -> str:
    """``bytes`` or ``tokens``: the unit in a short phrase ("over budget by 12 bytes", "no room in 90
    bytes"), where the tokenizer's name is said elsewhere in the same message or record.

    >>> short_unit("bytes"), short_unit("o200k_base"), short_unit(None)
    ('bytes', 'tokens', 'tokens')
    """
    return "bytes" if unit == "bytes" else "tokens"


def check_tokenizer(name: object) -> None:
    """Raise :class:`OdcfError` unless *name* can name a tokenizer (a non-empty string, or None for
    the default): an empty name would silently mean the default."""
    _check_type(name)
    if isinstance(name, str) and not name.strip():
        raise OdcfError(f"tokenizer must be a name (o200k_base, cl100k_base, bytes, or hf:PATH), got {name!r}; "
                        "leave it out (None) for the plan's")


def _check_type(name: object) -> None:
    if name is not None and not isinstance(name, str):
        raise OdcfError(f"tokenizer must be a string (o200k_base, cl100k_base, bytes, or hf:PATH), "
                        f"got {type(name).__name__} {name!r}")


def get_counter(name: str | None = None) -> TokenCounter:
    """A shared counter by name. Unknown names raise :class:`OdcfError` with the choices."""
    _check_type(name)  # before the cache, which cannot take a list
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
