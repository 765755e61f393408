import dataclasses
import json

from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.render import items_mark, join_segments
from odcf.stages.segment import Segmenter
from odcf.textutil import split_sentences
from odcf.tokens import get_counter

PLAN = Plan(domain="t")


def seg(text, kind="text", layer="fact", **kw):
    doc = Document.from_sources([Source(id="a", text=text, kind=kind, layer=layer)])
    return Segmenter(**kw)(doc, PLAN).segments


def test_sentences_and_abbreviations():
    out = seg("Dr. Smith signed on Jan. 5. The fee is $3.50 per unit. See e.g. Section 4.2 below! Done?")
    assert [s.text for s in out] == ["Dr. Smith signed on Jan. 5.", "The fee is $3.50 per unit.",
                                     "See e.g. Section 4.2 below!", "Done?"]


def test_tokenised_text_ends_a_sentence_before_an_opening_bracket_or_quote_and_a_space():
    # "manner .\n( File Photo ) The DRDO …" and "Friday .\n“ Presently , …" were one 100-word "sentence"
    text = ("The DRDO is working on projects to predict avalanches in a much precise manner .\n"
            "( File Photo ) The DRDO is working on four projects , the government said on Friday .\n"
            "“ Presently , the DRDO is working on four projects , ” he said in a written response .")
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "The DRDO is working on projects to predict avalanches in a much precise manner .",
        "( File Photo ) The DRDO is working on four projects , the government said on Friday .",
        "“ Presently , the DRDO is working on four projects , ” he said in a written response ."]
    # an opening mark before a lower-case word opens no sentence; a straight quote with a space after it may
    # as well close the sentence before: it is left where it stands
    assert len(split_sentences("See p. ( a ) below. Done. ( see below ) ok")) == 2
    text = 'He said " stop now . " Then he left .'
    assert [text[a:b] for a, b in split_sentences(text)] == [text]


def test_no_cut_after_the_abbreviations_of_claims_and_addresses():
    # "Ins." cut "Co., approved approx. 12 sq. ft." from its subject, "Rm." a room from its number
    text = ("The adjuster, Dr. Karen O'Neil of Acme Ins. Co., approved approx. 12 sq. ft. of drywall under "
            "Sec. 7.2 of the policy. Readings were approx. 38 pct. in Rm. 4. Payment No. 2 was sent to "
            "1400 Main St. Apt. 5B. Claim no. CLM-2024-00317 remains open. The call took 30 min. Then it ended.")
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "The adjuster, Dr. Karen O'Neil of Acme Ins. Co., approved approx. 12 sq. ft. of drywall under "
        "Sec. 7.2 of the policy.", "Readings were approx. 38 pct. in Rm. 4.",
        "Payment No. 2 was sent to 1400 Main St. Apt. 5B.", "Claim no. CLM-2024-00317 remains open.",
        "The call took 30 min.", "Then it ended."]


def test_cjk_sentences_split_on_full_stops_without_spaces():
    text = "根据第3.2.1条，合同金额为人民币120万元。乙方不得转让；违约金为5%！是否续约？"
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == ["根据第3.2.1条，合同金额为人民币120万元。", "乙方不得转让；", "违约金为5%！", "是否续约？"]


def test_an_english_sentence_ends_before_chinese_text():
    text = "The fee is 5%. 乙方不得转让。 See Dr. 王 today."
    assert [text[a:b] for a, b in split_sentences(text)] == ["The fee is 5%.", "乙方不得转让。", "See Dr. 王 today."]


def test_segments_cover_the_source_exactly():
    text = "# Title\n\nThe first sentence is here. The second one is there.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- x\n- y\n- z\n\n```\ncode here\n```\nTail."
    out = seg(text, kind="markdown")
    rebuilt = "".join(s.sep + s.text for s in out)
    assert rebuilt == text.rstrip()
    kinds = [s.kind for s in out]
    assert kinds == ["heading", "sentence", "sentence", "table", "list", "code", "sentence"]


def test_large_json_is_split_into_members_and_rejoins_valid():
    data = [{"order_id": f"#W{1000000 + i}", "amount": i * 10.5, "status": "delivered"} for i in range(40)]
    text = json.dumps(data)
    out = seg(text, kind="json")
    assert len(out) == 40 and all(s.kind == "json" for s in out)
    kept = [s for s in out if s.index % 3 == 0]
    # the subset says how many items it leaves out, as its last item: a reader does not take it for the whole
    assert json.loads(join_segments(kept)) == data[::3] + ["[JSON_ITEMS: 26]"]
    assert json.loads(join_segments(list(out))) == data


def test_a_json_subset_marks_what_each_container_leaves_out():
    data = {"user": "u_551", "note": "x" * 10,
            "orders": [{"order_id": f"#W{1000 + i}", "status": "cancelled" if i % 4 == 0 else "delivered",
                        "lines": [f"item {i}-{k} of the order, with words to make it longer" for k in range(3)]}
                       for i in range(40)]}
    out = seg(json.dumps(data), kind="json")
    orders = [s for s in out if s.meta["json_levels"][-1][0] == "/2"]
    assert len(orders) == 40 and all(s.meta["json_sizes"] == [3, 40] for s in orders)
    kept = [s for s in out if s.text.startswith('"user"')] + orders[:2]
    got = json.loads(join_segments(kept))
    assert got == {"user": "u_551", "orders": data["orders"][:2] + ["[JSON_ITEMS: 38]"], "[JSON_KEYS: 1]": None}
    assert json.loads(join_segments(list(out))) == data  # all delivered: no marker
    # a record written before json_sizes: no count, still valid JSON
    old = [s.replace(meta={k: v for k, v in s.meta.items() if k != "json_sizes"}) for s in kept]
    assert json.loads(join_segments(old)) == {"user": "u_551", "orders": data["orders"][:2]}


def test_small_json_and_instruction_stay_whole():
    assert len(seg('{"a": 1, "b": [1, 2]}', kind="json")) == 1
    out = seg("Do this. Then that.", layer="instruction")
    assert len(out) == 1 and out[0].kind == "block"


def test_long_list_blocks_are_chunked():
    text = "\n".join(f"- 2024-05-01 10:00:{i:02d} INFO worker-3 processed item {i}" for i in range(100))
    out = seg(text, max_block_lines=40, max_block_tokens=100_000)
    assert [s.kind for s in out] == ["list", "list", "list"]  # log lines sharing a prefix: runs of lines
    assert "".join(s.sep + s.text for s in out) == text
    items = "\n".join(f"- Worker {i} processed the item it was given and reported back to the queue" for i in range(60))
    out = seg(items)  # a list: about 40 tokens a part, in whole items
    assert len(out) > 10 and {s.kind for s in out} == {"list"} and "".join(s.sep + s.text for s in out) == items


def test_empty_source_gives_no_segments():
    assert seg("   \n\n ") == ()


def test_quoted_csv_is_one_table():
    text = 'Year,Team,"Record, W-L",Coach\n2001,"Bears, Chicago",10-6,Smith\n2002,Lions,8-8,"Jones, Jr."\n2003,Packers,12-4,Lee'
    out = seg(text)
    assert [s.kind for s in out] == ["table"]


def test_log_lines_with_a_shared_prefix_form_a_list_block():
    text = "Intro line here.\n" + "\n".join(f"2024-05-01 10:00:{i:02d} INFO worker-3 step {i}" for i in range(6))
    out = seg(text)
    assert [s.kind for s in out] == ["sentence"] + ["list"] * 6  # a log: a piece an entry
    assert "".join(s.sep + s.text for s in out) == text


def test_short_lead_in_sentences_stay_with_the_next_one():
    out = seg("Section 4.1 Fees. Customer shall pay within 30 days. Late fees apply to all overdue invoices.")
    assert [s.text for s in out] == ["Section 4.1 Fees. Customer shall pay within 30 days.",
                                     "Late fees apply to all overdue invoices."]


def test_a_short_sentence_said_again_on_its_line_is_a_segment_each_time():
    # QA: "Order #W1234567 shipped." 50 times on one line (a tool's polling output) was joined, each copy as a
    # short lead-in of the next, into two segments of about 300 tokens; at a budget of 100 nothing was delivered
    text = " ".join(["Order #W1234567 shipped."] * 50)
    out = seg(text)
    assert [s.text for s in out] == ["Order #W1234567 shipped."] * 50
    assert "".join(s.sep + s.text for s in out) == text
    # the last copy still leads into a sentence that goes on from it, and a lead-in into its sentence
    assert [s.text for s in seg("Shipped. Shipped. Your order arrives on Monday at noon.")] == [
        "Shipped.", "Shipped. Your order arrives on Monday at noon."]
    assert [s.text for s in seg("Section 4.1 Fees. Section 4.2 Fees. Customer shall pay within 30 days.")] == [
        "Section 4.1 Fees. Section 4.2 Fees. Customer shall pay within 30 days."]


def test_long_tables_are_cut_into_parts_that_render_under_their_header_with_omitted_rows_marked():
    rows = "\n".join(f"| {i} | item number {i} | {i * 3} |" for i in range(200))
    text = "| id | name | qty |\n|---|---|---|\n" + rows
    out = seg(text, kind="markdown", max_table_tokens=300)
    assert len(out) > 2 and all(s.kind == "table" for s in out)
    assert "".join(s.sep + s.text for s in out) == text
    # every data row is in exactly one part, and the parts say which
    assert [s.meta["table_rows"][0] for s in out][0] == 0 and sum(s.meta["table_rows"][1] for s in out) == 200
    assert all(a.meta["table_rows"][0] + a.meta["table_rows"][1] == b.meta["table_rows"][0] for a, b in zip(out, out[1:]))
    later = out[2]
    first, n = later.meta["table_rows"]
    rendered = join_segments([later])
    assert rendered == (f"| id | name | qty |\n|---|---|---|\n[DATA_ROWS: {first}]\n" + later.text
                        + f"\n[DATA_ROWS: {200 - first - n}]")
    # two parts with a gap: one header, the rows between them counted
    gap = join_segments([out[0], out[2]])
    assert gap == out[0].text + f"\n[DATA_ROWS: {out[1].meta['table_rows'][1]}]\n" + out[2].text + \
        f"\n[DATA_ROWS: {200 - first - n}]"
    assert join_segments(list(out)) == text  # all parts: the table as it was
    # after a paragraph that came before the table, the block break stays too
    lead = seg("The stock list follows.\n\n" + text, kind="markdown", max_table_tokens=300)
    assert join_segments([lead[0], lead[3]]).startswith("The stock list follows.\n\n| id | name | qty |\n|---|---|---|\n[DATA_ROWS: ")


def test_a_csv_part_never_ends_inside_a_quoted_field():
    rows = "\n".join(f'"{i}","line one of note {i}\nline two of note {i}","{i * 3}"' for i in range(60))
    out = seg('"id","note","qty"\n' + rows, kind="text", max_table_tokens=60)
    assert len(out) > 3 and all(s.kind == "table" for s in out)
    for s in out:
        assert s.text.count('"') % 2 == 0  # every quoted field closes inside its part
    assert sum(s.meta["table_rows"][1] for s in out) == 60


def test_runs_of_long_lines_with_a_shared_prefix_stay_separate_passages():
    passages = [f"Document [{k}](Title: Topic {k}) " + "This passage talks about a topic at length. " * 6 for k in range(5)]
    out = seg("\n".join(passages))
    assert all(s.kind == "sentence" for s in out)
    assert len({s.paragraph for s in out}) == 5


def test_chinese_sentences_are_not_glued_together():
    text = "第三条 合同金额为人民币120万元。乙方应当在2024年3月15日前交付全部货物。逾期交付的，每日支付违约金。"
    out = seg(text)
    assert [s.text for s in out] == ["第三条 合同金额为人民币120万元。", "乙方应当在2024年3月15日前交付全部货物。", "逾期交付的，每日支付违约金。"]


def test_the_textutil_module_example_holds():
    import doctest

    import odcf.textutil

    result = doctest.testmod(odcf.textutil)
    assert result.attempted >= 2 and result.failed == 0


def _delivered(segments, keep):
    return join_segments([s for s in segments if s.index in keep])


def test_a_transcript_keeps_each_line_and_its_speaker_when_sentences_are_dropped():
    text = ("Alice: We agreed to ship release 4.2 on Friday. Coffee was good today.\n"
            "Bob: Yeah, well, the weather is nice. But I think we must not ship release 4.2 before the audit.\n"
            "Carol: Lunch is at noon. The budget for the audit is $12,000.")
    out = seg(text)
    assert "".join(s.sep + s.text for s in out) == text
    assert len({s.paragraph for s in out}) == 3  # one paragraph per speaker line
    assert [s.meta.get("speaker") for s in out] == ["Alice:", "Alice:", "Bob:", "Bob:", "Carol:", "Carol:"]
    assert [bool(s.meta.get("opens_line")) for s in out] == [True, False] * 3
    # Bob's first sentence dropped: his second stays on its own line, under his name, not Alice's
    assert _delivered(out, {0, 1, 3}) == ("Alice: We agreed to ship release 4.2 on Friday. Coffee was good today.\n"
                                          "Bob: But I think we must not ship release 4.2 before the audit.")
    assert _delivered(out, {3, 5}) == ("Bob: But I think we must not ship release 4.2 before the audit.\n"
                                       "Carol: The budget for the audit is $12,000.")
    # everything delivered: the source, unchanged
    assert _delivered(out, set(range(len(out)))) == text
    # the line above is the same speaker's: no label is repeated (the reader already knows who speaks)
    same = seg("Bob: The audit is due. It starts Monday.\nBob: Weather is nice. We ship after it.\nAlice: Fine.")
    assert _delivered(same, {0, 3}) == "Bob: The audit is due.\nWe ship after it."
    # but with another's line left out between, it is a turn of its own (test below)
    same = seg("Bob: The audit is due. It starts Monday.\nAlice: Fine.\nBob: Weather is nice. We ship after it.")
    assert [s.text for s in same] == ["Bob: The audit is due.", "It starts Monday.", "Alice: Fine.",
                                      "Bob: Weather is nice.", "We ship after it."]
    assert _delivered(same, {1, 2, 4}) == "Bob: It starts Monday.\nAlice: Fine.\nBob: We ship after it."


def test_a_transcript_line_delivered_after_turns_left_out_says_whose_it_is_and_marks_them():
    # QA: "What about day trips?", the second sentence of the user's third message, was written as the
    # rest of the user's first message (the lines between left out, the same speaker's line above: no
    # label, no mark). In a chat with an agent a line "… " says it is a later message; not in a meeting,
    # where a label or a mark on every such line cost QMSum evidence words (0.616 -> 0.587 at 4x)
    same = seg("user: The audit is due. It starts Monday.\nassistant: Fine.\nuser: Weather is nice. We ship after it.")
    assert _delivered(same, {0, 4}) == "user: The audit is due.\n… We ship after it."
    assert _delivered(same, {0, 3}) == "user: The audit is due.\nuser: Weather is nice."
    assert _delivered(same, {2, 4}) == "assistant: Fine.\nuser: We ship after it."  # the next line: nothing left out
    human = seg("Bob: The audit is due. It starts Monday.\nAlice: Fine.\nBob: Weather is nice. We ship after it.")
    assert _delivered(human, {0, 4}) == "Bob: The audit is due.\nWe ship after it."
    # lines of other speakers too, and a meeting's lines after a blank line under its title
    meeting = seg("Sync, 18 March 2025.\n\nPriya: OK, let us start now. First item is the outage last Tuesday.\n"
                  "Tom: Sure, I can summarise it. The batch failed at 10:00 UTC.\nAna: Did any merchant notice it?\n"
                  "Priya: Agreed, so that is settled. Luis, you own the fix, by 28 March.\nLuis: OK, 28 March works for me.")
    texts = [s.text for s in meeting]
    keep = {texts.index("First item is the outage last Tuesday."), texts.index("Luis, you own the fix, by 28 March."),
            texts.index("Luis: OK, 28 March works for me.")}
    assert _delivered(meeting, keep) == ("Priya: First item is the outage last Tuesday.\n"
                                         "Luis, you own the fix, by 28 March.\nLuis: OK, 28 March works for me.")
    keep = {texts.index("Tom: Sure, I can summarise it."), texts.index("Luis: OK, 28 March works for me.")}
    assert _delivered(meeting, keep) == "Tom: Sure, I can summarise it.\nLuis: OK, 28 March works for me."
    # a chat log of turns over paragraphs: turns left out between two delivered ones, the same
    chat = seg("user: Book me a flight to SEA on May 20. Direct flights only, please.\n\n"
               "assistant: Here are the direct flights:\n\n1. HAT100, $250\n2. HAT101, $270\n3. HAT102, $290\n\n"
               "user: I will take HAT101 then.\n\nassistant: It is booked for you now. Your reference is ZFA04Y.\n\n"
               "user: Thanks a lot for that. Also add one checked bag.\n")
    assert {s.meta.get("turn") for s in chat} == {0, 1, 2, 3, 4}
    texts = [s.text for s in chat]
    keep = {texts.index("user: Book me a flight to SEA on May 20."), texts.index("Your reference is ZFA04Y."),
            texts.index("Also add one checked bag.")}
    assert _delivered(chat, keep) == ("user: Book me a flight to SEA on May 20.\nassistant: Your reference is ZFA04Y.\n"
                                      "user: Also add one checked bag.")


