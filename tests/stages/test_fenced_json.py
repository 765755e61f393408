"""A fenced block of JSON in a document (a tool's answer in a markdown agent log) is cut and
delivered as a JSON source is: whole objects, valid JSON inside the fences, what is left out
counted (``"[JSON_ITEMS: n]"``, ``"[JSON_KEYS: n]": null``); a fenced block that is not JSON keeps
its code lines (QA: "gift card, 37.5" was delivered as loose lines under another order's heading)."""
from __future__ import annotations

import json
import random
import re

import pytest

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.render import join_segments
from odcf.stages.rules import RuleStage
from odcf.stages.segment import Segmenter
from odcf.tokens import get_counter


def _order(order_id: str, status: str, items: list[tuple[str, str, float]], payment: list[tuple[str, float]]) -> dict:
    return {"order_id": order_id, "status": status, "placed": "2025-04-02",
            "items": [{"item_id": iid, "name": name, "options": {"color": "black", "size": "standard"}, "price": price}
                      for iid, name, price in items],
            "payment": [{"method": m, "amount": a} for m, a in payment]}


ORDER_A = _order("#W5521890", "delivered",
                 [("6612049983", "Espresso Machine", 489.99), ("3391045520", "Milk Frother", 59.0),
                  ("7702918834", "Coffee Grinder", 129.5), ("4410293311", "Descaler", 12.0),
                  ("4410293312", "Cleaning Tablets", 9.5), ("4410293313", "Water Filter", 14.0),
                  ("4410293314", "Tamper", 19.9)],
                 [("credit_card_4417203", 733.89)])
ORDER_B = _order("#W7710032", "pending",
                 [("5519023371", "Water Bottle", 24.99), ("8800123344", "Yoga Mat", 42.0)],
                 [("gift_card_9920014", 37.5), ("paypal_3381920", 29.49)])
VARIANTS = {"product_id": "4410021",
            "variants": [{"item_id": f"66120499{k:02d}",
                          "options": {"pressure": f"{15 + k % 5} bar", "capacity": f"1.{k % 10}L", "type": "capsule"},
                          "available": k % 3 != 0, "price": 150.0 + 7.5 * k} for k in range(24)]}


def _block(value: dict, info: str = "json") -> str:
    return f"```{info}\n{json.dumps(value, indent=2)}\n```"


STEP5 = {"error": "Insufficient gift card balance: 37.5 < 69.01", "code": "PAYMENT_DECLINED"}
INVALID = """```json
{
  "order_id": "#W5521890",
  "status": "exchange requested",
  "exchange_items": [
    "6612049983",
  ],
  "exchange_price_difference": 69.01,
  "exchange_payment_method_id": "credit_card_4417203",
  "note": "the tool's answer was cut by the log writer, so this is not valid JSON: its lines stay code"
}
```"""

LOG = f"""# Agent run log — retail support task 4471

User request (turn 1): "Exchange the espresso machine from my April order. Charge any difference to my Visa, never to the gift card."

## Step 2: tool call get_order_details

Tool output (get_order_details):

{_block(ORDER_A)}

## Step 3: tool call get_order_details

Tool output (get_order_details):

{_block(ORDER_B)}

## Step 4: tool call list_product_variants

Tool output (list_product_variants):

{_block(VARIANTS, info="")}

## Step 5: tool call exchange_delivered_order_items

Tool output (exchange_delivered_order_items):

```json
{json.dumps(STEP5)}
```

## Step 6: a truncated answer

{INVALID}
"""

QUERIES = ("Which payment method was charged for the pending order, and how much?",
           "Which variants are available at 19 bar?",
           "Which steps failed and why?")

PLAN = Plan(domain="t")
_FENCED_RE = re.compile(r"^```(json|)\n(.*?)\n```$", re.M | re.S)


