"""Contradicting facts: same entity and attribute, different value, from different items.

Facts are pulled out as (entity, attribute, value) triples with simple patterns:

- **text**: an entity is an identifier (an order id ``#W2611340``, a flight ``HAT136``, a
  reservation ``UM3OG5``, a user id ``mia_li_3668``, any match of a plan anchor whose name says
  it names identifiers (a part ``id``, ``no``, ``nr``, ``number``, ``ref``, ``sku``, ``ticket``,
  ``order``, ``reservation``: ``order_id``, ``claim_no``), or a match of any other anchor that looks
  like an identifier: letters (one or more groups), a separator, digits (``INV-2024``, ``PO_17``,
  ``CASE#0042``, a host ``srv-fin-02``), or an IPv4 address (``185.220.101.47``; not for
  an anchor named ``…code``, whose matches name kinds — airports, currencies, errors); always the
  whole identifier: a match that stops inside it (``PO-2024`` of ``PO-2024-17``, ``INV-2024`` of
  ``INV-20241``) takes the rest of its word and its further ``-digits`` groups); a value is an amount (``$50``, ``EUR 50``, ``50 EUR``, ``人民币500元``, ``5万元`` = 50,000), a date (``2024-05-20``,
  ``May 20, 2024``), a status word (``cancelled``, ``delivered``…: after a copula or a status label,
  "is delivered", "status: pending"; not of a person, "we are processing …", nor a verb whose object
  is the identifier after it, "processing order #W1234567"), a quantity (``3 bags``) or a
  data size (``3.2 GB``). The attribute is the value's type, refined by a keyword before it in the
  sentence ("refund amount", "price", "departure date"…); a date or size without one is named by
  the verb next to it and an order word before it ("isolated on 2026-03-09", "3.2 GB sent to",
  "first seen on"), so two events of one entity are two attributes; and it is of one occurrence:
  a date in a size's clause keys the size ("185.220.101.47 on 2026-03-08") and is no fact of its
  own, an identifier right after the value names what the event was of ("patched on 2026-03-05
  (KB5034441)": ``srv-fin-02 / KB5034441``), and a clause that says the event recurs ("nightly",
  "every", "again", "another"…) states no single date or size. A subject named right after an identifier is an attribute of it
  ("Host srv-fin-02 downtime is 31 hours"). A value belongs to the nearest identifier
  before it in its clause (sentence, line or ``;`` part), or after it when none is before,
  and only within ``MAX_DISTANCE`` characters. A bare number ("3", "24", "2,448") is a count or
  an amount, never an entity, even when a plan anchor matches it. A clause that names no
  identifier states a value of its subject: "Headcount is 34 people" is attribute ``headcount``
  of no named entity (``entity`` ""), so "Headcount is 36 people" from another item conflicts.
- **JSON** (tool output, state): every object with an id field (``order_id``, ``reservation_id``,
  ``flight_number``, ``id``…, or any key ending in ``_id``, ``_number``, ``_no``, ``_ref``, ``Id``,
  ``Number``: ``claim_id``, ``policyNumber``) is an entity, qualified by its parents' ids and its ``date``;
  each scalar leaf under it is an attribute (its key path, ``_`` read as a space).

Values are normalized (``$1,200.00`` → ``1200``, ``USD 40k`` → ``40000``, ``canceled`` → ``cancelled``) before
comparing, an amount with its currency (:func:`money_currency`): the same figure in two currencies is two values
(``40000 USD``, ``40000 EUR``), a figure that names none is the same as it in any one.
Two items that state different values for the same entity and attribute are a conflict: both
stay in the handoff, and the conflict is listed with each value's source, time and confidence.

>>> from odcf.handoff.items import HandoffItem
>>> a = HandoffItem(id="a", text="Refund amount for order #W123: $50.", origin="agent:researcher")
>>> b = HandoffItem(id="b", text='{"order_id": "#W123", "refund_amount": 45}', kind="json", origin="tool:get_order")
>>> [(c.entity, c.attribute, [v.value for v in c.values]) for c in find_conflicts((a, b))]
[('#W123', 'refund amount', ['50', '45'])]
"""
from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from odcf.handoff.items import HandoffItem
from odcf.stages.rank import _CURRENCY_CODES
from odcf.textutil import split_sentences

#: Layers whose items state facts (drafts and instructions are not compared).
FACT_LAYERS = frozenset({"fact", "history", "state"})

