import pytest

from odcf.compressor import Compressor
from odcf.document import Document, Source
from odcf.pipeline import Pipeline
from odcf.plan.model import Plan, RerankQuery, RoleContract
from odcf.stages.protect import Protector
from odcf.stages.rank import LexicalRanker
from odcf.stages.rerank import EmbeddingReranker, candidate_count, edge_order
from odcf.stages.segment import Segmenter

PLAN = Plan(domain="t", queries=(RerankQuery("task", "rent payment obligations of the tenant"),),
            roles={"default": RoleContract("default", 400)})

RELEVANT = "The tenant must pay the monthly rent on the first day of each month."
IRRELEVANT = "Penguins huddle together to survive the Antarctic winter."


def run(sources, *, query=None, budget=None, plan=PLAN, **opts):
    if opts.get("embedder") == "hash":
        opts.setdefault("first_pass", "lexical")  # model-free
    doc = Document.from_sources(sources, query=query, budget=budget)
    return Pipeline([Segmenter(), Protector(), LexicalRanker(), EmbeddingReranker(**opts)]).run(doc, plan)


def score(doc, source_id):
    return max(s.score for s in doc.segments if s.source_id == source_id)


def test_hash_embedder_ranks_relevant_above_irrelevant():
    out = run([Source(id="far", text=IRRELEVANT), Source(id="near", text=RELEVANT)],
              query="when must the tenant pay rent", embedder="hash")
    assert score(out, "near") > score(out, "far")
    ev = next(e for e in out.trace if e.stage == "rerank")
    assert ev.data["embedded"] == 2 and ev.data["scorers"]["en"].startswith("hash")


@pytest.mark.slow
def test_minilm_ranks_relevant_above_irrelevant_without_shared_words():
    # No content word in common with the query: only meaning can tell them apart.
    near = Source(id="near", text="Lessees settle what they owe for the flat at the start of every month.")
    far = Source(id="far", text=IRRELEVANT)
    out = run([far, near], query="When is the rent due?", semantic_weight=1.0)
    assert score(out, "near") > score(out, "far")
    assert "minilm" in out.meta["scorer"]


def test_instruction_and_state_stay_pinned_at_one():
    out = run([Source(id="i", text="Answer briefly.", layer="instruction"),
               Source(id="f", text=RELEVANT)], query="rent", embedder="hash")
    assert score(out, "i") == 1.0


def test_chinese_segments_are_scored_lexically_and_recorded():
    zh = Source(id="zh", text="承租人应当在每月第一天支付租金。")
    en = Source(id="en", text=RELEVANT)
    before = Pipeline([Segmenter(), Protector(), LexicalRanker()]).run(
        Document.from_sources([zh, en], query="rent 租金"), PLAN)
    out = run([zh, en], query="rent 租金", embedder="hash")
    assert score(out, "zh") == score(before, "zh")  # the jieba/BM25 score from the rank stage
    assert out.meta["scorer"].startswith("en: hash") and "zh: lexical (bm25 over jieba words)" in out.meta["scorer"]
    ev = next(e for e in out.trace if e.stage == "rerank")
    assert ev.data["languages"] == {"en": 1, "zh": 1} and ev.data["embedded"] == 1


def test_prefilter_embeds_only_the_budgets_candidates_and_keeps_others_below():
    filler = [Source(id=f"f{i}", text=f"Filler sentence number {i} about gardening and tulips.") for i in range(40)]
    rel = [Source(id=f"r{i}", text=f"The tenant pays rent item {i}.") for i in range(3)]
    out = run(filler + rel, query="tenant rent", budget=20, embedder="hash", min_candidates=5, safety=1.0)
    ev = next(e for e in out.trace if e.stage == "rerank")
    assert ev.data["embedded"] == ev.data["candidates"] == ev.data["k"] < 43
    lexical_top = {f"r{i}" for i in range(3)}
    scores = {s.source_id: s.score for s in out.segments}
    worst_candidate = min(scores[s] for s in lexical_top)
    assert all(scores[s.id] < worst_candidate for s in filler[:10])


