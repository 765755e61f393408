"""Token counters: exact counts, whatever the length of the text or the tokenizer file's settings."""
from __future__ import annotations

import re

import bpe_openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odcf import Compressor
from odcf import tokens
from odcf.tokens import get_counter

WORDS = "the cap is five percent of fees paid before claim and notice period".split()


@pytest.fixture()
def padded_tokenizer(tmp_path):
    """A WordLevel tokenizer.json that pads to 32 and truncates at 4, as MiniLM's pads and truncates at 128."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["[UNK]", "[PAD]", *WORDS])}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.enable_padding(length=32, pad_id=1, pad_token="[PAD]")
    tok.enable_truncation(max_length=4)
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    assert len(Tokenizer.from_file(str(path)).encode("the cap is five percent").ids) == 32  # as saved
    return path


def test_an_hf_tokenizer_counts_without_the_padding_and_truncation_its_file_sets(padded_tokenizer):
    counter = get_counter(f"hf:{padded_tokenizer}")
    assert counter.count("the cap is five percent") == 5
    assert counter.count("the") == 1
    long = " ".join(WORDS * 400)  # over the counter's chunk size: counted in one call too
    assert counter.count(long) == len(WORDS) * 400


def test_a_compression_measured_with_an_hf_tokenizer_reports_the_true_counts(padded_tokenizer):
    text = "\n\n".join(" ".join(WORDS[i:] + WORDS[:i]) + "." for i in range(10))
    true = len(text.replace(".", " .").split())  # Whitespace splits the full stops off
    r = Compressor.from_ontology("general").compress(text, budget=40, tokenizer=f"hf:{padded_tokenizer}")
    assert r.tokens_in == true
    assert r.record["over_budget"] is False and 0 < r.tokens_out <= 40
    assert r.tokens_out == get_counter(f"hf:{padded_tokenizer}").count(r.text)
    assert r.tokens_out > 4  # not the truncation length


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("text", [
    "1234567890" * 2000,                                   # one run of digits (cut in threes)
    "Account numbers follow.\n\n" + "1234567890" * 2000,  # ... not starting at the text's start
    "合同金额为人民币500万元，违约金为合同金额的5%。" * 1000,
    ("word " + " " * 50) * 500,                            # runs of spaces
    "x" * 40_000 + " end",                                 # one long word, longer than a piece
    ("line one!\n/path/to\n\n  indented 12 34\r\n" * 900),
    "😀🎉🔥🇩🇪" * 6000,
    "a" * 120_000,                                         # no split point at all: cut at 50,000
], ids=["digits", "text-digits", "zh", "spaces", "long-word", "mixed", "emoji", "one-word"])
def test_a_long_text_counts_as_one_encoding_of_it(name, text):
    enc = bpe_openai.get_encoding(name)
    whole = len(enc.encode_ordinary(text))
    count = get_counter(name).count(text)
    if text == "a" * 120_000:  # the documented bound: a token or two per forced cut
        assert abs(count - whole) <= 2 * (len(text) // 50_000)
    else:
        assert count == whole


ALPHABET = st.sampled_from(list("aZé1 2 \n\r\t/.,'!$合，😀") + ["\u0301", "٣"])
ENCODINGS = [bpe_openai.get_encoding(name) for name in ("o200k_base", "cl100k_base")]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=30))
def test_every_split_point_found_is_one_where_the_pre_tokenizer_splits(text):
    _assert_split_points_count_alike(text)


@pytest.mark.parametrize("text", ["x  5", "a \n\n  b", "x\n  bar", "!\n/x", "dog's", "a  b", "1234567"])
def test_places_that_look_like_split_points_but_are_not_are_passed_over(text):
    _assert_split_points_count_alike(text)


def _assert_split_points_count_alike(text):
    """Every place _split_before accepts in *text* splits it into two parts whose token counts add
    up to the whole's, in o200k and cl100k."""
    for i in range(1, len(text)):
        if tokens._split_before(text, i - 1, i) == i:
            for enc in ENCODINGS:
                assert (len(enc.encode_ordinary(text[:i])) + len(enc.encode_ordinary(text[i:]))
                        == len(enc.encode_ordinary(text))), (text[:i], text[i:])


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=120), st.integers(min_value=2, max_value=12))
def test_pieces_add_up_to_the_text_and_its_count(text, size):
    pieces = tokens._pieces(text, size)
    assert "".join(pieces) == text
    for enc in ENCODINGS:
        assert sum(len(enc.encode_ordinary(p)) for p in pieces) == len(enc.encode_ordinary(text))


class _Len(tokens._CachedCounter):
    def _count(self, text: str) -> int:
        return len(text)


def test_the_count_cache_is_bounded_by_bytes_not_by_entries():
    counter = _Len("len", max_bytes=200_000)
    for i in range(200):
        assert counter.count("😀" * 4000 + str(i)) == 4000 + len(str(i))
    assert 0 < counter._bytes <= 200_000
    assert len(counter._cache) < 20  # 16 KiB an entry
    for i in range(2000):
        counter.count(f"short text {i}")
    assert counter._bytes <= 200_000 and len(counter._cache) > 1000


@pytest.mark.parametrize("name, message", [
    ("xx", "unknown tokenizer 'xx': use o200k_base, cl100k_base, bytes, or hf:PATH"),
    ("gpt2", "unknown tokenizer 'gpt2'"),
    ("hf:/nonexistent/tok", "tokenizer '/nonexistent/tok': no tokenizer.json found there"),
    ("", "tokenizer must be a name"),
    ("  ", "tokenizer must be a name"),
])
def test_a_tokenizer_that_names_none_fails_when_the_compressor_is_built(plan, name, message):
    # QA: Compressor.from_ontology("general", tokenizer="xx") was accepted and failed on the first compress;
    # tokenizer="" silently meant the default
    from odcf.errors import OdcfError

    with pytest.raises(OdcfError, match=re.escape(message)):
        Compressor.from_ontology("general", tokenizer=name)
    with pytest.raises(OdcfError, match=re.escape(message)):
        Compressor(plan, tokenizer=name)
    if not name.strip():  # per call, too: "" is not the default
        with pytest.raises(OdcfError, match=re.escape(message)):
            Compressor(plan).compress("Pay $5.", tokenizer=name)
    assert Compressor(plan, tokenizer="bytes").compress("Pay $5.").record["unit"] == "bytes"


class _Calls(tokens._CachedCounter):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.encoded = 0

    def _count(self, text: str) -> int:
        self.encoded += 1
        return len(text)


def test_a_whole_source_counted_again_is_not_encoded_again():
    # the compressor and the pipeline's first stage both count every source: a 300,000-character
    # meeting was encoded twice per record
    counter = _Calls("calls")
    text = "the cap is five percent of fees. " * 3000  # 99,000 characters: counted in pieces
    assert counter.count(text) == len(text)
    pieces = counter.encoded
    assert pieces > 1
    assert counter.count(text) == len(text)
    assert counter.encoded == pieces
    # still bounded: a text longer than the cache takes is counted each time, as before
    huge = "x " * (tokens._CACHE_TEXT_CHARS // 2 + 1)
    counter.count(huge)
    counter.count(huge)
    assert huge not in counter._cache


def test_a_long_cached_count_is_the_count_of_the_text():
    counter = get_counter("o200k_base")
    enc = bpe_openai.get_encoding("o200k_base")
    text = ("Payment is due within 30 days of the invoice date (net 30); late fees of 1.5% apply.\n" * 400)
    assert counter.count(text) == counter.count(text) == len(enc.encode_ordinary(text))
