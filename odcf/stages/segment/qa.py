"""Questions and their answers in a question-and-answer log: a tender's clarification log
("**Q19.** … Please confirm the minimum technical score." / "**A19.** The threshold is 65 points."),
an FAQ ("Question 3: …" / "Answer: …"), a "Q: …" / "A: …" transcript, and a numbered clause that holds
both, "X.3 Question: Must the 99.7% availability … be met during the implementation phase? Answer: No. …". The rank stage scores an
answer at least as high as its question, and the budget delivers a question only with its answer
(see :mod:`odcf.stages.rank` and :mod:`odcf.stages.budget`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from odcf.document import Segment

#: A question's or an answer's mark opening a paragraph or a line, maybe in bold: "Q19.", "**A19.**",
#: "Q 4:", "Question 19:", "Q:", "**A:**", "Answer:". Without a number only with a colon ("A. Scope"
#: is an outline's letter, "Q. …" / "A. …" a deposition's lines, which the segmenter reads as a list).
QA_MARK_RE = re.compile(
    r"^(\*\*|__)?(?P<side>Q|A|Question|Answer|QUESTION|ANSWER)"
    r"(?:[ \t]*(?P<n>\d{1,4}(?:\.\d{1,3})?)[ \t]*(?:(?(1)\1)[.:)]|[.:)](?(1)\1))"
    r"|[ \t]*(?:(?(1)\1):|:(?(1)\1)))"
    r"\s+\S")


#: A clause's number before a question's mark, in a notice's clarifications written as numbered clauses ("X.3
#: Question: …? Answer: No. …", "12.4 Q: …", "3. Question: …"): the question opens after it.
_CLAUSE_NUMBER_RE = re.compile(r"^[ \t]*(?:[A-Z]{1,5}\.\d{1,3}(?:\.\d{1,3})*|\d{1,3}(?:\.\d{1,3})*)\.?[ \t]+(?=\S)")


#: The most questions waiting for their answer that are looked through (the latest ones).
_OPEN_QUESTIONS = 200


@dataclass(frozen=True)
class QAPair:
    """A question and its answer: the ids of the segments of each, the one holding the mark first
    (the rest of its paragraph, or of its line, after it)."""

    question: tuple[str, ...]
    answer: tuple[str, ...]


def _opens_line(seg: Segment, prev: Segment | None) -> bool:
    """Whether *seg* opens its paragraph, or a line of it (a transcript's line, a line of a paragraph
    whose lines each open a piece)."""
    if prev is None or prev.source_id != seg.source_id or prev.paragraph != seg.paragraph:
        return True
    pieces = seg.meta.get("line_pieces")
    return bool(seg.meta.get("opens_line")) or (pieces is not None and pieces[0] == seg.index)


def _mark(seg: Segment, prev: Segment | None, asking: bool) -> re.Match[str] | None:
    """The question's or answer's mark opening *seg* (:data:`QA_MARK_RE`), or None: at the opening of its
    paragraph or of a line, maybe after a clause's number (:data:`_CLAUSE_NUMBER_RE`, a question's only:
    "X.3 Question: …"); or, an answer's, at any sentence of the paragraph of a question being read
    (*asking*): "X.3 Question: Must the 99.7% availability under IV.4 be met during the implementation
    phase? Answer: No. The availability requirement applies from the go-live date only." is one numbered
    item, and its answer's "No." answers nothing without it (QA T1)."""
    if _opens_line(seg, prev):
        m = QA_MARK_RE.match(seg.original)
        if m is None and (number := _CLAUSE_NUMBER_RE.match(seg.original)) is not None:
            m = QA_MARK_RE.match(seg.original[number.end():])
            if m is not None and m.group("side")[0] != "Q":
                m = None  # "3. Answer: …" is a list's item that says "Answer:", not an answer to pair
        return m
    if asking and seg.kind == "sentence":
        m = QA_MARK_RE.match(seg.original)
        return m if m is not None and m.group("side")[0] == "A" else None
    return None


def qa_pairs(segments: Sequence[Segment]) -> list[QAPair]:
    """The questions of *segments* paired with their answers: an answer numbered like a question before
    it in its source ("A19." with "Q19."), else one right after a question (nothing but the question
    between them: "Question:" / "Answer:"). A question or an answer is the segment that opens with its
    mark (:data:`QA_MARK_RE`; a question's maybe after a clause's number, and an answer's at a sentence
    of its question's paragraph too: :func:`_mark`) and the segments after it in its paragraph, up to
    the next mark.

    >>> segs = [Segment(id=str(i), source_id="a", index=i, text=t, original=t, paragraph=i)
    ...         for i, t in enumerate(["**Q1.** Is it late?", "**Q2.** Is it big?", "**A2.** No.", "**A1.** Yes.",
    ...                                "Q: Why?", "A: Because."])]
    >>> [(p.question, p.answer) for p in qa_pairs(segs)]
    [(('1',), ('2',)), (('0',), ('3',)), (('4',), ('5',))]
    >>> segs = [Segment(id=str(i), source_id="a", index=i, text=t, original=t, paragraph=0) for i, t in
    ...         enumerate(["X.6 Question: Will you accept a PDF invoice?", "Answer: No.", "Invoices must be in OIOUBL."])]
    >>> [(p.question, p.answer) for p in qa_pairs(segs)]
    [(('0',), ('1', '2'))]
    """
    pairs: list[QAPair] = []
    open_q: list[tuple[str | None, list[str]]] = []  # (number, ids) of the questions not yet answered
    unit: tuple[str, str | None, list[str]] | None = None  # (side, number, ids) of the question or answer being read
    last: str | None = None  # the id of the segment read last (of its source)
    prev: Segment | None = None

    def close() -> None:
        nonlocal unit
        if unit is None:
            return
        side, number, ids = unit
        unit = None
        if side == "Q":
            open_q.append((number, ids))
            del open_q[:-_OPEN_QUESTIONS]
            return
        # by its number, else the question right before it
        k = next((k for k in range(len(open_q) - 1, -1, -1) if number is not None and open_q[k][0] == number), None)
        if k is None and open_q and open_q[-1][1][-1] == before_answer:
            k = len(open_q) - 1
        if k is not None:
            pairs.append(QAPair(tuple(open_q[k][1]), tuple(ids)))
            del open_q[k]

    before_answer: str | None = None
    for seg in segments:
        if prev is None or prev.source_id != seg.source_id:
            close()
            open_q, last = [], None
        m = _mark(seg, prev, unit is not None and unit[0] == "Q" and prev is not None
                  and prev.source_id == seg.source_id and prev.paragraph == seg.paragraph)
        if m is not None:
            close()
            before_answer = last
            unit = (m.group("side")[0], m.group("n"), [seg.id])
        elif unit is not None and prev is not None and seg.paragraph == prev.paragraph and seg.kind == prev.kind:
            unit[2].append(seg.id)
        else:
            close()
        last, prev = seg.id, seg
    close()
    return pairs
