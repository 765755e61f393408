"""Ranking without models: BM25 against the task query and the plan's queries, times
information density. The baseline that the embedding reranker improves on.

score = relevance × (0.5 + density), scaled to [0, 1], where relevance blends BM25
against the caller's query (weight ``query_weight``) and against the plan's concept and
task queries, and density is the share of the segment covered by protected spans
(numbers, identifiers, terms, markers), capped at 1. Instruction and state segments
always score 1.0. Chinese text is tokenized with jieba. A sentence that points back to the one
before it in its paragraph ("It was restarted at 500 mg …") is scored with that sentence's text
before its own (:func:`scoring_texts`).
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from odcf.document import Document, Segment, TraceEvent
from odcf.plan.model import Plan
from odcf.stages.base import Stage, in_nfc, with_text_of
from odcf.stages.segment.headings import segment_level
from odcf.stages.segment.lines import ZH_ITEM_RE, line_at
from odcf.stages.segment.logs import MIN_ENTRIES, opens_logged_entry
from odcf.stages.segment.mail import LOG_LEVELS, pleasantry
from odcf.stages.segment.qa import QAPair, qa_pairs
from odcf.textutil import (
    HAN_RE,
    STOPWORDS,
    detect_language,
    phrase_regex,
    points_back,
    words,
)

PINNED_LAYERS = frozenset({"instruction", "state"})


class BM25:
    """Okapi BM25 over pre-tokenized documents."""

    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self.tfs = [Counter(d) for d in docs]
        self.lens = [len(d) for d in docs]
        self.avgdl = (sum(self.lens) / len(self.lens)) if self.lens else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        q = Counter(query)
        out: list[float] = []
        for tf, dl in zip(self.tfs, self.lens):
            s = 0.0
            norm = self.k1 * (1 - self.b + self.b * dl / self.avgdl) if self.avgdl else self.k1
            for term, qn in q.items():
                f = tf.get(term)
                if not f:
                    continue
                s += qn * self.idf.get(term, 0.0) * f * (self.k1 + 1) / (f + norm)
            out.append(s)
        return out


#: A word of a query that names one thing exactly: letters mixed with digits (``k8s-node-117``,
#: ``W4817420``, ``v2.3.1``), ``snake_case`` or a path, a camelCase name, or a number of five
#: digits or more (an order number; years and small counts are not identifiers).
_QUERY_WORD_RE = re.compile(r"[^\s,;()\[\]{}<>'\"`?!]+")
_CAMEL_RE = re.compile(r"[a-z][A-Z]")
_QUOTED_RE = re.compile(r'"([^"\n]{2,80})"|“([^”\n]{2,80})”|`([^`\n]{2,80})`')


def _identifier(word: str) -> bool:
    if len(word) < 4:
        return False
    letters = any(c.isalpha() for c in word)
    digits = any(c.isdigit() for c in word)
    return ((letters and digits) or (letters and ("_" in word or "/" in word)) or bool(_CAMEL_RE.search(word))
            or (word.isdigit() and len(word) >= 5))


#: Words that name a part of a document, with their short forms: a query's "Section 12.2" names
#: the clause wherever the document writes "Section 12.2", "Sec. 12.2", "§ 12.2" or opens a line
#: with "12.2" (a numbered heading or paragraph).
_CLAUSE_KINDS: dict[str, tuple[str, ...]] = {
    "section": ("sections", "section", "secs.", "sec.", "§§", "§"),
    "article": ("articles", "article", "arts.", "art."),
    "clause": ("clauses", "clause", "cl."),
    "paragraph": ("paragraphs", "paragraph", "paras.", "para.", "¶"),
    "appendix": ("appendices", "appendixes", "appendix"),
    "annex": ("annexes", "annex"),
    **{w: (w + "s", w) for w in ("schedule", "exhibit", "item", "rule", "part", "chapter", "regulation",
                                 "requirement")},
}
_CLAUSE_WORD = {form: kind for kind, forms in _CLAUSE_KINDS.items() for form in forms}
_CLAUSE_NUMBER = r"\d+(?:\.\d+)*[a-z]?(?:\([a-z0-9]{1,4}\))*"
#: a clause word and its number ("part 3", not "party 3"): groups word, number
_CLAUSE_REF = (r"(" + "|".join(re.escape(f) for f in sorted(_CLAUSE_WORD, key=len, reverse=True))
               + r")(?!(?<=[a-z])[a-z])\s*(" + _CLAUSE_NUMBER + r")")
_CLAUSE_REF_RE = re.compile(r"(?<![\w§¶])" + _CLAUSE_REF + r"(?![\w.]\d|\w)", re.IGNORECASE)
#: more numbers after a clause reference: ", 9.2", " and 14", " or 5(b)"
_MORE_NUMBERS_RE = re.compile(r"\s*(?:,|;|&|\band\b|\bor\b)\s*(?:and\s+)?(" + _CLAUSE_NUMBER + r")(?![\w.]\d|\w)",
                              re.IGNORECASE)
_ZH_DIGITS = "零一二三四五六七八九"
_ZH_ARTICLE = r"第\s*([0-9]{1,3}|[零一二三四五六七八九十百]{1,6})\s*([条章款节项])"
_ZH_ARTICLE_RE = re.compile(_ZH_ARTICLE)


def _zh_number(text: str) -> int | None:
    """``"十二"`` → 12, ``"一百零五"`` → 105, ``"12"`` → 12 (up to 999)."""
    if text.isdigit():
        return int(text)
    total, digit = 0, 0
    for ch in text:
        if ch in _ZH_DIGITS:
            digit = _ZH_DIGITS.index(ch)
        elif ch == "十":
            total += (digit or 1) * 10
            digit = 0
        elif ch == "百":
            total += (digit or 1) * 100
            digit = 0
    total += digit
    return total or None


def _zh_numeral(n: int) -> str:
    """12 → ``"十二"``, 105 → ``"一百零五"`` (1–999), the way 第…条 is written."""
    hundreds, rest = divmod(n, 100)
    tens, ones = divmod(rest, 10)
    out = (_ZH_DIGITS[hundreds] + "百") if hundreds else ""
    if tens:
        out += ("" if tens == 1 and not hundreds else _ZH_DIGITS[tens]) + "十"
    elif hundreds and ones:
        out += "零"
    return out + (_ZH_DIGITS[ones] if ones else "")


def clause_references(query: str | None) -> list[str]:
    """The parts of a document that *query* names by number, as written there.

    >>> clause_references("What does Section 12.2 say, and art. 5(b)? See 第十二条 and § 3.")
    ['Section 12.2', 'art. 5(b)', '§ 3', '第十二条']
    >>> clause_references("Compare Sections 9.1, 9.2 and 14")
    ['Sections 9.1', 'Sections 9.2', 'Sections 14']
    """
    if not query:
        return []
    found = []
    for m in _CLAUSE_REF_RE.finditer(query):
        found.append(" ".join(m.group(0).split()))
        rest = m.end()  # "Sections 9.1, 9.2 and 14"
        plural = m.group(1) == "§§" or m.group(1).rstrip(".").lower().endswith("s")
        while (more := _MORE_NUMBERS_RE.match(query, rest)) is not None and (plural or more.group(0).strip()[0] not in ",;&"):
            found.append(f"{m.group(1)} {more.group(1)}")
            rest = more.end()
    found += [m.group(0) for m in _ZH_ARTICLE_RE.finditer(query)]
    return list(dict.fromkeys(found))


#: What makes a word of letters an identifier's shape rather than a word or an acronym: a digit, or one of
#: these marks inside it ("DEMUC-ITMIL", "svc_backup", "AB/2024").
_ID_MARKS = "-_/.#:"


def _declared(word: str, anchors: Sequence[re.Pattern[str]]) -> bool:
    """Whether *word* is, whole, an identifier of a shape the plan's ``protect.anchors`` declare
    (a lane ``DEMUC-ITMIL`` under ``\\b[A-Z]{5}-[A-Z]{5}\\b``): at least four characters with a
    letter and a digit or a mark (:data:`_ID_MARKS`) inside, so not a plain word ("Customer" under an
    anchor for the parties) nor an acronym ("GDPR", "HTTP", "NOTE" under an anchor ``\\b[A-Z]{2,6}\\b``
    for tickers or codes: such a word is context the query gives, and boilerplate that repeats it
    outranked the answer)."""
    if len(word) < 4 or not any(c.isalpha() for c in word) \
            or not (any(c.isdigit() for c in word) or any(c in _ID_MARKS for c in word[1:-1])):
        return False
    return any(a.fullmatch(word) for a in anchors)


def query_identifiers(query: str | None, anchors: Sequence[re.Pattern[str]] = ()) -> list[str]:
    """What *query* names exactly: identifier-like words, words of a shape one of *anchors*
    declares (:func:`_declared`), quoted phrases and numbered parts of a document (``Section
    12.2``), in query order.

    >>> query_identifiers('pods waiting on k8s-node-117 in 2024, error "connection refused"?')
    ['connection refused', 'k8s-node-117']
    >>> query_identifiers('transit time for DEMUC-ITMIL?', [re.compile(r"\\b[A-Z]{5}-[A-Z]{5}\\b")])
    ['DEMUC-ITMIL']
    """
    if not query:
        return []
    found = [next(g for g in m.groups() if g) for m in _QUOTED_RE.finditer(query)]
    for m in _QUERY_WORD_RE.finditer(_QUOTED_RE.sub(" ", query)):
        word = m.group().strip(".:#*")
        if (_identifier(word) or _declared(word, anchors)) and word not in found:
            found.append(word)
    return found + [c for c in clause_references(_QUOTED_RE.sub(" ", query)) if c not in found]


def _clause_pattern(name: str) -> str | None:
    """The regex alternative that finds the part *name* names (see :data:`_CLAUSE_KINDS`): the same
    kind of word before the number, or a line opening with a dotted number; its sub-parts match too
    (``Section 12.2`` finds ``12.2.1`` and ``12.2(a)``, not ``12.20`` nor ``12.3``)."""
    m = _CLAUSE_REF_RE.fullmatch(name)
    if m is None:
        z = _ZH_ARTICLE_RE.fullmatch(name)
        if z is None:
            return None
        n = _zh_number(z.group(1))
        if n is None or n > 999:
            return re.escape(name)
        forms = sorted({str(n), _zh_numeral(n)}, key=len, reverse=True)
        return r"第\s*(?:" + "|".join(forms) + r")\s*" + re.escape(z.group(2))
    kind = _CLAUSE_WORD[m.group(1).lower()]
    words = "|".join(re.escape(f) for f in sorted(_CLAUSE_KINDS[kind], key=len, reverse=True))
    number = m.group(2)
    tail = r"(?:\.\d+)*(?:\([a-z0-9]{1,4}\))*(?![\d\w])"
    body = re.escape(number) + tail
    before = rf"(?<![\w§¶])(?:{words})\s*"
    if "." in number:  # a dotted number opening a line is that clause; a bare "12" opening one is any list item
        before = rf"(?:{before}|(?m:^)[ \t>#*_-]*)"
    return before + body


def identifier_pattern(names: Sequence[str]) -> re.Pattern[str] | None:
    """One case-insensitive pattern for *names*, each matched as a whole: not inside a longer word
    or a longer identifier (``k8s-node-117`` does not match ``k8s-node-1170`` nor ``k8s-node-117-b``,
    but matches the host name ``k8s-node-117.prod.internal``); a numbered part (``Section 12.2``)
    as :func:`_clause_pattern` finds it."""
    if not names:
        return None
    found = {n: _clause_pattern(n) for n in names}
    clauses = [c for c in found.values() if c]
    plain = [n for n, c in found.items() if c is None]
    alts = []
    if plain:
        alts.append(r"(?<![\w])(?:" + "|".join(re.escape(n) for n in sorted(plain, key=len, reverse=True))
                    + r")(?![\w]|[-_]\w|\.\d)")
    alts += [f"(?:{c})" for c in clauses]
    return re.compile("|".join(alts), re.IGNORECASE)


#: A segment that opens with a numbered part of a document: a clause word and a number, a dotted
#: number ("12.2 Termination"), or 第…条; it ends the part a named clause opened before it.
_OPENS_PART_RE = re.compile(rf"\s*(?:[#>*_-]+\s*)*(?:{_CLAUSE_REF}|\d+(?:\.\d+)+\b|{_ZH_ARTICLE})", re.IGNORECASE)


#: The sub-parts at the end of a numbered part's name: "(b)" of "Section 5.2(b)", "(a)(ii)".
_SUB_PART_RE = re.compile(r"(?:\([a-z0-9]{1,4}\))+$", re.IGNORECASE)


#: What follows a numbered part's number in its title: a capitalised word, a mark, or the line's end.
_TITLE_AFTER_RE = re.compile(r"[.:)\]*_]*[ \t]*(?:[—–-][ \t]*)?(?:[A-Z\u4e00-\u9fff(\"“]|$)", re.MULTILINE)


#: A query about something that went wrong: "which test failed", "the root cause of the crash",
#: "why does it keep restarting", "what error".
FAILURE_QUERY_RE = re.compile(r"\b(?i:fail\w*|errors?|crash\w*|exceptions?|broke|broken|traceback|stack ?trace"
                              r"|root cause|went wrong|assert\w*|oom\w*|panic\w*|restart\w*)\b")
#: A line of tool output that reports a failure: pytest's "E   …" and ">   …" lines, an exception's
#: name and message, a traceback, FAILED/ERROR/FATAL, a panic, OOMKilled, a non-zero exit code.
FAILURE_RE = re.compile(
    r"^E {2,}\S|^> {3,}\S|\b[A-Z]\w*(?:Error|Exception)\b(?=:|\s*\(|$)|Traceback \(most recent call last\)"
    r"|\b(?:FAILED|FAIL:|ERROR|FATAL|CRITICAL|OOMKilled|CrashLoopBackOff|Segmentation fault)\b|\bpanic:"
    r"|\bexit(?:ed)?(?: with)? (?:code|status) [1-9]|\b(?:error|fatal):", re.MULTILINE)
#: What :func:`exact_hits` reports among the query's names when lines reporting a failure are hits.
FAILURE_NAME = "(lines reporting a failure)"


#: What differs between two reports of one failure: an IPv4 address and its port, a UUID, a hex
#: number or hash ("C-0x6b0d549b", "trace_id":"40d284e1…"), a date or a time of day, a pid in brackets
#: ("[3028]"), a duration ("412 ms", "3.5s"), a run of five digits or more (a counter, a sequence
#: number). Not a number that says which failure it is: an exit code ("code 1" or "code 137"), an HTTP
#: status ("500", "503"), a share ("91%"), nor the digits of a name ("ch_4407", "INV-5007", "worker-12").
_VARYING_RE = re.compile(
    r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b|\b[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b|\b0x[0-9a-f]+\b"
    r"|\b(?=[a-f]*\d)(?=\d*[a-f])[0-9a-f]{6,}\b"
    r"|(?<![\w-])(?:\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4})(?=T|\b)"
    r"|(?:(?<=\dT)|(?<![\w-]))\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|\b)"
    r"|\[\d+\]|(?<![\w-])\d+(?:\.\d+)?\s?(?:ms|us|µs|ns|s|sec|secs|seconds|min|mins)\b|(?<![\w.-])\d{5,}\b",
    re.IGNORECASE)


#: A numbered worker, thread, pod or process of one service ("[sync-worker-2]", "Thread-7", "pool-1-thread-3"):
#: which of them wrote a log line, not what the line says. Only :func:`log_template` masks its number; a
#: failure report keeps it (:func:`failure_template`: "worker-12 exited with code 137" is that worker's failure).
_WORKER_RE = re.compile(r"\b(worker|thread|pod|proc|process|executor|consumer|runner)([-_#]?)\d+\b", re.IGNORECASE)
_ADDRESS_RE = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?")
_HEX_ID_RE = re.compile(r"0x[0-9a-f]+|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}|(?=\d*[a-f])[0-9a-f]{6,}", re.IGNORECASE)
_DURATION_RE = re.compile(r"\d+(?:\.\d+)?\s?[a-zµ]+", re.IGNORECASE)


def _varying_kind(text: str) -> str:
    """What a part of a line masked by :data:`_VARYING_RE` (or :data:`_WORKER_RE`) is, in a word."""
    if _ADDRESS_RE.fullmatch(text):
        return "address"
    if _HEX_ID_RE.fullmatch(text):
        return "id"
    if text.startswith("["):
        return "pid"
    if _DURATION_RE.fullmatch(text):
        return "duration"
    if any(c in text for c in "-/:"):
        return "time"
    return "number"


def log_template(line: str) -> tuple[str, tuple[tuple[str, int, int], ...]]:
    """One line of a log with what differs between two records of one event masked: the parts
    :func:`failure_template` masks (times, dates, durations, pids, hex and request ids, addresses,
    counters) and a worker's or thread's number; with those parts, each as (kind, start, end) in
    *line* (kind: ``time``, ``duration``, ``pid``, ``id``, ``address``, ``number``, ``worker``).

    >>> log_template("2024-03-11T01:53:29Z ERROR [sync-worker-2] POST /v2/shipments failed status=502 after 30000ms")[0]
    '#T# ERROR [sync-worker-#] POST /v2/shipments failed status=502 after #'
    """
    parts = [(m.start(), m.end(), _varying_kind(m.group(0))) for m in _VARYING_RE.finditer(line)]
    parts += [(m.end(2), m.end(), "worker") for m in _WORKER_RE.finditer(line)
              if not any(a <= m.end(2) < b for a, b, _ in parts)]
    parts.sort()
    out, at = [], 0
    for a, b, _ in parts:
        out.append(line[at:a] + "#")
        at = b
    out.append(line[at:])
    return "".join(out), tuple((kind, a, b) for a, b, kind in parts)


def failure_template(text: str) -> tuple[str, ...]:
    """The lines of *text* that report a failure, with what differs between two reports of one failure
    masked (:data:`_VARYING_RE`): two lines of a log that say the same thing at another time, from
    another pid, client or worker, have one template.

    >>> failure_template("13:02:48 [3028] WARNING C-0xf28c105d: app@10.42.31.203:31624 pooler error: no more")
    ('# # WARNING C-#: app@# pooler error: no more',)
    >>> failure_template("2025-03-01T10:20:30Z ERROR worker-12 exited with code 137 after 3.5 s (charge ch_4481)")
    ('#T# ERROR worker-12 exited with code 137 after # (charge ch_4481)',)
    """
    return tuple(_VARYING_RE.sub("#", " ".join(line.split())) for line in text.splitlines() if FAILURE_RE.search(line))


def failure_hits(segments: Sequence[Segment], query: str | None) -> set[str]:
    """The segments that report a failure (:data:`FAILURE_RE`), when *query* asks about one and
    they are few (a third of the segments at most: where every line says ERROR, saying it tells
    nothing), the first of each :func:`failure_template` only. "which test failed and what were the
    assertion values?" over a CI log: the "E AssertionError: assert Decimal('32.49') == …" lines
    scored 0.06 and 400 PASSED lines 0.6. A log line repeated 41 times with other times, pids and
    client addresses ("… pooler error: no more connections allowed") is one hit, not 41 that fill the
    budget before the section the query names."""
    if not query or not FAILURE_QUERY_RE.search(query):
        return set()
    found = [s for s in segments if s.kind != "heading" and FAILURE_RE.search(s.text)]
    if len(found) > max(3, len(segments) // 3):
        return set()
    first: dict[tuple[str, ...], str] = {}
    for seg in found:
        first.setdefault(failure_template(seg.text), seg.id)
    return set(first.values())


#: The most content words a heading's title may have for a query to name its section by them.
TITLE_WORDS = 4
_ROMAN_RE = re.compile(r"[ivxlc]+")
#: Words of a title that names a part of any text rather than a topic ("## Summary", "## Notes", "## Executive
#: summary"): in a query they say what form the answer should take ("summary of the risks").
GENERIC_TITLE_WORDS = frozenset((
    "abstract", "additional", "appendix", "background", "comments", "conclusion", "conclusions", "context", "details",
    "discussion", "executive", "further", "general", "highlights", "information", "introduction", "intro", "key",
    "miscellaneous", "misc", "notes", "other", "outline", "overview", "points", "preamble", "preface", "recap",
    "remarks", "summary", "synopsis"))


def _title_words(seg: Segment) -> set[str]:
    """The content words of a heading's title, stemmed: numbers, "Section" and the like and roman numerals aside."""
    return {_stem(w) for w in words(seg.text, stop=True)
            if not any(c.isdigit() for c in w) and w not in _CLAUSE_WORD and not _ROMAN_RE.fullmatch(w)}


def _level(seg: Segment) -> int:
    """A heading's level (:func:`~odcf.stages.segment.headings.segment_level`; 7 without one)."""
    return segment_level(seg) or 7


def _elsewhere(segments: Sequence[Segment], i: int, wanted: set[str]) -> bool:
    """Whether a heading other than segment *i* and the headings it stands under names one of *wanted* (stemmed)."""
    if not wanted:
        return False
    above: set[int] = set()
    level = _level(segments[i])
    for j in range(i - 1, -1, -1):
        seg = segments[j]
        if seg.source_id != segments[i].source_id:
            break
        if seg.kind == "heading" and _level(seg) < level:
            above.add(j)
            level = _level(seg)
    return any(seg.kind == "heading" and j != i and j not in above and _title_words(seg) & wanted
               for j, seg in enumerate(segments))


#: A word of a query (for :func:`_names_as_phrase`), and what may stand between two words of one phrase: spaces,
#: quotes, emphasis and commas (a comma joins, as "and" does); anything else ("?", ";", ".", "(") ends the phrase.
_PHRASE_WORD_RE = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*")
_PHRASE_GAP_RE = re.compile(r"[\s,&/\"'`*_\u2018\u2019\u201c\u201d]*")
_JOINERS = frozenset({"and", "or"})
#: What joins two words as "and" does: a comma, "&", "/" (in a gap between words).
_JOIN_MARKS = frozenset(",&/")
_JOIN = "&"  # the one form of "and", "&", "/" and "," in :func:`_joined_words`


