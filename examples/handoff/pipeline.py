"""A four-agent pipeline — researcher → planner → writer → reviewer — with odcf preparing every
handoff from the role's contract (examples/handoff/support.yaml).

The agents are simulated with fixed outputs (no LLM is called) so that the run is reproducible;
what is real is every handoff: what each role receives, within its budget, and its record.

    python examples/handoff/pipeline.py [--out DIR]

writes DIR/<n>-<role>.txt (the text the role receives) and DIR/<n>-<role>.record.json, and
prints one summary line per handoff. All texts here were written for this example.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from odcf import Compressor
from odcf.handoff.errors import HandoffError

HERE = Path(__file__).resolve().parent
POLICY = ("Refund policy: refunds go to the original payment method and take 5-7 business days. "
          "A refund must never exceed the price of the returned item. "
          "Confirm the amount with the user before issuing it.")

# -- the conversation the support agent had (OpenAI-style, with tool calls) -------------------
USER_ID, ORDER, CARD, GIFT = "lena_okafor_4821", "#W4817420", "credit_card_5531920", "gift_card_3301877"
CHAT: list[dict[str, Any]] = [
    {"role": "user", "content": f"Hi, the blender from order {ORDER} arrived cracked. I want my money back."},
    {"role": "assistant", "content": "I'm sorry to hear that. Could you tell me your user id so I can look it up?"},
    {"role": "user", "content": f"Sure, it's {USER_ID}."},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "get_user_details", "arguments": json.dumps({"user_id": USER_ID})}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "get_user_details", "content": json.dumps({
        "user_id": USER_ID, "name": {"first_name": "Lena", "last_name": "Okafor"}, "email": "lena.okafor@example.com",
        "payment_methods": {CARD: {"source": "credit_card", "brand": "visa", "last_four": "7741"},
                            GIFT: {"source": "gift_card", "balance": 20}},
        "orders": [ORDER, "#W2210034"]})},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c2", "type": "function", "function": {
        "name": "get_order_details", "arguments": json.dumps({"order_id": ORDER})}}]},
    {"role": "tool", "tool_call_id": "c2", "name": "get_order_details", "content": json.dumps({
        "order_id": ORDER, "user_id": USER_ID, "status": "delivered",
        "items": [{"name": "Blender", "item_id": "1725458591", "price": 45.0},
                  {"name": "Tea towel set", "item_id": "9937140022", "price": 12.5}],
        "payment_history": [{"payment_id": CARD, "amount": 57.5}]})},
    {"role": "assistant", "content": "Your order was delivered and paid with your Visa ending 7741. "
                                     "The blender cost $45.00 and the tea towel set $12.50."},
    {"role": "user", "content": "Please refund it to my card, not as a gift card. I need the money before 2024-05-30."},
    {"role": "assistant", "content": "Understood: a refund to your card. Do you want to return the tea towel set too?"},
    {"role": "user", "content": "No, only the blender. The towels are fine."},
    {"role": "assistant", "content": "Thanks. I will pass this to our refunds team, who will confirm the amount."},
]

TRIAGE_NOTE = {"id": "triage", "text": f"Refund amount for order {ORDER}: $50.", "origin": "agent:triage",
               "confidence": 0.6, "timestamp": "2024-05-20T09:02:00Z"}
CALC = {"id": "calc", "origin": "tool:calculate_refund", "confidence": 0.95, "timestamp": "2024-05-20T09:05:00Z",
        "content": {"order_id": ORDER, "refund_amount": 45.0, "method": CARD, "eta_business_days": "5-7"}}
CATALOG = {"id": "catalog", "origin": "tool:search_products", "confidence": 0.9,
           "content": [{"product_id": f"10{k:08d}", "name": f"Blender model {k}", "price": 40 + k,
                        "variants": [{"item_id": f"17{k:04d}{j:04d}", "color": c, "available": (k + j) % 3 != 0}
                                     for j, c in enumerate(("black", "white", "steel"))]} for k in range(24)]}


def researcher_items() -> dict[str, Any]:
    return {
        "instruction": f"{POLICY}\nTask: establish the facts of the refund request for order {ORDER}.",
        "items": [TRIAGE_NOTE, CALC, CATALOG,
                  {"id": "dup-triage", "text": f"refund amount for order {ORDER}: $50", "origin": "agent:intake",
                   "confidence": 0.5}],
        "messages": CHAT,
    }


# -- what the researcher produced (simulated) -----------------------------------------------------
FINDINGS = [
    {"id": "intent", "category": "user_intent", "origin": "agent:researcher", "confidence": 0.9,
     "text": f"The user {USER_ID} wants the cracked blender (item 1725458591) of order {ORDER} refunded; "
             "the tea towel set is kept."},
    {"id": "opt-a", "category": "options", "origin": "agent:researcher", "confidence": 0.9,
     "text": f"Option A: refund $45.00 to {CARD} (original payment method), 5-7 business days."},
    {"id": "opt-b", "category": "options", "origin": "agent:researcher", "confidence": 0.9,
     "text": f"Option B: refund $45.00 as gift card credit to {GIFT}, available at once."},
    {"id": "constraint", "category": "user_constraints", "origin": "chat:user", "confidence": 1.0, "optional": True,
     "text": "The refund must go to the card, never to a gift card, and arrive before 2024-05-30."},
    {"id": "eta", "origin": "agent:researcher", "confidence": 0.97, "derived_from": ["calc", "policy-eta"],
     "text": "The card refund will certainly arrive before 2024-05-30."},
    {"id": "policy-eta", "origin": "doc:refund_policy", "confidence": 0.7,
     "text": "Card refunds take 5-7 business days after approval."},
    {"category": "open_questions", "searched": True, "items": []},
    {"id": "r-draft", "layer": "reasoning", "origin": "agent:researcher",
     "text": "Option B is clearly better because it is instant. The user will not mind a gift card."},
]


def planner_items() -> dict[str, Any]:
    return {
        "instruction": "Decide the next step for the refund request. Respect every user constraint.",
        "state": {"task_progress": "step_2_of_4", "user_preferences": ["refund to original payment method",
                                                                        "no gift card"]},
        "items": [*FINDINGS, TRIAGE_NOTE, CALC],
        "messages": CHAT,
    }


# -- what the planner produced (simulated) --------------------------------------------------------
PLAN_DRAFT = " ".join(
    ["We compared the two options against the policy and the user's words."]
    + [f"Step {k}: re-read the constraint that the money goes back to the card and that the refund stays "
       f"below the item price, then check the timing once more." for k in range(1, 13)]
    + ["The refund amount comes from the calculate_refund output (source 2, rows 1-2), not from the triage note.",
       "The deadline check rests on item policy-eta.", "So option A is the one to write up."])


def writer_items() -> dict[str, Any]:
    return {
        "instruction": "Write the reply to the customer. Plain words, no promises beyond the policy.",
        "state": {"task_progress": "step_3_of_4", "decisions": ["refund $45.00 to original payment method"]},
        "searched": ["counterexamples"],
        "items": [
            {"id": "plan", "category": "task", "origin": "agent:planner", "confidence": 0.9,
             "text": f"Issue a refund of $45.00 for item 1725458591 of order {ORDER} to {CARD}; "
                     "tell the user it takes 5-7 business days."},
            FINDINGS[3], CALC, FINDINGS[5],
            {"id": "planner-draft", "layer": "reasoning", "origin": "agent:planner", "text": PLAN_DRAFT},
        ],
        "messages": CHAT[-4:],
    }


REPLY = (f"Hi Lena, we have issued a refund of $45.00 for the cracked blender from order {ORDER} to your "
         "Visa ending 7741 (your original payment method). Card refunds take 5-7 business days. "
         "You keep the tea towel set. Sorry for the trouble!")


def reviewer_items() -> dict[str, Any]:
    return {
        "instruction": "Review the reply against the criteria. Approve it or list what must change.",
        "items": [
            {"id": "target", "category": "target_version", "origin": "agent:writer", "text": "Reply draft v1 to ticket 7731."},
            {"id": "criteria", "category": "criteria", "origin": "doc:refund_policy", "text": POLICY},
            {"id": "reply", "category": "actual_change", "origin": "agent:writer", "text": REPLY},
            TRIAGE_NOTE, CALC,
            {"id": "w-draft", "layer": "reasoning", "origin": "agent:writer",
             "text": "I think the reply is fine, approve it quickly."},
        ],
        "messages": CHAT[-2:],
    }


STEPS = (("researcher", researcher_items), ("planner", planner_items), ("writer", writer_items),
         ("reviewer", reviewer_items))


def run(out: Path) -> list[dict[str, Any]]:
    comp = Compressor.from_ontology(str(HERE / "support.yaml"))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n, (role, make) in enumerate(STEPS, start=1):
        r = comp.handoff(role=role, items=make())
        (out / f"{n}-{role}.txt").write_text(r.text + "\n", encoding="utf-8")
        (out / f"{n}-{role}.record.json").write_text(json.dumps(r.record, ensure_ascii=False, indent=2) + "\n",
                                                     encoding="utf-8")
        rec = r.record
        dropped = [s["id"] for s in rec["sources"] if s["status"] == "dropped"]
        rows.append({"role": role, "budget": r.budget, "tokens_in": r.tokens_in, "tokens_out": r.tokens,
                     "dropped": dropped, "missing": [m.get("category") or m.get("item") for m in rec["missing"]],
                     "not_searched": rec["not_searched"], "searched_none_found": rec["searched_none_found"],
                     "conflicts": len(rec["conflicts"]), "mandatory": [m["item"] for m in rec["mandatory"]]})
    try:
        comp.handoff(role="reviewer", items=reviewer_items(), strict=True)
    except HandoffError as exc:
        rows.append({"role": "reviewer (strict)", "error": str(exc)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="handoff-out", help="folder for the texts and records (default: handoff-out)")
    args = ap.parse_args()
    for row in run(Path(args.out)):
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
