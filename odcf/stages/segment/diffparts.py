"""Unified diffs in the segmenter (``git diff``, ``diff -u``): cut per file and per hunk.

A hunk means nothing without the file it changes: hunks of five files delivered under the
header of the first read as changes to that one. So a file's header is a piece, each hunk (its ``@@`` line and the
lines the ``@@`` counts announce, and those after them that still read as a hunk's lines) is a piece under it (meta ``under``: the budget delivers a hunk
only with its file's header, and a header only with one of its hunks), and a long hunk is an ``@@``
piece with parts of whole lines under it, cut only between its change blocks (:func:`_units`). In a git diff the header piece is the ``diff --git`` line and
the mode, new, deleted, rename and copy lines right under it, which name the file for every hunk; its
``index``, ``---`` and ``+++`` lines (the path twice more) are a piece of their own that goes only with
the file's first hunk, or the first part of it (meta ``diff_needs``: that piece's index, made a
``budget_needs`` link by the segmenter), so that it is never delivered without a hunk and never
between a hunk and the header (QA s32 R6: a 213-token single-hunk diff at ``-b 106`` delivered nothing,
its one header of four lines, the long path four times, 74 tokens, going with every hunk). A plain
``--- a/…``/``+++ b/…`` diff's header stays one piece: its ``---``/``+++`` lines name the file. Every piece keeps its lines as they are (a context line
`` # Session and token lifetimes`` is no heading, and its leading space is its meaning), and says
where it sits (``diff_file``, ``diff_hunk``, ``diff_lines``), so that assembly marks the lines,
hunks and files left out (``[DIFF_LINES: n]``, ``[DIFF_HUNKS: n]``, ``[DIFF_FILES: n]``;
odcf.render). A diff that fills a fenced block (```` ```diff ````) is cut the same way, its pieces told
the fences (``diff_fence``), which assembly writes around what it delivers of it.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from odcf.stages.segment.lines import Piece

#: The first line of a file's header: git's, or the "--- a" of a plain unified diff.
GIT_HEAD_RE = re.compile(r"^diff --git \S")
#: The other lines of a file's header.
_HEAD_LINE_RE = re.compile(r"^(?:index [0-9a-f]+\.\.[0-9a-f]+|--- \S|\+\+\+ \S|(?:new|deleted) file mode |old mode |"
                           r"new mode |similarity index |dissimilarity index |rename (?:from|to) |copy (?:from|to) |"
                           r"Binary files )")
#: The lines of a git header that name the file's old and new paths again, and those after them.
_PATHS_RE = re.compile(r"^(?:index [0-9a-f]+\.\.[0-9a-f]+|--- \S|\+\+\+ \S|Binary files )")
#: The context lines above a change block that go with it when a long hunk is cut (git's default context).
CONTEXT_LINES = 3
#: A hunk's header, with its counts of old and new lines.
HUNK_RE = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _file_start(lines: list[tuple[int, int, str]], j: int) -> bool:
    line = lines[j][2]
    if GIT_HEAD_RE.match(line):
        return True
    return (line.startswith("--- ") and j + 2 < len(lines) and lines[j + 1][2].startswith("+++ ")
            and bool(HUNK_RE.match(lines[j + 2][2])))


def diff_files(lines: list[tuple[int, int, str]], i: int) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """The files of a unified diff that starts at line *i* (none when it does not): for each, the
    indices of its header lines and the (``@@`` line, end) of each hunk, read by the hunk's counts
    (a line "-- " or "+++" inside a hunk is a line of the hunk, not a header), then on over the lines
    that still open as a hunk's do (" ", "+", "-"), up to a blank line, an ``@@`` line or a file's
    header: a hand-written diff's counts are often wrong."""
    n = len(lines)
    out: list[tuple[list[int], list[tuple[int, int]]]] = []
    j = i
    while j < n and _file_start(lines, j):
        head = [j]
        j += 1
        while j < n and _HEAD_LINE_RE.match(lines[j][2]) and not GIT_HEAD_RE.match(lines[j][2]):
            head.append(j)
            j += 1
        hunks: list[tuple[int, int]] = []
        while j < n:
            m = HUNK_RE.match(lines[j][2])
            if not m:
                break
            old = int(m.group(1)) if m.group(1) is not None else 1
            new = int(m.group(2)) if m.group(2) is not None else 1
            k = j + 1
            while k < n and (old > 0 or new > 0):
                mark = lines[k][2][:1]
                if mark in (" ", "") and old > 0 and new > 0:  # a context line (its space may be trimmed)
                    old, new = old - 1, new - 1
                elif mark == "-" and old > 0:
                    old -= 1
                elif mark == "+" and new > 0:
                    new -= 1
                elif mark != "\\":
                    break  # the counts do not match the lines: the hunk ends here
                k += 1
            # lines after the counted ones that still read as the hunk's: the counts of a hand-written diff
            # ("@@ -12,11 +12,14 @@" over 9 and 16 lines) are often wrong, and its last "+" lines read as
            # list items ("+                raise" alone under "[…1 item]"); up to a blank line, the next
            # @@ line or file header
            while k < n and (lines[k][2][:1] in (" ", "+", "-", "\\") and not _file_start(lines, k)):
                k += 1
            hunks.append((j, k))
            j = k
        out.append((head, hunks))
    if not any(hunks for _, hunks in out):
        return []  # a "diff --git" line alone (a quoted command) is no diff
    return out