def _substance(word: str) -> bool:
    """Whether a (lowercased) word of a query says what it asks about: no stopword, number or "Section"."""
    return word not in STOPWORDS and word not in _CLAUSE_WORD and not any(c.isdigit() for c in word)


def _joined_words(text: str) -> list[str]:
    """The words of *text*, lowercased, with "and", "&", "/" and a comma as one joiner (:data:`_JOIN`) and any other
    mark between two words ("?", ";", "(") as an empty word that no title holds: "Termination & Renewal",
    "termination/renewal" and "termination and renewal" are each ``["termination", "&", "renewal"]``."""
    out: list[str] = []
    end = 0
    for m in _PHRASE_WORD_RE.finditer(text):
        gap = text[end:m.start()]
        if out and _PHRASE_GAP_RE.fullmatch(gap) is None:
            out.append("")
        elif out and any(c in _JOIN_MARKS for c in gap) and out[-1] != _JOIN:
            out.append(_JOIN)
        word = m.group(0).lower()
        if word != "and":
            out.append(word)
        elif out and out[-1] != _JOIN:
            out.append(_JOIN)
        end = m.end()
    return out


def _names_verbatim(query: str, heading: str) -> bool:
    """Whether *query* holds the title of *heading* word for word (its number, "Section" and the like before it
    aside): its words in order, next to each other, in the same forms, whatever stands around them ("What are
    the termination and renewal terms?", "termination & renewal" hold "## 5 Termination and Renewal";
    "payment terms and termination notice" does not hold "12 Term and Termination": "terms" is another form).

    >>> _names_verbatim("What are the termination and renewal terms?", "## 5 Termination and Renewal")
    True
    >>> _names_verbatim("payment terms and termination notice", "## 12 Term and Termination")
    False
    """
    title = _joined_words(heading)
    while title and (title[0] in _CLAUSE_WORD or title[0] == _JOIN or any(c.isdigit() for c in title[0])
                     or _ROMAN_RE.fullmatch(title[0])):
        title = title[1:]  # "12", "Section 5", "IV."
    if not title:
        return False
    asked = _joined_words(query)
    n = len(title)
    return any(asked[k:k + n] == title for k in range(len(asked) - n + 1))


def _names_as_phrase(query: str, title: set[str]) -> bool:
    """Whether *query* holds the words of *title* (stemmed, see :func:`_title_words`) as one phrase: next
    to each other, with only stopwords, numbers, "and", "or" and commas between them ("root cause of the
    impact" holds "Root cause", "terms of payment" "Payment Terms"); and, where it joins them by "and",
    "or" or a comma, with no other word of substance right before or after the phrase, which would make
    each joined word part of another thing the query asks about: "the liability cap, payment terms and
    termination notice" asks for payment terms and a termination notice, not for the section "12 Term
    and Termination" ("what does it say about term and termination?" names it). A query in Chinese,
    written without spaces, holds the title's words wherever they are.

    >>> _names_as_phrase("What are the payment terms and termination notice?", {"term", "termination"})
    False
    >>> _names_as_phrase("What does it say about term and termination?", {"term", "termination"})
    True
    """
    if HAN_RE.search(query):
        return True
    toks: list[tuple[str, str]] = []  # (word, what stands between it and the word before)
    end = 0
    for m in _PHRASE_WORD_RE.finditer(query):
        toks.append((m.group(0).lower(), query[end:m.start()]))
        end = m.end()

    def glued(k: int) -> bool:  # words k - 1 and k are words of substance with only spaces between them
        return 0 < k < len(toks) and not toks[k][1].strip() and _substance(toks[k][0]) and _substance(toks[k - 1][0])

    for s, (first, _) in enumerate(toks):
        if not _substance(first) or _stem(first) not in title:
            continue
        seen: set[str] = set()
        joined = False
        for e in range(s, len(toks)):
            w, gap = toks[e]
            if e > s:
                if _PHRASE_GAP_RE.fullmatch(gap) is None:
                    break
                joined = joined or any(c in _JOIN_MARKS for c in gap)
            if _substance(w):
                if _stem(w) not in title:
                    break
                seen.add(_stem(w))
            joined = joined or w in _JOINERS
            if seen == title:
                if not (joined and (glued(s) or glued(e + 1))):
                    return True
                break
    return False


def titled_hits(segments: Sequence[Segment], query: str | None) -> tuple[list[str], set[str]]:
    """The sections whose short title *query* names as its topic: a heading of at most
    :data:`TITLE_WORDS` content words (numbers, "Section" and the like aside), every one of them in
    the query and together at least a third of its content words ("what was the impact" names "##
    Impact"; "What does the agreement say about reporting?" names "## 6. Reporting"). Only the
    headings naming the most words count ("root cause of the impact" names "## Root cause"); each
    is a hit with every segment after it up to the next heading, as a part named by number is. A
    heading that merely shares a word with a longer query lends its section nothing, and a title that
    names a part of any text (:data:`GENERIC_TITLE_WORDS`) none when the query's other words name a
    heading other than those it stands under: "summary of the risks" asks for "## Risk Factors", not
    "## Summary" beside it ("summary of the incident" still names "## Summary" under "# Incident …")."""
    asked = {_stem(w) for w in words(query or "", stop=True)}
    if not asked:
        return [], set()
    best: list[int] = []
    size = 0
    for i, seg in enumerate(segments):
        if seg.kind != "heading":
            continue
        title = _title_words(seg)
        if not title or len(title) > TITLE_WORDS or not title <= asked or 3 * len(title) < len(asked) \
                or len(title) < size:
            continue
        if not _names_verbatim(query or "", seg.text) and not _names_as_phrase(query or "", title):
            continue  # "payment terms and termination notice" does not name "12 Term and Termination"
        if title <= {_stem(w) for w in GENERIC_TITLE_WORDS} and _elsewhere(segments, i, asked - title):
            continue  # "summary of the risks" asks for the risks ("## Risk Factors"), not "## Summary"
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        if nxt is None or nxt.kind == "heading" or nxt.source_id != seg.source_id:
            continue  # a heading with nothing under it
        if len(title) > size:
            best, size = [], len(title)
        best.append(i)
    names: list[str] = []
    hits: set[str] = set()
    for i in best:
        head = segments[i]
        names.append(f'(section "{head.text.strip().lstrip("#>*_- ").strip(" *_")}")')
        hits.add(head.id)
        for seg in segments[i + 1:]:
            if seg.kind == "heading" or seg.source_id != head.source_id:
                break
            hits.add(seg.id)
    return list(dict.fromkeys(names)), hits


def exact_hits(segments: Sequence[Segment], query: str | None,
               anchors: Sequence[re.Pattern[str]] = ()) -> tuple[list[str], set[str]]:
    """The identifiers *query* names (words of a shape *anchors*, the plan's protection patterns,
    declare among them) and the ids of the segments whose text holds one of them; the sections
    whose title it names (:func:`titled_hits`); with a query about a failure, the lines that report
    one too (:func:`failure_hits`).

    A numbered part the query names (``Section 12.2``) is a hit where the text opens it — its
    heading or title — and in every segment of that part after it, up to the next heading or the
    next segment that opens another numbered part (a clause title alone would otherwise be the only
    hit, and the clause it names would rank as before)."""
    names, hits, failing = query_hits(segments, query, anchors)
    return names, hits | failing


#: An anchor whose name is a kind of identifier: "ticket_id", "order_number", "tracking_number" (the kind's words, then
#: the identifier's word).
_ID_ANCHOR_RE = re.compile(r"^((?:[a-z]+_)*[a-z]+)_(?:id|number|no|ref|reference|code)$")
#: The words a query asks for identifiers by: "ids", "numbers", "references" (not "no", a negation as often).
_ID_WORDS = frozenset("id ids identifier identifiers number numbers ref refs reference references code codes".split())


def kind_hits(segments: Sequence[Segment], query: str | None,
              named: Sequence[tuple[str, re.Pattern[str]]] = ()) -> tuple[list[str], set[str]]:
    """The anchors (*named*: the plan's ``protect.anchors``, name and pattern) of a kind of identifier
    (:data:`_ID_ANCHOR_RE`) whose kind *query* names with a word asking for identifiers (:data:`_ID_WORDS`),
    and naming none of that shape itself, and the ids of the segments holding a match of one: "What are the
    ticket and incident ids?" asks for what ``ticket_id`` matches, "INC-90317" and "CS-48213", which no word of
    the query names (the sentences holding the incident id scored 0.03 and went out for none).

    >>> from odcf.document import Segment
    >>> segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence")
    ...         for i, t in enumerate(["Escalated as INC-90317.", "It failed twice.", "Order ORD-7741 shipped."])]
    >>> ticket = ("ticket_id", re.compile(r"\\b(?:INC|CS)-\\d{3,}\\b"))
    >>> kind_hits(segs, "What are the ticket and incident ids?", [ticket])
    (['ticket_id'], {'s0'})
    >>> kind_hits(segs, "Which ticket failed?", [ticket]), kind_hits(segs, "Why did INC-90317 fail, ticket id?", [ticket])
    (([], set()), ([], set()))
    """
    asked = set(words(query or ""))
    if not asked & _ID_WORDS:
        return [], set()
    names: list[str] = []
    hits: set[str] = set()
    for name, pattern in named:
        m = _ID_ANCHOR_RE.match(name)
        if not m or pattern.search(query or "") \
                or not all(w in asked or w + "s" in asked for w in m.group(1).split("_")):
            continue
        found = {s.id for s in segments if pattern.search(s.text)}
        if found:
            names.append(name)
            hits |= found
    return names, hits


def query_hits(segments: Sequence[Segment], query: str | None,
               anchors: Sequence[re.Pattern[str]] = (),
               named: Sequence[tuple[str, re.Pattern[str]]] = ()) -> tuple[list[str], set[str], set[str]]:
    """:func:`exact_hits` in its two tiers: the names, the segments holding what *query* names (an
    identifier, a section by its title, the identifiers of a kind an anchor of *named* declares:
    :func:`kind_hits`), and the lines reporting a failure that are not among them
    (:func:`failure_hits`), which :func:`lift_hits` puts below them."""
    failing = failure_hits(segments, query)
    names, hits = _named_hits(segments, query, anchors)
    kinds, of_kind = kind_hits(segments, query, named)
    names, hits = [*names, *kinds], hits | of_kind
    titles, titled = titled_hits(segments, query)
    names, hits = [*names, *titles], hits | titled
    hits |= adjacent_rows(segments, query, hits, names)
    if failing:
        return [*names, FAILURE_NAME], hits, failing - hits
    return names, hits, set()


#: A query asking for the row after (or before) one it names: "which episode was next after "The Way It
#: All Began"?", "which invoice came before INV-2041?". "next" and "previous" ask it wherever they stand;
#: the other words only where the name is their object ("after INV-2041", not "after its due date").
_NEXT_ROW_RE = re.compile(r"\bnext\b", re.IGNORECASE)
_PREVIOUS_ROW_RE = re.compile(r"\bprevious\b", re.IGNORECASE)
_AFTER_ROW_RE = re.compile(r"\b(?:after|following|succeed(?:s|ed|ing)?)\s+", re.IGNORECASE)
_BEFORE_ROW_RE = re.compile(r"\b(?:before|preceding|precede[sd]?|prior\s+to)\s+", re.IGNORECASE)
_QUOTES = "\"'`\u2018\u2019\u201c\u201d\u00ab\u00bb"


def _governs(pattern: re.Pattern[str], query: str, names: Sequence[str]) -> bool:
    """Whether a word of *pattern* in *query* has one of *names* for its object: "after INV-2041",
    'before "The Way It All Began"', not "before or after its due date"."""
    wanted = [n.casefold() for n in names if n]
    return any(query[m.end():].lstrip(_QUOTES).casefold().startswith(name)
               for m in pattern.finditer(query) for name in wanted)


def adjacent_rows(segments: Sequence[Segment], query: str | None, hits: Collection[str],
                  names: Sequence[str] | None = None) -> set[str]:
    """The rows of a table next to a row among *hits* (a part of a table, odcf.stages.segment) in the
    direction *query* asks for: the row after it for "next", or "after", "following" with a name the
    query names (*names*, by default :func:`query_identifiers`) for object ("after INV-2041"); the row
    before it for "previous", or "before", "preceding", "prior to" with one ("before INV-2041"). The
    answer to "which episode was next after "The Way It All Began"?" is the row under the one the query
    names, which shares no word with the query (scored 0.35, it was left out at 2x and 4x while the
    named row led). "Was INV-2041 paid before or after its due date?" asks about no other row.

    >>> from odcf.document import Segment
    >>> rows = ['ep,title\\n1,Pilot', '2,The Way It All Began', '3,Invasion']
    >>> segs = [Segment(id=f"r{i}", source_id="t", index=i, text=t, original=t, kind="table",
    ...                 meta={"table_part": i}) for i, t in enumerate(rows)]
    >>> sorted(adjacent_rows(segs, 'which episode was next after "the way it all began"?', {"r1"}))
    ['r2']
    >>> sorted(adjacent_rows(segs, 'which episode came before "the way it all began"?', {"r1"}))
    ['r0']
    >>> sorted(adjacent_rows(segs, 'was "the way it all began" aired before or after its date?', {"r1"}))
    []
    """
    if not query or not hits:
        return set()
    if names is None:
        names = query_identifiers(query)
    after = bool(_NEXT_ROW_RE.search(query)) or _governs(_AFTER_ROW_RE, query, names)
    before = bool(_PREVIOUS_ROW_RE.search(query)) or _governs(_BEFORE_ROW_RE, query, names)
    if not (after or before):
        return set()
    rows: dict[tuple[str, int, int], str] = {}  # (source, the table's first index, part) -> id
    for seg in segments:
        part = seg.meta.get("table_part")
        if seg.kind == "table" and isinstance(part, int):
            rows[(seg.source_id, seg.index - part, part)] = seg.id
    out: set[str] = set()
    for (source, start, part), sid in rows.items():
        if sid in hits:
            for step in (1,) * after + (-1,) * before:
                near = rows.get((source, start, part + step))
                if near is not None and near not in hits:
                    out.add(near)
    return out


def _named_hits(segments: Sequence[Segment], query: str | None,
                anchors: Sequence[re.Pattern[str]] = ()) -> tuple[list[str], set[str]]:
    names = query_identifiers(query, anchors)
    pattern = identifier_pattern(names)
    if pattern is None:
        return names, set()
    hits = {s.id for s in segments if pattern.search(s.text)}
    if not any(_clause_pattern(n) for n in names):
        return names, hits
    # a sub-part the query names ("Section 5.2(b)") is read in the part its heading opens ("5.2
    # Exceptions to deletion", whose list holds "b. …"): the heading names the part without the "(b)"
    opener = identifier_pattern([_SUB_PART_RE.sub("", n) if _clause_pattern(n) else n for n in names]) or pattern
    opened: str | None = None  # the source whose named part is open
    first = {}  # (source, paragraph) -> its first segment's id
    for seg in segments:
        first.setdefault((seg.source_id, seg.paragraph), seg.id)
        opens = _OPENS_PART_RE.match(seg.text)
        start = opener.match(seg.text.lstrip(" \t#>*_-"))
        if seg.kind == "heading" or opens:
            # a part is opened by its heading, or by a title opening a paragraph ("Section 12.2
            # Termination for cause.", "12.2 Termination"), not by a sentence that names it ("Section
            # 2 of the plan was reviewed …") nor by an amount ("2.1 million rows …")
            title = seg.kind == "heading" or (first[(seg.source_id, seg.paragraph)] == seg.id and start is not None
                                              and _TITLE_AFTER_RE.match(seg.text, start.end() + len(seg.text)
                                                                        - len(seg.text.lstrip(" \t#>*_-"))))
            opened = seg.source_id if start and title else None
        elif opened == seg.source_id:
            hits.add(seg.id)
        else:
            opened = None
    return names, hits


#: Where segments holding what the query names exactly are put: at or above this score, the rest
#: below it (scaled, so that their order stays).
HIT_FLOOR = 0.95


def lift_hits(scores: dict[str, float], hits: set[str], *, failing: Collection[str] = (),
              leads: Collection[str] = ()) -> dict[str, float]:
    """*scores* with the *hits* first: each hit at ``HIT_FLOOR`` plus its share of the best hit's own
    score (so that the rest of the query still orders them: when the named host is in 70 log blocks,
    the one that also says "PANIC" leads), every other score scaled below ``HIT_FLOOR``.

    The lines reporting a failure (*failing*, :func:`query_hits`) are lifted the same way below the
    hits, and with them the best segment for each question of a compound query (*leads*) between the
    two: "Why did the rollback not help, what was the root cause, and which action items …?" is
    answered by the "## Root cause" section and each question's best sentence before the log lines.

    >>> lift_hits({"a": 0.2, "b": 0.4, "c": 1.0}, {"a", "b"})
    {'a': 0.975, 'b': 1.0, 'c': 0.95}
    >>> lift_hits({"a": 0.2, "b": 0.4, "c": 1.0, "d": 0.9}, {"a"}, failing={"b"}, leads={"d"})
    {'a': 1.0, 'b': 0.9025, 'c': 0.857375, 'd': 0.95}
    """
    weak = set(failing) - set(hits)
    if weak:
        scores = _lift(_lift(scores, weak), set(leads) - set(hits))
    return _lift(scores, hits)


def _lift(scores: dict[str, float], hits: set[str]) -> dict[str, float]:
    if not hits:
        return dict(scores)
    top = max(scores.get(h, 0.0) for h in hits)
    out: dict[str, float] = {}
    for sid, v in scores.items():
        if sid in hits:
            out[sid] = round(HIT_FLOOR + (1.0 - HIT_FLOOR) * (v / top if top > 0 else 1.0), 6)
        else:
            out[sid] = round(v * HIT_FLOOR, 6)
    return out


#: An ISO currency code, in capitals ("EUR 4,500", "USD 1,200", "5,200 CHF").
_CURRENCY_CODES = (r"EUR|USD|GBP|CHF|JPY|CNY|RMB|AUD|CAD|NZD|SEK|NOK|DKK|PLN|CZK|HUF|RON|INR|HKD|SGD|ZAR|BRL|MXN"
                   r"|KRW|TRY|AED|SAR|ILS")


#: A sentence that corrects or replaces a value said before it: "correction: it's 36 people, not
#: 34", "Addendum 2: the submission deadline is extended to 15 August", "the budget is €40,000 not
#: €50,000", an amendment ('the figure "3.50:1" is deleted and replaced with "3.75:1"', "is amended by
#: replacing …", "up to 6 hours (previously 8 hours)", "reduced from 2 years to 18 months", "1.75:1 in
#: place of 2.00:1", "GBP 4,950 instead of GBP 9,200"), "变更为", "以此为准". Not "actually", "updated", "revised" or "is now": prose is full
#: of them ("The office address was updated on 30 January" rose above an indemnity clause); nor "may be
#: amended" or "in place of" before a word (a contract's amendment clause, "used in place of insulin").
CORRECTION_RE = re.compile(
    r"\b(?i:corrections?|corrected|erratum|errata|(?<!see )addend(?:um|a)|supersed(?:e|es|ed|ing)|replaced by"
    r"|(?:deleted|struck out|removed) and replaced|(?:is|are|shall be|is hereby|are hereby) amended (?:by|to read|as follows)"
    r"|amended to read|now reads"
    r"|(?:extended|postponed|changed|reduced|increased|cut|raised|lowered|shortened|brought forward) (?:to|from(?=[^.;:]{1,40}?\bto\b)))\b"
    r"|\((?i:previously|formerly)\b|\b(?i:in place of)\s+[\"“]?[€$£¥]?\d"
    r"|\b(?i:instead of)\s+(?:[€$£¥]\s?|(?:" + _CURRENCY_CODES + r")\s?)?\d"
    r"|\bnot\s+[€$£¥]?\d[\d,./:]*%?(?:\s?[^\W\d_]+){0,2}(?:\s\d{4})?(?=\s*(?:[.;,)!\n\-–—]|$|as\b|but\b))|更正|修改为|变更为|调整为|延长至|延期至|改为|以此为准|不再|删去|删除第")
#: A number on its own: not the digits of a name or a unit ("D50", "T2DM", "mL/min/1.73m2").
_NUMBER_RE = re.compile(r"(?<![\w,./:])\d[\d,.]*(?::\d\d)*")
#: A lone digit with what it counts ("8 hours", "2 years", "5x ULN"): a value as much as "14 months" is.
_DIGIT_UNIT_RE = re.compile(r"(?<![\w,./])(\d)(?:\s?([a-z]+|%))?(?![\d,.]?\d)", re.IGNORECASE)
#: A word that joins the two ends of a range ("14 to 18 June", "between 5 and 10 mg"): the first end is
#: written in the unit of the second, not in "to" ("not 14 June" had linked nothing to "14 to 18 June").
_RANGE_WORDS = frozenset({"to", "and", "or", "through", "thru", "till", "until"})
_RANGE_END_RE = re.compile(r"\s*[€$£¥]?\d")
#: A Chinese unit or counter after a number ("100万元", "6个月", "4倍"): the words after it are not.
_CJK_UNIT = r"万元|亿元|美元|港元|个月|小时|分钟|[万亿千百元年月日天倍%％]"
#: The verb of a Chinese amendment: "X修改为Y", "由X变更为Y".
_ZH_CHANGE = r"(?:修改为|变更为|调整为|改为)"
#: The value a Chinese amendment replaces, right before its verb: "人民币100万元修改为人民币80万元" -> 100 万元.
_ZH_OLD_VALUE_RE = re.compile(r"(?<![\d,.])(\d[\d,.]*)\s*(" + _CJK_UNIT + r")?\s*" + _ZH_CHANGE)
#: The words an amendment decision replaces, quoted before its verb, as such decisions are written:
#: '将第七条第二款中的"每年3月31日前"修改为"每年1月31日前"' -> 每年3月31日前 (a unit or "内", "前" after the
#: number, and the closing quote, hide it from :data:`_ZH_OLD_VALUE_RE`).
_ZH_QUOTED_OLD_RE = re.compile(r'(?:"([^"\n]{1,80})"|“([^”\n]{1,80})”|「([^」\n]{1,80})」)\s*' + _ZH_CHANGE)
#: The words a deletion quotes: '删去第八条中的"经营情况"' -> 经营情况 (what it changes, as a replacement's are).
_ZH_QUOTED_GONE_RE = re.compile(r'删(?:去|除)[^"“「。；\n]{0,30}?(?:"([^"\n]{1,80})"|“([^”\n]{1,80})”|「([^」\n]{1,80})」)')
#: The shortest quoted words that name what a change without an article makes ('将本办法中的"每年3月31日前"修改为…'):
#: "报告" alone is in too many sentences to say which.
_ZH_QUOTED_MIN = 4
#: What a Chinese change says was there, between 由 and its verb: "限流阈值由每分钟 3,000 次变更为 6,000 次" ->
#: "每分钟 3,000 次" (its numbers are the values replaced).
_ZH_FROM_RE = re.compile(r"由([^由，。；：;\n]{1,40}?)" + _ZH_CHANGE)
#: A number in Chinese text and its unit ("人民币100万元" -> 100 万元).
_ZH_VALUE_RE = re.compile(r"(?<![\d,.])(\d[\d,.]*)\s*(" + _CJK_UNIT + r")?")
#: What a change names before its verb: "The proposal due date is extended to …" changes the
#: proposal due date, wherever else the text gives it ("| Proposal due date | 14 March 2025 |").
_CHANGED_SUBJECT_RE = re.compile(
    r"((?:[^\W\d_][\w'-]*\s+){2,4}?)(?:is|are|was|were|has been|have been|shall be|will be)\s+(?:hereby\s+)?"
    r"(?:extended|postponed|changed|reduced|increased|raised|lowered|shortened|brought forward|moved|amended)"
    r"\s+(?:to|from)\b", re.IGNORECASE)