def _objects(value):
    """Every object of a JSON value, outermost first."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _objects(v)
    elif isinstance(value, list):
        for v in value:
            yield from _objects(v)


def _fenced(text: str) -> list[str]:
    return [m.group(2) for m in _FENCED_RE.finditer(text)]


def _segments(text: str, *, rules: bool = True):
    """The segments of a markdown source, after the rules stage (which minifies fenced JSON) or not."""
    doc = Document.from_sources([Source(id="log.md", text=text, kind="markdown")])
    if rules:
        doc = RuleStage()(doc, PLAN)
    return doc, Segmenter()(doc, PLAN).segments


def test_a_large_fenced_json_block_is_cut_into_its_members():
    doc, segs = _segments(LOG)
    assert "```json\n" + json.dumps(ORDER_B, separators=(",", ":")) + "\n```" in doc.sources[0].text  # minified
    variants = [s for s in segs if s.meta.get("json_block") is not None and s.meta["json_levels"][-1][0] == "/1"]
    assert len(variants) == 24 and all(s.kind == "json" for s in variants)  # an item a segment, each whole
    assert [json.loads(s.text) for s in variants] == VARIANTS["variants"]
    assert all(s.meta["json_fence"] == ["```", "```", ""] for s in variants)
    # the small answers are one segment each, fences and all; the invalid one is code lines, as before
    assert any(s.kind == "code" and s.text.startswith("```json") and "PAYMENT_DECLINED" in s.text for s in segs)
    assert any(s.kind == "code" and "code_lines" in s.meta and "exchange_price_difference" in s.text for s in segs)
    assert join_segments(list(segs)) == doc.sources[0].text  # all delivered: the source as the rules left it
    _, raw = _segments(LOG, rules=False)  # not minified (rules.json_minify off): members all the same
    assert sum(1 for s in raw if s.meta.get("json_block")) > 24
    assert [json.loads(b) for b in _fenced(join_segments(list(raw))) if "error" not in b and "exchange" not in b] == [
        ORDER_A, ORDER_B, VARIANTS]


def _part_of(got, original) -> bool:
    """Whether *got*, a JSON value delivered, is *original* with members left out and counted: an
    object's keys left out in ``"[JSON_KEYS: n]": null``, a list's items in ``"[JSON_ITEMS: n]"``."""
    if isinstance(got, dict):
        marks = [int(k[len("[JSON_KEYS: "):-1]) for k in got if k.startswith("[JSON_KEYS: ")]
        keys = [k for k in got if not k.startswith("[JSON_KEYS: ")]
        return (isinstance(original, dict) and len(keys) + sum(marks) == len(original)
                and all(k in original and _part_of(got[k], original[k]) for k in keys))
    if isinstance(got, list):
        marks = [int(v[len("[JSON_ITEMS: "):-1]) for v in got if isinstance(v, str) and v.startswith("[JSON_ITEMS: ")]
        items = got[:len(got) - len(marks)]
        return (isinstance(original, list) and len(items) + sum(marks) == len(original)
                and all(any(_part_of(v, o) for o in original) for v in items))
    return got == original


def test_any_subset_of_the_members_is_valid_json_inside_the_fences():
    _, segs = _segments(LOG)
    originals = {1: ORDER_A, 3: VARIANTS}  # the cut blocks
    assert {s.meta["json_block"] for s in segs if s.meta.get("json_block")} == set(originals)
    rng = random.Random(11)
    for _ in range(60):
        kept = [s for s in segs if rng.random() < 0.4]
        if not kept:
            continue
        text = join_segments(kept)
        assert text.count("```") % 2 == 0, text  # every fence opened is closed
        blocks = sorted({s.meta["json_block"] for s in kept if s.meta.get("json_block") is not None})
        bodies = [b for b in _fenced(text) if b.lstrip().startswith(("{", "[")) and "[CODE_LINES" not in b
                  and "exchange_price_difference" not in b and "PAYMENT_DECLINED" not in b
                  and "#W7710032" not in b]  # the whole blocks and the invalid one (code lines)
        assert len(bodies) == len(blocks), text
        for block, body in zip(blocks, bodies):
            got = json.loads(body)  # valid JSON
            assert got != originals[block] or all(s in kept for s in segs if s.meta.get("json_block") == block)
            assert _part_of(got, originals[block]), body


@pytest.mark.parametrize("query", QUERIES)
def test_a_compressed_agent_log_delivers_fenced_json_as_valid_json_within_the_budget(query):
    c = Compressor.from_ontology("agent_ops")
    counter = get_counter("o200k_base")
    seen_items = False
    for budget in (120, 200, 300, 450, 700):
        r = c.compress([Source(id="log.md", text=LOG, kind="markdown")], query=query, budget=budget, timings=False)
        assert counter.count(r.text) <= budget, (budget, r.text)
        for body in _fenced(r.text):
            if "\n" in body:  # lines of code: only the invalid block's, as before
                assert all(ln in INVALID.splitlines() or re.fullmatch(r"\[CODE_LINES: \d+\]", ln)
                           for ln in body.splitlines()), (budget, r.text)
                continue
            value = json.loads(body)  # minified JSON, cut or not: valid
            assert any(_part_of(value, o) for o in (ORDER_A, ORDER_B, VARIANTS, STEP5)), body
            for obj in _objects(value):
                # a payment is never delivered apart from its order: it is in the order's object,
                # and the object holds its order_id
                if "method" in obj:
                    order = next(o for o in (ORDER_A, ORDER_B) if obj in o["payment"])
                    assert any(o.get("order_id") == order["order_id"] and obj in o.get("payment", ())
                               for o in _objects(value)), (budget, r.text)
            if "variants" in value:
                seen_items = True
                kept = [v for v in value["variants"] if isinstance(v, dict)]
                marks = [v for v in value["variants"] if isinstance(v, str)]
                assert all(v in VARIANTS["variants"] for v in kept)
                assert len(kept) + sum(int(m[len("[JSON_ITEMS: "):-1]) for m in marks) == 24, r.text
        # the record says what was left out of a cut block, a member a segment
        dropped = [s for s in r.record["sources"][0]["segments"] if s["kind"] == "json" and s["status"] == "dropped"]
        assert all(s["reason"] for s in dropped)
    if query == QUERIES[1]:
        assert seen_items


def test_a_fenced_json_block_in_a_list_item_keeps_its_indentation():
    text = ("Steps:\n\n1. The tool answered:\n\n   ```json\n   " + json.dumps(VARIANTS, indent=2).replace("\n", "\n   ")
            + "\n   ```\n\n2. Done.\n")
    _, segs = _segments(text)
    members = [s for s in segs if s.meta.get("json_block") is not None]
    assert len(members) > 20
    out = join_segments([s for s in segs if s not in members[2:]])
    assert "\n\n   ```json\n   {" in out and "]}\n   ```\n\n2. Done." in out
    body = out.split("```json\n", 1)[1].split("\n   ```", 1)[0]
    assert json.loads(body)["variants"][-1] == f"[JSON_ITEMS: {len(VARIANTS['variants']) - 1}]"


def test_a_member_of_a_cut_object_goes_only_with_the_object_s_id_in_a_json_source_too():
    # QA: {"payment":[{"method":"gift_card_9920014","amount":37.5}],"[JSON_KEYS: 4]":null} was delivered
    # without the order it belongs to
    text = json.dumps(ORDER_A)
    segs = Segmenter()(Document.from_sources([Source(id="order.json", text=text, kind="json")]), PLAN).segments
    ident = next(s for s in segs if s.meta.get("json_id"))
    assert ident.text == '"order_id": "#W5521890"' and ident.index == 0
    assert all(s.meta["under"] == ident.index for s in segs if s is not ident)  # the items too, cut out of "items"
    listed = json.dumps([ORDER_A, ORDER_B])  # a list of orders: each order is a record, whole
    assert not any("under" in s.meta for s in Segmenter()(
        Document.from_sources([Source(id="o.json", text=listed, kind="json")]), PLAN).segments)
    c = Compressor.from_ontology("agent_ops")
    for budget in (30, 45, 60, 90, 140):
        r = c.compress([Source(id="order.json", text=text, kind="json")], query="which payment method, how much?",
                       budget=budget, annotate=False, timings=False)
        if not r.text:
            continue
        got = json.loads(r.text)
        assert _part_of(got, ORDER_A) and got.get("order_id") == "#W5521890", (budget, r.text)
