"""What goes with what, on Chinese regulations and on markdown agent logs (QA of stop 21)."""
from odcf.compressor import Compressor
from odcf.stages.segment.lines import LIST_RE
from tests.stages.sweeps import only_with

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
    assert [bool(LIST_RE.match(t)) for t in ("（一）吸收公众存款；", "(三)发行", "1、变更名称", "①第一项", "（十二）变更",
                                             "（二）2025年6月30日前完成更换；")] == [True] * 6
    # a section heading, a case number, a year list: not items
    assert [bool(LIST_RE.match(t)) for t in ("一、总则", "（2024）第5号", "2024、2025年", "1、2、3号楼")] == [False] * 4


def test_a_chinese_item_goes_only_with_the_line_that_introduces_its_list(plan):
    # QA: "（三）发行或者代理销售理财……产品；" was delivered alone under 第十二条, reading as allowed; its 不得 was
    # in the dropped lead-in "第十四条 小额贷款公司不得从事下列业务或者活动："
    only_with(lambda b: _compress(plan, REG, "发行理财产品", b).text, "（三）", "不得从事下列业务", range(20, 200, 8))


def test_a_later_sentence_of_a_chinese_article_is_delivered_without_the_first_at_a_small_budget(plan):
    # QA (regression): tying "对自然人的单户贷款余额……人民币20万元。" to the opening sentence of 第十六条 lost the
    # answer at every budget up to 180 tokens; a later sentence goes on its own again
    r = _compress(plan, REG, "对自然人的单户贷款余额上限是多少", 60)
    assert "对自然人的单户贷款余额原则上不得超过" in r.text, r.text


def test_a_chinese_amendment_goes_with_the_amount_it_changes(plan):
    # QA: "不得超过人民币100万元" was delivered without 第三十六条 "……100万元修改为人民币80万元": CJK characters
    # around "100万元" hid the number, and the unit ran on into "修改为人民币"
    from odcf.document import Segment
    from odcf.stages.rank import correction_links

    texts = ["第十二条 小额贷款公司对同一借款人的贷款余额不得超过人民币100万元；", "第十五条 贷款利率上限不得超过4倍。",
             "第三十六条 本办法第十二条第一款规定的人民币100万元修改为人民币80万元，自2025年1月1日起执行。"]
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence", paragraph=i)
            for i, t in enumerate(texts)]
    assert correction_links(segs) == {"s2": ["s0"]}
    # a shared number with "不再" or "修改为" in between, or an amendment naming no article: no link (QA: "30日"
    # deadlines, dates and another subject's 100万元 had been linked as corrected)
    for pair in (["申请人应当自收到补正通知之日起30日内提交补正材料。", "逾期30日未提交的，不再受理。"],
                 ["本办法自2025年10月15日起施行。", "2025年10月15日前已经取得许可证的企业，不再重新申请。"],
                 ["对法人的单户贷款余额不得超过人民币100万元。", "注册资本下限由人民币100万元修改为人民币80万元。"],
                 ["依照第5条的规定办理登记。", "第5条规定的现场登记改为网上办理。"]):
        segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence", paragraph=i)
                for i, t in enumerate(pair)]
        assert correction_links(segs) == {}, pair
    only_with(lambda b: _compress(plan, REG, "对同一借款人的贷款余额上限是多少", b).text, "100万元；", "修改为人民币80万元",
               range(30, 200, 8), must_see=False)


DECISION = ("第五条 公共数据按照重要程度分为一般数据、重要数据和核心数据三级。\n"
            "公共管理和服务机构应当在本办法施行之日起90日内完成本单位公共数据的分类分级，并报市大数据管理局备案。\n\n"
            "第七条 重要数据的处理者应当于每年3月31日前更新数据目录。\n"
            "重要数据的处理者应当每年至少开展一次风险评估，并于每年3月31日前向市大数据管理局报送上一年度风险评估报告。\n\n"
            "第十二条 违反本办法第五条第二款规定，未按期完成分类分级或者备案的，由市大数据管理局责令改正；"
            "逾期不改正的，处1万元以上5万元以下罚款。\n\n"
            "附：市人民政府关于修改《公共数据安全管理办法》的决定\n\n"
            "一、将第五条第二款中的“90日内”修改为“60日内”。\n"
            "二、将第七条第二款中的\"每年3月31日前\"修改为\"每年1月31日前\"。\n"
            "三、将第十二条中的\"处1万元以上5万元以下罚款\"修改为\"处2万元以上20万元以下罚款\"。\n")


