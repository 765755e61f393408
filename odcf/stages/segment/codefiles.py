"""Source files in the segmenter: a source named ``….py``, ``….ts``, ``….go`` (its origin, else its id:
``odcf compress FILE`` gives both the path) is code throughout, cut as a long fenced block is, in whole
lines, never as prose: a docstring's or comment's ";" or "." is no place to cut, and a line delivered
is the line of the file, byte for byte. Its parts end at blank lines where they can (a function, a
block of imports), each of about ``max_code_tokens``; a run of lines without a blank line that is
longer is cut between lines, never right under a comment line (the comment goes with the code it
speaks of) nor under a line that heads the lines below it (``def should_retry(…) -> bool:``). A long
fenced code block in a document is cut the same way (odcf.stages.segment).
"""
from __future__ import annotations

import re
from collections.abc import Callable

from odcf.document import LAYERS, Source

#: File names that declare source code (lower case).
CODE_SUFFIXES = (
    ".py", ".pyi", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".java", ".kt", ".kts", ".scala", ".go",
    ".rs", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".swift", ".rb", ".php", ".lua", ".pl",
    ".sh", ".bash", ".zsh", ".ps1", ".sql", ".r", ".dart",
)
_COMMENT_OPENS = ("#", "//", "--", "/*", "*", "%")
#: A line that heads the lines below it: a decorator, a function's or class's header, a line opening a
#: block (``def should_retry(status: int, attempt: int) -> bool:``, ``if attempt >= 5:``, ``func main() {``).
_OPENER_RE = re.compile(r"^\s*(?:@\w|(?:async\s+)?def\s|class\s)|[:{(\[]\s*$")
#: odcf's own mark of lines left out (a file compressed before).
_MARK_RE = re.compile(r"^\[CODE_LINES: \d+\]$")
#: the line odcf writes above a source's block (annotate, odcf.render.header): "[source 1/1]
#: d/ratelimit.py | fact | relevance 99%" (a file compressed before, with its header)
HEADER_RE = re.compile(r"^\[source \d+/\d+\] .+ \| (?:" + "|".join(LAYERS) + r")(?: \| relevance \d+%)?[ \t]*(?:\n|$)",
                       re.MULTILINE)


def declared_code(source: Source) -> bool:
    """Whether a source's file name (its label: its origin, else its id) declares source code (:data:`CODE_SUFFIXES`)."""
    return source.label.lower().endswith(CODE_SUFFIXES)


def odcf_headers(text: str) -> tuple[str, list[str]]:
    """*text* without the header lines odcf wrote above a source's block (:data:`HEADER_RE`, the
    first line or one under a blank line: a source file's output compressed again, annotated), and
    those lines: they are odcf's, no line of the file, and a new one is written above the output."""
    found = [m for m in HEADER_RE.finditer(text) if m.start() == 0 or text[:m.start()].endswith("\n\n")]
    if not found:
        return text, []
    out, at = [], 0
    for m in found:
        out.append(text[at:m.start()])
        at = m.end()
    out.append(text[at:])
    return "".join(out), [m.group(0).rstrip() for m in found]


def is_mark(line: str) -> int:
    """The lines a mark of lines left out that odcf wrote counts (``[CODE_LINES: 4]``: 4), else 0."""
    return int(line.strip()[12:-1]) if _MARK_RE.match(line.strip()) else 0


def code_chunks(lines: list[tuple[int, int, str]], count: Callable[[str], int],
                limit: int) -> list[list[tuple[int, int, str]]]:
    """*lines* (a source file's, none blank at either end) in parts of whole lines: runs between
    blank lines joined while the part stays within *limit* tokens (*count*: a line's tokens); a run
    over *limit* in parts of its own, cut between lines at about *limit*, not after a comment line nor
    after a line that heads the lines below it (:data:`_OPENER_RE`: a ``def``, ``class`` or decorator
    line, a line ending in ":" or "{"), which go with the line below them. A
    mark of lines left out that odcf wrote (:func:`is_mark`: a file compressed before) is in no part,
    and a part ends at it: the lines it counts are counted again in the marks written around the parts
    delivered, so that compressing the output again changes nothing and loses no count."""
    runs: list[list[tuple[int, int, str]]] = []
    run: list[tuple[int, int, str]] = []
    ends: set[int] = set()  # runs after which a part ends: at a mark of lines left out
    for line in lines:
        mark = is_mark(line[2])
        if line[2].strip() and not mark:
            run.append(line)
        elif run:
            runs.append(run)
            run = []
        if mark and runs:
            ends.add(len(runs) - 1)
    if run:
        runs.append(run)
    out: list[list[tuple[int, int, str]]] = []
    chunk: list[tuple[int, int, str]] = []
    tokens = 0
    for r, run in enumerate(runs):
        if r - 1 in ends and chunk:
            out.append(chunk)
            chunk, tokens = [], 0
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
                held = []  # comment lines and a block's header at the chunk's end go with the line below them
                while len(chunk) > 1 and (chunk[-1][2].lstrip().startswith(_COMMENT_OPENS)
                                          or _OPENER_RE.search(chunk[-1][2].rstrip())):
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
    return out