#: The value a correction says was there before: "(previously 1000 mg twice daily)", "from 8 to 6
#: hours", "not 34", "in place of 12%", "instead of GBP 9,200". Where it holds a number, what the correction corrects
#: holds it.
_OLD_VALUE_RE = re.compile(
    r"\((?i:previously|formerly)\s+([^)]{1,60})\)|\b(?i:from)\s+([^.;:]{1,40}?)\s+(?i:to)\b"
    r"|\bnot\s+([€$£¥]?\d[\d,.]*(?:\s?(?:[^\W\d_]+|%))?)|\b(?i:in place of)\s+[\"“]?([€$£¥]?\d[\d,.]*(?:\s?(?:[^\W\d_]+|%))?)"
    r"|\b(?i:instead of)\s+((?:[€$£¥]\s?|(?:" + _CURRENCY_CODES + r")\s?)?\d[\d,.]*(?:\s?(?:[^\W\d_]+|%))?)")
_YEAR_RE = re.compile(r"(?:19|20)\d\d")
#: How many segments before a correction it is compared with (bounded work on long inputs).
CORRECTION_WINDOW = 400
#: A word or number found in more segments than this says nothing about which one a correction
#: corrects: "Clause", "paragraph", "30" (a day of the month) in a loan agreement, "10 mg" in a protocol.
CORRECTION_RARE = 3


#: How a value is written in words and figures, or with thousands separators: "two (2) years" is "2
#: years", "1,000 mg" is "1000 mg" (a correction's "(previously 1,000 mg)" had linked nothing to "1000 mg").
_SPELLED_NUMBER_RE = re.compile(r"\b[A-Za-z]+(?:[ -][A-Za-z]+)?\s+\((\d+)\)")
_THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def _as_figures(text: str) -> str:
    """*text* with each value in figures alone, without thousands separators (see above)."""
    return _THOUSANDS_RE.sub("", _SPELLED_NUMBER_RE.sub(r"\1", text))


def _keys(text: str) -> tuple[set[str], set[str]]:
    """Content words, and the numbers that name one value: not a year; a lone digit only with
    the word after it ("8 hours"), or the first end of a range with the unit of its last ("9 to 11 May":
    9 may, :func:`_units`). *text* is in figures (:func:`_as_figures`)."""
    numbers = {n.rstrip(".,") for n in _NUMBER_RE.findall(text)}
    units: set[str] = set()
    for m in _DIGIT_UNIT_RE.finditer(text):
        if m.group(2) and m.group(2).lower() in _RANGE_WORDS:
            units |= {f"{m.group(1)} {u}" for u in _units(text).get(m.group(1), ()) if u}
        elif m.group(2):
            units.add(f"{m.group(1)} {m.group(2).lower()}")
    return ({w for w in words(text, stop=True) if len(w) >= 3 and not w[0].isdigit()},
            {n for n in numbers if len(n) >= 2 and not _YEAR_RE.fullmatch(n)} | units)


#: A number and the word or sign right after it: its unit ("64 GB", "64 MB", "5%"), if any.
_NUMBER_UNIT_RE = re.compile(r"(?<![\w,./:])(\d[\d,.]*\d(?::\d\d)*|\d)(?:\s?([^\W\d_]+|%))?")


def _units(text: str) -> dict[str, set[str | None]]:
    """Each number of *text* (in figures, :func:`_as_figures`) with the units it is written with (None: none);
    the first end of a range with the unit of its second (:data:`_RANGE_WORDS`)."""
    out: dict[str, set[str | None]] = {}
    ends: list[str] = []  # the first ends of a range, waiting for the unit of its last
    for m in _NUMBER_UNIT_RE.finditer(text):
        unit = m.group(2).lower() if m.group(2) else None
        if unit in _RANGE_WORDS and _RANGE_END_RE.match(text, m.end()):
            ends.append(m.group(1).rstrip(".,"))
            continue
        for n in (*ends, m.group(1).rstrip(".,")):
            out.setdefault(n, set()).add(unit)
        ends = []
    return out


def _same_value(shared: set[str], mine: dict[str, set[str | None]], theirs: dict[str, set[str | None]],
                mine_cur: Mapping[str, set[str]] | None = None, theirs_cur: Mapping[str, set[str]] | None = None) -> bool:
    """Whether a number both hold names the same value: written with a common unit, or without a
    unit on one side ("not 34" and "34 x €24"); "64 MB" is not "64 GB". With the currencies of each side's numbers
    (*mine_cur*, *theirs_cur*: :func:`_currencies`), a figure in one currency is not the same figure in another
    ("$40,000" is no "€40,000"), and in one currency its name after it is no unit of its own ("40,000 EUR" is
    "€40,000 total")."""
    for key in shared:
        n = key.split(" ", 1)[0]
        ca, cb = (mine_cur or {}).get(n, set()), (theirs_cur or {}).get(n, set())
        if ca and cb and not ca & cb:
            continue
        a, b = mine.get(n, {None}), theirs.get(n, {None})
        if ca and cb:
            a, b = _without_currency(a), _without_currency(b)
        if None in a or None in b or a & b:
            return True
    return False


#: A line that says something was stopped ("- Ramipril 5 mg — STOPPED (replaced by sacubitril/valsartan)"
#: in a discharge summary's "Medications Stopped"): its "replaced by" names what is taken instead, and
#: corrects no line (it had linked the discharge medicines, the apixaban dose a query asked for among them,
#: on the drug names both hold, and they went only with it).
_STOPPED_RE = re.compile(r"\b(?i:stopped|discontinued|ceased)\b")
#: A change verb of :data:`CORRECTION_RE` ("extended to", "reduced from … to").
_CHANGE_VERB_RE = re.compile(r"(?i:extended|postponed|changed|reduced|increased|cut|raised|lowered|shortened|brought)\b")
#: A condition open before a change verb in its sentence: "approved … provided that the top client's contract is
#: extended to at least December 2027" sets a condition, it changes nothing said before (it had marked the CEO's
#: proposal and the approval of the last minutes "corrected by" the resolution, on the words they shared).
_CONDITIONS = (r"\b(?i:provided(?:,\s*however,)?\s+that|if|unless|subject\s+to|on\s+(?:the\s+)?condition\s+that"
               r"|conditional\s+(?:up)?on|as\s+long\s+as|only\s+when|until|in\s+case)\b")
_CONDITION_BEFORE_RE = re.compile(_CONDITIONS + r"[^.;:!?,\n]*$")
#: A condition opening the sentence of a user's change in a conversation: "If flights are over €600, make it 3
#: nights" changes nothing yet.
_CONDITION_OPENS_RE = re.compile(_CONDITIONS + r"[^.;:!?\n]*$")
#: A change verb after "should be", "would be" …: a plan, not a change made. QA (s33 AA): "If her creatinine rises
#: above 133 µmol/L, apixaban should be reduced to 2.5 mg twice daily; … so no change is needed" had made the
#: current "Apixaban 5 mg twice daily" stale.
_PLANNED_BEFORE_RE = re.compile(r"\b(?i:should|would|could|may|might)\s+(?:not\s+)?be\s+$")


#: A user's change of a value in a conversation with an agent, the new value right after it: "Make it under €2,000
#: total", "change the dates to 15 June", "switch it to 3 nights", "Actually, we'll be 4 people". Said by a user to an
#: agent, "actually" and "make it" change what the user asked for before; in prose they are everywhere ("it actually
#: took 3 weeks", "to make it 5 times faster"), and there they are no cue.
_CHAT_CHANGE_RE = re.compile(
    r"\b(?i:(?:make|change|move|switch|update|bump|push|cut|lower|raise|reduce|increase)\s+(?:it|that|this|them"
    r"|the\s+(?P<thing>[^\W\d_]+(?:\s+[^\W\d_]+)?))(?:\s+(?:to|into))?|actually\b[^.;!?\d]{0,40}?)\s*,?\s*"
    r"(?i:(?:under|below|over|above|at\s+most|at\s+least|max(?:imum)?|about|around|only|just|no\s+more\s+than)\s+)?"
    r"(?:[€$£¥]|(?:" + _CURRENCY_CODES + r")\s?)?\d")


def _cues(text: str, *, chat: bool = False) -> list[re.Match[str]]:
    """The matches of :data:`CORRECTION_RE` in *text* that say it corrects something, and with *chat* (a user's
    turn in a conversation with an agent, :func:`_user_turns`) those of :data:`_CHAT_CHANGE_RE`: not a "replaced
    by" on a line that says what it replaces was stopped (:data:`_STOPPED_RE`), nor a change inside a condition of
    its sentence (:data:`_CONDITION_BEFORE_RE`, :data:`_CONDITION_OPENS_RE`) or a planned one ("should be reduced to",
    :data:`_PLANNED_BEFORE_RE`)."""
    found = [m for m in CORRECTION_RE.finditer(text)
             if not (m.group(0).lower() == "replaced by" and _STOPPED_RE.search(line_at(text, m.start())))
             and not (_CHANGE_VERB_RE.match(m.group(0)) and (_CONDITION_BEFORE_RE.search(text, 0, m.start())
                                                             or _PLANNED_BEFORE_RE.search(text, 0, m.start())))]
    if chat:
        found += [m for m in _CHAT_CHANGE_RE.finditer(text) if not _CONDITION_OPENS_RE.search(text, 0, m.start())]
    return found


#: Where a sentence or a clause of a change ends: "Make it €2,000 total; flights are 3 hours" gives €2,000 total.
_SENTENCE_END_RE = re.compile(r"[.;!?](?!\d)|\n")
#: A currency sign or code before a number ("€2,000", "EUR 2,000"): the kind of value it is, as a unit after it
#: is (a code before is the kind the code after is: "EUR 4,500" and "5,200 EUR" are both eur).
_CURRENCY_RE = re.compile(r"(?:([€$£¥])|\b(" + _CURRENCY_CODES + r"))\s?\d")


#: A currency's sign, code and names, as one kind of value: "€4,500", "EUR 4,500" and "5,200 euros" are all eur.
_CURRENCY_KIND = {
    **dict.fromkeys(("€", "eur", "euro", "euros"), "eur"),
    **dict.fromkeys(("$", "usd", "dollar", "dollars"), "usd"),
    **dict.fromkeys(("£", "gbp", "pound", "pounds"), "gbp"),
    **dict.fromkeys(("¥", "jpy", "yen"), "jpy"),
    **dict.fromkeys(("chf", "franc", "francs"), "chf"),
    **dict.fromkeys(("cny", "rmb", "yuan"), "cny"),
}

#: The ISO codes of :data:`_CURRENCY_CODES`, lowercased as a unit after a figure is (not "try", a word as often).
_CURRENCY_CODE_SET = frozenset(_CURRENCY_CODES.lower().split("|")) - {"try"}
#: A currency sign or ISO code right before a figure (in figures, :func:`_as_figures`): "€40000", "EUR 40000"; not a
#: "$" after a letter ("A$", "HK$": not the US dollar's, :data:`_CURRENCY_KIND`).
_CURRENCY_FIGURE_RE = re.compile(r"(?:(?<![A-Za-z])([€$£¥])|\b(?-i:(" + _CURRENCY_CODES + r")))\s?(\d[\d,.]*\d(?::\d\d)*|\d)")


def _currency_of(unit: str | None) -> str | None:
    """The currency a unit after a figure names ("eur", "euros", "chf"), as :data:`_CURRENCY_KIND` names it, or None."""
    if not unit:
        return None
    return _CURRENCY_KIND.get(unit) or (unit if unit in _CURRENCY_CODE_SET else None)


def _without_currency(units: set[str | None]) -> set[str | None]:
    """*units* with a currency's name read as no unit: "40000 EUR" is written with none but its currency."""
    return {None if _currency_of(u) else u for u in units}


def _currencies(text: str, units: Mapping[str, set[str | None]]) -> dict[str, set[str]]:
    """The currencies each number of *text* (in figures, :func:`_as_figures`; *units*, its :func:`_units`) is written
    in: by a sign or code before it or a code or name after it ("€40000", "EUR 40000", "40000 euros" -> eur)."""
    out: dict[str, set[str]] = {}
    for m in _CURRENCY_FIGURE_RE.finditer(text):
        kind = m.group(1) or m.group(2).lower()
        if kind == "¥":
            continue  # yen or yuan: no currency for sure
        out.setdefault(m.group(3).rstrip(".,"), set()).add(_CURRENCY_KIND.get(kind, kind))
    for n, us in units.items():
        for u in us:
            if (cur := _currency_of(u)) is not None:
                out.setdefault(n, set()).add(cur)
    return out


def _value_kinds(text: str) -> set[str]:
    """What the values of *text* (in figures, :func:`_as_figures`) are counted in: their currency signs or codes and
    the words or "%" after them, not a stop word, a currency's sign, code and names as one (:data:`_CURRENCY_KIND`:
    "€3,500 total" -> eur, total; "EUR 4,500 total" -> eur, total; "5,200 euros" -> eur; "15 to 18 June" -> june)."""
    kinds = {m.group(1) or m.group(2).lower() for m in _CURRENCY_RE.finditer(text)}
    kinds |= {u for us in _units(text).values() for u in us
              if u and (u == "%" or (len(u) >= 2 and u not in STOPWORDS))}
    return {_CURRENCY_KIND.get(kind, kind) for kind in kinds}


#: The words after "make the"/"change the" in a change that name no thing: "Make the flight under €120" names
#: the flight.
_NOT_THING = frozenset({"under", "below", "over", "above", "most", "least", "max", "maximum", "about", "around",
                        "only", "just", "more", "than", "to", "into"})


def _stem(word: str) -> str:
    """*word* without a plural's "s": "flights" and "flight" name one thing."""
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def _things(cues: Sequence[re.Match[str]]) -> set[str]:
    """What the changes of *cues* (:data:`_CHAT_CHANGE_RE`) name as changed, stemmed: "Make the flight under
    €120" -> {flight}; "make it 15 June" and "Actually, we'll be 4 people" name nothing."""
    return {_stem(w) for m in cues if m.re is _CHAT_CHANGE_RE and m.group("thing")
            for w in words(m.group("thing"), stop=True) if w not in _NOT_THING}


#: Words of an "actually" change before its value that name no thing: "Actually, budget is now EUR 5,200" names
#: the budget.
_NOT_SAID_THING = _NOT_THING | {"actually", "now", "alone", "instead", "really", "still", "currently", "anyway"}


def _said_things(cues: Sequence[re.Match[str]]) -> set[str]:
    """What an "actually" change of *cues* (:data:`_CHAT_CHANGE_RE`) says of before its value, stemmed, currencies
    aside: "Actually, the hotel deposit alone is EUR 900" -> {hotel, deposit}; "Actually, budget is now 5,200 euros"
    -> {budget}; "Actually, we can spend €2,000" -> {spend}; "Actually, we are now 8 people" -> nothing."""
    return {_stem(w) for m in cues if m.re is _CHAT_CHANGE_RE and not m.group("thing")
            for w in words(m.group(0), stop=True)
            if w not in _NOT_SAID_THING and w not in _CURRENCY_KIND and not any(c.isdigit() for c in w)}


_MONTHS = (r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?"
           r"|nov(?:ember)?|dec(?:ember)?")
#: The values of a kind a change may name instead of the thing it changes ("change the dates to 15 June", "move the
#: time to 11:15", "make the amount €500"): a date (a day and a month, either way round, or in figures: "14 to 18
#: June", "June 14", "2025-06-14", "14/06"), a time of day ("07:40", "10am"), a sum of money ("€3,500", "300 EUR").
_DATE_VALUE_RE = re.compile(rf"(?i:\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b|\b(?:{_MONTHS})\.?\s+\d{{1,2}}\b"
                            r"|\b\d{4}-\d\d-\d\d\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b)")
_TIME_VALUE_RE = re.compile(r"(?i:\b\d{1,2}:\d\d\b|\b\d{1,2}(?:[:.]\d\d)?\s?(?:[ap]\.?m\b\.?))")
_MONEY_VALUE_RE = re.compile(r"(?i:[€$£¥]\s?\d|\b\d[\d,.]*\s?(?:eur|usd|gbp|euros?|dollars?|pounds?)\b"
                             r"|\b(?:eur|usd|gbp)\s?\d)|\b\d[\d,.]*\s?(?:" + _CURRENCY_CODES + r")\b|\b(?:"
                             + _CURRENCY_CODES + r")\s?\d")
#: The words of a change that name a kind of value rather than a thing (stemmed, :func:`_stem`), and that kind.
_KIND_WORDS = {"date": _DATE_VALUE_RE, "time": _TIME_VALUE_RE, "amount": _MONEY_VALUE_RE,
               "budget": _MONEY_VALUE_RE, "price": _MONEY_VALUE_RE, "cost": _MONEY_VALUE_RE}


def _changed_value(segments: Sequence[Segment], k: int, window: Sequence[int], kinds: Sequence[set[str]],
                   things: set[str] = frozenset(), said: set[str] = frozenset()) -> list[str]:
    """What a user's change in a conversation (segment *k*, :data:`_CHAT_CHANGE_RE`) changes: the last segment of
    *window* in the same user's turns that gives a value of the same kind (:func:`_value_kinds`), of those sharing the
    most kinds with it, and where the change names what it changes (*things*, :func:`_things`), only one that names
    it too. "Make it under €2,000 total" changes the "Budget is €3,500 total" said before it, though the two share
    no number and one rare word; "Make the flight under €120" changes no "hotel … max €150 a night". Where the
    change names a kind of value (:data:`_KIND_WORDS`: "Change the dates to 15 June") and gives one of that kind, a
    segment that gives a value of that kind counts as naming it ("from 14 June to 18 June" says no "dates"), that
    kind shared. An "actually" change changes no segment that names only some of what it says of (*said*,
    :func:`_said_things`): "Actually, the hotel deposit alone is EUR 900" is no new "total budget … for flights and
    hotel", which names the hotel but no deposit; one that names none of it may be what it changes ("Actually, we can
    spend €2,000" changes "Budget is €3,500")."""
    seg = segments[k]

    def half_named(j: int) -> bool:
        named_here = said & {_stem(w) for w in words(segments[j].text)}
        return bool(named_here) and named_here != said

    named = [_KIND_WORDS[t] for t in sorted(things) if t in _KIND_WORDS and _KIND_WORDS[t].search(seg.text)]
    shared = {j: len(kinds[j] & kinds[k]) + any(r.search(segments[j].text) for r in named) for j in window
              if segments[j].source_id == seg.source_id
              and segments[j].meta.get("speaker") == seg.meta.get("speaker") and not half_named(j)
              and (not things or things & {_stem(w) for w in words(segments[j].text)}
                   or any(r.search(segments[j].text) for r in named))}
    best = max(shared.values(), default=0)
    return [segments[max(j for j, n in shared.items() if n == best)].id] if best else []


def _in_diff(seg: Segment) -> bool:
    """Whether *seg* is a piece of a unified diff (``meta["diff"]``: a file's header lines, a hunk or its lines,
    odcf.stages.segment.diffparts), which neither corrects nor is corrected (:func:`correction_links`). A hunk *is*
    a change, its old lines marked "-" beside the new ones: nothing after it makes it stale, and a hunk elsewhere
    that describes the change (a CHANGELOG's) corrects nothing. QA: in a 3-file diff the CHANGELOG hunk "`BURST`
    raised from 400 to 500" had "corrected" the code hunk "-BURST = 400 / +BURST = 500" that made the change,
    and the budget held that hunk back as a stale value at every budget."""
    return bool(seg.meta.get("diff"))


#: A dose's unit, each way of writing it as one ("unit" and "units", "mcg", "µg" and "micrograms").
_DOSE_UNIT = {"mg": "mg", "g": "g", "ml": "ml", **dict.fromkeys(("mcg", "µg", "ug", "microgram", "micrograms"), "mcg"),
              **dict.fromkeys(("unit", "units", "iu"), "units")}
_DOSE_UNITS = r"(?:mg|mcg|µg|ug|micrograms?|g|units?|IU|iu|mL|ml)"
#: A change of a named drug's dose to a new value, the name right before its verb (or before "dose"): "Glargine
#: increased to 14 units", "Apixaban was reduced from 5 mg twice daily to 2.5 mg", "glargine dose increased to 14 units".
_DOSE_CHANGE_RE = re.compile(
    r"\b([^\W\d_][\w-]{3,})(?:\s+(?:dose|dosage))?\s+(?:(?:was|is|has\s+been|had\s+been|were)\s+)?"
    r"(?:increased|reduced|raised|lowered|changed|cut)\s+(?:from\s+[^.;:]{1,40}?\s+)?to\s+"
    r"(\d[\d,]*(?:\.\d+)?)\s?(" + _DOSE_UNITS + r")\b", re.IGNORECASE)