def test_candidate_count_rule():
    assert candidate_count(1000, 20.0, safety=2.0, minimum=10) == 60
    assert candidate_count(100, 50.0, safety=1.0, minimum=64) == 64
    assert candidate_count(None, 20.0, safety=2.0, minimum=10) is None


def test_edges_orders_sources_best_at_both_ends():
    assert edge_order(["a", "b", "c", "d"]) == ["a", "c", "d", "b"]
    srcs = [Source(id="x1", text=IRRELEVANT), Source(id="best", text=RELEVANT),
            Source(id="x2", text="Volcanoes erupt lava."), Source(id="second", text="The tenant pays rent."),
            Source(id="i", text="Be brief.", layer="instruction")]
    out = run(srcs, query="tenant pays monthly rent", embedder="hash", edges=True)
    order = out.meta["order"]
    assert order[0] == "i"  # pinned layers first
    ranked = sorted((s.id for s in srcs if s.layer == "fact"), key=lambda sid: -score(out, sid))
    assert {ranked[0], ranked[1]} == {"best", "second"}
    assert order[1] == ranked[0] and order[-1] == ranked[1]  # best first, second best last
    assert set(order[2:-1]) == {"x1", "x2"}                  # the least relevant in the middle
    assert sorted(order) == sorted(s.id for s in srcs)
    assert run(srcs, query="tenant rent", embedder="hash").meta.get("order") is None


def test_no_query_keeps_lexical_scores():
    plan = Plan(domain="t")
    out = run([Source(id="a", text=RELEVANT)], plan=plan, embedder="hash")
    ev = next(e for e in out.trace if e.stage == "rerank")
    assert ev.data["embedded"] == 0


def test_bad_option_is_clear():
    with pytest.raises(ValueError, match="semantic_weight"):
        EmbeddingReranker(semantic_weight=2)


def test_static_first_pass_picks_candidates_by_meaning_and_words():
    from odcf.backends.embedder import HashEmbedder

    filler = [Source(id=f"f{i}", text=f"Filler sentence number {i} about gardening and tulips.") for i in range(30)]
    # No word in common with the query: a lexical first pass ranks it among the fillers
    hidden = Source(id="hidden", text="Lessees settle what they owe monthly.")
    stage = EmbeddingReranker(embedder="hash", first_pass="static", min_candidates=3, safety=1.0)

    class Meaning(HashEmbedder):
        """A stand-in for the static table: maps the hidden sentence next to the query."""

        def encode(self, texts):
            return super().encode(["tenant rent" if "Lessees" in t else t for t in texts])

    stage._static = Meaning()
    doc = Document.from_sources(filler + [hidden], query="tenant rent", budget=10)
    out = Pipeline([Segmenter(), Protector(), LexicalRanker(), stage]).run(doc, PLAN)
    ev = next(e for e in out.trace if e.stage == "rerank")
    assert ev.data["first_pass"] == "static" and ev.data["candidates"] == ev.data["k"] < 31
    scores = {s.source_id: s.score for s in out.segments}
    assert scores["hidden"] >= sorted(scores.values())[-ev.data["k"]]  # it made the candidate list
    lexical = run(filler + [hidden], query="tenant rent", budget=10, embedder="hash", min_candidates=3, safety=1.0)
    lex_scores = {s.source_id: s.score for s in lexical.segments}
    assert lex_scores["hidden"] < scores["hidden"]


def test_bad_first_pass_is_clear():
    with pytest.raises(ValueError, match="first_pass"):
        EmbeddingReranker(first_pass="magic")


