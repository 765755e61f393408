"""Git logs in the segmenter: a commit's entry hangs together, its message never under another commit's header."""
import re

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.stages.segment import Segmenter

PLAN = Plan(domain="t")

ENTRIES = [
    ("commit 9f3c2a1e7b4d5f60812a3c4b5d6e7f8091a2b3c4 (HEAD -> main, origin/main)\n"
     "Author: Lena Fischer <lena@acme.dev>\nDate:   Tue Jun 4 16:22:08 2024 +0200\n\n"
     "    fix(auth): reject tokens with alg=none (CVE-2024-31337)\n\n"
     "    The JWT verifier accepted unsigned tokens when the header said\n"
     "    alg=none. Tokens are now rejected unless alg is RS256 or ES256.\n\n    Refs: SEC-118"),
    ("commit 4e5d6c7b8a9012f3e4d5c6b7a8091e2f3d4c5b6a\nAuthor: Omar Haddad <omar@acme.dev>\n"
     "Date:   Mon Jun 3 11:05:41 2024 +0200\n\n    perf(search): cache facet counts for 300 s\n\n"
     "    Facet counts were recomputed on every request; p95 latency drops\n"
     "    from 840 ms to 120 ms. The cache is not shared between regions."),
    ("commit 1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d\nMerge: 4e5d6c7 7c8d9e0\nAuthor: Lena Fischer <lena@acme.dev>\n"
     "Date:   Fri May 31 09:47:12 2024 +0200\n\n    Revert \"feat(billing): prorate seat changes daily\"\n\n"
     "    This reverts commit 7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f809.\n"
     "    Proration double-charged 212 customers on 30 May; refunds tracked\n    in FIN-771."),
    ("commit 7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f809\nAuthor: Priya Raman <priya@acme.dev>\n"
     "Date:   Thu May 30 14:30:00 2024 +0200\n\n    feat(billing): prorate seat changes daily\n\n"
     "    Seats added mid-cycle are charged per day instead of per month."),
    ("commit 0d1e2f3a4b5c6d7e8f9012a3b4c5d6e7f8091a2b\nAuthor: dependabot[bot] <support@github.com>\n"
     "Date:   Wed May 29 03:12:55 2024 +0000\n\n    chore(deps): bump lodash from 4.17.20 to 4.17.21"),
    ("commit b5c6d7e8f9012a3b4c5d6e7f8091a2b3c4d5e6f7\nAuthor: Omar Haddad <omar@acme.dev>\n"
     "Date:   Tue May 28 10:10:10 2024 +0200\n\n    docs: update README badges"),
]
LOG = "\n\n".join(ENTRIES) + "\n"
QUERY = "which commit was reverted and why"
WHY = "    Proration double-charged 212 customers on 30 May; refunds tracked\n    in FIN-771."


def seg(text):
    doc = Document.from_sources([Source(id="git.log", text=text, kind="text", layer="fact")])
    return Segmenter()(doc, PLAN).segments


def owner(line):
    """The entry (its number) that holds *line* of the log."""
    return next(k for k, e in enumerate(ENTRIES) if line in e.split("\n"))


def check_entries(text):
    """Every line of the log delivered in *text* comes under its own entry's commit line, and a commit's
    header lines never go without its subject."""
    current = None
    for line in text.split("\n"):
        if not line.strip() or line.startswith(("[", "```")) or not any(line in e.split("\n") for e in ENTRIES):
            continue
        if line.startswith("commit "):
            current = owner(line)
            assert ENTRIES[current].split("\n\n")[1] in text, text  # its subject with it
        assert current is not None and line in ENTRIES[current].split("\n"), (line, text)


def test_a_short_entry_is_one_segment_and_a_long_one_keeps_its_subject_with_its_header():
    out = seg(LOG)
    assert "".join(s.sep + s.text for s in out) == LOG.rstrip("\n")
    assert [s.text for s in out if s.text.startswith("commit ")] == [
        e if len(e) < 300 else e.split("\n\n")[0] + "\n\n" + e.split("\n\n")[1] for e in ENTRIES]
    # each later part of a message says which piece (its entry's header and subject) it goes with
    for s in out:
        if not s.text.startswith("commit "):
            head = next(h for h in out if h.index == s.index - s.meta["trace_of"])
            assert owner(head.text.split("\n")[0]) == owner(s.text.split("\n")[0])


def test_a_message_is_never_delivered_under_another_commits_header():
    # QA s26/qa4 finding 4: "Refs: SEC-118" (the JWT commit's) came right above the revert's message, the revert's
    # header was not delivered, and six 70-token headers went without any of their messages
    c = Compressor.from_ontology("general")
    for budget in (80, 164, 250, 329, 450, 527):
        r = c.compress([{"id": "git.log", "text": LOG}], query=QUERY, budget=budget, timings=False)
        check_entries(r.text)


def test_why_the_commit_was_reverted_is_delivered_under_the_revert():
    c = Compressor.from_ontology("general")
    r = c.compress([{"id": "git.log", "text": LOG}], query=QUERY, budget=330, timings=False)
    assert WHY in r.text and ENTRIES[2].split("\n\n")[0] in r.text
    check_entries(r.text)


def test_a_part_left_out_for_its_header_says_so():
    c = Compressor.from_ontology("general")
    r = c.compress([{"id": "git.log", "text": LOG}], query="SEC-118", budget=164, timings=False)
    reasons = [g.get("reason") or "" for s in r.record["sources"] for g in s["segments"]]
    assert "Refs: SEC-118" not in r.text or ENTRIES[0].split("\n")[0] in r.text
    assert not any("stack trace" in why for why in reasons)


def test_a_git_log_in_fences_is_cut_the_same_way_inside_its_fences():
    text = "Here is the log:\n\n```\n" + LOG + "```\n\nThat is all.\n"
    out = seg(text)
    assert "".join(s.sep + s.text for s in out) == text.rstrip("\n")
    assert any(s.text == ENTRIES[4] for s in out)
    c = Compressor.from_ontology("general")
    for budget in (164, 329):
        r = c.compress([{"id": "notes.md", "text": text}], query=QUERY, budget=budget, timings=False)
        check_entries(r.text)
        assert len(re.findall(r"^```", r.text, re.MULTILINE)) in (0, 2), r.text