_ID_PATTERNS = (
    r"#[A-Z]?\d{3,}",                                  # order ids (#W2611340, #4521)
    r"\b[A-Z]{2,4}\d{3,}\b",                          # flight numbers, ticket ids (HAT136, INC0042)
    r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z][A-Z0-9]*[A-Z])[A-Z0-9]{6}\b",  # reservation codes (UM3OG5)
    r"\b[a-z]+_[a-z]+_\d{3,}\b",                      # user ids (mia_li_3668)
    r"\b(?:[a-z]+_)+\d{5,}\b",                        # payment ids (credit_card_4421486)
)
#: An amount: a sign or an ISO code in capitals before the number ("$1,450", "EUR 1,450": README, "an ISO code in
#: capitals before the amount is its kind as after it"), a code or "dollars" after it, or a Chinese amount. QA: without
#: the code before, "costs EUR 1,450." was no value, so its bullet read "costs EUR …" with the amount gone, and two
#: tools' "EUR 1,450" and "EUR 1,950" for one order were no conflict while "$1,450" and "$1,950" were.
#: A figure may end in a thousands or millions suffix written onto it ("USD 40k", "€2.5m", "$1.2bn"): read without
#: it, "USD 40k" was "USD 40" and conflicted with "USD 40,000".
_FIGURE = r"\d[\d,]*(?:\.\d+)?(?:(?:k|m|bn)\b)?"
_MONEY = (r"(?:[$€£¥￥]\s?" + _FIGURE + r"|\b(?-i:" + _CURRENCY_CODES + r")\s?" + _FIGURE
          + r"|" + _FIGURE + r"\s?(?:USD|EUR|GBP|dollars?)"
          r"|(?:人民币|美元|欧元)?\d[\d,]*(?:\.\d+)?\s?(?:亿元|万元|元)|(?:人民币|美元|欧元)\d[\d,]*(?:\.\d+)?)")
_MONTHS = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|Jun(?:e)?|Jul(?:y)?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
_DATE = rf"(?:\d{{4}}-\d{{2}}-\d{{2}}|{_MONTHS}\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?|\d{{1,2}} {_MONTHS}(?: \d{{4}})?)"
STATUSES = (
    "pending", "processed", "processing", "delivered", "cancelled", "canceled", "refunded", "shipped",
    "confirmed", "landed", "delayed", "on time", "scheduled", "available", "approved", "rejected",
    "open", "closed", "resolved", "failed", "passed", "active", "inactive", "returned", "exchanged",
    "booked", "flying", "completed",
)
_STATUS = r"\b(?:" + "|".join(re.escape(s) for s in sorted(STATUSES, key=len, reverse=True)) + r")\b"
#: A status word counts only after a copula or a status label ("is delivered", "status: pending").
_STATUS_LEAD = re.compile(r"(?:\b(?:is|was|are|were|been|be|now|marked(?: as)?|shows?|status(?: is)?|remains?|became|got)|[:=])\s*(?:\w+\s+)?$",
                          re.IGNORECASE)
#: ... but not when the copula's subject is the speaker or the reader: "We are processing the refund
#: for #W1234567" says what we are doing, not the order's status.
_PERSON_SUBJECT = re.compile(r"\b(?:i|we|you)\s+(?:are|was|were)\s+(?:\w+\s+)?$", re.IGNORECASE)
#: ... nor when the identifier it would be the status of follows it as its object, with at most a
#: determiner and one noun between ("processing order #W1234567", "processed the order #W1"), no
#: punctuation and no preposition ("status: pending for #W1" is a status): the word is a verb acting on
#: the entity. QA: "We are processing order #W1234567 now." and a log line "2025-03-11 10:00:31,102 INFO
#: [main] c.a.OrderService: processing order #W1234567" were each read as "#W1234567 status:
#: processing" and listed against a tool's "delivered".
_STATUS_OBJECT = re.compile(
    r"\s+(?:(?:the|a|an|this|that|your|our|their|his|her|its)\s+)?"
    r"(?:(?!(?:for|of|on|in|to|at|by|with|from|under|since|until|via|per|as|and|or|but)\b)[a-z]+\s+)?",
    re.IGNORECASE)
_QTY = r"\b\d{1,4} (?:items?|units?|bags?|pieces?|seats?|passengers?|nights?|tickets?|pcs)\b"
#: A data size ("3.2 GB", "512 MiB", "40 bytes").
_SIZE = r"\b\d[\d,]*(?:\.\d+)?\s?(?:[KMGTP]i?B|bytes?)\b"
_VALUE_RE = re.compile(
    rf"(?P<money>{_MONEY})|(?P<date>{_DATE})|(?P<qty>{_QTY})|(?P<size>{_SIZE})|(?P<status>{_STATUS})",
    re.IGNORECASE)