#: Words before a change verb that name no drug ("dose increased to 12 units", "it has been reduced to 5 mg").
_NOT_A_DRUG = frozenset({"dose", "dosage", "been", "then", "also", "later", "further", "subsequently", "daily",
                         "twice", "once", "rate", "this", "that", "which", "were"})


#: A plan, not a change made, in the sentence of a dose change: "If her creatinine rises above 133 µmol/L, apixaban
#: is reduced to 2.5 mg", "… should be reduced to 2.5 mg if creatinine rises", "consider …".
_DOSE_PLAN_RE = re.compile(r"\b(?i:if|unless|provided\s+that|should|would|could|may|might|consider|plan(?:ned)?\s+to)\b")
#: A limit, not a dose given, in the clause that names a drug: "Maximum furosemide dose on this ward is 80 mg",
#: "never exceed paracetamol 4 g in 24 hours".
_DOSE_LIMIT_RE = re.compile(r"\b(?i:max(?:imum)?|(?:do|must|should|may)\s+not\s+exceed|never\s+exceed|not\s+to\s+exceed"
                            r"|no\s+more\s+than|up\s+to|at\s+most|limit)\b")
#: A patient's own block with no heading over it: "Bed 7: …", "Patient 2 — …", "Room 12".
_PATIENT_RE = re.compile(r"^\W*(?i:bed|bay|room|cubicle|patient|pt\.?)\s*\d+\b")


def _sentence_around(text: str, start: int, end: int) -> str:
    """The sentence of *text* that holds *text[start:end]* (a full stop before no digit ends one: "2.5 mg")."""
    ends = [m.end() for m in _SENTENCE_END_RE.finditer(text, 0, start)]
    m = _SENTENCE_END_RE.search(text, end)
    return text[ends[-1] if ends else 0:m.start() if m else len(text)]


_CLAUSE_END_RE = re.compile(r"[;:\n]|[.!?](?!\d)")


def _clause_to(text: str, end: int) -> str:
    """*text* up to *end* from the start of its clause there (after a ";", ":", line break or sentence end)."""
    starts = [m.end() for m in _CLAUSE_END_RE.finditer(text, 0, end)]
    return text[starts[-1] if starts else 0:end]


def _dose_changes(text: str) -> list[tuple[str, str, str]]:
    """The changes of a named drug's dose in *text* (:data:`_DOSE_CHANGE_RE`): (name casefolded, new value,
    unit); "Glargine increased to 14 units." -> [("glargine", "14", "units")]. Not one its sentence plans
    (:data:`_DOSE_PLAN_RE`): QA (s33 AA) "If her creatinine rises above 133 µmol/L, apixaban should be reduced to
    2.5 mg …; … so no change is needed" made the current "Apixaban 5 mg twice daily" stale."""
    return [(m.group(1).casefold(), m.group(2).replace(",", ""), _DOSE_UNIT[m.group(3).casefold()])
            for m in _DOSE_CHANGE_RE.finditer(text)
            if m.group(1).casefold() not in STOPWORDS and m.group(1).casefold() not in _NOT_A_DRUG
            and not _DOSE_PLAN_RE.search(_sentence_around(text, m.start(), m.end()))]


def _same_section(segments: Sequence[Segment], j: int, k: int) -> bool:
    """Whether *segments[j]* and *segments[k]* are of one section of one source: no heading between them, and
    none of those after *j* up to *k* opens a patient's block (:data:`_PATIENT_RE`, "Bed 7: …"). QA (s33 AA F3): in
    a ward handover, Bed 7's "Ramipril was increased to 10 mg" made Bed 3's "Takes ramipril 2.5 mg …" stale, and
    Bed 3's section was left out."""
    return (segments[j].source_id == segments[k].source_id
            and not any(seg.kind == "heading" or (seg.source_id == segments[k].source_id and _PATIENT_RE.match(seg.text))
                        for seg in segments[j + 1:k + 1]))


def _older_dose(text: str, changes: Sequence[tuple[str, str, str]]) -> bool:
    """Whether *text* gives a dose of a drug that one of *changes* (:func:`_dose_changes`) changes, in the same
    unit and another value, in the clause that names it: "… on glargine 10 units; dose increased to 12 units." for
    ("glargine", "14", "units"), not "Insulin glargine 14 units subcutaneously at night (NEW)." (the new dose)
    nor "Glargine pen needles, 100 per box." (no dose), nor a limit (:data:`_DOSE_LIMIT_RE`: "Maximum furosemide dose
    on this ward is 80 mg", "never exceed paracetamol 4 g in 24 hours", QA s33 AA F3)."""
    for name, value, unit in changes:
        if any(_DOSE_UNIT[m.group(2).casefold()] == unit and m.group(1).replace(",", "") != value
               and not _DOSE_LIMIT_RE.search(_clause_to(text, m.end()))
               for m in _doses_of(name).finditer(text)):
            return True
    return False


def _doses_of(name: str) -> re.Pattern[str]:
    """A dose of the drug *name* (casefolded): its value (group 1) and unit (group 2) after its name."""
    return re.compile(r"\b" + re.escape(name) + r"\b[^.;:!?\n\d]{0,30}(?<![\w.,])(\d[\d,]*(?:\.\d+)?)\s?("
                      + _DOSE_UNITS + r")\b", re.IGNORECASE)


def _limits_only(text: str, changes: Sequence[tuple[str, str, str]]) -> bool:
    """Whether every dose *text* gives of a drug one of *changes* (:func:`_dose_changes`) changes, in its unit, is a
    limit (:data:`_DOSE_LIMIT_RE`): "Never exceed paracetamol 4 g per day because of her low body weight." for
    ("paracetamol", "1", "g"). A change of the dose leaves the limit standing."""
    limits = [bool(_DOSE_LIMIT_RE.search(_clause_to(text, m.end())))
              for name, _, unit in changes for m in _doses_of(name).finditer(text)
              if _DOSE_UNIT[m.group(2).casefold()] == unit]
    return bool(limits) and all(limits)


def _patients(segments: Sequence[Segment]) -> list[str | None]:
    """For each segment, the patient whose block it is in (:data:`_PATIENT_RE`, "bed 3" for "Bed 3: …" and the
    segments after it), up to the next such block, another heading or the end of its source; else None."""
    out: list[str | None] = []
    current: str | None = None
    for k, seg in enumerate(segments):
        if k and segments[k - 1].source_id != seg.source_id:
            current = None
        m = _PATIENT_RE.match(seg.text)
        if m is not None:
            current = " ".join(m.group(0).strip(" \t#*_-:(").casefold().replace(".", "").split())
        elif seg.kind == "heading":
            current = None
        out.append(current)
    return out


def correction_links(segments: Sequence[Segment]) -> dict[str, list[str]]:
    """What each segment that corrects something (:data:`CORRECTION_RE`, :func:`_cues`; not a heading nor a piece of a
    diff, :func:`_in_diff`) corrects: the earlier segments, not corrections, headings or pieces of a diff themselves,
    nor code where the correction is code, that share with it a number or two words found in at most
    :data:`CORRECTION_RARE` segments of *segments* (the words of its cue, "previously", "reduced
    from", do not count); where it says what the value was ("(previously 8 hours)", "由每分钟 3,000 次变更为"),
    only those of them that hold it. One amendment bullet is not what the next one corrects ("Section 9.2(b) is
    changed … (previously three or more) … Minor editorial corrections" rose above the bullet changing
    exclusion criterion 7, the answer, on "changed" and "previously"), and words every clause holds
    name no clause. Returns {correction id: [ids of what it corrects]}, corrections in order.

    >>> from odcf.document import Segment
    >>> segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence") for i, t in enumerate(
    ...     ["A missed dose may be taken up to 8 hours after the usual dosing time.", "Lunch is served at noon.",
    ...      "Section 6.1 is clarified: a missed dose may be taken up to 6 hours (previously 8 hours)."])]
    >>> correction_links(segs)
    {'s2': ['s0']}
    """
    # a heading changes nothing: "## Addendum 1 (issued 20 March 2025)" titles the corrections under it,
    # and read as one it took the RFP's "Issued by … Issue date" block for stale; nor does a piece of a diff
    users = _user_turns(segments)
    cues = {k: _cues(seg.text, chat=seg.id in users) for k, seg in enumerate(segments)
            if seg.kind != "heading" and not _in_diff(seg)}
    fixes = [k for k, found in cues.items() if found]
    if not fixes:
        return {}
    figures = [_as_figures(seg.text) for seg in segments]
    keys = [_keys(t) for t in figures]
    units = [_units(t) for t in figures]
    currencies = [_currencies(t, u) for t, u in zip(figures, units)]
    changes = {k for k in fixes if any(m.re is _CHAT_CHANGE_RE for m in cues[k])}
    kinds = [_value_kinds(t) for t in figures] if changes else []
    for k in changes:  # a change's own: those of the value it gives, not of the rest of its sentence
        kinds[k] = set().union(*(_value_kinds(_as_figures(_SENTENCE_END_RE.split(segments[k].text[m.start():], 1)[0]))
                                 for m in cues[k] if m.re is _CHAT_CHANGE_RE))
    df = Counter(key for ws, ns in keys for key in ws | ns)
    fixing = set(fixes)
    # a Chinese amendment's replaced values and words, and each segment's article and values, read once (none in
    # most inputs: only for a correction that replaces a Chinese value or names an article)
    replaced = {k: _zh_replaced(segments[k].text) for k in fixes}
    zh = ((_articles(segments), [_zh_values(seg.text) for seg in segments], [_compact(seg.text) for seg in segments])
          if any(v or q for v, q in replaced.values()) or any(_ZH_ARTICLE_RE.search(segments[k].text) for k in fixes)
          else None)
    patients = (_patients(segments) if any(_PATIENT_RE.match(seg.text) for seg in segments)
                else [None] * len(segments))
    by_id = {seg.id: seg for seg in segments}
    out: dict[str, list[str]] = {}
    for k in fixes:
        cue = {w for m in cues[k] for w in words(m.group(0))}
        mine_words = {w for w in keys[k][0] - cue if df[w] <= CORRECTION_RARE}
        mine_numbers = {n for n in keys[k][1] if df[n] <= CORRECTION_RARE}
        olds = [_as_figures(v) for m in _OLD_VALUE_RE.finditer(segments[k].text) for v in m.groups() if v]
        old = set().union(*(_keys(v)[1] for v in olds))
        # the currencies of the values it says were there before: "(previously $40,000)" holds no "€40,000"
        old_cur: dict[str, set[str]] = {}
        for v in olds:
            for n, cur in _currencies(v, _units(v)).items():
                old_cur.setdefault(n, set()).update(cur)
        named = [p for p in (_subject(m.group(1)) for m in _CHANGED_SUBJECT_RE.finditer(segments[k].text)) if p]
        # code corrects no code before it (two parts of a program that hold one constant are no erratum)
        code = segments[k].kind == "code"
        window = [j for j in range(max(0, k - CORRECTION_WINDOW), k)
                  if j not in fixing and segments[j].kind != "heading" and not _in_diff(segments[j])
                  and not (code and segments[j].kind == "code")
                  # a correction in one patient's block corrects nothing in another's ("Bed 4: … Correction:
                  # paracetamol increased to 1 g …" had corrected Bed 3's paracetamol on the words they share)
                  and not (patients[j] and patients[k] and patients[j] != patients[k])]
        # where the correction says what the value was and a segment holds it, that is what it corrects
        found = [segments[j].id for j in window
                 if old and _same_value(old & keys[j][1], units[k], units[j], old_cur, currencies[j])]
        if not found and k in changes:
            found = _changed_value(segments, k, window, kinds, _things(cues[k]), _said_things(cues[k]))
        if not found:
            found = _zh_amended(segments, k, window, *zh, *replaced[k]) if zh else []
        if not found:
            # one that says what the value was corrects only a segment that holds it: the change-log row "| 3.2.1 |
            # 2024-05-20 | 限流阈值由每分钟 3,000 次变更为 6,000 次 |" is no correction of "3.2.1 查询接口的 P99 延迟
            # 不得超过 80 ms。", which shares with it only a section number
            said, quoted = replaced[k]
            if old or said or quoted:
                window = [j for j in window if zh and (said & zh[1][j] or any(q in zh[2][j] for q in quoted))]
            # the words of the subject a change names ("The proposal due date is extended to …") do not link a segment
            # that names it with no value after it: "… valid for 120 days after the proposal due date." had been
            # "corrected by" the extension on those words
            subject = {w for p in named for w in words(p, stop=True)}
            found = [segments[j].id for j in window
                     if _same_value(mine_numbers & keys[j][1], units[k], units[j], currencies[k], currencies[j])
                     or len(mine_words & (keys[j][0] - (subject if any(_names_only(p, segments[j].text) for p in named)
                                                        else set()))) >= 2
                     or any(_gives_value(p, segments[j].text) for p in named)]
        if not found and _FIX_LABEL_RE.match(segments[k].text) and k and _fixes_before(segments, k, keys, figures):
            # "Corrected: the deductible is EUR 2,500 …, so the reserve is EUR 49,800." after "Initially the reserve was
            # EUR 51,300 (EUR 52,300 minus EUR 1,000)." in its paragraph: it says no old value and shares with the
            # sentence it corrects one rare word; read alone, EUR 51,300 went out as the reserve (QA s34 A F2)
            found = [segments[k - 1].id]
        # a later dose of a named drug makes its earlier doses stale, a change of one too: "Glargine increased to 14
        # units." (Day 5) corrects "Blood glucose 9-14 mmol/L on glargine 10 units; dose increased to 12 units." (Day
        # 4), which shares with it no word or number rare enough to say so; delivered without it, 12 units read as
        # the current dose, the discharge list's 14 units left out (QA s33 T2)
        doses = _dose_changes(segments[k].text)
        if doses:
            # a limit of the drug ("never exceed paracetamol 4 g per day") stands whatever its dose is changed to:
            # it had been "corrected by" "Paracetamol increased to 1 g …" on the words they share
            found = [sid for sid in found if not _limits_only(by_id[sid].text, doses)]
            stale = {segments[j].id for j in range(max(0, k - CORRECTION_WINDOW), k)
                     if segments[j].kind != "heading" and not _in_diff(segments[j])
                     and _same_section(segments, j, k) and _older_dose(segments[j].text, doses)}
            if stale - set(found):
                found = [seg.id for seg in segments[:k] if seg.id in stale or seg.id in found]
        if found:
            out[segments[k].id] = found
    return out


#: A correction written as a label opening its sentence, maybe after a date: "Corrected: the deductible is EUR 2,500 …",
#: "2024-04-02 — Correction: …", "**Erratum:** …".
_FIX_LABEL_RE = re.compile(r"[\W\d_]*(?i:corrected|correction|erratum)(?:\*\*|__)?[ \t]*:")


def _fixes_before(segments: Sequence[Segment], k: int, keys: Sequence[tuple[set[str], set[str]]],
                  figures: Sequence[str]) -> bool:
    """Whether *segments[k]*, a correction written as a label (:data:`_FIX_LABEL_RE`) that links nothing by the other
    rules, corrects the sentence right before it: both sentences of one paragraph, and both giving a value of one
    kind (:func:`_value_kinds`: a sum in one currency, a unit), "Corrected: … the reserve is EUR 49,800." after
    "Initially the reserve was EUR 51,300 …". Not a sentence that gives no value: a label corrects what the
    paragraph just said, and a value is what goes stale."""
    seg, prev = segments[k], segments[k - 1]
    return (seg.kind == prev.kind == "sentence" and seg.source_id == prev.source_id and seg.paragraph == prev.paragraph
            and not _in_diff(prev) and not _cues(prev.text) and bool(keys[k][1]) and bool(keys[k - 1][1])
            and bool(_value_kinds(figures[k]) & _value_kinds(figures[k - 1])))


def _articles(segments: Sequence[Segment]) -> list[tuple[int | None, int]]:
    """For each segment, the number of the Chinese article (第N条) it is in, the last one a
    paragraph of its source opened with, and of its 款 in that article: the article's first line
    is its 第一款, and each later line opens the next, but for a list item ("（一）…", a 项 of the 款)."""
    out: list[tuple[int | None, int]] = []
    current: int | None = None
    part = 1
    for k, seg in enumerate(segments):
        if k and segments[k - 1].source_id != seg.source_id:
            current = None
        m = _ZH_ARTICLE_RE.match(seg.text.lstrip())
        if m and m.group(2) == "条" and (k == 0 or segments[k - 1].paragraph != seg.paragraph):
            current, part = _zh_number(m.group(1)), 1
        elif "\n" in seg.sep and seg.kind != "heading" and not ZH_ITEM_RE.match(seg.text):
            part += 1
        out.append((current, part))
    return out


def _compact(text: str) -> str:
    """*text* without white space: Chinese words, as an amendment quotes them, whatever the spacing or
    line breaks of the source ("每年 3 月 31 日前")."""
    return re.sub(r"\s+", "", text)


def _zh_values(text: str) -> set[tuple[str, str | None]]:
    """The numbers of Chinese text with their units: "人民币100万元" -> ("100", "万元")."""
    return {(m.group(1).rstrip(".,"), m.group(2)) for m in _ZH_VALUE_RE.finditer(text)}


def _zh_replaced(text: str) -> tuple[set[tuple[str, str | None]], set[str]]:
    """The values a Chinese change says it replaces ("人民币100万元修改为", "由每分钟 3,000 次变更为") and the
    words it quotes as replaced ('中的"每年3月31日前"修改为'), white space taken out."""
    old = {(m.group(1).rstrip(".,"), m.group(2)) for m in _ZH_OLD_VALUE_RE.finditer(text)}
    old |= {v for m in _ZH_FROM_RE.finditer(text) for v in _zh_values(m.group(1))}
    return old, {_compact(next(g for g in m.groups() if g)) for rx in (_ZH_QUOTED_OLD_RE, _ZH_QUOTED_GONE_RE)
                 for m in rx.finditer(text)}


def _zh_amended(segments: Sequence[Segment], k: int, window: Sequence[int],
                articles: Sequence[tuple[int | None, int]], values: Sequence[set[tuple[str, str | None]]],
                compact: Sequence[str], old: set[tuple[str, str | None]], quoted: set[str]) -> list[str]:
    """What a Chinese amendment (segment *k*) changes: the segments of the article it names that hold
    the value it replaces ("本办法第十二条第一款规定的人民币100万元修改为人民币80万元" -> the 100万元 of
    第十二条) or the words it quotes ('将第七条第二款中的"每年3月31日前"修改为…' -> the sentence of 第七条
    saying "每年3月31日前"), in the 款 it names if one there does; *old* and *quoted* are what it replaces
    (:func:`_zh_replaced`); without a value replaced, the 款 or article it names, whole ("第七条第二款修改为：…").
    Without an article named, the segments that hold the words it quotes ('将本办法中的"每年3月31日前"修改为…',
    every one: "本办法中的" changes them all), when those are of :data:`_ZH_QUOTED_MIN` characters or more and
    in at most :data:`CORRECTION_RARE` segments; else nothing: a shared "30日" or "100万元" with "不再" or
    "修改为" in between says nothing of which sentence it changes."""
    text = segments[k].text
    own = _ZH_ARTICLE_RE.match(text.lstrip())
    refs = list(_ZH_ARTICLE_RE.finditer(text))
    named: set[tuple[int, int | None]] = set()  # (条, 款 or None)
    for ref, after in zip(refs, [*refs[1:], None]):
        n = _zh_number(ref.group(1))
        # "第三十六条 本办法第十二条……": its own number is no reference
        if ref.group(2) != "条" or n is None or (own is not None and n == _zh_number(own.group(1))):
            continue
        part = (_zh_number(after.group(1)) if after is not None and after.group(2) == "款"
                and not text[ref.end():after.start()].strip() else None)
        named.add((n, part))
    if not named:
        holders = [j for j, c in enumerate(compact) if j != k and any(q in c for q in quoted if len(q) >= _ZH_QUOTED_MIN)]
        return [segments[j].id for j in window if j in holders] if len(holders) <= CORRECTION_RARE else []
    # without a value replaced, "第七条第二款修改为：……" rewrites the 款 (or the article) it names whole: that is
    # what it changes, and an article that only cites it is none of it (shared words had linked 第十五条)
    whole = not (old or quoted)
    held = [j for j in window if articles[j][0] in {n for n, _ in named}
            and (whole or old & values[j] or any(q in compact[j] for q in quoted))]
    # the 款 named ("第五条第二款") picks among them; where none of it holds the value, the article's
    # do (a hard-wrapped line counts as a 款 of its own); an article that cites "第五条第二款" is no part of 第五条
    in_part = [j for j in held if any(n == articles[j][0] and p in (None, articles[j][1]) for n, p in named)]
    return [segments[j].id for j in in_part or held]


def _subject(words_before: str) -> str | None:
    """The subject a change names, from the words right before its verb (:data:`_CHANGED_SUBJECT_RE`):
    its words after a leading article or demonstrative, if two words of three letters or more remain
    ("proposal due date"; not "mg daily")."""
    ws = words_before.split()
    while ws and ws[0].casefold() in ("the", "a", "an", "this", "that", "these", "those", "its", "our", "your"):
        ws = ws[1:]
    return " ".join(ws).casefold() if sum(len(w) >= 3 for w in ws) >= 2 else None


def _names_only(phrase: str, text: str) -> bool:
    """Whether *text* names *phrase* (casefolded words) with no number after it in its sentence, as "… valid for
    120 days after the proposal due date." does (not "The contract runs to December 2026")."""
    folded = text.casefold()
    return any(not re.match(r"[^.;!?\n]{0,40}?\d", folded[m.end():])
               for m in re.finditer(phrase_regex(phrase), folded))


def _gives_value(phrase: str, text: str) -> bool:
    """Whether *text* gives a value for *phrase* (casefolded words): the phrase, then a number right
    after it or after a colon, a table's bar or "is" ("Proposal due date: 14 March 2025", "| Proposal
    due date | 14 March 2025 |"); a sentence that only names it ("… received by the proposal due date")
    gives none."""
    return re.search(phrase_regex(phrase) + r"[\s:|*]*(?:(?:is|was|are|were|of|on|at|by)\s+)?[€$£¥]?\d",
                     text.casefold()) is not None


