"""A unified diff is cut per file and per hunk: a hunk is delivered only under its own file's
header lines and its @@ line, its lines as they are, and what is left out is marked."""
import re

import pytest

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.render import join_segments
from odcf.stages.segment import Segmenter


def handler(k):
    return (f"diff --git a/app/handlers/handler_{k}.py b/app/handlers/handler_{k}.py\n"
            f"index f0f953{k}..0761e0{k} 100644\n"
            f"--- a/app/handlers/handler_{k}.py\n"
            f"+++ b/app/handlers/handler_{k}.py\n"
            f"@@ -7,7 +7,9 @@ class Handler{k}(BaseHandler):\n"
            " \n"
            "     def handle(self, request):\n"
            "         payload = self.parse(request)\n"
            "-        result = self.service.run(payload)\n"
            f"+        with self.tracer.span(\"handler_{k}\"):\n"
            "+            result = self.service.run(payload)\n"
            f"+        self.metrics.increment(\"handler_{k}.calls\")\n"
            "         return self.render(result)\n"
            " \n"
            "     def parse(self, request):\n")


SETTINGS = ("diff --git a/config/settings.py b/config/settings.py\n"
            "index a094f77..40722d9 100644\n"
            "--- a/config/settings.py\n"
            "+++ b/config/settings.py\n"
            "@@ -3,12 +3,12 @@ import os\n"
            " BASE_DIR = os.path.dirname(os.path.abspath(__file__))\n"
            " \n"
            " DEBUG = os.environ.get(\"DEBUG\", \"0\") == \"1\"\n"
            "-ALLOWED_HOSTS = [\"api.example.com\"]\n"
            "+ALLOWED_HOSTS = [\"api.example.com\", \"api-staging.example.com\"]\n"
            " \n"
            " # Session and token lifetimes\n"
            "-SESSION_TIMEOUT_SECONDS = 3600\n"
            "+SESSION_TIMEOUT_SECONDS = 900\n"
            " TOKEN_REFRESH_WINDOW = 300\n"
            "-MAX_LOGIN_ATTEMPTS = 5\n"
            "+MAX_LOGIN_ATTEMPTS = 3\n"
            " LOCKOUT_MINUTES = 15\n"
            "-RATE_LIMIT_PER_MINUTE = 120\n"
            "+RATE_LIMIT_PER_MINUTE = 60\n"
            " CACHE_BACKEND = \"redis://cache-01:6379/2\"\n")

DIFF = "".join(handler(k) for k in range(6)) + SETTINGS
HEADER_RE = re.compile(r"^diff --git a/(\S+) ")


def check(text, source=DIFF):
    """Every delivered diff line is a line of *source* (or a marker), and each hunk line is under
    its own file's header and its own @@ line."""
    files = {}  # line -> the files it is in (with its @@ line)
    current = hunk = None
    for line in source.splitlines():
        m = HEADER_RE.match(line)
        if m:
            current = m.group(1)
        elif line.startswith("@@"):
            hunk = line
        elif not line.startswith(("index ", "--- ", "+++ ")):
            files.setdefault(line, set()).add((current, hunk))
    current = hunk = None
    paths = False  # the line before is an index/---/+++ line
    for line in text.splitlines():
        if re.fullmatch(r"\[DIFF_(LINES|HUNKS|FILES): \d+\]", line):
            continue
        m = HEADER_RE.match(line)
        if m:
            current, hunk = m.group(1), None
            continue
        if line.startswith(("index ", "--- ", "+++ ")):
            assert current is not None, text
            paths = True  # never delivered without a hunk of its file (right below them)
            continue
        assert not paths or line.startswith("@@"), (line, text)
        paths = False
        if line.startswith("@@"):
            assert current is not None, (line, text)
            hunk = line
            continue
        assert (current, hunk) in files.get(line, ()), (line, current, hunk, text)
    assert not paths, text


