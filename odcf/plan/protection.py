"""Built-in protection lists: the logical connectives compression must never drop
(negation, contrast, condition, cause, exception, limits) in English and Chinese, and the
entity labels protected when an ontology names none.

``connectives: default`` in an ontology means :data:`DEFAULT_CONNECTIVES` (English then
Chinese). A list may also name ``default`` among its own words to extend the built-in list:

>>> from odcf.plan.protection import resolve_connectives
>>> words = resolve_connectives(["default", "save as"])
>>> "unless" in words and "除非" in words and words[-1] == "save as"
True
>>> resolve_connectives(["only if"])
('only if',)

Why each group matters: a dropped negation or limit ("not", "at most", "不超过") inverts or
loosens the statement it governs; a dropped exception or condition ("unless", "除非") turns a
qualified obligation into an absolute one.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

#: English negations: dropping one inverts the statement it governs.
EN_NEGATION: tuple[str, ...] = (
    "not", "no", "never", "nor", "neither", "none", "nothing", "nobody", "without", "cannot",
    "can't", "don't", "doesn't", "didn't", "won't", "isn't", "aren't", "wasn't", "weren't",
    "shouldn't", "mustn't", "shall not", "must not", "may not", "will not", "does not", "do not",
    "is not", "are not", "no longer", "free from", "free of",
)
#: English exceptions and conditions: dropping one (or what it governs) makes a qualified
#: statement absolute.
EN_EXCEPTION_CONDITION: tuple[str, ...] = (
    "unless", "except", "except that", "other than", "excluding", "save for", "if", "only if",
    "if and only if", "provided that", "provided", "on condition that", "in case", "in the event that",
    "subject to", "notwithstanding", "regardless of", "whichever", "exclusive of", "inclusive of",
)

#: English connectives and limit phrases. Multi-word phrases come before the words they contain
#: only for readability; matching is the protect stage's business (longest match first).
EN_CONNECTIVES: tuple[str, ...] = EN_NEGATION + EN_EXCEPTION_CONDITION + (
    # contrast and concession
    "but", "however", "although", "though", "even though", "even if", "despite", "in spite of",
    "whereas", "yet", "nevertheless", "nonetheless", "instead", "rather than", "otherwise",
    "on the other hand",
    # cause and consequence
    "because", "since", "as a result", "therefore", "thus", "hence", "so that", "consequently",
    "due to", "owing to",
    # limits and quantifiers
    "at least", "at most", "no more than", "no less than", "not more than", "not less than",
    "more than", "less than", "fewer than", "greater than", "up to", "no later than",
    "no earlier than", "not later than", "before", "after", "until", "within", "exceeding",
    "only", "either", "or", "and/or",
)

#: Chinese negations (Simplified).
ZH_NEGATION: tuple[str, ...] = (
    "不", "没有", "没", "未", "无", "非", "勿", "不得", "不能", "不可", "不应", "不予", "不属于",
    "禁止", "严禁", "不准", "无需", "无须", "不必",
)
#: Chinese exceptions and conditions (Simplified).
ZH_EXCEPTION_CONDITION: tuple[str, ...] = (
    "除非", "除了", "除外", "如果", "若", "假如", "只有", "只要", "一旦", "否则", "视为", "应当", "必须",
    "前提是",
)

#: Chinese connectives and limit phrases (Simplified).
ZH_CONNECTIVES: tuple[str, ...] = ZH_NEGATION + ZH_EXCEPTION_CONDITION + (
    # contrast and concession
    "但是", "但", "然而", "可是", "不过", "虽然", "尽管", "即使", "即便", "却", "反而",
    # cause and consequence
    "因为", "由于", "所以", "因此", "因而", "从而",
    # limits and quantifiers
    "至少", "至多", "最多", "最少", "不超过", "不少于", "不低于", "不高于", "超过", "低于", "高于",
    "以上", "以下", "以内", "以前", "之前", "之后", "以后", "届满", "或者", "或", "并且",
    "仅", "仅限",
)

#: ``connectives: default`` -> English then Chinese, without repeats.
DEFAULT_CONNECTIVES: tuple[str, ...] = tuple(dict.fromkeys(EN_CONNECTIVES + ZH_CONNECTIVES))

#: Negations, exceptions and conditions (English then Chinese): a sentence holding one is kept or
#: dropped whole, never thinned word by word, since what such a word governs reaches past the
#: words a protected span can cover ("cash is not accepted" without "cash"; "If the versions
#: differ," without what then prevails).
WHOLE_CLAUSE_CONNECTIVES: tuple[str, ...] = tuple(dict.fromkeys(
    EN_NEGATION + EN_EXCEPTION_CONDITION + ZH_NEGATION + ZH_EXCEPTION_CONDITION))

#: spaCy (OntoNotes) labels protected when the ontology has no ``protect.entities`` key (sorted, as
#: the plan holds every label list).
default_entity_labels: tuple[str, ...] = (
    "DATE", "GPE", "LAW", "LOC", "MONEY", "ORG", "PERCENT", "PERSON", "PRODUCT", "QUANTITY", "TIME",
)


def resolve_connectives(spec: Iterable[str]) -> tuple[str, ...]:
    """Expand ``"default"`` entries into :data:`DEFAULT_CONNECTIVES`; keep order, drop repeats
    (compared case-insensitively, first spelling wins)."""
    out: dict[str, str] = {}
    for word in spec:
        words = DEFAULT_CONNECTIVES if word == "default" else (" ".join(word.split()),)
        for w in words:
            out.setdefault(w.casefold(), w)
    return tuple(out.values())


#: "provided" is the verb, not the condition "provided (that)", after an auxiliary, a subject pronoun
#: or a determiner ("are being provided", "we provided", "the provided list") or before a preposition
#: or a closing mark ("provided by the vendor", "as provided in Section 5", "Service provided:").
_PROVIDED_VERB_BEFORE_RE = re.compile(
    r"(?<![\w'])(?:am|is|are|was|were|be|been|being|has|have|had|having|get|gets|got|gotten|i|we|you|he|she|"
    r"it|they|who|which|the|a|an|this|that|these|those|any|all|each|every|its|their|our|your|his|her)\s+$",
    re.IGNORECASE)
_PROVIDED_VERB_AFTER_RE = re.compile(
    r"\s*(?:(?:by|to|for|with|in|on|at|as|from|under|herein|here|hereunder|below|above|free|upon)(?![\w'])|[:.)\]]|$)",
    re.IGNORECASE)
#: What opens the clause "provided" stands in: the text's start, a sentence end, a semicolon, a colon.
_CLAUSE_OPENING_RE = re.compile(r"(?:^|[.!?;:]\s+|\n)[^.!?;:\n]*$")
#: A finite verb the condition "provided …" holds ("provided the invoice IS correct", "provided notice IS given").
_FINITE_VERB_RE = re.compile(
    r"(?<![\w'])(?:am|is|are|was|were|be|has|have|had|does|do|did|will|shall|may|might|must|can|could|would|"
    r"should|remains?|occurs?|applies|apply)(?![\w'])", re.IGNORECASE)
#: "No." before a number or "of" is the abbreviation of "number" ("invoice No. 4471", "no.12", "No. of items: 5").
_NUMBER_ABBREVIATION_RE = re.compile(r"\.\s?(?:\d|of\b)")


def not_a_connective(text: str, start: int, end: int) -> bool:
    """Whether the connective word at ``text[start:end]`` is used as something else there: the verb
    "provided" ("the data provided by the vendor", "we provided the logs", "the provided list", "The insured
    provided receipts"), or "No."
    for "number" ("invoice No. 4471", "No. of items"). Both the lexical guard (protect) and the parsed one (entities) skip such words.

    >>> t = "Data provided by the vendor. Pay in 30 days provided the invoice is correct. See No. 4471."
    >>> [not_a_connective(t, m.start(), m.end()) for m in re.finditer(r"provided|No", t)]
    [True, False, True]
    """
    word = text[start:end].casefold()
    if word == "provided":
        return bool(_PROVIDED_VERB_BEFORE_RE.search(text, max(0, start - 12), start)
                    or _PROVIDED_VERB_AFTER_RE.match(text, end)
                    or _provided_by_its_subject(text, start, end))
    if word == "no":
        return bool(_NUMBER_ABBREVIATION_RE.match(text, end))
    return False


#: Words that may stand between a subject and its verb "provided" ("The adjuster then provided an estimate").
_SUBJECT_ADVERBS = frozenset({"then", "also", "already", "later", "subsequently", "previously", "promptly", "never",
                              "once", "again", "only", "kindly"})
#: Determiners that open a one-noun subject ("The insured provided receipts", "Our team provided the logs").
_SUBJECT_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "our", "their", "its", "his", "her", "my", "your",
                                  "each", "every", "one"})


def _provided_by_its_subject(text: str, start: int, end: int) -> bool:
    """Whether a bare "provided" (no "that", no comma after it) is the verb of the clause's own subject: the
    clause opens with nothing before it but a determiner and one noun ("The insured provided receipts for the
    items", "The adjuster then provided an estimate") or a name ("Acme Corp provided the logs"), and no finite
    verb follows it in the clause, as one does in the condition ("Refunds are issued provided the goods are
    unused"). Any other words before it read as a clause of their own, and "provided" as the condition that
    follows it: "The discount applies provided you order by Friday", "You may cancel provided you give notice",
    "Tenant may sublet provided Landlord consents" (a guard kept where it was not needed costs a thinner text;
    one lost where it was, an unconditional instruction)."""
    if re.match(r"\s*(?:that\b|,)", text[end:end + 8], re.IGNORECASE):
        return False
    opening = _CLAUSE_OPENING_RE.search(text, max(0, start - 80), start)
    if opening is None:
        return False
    before = re.sub(r"^[^\w]+", "", opening.group(0)).split()
    while before and before[-1].casefold() in _SUBJECT_ADVERBS:
        before.pop()
    if not before:
        return False
    one_noun = len(before) == 2 and before[0].casefold() in _SUBJECT_DETERMINERS and before[1].isalpha()
    name = len(before) <= 3 and all(w[:1].isupper() and w.isalpha() for w in before) and (
        len(before) > 1 or before[0].casefold() not in _SUBJECT_DETERMINERS)
    if not (one_noun or name):
        return False
    rest = re.match(r"[^.!?;:,\n]*", text[end:end + 200])
    return not _FINITE_VERB_RE.search(rest.group(0) if rest else "")


__all__ = [
    "DEFAULT_CONNECTIVES", "EN_CONNECTIVES", "EN_EXCEPTION_CONDITION", "EN_NEGATION", "WHOLE_CLAUSE_CONNECTIVES",
    "ZH_CONNECTIVES", "ZH_EXCEPTION_CONDITION", "ZH_NEGATION", "default_entity_labels", "not_a_connective",
    "resolve_connectives",
]