#: keyword stem before a value -> attribute name, per value type
_ATTR_WORDS: dict[str, tuple[tuple[str, str], ...]] = {
    "money": (("refund", "refund amount"), ("退款", "refund amount"), ("价格", "price"), ("总额", "total"),
              ("费用", "fee"), ("price", "price"), ("total", "total"), ("balance", "balance"),
              ("fee", "fee"), ("cost", "cost"), ("charge", "charge"), ("paid", "payment"), ("payment", "payment"),
              ("deposit", "deposit"), ("compensation", "compensation"), ("budget", "budget")),
    "date": (("depart", "departure date"), ("arriv", "arrival date"), ("deliver", "delivery date"),
             ("due", "due date"), ("ship", "ship date"), ("return", "return date"), ("expir", "expiry date"),
             ("book", "booking date"), ("created", "creation date")),
    "status": (("refund", "refund status"), ("payment", "payment status"), ("return", "return status"),
               ("exchange", "exchange status"), ("ticket", "ticket status")),
    "qty": (),
    "size": (),
}
#: A value right after a negation ("is not $1,200", "was never delivered", "不是500元") is denied, not stated.
_NEGATED = re.compile(r"(?:\b(?:not|never|no longer)|n't|不是|并非|不)\s*(?:\w+\s+){0,2}$", re.IGNORECASE)
_DEFAULT_ATTR = {"money": "amount", "date": "date", "status": "status", "qty": "quantity", "size": "size"}
#: What happened on a date or to a size, named by the verb next to it: "isolated on 2026-03-09",
#: "3.2 GB sent to": two different events of one entity are two attributes, not a conflict.
#: An order word before the verb stays in the name: "first seen on" and "last seen on" are two events.
_ORDER = r"(?:(?P<order>first|last|initially|originally|finally|lastly|previously|earlier|later|most recently)\s+)?"
_EVENT_BEFORE = re.compile(rf"\b{_ORDER}(?P<verb>[a-z]+(?:ed|en|t))\s+(?P<prep>on|at|by|since|until|from|in|to)\s*$")
_EVENT_AFTER = re.compile(rf"^\s*(?:(?:was|were|is|are|been)\s+)?{_ORDER}(?P<verb>[a-z]+(?:ed|en|t))\s+(?P<prep>on|at|by|to|from|via|over|into)\b")
#: A value further than this (in characters) from every identifier in its clause is not attributed.
MAX_DISTANCE = 60
_JSON_ID_KEYS = ("order_id", "reservation_id", "flight_number", "ticket_id", "user_id", "payment_id",
                 "item_id", "product_id", "id")
#: Other keys that name an identifier in any domain: ``claim_id``, ``policyNumber``, ``case_no``,
#: ``invoice_ref``.
_JSON_ID_KEY_RE = re.compile(r"^.+(?:_(?:id|number|no|ref)|(?<=[a-z])(?:Id|ID|Number|No|Ref))$")
#: ... but not numbers that many entities share or that are an attribute of one: a phone, fax or
#: mobile number, a seat, room, gate, page, line, row or version number.
_NOT_ID_WORDS = frozenset({"phone", "telephone", "tel", "fax", "mobile", "cell", "seat", "room", "gate", "page",
                           "line", "row", "version"})


def _is_id_key(key: str) -> bool:
    if key in _JSON_ID_KEYS:
        return True
    if _JSON_ID_KEY_RE.match(key) is None:
        return False
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key).lower().replace("-", "_").split("_")
    return not _NOT_ID_WORDS.intersection(words)


@dataclass(frozen=True)
class Fact:
    """One (entity, attribute, value) triple and where it was stated."""

    entity: str
    attribute: str
    value: str          # normalized, used for comparison
    raw: str            # as written
    item: str
    currency: str | None = None  # an amount's currency (:func:`money_currency`), None when it names none


@dataclass(frozen=True)
class ConflictValue:
    value: str
    raw: str
    items: tuple[str, ...]
    origins: tuple[str, ...]
    timestamps: tuple[str | None, ...]
    confidences: tuple[float | None, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "raw": self.raw, "items": list(self.items), "origins": list(self.origins),
                "timestamps": list(self.timestamps), "confidences": list(self.confidences)}


@dataclass(frozen=True)
class Conflict:
    entity: str
    attribute: str
    values: tuple[ConflictValue, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"entity": self.entity, "attribute": self.attribute, "values": [v.to_dict() for v in self.values]}

    def render(self, delivered: Collection[str] | None = None) -> str:
        """One line; with *delivered* (the item ids the handoff text holds), each item it lacks is
        marked "not delivered", so the line never implies both sides are there to read."""
        parts = []
        for v in self.values:
            where = ", ".join(
                " ".join(x for x in (f"item {i}", f"({o})" if o != i else "", t or "",
                                     f"confidence {c:g}" if c is not None else "",
                                     "not delivered" if delivered is not None and i not in delivered else "") if x)
                for i, o, t, c in zip(v.items, v.origins, v.timestamps, v.confidences))
            parts.append(f"{v.raw} [{where}]")
        return f"- {' '.join(x for x in (self.entity, self.attribute) if x)}: " + " vs ".join(parts)


class IdPattern(Protocol):
    """What finds identifiers in a clause: a compiled regex, or :class:`ShapedAnchor`."""

    def finditer(self, string: str) -> Iterator[re.Match[str]]: ...