@pytest.mark.parametrize("query,budget,want", [
    ("which file adds the span handler_4?", 400, "handler_4.py"),
    ("which file adds the span handler_4?", 200, "handler_4.py"),
    ("what is the new value of SESSION_TIMEOUT_SECONDS?", 400, "config/settings.py"),
    ("what is the new value of SESSION_TIMEOUT_SECONDS?", 160, "config/settings.py"),
])
def test_a_hunk_is_delivered_only_under_its_own_files_header(query, budget, want):
    # QA: hunks of handler_1…5 delivered under the header of handler_0.py, and the settings.py
    # hunk with no header at all
    r = Compressor.from_ontology("agent_ops").compress([Source(id="real.diff", text=DIFF)], query=query,
                                                       budget=budget, annotate=False, timings=False)
    check(r.text)
    assert re.search(rf"^diff --git a/\S*{re.escape(want)} ", r.text, re.M), r.text
    assert "[DIFF_FILES: " in r.text  # the files left out are said
    if "SESSION" in query:
        k = r.text.index("+SESSION_TIMEOUT_SECONDS = 900")
        assert r.text.rfind("diff --git a/config/settings.py", 0, k) >= 0


def test_diff_lines_are_never_headings_nor_reindented():
    segs = Segmenter()(Document.from_sources([Source(id="a", text=DIFF)]), Plan(domain="t")).segments
    assert not any(s.kind == "heading" for s in segs)
    assert join_segments(segs) == DIFF.rstrip()
    (hunk,) = [s for s in segs if "# Session and token lifetimes" in s.text]
    assert "\n # Session and token lifetimes\n" in hunk.text
    heads = [s for s in segs if s.meta.get("diff") == "file"]
    assert [s.text.splitlines()[0] for s in heads] == [
        *(f"diff --git a/app/handlers/handler_{k}.py b/app/handlers/handler_{k}.py" for k in range(6)),
        "diff --git a/config/settings.py b/config/settings.py"]
    by_id = {s.id: s for s in segs}
    for s in segs:  # every hunk and part goes under its file's header; its index/---/+++ lines with its first hunk
        if s.meta.get("diff") != "file":
            top = s
            while "under" in top.meta or "budget_needs" in top.meta:
                top = segs[top.meta["under"]] if "under" in top.meta else by_id[top.meta["budget_needs"]]
            assert top.meta["diff"] == "file" and top.meta["diff_file"] == s.meta["diff_file"]


def test_a_long_hunk_is_cut_in_whole_lines_and_lines_left_out_are_marked():
    segs = Segmenter(max_hunk_tokens=60)(Document.from_sources([Source(id="a", text=SETTINGS)]),
                                         Plan(domain="t")).segments
    parts = [s for s in segs if s.meta.get("diff") == "lines"]
    assert len(parts) >= 2 and segs[parts[0].meta["under"]].text.startswith("@@ -3,12 +3,12 @@")
    assert all(line in SETTINGS.splitlines() for p in parts for line in p.text.splitlines())
    (mid,) = [p for p in parts if "+SESSION_TIMEOUT_SECONDS = 900" in p.text]
    head, at = segs[0], segs[mid.meta["under"]]
    got = join_segments([head, at, mid])
    first, n = mid.meta["diff_lines"]
    total = mid.meta["diff_total"]
    want = [head.text, at.text] + ([f"[DIFF_LINES: {first}]"] if first else []) + [mid.text] + (
        [f"[DIFF_LINES: {total - first - n}]"] if total - first - n else [])
    assert got == "\n".join(want)


def test_hunks_and_files_left_out_are_marked():
    two = handler(0).replace("     def parse(self, request):\n", "     def parse(self, request):\n"
                             "@@ -40,3 +42,3 @@ class Handler0(BaseHandler):\n"
                             "     def render(self, result):\n-        return result\n+        return dict(result)\n")
    text = two + handler(1) + handler(2)
    segs = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments
    pick = [s for s in segs if s.meta.get("diff_file") == 0 and s.meta.get("diff_hunk") in (None, 1)]
    assert join_segments(pick).endswith("+        return dict(result)\n[DIFF_HUNKS: 1]\n[DIFF_FILES: 2]")


