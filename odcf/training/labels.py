"""Keep/drop word labels: joining pre-tokenized text into words, anchors, and the label rules.

>>> from odcf.training.labels import join_tokens
>>> text, owner = join_tokens(["It", "'s", "$", "5", "(", "net", ")", "."])
>>> text
"It's $5 (net)."
>>> owner   # which word each input token ended up in
[0, 0, 1, 1, 2, 2, 2, 2]
>>> join_tokens(["Mina", "'", "s", "show", "don", "'", "t", "'", "quote"])[0]
"Mina's show don't ' quote"

A *word* is what the inference stage keeps or drops: a run of non-whitespace characters of the
text. Corpora that come tokenized (WNUT-17, QMSum) are first joined back into running text with
English spacing rules, so that training words look like inference words (``great.`` rather than
``great`` ``.``); a word's label is the strongest label of the tokens it was made of.

Label values: 0 = drop, 1 = keep. Every word also gets a loss weight: ``MUST_KEEP_WEIGHT`` for
gold entities and anchor matches (numbers, money, dates, identifiers, ontology anchors and terms),
1.0 otherwise.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from odcf.backends.token_classifier import split_words

logger = logging.getLogger(__name__)

MUST_KEEP_WEIGHT = 3.0

_ATTACH_LEFT = re.compile(r"^(?:[.,!?;:%)\]}…]+|'s|'S|n't|N'T|'re|'m|'ll|'ve|'d|’s|n’t)$")
_ATTACH_RIGHT = {"(", "[", "{", "$", "£", "€", "#", "@"}
_APOSTROPHES = {"'", "’"}
_CLITICS = {"s", "t", "m", "ve", "re", "ll", "d"}

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
#: Built-in anchors: what must survive in any domain. Ontology anchors are added to these.
BUILTIN_ANCHORS: tuple[tuple[str, str], ...] = (
    ("number", r"\S*\d\S*"),
    ("money", r"[$€£¥]\s?\d[\d,.]*(?:\s?(?:million|billion|thousand|bn|m|k)\b)?"),
    ("quantity", r"\d[\d,.]*\s?(?:%|percent|per cent|million|billion|thousand|dollars?|euros?|pounds?|"
                 r"usd|eur|gbp|hours?|days?|weeks?|months?|years?|minutes?|seconds?)\b"),
    ("date", rf"\b{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\b(?:\s+\d{{4}})?"),
    ("url", r"https?://\S+|www\.\S+"),
    ("email", r"\S+@\S+\.\w+"),
    ("clause", r"§\s*\d+(?:\.\d+)*"),
    ("code", r"\b[A-Z]{2,}[-_]?\d[\w-]*\b"),
)
#: Function words (lower case): the heuristic peer ranks them last; inside an entity they get extra weight.
FUNCTION_WORDS = frozenset("""a an the and or of to in on at for by with from as is are was were be been being it its this that
these those there here what which who whom whose when where why how do does did have has had i me my we our you
your he him his she her they them their so than too very can will just should would could may might must shall
into over under about after before up down out off then once all any both each few more most other some such only
own same if but because until while um uh yeah okay oh like well""".split())
NEGATIONS = frozenset({"not", "no", "never", "n't", "without", "nor", "none", "cannot", "neither"})


def join_tokens(tokens: Sequence[str]) -> tuple[str, list[int]]:
    """Join *tokens* into text with English spacing; return it and each token's word index."""
    parts: list[str] = []
    owner: list[int] = []
    word = -1
    glue_next = False
    for i, tok in enumerate(tokens):
        tok = tok.strip()
        if not tok:
            owner.append(max(word, 0))
            continue
        # a space inside a token would split it into two words; keep it one word
        tok = re.sub(r"\s+", "_", tok)
        # an apostrophe split from its clitic ("don ' t", "Mina ' s") joins both neighbours
        clitic = (tok in _APOSTROPHES and i + 1 < len(tokens)
                  and tokens[i + 1].strip().lower() in _CLITICS and bool(parts) and parts[-1][-1:].isalnum())
        attach = word >= 0 and (glue_next or clitic or bool(_ATTACH_LEFT.match(tok)))
        if attach:
            parts.append(tok)
        else:
            if parts:
                parts.append(" ")
            parts.append(tok)
            word += 1
        owner.append(word)
        glue_next = tok in _ATTACH_RIGHT or clitic
    return "".join(parts), owner


