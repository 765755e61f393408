"""A byte budget is spoken of in bytes: "no room in 90 tokens" and "over budget by 12 tokens" misread
a ``tokenizer="bytes"`` budget as a token count (left alone in stop 32, fixed in stop 33)."""
from odcf.compressor import Compressor
from odcf.tokens import short_unit

TEXT = ("The supplier shall deliver 40 units by 1 March 2027. Payment is due within 30 days.\n\n"
        "Liability is capped at 5% of the contract value. The buyer may not assign the contract.\n")


def _reasons(result):
    return [why for s in result.document.segments if s.dropped for why in s.reasons if why.startswith("budget:")]


def test_budget_reasons_under_a_byte_budget_say_bytes(plan):
    r = Compressor(plan, tokenizer="bytes").compress(TEXT, budget=90)
    reasons = _reasons(r)
    assert reasons, r.record
    assert all("no room in 90 bytes" in why and " tokens" not in why for why in reasons), reasons


def test_budget_reasons_under_a_token_budget_still_say_tokens(plan):
    reasons = _reasons(Compressor(plan).compress(TEXT, budget=20))
    assert reasons and all("no room in 20 tokens" in why for why in reasons), reasons


def test_over_budget_warning_names_the_unit(plan):
    instruction = {"id": "i", "text": "Read every clause carefully and report each cap. " * 10, "layer": "instruction"}
    r = Compressor(plan, tokenizer="bytes").compress([instruction, "Some fact."], budget=20)
    over = [w for w in r.record["warnings"] if w.startswith("over budget by")]
    assert over == [f"over budget by {r.record['over_by']} bytes: required material alone needs {r.tokens_out}"]


def test_short_unit():
    assert (short_unit("bytes"), short_unit("cl100k_base")) == ("bytes", "tokens")
