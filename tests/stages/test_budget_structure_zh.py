"""What goes with what, on Chinese regulations and on markdown agent logs (QA of stop 21)."""
from odcf.compressor import Compressor
from odcf.stages.segment.lines import LIST_RE

CORE = {"rules": False, "fold": False}

REG = ("## 第三章 业务规范\n\n"
       "第十二条 小额贷款公司对同一借款人的贷款余额不得超过人民币100万元；对同一借款人及其关联方的贷款余额不得超过公司净资产的10%。\n\n"
       "第十四条 小额贷款公司不得从事下列业务或者活动：\n\n"
       "（一）吸收或者变相吸收公众存款；\n"
       "（二）通过互联网平台或者地方各类交易场所销售、转让本公司的信贷资产；\n"
       "（三）发行或者代理销售理财、信托计划等资产管理产品；\n"
       "（四）以暴力、威胁、侮辱、骚扰等方式催收贷款。\n\n"
       "第十五条 小额贷款公司的贷款利率上限不得超过一年期贷款市场报价利率的4倍。\n\n"
       "第十六条 小额贷款公司应当按照贷款金额与借款人收入相匹配的原则审慎确定贷款额度。"
       "对自然人的单户贷款余额原则上不得超过该借款人最近三年年均收入的三分之一，且最高不得超过人民币20万元。\n\n"
       "第三十二条 小额贷款公司未按照本办法规定报送材料的，由所在地市级地方金融监督管理部门责令改正，予以警告；"
       "拒不改正的，处人民币3万元以下罚款。\n\n"
       "## 第六章 附则\n\n"
       "第三十五条 本办法自2024年7月1日起施行。\n\n"
       "第三十六条 本办法第十二条第一款规定的人民币100万元修改为人民币80万元，自2025年1月1日起执行。\n")


def _compress(plan, text, query, budget):
    return Compressor(plan, stages=CORE).compress(text, query=query, budget=budget, annotate=False)


def test_chinese_enumerators_are_list_items():
    assert [bool(LIST_RE.match(t)) for t in ("（一）吸收公众存款；", "(三)发行", "1、变更名称", "①第一项", "（十二）变更")] == [True] * 5
    # a section heading, a case number, a year list: not items
    assert [bool(LIST_RE.match(t)) for t in ("一、总则", "（2024）第5号", "2024、2025年")] == [False] * 3


def test_a_chinese_item_goes_only_with_the_line_that_introduces_its_list(plan):
    # QA: "（三）发行或者代理销售理财……产品；" was delivered alone under 第十二条, reading as allowed; its 不得 was
    # in the dropped lead-in "第十四条 小额贷款公司不得从事下列业务或者活动："
    seen = False
    for budget in range(20, 200, 8):
        r = _compress(plan, REG, "发行理财产品", budget)
        if "（三）" in r.text:
            seen = True
            assert "不得从事下列业务" in r.text, (budget, r.text)
    assert seen


def test_a_later_sentence_of_a_chinese_article_goes_with_the_article_number(plan):
    # QA: "对自然人的单户贷款余额……人民币20万元。" (第十六条) was delivered right under 第十五条, and
    # "拒不改正的，处人民币3万元以下罚款。" alone under the heading of another chapter
    seen = set()
    for budget in range(20, 200, 8):
        r = _compress(plan, REG, "自然人单户贷款余额上限；拒不改正的罚款", budget)
        for later, article in (("对自然人的单户贷款余额", "第十六条"), ("拒不改正的", "第三十二条")):
            if later in r.text:
                seen.add(later)
                assert article in r.text, (budget, r.text)
    assert seen == {"对自然人的单户贷款余额", "拒不改正的"}
    # the record says why such a sentence was left out
    reasons = set()
    for budget in range(20, 120, 8):
        record = Compressor(plan, stages=CORE).compress(REG, query="自然人单户贷款余额", budget=budget).record
        reasons |= {s["reason"] for src in record["sources"] for s in src["segments"]
                    if s["status"] == "dropped" and s["reason"] and "opens with its article's number" in s["reason"]}
    assert reasons


def test_a_chinese_amendment_goes_with_the_amount_it_changes(plan):
    # QA: "不得超过人民币100万元" was delivered without 第三十六条 "……100万元修改为人民币80万元": CJK characters
    # around "100万元" hid the number, and the unit ran on into "修改为人民币"
    from odcf.document import Segment
    from odcf.stages.rank import correction_links

    texts = ["第十二条 小额贷款公司对同一借款人的贷款余额不得超过人民币100万元；", "第十五条 贷款利率上限不得超过4倍。",
             "第三十六条 本办法第十二条第一款规定的人民币100万元修改为人民币80万元，自2025年1月1日起执行。"]
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence") for i, t in enumerate(texts)]
    assert correction_links(segs) == {"s2": ["s0"]}
    for budget in range(30, 200, 8):
        r = _compress(plan, REG, "对同一借款人的贷款余额上限是多少", budget)
        if "100万元；" in r.text:
            assert "修改为人民币80万元" in r.text, (budget, r.text)


LOG = ("# Agent session\n\n"
       "**Agent:** I'll check the deployment status on staging.\n\n"
       "**Tool result:**\n\n"
       "```json\n"
       '{"exit_code": 0, "stdout": "Release payments-api-staging has been upgraded. Happy Helming! REVISION: 43"}\n'
       "```\n\n"
       "**Agent:** Staging is healthy on revision 43.\n\n"
       "---\n\n"
       "**User:** Does prod have the same problem?\n\n"
       "---\n\n"
       "---\n\n"
       "**Agent:** I have not run anything against prod, as you asked. Prod is still on 2.13.4, so it is not "
       "affected yet.\n\n"
       "---\n")


def test_a_bold_title_ending_in_a_colon_over_a_block_introduces_only_that_block(plan):
    # QA: "**Tool result:**" was delivered over "**Agent:** Staging is healthy on revision 43." with its own
    # JSON left out: that line is the agent's, not a part of the tool's result
    for budget in range(10, 120, 4):
        r = _compress(plan, LOG, "is staging healthy, is prod affected", budget)
        if "Tool result" in r.text:
            assert "exit_code" in r.text, (budget, r.text)
    r = _compress(plan, LOG, "is staging healthy", 30)
    assert "Staging is healthy on revision 43." in r.text and "Tool result" not in r.text, r.text


def test_a_horizontal_rule_is_delivered_only_between_two_delivered_parts(plan):
    # QA: "---" four times in a row, with nothing between, filled the room at 80 tokens
    for budget in range(10, 140, 4):
        r = _compress(plan, LOG, "is prod affected", budget)
        lines = [ln for ln in r.text.split("\n") if ln.strip()]
        assert lines[:1] != ["---"] and lines[-1:] != ["---"], (budget, r.text)
        assert all(not (a == b == "---") for a, b in zip(lines, lines[1:])), (budget, r.text)
    record = Compressor(plan, stages=CORE).compress(LOG, query="is prod affected", budget=40).record
    rules = [s for src in record["sources"] for s in src["segments"] if s["status"] == "dropped"
             and "horizontal rule" in (s["reason"] or "")]
    assert rules, record
