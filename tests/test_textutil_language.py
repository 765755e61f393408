"""detect_language and cjk_ratio, counted in C (str.split, str.isalpha, a regex) rather than a
Python loop per character: the same answers as the per-character definitions."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from odcf import textutil


def per_char_cjk_ratio(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return 0.0
    return sum(1 for c in chars if textutil._CJK_RE.match(c)) / len(chars)


def per_char_language(text: str) -> str:
    if per_char_cjk_ratio(text) >= 0.2:
        return "zh"
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "en"
    latin = sum(1 for c in letters if c < "\u0250")
    return "en" if latin / len(letters) >= 0.7 else "other"


# white space of every kind (the ideographic space U+3000 too), Latin, the U+024F/U+0250 edge,
# Cyrillic, kana, Han, hangul and surrogates
ALPHABET = st.sampled_from(
    list(" \t\n\r\x0b\x0c\x1c\x85\xa0\u1680\u2000\u2028\u202f\u3000") + list("aZé9_.,")
    + ["\u024f", "\u0250", "\u0430", "\u3041", "\u30ff", "\u4e00", "\u9fff", "\uac00", "\ud7af", "\ud800"]
)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40))
def test_cjk_ratio_and_language_are_those_of_the_per_character_definitions(text):
    assert textutil.cjk_ratio(text) == per_char_cjk_ratio(text)
    assert textutil.detect_language(text) == per_char_language(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_the_same_answers_on_any_text(text):
    assert textutil.cjk_ratio(text) == per_char_cjk_ratio(text)
    assert textutil.detect_language(text) == per_char_language(text)


def test_examples():
    assert textutil.detect_language("The supplier shall pay within 30 days.") == "en"
    assert textutil.detect_language("供应商应在三十天内付款。") == "zh"
    assert textutil.detect_language("Поставщик оплачивает в течение 30 дней.") == "other"
    assert textutil.detect_language("   ") == "en" and textutil.cjk_ratio("") == 0.0

