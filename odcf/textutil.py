"""Small text helpers shared by stages: script detection, word splitting, sentence splitting.

Chinese words come from ``jieba`` (loaded lazily, once); everything else is split with a
Unicode word regex and lowercased.

>>> from odcf.textutil import split_sentences
>>> [s for s, e in split_sentences("One. Two! 三。四？")]
[0, 5, 10, 12]
"""
from __future__ import annotations

import functools
import json
import logging
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

logger = logging.getLogger(__name__)


def loads_json(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads`` for text from users: a value nested deeper than the decoder can follow is a
    :class:`json.JSONDecodeError` (a ``ValueError``) like any other text that is not JSON, not a
    ``RecursionError`` that escapes every handler written for bad JSON.

    >>> loads_json('{"a": [1]}')
    {'a': [1]}
    >>> loads_json("[" * 100000)
    Traceback (most recent call last):
    json.decoder.JSONDecodeError: nested too deeply to decode: line 1 column 1 (char 0)
    """
    try:
        return json.loads(text, **kwargs)
    except RecursionError:
        doc = text if isinstance(text, str) else text.decode("utf-8", errors="replace")
        raise json.JSONDecodeError("nested too deeply to decode", doc, 0) from None


def json_kind(value: Any) -> str:
    """How a JSON value is named in a message: ``a number (5)``, ``a string ('x')``, ``an array``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, Mapping) else type(value).__name__


def quote_pattern(pattern: str) -> str:
    r"""*pattern* in a message as it is written in YAML single quotes: a backslash stays one backslash
    and a ``'`` is doubled, so the text can be copied back into the file. QA s32: a state pattern written
    ``'^CLM-\d{4}-\d{6}$'`` was quoted as Python's repr, ``'^CLM-\\d{4}-\\d{6}$'``, which in single
    quotes matches a backslash and a ``d``. A pattern holding a character that does not print (a control
    character, which the ontology check refuses) is quoted as Python's repr, which shows it as an escape.

    >>> print(quote_pattern(r"^CLM-\d{4}$"), quote_pattern("it's"), quote_pattern("a\x08b"))
    '^CLM-\d{4}$' 'it''s' 'a\x08b'
    """
    if not pattern.isprintable():
        return repr(pattern)
    return "'" + pattern.replace("'", "''") + "'"


def is_json(value: Any, kind: str) -> bool:
    """Whether a parsed JSON *value* is of the JSON type *kind* (``integer`` is not ``true``)."""
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, {"string": str, "boolean": bool, "object": Mapping, "array": list}[kind])


def check_fields(obj: Any, spec: Mapping[str, tuple[str, bool]], where: str, out: list[str]) -> bool:
    """Append to *out* a ``path: expected ..., got ...`` line for each field of the parsed JSON object
    *obj* that *spec* (``{field: (JSON type, required)}``) does not allow; a field not required may be
    null. False when *obj* is not an object at all.

    >>> out = []
    >>> check_fields({"a": "1"}, {"a": ("integer", False), "b": ("string", True)}, "x", out), out
    (True, ["x.a: expected an integer or null, got a string ('1')", 'x.b: missing'])
    """
    if not isinstance(obj, Mapping):
        out.append(f"{where}: expected an object, got {json_kind(obj)}")
        return False
    for key, (kind, required) in spec.items():
        path = f"{where}.{key}" if where else key
        value = obj.get(key)
        article = "an" if kind[0] in "aeiou" else "a"
        if value is None:
            if required:
                out.append(f"{path}: missing" if key not in obj else f"{path}: expected {article} {kind}, got null")
        elif not is_json(value, kind):
            out.append(f"{path}: expected {article} {kind}{'' if required else ' or null'}, got {json_kind(value)}")
    return True

#: CJK ideographs, kana and hangul (a regex character-class body).
_CJK_CHARS = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RE = re.compile(f"[{_CJK_CHARS}]")
#: A character at U+0250 or above (past Latin Extended-B): not a Latin letter for detect_language.
_BEYOND_LATIN_RE = re.compile("[^\x00-\u024f]")
#: Han characters only (no kana or hangul): the script that is written without spaces between words.
HAN_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN_WORD_RE = re.compile(r"[^\W_]+(?:[-'.][^\W_]+)*", re.UNICODE)

#: Words that only lead into what follows them (prepositions, articles, possessives, "and"/"or"): a clause cut
#: after one of them, or thinned down to one, dangles ("a 15% drop in.", "notice to the.").
DANGLING_WORDS = frozenset(
    "a an the of in on at to for with by from into onto upon about over under between through across per via as "
    "than and or nor its their his her our your my this these those".split())

STOPWORDS = frozenset(
    """a an the and or of to in on at for by with from as is are was were be been being it its this that
    these those there here what which who whom whose when where why how do does did done have has had
    having i me my we our you your he him his she her they them their not no nor so than too very can
    will just should would could may might must shall into over under about after before between through
    during above below up down out off again further then once all any both each few more most other
    some such only own same s t don also if but because until while""".split()
)


def cjk_ratio(text: str) -> float:
    """Share of non-space characters that are CJK."""
    # str.split() cuts at exactly the characters str.isspace() names, and no CJK character is one
    visible = sum(map(len, text.split()))
    if not visible:
        return 0.0
    return len(_CJK_RE.findall(text)) / visible


def has_visible_text(text: str) -> bool:
    """Whether *text* holds a character that is neither white space nor an invisible format
    character (a byte order mark, zero-width spaces, joiners, bidi marks and embeddings: Unicode
    category Cf).

    >>> has_visible_text("\\ufeff\\u200b \\n"), has_visible_text("\\ufeffok")
    (False, True)
    """
    return any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in text)


def detect_language(text: str) -> str:
    """``zh`` when CJK characters dominate, ``en`` for mainly Latin script, else ``other``."""
    if cjk_ratio(text) >= 0.2:
        return "zh"
    letters = "".join(filter(str.isalpha, text))
    if not letters:
        return "en"
    latin = len(letters) - len(_BEYOND_LATIN_RE.findall(letters))  # the letters below U+0250
    return "en" if latin / len(letters) >= 0.7 else "other"



def not_for_english_ner(text: str, main_language: str = "auto") -> str | None:
    """Why the English spaCy model should not read *text*: its detected language (``zh``,
    ``other``); ``None`` when it reads as English.

    Each segment's own language decides, not the plan's: a ``language: zh`` domain still quotes
    English invoices, and their names need the English NER; Chinese text goes to the rules,
    anchors and number patterns instead, which the English model cannot replace. The plan's
    ``language`` (the domain's main language) settles only the undecided case: text of another
    script counts as English in an ``en`` domain.

    >>> not_for_english_ner("Siam Servo Co., Ltd.", "zh"), not_for_english_ner("乙方不得转让合同。", "en")
    (None, 'zh')
    >>> not_for_english_ner("Ζ-7 Ωmega", "en"), not_for_english_ner("Ζ-7 Ωmega", "auto")
    (None, 'other')
    """
    lang = detect_language(text[:400])
    if lang == "en" or (lang == "other" and main_language == "en"):
        return None
    return lang

@functools.lru_cache(maxsize=1)
def _jieba():  # pragma: no cover - exercised through words()
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def words(text: str, *, stop: bool = False) -> list[str]:
    """Lowercased word tokens, in NFC (:func:`nfc`). CJK runs go through jieba; ``stop=True`` removes stopwords."""
    out: list[str] = []
    text = nfc(text)
    if _CJK_RE.search(text):
        jb = _jieba()
        for tok in jb.lcut(text):
            tok = tok.strip().lower()
            if not tok or not any(ch.isalnum() for ch in tok):
                continue
            if _CJK_RE.search(tok):
                out.append(tok)
            else:
                out.extend(m.group(0).lower() for m in _LATIN_WORD_RE.finditer(tok))
    else:
        out = [m.group(0).lower() for m in _LATIN_WORD_RE.finditer(text)]
    if stop:
        out = [w for w in out if w not in STOPWORDS]
    return out


