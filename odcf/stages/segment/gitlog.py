"""Git logs in the segmenter: a commit's entry of ``git log`` (``git log --stat``, ``git show`` without
its diff) hangs together.

An entry is its ``commit <sha>`` line (maybe "(HEAD -> main, origin/main)" after it), its header lines
at the margin ("Merge: …", "Author: …", "Date: …", ``--format=fuller``'s "Commit: …"), a blank line,
then its message indented by 4 spaces (several paragraphs), and ``--stat``'s lines, up to the next
``commit`` line. Read as prose, the 70 tokens of a header outranked its message and went alone, and a
message's sentence ("Refs: SEC-118") was delivered under another commit's header: the segmenter makes
an entry of up to :data:`WHOLE_ENTRY_TOKENS` one piece, and cuts a longer one into its header lines with
its message's first line (its subject), then whole lines of each paragraph of the rest, each delivered
only with that first piece (odcf.stages.budget). Found by its shape, fenced or not.
"""
from __future__ import annotations

import re

#: A commit's first line: "commit 9f3c2a1e…", maybe with its refs after it ("(HEAD -> main, tag: v1.2)").
COMMIT_RE = re.compile(r"^commit [0-9a-f]{7,40}\b")
#: A header line of an entry, at the margin, above its message.
_FIELD_RE = re.compile(r"^(?:Merge|Author|AuthorDate|Commit|CommitDate|Date):")
#: The most lines after a ``commit`` line that its "Author:" line may come (after "Merge:", say).
AUTHOR_WITHIN = 3
#: The most tokens of an entry that is one piece; a longer one is cut (its header with its subject first).
WHOLE_ENTRY_TOKENS = 120


def opens_commit(lines: list[tuple[int, int, str]], i: int) -> bool:
    """Whether line *i* opens a commit's entry: a ``commit <sha>`` line with an "Author:" line in the
    :data:`AUTHOR_WITHIN` lines under it, header lines all."""
    if not COMMIT_RE.match(lines[i][2]):
        return False
    for k in range(i + 1, min(i + 1 + AUTHOR_WITHIN, len(lines))):
        if not _FIELD_RE.match(lines[k][2]):
            return False
        if lines[k][2].startswith("Author:"):
            return True
    return False


def commit_entries(lines: list[tuple[int, int, str]], i: int) -> list[tuple[int, int, int]]:
    """The entries of the git log that opens at line *i*, ``(first line, end of the header with the
    message's first line, end)`` each, the blank lines after an entry left out of it; [] when line *i*
    opens no entry. An entry ends at the next one, or at the first line at the margin after its header
    (a "diff --git" line, a closing fence, prose).

    >>> text = ("commit 1a2b3c4d\\nAuthor: Lena <l@x.dev>\\nDate:   Fri May 31 2024\\n\\n    Revert \\"x\\"\\n\\n"
    ...         "    Proration double-charged 212 customers.\\n\\ncommit 7c8d9e0f\\nAuthor: Priya <p@x.dev>\\n"
    ...         "Date:   Thu May 30 2024\\n\\n    feat: x\\nThat is all.")
    >>> from odcf.textutil import iter_lines_with_offsets
    >>> commit_entries(list(iter_lines_with_offsets(text)), 0)
    [(0, 5, 7), (8, 13, 13)]
    """
    n = len(lines)
    out: list[tuple[int, int, int]] = []
    j = i
    while j < n and opens_commit(lines, j):
        k = j + 1
        while k < n and _FIELD_RE.match(lines[k][2]):
            k += 1
        head = end = k  # the header's end; then its message (and --stat's lines), indented, up to a line at the margin
        fields = k
        while k < n and not (lines[k][2].strip() and lines[k][2][:1] not in " \t"):
            k += 1
            if lines[k - 1][2].strip():
                if head == fields:
                    head = k  # the message's first line (its subject) goes with the header
                end = k
        out.append((j, head, end))
        j = k
    return out
