"""A table goes only with the lines of its source that say how its figures are to be read: their unit or
scale, their sign convention ("All figures in GBP thousands unless stated otherwise. Figures in parentheses are
negative.", "Amounts in thousands of euros.", "(£'000)", "单位：万元")."""
from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan, RoleContract
from odcf.stages.segment import Segmenter

CORE = {"rules": False, "fold": False}

UNITS = "All figures in GBP thousands unless stated otherwise."
SIGNS = "Figures in parentheses are negative."
# the QA shape: the note under the report's title, the table two sections further down
REPORT = ("# Harbour Foods plc — Half-year results\n\n"
          f"{UNITS} {SIGNS}\n\n"
          "## Overview\n\n"
          "Revenue fell 3.2% as volumes declined. The board held the interim dividend at 4.2p per share.\n\n"
          "## Segment results\n\n"
          "| Segment | Revenue H1 2025 | Revenue H1 2024 | Operating profit H1 2025 |\n"
          "|---|---|---|---|\n"
          "| Retail | 198,400 | 193,000 | 9,310 |\n"
          "| Wholesale | 117,500 | 138,200 | (8,940) |\n"
          "| Group | 315,900 | 331,200 | 370 |\n\n"
          "## Outlook\n\n"
          "Net debt rose to £186.0 million in the half. We expect full-year revenue of £640-660 million.\n")
# a comma-separated table in plain text, its note right before it
PLAIN = ("Harbour Foods plc - Half-year results\n\n"
         "Revenue fell 3.2% as volumes declined. The board held the interim dividend at 4.2p per share.\n\n"
         "Amounts in thousands of euros. Negative amounts are shown in brackets.\n\n"
         "segment,revenue_h1_2025,revenue_h1_2024,operating_profit_h1_2025\n"
         "Retail,198400,193000,9310\n"
         "Wholesale,117500,138200,(8940)\n"
         "Group,315900,331200,370\n\n"
         "Net debt rose to EUR 186.0 million in the half.\n")


def _units(text):
    from odcf.stages.budget import _unit_lines

    doc = Segmenter()(Document.from_sources([Source(id="a", text=text)]), Plan(domain="t"))
    by_id = {s.id: s.text for s in doc.segments}
    return {by_id[k].split("\n")[-1]: [by_id[v] for v in vs] for k, vs in _unit_lines(doc).items()}


def _sweep(plan, text, row, lines, query):
    outcomes = set()
    for budget in range(30, 200, 6):
        r = Compressor(plan, stages=CORE).compress(text, query=query, budget=budget)
        assert r.tokens_out <= budget
        delivered = row in r.text
        if delivered:
            for line in lines:
                assert line in r.text, (budget, r.text)
        else:
            part = next(s for s in r.document.segments if row in s.original)
            assert part.status == "dropped"
            if any(line not in r.text for line in lines) and "budget: no room" not in part.reasons[-1]:
                assert "say how its figures are to be read" in part.reasons[-1], part.reasons
        outcomes.add(delivered)
    assert outcomes == {True, False}


def test_a_table_is_never_delivered_without_the_line_that_states_its_unit(plan):
    # QA: "| Group | 412,600 | 428,100 | (3.6%) | (1,204) | 7,850 |" went without "All figures in GBP thousands
    # unless stated otherwise. Figures in parentheses are negative.", and £412,600 thousand read as £412,600
    _sweep(plan, REPORT, "| Group | 315,900 | 331,200 | 370 |", (UNITS, SIGNS),
           "What was the group operating profit by segment?")


def test_a_plain_text_table_goes_with_the_note_right_before_it(plan):
    _sweep(plan, PLAIN, "Group,315900,331200,370",
           ("Amounts in thousands of euros.", "Negative amounts are shown in brackets."),
           "What was the group operating profit by segment?")


def test_the_record_says_why_a_row_left_out_for_its_unit_line_went():
    from odcf.stages.budget import _decide

    doc = Segmenter()(Document.from_sources([Source(id="a", text=REPORT)]), Plan(domain="t"))
    rows = [s for s in doc.segments if s.kind == "table"]
    units = [s for s in doc.segments if s.original in (UNITS, SIGNS)]
    contract = RoleContract(name="r", budget=100, required=("fact",))
    tiers = {s.id: (2, 0.5, s.index) for s in doc.segments}
    cost = {s.id: 5 for s in doc.segments}
    read_by = {r.id: tuple(u.id for u in units) for r in rows}
    final, _, _ = _decide(doc, {}, tiers, set(), cost, 100, contract, {}, set(), read_by=read_by)
    why = {s.id: s.reasons[-1] for s in final}
    for r in rows:
        assert "goes only with the line(s) of its source that say how its figures are to be read" in why[r.id]
        assert UNITS in why[r.id] and "no room in 100 tokens" in why[r.id]


def test_which_lines_state_a_unit_and_which_tables_they_govern():
    assert _units(REPORT) == {"| Retail | 198,400 | 193,000 | 9,310 |": [UNITS, SIGNS],
                              "| Group | 315,900 | 331,200 | 370 |": [UNITS, SIGNS]}
    assert _units(PLAIN) == {"Group,315900,331200,370": ["Amounts in thousands of euros.",
                                                         "Negative amounts are shown in brackets."]}


def test_a_unit_line_governs_only_its_own_section_and_not_prose_that_names_a_scale():
    text = ("# Report\n\n"
            "## Costs\n\n"
            "All amounts in $ millions.\n\n"
            "| Item | 2025 |\n|---|---|\n| Staff | 12.4 |\n\n"
            "## Volumes\n\n"
            "Revenue was 412,600 in GBP thousands. The figures are provisional.\n\n"
            "| Item | 2025 |\n|---|---|\n| Parcels | 8,100 |\n")
    assert _units(text) == {"| Staff | 12.4 |": ["All amounts in $ millions."]}


def test_a_caption_or_a_note_under_a_table_governs_that_table_only():
    text = ("Segment results (£'000)\n\n"
            "| Segment | Revenue |\n|---|---|\n| Retail | 198,400 |\n\n"
            "Figures in parentheses are negative.\n\n"
            "Headcount rose in every segment.\n\n"
            "| Segment | Staff |\n|---|---|\n| Retail | 1,240 |\n")
    assert _units(text) == {"| Retail | 198,400 |": ["Segment results (£'000)", SIGNS]}


def test_a_chinese_unit_line_goes_with_its_table():
    text = ("# 2025年半年度报告\n\n"
            "## 分部业绩\n\n"
            "单位：万元\n\n"
            "| 分部 | 收入 | 利润 |\n|---|---|---|\n| 零售 | 19,840 | 931 |\n")
    assert _units(text) == {"| 零售 | 19,840 | 931 |": ["单位：万元"]}