def lift_corrections(segments: Sequence[Segment], scores: dict[str, float],
                     links: dict[str, list[str]] | None = None) -> tuple[dict[str, float], int]:
    """*scores* with each segment that corrects something said before it raised just above the best
    score of what it corrects (*links*, by default :func:`correction_links` of *segments*). Else the
    stale value ("3 lunches x 34 x €24 … total €4,420") ranks above its correction ("correction:
    it's 36 people, not 34") and is delivered as if current. Returns the scores and how many were raised.

    >>> from odcf.document import Segment
    >>> segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence") for i, t in enumerate(
    ...     ["The submission deadline is 8 August 2025.", "Lunch is served at noon.",
    ...      "Addendum 2: the submission deadline is extended to 15 August 2025."])]
    >>> lift_corrections(segs, {"s0": 0.9, "s1": 0.5, "s2": 0.3})
    ({'s0': 0.9, 's1': 0.5, 's2': 0.900001}, 1)
    """
    out = dict(scores)
    raised = 0
    for fix, stale in (correction_links(segments) if links is None else links).items():
        if fix not in out:
            continue
        best = max((out[s] for s in stale if s in out), default=out[fix])
        if best > out[fix]:
            out[fix] = round(best + 1e-6, 6)  # just above: at a tight budget the newer value goes first
            raised += 1
    return out, raised


def lift_answers(segments: Sequence[Segment], scores: dict[str, float],
                 pairs: Sequence[QAPair] | None = None) -> tuple[dict[str, float], int]:
    """*scores* with the segment that opens each answer of a question-and-answer log (*pairs*, by default
    :func:`~odcf.stages.segment.qa.qa_pairs` of *segments*) raised to the best score of its question's
    segments. A question repeats the query's words ("Please confirm the minimum technical score.", 0.92)
    and its answer need not ("**A19.** The technical score threshold is 65 out of 100 points.", 0.77);
    the budget delivers a question only with its answer, and the answer may go alone. Returns the
    scores and how many were raised.

    >>> texts = ["**Q1.** What is the minimum technical score?", "**A1.** It is 65 points."]
    >>> segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, paragraph=i) for i, t in enumerate(texts)]
    >>> lift_answers(segs, {"s0": 0.9, "s1": 0.4})
    ({'s0': 0.9, 's1': 0.9}, 1)
    """
    out = dict(scores)
    raised = 0
    for pair in qa_pairs(segments) if pairs is None else pairs:
        opening = pair.answer[0]
        best = max((out[s] for s in pair.question if s in out), default=None)
        if opening in out and best is not None and best > out[opening]:
            out[opening] = best
            raised += 1
    return out, raised


#: A sentence in which the person writing sets a condition on how they are to be treated: "please do
#: not call me", "email only", "never before 9 am", "I do not want a refund", "I'd prefer a
#: replacement", "I am allergic to penicillin", "please email rather than phone" (not "customers now
#: email rather than phone"); "请勿致电给我", "只接受邮件", "我不要退款". Whatever the question, an agent
#: acting on the text must respect it, so it ranks near the top of its source (it had ranked below a
#: serial number for "how should we contact the customer?"). The writer's own person only ("me", "my",
#: "I"): "do not" alone is everywhere (a manual's "Do not expose the drill to rain", a
#: tender's "请勿在工作时间以外致电", a meeting's "We don't want to rush the migration", "We require the
#: contractor to …"), and raised, they took the room of the answers.
USER_CONSTRAINT_RE = re.compile(
    r"(?i:\b(?:please\s+)?(?:do\s+not|don['’]t)\s+(?!get\b|let\b)(?:\w+\s+){0,2}?(?:me|us)\b(?!\s+(?:wrong|know|tell))"
    r"|\bplease\s+never\b|\bplease\s+(?:do\s+not|don['’]t)\s+(?!forget\b|hesitate\b|worry\b)\w+\s+(?:my|our|her|his|their)\b"
    r"|\b(?:e-?mail|phone|text|sms|post|mail|chat|letters?|writing)\s+only\b"
    r"|\bonly\s+(?:by|via|through|in)\s+(?:e-?mail|phone|text|sms|post|mail|chat|letter|writing)\b"
    r"|\bplease\s+(?:\w+\s+)?(?:e-?mail|write|text|call|phone|ring)\s+(?:(?:to\s+)?(?:me|us)\s+)?rather\s+than\s+"
    r"(?:e-?mail|writ|text|call|phon|ring)\w*"
    r"|\b(?:never|not|nothing)\s+(?:be\s+)?(?:before|after)\s+\d{1,2}(?:[:.]\d\d)?\s*(?:[ap]\.?m\b|h\b|o['’]clock)"
    r"|\bno\s+(?:(?:phone|more)\s+)?(?:calls?|visits?|deliver(?:y|ies)|contact|messages?|texts?|e-?mails?|appointments?)"
    r"\s+(?:before|after|until)\s+\d{1,2}(?:[:.]\d\d)?\s*(?:[ap]\.?m\b|h\b|o['’]clock)"
    r"|\bI\s+(?:do\s+not|don['’]t|will\s+not|won['’]t|cannot|can['’]t|did\s+not|didn['’]t)\s+(?:want|accept|agree\s+to|consent)"
    r"\s+(?:a|an|any|the|my|this|that|it|them|to\s+be)\b"
    r"|\b(?:my|me)\b[^.;!?]*,\s*(?:never|not)\s+(?:to|on|at|in|by|a|an|the|my|(?:tele)?phone|calls?|e-?mail|texts?|sms|post|mail"
    r"|letters?|chat)\b"
    r"|\bI\s+(?:want|need|expect)\b[^.;!?]*?,\s*not\b|\bI\s+(?:expect|ask|insist)\b[^.;!?]{0,20}\bnot\s+to\b"
    r"|\bI\s+(?:cannot|can['’]t|am\s+unable\s+to)\b[^.;!?]{0,30}\b(?:before|after|until)\s+\d"
    r"|\bI(?:\s+(?:would|['’]d)\s+(?:rather|prefer)|\s+prefer|\s+insist\s+on)\s+(?!to\b)(?:a|an|the|my|it|that|this|email|e-mail|phone)\b"
    r"|\b(?:I\s+am|I['’]m|I\s+have|I\s+had|we\s+are|we['’]re)\s+(?:\w+\s+)?(?:allergic|an?\s+allergy|intolerant|pregnant|diabetic"
    r"|(?:vegetarian|vegan|pescatarian|coeliac|celiac|lactose[- ]intolerant|gluten[- ]free)(?![\w-])))"
    r"|请(?:不要|勿|别)[^。；！？]{0,8}(?:我|本人)|(?:只|仅)(?:接受|通过(?:电子)?(?:邮件|短信|微信|电话|书面))|我(?:不(?:要|想|需要|接受)|对\S{1,8}过敏)"
    r"|(?:不要|别|勿)再?(?:(?:给|向|跟|和)我(?:打|发|寄|致电|联系)|(?:打|找|联系|打扰)我)")
#: What a user says to an agent that sets a condition on what the agent does for them, said without "me" or
#: "I do not want": "Please also avoid anything before 10am", "the hotel must have air conditioning", "step-free
#: access is essential", "no hostels", "under €2,000 total", "we can't walk far", "we'd prefer a quiet street",
#: "direct flights only", "my partner uses a wheelchair", "I need it before March 20", "please deliver it after
#: 17:00 on a weekday" (QA s33 AA F4: not raised, it was dropped at every budget), "an upgrade to 2.4 is not
#: allowed", "restarting pdb-01 is not an option"; in Chinese "请勿直接给客户发邮件", "所有沟通必须通过王丽",
#: "总预算不超过人民币30万元", "不得…", "禁止…". Only in a user's turn of a conversation with an agent
#: (:func:`_user_turns`) or a customer's message of a ticket thread (:func:`_thread_senders`), and not in a
#: question: a meeting's "We must finish by Friday", a manual's "avoid direct sunlight" and the user's "Must we pay
#: a deposit?" or "要不要提前付款？" set none, nor does a report of what was not done, "No change was made to
#: pdb-01." (QA s33 T4: a customer's "No errors since." beside "we must stay on v2.3" is the constraint's, not
#: one of its own), nor "Builds 2.3.4 and earlier are not affected.", nor what they have not, "I do not have the
#: original receipt any more" (QA s33 AA F4: raised as the customer's constraint, it took the agent's RMA number's
#: room), nor a rule they quote (:func:`_quoted`).
CHAT_CONSTRAINT_RE = re.compile(
    r"(?i:\bavoid\b|\bmust\b|\bmustn['’]t\b"
    r"|\b(?:has|have|need|needs)\s+to\s+(?:be|have|stay|fit|include|arrive|leave|end|start|finish)\b"
    r"|\b(?:is|are)\s+(?:essential|required|mandatory|a\s+must|non-negotiable|a\s+requirement)\b"
    r"|\b(?:is|are)\s+not\s+(?:allowed|permitted|acceptable|an\s+option)\b"
    r"|\bno\s+(?!(?:problems?|worries|worry|thanks|idea|rush|hurry|doubt|need|way|matter|one|longer|pressure|wonder"
    r"|preferences?|particular|clue|reason)\b)[^\W\d_]{3,}\b(?!\s+(?:was|were|has|have|had|since|yet)\b)"
    r"|\b(?:no\s+more\s+than|at\s+most|at\s+the\s+latest|max(?:imum)?|under|below|less\s+than)\s+(?:[€$£¥]|(?-i:"
    + _CURRENCY_CODES + r")\s?)?\d"
    r"|\b(?:I|we)\s+(?:cannot|can['’]t|can\s+not|won['’]t|will\s+not|do\s+not|don['’]t|never)\s+(?!(?:know|think"
    r"|remember|believe|see|understand|mind|care|worry|get|recall|need|have)\b)\w+"
    r"|\b(?:I|we)(?:\s+would|['’]d)?\s+(?:prefer|rather)\b|\bplease\s+(?:also\s+)?(?:do\s+not|don['’]t|never|no)\b"
    r"|\b(?:need|needs|want|wants)\s+(?:it|this|that|them|(?:the|my|our)\s+[^\W\d_]+)\s+(?:by|before|no\s+later\s+than)\s"
    r"|\bplease\s+(?:[^\W\d_]+\s+){1,3}(?:after|before|by|no\s+later\s+than)\s+(?=\d)"
    r"|\b[^\W\d_]{3,}\s+only\b(?=\s*(?:[.,;!]|please\b|$))|\bwheelchair|\bstep-free\b"
    r"|\bmobility\s+(?:issues?|problems?|aids?|scooter|impair\w*))"
    r"|请(?:勿|不要|别)|(?<![要能可])不要(?![紧脸])|不得|禁止|严禁|切勿|务必|必须|不(?:能|可以?|得|要)?超过"
    r"|不(?:能|可以?|得)(?:早于|晚于|高于|低于)")
#: A day of the week, and a date or a time a request sets for something: "12 June", "June 12", "2024-06-12", "12/06",
#: "11:00", "6pm", "Friday" (not a year alone, "by 2025", a plan's target).
_WEEKDAYS = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"
_WHEN = (rf"(?:the\s+)?(?i:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\b|(?:{_MONTHS})\s+\d{{1,2}}\b"
         rf"|\d{{4}}-\d\d-\d\d\b|\d{{1,2}}[./]\d{{1,2}}\b|\d{{1,2}}:\d\d\b|\d{{1,2}}\s?[ap]\.?m\b|{_WEEKDAYS}\b)")
#: What the person writing asks of whoever reads them, in their own person or with "please", wherever they write it (a
#: claim's email, "From: Grace Okafor", is no customer's message by its header, :func:`_thread_senders`): a deadline,
#: "I need the car back before 12 June", "we really need a working kitchen by 20 April"; a prohibition, "please do not
#: arrange any site visits before 11:00", "please make sure the repairer does not replace the headlamp …", "we do not
#: want the contractors to use the side gate"; a limit, "I can bring them to your Berlin office on a Friday afternoon
#: only", "I can only come on Fridays" (QA s34 A F1: none was raised, and all were dropped at half the budget while a
#: "From:" line went out). The group that matched names which (:func:`constraint_reasons`). Not in a question, nor
#: in a rule the writer quotes; not another's ("he needed the car by 12 June", "Customers must not call before 11:00"),
#: a contract's "The Supplier shall not …", a task of the writer's own ("We need to discuss the budget", "I need the
#: figures before the meeting"), a plan's "we need a 20% margin by 2025", "I don't want to rush the migration",
#: "Please don't forget to send it before 5 May", "Please make sure you do not miss the deadline", nor a notice, "The
#: support line is open on weekdays only".
WRITER_REQUEST_RE = re.compile(
    r"(?P<deadline>\b(?:I|[Ww]e)\s+(?:(?:really|urgently|absolutely|definitely|still|also|just)\s+)?"
    r"(?:need|must\s+have)\s+(?:a|an|the|my|our|it|this|them|these|those)\b[^.;!?]{0,40}?\s"
    r"(?:before|by|no\s+later\s+than)\s+" + _WHEN + ")"
    r"|(?P<prohibition>\b(?i:please)\s+(?:(?:also|just)\s+)?(?:(?:do\s+not|don['’]t|never)\s+"
    r"(?!(?i:forget|hesitate|worry)\b)\w+[^.;!?]{0,40}?\b(?:before|after|until|earlier\s+than|later\s+than)\s+" + _WHEN
    + r"|(?:make\s+sure|ensure)\s+(?:that\s+)?(?:the|any|nobody|no\s+one)\b[^.;!?]{0,40}?\b(?:does\s+not|do\s+not"
    r"|doesn['’]t|don['’]t|will\s+not|won['’]t|never)\s+\w+)"
    r"|\b(?:I|[Ww]e)\s+(?:(?:really|also|definitely|certainly)\s+)?(?:do\s+not|don['’]t)\s+want\s+(?:the|any|our|my"
    r"|anyone|anybody|someone|somebody)\b[^.;!?]{0,30}?\bto\s+\w+)"
    r"|(?P<limit>\b(?:I|[Ww]e)\s+(?:can|could|will|am|are|['’]m|['’]re)\b[^.;!?]{0,60}?\b(?:(?:on|in\s+the)\s+)?"
    r"(?:(?:a|an)\s+)?(?i:" + _WEEKDAYS + r"|weekdays?|weekends?|mornings?|afternoons?|evenings?)"
    r"(?:\s+(?i:mornings?|afternoons?|evenings?|nights?))?\s+only\b"
    r"|\b(?:I|[Ww]e)\s+(?:can|could|am|are|['’]m|['’]re|will\s+be)\s+(?:\w+\s+)?only\s+(?:\w+\s+){0,4}?"
    r"(?:on|in\s+the|after|before|between|from)\s+(?:(?:a|an)\s+)?"
    r"(?:(?i:weekdays?|weekends?|mornings?|afternoons?|evenings?)\b|"
    + _WHEN + "))")
#: A transcript speaker who is not the user: a system prompt's or an agent's "Do not …" is policy, not a
#: constraint the person set (raising an airline policy's prohibitions took the room of booking codes).
_NOT_USER_RE = re.compile(r"^\W*(?:system|assistant|agent|tool|bot|function|developer|ai|support|operator|rep"
                          r"|representative|csr|help\s*desk|service\s+desk|customer\s+(?:service|support|care))\b",
                          re.IGNORECASE)


#: The roles of an agent's speaker label (:data:`_AGENT_SPEAKER_RE`).
_AGENT_ROLES = (r"system|(?:ai\s+|support\s+|service\s+)?(?:assistant|agent)|tool|(?:chat)?bot|ai|model|function"
                r"|developer|support|(?:support\s+|service\s+|sales\s+)?rep(?:resentative)?|csr|help\s*desk|service\s+desk"
                r"|customer\s+(?:service|support|care)")
#: A speaker that makes a transcript a conversation with an agent (an AI assistant, an agent, a tool, a system
#: prompt, a support desk): the whole label is the role ("assistant:", "AI:", "Bot:", "Assistant (gpt-4o):",
#: "[system]", "[assistant -> get_order]", "[tool get_order]", "Support:", "Rep (Dana):"). Not an earnings call's
#: "Operator:", a webinar's "Host:" or a person named "Ai Tanaka": read as a chat, the CFO's "Make it $110 million
#: for the year" had corrected the quarter's free cash flow and an analyst's "You must be near capacity there."
#: was raised as a user's constraint.
_AGENT_SPEAKER_RE = re.compile(rf"^(?:\[\s*(?:{_AGENT_ROLES})\b[^\]]*\]|(?:{_AGENT_ROLES})(?:\s*\([^()]*\))?:)$",
                               re.IGNORECASE)
#: A speaker whose label is the role of the one served, whoever answers: "Customer:", "Client:", "Caller:",
#: "User:", "Patient:", "Guest:", "[customer]", "Customer (Maria):". What they say is said by the user.
_CLIENT_SPEAKER_RE = re.compile(r"^(?:\[\s*(?:customer|client|caller|user|patient|guest)\b[^\]]*\]"
                                r"|(?:customer|client|caller|user|patient|guest)(?:\s*\([^()]*\))?:)$", re.IGNORECASE)


def _user_turns(segments: Sequence[Segment]) -> set[str]:
    """The ids of the segments said by a user in a conversation with an agent: in a source where a system, an
    assistant, a tool or a support desk speaks (:data:`_AGENT_SPEAKER_RE`), those of every speaker but them
    (:data:`_NOT_USER_RE`); anywhere, those of a speaker labelled as the one served (:data:`_CLIENT_SPEAKER_RE`,
    "Customer:"). A meeting's or an earnings call's speakers are none of them: "We must finish by Friday" there is
    no user's condition, nor is an operator an agent."""
    agents = {seg.source_id for seg in segments
              if seg.meta.get("speaker") and _AGENT_SPEAKER_RE.match(str(seg.meta["speaker"]).strip())}
    return {seg.id for seg in segments if seg.meta.get("speaker")
            and (seg.source_id in agents and not _NOT_USER_RE.match(str(seg.meta["speaker"]))
                 or _CLIENT_SPEAKER_RE.match(str(seg.meta["speaker"]).strip()))}


#: The line opening a message of a mail thread or a ticket's log, naming its sender: "From: …", or a title, a dash
#: and a name with its role in brackets, "Message 3 — Jana Novak (customer) — 2024-03-11 18:40 UTC", "Internal
#: note — Mei Tanaka (engineering) — …". A customer's (:data:`_CUSTOMER_SENDER_RE`) opens the customer's part,
#: another's ends it.
_MESSAGE_HEADER_RE = re.compile(r"^\W*(?:(?i:from):|[^\W\d][\w.#' ]{0,40}?\s+(?:[—–]|-{1,2})\s+[^()—–\n]{1,60}\([^()\n]{1,40}\))")
#: The roles a ticket's message header names its sender by, the one served's or the other side's.
_SENDER_ROLES = (r"customer|client|caller|patient|guest|requester|requestor|agent|support|engineer(?:ing)?|admin"
                 r"|administrator|staff|operator|technician|rep(?:resentative)?|manager|supervisor|billing|sales")
#: A message header that names its sender by role alone, right after the dash, with no name in brackets after it or
#: with the name in them: "**Message 3 — Customer, 2024-11-04 07:41 UTC**", "Message 1 — Customer (Ingrid Solberg,
#: DBA), 2024-11-04", "Message 4 — Support, …" (QA s33 T4: a ticket written so had no customer's part, and the
#: customer's "do not restart the primary … during business hours" was dropped for filler). Not "Step 2 — Install".
_ROLE_HEADER_RE = re.compile(rf"^\W*[^\W\d][\w.#' ]{{0,40}}?\s+(?:[—–]|-{{1,2}})\s+(?i:{_SENDER_ROLES})\b"
                             r"(?:\s*\([^()\n]{1,40}\))?\s*(?:[,—–|:*]|-{1,2}|$)")
#: The sender of such a message named as the one served: "Message 1 — Jana Novak (customer) — 2024-03-11",
#: "From: Jana Novak (client)", "From: Customer <jana@…>", "Message 1 — Customer (Ingrid Solberg, DBA), …",
#: "Message 3 — Customer, 2024-11-04" (not "Customer Support", "customer service", "(not visible to customer)").
_CUSTOMER_SENDER_RE = re.compile(
    r"(?:\(\s*|\b(?:from:\s*)|^\W*[^\W\d][\w.#' ]{0,40}?\s+(?:[—–]|-{1,2})\s+)"
    r"(?:customer|client|caller|patient|guest|requester)\b(?!\s+(?:service|support|care|success))",
    re.IGNORECASE)
#: A prohibition opening a user's or customer's sentence, list item or clause (after a label, a colon or a
#: semicolon): "Do NOT roll back to 5.1 — …", "Never call after 8 pm.", "user: Never email the client directly; …",
#: "Important constraints: do not restart the primary under any circumstances during business hours" (QA s33 U F2
#: and T4: opening after a speaker's label or a lead-in, neither was raised and both were dropped while the agent's
#: acknowledgement went out). Not "Don't worry", "Never mind", nor a "not" inside a statement ("Builds 2.3.4 and
#: earlier are not affected.").
_PROHIBITION_RE = re.compile(r"(?:^[\W\d]*|[.!?:;]\s+)(?i:please\s+)?(?i:do\s+not|don['’]t|never)\s+"
                             r"(?!(?i:worry|hesitate|mind|know)\b)\w+")


#: What introduces a rule someone else set, which a user or customer quotes: "Your returns page says: Do not send
#: items back without an RMA number.", "the manual states that …", "according to your policy, …" (QA s33 AA F4: a
#: customer quoting the shop's returns policy had it raised as her own constraints, which crowded out the agent's
#: RMA number and pick-up slot). Not the user's own "As I said, never call me" ("I said", "we said").
_QUOTING_RE = re.compile(
    r"(?i:(?<!\bI\s)(?<!\bwe\s)\b(?:says?|said|states?|stated|reads|writes|wrote|warns?|warned)\b\s*[:,]?"
    r"|\baccording\s+to\b[^,;:.]*[,:]?)\s*[\"“‘']?[^,;:\"“”]*$")