def test_a_segment_holding_what_the_query_names_exactly_comes_first():
    from odcf.stages.rank import query_identifiers

    hosts = [Source(id=f"h{i}", text=f"Pod api-{i} on k8s-node-{i}.prod.internal has {i} waiting connections.")
             for i in range(100, 140)]
    near = [Source(id="near", text="Waiting connections pile up on the pods when the pool leaks.")]
    for ranker in ({"embedder": "hash"}, {"embedder": "hash", "min_candidates": 2, "safety": 1.0}):
        out = run(hosts + near, query="pods with waiting connections on k8s-node-117", budget=30, **ranker)
        scores = {s.source_id: s.score for s in out.segments}
        assert scores["h117"] == 1.0 and all(v < 1.0 for k, v in scores.items() if k != "h117")
        ev = {e.stage: e.data for e in out.trace}
        assert ev["rank"]["exact_matches"] == ev["rerank"]["exact_matches"] == 1
        assert ev["rerank"]["query_identifiers"] == ["k8s-node-117"]
    # a longer id, or the id with another suffix, is not the one named
    out = run([Source(id="a", text="Host k8s-node-1170 is up."), Source(id="b", text="Host k8s-node-117-b is up.")],
              query="k8s-node-117", embedder="hash")
    assert next(e for e in out.trace if e.stage == "rerank").data["exact_matches"] == 0
    assert query_identifiers('order #W4817420, "connection refused" in src/app/db.py since 2024') == [
        "connection refused", "W4817420", "src/app/db.py"]
    assert query_identifiers("who won the 2010 world cup after the U.S. team lost?") == []


def test_among_segments_that_all_name_the_identifier_the_rest_of_the_query_decides():
    # QA: the host was in 70 of 77 log blocks, all scored 1.0, and the one PANIC line lost to the first block
    blocks = [Source(id=f"b{i}", text=f"2024-05-03 10:{i:02d}:00 pg-primary-03 checkpoint complete: wrote {i} buffers")
              for i in range(30)]
    blocks.insert(17, Source(id="panic", text="2024-05-03 10:17:30 pg-primary-03 PANIC: could not write to file "
                                              "pg_wal/xlogtemp: No space left on device"))
    other = [Source(id="other", text="2024-05-03 10:18:00 pg-replica-01 PANIC drill scheduled for the weekend")]
    out = run(blocks + other, query="did pg-primary-03 PANIC")  # the shipped MiniLM embedder
    # and when the static first pass embeds only some candidates (QA: the PANIC block of an 80k-token
    # log came 21st, the lexical differences between blocks squeezed into the top 5% by the lift)
    few = run(blocks + other, query="did pg-primary-03 PANIC", budget=40, min_candidates=2, safety=1.0,
              first_pass="static")
    ev = next(e for e in few.trace if e.stage == "rerank").data
    assert ev["first_pass"] == "static" and ev["candidates"] < len(blocks)
    few_scores = {s.source_id: s.score for s in few.segments}
    assert few_scores["panic"] == 1.0 and all(v < 1.0 for k, v in few_scores.items() if k != "panic")
    for stage in ("rank", "rerank"):
        scores = {s.source_id: s.score for s in out.segments} if stage == "rerank" else {
            s.source_id: s.score for s in Pipeline([Segmenter(), Protector(), LexicalRanker()]).run(
                Document.from_sources(blocks + other, query="did pg-primary-03 PANIC"), PLAN).segments}
        assert scores["panic"] == 1.0 and all(v < 1.0 for k, v in scores.items() if k != "panic"), stage
        # every block naming the host still comes before the one that does not
        assert min(v for k, v in scores.items() if k != "other") > scores["other"], stage