def test_an_amendment_decision_goes_with_the_words_it_quotes_in_the_article_and_paragraph_it_names():
    # QA: '二、将第七条第二款中的"每年3月31日前"修改为"每年1月31日前"。' was not read as replacing anything (the
    # old value is quoted, and "前" and the quote stood between the number and 修改为), so the repealed deadline was
    # delivered as current; and '将第五条第二款中的"90日内"…' was linked to 第十二条, which only cites 第五条第二款
    from odcf.stages.rank import correction_links

    compressor = Compressor.from_ontology("zh_regulation")
    segs = compressor.compress(DECISION, budget=10_000, annotate=False).document.segments
    by_text = {s.text: s.id for s in segs}

    def seg(part):
        return next(sid for text, sid in by_text.items() if part in text)

    # the second 款 of 第七条, not its first, which says "每年3月31日前" too
    assert correction_links(segs) == {seg("一、"): [seg("90日内完成")], seg("二、"): [seg("3月31日前向")],
                                      seg("三、"): [seg("处1万元以上5万元以下罚款。")]}
    only_with(lambda b: compressor.compress(DECISION, query="重要数据风险评估报告什么时候报送？", budget=b, annotate=False).text,
               "3月31日前向", "修改为\"每年1月31日前\"", (60, 100, 160), must_see=False)


def test_a_change_naming_no_article_goes_with_the_words_it_quotes_and_a_deletion_with_what_it_deletes():
    # QA: '将本办法中的"每年3月31日前"修改为…' (no article named) and '删去第十二条中的"…"' linked nothing, so the
    # repealed deadline and the deleted fine were delivered as current
    from odcf.stages.rank import correction_links

    text = DECISION.split("附：")[0] + (
        "附：市人民政府关于修改《公共数据安全管理办法》的决定\n\n"
        "一、将本办法中的\"每年3月31日前\"修改为\"每年1月31日前\"。\n"
        "二、删去第十二条中的\"逾期不改正的，处1万元以上5万元以下罚款\"。\n"
        "三、将本办法中的\"数据\"修改为\"信息\"。\n")
    segs = Compressor.from_ontology("zh_regulation").compress(text, budget=10_000, annotate=False).document.segments
    by_text = {s.text: s.id for s in segs}

    def seg(part):
        return next(sid for t, sid in by_text.items() if part in t)

    links = correction_links(segs)
    # every sentence that says "每年3月31日前" (a change of the whole 办法); the 款 of 第十二条 that holds the words
    # deleted; "数据" is in every sentence and names none
    assert links[seg("一、")] == [seg("3月31日前更新"), seg("3月31日前向")]
    assert links[seg("二、")] == [seg("逾期不改正的")]
    assert seg("三、") not in links


SPEC = ("# 支付网关 v3.2 技术规格说明书\n\n文档编号：PGW-SPEC-2024-031　版本：3.2.1　密级：内部\n\n"
        "### 3.2 查询支付单 GET /v3/payments/{payment_id}\n\n3.2.1 查询接口的 P99 延迟不得超过 80 ms。\n"
        "3.2.2 payment_id 不存在时返回 HTTP 404，错误码 `PAYMENT_NOT_FOUND`。\n\n"
        "## 5 安全要求\n\n5.5 同一商户每分钟请求数超过 6,000 次时触发限流，返回 HTTP 429。\n\n"
        "## 7 变更记录\n\n| 版本 | 日期 | 变更内容 |\n|---|---|---|\n| 3.1 | 2024-01-15 | 初版 |\n"
        "| 3.2.1 | 2024-05-20 | 限流阈值由每分钟 3,000 次变更为 6,000 次 |\n")


def test_a_change_that_says_what_the_value_was_corrects_only_what_holds_it():
    # QA: the change-log row "| 3.2.1 | … | 限流阈值由每分钟 3,000 次变更为 6,000 次 |" was linked, by the version
    # number alone, as the correction of "3.2.1 查询接口的 P99 延迟不得超过 80 ms。", which was then withheld as stale
    # (the answer, 19 tokens, at 90 tokens) with a false reason; nothing in the spec says 3,000 any more
    from odcf.stages.rank import correction_links

    compressor = Compressor.from_ontology("tender_rfp")
    r = compressor.compress(SPEC, query="查询接口的 P99 延迟要求是多少？", budget=60, annotate=False)
    assert correction_links(r.document.segments) == {}
    assert "80 ms" in r.text, r.text


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