def diff_end(files: list[tuple[list[int], list[tuple[int, int]]]]) -> int:
    """The line after the diff read as *files* (:func:`diff_files`): after its last hunk, or its last
    file's header when that file has none."""
    return max(files[-1][1][-1][1] if files[-1][1] else 0, files[-1][0][-1] + 1)


def _units(body: list[tuple[int, int, str]], cost: Callable[[str], int], limit: int) -> list[tuple[int, int]]:
    """The (start, end) of the runs of a hunk's *body* that a part of it holds whole: a context line, or a
    change block (its "-" lines and the "+" lines that replace them) with up to :data:`CONTEXT_LINES`
    context lines right above it, which say where it is. A part never starts or ends inside a change block,
    so that the block goes whole or not at all (QA s34 H2: a hunk cut between its "-" and its "+" line was
    delivered as "-        return int(…)" / "[DIFF_LINES: 4]", a deletion, while the patch replaced the
    line). Only a run of one kind ("+" lines alone, a new function; "-" lines alone) over *limit* tokens,
    a whole hunk's, is cut between its lines: a part of it reads as what it is (lines added, or removed,
    and more left out), and a long one stays deliverable."""
    units: list[tuple[int, int]] = []
    k, n = 0, len(body)
    while k < n:
        end = k
        while end < n and body[end][2][:1] in ("-", "+", "\\"):
            end += 1
        if end == k:  # a context line (its space may be trimmed)
            units.append((k, k + 1))
            k += 1
            continue
        start = k
        while (units and k - start < CONTEXT_LINES and units[-1] == (start - 1, start)
               and body[start - 1][2][:1] in (" ", "")):
            start = units.pop()[0]  # the context lines above go with the block
        kinds = {ln[2][:1] for ln in body[k:end]} - {"\\"}
        if len(kinds) == 1 and sum(cost(ln[2]) for ln in body[k:end]) > limit:
            # a long run of one kind: a line a unit (the first with the context lines above it, a
            # "\\ No newline" line with the line it follows)
            cut = [j for j in range(k + 1, end) if body[j][2][:1] != "\\"]
            units.extend(zip([start, *cut], [*cut, end]))
        else:
            units.append((start, end))
        k = end
    return units