def _quoted(sentence: str, start: int) -> bool:
    """Whether the words at *start* of *sentence* are someone else's rule the writer quotes: after a reporting
    verb or "according to" in the same clause (:data:`_QUOTING_RE`), or inside an opened quotation mark."""
    before = sentence[:start]
    return bool(_QUOTING_RE.search(before)) or before.count('"') % 2 == 1 or before.count("“") > before.count("”")


def _thread_senders(segments: Sequence[Segment]) -> tuple[set[str], set[str]]:
    """The ids of the segments of a mail thread or ticket log written by the customer, and of those written by
    the others in a thread where the customer writes too: a message header naming its sender as the one served
    (:data:`_CUSTOMER_SENDER_RE`, "Message 1 — Jana Novak (customer) — …", "Message 3 — Customer, 2024-11-04 07:41
    UTC") opens the customer's part, another (:data:`_MESSAGE_HEADER_RE`, :data:`_ROLE_HEADER_RE`: "Message 2 —
    Support (Tomasz Wrona, L1), …", "Internal note — …") an other's, up to the next header. A thread whose messages
    are not labelled so has neither: "From: Jana Novak" alone says nothing of who is served."""
    customer_ids: set[str] = set()
    other_ids: dict[str, set[str]] = {}
    served: set[str] = set()  # the sources with a customer's message
    source, customer, other = None, False, False
    for seg in segments:
        if seg.source_id != source:
            source, customer, other = seg.source_id, False, False
        headers = [line for line in seg.original.splitlines()
                   if _MESSAGE_HEADER_RE.match(line) or _ROLE_HEADER_RE.match(line)]
        for line in headers:
            customer = bool(_CUSTOMER_SENDER_RE.search(line))
            other = not customer
            if customer:
                served.add(seg.source_id)
        if customer and not headers:
            customer_ids.add(seg.id)
        elif other and not headers:
            other_ids.setdefault(seg.source_id, set()).add(seg.id)
    return customer_ids, {sid for src in sorted(served & other_ids.keys()) for sid in other_ids[src]}


#: A sentence of nothing but courtesy: "I'm sorry to hear that.", "Thanks.", "Noted.", "Understood.", "Happy to
#: help!", "Have a nice day." Said by an agent, it tells the reader nothing a user's constraint has to make room for.
_COURTESY_RE = re.compile(
    r"(?:\s*(?i:(?:(?:I|we)(?:['’]m|['’]re|\s+am|\s+are)\s+)?(?:(?:so|very|really|truly)\s+)?sorry"
    r"(?:\s+(?:to\s+hear\s+(?:that|this|about\s+(?:that|this|it))|about\s+(?:that|this|the\s+(?:trouble|inconvenience|delay|wait))"
    r"|for\s+the\s+(?:trouble|inconvenience|delay|wait)))?"
    r"|(?:many\s+)?thanks?(?:\s+you)?(?:\s+(?:so|very)\s+much)?(?:\s+for\s+(?:your\s+)?(?:patience|waiting|reaching\s+out"
    r"|contacting\s+us|letting\s+(?:me|us)\s+know|the\s+information))?"
    r"|noted|understood|got\s+it|great|perfect|sure|of\s+course|certainly|absolutely|no\s+problem|you['’]re\s+welcome"
    r"|(?:I['’]m\s+|I\s+am\s+)?(?:happy|glad)\s+to\s+help|ok(?:ay)?|alright|all\s+right|hello|hi|hey"
    r"|good\s+(?:morning|afternoon|evening)|have\s+a\s+(?:great|good|nice|lovely)\s+day)[\s,]*[.!]*)+\s*")


def _courtesy(segments: Sequence[Segment], users: set[str]) -> set[str]:
    """The ids of the sentences said by the other side of a conversation with a user (*users*, its user's
    turns: :func:`_user_turns`) that hold nothing but courtesy (:data:`_COURTESY_RE`, the speaker's label
    aside): "Agent: I'm sorry to hear that."."""
    served = {seg.source_id for seg in segments if seg.id in users}
    out = set()
    for seg in segments:
        speaker = str(seg.meta.get("speaker") or "")
        if seg.source_id in served and speaker and seg.id not in users:
            text = seg.text.strip().removeprefix(speaker.strip())
            if text.strip() and _COURTESY_RE.fullmatch(text):
                out.add(seg.id)
    return out


#: A user constraint ranks right after this many of the best other segments of its source: the
#: question's clear answers keep their place, and the constraint comes before the rest. (Raised to the
#: best score, two constraints and the sentences they go with took the room of the delivery address asked
#: for; raised halfway, "email only" still ranked below a serial number for "how should we contact the
#: customer?".)
CONSTRAINT_AFTER = 2


#: A name in a sentence: a capitalised word after a lower-case one or a comma ("a trip to Lisbon", "Hi, Anna").
_NAME_RE = re.compile(r"(?<=[a-z,] )[A-Z][a-z]{2,}")


def _says_more(stale: str, change: str) -> bool:
    """Whether *stale*, which *change* corrects, says more than the value changed: a value of a kind the change
    gives none of (:func:`_value_kinds`: "2 people" beside "14 June" for "make it 15 June"), or a name it does not
    hold ("Lisbon"); "Budget is €3,500 total" says nothing "make it under €2,000 total" does not replace."""
    return bool(_value_kinds(_as_figures(stale)) - _value_kinds(_as_figures(change))
                or set(_NAME_RE.findall(stale)) - set(_NAME_RE.findall(change)))


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith(("?", "\uff1f"))


def _constraint_match(sentence: str, *, to_agent: bool, quoting: bool = False,
                      requests: bool = True) -> tuple[str, re.Match[str]] | None:
    """(what kind of constraint, the words that make it one) if *sentence* states a constraint of its writer
    (:func:`states_user_constraint`), else None. The kind is "condition" (on how its writer is treated,
    :data:`USER_CONSTRAINT_RE`), "deadline", "prohibition" or "limit" (what its writer asks,
    :data:`WRITER_REQUEST_RE`, unless its writer is not the one served where that one speaks too: *requests*
    False), or "constraint" (what a user or customer asks of an agent, *to_agent*). What it asks is not its
    writer's where it quotes another's rule (:func:`_quoted`), nor, where the sentence before it did (*quoting*),
    is a prohibition opening it: "Your returns page says: Do not send items back without an RMA number. Never use
    the original box …" are both the shop's (a "please …" too; the writer's own "I need …", "we do not want …" is
    theirs)."""
    m = USER_CONSTRAINT_RE.search(sentence)
    if m is not None:
        return "condition", m
    if _is_question(sentence):
        return None
    m = WRITER_REQUEST_RE.search(sentence) if requests else None
    if m is not None and not _quoted(sentence, m.start()) and not (
            quoting and m.start() == 0 and m.group(0)[:6].lower() == "please"):
        return str(m.lastgroup), m
    if not to_agent:
        return None
    for m in (_PROHIBITION_RE.search(sentence), CHAT_CONSTRAINT_RE.search(sentence)):
        if m is not None and not _quoted(sentence, m.start()) and not (quoting and m.re is _PROHIBITION_RE
                                                                        and m.start() == 0):
            return "constraint", m
    return None


def _quotes_rule(sentence: str, *, quoting: bool = False) -> bool:
    """Whether *sentence* quotes another's rule (:func:`_constraint_match`): a prohibition or a limit after "says:",
    "according to", inside quotation marks, or a prohibition opening it right after a sentence that does
    (*quoting*); the quotation goes on while it does."""
    return any(m is not None and (_quoted(sentence, m.start()) or quoting and m.re is _PROHIBITION_RE
                                  and m.start() == 0)
               for m in (_PROHIBITION_RE.search(sentence), CHAT_CONSTRAINT_RE.search(sentence)))


#: A quotation mark opened after its lead-in, a reporting verb, "according to …" or a colon, and still open at the end
#: of the sentence: 'Your FAQ says: "Items must be returned within 30 days.', 'The manual states “Never …' (the
#: quotation goes on in the next sentence). Not a quotation closed in the sentence ('The label reads "Do not stack".').
_OPEN_QUOTE_RE = re.compile(r"(?:(?<!\bI\s)(?<!\bwe\s)\b(?i:says?|said|states?|stated|reads|writes|wrote|warns?|warned"
                            r"|according\s+to\b[^,;:.\"“”]*)|:)\s*[,:]?\s*[\"“][^\"“”]*$")


#: A line ending in its lead-in to a quotation in the paragraph under it: "Your returns page says:", "According to
#: your policy:" (not "Steps:", "Note:", "As I said:").
_SAYS_COLON_RE = re.compile(r"(?:(?<!\bI\s)(?<!\bwe\s)\b(?i:says|states|stated|reads|writes|wrote|warns|warned)"
                            r"|\b(?i:according\s+to)\b[^,;:.]*)\s*:\s*$")
#: The writer in the first person singular: "Never call me before 9:00" after a quoted rule is the writer's own (a
#: shop's rule speaks of "you", "we" and "us").
_WRITER_RE = re.compile(r"\b(?:I|(?i:me|my|mine|myself))\b")
#: A quotation mark, straight or curly (not an apostrophe).
_QUOTE_MARK_RE = re.compile(r"[\"“”]")


def _closes_quote(sentence: str) -> bool:
    """Whether *sentence*, inside a quotation opened before it, closes it (an odd number of straight marks, or a
    closing curly one)."""
    return sentence.count('"') % 2 == 1 or "”" in sentence


def quotation_goes_on(segments: Sequence[Segment]) -> dict[str, str]:
    """{id: id of the sentence before it} for each sentence that goes on with a quotation the sentence before it, in
    its paragraph, opened or went on with: inside a quotation mark a sentence before it opened after its lead-in
    (:data:`_OPEN_QUOTE_RE`: 'The FAQ says: "Items must be returned within 30 days. Keep the receipt."'), or opening
    with a prohibition right after a sentence that quotes a rule without quotation marks (:func:`_quotes_rule`:
    "Your returns page says: Items must be returned within 30 days in their original condition. Never use the
    retail box as the shipping box; …"), unless it speaks of its writer ("Never call me before 9:00",
    :data:`_WRITER_RE`). Delivered without the sentence before it, such a sentence reads as its writer's own
    instruction (QA: the second sentence of the shop's policy a customer quoted went out alone at 1/4). Not a
    sentence after "Note: …", "Subject: …" or a colon over steps: no quotation opens there. And each later sentence
    of the paragraph under a line ending in its lead-in ("Your returns page says:", :data:`_SAYS_COLON_RE`), whose
    first goes with that line (:func:`odcf.stages.budget._antecedents`).

    >>> from odcf.document import Segment
    >>> texts = ["Your returns page says: Items must be returned within 30 days.", "Never use the retail box.",
    ...          "Note: do not stack the boxes.", "Never lift them alone."]
    >>> quotation_goes_on([Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence")
    ...                    for i, t in enumerate(texts)])
    {'s1': 's0'}
    """
    out: dict[str, str] = {}
    prev: Segment | None = None
    inside = rule = False  # at the end of the sentence before: a quotation mark still open; it quoted a rule
    block: tuple[str, int] | None = None  # the paragraph quoted under a line ending in "says:"
    for seg in segments:
        if (prev is None or seg.kind != "sentence" or prev.kind != "sentence" or prev.source_id != seg.source_id
                or prev.paragraph != seg.paragraph):
            inside = rule = False
            block = ((seg.source_id, seg.paragraph) if prev is not None and seg.kind == prev.kind == "sentence"
                     and prev.source_id == seg.source_id and seg.paragraph == prev.paragraph + 1
                     and _SAYS_COLON_RE.search(prev.original) else None)
        elif block is not None and block != (seg.source_id, seg.paragraph):
            block = None
        text = seg.original
        goes_on = inside or (rule and _PROHIBITION_RE.match(text) is not None and _WRITER_RE.search(text) is None) or (
            block is not None and prev is not None and prev.paragraph == seg.paragraph)
        if goes_on and prev is not None:
            out[seg.id] = prev.id
        # where quotation marks say where the quotation ends, it ends there
        rule = (seg.kind == "sentence" and not inside and not _QUOTE_MARK_RE.search(text)
                and _quotes_rule(text, quoting=goes_on))
        inside = seg.kind == "sentence" and (not _closes_quote(text) if inside else _OPEN_QUOTE_RE.search(text) is not None)
        prev = seg
    return out


def states_user_constraint(sentence: str, *, to_agent: bool = True) -> bool:
    """Whether *sentence* states a constraint of the person writing it: a condition on how they are to be treated
    (:data:`USER_CONSTRAINT_RE`: "please do not call me", "我对青霉素过敏", "请勿致电给我"), a deadline, a prohibition
    or a limit they set (:data:`WRITER_REQUEST_RE`: "I need the car back before 12 June"), or, said by a user or
    customer to an agent (*to_agent*), what they ask of it (:data:`_PROHIBITION_RE`, :data:`CHAT_CONSTRAINT_RE`:
    "Never email the client directly", "no hostels", "under €2,000 total"), not in a question ("Must we pay a
    deposit?"). The one test compress (:func:`constraint_reasons`, :func:`lift_constraints`) and a handoff's history
    (:func:`odcf.handoff.history.user_constraint`) apply, so the two keep the same user turns (QA: handoff read
    "请勿致电给我。", which compress raised, as a plain old turn and trimmed it).

    >>> states_user_constraint("请勿致电给我。"), states_user_constraint("Must we pay a deposit?")
    (True, False)
    >>> states_user_constraint("Never email the client directly."), states_user_constraint("Never mind.", to_agent=False)
    (True, False)
    """
    return _constraint_match(sentence, to_agent=to_agent) is not None


def constraint_reasons(segments: Sequence[Segment], *, users: set[str] | None = None) -> dict[str, str]:
    """{id: why} for each segment of *segments* that states a constraint of its writer (see
    :func:`lift_constraints`, which raises them), a user's correction and what it changes aside: the words that
    make it one and who said them, as the delivery record gives it (:func:`constraint_reason`: "rank: a constraint
    the customer set, 'do not restart' in their message of the thread; …"). A system's, an agent's or a tool's
    turn, and in a ticket thread with a customer's message another sender's message ("Message 2 — Support (…)"),
    state none: the agent's "Do not retry the stuck orders by hand" is its advice, not the customer's condition.

    >>> from odcf.document import Segment
    >>> texts = ["assistant: What are the key constraints?", "user: Never email the client directly.",
    ...          "assistant: Understood. I will route every message through Marit."]
    >>> segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence",
    ...                 meta={"speaker": t.split()[0]}) for i, t in enumerate(texts)]
    >>> constraint_reasons(segs)
    {'s1': "a constraint the user set, 'Never email' in their turn"}
    """
    users = _user_turns(segments) if users is None else users
    mail, others = _thread_senders(segments)
    # where the one served speaks, what the other side asks ("Nurse: I need it before March 20.") is not theirs
    served = {seg.source_id for seg in segments if seg.id in users or seg.id in mail}
    out: dict[str, str] = {}
    quoting: tuple[str, int] | None = None  # the paragraph whose last sentence quoted another's rule
    for seg in segments:
        if _NOT_USER_RE.match(str(seg.meta.get("speaker") or "")) or seg.id in others:
            quoting = None
            continue
        where = ("in their turn" if seg.id in users else "in their message of the thread" if seg.id in mail
                 else None)
        goes_on = quoting == (seg.source_id, seg.paragraph)
        quoting = (seg.source_id, seg.paragraph) if _quotes_rule(seg.text, quoting=goes_on) else None
        found = _constraint_match(seg.text, to_agent=where is not None, quoting=goes_on,
                                  requests=where is not None or seg.source_id not in served)
        if found is None:
            continue
        kind, m = found
        if kind == "condition":
            out[seg.id] = f"a condition its writer sets on how they are treated, '{m.group(0).strip()}'" + (
                f" {where}" if where else "")
        elif kind != "constraint":  # what the writer asks: "a deadline its writer sets, 'I need the car back …'"
            out[seg.id] = f"a {kind} its writer sets, '{m.group(0).strip()}'" + (f" {where}" if where else "")
        else:
            said = re.sub(r"^[\W\d]*(?:[.!?:;]\s+)?", "", m.group(0)).strip()
            out[seg.id] = f"a constraint the {'user' if seg.id in users else 'customer'} set, '{said}' {where}"
    return out


def constraint_reason(why: str) -> str:
    """The delivery record's reason for a segment :func:`constraint_reasons` finds (*why*): what it states and where
    it ranks for it (:func:`lift_constraints`)."""
    return (f"rank: {why}; ranks right after the {CONSTRAINT_AFTER} best other segments of its source, never lower "
            "than it scored")


def lift_constraints(segments: Sequence[Segment], scores: dict[str, float],
                     links: dict[str, list[str]] | None = None, *,
                     reasons: Mapping[str, str] | None = None) -> tuple[dict[str, float], int]:
    """*scores* with each segment stating a constraint of its writer (:func:`constraint_reasons`:
    :data:`USER_CONSTRAINT_RE`, :data:`WRITER_REQUEST_RE` (not the other side's where the one served speaks too),
    and in a user's turn of a conversation with an agent or a customer's message of a
    ticket thread (:func:`_thread_senders`) :data:`CHAT_CONSTRAINT_RE` or a prohibition opening a sentence or
    clause (:data:`_PROHIBITION_RE`); or a correction there of what the user said
    before, with what it corrects in the same user's turns: *links*, by default :func:`correction_links`; in a
    transcript, not a system's, agent's or tool's turn, nor another sender's message in a thread) raised to just
    below the :data:`CONSTRAINT_AFTER`-th best score among the other segments of its source, headings and the
    courtesy of the user's other side (:func:`_courtesy`, an agent's "I'm sorry to hear that.") aside (never
    lowered), and that courtesy, where it scored as high, put below the lowest of them; returns the scores and how many constraints were raised.

    >>> from odcf.document import Segment
    >>> texts = ["The serial is BX-9920-114.", "Please do not call me; email only.", "Don't get me wrong, it works.",
    ...          "It shipped on 2 May."]
    >>> segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence") for i, t in enumerate(texts)]
    >>> lift_constraints(segs, {"s0": 0.9, "s1": 0.2, "s2": 0.3, "s3": 0.5})
    ({'s0': 0.9, 's1': 0.499999, 's2': 0.3, 's3': 0.5}, 1)
    """
    users = _user_turns(segments)
    if reasons is None:  # the caller that also records why passes what it found: found once
        reasons = constraint_reasons(segments, users=users)
    constraint = {sid for sid in reasons if sid in scores}
    if users:
        # a user's change of what they asked for ("Actually, make it 15 June, not 14 June.") is what they ask now,
        # and what it changes still says the rest of what they asked ("a trip to Lisbon for 2 people from 14 June to
        # 18 June"): left at their own scores, the stale request went out only with the change, both were left out,
        # and with them where the trip goes and for how many
        by_id = {seg.id: seg for seg in segments if seg.id in users}
        for fix, stale in (correction_links(segments) if links is None else links).items():
            if fix in by_id and fix in scores:
                constraint.add(fix)
                constraint.update(s for s in stale if s in scores and s in by_id
                                  and by_id[s].meta.get("speaker") == by_id[fix].meta.get("speaker")
                                  and _says_more(by_id[s].text, by_id[fix].text))
    courtesy = _courtesy(segments, users) if constraint else set()
    others: dict[str, list[float]] = {}
    for seg in segments:  # headings are not answers: "# Ticket 48213: replacement" led for "where is the replacement sent?"
        if seg.id in scores and seg.id not in constraint and seg.id not in courtesy and seg.kind != "heading":
            others.setdefault(seg.source_id, []).append(scores[seg.id])
    floors = {src: round(sorted(v, reverse=True)[min(CONSTRAINT_AFTER, len(v)) - 1] - 1e-6, 6)
              for src, v in others.items()}
    out = dict(scores)
    raised = 0
    for seg in segments:
        if seg.id in constraint and floors.get(seg.source_id, 0.0) > out[seg.id]:
            out[seg.id] = floors[seg.source_id]
            raised += 1
    lowest: dict[str, float] = {}  # the lowest constraint of each source: an agent's courtesy ranks below it
    for seg in segments:
        if seg.id in constraint:
            lowest[seg.source_id] = min(lowest.get(seg.source_id, out[seg.id]), out[seg.id])
    for seg in segments:
        if seg.id in courtesy and seg.source_id in lowest and out[seg.id] >= lowest[seg.source_id]:
            out[seg.id] = round(max(lowest[seg.source_id] - 1e-6, 0.0) * 0.5, 6)
    return out, raised


#: An email's legal boilerplate: a confidentiality notice, a virus disclaimer, an unsubscribe or
#: print-saving line. It scored above a support agent's instructions ("please notify the sender" reads
#: as an instruction) and took their room.
BOILERPLATE_RE = re.compile(
    r"(?i:if you have received this (?:e-?mail|message|communication) in error|not the (?:intended|named) (?:recipient|addressee)"
    r"|(?:this|the) (?:e-?mail|message|communication)(?: and any (?:attachments?|files?)[^.]{0,40})? "
    r"(?:is|are|may be|contains?) (?:strictly )?(?:confidential|privileged)"
    r"|accepts? no (?:liability|responsibility) for (?:any )?(?:damage|loss)[^.]{0,40}virus"
    r"|consider the environment before printing|to unsubscribe|unsubscribe from (?:this|these|our)"
    r"|confidentiality notice:)")
#: What a boilerplate segment's score is multiplied by.
BOILERPLATE_WEIGHT = 0.3


def demote_boilerplate(segments: Sequence[Segment], scores: dict[str, float]) -> tuple[dict[str, float], int]:
    """*scores* with each segment of email boilerplate (:data:`BOILERPLATE_RE`) weighted down by
    :data:`BOILERPLATE_WEIGHT` (a segment the query names exactly keeps its place: see
    :func:`lift_hits`, applied after); returns the scores and how many were demoted.

    >>> from odcf.document import Segment
    >>> t = "If you are not the intended recipient, please notify the sender and delete this e-mail."
    >>> demote_boilerplate([Segment(id="a", source_id="s", index=0, text=t, original=t, kind="sentence")], {"a": 0.6})
    ({'a': 0.18}, 1)
    """
    out = dict(scores)
    n = 0
    for seg in segments:
        if seg.id in out and BOILERPLATE_RE.search(seg.text):
            out[seg.id] = round(out[seg.id] * BOILERPLATE_WEIGHT, 6)
            n += 1
    return out, n


