"""The rules stage: per-kind rules, switches, the trace record, protection, determinism."""
from __future__ import annotations

import json

import pytest

from odcf.document import Document, Source
from odcf.pipeline import Pipeline, resolve_stage_options
from odcf.plan.model import Plan
from odcf.stages.rules import RuleStage

HTML = ("<html><body><nav>Menu</nav><h1>Invoice</h1><p>Total: $1,200 due.</p>"
        "<footer>About us</footer></body></html>")


def _doc(*sources: Source) -> Document:
    return Document.from_sources(sources)


def test_each_kind_gets_its_rules_and_the_trace_says_so(plan):
    doc = _doc(
        Source(id="page", text=HTML, kind="html"),
        Source(id="api", text='{"id": 7,\n "tags": ["a", "b"]}', kind="tool"),
        Source(id="notes", text="Draft [DRAFT]\nTODO: remove\n\n\n\nKeep this.", kind="text"),
        Source(id="log", text="plain tool output  ", kind="tool"),
    )
    out = RuleStage()(doc, plan)
    texts = {s.id: s.text for s in out.sources}
    assert texts["page"] == "# Invoice\n\nTotal: $1,200 due."
    assert texts["api"] == '{"id":7,"tags":["a","b"]}'
    assert texts["notes"] == "Draft\n\nKeep this."
    assert texts["log"] == "plain tool output"
    event = out.trace[-1]
    assert event.stage == "rules"
    data = event.to_dict()["data"]
    assert data["changed"] == 4
    assert data["sources"]["page"]["html"]["dropped"] == {"tag:footer": 1, "tag:nav": 1}
    assert data["sources"]["api"]["json_minify"]["method"] == "json.dumps"
    assert data["sources"]["notes"]["noise"]["todo_lines"] == 1
    assert data["sources"]["notes"]["noise"]["examples"][0] == "[DRAFT]"
    json.dumps(data)  # JSON-ready


def test_changed_sources_keep_id_and_remember_the_original(plan):
    src = Source(id="page", text=HTML, kind="html", origin="https://x.test/a")
    out = RuleStage()(_doc(src), plan).sources[0]
    assert out.id == "page" and out.origin == "https://x.test/a"
    assert out.kind == "markdown"
    assert out.meta["original_kind"] == "html" and out.meta["original_sha256"] == src.sha256


def test_html_detected_in_text_sources_but_not_fragments(plan):
    out = RuleStage()(_doc(Source(id="a", text=HTML), Source(id="b", text="Use <b>bold</b>.")), plan)
    assert out.sources[0].text.startswith("# Invoice") and out.sources[1].text == "Use <b>bold</b>."


def test_invalid_json_is_untouched_and_recorded(plan):
    bad = '{"a": 1,, "b": 2}'
    out = RuleStage()(_doc(Source(id="j", text=bad, kind="json")), plan)
    assert out.sources[0].text == bad
    rep = out.trace[-1].data["sources"]["j"]["json_minify"]
    assert rep["applied"] is False and rep["valid"] is False and "line 1 column" in rep["error"]


def test_instruction_layer_is_never_touched(plan):
    src = Source(id="sys", text="Rules:\n\n\n\nTODO: answer briefly  ", layer="instruction")
    out = RuleStage()(_doc(src), plan)
    assert out.sources[0] is src


@pytest.mark.parametrize("switch, source_id", [("html", "page"), ("json_minify", "api"), ("noise", "notes")])
def test_each_rule_can_be_switched_off(plan, switch, source_id):
    doc = _doc(
        Source(id="page", text=HTML, kind="html"),
        Source(id="api", text='{"id": 7}', kind="json"),
        Source(id="notes", text="x\n\n\n\ny", kind="text"),
    )
    on = {s.id: s.text for s in RuleStage()(doc, plan).sources}
    off = {s.id: s.text for s in RuleStage(**{switch: False})(doc, plan).sources}
    assert off[source_id] == doc.source(source_id).text != on[source_id]


def test_ontology_pipeline_section_switches_a_rule():
    plan = Plan(domain="d", pipeline={"rules": {"html": False}})
    assert resolve_stage_options(plan)["rules"] == {"html": False}
    stage = next(s for s in Pipeline.from_plan(plan).stages if s.name == "rules")
    assert stage.config() == {"html": False, "json_minify": True, "noise": True}


def test_bad_option_is_one_clear_error():
    with pytest.raises(TypeError, match="rules.noise must be true or false"):
        RuleStage(noise="yes")


def test_protected_text_is_never_removed_by_noise(plan):
    text = "TODO: confirm the $5,000 cap\nTODO: tidy\n<!-- see Section 4.2 -->\nFIXME: gross negligence carve-out"
    out = RuleStage()(_doc(Source(id="n", text=text)), plan)
    assert out.sources[0].text == "TODO: confirm the $5,000 cap\n<!-- see Section 4.2 -->\nFIXME: gross negligence carve-out"
    assert out.trace[-1].data["sources"]["n"]["noise"]["kept_protected"] == 3


