"""A short title on a line of its own over the later lines of its paragraph ("2025-03-11 10:00 Release
4.2.0" over the release's notes) heads them like a clause title: none of them is delivered without it."""
from odcf.compressor import Compressor

CORE = {"rules": False, "fold": False}

CHANGELOG = ("# Changelog\n\n"
             "2025-03-11 10:00 Release 4.2.0\n"
             "Added support for SAML single sign-on. The old LDAP connector is deprecated but not removed.\n"
             "Fixed a crash when exporting reports larger than 2 GB.\n\n"
             "2025-03-04 09:30 Release 4.1.3\n"
             "Security fix for CVE-2025-1234 in the upload handler. Upgrade is strongly recommended.\n"
             "Do not downgrade below 4.1.3 once migrated: the schema change is irreversible.\n\n"
             "2025-02-01 08:00 Release 4.1.0\n"
             "New dashboard with per-team quotas. Quotas default to 500 GB per team unless configured otherwise.\n")
RELEASES = {"4.2.0": ("Added support for SAML", "The old LDAP connector", "Fixed a crash"),
            "4.1.3": ("Security fix for CVE-2025-1234", "Upgrade is strongly", "Do not downgrade"),
            "4.1.0": ("New dashboard", "Quotas default to 500 GB")}


def test_a_release_line_heads_the_notes_under_it(plan):
    # QA round 3: at 60 tokens "Security fix for CVE-2025-1234 …" was delivered without "… Release 4.1.3", so
    # the reader could not tell which version it was; "… Release 4.1.0" (fused with the first sentence
    # under it) did head it, but not "Quotas default to 500 GB …"
    seen = set()
    for budget in range(25, 180, 5):
        r = Compressor(plan, stages=CORE).compress(CHANGELOG, query="security fix", budget=budget)
        assert r.tokens_out <= budget
        for version, notes in RELEASES.items():
            line = f"Release {version}"
            if any(n in r.text for n in notes):
                assert line in r.text, (budget, r.text)
                seen.add(version)
            elif line in r.text:
                raise AssertionError((budget, version, r.text))
            else:
                title = next(s for s in r.document.segments if s.text.endswith(line) or line + "\n" in s.text)
                assert title.status == "dropped"
    assert seen == set(RELEASES)
    r = Compressor(plan, stages=CORE).compress(CHANGELOG, query="security fix", budget=60)
    assert "2025-03-04 09:30 Release 4.1.3\nSecurity fix for CVE-2025-1234" in r.text
    title = next(s for s in r.document.segments if s.text == "2025-03-11 10:00 Release 4.2.0")
    assert "a title line over the later lines of its paragraph is delivered only with a part of what it heads" \
        in title.reasons[-1]


def test_a_sentence_or_a_command_is_no_title_line(plan):
    from odcf.stages.budget import _title_line
    assert _title_line("2025-03-11 10:00 Release 4.2.0") and _title_line("Troubleshooting")
    assert not any(_title_line(t) for t in ("Smoke test:", "$ kubectl get pods", "The fee is due.", "Dear Anna,",
                                            "the rest of a wrapped line", "This line has a great many words in it so"))