def test_a_single_label_line_is_prose_and_a_transcript_after_prose_starts_its_own_paragraphs():
    prose = seg("Note: the fee is due on Friday. It is payable in euros.\nThe second line continues the note.")
    assert all(s.meta.get("speaker") is None for s in prose) and len({s.paragraph for s in prose}) == 1
    out = seg("Minutes of the call.\nPhD C: We should freeze the data. Then we re-run.\nProfessor E: Agreed. Do it.")
    assert [s.paragraph for s in out] == [0, 1, 1, 2]
    assert _delivered(out, {0, 2}) == "Minutes of the call.\n\nPhD C: Then we re-run."


def test_delivered_chinese_sentences_never_gain_spaces():
    text = "第一条 本办法自2024年1月1日起施行。第二条 违反本办法的，处5000元以上2万元以下罚款。第三条 天气很好。第四条 不得泄露个人信息。"
    out = seg(text)
    assert len(out) == 4
    # a sentence left out between two of a line is marked there, without spaces beside Chinese
    assert _delivered(out, {0, 1, 3}) == "第一条 本办法自2024年1月1日起施行。第二条 违反本办法的，处5000元以上2万元以下罚款。…第四条 不得泄露个人信息。"
    assert _delivered(out, {0, 2}) == "第一条 本办法自2024年1月1日起施行。…第三条 天气很好。"
    mixed = seg("The fee is 5% of the price. Payment is due in May. 乙方不得转让。 It is final.")
    assert _delivered(mixed, {0, 2}) == "The fee is 5% of the price. …乙方不得转让。"


def test_an_inch_mark_in_a_csv_row_does_not_open_a_quoted_field():
    rows = "\n".join(f'"{i}","Player {i:02d}","6\'{i % 12}\\"","{170 + i}"' for i in range(40))
    text = '"#","Name","Height","Weight"\n' + rows
    out = seg(text, kind="text")
    assert all(s.kind == "table" for s in out) and len(out) > 3
    assert sum(s.meta["table_rows"][1] for s in out) == 40  # one record a line
    assert "".join(s.sep + s.text for s in out) == text
    tsv = "part\tsize\tqty\n" + "\n".join(f'PIPE-{i:03d}\t{i % 3 + 1}" steel\t{i}' for i in range(30))
    assert all(s.kind == "table" for s in seg(tsv, kind="text"))


def test_a_crlf_source_gets_crlf_wherever_assembly_adds_a_line_break():
    rows = "".join(f"| {i} | item {i} | {i * 3} |\r\n" for i in range(60))
    text = "Stock list.\r\n\r\n| id | name | qty |\r\n|---|---|---|\r\n" + rows + "\r\nAlice: We ship the order today. It is three days late.\r\nBob: That is fine with me. Go ahead with it."
    out = seg(text, kind="markdown")
    lf = seg(text.replace("\r\n", "\n"), kind="markdown")
    assert len(out) == len(lf)  # the table cuts the same whatever its line endings
    assert [s.meta.get("table_rows") for s in out] == [s.meta.get("table_rows") for s in lf]
    tables = [s for s in out if s.kind == "table"]
    delivered = join_segments([out[0], tables[2], tables[4], out[-3], out[-1]])
    assert "\n" not in delivered.replace("\r\n", "")  # no bare line feed
    assert "[DATA_ROWS: " in delivered and "|---|---|---|\r\n" in delivered
    assert join_segments(list(out)) == text.rstrip()
    # two sentences from the middle of two lines: nothing delivered holds a CRLF, the break is still one
    mid = [s for s in out if s.meta.get("speaker") and not s.meta.get("opens_line")]
    assert join_segments(mid) == "Alice: It is three days late.\r\nBob: Go ahead with it."


def test_a_very_long_sentence_is_never_cut_inside_an_amount_or_a_clause_number():
    filler = "the insured shall pay the agreed amount to the loss adjuster in full settlement "
    for shift in range(0, 40, 3):
        text = (filler * 15)[: 1180 + shift] + " EUR 1,250,000.00 under Clause 7.2(b) within 30 days " + filler * 3
        pieces = [s.text for s in seg(text, max_sentence_chars=1200)]
        assert len(pieces) > 1
        assert any("EUR 1,250,000.00" in p for p in pieces), shift
        assert any("Clause 7.2(b)" in p for p in pieces) and any("30 days" in p for p in pieces), shift
        assert all(len(p) <= 1200 for p in pieces)


def test_a_very_long_chinese_sentence_is_cut_after_a_comma_not_inside_an_article_number():
    unit = "研究者应当在受试者出现任何可疑反应时立即记录并报告给申办方，"
    for off in range(1190, 1200):
        text = (unit * 60)[:off] + "依据第6.4条判定严重不良事件，并处人民币500万元以下罚款，" + unit * 3 + "否则不得继续给药。"
        pieces = [s.text for s in seg(text, max_sentence_chars=1200)]
        assert len(pieces) > 1
        assert all(p.endswith("，") for p in pieces[:-1]), off
        assert any("第6.4条" in p for p in pieces) and any("人民币500万元" in p for p in pieces)


def test_a_tool_answer_with_a_large_results_array_is_cut_into_its_items():
    import random

    data = {"tool": "claims_db.search", "query": "CLM-2024",
            "results": [{"claim": f"CLM-2024-{i:04d}", "amount": f"EUR {i * 1000:,}.00", "status": "rejected" if i % 7 == 0 else "paid",
                         "lines": [{"code": f"L{i}-{k}", "note": "per Clause 6.1(a) " * 3} for k in range(4)]}
                        for i in range(60)],
            "total": 60}
    for text in (json.dumps(data), json.dumps(data, indent=2)):
        out = seg(text, kind="json")
        assert len(out) > 60  # every result (and the large ones' line items) is its own segment
        assert sum(1 for s in out if '"tool"' in s.text) == 1 and sum(1 for s in out if '"total"' in s.text) == 1
        assert json.loads(join_segments(list(out))) == data
        rng = random.Random(7)
        for _ in range(40):  # any subset of the members is valid JSON holding exactly those members
            kept = [s for s in out if rng.random() < 0.3]
            if not kept:
                continue
            value = json.loads(join_segments(kept))
            # what is left out is counted in markers, so the delivered keys and items plus the counts add up
            keys_out = sum(int(k[12:-1]) for k in value if k.startswith("[JSON_KEYS: "))
            assert {k for k in value if not k.startswith("[JSON_KEYS")} <= set(data)
            assert len(value) - (keys_out > 0) + keys_out == len(data)
            results = value.get("results", [])
            items_out = [r for r in results if isinstance(r, str)]
            assert items_out == ([f"[JSON_ITEMS: {60 - len(results) + 1}]"] if len(results) - len(items_out) < 60 else [])
            for r in results[:len(results) - len(items_out)]:
                assert r in data["results"]  # a record is delivered whole
    big = {"results": [{"claim": "C-1", "lines": [{"code": f"L{k}", "note": "per Clause 6.1(a) " * 5} for k in range(80)]},
                       {"claim": "C-2", "lines": []}]}
    out = seg(json.dumps(big), kind="json")
    assert len(out) > 80  # a record over four block sizes is cut after all, down to its line items
    assert json.loads(join_segments([s for s in out if "\"L7\"" in s.text or "C-2" in s.text])) == {
        "results": [{"lines": [big["results"][0]["lines"][7], "[JSON_ITEMS: 79]"], "[JSON_KEYS: 1]": None},
                    {"claim": "C-2", "lines": []}]}


OBLIGATIONS = """The insured shall notify the insurer within 7 days, failing which cover may be reduced (Clause 7.2(b))
The insurer shall acknowledge the claim within 5 days, unless the claim is incomplete (Clause 7.3)
Proof of loss is due no later than 60 days after the loss, except with written consent (Clause 7.4)
Subrogation rights pass to the insurer on payment, except against affiliated companies (Clause 9.1)"""


def test_clause_lines_with_commas_are_prose_items_not_a_csv_table():
    out = seg(OBLIGATIONS)
    assert [s.kind for s in out] == ["sentence"] * 4  # not a "table" (same comma count on each line)
    assert [s.text for s in out] == OBLIGATIONS.split("\n")  # one item a line, not one 600-character sentence


def test_hard_wrapped_prose_is_still_read_across_lines():
    text = ("Section 12.1 Term. This Agreement starts on March 1, 2025 and runs for 36 months (the\n"
            "Initial Term). It renews automatically for successive 12-month periods unless either party\n"
            "gives at least 90 days' written notice of non-renewal.")
    assert [s.text.replace("\n", " ") for s in seg(text)] == [
        "Section 12.1 Term. This Agreement starts on March 1, 2025 and runs for 36 months (the Initial Term).",
        "It renews automatically for successive 12-month periods unless either party gives at least 90 days' "
        "written notice of non-renewal."]


POSTS = """Bangkok , Thailand : Land of Smiles - Day 1 # blog # Travel https://t.co/qxLmN6lGV4
Guy sounds like a Grade A Douche
Lockheed says F- 35 profitability is safe
Court Reinstates Man ' s $ 25 Million Award in Acne Drug Case - https://t.co/JtJEKJOcvU
The iconic " Let ' s chat later " https://t.co/OwRUomNgv0"""


def test_lines_broken_where_a_wrapped_text_would_not_are_sentences_of_their_own():
    # one post a line, most ending in a lower-case word or a link: before, the five lines were one
    # 'sentence' of 90 tokens, delivered whole or not at all. After a line of about the wrap width
    # the next word would not have fitted: that break may be a wrap, so it is read across
    lines = POSTS.split("\n")
    assert [s.text for s in seg(POSTS)] == ["\n".join(lines[:2]), lines[2], "\n".join(lines[3:])]
    # hard-wrapped e-mail with one long line (a URL): the wrap width is the lines' upper quartile, not
    # the URL's length, so "… approved by Maria" / "Kowalski …" is read across (QA: "… under purchase
    # order" was delivered without "PO-88213.")
    mail = ("The quarterly report was reviewed and approved by Maria\nKowalski on 3 March, and the supplier "
            "payment of EUR\n12,400 was released the same day under purchase order\nPO-88213. The signed copy "
            "is on the intranet at\nhttps://intranet.example.com/finance/reports/2025/q1/approvals/quarterly-"
            "report-final-v3.pdf\nand a second copy was sent to the auditors at KPMG\nFrankfurt. The invoice is "
            "not yet booked in SAP.")
    assert [s.text.replace("\n", " ") for s in seg(mail)] == [
        mail[a:b].replace("\n", " ") for a, b in split_sentences(mail.replace("\n", " "))]
    # a clause that needs the next line, a line that goes on with the one before, an address
    for text in ("Requests above 600 per minute are rejected with HTTP 429\nUnless the key belongs to an "
                 "Enterprise plan\nIn which case the limit is 6000 per minute.",
                 "Acme Logistics GmbH Receiving Department Dock 4\nHamburger Strasse 117\n20095 Hamburg\nGermany"):
        assert [s.text for s in seg(text)] == [text]
    # text wrapped to a width breaks only where the next word does not fit: read across lines as before
    import textwrap

    prose = ("The supplier shall deliver the goods to the site named in Schedule 2 within thirty days of the "
             "order. Late delivery gives the buyer a credit of 2% of the order value per week of delay, capped "
             "at 10%. Acme Logistics GmbH carries the goods at its own risk until they are unloaded.")
    wrapped = textwrap.fill(prose, 64)
    assert wrapped.count("\n") >= 4
    assert [s.text.replace("\n", " ") for s in seg(wrapped)] == [prose[a:b] for a, b in split_sentences(prose)]
    # a short title line stays with the lines it titles
    manual = ("3.1 Backups\nBack up /var/lib/odcf before every upgrade; a failed migration cannot be rolled back.\n"
              "3.2 Running the migration\nRun odcf migrate --to 4.2 and check that it exits with code 0.")
    assert any(s.text.startswith("3.2 Running the migration\nRun odcf migrate") for s in seg(manual))


def test_a_long_code_block_delivered_in_parts_stays_fenced_with_its_omitted_lines_counted():
    lines = [f"2024-05-01 12:00:{k:02d} INFO worker-{k} processed batch {k} of the nightly job without errors"
             for k in range(120)]
    text = "Intro line.\n\n```log\n" + "\n".join(lines) + "\n```\n\nAfter."
    out = seg(text)
    code = [s for s in out if s.kind == "code"]
    assert len(code) > 3 and join_segments(list(out)) == text
    middle = join_segments([code[1]])
    first, count = code[1].meta["code_lines"]
    assert middle.startswith(f"```log\n[CODE_LINES: {first - 1}]\n") and middle.endswith(
        f"\n[CODE_LINES: {122 - first - count - 1}]\n```")
    gap = join_segments([code[0], code[2]])
    assert f"\n[CODE_LINES: {code[2].meta['code_lines'][0] - sum(code[0].meta['code_lines'])}]\n" in gap
    assert gap.startswith("```log\n") and gap.endswith("```") and gap.count("```") == 2
    tail = join_segments([code[-1]])  # the last part holds the closing fence itself
    assert tail.startswith("```log\n[CODE_LINES: ") and tail.count("```") == 2


def test_a_two_column_glossary_csv_is_a_table_and_wrapped_prose_runs_on():
    gloss = ("term,definition\nInvoice,a document the supplier sends to request payment for delivered goods\n"
             "Credit note,a document that reduces the amount the customer owes to the supplier\n"
             "Net 30,payment is due thirty days after the date of the invoice\n")
    assert [s.kind for s in seg(gloss)] == ["table"]
    wrapped = ("The Supplier shall pay a penalty of EUR 10,000 to\nAcme Logistics GmbH if delivery is later than "
               "30 days after the Effective\nDate of this Agreement or any Order placed under it.")
    assert [s.text for s in seg(wrapped)] == [wrapped]


def test_a_code_block_run_to_the_end_counts_a_last_line_of_the_other_fence_as_code():
    body = "\n".join(f"line {k} of a long unterminated block with some words in it" for k in range(80))
    text = "```\n" + body + "\n~~~"
    code = [s for s in seg(text) if s.kind == "code"]
    assert len(code) > 2 and not code[0].meta["code_closed"]
    first, count = code[0].meta["code_lines"]
    # everything after the first part is left out: the 80 lines + the ~~~ line, less the ones shown
    assert join_segments([code[0]]).endswith(f"\n[CODE_LINES: {82 - first - count}]\n```")


def test_pieces_of_one_long_word_with_the_middle_left_out_are_not_joined_as_one_word():
    blob = "".join(chr(65 + (k * 7) % 26) for k in range(3000))
    out = seg("Data: " + blob)
    assert len(out) > 2 and join_segments(list(out)) == "Data: " + blob
    assert join_segments([out[0], out[-1]]) == out[0].text + " … " + out[-1].text
    # adjacent pieces join as written; the parts after them left out are marked
    assert join_segments([out[0], out[1]]) == out[0].text + out[1].text + " …"


