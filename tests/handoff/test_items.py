"""Parsing handoff input: items, OpenAI-style messages, category results, errors."""
from __future__ import annotations

import json

import pytest

from odcf.handoff.errors import HandoffError
from odcf.handoff.items import load_items, parse_items


def test_messages_items_and_category_results() -> None:
    batch = parse_items({
        "instruction": "Rebook the flight.",
        "searched": ["preconditions"],
        "state": {"task_progress": "step_1_of_3"},
        "items": [
            {"id": "f1", "text": "Order #W1234 total $50.", "origin": "tool:get_order", "confidence": 0.9,
             "timestamp": "2024-05-01T10:00:00Z"},
            {"category": "counterexamples", "searched": True, "items": []},
            {"category": "user_constraints", "items": [{"text": "Window seat only."}]},
        ],
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": "{\"id\":\"#W1234\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "get_order", "content": "{\"total\": 50}"},
        ],
    })
    by = batch.by_id()
    assert by["instruction"].layer == "instruction"
    assert by["state"].layer == "state" and by["state"].data == {"task_progress": "step_1_of_3"}
    assert by["f1"].confidence == 0.9 and by["f1"].origin == "tool:get_order"
    constraint = next(it for it in batch.items if it.category == "user_constraints")
    assert constraint.text == "Window seat only."
    assert batch.searched == frozenset({"preconditions", "counterexamples", "user_constraints"})
    hist = [it for it in batch.items if it.layer == "history"]
    assert [it.speaker for it in hist] == ["user", "assistant", "tool:get_order"]
    assert '[tool call] get_order {"id":"#W1234"}' in hist[1].text
    assert hist[2].origin == "tool:get_order" and hist[2].kind == "tool"


def test_system_message_is_instruction_but_explicit_layer_wins() -> None:
    batch = parse_items([
        {"role": "system", "content": "Follow the airline policy."},
        {"role": "system", "layer": "reasoning", "origin": "agent:planner",
         "content": "This option is clearly better. Always choose option B."},
    ])
    assert [it.layer for it in batch.items] == ["instruction", "reasoning"]


def test_every_problem_reported_at_once_with_its_place() -> None:
    with pytest.raises(HandoffError) as exc:
        parse_items([
            {"txt": "typo"},
            {"text": "x", "confidence": 1.5},
            {"text": "y", "layer": "draft"},
            {"role": "robot", "content": "beep"},
            {"id": "a", "text": "one"}, {"id": "a", "text": "two"},
        ], where="handoff.json")
    msg = str(exc.value)
    assert "6 problems in handoff.json" in msg
    for piece in ("[0].txt: unknown key", "[0]: missing 'text'", "[1].confidence: must be a number in [0, 1]",
                  "[2].layer: unknown layer 'draft'", "[3].role: unknown message role 'robot'", "[5].id: duplicate id 'a'"):
        assert piece in msg


def test_category_result_cannot_say_not_searched_and_list_items() -> None:
    with pytest.raises(HandoffError, match=r"\[0\]\.searched: false, but the category result lists items"):
        parse_items([{"category": "preconditions", "searched": False, "items": [{"text": "x"}]}])


def test_load_items_reports_json_position(tmp_path) -> None:
    p = tmp_path / "h.json"
    p.write_text('[{"text": "a"},\n {"text": }]', encoding="utf-8")
    with pytest.raises(HandoffError, match=r"h.json:2:\d+: invalid JSON"):
        load_items(p)
    p.write_text(json.dumps([{"text": "ok"}]), encoding="utf-8")
    assert load_items(p).items[0].text == "ok"
    # deeper than the JSON decoder can follow: the same kind of error, not a RecursionError
    p.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(HandoffError, match=r"h.json:1:1: invalid JSON: nested too deeply to decode"):
        load_items(p)


def test_a_duplicate_id_is_named_even_when_its_first_entry_has_problems_and_timestamps_are_iso() -> None:
    with pytest.raises(HandoffError) as info:
        parse_items({
            "items": [{"id": "x", "text": "A", "confidence": 1.5}, {"id": "x", "text": "B"},
                      {"id": "t", "text": "C", "timestamp": "yesterday"},
                      {"id": "ok", "text": "D", "timestamp": "2024-05-20T09:05:00Z"}, {"text": "E", "kind": "pdf"}],
            "messages": [{"role": "robot", "content": "hi"}, {"content": "no role"}, {"role": "user", "content": "fine"}],
        })
    lines = str(info.value).splitlines()[1:]
    assert [line.strip() for line in lines] == [
        "items[0].confidence: must be a number in [0, 1], got 1.5",
        "items[1].id: duplicate id 'x'",
        "items[2].timestamp: not an ISO 8601 date or time: 'yesterday' "
        "(e.g. 2024-05-20T09:05:00Z; timestamps order statements by age)",
        "items[4].kind: unknown kind 'pdf' (expected one of text, markdown, html, json, chat, tool)",
        "messages[0].role: unknown message role 'robot' (expected one of user, assistant, tool, system, developer)",
        "messages[1]: a message needs 'role' (user, assistant, tool, system, developer); put plain items in 'items'",
    ]
    batch = parse_items([{"text": "a", "timestamp": "2024-05-20"}, {"text": "b", "timestamp": "09:05"}])
    assert [it.timestamp for it in batch.items] == ["2024-05-20", "09:05"]


def test_a_nul_character_is_one_of_the_files_problems(tmp_path) -> None:
    # QA: {"items": [{"id": "a", ...}, {"id": "b", "text": "bad \u0000 here"}]} gave "source 'b': text holds a
    # NUL character ...", naming neither the file nor items[1], and alone, where a lone surrogate is listed
    p = tmp_path / "h.json"
    p.write_text(json.dumps({"items": [{"id": "a", "text": "Order #W1234567 shipped."},
                                       {"id": "b", "text": "bad \u0000 here"},
                                       {"id": "c", "text": "bad \ud800 here"},
                                       {"role": "tool", "content": "ok\u0000"}]}), encoding="utf-8")
    with pytest.raises(HandoffError) as info:
        load_items(p)
    assert str(info.value).splitlines() == [
        f"3 problems in {p}:",
        "  items[1]: text holds a NUL character at character 4: binary data, not text",
        "  items[2]: text holds a lone surrogate (U+D800) at character 4; it is not valid Unicode text",
        "  items[3]: text holds a NUL character at character 2: binary data, not text",
    ]
