"""A piece of a unified diff is a change, not a statement a later segment corrects: the correction
linking (odcf.stages.rank.correction_links) leaves diffs alone, and code corrects no code."""
from odcf.compressor import Compressor
from odcf.document import Document, Segment, Source
from odcf.plan.model import Plan
from odcf.stages.rank import correction_links
from odcf.stages.segment import Segmenter

# a code hunk that makes a change and a CHANGELOG hunk, in another file, that describes it
DIFF = ("diff --git a/client/batch.py b/client/batch.py\n"
        "index 1a2b3c4..5d6e7f8 100644\n--- a/client/batch.py\n+++ b/client/batch.py\n"
        "@@ -8,7 +8,7 @@ import time\n \n TIMEOUT_S = 30\n-MAX_BATCH = 250\n+MAX_BATCH = 400\n \n \n"
        " def send(items: list) -> None:\n"
        "diff --git a/docs/CHANGELOG.md b/docs/CHANGELOG.md\n"
        "index 9f8e7d6..c5b4a39 100644\n--- a/docs/CHANGELOG.md\n+++ b/docs/CHANGELOG.md\n"
        "@@ -1,4 +1,7 @@\n # Changelog\n \n+## Unreleased\n+- `MAX_BATCH` raised from 250 to 400 (OPS-812).\n+\n"
        " ## 1.4.0\n \n")


def test_a_changelog_hunk_does_not_correct_the_code_hunk_that_made_the_change():
    # QA: "-BURST = 400 / +BURST = 500" was "rank: corrected by change.diff#12" (the CHANGELOG hunk "`BURST`
    # raised from 400 to 500") and held back by the budget as a stale value at 1/2, 1/4 and 1/8 of the diff
    segs = Segmenter()(Document.from_sources([Source(id="c.diff", text=DIFF)]), Plan(domain="t")).segments
    assert [s.meta.get("diff") for s in segs] == ["file", "paths", "hunk", "file", "paths", "hunk"]  # R6: index/---/+++ apart
    assert correction_links(segs) == {}
    for budget in (60, 90, 120, 200):
        r = Compressor.from_ontology("general").compress([Source(id="c.diff", text=DIFF)], budget=budget,
                                                         timings=False)
        reasons = [g.get("reason") or "" for s in r.record["sources"] for g in s["segments"]]
        assert not any("corrected by" in why or "stale value" in why for why in reasons), (budget, reasons)


def _segs(*items):
    return [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind=kind)
            for i, (kind, t) in enumerate(items)]


def test_code_corrects_no_code_but_prose_still_corrects_a_listing():
    # two parts of one program that hold one value are no erratum: the first is no stale value the budget
    # should deliver only with the second
    code = _segs(("code", 'def fetch(url):\n    return http.get(url, timeout=45)'),
                 ("sentence", "The client library talks to the billing gateway."),
                 ("code", ("def fetch_slow(url):\n    # 60 s, not 45, for the slow export endpoint\n"
                           "    return http.get(url, timeout=60)")))
    assert correction_links(code) == {}
    # an erratum in prose still corrects the listing it names
    listing = _segs(("code", "server:\n  port: 8080\n  workers: 4"),
                    ("sentence", "Start the server with the configuration above."),
                    ("sentence", "Correction: the port in the listing above is 8443, not 8080."))
    assert correction_links(listing) == {"s2": ["s0"]}