def diff_pieces(lines: list[tuple[int, int, str]], i: int, files: list[tuple[list[int], list[tuple[int, int]]]],
                paragraph: int, offset: int, block: int, line_piece: Callable[..., Piece],
                cost: Callable[[str], int], limit: int) -> list[Piece]:
    """The pieces of the diff read by :func:`diff_files`, the first to be piece number *offset* of
    its source. A hunk over *limit* tokens (each line costing ``cost(line)``) is its ``@@`` line,
    then parts of whole lines of about half *limit* tokens under it (small: a part comes with its
    file's header and its @@ line, so that the line a query asks for fits a small budget)."""
    def whole(chunk: list[tuple[int, int, str]], meta: dict[str, Any]) -> Piece:
        # a piece's lines as they are: its last, a blank line's context " ", keeps its space (trimmed, the
        # patch delivered is damaged)
        p = line_piece(chunk, "code", paragraph, meta, indent=True)
        last = chunk[-1]
        return Piece(p.start, last[0] + 1, p.kind, p.paragraph, p.meta) if last[2][:1] == " " and p.end <= last[0] else p

    out: list[Piece] = []
    for f, (head, hunks) in enumerate(files):
        base = {"diff_block": block, "diff_file": f, "diff_files": len(files)}
        head_at = offset + len(out)
        # a git header's index/---/+++ lines (and those after them) go apart, with the first hunk
        names = next((n for n, k in enumerate(head) if n and _PATHS_RE.match(lines[k][2])), len(head)) \
            if hunks and GIT_HEAD_RE.match(lines[head[0]][2]) else len(head)
        out.append(line_piece([lines[k] for k in head[:names]], "code", paragraph,
                              {**base, "diff": "file", "diff_hunks": len(hunks)}, indent=True))
        paths = len(out) if names < len(head) else None
        if paths is not None:
            out.append(line_piece([lines[k] for k in head[names:]], "code", paragraph,
                                  {**base, "diff": "paths", "diff_hunks": len(hunks)}, indent=True))
        for h, (at, end) in enumerate(hunks):
            body = lines[at + 1:end]
            meta: dict[str, Any] = {**base, "diff_hunk": h, "diff_hunks": len(hunks), "under": head_at}
            if paths is not None and h == 0:
                # the first hunk when whole, else its first part (after its @@ piece): it brings its @@ line
                # and the file's header, and the index/---/+++ lines go with them, between the two
                at_first = offset + len(out) + (0 if sum(cost(ln[2]) for ln in lines[at:end]) <= limit
                                                or not body else 1)
                out[paths] = Piece(out[paths].start, out[paths].end, out[paths].kind, out[paths].paragraph,
                                   {**(out[paths].meta or {}), "diff_needs": at_first})
            if sum(cost(ln[2]) for ln in lines[at:end]) <= limit or not body:
                out.append(whole(lines[at:end], {**meta, "diff": "hunk"}))
                continue
            hunk_at = offset + len(out)
            out.append(line_piece([lines[at]], "code", paragraph, {**meta, "diff": "hunk", "diff_total": len(body)},
                                  indent=True))
            chunk: list[tuple[int, int, str]] = []
            first = tokens = 0
            changes = False  # whether the part holds changed lines
            for k, end in _units(body, cost, limit):
                t = sum(cost(ln[2]) for ln in body[k:end])
                change = any(ln[2][:1] in ("-", "+") for ln in body[k:end])
                # context lines left over (after a hunk's last change block) make a part of their own: with
                # the changes before them, they made that part too big for a budget that the change fits
                if chunk and (tokens + t > limit // 2 or change != changes):
                    out.append(whole(chunk, {**meta, "diff": "lines", "under": hunk_at,
                                             "diff_lines": [first, len(chunk)], "diff_total": len(body)}))
                    chunk, first, tokens = [], k, 0
                chunk.extend(body[k:end])
                tokens += t
                changes = change
            out.append(whole(chunk, {**meta, "diff": "lines", "under": hunk_at,
                                     "diff_lines": [first, len(chunk)], "diff_total": len(body)}))
    return out