def _id_regex(extra: Sequence[IdPattern] = ()) -> list[IdPattern]:
    return [re.compile(p) for p in _ID_PATTERNS] + list(extra)


#: What an identifier looks like when its anchor's name does not say so: letters (one or more
#: groups), a separator, digits, and any further groups (``INV-2024``, ``PO_17``, ``CASE#0042``,
#: ``INV-2024-0042``, a host ``srv-fin-02``), or an IPv4 address (``185.220.101.47``).
ID_SHAPE = re.compile(r"(?a)[A-Za-z]{1,10}(?:[-_#/][A-Za-z]{1,10}){0,3}[-_#/]\d{2,}(?:[-_/][A-Za-z0-9]+)*"
                      r"|\d{1,3}(?:\.\d{1,3}){3}")
#: The rest of an identifier a match stopped inside: the rest of its word and ``-digits`` groups.
_ID_TAIL = re.compile(r"(?a)\w*(?:-\d+)*")


@dataclass(frozen=True)
class ShapedAnchor:
    """An anchor whose name does not say it names identifiers: only its matches that look like one
    (:data:`ID_SHAPE`, once taken whole) are identifiers."""

    regex: re.Pattern[str]

    def finditer(self, string: str) -> Iterator[re.Match[str]]:
        for m in self.regex.finditer(string):
            end = _ID_TAIL.match(string, m.end()).end() if m.group(0)[-1:].isalnum() else m.end()  # type: ignore[union-attr]
            if ID_SHAPE.fullmatch(string, m.start(), end):
                yield m


#: Anchor names that say "a number" without saying of what: their matches are quantities, not ids.
_GENERIC_NUMBER_NAMES = frozenset({"number", "numbers", "num", "nr", "no", "integer", "decimal"})
#: A bare number ("3", "24", "2,448", "6322.80"): a count or an amount, never an entity to key a
#: conflict on (a long digit run, a tracking or account number, still is one).
_BARE_NUMBER_RE = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d{1,9})(?:\.\d+)?")


def id_anchors(plan: Any) -> list[IdPattern]:
    """The plan's anchors that find identifiers: every match of one whose name says it names them
    (a part id/no/nr/number/ref/…: ``order_id``, ``claim_no``), and the matches that look like an
    identifier (:data:`ID_SHAPE`) of any other (``inv: 'INV-\\d{4}'``)."""
    out: list[IdPattern] = []
    for a in getattr(getattr(plan, "protection", None), "anchors", ()):
        name = a.name.lower()
        # an anchor named only "number" (any number) names no kind of thing at all
        if name in _GENERIC_NUMBER_NAMES:
            continue
        if re.search(r"(?:^|_)(?:id|ids|no|num|nr|number|ref|reference|sku|ticket|order|reservation)(?:_|$)", name):
            out.append(a.regex)
        # "code" is left out on purpose: airport, currency and error codes name kinds, not entities
        elif not re.search(r"(?:^|_)codes?(?:_|$)", name):
            out.append(ShapedAnchor(a.regex))
    return out


def normalize_value(kind: str, raw: str) -> str:
    r = raw.strip()
    if kind == "money":
        num = re.sub(r"[^\d.]", "", r.replace(",", ""))
        suffix = _SUFFIX_RE.search(r)
        scale = _SCALE[suffix.group(1).lower()] if suffix else 1e8 if "亿" in r else 1e4 if "万" in r else 1
        try:
            f = float(num) * scale
        except ValueError:
            return r.lower()
        return f"{f:.2f}".rstrip("0").rstrip(".")
    if kind == "status":
        s = r.lower()
        return {"canceled": "cancelled"}.get(s, s)
    if kind == "date":
        return _iso_date(r)
    if kind == "qty":
        n, _, unit = r.partition(" ")
        return f"{int(n)} {unit.lower().rstrip('s')}"
    if kind == "size":
        m = re.fullmatch(r"([\d,]*\d(?:\.\d+)?)\s?(.+)", r)
        if m:
            return f"{normalize_value('money', m.group(1))} {m.group(2).lower().rstrip('s')}"
    return r.lower()


#: A thousands or millions suffix written onto a figure ("40k", "2.5m", "1.2bn"), and what it multiplies by.
_SUFFIX_RE = re.compile(r"\d(k|m|bn)\b", re.IGNORECASE)
_SCALE = {"k": 1e3, "m": 1e6, "bn": 1e9}
#: An amount's currency, by its sign, ISO code or name (sign, code and name of one currency are one: "€40,000",
#: "EUR 40,000" and "40,000 EUR" are all EUR). "¥" (yen or yuan) and a bare "元" name none for sure, and a "$"
#: after a letter ("A$", "C$", "HK$") is not the US dollar's.
_CURRENCY_SIGN = {"$": "USD", "€": "EUR", "£": "GBP", "dollar": "USD", "dollars": "USD", "RMB": "CNY", "人民币": "CNY",
                  "美元": "USD", "欧元": "EUR"}