#: What a greeting's or sign-off's score is multiplied by, after it is put at the lowest score of the
#: other segments (:func:`demote_pleasantries`).
PLEASANTRY_WEIGHT = 0.5


#: A chat turn that only closes the conversation with thanks: "That sounds great, thanks.", "Yes, that is all,
#: thanks for your help.", "No nothing else for now, thanks", "Thank you, goodbye!". It holds thanks or a "that is
#: all"; a bare "Yes." or "Sure." (a confirmation of what was offered) is not one.
_CLOSING_PART = (r"(?:yes|yeah|yep|no|nope|ok(?:ay)?|great|perfect|cool|awesome|wonderful|excellent|good|fine|alright"
                 r"|all\s+right|that\s+(?:sounds|is|['’]s|seems|works)\s+(?:really\s+|very\s+)?(?:great|good|fine|perfect|nice"
                 r"|all\s+right|alright|wonderful|excellent|lovely|okay|ok)(?:\s+to\s+me)?|bye|goodbye|cheers"
                 r"|have\s+a\s+(?:great|good|nice|lovely)\s+(?:day|one|evening|night|weekend))")
#: "that is all", "this will be it"; "nothing else", "nothing more": a turn that says it is the last
_THAT_IS_ALL = r"(?:that|this)(?:\s+is|['’]s|\s+will\s+be|\s+would\s+be)\s+(?:all|it)"
_NOTHING_ELSE = r"nothing\s+(?:else|more)"
_CLOSING_END = (r"(?:(?:many\s+)?thanks?(?:\s+you)?(?:\s+(?:so|very)\s+much)?(?:\s+(?:a\s+lot|again))?"
                r"(?:\s+for\s+(?:(?:all\s+)?(?:your|the)\s+(?:help|assistance|time|information|info)|trying|helping(?:\s+me)?"
                r"|everything|that|this))?"
                rf"|{_THAT_IS_ALL}(?:\s+for\s+(?:now|today))?"
                rf"|(?:there['’]?s\s+)?{_NOTHING_ELSE}(?:\s+for\s+(?:now|today))?|i['’]?m\s+(?:all\s+)?(?:set|good|done))")
_CLOSING_END_RE = re.compile(rf"(?i:\b{_CLOSING_END}\b)")
#: A turn opening with "Yes"/"No"/"OK"/"Fine" answers what the other side asked ("USER: No, thanks." to "Would you also
#: like travel insurance?", "USER: Yes, thanks." to "Shall I book it?"): it closes the conversation only with an
#: explicit end of its own (:data:`_EXPLICIT_END_RE`), "USER: No, that is all, thanks.".
_ANSWER_OPENER_RE = re.compile(r"(?i:\s*(?:yes|yeah|yep|no|nope|ok(?:ay)?|fine|alright|all\s+right|sure)\b)")
_EXPLICIT_END_RE = re.compile(
    rf"(?i:\b(?:{_THAT_IS_ALL}|{_NOTHING_ELSE}"
    r"|(?:i['’]?m\s+)?all\s+set|i['’]?m\s+(?:set|done)|(?:good)?bye|have\s+a\s+(?:great|good|nice|lovely)\s+\w+)\b)")
#: (one piece after another, each after a comma, a stop or a space: no two ways to cut a turn, so no backtracking)
CLOSING_RE = re.compile(rf"(?i:\s*(?:{_CLOSING_PART}|{_CLOSING_END})(?:[\s,.!]+(?:{_CLOSING_PART}|{_CLOSING_END}))*[\s,.!]*)")


def closing(seg: Segment) -> bool:
    """Whether *seg* is a speaker's chat turn that holds nothing but thanks and a goodbye (:data:`CLOSING_RE`,
    the label aside).

    >>> from odcf.document import Segment
    >>> def turn(t): return Segment(id="a", source_id="s", index=0, text=t, original=t, kind="sentence", meta={"speaker": "USER:"})
    >>> [closing(turn(t)) for t in ("USER: That sounds great, thanks.", "USER: Yes, that is all, thanks for your help.",
    ...                             "USER: No nothing else for now, thanks", "USER: Yes.", "USER: Thanks, book it for 2 people.")]
    [True, True, True, False, False]
    >>> [closing(turn(t)) for t in ("USER: No, thanks.", "USER: Yes, thanks.", "USER: Okay, thanks.", "USER: No, thanks, bye.")]
    [False, False, False, True]
    """
    speaker = str(seg.meta.get("speaker") or "").strip()
    if not speaker or seg.kind != "sentence" or len(seg.text) > 200:
        return False
    text = seg.text.strip()
    text = text.removeprefix(speaker)
    if CLOSING_RE.fullmatch(text) is None or _CLOSING_END_RE.search(text) is None:
        return False
    return not _ANSWER_OPENER_RE.match(text) or _EXPLICIT_END_RE.search(text) is not None


def pleasantries(segments: Sequence[Segment]) -> set[str]:
    r"""The ids of the sentences of *segments* that hold nothing but a message's greeting, sign-off or
    mobile signature (:func:`~odcf.stages.segment.mail.pleasantry`: "Hi Daniel,", "Regards,\nMarta", "Sent
    from my iPhone"), or a speaker's turn of a chat that only closes it with thanks (:func:`closing`: "USER:
    That sounds great, thanks."); a speaker's other courtesy is not one of them (an agent's there is
    :func:`_courtesy`'s)."""
    return {seg.id for seg in segments if seg.kind == "sentence" and "mail_field" not in seg.meta
            and ("speaker" not in seg.meta and pleasantry(seg.text) or closing(seg))}


def demote_pleasantries(segments: Sequence[Segment], scores: dict[str, float]) -> tuple[dict[str, float], int]:
    r"""*scores* with each greeting and sign-off (:func:`pleasantries`) put below every other scored segment
    of *segments*: at :data:`PLEASANTRY_WEIGHT` times the lowest of their scores (or its own, if lower). It
    carries nothing a reader needs, and is delivered only with room left after the content (a segment the
    query names exactly keeps its place: see :func:`lift_hits`, applied after). Scored on its words, "Regards,
    Marta" (0.39) ranked above the message's own "Thanks, the tracking number works." and took its room at
    a small budget. Returns the scores and how many were demoted.

    >>> from odcf.document import Segment
    >>> segs = [Segment(id=i, source_id="s", index=k, text=t, original=t, kind="sentence")
    ...         for k, (i, t) in enumerate([("a", "Hi Daniel,"), ("b", "Ship it to Gävle."), ("c", "Regards,\nMarta")])]
    >>> demote_pleasantries(segs, {"a": 0.4, "b": 0.3, "c": 0.1})
    ({'a': 0.15, 'b': 0.3, 'c': 0.05}, 2)
    """
    noise = pleasantries([seg for seg in segments if seg.id in scores])
    if not noise:
        return dict(scores), 0
    rest = [v for sid, v in scores.items() if sid not in noise]
    floor = min(rest) if rest else 1.0
    out = dict(scores)
    for sid in noise:
        out[sid] = round(min(out[sid], floor) * PLEASANTRY_WEIGHT, 6)
    return out, len(noise)


#: A log line's level word ("2024-05-15 10:05:42,902 ERROR [exec-3] …", "ERROR:root:…", "[WARN] 2025-…"), and
#: glog's letter before its date ("E0311 10:00:33.561 …").
_LOG_LEVEL_RE = re.compile(r"(?<![\w.-])(" + LOG_LEVELS + r")(?![\w-])")
_GLOG_LEVEL_RE = re.compile(r"([IWEF])\d{4} ")
_GLOG_LEVELS = {"I": "INFO", "W": "WARN", "E": "ERROR", "F": "FATAL"}
#: Where each level ranks among a log's lines with no query (:func:`rank_log_levels`), first to last: errors,
#: warnings, the frames of their stack traces (:data:`LOG_FRAMES_TIER`), routine lines and lines with no level,
#: then debugging.
LOG_LEVEL_TIERS = {**dict.fromkeys(("FATAL", "CRITICAL", "CRIT", "SEVERE", "ERROR", "ERR"), 0),
                   **dict.fromkeys(("WARN", "WARNING"), 1), **dict.fromkeys(("INFO", "NOTICE", ""), 3),
                   **dict.fromkeys(("DEBUG", "TRACE"), 4)}
#: The tier of a part of an ERROR's or a WARN's stack trace that holds only its frames ("\tat …", "\t... 5
#: more", a Python frame's "  File …"): below the warnings, above the routine lines.
LOG_FRAMES_TIER = 2


def _entry_level(text: str) -> str | None:
    """The most severe level of the lines of *text* that open a log entry (:func:`opens_logged_entry`), "" where
    they name none (syslog's "Mar 11 10:00:33 host sshd[42]: …"); None where no line opens one."""
    found: str | None = None
    for line in text.split("\n"):
        if not opens_logged_entry(line):
            continue
        glog = _GLOG_LEVEL_RE.match(line)
        named = _LOG_LEVEL_RE.search(line)
        level = _GLOG_LEVELS[glog.group(1)] if glog else named.group(1) if named else ""
        if found is None or LOG_LEVEL_TIERS[level] < LOG_LEVEL_TIERS[found]:
            found = level
    return found


def log_tiers(segments: Sequence[Segment]) -> dict[str, tuple[int, int, str]]:
    """The segments of *segments* that are a log's (a source with :data:`~odcf.stages.segment.logs.MIN_ENTRIES`
    entries or more: a line, a run of lines, an entry with its stack trace, or a part of one, ``trace_of``), each
    with its tier (:data:`LOG_LEVEL_TIERS`), its depth in its entry and its level ("" for none). A part of a trace
    has its entry's level, and one that holds only frames (every line indented) of an ERROR or a WARN entry
    :data:`LOG_FRAMES_TIER`. Depth: 0 for an entry's line, 1 for the part right under it (the exception and its
    message), 2 for a later one (a ``Caused by:``): each ERROR line, then each one's exception, go first."""
    levels: dict[str, str] = {}
    for seg in segments:
        if seg.kind in ("list", "code") and not seg.meta.get("trace_of"):
            level = _entry_level(seg.original)
            if level is not None:
                levels[seg.id] = level
    entries = Counter(seg.source_id for seg in segments if seg.id in levels)
    by_index = {(seg.source_id, seg.index): seg for seg in segments}
    out: dict[str, tuple[int, int, str]] = {}
    for seg in segments:
        if entries[seg.source_id] < MIN_ENTRIES:
            continue
        if seg.id in levels:
            out[seg.id] = (LOG_LEVEL_TIERS[levels[seg.id]], 0, levels[seg.id])
            continue
        if not seg.meta.get("trace_of") or seg.meta.get("commit_part"):
            continue
        entry: Segment | None = seg
        while entry is not None and entry.meta.get("trace_of"):  # a part goes with the part before, or its line
            entry = by_index.get((entry.source_id, entry.index - int(entry.meta["trace_of"])))
        if entry is None or entry.id not in levels:
            continue
        tier = LOG_LEVEL_TIERS[levels[entry.id]]
        frames = all(line[:1] in (" ", "\t") for line in seg.original.split("\n") if line.strip())
        out[seg.id] = (LOG_FRAMES_TIER if frames and tier < LOG_FRAMES_TIER else tier,
                       1 if seg.index == entry.index + 1 else 2, levels[entry.id])
    return out


def rank_log_levels(segments: Sequence[Segment], scores: dict[str, float], *,
                    query: bool) -> tuple[dict[str, float], int]:
    """*scores* with each log's segments (:func:`log_tiers`, those in *scores*) ranked by level. With no *query*,
    a log's scores are dealt out again among its own segments, the best to its ERROR, FATAL, SEVERE and CRITICAL
    entries and the exceptions under them, then to its WARN ones, then to the frames of their traces, then to its
    INFO lines and those with no level, then to DEBUG and TRACE (within a tier, the entries' lines first, then the
    parts right under them, then the later ones, each in its own order: :func:`log_tiers`); the log as a whole
    scores as before against the text around it. A log is passed to an agent for its errors: QA, "odcf compress
    app.log -b 240" delivered four INFO lines ("POST /v2/charges …", "db pool active=40 …", scored 0.86-1.0) and
    left out both ERROR lines and their exceptions ("Unable to acquire JDBC Connection … timed out after
    30000ms", 0.40-0.57). With a *query* its relevance leads, and the level breaks ties only (a lower tier takes
    a ten-millionth less). Returns the scores and how many of them changed.

    >>> from odcf.document import Segment
    >>> log = ["2024-05-15 10:05:42 INFO [w-1] POST /v2/charges 200", "2024-05-15 10:05:43 ERROR [w-1] charge failed"]
    >>> segs = [Segment(id=f"s{k}", source_id="a", index=k, text=t, original=t, kind="list") for k, t in enumerate(log)]
    >>> rank_log_levels(segs, {"s0": 1.0, "s1": 0.4}, query=False)
    ({'s0': 0.4, 's1': 1.0}, 2)
    >>> rank_log_levels(segs, {"s0": 0.5, "s1": 0.5}, query=True)
    ({'s0': 0.4999997, 's1': 0.5}, 1)
    """
    tiers = log_tiers(segments)
    logs: dict[str, list[Segment]] = {}
    for seg in segments:
        if seg.id in tiers and seg.id in scores:
            logs.setdefault(seg.source_id, []).append(seg)
    out = dict(scores)
    for segs in logs.values():
        if len({tiers[seg.id][0] for seg in segs}) < 2:
            continue
        if query:
            for seg in segs:
                out[seg.id] = round(max(0.0, scores[seg.id] - tiers[seg.id][0] * 1e-7), 7)
            continue
        values = sorted((scores[seg.id] for seg in segs), reverse=True)
        last: tuple[tuple[int, int], float] | None = None
        for seg, v in zip(sorted(segs, key=lambda s: (*tiers[s.id][:2], -scores[s.id], s.index)), values):
            if last is not None:  # of two equal scores, the one of the lower tier (or depth) goes just below
                v = min(v, last[1] if last[0] == tiers[seg.id][:2] else round(max(0.0, last[1] - 1e-6), 6))
            out[seg.id] = v
            last = (tiers[seg.id][:2], v)
    return out, sum(1 for sid, v in out.items() if v != scores[sid])


def log_level_reasons(segments: Sequence[Segment]) -> dict[str, str]:
    """The reason each segment of a log whose lines are of more than one tier (:func:`log_tiers`) gives for its
    place with no query (:func:`rank_log_levels`)."""
    tiers = log_tiers(segments)
    seen: dict[str, set[int]] = {}
    for seg in segments:
        if seg.id in tiers:
            seen.setdefault(seg.source_id, set()).add(tiers[seg.id][0])
    out: dict[str, str] = {}
    for seg in segments:
        if seg.id in tiers and len(seen[seg.source_id]) > 1:
            tier, _, level = tiers[seg.id]
            entry = f"a log entry at level {level}" if level else "a log entry with no level"
            what = (f"frames of the stack trace of {entry}" if tier == LOG_FRAMES_TIER
                    else f"a part of {entry}" if seg.meta.get("trace_of") else entry)
            out[seg.id] = (f"rank: {what}; with no query a log ranks its ERROR, FATAL, SEVERE and CRITICAL entries with "
                           "their exceptions first, then WARN ones, their traces' frames, INFO lines and lines with no "
                           "level, DEBUG and TRACE last")
    return out


#: An agent's final submission in a ReAct-style trajectory (Thought / Action / Observation steps): SWE-agent's
#: ``submit`` command, alone or with its answer ("submit FLAG{…}"), as an action's code block.
_SUBMIT_RE = re.compile(r"\A(?:Action:\s*\n)?(?:```[\w-]*\n)?[ \t]*submit(?:[ \t][^\n]*)?\s*(?:\n```)?\s*\Z")
#: A step's "Observation:" label (alone, or opening its output's block).
_OBSERVATION_RE = re.compile(r"\AObservation:(?:\s|\Z)")
#: The most of its source's characters the end of a trajectory may hold to be lifted (:func:`final_outcome`).
OUTCOME_SHARE = 0.25


def final_outcome(segments: Sequence[Segment]) -> set[str]:
    """The segments of each agent trajectory from its last ``submit`` action to the end of its source: the
    action, what it returned and any final submission after it (the patch, the flag). A source is a trajectory
    when two of its segments or more open with "Observation:"; the end is taken only when it holds a quarter of
    the source's text at most (:data:`OUTCOME_SHARE`). QA s34 M5: with no query, a CTF run's flag
    ("submit FLAG{…}" and its observation, scored 0.02-0.06) was dropped at 1/4 and 1/8 of the input while the
    HTML form boilerplate of earlier observations was delivered."""
    by_source: dict[str, list[Segment]] = {}
    for seg in segments:
        by_source.setdefault(seg.source_id, []).append(seg)
    out: set[str] = set()
    for segs in by_source.values():
        if sum(1 for seg in segs if _OBSERVATION_RE.match(seg.original)) < 2:
            continue
        last = next((k for k in range(len(segs) - 1, -1, -1) if _SUBMIT_RE.match(segs[k].original.strip())), None)
        if last is None:
            continue
        total = sum(len(seg.original) for seg in segs)
        if sum(len(seg.original) for seg in segs[last:]) <= OUTCOME_SHARE * total:
            out.update(seg.id for seg in segs[last:] if not seg.dropped)
    return out


def lift_final_outcome(segments: Sequence[Segment], scores: dict[str, float]) -> tuple[dict[str, float], int]:
    """With no query, the end of an agent trajectory (:func:`final_outcome`) scores as the best segment of its
    source: the run is passed on for what it came to. Returns the scores and how many were raised."""
    ends = final_outcome(segments)
    best: dict[str, float] = {}
    for seg in segments:
        if seg.id in scores:
            best[seg.source_id] = max(best.get(seg.source_id, 0.0), scores[seg.id])
    out = dict(scores)
    raised = 0
    for seg in segments:
        if seg.id in ends and seg.id in out and out[seg.id] < best[seg.source_id]:
            out[seg.id] = best[seg.source_id]
            raised += 1
    return out, raised


def lift_cell_outputs(segments: Sequence[Segment], scores: dict[str, float]) -> tuple[dict[str, float], int]:
    """A notebook code cell's ``outputs`` member scores at least as its ``source`` (the best of its
    pieces, ``cell_source``: odcf.stages.segment): "ROC AUC: 0.8734" is the answer to the
    ``print(f'ROC AUC: …')`` that names what the query asks, and scored alone it ranked below it, so
    the code was delivered without the number. So does a tool's result in a JSON list of chat messages
    its call (the assistant's message naming the tool, whose arguments repeat the tracking number the
    query asks about: "Yun Express" had ranked below it). Returns the scores and how many were raised."""
    by_index = {(s.source_id, s.index): s.id for s in segments}
    out = dict(scores)
    raised = 0
    for seg in segments:
        if seg.id not in out or not seg.meta.get("cell_source"):
            continue
        best = max((scores.get(by_index.get((seg.source_id, i), ""), 0.0) for i in seg.meta["cell_source"]),
                   default=0.0)
        if best > out[seg.id]:
            out[seg.id] = best
            raised += 1
    return out, raised


#: What makes a part named by number another document's: "section 7 of the Act" (not "of this Agreement") after
#: it, "the MSA's clause 4.1" before it.
_OF_ANOTHER_RE = re.compile(r"\s+of\s+(?!this\b|these\b)", re.IGNORECASE)
_POSSESSIVE_RE = re.compile(r"['’]s\s*$")
#: A numbered provision's number in a reference: dotted ("10.1", "4.2.3"); a plain "Clause 7" names a section.
_PROVISION_NUMBER_RE = re.compile(r"\d+(?:\.\d+)+")


#: A definitions or interpretation clause: "1.1 In this Agreement, capitalised terms have the meanings given in
#: Schedule 1, the headings are for convenience only, …", "'Fees' means …"; and a reference for what words mean,
#: "as defined in Clause 1.1", "terms as construed under Clause 1.1", "subject to the interpretation rules in
#: Clause 1.1", "read in accordance with Clause 1.1". Every clause may point to such a clause, and none depends on
#: it for what it says (QA s33 AA F5: named by four clauses, it took the best of their scores and was all that was
#: delivered at 1/2, the fees and the EUR 250,000 cap dropped).
_INTERPRETATION_RE = re.compile(
    r"(?i:\b(?:capitali[sz]ed\s+terms|(?:has|have)\s+the\s+meanings?|shall\s+mean|means\b|(?:the\s+)?following\s+"
    r"definitions|headings?\s+(?:are|is)\s+for\s+convenience|singular\s+includes?\s+the\s+plural"
    r"|(?:definitions|interpretation)\s+(?:and\s+interpretation\s+)?(?:apply|shall\s+apply)))")
_MEANING_REF_RE = re.compile(
    r"(?i:\b(?:defined|construed|interpreted|read|meanings?(?:\s+given)?|definitions?|interpretation(?:\s+rules?)?)"
    r"(?:\s+(?:in\s+accordance\s+with|pursuant\s+to|in|under|by|with|at|of))+\s*)$")


