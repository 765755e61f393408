"""Segmentation: cut each source into the units later stages keep, change or drop.

Prose becomes sentences (CJK-aware: 。！？; "；" cuts as ";" does, in a sentence over 240 characters), markdown headings stay whole, and so do the
capitalised title lines of a plain-text contract ("ARTICLE 10 — INDEMNITY", "第三章 违约责任":
:mod:`.headings`; each with its ``heading_level`` in meta) in a source without markdown headings;
tables, fenced code and runs of list lines become block segments (split when very long), an
application log a segment an entry (its line and the stack trace under it: :mod:`.logs`), a
subtitle's cue (SRT, WebVTT) a segment (:mod:`.subtitles`), a git log's commit (:mod:`.gitlog`),
and large JSON containers become one segment per top-level member so that dropping
members still yields valid JSON (a JSON source, and a fenced block of JSON in a document: a tool's
answer in an agent's log); JSON Lines (two lines or more, each one JSON object or array, fenced or
not) become one segment per record, a record too large to deliver whole cut into its members.
Quoted lines of a reply ("> …") are cut in whole lines, so that each keeps its marker, and each
line of an email's header (From:, To:, …) is a segment of its own. Segments cover their source
completely: joining ``sep + text`` of every segment gives back the (normalized) source text, less
trailing whitespace.

Parts: :mod:`.headings` (plain-text headings), :mod:`.mail` (email headers, quoted replies,
transcripts and chat exports), :mod:`.tables` (pipe and delimited tables), :mod:`.jsonparts` (JSON
members, JSON Lines), :mod:`.logs` (application logs' entries), :mod:`.subtitles` (subtitles' cues), :mod:`.gitlog` (git logs' commits),
:mod:`.lines` (what they share).
"""
from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

from odcf.document import Document, Segment, Source, TraceEvent
from odcf.plan.model import Plan
from odcf.rules.jsonmin import json_fence, json_lines_fence
from odcf.rules.tables import TABLE_SEP_RE
from odcf.stages.base import Stage, call_budget
from odcf.stages.segment.codefiles import code_chunks, declared_code, is_mark
from odcf.stages.segment.diffparts import diff_end, diff_files, diff_pieces
from odcf.stages.segment.gitlog import WHOLE_ENTRY_TOKENS, commit_entries
from odcf.stages.segment.headings import lone_numbered_title, plain_heading
from odcf.stages.segment.items import mark_items
from odcf.stages.segment.jsonparts import (
    ID_KEY_RE,
    NUMBER_KEY_RE,
    ROWS_MARK_RE,
    json_lines_run,
    json_record,
    member_key,
    top_level_members,
    value_container,
)
from odcf.stages.segment.lines import (
    BOLD_LINE_RE,
    FENCE_RE,
    HEADING_RE,
    LIST_RE,
    PROGRESS_RE,
    TABLE_PIPE_RE,
    ZH_ITEM_RE,
    Piece,
    rstrip,
)
from odcf.stages.segment.logs import log_entries, opens_logged_entry
from odcf.stages.segment.mail import (
    ATTRIBUTION_RE,
    FIELD_OPEN_RE,
    MAIL_FIELD_RE,
    MAIL_HEAD_FIELDS,  # noqa: F401 - importable from here, as before the split
    QUOTE_END_RE,
    QUOTE_PIECE_CHARS,
    QUOTE_RE,
    ROLE_NAME_RE,
    SPEAKER_RE,
    SPEAKER_RUN,
    STAMPED_SPEAKER_RE,
    chat_turns,
    in_turn,
    mail_header_run,
    opens_turn,
    speaker_meta,
    speaker_of,
    speaker_run,
)
from odcf.stages.segment.subtitles import cue_end
from odcf.stages.segment.tables import (
    aligned_run,
    csv_records,
    declared_delimiter,
    one_record_a_line,
    table_run,
)
from odcf.stages.segment.tracebacks import CHAIN_RE, TRACEBACK_RE, traceback_units
from odcf.stages.segment.yamlparts import (
    COMMENT_RE,
    declared_yaml,
    front_matter,
    key_line,
    yaml_pieces,
    yaml_run,
)
from odcf.textutil import (
    CLAUSE_GOES_ON,
    HAN_RE,
    SEPARATOR_RE,
    STOPWORDS,
    iter_lines_with_offsets,
    loads_json,
    split_sentences,
)
from odcf.tokens import get_counter