def fenced(diff):
    return ("Review of the tracing change.\n\n```diff\n" + diff + "```\n\n"
            "Comments:\n1. Do not merge until the settings change is reverted.\n")


def test_a_fenced_diff_is_cut_per_file_and_hunk_and_delivered_inside_its_fences():
    # QA: in a ```diff block, the diff was code lines in parts of ~400 tokens across file headers: a hunk
    # was delivered as "```diff" / "[CODE_LINES: 33]" / "@@ …", with no file header (unfenced, it was right)
    text = fenced(DIFF)
    segs = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments
    assert "".join(s.sep + s.text for s in segs) == text.rstrip()
    assert join_segments(segs) == text.rstrip()  # all delivered: the source as it is, fences once
    assert [s.text.splitlines()[0] for s in segs if s.meta.get("diff") == "file"][-1].endswith("config/settings.py")
    for budget in (160, 200, 400):
        r = Compressor.from_ontology("agent_ops").compress(
            [Source(id="review.md", text=text)], query="what is the new value of SESSION_TIMEOUT_SECONDS?",
            budget=budget, annotate=False, timings=False)
        assert "+SESSION_TIMEOUT_SECONDS = 900" in r.text, (budget, r.text)
        assert r.text.count("```diff\n") == 1 and r.text.count("```") == 2, r.text
        inside = r.text.split("```diff\n", 1)[1].split("```", 1)[0]
        check(inside)  # each hunk line under its own file's header and @@ line
        assert re.sub(r"^\[DIFF_FILES: \d+\]\n", "", inside).startswith("diff --git a/") and "[CODE_LINES" not in inside


def test_a_hand_written_diff_with_wrong_hunk_counts_stays_a_diff():
    # QA: "@@ -12,11 +12,14 @@" over 9 and 16 lines: the lines after the counted ones became list items, and
    # "+                raise" was delivered alone under "[…1 item]"
    wrong = SETTINGS.replace("@@ -3,12 +3,12 @@", "@@ -3,9 +3,9 @@") + handler(1)
    segs = Segmenter()(Document.from_sources([Source(id="a", text=wrong)]), Plan(domain="t")).segments
    assert {s.kind for s in segs} == {"code"} and all("diff" in s.meta for s in segs)
    (tail,) = [s for s in segs if "+RATE_LIMIT_PER_MINUTE = 60" in s.text]
    assert tail.meta["diff_file"] == 0  # in the settings.py hunk, not a list after it
    for budget in (100, 160, 300):
        r = Compressor.from_ontology("agent_ops").compress(
            [Source(id="w.diff", text=wrong)], query="what is the new RATE_LIMIT_PER_MINUTE?", budget=budget,
            annotate=False, timings=False)
        check(r.text, wrong)
        assert "+RATE_LIMIT_PER_MINUTE = 60" in r.text and "item" not in r.text, (budget, r.text)


def test_files_left_out_are_marked_where_they_are_and_a_blank_context_line_keeps_its_space():
    # QA: "[DIFF_FILES: 1]" for a file before the one delivered was written at the block's end, and a hunk's
    # last context line " " was delivered as an empty line (a whitespace-damaged patch)
    client = ("diff --git a/payments/client.py b/payments/client.py\n--- a/payments/client.py\n"
              "+++ b/payments/client.py\n@@ -5,5 +5,5 @@\n import requests\n \n-TIMEOUT_S = 30\n+TIMEOUT_S = 10\n \n")
    text = fenced(handler(0) + client + handler(1))
    segs = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments
    assert join_segments(segs) == text.rstrip()
    pick = [s for s in segs if s.meta.get("diff_file") == 1]
    assert join_segments(pick) == "```diff\n[DIFF_FILES: 1]\n" + client + "[DIFF_FILES: 1]\n```"