_CURRENCY_OF_RE = re.compile(r"(?<![A-Za-z])\$|[€£]|\b(?-i:(" + _CURRENCY_CODES + r"))\b|\b(dollars?)\b|人民币|美元|欧元",
                             re.IGNORECASE)


def money_currency(raw: str, before: str = "") -> str | None:
    """The ISO code of the currency an amount as written (an :data:`_MONEY` match, *before* the text before it) is
    in, or None when it names none for sure: ``$40,000`` -> USD, ``€40,000`` / ``EUR 40,000`` / ``40,000 EUR`` ->
    EUR, ``40,000`` -> None; ``$40,000`` after "A" (``A$40,000``) -> None."""
    m = _CURRENCY_OF_RE.search(before[-1:] + raw)
    if m is None:
        return None
    word = m.group(1) or (m.group(2).lower() if m.group(2) else m.group(0))
    return _CURRENCY_SIGN.get(word, word)


_MONTH_NUM = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}


def _iso_date(raw: str) -> str:
    """``2024-05-20`` for dates with a year, ``05-20`` for dates without one."""
    r = raw.strip().lower()
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", r)
    if m:
        return r
    m = re.fullmatch(r"([a-z]+)\.? (\d{1,2})(?:st|nd|rd|th)?(?:,? (\d{4}))?", r) or None
    if m:
        mon, day, year = _MONTH_NUM.get(m.group(1)[:3]), int(m.group(2)), m.group(3)
    else:
        m2 = re.fullmatch(r"(\d{1,2}) ([a-z]+)(?: (\d{4}))?", r)
        if not m2:
            return r
        mon, day, year = _MONTH_NUM.get(m2.group(2)[:3]), int(m2.group(1)), m2.group(3)
    if mon is None:
        return r
    return f"{year}-{mon:02d}-{day:02d}" if year else f"{mon:02d}-{day:02d}"


def _same_precision(values: dict[str, list[Fact]]) -> dict[str, list[Fact]]:
    """When some dates lack a year, compare all of them by month and day only."""
    keys = list(values)
    if not any(re.fullmatch(r"\d{2}-\d{2}", k) for k in keys):
        return values
    if not all(re.fullmatch(r"(?:\d{4}-)?\d{2}-\d{2}", k) for k in keys):
        return values
    out: dict[str, list[Fact]] = {}
    for k, fs in values.items():
        out.setdefault(k[-5:], []).extend(fs)
    return out


def _by_currency(values: dict[str, list[Fact]]) -> dict[str, list[Fact]]:
    """*values* with an amount stated in two currencies split by currency ("40000 EUR", "40000 USD"): the same figure
    in euros and in dollars is two values, not one (QA: "budget EUR 40,000" and "budget USD 40,000" were no
    conflict). An amount that names no currency (``40,000``, a JSON number) stays with the figure: it is the same
    value as one currency, and one of several as much as another."""
    out: dict[str, list[Fact]] = {}
    for v, facts in values.items():
        currencies = sorted({f.currency for f in facts if f.currency})
        if len(currencies) < 2:
            out.setdefault(v, []).extend(facts)
            continue
        for f in facts:
            out.setdefault(f"{v} {f.currency}" if f.currency else v, []).append(f)
    return out


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, int) and abs(value) >= 10**15:
            return str(value)
        return f"{float(value):.2f}".rstrip("0").rstrip(".")
    if isinstance(value, str):
        v = value.strip().lower()
        return {"canceled": "cancelled"}.get(v, v)
    return None


def json_facts(item_id: str, data: Any, *, context_date: str | None = None) -> list[Fact]:
    """Facts from a JSON value: id-bearing objects are entities, their scalar leaves attributes.

    *context_date* qualifies entities that carry no ``date`` of their own — the date a tool was
    asked about (a flight search for 2024-05-21 and one for 2024-05-24 do not contradict each other).
    """
    out: list[Fact] = []

    def entity_of(obj: Mapping[str, Any]) -> str | None:
        # the known keys first (in their order), then any other key that names an identifier
        keys = [k for k in _JSON_ID_KEYS if k in obj] + [k for k in obj if k not in _JSON_ID_KEYS and _is_id_key(str(k))]
        for key in keys:
            v = obj.get(key)
            if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v):
                name = str(v)
                date = obj.get("date")
                if not isinstance(date, str):
                    date = context_date
                return f"{name} on {date}" if isinstance(date, str) and key != "id" else name
        return None

    def walk(value: Any, entity: str | None, path: tuple[str, ...]) -> None:
        if isinstance(value, Mapping):
            own = entity_of(value)
            if own is not None:
                entity, path = (own if entity is None or own.startswith(entity) else f"{entity} / {own}"), ()
            for k, v in value.items():
                walk(v, entity, path + (str(k),))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                sub = entity_of(v) if isinstance(v, Mapping) else None
                walk(v, entity, path if sub is not None else path + (f"[{i}]",))
        elif entity is not None and path:
            norm = _scalar(value)
            if norm is None:
                return
            # the id (or date) that names the entity is not an attribute of it
            names_entity = len(path) == 1 and _is_id_key(path[0]) and str(value) in entity
            if path[-1] in _JSON_ID_KEYS or path[-1] == "date" or names_entity:
                return
            attr = " ".join(p.replace("_", " ") for p in path).replace(" [", "[")
            raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            out.append(Fact(entity=entity, attribute=attr, value=norm, raw=raw,
                            item=item_id))

    walk(data, None, ())
    return out