#: How a sentence piece ends when its sentence goes on after it (a clause cut at "；"; not ",", which ends
#: many a transcript line: "So, um,"): odcf.stages.segment marks such a piece that its paragraph goes on
#: after, odcf.render writes " …" after it when what follows is not delivered.
CLAUSE_GOES_ON = ("；", ";", "，")

_ABBREV = frozenset(
    """e.g i.e etc vs mr mrs ms dr prof sr jr st no nos fig figs sec art para cf al inc ltd co corp
    jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k approx dept est
    ins assn bros cos mfg intl div govt rm apt ste bldg fl ave blvd rd hwy mt
    vol vols ch chap pt pts pp ex exh ref nr tel ext gen col capt lt sgt rev hon eq ca incl excl""".split()
)
# Units ("12 ft.", "30 min.") are not listed: before a lower-case word there is no cut anyway, and
# before a capital ("for 30 min. Then …") they usually end the sentence.
#: Qualifiers and references that stand before a number ("max. 3,000 rpm", "min. 800", "(pos. 5)",
#: "Tab. 2", "Art. 5 Abs. 2", "incl. 19% VAT"): before a digit they do not end a sentence; before a
#: capital they may ("… at the max. Then …"). After a number, "min." is a unit, which may end one
#: ("for 30 min. 3 runs followed.").
_ABBREV_BEFORE_NUMBER = frozenset(
    """max min pos tab tbl abs incl excl avg abb ziff kap bd rn rz nr no nos p pp ca approx
    fig figs sec art para vol ref eq ch chap pt""".split()
)
_UNITS_BEFORE_NUMBER = frozenset({"min"})
#: Words of a journal's abbreviated title in a reference ("Electrochim. Acta 300 (2019)", "J. Electrochem.
#: Soc. 167"), written with a capital: such a word never ends a sentence.
_TITLE_ABBREV = frozenset(
    """Electrochim Electrochem Soc Chem Phys Lett Mater Sci Appl Eng Commun Proc Trans Res Technol Biol
    Biochem Biophys Geophys Astrophys Natl Acad Int Environ Nucl Opt Mech Comput Mol Anal Inorg Polym Catal
    Annu Bull Jpn Eur Clin Exp Pharmacol Physiol Neurosci Psychol Ecol Microbiol Immunol Genet Struct
    Dyn Electron Photonics Ind Adv Rep Syst Sens Surf Interfaces Nanotechnol Energ Spectrosc""".split()
)

# A sentence ends at . ! ? followed by space and a likely sentence start (a capital, Latin with its
# accents as Vietnamese writes them, "Ấn định …", Greek or Cyrillic, a digit, a CJK character, "Done. 下一步。",
# or a Hangul syllable however it is written: precomposed, or as the leading consonant of its jamo, as NFD has it), or right after a CJK full stop, exclamation, question mark or
# semicolon. An opening quotation mark or bracket may stand before that start, a curly quote or a bracket
# with one space after it as in tokenised text ("… in a precise manner . ( File Photo ) The DRDO …",
# "“ Presently , …"; not a straight quote, which as often closes the sentence before: 'stop now . " Then'). The closing
# quotation marks and brackets right after the mark (group "close" or "cjk") belong to the sentence they
# close: 'the pump "simply stopped running."', '他说：“我不去。”'.
_CLOSERS = "\"'\u201d\u2019)\\]\u00bb\u300d\u300f\uff09"
#: The roles of a chat with an agent, as its tags and labels name them ("user:", "[assistant]").
ROLE_WORDS = r"user|assistant|system|tool|human|ai|bot|agent|model|function|developer|customer"
#: A separator run between two messages ("---", "===", "___", "***"): after a sentence's end on one line and with
#: text after it on that line, it opens the next message of a thread whose lines were joined ("… within 4 days.  ---
#: Message 3 — Agent …"); one that ends its line closes what it follows ("… before Tier 2 approves it. ***").
SEPARATOR_RUN = r"(?:-{3,}|={3,}|_{3,}|\*{3,})(?=[ \t]+\S)"
SEPARATOR_RE = re.compile(SEPARATOR_RUN)
#: What opens a message inside a line after a sentence's end: a separator run, or a chat role's label in
#: lower case, which a sentence never opens with ("… arrived today. agent: …"; a capitalised label,
#: "Message 3 (customer, 2024-05-01):", "From: …", is a sentence start anyway).
MESSAGE_OPEN_RE = re.compile(SEPARATOR_RUN + r"|(?:" + ROLE_WORDS + r")(?:[ \t]*\([^()\n]{1,24}\))?:[ \t]")
_BOUNDARY_RE = re.compile(
    r"(?:(?<=[.!?])(?P<close>[" + _CLOSERS + r"]*)\s+"
    # a footnote opens with its mark: "¹ Restated for …", "† Not audited."
    r"(?=(?:[\"'\u201c\u2018(\[\u300c\u300e]|[\u201c\u2018(\[\u300c\u300e] )?[A-Z0-9\u00c0-\u024f\u1e00-\u1eff\u0391-\u03a9\u0400-\u042f\u1100-\u115f"
    r"\u00b9\u00b2\u00b3\u2070-\u2079\u2020\u2021" + _CJK_CHARS + "]"
    r"|" + MESSAGE_OPEN_RE.pattern + ")"
    r"|(?<=[\u3002\uff01\uff1f\uff1b])(?P<cjk>[" + _CLOSERS + r"]*)\s*)"
)


