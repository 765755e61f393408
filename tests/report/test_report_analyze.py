"""The health report: token shares, density, repeated structure, noise, per-stage savings."""
from __future__ import annotations

import json

import pytest

from odcf.report.analyze import HealthReport, analyze, entity_count
from odcf.document import Segment, Span
from odcf.tokens import get_counter

LOG = "\n".join(f"2024-05-15 INFO worker: processed batch number {i} ok" for i in range(12))
CHATTY = ("We talked about many things at length. Everyone agreed that it was a very pleasant meeting. "
          "The room was comfortable and the coffee was good. Nobody had any strong feelings about it.")
NOISY = "Draft.\nTODO: check this.\nThe val\u200bue is sho-\nwn here. <!-- remove me -->\nGarbage ~#;l|^~ text.\n"
JSON_SRC = '{\n  "order": "W123",\n  "items": [\n    1,\n    2,\n    3\n  ]\n}'
FOOTER = "Subscribe to our newsletter for weekly updates"


def _report(plan, stage_switches, sources, **kw) -> HealthReport:
    return analyze(sources, plan, stages=stage_switches, entities=False, **kw)


def test_tokens_per_source_and_layer_add_up(plan, stage_switches, contract_text):
    sources = [
        {"id": "contract", "text": contract_text},
        {"id": "log", "text": LOG, "layer": "history"},
        {"id": "rule", "text": "Answer in English.", "layer": "instruction"},
    ]
    rep = _report(plan, stage_switches, sources, budget=80)
    counter = get_counter("o200k_base")
    assert [s.tokens for s in rep.sources] == [counter.count(s["text"]) for s in sources]
    assert rep.tokens_total == sum(s.tokens for s in rep.sources)
    assert abs(sum(s.share for s in rep.sources) - 1.0) < 1e-3
    layers = {layer.layer: layer for layer in rep.layers}
    assert set(layers) == {"fact", "history", "instruction"}
    assert layers["history"].tokens == rep.sources[1].tokens
    assert sum(layer.tokens for layer in rep.layers) == rep.tokens_total
    # delivered tokens per source come from the record
    rec = {s["id"]: s for s in rep.result.record["sources"]}
    assert [s.tokens_out for s in rep.sources] == [rec[s.id]["tokens_out"] for s in rep.sources]


def test_density_counts_protected_spans_and_numbers():
    seg = Segment(id="a#0", source_id="a", index=0, text="", original="Pay $5,000 by day 30 despite gross negligence.",
                  protected=(Span(4, 10, "$5,000", "anchor:money"), Span(28, 44, "gross negligence", "term"),
                             Span(20, 44, "despite gross negligence", "connective:despite")))
    # $5,000 and the term; the connective is not an entity; 30 is a number no span covers
    assert entity_count(seg) == 3
    # an NER entity overlapping an anchor counts once
    both = seg.replace(protected=seg.protected + (Span(0, 10, "Pay $5,000", "entity:MONEY"),))
    assert entity_count(both) == 3
    # numbers written against Chinese characters count; a number inside a word does not
    zh = Segment(id="z#0", source_id="z", index=0, text="", original="全长175公里，总投资11.42亿元，编号A123。")
    assert entity_count(zh) == 2


def test_low_density_regions_are_flagged(plan, stage_switches, contract_text):
    rep = _report(plan, stage_switches, [{"id": "contract", "text": contract_text}, {"id": "chat", "text": CHATTY}],
                  budget=500)
    chat = [d for d in rep.density if d.source == "chat"]
    assert chat and all(d.entities == 0 for d in chat)
    assert any(r.source == "chat" for r in rep.low_density)
    region = next(r for r in rep.low_density if r.source == "chat")
    assert region.tokens == sum(d.tokens for d in chat if d.low)
    # the clause with "$50,000" is dense and never flagged
    money = next(d for d in rep.density if "$50,000" in d.preview)
    assert money.entities >= 1 and not money.low


def test_repeated_prefixes_and_boilerplate(plan, stage_switches):
    sources = [{"id": "log", "text": LOG + "\n" + FOOTER}, {"id": "page", "text": "Some article text here.\n" + FOOTER}]
    rep = _report(plan, stage_switches, sources, budget=500)
    top = rep.prefixes[0]
    assert top.source == "log" and top.prefix == "2024-05-15 INFO worker: " and top.lines == 12
    assert top.tokens == 12 * get_counter("o200k_base").count(top.prefix)
    assert len({p.prefix for p in rep.prefixes if p.source == "log"}) == len([p for p in rep.prefixes if p.source == "log"])
    bp = next(b for b in rep.boilerplate if b.line == FOOTER)
    assert bp.occurrences == 2 and bp.sources == ("log", "page")
    assert bp.tokens == get_counter("o200k_base").count(FOOTER)