# the SWE-agent submit observation of pydicom-1458 (QA s32 R6): one file with a long path, one hunk
SWE = """diff --git a/pydicom/pixel_data_handlers/numpy_handler.py b/pydicom/pixel_data_handlers/numpy_handler.py
index 8e8d319ae..6a1221b72 100644
--- a/pydicom/pixel_data_handlers/numpy_handler.py
+++ b/pydicom/pixel_data_handlers/numpy_handler.py
@@ -285,9 +285,10 @@ def get_pixeldata(ds: "Dataset", read_only: bool = False) -> "np.ndarray":
         )
 
     required_elements = [
-        'BitsAllocated', 'Rows', 'Columns', 'PixelRepresentation',
-        'SamplesPerPixel', 'PhotometricInterpretation'
+        'BitsAllocated', 'Rows', 'Columns', 'SamplesPerPixel', 'PhotometricInterpretation'
     ]
+    if 'PixelData' in ds:
+        required_elements.append('PixelRepresentation')
     missing = [elem for elem in required_elements if elem not in ds]
     if missing:
         raise AttributeError(
"""


def test_a_single_hunk_diff_with_a_long_path_delivers_its_hunk_at_half_its_size():
    # QA s32 R6: "odcf compress swe_submit.diff -b 106" (213 tokens) delivered nothing: each hunk went only
    # with its file's four header lines (the long path four times, 74 tokens) and its @@ line. The file is
    # named by its "diff --git" line; its index/---/+++ lines go only with its first hunk
    r = Compressor.from_ontology(None).compress([Source(id="swe_submit.diff", text=SWE)], budget=106,
                                                timings=False)  # as "odcf compress" runs it
    text = "\n".join(line for line in r.text.splitlines() if not line.startswith("[source "))
    check(text, SWE)
    body = r.text.split("@@ -285,9 +285,10 @@", 1)[1]
    assert re.search(r"^[-+] ", body, re.MULTILINE), r.text  # a changed line of the hunk, under its @@ line
    assert "diff --git a/pydicom/pixel_data_handlers/numpy_handler.py" in r.text.split("@@", 1)[0]


def test_the_index_and_path_lines_go_only_with_the_files_first_hunk():
    segs = Segmenter()(Document.from_sources([Source(id="a", text=SWE + SETTINGS)]), Plan(domain="t")).segments
    by_id = {s.id: s for s in segs}
    paths = [s for s in segs if s.meta.get("diff") == "paths"]
    assert [s.text.splitlines()[1] for s in paths] == ["--- a/pydicom/pixel_data_handlers/numpy_handler.py",
                                                        "--- a/config/settings.py"]
    for s in paths:
        first = by_id[s.meta["budget_needs"]]  # the first hunk, or the first part of its lines
        assert first.meta["diff_hunk"] == 0 and first.meta["diff_file"] == s.meta["diff_file"]
        assert first.meta["diff"] == "hunk" or first.meta["diff_lines"][0] == 0
        top = first
        while "under" in top.meta:
            top = segs[top.meta["under"]]
        assert top.index == s.index - 1 and top.text.startswith("diff --git ") and "\n" not in top.text
    # a long hunk: they go with its first part of lines, which goes under its @@ line
    segs = Segmenter(max_hunk_tokens=60)(Document.from_sources([Source(id="a", text=SETTINGS)]),
                                         Plan(domain="t")).segments
    (path,) = [s for s in segs if s.meta.get("diff") == "paths"]
    first = {s.id: s for s in segs}[path.meta["budget_needs"]]
    assert first.meta["diff"] == "lines" and first.meta["diff_lines"][0] == 0
    assert segs[first.meta["under"]].text.startswith("@@ -3,12 +3,12 @@")
    # a plain diff's ---/+++ lines name its file: its header stays whole
    plain = "--- a/payments/client.py\n+++ b/payments/client.py\n@@ -5,2 +5,2 @@\n-TIMEOUT_S = 30\n+TIMEOUT_S = 10\n"
    segs = Segmenter()(Document.from_sources([Source(id="a", text=plain)]), Plan(domain="t")).segments
    assert [s.meta["diff"] for s in segs] == ["file", "hunk"] and segs[0].text.endswith("+++ b/payments/client.py")


