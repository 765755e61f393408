"""Text helpers shared by the harness and the peers: one token counter, one sentence splitter.

Every system's output is counted here, with odcf's ``o200k_base`` counter, never by the system
itself. The sentence splitter is deliberately simple (punctuation + newlines, English and
Chinese) so that peers which need sentences (random, BM25, LexRank, TextRank, the embedding
filters when they take pre-split input) all see the same units; it needs no NLTK data.
"""
from __future__ import annotations

import functools
import re

_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD_RE = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*", re.UNICODE)
# A sentence ends after . ! ? (optionally followed by quotes/brackets) + whitespace, after a
# Chinese full stop/!/?/; or at a newline.
_SENT_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|(?<=[。！？；])|\n+")
_ABBREV = frozenset("mr mrs ms dr prof st vs etc e.g i.e inc ltd co jr sr no fig u.s".split())


@functools.lru_cache(maxsize=1)
def counter():
    """The one token counter every system is measured with (o200k_base, via odcf)."""
    from odcf.tokens import get_counter

    return get_counter("o200k_base")


def count(text: str) -> int:
    return counter().count(text)


def is_cjk(text: str) -> bool:
    chars = [c for c in text[:2000] if not c.isspace()]
    return bool(chars) and sum(1 for c in chars if _CJK_RE.match(c)) / len(chars) >= 0.2


def split_sentences(text: str) -> list[str]:
    """Sentences (and lines) of *text*, each stripped; empty pieces dropped.

    Splits after ``. ! ?`` + space (not after a few common abbreviations or single capitals),
    after ``。！？；`` and at newlines.
    """
    out: list[str] = []
    start = 0
    for m in _SENT_END_RE.finditer(text):
        cut = m.start()
        piece = text[start:cut]
        if m.group(0) and not m.group(0).startswith("\n") and piece[-1:] == ".":
            last = piece.rsplit(None, 1)[-1].rstrip(".").lower() if piece.split() else ""
            if last in _ABBREV or (len(last) == 1 and last.isalpha()):
                continue
        if piece.strip():
            out.append(piece.strip())
        start = m.end()
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


def words(text: str) -> list[str]:
    """Lowercased word tokens; Chinese text is cut with jieba."""
    if _CJK_RE.search(text):
        import jieba

        out: list[str] = []
        for tok in jieba.lcut(text):
            tok = tok.strip().lower()
            if tok and any(ch.isalnum() for ch in tok):
                out.extend([tok] if _CJK_RE.search(tok) else [m.group(0).lower() for m in _WORD_RE.finditer(tok)])
        return out
    return [m.group(0).lower() for m in _WORD_RE.finditer(text)]


def norm_ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def head_within(text: str, budget: int) -> str:
    """Longest prefix of *text* (cut at whitespace when possible) within *budget* tokens."""
    if count(text) <= budget:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # largest prefix length whose count fits
        mid = (lo + hi + 1) // 2
        if count(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    cut = text.rfind(" ", 0, lo)
    if cut > lo * 0.9:
        lo = cut
    return text[:lo]


def fill_to_budget(units: list[str], order: list[int], budget: int, sep: str = "\n") -> str:
    """Take *units* in priority *order* while they fit *budget*; render them in document order.

    This is how every selecting peer is adapted to a token budget: rank, then fill. A unit
    that does not fit is skipped and smaller later ones may still be taken. The joined text is
    re-counted and the lowest-priority unit removed until it fits (joins can merge tokens).
    """
    chosen: list[int] = []
    used = 0
    sep_cost = count(sep) if sep.strip() else 0
    for i in order:
        c = count(units[i]) + (sep_cost if chosen else 0)
        if used + c <= budget:
            chosen.append(i)
            used += c
    while chosen:
        out = sep.join(units[i] for i in sorted(chosen))
        if count(out) <= budget:
            return out
        chosen.pop()
    return ""