def test_a_paragraph_under_a_bold_label_and_its_block_stays_under_that_label(plan):
    # QA (regression): "Recheck renal function …" under "**Plan:**" and its table was delivered under
    # "**History:**", read as history
    note = ("# Clinic note\n\n**History:**\n- Type 2 diabetes since 2016\n- Hypertension, on lisinopril 10 mg daily\n\n"
            "Patient reports two hypoglycaemic episodes this month.\n\n**Plan:**\n| Drug | Dose |\n|---|---|\n"
            "| Metformin | 500 mg BID |\n\nRecheck renal function in 6 weeks and review the diary at that visit.\n")
    for budget in range(20, 90, 5):
        r = _compress(plan, note, "when to recheck renal function", budget)
        if "Recheck renal function" in r.text:
            assert "**Plan:**" in r.text, (budget, r.text)
            before = r.text[:r.text.index("Recheck")]
            assert before.rfind("**Plan:**") > before.rfind("**History:**"), (budget, r.text)


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


def test_a_chinese_enumeration_is_cut_in_small_parts(plan):
    # QA (regression): the four items of 第八条 were one 77-token part, so the answer item never fitted
    # beside its lead-in at 90 tokens (delivered alone before, as a sentence); one item a part then lost
    # lists of short items to the […n items] markers: parts of about 40 tokens
    text = ("第八条 燃气经营企业应当按照下列时限完成整改：\n（一）立即停止使用未经检验的钢瓶；\n"
            "（二）2025年6月30日前完成全部老旧管道的更换，逾期未完成的，不得新增用户；\n"
            "（三）2025年12月31日前建成用户端安全监测平台；\n（四）每季度向市城市管理局报送整改进度。\n\n"
            "第九条 市城市管理局应当对整改情况进行抽查。\n")
    r = Compressor(plan, stages=CORE).compress(text, query="老旧管道更换的期限", budget=90)
    from odcf.stages.segment import ZH_LIST_TOKENS
    from odcf.tokens import get_counter

    parts = [s for s in r.document.segments if s.kind == "list"]
    assert len(parts) == 3 and all(s.original.startswith("（") for s in parts), [s.original for s in parts]
    assert all(get_counter("o200k_base").count(s.original) <= ZH_LIST_TOKENS or "\n" not in s.original for s in parts)
    assert "2025年6月30日前完成全部老旧管道的更换" in r.text and "按照下列时限完成整改" in r.text, r.text


SLIDES = '# Q3 roadmap review\n\nPresenter: Dana Whitfield\n\n---\n\n## Slide 2: Goals\n\n- Cut p99 latency of checkout to under 300 ms\n- Ship SSO for enterprise tier by 15 September\n\n---\n\n## Slide 3: Risks\n\n- Vendor contract for the CDN expires on 30 September\n- Two open headcount slots in the SRE team\n\n---\n\n## Slide 4: Budget\n\nCloud spend capped at $1.2M for the quarter; current run rate is $1.35M.\n\n---\n\n## Slide 5: Decisions needed\n\nApprove the CDN renewal at $240k per year.\n'


def test_a_rule_left_out_for_room_says_so_not_that_it_separated_nothing():
    # QA (regression): at 125 tokens the four slide separators were trimmed for room, with both sides
    # delivered, and each said "had none on one side, or another rule before it"
    from odcf.compressor import Compressor as C

    for budget in (120, 125, 140):
        r = C.from_ontology("general").compress(SLIDES, query="cloud spend cap and CDN renewal", budget=budget)
        segs = r.document.segments
        for k, s in enumerate(segs):
            if s.original.strip() == "---" and s.status == "dropped" and "horizontal rule" in " ".join(s.reasons):
                before = any(not x.dropped for x in segs[:k] if x.original.strip() != "---")
                after = any(not x.dropped for x in segs[k + 1:] if x.original.strip() != "---")
                between = [x for x in segs[k + 1:] if not x.dropped]
                assert not (before and after and between and between[0].original.strip() != "---"), (budget, r.text)