def test_a_csv_file_whose_cells_are_prose_is_still_a_table():
    desc = ("This park has {n} glaciers and {n}0 named lakes under tall peaks. There are historic hotels and a "
            "landmark road in this region. Wildlife includes grizzly bears, bighorn sheep and gray wolves.")
    rows = [f'"Park {n}","State {n}\n{n}°N {n}°W","May {n}, 19{n:02d}","{n},000 acres","{desc.format(n=n)}"'
            for n in range(1, 25)]
    text = '"Name","Location","Date established","Area","Description"\n' + "\n".join(rows) + "\n"
    as_text = Segmenter()(Document.from_sources([Source(id="a", text=text)]), PLAN).segments
    assert any(s.kind == "sentence" for s in as_text)  # without the file name: read as prose, as before
    for name in ("parks.csv", "PARKS.CSV"):
        out = Segmenter()(Document.from_sources([Source(id="a", text=text, origin=name)]), PLAN).segments
        assert {s.kind for s in out} == {"table"} and len(out) > 1
        assert sum(s.meta["table_rows"][1] for s in out) == 24  # every record whole, none split
        assert "".join(s.sep + s.text for s in out) == text.rstrip("\n")
    tsv = "a\tb\n" + "\n".join(f"row {n} is a long sentence of prose. It goes on.\t{n}" for n in range(5))
    out = Segmenter()(Document.from_sources([Source(id="t", text=tsv, origin="x.tsv")]), PLAN).segments
    assert {s.kind for s in out} == {"table"}
    ragged = "a,b\n1,2\n3\n4,5\n"  # a short row: still a table, the row kept as it is
    out = Segmenter()(Document.from_sources([Source(id="r", text=ragged, origin="x.csv")]), PLAN).segments
    assert [(s.kind, s.text, s.meta["table_rows"]) for s in out] == [("table", ragged.rstrip(), [0, 3])]


def test_a_csv_file_with_escaped_quotes_blank_lines_in_cells_and_ragged_rows_is_cut_on_records():
    # as WikiTableQuestions writes its files (204-csv/50.csv): every cell quoted, a quote inside a cell
    # escaped with a backslash, cells over several lines, some with blank lines between them
    import csv
    import io

    rows = [f'"{n}","Line {n}","Local","Naylor Road station\nstop {n} (AM End)","Some trips end at:\n\n'
            f'Stop {n}\nNotes {n}","A prior \\"incarnation\\" of the {n} ran until 19{n:02d}"' for n in range(30)]
    rows[7] = '"7","Short Line","Local"'  # a short row
    rows[12] = '"12","Long Line","Local","a","b","c","an extra cell"'  # a row with an extra cell
    text = '"Route","Name","Fare Type","Terminal","Notes","History"\n' + "\n".join(rows) + "\n"
    out = Segmenter()(Document.from_sources([Source(id="bus", text=text, origin="data/bus.csv")]), PLAN).segments
    assert {s.kind for s in out} == {"table"} and len(out) > 3
    assert [s.meta["table_rows"] for s in out][0][0] == 0 and sum(s.meta["table_rows"][1] for s in out) == 30
    assert "".join(s.sep + s.text for s in out) == text.rstrip("\n")
    for s in out[1:]:  # every part is whole records: no quoted cell cut, no orphan fragment
        parsed = list(csv.reader(io.StringIO(s.text), strict=True, escapechar="\\"))
        assert len(parsed) == s.meta["table_rows"][1] and all(r[0].isdigit() for r in parsed)
        assert all(r in s.text for r in (rows[k] for k in range(*_span(s.meta["table_rows"]))))
    # a part delivered alone: under the header, its rows verbatim, the rows left out counted
    part = out[4]
    first, n = part.meta["table_rows"]
    assert join_segments([part]) == (text.split("\n")[0] + f"\n[DATA_ROWS: {first}]\n" + "\n".join(rows[first:first + n])
                                     + f"\n[DATA_ROWS: {30 - first - n}]")
    # a .csv that does not parse (a quote never closed) is read as before, as if it had no name
    broken = 'id,name,note\n1,a,"never closed\n2,b,x\n3,c,y\n4,d,z\n'
    named = Segmenter()(Document.from_sources([Source(id="b", text=broken, origin="b.csv")]), PLAN).segments
    plain = Segmenter()(Document.from_sources([Source(id="b", text=broken)]), PLAN).segments
    assert [(s.kind, s.text) for s in named] == [(s.kind, s.text) for s in plain]
    # nor is a .csv whose lines do not share a width: prose with commas
    prose = "We met on Monday, then again.\nIt rained.\nThe fee is due, in full, on Friday.\nDone.\n"
    named = Segmenter()(Document.from_sources([Source(id="p", text=prose, origin="notes.csv")]), PLAN).segments
    assert "table" not in {s.kind for s in named}


def _span(rows):
    return rows[0], rows[0] + rows[1]


def test_a_chat_log_whose_messages_run_over_paragraphs_labels_every_part_with_its_turn():
    text = ("user: Book me a flight from JFK to SEA on May 20.\n\n"
            "assistant: Here are the direct flights on May 20:\n\n1. HAT100 at 08:00, $250\n2. HAT101 at 09:00, $270\n"
            "3. HAT102 at 10:00, $290\n\nPlease tell me which one you want.\n\n"
            "assistant: Here are the one-stop flights on May 20:\n\n1. HAT136 via ATL, $152\n2. HAT218 via ATL, $158\n"
            "3. HAT300 via ORD, $199\n\nuser: I will take HAT136.\n\ntool:\n\nBooked reservation ZFA04Y for $152.\n")
    out = seg(text)
    turns = {s.text: (s.meta.get("speaker"), s.meta.get("turn")) for s in out}
    assert turns["Please tell me which one you want."] == ("assistant:", 1)
    assert {s.meta.get("turn") for s in out if "HAT136 via" in s.text} == {2}
    assert [s.text for s in out if s.meta.get("label_only")] == ["tool:"]
    # the one-stop list delivered without its lead-in nor the turn's first line: a new "assistant:" turn
    one_stop = next(s for s in out if "HAT136 via ATL" in s.text)
    joined = join_segments([out[1], one_stop])
    assert joined.endswith("\nassistant: " + one_stop.text) or joined.endswith("\n\nassistant: " + one_stop.text)
    please = next(s for s in out if s.text.startswith("Please tell me"))
    # same turn: no label again, and the paragraph break of the source
    assert join_segments([out[1], please]) == out[1].text + "\n\n" + please.text
    # a transcript of one line a turn (no message over paragraphs) is not a chat log of turns
    assert all("turn" not in s.meta for s in seg("Alice: We ship today.\nBob: Fine.\nAlice: Good.\nBob: Bye.\n"))


def test_a_chat_pasted_with_blank_lines_between_one_paragraph_messages_has_turns():
    # QA2 finding 2: "user: …" / "assistant: …" messages one paragraph each, blank lines between (how chat logs are
    # pasted), got no speaker: no user's constraint, no correction of a user's earlier value applied
    out = seg("user: A team offsite in Porto for 6 people.\n\nassistant: Happy to help. What is the budget?\n\n"
              "user: The total budget is under EUR 4,500. Put the kickoff at 10:00.\n\nassistant: Noted.\n\n"
              "user: Actually, budget is now EUR 5,200.\n")
    assert [(s.meta.get("speaker"), s.meta.get("turn")) for s in out] == [
        ("user:", 0), ("assistant:", 1), ("assistant:", 1), ("user:", 2), ("user:", 2), ("assistant:", 3), ("user:", 4)]
    # names taking turns one paragraph each are a chat where the source is declared one (kind: chat), and
    # labelled paragraphs of a document ("Note:", "Tip:") are none
    names = "Alice: We ship today.\n\nBob: Fine.\n\nAlice: Good. It is late.\n\nBob: Bye.\n"
    assert [s.meta.get("speaker") for s in seg(names, kind="chat")] == ["Alice:", "Bob:", "Alice:", "Bob:"]
    assert not [s for s in seg(names) if "speaker" in s.meta]
    assert not [s for s in seg(names.replace("Alice", "Note").replace("Bob", "Tip")) if "speaker" in s.meta]


REPORT = ("# Weekly claims operations report\n\n## Team A\n\nStatus: green. Backlog 41 claims, 3 over SLA.\n\n"
          "The new intake form went live on Monday.\n\n## Team B\n\nStatus: amber. Backlog 77 claims, 12 over SLA.\n\n"
          "Two adjusters are on leave until 14 October.\n\n## Fraud referrals\n\n"
          "Payment on CLM-2025-05980 must not be released until SIU closes it.\n\n## Team C\n\n"
          "Status: red. Backlog 130 claims, 40 over SLA.\n\nOvertime approved up to 120 hours.\n")


def test_a_field_opening_a_paragraph_under_each_heading_is_no_speaker_and_a_heading_ends_a_turn():
    # QA: a weekly report's "Status: …" under three headings was read as a chat of "Status:" turns that
    # ran over every later heading; with the Team B line left out, the next section was written
    # "Status: ## Fraud referrals", its paragraph read as Team B's status
    out = seg(REPORT)
    assert not [s.text for s in out if "speaker" in s.meta or "turn" in s.meta]
    keep = {s.index for s in out if s.text.startswith(("# Weekly", "Two adjusters", "## Fraud", "Payment on"))}
    assert _delivered(out, keep) == ("# Weekly claims operations report\n\nTwo adjusters are on leave until 14 October."
                                     "\n\n## Fraud referrals\n\nPayment on CLM-2025-05980 must not be released until "
                                     "SIU closes it.")
    # two fields under each heading take turns ("Owner:", "Status:", "Owner:" …) and still speak for no one
    fields = "".join(f"## Team {t}\n\nOwner: {o}.\n\nStatus: {c}.\n\nBacklog {n} claims.\n\n"
                     for t, o, c, n in (("A", "Kim", "green", 41), ("B", "Ravi", "amber", 77), ("C", "Ana", "red", 130)))
    assert not [s.text for s in seg(fields) if "turn" in s.meta]
    # speakers taking turns under one heading are a chat; a heading in a message ends its turn and is
    # never written after a label
    chat = seg("# Transcript\n\nAlice: Which claims are late?\n\nBob: Three of them:\n\n- CLM-1\n- CLM-2\n\n"
               "Alice: Pay CLM-1 today.\n\n## Follow-up\n\nBob: Done.\n\nNothing else is open.\n")
    turns = {s.text: s.meta.get("speaker") for s in chat}
    assert turns["- CLM-1"] == "Bob:" and turns["Alice: Pay CLM-1 today."] == "Alice:"
    assert turns["## Follow-up"] is None and turns["Nothing else is open."] == "Bob:"
    follow = [s.index for s in chat if s.text in ("Alice: Which claims are late?", "## Follow-up")]
    assert _delivered(chat, set(follow)) == "Alice: Which claims are late?\n\n## Follow-up"
    # a chat with an agent whose message holds a heading: the parts before it keep their turn
    agent = seg("user: Plan two days in Lyon.\n\nassistant: Here is a plan.\n\n## Day 1\n\nVisit the old town.\n\n"
                "user: Shorter, please.\n\nassistant: Sure.\n\nOne day only.\n")
    turns = {s.text: s.meta.get("speaker") for s in agent}
    # (QA 3 finding 7: and so do the parts under it, the heading being a part of the assistant's message)
    assert turns["One day only."] == "assistant:" and turns["## Day 1"] is None
    assert turns["Visit the old town."] == "assistant:"
    # whatever the segmenter says, no label is written onto a heading
    said = [dataclasses.replace(s, meta={**s.meta, "speaker": "Status:", "turn": 0}) if s.index else s
            for s in out if s.text.startswith(("# Weekly", "## Fraud", "Payment on"))]
    assert _delivered(said, {s.index for s in said}).split("\n\n")[1] == "## Fraud referrals"


def test_chat_lines_with_time_stamps_are_transcript_lines_and_log_lines_stay_a_log():
    lines = ["[14:06] priya: paged for checkout-api 503s, looking",
             "[14:12] marco: should I bounce pgbouncer-lb-01?",
             "[14:12] dana (dba): NO. do not restart pgbouncer while clients are attached. It will stampede pg-primary-03.",
             "[14:13] dana (dba): unless you drain checkout-api first",
             "[14:19] marco: restarted pgbouncer-lb-01 anyway, sorry, drain was too slow"]
    for stamp in ("[14:06] ", "[2024-05-03 14:06] ", "14:06 "):  # each line's own time in that format
        text = "\n".join(stamp.replace("14:06", ln[1:6]) + ln[8:] for ln in lines)
        out = seg(text)
        assert "".join(s.sep + s.text for s in out) == text
        assert len({s.paragraph for s in out}) == 5 and {s.kind for s in out} == {"sentence"}, stamp
        assert [s.meta["speaker"] for s in out if s.meta.get("opens_line")] == [
            "priya:", "marco:", "dana (dba):", "dana (dba):", "marco:"]
        dba = [s for s in out if s.meta["speaker"] == "dana (dba):"]
        assert dba[0].text.startswith(stamp.replace("14:06", "14:12") + "dana (dba): NO.")  # the time kept, verbatim
        # the DBA's second sentence delivered without the first: on its own line, after the name
        assert _delivered(out, {out.index(dba[1]), out.index(dba[2])}) == (
            "dana (dba): It will stampede pg-primary-03.\n" + dba[2].text)
    after = seg("\n".join(f"{ln[8:].split(':')[0]} {ln[:7]}:{ln[8:].split(':', 1)[1]}" for ln in lines))
    assert after[0].text.startswith("priya [14:06]: paged")  # the time after the name: "priya [14:06]: ..."
    assert [s.meta["speaker"] for s in after if s.meta.get("opens_line")][2:4] == ["dana (dba):", "dana (dba):"]
    # log lines that open with a time stamp stay a log, an entry a piece: a log level, or a date not in
    # brackets, is no chat
    for log in ("\n".join(f"2024-05-15 10:02:1{i} INFO worker: step {i} of the job is done" for i in range(6)),
                "\n".join(f"[2024-05-15 10:02:1{i}] WARN worker: step {i} of the job is slow" for i in range(6))):
        assert [(s.kind, s.meta.get("speaker")) for s in seg(log)] == [("list", None)] * 6


def test_a_chat_turn_is_never_delivered_as_its_bare_label_nor_under_another_turns_lead_in(plan=None):
    from odcf.compressor import Compressor
    from odcf.plan.model import RoleContract

    text = ("user: Book me a flight from JFK to SEA on May 20.\n\n"
            "assistant: Here are the direct flights on May 20:\n\n1. HAT100 at 08:00, $250\n2. HAT101 at 09:00, $270\n"
            "3. HAT102 at 10:00, $290\n\nPlease tell me which one you want.\n\n"
            "assistant: Here are the one-stop flights on May 20:\n\n1. HAT136 via ATL, $152\n2. HAT218 via ATL, $158\n"
            "3. HAT300 via ORD, $199\n\nuser: I will take HAT136.\n\ntool:\n\nBooked reservation ZFA04Y for $152.\n")
    plan = Plan(domain="t", roles={"default": RoleContract("default", 400)})
    comp = Compressor(plan, stages={"rules": False, "fold": False, "entities": False,
                                    "rerank": {"embedder": "hash", "first_pass": "lexical"}})
    for budget in range(15, 120, 6):
        r = comp.compress(text, query="which one-stop flight via ATL was booked", budget=budget, annotate=False)
        lines = r.text.split("\n")
        assert "tool:" not in [ln.strip() for ln in lines] or "Booked reservation" in r.text, r.text
        for k, ln in enumerate(lines):
            if "HAT136 via ATL" in ln:  # under its own turn's lead-in or a new assistant label, never the direct list's
                above = [x for x in lines[:k + 1] if x.startswith("assistant:") or x.startswith("user:")]
                assert above and ("one-stop" in above[-1] or above[-1] == "assistant: " + ln.split("assistant: ")[-1]), r.text


def test_an_indented_traceback_with_commas_is_not_a_csv_table():
    tb = "Traceback (most recent call last):\n" + "\n".join(
        f'  File "/repo/pkg/mod_{i}.py", line {i * 3}, in run_{i}' for i in range(6)) + "\nValueError: bad value\n"
    assert not any(s.kind == "table" for s in seg(tb))
    csv_text = "name,line,function\n" + "\n".join(f"/repo/pkg/mod_{i}.py,{i * 3},run_{i}" for i in range(6))
    assert {s.kind for s in seg(csv_text)} == {"table"}