class Segmenter(Stage):
    """Split sources into segments.

    >>> from odcf.document import Document, Source
    >>> from odcf.plan.model import Plan
    >>> doc = Segmenter()(Document.from_sources([Source(id="a", text="One. Two.")]), Plan(domain="d"))
    >>> [s.text for s in doc.segments]  # a sentence under min_sentence_words goes with its neighbour
    ['One. Two.']
    """

    name = "segment"
    requires = frozenset()
    provides = frozenset({"segments"})

    def __init__(
        self,
        *,
        max_block_lines: int = 40,
        max_block_tokens: int = 400,
        max_table_tokens: int = 60,
        max_code_tokens: int = 60,
        max_list_tokens: int = 40,
        max_hunk_tokens: int = 100,
        json_split_tokens: int = 200,
        max_sentence_chars: int = 1200,
        clause_cut_chars: int = 240,
        min_sentence_words: int = 4,
        budget_cuts: bool = False,
    ) -> None:
        self.max_block_lines = max_block_lines
        self.max_block_tokens = max_block_tokens
        self.max_table_tokens = max_table_tokens
        self.max_code_tokens = max_code_tokens
        self.max_list_tokens = max_list_tokens
        self.max_hunk_tokens = max_hunk_tokens
        self.json_split_tokens = json_split_tokens
        self.max_sentence_chars = max_sentence_chars
        self.clause_cut_chars = clause_cut_chars
        self.budget_cuts = budget_cuts
        self.min_sentence_words = min_sentence_words

    def __call__(self, doc: Document, plan: Plan) -> Document:
        counter = get_counter(doc.tokenizer or plan.tokenizer)
        segments: list[Segment] = []
        kinds: dict[str, int] = {}
        sentence_chars = self._sentence_chars(doc, plan)
        budget = call_budget(doc, plan)
        for source in doc.sources:
            pieces = self._pieces(source, counter, sentence_chars, budget)
            crlf = "\r\n" in source.text  # assembly writes CRLF where it adds a line break (odcf.render)
            prev_end = 0
            for i, p in enumerate(pieces):
                text = source.text[p.start:p.end]
                meta = p.meta or {}
                if meta.get("table_part") and p.kind == "table":
                    # a later part delivered without the parts before it follows what is before them as
                    # the table does (odcf.render._gap): "$ kubectl get pods" then its header, no blank line
                    first = i - meta["table_part"]  # a table's parts are pieces in a row
                    before = pieces[first - 1].end if first else 0
                    meta = {**meta, "table_lead": [first, source.text[before:pieces[first].start]]}
                if (p.kind == "sentence" and text.endswith(CLAUSE_GOES_ON) and i + 1 < len(pieces)
                        and pieces[i + 1].paragraph == p.paragraph):
                    # its sentence goes on in the next piece: delivered without it, it ends " …" (odcf.render);
                    # the last piece of a paragraph ending in ";" ("BEGIN;", "… within 30 days;") does not
                    meta = {**meta, "clause_goes_on": True}
                if meta.get("diff_needs") is not None:
                    # a git diff's index/---/+++ lines go only with the file's first hunk, the piece after
                    # them (odcf.stages.segment.diffparts): the budget's ``under`` links look back only
                    meta = {k: v for k, v in meta.items() if k != "diff_needs"}
                    meta = {**meta, "budget_needs": f"{source.id}#{p.meta['diff_needs']}",
                            "budget_needs_what": "the first hunk of its file"}
                seg = Segment(
                    id=f"{source.id}#{i}",
                    source_id=source.id,
                    index=i,
                    text=text,
                    original=text,
                    layer=source.layer,
                    kind=p.kind,
                    sep=source.text[prev_end:p.start],
                    paragraph=p.paragraph,
                    meta={**meta, "crlf": True} if crlf else meta,
                )
                prev_end = p.end
                segments.append(seg)
                kinds[p.kind] = kinds.get(p.kind, 0) + 1
        event = TraceEvent(stage=self.name, data={"segments": len(segments), "kinds": dict(sorted(kinds.items()))})
        return doc.with_event(event, segments=tuple(segments))

    # -- per source -------------------------------------------------------
    def _sentence_chars(self, doc: Document, plan: Plan) -> int:
        """The longest sentence kept in one piece: ``max_sentence_chars``, or, with ``budget_cuts``,
        under a small budget about half of it (:data:`CHARS_A_TOKEN` characters a token, never under
        :data:`MIN_SENTENCE_CHARS`), so that the best sentence can be delivered in part rather than
        not at all ("The youngest person to be elected president was John F. Kennedy, at 43 years …"
        in a budget of 36 tokens that a 35-token sentence and its source line overrun)."""
        budget = call_budget(doc, plan) if self.budget_cuts else None
        if budget is None:
            return self.max_sentence_chars
        if (doc.tokenizer or "") == "bytes":
            budget //= CHARS_A_TOKEN
        return max(MIN_SENTENCE_CHARS, min(self.max_sentence_chars, budget * CHARS_A_TOKEN // 2))

    def _pieces(self, source: Source, counter: Any, sentence_chars: int | None = None,
                budget: int | None = None) -> list[Piece]:
        text = source.text
        if not text.strip():
            return []
        if source.layer in ("instruction", "state"):
            # Instructions are never compressed and state is compact JSON: one block each.
            start = len(text) - len(text.lstrip())
            return [Piece(start, len(text.rstrip()), "block", 0)]
        if source.kind in ("json", "tool"):
            pieces = self._json_pieces(text, counter, budget=budget)
            if pieces is not None:
                return pieces
        if declared_code(source):
            return self._code_file(text, counter)
        delim = declared_delimiter(source)
        records = csv_records(list(iter_lines_with_offsets(text)), delim) if delim else None
        if records:
            # a .csv/.tsv file that parses as a table: a table, however long its cells (a cell of
            # prose would otherwise read as sentences, and rows would run into each other), cut
            # where the csv module says a record ends, never inside a quoted field
            return self._records_parts(records, "table", 0, counter, head_n=1)
        return self._text_pieces(text, counter, turn=source.kind == "chat",
                                 sentence_chars=sentence_chars or self.max_sentence_chars,
                                 list_marks=source.meta.get("list_marks", True), budget=budget,
                                 yaml_file=declared_yaml(source))

    def _code_file(self, text: str, counter: Any) -> list[Piece]:
        """A source file (:func:`.codefiles.declared_code`) as code throughout: parts of whole lines of
        about ``max_code_tokens``, ending at blank lines where they can (:func:`.codefiles.code_chunks`),
        each told the lines it holds, so that assembly says how many are left out around it
        (``[CODE_LINES: n]``) as for a long fenced block's parts, and every line delivered is the file's."""
        lines = list(iter_lines_with_offsets(text))
        while lines and not lines[-1][2].strip():
            lines.pop()
        while lines and not lines[0][2].strip():
            lines.pop(0)
        chunks = code_chunks(lines, lambda s: counter.count(s) + 1, self.max_code_tokens) or [lines]
        parts = [_line_piece(chunk, "code", 0, indent=True) for chunk in chunks]
        marks = [is_mark(line[2]) for line in lines]
        if not any(marks):
            return _code_parts(parts, lines) if len(parts) > 1 else parts
        # the file compressed before: its marks of lines left out are in no part (codefiles.code_chunks), and
        # count as the lines they stand for, so that the marks written around the parts delivered count them
        # ("[CODE_LINES: 33]" over the part delivered, its part left out: "[CODE_LINES: 44]", not 12)
        at = list(itertools.accumulate((m or 1 for m in marks), initial=0))
        out = []
        for p in _code_parts(parts, lines):
            first, n = p.meta["code_lines"]
            meta = {**p.meta, "code_lines": [at[first], at[first + n] - at[first]], "code_total": at[-1]}
            out.append(Piece(p.start, p.end, p.kind, p.paragraph, meta))
        return out

    def _json_pieces(self, text: str, counter: Any, start: int = 0, end: int | None = None,
                     base: int = 0, budget: int | None = None) -> list[Piece] | None:
        """The JSON value text[start:end] (the whole text by default) as one piece, or as its
        members (:meth:`_json_members`; *base*: the index of the first in its source) when over
        ``json_split_tokens``, or over half the *budget* when it does not fit in the budget whole;
        None when it is not JSON."""
        end = len(text) if end is None else end
        while start < end and text[start].isspace():
            start += 1
        end = rstrip(text, start, end)
        stripped = text[start:end]
        if not stripped or stripped[0] not in "[{":
            return None
        try:
            value = loads_json(stripped)
        except ValueError:
            return None
        size = counter.count(stripped)
        # what fits in the budget whole is cut as without one: compressed again, it stays as it is
        part = budget // 2 if budget is not None and size > budget else None
        limit = self.json_split_tokens if part is None else min(self.json_split_tokens, part)
        if size <= limit or not isinstance(value, (list, dict)) or not value:
            return [Piece(start, end, "json", 0)]
        out = self._json_members(text, start, end, counter, (("", text[start], text[end - 1]),), (), base,
                                 part=part)
        return out or [Piece(start, end, "json", 0)]

    def _fenced_json(self, text: str, lines: list[tuple[int, int, str]], paragraph: int, counter: Any,
                     block: int, base: int, budget: int | None = None) -> list[Piece] | None:
        """A fenced block holding one JSON object or array (``json_fence``: "```json", or an
        unlabelled fence), cut as a JSON source is: one piece, fences and all, when small; else a
        piece per member, each told its fences (``json_fence``: opening line, closing line,
        indentation) and its block (``json_block``), so that assembly writes the members delivered
        as valid JSON inside the fences, with ``"[JSON_ITEMS: n]"`` for what it leaves out
        (odcf.render). *base* is the index its first piece will have, *budget* the call's (None:
        none). None for a block that is not JSON (or not closed): code lines, as before."""
        opening, closing = lines[0][2], lines[-1][2]
        fence = FENCE_RE.match(opening)
        if fence is None or len(lines) < 3 or not closing.strip().startswith(fence.group(1)):
            return None
        start, end = lines[1][0], lines[-2][1]
        if not json_fence(opening, text[start:end]):
            return None
        pieces = self._json_pieces(text, counter, start, end, base, budget)
        if pieces is None or len(pieces) < 2:
            return [_line_piece(lines, "code", paragraph)]  # small: delivered whole or not at all
        meta = {"json_fence": [opening.strip(), closing.strip(), opening[:len(opening) - len(opening.lstrip())]],
                "json_block": block}
        return [Piece(p.start, p.end, p.kind, paragraph, {**(p.meta or {}), **meta}) for p in pieces]

    def _fenced_json_lines(self, text: str, lines: list[tuple[int, int, str]], paragraph: int, counter: Any,
                           block: int, base: int, budget: int | None = None) -> tuple[list[Piece], int] | None:
        """A fenced block of JSON Lines (``json_lines_fence``: "```jsonl", "```ndjson", "```json" or
        unlabelled; two lines or more, each one JSON object or array, or one with odcf's marks of
        records left out, :data:`ROWS_MARK_RE`), cut into its records as JSON
        Lines outside fences are (:meth:`_json_lines`), each told the fences (``jsonl_fence``:
        opening line, closing line, indentation), so that assembly writes the records delivered
        inside them. None for any other block (or one not closed)."""
        opening, closing = lines[0][2], lines[-1][2]
        fence = FENCE_RE.match(opening)
        if fence is None or len(lines) < 4 or not closing.strip().startswith(fence.group(1)) \
                or not json_lines_fence(opening):
            return None
        body = lines[1:-1]
        records = [line for line in body if line[2].strip() and not ROWS_MARK_RE.match(line[2])]
        # one record is JSON Lines with a mark of those left out that odcf wrote (delivered in part and
        # compressed again: "[DATA_ROWS: 7]" stays that, not a code line)
        marked = any(ROWS_MARK_RE.match(line[2]) for line in body)
        if len(records) < (1 if marked else 2) or not all(json_record(line[2]) for line in records):
            return None
        indent = opening[:len(opening) - len(opening.lstrip())]
        return self._json_lines(text, body, paragraph, counter, base=base, block=block, budget=budget,
                                fence=[opening.strip(), closing.strip(), indent])

    def _json_lines(self, text: str, lines: list[tuple[int, int, str]], paragraph: int, counter: Any, *,
                    base: int, block: int, budget: int | None = None,
                    fence: list[str] | None = None) -> tuple[list[Piece], int]:
        """JSON Lines (a log, an event stream; blank lines among them) cut into records: each line a
        piece of kind ``json``, as a row of a table without a header (``table_rows``: [record, 1],
        ``table_total``: the records), so that assembly says how many records are left out before,
        between and after those delivered (``[DATA_ROWS: n]``, odcf.render) and never reads a record
        as a header or joins it to the next. A record too large to deliver whole (over
        ``json_split_tokens``, or over half the *budget* when over the budget) is cut into its
        members as a JSON source is (:meth:`_json_pieces`), in a ``json_block`` of its own, so that
        assembly rebuilds one valid JSON line from the members delivered, with ``"[JSON_KEYS: n]"``
        for those left out; never at its commas as prose. *base*: the index of the first piece in
        its source; *block*: the last ``json_block`` number used before; *fence*: the block's fences
        (:meth:`_fenced_json_lines`). A mark of records left out that odcf wrote (JSON Lines
        compressed before) is a piece of its own, of no record (``table_rows``: [record, 0]).
        Returns the pieces and the last ``json_block`` number used."""
        total = sum(1 for line in lines if line[2].strip() and not ROWS_MARK_RE.match(line[2]))
        out: list[Piece] = []
        r = 0
        for ls, le, line in lines:
            if not line.strip():
                continue
            mark = ROWS_MARK_RE.match(line) is not None
            meta: dict[str, Any] = {"table_header": "", "table_part": r, "table_rows": [r, 0 if mark else 1],
                                    "table_total": total}
            if fence is not None:
                meta["jsonl_fence"] = fence
            if mark:
                out.append(_line_piece([(ls, le, line)], "json", paragraph, meta))
                continue
            r += 1
            parts = self._json_pieces(text, counter, ls, le, base + len(out), budget) or [
                Piece(ls, rstrip(text, ls, le), "json", 0)]
            if len(parts) > 1:
                block += 1
                meta["json_block"] = block
            out.extend(Piece(p.start, p.end, "json", paragraph, {**(p.meta or {}), **meta}) for p in parts)
        return out, block

    def _inline_json(self, text: str, line: tuple[int, int, str], end: int, label: re.Match[str] | None,
                     kind: str, paragraph: int, counter: Any, block: int, base: int,
                     budget: int | None = None) -> list[Piece] | None:
        """A chat turn whose text after its speaker's label is one JSON object or array, up to *end*
        (the paragraph's end): a tool's result ("tool:get_reservation_details: {…}", as tau-bench
        transcripts and odcf's handoff write it), cut as a JSON source is (:meth:`_json_pieces`), each
        member told the label (``json_label``: the label as written, with the space after it), its
        speaker and its block (``json_block``), so that assembly writes the label and the members
        delivered as valid JSON after it, with ``"[JSON_ITEMS: n]"`` for what it leaves out
        (odcf.render); never a run of prices without the flight they are of. *label*: the line's
        speaker label where the segmenter read one, else one of a chat role's name (a turn of its own, as
        the handoff's, is no transcript of two lines). A JSON value small enough to stay whole is one
        piece of *kind* with its label, never cut at its commas. None when the turn is not that."""
        ls, _le, first = line
        read = label  # the speaker the segmenter read (its meta, as a sentence of the line would have)
        if label is None:
            label = SPEAKER_RE.match(first)
            if label is None or not ROLE_NAME_RE.fullmatch(speaker_of(label)):
                return None
        start = ls + label.end(1)
        while start < end and text[start].isspace():
            start += 1
        if start >= end or text[start] not in "[{":
            return None
        pieces = self._json_pieces(text, counter, start, end, base, budget)
        if pieces is None:
            return None
        indent = len(first) - len(first.lstrip())
        if len(pieces) < 2:
            # small: the turn whole or not at all, never cut at its commas as a long sentence is (a run of
            # prices delivered without the flight they are of)
            return [Piece(ls + indent, end, kind, paragraph, speaker_meta(read, 0))]
        meta = {**(speaker_meta(read, label.end(1)) or {}), "json_block": block,
                "json_label": text[ls + indent:start]}
        return [Piece(p.start, p.end, p.kind, paragraph, {**(p.meta or {}), **meta}) for p in pieces]

    def _json_members(self, text: str, start: int, end: int, counter: Any,
                      levels: tuple[tuple[str, str, str], ...], sizes: tuple[int, ...],
                      base: int = 0, under: int | None = None, part: int | None = None) -> list[Piece] | None:
        """The members of the JSON container text[start:end], each a piece; a member over
        ``json_split_tokens`` whose value is itself a container of two or more members (the
        ``"results": [...]`` of a tool's answer) is cut into its own members, down to three levels
        (an object, a record, only when over four times ``max_block_tokens``).
        Each piece's ``json_levels`` holds (key, text that opens, text that closes) of every
        container around it, so that assembly rebuilds valid JSON from any subset of the pieces, and
        ``json_sizes`` how many members each of those containers has, so that it can say how many
        it left out. An object cut into its members keeps those after its id with it (``"order_id":
        "#W7710032"``: its first member named ``id`` or ``…_id``, else ``…_number`` (``"flight_number"``), whose value is no list or object):
        each of them, and all that is cut out of it, is ``under`` the id's piece (marked ``json_id``;
        the budget delivers them only with it, odcf.stages.budget), so that a payment is never read
        as another order's. In a value that does not fit in the budget whole (*part*: half the
        budget), a list over *part*, or an object over half of it and over half ``json_split_tokens``, is cut
        as well, so that an
        object too large for the budget is delivered in part (its id and
        the members and list items the query needs: ``"incident_id": "INC-20937"``, two of its four
        ``"events"`` and its ``"notes"``) rather than not at all, and so that a larger budget delivers no
        less of a list of records than a smaller one (six orders of 150-290 tokens in 600: each order's id
        and the members the query needs, not two orders whole and the rest of the budget unused).
        *base* is the index the first piece will have in its source, *under* the piece that the
        members go with (the id of an object around this container)."""
        members = top_level_members(text, start, end)
        if not members:
            return None
        sizes = sizes + (len(members),)
        out: list[Piece] = []
        ident = next((j for key_re in (ID_KEY_RE, NUMBER_KEY_RE) for j, (ms, me) in enumerate(members)
                      if text[start] == "{" and value_container(text, ms, me) is None
                      and key_re.search(member_key(text, ms, me) or "")), None)
        id_piece: int | None = None  # the index of the id member's piece, once it is made
        keys = [member_key(text, ms, me) for ms, me in members] if text[start] == "{" else []
        made: dict[int, list[int]] = {}  # each member's pieces (their indexes in the source)
        for j, (ms, me) in enumerate(members):
            inner = None
            opens = value_container(text, ms, me)
            goes_with = id_piece if id_piece is not None else under
            # an object is a record (an order, a claim): its fields apart from its id are of little
            # use, so it is cut only when too large to deliver whole; a list is cut into its items; either
            # is cut when over half the budget, which it would crowd out or not fit in
            record = opens is not None and text[opens] == "{"
            limit = 4 * self.max_block_tokens if record else self.json_split_tokens
            if part is not None:
                # in a value the budget cannot hold whole, a record kept whole goes whole or not at all: at a
                # budget of 626, orders of 285-313 tokens (under half of it), two of them delivered, 123 tokens
                # left unused and the refund asked about left out, which a budget of 313 delivered (the orders
                # cut); one over a quarter of the budget is cut, its members under its id (QA s34 M2), unless
                # small enough to read whole (a step's time, runner and message: under half json_split_tokens)
                limit = min(limit, part, max(part // 2, self.json_split_tokens // 2) if record else part)
            if opens is not None and len(levels) < 4 and counter.count(text[ms:me]) > limit:
                level = (f"{levels[-1][0]}/{j}", text[ms:opens + 1], text[me - 1])
                inner = self._json_members(text, opens, me, counter, levels + (level,), sizes,
                                           base + len(out), goes_with, part)
            if inner:
                made[j] = list(range(base + len(out), base + len(out) + len(inner)))
                out.extend(inner)
                continue
            made[j] = [base + len(out)]
            meta: dict[str, Any] = {
                "json_container": levels[0][1] + levels[0][2], "json_member": j, "json_members": len(members),
                "json_levels": [list(lv) for lv in levels], "json_sizes": list(sizes)}
            if goes_with is not None:
                meta["under"] = goes_with
            if j == ident:
                meta["json_id"] = True
                id_piece = base + len(out)
            out.append(Piece(ms, me, "json", 0, meta))
        if {"cell_type", "source", "outputs"} <= set(keys) and len(out) > 1:
            # a notebook's code cell (nbformat): what it printed ("ROC AUC: 0.8734") is the answer to what
            # its source computes ("print(f'ROC AUC: {roc_auc_score(y_test, p):.4f}')"); the ranks score
            # its outputs at least as its source (``cell_source``: the source's pieces)
            for k in made[keys.index("outputs")]:
                out[k - base].meta["cell_source"] = made[keys.index("source")]  # type: ignore[index]
        if text[start] == "[" and len(out) > 1:
            # a tool's result in a list of chat messages ({"role": "function", "name": "carriers_detect", "content":
            # "…'Yun Express'…"}) answers the call before it that names the tool, whose arguments repeat what
            # the query names (the tracking number); scored alone it ranked below that call and the user's
            # message, and was left out while both were delivered (QA s34 M3): the ranks score it at least as
            # its call (``cell_source``: the call's pieces)
            for j, k in _tool_results(text, members).items():
                for i in made[j]:
                    piece = out[i - base]
                    if len(made[j]) > 1 and member_key(text, piece.start, piece.end) in _MESSAGE_LABELS:
                        continue  # cut into its members: what it returned, not its "role" and "name" alone
                    piece.meta["cell_source"] = made[k]  # type: ignore[index]
        return out if len(out) > 1 else None  # one member that is not cut: the container stays whole

    def _text_pieces(self, text: str, counter: Any, *, turn: bool, sentence_chars: int | None = None,
                     list_marks: bool = True, budget: int | None = None, yaml_file: bool = False) -> list[Piece]:
        """*yaml_file*: the source is declared a YAML file (``….yaml``), whose keys are a config's
        whatever their values (:func:`.yamlparts.yaml_run`)."""
        pieces: list[Piece] = []
        paragraph = 0
        lines = list(iter_lines_with_offsets(text))
        i = 0
        n = len(lines)
        code_runs: _CodeRuns | None = None
        # capitalised title lines are headings only where markdown's are not used (levels would mix)
        plain = not turn and not any(HEADING_RE.match(line) for _, _, line in lines)
        single_until = 0  # lines before this index are one paragraph each (a run of long items)
        speaker_until = 0  # lines before this index are lines of a transcript (speaker labels)
        quotes = messages = 0  # quoted blocks and email headers so far
        last_label: re.Match[str] | None = None  # the label of the transcript line a message began on
        yaml_blocks = diffs = json_blocks = 0
        yaml_read = 0  # lines before this index were read as no YAML block's start
        prose: dict[int, tuple[int, int]] = {}  # paragraphs of prose: their lines (for mark_items)
        blocks: set[int] = set()  # paragraphs of tables, lists and code
        while i < n:
            ls, le, line = lines[i]
            if not line.strip():
                i += 1
                continue
            entries = commit_entries(lines, i) if line.startswith("commit ") else []
            if entries:
                # a git log: a piece an entry, a long one cut with each part under its header (odcf.stages.segment.gitlog)
                pieces.extend(self._commit_parts(lines, entries, paragraph, counter))
                blocks.add(paragraph)
                paragraph += 1
                i = entries[-1][2]
                continue
            end = cue_end(lines, i)
            if end > i:
                # a subtitle's cue (its number, time line and text): one piece, so that no line of it
                # goes without its time or the line it goes on from (odcf.stages.segment.subtitles)
                pieces.append(_line_piece(lines[i:end], "sentence", paragraph))
                paragraph += 1
                i = end
                continue
            records_end = json_lines_run(lines, i)
            if records_end > i:
                # JSON Lines (a log, an event stream): a record a piece, never a table's rows (its commas)
                records, json_blocks = self._json_lines(text, lines[i:records_end], paragraph, counter,
                                                        base=len(pieces), block=json_blocks, budget=budget)
                pieces.extend(records)
                blocks.add(paragraph)
                paragraph += 1
                i = records_end
                continue
            files = diff_files(lines, i) if line.startswith(("diff --git ", "--- ")) else []
            if files:
                # a unified diff: a piece per file header and per hunk, each hunk under its file's header
                # (odcf.stages.segment.diffparts); its lines are never headings, never re-indented
                diffs += 1
                pieces.extend(diff_pieces(lines, i, files, paragraph, len(pieces), diffs, _line_piece,
                                          lambda s: counter.count(s) + 1, self.max_hunk_tokens))
                paragraph += 1
                i = diff_end(files)
                continue
            fence_end = front_matter(lines) if i == 0 else 0
            if fence_end:
                # a markdown page's YAML front-matter: a config between its "---" fences, which assembly
                # writes around what it delivers of it (both or neither; odcf.render)
                yaml_blocks += 1
                fence = {"yaml_fence": [line.rstrip(), lines[fence_end][2].rstrip()]}
                pieces.extend(Piece(p.start, p.end, p.kind, p.paragraph, {**(p.meta or {}), **fence})
                              for p in yaml_pieces(lines[1:fence_end], paragraph, len(pieces), yaml_blocks,
                                                   _line_piece))
                paragraph += 1
                i = fence_end + 1
                continue
            yaml_end = i
            if not pieces and COMMENT_RE.match(line):
                # a YAML file opening with comments ("# Helm values for payments-api"): comments,
                # not markdown headings, when all the text is YAML
                yaml_end, _ = yaml_run(lines, i, comments_before=True, declared=yaml_file)
                if any(lines[k][2].strip() for k in range(yaml_end, n)):
                    yaml_end = i
            elif i >= yaml_read and key_line(line, yaml_file):
                yaml_end, yaml_read = yaml_run(lines, i, declared=yaml_file)
            if yaml_end > i:
                # a config: a node a piece, each delivered only under its path (odcf.stages.segment.yamlparts)
                yaml_blocks += 1
                pieces.extend(yaml_pieces(lines[i:yaml_end], paragraph, len(pieces), yaml_blocks, _line_piece,
                                          declared=yaml_file))
                paragraph += 1
                i = yaml_end
                continue
            if FENCE_RE.match(line):
                fence = FENCE_RE.match(line).group(1)  # type: ignore[union-attr]
                j = i + 1
                while j < n and not lines[j][2].strip().startswith(fence):
                    j += 1
                j = min(j, n - 1)
                fenced_diff = _fenced_diff(lines, i, j)
                if fenced_diff:
                    # a unified diff inside fences: cut as one outside them, per file and hunk, each piece
                    # told the fences (assembly writes them around what it delivers, odcf.render)
                    diffs += 1
                    fence_meta = {"diff_fence": [line.strip(), lines[j][2].strip()]}
                    pieces.extend(Piece(p.start, p.end, p.kind, p.paragraph, {**(p.meta or {}), **fence_meta})
                                  for p in diff_pieces(lines, i + 1, fenced_diff, paragraph, len(pieces), diffs,
                                                       _line_piece, lambda s: counter.count(s) + 1,
                                                       self.max_hunk_tokens))
                    blocks.add(paragraph)
                    paragraph += 1
                    i = j + 1
                    continue
                entries = commit_entries(lines, i + 1) if i + 1 < j else []
                if entries and all(not lines[k][2].strip() for k in range(entries[-1][2], j)):
                    # a git log inside fences: cut as one outside them, its fences with its first and last pieces
                    pieces.extend(self._commit_parts(lines, entries, paragraph, counter, fence=(i, j + 1)))
                    blocks.add(paragraph)
                    paragraph += 1
                    i = j + 1
                    continue
                fenced_json = self._fenced_json(text, lines[i:j + 1], paragraph, counter, json_blocks + 1,
                                                 len(pieces), budget)
                records = None if fenced_json is not None else self._fenced_json_lines(
                    text, lines[i:j + 1], paragraph, counter, json_blocks, len(pieces), budget)
                if fenced_json is not None:
                    json_blocks += 1
                    pieces.extend(fenced_json)
                elif records is not None:
                    pieces.extend(records[0])
                    json_blocks = records[1]
                else:
                    pieces.extend(self._block(lines[i:j + 1], "code", paragraph, counter))
                blocks.add(paragraph)
                paragraph += 1
                i = j + 1
                continue
            if HEADING_RE.match(line):
                pieces.append(Piece(ls + (len(line) - len(line.lstrip())), rstrip(text, ls, le), "heading", paragraph))
                paragraph += 1
                i += 1
                continue
            if QUOTE_RE.match(line):
                # a quoted reply: pieces of whole lines, so that every line delivered keeps its "> "
                end = i
                while end < n and QUOTE_RE.match(lines[end][2]):
                    end += 1
                quotes += 1
                if pieces and "quote" not in (pieces[-1].meta or {}) \
                        and ATTRIBUTION_RE.match(text[pieces[-1].start:pieces[-1].end]) \
                        and text.count("\n", pieces[-1].end, ls) <= 2:
                    # "On … wrote:" on the line above the quote (a blank line between at most; said in
                    # ``quote_break``, which render keeps when the quote's first lines are left out)
                    p = pieces[-1]
                    gap = {"quote_break": "\n\n"} if text.count("\n", p.end, ls) == 2 else {}
                    pieces[-1] = Piece(p.start, p.end, p.kind, p.paragraph,
                                        {**(p.meta or {}), "quote": 0, "quote_block": quotes, "quote_head": True, **gap})
                pieces.extend(self._quote_pieces(lines[i:end], "turn" if turn else "sentence", paragraph, quotes))
                paragraph += 1
                i = end
                continue
            mail_end = mail_header_run(lines, i)
            if mail_end > i:
                # an email's header: one piece a field (with its folded lines), the body goes with them (budget)
                messages += 1
                k = i
                while k < mail_end:
                    m = MAIL_FIELD_RE.match(lines[k][2])
                    e = k + 1
                    while m and e < mail_end and not MAIL_FIELD_RE.match(lines[e][2]):
                        e += 1  # a folded header line ("Cc: a@x.com,\n    b@x.com")
                    field = m.group(1).lower() if m else "separator"
                    pieces.append(_line_piece(lines[k:e], "turn" if turn else "sentence", paragraph,
                                              {"mail": messages, "mail_field": field}))
                    k = e
                paragraph += 1
                i = mail_end
                continue
            entries = log_entries(lines, i)
            if entries:
                # an application log: a piece an entry, its stack trace cut in whole lines (odcf.stages.segment.logs)
                pieces.extend(self._log_parts(lines, entries, paragraph, counter))
                blocks.add(paragraph)
                paragraph += 1
                i = entries[-1][1]
                continue
            if code_runs is None:
                code_runs = _CodeRuns(lines)
            code_end = code_runs.paragraph(i)
            if code_end > i:
                # source code or a numbered listing outside fences: whole lines, never cut at a period
                # inside a string literal ('print("Done. Result:", r)')
                pieces.extend(self._block(lines[i:code_end], "code", paragraph, counter))
                blocks.add(paragraph)
                paragraph += 1
                i = code_end
                continue
            aligned_end, head_n = aligned_run(lines, i)
            if aligned_end > i:
                # command output in columns of spaces: a row a line, the header (and psql's ---+--- line) first
                rows = [[line] for line in lines[i:aligned_end]]
                pieces.extend(self._records_parts(rows, "table", paragraph, counter, head_n=head_n, aligned=True))
                blocks.add(paragraph)
                paragraph += 1
                i = aligned_end
                continue
            table_end = table_run(lines, i)
            if table_end > i:
                pieces.extend(self._block(lines[i:table_end], "table", paragraph, counter, table=True))
                blocks.add(paragraph)
                paragraph += 1
                i = table_end
                continue
            heading = plain_heading(lines, i) if plain else None
            if heading is not None:
                # "ARTICLE 10 — INDEMNITY" on a line of its own: a heading of its level, as "## …" is
                end, level = heading
                pieces.append(_line_piece(lines[i:end], "heading", paragraph, {"heading_level": level}))
                paragraph += 1
                i = end
                continue
            progress_end = i
            while progress_end < n and PROGRESS_RE.match(lines[progress_end][2]):
                progress_end += 1
            if progress_end > i:
                # a test run's progress lines ("tests/test_fx.py ....F.. [17%]"): whole lines, never cut
                # at their dots (an orphan "[65%]")
                pieces.extend(self._block(lines[i:progress_end], "list", paragraph, counter, items=True,
                                          at=len(pieces)))
                blocks.add(paragraph)
                paragraph += 1
                i = progress_end
                continue
            marked_end, prefix_end = _list_run(lines, i), _prefix_run(lines, i)
            list_end = max(marked_end, prefix_end)
            if list_end - i >= 3 and _short_lines(lines[i:list_end]) and not (
                    prefix_end > marked_end and _prose_lines(lines[i:list_end])):
                # a list is cut in whole items; log lines that share a prefix in larger runs of lines,
                # which the fold stage writes once ([PREFIX: …])
                # (a marked list whose items open alike, "- Operators must not …", is a list: a shared
                # prefix with digits, "- 2024-05-01 10:00:", is a log's time stamp when a line opens a
                # log entry after its mark; a timeline's "- 2026-03-08 02:14 First session hijack …" is a list, with
                # seconds too when no line has a log level, "- 2026-03-09 16:40:12 srv-fin-02 isolated …")
                items = marked_end > prefix_end or (marked_end == prefix_end and (not any(
                    ch.isdigit() for ch in lines[i][2][:_PREFIX_MIN]) or not any(
                    opens_logged_entry(line[m.end() - 1:]) for _, _, line in lines[i:list_end]
                    if (m := LIST_RE.match(line)))))
                pieces.extend(self._block(lines[i:list_end], "list", paragraph, counter, items=items,
                                          at=len(pieces)))
                blocks.add(paragraph)
                paragraph += 1
                i = list_end
                continue
            # a prose paragraph: up to the next blank line or structural line; in a run of long
            # list items or long lines with a shared prefix, each line is its own paragraph
            j = i + 1
            if list_end - i >= 2:
                single_until = max(single_until, list_end)
            if i >= speaker_until:  # inside a known run, its end is known (no rescan: O(n) per transcript)
                speaker_end = speaker_run(lines, i)
                if speaker_end - i >= SPEAKER_RUN:
                    single_until = max(single_until, speaker_end)
                    speaker_until = speaker_end
            if i < single_until:
                j = i + 1
            else:
                while j < n and lines[j][2].strip() and not _structural(lines, j):
                    j += 1
            # a line all in bold ("**Internal note — Jonas Berg, 14 Jul 2025 10:20**") is a paragraph of
            # its own, as with a blank line under it: a title that heads the lines below (budget), never
            # the start of their first sentence
            j = i + 1 if _bold_title(lines, i) else next(
                (k for k in range(i + 1, j) if _bold_title(lines, k) or PROGRESS_RE.match(lines[k][2])), j)
            ps, pe = lines[i][0], lines[j - 1][1]
            kind = "turn" if turn else "sentence"
            if list_end - i >= 1 and LIST_RE.match(line):
                kind = "list"
            label = SPEAKER_RE.match(line) if i < speaker_until or opens_turn(lines, i) else None
            if label is not None:
                last_label = label
            form = (label is None and i > 0 and FIELD_OPEN_RE.match(line) is not None
                    and not lines[i - 1][2].rstrip().endswith((".", "!", "?", "。", "！", "？")))
            if label is None and (i >= speaker_until or form):
                # a line opening with a field of its own ("Invoice date: …" under "Buyer: Qingdao …",
                # a value that ends no sentence) is a field of a form, not the next line of the message
                # above ("Good news: …" under "Agent: … this morning." is the agent's)
                last_label = None
            # the next line of a message (no label of its own): the message's speaker, not its opening
            said_by = label if label is not None else last_label
            inline = self._inline_json(text, lines[i], pe, label, kind, paragraph, counter, json_blocks + 1,
                                       len(pieces), budget)
            if inline is not None:
                # a tool's JSON after its label ("tool:get_order: {…}"): cut into members as a JSON source
                json_blocks += len(inline) > 1
                pieces.extend(inline)
                blocks.add(paragraph)
                paragraph += 1
                i = j
                continue
            first_paragraph = paragraph
            for ss, se in _attach_short(text[ps:pe], _block_sentences(text, lines[i:j]), self.min_sentence_words,
                                        backward=said_by is None):
                if ss > 0 and SEPARATOR_RE.match(text, ps + ss):
                    # "… within 4 days.  --- Message 3 — Agent …": a thread whose lines were joined into one;
                    # the separator opens the next message, a paragraph of its own (its refund is delivered
                    # under its own header, never after the message above's), and not the line's speaker's
                    paragraph += 1
                    said_by = label = None
                cuts = [c for a, b in _cut_long(text, ps + ss, ps + se, sentence_chars or self.max_sentence_chars)
                        for c in _clauses(text, a, b, self.clause_cut_chars)]
                for part, (cs, ce) in enumerate(cuts):
                    meta = speaker_meta(said_by, cs - ps if label is not None else len(line))
                    if len(cuts) > 1:
                        # a part of one over-long sentence: the budget delivers a later part only with
                        # the first (it holds the main clause: "X shall not be liable … unless …")
                        meta = {**(meta or {}), "cut_part": part, "cut_parts": len(cuts)}
                    if j == i + 1 and lone_numbered_title(lines, i):
                        meta = {**(meta or {}), "lone_number": True}  # "4.5 Bathrooms": a listing's value
                    pieces.append(Piece(cs, ce, kind, paragraph, meta))
            prose[first_paragraph] = (i, j)
            paragraph += 1
            i = j
        # where each piece of a paragraph sits on its lines, and the numbered items it is in: render
        # keeps a line's break and says what is left out between two delivered pieces
        pieces = mark_items(text, lines, pieces, prose, blocks, list_marks=list_marks)
        turns = chat_turns(lines, [p.start for p in pieces if p.kind == "heading"], chat=turn)
        starts = [t[0] for t in turns]
        return [in_turn(p, turns, starts) for p in pieces] if turns else pieces

    def _block(
        self,
        lines: list[tuple[int, int, str]],
        kind: str,
        paragraph: int,
        counter: Any,
        *,
        table: bool = False,
        items: bool = False,
        at: int = 0,
        limit: int | None = None,
    ) -> list[Piece]:
        """One piece for a run of lines, or several when it is long (tables: see :meth:`_table_parts`,
        lists with *items*: :meth:`_list_parts`, the first piece to be piece number *at* of its source;
        *limit*: the tokens of a part, when not the block's kind's)."""
        if table:
            return self._table_parts(lines, kind, paragraph, counter)
        if items:
            return self._list_parts(lines, paragraph, counter, at)
        out: list[Piece] = []
        chunk: list[tuple[int, int, str]] = []
        tokens = 0
        fenced = kind == "code" and FENCE_RE.match(lines[0][2]) is not None
        # a fenced block is cut as a table is, in parts of about max_code_tokens, delivered inside its
        # fences with the lines left out counted (a traceback's last two lines, the answer, are not
        # all or nothing with 30 frames above them); loose code lines have no such marks, so their
        # parts stay larger
        # (not a fenced config or diff: a part of one without its key lines or file header would
        # mislead, "    value: \"false\"" read as ingress.enabled; those go whole or in large parts)
        whole = fenced and _FENCE_LANG_RE.match(lines[0][2].strip().lstrip("`~")) is not None
        if kind == "code" and limit is None and not whole:
            traced = self._traceback_parts(lines, paragraph, counter)
            if traced is not None:
                return traced
        if limit is None:
            limit = self.max_code_tokens if fenced and not whole else self.max_block_tokens
        if fenced and not whole and limit == self.max_code_tokens and not any(
                _CAUSE_LINE_RE.match(line[2]) or is_mark(line[2]) for line in lines):
            # code in fences is cut as a source file is: parts ending at blank lines where they can, a
            # comment line or a block's header with the line below it (QA s32 R3: a part ended in "def
            # should_retry(status: int, attempt: int) -> bool:" after the tail of the function above, two
            # blank lines before it, and its body was delivered without it); a Java trace's "Caused by:"
            # parts, and a block holding odcf's marks of lines left out, are cut as before
            chunks = code_chunks(lines, lambda s: counter.count(s) + 1, limit)
            parts = [_line_piece(chunk, kind, paragraph, indent=True) for chunk in chunks]
            return _code_parts(parts, lines) if len(parts) > 1 else parts
        # a part of code starts at its line's start: its first line keeps its indentation ("  File …")
        indent = kind == "code"
        for line in lines:
            t = counter.count(line[2]) + 1
            if chunk and (len(chunk) >= self.max_block_lines or tokens + t > limit
                          or (kind == "code" and _CAUSE_LINE_RE.match(line[2]))):
                out.append(_line_piece(chunk, kind, paragraph, indent=indent))
                chunk, tokens = [], 0
            chunk.append(line)
            tokens += t
        if chunk:
            out.append(_line_piece(chunk, kind, paragraph, indent=indent))
        if kind == "code" and len(out) > 1:
            out = _code_parts(out, lines)  # loose code too: a part alone says what is left out
        return out

    def _traceback_parts(self, lines: list[tuple[int, int, str]], paragraph: int, counter: Any) -> list[Piece] | None:
        """A code block that holds a Python traceback (:func:`.tracebacks.traceback_units`), fenced or not,
        mirroring a Java trace in a log (:meth:`_log_parts`): a traceback of up to ``max_code_tokens`` is
        one part; a longer one is its ``Traceback (most recent call last):`` line (with the chain's
        "During handling of the above exception, …" line before it) and its frames, in whole frames of
        about ``max_code_tokens`` a part, then its exception line(s) in a part of their own. That part
        goes alone (it says what went wrong: ``app.errors.JobFailed: job 7f3c… failed``); the first part
        of the frames goes only with it (``trace_head`` on the exception's part, odcf.stages.budget), a
        later part of them only with the part before it (``trace_of``), so that frames are never
        delivered without the exception they lead to. Lines before a traceback (a shell prompt) are a
        part of their own. None when no line opens a traceback."""
        units = traceback_units(lines)
        cost = [counter.count(line[2]) + 1 for line in lines]
        if units is None or sum(cost) <= self.max_code_tokens:
            return None  # no traceback, or one part: as any code
        fence = FENCE_RE.match(lines[0][2]) is not None
        if fence and units[0] == (0, 1, "other") and len(units) > 1:
            units = [(0, units[1][1], units[1][2])] + units[2:]  # the opening fence goes with what it opens
        if fence and len(units) > 1 and units[-1][2] == "other" and units[-1][0] == len(lines) - 1:
            units = units[:-2] + [(units[-2][0], len(lines), units[-2][2])]  # and the closing fence with what it closes
        chunks: list[tuple[int, int, str]] = []  # (first line, end, role): role "frames", "exception" or "other"
        firsts: list[int] = []  # for each chunk, the index of its traceback's first chunk (-1: of none)
        k = 0
        while k < len(units):
            a, b, role = units[k]
            if role != "head":
                chunks.append((a, b, "other"))
                firsts.append(-1)
                k += 1
                continue
            end = k + 1
            while end < len(units) and units[end][2] in ("frame", "exception"):
                end += 1
                if units[end - 1][2] == "exception":
                    break
            trace = units[k:end]
            first = len(chunks)
            if sum(cost[trace[0][0]:trace[-1][1]]) <= self.max_code_tokens:
                chunks.append((trace[0][0], trace[-1][1], "frames"))  # small: one part
                firsts.append(-1)
                k = end
                continue
            tokens = 0
            for ua, ub, urole in trace:
                t = sum(cost[ua:ub])
                if urole != "exception" and urole != "head" and tokens + t <= self.max_code_tokens:
                    chunks[-1] = (chunks[-1][0], ub, "frames")  # a frame goes on in the part being filled
                    tokens += t
                    continue
                chunks.append((ua, ub, "exception" if urole == "exception" else "frames"))
                firsts.append(first)
                tokens = t
            k = end
        # a part ends at its last line that is not blank (the blank lines after an exception are the block's)
        ends = [next(e for e in range(b, a, -1) if lines[e - 1][2].strip() or e == a + 1) for a, b, _ in chunks]
        parts = _code_parts([_line_piece(lines[a:e], "code", paragraph, indent=True)
                             for (a, _, _), e in zip(chunks, ends)], lines)
        out = []
        for n, (p, (_, _, role), first) in enumerate(zip(parts, chunks, firsts)):
            meta = dict(p.meta or {})
            if role == "exception" and first < n:
                meta["trace_head"] = n - first  # the first part of its frames goes only with it
            elif role == "frames" and first >= 0 and n > first:
                meta.update(trace_of=1, py_trace=True)  # a later part of the frames: only with the part before
            out.append(Piece(p.start, p.end, p.kind, p.paragraph, meta))
        return out

    def _log_parts(self, lines: list[tuple[int, int, str]], entries: list[tuple[int, int]], paragraph: int,
                   counter: Any) -> list[Piece]:
        """An application log's *entries* (first line, end: :func:`.logs.log_entries`), a piece each: a
        line alone is a ``list`` piece; one with the lines under it (its stack trace) is one ``code``
        piece up to ``max_code_tokens``, else its line, then the trace cut as code is, in whole lines of
        about ``max_code_tokens``, a part opening at each ``Caused by:``. Every piece says which lines
        of the log it holds (as the parts of a code block do), so that assembly counts the lines left
        out around it (``[CODE_LINES: n]``, odcf.render): the ERROR line that answers a query is
        delivered alone, not in a 350-token run of INFO lines, and a trace is never cut at the ";" of
        its message nor at "... 14 more".
        """
        out: list[Piece] = []
        back: list[int] = []  # for each part of a trace, how many pieces before it its entry's line is
        for a, b in entries:
            entry = lines[a:b]
            if b - a == 1:
                out.append(_line_piece(entry, "list", paragraph, indent=True))
            elif sum(counter.count(line[2]) + 1 for line in entry) <= self.max_code_tokens:
                out.append(_line_piece(entry, "code", paragraph, indent=True))
            else:
                out.append(_line_piece(entry[:1], "list", paragraph, indent=True))
                back.append(0)
                trace = self._block(entry[1:], "code", paragraph, counter, limit=self.max_code_tokens)
                out.extend(trace)
                # its first part and each cause ("Caused by: …") go with the line, any other with the part before
                opens = {line[0]: line[2] for line in entry}
                back.extend(j if j == 1 or _CAUSE_LINE_RE.match(opens.get(p.start, "")) else 1
                            for j, p in enumerate(trace, 1))
                continue
            back.append(0)
        # a part of a trace goes only with its entry's line, or the part before it (odcf.stages.budget):
        # "\tat java.base/…Thread.run" alone says nothing
        return [Piece(p.start, p.end, p.kind, p.paragraph, {**(p.meta or {}), "trace_of": k}) if k else p
                for p, k in zip(_code_parts(out, lines[entries[0][0]:entries[-1][1]]), back)]

    def _commit_parts(self, lines: list[tuple[int, int, str]], entries: list[tuple[int, int, int]], paragraph: int,
                      counter: Any, fence: tuple[int, int] | None = None) -> list[Piece]:
        """A git log's *entries* (first line, end of its header and subject, end: :func:`.gitlog.commit_entries`):
        an entry of up to :data:`.gitlog.WHOLE_ENTRY_TOKENS` is one ``code`` piece; a longer one is its header
        lines with its message's first line, then whole lines of each paragraph of the rest (at most that
        many tokens a part), each part delivered only with its entry's first piece (``trace_of``,
        odcf.stages.budget), so that a message never goes under another commit's header, nor a header
        without its subject. Every piece says which lines of the log it holds (``[CODE_LINES: n]`` for
        the lines left out, odcf.render). *fence*: the lines of the fences around the log, which its
        first and last pieces hold.
        """
        spans: list[tuple[int, int]] = []
        back: list[int] = []  # for each piece, how many pieces before it its entry's first piece is
        for a, h, e in entries:
            if sum(counter.count(line[2]) + 1 for line in lines[a:e]) <= WHOLE_ENTRY_TOKENS or h >= e:
                spans.append((a, e))
                back.append(0)
                continue
            spans.append((a, h))
            back.append(0)
            first = len(spans) - 1
            k = h
            while k < e:
                while k < e and not lines[k][2].strip():
                    k += 1  # a paragraph of the message (or --stat's lines): whole lines, up to a blank line
                start, tokens = k, 0
                while k < e and lines[k][2].strip():
                    t = counter.count(lines[k][2]) + 1
                    if k > start and tokens + t > WHOLE_ENTRY_TOKENS:
                        break
                    tokens += t
                    k += 1
                spans.append((start, k))
                back.append(len(spans) - 1 - first)
        if fence is not None:
            spans[0] = (fence[0], spans[0][1])
            spans[-1] = (spans[-1][0], fence[1])
        out = [_line_piece(lines[a:b], "code", paragraph, indent=True) for a, b in spans]
        return [Piece(p.start, p.end, p.kind, p.paragraph, {**(p.meta or {}), "trace_of": k, "commit_part": True})
                if k else p for p, k in zip(_code_parts(out, lines[spans[0][0]:spans[-1][1]]), back)]

    def _list_parts(self, lines: list[tuple[int, int, str]], paragraph: int, counter: Any,
                    at: int = 0) -> list[Piece]:
        """A list (or a run of log lines) cut into parts of whole items, each about
        ``max_list_tokens``: an item is a line no deeper than the first one, with the deeper lines
        under it. Parts of a list of several carry their items (first index, count) and the list's
        item count, so that assembly marks the items left out (``[…n items]``, odcf.render):
        one step of a runbook ("13. DO NOT flush …") can be delivered without the 15 around it, and a
        reader still sees that the list goes on. An item over twice that size with a sub-list is its
        first line, then parts of whole sub-items under it (:meth:`_sub_parts`). *at*: the number of
        the first piece in its source."""
        def depth(line: str) -> int:
            return len(line) - len(line.lstrip())

        base = depth(lines[0][2])
        items: list[list[tuple[int, int, str]]] = []
        for line in lines:
            if not items or depth(line[2]) <= base:
                items.append([line])
            else:
                items[-1].append(line)
        # the items of a Chinese statute's enumeration ("（二）2025年6月30日前完成……；") are clauses of the
        # article, each a provision of its own: parts of about ZH_LIST_TOKENS, so that one fits a small
        # budget with its lead-in (one item a part lost whole lists of short items to the markers)
        most = ZH_LIST_TOKENS if ZH_ITEM_RE.match(lines[0][2]) else self.max_list_tokens
        def cost(line: tuple[int, int, str]) -> int:
            return counter.count(line[2]) + 1

        # an item much longer than a part that holds a sub-list ("- Cardiac" and its 4 drugs, 140 tokens): cut
        # at its sub-items, so that the drug a query asks for is delivered without the others
        long = [k for k, item in enumerate(items) if len(item) > 2 and LIST_RE.match(item[1][2])
                and depth(item[1][2]) > base and sum(cost(line) for line in item) > 2 * most]
        # a last item that ends in ":" ("3. Confirm replica lag … on the standby:") introduces the block after
        # the list: a part of its own, so that it goes with that block (odcf.stages.budget: a part of several
        # items is not held back for its last one, and the block went out without it)
        lead = len(items) > 1 and len(items) - 1 not in long and items[-1][-1][2].rstrip().rstrip("*_").endswith(":")
        out: list[Piece] = []
        done = 0
        for k in long + [len(items)]:
            chunks = _pack(items[done:k - 1 if lead and k == len(items) else k], cost, most,
                           max_lines=self.max_block_lines)
            if lead and k == len(items):
                chunks.append((items[-1], k - 1 - done, 1))
            if len(chunks) == 1 and not long:
                return [_line_piece(chunks[0][0], "list", paragraph)]
            out.extend(_line_piece(c, "list", paragraph, {"list_items": [done + f, m], "list_total": len(items)})
                       for c, f, m in chunks)
            if k < len(items):
                out.extend(self._sub_parts(items[k], k, len(items), paragraph, cost, most, at + len(out)))
            done = k + 1
        return out

    def _sub_parts(self, item: list[tuple[int, int, str]], k: int, total: int, paragraph: int,
                   cost: Callable[[tuple[int, int, str]], int], most: int, at: int) -> list[Piece]:
        """Item *k* of a list of *total* items cut at its sub-items: its first line (piece number *at*), then
        parts of whole sub-items of about *most* tokens, each under that line (the budget delivers one
        only with it), from the start of its line (its indentation is what says it is a sub-item). A part
        carries its sub-items (first index, count) and their count, so that assembly marks those left
        out; its ``list_items`` ([k + 1, 0]: no item of the list) counts the items around it."""
        sub_base = len(item[1][2]) - len(item[1][2].lstrip())
        subs: list[list[tuple[int, int, str]]] = []
        for line in item[1:]:
            # a line at a sub-item's depth that is no item ("Note: hold all cardiac medicines …") goes on the
            # sub-item above it: the marks count items (it had been counted as one)
            if not subs or (len(line[2]) - len(line[2].lstrip()) <= sub_base and LIST_RE.match(line[2])):
                subs.append([line])
            else:
                subs[-1].append(line)
        out = [_line_piece(item[:1], "list", paragraph, {"list_items": [k, 1], "list_total": total})]
        for c, f, m in _pack(subs, cost, most, max_lines=self.max_block_lines):
            out.append(_line_piece(c, "list", paragraph, {"list_items": [k + 1, 0], "list_total": total,
                                                          "under": at, "sub_items": [f, m], "sub_total": len(subs)},
                                   indent=True))
        return out

    def _quote_pieces(self, lines: list[tuple[int, int, str]], kind: str, paragraph: int,
                      block: int) -> list[Piece]:
        """Pieces of a run of quoted lines, each of whole lines (with their markers): an attribution
        line ("On … wrote:") alone, else lines up to one that ends a sentence, a change of quote depth,
        a blank quoted line or 400 characters (``max_sentence_chars`` when lower). Each piece's meta holds its depth and block
        (``quote``, ``quote_block``), and ``quote_head`` for an attribution (the budget delivers the
        quote only with it)."""
        out: list[Piece] = []
        chunk: list[tuple[int, int, str]] = []
        depth = 0

        def flush() -> None:
            if chunk:
                out.append(_line_piece(chunk, kind, paragraph, {"quote": depth, "quote_block": block}))
                chunk.clear()

        for line in lines:
            m = QUOTE_RE.match(line[2])
            assert m is not None
            body = line[2][m.end():].strip()
            level = m.group(0).count(">")
            chars = sum(len(x[2]) for x in chunk)
            limit = min(self.max_sentence_chars, QUOTE_PIECE_CHARS)
            if chunk and (not body or level != depth or chars + len(line[2]) > limit):
                flush()
            if not body:
                continue  # a blank quoted line (">") stays between the pieces
            if ATTRIBUTION_RE.match(body):
                flush()
                out.append(_line_piece([line], kind, paragraph,
                                       {"quote": level, "quote_block": block, "quote_head": True}))
                continue
            chunk.append(line)
            depth = level
            if QUOTE_END_RE.search(body):
                flush()
        flush()
        return out

    def _table_parts(self, lines: list[tuple[int, int, str]], kind: str, paragraph: int, counter: Any) -> list[Piece]:
        """A table cut into parts of whole rows, each about ``max_table_tokens`` (the first holds the
        header): small enough that the budget can keep the rows a query needs and drop the rest. A
        quoted CSV field may run over lines; a part never ends inside one. Each part's meta holds the
        header (with its ``|---|`` line), its number, its rows (first index, count) and the table's
        row count, so that assembly repeats the header and marks omitted rows (odcf.render)."""
        # CSV / TSV whose lines are not all records of one width: a quoted field may hold newlines
        quoted = not lines[0][2].lstrip().startswith("|") and not one_record_a_line(lines)
        records: list[list[tuple[int, int, str]]] = []
        open_field = False
        for line in lines:
            if open_field:
                records[-1].append(line)
            else:
                records.append([line])
            if quoted and line[2].count('"') % 2:
                open_field = not open_field
        head_n = 2 if not quoted and len(records) > 1 and TABLE_SEP_RE.match(records[1][0][2]) else 1
        return self._records_parts(records, kind, paragraph, counter, head_n=head_n)

    def _records_parts(self, records: list[list[tuple[int, int, str]]], kind: str, paragraph: int, counter: Any,
                       *, head_n: int, aligned: bool = False) -> list[Piece]:
        """The parts of a table given as its records (the lines of each), the first *head_n* its header.
        *aligned*: columns laid out with spaces, so a part keeps its first line's indentation (psql's
        right-aligned "      41 | …") and says so (``table_aligned``: no quote joins its rows)."""
        head_lines = [line for rec in records[:head_n] for line in rec]
        header = "\n".join(line[2].rstrip("\r") for line in head_lines)  # assembly writes the source's line breaks
        rows = records[head_n:]
        # counted without a CRLF's \r, so that a table cuts the same whatever its line endings
        chunks = _pack(rows, lambda line: counter.count(line[2].rstrip("\r")) + 1, self.max_table_tokens,
                       head=head_lines)
        extra = {"table_aligned": True} if aligned else {}
        return [_line_piece(c, kind, paragraph, {"table_header": header, "table_part": i,
                                                 "table_rows": [f, m], "table_total": len(rows), **extra},
                            row=True)
                for i, (c, f, m) in enumerate(chunks)]


#: The size of a part of a Chinese enumeration, in tokens (see :meth:`Segmenter._list_parts`).
ZH_LIST_TOKENS = 40


def _pack(groups: Sequence[list[tuple[int, int, str]]], cost: Callable[[tuple[int, int, str]], int], limit: int, *,
          head: Sequence[tuple[int, int, str]] = (), max_lines: int | None = None,
          ) -> list[tuple[list[tuple[int, int, str]], int, int]]:
    """*groups* (a table's rows, a list's items: the lines of each) packed in order into chunks of
    whole groups of about *limit* tokens (each line costing ``cost(line)``; and at most *max_lines*
    lines), the first chunk after the *head* lines: ``(lines, first group, groups)`` of each. A
    group larger than *limit* is a chunk of its own."""
    chunks: list[tuple[list[tuple[int, int, str]], int, int]] = []
    chunk, first, n = list(head), 0, 0
    tokens = sum(cost(line) for line in chunk)
    for k, group in enumerate(groups):
        t = sum(cost(line) for line in group)
        if n and (tokens + t > limit or (max_lines is not None and len(chunk) + len(group) > max_lines)):
            chunks.append((chunk, first, n))
            chunk, first, n, tokens = [], k, 0, 0
        chunk.extend(group)
        n += 1
        tokens += t
    if chunk:
        chunks.append((chunk, first, n))
    return chunks


def _block_sentences(text: str, block: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """Sentence spans of a prose block, relative to its first line. Three or more lines that each
    open with a capital letter or a digit and end without a mark that continues (a comma, a dash,
    a lower-case word) are items written one a line ("The insurer shall acknowledge the claim
    within 5 days, unless the claim is incomplete (Clause 7.3)"): each line ends a sentence. In
    hard-wrapped prose some line opens or ends lower-case, so it is read across lines as before."""
    ps, pe = block[0][0], block[-1][1]
    if len(block) < 3:
        return split_sentences(text[ps:pe], semicolons=False)
    if not all(_ITEM_LINE_RE.match(line) for _, _, line in block) \
            or any(line.rstrip()[-1:].islower() for _, _, line in block[:-1]):
        # a line ending in a lower-case word ("… a penalty of EUR 10,000 to") runs on, unless the
        # line broke where a wrapped one would not have (see _set_breaks)
        breaks = _set_breaks(block)
        if not breaks:
            return split_sentences(text[ps:pe], semicolons=False)
        out = []
        for (a, _, _), (_, b, _) in zip([block[0]] + [block[k + 1] for k in breaks], [block[k] for k in breaks] + [block[-1]]):
            out.extend((a - ps + s, a - ps + e) for s, e in split_sentences(text[a:b], semicolons=False))
        return out
    out: list[tuple[int, int]] = []
    for ls, le, _ in block:
        out.extend((ls - ps + a, ls - ps + b) for a, b in split_sentences(text[ls:le], semicolons=False))
    return out


#: A line broke where a wrapped one would not when the next line's first word would have fitted on it
#: within this share of the block's wrap width (the margin covers text set in a proportional font).
SET_BREAK_FIT = 0.75
#: A line of at most this many words that ends no sentence is a title or a label of the line below.
SET_BREAK_TITLE_WORDS = 4
#: A line opening a clause that needs another ("Unless the key belongs to an Enterprise plan"), and a
#: line that goes on with the one before it ("In which case the limit is …", "And I had put away" /
#: "My labor …", "For His Civility."): no break after the first, none before the second.
_SUBORDINATE_RE = re.compile(r"(?i:unless|if|when|whenever|while|although|though|because|since|whereas|provided|"
                             r"except|once|until|as\s+long\s+as|so\s+that|in\s+case)\b")
_GOES_ON_RE = re.compile(r"(?i:and|or|but|nor|so|yet|for|which|who|whom|whose|whereby|that|than|to|then|"
                         r"(?:in|of|by|for|from|to|with|under)\s+which)\b")


def _set_breaks(block: list[tuple[int, int, str]]) -> list[int]:
    """The lines of a prose block after which the writer broke the line, in a block of lines that are
    not hard-wrapped prose: one post, title or message a line ("Guy sounds like a Grade A Douche" /
    "Biased , but I think …"). A break is set when the line ends no word that goes on (a comma, a
    dash, a function word such as "with" or "the"), is not a title or label of a few words that
    ends no sentence ("3.2 Running the migration", "Bill to:") nor a clause that needs another
    ("Unless …"), the next line opens with no lower-case letter, digit or word that goes on ("In
    which case …", "And …"), and that line's first word would have fitted on the line within
    :data:`SET_BREAK_FIT` of the wrap width: a text wrapped to a width breaks only where the next word
    does not fit. The wrap width is the upper quartile of the lines' lengths (the last line aside), so
    that one long line, a URL, does not make every wrapped line look short."""
    lengths = sorted(len(line.rstrip()) for _, _, line in block[:-1])
    width = lengths[(3 * (len(lengths) - 1)) // 4]
    out: list[int] = []
    for k in range(len(block) - 1):
        line, nxt = block[k][2].rstrip(), block[k + 1][2].strip()
        words = line.split()
        if (not words or not nxt or nxt[0].islower() or nxt[0].isdigit() or line[-1] in ",;-–—&/("
                or _GOES_ON_RE.match(nxt) or _SUBORDINATE_RE.match(line.lstrip())):
            continue
        last = re.sub(r"\W+", "", words[-1].lower())
        if last in STOPWORDS or (len(words) <= SET_BREAK_TITLE_WORDS and line[-1] not in ".!?"):
            continue  # "… with" goes on; "3.2 Running the migration", "Bill to:" title what follows
        if len(line) + 1 + len(nxt.split()[0]) <= SET_BREAK_FIT * width:
            out.append(k)
    return out


#: A line that could be a whole item: opens with a capital or a digit, does not end with a mark
#: that continues (the lower-case word case is checked beside it).
_ITEM_LINE_RE = re.compile(r"^\s*[\"'(\[]?[A-Z0-9\u00c0-\u00de].*(?<![,;\-–—&/])\s*$")


def _word_count(sentence: str) -> int:
    """Words of a sentence; CJK text has no spaces, so two CJK characters count as a word."""
    return len(sentence.split()) + len(HAN_RE.findall(sentence)) // 2


#: A very short sentence that only negates or forbids ("Do not rechallenge.", "Never.", "Not
#: permitted."): what it forbids is in the sentence before it.
_BARE_NEGATION_RE = re.compile(r"(?i:do not|don't|never|not|no)\b")
#: A prohibition whose only object is a thing the sentence before it speaks of, "Do not reuse the old
#: unit." after "Sensor T-103 was replaced …", "Never restart it.": as bare, whatever its length.
_BARE_PROHIBITION_RE = re.compile(r"(?i:do not|don't|never)[ \t]+[a-z]+[ \t]+"
                                  r"(?:it|them|(?:the|this|that|these|those)(?:[ \t]+[a-z]+){1,2})[.!]")
#: A negation opening with "No" and a noun ("No deduction shall be made for fair wear and tear." after "The
#: Landlord may deduct …", "No detention is charged if …" after "Detention is charged at EUR 55.00 …", "No fee
#: applies …" after "The annual membership fee is EUR 120."): after a sentence of its paragraph that names the same
#: word (:func:`_word_stem`: "deduction" and "deduct", not "person" and "Personal"), it limits that sentence, and
#: delivered apart the rule read as unlimited, or the exception as the whole rule. Not "No later than …".
_NO_NOUN_RE = re.compile(r"(?i:no)[ \t]+([a-z][a-z-]{2,})\b")
_NO_NOT_NOUNS = frozenset(("other", "further", "longer", "later", "sooner", "more", "less", "matter", "doubt",
                           "one", "two", "few", "new", "old", "way", "can", "and", "the", "for", "not"))
#: Endings that make another word of one family ("deduction", "deducted", "deducts" of "deduct"; "fees" of
#: "fee"), longest first; not "-al" or "-er" ("personal" is no "person", "server" no "service").
_FAMILY_ENDINGS = ("ations", "ation", "ions", "ion", "ments", "ment", "ings", "ing", "es", "ed", "s", "e")
_WORD_RE = re.compile(r"[a-z][a-z-]*")
#: A sentence that limits the one before it, naming it: "That permission does not extend to Personal Data",
#: "This does not apply to …", "Such right shall not …", "The foregoing applies only to …", "Provided that …",
#: "Notwithstanding the foregoing, …" (not "Unless …" or "Except where …": those govern their own sentence's
#: clause). Delivered apart from it, "12.3 The Supplier may subcontract … without consent." read as a
#: permission without limit: it is part of that sentence's segment (odcf.stages.segment._attach_short).
_RESTRICTS_RE = re.compile(
    r"(?:(?:That|This|These|Those|Such|Said|The\s+(?:foregoing|above|preceding|same))\b[^.;:!?\n]{0,60}?"
    r"\b(?:(?:does|do|did|shall|will|may|must|is|are|can|could|would|should)\s+not|(?:applies|apply|is|are)\s+only)\b"
    r"|Provided(?:,\s*however,)?\s+that\b"
    r"|Notwithstanding\s+the\s+(?:foregoing|above)"
    # 本条/本款/前款/上述规定… 不适用于 / 仅适用于 …: "本条不适用于乙方故意或重大过失造成的损失。" after the cap it limits
    r"|(?:本|前|上|该|此)(?:条|款|项|述|规定)[^。；！？\n]{0,30}?(?:不适用|仅适用|只适用|不包括|不影响))")
#: The longest a sentence may grow by taking the one that limits it (longer ones stay apart).
_RESTRICTED_MAX_CHARS = 600


def _bold_title(lines: list[tuple[int, int, str]], k: int) -> bool:
    """Line *k* is all in bold and stands as a title: the line above it (if any) ends a sentence or
    is blank, and the line below does not go on in lower case ("Please note that" / "**opened
    software, gift cards**" / "cannot be refunded." is one sentence with a bold part)."""
    if not BOLD_LINE_RE.match(lines[k][2]):
        return False
    above = lines[k - 1][2].rstrip() if k > 0 else ""
    if above and not above.endswith((".", "!", "?", ":", "*", "_", "-", "。", "！", "？", "：")):
        return False
    below = lines[k + 1][2].lstrip() if k + 1 < len(lines) else ""
    return not below[:1].islower()


def _opens_line(text: str, pos: int) -> bool:
    """Whether only spaces or tabs stand between *pos* and the start of its line (or of *text*)."""
    while pos > 0 and text[pos - 1] in " \t":
        pos -= 1
    return pos == 0 or text[pos - 1] == "\n"


def _word_stem(word: str) -> str:
    """*word* (lower case) without one ending of :data:`_FAMILY_ENDINGS`, when a stem of 3 letters or more is left."""
    for ending in _FAMILY_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[:-len(ending)]
    return word


def _negates_noun_before(sentence: str, before: str) -> bool:
    """Whether *sentence* opens "No <noun>" (:data:`_NO_NOUN_RE`) and *before* names a word of that noun's family
    (:func:`_word_stem`: "No deduction …" after "… may deduct …"; not "No person …" after "Personal data …")."""
    m = _NO_NOUN_RE.match(sentence)
    noun = m.group(1).lower() if m else ""
    if not noun or noun in _NO_NOT_NOUNS:
        return False
    stem = _word_stem(noun)
    return any(_word_stem(w) == stem for w in _WORD_RE.findall(before.lower()))


def _attach_short(text: str, spans: list[tuple[int, int]], min_words: int, *,
                  backward: bool = True) -> list[tuple[int, int]]:
    """Join a very short sentence ("Section 4.1 Fees.") to the one after it, so that a clause
    number or a lead-in is never kept without the sentence it introduces (or dropped from it); a
    very short last sentence ("… permanently discontinue. Do not rechallenge.") to the one before
    it, when it only negates or forbids (:data:`_BARE_NEGATION_RE`, :data:`_BARE_PROHIBITION_RE`) or negates what that
    one names (:func:`_negates_noun_before`), and any sentence that limits the one
    before it on its line (:data:`_RESTRICTS_RE`) to it (with *backward*, not in a transcript's line, where a
    sentence is delivered after its speaker's label). A short sentence said again right after itself introduces
    nothing: each copy stays a segment of its own (QA: "Order #W1234567 shipped." 50 times on one line, a tool's
    polling output, was joined into two segments of about 300 tokens, and at a budget of 100 not one copy was
    delivered; as sentences they fill the budget, their repeats kept as dedup keeps a short sentence's)."""
    if min_words <= 0 or len(spans) < 2:
        return spans
    out: list[tuple[int, int]] = []
    pending: int | None = None
    for k, (a, b) in enumerate(spans):
        start = a if pending is None else pending
        short = (_word_count(text[a:b]) < min_words and k + 1 < len(spans) and "\n\n" not in text[b:spans[k + 1][0]]
                 and not SEPARATOR_RE.match(text, spans[k + 1][0])  # "Thanks. --- Message 3 …": another message
                 and text[a:b].strip() != text[spans[k + 1][0]:spans[k + 1][1]].strip())  # a repeat leads into nothing
        if short and "\n" in text[b:spans[k + 1][0]] and not _opens_line(text, start):
            # the last sentence of a line that others open is no lead-in of the next line: joined to it,
            # "Interest compounds monthly." took clause 7.3's first sentence into clause 7.2
            short = False
        if short:
            pending = start
            continue
        if backward and pending is None and out and (
                (k + 1 == len(spans) and "\n\n" not in text[out[-1][1]:a]
                 and ((_word_count(text[a:b]) < min_words and _BARE_NEGATION_RE.match(text, a))
                      or _BARE_PROHIBITION_RE.fullmatch(text[a:b].rstrip())))
                # "No detention is charged if …" limits the sentence before it wherever it stands in the paragraph
                or ("\n\n" not in text[out[-1][1]:a] and _negates_noun_before(text[a:b], text[out[-1][0]:out[-1][1]])
                    and b - out[-1][0] <= _RESTRICTED_MAX_CHARS)
                or (_RESTRICTS_RE.match(text, a) and "\n" not in text[out[-1][1]:a]
                    and b - out[-1][0] <= _RESTRICTED_MAX_CHARS)):
            out[-1] = (out[-1][0], b)
            continue
        out.append((start, b))
        pending = None
    return out


def _code_parts(parts: list[Piece], lines: list[tuple[int, int, str]]) -> list[Piece]:
    """Parts of a long code block, each told the block's fences and its lines, so that a part
    delivered without its neighbours is written inside the fences with ``[CODE_LINES: n]`` for the
    lines left out (render), instead of as loose lines that read as prose; a block without fences
    (a stack trace in a log) gets the counts alone."""
    opening = lines[0][2].strip()
    fenced = FENCE_RE.match(opening)
    # closed only by its own fence: a ``` block that runs to a ~~~ line at the end is unterminated
    # (loose code lines, a stack trace in a log, have no fences to write: only the count of the lines)
    fence = fenced.group(1) if fenced else ""
    closing = lines[-1][2].strip() if fenced and len(lines) > 1 and lines[-1][2].strip().startswith(fence) else ""
    opening = opening if fenced else ""
    starts = [ln[0] for ln in lines]
    out: list[Piece] = []
    for k, p in enumerate(parts):
        first = bisect.bisect_right(starts, p.start) - 1
        last = bisect.bisect_right(starts, p.end - 1) - 1
        meta = {"code_open": opening, "code_close": closing or fence, "code_part": k, "code_parts": len(parts),
                "code_lines": [first, last - first + 1], "code_total": len(lines), "code_closed": bool(closing)}
        out.append(Piece(p.start, p.end, p.kind, p.paragraph, meta))
    return out


#: A fenced block's language that may hold a unified diff (or none).
_DIFF_FENCE_RE = re.compile(r"^(?:```|~~~)[ \t]*(?:diff|patch|udiff|git)?[ \t]*$", re.IGNORECASE)


def _fenced_diff(lines: list[tuple[int, int, str]], i: int, j: int) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """The files of the unified diff that fills the fenced block from line *i* (its opening fence, at
    the margin: ```` ```diff ````, ```` ```patch ```` or none) to line *j* (its closing fence), as
    :func:`.diffparts.diff_files` reads them; [] when the block is not closed or holds anything else
    (a diff cut at its fences' lines would lose what is around it: such a block stays code lines)."""
    if j <= i + 1 or not _DIFF_FENCE_RE.match(lines[i][2].rstrip()) or \
            not lines[j][2].strip().startswith(lines[i][2].strip()[:3]):
        return []
    line = lines[i + 1][2]
    files = diff_files(lines, i + 1) if line.startswith(("diff --git ", "--- ")) else []
    if not files:
        return []
    return files if all(not lines[k][2].strip() for k in range(diff_end(files), j)) else []


#: A chat message's role that is a tool's result (OpenAI's "function" and "tool", ToolBench's "function").
_TOOL_ROLES = frozenset({"function", "tool"})
#: The members of a chat message that say whose it is, not what it says.
_MESSAGE_LABELS = frozenset({"role", "name", "tool_call_id"})


def _tool_results(text: str, members: Sequence[tuple[int, int]]) -> dict[int, int]:
    """In a JSON list of chat messages (the members of a list, *members*: their spans in *text*), each tool
    result's index to that of the assistant's message before it that calls the tool it names (its
    ``function_call`` or one of its ``tool_calls``, by name or ``tool_call_id``), no other result of that
    tool between them. Only a message whose ``role`` is ``function`` or ``tool`` is a result."""
    out: dict[int, int] = {}
    calls: dict[str, int] = {}  # a tool's name or call id -> the message calling it last, not yet answered
    for j, (ms, me) in enumerate(members):
        if text[ms] != "{":
            continue
        try:
            message = loads_json(text[ms:me])
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            named = [message.get("function_call")] + [c.get("function") if isinstance(c, dict) else None
                                                      for c in message.get("tool_calls") or ()]
            for call in named:
                if isinstance(call, dict) and isinstance(call.get("name"), str):
                    calls[call["name"]] = j
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    calls[call["id"]] = j
        elif role in _TOOL_ROLES:
            key = message.get("tool_call_id") if isinstance(message.get("tool_call_id"), str) else message.get("name")
            if isinstance(key, str) and key in calls:
                out[j] = calls.pop(key)
    return out


def _line_piece(chunk: list[tuple[int, int, str]], kind: str, paragraph: int, meta: dict[str, Any] | None = None,
                *, indent: bool = False, row: bool = False) -> Piece:
    """The piece of the lines *chunk*, without the whitespace around them (*indent*: its first line
    keeps its indentation). *row*: lines of a table, whose whitespace at both ends is kept but for a
    CRLF's ``\r``: a blank or whitespace cell at a row's end or start is a cell, and a part of a table
    delivered without the part after it ends in its last row as the source has it (QA s32 R2: the
    TSV row ``2012\tChris Brown\tFortune\tDon't Judge Me\t18\t\t`` was delivered as ``…\t18``,
    five cells under a header of seven, in a segment the record called verbatim)."""
    first = chunk[0]
    start = first[0] + (0 if indent or row else len(first[2]) - len(first[2].lstrip()))
    last = chunk[-1]
    end = last[0] + len(last[2].rstrip("\r") if row else last[2].rstrip())
    return Piece(start, max(start, end), kind, paragraph, meta)


#: Value phrases a cut must not split: an amount with its currency ("EUR 1,250,000.00"), a number
#: with its unit ("25 %", "30 days"), a clause reference ("Clause 7.2(b)", "第6.4条").
_NO_CUT_RE = re.compile(
    r"(?:\b[A-Z]{2,4}|[$€£¥₹])\s?\d[\d,.]*(?:\s?(?:%|percent|million|billion|thousand)\b)?"
    r"|\d[\d,.]*\s?(?:%|percent|per cent|million|billion|thousand|days?|weeks?|months?|years?|hours?)"
    r"|\b(?:Clause|Section|Article|Art\.|Schedule|Annex|§)\s?\d[\w.()]*"
    r"|第[\d.一二三四五六七八九十百千]+[条章节款项]"
    r"|(?:人民币|美元|欧元)?\d[\d,.]*\s?(?:万元|亿元|元|万|亿|%|％)"
)
#: Where a very long sentence may be cut, best first: after a clause mark, after a comma, at a space.
_CUT_TIERS = (("; ", "\n", "；", "。", "！", "？"), (", ", "，", "、", ": ", "："), (" ",))


def _cut_long(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """Very long 'sentences' (no sentence punctuation, e.g. a dump) are cut at most *limit*
    characters apart: after ; or a CJK full stop, else after a comma (also ， and 、), else at a
    space, and never inside a value phrase (:data:`_NO_CUT_RE`: "EUR 1,250,000.00", "第6.4条")."""
    if end - start <= limit:
        return [(start, end)]
    blocked = [(m.start(), m.end()) for m in _NO_CUT_RE.finditer(text, start, end) if m.end() - m.start() < limit // 2]
    starts = [a for a, _ in blocked]

    def free(pos: int) -> bool:  # a cut at pos ends a piece at pos; matches do not overlap
        k = bisect.bisect_left(starts, pos) - 1
        return k < 0 or blocked[k][1] <= pos

    out: list[tuple[int, int]] = []
    s = start
    while end - s > limit:
        e = _cut_point(text, s, limit, free)
        out.append((s, rstrip(text, s, e)))
        s = e
        while s < end and text[s].isspace():
            s += 1
    if s < end:
        out.append((s, end))
    return [(a, b) for a, b in out if b > a]


#: Characters a token, roughly, in English text (o200k_base): to turn a budget into a sentence length.
CHARS_A_TOKEN = 4
#: The shortest limit a small budget sets on a sentence kept in one piece.
MIN_SENTENCE_CHARS = 100
#: The shortest clause that a long sentence is cut into at its semicolons.
MIN_CLAUSE_CHARS = 20
_CLAUSE_MARK_RE = re.compile(r"(?<=[;；])[ \t]*(?=\S)")
#: An HTML character reference ending at a semicolon ("AT&amp;", "&#8212;"): not a clause mark.
_ENTITY_END_RE = re.compile(r"&(?:#\d{1,7}|#x[0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,10});$")


def _clauses(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """A sentence over *limit* characters cut after each semicolon outside brackets and quotes
    (its clauses: "Discharge medications: metformin 500 mg twice daily; atorvastatin 40 mg at
    bedtime; …"), each clause at least :data:`MIN_CLAUSE_CHARS` long (a shorter one stays with
    the clause after it, the last with the one before); else the sentence whole.

    >>> t = ("Discharge medications: metformin 500 mg twice daily; atorvastatin 40 mg at bedtime (see the "
    ...      "note; below); ok; lisinopril 10 mg is held; resume it at follow-up.")
    >>> [t[a:b] for a, b in _clauses(t, 0, len(t), 60)]
    ['Discharge medications: metformin 500 mg twice daily;', 'atorvastatin 40 mg at bedtime (see the note; below);', 'ok; lisinopril 10 mg is held;', 'resume it at follow-up.']
    """
    if end - start <= limit or limit <= 0:
        return [(start, end)]
    out: list[tuple[int, int]] = []
    s = start
    for m in _CLAUSE_MARK_RE.finditer(text, start, end):
        head = text[s:m.start()]
        if (len(head.strip()) < MIN_CLAUSE_CHARS or end - m.end() < MIN_CLAUSE_CHARS
                or text.count("`", start, m.start()) % 2 or _ENTITY_END_RE.search(text, max(start, m.start() - 12), m.start())
                or head.count("(") != head.count(")") or head.count("[") != head.count("]")
                or head.count('"') % 2 or head.count("“") != head.count("”")):
            continue
        out.append((s, m.start()))
        s = m.end()
    out.append((s, end))
    return out


def _cut_point(text: str, s: int, limit: int, free: Callable[[int], bool]) -> int:
    """End of the piece that starts at *s*: the best cut in the next *limit* characters."""
    window = text[s:s + limit]
    for seps in _CUT_TIERS:
        best = max((i for sep in seps for i in _find_all(window, sep)
                    if i >= limit // 3 and free(s + i + 1)), default=-1)
        if best >= 0:
            return s + best + 1
    for e in range(s + limit - 1, s + limit // 3, -1):  # no separator at all: any free position
        if free(e):
            return e
    return s + limit - 1


def _find_all(text: str, sep: str) -> list[int]:
    out, i = [], text.find(sep)
    while i >= 0:
        out.append(i)
        i = text.find(sep, i + 1)
    return out


def _structural(lines: list[tuple[int, int, str]], j: int) -> bool:
    line = lines[j][2]
    return bool(FENCE_RE.match(line) or HEADING_RE.match(line) or QUOTE_RE.match(line)
                or mail_header_run(lines, j) > j or table_run(lines, j) > j or aligned_run(lines, j)[0] > j
                or json_lines_run(lines, j, most=2) > j
                or _prefix_run(lines, j) > j or bool(log_entries(lines, j))
                or speaker_run(lines, j, limit=SPEAKER_RUN) - j >= SPEAKER_RUN
                or opens_turn(lines, j)  # "[user] …" opens a turn of an agent log
                # marked items right under their lead-in line, without a blank line ("… liable for:\n(a) …;")
                or _list_run(lines, j) - j >= 2)


#: A line of source code: a numbered listing line ("18:print(x)"), a statement or a block opener.
_CODE_LINE_RE = re.compile(
    # SWE-agent style numbered listing ("18:print(x)"), not a clock time and words: a lab notebook's
    # "10:45 Added 2 mL of reagent R4." is a note, not line 10 holding "45 Added …"
    r"^\s*\d{1,6}:(?!\d\d(?::\d\d)?\s+[^\W\d_])"
    r"|^\s*(?:import \w|from [\w.]+ import |def \w+\(|class \w+[(:]|return\b|raise \w|elif |else:|try:|except\b"
    r"|finally:|with .+:$|for .+ in .+:$|while .+:$|if .+:$|@\w+|#include|const |let |var |function\b|public |private )"
    r"|^\s*[\w.\[\]'\"]+\s*(?:[-+*/%|&]?=)\s*\S(?:.*[^.!?])?$"  # an assignment
    r"|^\$ \S|^Traceback \(most recent call last\):|^\s+File \".+\", line \d+"  # a shell command, a traceback
    r"|^\s*\^+\s*$|^[\w.$]+(?:Error|Exception|Warning|Throwable): "
    # a Java or JavaScript stack trace: its frames ("\tat pkg.Class.method(File.java:12)", "    at
    # Object.<anonymous> (/app/x.js:3:9)", "    at /app/x.js:3:9"), "\t... 47 more", a cause
    r"|^\s+at (?:async )?[\w$.<>/\[\]\-]+ ?\(.*\)\s*$|^\s+at (?:async )?\S+:\d+(?::\d+)?\)?\s*$"
    r"|^\s+\.\.\. \d+ (?:more|common frames omitted)\s*$|^Exception in thread \""
    r"|^\s*(?:Caused by|Suppressed): [\w.$]+"
    r"|^\s*[\w.]+\(.*\)\s*;?$"  # a call
    r"|^\s*[}\])]+[;,]?\s*$")
#: A line of a stack trace that opens the next exception of its chain ("Caused by: java.net.
#: SocketTimeoutException: Read timed out", "Suppressed: …"): a code block's part starts there, so
#: that each cause goes with its message and frames, not with the tail of the exception above.
#: A fenced block's language whose lines mean nothing without the lines above them.
_FENCE_LANG_RE = re.compile(r"(?i:ya?ml|diff|patch|udiff|toml|ini)\b")
_CAUSE_LINE_RE = re.compile(r"^\s*(?:Caused by|Suppressed): \S")
#: A line that ends as a C-like statement or block opens ("foo(bar);", "if (x) {"): code, unless it
#: reads as words (see :func:`_wordy_line`).
_CODE_END_RE = re.compile(r"[{;]\s*$")
#: What words do not hold but code does: an assignment or comparison, a call, braces, an arrow, a
#: namespace separator.
_CODE_MARK_RE = re.compile(r"[=<>{}\\]|\w\(|->|::|//|&&|\|\|")
_WORD_RE = re.compile(r"[^\W\d_]{2,}")
#: Small words that prose has and code keywords ("static unsigned int", "DROP TABLE IF EXISTS") have not.
_PROSE_WORD_RE = re.compile(r"\b(?:the|of|to|and|or|a|an|in|for|is|are|if|by|with|be|not|any|under|on|at|from|that|this"
                            r"|which|than|as|was|were|has|have|its|their|our|your|we|you|they)\b")


def _wordy_line(line: str) -> bool:
    """Whether a line ending in ";" reads as words, not code: a list item ("d) flood damage if the
    home is within 50 metres of a river;"), or five words or more, among them a small word of prose,
    without a sign of code. The items of contracts, policies and tenders end in ";" and must stay
    list items, cut in whole items; SQL, C and PHP statements stay code."""
    if _CODE_MARK_RE.search(line.rstrip().rstrip("{;")):
        return False
    if LIST_RE.match(line):
        return bool(_PROSE_WORD_RE.search(line)) or len(_WORD_RE.findall(line)) <= 4
    return len(_WORD_RE.findall(line)) >= 5 and bool(_PROSE_WORD_RE.search(line))


def _code_line(line: str) -> bool:
    return bool(_CODE_LINE_RE.search(line) or (_CODE_END_RE.search(line) and not _wordy_line(line)))


class _CodeRuns:
    """Where each line's paragraph ends and how many code lines come before each line, computed
    once per text (a transcript without blank lines asks at every line)."""

    def __init__(self, lines: list[tuple[int, int, str]]) -> None:
        n = len(lines)
        self.lines = lines
        self.end = [n] * (n + 1)  # index of the first blank line at or after each line
        for k in range(n - 1, -1, -1):
            self.end[k] = k if not lines[k][2].strip() else self.end[k + 1]
        self.before = [0] * (n + 1)  # code lines before each index
        for k, line in enumerate(lines):
            code = line[2].strip() and _code_line(line[2]) and not STAMPED_SPEAKER_RE.match(line[2])
            self.before[k + 1] = self.before[k] + (1 if code else 0)  # "14:02 priya: ok" is a message, not line 14

    def paragraph(self, i: int) -> int:
        """End (exclusive) of the paragraph from line *i* (up to a blank line) when it is code: two
        code lines, or three lines or more two thirds of which are code lines; else *i*."""
        j = self.end[i]
        n = j - i
        if n < 2 or TABLE_PIPE_RE.match(self.lines[i][2]) or FENCE_RE.match(self.lines[i][2]):
            return i
        code = self.before[j] - self.before[i]
        if not (code == n or (n >= 3 and code * 3 >= 2 * n)):
            return i
        return self._chained(j)

    def _chained(self, j: int) -> int:
        """*j*, or past the next traceback of a chain when one follows the code ending at line *j*: its
        "During handling of the above exception, another exception occurred:" line (blank lines around
        it) and the traceback under it are one block with the code above, so that the chain's line goes
        with the traceback it opens (:meth:`Segmenter._traceback_parts`), not alone as a sentence."""
        n = len(self.lines)
        k = j
        while k < n and not self.lines[k][2].strip():
            k += 1
        if k == j or k >= n or not CHAIN_RE.match(self.lines[k][2]):
            return j
        k += 1
        while k < n and not self.lines[k][2].strip():
            k += 1
        if k >= n or not TRACEBACK_RE.match(self.lines[k][2]):
            return j
        end = self.paragraph(k)
        return end if end > k else j


_PREFIX_MIN = 10
#: Runs of lines longer than this on average (passages, long bullets) are not folded into one block.
_BLOCK_LINE_CHARS = 200


#: A line that reads as prose: six words or more, ending a sentence.
_PROSE_LINE_RE = re.compile(r"^\s*\S+(?:\s+\S+){5,}[.!?][\"')\]]?\s*$")


def _prose_lines(lines: list[tuple[int, int, str]]) -> bool:
    """Whether most of *lines* (a run sharing a prefix) are prose: minutes' "2025-03-11 10:05 Budget. The team
    agreed to cap cloud spend at $18,000 per month." lines, each a paragraph of its own (its sentences cut
    as any), not a block of 130 tokens that a budget of 80 left out whole."""
    return 2 * sum(bool(_PROSE_LINE_RE.match(line[2])) for line in lines) > len(lines)


def _short_lines(lines: list[tuple[int, int, str]]) -> bool:
    return sum(len(x[2]) for x in lines) / max(1, len(lines)) <= _BLOCK_LINE_CHARS


def _prefix_run(lines: list[tuple[int, int, str]], i: int) -> int:
    """End of a run of >= 4 lines sharing a prefix of >= 10 characters (log lines, repeated keys)."""
    n = len(lines)
    first = lines[i][2]
    if len(first) < _PREFIX_MIN or first[:1].isspace() or STAMPED_SPEAKER_RE.match(first):
        return i
    key = first[:_PREFIX_MIN]
    j = i + 1
    # messages of a chat export share their date ("[2024-05-03 14:02] priya: ..."): a transcript, not a log
    while j < n and lines[j][2].startswith(key) and not STAMPED_SPEAKER_RE.match(lines[j][2]):
        j += 1
    return j if j - i >= 4 else i


def _list_run(lines: list[tuple[int, int, str]], i: int) -> int:
    """End index of a run of list items (each possibly followed by indented continuation lines)."""
    n = len(lines)
    if not LIST_RE.match(lines[i][2]):
        return i
    j = i
    while j < n:
        line = lines[j][2]
        if LIST_RE.match(line):
            j += 1
            continue
        if line.strip() and line.startswith(("  ", "\t")) and j > i:
            j += 1
            continue
        break
    return j