GONGWEN = ("关于做好2025年度安全生产检查工作的通知\n\n一、检查范围\n（一）危险化学品生产、经营、储存企业；\n（二）非煤矿山企业；\n"
           "（三）人员密集场所。\n\n二、检查时间\n（一）自查阶段：2025年3月1日至3月31日；\n（二）抽查阶段：2025年4月1日至5月15日。\n\n"
           "三、工作要求\n（一）各单位须于2025年3月10日前报送自查方案；\n（二）对拒不整改的企业，依法处以5万元以上10万元以下罚款；\n"
           "（三）严禁以检查为名收取任何费用。\n")


def test_the_items_of_a_chinese_section_go_only_with_its_numbered_title(plan):
    # QA (regression): "（三）对拒不整改的企业……罚款" was delivered under "二、检查时间", read as a part of it,
    # while its own title "三、工作要求" was dropped
    seen = False
    for budget in range(20, 160, 6):
        r = _compress(plan, GONGWEN, "拒不整改的企业如何处罚", budget)
        if "拒不整改" in r.text:
            seen = True
            before = r.text[:r.text.index("拒不整改")]
            assert before.rfind("三、工作要求") > before.rfind("二、检查时间"), (budget, r.text)
    assert seen


PROHIBIT = '第十条 从业人员在执业活动中不得有下列行为：\n（一）泄露客户信息；\n（二）挪用客户资金；\n（三）承诺保本收益；\n（四）代客操作账户；\n（五）私下收取费用；\n（六）违规代持股份；\n（七）夸大产品收益；\n（八）销售未备案产品；\n（九）向客户借款；\n（十）诋毁同业机构；\n（十一）伪造业务凭证；\n（十二）其他违法违规行为。\n\n第十一条 违反本办法第十条规定的，由协会给予警告，并处1万元以上3万元以下罚款；情节严重的，暂停执业资格6个月至12个月。\n\n第十二条 本办法自2025年7月1日起施行。\n'


def test_a_lead_in_scored_first_is_not_trimmed_away_for_its_items_low_scores(plan):
    # QA (regression): "第十条 从业人员……不得有下列行为：" scored 1.0 and went in with its best items, then the
    # exact measure trimmed those items first (0.12 each) and the lead-in with them, for the effective date
    compressor = Compressor.from_ontology("zh_regulation")
    for budget in (80, 100, 120):
        r = compressor.compress([{"id": "docs/zh_prohibit.md", "text": PROHIBIT}], query="从业人员不得有哪些行为？",
                                budget=budget)
        assert "不得有下列行为" in r.text and "（" in r.text, (budget, r.text)


def test_an_english_numbered_list_keeps_its_part_size():
    from odcf.stages.segment.lines import ZH_ITEM_RE

    assert [bool(ZH_ITEM_RE.match(t)) for t in ("（一）吸收", "(三)发行", "（2）变更", "①第一", "1、变更")] == [True] * 5
    assert [bool(ZH_ITEM_RE.match(t)) for t in ("(1) The supplier shall", "(a) flood damage", "1. Step")] == [False] * 3


def test_a_chinese_penalty_tail_goes_only_with_its_article(plan):
    # QA: "情节严重的，处5万元以上50万元以下罚款。" (第十五条) was delivered right after 第十四条, reading as 第十四条's
    # penalty; a clause opening with a condition on the violation before it qualifies that rule
    only_with(lambda b: _compress(plan, REG, "拒不改正的罚款是多少", b).text, "拒不改正的，处人民币3万元以下罚款",
               "第三十二条 小额贷款公司未按照本办法规定报送材料的", range(20, 200, 6))


def test_an_amendment_that_rewrites_a_whole_paragraph_changes_that_paragraph_not_an_article_citing_it():
    # QA: "一、第七条第二款修改为：“……每年4月30日前……”" was linked, by shared words, to 第十五条, which only cites
    # 第七条第二款, and the answer 第十五条 was withheld as "corrected by" it
    from odcf.document import Segment
    from odcf.stages.rank import correction_links

    texts = ["第七条 小额贷款公司应当建立健全内部控制制度。",
             "小额贷款公司应当于每年3月31日前向市地方金融监督管理局报送上一年度财务会计报告。",
             "第十五条 小额贷款公司未按照本办法第七条第二款规定于每年3月31日前报送财务会计报告的，由市地方金融监督管理局责令限期改正。",
             "一、第七条第二款修改为：“小额贷款公司应当于每年4月30日前向市地方金融监督管理局报送上一年度经审计的财务会计报告。”"]
    segs = [Segment(id=f"s{i}", source_id="a", index=i, text=t, original=t, kind="sentence", paragraph=i // 2,
                    sep="\n" if i else "") for i, t in enumerate(texts)]
    assert correction_links(segs) == {"s3": ["s1"]}


