"""Subtitles in the segmenter: a cue (its number, time line and text) is one piece."""
from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.segment import Segmenter

PLAN = Plan(domain="t")

CUES = [
    "1\n00:00:01,000 --> 00:00:04,200\nWelcome back to the safety briefing for Line 4.",
    "2\n00:00:13,600 --> 00:00:18,000\nThe lockout procedure has changed since March.\nYou now need two padlocks, not one.",
    "3\n00:00:18,300 --> 00:00:22,700\nTorque on the die clamps is 85 newton-metres,\nchecked with wrench TW-0042 every shift.",
    "4\n00:00:23,000 --> 00:00:27,500\nIf the pressure gauge reads above 210 bar,\nstop the press and call maintenance.",
    "5\n00:00:45,000 --> 00:00:49,200\nThat's all for today. Thanks, and stay safe.",
]
SRT = "\n\n".join(CUES) + "\n"


def seg(text, source_id="a"):
    doc = Document.from_sources([Source(id=source_id, text=text, kind="text", layer="fact")])
    return Segmenter()(doc, PLAN).segments


def test_a_cue_of_an_srt_file_is_one_segment_its_text_as_it_is():
    # QA: the cue's number and time line went with its first sentence, and "You now need two padlocks, not one."
    # or "Thanks, and stay safe." went alone, without its time or the sentence it goes on from
    for source_id in ("briefing.srt", "pasted"):
        out = seg(SRT, source_id)
        assert [s.text for s in out] == CUES
        assert "".join(s.sep + s.text for s in out) == SRT.rstrip("\n")


def test_a_webvtt_cue_with_or_without_an_identifier_is_one_segment():
    cues = ["00:01.000 --> 00:04.200 align:start\nWelcome back. The line is stopped.",
            "intro-2\n00:00:05.000 --> 00:00:08.000\nNever reach past the curtain. It is live."]
    text = "WEBVTT\n\n" + "\n\n".join(cues)
    assert [s.text for s in seg(text, "talk.vtt")][1:] == cues


def test_a_line_of_prose_over_a_time_line_is_no_cue_identifier():
    text = "The clip runs as follows.\n00:00:01,000 --> 00:00:04,200\nIt opens with the title. Then the map."
    assert seg(text)[0].text == "The clip runs as follows."


def test_a_later_line_of_a_cue_is_never_delivered_without_its_number_and_time():
    c = Compressor.from_ontology("general")
    for budget in (40, 60, 100, 160):
        r = c.compress([{"id": "briefing.srt", "text": SRT}], query="do I need two padlocks, and when to stop the press",
                       budget=budget, timings=False)
        for cue in CUES:
            for line in cue.split("\n")[2:]:
                if line in r.text:
                    assert cue in r.text, (budget, r.text)
