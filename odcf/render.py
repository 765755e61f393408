"""Render delivered segments into the assembled, source-annotated text.

Used by the budget stage (to measure exactly what it will deliver) and by the assembler
(to produce it), so the two can never disagree.

Layout: instruction sources first, then the others in input order (or the order the
reranker asked for in ``doc.meta["order"]``: a list of source ids). Each source is one
block ``[source i/n] label | layer | relevance NN%`` followed by its delivered text;
blocks are separated by a blank line. JSON sources cut into members are re-joined into
valid JSON, and so are the members of a fenced JSON block of a document, inside its fences, and
those of a record of JSON Lines, on its line; the records of a fenced block of JSON Lines are
written inside its fences.
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from odcf.document import Document, Segment, Source
from odcf.stages.segment.mail import QUOTE_RE
from odcf.textutil import CLAUSE_GOES_ON

#: A character after or before which sentences join without a space: Han, kana, CJK and
#: full-width punctuation (not hangul: Korean puts spaces between words).
_CJK_EDGE = re.compile("[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\u3000-\u303f\uff00-\uffef]")

PINNED = ("instruction",)


def items_mark(n: int) -> str:
    """What stands where *n* items of a list were left out: ``[…3 items]``, ``[…1 item]`` (4 o200k
    tokens with its line break, against 7 for ``[LIST_ITEMS: 3]``: a policy list of short rules,
    delivered in part at a tight budget, has a mark at every gap)."""
    return f"[…{n} item{'' if n == 1 else 's'}]"


def source_order(doc: Document) -> list[Source]:
    order = doc.meta.get("order")
    sources = list(doc.sources)
    if order:
        rank = {sid: k for k, sid in enumerate(order)}
        sources.sort(key=lambda s: (rank.get(s.id, len(rank)), doc.sources.index(s)))
    pinned = [s for s in sources if s.layer in PINNED]
    return pinned + [s for s in sources if s.layer not in PINNED]


def header(doc: Document, source: Source, segments: Sequence[Segment]) -> str:
    n = len(doc.sources)
    i = doc.sources.index(source) + 1
    parts = [f"[source {i}/{n}] {source.label}", source.layer]
    if source.layer not in ("instruction", "state"):
        scores = [s.score for s in segments if s.score is not None]
        if scores:
            parts.append(f"relevance {round(100 * max(scores))}%")
    return " | ".join(parts)


def join_segments(segments: Sequence[Segment]) -> str:
    """Join a source's delivered segments (already in index order)."""
    if not segments:
        return ""
    # JSON in a document, written inside its fences, or a record of JSON Lines, on its line: in blocks
    blocks = any("json_block" in s.meta for s in segments)
    if not blocks and all("json_levels" in s.meta for s in segments):
        return _join_json(segments)
    container = segments[0].meta.get("json_container")
    if not blocks and container and all("json_member" in s.meta for s in segments):
        # a record written before json_levels
        return container[0] + ",".join(s.text for s in segments) + container[1]
    # a CRLF source gets CRLF wherever assembly adds a line break
    nl = "\r\n" if segments[0].meta.get("crlf") else "\n"  # the segmenter marks every segment of a CRLF source
    out: list[str] = []
    prev: Segment | None = None
    said: Segment | None = None  # the last piece delivered that is not a heading
    yaml = _YamlMarks(out, nl)
    diff = _DiffMarks(out, nl)
    runs = _ItemMarks(out, nl)
    cut_open = False  # " …" was written after the part before: its sentence goes on in a part left out
    for k, seg in enumerate(segments):
        block = seg.meta.get("json_block")
        if block is not None and prev is not None and prev.meta.get("json_block") == block:
            prev = seg  # a member of a fenced JSON block: written with the first delivered one (below)
            continue
        yaml.enter(seg)
        diff.enter(seg)
        runs.leave(seg)
        if prev is not None:
            gap = _gap(prev, seg, cut_open)
            out.append(gap if nl == "\n" or "\r" in gap else gap.replace("\n", nl))
        if diff.due:
            out.append(diff.due)  # a fenced diff's opening fence, before the first piece delivered of it
            diff.due = ""
        if yaml.due:
            out.append(yaml.due)  # a front-matter's opening "---", before its first key delivered
            yaml.due = ""
        speaker = seg.meta.get("speaker")
        # a heading in a message is in no turn (in_turn): the piece before it says whose turn goes on
        above = said if prev is not None and prev.kind == "heading" and "speaker" not in prev.meta else prev
        if block is not None and "json_label" in seg.meta:
            # a tool's JSON after its label ("tool:get_order: {…}"), cut into members: the label as written,
            # then the members delivered (below); no piece holds the label
            out.append(seg.meta["json_label"])
        elif (speaker and not seg.meta.get("opens_line") and (prev is None or prev.paragraph != seg.paragraph)
                and (above is None or _turn(above) != _turn(seg)) and seg.kind != "heading"):
            # the turn's first sentence, which holds the speaker's label, was not delivered, and what
            # is above is another turn: say who speaks (a table, a code block or quoted lines start on
            # their own line); never before a heading, which no turn goes on past ("Status: ## Fraud
            # referrals" read a report's field as a speaker and its next section as that field's text)
            out.append(speaker + (nl if seg.kind in ("table", "code", "json") or seg.meta.get("quote") else " "))
        elif (speaker and not seg.meta.get("opens_line") and above is not None and prev.paragraph != seg.paragraph
              and not _same_turn(above, seg) and seg.kind in ("sentence", "list") and not seg.meta.get("quote")
              and _ROLE_RE.match(speaker)):
            # a later message of the user (or agent) of the line above in a chat with an agent, turns left out
            # between: "…" says that it is not the rest of that message ("user: Hi! … from Amsterdam.\n… What
            # about day trips?"); not in a meeting, where it cost QMSum evidence words (0.616 -> 0.587 at 4x:
            # a token on every such line of a long meeting)
            out.append("… ")
        lines_fence = seg.meta.get("jsonl_fence")
        if lines_fence and not _same_records(prev, seg):
            out.append(f"{lines_fence[2]}{lines_fence[0]}{nl}")  # the first record delivered of a fenced block
        rows = seg.meta.get("table_rows")
        if rows and (prev is None or prev.index != seg.index - 1):
            # a part of a long table delivered without the part before it
            if prev is not None and prev.meta.get("table_rows") and prev.paragraph == seg.paragraph:
                omitted = rows[0] - sum(prev.meta["table_rows"])  # rows between two parts of one table
            else:
                if seg.meta.get("table_part") and seg.meta["table_header"]:  # ls -l has none
                    out.append(seg.meta["table_header"].replace("\n", nl) + nl)  # repeat the header
                omitted = rows[0]
            if omitted > 0:
                out.append(f"[DATA_ROWS: {omitted}]{nl}")
        items = seg.meta.get("list_items")
        if items and (prev is None or prev.index != seg.index - 1):
            # a part of a long list delivered without the part before it: say how many items are left out
            if prev is not None and prev.meta.get("list_items") and prev.paragraph == seg.paragraph:
                omitted = items[0] - sum(prev.meta["list_items"])
            else:
                omitted = items[0]
            if omitted > 0:
                out.append(items_mark(omitted) + nl)
        subs = seg.meta.get("sub_items")
        indent = seg.text[:len(seg.text) - len(seg.text.lstrip())] if subs else ""  # a sub-item's marks stand at it
        if subs and (prev is None or prev.index != seg.index - 1):
            # a part of a long item's sub-list (odcf.stages.segment): the sub-items left out before it, at
            # its indentation (its item's first line, which it goes only with, is delivered above it)
            omitted = subs[0] - (sum(prev.meta["sub_items"]) if _sub_of(prev, seg) else 0)
            if omitted > 0:
                out.append(indent + items_mark(omitted) + nl)
        code = seg.meta.get("code_lines")
        if code and (seg.meta.get("code_part") or code[0]) and (prev is None or prev.index != seg.index - 1):
            # (a first part with lines before it: a source file compressed before, "[CODE_LINES: 33]" above it)
            # a part of a long code block delivered without the part before it: inside the fences
            if prev is None or prev.paragraph != seg.paragraph or not prev.meta.get("code_lines"):
                if seg.meta["code_open"]:
                    out.append(seg.meta["code_open"] + nl)
                omitted = code[0] - (1 if seg.meta["code_open"] else 0)  # lines after the opening fence
            else:
                omitted = code[0] - sum(prev.meta["code_lines"])
            if omitted > 0:
                out.append(f"[CODE_LINES: {omitted}]{nl}")
        marked = runs.enter(seg)
        nxt = segments[k + 1] if k + 1 < len(segments) else None
        last = seg  # the last segment written here (of a JSON block, its last member delivered)
        if block is not None:
            # the members of a fenced JSON block delivered: valid JSON inside the block's fences; of a record
            # of JSON Lines: valid JSON on its line
            run = [seg] + list(itertools.takewhile(lambda s, b=block: s.meta.get("json_block") == b, segments[k + 1:]))
            nxt, last = segments[k + len(run)] if k + len(run) < len(segments) else None, run[-1]
            if "json_fence" in seg.meta:
                opening, closing, indent = seg.meta["json_fence"]
                out.append(f"{indent}{opening}{nl}{indent}{_join_json(run)}{nl}{indent}{closing}")
            else:
                out.append(_join_json(run))
        else:
            out.append(_lead(prev, seg, marked).replace("\n", nl))
            out.append(seg.text)
        if subs and not (nxt is not None and _sub_of(seg, nxt)):
            rest = seg.meta["sub_total"] - sum(subs)  # sub-items after the last part of them delivered
            if rest > 0:
                out.append(nl + indent + items_mark(rest))
        if items and (nxt is None or nxt.paragraph != seg.paragraph or not nxt.meta.get("list_items")):
            rest = seg.meta.get("list_total", 0) - sum(items)  # items after the last part delivered
            if rest > 0:
                out.append(nl + items_mark(rest))
        parts = seg.meta.get("cut_parts")
        cut_open = bool(parts and seg.meta["cut_part"] < parts - 1 and (nxt is None or nxt.index != seg.index + 1)
                        and not (nxt.meta.get("cut_part") and nxt.paragraph == seg.paragraph if nxt is not None else False))
        if cut_open:
            out.append(" …")  # a sentence cut for length goes on in a part not delivered (between two: _gap)
        elif (seg.kind == "sentence" and (nxt is None or nxt.paragraph != seg.paragraph)
              and seg.meta.get("clause_goes_on") and seg.text.endswith(CLAUSE_GOES_ON)):
            # a clause that ends in "；", ";" or "，" goes on in one of its paragraph not delivered: "给予警告；"
            # read as the whole penalty, "拒不改正的，处1万元以上10万元以下罚款。" left out unsaid (not the last
            # piece of its paragraph, "BEGIN;": nothing of it is left out)
            out.append(_elided(seg.text[-1], ""))
        if rows and (nxt is None or nxt.paragraph != seg.paragraph or not nxt.meta.get("table_rows")):
            rest = seg.meta.get("table_total", 0) - sum(rows)  # rows after the last part delivered
            if rest > 0:
                out.append(f"{nl}[DATA_ROWS: {rest}]")
        if lines_fence and (nxt is None or not _same_records(last, nxt)):
            out.append(f"{nl}{lines_fence[2]}{lines_fence[1]}")  # the last record delivered of a fenced block
        if code and (seg.meta["code_part"] < seg.meta["code_parts"] - 1
                     or sum(code) + seg.meta["code_closed"] < seg.meta["code_total"]) and (
                nxt is None or nxt.index != seg.index + 1):
            # the part after this one was not delivered: say how many lines, and close the fence
            if nxt is None or nxt.paragraph != seg.paragraph or not nxt.meta.get("code_lines"):
                rest = seg.meta["code_total"] - sum(code) - (1 if seg.meta["code_closed"] else 0)
                out.append((f"{nl}[CODE_LINES: {rest}]" if rest > 0 else "")
                           + (nl + seg.meta["code_close"] if seg.meta["code_open"] else ""))
        yaml.opened(seg)
        prev = seg
        if seg.kind != "heading":
            said = seg
    yaml.enter(None)
    diff.enter(None)
    runs.leave(None)
    return "".join(out)


