"""Lossless list-prefix folding: a prefix shared by consecutive lines is written once.

When at least ``min_lines`` consecutive lines share a prefix of at least ``min_chars``
characters (log timestamps with the same date and logger, a repeated ``"user_id": "``), the
run becomes ``[PREFIX: <prefix>]`` followed by the lines without it, and ``[/PREFIX]`` when
other lines follow. :func:`unfold_prefixes` gives the original lines back. The prefix never
ends inside a word or number, and never cuts through a span the caller protects, and never takes a
whole line: ``min_lines`` or more identical lines are written once as ``[REPEAT ×9: <line>]``
instead (a prefix over empty lines would read as one line).

>>> text = "\\n".join(f"2024-05-01 10:00:0{i} INFO db: query {i} ok" for i in range(5)) + "\\ndone"
>>> folded = fold_prefixes(text)[0]
>>> print(folded)
[PREFIX: 2024-05-01 10:00:]
00 INFO db: query 0 ok
01 INFO db: query 1 ok
02 INFO db: query 2 ok
03 INFO db: query 3 ok
04 INFO db: query 4 ok
[/PREFIX]
done
>>> unfold_prefixes(folded) == text
True
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence

_HEAD = re.compile(r"^\[PREFIX: (.*)\]$")
_REPEAT = re.compile(r"^\[REPEAT ×([0-9]+): (.*)\]$")
END = "[/PREFIX]"


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _prefix_len(
    run: Sequence[tuple[int, str]], common: int, spans: Sequence[tuple[int, int]]
) -> int:
    """Shorten *common* so it cuts no protected span and ends between words."""
    length = common
    for start, _ in run:
        cut = start + length
        for s, e in spans:
            if s < cut < e:
                length = min(length, s - start)
                cut = start + length
    first = run[0][1]
    while length > 0 and _word(first[length - 1]) and any(
        len(line) > length and _word(line[length]) for _, line in run
    ):
        length -= 1
    return length


def fold_prefixes(
    text: str,
    *,
    min_lines: int = 4,
    min_chars: int = 12,
    spans: Sequence[tuple[int, int]] = (),
) -> tuple[str, dict[str, int]]:
    """Fold shared line prefixes in *text*. Returns ``(text, stats)``.

    *spans* are protected ``(start, end)`` offsets into *text*: no prefix cuts through one.
    Stats: ``runs`` folded, ``lines`` folded, ``chars_saved``, and of those ``repeats``, the runs of
    identical lines, and ``repeated``, their lines. Existing ``[PREFIX: ...]`` blocks and ``[REPEAT ×n: ...]``
    lines are left as they are, so folding twice changes nothing more.

    >>> print(fold_prefixes("head\\n" + "Section 9.1 applies.\\n" * 5 + "tail")[0])
    head
    [REPEAT ×5: Section 9.1 applies.]
    tail
    """
    lines: list[tuple[int, str]] = []
    pos = 0
    for line in text.split("\n"):
        lines.append((pos, line))
        pos += len(line) + 1
    out: list[str] = []
    runs = folded = saved = repeats = repeated = 0
    i, n = 0, len(lines)
    while i < n:
        line = lines[i][1]
        if _HEAD.match(line):  # an earlier fold: copy the block through
            out.append(line)
            i += 1
            while i < n and not _HEAD.match(lines[i][1]):
                out.append(lines[i][1])
                i += 1
                if out[-1] == END:
                    break
            continue
        if _REPEAT.match(line):  # an earlier fold's repeat: as it is (and no prefix of two such lines)
            out.append(line)
            i += 1
            continue
        k = i + 1
        while k < n and lines[k][1] == line:
            k += 1
        if k - i >= min_lines and len(line) >= min_chars and line != END:
            out.append(f"[REPEAT ×{k - i}: {line}]")
            runs += 1
            repeats += 1
            folded += k - i
            repeated += k - i
            saved += (k - i - 1) * len(line)
            i = k
            continue
        common = len(line)
        j = i + 1
        while j < n and not _HEAD.match(lines[j][1]) and not _REPEAT.match(lines[j][1]) and lines[j][1] != END:
            c = len(os.path.commonprefix([line[:common], lines[j][1]]))
            # stop where the usable prefix (ending between words) gets too short; it only shrinks
            if c < min_chars or _prefix_len(lines[i:j + 1], c, ()) < min_chars:
                break
            common = c
            j += 1
        if j - i >= min_lines:
            run = lines[i:j]
            length = _prefix_len(run, common, spans)
            # a line that is all prefix would be left empty: '[PREFIX: the whole line]' over empty lines
            # reads as one line, not as the same line written many times, so such a run is not folded
            if length >= min_chars and all(len(ln) > length for _, ln in run):
                out.append(f"[PREFIX: {line[:length]}]")
                out.extend(text_ for _, text_ in ((s, ln[length:]) for s, ln in run))
                if j < n and not _HEAD.match(lines[j][1]):
                    out.append(END)
                runs += 1
                folded += len(run)
                saved += (len(run) - 1) * length
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out), {"runs": runs, "lines": folded, "chars_saved": saved, "repeats": repeats,
                            "repeated": repeated}


def unfold_prefixes(text: str) -> str:
    """Undo :func:`fold_prefixes`: every line of a block gets its prefix back."""
    out: list[str] = []
    prefix: str | None = None
    for line in text.split("\n"):
        r = _REPEAT.match(line) if prefix is None else None
        if r:
            out.extend([r.group(2)] * int(r.group(1)))
            continue
        m = _HEAD.match(line)
        if m:
            prefix = m.group(1)
            continue
        if prefix is not None and line == END:
            prefix = None
            continue
        out.append(line if prefix is None else prefix + line)
    return "\n".join(out)
