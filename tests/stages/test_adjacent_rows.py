"""A table question about the row after (or before) one it names brings that row (QA 2, finding 7)."""
from odcf.compressor import Compressor

SUMMARY = ("The four heroes travel to a distant place, meet an old enemy, fall into a trap, escape it with "
           "the help of an unexpected ally and return home after a long and difficult struggle.")
# the row after and the row before share no word with the query; two others do
TITLES = ["Menace Of The Mole Men", "Diablo", "The Way It All Began", "Klaws", "The Red Ghost",
          "Where It All Began Again", "Prisoners Of Planet X", "The Long Way Back"]
TABLE = '"Eps #","Title","Summary"\n' + "".join(
    f'"{k + 1}","{title}","{SUMMARY}"\n' for k, title in enumerate(TITLES))


def _compress(query):
    # room for the header and two of the eight rows
    return Compressor.from_ontology("general").compress(
        [{"id": "episodes.csv", "text": TABLE}], query=query, budget=150, timings=False)


def test_the_row_after_the_named_row_comes_with_it():
    r = _compress('which episode was next after "the way it all began"?')
    assert '"The Way It All Began"' in r.text and '"Klaws"' in r.text
    assert '"Diablo"' not in r.text


def test_the_row_before_the_named_row_comes_with_it():
    r = _compress('which episode aired before "the way it all began"?')
    assert '"The Way It All Began"' in r.text and '"Diablo"' in r.text
    assert '"Klaws"' not in r.text


# QA 3 finding 10: "after" and "before" ask for a neighbour row only with the named row for object
TERMS = ("Payment terms are 30 days net. A late fee of 1.5% per month applies to any invoice paid after its "
         "due date, and no fee is charged on invoices disputed in writing.")
INVOICES = "# Receivables\n\n" + TERMS + "\n\n| Invoice | Customer | Due date | Paid on | Amount |\n|---|---|---|---|---|\n" + \
    "".join(f"| INV-{2030 + k} | Customer {chr(65 + k)} GmbH | 2025-{1 + k // 4:02d}-{5 + 7 * (k % 4):02d} | "
            f"2025-{1 + k // 4:02d}-{3 + 7 * (k % 4):02d} | EUR {1000 + 137 * k:,}.00 |\n" for k in range(20))


def _invoices(query, budget=170):
    return Compressor.from_ontology("general").compress(
        [{"id": "invoices.md", "text": INVOICES}], query=query, budget=budget, timings=False)


def test_a_date_before_or_after_brings_no_other_row():
    r = _invoices("Was INV-2041 paid before or after its due date, and what late fee applies?")
    assert "| INV-2041 |" in r.text and "A late fee of 1.5% per month" in r.text
    assert "| INV-2042 |" not in r.text and "| INV-2040 |" not in r.text


def test_the_row_after_or_before_a_named_identifier_still_comes_with_it():
    after = _invoices("Which invoice came after INV-2041?")
    assert "| INV-2041 |" in after.text and "| INV-2042 |" in after.text and "| INV-2040 |" not in after.text
    before = _invoices("Which invoice was issued before INV-2041?")
    assert "| INV-2041 |" in before.text and "| INV-2040 |" in before.text and "| INV-2042 |" not in before.text
    following = _invoices("Which invoice is the next one?  INV-2041 was paid late.")
    assert "| INV-2042 |" in following.text


def test_after_and_before_without_a_named_object_ask_for_no_row():
    from odcf.stages.rank import adjacent_rows
    from odcf.document import Segment
    rows = ["id,amount\nINV-1,10", "INV-2,20", "INV-3,30"]
    segs = [Segment(id=f"r{i}", source_id="t", index=i, text=t, original=t, kind="table",
                    meta={"table_part": i}) for i, t in enumerate(rows)]
    for query in ("Was INV-2 settled after payment?", "Was INV-2 filed before the deadline?",
                  "What happened to INV-2 following the audit?", "Was INV-2 closed prior to the review?"):
        assert adjacent_rows(segs, query, {"r1"}) == set(), query
    assert adjacent_rows(segs, "What came after INV-2?", {"r1"}) == {"r2"}
    assert adjacent_rows(segs, "Which row is prior to INV-2?", {"r1"}) == {"r0"}
    assert adjacent_rows(segs, "Which is the previous row? INV-2 looks wrong.", {"r1"}) == {"r0"}