def _same_records(prev: Segment | None, seg: Segment) -> bool:
    """Whether *prev* and *seg* are records of one fenced block of JSON Lines (odcf.stages.segment)."""
    return prev is not None and "jsonl_fence" in prev.meta and prev.paragraph == seg.paragraph


def _sub_of(prev: Segment, seg: Segment) -> bool:
    """Whether *prev* and *seg* are parts of the sub-list of one item."""
    return ("sub_items" in prev.meta and prev.meta.get("under") == seg.meta.get("under")
            and prev.paragraph == seg.paragraph)


class _ItemMarks:
    """The run of list items open while a source is joined (odcf.stages.segment.items: a short list's
    items, or long ones, in paragraphs of their own, "M1. …" … "M7. …"): items left out before a
    delivered one are counted before it, and those after the last delivered one after it
    (``[…n items]``), as for the parts of a long list, so that a list of two held drugs delivered
    with one does not read as the whole list."""

    def __init__(self, out: list[str], nl: str) -> None:
        self.out = out
        self.nl = nl
        self.run: object = None
        self.total = 0
        self.upto = 0  # items up to the last delivered one

    def leave(self, seg: Segment | None) -> None:
        """Before the gap to *seg* (None: the source's end): the items after the last delivered one of
        the run left."""
        if self.run is None:
            return
        items = seg.meta.get("items") if seg is not None else None
        run = items[0] if items else seg.meta.get("in_items") if seg is not None else None
        if run != self.run:
            if self.total > self.upto:
                self.out.append(self.nl + items_mark(self.total - self.upto))
            self.run = None

    def enter(self, seg: Segment) -> bool:
        """After the gap to *seg*: the items left out before it; whether a mark was written."""
        items = seg.meta.get("items")
        if not items:
            return False
        run, first, count, total = items
        if run != self.run:
            self.run, self.total, self.upto = run, int(total), 0
        omitted = int(first) - self.upto
        self.upto = max(self.upto, int(first) + int(count))
        if omitted > 0:
            self.out.append(items_mark(omitted) + self.nl)
            return True
        return False


