"""A tool's result in a JSON list of chat messages scores at least as the call it answers (QA s34 M3: ToolBench,
"what is the carrier … of tracking number YT2003521266065328" at 259 tokens delivered the user's message and both
calls, each repeating the number, and left out the result naming the carrier, "Yun Express")."""
from __future__ import annotations

import json

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.segment import Segmenter
from odcf.tokens import get_counter

NUMBER = "YT2003521266065328"
ARGS = json.dumps({"trackingnumber": NUMBER}, indent=2)
DETECTED = json.dumps({"error": "", "response": "{'meta': {'code': 200, 'type': 'Success', 'message': 'Success'}, "
                                                "'data': [{'name': 'Yun Express', 'code': 'yunexpress'}]}"})
TRACKED = json.dumps({"error": "", "response": str({
    "originCountryData": {"stausDataNum": 1, "substatus": "notfound002", "destinationcountryname": "",
                          "itemTimeLength": None, "infoState": 3, "phonenum": "4000-2621-26",
                          "weblink": "http://www.yunexpress.com/"},
    "destinationCountryData": {"stausDataNum": 1, "substatus": "notfound002", "infoState": 3, "phonenum": "",
                               "weblink": ""},
    "lastEvent": "", "lastUpdateTime": "", "itemTimeLength": None, "stayTimeLength": None, "status": "notfound",
    "trackinfo": [], "originCountry": "CN", "destinationCountry": "", "carrier_code": "yunexpress"})})
MESSAGES = [
    {"role": "system", "content": "You are AutoGPT, you can use many tools(functions) to do the following task. "
                                  "At each step, give your thought and call a function. " * 8},
    {"role": "user", "content": f"\nI need to track a package with the tracking number {NUMBER}. Can you provide me "
                                "with the carrier information and the current status? Thank you!\nBegin!\n"},
    {"role": "assistant", "content": None,
     "function_call": {"name": "carriers_detect_for_trackingmore_v2", "arguments": ARGS}},
    {"role": "function", "name": "carriers_detect_for_trackingmore_v2", "content": DETECTED},
    {"role": "assistant", "content": None,
     "function_call": {"name": "packages_v2_track_for_trackingmore_v2", "arguments": ARGS}},
    {"role": "function", "name": "packages_v2_track_for_trackingmore_v2", "content": TRACKED},
    {"role": "assistant", "content": "Let me summarise what the tools returned for the user in plain words, "
                                     "covering the detection step and the tracking step in order. " * 6}]
QUERY = f"what is the carrier and current status of tracking number {NUMBER}"


def _segments(messages, budget):
    text = json.dumps(messages, indent=1)
    doc = Document.from_sources([Source(id="msgs.json", text=text, kind="json")]).replace(budget=budget)
    return Segmenter()(doc, Plan(domain="t")).segments


def test_a_tool_result_is_delivered_beside_the_call_that_repeats_the_query_s_id():
    text = json.dumps(MESSAGES, indent=1)
    c = Compressor.from_ontology("general")
    for budget in (190, 230, 260, 330, 410):  # before: left out at 190-230 and at 410
        r = c.compress([Source(id="msgs.json", text=text, kind="json")], query=QUERY, role="executor",
                       budget=budget, annotate=False, timings=False)
        assert get_counter("o200k_base").count(r.text) <= budget
        value = json.loads(r.text)
        assert "Yun Express" in r.text, (budget, r.text)
        result = next(m for m in value if isinstance(m, dict) and m.get("name") == "carriers_detect_for_trackingmore_v2")
        assert result["content"] == DETECTED  # the whole result, in its own message


def test_only_a_result_of_a_call_before_it_scores_as_that_call():
    segs = _segments(MESSAGES, 300)
    call = next(s for s in segs if '"carriers_detect_for_trackingmore_v2",\n   "arguments"' in s.text)
    result = next(s for s in segs if "Yun Express" in s.text)
    assert result.meta["cell_source"] == [call.index]
    cut = [s for s in segs if "notfound002" in s.text or s.text.startswith(('"role": "function"', '"name"'))]
    # cut into its members, what the tool returned goes with its call, not its role and name alone
    assert [s.text.split(":")[0] for s in cut if s.meta.get("cell_source")] == ['"content"']
    # a result no call before it names, and a user's or assistant's message, score on their own
    orphan = [MESSAGES[1], {"role": "function", "name": "carriers_detect_for_trackingmore_v2", "content": DETECTED},
              MESSAGES[2], MESSAGES[6]]
    assert not any(s.meta.get("cell_source") for s in _segments(orphan, 100))
