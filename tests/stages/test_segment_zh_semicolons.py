"""A Chinese sentence is cut at its "；" only where an English one is at ";" (QA D, F2)."""
from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.plan.model import Plan
from odcf.render import join_segments
from odcf.stages.segment import Segmenter

# QA D, F2 (repro/semi_zh.txt and semi_en.txt): at 30 tokens the rule went out without its exception,
# "第6.1条规定的违约金为合同总价款的百分之五；…", while the English one was delivered whole
ZH = ("乙方应于2024年3月5日前交货。\n"
      "第6.1条规定的违约金为合同总价款的百分之五；但是，因不可抗力导致的延误除外。\n"
      "甲方应在验收合格后15日内付款。\n")
EN = ("The Supplier shall deliver by 5 March 2024.\n"
      "Clause 6.1 sets liquidated damages at 5% of the contract price; however, delays caused by force majeure are "
      "excluded.\nThe Buyer shall pay within 15 days of acceptance.\n")
# a sentence over 240 characters: cut at its "；" as an English one is at ";"
LONG_RULE = ("第6.1条 乙方未按照本合同约定的时间、地点和数量交付货物的，每逾期一日，应当按照逾期交付部分货款的千分之三向甲方支付"
             "违约金，逾期超过三十日的，甲方有权解除本合同，并要求乙方退还已经支付的全部款项，赔偿甲方因此遭受的全部直接损失，"
             "包括但不限于甲方为采购替代货物而额外支付的价款、运输费用、仓储费用以及合理的律师费用和诉讼费用；")
# (no marker of zh_regulation in the exception, "应当", "不得" …: a part holding one goes with the first anyway)
LONG_EXCEPTION = ("但是，因不可抗力或者甲方原因导致逾期交付的，乙方不承担违约责任，乙方在不可抗力事件发生之日起五日内书面通知甲方，"
                  "并在事件结束之日起十五日内提供有关机构出具的证明文件。")


def seg(text):
    doc = Document.from_sources([Source(id="a", text=text, kind="text", layer="fact")])
    return Segmenter()(doc, Plan(domain="t")).segments


def _compress(ontology, text, query, budget):
    return Compressor.from_ontology(ontology).compress(text, query=query, budget=budget, annotate=False)


def test_a_chinese_sentence_is_cut_at_its_semicolons_only_where_an_english_one_would_be():
    out = seg(ZH)
    assert [s.text for s in out] == ["乙方应于2024年3月5日前交货。", "第6.1条规定的违约金为合同总价款的百分之五；但是，因不可抗力导致的延误除外。",
                                     "甲方应在验收合格后15日内付款。"]
    assert len(seg(EN)) == 3  # as the English one
    out = seg(LONG_RULE + LONG_EXCEPTION)
    assert len(LONG_RULE + LONG_EXCEPTION) > 240
    assert [s.text for s in out] == [LONG_RULE, LONG_EXCEPTION]
    assert [s.meta.get("cut_part") for s in out] == [0, 1]
    assert join_segments(out) == LONG_RULE + LONG_EXCEPTION


def test_a_chinese_rule_and_its_exception_after_a_semicolon_go_together():
    for budget in range(16, 81, 4):
        r = _compress("zh_regulation", ZH, "违约金是多少", budget)
        assert ("百分之五" in r.text) == ("不可抗力导致的延误除外" in r.text), (budget, r.text)
        assert "百分之五；…" not in r.text, (budget, r.text)
    assert "第6.1条规定的违约金为合同总价款的百分之五；但是，因不可抗力导致的延误除外。" in _compress(
        "zh_regulation", ZH, "违约金是多少", 60).text
    for budget in range(16, 81, 4):  # as the English one
        text = _compress("legal_contract", EN, "what are the liquidated damages", budget).text
        assert ("5% of the contract price" in text) == ("force majeure are excluded" in text), (budget, text)


def test_the_parts_of_a_long_chinese_sentence_cut_before_an_exception_go_together():
    text = "第五条 交货\n\n" + LONG_RULE + LONG_EXCEPTION + "\n\n第七条 本合同自双方签字之日起生效。"
    seen = set()
    for budget in (60, 120, 180, 240, 300, 400, 600):
        r = _compress("zh_regulation", text, "逾期交付的违约金", budget)
        has_rule, has_exception = "千分之三" in r.text, "乙方不承担违约责任" in r.text
        assert has_rule == has_exception, (budget, r.text)
        seen.add(has_rule)
        if not has_rule:
            first = next(s for s in r.document.segments if "千分之三" in s.text)
            assert any("go together" in reason for reason in first.reasons), first.reasons
    assert seen == {True, False}