def test_source_code_and_numbered_listings_outside_fences_are_code_in_whole_lines():
    listing = "\n".join(["16:", "17:result = np.array_equal(ds.pixel_array, pixel_array)",
                         '18:print("Script completed successfully, no errors. Result:", result)'] +
                        [f"{n}:    value_{n} = compute({n}).  # step {n}. done" for n in range(19, 30)])
    out = seg("$ open reproduce.py\n[File: /repo/reproduce.py (18 lines total)]\n" + listing +
              "\n\nThe script fails on the float pixel data. We fix the numpy handler in the next step.")
    code = [s for s in out if s.kind == "code"]
    assert code and all(line in listing.split("\n") or line.startswith(("$", "[File"))
                        for s in code for line in s.text.split("\n"))
    assert '18:print("Script completed successfully, no errors. Result:", result)' in "\n".join(s.text for s in code)
    assert [s.text for s in out if s.kind == "sentence"] == ["The script fails on the float pixel data.",
                                                             "We fix the numpy handler in the next step."]
    tb = ('$ python run.py\nTraceback (most recent call last):\n  File "run.py", line 3, in <module>\n'
          "    main()\nValueError: bad value. Try again.")
    assert [s.kind for s in seg(tb)] == ["code"]
    prose = "The committee met on Monday. It approved the budget.\nThe chair thanked everyone. The meeting ended."
    assert all(s.kind == "sentence" for s in seg(prose))


EMAIL = ("From: Lina Park (HR)\nTo: Sam Ortega\nDate: 3 June 2024\n\n"
         "Sam, your request to carry over 20 days of PTO is denied. Policy HR-310 caps carry-over at 5 days.\n\n"
         "> On 31 May 2024 Raj Menon (Manager) wrote:\n"
         "> Sam, don't worry about the cap. I approve the carry-over of all 20 days. HR\n"
         "> will process it.\n>\n"
         "> > On 30 May 2024 Sam Ortega wrote:\n> > Can I carry over all 20 days?\n"
         "> Thanks, Raj\n")


def test_quoted_lines_are_cut_in_whole_lines_that_keep_their_markers():
    out = seg(EMAIL)
    assert "".join(s.sep + s.text for s in out) == EMAIL.rstrip()
    quoted = [s for s in out if s.meta.get("quote")]
    assert [(s.text, s.meta["quote"], bool(s.meta.get("quote_head"))) for s in quoted] == [
        ("> On 31 May 2024 Raj Menon (Manager) wrote:", 1, True),
        ("> Sam, don't worry about the cap. I approve the carry-over of all 20 days. HR\n> will process it.", 1, False),
        ("> > On 30 May 2024 Sam Ortega wrote:", 2, True),
        ("> > Can I carry over all 20 days?", 2, False),
        ("> Thanks, Raj", 1, False)]
    source_lines = set(EMAIL.split("\n")) | {"> …", "> > …"}  # or the mark of quoted lines left out
    for k in range(1 << len(quoted)):  # any subset delivered: every line is a whole line of the source
        body = join_segments([s for j, s in enumerate(quoted) if k >> j & 1])
        assert all(ln in source_lines for ln in body.split("\n")), body
    # the attribution written above the quote ("On … wrote:", wrapped as mail clients do) heads it too
    gmail = seg("Fine by me.\n\nOn Fri, 31 May 2024 at 09:02, Raj Menon <raj@example.com>\nwrote:\n\n> I approve it.\n")
    assert [(s.text, s.meta.get("quote"), s.meta.get("quote_head")) for s in gmail] == [
        ("Fine by me.", None, None),
        ("On Fri, 31 May 2024 at 09:02, Raj Menon <raj@example.com>\nwrote:", 0, True),
        ("> I approve it.", 1, None)]
    assert gmail[1].meta["quote_block"] == gmail[2].meta["quote_block"]


def test_quoted_lines_left_out_between_two_delivered_are_marked_in_the_quote_s_own_style():
    # QA: "> … by 30 June." and "> Please note we cannot ship …" were delivered one under the other, the
    # line between them ("> … a credit of £4,000 …") left out unsaid: the quote read as continuous; and
    # a blank line stood between "… wrote:" and the first delivered quoted line
    mail = ("Agreed.\n\nOn Tue, 3 Jun 2025 at 10:00, Ana Ruiz <ana@example.com> wrote:\n"
            "> Hi Ben,\n>\n> The parts ship on 12 June.\n> We also offer a discount of 5%.\n"
            "> Shipping waits for the export licence.\n>\n> > On Mon, 2 Jun 2025 Ben Cole wrote:\n"
            "> > When do the parts ship?\n> > Is anything blocking it?\n")
    out = seg(mail)
    by_text = {s.text.split("\n")[0][:14]: s for s in out}
    head, ship, licence = by_text["On Tue, 3 Jun "], by_text["> The parts sh"], by_text["> Shipping wai"]
    assert join_segments([head, ship, licence]) == (
        "On Tue, 3 Jun 2025 at 10:00, Ana Ruiz <ana@example.com> wrote:\n> …\n> The parts ship on 12 June.\n"
        "> …\n> Shipping waits for the export licence.")
    nested, blocking = by_text["> > On Mon, 2 "], by_text["> > Is anythin"]
    assert join_segments([head, ship, nested, blocking]).endswith(
        "> The parts ship on 12 June.\n> …\n> > On Mon, 2 Jun 2025 Ben Cole wrote:\n> > …\n> > Is anything blocking it?")
    # lines delivered one after another in the source: no mark; a blank line under the attribution is kept
    assert join_segments([head, by_text["> Hi Ben,"], ship]) == (
        "On Tue, 3 Jun 2025 at 10:00, Ana Ruiz <ana@example.com> wrote:\n> Hi Ben,\n>\n> The parts ship on 12 June.")
    spaced = seg("Agreed.\n\nOn Tue, 3 Jun 2025 Ana Ruiz wrote:\n\n> Hi Ben.\n> The parts ship on 12 June.\n")
    assert join_segments([spaced[1], spaced[3]]) == "On Tue, 3 Jun 2025 Ana Ruiz wrote:\n\n> …\n> The parts ship on 12 June."


def test_email_header_fields_are_header_lines_not_speaker_labels():
    out = seg(EMAIL)
    assert all("speaker" not in s.meta for s in out)
    assert [(s.text, s.meta.get("mail_field"), s.paragraph) for s in out[:3]] == [
        ("From: Lina Park (HR)", "from", 0), ("To: Sam Ortega", "to", 0), ("Date: 3 June 2024", "date", 0)]
    # a message quoted whole below a reply: its separator line opens its header
    thread = seg("Thanks.\n-----Original Message-----\nFrom: Raj Menon\nSent: 30 May 2024 09:02\n"
                 "Cc: HR Helpdesk <hr@example.com>,\n    Payroll <pay@example.com>\n\nYou get 20 weeks.")
    assert [(s.text, s.meta.get("mail_field"), s.meta.get("mail")) for s in thread] == [
        ("Thanks.", None, None), ("-----Original Message-----", "separator", 1), ("From: Raj Menon", "from", 1),
        ("Sent: 30 May 2024 09:02", "sent", 1),
        ("Cc: HR Helpdesk <hr@example.com>,\n    Payroll <pay@example.com>", "cc", 1),
        ("You get 20 weeks.", None, None)]
    # a transcript is still one: speakers keep their labels
    assert [s.meta.get("speaker") for s in seg("Alice: We ship today.\nBob: Fine by me.\n")] == ["Alice:", "Bob:"]
    # a quoted line delivered without its chat turn's first line: the label goes on a line of its own
    chat = seg("user: Did Raj approve it?\n\nassistant: Here is his answer.\n\n> I approve it.\n\n"
               "user: Thanks.\n\nassistant: You are welcome.\n", kind="chat")
    quote = next(s for s in chat if s.meta.get("quote"))
    assert join_segments([chat[0], quote]) == "user: Did Raj approve it?\nassistant:\n> I approve it."


def test_a_long_list_is_cut_in_whole_items_and_items_left_out_are_marked():
    steps = "\n".join(f"{k}. Check the dashboard panel {k} for node redis-cache-{k:02d} and record the memory "
                      f"usage in the ticket." for k in range(1, 21) if k != 13)
    steps = steps.replace("12. Check", "12. Check").replace(
        "14. Check", "13. DO NOT flush redis-cache-07 unless the primary is fenced.\n  It caused INC-18822.\n14. Check")
    text = "Follow these steps in order:\n\n" + steps
    out = Segmenter()(Document.from_sources([Source(id="a", text=text)]), PLAN).segments
    parts = [s for s in out if s.kind == "list"]
    assert len(parts) > 3 and all(s.meta["list_total"] == 20 for s in parts)
    assert [s.meta["list_items"][0] for s in parts] == sorted(s.meta["list_items"][0] for s in parts)
    assert sum(s.meta["list_items"][1] for s in parts) == 20
    for s in parts:  # whole items: an indented line stays with its item
        assert s.text.lstrip()[0].isdigit() and "\n  It caused" not in s.text.replace("fenced.\n  It", "")
    (p13,) = [s for s in parts if "DO NOT flush" in s.text]
    assert "It caused INC-18822." in p13.text
    lead = out[0]
    alone = join_segments([p13])
    k = p13.meta["list_items"]
    assert alone == f"{items_mark(k[0])}\n{p13.text}\n{items_mark(20 - k[0] - k[1])}"
    first, last = parts[0], parts[-1]
    assert join_segments([lead, first, last]).count("[…") == 1  # the middle, between them
    assert join_segments(list(out)) == text  # all delivered: as written, no marker


def test_a_marked_list_whose_items_open_alike_is_cut_in_items_and_a_stamped_log_is_not():
    rules = "\n".join(f"- Operators must not change setting number {k} of the production database without a ticket."
                      for k in range(12))
    out = seg("Rules:\n\n" + rules)
    assert len([s for s in out if s.kind == "list"]) > 1 and all(s.meta.get("list_total") == 12 for s in out[1:])
    log = "\n".join(f"- 2024-05-01 10:00:{i:02d} INFO worker-3 processed item {i} of the nightly run" for i in range(12))
    assert [s.kind for s in seg(log)] == ["list"]  # one run of lines, for the fold stage


def test_a_quote_without_full_stops_is_cut_in_pieces_of_whole_lines_of_a_few_hundred_characters():
    quote = "\n".join(f"> line {k} of a hard-wrapped reply that never ends a sentence and goes on and on" for k in range(40))
    out = seg("On Mon, 3 Jun 2024 Raj wrote:\n" + quote)
    parts = [s for s in out if s.meta.get("quote") and not s.meta.get("quote_head")]
    assert len(parts) > 5 and all(len(s.text) <= 400 for s in parts)
    assert all(ln.startswith("> ") for s in parts for ln in s.text.split("\n"))


def test_whatsapp_lines_are_transcript_lines_and_a_message_s_next_line_keeps_its_speaker():
    wa = ("03/05/2024, 14:02 - Priya: is the failover approved?\n03/05/2024, 14:03 - Dana: NO. not yet\n"
          "03/05/2024, 14:05 - Dana: the replica is behind by 2GB\n[03/05/2024, 14:22:10] Priya: thanks\n"
          "[3/5/24, 2:23:11 PM] Dana: wait, NOT approved, lag is back to 30s\n")
    out = seg(wa)
    assert [s.meta.get("speaker") for s in out if s.meta.get("opens_line")] == [
        "Priya:", "Dana:", "Dana:", "Priya:", "Dana:"]
    assert all(s.kind == "sentence" for s in out)  # not one log block folded under a date prefix
    # a message over two lines: the second is Dana's, and is written after her label when delivered alone
    slack = ("[10:01] priya: I checked pg-replica-02, its lag is 0 and it is healthy.\n"
             "[10:04] dana (dba): ok, thanks for checking that one, I am on the other boxes now.\n"
             "pg-replica-07 is corrupted, its WAL replay stopped at 09:58.\n[10:05] marco: noted.\n")
    out = seg(slack)
    (second,) = [s for s in out if s.text.startswith("pg-replica-07")]
    assert second.meta.get("speaker") == "dana (dba):" and not second.meta.get("opens_line")
    assert join_segments([out[0], second]).endswith("\ndana (dba): pg-replica-07 is corrupted, its WAL replay stopped at 09:58.")
    (marco,) = [s for s in out if "noted" in s.text]
    assert marco.text == "[10:05] marco: noted." and marco.meta.get("speaker") == "marco:"
    # a log stays a log
    log = "\n".join(f"2024-05-15 10:02:{i:02d} worker-3: processed item {i}" for i in range(6))
    assert [(s.kind, s.meta.get("speaker")) for s in seg(log)] == [("list", None)] * 6


def test_list_items_ending_in_semicolons_are_a_list_not_code():
    items = [f"{chr(97 + k)}) loss or damage under event {k + 1} if the home has been unoccupied for more "
             f"than {30 + k} consecutive days immediately before the loss;" for k in range(12)]
    text = "We will not pay for:\n\n" + "\n".join(items)
    out = seg(text)
    assert "code" not in {s.kind for s in out}
    parts = [s for s in out if s.kind == "list"]
    assert len(parts) > 2 and all(s.meta.get("list_items") for s in parts)  # cut in whole items
    # C-like code still is code: statements ending in ";" and blocks opening with "{"
    code = "int total = 0;\nfor (int i = 0; i < n; i++) {\n    total += items[i].price;\n}\nprintf(\"%d\", total);"
    assert [s.kind for s in seg("Intro.\n\n" + code)] == ["sentence", "code"]
    css = "body {\n  color: red;\n  margin: 0 auto;\n  font-family: Arial, Helvetica, Liberation Sans, sans-serif;\n}"
    assert [s.kind for s in seg("Intro.\n\n" + css)] == ["sentence", "code"]


def test_unfenced_sql_c_and_php_stay_code_and_items_under_their_lead_in_are_a_list():
    for code in ("BEGIN;\nALTER TABLE orders ADD COLUMN refund_reason TEXT;\nGRANT SELECT ON orders TO reporting_user;\n"
                 "DROP TABLE IF EXISTS orders_old;\nCOMMIT;",
                 "static unsigned int retry_count;\nextern unsigned long long int total_bytes;\nstatic char last_error;",
                 "namespace App\\Http\\Controllers;\nuse App\\Http\\Requests\\StoreOrderRequest;\nuse Illuminate\\Support\\Str;"):
        assert [s.kind for s in seg("Intro sentence here.\n\n" + code)] == ["sentence", "code"], code
    items = "\n".join(f"({chr(97 + k)}) any loss of profits, revenue or goodwill arising from event {k};" for k in range(8))
    out = seg("The Supplier shall not be liable under this Agreement for:\n" + items)  # no blank line
    assert [s.kind for s in out][0] == "sentence" and {s.kind for s in out[1:]} == {"list"}
    assert out[0].text == "The Supplier shall not be liable under this Agreement for:"


def test_a_footnote_line_opening_with_its_mark_is_a_sentence_of_its_own():
    text = ("Q3 revenue was reduced by £6.3m. See note 2.\n² Adjusted measures exclude impairment. They are not "
            "defined under IFRS.\n³ Exceptional items comprise £3.1m of restructuring costs. † Not audited.")
    got = [text[a:b] for a, b in split_sentences(text)]
    assert got[1:] == ["See note 2.", "² Adjusted measures exclude impairment.", "They are not defined under IFRS.",
                       "³ Exceptional items comprise £3.1m of restructuring costs.", "† Not audited."]


def test_labelled_lines_that_go_on_with_other_labels_are_a_form_not_a_mail_header():
    leg = "**From:** London Heathrow (LHR)\n**To:** New York JFK\n**Date:** 12 May 2024\n**Flight:** BA 117, seat 32A"
    assert not any(s.meta.get("mail_field") for s in seg("## Outbound flight\n\n" + leg + "\n\nCheck in early."))
    mail = "**From:** Marcus Hale (customer)\n**Date:** 2025-05-06 09:22 UTC\n\nYes, we send the header."
    assert [s.meta.get("mail_field") for s in seg(mail)][:2] == ["from", "date"]