def test_same_input_gives_identical_output(plan):
    doc = _doc(Source(id="page", text=HTML, kind="html"), Source(id="api", text='[1,  2]', kind="json"))
    a, b = RuleStage()(doc, plan), RuleStage()(doc, plan)
    assert [s.text for s in a.sources] == [s.text for s in b.sources]
    assert a.trace[-1].to_dict() == b.trace[-1].to_dict()


def test_pipeline_records_tokens_saved_by_rules(plan):
    from odcf.compressor import Compressor

    r = Compressor.from_ontology(plan).compress([{"id": "page", "text": HTML, "kind": "html"}], budget=1000)
    ev = next(e for e in r.record["stages"] if e["stage"] == "rules")
    assert ev["tokens_out"] < ev["tokens_in"]
    assert "Menu" not in r.text and "$1,200" in r.text


def test_rules_twice_change_nothing_more(plan):
    doc = _doc(
        Source(id="page", text=HTML, kind="html"),
        Source(id="api", text='{"id": 7,\n "tags": ["a", "b"]}', kind="tool"),
        Source(id="rows", text='{"a": 1}\n\n{"a": 2}', kind="json"),
        Source(id="notes", text="Draft [DRAFT]\n=====\nTODO: remove\n=====\n\n\nKeep this.  ", kind="text"),
    )
    once = RuleStage()(doc, plan)
    twice = RuleStage()(once, plan)
    assert [s.text for s in twice.sources] == [s.text for s in once.sources]
    assert twice.trace[-1].data["changed"] == 0


def test_a_csv_file_loses_only_invisible_characters(plan):
    # the line rules removed whole data rows as "OCR lines" and blank lines inside quoted cells
    csv_text = ('"Line","Stops","Note"\n"32, 36","Naylor Road","first line\n\n\nafter two blank lines"\n'
                '"~#;l|^~","x\u200by","TODO: row kept"\n"40","Main St   ","--------"\n')
    out = RuleStage()(_doc(Source(id="a", text=csv_text, origin="routes.csv"),
                           Source(id="b", text=csv_text)), plan)
    texts = {s.id: s.text for s in out.sources}
    assert texts["a"] == csv_text.replace("\u200b", "")
    assert out.trace[-1].to_dict()["data"]["sources"]["a"]["noise"] == {"zero_width": 1, "chars_removed": 1}
    assert texts["b"] != texts["a"]  # the same text without the file name: the prose rules, as before


def test_fenced_json_of_a_document_is_minified_and_the_trace_says_so(plan):
    log = "## Step 3\n\nTool output:\n\n```json\n{\n  \"order_id\": \"#W7710032\",\n  \"amount\": 37.5\n}\n```\n"
    doc = _doc(Source(id="log", text=log, kind="markdown"), Source(id="t", text="Ran:\n```\n[1, 2]\n```", kind="tool"),
               Source(id="j", text='{"a": 1}', kind="json"))
    out = RuleStage()(doc, plan)
    texts = {s.id: s.text for s in out.sources}
    assert texts["log"] == "## Step 3\n\nTool output:\n\n```json\n{\"order_id\":\"#W7710032\",\"amount\":37.5}\n```"
    assert texts["t"] == "Ran:\n```\n[1,2]\n```"  # a tool's output that is not JSON as a whole
    rep = out.trace[-1].data["sources"]["log"]["json_minify"]
    assert rep["format"] == "fenced json" and rep["blocks"] == 1
    off = RuleStage(json_minify=False)(doc, plan)
    assert "```json\n{\n  \"order_id\"" in off.sources[0].text


def test_a_pdf_texts_running_header_is_delivered_once_and_the_record_says_what_went():
    # QA: "Journal of Applied Battery Research 14 (2023) 211–224" was delivered 3-4 times ahead of the results
    from odcf.compressor import Compressor
    header = "Journal of Applied Battery Research 14 (2023) 211–224"
    pages = ["Abstract\nLithium plating was not observed at 0 °C when the charge rate was limited to 0.3C.",
             "2. Methods\nAll cells were from a single production lot (lot no. 2209-K4).",
             "3. Results\nGroup B, by contrast, retained 91.2% after 1,500 cycles at 0 °C and 0.3C.",
             "4. Conclusions\nCharging LFP cells at 0 °C is safe only if the rate is limited to 0.3C or below."]
    text = "\n\n".join(f"{header}\n\n{body}\n\nPage {k} of 14" for k, body in enumerate(pages, 1))
    r = Compressor.from_ontology("general").compress([{"id": "paper.txt", "text": text}],
                                                     query="at what charge rate is charging at 0 °C safe",
                                                     budget=160, timings=False)  # under the 203 tokens in
    assert r.text.count(header) <= 1 and "Page 3 of 14" not in r.text
    assert all(body in r.text for body in pages)
    noise = next(s for s in r.record["stages"] if s["stage"] == "rules")["data"]["sources"]["paper.txt"]["noise"]
    assert noise["running_lines"] == 3 and noise["page_numbers"] == 4 and noise["examples"][0] == header
    # tool output and a chat are no paged documents: left as they are
    for kind in ("tool", "chat"):
        out = RuleStage()(_doc(Source(id="t", text=text, kind=kind)), Plan(domain="t"))
        assert out.sources[0].text == text