#: A tender notice hard-wrapped at about 40 characters, as a PDF extract is (QA s31 D, F4).
WRAPPED_TENDER = ("根据《中华人民共和国政府采购法》及相关规定，某市人民医院就64排螺旋CT及配套\n"
                  "设备采购项目进行公开招标，欢迎符合资格条件的供应商参加投标。本项目预算金额为\n"
                  "人民币8,600,000.00元，最高限价为人民币8,500,000.00元，投标报价超过最高限价的\n"
                  "投标无效。投标人不得以低于成本的报价竞标，除非能够提供充分的成本说明材料并经\n"
                  "评标委员会认可。投标截止时间为2024年4月29日09时30分，逾期送达的投标文件采购\n"
                  "人不予受理。本项目不接受联合体投标，也不接受进口产品投标。\n")
#: The same notice a sentence a line, its long lines wrapped (QA s31 D, repro/wrapped2_zh.txt).
WRAPPED_BY_SENTENCE = ("根据《中华人民共和国政府采购法》及相关规定，某市人民医院就64排螺旋CT及配套\n"
                       "设备采购项目进行公开招标，欢迎符合资格条件的供应商参加投标。\n"
                       "本项目预算金额为人民币8,600,000.00元，最高限价为人民币8,500,000.00元，投标报价\n"
                       "超过最高限价的投标无效。\n"
                       "投标人不得以低于成本的报价竞标，除非能够提供充分的成本说明材料并经评标委员会认可。\n"
                       "投标截止时间为2024年4月29日09时30分，逾期送达的投标文件采购人不予受理。\n"
                       "本项目不接受联合体投标，也不接受进口产品投标。\n")


def test_a_hard_wrapped_chinese_paragraph_has_no_title_line_and_its_answer_goes_alone():
    # QA s31 F4: the first line, "根据……某市人民医院就64排螺旋CT及配套", was read as a title line heading the
    # paragraph (one "word", no case to show it goes on), so the ceiling price (score 1.0, 44 tokens) went only
    # with the preamble (0.26): at 80 tokens the preamble alone was delivered, at 70 the preamble and the last
    # sentence. The same text on one line delivered the ceiling price alone
    from odcf.stages.budget import _antecedents

    compressor = Compressor.from_ontology("zh_regulation")
    for text in (WRAPPED_TENDER, WRAPPED_BY_SENTENCE):
        for budget in (70, 80):
            r = compressor.compress(text, query="最高限价和投标截止时间", budget=budget)
            assert "最高限价为人民币8,500,000.00元" in r.text.replace("\n", ""), (budget, r.text)
            assert "根据《中华人民共和国政府采购法》" not in r.text, (budget, r.text)
        doc = compressor.compress(text, budget=10_000, annotate=False).document
        assert len(doc.segments) == 5 and _antecedents(doc) == ({}, set())


def test_a_chinese_title_line_still_heads_the_lines_under_it():
    # a title ends no sentence and holds no clause's comma; a notice's title may be long, a wrapped line is longer
    from odcf.stages.budget import _antecedents, _title_line

    assert _title_line("2024年第一季度工作总结") and _title_line("关于印发《某市政府采购管理办法》的通知")
    assert not any(_title_line(t) for t in ("根据《中华人民共和国政府采购法》及相关规定，某市人民医院就64排螺旋CT及配套",
                                            "投标人不得以低于成本的报价竞标除非能够提供充分的成本说明材料并经评标委员会",
                                            "本项目预算金额为人民币8,600,000.00元；"))
    compressor = Compressor.from_ontology("zh_regulation")
    for text in ("关于印发《某市政府采购管理办法》的通知\n本办法自2025年1月1日起施行。原办法同时废止。\n",
                 "2024年第一季度工作总结\n本季度营业收入同比增长12%。净利润为人民币3,200万元。\n"):
        doc = compressor.compress(text, budget=10_000, annotate=False).document
        assert _antecedents(doc) == ({doc.segments[1].id: doc.segments[0].id}, set()), text
