"""JSON minify: same values, valid output, invalid input untouched and explained."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from odcf.rules.jsonmin import minify_fenced_json, minify_json

DOC = """{
    "#W2611340": {
        "order_id": "#W2611340",
        "address": {"city": "New York",  "zip": "10083"},
        "items": [ {"name": "Water Bottle", "price": 47.84, "options": {}} ],
        "note": "caf\\u00e9 \\"quoted\\"  spaces kept",
        "paid": true, "refund": null
    }
}
"""


def test_round_trip_equality_and_compact():
    out, report = minify_json(DOC)
    assert json.loads(out) == json.loads(DOC)
    assert out == json.dumps(json.loads(DOC), ensure_ascii=False, separators=(",", ":"))
    assert "café" in out and "spaces kept" in out and "\n" not in out
    assert report["format"] == "json" and report["method"] == "json.dumps"
    assert report["chars_out"] < report["chars_in"]


def test_json_lines():
    text = '{"a": 1, "b": [1, 2]}\n\n{"a": 2}\n[1,  2]\n'
    out, report = minify_json(text)
    assert out == '{"a":1,"b":[1,2]}\n{"a":2}\n[1,2]'
    assert [json.loads(line) for line in out.split("\n")] == [{"a": 1, "b": [1, 2]}, {"a": 2}, [1, 2]]
    assert report["format"] == "jsonl" and report["blank_lines"] == 1


def test_invalid_json_is_left_unchanged_and_located():
    text = '{"a": 1,\n "b": [1, 2}\n'
    out, report = minify_json(text)
    assert out == text
    assert report["valid"] is False and report["error"].startswith("line 2 column")


def test_invalid_json_lines_are_left_unchanged():
    text = '{"a": 1}\nnot json\n{"b": 2}'
    out, report = minify_json(text)
    assert out == text and report["valid"] is False and "line 2" in report["jsonl_error"]


def test_numbers_and_duplicate_keys_are_never_respelled_or_dropped():
    text = '{"a": 1.50, "b": 1E5, "c": -0}'
    out, report = minify_json(text)
    assert out == '{"a":1.50,"b":1E5,"c":-0}' and report["method"] == "whitespace"
    dup = '{"k": 1,  "k": 2}'
    out, report = minify_json(dup)
    assert out == '{"k":1,"k":2}' and "duplicate key 'k'" in report["reason"]


def test_whitespace_inside_strings_is_kept_in_fallback():
    text = '{"k": "a  b\\t", "k": [ 1 , 2 ]}'
    out, _ = minify_json(text)
    assert out == '{"k":"a  b\\t","k":[1,2]}'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.sampled_from([None, 1, 2, 4]))
def test_property_minified_json_parses_to_the_same_value(value, indent):
    text = json.dumps(value, indent=indent, ensure_ascii=bool(indent))
    out, report = minify_json(text)
    assert json.loads(out) == value
    assert len(out) <= len(text)
    assert minify_json(out)[0] == out  # minifying twice changes nothing more


def test_fenced_json_in_a_document_is_minified_inside_its_fences():
    order = {"order_id": "#W7710032", "payment": [{"method": "gift_card_9920014", "amount": 37.5}]}
    pretty = json.dumps(order, indent=2)
    text = (f"Tool output:\n\n```json\n{pretty}\n```\n\nUnlabelled:\n\n```\n{pretty}\n```\n\n"
            f"In a list:\n\n- answer:\n\n  ```JSON\n  {pretty.replace(chr(10), chr(10) + '  ')}\n  ```\n")
    out, report = minify_fenced_json(text)
    compact = '{"order_id":"#W7710032","payment":[{"method":"gift_card_9920014","amount":37.5}]}'
    assert out == (f"Tool output:\n\n```json\n{compact}\n```\n\nUnlabelled:\n\n```\n{compact}\n```\n\n"
                   f"In a list:\n\n- answer:\n\n  ```JSON\n  {compact}\n  ```\n")
    assert report["blocks"] == 3 and report["chars_out"] < report["chars_in"]
    assert minify_fenced_json(out) == (out, {})  # twice changes nothing more
    crlf, _ = minify_fenced_json(text.replace("\n", "\r\n"))
    assert crlf == out.replace("\n", "\r\n")


def test_fenced_blocks_that_are_not_one_json_value_are_left_as_they_are():
    for text in (
        '```python\n{\n  "a": 1\n}\n```',  # another language
        '```json\n{\n  "a": 1,\n}\n```',  # a trailing comma: not JSON
        '```json\n{"a": 1}\n{"a": 2}\n```',  # JSON Lines
        '```json\n"just a string"\n```',  # not an object or array
        '```json\n{\n  "a": 1\n}\n',  # no closing fence
        '```json\n{"a":1}\n```',  # minified already
        "No fence at all.",
    ):
        assert minify_fenced_json(text) == (text, {}), text


def test_the_module_examples_run():
    import doctest

    import odcf.rules.jsonmin

    result = doctest.testmod(odcf.rules.jsonmin)
    assert result.attempted >= 5 and result.failed == 0
