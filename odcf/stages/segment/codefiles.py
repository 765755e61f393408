"""Source files in the segmenter: a source named ``….py``, ``….ts``, ``….go`` (its origin, else its id:
``odcf compress FILE`` gives both the path) is code throughout, cut as a long fenced block is, in whole
lines, never as prose: a docstring's or comment's ";" or "." is no place to cut, and a line delivered
is the line of the file, byte for byte. Its parts end at blank lines where they can (a function, a
block of imports), each of about ``max_code_tokens``; a run of lines without a blank line that is
longer is cut between lines, never right under a comment line (the comment goes with the code it
speaks of).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

#: File names that declare source code (lower case).
CODE_SUFFIXES = (
    ".py", ".pyi", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".java", ".kt", ".kts", ".scala", ".go",
    ".rs", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".swift", ".rb", ".php", ".lua", ".pl",
    ".sh", ".bash", ".zsh", ".ps1", ".sql", ".r", ".dart",
)
_COMMENT_OPENS = ("#", "//", "--", "/*", "*", "%")
#: odcf's own mark of lines left out (a file compressed before).
_MARK_RE = re.compile(r"^\[CODE_LINES: \d+\]$")


def declared_code(source: Any) -> bool:
    """Whether a source's file name (its origin, else its id) declares source code (:data:`CODE_SUFFIXES`)."""
    return (source.origin or source.id or "").lower().endswith(CODE_SUFFIXES)


def code_chunks(lines: list[tuple[int, int, str]], count: Callable[[str], int],
                limit: int) -> list[list[tuple[int, int, str]]]:
    """*lines* (a source file's, none blank at either end) in parts of whole lines: runs between
    blank lines joined while the part stays within *limit* tokens (*count*: a line's tokens); a run
    over *limit* in parts of its own, cut between lines at about *limit*, not after a comment line."""
    runs: list[list[tuple[int, int, str]]] = []
    run: list[tuple[int, int, str]] = []
    for line in lines:
        if line[2].strip():
            run.append(line)
        elif run:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    out: list[list[tuple[int, int, str]]] = []
    chunk: list[tuple[int, int, str]] = []
    tokens = 0
    for run in runs:
        sizes = [count(line[2]) for line in run]
        if chunk and tokens + sum(sizes) > limit:
            out.append(chunk)
            chunk, tokens = [], 0
        if sum(sizes) <= limit:
            chunk.extend(run)
            tokens += sum(sizes)
            continue
        for k, (line, t) in enumerate(zip(run, sizes)):
            if chunk and tokens + t > limit:
                held = []  # comment lines at the chunk's end go with the line below them
                while len(chunk) > 1 and chunk[-1][2].lstrip().startswith(_COMMENT_OPENS):
                    held.insert(0, chunk.pop())
                out.append(chunk)
                chunk = held
                tokens = sum(count(x[2]) for x in held)
            chunk.append(line)
            tokens += t
        out.append(chunk)  # a long run ends its part: the next part starts after a blank line
        chunk, tokens = [], 0
    if chunk:
        out.append(chunk)
    # a mark of lines left out that odcf wrote (a file compressed before) is no part alone: it goes with
    # the part above it (the first part: below), so that compressing the output again changes nothing
    merged: list[list[tuple[int, int, str]]] = []
    for chunk in out:
        if merged and (all(_MARK_RE.match(line[2].strip()) for line in chunk)
                       or all(_MARK_RE.match(line[2].strip()) for line in merged[-1]) and len(merged) == 1):
            merged[-1] = merged[-1] + chunk
        else:
            merged.append(chunk)
    return merged