class _DiffMarks:
    """The file and hunk of a unified diff (odcf.stages.segment.diffparts) open while a source is
    joined: lines of a hunk left out are said where they are (``[DIFF_LINES: n]``), a file's hunks
    left out after its last delivered one (``[DIFF_HUNKS: n]``), files left out where they are, before,
    between or after those delivered (``[DIFF_FILES: n]``), so that a hunk delivered is never read as all the file's changes."""

    def __init__(self, out: list[str], nl: str) -> None:
        self.out = out
        self.nl = nl
        self.block: object = None
        self.last = -1  # the last file of the open diff with something delivered
        self.file: tuple[int, int, set[int]] | None = None  # (file, its hunks, hunks delivered)
        self.hunk: tuple[int, int, int] | None = None  # (hunk, its lines, lines up to the last delivered)
        self.total_files = 0
        self.fence: list[str] | None = None  # the open diff's fences (a diff inside a fenced block)
        self.due = ""  # its opening fence, to be written before its first delivered piece

    def _mark(self, what: str, n: int) -> None:
        if n > 0:
            self.out.append(f"{self.nl}[DIFF_{what}: {n}]")

    def _close_hunk(self) -> None:
        if self.hunk is not None:
            self._mark("LINES", self.hunk[1] - self.hunk[2])
        self.hunk = None

    def _close_file(self) -> None:
        self._close_hunk()
        if self.file is not None:
            self._mark("HUNKS", self.file[1] - len(self.file[2]))
        self.file = None

    def enter(self, seg: Segment | None) -> None:
        """Say what is left out before *seg* (None: the end of the source)."""
        block = seg.meta.get("diff_block") if seg is not None else None
        if self.block is not None and block != self.block:
            self._close_file()
            self._mark("FILES", self.total_files - 1 - self.last)
            if self.fence is not None:
                self.out.append(self.nl + self.fence[1])  # the block's closing fence, after the marks
            self.block, self.last, self.fence = None, -1, None
        if seg is None or block is None:
            return
        if self.block is None:
            self.fence = seg.meta.get("diff_fence")
            self.due = self.fence[0] + self.nl if self.fence is not None else ""
        self.block, self.total_files = block, int(seg.meta["diff_files"])
        f = int(seg.meta["diff_file"])
        if self.file is None or self.file[0] != f:
            self._close_file()
            if f > self.last + 1:  # files left out before this one: after the opening fence, or the file before
                if self.last < 0:
                    self.due += f"[DIFF_FILES: {f}]{self.nl}"
                else:
                    self._mark("FILES", f - self.last - 1)
            self.file = (f, int(seg.meta.get("diff_hunks", 0)), set())
            self.last = f
        h = seg.meta.get("diff_hunk")
        if h is None:
            return
        if self.hunk is None or self.hunk[0] != h:
            self._close_hunk()
            self.file[2].add(int(h))
            # a long hunk (its @@ line, then parts): count its lines; a hunk of one piece is whole
            total = seg.meta.get("diff_total")
            self.hunk = (int(h), int(total), 0) if total is not None else None
        lines = seg.meta.get("diff_lines")
        if lines is not None and self.hunk is not None:
            self._mark("LINES", lines[0] - self.hunk[2])
            self.hunk = (self.hunk[0], self.hunk[1], lines[0] + lines[1])