def test_a_field_under_a_labelled_line_is_never_delivered_after_that_label():
    # QA: "Buyer: Contract: HC-2024-0415. Terms: CIF Qingdao" — the form's next field was read as the
    # next line of Buyer's message, and delivered after Buyer's label; the source never says that
    form = ("Seller: Kasumi Machine Tools Co., Ltd., Tokyo, Japan\n"
            "Buyer: Qingdao Haichuan Precision Machinery Co., Ltd., Qingdao, China\n"
            "Invoice date: April 26, 2024. Contract: HC-2024-0415. Terms: CIF Qingdao (Incoterms 2020).\n"
            "Payment: 30% advance by T/T; balance due 60 days after B/L date.")
    out = seg(form)
    assert "".join(s.sep + s.text for s in out) == form
    for keep in range(len(out)):
        assert "Buyer: Invoice" not in _delivered(out, {keep}) and "Buyer: Contract" not in _delivered(out, {keep})
    contract = next(i for i, s in enumerate(out) if s.text.startswith("Contract:"))
    assert _delivered(out, {contract}) == "Contract: HC-2024-0415. Terms: CIF Qingdao (Incoterms 2020)."
    # a message's next line of words is still the speaker's
    chat = seg("Alice: I checked the logs. Nothing odd.\nThe error is in the billing module.\nBob: Thanks.")
    assert [s.meta.get("speaker") for s in chat if s.text.startswith("The error")] == ["Alice:"]


def test_a_bare_negation_ending_a_paragraph_goes_with_the_sentence_before_it():
    out = seg("Interstitial lung disease of any grade: permanently discontinue. Do not rechallenge.\n\n"
              "The next paragraph starts here. Ok.")
    assert [s.text for s in out] == [
        "Interstitial lung disease of any grade: permanently discontinue. Do not rechallenge.",
        "The next paragraph starts here.", "Ok."]


def test_a_prohibition_of_only_what_the_sentence_before_names_ending_a_paragraph_goes_with_it():
    # QA round 3: "Do not reuse the old unit." (six words, so not "very short") was left out while
    # "Sensor T-103 was replaced after the second alarm." was delivered
    out = seg("Sensor T-103 was replaced after the second alarm. Do not reuse the old unit.\n\n"
              "The pump was serviced in March. Never restart it.\n\n"
              "Add 2 mL of reagent R4 to the flask. Do not exceed 2 mL in any one batch.\n\n"
              "The old unit was stored in bay 4. Do not reuse the old unit. It is labelled.")
    assert [s.text for s in out] == [
        "Sensor T-103 was replaced after the second alarm. Do not reuse the old unit.",
        "The pump was serviced in March. Never restart it.",
        # a prohibition with its own object says what it forbids, and one inside a paragraph ends nothing
        "Add 2 mL of reagent R4 to the flask.", "Do not exceed 2 mL in any one batch.",
        "The old unit was stored in bay 4.", "Do not reuse the old unit.", "It is labelled."]


def test_a_paragraph_final_no_noun_that_the_sentence_before_names_is_part_of_it():
    # QA s27/qa6 #2, #5: "No deduction shall be made for fair wear and tear." was delivered apart from
    # "… may deduct from the Deposit …", "No detention is charged if …" apart from its rule
    out = seg("4.3 The Landlord may deduct from the Deposit the cost of repairing damage. "
              "No deduction shall be made for fair wear and tear.\n\n"
              "5.2 Detention is charged at EUR 55.00 per hour. No detention is charged if the Carrier is late.\n\n"
              "Rent is due monthly. No deposit is required.\n\n"
              "Invoices are sent later by post. No later than 5 days after delivery the invoice is due.\n\n"
              "No deduction is made for tear. Deductions are listed on the statement. The list is kept by the agent for six years.")
    assert [s.text for s in out] == [
        ("4.3 The Landlord may deduct from the Deposit the cost of repairing damage. "
         "No deduction shall be made for fair wear and tear."),
        "5.2 Detention is charged at EUR 55.00 per hour. No detention is charged if the Carrier is late.",
        # another noun, "No later than …", and a "No …" that ends nothing stay sentences of their own
        "Rent is due monthly.", "No deposit is required.",
        "Invoices are sent later by post.", "No later than 5 days after delivery the invoice is due.",
        "No deduction is made for tear.", "Deductions are listed on the statement.",
        "The list is kept by the agent for six years."]


def test_a_closing_quote_or_bracket_after_the_full_stop_stays_with_its_sentence():
    # 'the pump "simply stopped running.' was delivered with an unbalanced quote: the closing mark
    # went to the space before the next sentence
    text = 'The insured states that the pump "simply stopped running." Approximately 4 inches of water.'
    assert [s.text for s in seg(text)] == ['The insured states that the pump "simply stopped running."',
                                           "Approximately 4 inches of water."]
    for closed in ("“It stopped.”", "'It stopped.'", "‘It stopped.’", "(It stopped.)", "[It stopped.]",
                   "«It stopped.»", "He asked “why?”", "(“Stop!”)"):
        text = f"She said {closed} Then it rained."
        assert [text[a:b] for a, b in split_sentences(text)] == [f"She said {closed}", "Then it rained."]


def test_a_closing_chinese_quote_after_the_full_stop_stays_with_its_sentence():
    text = "被保险人称：“水泵突然停了。”地下室积水约10厘米。「好。」『行！』（见附件。）他走了。"
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "被保险人称：“水泵突然停了。”", "地下室积水约10厘米。", "「好。」", "『行！』", "（见附件。）", "他走了。"]
    # a straight quote after 。 closes when the sentence opened one, else it opens the next sentence
    text = '他说:"我不去。"然后走了。第一句。"第二句"是引用。'
    assert [text[a:b] for a, b in split_sentences(text)] == ['他说:"我不去。"', "然后走了。", "第一句。", '"第二句"是引用。']
    out = seg("被保险人称：“水泵突然停了。”\n地下室积水约10厘米。")
    assert [s.text for s in out] == ["被保险人称：“水泵突然停了。”", "地下室积水约10厘米。"]


def _heads(text, kind="text"):
    return [(s.text, s.meta.get("heading_level")) for s in seg(text, kind=kind) if s.kind == "heading"]


def test_capitalised_title_lines_of_a_plain_text_contract_are_headings_with_a_level():
    text = ("OFFICE LEASE\n\nPART II GENERAL CONDITIONS\n\nARTICLE 10 — INDEMNITY\n\nSection 10.1 Indemnity. "
            "Tenant shall indemnify Landlord.\n\n10.2 NOTICE OF CLAIMS\nLandlord shall notify Tenant promptly.\n\n"
            "1. DEFINITIONS\n\n\"Premises\" means Suite 1450.\n\nSCHEDULE B\n\nARTICLE 11\nSUBORDINATION\n\n"
            "This Lease is subordinate to every mortgage.")
    out = seg(text)
    assert "".join(s.sep + s.text for s in out) == text  # the text is cut, never changed
    assert _heads(text) == [("PART II GENERAL CONDITIONS", 1), ("ARTICLE 10 — INDEMNITY", 2),
                            ("10.2 NOTICE OF CLAIMS", 4), ("1. DEFINITIONS", 3), ("ARTICLE 11\nSUBORDINATION", 2)]
    # two title lines of one level in a row head nothing: "OFFICE LEASE" above "PART II", "SCHEDULE B" above "ARTICLE 11"
    assert [s.kind for s in out if s.text in ("OFFICE LEASE", "SCHEDULE B")] == ["sentence", "sentence"]
    assert next(s for s in out if s.text.startswith("Landlord shall")).kind == "sentence"
    zh = "第三章 违约责任\n\n第十条 甲方逾期付款的，应按日支付违约金。\n\n第十一条 验收标准\n乙方应按附件一交货。"
    assert _heads(zh) == [("第三章 违约责任", 2), ("第十一条 验收标准", 3)]


def test_numbered_titles_in_ordinary_case_and_document_titles_with_a_date_are_plain_headings():
    # QA (a facility agreement): "22.1 Authorisations" was a sentence, so the text of 22.3 was delivered
    # under it; (a claim file) "DOCUMENT 13 — LETTER FROM INSURER TO INSURED (2 April 2024)" was a sentence,
    # so every letter was delivered under "DOCUMENT 2 — POLICY SCHEDULE …"
    text = ("22. GENERAL UNDERTAKINGS\n\n22.1 Authorisations\n\nEach Obligor shall maintain every Authorisation.\n\n"
            "22.2 Negative pledge\n\nNo Obligor shall create any Security.\n\n2.1 The Facilities\n\n"
            "The Lenders make a term loan facility available.\n\n2.2 The fees are due on signing\n\nSee Schedule 4.\n\n"
            "2.1 million rows\n\nwere migrated.")
    assert _heads(text) == [("22. GENERAL UNDERTAKINGS", 3), ("22.1 Authorisations", 4), ("22.2 Negative pledge", 4),
                            ("2.1 The Facilities", 4)]
    claim = ("DOCUMENT 2 — POLICY SCHEDULE AND WORDING EXTRACT\n\nBuildings sum insured: GBP 410,000.\n\n"
             "DOCUMENT 13 — LETTER FROM INSURER TO INSURED (2 April 2024)\n\nWe agree the claim at GBP 40,860.00.\n\n"
             "DIARY NOTE (6 February 2024)\n\nInsured called.")
    assert _heads(claim) == [("DOCUMENT 2 — POLICY SCHEDULE AND WORDING EXTRACT", 2),
                             ("DOCUMENT 13 — LETTER FROM INSURER TO INSURED (2 April 2024)", 2),
                             ("DIARY NOTE (6 February 2024)", 3)]


def test_shouted_sentences_labels_tables_lists_code_and_mail_are_not_plain_headings():
    for text in ("DO NOT EXCEED 4 G PER DAY.\n\nTake with food.", "DO NOT EXCEED 4 G PER DAY\n\nTake with food.",
                 "WARNING: KEEP OUT OF REACH OF CHILDREN\n\nStore below 25 °C.",
                 "THE TENANT SHALL PAY ALL RENT WHEN DUE\n\nRent is due monthly.",
                 "| ITEM | QTY |\n|---|---|\n| PUMP | 2 |\n\nTotal 2.", "1. APPLES\n\n2. PEARS\n\n3. PLUMS",
                 "ACME CORP\n123 MAIN ST\n\nDear Sir, the pump failed.", "MAX_RETRIES = 3\nTIMEOUT = 30\n\nDone.",
                 "SUBJECT: PUMP FAILURE\n\nThe pump failed.", "PROFESSOR E: OK.\n\nThe pump failed.",
                 "The pump failed.\nARTICLE 5 RENT\nRent is due.", "ARTICLE 8 — SUBORDINATION",
                 "Article 10 — Indemnity\n\nTenant shall indemnify Landlord."):
        assert _heads(text) == [], text
    # in a markdown document only markdown's headings are headings (their levels would mix)
    assert _heads("# Lease\n\nARTICLE 10 — INDEMNITY\n\nTenant shall indemnify Landlord.", kind="markdown") == [
        ("# Lease", None)]
    # nor in a chat
    assert _heads("ARTICLE 10 — INDEMNITY\n\nTenant shall indemnify Landlord.", kind="chat") == []


PODS = (
    "NAME                                READY   STATUS             RESTARTS       AGE\n"
    "ledger-api-7d9f8c289-9326m          1/1     Running            0              16d\n"
    "ledger-worker-7d9f8c314-yeban       1/1     Running            0              16d\n"
    "ledger-worker-7d9f8c412-x8k2p       0/1     CrashLoopBackOff   37 (2m ago)    3h12m\n"
    "ledger-worker-7d9f8c985-z0nar       1/1     Running            0              10d\n"
    "settlement-cron-7d9f8c590-qq7m1     0/1     OOMKilled          5 (11m ago)    52m\n"
    "recon-batch-7d9f8c233-h2n9d         0/1     Pending            0              8m\n"
    'web-7d9f8c111-0hipg                 1/1     Running            0              "odd\n'
)


def test_command_output_in_columns_of_spaces_is_a_table_of_whole_lines():
    # QA: kubectl's rows came out as list and sentence blocks (a shared "ledger-worker-" made a list),
    # the header a sentence of its own; a '"' in a cell must join no rows
    text = "$ kubectl get pods -n payments\n" + PODS + "\nThat is all."
    out = seg(text, max_table_tokens=20)
    assert [s.kind for s in out] == ["sentence"] + ["table"] * 7 + ["sentence"]
    rows = PODS.rstrip("\n").split("\n")
    assert [s.text for s in out[1:8]] == ["\n".join(rows[:2])] + rows[2:]  # every row byte for byte
    assert all(s.meta["table_header"] == rows[0] for s in out[1:8])
    assert [s.meta["table_rows"] for s in out[1:8]] == [[k, 1] for k in range(7)]
    assert "".join(s.sep + s.text for s in out) == text
    assert join_segments([out[5]]) == rows[0] + "\n[DATA_ROWS: 4]\n" + rows[5] + "\n[DATA_ROWS: 2]"
    # docker ps (an empty PORTS cell), df -h (right-aligned numbers), kubectl's events (dashes under the header)
    docker = ("CONTAINER ID   IMAGE          COMMAND                  STATUS                     PORTS                    NAMES\n"
              "4c01db0b339c   postgres:15    \"docker-entrypoint.s…\"   Up 2 hours                 0.0.0.0:5432->5432/tcp   pg\n"
              "d7886598dbe2   redis:7        \"redis-server\"           Exited (137) 5 minutes ago                           cache\n"
              "a1b2c3d4e5f6   nginx:1.25     \"/docker-entrypoint.…\"   Up 5 days                  80/tcp, 443/tcp          web")
    df = ("Filesystem      Size  Used Avail Use% Mounted on\nudev            7.8G     0  7.8G   0% /dev\n"
          "/dev/nvme0n1p2  468G  441G  3.5G 100% /\n/dev/nvme0n1p1  511M  6.1M  505M   2% /boot/efi")
    events = ("Events:\n  Type     Reason     Age                  From     Message\n"
              "  ----     ------     ----                 ----     -------\n"
              "  Warning  BackOff    2m14s (x160 over 3h) kubelet  Back-off restarting failed container worker")
    for sample, header in ((docker, docker.split("\n")[0]), (df, df.split("\n")[0]),
                           (events, "\n".join(events.split("\n")[1:3]))):
        parts = [s for s in seg(sample, max_table_tokens=20) if s.kind == "table"]
        assert parts and parts[0].meta["table_header"] == header, sample
        assert sum(s.meta["table_rows"][1] for s in parts) == parts[0].meta["table_total"] == len(
            sample.split("\n")) - len(header.split("\n")) - (1 if sample is events else 0)
        assert join_segments(parts) == sample[sample.index(header):], sample


def test_a_psql_result_is_a_table_under_its_header_and_dashes_and_its_footer_is_no_row():
    # QA: psql's result was one sentence segment of 574 tokens, its header row indented and its
    # "---------+-----" line read as prose
    text = (" version |       applied_at        | applied_by | success \n"
            "---------+-------------------------+------------+---------\n"
            "      41 | 2025-07-14 09:12:44.501 | deploy-bot | f\n"
            "      40 | 2025-06-14 10:04:24.140 | deploy-bot | t\n"
            "      39 | 2025-06-13 19:03:23.139 | mkowalski | t\n"
            "(3 rows)\n")
    out = seg(text, max_table_tokens=20)
    assert [s.kind for s in out] == ["table"] * 3 + ["sentence"]
    lines = text.split("\n")
    assert out[0].meta["table_header"] == "\n".join(lines[:2])
    assert out[0].text == "\n".join(lines[:3])  # the header keeps its indentation (" version |")
    assert [s.text for s in out[1:3]] == [lines[3], lines[4]]  # "      40 | …": right-aligned, kept as it is
    assert out[0].meta["table_total"] == 3 and out[3].text == "(3 rows)"
    assert "".join(s.sep + s.text for s in out) == text.rstrip()
    assert join_segments([out[2]]) == "\n".join(lines[:2]) + "\n[DATA_ROWS: 2]\n" + lines[4]


def test_ls_l_is_a_table_without_a_header_and_prose_with_double_spaces_is_no_table():
    text = ("total 24\ndrwxr-xr-x  5 ana staff  160 Jul 14 09:12 .\n"
            "-rw-r--r--  1 ana staff 1204 Jul 14 09:10 config.yaml\n"
            "-rw-r--r--  1 ana staff   88 Jul 13 18:02 \"odd name.txt\n"
            "-rwxr-xr-x  1 ana staff 4096 Jul 12 08:00 run.sh")
    out = seg(text, max_table_tokens=20)
    assert out[0].text == "total 24" and all(s.kind == "table" for s in out[1:])
    assert out[1].meta["table_header"] == "" and out[1].meta["table_total"] == 4
    assert join_segments([out[-1]]) == "[DATA_ROWS: 3]\n" + text.split("\n")[-1]  # no empty header line
    prose = ("The team met on Monday.  Everyone agreed.  Then we left.\n"
             "It was a long day for all of us and nobody  wanted  to stay.\n"
             "Notes  Owner  Due\nReview the budget  before the board meeting  on Friday please.\nSend the deck.")
    assert all(s.kind == "sentence" for s in seg(prose))