@pytest.mark.slow
def test_a_chinese_query_is_not_embedded_by_the_english_model():
    """MiniLM's vocabulary is English: "质保期" embedded by it put a bilingual contract's English
    "Article 5 Acceptance" first. A query in another script steers through the lexical scores."""
    plan = Plan(domain="t", roles={"default": RoleContract("default", 400)})
    sources = [Source(id="head", text="## 第五条 验收 / Article 5 Acceptance\n\nThe buyer inspects the machines on arrival."),
               Source(id="meta", text="Contract No.: SHJX-2025-EQ-0386. Place of signing: Pudong New Area, Shanghai."),
               Source(id="zh", text="6.1 质保期为最终验收合格之日起24个月，或设备交付之日起30个月，以先到者为准。")]
    out = run(sources, query="质保期", plan=plan)
    ev = next(e for e in out.trace if e.stage == "rerank")
    assert ev.data["not_embedded"] == 1 and ev.data["embedded"] == 0
    assert score(out, "zh") > max(score(out, "head"), score(out, "meta"))
    # an English query still embeds
    out = run(sources, query="when does the buyer inspect the machines", plan=plan)
    assert next(e for e in out.trace if e.stage == "rerank").data["embedded"] > 0



MIXED_RECORD = ("# 住院病历\n\n患者既往体健，无过敏史。\n\n长期口服氨氯地平 5mg，每日一次。\n\n"
                "二甲双胍剂量调整为 500mg，每日一次。\n\nRoom 12B, bed 3, ward phone ext. 4471.\n\n患者家属陪同入院。\n")
MEDICAL = Plan(domain="t", queries=(RerankQuery("meds", "current medications and dosage"),
                                    RerankQuery("allergy", "allergies and adverse reactions"),
                                    RerankQuery("stay", "admission: ward, room and bed")),
               roles={"default": RoleContract("default", 400)})


@pytest.mark.parametrize("query", ["过敏史", "二甲双胍剂量"])
def test_an_english_line_in_a_chinese_record_keeps_its_lexical_level(query):
    """QA s31 F3: the model scored only the record's one English line (against the plan's English
    queries, the query being Chinese) and scaled it to 1, level with "无过敏史", above the Chinese
    sentences still on the lexical scale: it was delivered, the dosage left out."""
    src = Source(id="rec", text=MIXED_RECORD)
    lexical = Pipeline([Segmenter(), Protector(), LexicalRanker()]).run(
        Document.from_sources([src], query=query), MEDICAL)
    out = run([src], query=query, plan=MEDICAL, embedder="hash")
    by_text = {s.text.strip(): s.score for s in out.segments}
    room = "Room 12B, bed 3, ward phone ext. 4471."
    level = next(s.score for s in lexical.segments if s.text.strip() == room)
    assert by_text[room] <= level < 1.0  # the scale's top is its lexical score, not 1
    assert by_text[room] < max(v for t, v in by_text.items() if t != room) == 1.0
    if query == "过敏史":
        assert by_text[room] < by_text["患者既往体健，无过敏史。"]
    ev = next(e for e in out.trace if e.stage == "rerank")
    assert ev.data["english_level"] == level and "lexical score" in ev.data["scorers"]["en"]


@pytest.mark.slow
@pytest.mark.parametrize("query", ["过敏史", None])
def test_minilm_delivers_the_chinese_answer_not_the_english_line(query):
    """The QA's case end to end (medical_records, 40 tokens): MiniLM, compared with the plan's English
    queries only, put "Room 12B …" at 1.0 with the query "过敏史" and with none, and delivered it."""
    r = Compressor.from_ontology("medical_records").compress(
        [Source(id="rec", text=MIXED_RECORD)], query=query, budget=40, timings=False)
    room = next(s for s in r.document.segments if s.original.startswith("Room"))
    assert room.score < 1.0 and room.dropped and "Room 12B" not in r.text
    assert room.reasons[-1].startswith("budget: no room") and "无过敏史" in r.text