class _YamlMarks:
    """The nodes of a YAML config (odcf.stages.segment.yamlparts) open while a source is joined:
    when one closes (the next segment delivered is not under it), a comment at its children's
    indentation says how many of them were left out (``  # [YAML_KEYS: 3]``, ``# [YAML_ITEMS: 2]``
    for items): the text stays valid YAML, and a reader does not take the keys delivered for all
    of them. The block itself counts as a node: its top-level keys left out are said at its end.
    A markdown page's front-matter (``yaml_fence``) is written between its fences, after the marks,
    when any of it is delivered: both "---" lines or neither."""

    def __init__(self, out: list[str], nl: str) -> None:
        self.out = out
        self.nl = nl
        self.block: object = None
        self.stack: list[tuple[int | None, list[object], set[int]]] = []  # (node index, children, seen)
        self.fence: list[str] | None = None  # the open block's fences (a front-matter)
        self.due = ""  # its opening fence, to be written before its first delivered node

    def enter(self, seg: Segment | None) -> None:
        """Close what *seg* (None: the end) is not under; count it as seen by its parent."""
        block = seg.meta.get("yaml_block") if seg is not None else None
        path = seg.meta.get("yaml_path", []) if seg is not None and block is not None else []
        while self.stack and (block != self.block or (self.stack[-1][0] is not None
                                                       and self.stack[-1][0] not in path)):
            self._close()
        if not self.stack and self.fence is not None:
            self.out.append(self.nl + self.fence[1])  # the front-matter's closing fence, after the marks
            self.fence = None
        if seg is None or block is None:
            return
        if not self.stack:
            self.block = block
            self.stack.append((None, list(seg.meta.get("yaml_root", [0, "", False])), set()))
            self.fence = seg.meta.get("yaml_fence")
            self.due = self.fence[0] + self.nl if self.fence is not None else ""
        self.stack[-1][2].add(seg.index)

    def opened(self, seg: Segment) -> None:
        """*seg* was written: a node with children stays open until they are done."""
        kids = seg.meta.get("yaml_children")
        if seg.meta.get("yaml_block") is not None and kids and kids[0]:
            self.stack.append((seg.index, list(kids), set()))

    def _close(self) -> None:
        _, (total, indent, items), seen = self.stack.pop()  # type: ignore[misc]
        omitted = int(total) - len(seen)  # type: ignore[call-overload]
        if omitted > 0:
            self.out.append(f"{self.nl}{indent}# [YAML_{'ITEMS' if items else 'KEYS'}: {omitted}]")