def text_facts(item_id: str, text: str, id_patterns: Sequence[IdPattern]) -> list[Fact]:
    """Facts from prose (see the module docstring)."""
    out: list[Fact] = []
    clauses = [piece for start, end in split_sentences(text)
               for line in text[start:end].split("\n") for piece in line.split("; ")]
    for sent in clauses:
        ids: list[tuple[int, int, str]] = []
        for rx in id_patterns:
            for m in rx.finditer(sent):
                if _BARE_NUMBER_RE.fullmatch(m.group(0).strip()):
                    continue  # "24" is how many or how much, not whose
                # the whole identifier: "PO-2024" of "PO-2024-17" would make two invoices one
                end = _ID_TAIL.match(sent, m.end()).end() if m.group(0)[-1:].isalnum() else m.end()  # type: ignore[union-attr]
                if not any(s <= m.start() < e or m.start() <= s < end for s, e, _ in ids):
                    ids.append((m.start(), end, sent[m.start():end]))
        if not ids:
            out += [f for f, _ in _subject_facts(item_id, sent)]
            continue
        ids.sort()
        spans: list[tuple[int, int]] = []  # the values found, so a subject's value is not taken twice
        # (fact, kind, end of its value, its identifier's span) of this clause, before occurrences are named
        found: list[tuple[Fact, str, int, tuple[int, int]]] = []
        recurring = _RECURRING.search(sent) is not None
        for m in _VALUE_RE.finditer(sent):
            kind = m.lastgroup or "status"
            if any(s <= m.start() < e for s, e, _ in ids):
                continue
            if kind == "status" and not _states_status(sent, m.start(), m.end(), ids):
                continue  # "wants it refunded" is a wish, "we are processing order #W1" an act: no status
            if _NEGATED.search(sent[:m.start()]):
                continue  # "is not $1,200" denies the value: it supports no side
            before = [i for i in ids if i[1] <= m.start() and m.start() - i[1] <= MAX_DISTANCE]
            after = [i for i in ids if i[0] >= m.end() and i[0] - m.end() <= MAX_DISTANCE]
            if not before and not after:
                continue  # too far from any identifier to say whose value it is
            own = before[-1] if before else after[0]
            ent = own[2]
            lead = sent[(before[-1][1] if before else 0):m.start()].lower()
            if not before:
                lead = sent[:m.start()].lower()
            attr = _attribute_after(kind, sent[m.end():].lower()) or _attribute(kind, lead, sent[:m.start()].lower())
            if attr == _DEFAULT_ATTR[kind] and kind in ("date", "size"):
                attr = _event(sent[:m.start()].lower(), sent[m.end():].lower()) or attr
            raw = m.group(0)
            spans.append((m.start(), m.end()))
            if recurring and kind in ("date", "size"):
                continue  # "nightly", "again", "every": one of several occurrences, not the entity's only value
            cur = money_currency(raw, sent[:m.start()]) if kind == "money" else None
            found.append((Fact(entity=ent, attribute=attr, value=normalize_value(kind, raw), raw=raw, item=item_id,
                               currency=cur), kind, m.end(), own[:2]))
        out += _occurrences(sent, found, ids)
        # "Host srv-fin-02 downtime is 31 hours": a subject named right after the identifier
        for s, e, name in ids:
            rest = sent[e:]
            offset = e + len(rest) - len(rest.lstrip())
            for f, (vs, ve) in _subject_facts(item_id, rest.lstrip(), entity=name, first_only=True):
                if not any(a < offset + ve and offset + vs < b for a, b in spans):
                    out.append(f)
    return out


def _states_status(clause: str, start: int, end: int, ids: Sequence[tuple[int, int, str]]) -> bool:
    """Whether the status word at ``clause[start:end]`` states a status: after a copula or a status
    label (:data:`_STATUS_LEAD`), whose subject is no person (:data:`_PERSON_SUBJECT`), and not a
    verb whose object is the identifier right after it (:data:`_STATUS_OBJECT`)."""
    before = clause[:start]
    if not _STATUS_LEAD.search(before) or _PERSON_SUBJECT.search(before):
        return False
    nxt = next((s for s, _, _ in ids if s >= end), None)
    return nxt is None or _STATUS_OBJECT.fullmatch(clause, end, nxt) is None