def test_an_english_query_still_scales_the_english_segments_it_is_compared_with():
    """The query is in the model's language: the English segments are the ones it can be compared
    with, and the best of them keeps 1 beside Chinese text (an English answer in a Chinese record)."""
    src = Source(id="rec", text=MIXED_RECORD)
    out = run([src], query="which ward phone extension", plan=MEDICAL, embedder="hash")
    room = next(s for s in out.segments if s.text.startswith("Room"))
    assert room.score == 1.0
    assert "english_level" not in next(e for e in out.trace if e.stage == "rerank").data


CONTRACT = """# Master Services Agreement

## 1. Definitions

1.1 "Services" means the hosted analytics platform and the support described in Schedule A.

1.2 "Personal Data" has the meaning given in the GDPR.

## 5. Data Protection

5.1 Supplier shall process Personal Data only on Customer's documented instructions.

## 6. Fees and Payment

6.1 The monthly platform fee is EUR 42,500 (excluding VAT).

6.2 Customer shall pay each undisputed invoice within forty-five (45) days of receipt.

## 11. Liability

11.2 Each party's total liability in any contract year shall not exceed 125% of the Fees paid in the preceding twelve months.

11.4 Supplier's liability for a breach of its data protection duties is capped at EUR 2,000,000 in aggregate.

## 12. Term and Termination

12.1 This Agreement starts on the Effective Date and runs for an Initial Term of 36 months.

12.2 Either party may terminate for material breach not remedied within 30 days of notice.

12.3 Customer may terminate for convenience on 90 days' written notice after month 18.

## 13. Governing Law

13.1 This Agreement is governed by the laws of Germany; the courts of Hamburg have exclusive jurisdiction.
"""


@pytest.mark.slow
def test_a_query_that_asks_two_things_gets_an_answer_to_each():
    # QA: "What is the liability cap for a data protection breach, and what are the payment terms?"
    # delivered liability and termination clauses but no payment term, up to a third of the contract
    from odcf.compressor import Compressor

    q = "What is the liability cap for a data protection breach, and when must invoices be paid?"
    r = Compressor.from_ontology("legal_contract").compress(CONTRACT, query=q, budget=90)
    assert "capped at EUR 2,000,000" in r.text and "within forty-five (45) days" in r.text
    (event,) = [e for e in r.document.trace if e.stage == "rerank"]
    assert event.data["query_parts"] == 2


@pytest.mark.parametrize("query, parts", [
    ("What is the liability cap, and what are the payment terms?", 2),
    ("Who signed it? When does it end?", 2),
    ("liability cap; payment terms and late interest", 1),  # no question: keywords, embedded whole
    ("What are the termination rights? Please answer in one sentence.", 1),  # QA: an instruction is no question
    ("Which termination rights apply; ignore boilerplate.", 1),
    ("Which suppliers hold ISO 9001 certification and are based in Germany?", 1),
    ("What is the notice period; what is the cap?", 2),
    ("terms and conditions of payment", 1),
    ("Is it signed and dated?", 1),
    ("What did the team decide about the budget and the schedule?", 1),
])
def test_query_parts(query, parts):
    from odcf.stages.rerank import query_parts

    assert len(query_parts(query)) == parts


TICKETS = r'''ticket_id,created,customer,priority,status,description,resolution
SUP-10231,2024-05-02 09:14,Helix Foods,P2,closed,"Export to CSV fails for reports
with more than 65,535 rows.
Error: ""row limit exceeded""","Fixed in 5.12.3; limit raised to 1,048,576 rows."
SUP-10232,2024-05-02 11:40,Brightline Ltd,P1,open,"SSO login loop after IdP certificate rotation on 1 May.
Affects all 340 users.","Workaround: disable ""Force re-auth""; do NOT delete the IdP config."
SUP-10233,2024-05-03 08:05,Helix Foods,P3,closed,"Typo in invoice template (""Recieved"").",Fixed.
SUP-10234,2024-05-03 15:22,Orbis Maritime,P1,pending,"Data sync stopped at 2024-05-03 14:58 UTC.
Last successful job: sync-88412.
Customer says: ""we cannot lose the 14:00 batch"".",Awaiting logs from customer; not reproducible on eu-west-1.
SUP-10235,2024-05-04 10:00,Kestrel Bank,P2,open,"Request to extend API rate limit from 120 to 600 req/min, for the migration weekend only.",Approved by J. Park until 2024-05-12 23:59; must revert afterwards.
SUP-10236,2024-05-05 12:31,Brightline Ltd,P3,closed,"Question about pricing tiers, ""Growth"" vs ""Scale"".",Answered by sales.
'''