def test_a_line_all_in_bold_is_a_segment_of_its_own_with_or_without_a_blank_line_around_it():
    text = ("The refund was requested on Friday.\n**Internal note — Jonas Berg, 14 Jul 2025 10:20**\n"
            "Correction to my note: INC-5527.\nRefund submitted at 10:18.\n\n**Summary**\nAll done. Closed.")
    out = seg(text)
    assert [s.text for s in out] == ["The refund was requested on Friday.",
                                     "**Internal note — Jonas Berg, 14 Jul 2025 10:20**",
                                     "Correction to my note: INC-5527.", "Refund submitted at 10:18.",
                                     "**Summary**", "All done. Closed."]
    assert out[1].paragraph != out[2].paragraph and out[4].paragraph != out[5].paragraph
    assert seg("**Note:** the fee is due.\nPay by Friday.")[0].text == "**Note:** the fee is due."  # not all bold


def test_a_test_runs_progress_lines_are_whole_lines_never_cut_at_their_dots():
    # QA: "tests/test_webhooks.py ....E....  [65%]" was cut at the dots, and an orphan "[65%]" delivered
    progress = ["tests/unit/test_money.py ..s......................ss......................s [ 34%]",
                "tests/unit/test_fx.py ..................................................... [ 47%]",
                "tests/integration/test_webhooks.py .....E................s.s...... [ 65%]",
                "..........F.. [100%]"]
    text = "collected 412 items\n\n" + "\n".join(progress) + "\n\n=== ERRORS ===\nKeyError: 'key_v2'."
    out = seg(text, max_list_tokens=40)
    lists = [s for s in out if s.kind == "list"]
    assert [line for s in lists for line in s.text.split("\n")] == progress
    assert not any(s.text.startswith("[") for s in out)
    verbose = "platform linux -- Python 3.11.9\ntests/test_fx.py::test_rate PASSED  [ 50%]\ntests/test_fx.py::test_jpy FAILED  [100%]"
    assert [s.text for s in seg(verbose)][-1] == "tests/test_fx.py::test_rate PASSED  [ 50%]\ntests/test_fx.py::test_jpy FAILED  [100%]"


def test_a_wrapped_capitals_sentence_a_bold_part_of_a_sentence_and_a_chat_line_with_a_colon_stay_prose():
    # QA of this stop's changes: each of these became a heading, a title or a form field
    caps = seg("Terms of the beta.\n\nEXCEPT AS EXPRESSLY PROVIDED IN THIS AGREEMENT\nTHE SERVICE IS PROVIDED "
               "\"AS IS\", WITHOUT WARRANTY OF ANY KIND.\n\nThe beta ends on 30 June 2025.")
    assert not any(s.kind == "heading" for s in caps)
    bold = seg("Please note that\n**opened software, gift cards and custom orders**\ncannot be refunded.")
    assert len(bold) == 1
    chat = seg("Customer: My order arrived broken.\nAgent: Sorry to hear that. I checked this morning.\n"
               "Good news: we will refund EUR 40 by Friday.\nCustomer: Thanks.")
    assert [s.meta.get("speaker") for s in chat if s.text.startswith("Good news")] == ["Agent:"]


def test_an_agent_log_with_role_tags_is_cut_into_its_turns():
    # a rendered agent trajectory: "[role]" / "[assistant -> tool]" / "[tool name]" tags, no colon. Before,
    # "Please confirm … method.\n[user] Yes …\n[assistant -> update] {…}\n[tool update] {…}" was one
    # 390-token "sentence" cut for length, delivered or dropped all together
    text = ("[system] # Airline policy\n\nBasic economy flights cannot be modified.\n\n"
            "- Refunds go to the original payment method.\n\n"
            "[user] Hi! I want to upgrade reservation M20IZO.\n"
            "[assistant -> get_reservation_details] {\"reservation_id\": \"M20IZO\"}\n"
            "[tool get_reservation_details] {\"reservation_id\": \"M20IZO\", \"cabin\": \"economy\"}\n"
            "[assistant] The upgrade costs $1,194. Please confirm this payment method.\n"
            "[user] Yes, please use credit_card_9074831.\n"
            "[assistant -> update_reservation_flights] {\"reservation_id\": \"M20IZO\", \"cabin\": \"business\"}\n"
            "[assistant] Your reservation M20IZO is upgraded.\n\n"
            "If there's anything else, let me know!\n[user] Thank you for your help. That's all I needed for now.\n")
    out = seg(text)
    assert "".join(s.sep + s.text for s in out) == text.rstrip("\n")
    by_text = {s.text: s for s in out}
    assert "Please confirm this payment method." in by_text  # the turn's sentence ends at its line
    assert by_text["[user] Yes, please use credit_card_9074831."].meta["speaker"] == "[user]"
    call = next(s for s in out if s.text.startswith("[assistant -> update_reservation_flights]"))
    assert call.meta["speaker"] == "[assistant -> update_reservation_flights]" and "cut_part" not in call.meta
    # a tagged line right under another message's line opens a turn of its own
    assert by_text["[user] Thank you for your help."].meta.get("opens_line")
    assert by_text["That's all I needed for now."].meta["speaker"] == "[user]"
    assert by_text["If there's anything else, let me know!"].meta["speaker"] == "[assistant]"
    # a later sentence delivered alone is written after its tag; paragraphs of one turn keep their break
    assert _delivered(out, {by_text["That's all I needed for now."].index}) == "[user] That's all I needed for now."
    policy = [by_text["[system] # Airline policy"].index, by_text["Basic economy flights cannot be modified."].index]
    assert _delivered(out, set(policy)) == "[system] # Airline policy\n\nBasic economy flights cannot be modified."
    # a bracketed word that is no role is no tag
    assert all("speaker" not in s.meta for s in seg("[Note] The fee is due.\n[2] See the annex.\n[Note] Paid."))


def test_log_levels_and_traceback_lines_are_no_speakers():
    # Before, "Traceback (most recent call last):" opening three paragraphs made a chat of "turns", and a
    # paragraph delivered alone was written after it: "Traceback (most recent call last): During handling
    # of the above exception, another exception occurred:", a line that is not in the source
    tb = ("Traceback (most recent call last):\n"
          '  File "/srv/app/pg/connection.py", line 728, in connect\n'
          "    raise last_ex.with_traceback(None)\n"
          'psycopg.OperationalError: password authentication failed for user "billing_rw"\n\n'
          "The above exception was the direct cause of the following exception:\n\n"
          "Traceback (most recent call last):\n"
          '  File "/srv/app/billing/db.py", line 44, in get_pool\n'
          "    pool = ConnectionPool(conninfo=DSN)\n"
          "billing.db.PoolInitError: could not open pool after 3 attempts\n\n"
          "During handling of the above exception, another exception occurred:\n\n"
          "Traceback (most recent call last):\n"
          '  File "/srv/app/billing/worker.py", line 112, in run_forever\n'
          "    self.process_batch(batch_id=batch_id)\n"
          "RuntimeError: database unavailable; not retrying\n")
    # pip's levels in a row were "a transcript": "INFO: This could take a while." was delivered
    pip = ("INFO: pip is looking at multiple versions of langchain-core. This could take a while.\n"
           "ERROR: Cannot install -r requirements.txt (line 2) and langchain-core==0.1.52.\n"
           "WARNING: Retrying after connection broken.\n"
           "error: could not compile `odcf`. note: run with `RUST_BACKTRACE=1` for a backtrace.\n"
           "RuntimeError: database unavailable. Not retrying.\n")
    for text, alone in ((tb, "During handling of the above exception, another exception occurred:"),
                        (pip, "This could take a while.")):
        out = seg(text)
        assert all("speaker" not in s.meta for s in out)
        # the chain's line opens the part of the traceback it introduces (QA s32 R1): that part delivered alone
        # opens with it under the count of the lines left out above it, no label written before it
        found = {s.index for s in out if s.text == alone or (text is tb and s.text.startswith(alone + "\n"))}
        lines = [x for x in _delivered(out, found).split("\n") if not x.startswith("[CODE_LINES: ")]
        assert found and lines[0] == alone
    # a transcript is still one
    chat = seg("Alice: We ship today. It is late.\nBob: Fine by me.\nNote Taker: Noted.\n")
    assert [s.meta.get("speaker") for s in chat] == ["Alice:", "Alice:", "Bob:", "Note Taker:"]


def test_a_java_stack_trace_is_code_cut_in_whole_lines_a_part_per_cause():
    # Before, a Java trace was prose split at "..." as a sentence end: parts opened "42 more" and ended
    # with a bare "...", and the "Caused by:" sections dropped re-linked the cause chain wrongly
    frames = "".join(f"\tat org.apache.catalina.core.Valve{k}.invoke(Valve{k}.java:{100 + k})\n" for k in range(6))
    text = ("2024-06-11 10:42:17,331 ERROR [exec-7] c.a.o.web.OrderController - Request failed: POST /orders/8812\n"
            "org.springframework.web.util.NestedServletException: Request processing failed; nested exception "
            "is com.acme.orders.PaymentCaptureException: capture rejected for order 8812\n" + frames +
            "Caused by: com.acme.orders.PaymentCaptureException: capture rejected for order 8812\n"
            "\tat com.acme.orders.PaymentService.capture(PaymentService.java:211)\n"
            "\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)\n"
            "\t... 42 more\n"
            "Caused by: com.acme.gateway.GatewayTimeoutException: upstream stripe-proxy did not answer within "
            "3000 ms (attempt 3 of 3)\n"
            "\tat com.acme.gateway.HttpGateway.post(HttpGateway.java:148)\n"
            "\t... 47 more\n"
            "Caused by: java.net.SocketTimeoutException: Read timed out\n"
            "\tat java.base/java.net.Socket$SocketInputStream.read(Socket.java:966)\n"
            "\t... 53 more\n"
            "2024-06-11 10:42:17,402 INFO  [exec-7] c.a.o.web.OrderController - responded 502 in 9012 ms\n")
    out = seg(text)
    # a log's entries: each log line a piece of its own, its trace cut as code
    assert [s.kind for s in out if s.text[:4] == "2024"] == ["list", "list"] and all(
        s.kind == "code" and "\n2024" not in s.text for s in out if s.text[:4] != "2024")
    line_starts = {0} | {k + 1 for k, ch in enumerate(text) if ch == "\n"}
    # every part is whole lines (its first line's indentation aside): never "42 more" nor a bare "..."
    assert all(text.rfind("\n", 0, text.index(s.text)) + 1 in line_starts and text[text.index(s.text) + len(s.text)]
               == "\n" for s in out)
    causes = [s.text.split("\n")[0] for s in out if s.text.startswith("Caused by:")]
    assert len(causes) == 3 and causes[-1] == "Caused by: java.net.SocketTimeoutException: Read timed out"
    assert all(s.text.rstrip().endswith(("more", "ms", ")", "/orders/8812")) for s in out)
    # a cause delivered alone says how many lines of the trace are left out around it (QA: "The first
    # error in the log:" over a lone "Caused by: …PoolExhaustedException" read as the first error)
    gateway = next(s for s in out if "GatewayTimeoutException" in s.text)
    lines = text.split("\n")
    before = lines.index(gateway.text.split("\n")[0])
    after = len(lines) - 1 - before - len(gateway.text.split("\n"))
    assert _delivered(out, {gateway.index}) == f"[CODE_LINES: {before}]\n{gateway.text}\n[CODE_LINES: {after}]"
    # a JavaScript trace too
    js = seg("TypeError: Cannot read properties of undefined (reading 'id')\n"
             "    at getUser (/app/src/users.js:42:17)\n"
             "    at async Promise.all (index 0)\n"
             "    at /app/src/server.js:88:5\n")
    assert [s.kind for s in js] == ["code"]


def test_a_fenced_code_block_is_cut_in_parts_of_about_60_tokens_each_line_keeping_its_indentation():
    # Before, a fenced block's parts were up to 400 tokens (README: cut as a table is, about 60), so a
    # traceback's last lines (the answer) went in one 380-token part with many frames, dropped at a
    # budget of 200; and a part delivered alone lost its first line's indentation ("File …" for
    # "  File …")
    frames = "".join(f'  File "/srv/app/venv/lib/python3.11/site-packages/alembic/frame_{k}.py", line {100 + k}, '
                     f"in step_{k}\n    return self._step_{k}(ctx)\n" for k in range(1, 31))
    text = ("The migration failed with the following traceback:\n\n```\n" + frames +
            "sqlalchemy.exc.IntegrityError: (psycopg.errors.UniqueViolation) duplicate key value violates "
            'unique constraint "users_email_key"\nDETAIL:  Key (email)=(ops@example.com) already exists.\n```\n')
    out = seg(text)
    code = [s for s in out if s.kind == "code"]
    counter = get_counter(PLAN.tokenizer)
    assert len(code) > 10 and max(counter.count(s.text) for s in code) <= 80
    assert join_segments(list(out)) == text.rstrip("\n")
    for s in code[1:]:  # each part is whole lines of the source, indentation and all
        assert text[text.rfind("\n", 0, text.index(s.text)) + 1:].startswith(s.text)
    middle = join_segments([code[3]])
    assert middle.split("\n")[2].startswith('  File "/srv/app/venv/') or middle.split("\n")[2].startswith(
        "    return self._step_")
    assert "\n".join(middle.split("\n")[2:-2]) in text  # the delivered lines, byte for byte
    last = join_segments([code[-1]])
    assert 'unique constraint "users_email_key"' in last and last.startswith("```\n[CODE_LINES: ")
    # unfenced code keeps its first line's indentation too (a Java frame delivered alone keeps its tab)
    trace = ("java.lang.IllegalStateException: boom\n" +
             "".join(f"\tat com.acme.Step{k}.run(Step{k}.java:{k})\n" for k in range(60)))
    parts = [s for s in seg(trace, max_block_tokens=100) if s.kind == "code"]
    assert len(parts) > 2 and all(p.text.startswith("\tat ") for p in parts[1:])


def test_a_role_tag_wrapped_into_a_sentence_a_speaker_named_tip_and_a_wrapped_numbered_sentence():
    # QA of this stop's changes: "… edit the log_dir key in the\n[system] section; …" was cut in two at
    # the tag; a chat speaker "Tip" was taken for a log level and her line given to Dana; "4.2 Tonnes
    # of packaging waste\nwere recycled …" became a heading over the next paragraph
    text = ("To change the log directory, open config.ini and edit the log_dir key in the\n"
            "[system] section; the default is /var/log/acme. Restart the service afterwards.")
    out = seg(text)
    assert out[0].text.endswith("the default is /var/log/acme.") and "speaker" not in out[0].meta
    chat = seg("Dana: Did the nightly import finish?\nTip: It did. I cannot make the vendor call on Tuesday.\n"
               "Dana: Fine.\nTip: Will do after lunch.\n")
    assert {s.text: s.meta.get("speaker") for s in chat if "vendor call" in s.text or "lunch" in s.text} == {
        "Tip: It did. I cannot make the vendor call on Tuesday.": "Tip:", "Tip: Will do after lunch.": "Tip:"}
    report = ("Quarterly report\n\n4.2 Tonnes of packaging waste\nwere recycled in the quarter.\n\n"
              "Staffing: the night shift was cut to 12 people.")
    assert _heads(report) == []


def test_a_fenced_config_or_diff_is_not_cut_into_small_parts():
    # QA of this stop's changes: a ```yaml block cut in 60-token parts delivered '    value: "false"'
    # without its keys, read as ingress.enabled
    body = "\n".join(f"key{i}:\n  name: value-{i}\n  enabled: {'true' if i % 2 else 'false'}" for i in range(30))
    for lang in ("yaml", "diff"):
        out = seg(f"Values:\n\n```{lang}\n{body}\n```\n")
        code = [s for s in out if s.kind == "code"]
        assert len(code) <= 3, [len(s.text) for s in code]
    assert len([s for s in seg(f"Log:\n\n```\n{body}\n```\n") if s.kind == "code"]) > 6