#: What may stand between a dated event and the identifier of what it was of: "on 2026-03-05
#: (KB5034441)", "on 2026-03-05 with KB5034441".
_OBJECT_GAP = re.compile(r"\s*(?:[(\[]\s*|,?\s*(?:with|for|via|using|under|of)\s+)?", re.IGNORECASE)


def _occurrences(clause: str, found: list[tuple[Fact, str, int, tuple[int, int]]],
                 ids: list[tuple[int, int, str]]) -> list[Fact]:
    """The facts of one clause, a date or size keyed by the occurrence the clause names (see
    :func:`text_facts`): "3.2 GB sent to 185.220.101.47 on 2026-03-08" is a size of
    ``185.220.101.47 on 2026-03-08`` (the date names which transfer and is no fact of its own);
    "patched on 2026-03-05 (KB5034441)" is a date of ``srv-fin-02 / KB5034441`` (an identifier right
    after the value, :data:`_OBJECT_GAP`)."""
    out: list[Fact] = []
    for fact, kind, end, own in found:
        if kind not in ("date", "size"):
            out.append(fact)
            continue
        dates = [f for f, k, _, o in found if k == "date" and o == own]
        if kind == "date" and len(dates) == 1 and any(k == "size" and o == own for _, k, _, o in found):
            continue  # the date of a size: it names the size's occurrence (below)
        entity = fact.entity
        if kind == "size" and len(dates) == 1:
            entity = f"{entity} on {dates[0].value}"
        # an identifier written right after the value, other than its own: what the event was of
        nxt = next(((s, e, name) for s, e, name in ids if s >= end), None)
        if nxt is not None and nxt[:2] != own and _OBJECT_GAP.fullmatch(clause, end, nxt[0]):
            entity = f"{entity} / {nxt[2]}"
        out.append(dataclasses.replace(fact, entity=entity) if entity != fact.entity else fact)
    return out


#: A clause that says its event recurs or repeats ("Nightly backup …", "isolated again on …", "a second
#: transfer …"): its dates and sizes are one occurrence among several, not a single value of the entity.
_RECURRING = re.compile(
    r"\b(?:hourly|nightly|daily|weekly|fortnightly|monthly|quarterly|yearly|annually|each|every|again|another"
    r"|also|twice|repeatedly|recurring|(?:a|the|its) (?:second|third|fourth|fifth))\b", re.IGNORECASE)

#: Words the event pattern would take that name no event ("not on", "that at", "first on").
_NOT_EVENTS = frozenset({"not", "that", "what", "but", "it", "at", "just", "last", "first", "next", "most", "least",
                         "yet", "often", "been", "then", "when", "even", "seven", "eleven"})


def _event(before: str, after: str) -> str | None:
    """The event a date or size is of, as written next to it ("isolated on", "sent to"), or None."""
    for m in (_EVENT_BEFORE.search(before), _EVENT_AFTER.match(after)):
        if m is not None and m.group("verb") not in _NOT_EVENTS:
            return " ".join(w for w in (m.group("order"), m.group("verb"), m.group("prep")) if w)
    return None


#: "<subject> is <value>" in a clause that names no identifier: "Headcount is 34 people", "the budget
#: is €40,000", "Total: …" not. The subject (1–3 words, after a clause start) is the attribute.
_SUBJECT_RE = re.compile(
    r"(?:^|[,;:(]\s*|\b(?:and|but|so)\s+)(?:(?:the|our|your|my|their|its)\s+)?"
    r"(?P<subject>[^\W\d_](?:[^\W\d_]|-)*(?:\s+[^\W\d_](?:[^\W\d_]|-)*){0,2}?)\s+(?:is|are|was|were|will be|has been)\s+"
    r"(?:(?:now|still|exactly|about|approximately)\s+)?"
    rf"(?:(?P<money>{_MONEY})|(?P<date>{_DATE})|(?P<number>\d[\d,]*(?:\.\d+)?)(?P<unit>\s+[^\W\d_]+)?)(?![\w.,]*\d)",
    re.IGNORECASE)
#: Subjects that name nothing by themselves ("it is 3", "which is €34,253.70", "there are 2").
_NOT_SUBJECTS = frozenset({"it", "this", "that", "there", "here", "which", "what", "who", "he", "she", "they",
                           "we", "i", "you", "one", "each", "all", "these", "those", "both", "that one"})


