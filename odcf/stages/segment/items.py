"""Where the pieces of a prose paragraph sit on its lines, and the numbered items they are in: what
odcf.render needs to say what is left out between two delivered pieces (meta of each piece).

- ``line_pieces``: ``[first, last]``, on every piece of a paragraph in which two pieces or more open a
  line: the piece that opens the line a piece is on, and the last piece before the next one that
  opens a line. Between two delivered pieces of a paragraph, render keeps the line break that the
  source has there and marks the rest of a line left out (" …"): "乙方除应更换外…", the second
  sentence of 7.4, was glued onto the line of 7.2 and read as a part of it.
- ``item_label``: ``[label, index]`` on a piece of an item that does not hold the item's number or
  mark ("7.4", "M7.", "Section 9.1", "第十二条", "(b)", "-"; *index*: the piece that holds it):
  delivered without that piece, it is written after it ("7.4 … 乙方除应更换外…", "- … Do not take
  NSAIDs …"), never as a part of the item above it.
- ``items``: ``[run, first, count, total]`` on the pieces of a run of two list items or more of one
  kind (a short list's items, or long ones, in paragraphs of their own; paragraphs "M1. …" … "M7. …"):
  the items a piece is in, so that items left out are counted where they are (``[…n items]``), as
  for the parts of a long list; ``in_items``: *run*, on a table, list or code block inside an item of
  it. A held drug must not vanish from a list of two unsaid. Clauses ("7.1", "Section 9.1", "第十二条")
  are provisions, not items of a list: one left out between two delivered is not counted (their
  numbers show it; on the lines of one paragraph, render writes "…" for lines left out whole). A
  source whose meta says ``list_marks: false`` gets no ``items`` (the handoff's history bullets:
  their source line names the turns they hold, and the record what became of each).
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from odcf.stages.segment.lines import LIST_RE, Piece, line_at

#: A number opening an item at a line's start: "7.1 If …", "3.2.1 查询…", "M1. The …", "Q3. …",
#: "Section 9.1 Cap.", "第十二条 违反…"; followed by a capital, a bracket, a quote or a Han character
#: ("2.5 mg", "Q3 2024" and "2.5万元" open no item).
_NUMBER_RE = re.compile(
    r"[ \t]*(?:(?P<word>Section|Sec\.|Clause|Article|Art\.|§)[ \t]*(?P<wn>\d+(?:\.\d+)*)[A-Za-z]?"
    r"|(?P<letters>[A-Z]{1,3})(?P<ln>\d+(?:\.\d+)*)"
    r"|(?P<dn>\d+(?:\.\d+)+)"
    r"|(?P<zh>第[\d一二三四五六七八九十百千零〇]+条))"
    r"\.?(?:(?=[ \t]+[A-Z(\"“\u3400-\u9fff])|(?<=条)(?=[ \t]*[\u3400-\u9fff]))")
#: The mark of a list item (LIST_RE matched the line): a bullet, "1." "a)" "(iv)" "（一）" "①" "1、".
_MARK_RE = re.compile(r"[ \t]*(?:[-*+\u2022\u00b7]|\d{1,3}[.)]|[a-zA-Z][.)]|\(\w{1,3}\)"
                      r"|[（(][一二三四五六七八九十\d]{1,3}[）)]|[\u2460-\u2473]|\d{1,3}、)")


@dataclass
class _Item:
    pos: int  # where its number or mark starts
    key: tuple[Any, ...]  # items of one kind share it: a run is made of them
    label: str  # its number or mark ("7.4", "-")
    paragraph: int
    listed: bool  # an item of a list (a mark, "M1."), not a clause ("7.1", "第十二条")
    end: int = 0  # where it ends: the next item of its paragraph, or the paragraph's end


def _list_goes_on(text: str, start: int, item: int) -> bool:
    """Whether the block at *start* is a list whose first line is no deeper than the line of the item at
    *item*: the list goes on ("3. Update the secret …" after "2. Promote the standby:" and its code block),
    it is no list inside that item (it had been counted as a part of item 2, and the mark for the items
    left out came after item 6)."""
    block, own = line_at(text, start), line_at(text, item)
    return LIST_RE.match(block) is not None and len(block) - len(block.lstrip()) <= len(own) - len(own.lstrip())


def mark_items(text: str, lines: Sequence[tuple[int, int, str]], pieces: list[Piece],
               prose: dict[int, tuple[int, int]], blocks: set[int], *, list_marks: bool = True) -> list[Piece]:
    """*pieces* with the meta above. *prose*: the paragraphs of prose (their lines, ``(first, end)``);
    *blocks*: the paragraphs of tables, lists and code (a run of items goes on over them: an item's
    list or table); any other paragraph (a heading, a quote, an email header) ends a run. *list_marks*:
    False for no ``items``."""
    if not prose:
        return pieces
    metas: list[dict[str, Any] | None] = [None] * len(pieces)

    def meta(k: int) -> dict[str, Any]:
        if metas[k] is None:
            metas[k] = dict(pieces[k].meta or {})
        return metas[k]  # type: ignore[return-value]

    by_para: dict[int, list[int]] = {}
    for k, p in enumerate(pieces):
        by_para.setdefault(p.paragraph, []).append(k)
    items: dict[int, list[_Item]] = {}
    for para, (i, j) in prose.items():
        ks = by_para.get(para, [])
        if not ks:
            continue
        if j - i >= 2:
            _line_pieces(lines[i:j], pieces, ks, meta)
        found = [it for it in (_item(lines[n], para) for n in range(i, j)) if it is not None]
        for a, b in zip(found, found[1:] + [None]):
            a.end = b.pos if b is not None else pieces[ks[-1]].end
        if found:
            items[para] = found
    # runs: items of one kind one after another, over blocks inside them; a paragraph that does not
    # open with an item, or any other part, ends one
    runs: list[tuple[list[_Item], list[int]]] = []
    current: tuple[list[_Item], list[int]] | None = None
    for para in sorted(by_para):
        if para in prose:
            found = items.get(para, [])
            ls, _, body = lines[prose[para][0]]
            if not found or found[0].pos != ls + len(body) - len(body.lstrip()):
                current = None
            for it in found:
                if current is None or current[0][-1].key != it.key:
                    current = ([], [])
                    runs.append(current)
                current[0].append(it)
        elif para in blocks and current is not None and not _list_goes_on(text, pieces[by_para[para][0]].start,
                                                                          current[0][0].pos):
            current[1].append(para)
        else:
            current = None
    for run_items, run_blocks in runs:
        if not list_marks or len(run_items) < 2 or not run_items[0].listed:
            continue
        run = run_items[0].pos
        of_para: dict[int, list[tuple[int, _Item]]] = {}
        for n, it in enumerate(run_items):
            of_para.setdefault(it.paragraph, []).append((n, it))
        for para, numbered in of_para.items():
            at = [it.pos for _, it in numbered]
            for k in by_para[para]:
                p = pieces[k]
                # the items it overlaps: from the one it starts in (or the first after its start)
                lo, hi = max(0, bisect.bisect_right(at, p.start) - 1), bisect.bisect_left(at, p.end)
                if lo < hi and numbered[lo][1].end <= p.start:
                    lo += 1
                if lo < hi and "items" not in meta(k):
                    meta(k)["items"] = [run, numbered[lo][0], hi - lo, len(run_items)]
        for para in run_blocks:
            for k in by_para[para]:
                meta(k)["in_items"] = run
    # a piece of an item that does not hold its number: the number to write it after (an item in a
    # paragraph's later line only in a run, so that a wrapped line opening "Section 4 The …" names none)
    in_run = {id(it) for run_items, _ in runs if len(run_items) > 1 for it in run_items}
    for para, found in items.items():
        ks = by_para[para]
        starts = [pieces[k].start for k in ks]
        for n, it in enumerate(found):
            if n and id(it) not in in_run:
                continue
            first = bisect.bisect_right(starts, it.pos) - 1  # the piece that holds the number
            for m in range(first + 1, bisect.bisect_left(starts, it.end)):
                meta(ks[m])["item_label"] = [it.label, ks[first]]
    return [Piece(p.start, p.end, p.kind, p.paragraph, metas[k]) if metas[k] is not None else p
            for k, p in enumerate(pieces)]


def _item(line: tuple[int, int, str], paragraph: int) -> _Item | None:
    """The item *line* opens, or None."""
    ls, _, body = line
    indent = len(body) - len(body.lstrip())
    if LIST_RE.match(body):
        m = _MARK_RE.match(body)
        if m is None:
            return None
        mark = m.group(0).strip()
        shape = re.sub(r"[\u2460-\u2473]", "①", re.sub(r"[一二三四五六七八九十]+", "一", re.sub(
            r"[A-Z]+", "A", re.sub(r"[a-z]+", "a", re.sub(r"\d+", "9", mark)))))
        return _Item(ls + indent, ("mark", shape, indent), mark, paragraph, True)
    m = _NUMBER_RE.match(body)
    if m is None:
        return None
    if m.group("zh"):
        return _Item(ls + indent, ("条", indent), m.group("zh"), paragraph, False)
    number = m.group("wn") or m.group("ln") or m.group("dn")
    parent, _, _ = number.rpartition(".")
    kind = m.group("word") or m.group("letters") or ""
    # "M1." "D4." "Q2.": a requirement's or a question's number in a list of them
    listed = bool(m.group("letters")) and not parent
    return _Item(ls + indent, ("number", kind, number.count("."), parent, indent), m.group(0).strip(), paragraph,
                 listed)


def _line_pieces(lines: Sequence[tuple[int, int, str]], pieces: list[Piece], ks: list[int],
                 meta: Any) -> None:
    """``line_pieces`` of the pieces *ks* of a paragraph on *lines*, when two or more of them open a
    line (a piece that starts inside a line, or a hard-wrapped sentence's next line, opens none: the
    line breaks of wrapped prose are not kept between two pieces, the break before "7.4 …" is)."""
    firsts = {ls + len(body) - len(body.lstrip()) for ls, _, body in lines}
    opening = [k for k in ks if pieces[k].start in firsts]
    if len(opening) < 2:
        return
    for n, k in enumerate(opening):
        last = opening[n + 1] - 1 if n + 1 < len(opening) else ks[-1]
        for m in range(k, last + 1):
            meta(m)["line_pieces"] = [k, last]