#: A speaker's label that is a role of a chat with an agent: "user:", "Human:", "assistant:", "[tool get_order]".
_ROLE_RE = re.compile(r"\[?\s*(?:user|human|customer|system|assistant|agent|tool|bot|chatbot|ai|model|function)\b",
                      re.IGNORECASE)


def _turn(seg: Segment) -> object:
    """Which turn a segment is in: its chat turn's number, else (a transcript of one line a turn)
    its speaker, so that lines of one speaker are not labelled again."""
    return seg.meta.get("turn", seg.meta.get("speaker"))


def _same_turn(prev: Segment, seg: Segment) -> bool:
    """Whether *seg*, delivered right after *prev*, goes on *prev*'s turn: the same chat turn, else (a
    transcript of one line a turn) the same speaker on the same or the next line. A later message of the
    same speaker, lines left out between, opens with "… " in a chat with an agent (join_segments): the
    reader would take it for the rest of the earlier one."""
    if "turn" in prev.meta and "turn" in seg.meta:
        return bool(prev.meta["turn"] == seg.meta["turn"])
    return bool(prev.meta.get("speaker") == seg.meta.get("speaker") and seg.paragraph - prev.paragraph <= 1)


def _join_json(segments: Sequence[Segment]) -> str:
    """Valid JSON from delivered members of a cut JSON source: each container around a delivered
    member is opened with its own text (``{``, ``"results": [``) and closed, members joined by
    commas; a container none of whose members is delivered is left out whole. A container some of
    whose members are left out says how many as its last member: ``"[JSON_ITEMS: 35]"`` in a
    list, ``"[JSON_KEYS: 2]": null`` in an object (valid JSON, and a reader does not take a part
    for the whole)."""
    out: list[str] = []
    stack: list[Sequence[str]] = []  # open levels: (key, opening text, closing text)
    filled: list[bool] = []  # whether each open level holds a member yet
    seen: list[set[int]] = []  # which of each open level's members are delivered
    sizes: list[int | None] = []  # how many members each open level has (None: a record written before sizes)

    def close() -> None:
        level, size, got = stack.pop(), sizes.pop(), seen.pop()
        omitted = size - len(got) if size is not None else 0
        if omitted > 0:
            mark = f'"[JSON_ITEMS: {omitted}]"' if level[2] == "]" else f'"[JSON_KEYS: {omitted}]":null'
            out.append(("," if filled[-1] else "") + mark)
        filled.pop()
        out.append(level[2])

    for seg in segments:
        levels = seg.meta["json_levels"]
        counts = seg.meta.get("json_sizes")
        common = 0
        while common < min(len(stack), len(levels)) and stack[common][0] == levels[common][0]:
            common += 1
        while len(stack) > common:
            close()
        for depth in range(len(stack), len(levels)):
            level = levels[depth]
            if filled:
                out.append("," if filled[-1] else "")
                filled[-1] = True
                seen[-1].add(int(level[0].rsplit("/", 1)[1]))
            out.append(level[1])
            stack.append(level)
            filled.append(False)
            seen.append(set())
            sizes.append(counts[depth] if counts and len(counts) == len(levels) else None)
        out.append(("," if filled[-1] else "") + seg.text)
        filled[-1] = True
        seen[-1].add(seg.meta.get("json_member", -1))
    while stack:
        close()
    return "".join(out)