def split_sentences(text: str, *, semicolons: bool = True) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence in *text*, whitespace between sentences excluded; the
    closing quotation marks and brackets after a sentence's final mark are part of it.

    >>> t = 'He said "it stopped." Then 他说：“不行。”然后走了。'
    >>> [t[a:b] for a, b in split_sentences(t)]
    ['He said "it stopped."', 'Then 他说：“不行。”', '然后走了。']

    Without *semicolons*, a "；" ends no sentence: odcf.stages.segment cuts a sentence at it only where it
    cuts an English one at ";", past 240 characters (QA: "第6.1条规定的违约金为合同总价款的百分之五；" went out
    without "但是，因不可抗力导致的延误除外。", while "…; however, … are excluded." stayed whole).
    """
    spans: list[tuple[int, int]] = []
    start = 0
    n = len(text)
    for m in _BOUNDARY_RE.finditer(text):
        mark = m.start()  # right after the final . ! ? 。 …
        if mark <= start or (not semicolons and text[mark - 1] == "\uff1b"):
            continue
        if (_ends_with_abbreviation(text[start:mark], text[m.end():m.end() + 1])
                and not SEPARATOR_RE.match(text, m.end())) or _in_inline_code(text, start, mark):
            continue  # "Acme Ltd.  --- Message 3 …": a separator ends the sentence, whatever its last word
        spaced = m.group("close") is not None
        closers = m.group("close") if spaced else m.group("cjk")
        cut = mark + _closing(text, start, mark, closers, spaced=spaced)
        spans.append((start, _rstrip_end(text, start, cut)))
        # a straight quote after 。 that opens the next sentence ('。"下一句"') starts it
        start = m.end() if cut == mark + len(closers) else cut
    if start < n:
        end = _rstrip_end(text, start, n)
        if end > start:
            spans.append((start, end))
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if e <= s:
            continue
        if out and _bare_tail(text[s:e]) and "\n" not in text[out[-1][1]:s]:
            out[-1] = (out[-1][0], e)  # "5)." after "(pos." is the end of that sentence, not one of its own
        else:
            out.append((s, e))
    return out


#: A piece with no word in it, of one or two tokens, that is not a number opening what follows ("2.", "(3)",
#: "iv."): "5).", "2, 3).", the tail of a sentence cut after an abbreviation the list does not know.
_LABEL_RE = re.compile(r"[(\[]?\d+(?:\.\d+)*[.)\]]?")


def _bare_tail(piece: str) -> bool:
    return (len(piece.split()) <= 2 and not any(ch.isalpha() for ch in piece)
            and _LABEL_RE.fullmatch(piece) is None)


#: The farthest a sentence mark may be from the backticks around it to count as inside inline code.
INLINE_CODE_CHARS = 80


def _in_inline_code(text: str, start: int, mark: int) -> bool:
    """Whether *mark* lies inside a markdown code span opened since *start* and closed later on its
    line ("(`SELECT ... FOR UPDATE`)" is one sentence, not two)."""
    if text.count("`", start, mark) % 2 == 0:
        return False
    opened = text.rfind("`", start, mark)
    eol = text.find("\n", mark)
    closed = text.find("`", mark, min(eol if eol >= 0 else len(text), mark + INLINE_CODE_CHARS))
    return mark - opened <= INLINE_CODE_CHARS and closed >= 0  # a short code span, not a stray backtick


def _closing(text: str, start: int, mark: int, closers: str, *, spaced: bool) -> int:
    """How many of *closers*, the quotation marks and brackets right after a sentence's final mark at
    *mark*, close that sentence. Before white space, all of them; after a CJK mark with no space, a
    straight quote (which opens as well as closes) only when the sentence holds an odd number of it:
    '他说:"我不去。"然后' closes, '第一句。"第二句"是引用。' opens the next sentence."""
    if spaced:
        return len(closers)
    k = 0
    for ch in closers:
        if ch in "\"'" and text.count(ch, start, mark + k) % 2 == 0:
            break
        k += 1
    return k


def _rstrip_end(text: str, start: int, end: int) -> int:
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _ends_with_abbreviation(sentence: str, after: str = "") -> bool:
    """Whether *sentence* ends in an abbreviation's "." rather than its own, *after* being the first
    character of what follows."""
    tail = sentence.rstrip()
    if not tail.endswith("."):
        return False
    words = tail[:-1].split()
    word = words[-1].lstrip("(\"'[") if words else ""
    if word in _TITLE_ABBREV:
        return True
    word = word.lower()
    if word in _ABBREV:
        return True
    if (after[:1].isdigit() and word in _ABBREV_BEFORE_NUMBER
            and not (word in _UNITS_BEFORE_NUMBER and len(words) > 1 and words[-2][:1].isdigit())):
        return True
    # single initials ("J. Smith") and dotted acronyms ("U.S.")
    return len(word) == 1 and word.isalpha() or bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]", word))


#: Sentence openers that point back to the sentence before ("However, this obligation does not
#: apply …"): delivered without that sentence, such a sentence qualifies whatever precedes it in
#: the compressed text instead. Cause, contrast and exception words, and times told relative to the
#: sentence before ("The following year", "同年": after another sentence they name another year; "After that,",
#: "Thereafter", "From then on", "After this period", "Subsequently": after another one they start another clock;
#: not "After this Agreement ends, …", which names its own event, nor with a year of their own,
#: :data:`_OWN_YEAR_RE`);
#: "Provided that …", a proviso to the sentence before (across a blank line too: the paragraph above's last one);
#: a fallback to what the sentence before asks, "If that is not possible, I need a hire car until then.", "If not, …",
#: "Failing that, …", "Otherwise, …" (QA s34 A F4: delivered without "I need the car back before 12 June …", it asked
#: for a hire car with no date); not "If not for the rain …", "If that is possible, …";
#: "and", "so" and "also" open too many self-contained sentences (speech above all) to count.
_BACK_REFERENCE_RE = re.compile(
    r"^[\"'\u201c\u2018(\[]*(?:(?:however|but|yet(?! another)|nevertheless|nonetheless|therefore|thus|hence|"
    r"consequently|accordingly|conversely|as a result|even so|by contrast|in contrast|on the other hand|"
    r"despite (?:this|that|these)|notwithstanding (?:the foregoing|this|that|the above)|moreover|furthermore|"
    r"additionally|(?:in |later )?(?:that|the same|the following|the next) (?:year|month|week|day|morning|evening)"
    r"|later that (?:year|month|week|day)|thereafter|subsequently|from then on"
    r"|after (?:that|this|these|those)(?=\s*,)|after (?:that|this|these|those) (?:periods?|dates?|times?|points?|years?"
    r"|months?|weeks?|days?)"
    r"|provided(?:,\s*however,)?\s+that"
    r"|if\s+(?:that|this)\s+(?:is\s+not|isn['’]t|was\s+not|wasn['’]t)\s+(?:possible|feasible|an\s+option))(?![\w-])"
    r"|(?:if\s+not|failing\s+(?:that|this))(?=\s*,)"
    r"|(?:instead|otherwise|in addition|in (?:that|this|such) case)(?=\s*,)"  # "Instead of …" looks ahead
    r"|(?:但是|但(?![丁凡])|然而|可是|不过|因此|所以|因而|从而|否则|此外|另外|尽管如此|即便如此|除此之外"
    r"|同年|同月|同日|当年|当月|当日|当天|次年|翌年|次月|次日|翌日|随后|其余))",
    re.IGNORECASE,
)
#: A time told from the sentence before ("Thereafter", "Subsequently", "From then on", "After that"), and a year
#: of the sentence's own, "Thereafter the council took over the route in 1968 …": its time needs nothing before it.
_RELATIVE_TIME_RE = re.compile(r"(?i:thereafter|subsequently|from then on|after (?:that|this|these|those))\b")
_OWN_YEAR_RE = re.compile(
    r"(?:\b(?i:in|since|from|until|till|by|during|before|after)\s+|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
    r"[a-z]*\.?\s+(?:\d{1,2},?\s+)?)(?:1[5-9]|20)\d{2}\b(?![.,]\d|\s*%)|\b(?:1[5-9]|20)\d{2}-\d{2}-\d{2}\b")


#: A Chinese clause opening with a condition on the violation before it, "情节严重的，处5万元以上50万元以下罚款。",
#: "逾期不改正的，", "拒不改正或者造成严重后果的，", "构成犯罪的，": a statute's penalty tail, which, delivered alone,
#: reads as the penalty of whatever article precedes it. Not a condition with its own subject ("乙方逾期交货的，",
#: "投标人少于三个的，"): tied to the clause before, a contract's answer went only with its neighbour's.
_ZH_CONDITION_RE = re.compile(
    r"^[\"'\u201c\u2018(\[]*(?:情节[^，,。；]{0,4}|逾期[^，,。；]{0,4}改正|拒不[^，,。；]{0,14}|经[^，,。；]{0,10}仍[^，,。；]{0,8}"
    r"|造成[^，,。；]{0,10}(?:后果|损失|危害|影响)|构成犯罪|(?:屡|再次|多次)[^，,。；]{0,8})的(?=[，,])")
#: A short sentence whose subject is a pronoun ("It has been stopped.", "This must not be
#: restarted.", "该药不得恢复使用。") names what it speaks of only in the sentence before it; a long one
#: carries enough of its own. A capitalised word after the pronoun is a name ("This Agreement").
_PRONOUN_OPENER_RE = re.compile(
    r"^[\"'\u201c\u2018(\[]*(?:(?i:it|this|that|these|those|they|such)(?=\s+[a-z])|(?:它|其|该|此|这)(?![些里样么种])"
    r"(?=[\u4e00-\u9fff]))")
_PRONOUN_MAX_WORDS = 12
_PRONOUN_MAX_CJK = 24
#: "It" and "They" as a subject, and "Its"/"Their" opening a sentence ("Their rated output is
#: exactly 750 W."), point back at any length ("It renews automatically for successive
#: 12-month periods unless …" says nothing of what renews) — except "it" as a dummy subject whose
#: real subject follows within a few words: "It is likely that …", "It took three weeks to …" (not "It
#: was restarted at a reduced dose of 500 mg on 7 March after creatinine returned to …").
_PERSONAL_PRONOUN_RE = re.compile(
    r"^[\"'\u201c\u2018(\[]*(?:(?i:it|they|its|their)|(?:His|Her) (?:Honour|Honor|Lordship|Ladyship))(?=\s+[a-z])"
    r"(?!\s+(?:is|was|'s|would be|will be|could be|may be|might be|has been|had been|seems|seemed|appears|appeared"
    r"|remains|remained|takes|took|turns out|turned out|follows|followed|makes|made)\b[^.;:!?\d]{0,40}?"
    r"\b(?:that|to|whether|if|how|why|when|what)\b)")


def back_reference(sentence: str) -> str | None:
    """The opener of *sentence* that points back to the sentence before it, or None.

    >>> back_reference("However, this obligation does not apply.")
    'However'
    >>> back_reference("但是，法律另有规定的除外。"), back_reference("Butter is cheap."), back_reference("But")
    ('但是', None, 'But')
    >>> [back_reference(s) for s in ("Instead of cash, pay by card.", "Instead, pay by card.",
    ...  "Notwithstanding anything to the contrary, X.", "In this case study we", "Otherwise-unused", "但丁说")]
    [None, 'Instead', None, None, None, None]
    >>> [back_reference(s) for s in ("This must not be restarted.", "This Agreement is governed by English law.",
    ...  "This was a long meeting where many people said many things about many other things.", "该药不得恢复使用。")]
    ['This', None, None, '该']
    >>> [back_reference(s) for s in ("It renews automatically for successive 12-month periods unless either party objects.",
    ...  "It is likely that the supplier will ask for a longer period of notice next year.",
    ...  "It took three weeks for the regulator to answer the second letter from the board.",
    ...  "It was restarted at a reduced dose of 500 mg on 7 March after creatinine returned to 1.1 mg/dL.")]
    ['It', None, None, 'It']
    >>> [back_reference(s) for s in ("同年6月12日，蓟县旅游部门称。", "The following year, the line closed.", "The following items ship.")]
    ['同年', 'The following year', None]
    >>> [back_reference(s) for s in ("After that, the Rent may be increased.", "Thereafter the fee is 5%.",
    ...  "From then on, it rained.", "After this period, no claim is accepted.", "Subsequently, it closed.",
    ...  "Provided that the Tenant is not in arrears, the Deposit is returned.", "After the meeting, we left.",
    ...  "Aftershocks followed.", "Providence is a city.")]
    ['After that', 'Thereafter', 'From then on', 'After this period', 'Subsequently', 'Provided that', None, None, None]
    >>> [back_reference(s) for s in ("After this Agreement ends, the data is deleted.", "After that meeting we left.",
    ...  "Thereafter the council took over the route in 1968 and bought a ship.",
    ...  "Thereafter the fee is EUR 2000 a year.", "Subsequently, on 3 March 2021, it closed.")]
    [None, None, None, 'Thereafter', None]
    >>> back_reference("其余5%作为质量保证金，在质保期满且无未解决的质量问题后支付。")  # "the remaining 5%"
    '其余'
    >>> back_reference("情节严重的，处5万元以上50万元以下罚款。"), back_reference("第十条 向境外提供重要数据的，应当申报。")
    ('情节严重的', None)
    >>> [back_reference(s) for s in ("逾期不改正的，处1万元罚款。", "拒不改正或者造成严重后果的，处10万元罚款。",
    ...  "乙方逾期交货的，每日支付0.5‰违约金。", "投标人少于三个的，应当重新招标。", "说真的，这不重要。")]
    ['逾期不改正的', '拒不改正或者造成严重后果的', None, None, None]

    """
    text = sentence.lstrip()
    m = _BACK_REFERENCE_RE.match(text) or _PERSONAL_PRONOUN_RE.match(text) or _ZH_CONDITION_RE.match(text)
    if m is not None and _RELATIVE_TIME_RE.search(m.group(0)) and _OWN_YEAR_RE.search(text):
        m = None  # "Thereafter the council took over the route in 1968 …": a time of its own
    if m is None:
        m = _PRONOUN_OPENER_RE.match(text)
        if m is not None and not (len(HAN_RE.findall(text)) <= _PRONOUN_MAX_CJK if HAN_RE.search(m.group(0))
                                  else len(text.split()) <= _PRONOUN_MAX_WORDS):
            m = None
    return m.group(0).lstrip("\"'\u201c\u2018([") if m else None


#: "no other …" speaks of what the text before it named ("There were no other related-party
#: transactions" after the one transaction there was); alone it says the opposite of the source.
NO_OTHER_RE = re.compile(r"\b(?i:no other|none other|no further)\b")
#: A definite noun phrase opening a sentence ("The purchases were …", "This dose …"): group 1 is the
#: noun, in lower case (a capitalised one is a defined term or a name, "the Supplier", which needs
#: nothing before it), not followed by what names it ("The reservation NQNU5R", "the dose of …").
_DEFINITE_NP_RE = re.compile(r"^(?i:the|this|that|these|those|such|said)\s+([a-z][a-z-]{3,})\b"
                             r"(?!\s+(?:of|for|in|under|to)\b|\s+[A-Z0-9#])")
#: Nouns after "the" that point nowhere in particular.
_GENERIC_NOUNS = frozenset("""following above below same first second third last next other rest end start
beginning case time fact way world past future present moment date period year month week
day""".split())


def refers_back(sentence: str, before: str, *, definite: bool = True) -> str | None:
    """What in *sentence* speaks of something named only in *before*, the sentence in front of it,
    or None: an opener of :func:`back_reference`, "no other …", or a definite noun phrase opening
    it whose noun (its first five letters) occurs in *before* ("The purchases were on arm's length
    terms" after "… purchased £2.3m of gases from …"; only with *definite*: across paragraphs it
    would tie too much together). Only at the start: "Do not reduce the dose"
    would tie too many sentences of a document together (NQ passages, agent traces lost figures).

    >>> refers_back("The dose must not be reduced.", "The full dose is correct.")
    'The dose'
    >>> refers_back("The reservation NQNU5R is business class.", "Cancel the reservation.") is None
    True
    >>> refers_back("There were no other related-party transactions.", "The Group bought gas from a director's firm.")
    'no other'
    >>> [refers_back(s, "The Supplier sends the invoice.") for s in ("The Supplier shall pay.",
    ...  "The invoice of May is late.", "The following items ship.")]
    [None, None, None]
    """
    opener = back_reference(sentence)
    if opener is not None:
        return opener
    m = NO_OTHER_RE.search(sentence)
    if m is not None:
        return m.group(0)
    m = _DEFINITE_NP_RE.match(sentence.lstrip("\"'\u201c\u2018([ ")) if definite else None
    if m is not None and m.group(1) not in _GENERIC_NOUNS and re.search(r"\b" + re.escape(m.group(1)[:5]), before.lower()):
        return m.group(0)
    return None


#: A prohibition opening a sentence, with its object: a definite noun (group 1; not followed by what names
#: it, "the dose of insulin") or "it"/"them" (group 2).
_PROHIBITION_RE = re.compile(
    r"^[\"'\u201c\u2018(\[]*(?i:do\s+not|don['’]t|never)\s+[a-z]+\s+"
    r"(?:(?i:the|this|that|these|those|such)\s+([a-z][a-z-]{3,})\b(?!\s+(?:of|for|in|under|to)\b|\s+[A-Z0-9#])"
    r"|(it|them)\b)")


def restricts_back(sentence: str, before: str) -> str | None:
    """The opening of *sentence* when it forbids something done to what only *before*, the sentence in front
    of it in its paragraph, names: "Do not increase the dose" after "It was restarted at a reduced dose of
    500 mg …", "Never leave it on …" after "Degraded mode queues charges …". Delivered alone, it forbids it
    of whatever the text above happens to name. Only a prohibition: a definite noun anywhere else in a
    sentence ties too much together (see :func:`refers_back`).

    >>> restricts_back("Do not increase the dose unless eGFR is above 45.", "It was restarted at a reduced dose.")
    'Do not increase the dose'
    >>> restricts_back("Never leave it on for more than 30 minutes.", "Degraded mode queues charges.")
    'Never leave it'
    >>> [restricts_back(s, "Restart the service.") for s in ("Do not restart the pods.", "Do not increase the dose of insulin.",
    ...  "Do not give the Supplier notice.", "Increase the service level.")]
    [None, None, None, None]
    """
    m = _PROHIBITION_RE.match(sentence.lstrip("\"'\u201c\u2018([ "))
    if m is None:
        return None
    if m.group(2) or (m.group(1) not in _GENERIC_NOUNS
                      and re.search(r"\b" + re.escape(m.group(1)[:5]), before.lower())):
        return m.group(0)
    return None


#: "He" or "She" as the subject opening a sentence ("He promised to keep it until Friday." after "I left it with
#: Señor Ortiz, at number 14."): who it is is named only before it. Only in its own paragraph: in a story the next
#: paragraph's "He looked at her …" is often someone else, and across paragraphs the chains ran long.
_PERSON_OPENER_RE = re.compile(r"^[\"'\u201c\u2018(\[]*(?:He|She|HE|SHE)(?=\s+[a-z])")


def person_opener(sentence: str) -> str | None:
    """The "He" or "She" opening *sentence* as its subject (:data:`_PERSON_OPENER_RE`), else None.

    >>> person_opener("She moved to Lyon in 1931."), person_opener("Shelley moved."), person_opener("He")
    ('She', None, None)
    """
    m = _PERSON_OPENER_RE.match(sentence.lstrip())
    return m.group(0).lstrip("\"'\u201c\u2018([") if m else None


#: "these"/"those" and a lower-case noun later in a short sentence ("A claim made after these periods will not be
#: accepted."): the periods are those the sentence before it states. Not "those who …" (a noun follows), not a
#: capitalised name ("these Terms"); at its start :data:`_PRONOUN_OPENER_RE` reads it.
_DEMONSTRATIVE_RE = re.compile(r"\b(?i:these|those)\s+(?!(?:who|whom|whose|which|that|of|in|at|on|are|were|will|may|must)\b)"
                               r"[a-z][a-z-]{2,}\b")
#: "this"/"that" and a noun for a time, a limit or a condition later in a short sentence ("Questions received after
#: that time will not be answered." after "II.2 Questions must be submitted … no later than 10 June 2024 at 12:00
#: CET."; "… before this deadline", "… above that amount", "… fails this requirement"): which time, the sentence
#: before it states (QA T1: it was delivered without that sentence, the deadline and the clause's number). Only
#: these nouns: "this notice", "this contract", "this procedure" name the document itself, and "that" only after a
#: preposition ("after that time"; not "provided that time limits …", a conjunction). Not "the deadline": an
#: ordinary "the" would tie half a document together.
_THIS_THAT_RE = re.compile(
    r"(?:\b(?i:this)|(?<![\w-])(?i:after|before|by|until|till|at|on|from|within|beyond|past|during|since|over|above"
    r"|below|under|exceeding|of|in|to|for)\s+(?i:that))\s+(?:time|date|deadline|period|day|hour|moment|limit|threshold"
    r"|amount|sum|figure|requirement|condition|exception|window)\b(?!\s+(?:of|for|in|under|to|as|when|which)\b|\s+[A-Z0-9#])")
#: What :data:`_THIS_THAT_RE` finds that points nowhere, as the text up to its end: "At this time, 1,240 merchants see
#: HTTP 503 …", "At this moment the queue holds 18,000 captures." (= now, a status update's figure), "Do not close this
#: window until the import reaches 100%." (a screen's window): tied to the sentence before, the figures went without
#: it (QA AA F6). Not "at that time", "within this window", which speak of a time or window the sentence before states.
_THIS_THAT_IDIOM_RE = re.compile(r"(?:\b(?i:at)\s+(?i:this)\s+(?:time|moment)|\b(?i:close|open|leave|keep|refresh|reload"
                                 r"|resize|minimi[sz]e|maximi[sz]e|exit|shut)\s+(?i:this|that)\s+window)$")
#: "both"/"either"/"neither"/"such", "the two"/"the three", "the above"/"the foregoing" (or "these …"/"those …") and a
#: lower-case noun, anywhere in a short sentence ("Mold is not covered unless both conditions are met."): which
#: conditions, the sentence before it states. Not a noun that names its own ("both copies of the form", "either
#: email or post", "such time as …"), nor a word of :data:`STOPWORDS` ("both the", "such as"). After "such", "the
#: above" or "the foregoing" (group 2) also a capitalised defined term ("Such Confidential Information", "The above
#: Fees"); after "both"/"either"/"neither"/"the two" (group 1) only one of :data:`_SHELL_NOUNS`.
_QUANTIFIER_RE = re.compile(
    r"\b(?:((?i:both|either|neither)|(?i:the|these|those)\s+(?i:two|three))"
    r"|((?i:such)|(?i:the|these|those)\s+(?i:above|foregoing)))\s+([a-z][a-z-]{2,}|[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b"
    r"(?!\s+(?:of|for|in|under|to|and|or|nor|as|that)\b|\s+[A-Z0-9#])")
#: The nouns "both"/"either"/"neither"/"the two" take back from the sentence before: the "shell nouns" that stand for
#: what was stated there ("both conditions", "either option", "the two periods"). Other nouns name their own pair:
#: "in both legs", "closed in both directions", "either side", "both spouses", "either party" (a contract's parties
#: are named at its top).
_SHELL_NOUNS = frozenset("""
    condition conditions requirement requirements criterion criteria option options alternative alternatives
    case cases exception exceptions exclusion exclusions limit limits threshold thresholds method methods
    approach approaches step steps stage stages phase phases period periods deadline deadlines date dates
    amount amounts sum sums fee fees charge charges cost costs payment payments obligation obligations
    provision provisions clause clauses term terms event events circumstance circumstances measure measures
    rule rules policy policies procedure procedures document documents form forms notice notices test tests
    check checks result results value values figure figures factor factors reason reasons issue issues
    error errors change changes version versions scenario scenarios situation situations request requests
    claim claims statement statements