@pytest.mark.slow
@pytest.mark.parametrize("query", ["which P1 tickets are open and what is the workaround",
                                   "open P1 tickets workaround"])
def test_the_table_row_holding_most_of_the_query_words_ranks_first(tmp_path, query):
    # QA: SUP-10232, the one row with P1, open and "Workaround:", scored 0.557 (MiniLM embeds a row's
    # cells as noise; "which P1 tickets are open" had SUP-10236, a P3 pricing question, as its best
    # match and raised it) and was left out even at 80% of the input
    from odcf.compressor import Compressor

    path = tmp_path / "tickets.csv"
    path.write_text(TICKETS, encoding="utf-8")
    r = Compressor.from_ontology("general").compress(
        [{"id": str(path), "text": TICKETS}], query=query, budget=200, timings=False)
    assert "Workaround: disable" in r.text and "SUP-10232" in r.text
    assert "Question about pricing tiers" not in r.text
    rows = {s.text.split(",", 1)[0]: s.score for s in r.document.segments if s.kind == "table" and s.index}
    assert rows["SUP-10232"] == max(rows.values())
    (event,) = [e for e in r.document.trace if e.stage == "rerank"]
    assert event.data["table_rows_reordered"] > 0


def test_table_rows_are_ordered_by_the_query_words_their_cells_hold():
    table = "id,prio,state\nA-1,P3,closed\nA-2,P1,open\nA-3,P1,pending\nA-4,P2,open\n"
    doc = Document.from_sources([Source(id="t.csv", text=table)], query="which P1 tickets are open")
    stages = [Segmenter(max_table_tokens=1), Protector(), LexicalRanker(),
              EmbeddingReranker(embedder="hash", first_pass="lexical")]
    out = Pipeline(stages).run(doc, PLAN)
    rows = {s.text.splitlines()[-1].split(",", 1)[0]: s.score for s in out.segments if s.kind == "table"}
    assert len(rows) == 4 and max(rows, key=rows.get) == "A-2"  # P1 and open; the header's words count for no row
    assert rows["A-2"] > rows["A-3"] > rows["A-1"] and rows["A-4"] > rows["A-1"]


def test_table_rows_saying_the_negation_the_query_asks_about_rank_first():
    # QA s29/qa5 #1: "Which pass/fail requirements do we not meet?" kept the "Met" row and dropped both
    # "NOT MET" rows ("not" is a stopword, "meet" no "met"): no row held a query word, none was reordered
    table = ("| Req. | Requirement | Our status |\n|---|---|---|\n"
             "| REQ-01 | ISO/IEC 27001:2022 certificate | Met (valid until 2026-03-31) |\n"
             "| REQ-02 | ISO 20000-1:2018 certificate | NOT MET — expired on 2024-02-29 |\n"
             "| REQ-03 | Turnover USD 6,000,000 | Met (USD 8.2 million) |\n"
             "| REQ-05 | Service desk staffed 24/7 | Not met — night shift abroad |\n")
    stages = [Segmenter(max_table_tokens=1), Protector(), LexicalRanker(),
              EmbeddingReranker(embedder="hash", first_pass="lexical")]

    def ranked(query):
        out = Pipeline(stages).run(Document.from_sources([Source(id="t.md", text=table)], query=query), PLAN)
        rows = {s.text.splitlines()[-1].split("|")[1].strip(): s.score for s in out.segments if s.kind == "table"}
        assert len(rows) == 4
        return sorted(rows, key=lambda r: -rows[r])

    assert set(ranked("Which pass/fail requirements do we not meet?")[:2]) == {"REQ-02", "REQ-05"}
    assert set(ranked("Which requirements failed?")[:2]) == {"REQ-02", "REQ-05"}