def test_noise_and_minifiable_json(plan, stage_switches):
    rep = _report(plan, stage_switches, [{"id": "draft", "text": NOISY}, {"id": "data", "text": JSON_SRC}], budget=500)
    kinds = {(n.source, n.kind): n for n in rep.noise}
    assert ("draft", "editor_mark:todo") in kinds
    assert ("draft", "editor_mark:html_comment") in kinds
    assert ("draft", "editor_mark:invisible_char") in kinds
    assert ("draft", "ocr_hyphenation") in kinds
    assert ("draft", "ocr_garbage") in kinds and "~#;l|^~" in kinds[("draft", "ocr_garbage")].examples
    js = kinds[("data", "minifiable_json")]
    counter = get_counter("o200k_base")
    assert js.tokens == counter.count(JSON_SRC) - counter.count(json.dumps(json.loads(JSON_SRC), separators=(",", ":")))
    assert js.tokens > 0
    # a clean sentence yields no noise
    clean = _report(plan, stage_switches, ["The order W123 shipped on 2024-05-01."], budget=100)
    assert clean.noise == ()


def test_stage_savings_come_from_the_trace(plan, stage_switches, contract_text):
    rep = _report(plan, stage_switches, [contract_text, CHATTY], budget=40)
    events = [ev for ev in rep.result.document.trace if ev.tokens_in is not None]
    assert [s.stage for s in rep.stages] == [ev.stage for ev in events]
    budget = next(s for s in rep.stages if s.stage == "budget")
    assert budget.saved == budget.tokens_in - budget.tokens_out > 0


def test_to_dict_is_json_and_deterministic(plan, stage_switches, contract_text):
    a = _report(plan, stage_switches, [contract_text, LOG], budget=60).to_dict()
    b = _report(plan, stage_switches, [contract_text, LOG], budget=60).to_dict()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert a["tokens_total"] == sum(s["tokens"] for s in a["sources"])
    assert a["prefix_tokens"] == sum(p["tokens"] for p in a["prefixes"])
    assert "result" not in a


@pytest.mark.slow
def test_spacy_entities_raise_the_density(plan, stage_switches):
    text = "Angela Merkel met Emmanuel Macron in Berlin on Tuesday to discuss the Airbus contract."
    without = analyze([text], plan, stages=stage_switches, entities=False, budget=100)
    with_ner = analyze([text], plan, stages=stage_switches, entities=True, budget=100)
    assert with_ner.entity_source.endswith("+spacy") and not without.entity_source.endswith("+spacy")
    assert sum(d.entities for d in with_ner.density) > sum(d.entities for d in without.density)


def test_noise_is_what_the_rules_stage_removes_not_meaningful_script(plan, stage_switches):
    text = ("नमस्ते दुनिया, यह एक परीक्षण है। สวัสดีครับ ทดสอบภาษาไทย வணக்கம் உலகம்\n"
            "Family 👨\u200d👩\u200d👧 and می\u200cخواهم with \u200fRLM; the value is TBD in this sentence.\n")
    rep = _report(plan, stage_switches, [{"id": "u", "text": text}], budget=500)
    assert not [n for n in rep.noise if n.source == "u"], rep.noise


def test_invisible_characters_are_counted_as_the_rules_stage_saves_them(plan, stage_switches):
    # alone each is a token; inside a word a zero-width space shares one with a letter
    text = "Hello\ufeffworld and\u200b more text here. The fee is $5.\n"
    rep = _report(plan, stage_switches, [{"id": "z", "text": text}], budget=500)
    (noise,) = [n for n in rep.noise if n.kind == "editor_mark:invisible_char"]
    counter = get_counter("o200k_base")
    assert noise.count == 2
    assert noise.tokens == counter.count(text) - counter.count(text.replace("\ufeff", "").replace("\u200b", "")) == 1


def test_the_summary_line_says_what_of_the_delivery_is_headers(plan, stage_switches):
    from odcf.cli.analyze_cmd import summary_line

    rep = _report(plan, stage_switches, [{"id": "short", "text": "The fee is $5."}], budget=500)
    line = summary_line(rep)
    bodies = sum(s.tokens_out for s in rep.sources)
    assert rep.tokens_out > bodies  # the source header line costs more than the sentence
    assert f"-> {rep.tokens_out} delivered ({bodies} in the source bodies, the rest source headers" in line