""".split())
#: "either"/"neither"/"both" standing alone for what the sentence before states, as the subject of its opening
#: clause, whatever its length: "If either fails, we should not bid: …" after "(a) the re-audit is passed, and (b) we
#: sign a teaming agreement", "Neither of them applies.", "Both are required." Not "Either way, …", "Either party
#: may …", nor "either … or …" later in a sentence, which names its own pair.
_PRONOUN_QUANTIFIER_RE = re.compile(
    r"^[\"'\u201c\u2018(\[]*(?:(?i:if|when|unless|once|where|should|because|since)\s+)?((?i:either|neither|both))\s+"
    r"(?:of\s+(?:them|these|those|the\s+two|the\s+above)\b"
    r"|(?:is|are|was|were|has|have|had|can|cannot|could|will|would|may|might|must|shall|should|does|do|did"
    r"|fails?|failed|applies|apply|applied|holds?|happens?|occurs?|lapses?|expires?|passes|succeeds?|works?)\b)")
#: A copula before "such" makes it an intensifier ("It was such good news."), not a reference back.
_COPULA_SUCH_RE = re.compile(r"\b(?i:is|was|are|were|be|been|being)\s+$")
#: "until then", "by then" ending a sentence with no figure of its own ("If that is not possible, I need a hire car until
#: then."): when "then" is, the sentence before it states (QA s34 A F4). Not "We start on 12 June and need a car until
#: then.", which says it; not "then" in the middle ("by then the fee is due" opens its own clause).
_THEN_END_RE = re.compile(r"\b(?i:until|till|by|before)\s+then(?=\W*$)")


def demonstrative_back(sentence: str) -> str | None:
    """"these"/"those" with its noun in *sentence* of at most 12 words (:data:`_DEMONSTRATIVE_RE`), not as its
    first word, or "this"/"that" with a noun for a time, a limit or a condition (:data:`_THIS_THAT_RE`, "after that
    time"), or "both"/"either"/"such"/"the two"/"the above" … with its noun anywhere in it
    (:data:`_QUANTIFIER_RE`), and not in a lead-in ending in ":" ("Fill in these fields:" points ahead); or, in a
    sentence of any length, "either"/"neither"/"both" alone as its opening clause's subject (:data:`_PRONOUN_QUANTIFIER_RE`,
    "If either fails, …"), or "until then"/"by then" ending it with no figure of its own (:data:`_THEN_END_RE`); or None.

    >>> [demonstrative_back(s) for s in ("I will need a hire car until then.", "We cannot pay by then.",
    ...  "We start on 12 June and need a car until then.", "Until then, the fee is due.", "By then it was late, so we left.")]
    ['until then', 'by then', None, None, None]

    >>> demonstrative_back("A claim made after these periods will not be accepted.")
    'these periods'
    >>> [demonstrative_back(s) for s in ("These periods are not extended.", "Fill in these fields:",
    ...  "Fees apply to those who pay late.", "A fee applies under these Terms.",
    ...  "A claim made after these periods will not be accepted by the Carrier or by any of its agents.")]
    [None, None, None, None, None]
    >>> [demonstrative_back(s) for s in ("Mold is not covered unless both conditions are met.",
    ...  "Neither condition is waived.", "The claim is paid once the two documents arrive.",
    ...  "Such losses are excluded.", "The above limits apply per claim.")]
    ['both conditions', 'Neither condition', 'the two documents', 'Such losses', 'The above limits']
    >>> [demonstrative_back(s) for s in ("Either party may terminate for material breach.",
    ...  "Notice binds both parties.", "Send both copies of the form.", "Notice may be given by either email or post.",
    ...  "Access stays suspended until such time as payment is received.", "Both Parties must sign.",
    ...  "Pressure is equal on both the inlet and the outlet.", "Fees such as late fees apply.")]
    [None, None, None, None, None, None, None, None]
    >>> [demonstrative_back(s) for s in ("Pitting edema is present in both legs.", "Either way, the fee is due.",
    ...  "Ring Road is closed in both directions.", "It was such good news.", "Either Party may terminate.")]
    [None, None, None, None, None]
    >>> [demonstrative_back(s) for s in ("Such Confidential Information shall be returned within 10 days.",
    ...  "The above Fees are exclusive of VAT.", "Either option is accepted.")]
    ['Such Confidential Information', 'The above Fees', 'Either option']
    >>> [demonstrative_back(s) for s in ("If either fails, we should not bid: both are pass/fail and failing one means "
    ...  "disqualification.", "Neither of them applies.", "Both are required.", "Either way, the fee is due.",
    ...  "Either Party may terminate.", "If either party objects, the term ends.", "You may pay either by card or cash.")]
    ['either', 'Neither', 'Both', None, None, None, None]
    >>> [demonstrative_back(s) for s in ("Questions received after that time will not be answered.",
    ...  "No claim is accepted after this deadline.", "A tenderer that fails this requirement is excluded.",
    ...  "Interest accrues on amounts above that threshold.")]
    ['after that time', 'this deadline', 'this requirement', 'above that threshold']
    >>> [demonstrative_back(s) for s in ("This notice was sent for publication on 13 May.", "The deadline is 28 June.",
    ...  "Tenders received after the deadline will be rejected.", "It is provided that time limits apply.",
    ...  "Write the date of this period of leave.", "This contract is governed by Danish law.",
    ...  "Questions received after that time will not be answered by the municipality or by any of its advisers.")]
    [None, None, None, None, None, None, None]
    >>> [demonstrative_back(s) for s in ("At this time, 1,240 merchants see HTTP 503 on card captures.",
    ...  "At this moment the queue holds 18,000 captures.", "Do not close this window until the import reaches 100%.",
    ...  "We will confirm at that time.", "No deploys are allowed outside this window.")]
    [None, None, None, 'at that time', 'this window']
    """
    text = sentence.strip()
    if m := _PRONOUN_QUANTIFIER_RE.match(text):
        return m.group(1)
    if (m := _THEN_END_RE.search(text)) and not any(c.isdigit() for c in text):
        return m.group(0)
    if len(text.split()) > _PRONOUN_MAX_WORDS or text.endswith(":"):
        return None
    m = _DEMONSTRATIVE_RE.search(text, 1) or next(
        (t for t in _THIS_THAT_RE.finditer(text, 1) if not _THIS_THAT_IDIOM_RE.search(text, 0, t.end())), None)
    if m and text[:m.start()].strip("\"'\u201c\u2018([ "):
        return m.group(0)
    for m in _QUANTIFIER_RE.finditer(text):
        noun = m.group(3)
        if m.group(1) and noun.lower() not in _SHELL_NOUNS:
            continue
        if noun.lower() in STOPWORDS or (m.group(2) and _COPULA_SUCH_RE.search(text, 0, m.start())):
            continue
        return m.group(0)
    return None


def points_back(sentence: str, before: str, *, same_paragraph: bool = True) -> str | None:
    """What in *sentence* speaks of something named only in *before*, the sentence in front of it:
    :func:`refers_back` (a definite noun only in *same_paragraph*), or in *same_paragraph* a prohibition
    of :func:`restricts_back`, "these periods" in a short sentence (:func:`demonstrative_back`) or a "He"/"She"
    opening it (:data:`_PERSON_OPENER_RE`).

    >>> points_back("He promised to keep it until Friday.", "I left it with Señor Ortiz, at number 14.")
    'He'
    >>> [points_back(s, "I left it with Señor Ortiz.", same_paragraph=p) for s, p in (
    ...  ("He promised to keep it.", False), ("Helen kept it.", True), ("Shelley kept it.", True))]
    [None, None, None]
    """
    if same_paragraph and (person := person_opener(sentence)):
        return person
    return refers_back(sentence, before, definite=same_paragraph) or (
        restricts_back(sentence, before) or demonstrative_back(sentence) if same_paragraph else None)


def iter_lines_with_offsets(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, line)`` for each line, end excluding the newline."""
    pos = 0
    for line in text.split("\n"):
        yield pos, pos + len(line), line
        pos += len(line) + 1