MEDS = ("Discharge medications: metformin 500 mg twice daily; atorvastatin 40 mg at bedtime; lisinopril 10 mg "
        "daily was held because of acute kidney injury (creatinine 1.9 mg/dL; baseline 1.0); resume lisinopril "
        "only if creatinine falls below 1.3 mg/dL at follow-up.")


def test_a_long_sentence_is_cut_into_its_clauses_at_semicolons():
    # QA: a 75-token discharge list, the best-scored sentence for "discharge medications", did not fit
    # a 90-token budget whole and was dropped while lower-scored sentences were delivered
    out = seg(MEDS + " The patient was seen by the team.")
    parts = [s for s in out if s.meta.get("cut_parts")]
    assert [s.text for s in parts] == [
        "Discharge medications: metformin 500 mg twice daily;", "atorvastatin 40 mg at bedtime;",
        "lisinopril 10 mg daily was held because of acute kidney injury (creatinine 1.9 mg/dL; baseline 1.0);",
        "resume lisinopril only if creatinine falls below 1.3 mg/dL at follow-up."]
    assert [s.meta["cut_part"] for s in parts] == [0, 1, 2, 3] and {s.meta["cut_parts"] for s in parts} == {4}
    assert join_segments(list(out)) == MEDS + " The patient was seen by the team."
    # a sentence under the limit stays whole; a clause under MIN_CLAUSE_CHARS goes with the next
    short = "Take metformin 500 mg twice daily; atorvastatin 40 mg at bedtime."
    assert [s.text for s in seg(short)] == [short]
    choppy = "Yes; no; " * 30 + "that is all there is to say about it."
    assert {len(s.text) >= 20 for s in seg(choppy)} == {True}


def test_a_sentence_is_not_cut_at_a_mark_inside_inline_code():
    # QA: "(`SELECT ..." and "FOR UPDATE`) on the order's ledger entry …" were two segments, delivered apart
    t = ("Each attempt held a row lock (`SELECT ... FOR UPDATE`) on the entry. It was released later. "
         "Run `psql -c \"SELECT 1.\"` now. A stray ` here. Next one.")
    assert [t[a:b] for a, b in split_sentences(t)] == [
        "Each attempt held a row lock (`SELECT ... FOR UPDATE`) on the entry.", "It was released later.",
        'Run `psql -c "SELECT 1."` now.', "A stray ` here.", "Next one."]


def test_a_later_sentence_of_a_numbered_line_keeps_its_line_and_its_number():
    # QA: "Besides replacing it, …", the second sentence of 7.4, was delivered on the line of 7.3 and
    # "未及时通知的，不得免除责任。" (the tail of 7.6) after 7.5's: obligations read as another clause's
    text = ("7.3 If the Buyer pays late, it shall pay interest of 0.3% per day.\n"
            "7.4 If the equipment does not meet the standard, the Buyer may reject it. Besides replacing it, "
            "the Seller shall pay damages of 5%.\n"
            "7.5 The Seller shall respond within 4 hours. After more than 3 occurrences, the Buyer may deduct it.")
    out = seg(text)
    assert [s.text[:10] for s in out] == ["7.3 If the", "7.4 If the", "Besides re", "7.5 The Se", "After more"]
    assert _delivered(out, {0, 2}) == ("7.3 If the Buyer pays late, it shall pay interest of 0.3% per day.\n"
                                       "7.4 … Besides replacing it, the Seller shall pay damages of 5%.")
    assert _delivered(out, {2, 4}) == ("7.4 … Besides replacing it, the Seller shall pay damages of 5%.\n"
                                       "7.5 … After more than 3 occurrences, the Buyer may deduct it.")
    assert _delivered(out, {0, 3}).split("\n")[1] == "…"  # a line left out whole between two
    zh = seg("第7条 违约责任\n\n7.2 违约金累计不超过合同总价的10%。\n7.3 甲方逾期付款的，应支付违约金。\n"
             "7.4 设备不符合质量标准的，甲方有权拒收。乙方除应更换外，还应支付违约金。\n7.5 乙方未响应的，每次支付5,000元；"
             "累计超过3次的，甲方有权扣除。")
    texts = [s.text for s in zh]
    keep = {texts.index("7.2 违约金累计不超过合同总价的10%。"), texts.index("乙方除应更换外，还应支付违约金。")}
    assert _delivered(zh, keep) == "7.2 违约金累计不超过合同总价的10%。\n7.4 …乙方除应更换外，还应支付违约金。"
    # a "；" of a sentence under 240 characters cuts nothing (QA D, F2: as ";" in English): 7.5 is one sentence
    keep = {texts.index("7.5 乙方未响应的，每次支付5,000元；累计超过3次的，甲方有权扣除。"),
            texts.index("7.2 违约金累计不超过合同总价的10%。"), texts.index("7.4 设备不符合质量标准的，甲方有权拒收。")}
    assert _delivered(zh, keep) == ("7.2 违约金累计不超过合同总价的10%。\n…\n7.4 设备不符合质量标准的，甲方有权拒收。…\n"
                                    "7.5 乙方未响应的，每次支付5,000元；累计超过3次的，甲方有权扣除。")


def test_sentences_left_out_between_two_of_a_paragraph_are_marked_where_they_are():
    out = seg("The fee is due in May. It is paid in euros. Late payment costs 2% a month.")
    assert _delivered(out, {0, 2}) == "The fee is due in May. … Late payment costs 2% a month."
    assert _delivered(out, {1, 2}) == "It is paid in euros. Late payment costs 2% a month."  # nothing between
    # a hard-wrapped paragraph: the line break of the source is kept, and the rest of a line left out said
    wrapped = seg("The Supplier shall deliver the goods. The Buyer shall inspect\nthem on arrival. "
                  "Any defect shall be notified in writing within ten days.")
    assert _delivered(wrapped, {0, 2}) == ("The Supplier shall deliver the goods. … Any defect shall be notified "
                                           "in writing within ten days.")


def test_items_of_a_short_list_or_numbered_paragraphs_left_out_are_counted_where_they_are():
    # QA: the Metformin item of a two-item HELD list vanished unsaid ("the held medication is lisinopril"),
    # and so did M1, M3–M6 of the mandatory requirements
    text = ("**HELD — do not take until told by your doctor:**\n\n"
            "- Metformin 1000 mg twice daily: held for AKI; restart at no more than 500 mg twice daily.\n"
            "- Lisinopril 20 mg once daily: held for AKI and low blood pressure; review at follow-up.\n\n"
            "Next paragraph.")
    out = seg(text, kind="markdown")
    assert [s.meta.get("items") is not None for s in out] == [False, True, True, False]
    assert _delivered(out, {0, 2, 3}) == ("**HELD — do not take until told by your doctor:**\n\n[…1 item]\n"
                                          "- Lisinopril 20 mg once daily: held for AKI and low blood pressure; review "
                                          "at follow-up.\n\nNext paragraph.")
    assert _delivered(out, {0, 1}).endswith("restart at no more than 500 mg twice daily.\n[…1 item]")
    reqs = seg("## 4. Mandatory Requirements\n\n" + "\n\n".join(
        f"M{n}. The system must meet requirement number {n}. It is checked at the demonstration." for n in range(1, 8)),
        kind="markdown")
    opening = {s.index for s in reqs if s.text.startswith(("M2.", "M7."))}
    assert _delivered(reqs, opening) == ("[…1 item]\nM2. The system must meet requirement number 2.\n\n[…4 items]\n"
                                         "M7. The system must meet requirement number 7.")
    assert _delivered(reqs, {0} | opening).startswith("## 4. Mandatory Requirements\n\n[…1 item]\nM2.")
    later = next(s.index for s in reqs if s.text.startswith("It is checked") and s.index > max(opening))
    assert _delivered(reqs, {later}) == "[…6 items]\nM7. … It is checked at the demonstration."


def test_a_short_last_sentence_of_a_line_is_not_joined_to_the_next_line():
    # QA: "Interest compounds monthly." (the end of clause 7.2) was joined, as a short lead-in, to clause
    # 7.3's first sentence on the next line, and 7.3's words were delivered on 7.2's line
    text = ("7.2 The Buyer shall pay within 14 days. Interest compounds monthly.\n"
            "7.3 Either party may terminate for material breach. Notice must be in writing.\n")
    assert [s.text for s in seg(text)] == ["7.2 The Buyer shall pay within 14 days.", "Interest compounds monthly.",
                                           "7.3 Either party may terminate for material breach.",
                                           "Notice must be in writing."]
    # a clause title on a line of its own still goes with the line after it
    assert [s.text for s in seg("Section 4.1 Fees.\nThe fee is EUR 400 a month.\n")] == [
        "Section 4.1 Fees.\nThe fee is EUR 400 a month."]


def test_a_sentence_that_limits_the_one_before_it_is_part_of_its_segment():
    # QA: "12.3 The Supplier may subcontract … without consent." was delivered without "That permission does not
    # extend to the processing of Personal Data, …", which was left out: the permission read as unlimited
    text = ("12.3 The Supplier may subcontract any of its obligations without consent. That permission does not extend "
            "to the processing of Personal Data, which requires the Customer's prior written approval.\n\n"
            "12.4 The Customer may audit the Supplier once a year. The foregoing applies only to on-site audits. "
            "Unless otherwise agreed, audits take place on 30 days' notice.")
    texts = [s.text for s in seg(text)]
    assert texts == [
        "12.3 The Supplier may subcontract any of its obligations without consent. That permission does not extend to "
        "the processing of Personal Data, which requires the Customer's prior written approval.",
        "12.4 The Customer may audit the Supplier once a year. The foregoing applies only to on-site audits.",
        # "Unless …" governs its own sentence, not the one before it
        "Unless otherwise agreed, audits take place on 30 days' notice."]
    # on a line of its own, or in a transcript's line (delivered after its speaker's label), it stays apart
    assert len(seg("The Supplier may subcontract without consent.\nThat permission does not extend to data.")) == 2
    assert [s.text for s in seg("Ann: You may subcontract freely. That does not apply to data.\nBob: Fine.\nAnn: Good.")][:2] == [
        "Ann: You may subcontract freely.", "That does not apply to data."]


_NESTED = """Medications on discharge:

- Cardiac
  - Bisoprolol 2.5 mg once daily (NEW), uptitrate every 2 weeks to a target of 10 mg if the heart rate is over 60
  - Furosemide 40 mg once daily in the morning (dose REDUCED from 80 mg), weigh daily and call if up 2 kg
  - Sacubitril/valsartan 24/26 mg twice daily (NEW), not until 36 hours after the last ramipril dose
  - Apixaban 2.5 mg twice daily (NEW), a reduced dose for creatinine over 133 and weight under 60 kg
- Diabetes
  - Empagliflozin 10 mg once daily (NEW)
- Other
  - Omeprazole 20 mg once daily
"""


def test_an_item_with_a_long_sub_list_is_cut_at_its_sub_items_under_its_first_line():
    # QA: "- Cardiac" and its four drugs (140 tokens) were one part of the list: the apixaban line a query
    # asked for could not be delivered without the other three
    out = seg(_NESTED)
    parts = [s for s in out if s.kind == "list"]
    head = next(s for s in parts if s.text == "- Cardiac")
    subs = [s for s in parts if s.meta.get("under") == head.index]
    assert len(subs) > 1 and all(s.text.startswith("  - ") for s in subs)  # from the start of their line
    assert sum(s.meta["sub_items"][1] for s in subs) == 4 and all(s.meta["sub_total"] == 4 for s in subs)
    assert "- Diabetes\n  - Empagliflozin" in parts[-2].text + parts[-1].text  # a short item stays whole
    (apixaban,) = [s for s in subs if "Apixaban" in s.text]
    k = apixaban.meta["sub_items"]
    assert join_segments([out[0], head, apixaban]) == (
        f"Medications on discharge:\n\n- Cardiac\n  {items_mark(k[0])}\n{apixaban.text}"
        + (f"\n  {items_mark(4 - k[0] - k[1])}" if k[0] + k[1] < 4 else "") + f"\n{items_mark(2)}")
    # the sub-items after the last one delivered are counted where they end, before the next item
    assert f"over 60\n  {items_mark(3)}\n- Diabetes" in join_segments([out[0], head, subs[0], parts[-1]])
    assert join_segments(list(out)) == _NESTED.rstrip("\n")  # all delivered: as written, no marker


_ZH_PENALTY = "第二十条 违反本办法第七条规定的，由主管部门责令改正，给予警告；拒不改正的，处1万元以上10万元以下罚款。"
_ZH_LONG_PENALTY = ("第二十条 违反本办法第七条规定，未按照要求建立健全全流程数据安全管理制度、组织开展数据安全教育培训、采取相应的技术措施"
                    "和其他必要措施保障数据安全、加强风险监测并在发现数据安全缺陷和漏洞等风险时立即采取补救措施、在发生数据安全事件时"
                    "立即采取处置措施并按照规定及时告知用户和向有关主管部门报告、定期对数据处理活动开展风险评估并报送风险评估报告、"
                    "对重要数据的处理者明确数据安全负责人和管理机构、对数据出境活动进行安全评估的，由主管部门责令改正，给予警告；"
                    "拒不改正的，处1万元以上10万元以下罚款。")


def test_a_clause_delivered_without_the_clause_after_it_says_the_sentence_goes_on():
    # QA: "第二十条 违反本办法第七条规定的，由主管部门责令改正，给予警告；" was delivered without "拒不改正的，处1万元以上
    # 10万元以下罚款。": the warning read as the whole penalty
    # (a "；" cuts a Chinese sentence only past 240 characters, as ";" does an English one, QA D, F2: that one is
    # one sentence now, delivered whole or not at all; a long one is still cut there)
    assert len(seg(_ZH_PENALTY)) == 1
    text = _ZH_LONG_PENALTY + "\n\n第二十一条 本办法自发布之日起施行。"
    out = seg(text)
    (first,) = [s for s in out if s.text.endswith("给予警告；")]
    last = out[-1]
    assert _delivered(out, {first.index, last.index}) == (
        _ZH_LONG_PENALTY[:_ZH_LONG_PENALTY.index("；") + 1] + " …\n\n第二十一条 本办法自发布之日起施行。")
    assert _delivered(out, {s.index for s in out}) == text  # all of it: as in the source


def test_a_note_among_sub_items_is_no_sub_item():
    # regression QA: "   Note: hold all cardiac medicines if …" between the sub-items of a long item was counted as
    # a sub-item ("[…4 items]" where 3 items and the note were left out)
    drugs = ["Apixaban 5 mg twice daily, with food, for atrial fibrillation, started on 3 March",
             "Bisoprolol 2.5 mg once daily in the morning, uptitrate every 2 weeks to 10 mg",
             "Sacubitril/valsartan 24/26 mg twice daily, not within 36 hours of the last ramipril dose",
             "Atorvastatin 80 mg once daily at night, check liver tests at 6 weeks"]
    text = ("## Medications\n\n1. Cardiac medicines (continue unless told otherwise by the cardiology team)\n"
            + "".join(f"   - {d}\n" for d in drugs[:2])
            + "   Note: hold all cardiac medicines if systolic blood pressure is below 90 mmHg and call the ward.\n"
            + "".join(f"   - {d}\n" for d in drugs[2:])
            + "2. Diabetes: metformin 500 mg twice daily with meals\n")
    parts = [s for s in seg(text) if s.meta.get("sub_items")]
    assert parts and {s.meta["sub_total"] for s in parts} == {4}
    (noted,) = [s for s in parts if "Note: hold all" in s.text]
    assert "Bisoprolol" in noted.text  # with the sub-item above it
    assert sum(s.meta["sub_items"][1] for s in parts) == 4


def test_a_chinese_sentence_that_limits_the_article_before_it_is_part_of_its_segment():
    # QA: "本条不适用于乙方故意或重大过失造成的损失。" ("this article does not apply to …") was delivered without
    # the cap it limits ("…赔偿总额不超过合同总价的20%。"), which was left out: it read as if Party B were not
    # liable for intentional or grossly negligent loss, the opposite of the contract
    text = ("第七条 违约责任\n任何一方违反本合同约定的，应赔偿对方因此遭受的直接损失，但赔偿总额不超过合同总价的20%。"
            "本条不适用于乙方故意或重大过失造成的损失。\n\n第八条 争议解决\n双方应友好协商解决。前款规定的期限不包括法定节假日。"
            "本合同自签字之日起生效。")
    texts = [s.text for s in seg(text)]
    assert "任何一方违反本合同约定的，应赔偿对方因此遭受的直接损失，但赔偿总额不超过合同总价的20%。本条不适用于乙方故意或重大过失造成的损失。" in texts
    assert "双方应友好协商解决。前款规定的期限不包括法定节假日。" in texts
    # a sentence with its own subject stays apart
    assert "本合同自签字之日起生效。" in texts