def _subject_facts(item_id: str, clause: str, *, entity: str = "",
                   first_only: bool = False) -> list[tuple[Fact, tuple[int, int]]]:
    """Facts of a clause without an identifier: the value of a named subject (:data:`_SUBJECT_RE`),
    each with the span of its value. With *entity* (the identifier the clause opens after) they are
    that entity's; *first_only* takes only a subject at the clause's start."""
    out: list[tuple[Fact, tuple[int, int]]] = []
    for m in _SUBJECT_RE.finditer(clause):
        if first_only and m.start() > 0:
            break
        subject = " ".join(m.group("subject").lower().split())
        if subject in _NOT_SUBJECTS or subject.split()[0] in _NOT_SUBJECTS:
            continue
        kind = "money" if m.group("money") else "date" if m.group("date") else "number"
        raw = m.group(kind) + (m.group("unit") or "" if kind == "number" else "")
        value = normalize_value(kind, raw)
        if kind == "number":  # "2,448" = "2448", "3 nights" = "3 night" (units compared singular)
            unit = (m.group("unit") or "").strip().lower()
            value = " ".join(x for x in (normalize_value("money", m.group("number")), unit.rstrip("s")) if x)
        cur = money_currency(raw, clause[:m.start(kind)]) if kind == "money" else None
        out.append((Fact(entity=entity, attribute=subject, value=value, raw=raw.strip(), item=item_id, currency=cur),
                    (m.start(kind), m.end("unit") if kind == "number" and m.group("unit") else m.end(kind))))
    return out


_LINK_WORDS = frozenset({"and", "or", "after", "before", "for", "of", "to", "the", "a", "an", "per", "in", "on",
                         "with", "plus", "minus", "less", "by", "from", "is", "was", "as", "than"})


def _attribute_after(kind: str, after: str) -> str | None:
    """An attribute named right after the value: "$5 restocking fee", "$20 deposit" (one word at most
    between them, and not a linking word)."""
    if kind != "money":
        return None
    m = re.match(r"[ \t]*((?:[A-Za-z-]+[ \t]+)?[A-Za-z-]+)", after)
    for word in (m.group(1).split() if m else ()):
        if word in _LINK_WORDS:
            return None  # "$500 and the fee": the fee is another value
        name = next((name for stem, name in _ATTR_WORDS["money"] if word.startswith(stem) and stem.isascii()), None)
        if name is not None:
            return name
    return None


def _attribute(kind: str, near: str, whole_before: str) -> str:
    if kind == "qty":
        return "quantity"
    for text in (near, whole_before):
        best: tuple[int, str] | None = None
        for stem, name in _ATTR_WORDS.get(kind, ()):
            pos = text.rfind(stem)
            if pos >= 0 and (best is None or pos > best[0]):
                best = (pos, name)
        if best is not None:
            return best[1]
    return _DEFAULT_ATTR[kind]


def item_facts(item: HandoffItem, id_patterns: Sequence[IdPattern]) -> list[Fact]:
    data = item.data
    if data is None and item.text.lstrip()[:1] in ("{", "["):
        try:
            data = json.loads(item.text)
        except ValueError:
            data = None
    if data is not None and isinstance(data, (Mapping, list)):
        return json_facts(item.id, data, context_date=_call_date(item))
    return text_facts(item.id, item.text, id_patterns)


def _call_date(item: HandoffItem) -> str | None:
    """The date argument of the tool call that produced *item*, if any."""
    for key, value in item.call_args:
        if key == "date" or key.endswith("_date"):
            return value
    return None


def find_conflicts(items: Iterable[HandoffItem], *, plan: Any = None) -> tuple[Conflict, ...]:
    """Conflicts among *items* (only fact, history and state items are compared)."""
    items = [it for it in items if it.layer in FACT_LAYERS]
    by_id = {it.id: it for it in items}
    patterns = _id_regex(id_anchors(plan) if plan is not None else ())
    table: dict[tuple[str, str], dict[str, list[Fact]]] = {}
    for it in items:
        for f in item_facts(it, patterns):
            table.setdefault((f.entity, f.attribute), {}).setdefault(f.value, []).append(f)
    out: list[Conflict] = []
    for (entity, attr), values in table.items():
        values = _by_currency(_same_precision(values))
        if len(values) < 2:
            continue
        per_item: dict[str, set[str]] = {}
        for v, fs in values.items():
            for f in fs:
                per_item.setdefault(f.item, set()).add(v)
        if len(per_item) < 2 or any(len(vs) > 1 for vs in per_item.values()):
            # one item stating several values (two legs, two payments) makes the pattern
            # ambiguous for this entity; that is not evidence of a contradiction
            continue
        cvs = []
        for v, fs in values.items():
            ids = tuple(dict.fromkeys(f.item for f in fs))
            cvs.append(ConflictValue(
                value=v, raw=fs[0].raw, items=ids,
                origins=tuple(by_id[i].label for i in ids),
                timestamps=tuple(by_id[i].timestamp for i in ids),
                confidences=tuple(by_id[i].confidence for i in ids),
            ))
        out.append(Conflict(entity=entity, attribute=attr, values=tuple(cvs)))
    return tuple(out)