def _gap(prev: Segment, seg: Segment, cut_open: bool = False) -> str:
    """What goes between two delivered segments of a source, *prev* before *seg* (*cut_open*: " …"
    was written after *prev*, a part of a sentence whose next part is left out)."""
    sep = seg.sep
    if prev.meta.get("json_block") is not None and "json_fence" not in prev.meta:
        # a record of JSON Lines cut into members ends in the sep of the segment after it ("}\n"), and
        # assembly closed it: from the line break after it
        cut = sep.find("\n")
        sep = sep[cut:] if cut >= 0 else ""
    if seg.meta.get("json_block") is not None and "json_fence" not in seg.meta:
        sep = sep[:sep.rfind("\n") + 1]  # such a record opens in it ("\n{"), and assembly writes that
    fence = seg.meta.get("json_fence") or (None if _same_records(prev, seg) else seg.meta.get("jsonl_fence"))
    if fence is not None:
        # a fenced JSON block's first member, or the first record of a fenced block of JSON Lines delivered,
        # which assembly writes with the opening fence: what is before it
        cut = sep.rfind(fence[0])
        sep = sep[:cut] if cut >= 0 else ""
    yaml_fence = seg.meta.get("yaml_fence")
    if yaml_fence is not None and prev.meta.get("yaml_block") != seg.meta.get("yaml_block"):
        # the first key delivered of a front-matter, which assembly writes under the opening fence
        cut = sep.rfind(yaml_fence[0])
        sep = sep[:cut] if cut >= 0 else ""
    diff_fence = seg.meta.get("diff_fence")
    if diff_fence is not None and prev.meta.get("diff_block") != seg.meta.get("diff_block"):
        # the first piece of a fenced diff, which assembly writes under the opening fence: what is before it
        cut = sep.rfind(diff_fence[0])
        sep = sep[:cut] if cut >= 0 else ""
    if ("json_fence" in prev.meta or ("jsonl_fence" in prev.meta and not _same_records(prev, seg))
            or (seg.index != prev.index + 1 and ("```" in sep or "~~~" in sep))
            or ("diff_fence" in prev.meta and prev.meta.get("diff_block") != seg.meta.get("diff_block"))
            or ("yaml_fence" in prev.meta and prev.meta.get("yaml_block") != seg.meta.get("yaml_block"))):
        # a fenced JSON block ends in the sep of the segment after it ("]}\n```\n\n"; the only fence
        # outside a segment), and assembly closed it: the whitespace after it
        sep = sep[len(sep.rstrip()):]
    if fence is not None and fence[2] and sep.endswith(fence[2]):
        sep = sep[:-len(fence[2])]  # the fence's indentation is written with it
    if seg.index == prev.index + 1:
        return sep  # as in the source
    lead = seg.meta.get("table_lead")
    if lead is not None and prev.index + 1 == lead[0] and "```" not in lead[1] and "~~~" not in lead[1]:
        return str(lead[1])  # only the table's parts before it left out: what is before the table
    if prev.meta.get("quote_head") and prev.meta.get("quote") == 0 and (
            seg.meta.get("quote_block") == prev.meta.get("quote_block")):
        # the quote's first lines left out: under its "On … wrote:" line as in the source (_lead marks them)
        return str(prev.meta.get("quote_break", "\n"))
    if seg.meta.get("cut_part") and prev.meta.get("cut_part") is not None and prev.paragraph == seg.paragraph:
        return " … "  # parts of one sentence cut for length, with a part between them left out
    if seg.paragraph != prev.paragraph:
        if (seg.meta.get("speaker") and prev.meta.get("speaker")
                and not ("turn" in seg.meta and seg.meta.get("turn") == prev.meta.get("turn"))):
            return "\n"  # lines of a transcript stay one per line (paragraphs of one turn keep their break)
        # a gap across blocks: keep the block break even if the segment opening the next block was dropped
        return sep if "\n\n" in sep else "\n\n"
    if seg.meta.get("table_rows"):
        return "\n"
    if _breaks(prev, seg):
        # a line break lies in what is left out: keep it ("7.2 …" and the tail of 7.4 are two clauses,
        # not one), and say that the rest of the line of *prev* is left out
        return (_elided(prev.text[-1:], "") if _goes_on(prev) and not cut_open else "") + "\n"
    # sentences of one line left out between the two (in Chinese too: "；" then a clause that is not
    # the next one would read as going on from it)
    return " " if cut_open else _elided(prev.text[-1:], seg.text[:1])