# -- regular expressions from users: a time limit ------------------------------------------

class RegexTimeout(Exception):
    """A regular expression ran past its time limit (:func:`regex_time_limit`)."""


class regex_time_limit:  # noqa: N801 - used as a context manager, like a function
    """Raise :class:`RegexTimeout` in the body once it has run *seconds*, by a timer signal.

    Python's ``re`` checks for signals while it backtracks, so a pattern with catastrophic
    backtracking (``(a+)+b`` on a run of ``a``) is stopped instead of hanging the process. The
    limit needs POSIX timers and the main thread, and is not nested: elsewhere (a worker thread,
    Windows, a timer already running) the body runs without a limit.

    >>> import re
    >>> with regex_time_limit(5.0):
    ...     re.search(r"\\d+", "clause 12") is not None
    True
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._old: Any = None
        self._armed = False

    def __enter__(self) -> regex_time_limit:
        import signal
        import threading

        if (not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread()
                or signal.getitimer(signal.ITIMER_REAL)[0] > 0):
            return self

        def on_alarm(signum: int, frame: Any) -> None:
            raise RegexTimeout(f"ran past {self.seconds:g} s")

        self._old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        self._armed = True
        return self

    def restart(self) -> None:
        """Start the *seconds* again from now, keeping the handler: one limit for each of many short
        searches costs a timer call each, not a handler swap (nothing when the limit did not arm)."""
        if self._armed:
            import signal

            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: Any) -> None:
        if self._armed:
            import signal

            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old)
            self._armed = False


#: Characters repeated to probe a pattern for catastrophic backtracking, beside its own literals.
_PROBE_CHARS = "aA0 _.-/,:x1中é"  # one Han and one accented letter too: classes written as \u escapes
#: Words and numbers each followed by a separator, repeated as a unit: '(?:(?:[a-z]+ )+)+;' backtracks
#: only on "ab ab ab …" (a run of one character never gets past its first separator).
_PROBE_WORDS = tuple(word + sep for word in ("a", "ab", "word", "1", "12") for sep in " ,.-/:")


def backtracking_probe(regex: re.Pattern[str], *, seconds: float = 0.5, length: int = 26) -> str | None:
    """A short text on which *regex* runs past *seconds* (catastrophic backtracking), or ``None``.

    Each probe is one unit repeated *length* times and a character that ends no match;
    the units are the characters a pattern usually repeats, the letters and digits written in the
    pattern, each pair of them written side by side (``(?:ab|a|b)+c`` needs ``abab…``), and short
    words and numbers followed by a separator (``(?:(?:[a-z]+ )+)+;`` needs ``ab ab …``). An
    exponential pattern needs about 2**length steps on its probe; a sound one, microseconds. A
    heuristic: it finds the common shapes, not every one. Only where :class:`regex_time_limit` can
    arm (POSIX, main thread); elsewhere ``None``. A pattern :func:`may_backtrack` clears is not
    searched at all, and one timer serves all the probes of a pattern, started again for each.
    """
    if not may_backtrack(regex):
        return None
    written = regex.pattern
    units = dict.fromkeys(list(_PROBE_CHARS) + [c for c in written if c.isalnum()]
                          + [written[k:k + 2] for k in range(len(written) - 1) if written[k:k + 2].isalnum()]
                          + list(_PROBE_WORDS))
    # after the text the pattern opens with ("ID-(?:\d+)+!" backtracks only after "ID-")
    probe = ""
    try:
        with regex_time_limit(seconds) as limit:
            for prefix in dict.fromkeys(("", _literal_prefix(regex))):
                for unit in units:
                    probe = prefix + unit * length + "\x00"
                    limit.restart()
                    regex.search(probe)
    except RegexTimeout:
        return probe
    return None


def may_backtrack(regex: re.Pattern[str]) -> bool:
    r"""Whether *regex* has a shape that can backtrack catastrophically, by its parse tree alone: a
    repetition holding another repetition, an alternation or a back-reference (``(a+)+``,
    ``(?:ab|a)+``), a back-reference anywhere, or three variable repetitions side by side
    (``\d*\d*\d*x``). ``True`` when the parser is unavailable or fails: the probe then runs.

    >>> [may_backtrack(re.compile(p)) for p in (r"ID-\d+", r"\d{4}-\d{2}-\d{2}", r"(a+)+b", r"(?:ab|a)+c")]
    [False, False, True, True]
    """
    try:
        import re._parser as sre_parse  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse  # type: ignore[no-redef]
    try:
        tree = sre_parse.parse(regex.pattern, regex.flags & ~re.UNICODE)
    except Exception:  # noqa: BLE001 - the parser's internals differ between versions: probe then
        return True
    variable = 0

    def risky(items: Any, inside: bool) -> bool:
        nonlocal variable
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                low, high, body = av
                if name != "POSSESSIVE_REPEAT" and high != low:
                    variable += 1
                if inside or risky(body, inside or (high > 1 and name != "POSSESSIVE_REPEAT")):
                    return True
            elif name == "GROUPREF" or name == "GROUPREF_EXISTS":
                return True
            elif name == "BRANCH" and (inside or any(risky(branch, inside) for branch in av[1])):
                return True
            elif name == "SUBPATTERN" and risky(av[-1], inside):
                return True
            elif name in ("ASSERT", "ASSERT_NOT") and risky(av[1], inside):
                return True
            elif name == "ATOMIC_GROUP" and risky(av, inside):
                return True
        return False

    return risky(tree, False) or variable >= 3


def ambiguous_alternation(regex: re.Pattern[str]) -> tuple[str, tuple[str, ...]] | None:
    r"""An alternation of plain words repeated without bound whose branches can spell the same text in
    two ways, as ``(INC|IN|I|NC|C)+`` spells "INC" as INC, IN+C and I+NC: a run of such text has
    exponentially many ways to match, each tried before the search fails. Returns a shortest text
    found spelt two ways (``""`` when only the Sardinas–Patterson test tells) and the words the
    repetition spells, or ``None``. Branches that merely share a prefix are not enough:
    ``(?:ab|a)+`` reads "abab" in one way only and stays linear.

    >>> [ambiguous_alternation(re.compile(p)) for p in (r"(?:ab|cd)+", r"(Mr|Mrs|Ms)\.", r"(?:ab|a)+c")]
    [None, None, None]
    >>> ambiguous_alternation(re.compile(r"(INC|IN|I|NC|C)+-X"))
    ('INC', ('INC', 'IN', 'I', 'NC', 'C'))
    """
    try:
        import re._parser as sre_parse  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse  # type: ignore[no-redef]
    try:
        tree = sre_parse.parse(regex.pattern, regex.flags & ~re.UNICODE)
    except Exception:  # noqa: BLE001 - the parser's internals differ between versions: the probe then
        return None
    fold_case = bool(regex.flags & re.IGNORECASE)

    def words(items: Any) -> list[str] | None:
        """The texts a sequence of literals, small character sets and alternations of them spells
        (the parser writes ``(a|aa)`` as ``a(?:|a)``), or None."""
        out = [""]
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                tails: list[str] | None = [chr(av)]
            elif name == "IN" and all(str(o) == "LITERAL" for o, _ in av):
                tails = [chr(c) for _, c in av]
            elif name == "BRANCH":
                spelt = [words(b) for b in av[1]]
                tails = None if any(w is None for w in spelt) else [w for ws in spelt for w in ws]  # type: ignore[union-attr]
            elif name == "SUBPATTERN" and not av[1] and not av[2]:
                tails = words(av[-1])
            else:
                return None
            if tails is None:
                return None
            out = [w + t for w in out for t in tails]
            if len(out) > 64:
                return None
        return [w.casefold() if fold_case else w for w in out]

    def walk(items: Any) -> tuple[str, tuple[str, ...]] | None:
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT"):
                spelt = words(av[2]) if av[1] == sre_parse.MAXREPEAT else None
                code = tuple(dict.fromkeys(w for w in spelt or () if w))
                if 1 < len(code) and not _uniquely_decodable(code):
                    return _spelt_twice(code), code
                found = walk(av[2])
            elif name == "BRANCH":
                found = next((f for b in av[1] if (f := walk(b))), None)
            elif name == "SUBPATTERN":
                found = walk(av[-1])
            elif name in ("ASSERT", "ASSERT_NOT"):
                found = walk(av[1])
            elif name in ("ATOMIC_GROUP", "POSSESSIVE_REPEAT"):
                found = None  # never backtracks into
            else:
                found = None
            if found:
                return found
        return None

    return walk(tree)


def _uniquely_decodable(code: tuple[str, ...]) -> bool:
    """The Sardinas–Patterson test: no text splits into words of *code* in two ways."""
    words = set(code)

    def quotient(heads: Iterable[str], texts: Iterable[str]) -> set[str]:
        return {t[len(h):] for h in heads for t in texts if t.startswith(h)}

    dangling = quotient(words, words) - {""}  # what is left of a word after a shorter one it opens with
    seen: set[frozenset[str]] = set()
    while dangling:
        if dangling & words:
            return False
        key = frozenset(dangling)
        if key in seen:
            return True
        seen.add(key)
        dangling = (quotient(words, dangling) | quotient(dangling, words)) - {""}
    return True


def _spelt_twice(code: tuple[str, ...]) -> str:
    """A shortest text of up to three words of *code* that splits into them in two ways, or ""."""
    texts = sorted({a + b + c for a in code for b in code + ("",) for c in (code + ("",) if b else ("",))},
                   key=lambda t: (len(t), t))
    for text in texts:
        ways = [1] + [0] * len(text)
        for end in range(1, len(text) + 1):
            ways[end] = sum(ways[end - len(w)] for w in code if text.endswith(w, 0, end))
        if ways[-1] > 1:
            return text
    return ""


def _literal_prefix(regex: re.Pattern[str]) -> str:
    r"""The literal text every match of *regex* opens with ("ID-" of ``\bID-(?:\d+)+!``), or ""."""
    try:
        import re._parser as sre_parse  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse  # type: ignore[no-redef]
    try:
        items = list(sre_parse.parse(regex.pattern, regex.flags & ~re.UNICODE))
    except Exception:  # noqa: BLE001 - the parser's internals differ between versions: no prefix then
        return ""
    out: list[str] = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name != "AT":  # \b, ^: no text
            break
    return "".join(out)


def phrase_regex(phrase: str) -> str:
    r"""A regular expression for *phrase*'s words in order, any white space between them, not inside a
    longer word on the left ("due date" matches "due\n date", not "overdue date").

    >>> re.search(phrase_regex("due date") + r"(?!\w)", "the due\n date").group(0)
    'due\n date'
    """
    return r"(?<!\w)" + r"\s+".join(map(re.escape, phrase.split()))


def fold(text: str) -> tuple[str, list[int]]:
    """*text* for matching terms: each character lower-cased where that keeps it one character
    ("İ" stays), each run of white space one space ("actual cash\\nvalue", "Replacement  Cost"); and
    for each character of that, its offset in *text*.

    >>> fold("Actual  cash\\nİzmir")
    ('actual cash İzmir', [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17])
    """
    out: list[str] = []
    pos: list[int] = []
    space = False
    for i, c in enumerate(text):
        if c.isspace():
            if space:
                continue
            out.append(" ")
            space = True
        else:
            low = c.lower()
            out.append(low if len(low) == 1 else c)
            space = False
        pos.append(i)
    return "".join(out), pos


def _joins_number(text: str, at: int, step: int) -> bool:
    """Whether the character at *at* (next to a value's edge digit, *step* away from it) carries the
    number on: a digit, or a decimal/thousands mark, a time's colon or a fraction's slash followed by a
    digit ("8" of "80", "1.8", "1,000", "8:30", "3/8")."""
    if not 0 <= at < len(text):
        return False
    if text[at].isdigit():
        return True
    nxt = at + step
    return text[at] in ".,:/" and 0 <= nxt < len(text) and text[nxt].isdigit()


def find_value(text: str, needle: str, start: int = 0, *, spaces: bool = False,
               ignore_case: bool = False, original: str | None = None, at: int | None = None) -> int:
    """Where *needle* occurs in *text* from *start* as a whole value, or -1: an edge digit of the
    needle may not continue a longer number in the text, so "8" is not found in "instead of 80"
    (nor in "1.8" or "8,000") while "8" is found in "8th" or "v8". With ``spaces`` the white space
    inside either may differ ("March 3" matches "March\\n3"). With *original* (the text the needle
    was found in), an edge is held to that only where the original has it: a number anchor's "2.7"
    inside the version "2.7.1" is found in a text that still says "2.7.1"; with *at*, where in the
    original it was found, the edges it has there, else those any of its occurrences has.

    >>> find_value("instead of 80", "8"), find_value("size 8, not 80", "8"), find_value("8th", "8")
    (-1, 5, 0)
    >>> find_value("v 2.7.1", "2.7"), find_value("v 2.7.1", "2.7", original="from 2.6 to 2.7.1")
    (-1, 2)
    >>> find_value("instead of 80", "8", original="size 8 instead of 80")
    -1
    >>> find_value("at 8:30, 3/8 of it", "8"), find_value("at 8:30", "8:30")
    (-1, 3)
    """
    if not needle:
        return start if start <= len(text) else -1
    if spaces:
        chars = [c for c in needle if not c.isspace()]
        if not chars:
            return -1
        pattern = r"\s*".join(re.escape(c) for c in chars)
    else:
        pattern = re.escape(needle)
    rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    hits = ((m.start(), m.end()) for m in _overlapping(rx, text, start))
    first, last = needle.lstrip()[:1].isdigit(), needle.rstrip()[-1:].isdigit()
    if original is not None and at is not None and original.startswith(needle, at):
        first = first and not _joins_number(original, at - 1, -1)
        last = last and not _joins_number(original, at + len(needle), 1)
    elif original is not None and (first or last):
        # an edge is held where some occurrence in the original has it whole ("8" beside "80" still must be whole)
        found = [(m.start(), m.end()) for m in _overlapping(rx, original, 0)]
        if found:
            first = first and any(not _joins_number(original, s - 1, -1) for s, _ in found)
            last = last and any(not _joins_number(original, e, 1) for _, e in found)
    for s, e in hits:
        if (first and _joins_number(text, s - 1, -1)) or (last and _joins_number(text, e, 1)):
            continue
        return s
    return -1


def has_value(text: str, needle: str, **kwargs: Any) -> bool:
    """Whether *needle* occurs in *text* as a whole value (see :func:`find_value`)."""
    return find_value(text, needle, **kwargs) >= 0


def _overlapping(rx: re.Pattern[str], text: str, start: int) -> Iterator[re.Match[str]]:
    """Every match of *rx* from each position on, overlapping ones included ("88" in "888" twice)."""
    m = rx.search(text, start)
    while m is not None:
        yield m
        m = rx.search(text, m.start() + 1)


def nfc(text: str) -> str:
    """*text* in Unicode NFC, what odcf matches and scores by: "Renée" typed with a combining accent
    ("Rene\\u0301e", as macOS file names and text copied from PDFs are) is then the same word as
    "Renée". Only for matching: the delivered text keeps the source's characters.

    >>> nfc("Rene\\u0301e") == "Ren\\u00e9e"
    True
    """
    return text if text.isascii() or unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def nfc_map(text: str) -> tuple[str, list[int]]:
    """:func:`nfc` of *text* and, for each offset into it (its length included), the offset in *text*
    it stands for, so that a match found in the normalised text points at the same characters in
    *text*: a character with its combining marks is normalised as one piece, and each offset inside a
    piece that changed points at the piece's start.

    >>> nfc_map("cafe\\u0301 ok")
    ('café ok', [0, 1, 2, 3, 5, 6, 7, 8])
    """
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return text, list(range(len(text) + 1))
    out: list[str] = []
    pos: list[int] = []
    start = 0
    for i in range(1, len(text) + 1):
        if i < len(text):
            c = text[i]
            # a piece goes on while the next character is a combining mark or composes with the one before
            # (Hangul jamo); no ASCII character ever composes with what stands before it
            if not c.isascii() and (unicodedata.combining(c) or (
                    piece := unicodedata.normalize("NFC", text[start:i])) + c != unicodedata.normalize("NFC", piece + c)):
                continue
        piece = text[start:i]
        norm = unicodedata.normalize("NFC", piece)
        out.append(norm)
        pos.extend(range(start, i) if norm == piece else [start] * len(norm))
        start = i
    pos.append(len(text))
    joined = "".join(out)
    if joined != unicodedata.normalize("NFC", text):  # pieces that compose across their edge: match as written
        return text, list(range(len(text) + 1))
    return joined, pos