@dataclass(frozen=True)
class AnchorSet:
    """Compiled anchor patterns and terms; :meth:`word_hits` marks words that overlap a match."""

    patterns: tuple[tuple[str, re.Pattern[str]], ...]
    terms: tuple[str, ...] = ()

    @classmethod
    def build(cls, ontology_dir: str | Path | None = None) -> AnchorSet:
        """Built-in anchors plus the anchors and terms of every ``*.yaml`` in *ontology_dir*."""
        pats = [(name, re.compile(p, re.IGNORECASE if name in ("quantity", "date") else 0)) for name, p in BUILTIN_ANCHORS]
        terms: list[str] = []
        if ontology_dir is not None:
            extra_p, extra_t = _ontology_protection(Path(ontology_dir))
            pats.extend(extra_p)
            terms.extend(extra_t)
        return cls(tuple(pats), tuple(sorted(set(t.lower() for t in terms if t.strip()))))

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        out: list[tuple[int, int, str]] = []
        for name, rx in self.patterns:
            out.extend((m.start(), m.end(), name) for m in rx.finditer(text) if m.end() > m.start())
        low = text.lower()
        for term in self.terms:
            start = 0
            while True:
                i = low.find(term, start)
                if i < 0:
                    break
                end = i + len(term)
                if (i == 0 or not low[i - 1].isalnum()) and (end == len(low) or not low[end].isalnum()):
                    out.append((i, end, "term"))
                start = i + 1
        return out

    def word_hits(self, text: str, words: Sequence[tuple[int, int]]) -> list[bool]:
        """For each word span, whether an anchor or term match overlaps it."""
        hits = [False] * len(words)
        spans = sorted(self.spans(text))
        if not spans:
            return hits
        j = 0
        for wi, (ws, we) in enumerate(words):
            while j < len(spans) and spans[j][1] <= ws:
                j += 1
            k = j
            while k < len(spans) and spans[k][0] < we:
                if spans[k][1] > ws:
                    hits[wi] = True
                    break
                k += 1
        return hits


def _ontology_protection(folder: Path) -> tuple[list[tuple[str, re.Pattern[str]]], list[str]]:
    """Anchor patterns and terms from the ontology YAML files (invalid ones are logged and skipped)."""
    import yaml

    pats: list[tuple[str, re.Pattern[str]]] = []
    terms: list[str] = []
    if not folder.is_dir():
        logger.warning("ontology folder %s not found; using built-in anchors only", folder)
        return pats, terms
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            logger.warning("%s: skipped (%s)", path, exc)
            continue
        protect = data.get("protect") if isinstance(data, dict) else None
        if not isinstance(protect, dict):
            continue
        for i, anchor in enumerate(protect.get("anchors") or []):
            if not isinstance(anchor, dict) or not isinstance(anchor.get("pattern"), str):
                continue
            try:
                pats.append((f"{path.stem}:{anchor.get('name', i)}", re.compile(anchor["pattern"])))
            except re.error as exc:
                logger.warning("%s: protect.anchors[%d]: skipped (%s)", path, i, exc)
        for term in protect.get("terms") or []:
            if isinstance(term, str):
                terms.append(term)
    logger.info("ontology protection from %s: %d anchors, %d terms", folder, len(pats), len(terms))
    return pats, terms


def words_of(text: str) -> list[tuple[int, int]]:
    """Whitespace words of *text*: the inference stage's own definition (``split_words``)."""
    return split_words(text)


def merge_token_labels(
    owner: Sequence[int], n_words: int, labels: Iterable[int], weights: Iterable[float]
) -> tuple[list[int], list[float]]:
    """Word labels/weights from token ones: a word keeps if any of its tokens keeps (max weight)."""
    wl = [0] * n_words
    ww = [1.0] * n_words
    for w, lab, wt in zip(owner, labels, weights):
        if w < 0 or w >= n_words:
            continue
        wl[w] = max(wl[w], int(lab))
        ww[w] = max(ww[w], float(wt))
    return wl, ww