def _elided(before: str, after: str) -> str:
    """The mark of text left out between the characters *before* and *after*: " … ", without the
    space on a side of Chinese or Japanese, which is written without spaces ("罚款。…第四条")."""
    return (" " if before and not _CJK_EDGE.match(before) else "") + "…" + (
        " " if after and not _CJK_EDGE.match(after) else "")


def _breaks(prev: Segment, seg: Segment) -> bool:
    """Whether the source has a line break between *prev* and *seg*, two segments of one paragraph."""
    lines = seg.meta.get("line_pieces")
    return "\n" in seg.sep or (lines is not None and prev.index < lines[0])


def _goes_on(seg: Segment) -> bool:
    """Whether something after *seg* is on its (last) line (odcf.stages.segment.items)."""
    lines = seg.meta.get("line_pieces")
    return lines is not None and lines[1] > seg.index


def _lead(prev: Segment | None, seg: Segment, marked: bool) -> str:
    """What goes right before *seg*'s text when the segment before it in the source is not delivered:
    the number of its item when the piece holding that number is not delivered ("7.4 … "), "… " when
    it goes on a line whose start is left out, and, on a line of its own, "…" for whole lines of its
    paragraph left out (*marked*: ``[…n items]`` said so already), "> …" (its own marker) for quoted
    lines left out whole before a quoted line."""
    if prev is not None and prev.index == seg.index - 1:
        return ""
    label = seg.meta.get("item_label")
    if label and (prev is None or prev.index < label[1]):
        return label[0] + _elided(" ", seg.text[:1])
    if seg.meta.get("quote") and prev is not None and prev.meta.get("quote_block") == seg.meta.get("quote_block"):
        # quoted lines left out whole: a line "> …" with the marker of the shallower of the two lines around
        # them (under an attribution, its quote's: the lines right under it)
        shallower = seg if prev.meta.get("quote_head") or int(seg.meta["quote"]) <= int(prev.meta.get("quote", 0)) else prev
        quote = QUOTE_RE.match(shallower.text)
        if quote is not None:
            return quote.group(0).strip() + " …\n"
    lines = seg.meta.get("line_pieces")
    if prev is None or prev.paragraph != seg.paragraph or lines is None or not _breaks(prev, seg):
        return ""
    if lines[0] != seg.index:
        return _elided("", seg.text[:1])  # its line's start is left out
    if not _goes_on(prev) and not marked:
        return "…\n"  # lines between the two left out whole
    return ""