KIND_TICKET = (
    "Ticket CS-48213: shipment sync failing since the v5.2 upgrade.\n\n"
    "The shipment sync fails for about 12 orders in every batch of 500 since the tenant moved to version 5.2. "
    "The affected orders stay in status pending and the warehouse cannot print labels for them. "
    "Calls to the carrier gateway in the EU region time out after 30 seconds under load. "
    "The engineers found that 5.2 raised max_parallel from 4 to 16 per worker. "
    "The gateway rate-limits at 50 requests per second per tenant, so bursts are rejected. "
    "A per-tenant max_parallel setting of 4 was applied on 2024-03-14 with a hot reload. "
    "No failed orders were seen in the six days after the change.\n\n"
    "Assignee: Rafael Ortiz (Tier 2) | Escalated to: Engineering (INC-90317) | Channel: e-mail | SLA: P1\n\n"
    "The ticket stays open until the fix is deployed, and the incident is reviewed by the support lead.\n")


@pytest.mark.parametrize("query, kept", [("What are the ticket and incident ids?", "INC-90317"),
                                         ("ticket numbers", "INC-90317")])
def test_a_query_asking_for_ids_of_an_anchors_kind_lifts_the_segments_holding_its_matches(query, kept):
    # QA s29/qa5 #5: "What are the ticket and incident ids?" lost INC-90317, which the ontology's ticket_id anchor
    # matches: no word of the query names it, and the sentences holding it scored 0.03-0.05
    from odcf.compressor import Compressor

    r = Compressor.from_ontology("customer_service").compress(
        KIND_TICKET, query=query, role="executor", budget=50, annotate=False, timings=False)
    assert kept in r.text and "CS-48213" in r.text, r.text
    (event,) = [e for e in r.document.trace if e.stage == "rerank"]
    assert "ticket_id" in event.data["query_identifiers"]
    # a query that names no identifier word, or names the id itself, is left as it was
    r = Compressor.from_ontology("customer_service").compress(
        KIND_TICKET, query="Which ticket is about the rate limit?", role="executor", budget=50, annotate=False,
        timings=False)
    (event,) = [e for e in r.document.trace if e.stage == "rerank"]
    assert "ticket_id" not in event.data.get("query_identifiers", [])


def test_a_query_listing_topics_asks_for_each_of_them():
    # QA5: for "liability cap, termination notice periods and most favoured customer price" the one clause
    # on the third topic ranked below dozens of templated liability clauses and was never delivered
    from odcf.compressor import Compressor
    from odcf.stages.rerank import query_parts

    query = "liability cap, termination notice periods and most favoured customer price"
    assert query_parts(query) == ["liability cap", "termination notice periods", "most favoured customer price"]
    clauses = [f"Section {k}.1 Liability. Total liability under this Agreement shall not exceed ${k * 1000 + 100:,} "
               f"or {k % 20 + 1}% of the fees paid in the twelve months before the claim, whichever is lower."
               for k in range(1, 41)]
    clauses.insert(20, "Section 99.1 Termination. Either party may terminate this Agreement on 90 days' written notice.")
    clauses.insert(30, "Section 999.1 Most Favoured Customer. Supplier shall not offer any other customer a unit price "
                       "lower than EUR 17.35 per seat without extending the same price to Customer within 7 days.")
    text = "\n\n".join(clauses)
    r = Compressor.from_ontology("legal_contract").compress([{"id": "msa", "text": text}], query=query, budget=160,
                                                            timings=False)
    assert "EUR 17.35 per seat" in r.text and "90 days' written notice" in r.text, r.text