def provision_references(segments: Sequence[Segment]) -> dict[str, list[str]]:
    """The numbered provisions each segment names by number, by the ids of their segments: "10.5 … count
    towards the cap in Clause 10.1 …" names the paragraph that opens "10.1 Subject to Clause 10.3, each
    party's total aggregate liability … shall not exceed 15% of the Contract Value.". A provision is a
    paragraph opening with a dotted number (:data:`_LABEL_RE`) that opens no other paragraph of its source,
    up to the next one or the next heading; a plain number ("Clause 7", "Clause 12") names a whole section
    and is left out, as is a provision's reference to itself and another document's part ("section 7.2 of
    the Act", "the MSA's clause 4.1"), and so are a definitions or interpretation clause and a reference for what
    words mean ("as defined in Clause 1.1": :data:`_INTERPRETATION_RE`, :data:`_MEANING_REF_RE`)."""
    opened: Counter[tuple[str, str]] = Counter()
    defines: set[tuple[str, str]] = set()  # the provisions whose opening sentence defines or interprets words
    parts: dict[tuple[str, str], list[str]] = {}
    own: dict[str, str] = {}  # segment id -> the number of the provision it is a part of
    prev: Segment | None = None
    current: str | None = None
    for seg in segments:
        if prev is None or prev.source_id != seg.source_id or seg.kind == "heading":
            current = None
        first = prev is None or prev.source_id != seg.source_id or prev.paragraph != seg.paragraph
        if seg.kind == "sentence" and first and (m := _LABEL_RE.match(seg.original)):
            current = m.group(1)
            opened[(seg.source_id, current)] += 1
            if _INTERPRETATION_RE.search(seg.original):
                defines.add((seg.source_id, current))
        if current is not None:
            parts.setdefault((seg.source_id, current), []).append(seg.id)
            own[seg.id] = current
        prev = seg
    out: dict[str, list[str]] = {}
    for seg in segments:
        if seg.kind == "heading":
            continue
        text = seg.original
        named: list[str] = []
        for a, b in pointers(seg)[1]:
            if _OF_ANOTHER_RE.match(text, b) or _POSSESSIVE_RE.search(text[:a]) or _MEANING_REF_RE.search(text[:a]):
                continue
            for number in _PROVISION_NUMBER_RE.findall(text[a:b]):
                key = (seg.source_id, number)
                if opened[key] == 1 and number != own.get(seg.id) and key not in defines:
                    named += [sid for sid in parts[key] if sid != seg.id and sid not in named]
        if named:
            out[seg.id] = named
    return out


def lift_referenced(scores: dict[str, float], named_by: Mapping[str, Sequence[str]]) -> tuple[dict[str, float], int]:
    """With no query, a numbered provision scores at least as each segment that names it by its number
    (*named_by*: provision segment -> the segments naming it, :func:`provision_references`), by their
    scores before this lift. With no query the liability cap, "10.1 … shall not exceed 15% of the Contract
    Value.", went out while "10.3 The limitations in Clauses 10.1 and 10.2 do not apply to …" and "10.5 …
    count towards the cap in Clause 10.1 …" were delivered (QA): the clauses that point to it say what
    they change, not what it is. Returns the scores and how many were raised."""
    out = dict(scores)
    raised = 0
    for sid in sorted(named_by):
        best = max((scores[r] for r in named_by[sid] if r in scores), default=0.0)
        if sid in out and best > out[sid]:
            out[sid] = best
            raised += 1
    return out, raised


def unlift(score: float, hit: bool, failing: bool | None = None) -> float:
    """A lexical score before :func:`lift_hits` (a hit's share of the best hit's own score, another
    segment's own score): the rerank blends these, so that lifting does not squeeze the lexical
    differences between hits into the top 5%. *failing*: whether the segment is one of the lines
    reporting a failure lifted below the hits (None: none was).

    >>> unlift(0.975, True), unlift(0.95, False), round(unlift(0.92625, False, True), 6), unlift(0.9025, False, False)
    (0.5, 1.0, 0.5, 1.0)
    """
    if failing is not None and not hit:
        score, hit = min(1.0, score / HIT_FLOOR), failing
    if hit:
        return max(0.0, (score - HIT_FLOOR) / (1.0 - HIT_FLOOR))
    return min(1.0, score / HIT_FLOOR)


def scoring_texts(doc: Document, segs: Sequence[Segment]) -> list[str]:
    """The text each of *segs* is scored by: its own, after the keys of the config lines above it
    (a YAML or ``kubectl describe`` node's path, odcf.stages.segment.yamlparts). "memory: 512Mi"
    alone is as much a request as a limit; scored as "Containers payments-api Limits memory: 512Mi"
    it answers "what is its memory limit?". A sentence that points back to the sentence before it
    (:func:`_pointed_back`) is scored after that sentence's text (and its chain's first); a notebook's
    markdown cell, by its JSON and its prose (:func:`_markdown_cell`)."""
    by_index = {(s.source_id, s.index): s for s in doc.segments if s.meta.get("yaml_children") is not None}
    before = _pointed_back(doc)
    out = []
    for seg in segs:
        path = seg.meta.get("yaml_path")
        keys = [by_index[(seg.source_id, i)].original.strip().split(":", 1)[0].lstrip("- ")
                for i in path or () if (seg.source_id, i) in by_index]
        if seg.id in before:
            keys = [before[seg.id]]
        prose = _markdown_cell(seg.text) if seg.kind == "json" else None
        out.append(" ".join([*keys, seg.text]) if keys else prose if prose is not None else seg.text)
    return out


def _markdown_cell(text: str) -> str | None:
    r"""A whole markdown cell of a notebook (nbformat: a JSON object with ``"cell_type": "markdown"``)
    followed by its source as the notebook shows it, the text it is scored by; None for any other
    text. Its prose is what it says: scored by its JSON alone (``"source":["## Notes\n","AUC
    improved from 0.8611 …"]``), the Notes cell that answers "what ROC AUC did the model reach" ranked
    below a cell that failed with a KeyError.

    >>> _markdown_cell('{"cell_type":"markdown","source":["## Notes\\n","AUC is 0.87."]}')
    '{"cell_type":"markdown","source":["## Notes\\n","AUC is 0.87."]}\n## Notes\nAUC is 0.87.'
    >>> _markdown_cell('{"cell_type":"code","source":["print(1)"]}') is None
    True
    """
    if not text.startswith("{") or '"cell_type"' not in text:
        return None
    try:
        cell = json.loads(text)
    except ValueError:
        return None
    if not isinstance(cell, dict) or cell.get("cell_type") != "markdown":
        return None
    source = cell.get("source")
    if isinstance(source, list):
        source = "".join(line for line in source if isinstance(line, str))
    return f"{text}\n{source}" if isinstance(source, str) and source.strip() else None


def _pointed_back(doc: Document) -> dict[str, str]:
    """For each sentence of *doc* that points back to the sentence before it in its paragraph
    (:func:`~odcf.textutil.points_back`: "It was restarted at a reduced dose of 500 mg …" after "Metformin
    was held on admission …"), the text of that sentence, after the one that opens the chain when that one
    points back too ("Do not increase the dose unless …" is scored after both): what it speaks of is named
    only there, and the budget delivers it only with them. Scored alone, "It was restarted …" did not
    match the query's "metformin" and ranked below a furosemide dose nobody asked for."""
    out: dict[str, str] = {}
    root: dict[str, Segment] = {}  # the sentence that opens each chain
    prev: Segment | None = None
    for seg in doc.segments:
        if (prev is not None and seg.kind == "sentence" and prev.kind == "sentence" and not prev.dropped
                and prev.source_id == seg.source_id and prev.paragraph == seg.paragraph and "speaker" not in seg.meta
                and points_back(seg.original, prev.original)):
            first = root[seg.id] = root.get(prev.id, prev)
            out[seg.id] = prev.text if first is prev else f"{first.text} {prev.text}"
        prev = seg
    return out


def density(seg: Segment) -> float:
    """Share of the segment's characters covered by protected spans (markers count as 0.5)."""
    if not seg.original:
        return 0.0
    covered = [False] * len(seg.original)
    marker = False
    for sp in seg.protected:
        if sp.rule.startswith("marker:"):
            marker = True
            continue
        for k in range(max(0, sp.start), min(len(covered), sp.end)):
            covered[k] = True
    d = sum(covered) / len(covered)
    if marker:
        d = max(d, 0.5)
    return min(1.0, d * 2.0)


#: A word as :func:`fact_density` reads it: what lies between spaces, its outer punctuation left off.
_FACT_WORD_RE = re.compile(r"\S+")
_OUTER_PUNCT = "\"'“”‘’«»()[]{}<>.,;:!?…*_~|^=+-–—/\\"
#: A token after which the next word opens a sentence (its capital says nothing).
_ENDS_SENTENCE_RE = re.compile(r"[.!?:…]['\"”’)\]]*$")


def _name_like(core: str, *, opens: bool) -> bool:
    """Whether *core*, a word without its outer punctuation, names something: an @handle or a #tag,
    a figure ("48,500", "A320", "2027"), or a capital letter not opening a sentence ("Srinagar",
    "DRDO"; "I" aside)."""
    if core[0] in "@#" and len(core) > 1:
        return True
    if any(c.isdigit() for c in core):
        return True
    return not opens and core[0].isupper() and core != "I"


#: What a word named by its capital alone weighs in :func:`fact_density`, against a figure's 1.
_CAPITAL_WEIGHT = 0.5
#: In how many segments of one source a word must open in capitals to be that text's defined term or
#: running name ("the Parties", "the Agreement", "Supplier"), which names no new fact where it recurs.
_RECURRING_SEGMENTS = 3


#: Small words that a capital turns into Title Case where they do not open a sentence ("Follow Us on …").
_SMALL_WORDS = (STOPWORDS - {"the"}) | {"us"}


def _all_caps(core: str) -> bool:
    return len(core) > 1 and core.isalpha() and core.isupper()


def recurring_capitals(segments: Sequence[Segment]) -> dict[str, frozenset[str]]:
    """Per source, the words (lower-cased) that open in a capital in at least :data:`_RECURRING_SEGMENTS`
    of its segments: its defined terms and running names, which :func:`fact_density` does not count."""
    seen: dict[str, Counter[str]] = {}
    for seg in segments:
        caps = {core.lower() for core in (tok.strip(_OUTER_PUNCT) for tok in seg.original.split())
                if core and core[0].isupper()}
        seen.setdefault(seg.source_id, Counter()).update(caps)
    return {src: frozenset(w for w, n in counts.items() if n >= _RECURRING_SEGMENTS)
            for src, counts in seen.items()}


#: A numbered part's own number opening a segment, its label and not a word of what it says: a dotted number
#: before a capitalised word or the line's end ("10.1 Subject to …", "## 12.2"), or in a heading a plain one
#: ("## 10. Limitation of Liability"); not "3.5 million …".
_LABEL_RE = re.compile(r"[ \t>#*_-]*(\d+(?:\.\d+)+)\.?(?=[ \t]+[A-Z(\"“]|[ \t]*$)")
_HEADING_LABEL_RE = re.compile(r"[ \t>#*_-]*\d+(?:\.\d+)*[.:)]?(?=[ \t]|$)")


def pointers(seg: Segment) -> tuple[int, list[tuple[int, int]]]:
    """Where *seg* names parts of a text by number: the end of its own number opening it (:data:`_LABEL_RE`;
    0 without one), which :func:`fact_density` does not count as a word, and the spans of the parts it
    refers to by number ("Clause 12.1", "Clauses 10.1 and 10.2", "§ 3"; :data:`_CLAUSE_REF_RE`), which
    :func:`provision_references` resolves.

    >>> from odcf.document import Segment
    >>> t = "12.2 The obligations in Clause 12.1 survive termination for 5 years."
    >>> end, refs = pointers(Segment(id="a", source_id="s", index=0, text=t, original=t, kind="sentence"))
    >>> t[:end], [t[a:b] for a, b in refs]
    ('12.2', ['Clause 12.1'])
    """
    text = seg.original
    label = (_HEADING_LABEL_RE if seg.kind == "heading" else _LABEL_RE).match(text)
    refs: list[tuple[int, int]] = []
    for m in _CLAUSE_REF_RE.finditer(text):
        end = m.end()  # "Clauses 10.1 and 10.2", "Sections 9.1, 9.2 and 14"
        plural = m.group(1) == "§§" or m.group(1).rstrip(".").lower().endswith("s")
        while (more := _MORE_NUMBERS_RE.match(text, end)) is not None and (plural or more.group(0).strip()[0] not in ",;&"):
            end = more.end()
        refs.append((m.start(), end))
    return (label.end() if label else 0), refs


def fact_density(seg: Segment, recurring: Collection[str] = frozenset()) -> float:
    """Weighted share of the segment's words that carry a fact, capped at 1. A figure, an @handle or #tag,
    or a word inside a protected span that is not a connective, a marker or a name (numbers, codes, terms)
    weighs 1; a name — a capital not opening a sentence, or a protected span with no figure that the entity
    model found or that opens in a capital ("LinkedIn") — weighs :data:`_CAPITAL_WEIGHT`, and nothing where it is one of *recurring* (the source's
    defined terms, :func:`recurring_capitals`), in a run of capitals ("IN WITNESS WHEREOF", "THIS MASTER
    SUPPLY AGREEMENT"), or in Title Case — a segment with a capitalised small word not opening a sentence,
    "Follow Us on Twitter", "Written Above" — or where fewer than one word in four opens in lower case (a
    title or a menu, "Home About Contact", names nothing by them). A numbered clause's own number opening it
    is its label, not one of its words (:func:`pointers`): counted as a figure it gave every short clause a
    fact, "12.2 The obligations in Clause 12.1 survive termination for 5 years." one in eleven words, a long
    one next to none, and with no query 12.2 scored 0.91 where the liability cap, "10.1 Subject to Clause
    10.3, … shall not exceed 15% of the Contract Value.", scored 0.42 and went out (QA). A reference to
    another part ("Clause 12.1") still counts: it says which part a clause changes, and a contract's
    limitation clauses carry few figures besides. For a document with no query, where similarity to the
    plan's generic queries says little about which segment holds facts."""
    text = seg.original
    if not text:
        return 0.0
    label = pointers(seg)[0]
    facts: list[tuple[int, int]] = []
    names: list[tuple[int, int]] = []
    for sp in seg.protected:
        if sp.rule.startswith(("marker", "connective", "dep:")):
            continue
        span = text[sp.start:sp.end]
        # a name, found by the entity model or by its shape ("LinkedIn"), not a figure, code or term
        name = not any(c.isdigit() for c in span) and (sp.rule.startswith("entity:") or span[:1].isupper())
        (names if name else facts).append((sp.start, sp.end))
    words_: list[tuple[str, bool, str]] = []  # (core, opens a sentence, "fact" | "name" | "")
    opens = True
    last = 0
    for m in _FACT_WORD_RE.finditer(text):
        tok = m.group(0)
        if "\n" in text[last:m.start()]:
            opens = True
        last = m.end()
        core = tok.strip(_OUTER_PUNCT)
        if m.start() < label:  # "12.2" of "12.2 The obligations …": the word after it opens the sentence
            continue
        if not core or not any(c.isalnum() for c in core):
            opens = opens or bool(_ENDS_SENTENCE_RE.search(tok))
            continue
        inside = "fact" if any(a < m.end() and m.start() < b for a, b in facts) else (
            "name" if any(a < m.end() and m.start() < b for a, b in names) else "")
        words_.append((core, opens, inside))
        opens = bool(_ENDS_SENTENCE_RE.search(tok))
    n = len(words_)
    if not n:
        return 0.0
    lower = sum(1 for core, _, _ in words_ if core[0].islower())
    title_case = any(not o and len(core) > 1 and core[0].isupper() and core.lower() in _SMALL_WORDS
                     for core, o, _ in words_)
    weight = 0.0
    for i, (core, o, inside) in enumerate(words_):
        if inside == "fact" or _name_like(core, opens=True):  # a figure, an @handle or #tag
            weight += 1.0
        elif (not core[0].isupper() or core == "I" or (o and not inside) or lower * 4 < n or title_case
              or core.lower() in recurring
              or (_all_caps(core) and any(_all_caps(words_[j][0]) for j in (i - 1, i + 1) if 0 <= j < n))):
            continue
        else:
            weight += _CAPITAL_WEIGHT
    return min(1.0, weight / n)


class LexicalRanker(Stage):
    """Score live segments; record which scorer ran in ``doc.meta['scorer']``."""

    name = "rank"
    requires = frozenset({"segments"})
    provides = frozenset({"scores"})

    def __init__(self, *, query_weight: float = 2.0, density_weight: float = 1.0) -> None:
        self.query_weight = query_weight
        self.density_weight = density_weight

    def __call__(self, doc: Document, plan: Plan) -> Document:
        # scored in NFC: the same text with combining accents scores the same (odcf.stages.base.in_nfc)
        return with_text_of(self._score(in_nfc(doc), plan), doc)

    def _score(self, doc: Document, plan: Plan) -> Document:
        live = [s for s in doc.segments if not s.dropped and s.layer not in PINNED_LAYERS]
        recurring = recurring_capitals(live) if not doc.query else {}
        tokenized = [words(t, stop=True) for t in scoring_texts(doc, live)]
        bm25 = BM25(tokenized) if live else None
        rel = [0.0] * len(live)
        used_queries = 0
        if bm25 is not None:
            if doc.query:
                q = words(doc.query, stop=True)
                if q:
                    used_queries += 1
                    for i, v in enumerate(bm25.scores(q)):
                        rel[i] += self.query_weight * v
            for query in plan.queries:
                q = words(query.text + " " + " ".join(query.terms), stop=True)
                if not q:
                    continue
                used_queries += 1
                scores = bm25.scores(q)
                top = max(scores) if scores else 0.0
                if top > 0:
                    for i, v in enumerate(scores):
                        rel[i] += v / top
        top_rel = max(rel) if rel else 0.0
        new: dict[str, Segment] = {}
        raw: list[float] = []
        for seg, r in zip(live, rel):
            relevance = (r / top_rel) if top_rel > 0 else 0.0
            d = density(seg)
            if not doc.query and detect_language(seg.text[:400]) == "en":
                # no query to steer by: the share of its words that carry a fact (figures; names at half weight)
                d = max(d, fact_density(seg, recurring.get(seg.source_id, frozenset())))
            raw.append((0.2 + relevance) * (0.5 + self.density_weight * d))
        top_raw = max(raw) if raw else 0.0
        names, hits, failing = query_hits(live, doc.query, [a.regex for a in plan.protection.anchors],
                                          [(a.name, a.regex) for a in plan.protection.anchors])
        scores, boilerplate = demote_boilerplate(
            live, {seg.id: (round(v / top_raw, 6) if top_raw > 0 else 0.0) for seg, v in zip(live, raw)})
        scores, courtesies = demote_pleasantries(live, scores)
        levelled = 0
        outcome = 0
        if not doc.query:  # a log's errors first (with a query, after the lifts: the level breaks ties only)
            scores, levelled = rank_log_levels(doc.segments, scores, query=False)
            scores, outcome = lift_final_outcome(live, scores)
        scores = lift_hits(scores, hits, failing=failing)
        # before the corrections: one that corrects an answer still ranks just above it
        scores, answers = lift_answers(doc.segments, scores)
        links = correction_links(live)
        scores, corrected = lift_corrections(live, scores, links)
        constraint_why = constraint_reasons(live)
        scores, constraints = lift_constraints(live, scores, links, reasons=constraint_why)
        scores, outputs = lift_cell_outputs(live, scores)
        named_by: dict[str, list[str]] = {}  # a numbered provision -> the segments naming it by its number
        referenced = 0
        if not doc.query:
            for referrer, provision in provision_references(live).items():
                for sid in provision:
                    named_by.setdefault(sid, []).append(referrer)
            scores, referenced = lift_referenced(scores, named_by)
        if doc.query:
            scores, levelled = rank_log_levels(doc.segments, scores, query=True)
        level_reasons = {} if doc.query else log_level_reasons(live)
        ends = set() if doc.query else final_outcome(live)
        corrected_by: dict[str, list[str]] = {}
        for fix, stale in links.items():
            for sid in stale:
                corrected_by.setdefault(sid, []).append(fix)
        for seg in live:
            new[seg.id] = seg.replace(score=scores[seg.id])
            if seg.id in level_reasons:
                new[seg.id] = new[seg.id].with_reason(level_reasons[seg.id])
            if seg.id in ends:
                new[seg.id] = new[seg.id].with_reason(
                    "rank: the end of an agent trajectory, from its last submit action; with no query it scores as "
                    "the best segment of its source")
            if seg.id in constraint_why:
                new[seg.id] = new[seg.id].with_reason(constraint_reason(constraint_why[seg.id]))
            if seg.id in corrected_by:
                # the budget delivers it only with its corrections (see odcf.stages.budget)
                fixes = corrected_by[seg.id]
                new[seg.id] = new[seg.id].replace(meta={**seg.meta, "corrected_by": fixes}).with_reason(
                    f"rank: corrected by {', '.join(fixes)}, a later segment that changes what it says; "
                    "delivered only with it")
            if seg.id in named_by:
                # rerank lifts it again after its own scoring (odcf.stages.rerank)
                by = named_by[seg.id]
                new[seg.id] = new[seg.id].replace(meta={**new[seg.id].meta, "named_by": by}).with_reason(
                    f"rank: named by its number in {', '.join(by)}; with no query it scores at least as "
                    f"{'they do' if len(by) > 1 else 'that segment does'}")
        for seg in doc.segments:
            if seg.layer in PINNED_LAYERS and not seg.dropped:
                new[seg.id] = seg.replace(score=1.0)
        segments = tuple(new.get(s.id, s) for s in doc.segments)
        langs = Counter(detect_language(s.text[:400]) for s in live[:200])
        scorer = "bm25+density"
        meta = dict(doc.meta)
        meta["scorer"] = scorer
        event = TraceEvent(stage=self.name, data={
            "scorer": scorer, "segments": len(live), "queries": used_queries,
            "languages": dict(sorted(langs.items())),
            **({"query_identifiers": names, "exact_matches": len(hits | failing)} if names else {}),
            **({"answers_raised": answers} if answers else {}),
            **({"corrections_raised": corrected} if corrected else {}),
            **({"constraints_raised": constraints} if constraints else {}),
            **({"cell_outputs_raised": outputs} if outputs else {}),
            **({"referenced_raised": referenced} if referenced else {}),
            **({"corrections_linked": len(corrected_by)} if corrected_by else {}),
            **({"log_levels_ranked": levelled} if levelled else {}),
            **({"outcome_raised": outcome} if outcome else {}),
            **({"boilerplate_demoted": boilerplate} if boilerplate else {}),
            **({"pleasantries_demoted": courtesies} if courtesies else {}),
        })
        return doc.with_event(event, segments=segments, meta=meta)