def render(
    doc: Document,
    delivered: Callable[[Segment], bool] | None = None,
    *,
    annotate: bool = True,
) -> tuple[str, dict[str, str]]:
    """The assembled text and each source's delivered body (by source id)."""
    keep = delivered or (lambda s: not s.dropped)
    by_source: dict[str, list[Segment]] = {}
    for seg in doc.segments:
        if keep(seg) and seg.text:
            by_source.setdefault(seg.source_id, []).append(seg)
    blocks: list[str] = []
    bodies: dict[str, str] = {}
    crlf = True  # whether every delivered source is a CRLF one: then assembly's own breaks are CRLF too
    for source in source_order(doc):
        segs = sorted(by_source.get(source.id, ()), key=lambda s: s.index)
        if not segs:
            continue
        body = join_segments(segs)
        bodies[source.id] = body
        nl = "\r\n" if segs[0].meta.get("crlf") else "\n"
        crlf = crlf and nl == "\r\n"
        blocks.append(f"{header(doc, source, segs)}{nl}{body}" if annotate else body)
    return ("\r\n\r\n" if blocks and crlf else "\n\n").join(blocks), bodies


def block_cost(count: Callable[[str], int], doc: Document, source: Source, segs: Iterable[Segment]) -> int:
    return count(header(doc, source, list(segs))) + 2


def group_by_source(segments: Iterable[Segment]) -> Mapping[str, list[Segment]]:
    out: dict[str, list[Segment]] = {}
    for s in segments:
        out.setdefault(s.source_id, []).append(s)
    return out