def test_a_later_part_of_a_table_delivered_alone_follows_what_is_before_the_table_as_the_table_does():
    # "$ kubectl get pods" then a blank line, then the repeated header: the parts before it were left
    # out, and the gap was written as one between paragraphs
    rows = [f"payments-api-5c4b7a9d2-{k:05d}   1/1     Running   {k}          {k + 60}s" for k in range(12)]
    text = ("user: is payments-api up?\n\ntool (bash): $ kubectl -n prod get pods -l app=payments-api\n"
            "NAME                           READY   STATUS    RESTARTS   AGE\n" + "\n".join(rows) + "\n")
    doc = Document.from_sources([Source(id="a", text=text, kind="text", layer="fact")])
    segs = Segmenter()(doc, Plan(domain="t")).segments
    parts = [s for s in segs if s.meta.get("table_rows")]
    command = next(s for s in segs if "$ kubectl" in s.text)
    assert len(parts) >= 3 and parts[0].index == command.index + 1
    for part in parts[1:]:
        out = join_segments([command, part])
        assert out.startswith(command.text + "\nNAME ") and "\n\n" not in out, out
        assert f"[DATA_ROWS: {part.meta['table_rows'][0]}]" in out


def test_notebook_lines_opening_with_a_clock_time_are_notes_not_a_numbered_listing():
    # QA: "10:45 Added 2 mL …" read as line 10 of a listing ("18:print(x)"): the day's three lines were one
    # code block of 57 tokens, left out whole at a budget of 60 with the negation "Do not exceed 2 mL"
    text = ("# Lab notebook\n\n## 2025-03-11\n\n"
            "10:00 Started culture batch B-12 at 37 °C.\n"
            "10:45 Added 2 mL of reagent R4. Do not exceed 2 mL: higher volumes kill the culture.\n"
            "13:10 Sample S-3 looked contaminated. Discarded it.\n")
    out = seg(text)
    assert not any(s.kind == "code" for s in out), [(s.kind, s.text) for s in out]
    assert "10:45 Added 2 mL of reagent R4." in [s.text for s in out]
    assert all("\n" not in s.text for s in out)
    from odcf.compressor import Compressor
    r = Compressor.from_ontology("general").compress(text, query="reagent volume limit", budget=70, timings=False)
    assert "10:45 Added 2 mL of reagent R4. Do not exceed 2 mL: higher volumes kill the culture." in r.text, r.text
    # a numbered listing is still code, its line 12 holding "00 …" too
    listing = "10:def run(x):\n11:    y = x + 1\n12:00 = y\n13:    return y\n"
    assert {s.kind for s in seg(listing)} == {"code"}


def test_minutes_whose_lines_share_a_date_are_cut_a_line_a_paragraph_not_one_block():
    # QA: five "2025-03-11 10:MM Topic. …" lines were one list block of 132 tokens (a shared prefix, as log
    # lines): at a budget of 80 only the title was delivered, the vendor contract line the query asks for not
    text = ("Project Falcon weekly sync, minutes\n\n"
            "2025-03-11 10:00 Opening. Priya chaired; eight people attended.\n"
            "2025-03-11 10:05 Budget. The team agreed to cap cloud spend at $18,000 per month. Finance will not "
            "approve overruns without a ticket.\n"
            "2025-03-11 10:20 Hiring. Two backend roles remain open. The offer to candidate C-207 was declined.\n"
            "2025-03-11 10:40 Risks. The vendor contract expires on 30 April; legal has not reviewed the renewal.\n"
            "2025-03-11 10:55 Close. Next meeting on 18 March.\n")
    out = seg(text)
    assert all("\n" not in s.text for s in out) and len({s.paragraph for s in out}) == 6
    from odcf.compressor import Compressor
    r = Compressor.from_ontology("general").compress(text, query="vendor contract risk", budget=80, timings=False)
    assert "The vendor contract expires on 30 April; legal has not reviewed the renewal." in r.text, r.text
    # log lines sharing a prefix are still one block (a line of a log is no sentence)
    log = "".join(f"2025-03-11 10:0{k} GET /api/orders/{k} 200 {k}ms\n" for k in range(6))
    assert len(seg(log)) == 1


def test_a_paragraph_ending_in_a_semicolon_is_not_marked_as_going_on():
    # QA round 4, finding 2: "Payment must be made within 30 days; …" with every segment delivered, and a SQL
    # migration delivered whole came back "BEGIN; …" … "COMMIT; …": " …" said that something was left out
    text = "Payment must be made within 30 days;\n\nLate payments incur interest at 8% per year."
    out = seg(text)
    assert _delivered(out, {s.index for s in out}) == text
    assert _delivered(out, {0}) == "Payment must be made within 30 days;"  # nothing of its paragraph left out
    sql = "BEGIN;\n\nALTER TABLE users DROP COLUMN billing_line1;\n\nCOMMIT;"
    out = seg(sql)
    assert _delivered(out, {s.index for s in out}) == sql
    # a clause whose paragraph goes on after it, left out: still marked
    zh = seg(_ZH_LONG_PENALTY)  # over 240 characters: cut at its "；" (a shorter one is not, QA D, F2)
    assert _delivered(zh, {0}) == _ZH_LONG_PENALTY[:_ZH_LONG_PENALTY.index("；") + 1] + " …"


def test_an_abbreviation_before_a_number_does_not_end_the_sentence():
    # QA round 4, finding 3: "The pump runs at max." was delivered without "3,000 rpm", "(pos." without "5).",
    # "[2] C. Lee et al., Electrochim. …" without its journal
    cases = {
        "The pump runs at max. 3,000 rpm and min. 800 rpm. Check the seal weekly.":
            ["The pump runs at max. 3,000 rpm and min. 800 rpm.", "Check the seal weekly."],
        "No discount on the commissioning services (pos. 5). Payment is due in 30 days.":
            ["No discount on the commissioning services (pos. 5).", "Payment is due in 30 days."],
        "The limits are in Tab. 2 and in Art. 5 Abs. 2 of the ordinance. Prices incl. 19% VAT.":
            ["The limits are in Tab. 2 and in Art. 5 Abs. 2 of the ordinance.", "Prices incl. 19% VAT."],
        "[2] C. Lee et al., Electrochim. Acta 300 (2019) 45–53. [4] E. Müller, J. Electrochem. Soc. 167 (2020) 120530.":
            ["[2] C. Lee et al., Electrochim. Acta 300 (2019) 45–53.",
             "[4] E. Müller, J. Electrochem. Soc. 167 (2020) 120530."],
        # a sentence may still open with a number after a full stop, and after a unit
        "The plant closed in 2024. 3 people left. Let it rest for 30 min. 3 runs followed.":
            ["The plant closed in 2024.", "3 people left.", "Let it rest for 30 min.", "3 runs followed."],
        "It ran at the max. Then it stopped.": ["It ran at the max.", "Then it stopped."],
    }
    for k, (text, sentences) in enumerate(cases.items()):
        assert [text[a:b] for a, b in split_sentences(text)] == sentences
        if k < 4:  # (the segmenter joins a very short sentence to the next one)
            assert [s.text for s in seg(text)] == sentences


def test_a_tail_without_a_word_is_never_a_sentence_of_its_own():
    # an abbreviation no list knows ("Rz." before a number): its "5)." stays with its sentence; a number opening
    # what follows ("2. Run it.") does not go back
    text = "It is excepted (Rz. 5). Payment is due in 30 days."
    assert [text[a:b] for a, b in split_sentences(text)] == ["It is excepted (Rz. 5).", "Payment is due in 30 days."]
    text = "Steps: 1. Install it. 2. Run it."
    assert "2." in [text[a:b] for a, b in split_sentences(text)]


def test_a_value_after_max_is_delivered_with_its_sentence_or_not_at_all():
    from odcf.compressor import Compressor

    text = ("Pump P-4 specification.\n\nThe pump runs at max. 3,000 rpm and min. 800 rpm. Operators must check the "
            "seal weekly. The housing is cast iron and painted blue. Spare parts are stocked in warehouse B.\n")
    comp = Compressor(PLAN)
    for budget in (20, 30, 40, 60):
        out = comp.compress(text, query="what is the maximum speed of the pump", budget=budget, timings=False).text
        assert ("max." in out) == ("max. 3,000 rpm and min. 800 rpm." in out), (budget, out)
    assert "max. 3,000 rpm and min. 800 rpm." in comp.compress(text, query="what is the maximum speed of the pump",
                                                              budget=60, timings=False).text


def test_a_timeline_list_whose_items_open_with_a_date_and_time_is_cut_in_items():
    # QA s27: "- 2026-03-08 02:14 First session hijack …" shared the prefix "- 2026-03-0" and was taken for a
    # log's time stamps: eight events were one 277-token part, and "When was srv-fin-02 isolated?" got no answer
    # below 46% of the document
    events = ["2026-03-08 02:14 First session hijack from 45.134.26.199 on the Citrix gateway gw-ext-01.",
              "2026-03-08 02:31 Logon of svc-backup to srv-fin-02 (event 4624, logon type 3).",
              "2026-03-08 03:05 Mimikatz-like tool `ntdsutil_x.exe` executed on srv-fin-02.",
              "2026-03-08 04:47 Domain admin logon to dc-hq-01 from srv-fin-02 (pass-the-hash).",
              "2026-03-08 05:40 Outbound HTTPS to 185.220.101.47:443; 3.2 GB sent before the transfer stopped.",
              "2026-03-09 16:40 srv-fin-02, dc-hq-01 and wks-fin-117 isolated; svc-backup disabled."]
    text = "## Timeline (UTC)\n\n" + "".join(f"- {e}\n" for e in events)
    out = seg(text)
    parts = [s for s in out if s.kind == "list"]
    assert len(parts) > 1 and all(s.meta.get("list_total") == len(events) for s in parts)
    assert "".join(s.sep + s.text for s in out) == text.rstrip("\n")
    # a stamped log in a list stays one run of lines (the fold stage writes its prefix once)
    log = "\n".join(f"- 2026-03-08 02:{i:02d}:10 INFO worker-3 processed item {i} of the nightly run" for i in range(12))
    assert [s.kind for s in seg(log)] == ["list"]


def test_a_no_noun_joins_only_a_sentence_naming_a_word_of_its_family():
    # QA s27/qa7 #1: the five-letter prefix joined "No person under 16 …" to "Personal data …" and "No contact
    # details …" to "… contains its costs …": the answers went out only with an unrelated sentence
    out = seg("Personal data collected at the front desk is stored for 12 months. "
              "No person under 16 may use the gym without an adult present.\n\n"
              "The management company contains its costs by sharing one contractor. "
              "No contact details of tenants are given to the contractor.\n\n"
              "The Landlord may deduct repair costs from the Deposit. No deduction shall be made for fair wear.")
    assert [s.text for s in out] == [
        "Personal data collected at the front desk is stored for 12 months.",
        "No person under 16 may use the gym without an adult present.",
        "The management company contains its costs by sharing one contractor.",
        "No contact details of tenants are given to the contractor.",
        "The Landlord may deduct repair costs from the Deposit. No deduction shall be made for fair wear."]


def test_a_no_noun_inside_a_paragraph_or_of_three_letters_goes_with_the_sentence_it_limits():
    # QA s27/qa7 #10: "No detention is charged if …" before another sentence of its paragraph, and "No fee
    # applies …" (a noun of three letters), were delivered apart from the rule they limit
    out = seg("Detention is charged at EUR 55.00 per container per day once the free time has expired. "
              "No detention is charged if the delay is caused by customs inspection. "
              "Invoices for detention are issued at the end of each month.\n\n"
              "The annual membership fee is EUR 120, payable by 1 February. "
              "No fee applies to children under 12 who play with a paying parent.\n\n"
              "Only one court is lit in winter. No one may play after 22:00.")
    assert [s.text for s in out] == [
        ("Detention is charged at EUR 55.00 per container per day once the free time has expired. "
         "No detention is charged if the delay is caused by customs inspection."),
        "Invoices for detention are issued at the end of each month.",
        ("The annual membership fee is EUR 120, payable by 1 February. "
         "No fee applies to children under 12 who play with a paying parent."),
        "Only one court is lit in winter.", "No one may play after 22:00."]


def test_a_timeline_list_whose_times_carry_seconds_is_cut_in_items():
    # QA s27/qa7 #3: "- 2026-03-09 16:40:12 srv-fin-02 isolated …" opened a log entry (seconds), so eight events
    # were one 236-token part and nothing was delivered at 100 tokens
    events = ["2026-03-08 02:14:07 First session hijack observed on vpn-gw-01 from 185.220.101.47.",
              "2026-03-08 03:02:55 Attacker created local admin account svc_backup2 on srv-fin-02.",
              "2026-03-08 04:40:10 Outbound transfer of 3.2 GB from srv-fin-02 to 185.220.101.47 began.",
              "2026-03-08 05:12:31 Transfer stopped after the firewall rule was applied by the SOC.",
              "2026-03-09 09:03:48 Malware sample from srv-fin-02 sent to the vendor for analysis.",
              "2026-03-09 16:40:12 srv-fin-02 isolated from the network by the on-call engineer."]
    text = "## Timeline (UTC)\n\n" + "".join(f"- {e}\n" for e in events)
    parts = [s for s in seg(text) if s.kind == "list"]
    assert len(parts) > 1 and all(s.meta.get("list_total") == len(events) for s in parts)
    assert any(s.text.endswith("isolated from the network by the on-call engineer.") for s in parts)
    # a stamped log in a list, its lines with a level (or a thread in brackets), stays one run of lines
    for line in ("- 2026-03-08 02:{:02d}:10 WARN disk usage on worker-3 at {} percent of the volume",
                 "- 2026-03-08 02:{:02d}:10 [worker-3] processed item {} of the nightly run as planned"):
        log = "\n".join(line.format(i, i) for i in range(12))
        assert [s.kind for s in seg(log)] == ["list"], line


def test_a_heading_in_a_message_keeps_the_speaker_of_the_parts_under_it():
    # QA 3 finding 7: "## Steps" in an assistant's answer ended its turn, and the advice under it was
    # delivered with no speaker
    chat = seg("user: How do I rotate the signing key?\n\nassistant: You can rotate it with the vault CLI.\n\n"
               "## Steps\n\nRun the rotate command from the ops bastion.\n\nDo not restart the service.\n\n"
               "user: And the old key?\n\nassistant: It stays valid for 24 hours.\n")
    said = {s.text: s for s in chat}
    assert said["Do not restart the service."].meta["speaker"] == "assistant:"
    assert said["Do not restart the service."].meta["turn"] == said["Run the rotate command from the ops bastion."].meta["turn"]
    assert "speaker" not in said["## Steps"].meta
    # delivered without the turn's first line: the label after the heading, never before it
    keep = {said["## Steps"].index, said["Do not restart the service."].index}
    assert _delivered(chat, keep) == "## Steps\n\nassistant: Do not restart the service."
    # with it: no second label
    keep |= {said["assistant: You can rotate it with the vault CLI."].index}
    assert _delivered(chat, keep) == ("assistant: You can rotate it with the vault CLI.\n\n## Steps\n\n"
                                      "Do not restart the service.")
    # speakers taking turns (no role words): a heading with a speaker's paragraph still to come is in
    # the message too; a section after the chat's last turn is no one's
    talk = seg("Alice: Which claims are late?\n\nBob: Three of them.\n\nAlice: Which one waits?\n\nBob: CLM-1.\n\n## Details\n\nCLM-1 waits for SIU.\n\n"
               "Alice: Pay the other two.\n\nBob: Done.\n\n## Summary\n\nTwo claims were paid.\n")
    turns = {s.text: s.meta.get("speaker") for s in talk}
    assert turns["CLM-1 waits for SIU."] == "Bob:" and turns["Two claims were paid."] is None
