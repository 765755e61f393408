"""Record validation: every rule gives one clear reason."""
from __future__ import annotations

import pytest

from odcf.batch.records import RecordError, record_id, to_request


def req(record, **kw):
    return to_request(record, query_field=kw.pop("query_field", "query"), max_chars=kw.pop("max_chars", 1000))


def test_context_record_with_query():
    r = req({"id": "a", "context": "Pay $5.", "query": "amount", "extra": 1})
    assert (r.id, r.sources, r.query, r.chars) == ("a", "Pay $5.", "amount", 7)


def test_integer_id_becomes_its_decimal_string_and_bool_is_no_id():
    assert req({"id": 7, "context": "x"}).id == "7"
    assert record_id({"id": True}) is None
    with pytest.raises(RecordError, match="'id' must be a string or an integer, got a JSON boolean"):
        req({"id": True, "context": "x"})


def test_sources_record_keeps_given_fields_and_drops_nulls():
    r = req({"id": "a", "sources": [{"id": "m", "text": "hi", "layer": "history", "kind": None},
                                     {"text": "there"}]})
    assert r.sources == [{"id": "m", "text": "hi", "layer": "history"}, {"text": "there"}]


def test_custom_query_field():
    assert req({"id": "a", "context": "x", "question": "q?"}, query_field="question").query == "q?"


@pytest.mark.parametrize("record, reason", [
    (["not", "an", "object"], "record is a JSON array, expected an object"),
    ({"context": "x"}, "record has no 'id'"),
    ({"id": None, "context": "x"}, "'id' must be a string or an integer, got null"),  # QA s28/qa1 #6: "has no 'id'"
    ({"id": "", "context": "x"}, "'id' is an empty string"),
    ({"id": [1], "context": "x"}, "'id' must be a string or an integer, got a JSON array"),
    ({"id": "a"}, "record has neither 'context'"),
    # QA s32/F #3: a null context (a null Parquet cell too) was "record has neither 'context' … nor 'sources'"
    ({"id": "a", "context": None}, "'context' must be a string, got null"),
    ({"id": "a", "sources": None}, "'sources' must be a list of source objects, got null"),
    ({"id": "a", "context": None, "sources": None}, "'context' must be a string, got null"),
    ({"id": "a", "context": "x", "sources": [{"text": "y"}]}, "record has both 'context' and 'sources'"),
    ({"id": "a", "context": 5}, "'context' must be a string, got a JSON number"),
    ({"id": "a", "context": "  \n "}, "empty context: nothing to compress"),
    ({"id": "a", "sources": []}, "empty context: 'sources' is an empty list"),
    ({"id": "a", "sources": [{"text": ""}, {"text": " "}]}, "empty context: every source text is empty"),
    ({"id": "a", "sources": "text"}, "'sources' must be a list of source objects, got a JSON string"),
    ({"id": "a", "sources": [{"txt": "y"}]}, "sources[0]: unknown key 'txt'"),
    ({"id": "a", "sources": [{"id": "s", "text": "y"}, {"id": "s", "text": "z"}]}, "sources[1].id 's' repeats"),
    ({"id": "a", "sources": [{"text": "y", "layer": "facts"}]}, "sources[0].layer 'facts' is not one of"),
    ({"id": "a", "sources": [{"text": "y", "kind": "pdf"}]}, "sources[0].kind 'pdf' is not one of"),
    ({"id": "a", "context": "x", "query": 3}, "query field 'query' must be a string"),
    ({"id": "a", "context": "abc\ud800def"},
     "'context' holds a lone surrogate (U+D800) at character 3; it is not valid Unicode text"),
    ({"id": "a", "sources": [{"text": "ok"}, {"text": "x\udfff"}]}, "sources[1].text holds a lone surrogate (U+DFFF) at "
                                                                   "character 1"),
    ({"id": "a", "context": "x", "query": "\ud800"}, "query field 'query' holds a lone surrogate (U+D800) at character 0"),
    ({"id": "a\ud800b", "context": "x"}, "'id' holds a lone surrogate (U+D800) at character 1"),
    ({"id": "a", "sources": [{"id": "m\udc00", "text": "x"}]}, "sources[0].id holds a lone surrogate (U+DC00)"),
    ({"id": "a", "sources": [{"text": "x", "origin": "/tmp/\ud800"}]}, "sources[0].origin holds a lone surrogate"),
    ({"id": "a", "sources": [{"text": "x", "speaker": "\ud800"}]}, "sources[0].speaker holds a lone surrogate"),
    # QA: batch passed "a\u0000b" through, while odcf compress refuses a file with a NUL byte
    ({"id": "a", "context": "a\u0000b"}, "'context' is binary data, not text (a NUL character at character 1)"),
    ({"id": "a", "sources": [{"text": "ok"}, {"text": "PDF\u0000"}]},
     "sources[1].text is binary data, not text (a NUL character at character 3)"),
    ({"id": "a", "context": "x" * 1001}, "record too large: 1,001 characters, above the limit of 1,000"),
    ({"id": "a", "sources": [{"text": "x" * 600}, {"text": "y" * 600}]}, "record too large: 1,200 characters"),
])
def test_bad_records_name_the_reason(record, reason):
    with pytest.raises(RecordError) as info:
        req(record)
    assert reason in str(info.value)