@pytest.mark.parametrize("budget", [60, 80, 106, 130, 160, 200, 260])
def test_the_index_and_path_lines_are_never_delivered_without_a_hunk(budget):
    text = SWE + SETTINGS
    for query in (None, "which file is numpy_handler.py, index 8e8d319ae?"):
        r = Compressor.from_ontology("agent_ops").compress([Source(id="two.diff", text=text)], query=query,
                                                           budget=budget, annotate=False, timings=False)
        check(r.text, text)


# the final submission of SWE-agent's marshmallow-1867 run (QA s34 H2): one hunk, one changed line
MARSH = """diff --git a/src/marshmallow/fields.py b/src/marshmallow/fields.py
index ad388c7..20da768 100644
--- a/src/marshmallow/fields.py
+++ b/src/marshmallow/fields.py
@@ -1472,7 +1472,7 @@ class TimeDelta(Field):
         if value is None:
             return None
         base_unit = dt.timedelta(**{self.precision: 1})
-        return int(value.total_seconds() / base_unit.total_seconds())
+        return int(round(value.total_seconds() / base_unit.total_seconds()))  # round to nearest int
 
     def _deserialize(self, value, attr, data, **kwargs):
         try:
"""


@pytest.mark.parametrize("limit", [30, 60, 100])
def test_a_long_hunk_is_never_cut_inside_a_change_block(limit):
    # QA s34 H2: a hunk cut between its "-" and its "+" line was delivered as "-        return int(…)" /
    # "[DIFF_LINES: 4]", which reads as a deletion, while the patch replaced the line
    for text in (MARSH, SWE, SETTINGS):
        segs = Segmenter(max_hunk_tokens=limit)(Document.from_sources([Source(id="a", text=text)]),
                                                Plan(domain="t")).segments
        for part in (s for s in segs if s.meta.get("diff") == "lines"):
            lines = part.text.splitlines()
            first, n = part.meta["diff_lines"]
            body = text.split("\n@@", 1)[1].splitlines()[1:]
            assert lines == body[first:first + n]
            # a part starts on a context line, or on the hunk's first line, and ends after a whole block
            assert first == 0 or body[first][:1] == " ", (limit, part.text)
            assert first + n == len(body) or body[first + n][:1] == " ", (limit, part.text)


@pytest.mark.parametrize("budget", [90, 110, 130, 150, 170, 200])
def test_a_changed_line_is_delivered_with_its_replacement_or_not_at_all(budget):
    text = ("Thought: The output has changed from 344 to 345, so the rounding issue is fixed.\n\n"
            "## Final submission\n\n```diff\n" + MARSH + "```\n")
    r = Compressor.from_ontology("agent_ops").compress([Source(id="run.md", text=text)], budget=budget,
                                                       annotate=False, timings=False)
    old = "-        return int(value.total_seconds() / base_unit.total_seconds())"
    new = "+        return int(round(value.total_seconds() / base_unit.total_seconds()))  # round to nearest int"
    assert (old in r.text) == (new in r.text), r.text
    if old in r.text:
        assert f"{old}\n{new}\n" in r.text


def test_a_long_run_of_added_lines_alone_is_still_cut_in_parts():
    # a new function: "+" lines and no "-" line, a part of it reads as lines added (and more left out)
    added = "".join(f"+    total_{k} = compute_step({k}, payload, options)\n" for k in range(30))
    text = ("--- a/app/steps.py\n+++ b/app/steps.py\n@@ -10,2 +10,32 @@ import os\n import sys\n"
            + added + " \n")
    segs = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t")).segments
    parts = [s for s in segs if s.meta.get("diff") == "lines"]
    assert len(parts) >= 3 and all(len(s.text.splitlines()) < 20 for s in parts)
    assert parts[0].text.startswith(" import sys\n+    total_0 ")  # its context line with its first line
    assert join_segments(segs) == text.rstrip("\n")
